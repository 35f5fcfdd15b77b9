#!/usr/bin/env node
// packfs-web's public face, entry point by entry point, as cargo-public-api
// lists a crate's: each export's declaration from the package's .d.ts
// files (comments dropped), checked against the code, whose every export
// must be declared and every declared value exported, a class as a class
// and a function as a function.
//
//   node .ci/js-api.mjs PKG_DIR > listing.txt    (web/pkg, built)
//
// Fails, naming them, where the declarations and the code differ.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const pkg = resolve(process.argv[2] ?? "web/pkg");
const ts = createRequire(join(process.cwd(), "web/package.json"))("typescript");
const manifest = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
const entries = Object.entries(manifest.exports).filter(([, e]) => typeof e === "object" && e.types);

const program = ts.createProgram(
  entries.map(([, e]) => join(pkg, e.types)),
  { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, lib: ["lib.esnext.d.ts", "lib.dom.d.ts"] },
);
const checker = program.getTypeChecker();
const printer = ts.createPrinter({ removeComments: true });
const problems = [];
const lines = [];
/** Exported by the code for packfs-web's own plumbing, left out of the
 *  declarations on purpose (`skip_typescript`): the holder of preview1's
 *  direct exports, which imports.js reaches. */
const HIDDEN = ["Direct"];
/** Declarations whose members are wasm-bindgen's own (the module's raw
 *  exports), listed by name alone. */
const BY_NAME = ["InitOutput"];

for (const [entry, e] of entries) {
  const file = program.getSourceFile(join(pkg, e.types));
  const declared = new Map();
  for (const sym of checker.getExportsOfModule(checker.getSymbolAtLocation(file))) {
    const target = sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym;
    const decls = target.declarations ?? [];
    const value = (target.flags & ts.SymbolFlags.Value) !== 0;
    const kind = target.flags & ts.SymbolFlags.Class ? "class" : target.flags & ts.SymbolFlags.Function ? "function" : value ? "value" : "type";
    declared.set(sym.name, kind);
    for (const d of decls) {
      const text = BY_NAME.includes(sym.name)
        ? `(wasm-bindgen's exports)`
        : printer.printNode(ts.EmitHint.Unspecified, d, d.getSourceFile()).replace(/\s+/g, " ").trim();
      lines.push(`${entry} ${sym.name}: ${text}`);
    }
  }
  // The code's exports against the declarations.
  const code = await import(pathToFileURL(join(pkg, e.default)).href);
  for (const [name, v] of Object.entries(code)) {
    const kind = declared.get(name);
    if (kind === undefined && HIDDEN.includes(name)) continue;
    if (kind === undefined) problems.push(`${entry}: ${name} is exported by the code, declared nowhere`);
    else if (kind === "type") problems.push(`${entry}: ${name} is exported as a value, declared as a type only`);
    else if ((kind === "class" || kind === "function") && typeof v !== "function") {
      problems.push(`${entry}: ${name} is declared a ${kind}, exported as a ${typeof v}`);
    }
  }
  for (const [name, kind] of declared) {
    if (kind !== "type" && !(name in code)) problems.push(`${entry}: ${name} is declared a ${kind}, not exported by the code`);
  }
}

const diagnostics = ts.getPreEmitDiagnostics(program);
for (const d of diagnostics) problems.push(`declarations: ${ts.flattenDiagnosticMessageText(d.messageText, " ")} (${d.file?.fileName ?? ""})`);
console.log(lines.sort().join("\n"));
if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}
