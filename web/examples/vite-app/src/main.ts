// The package as its users take it: the main entry and the runner, typed.
// Opens a pack by URL (lazily), reads a file, compacts a MemFs with
// compression, and runs a preview1 guest over the pack in a Worker. The
// result lands in `window.appResult` for the test.
import init, { MemFs, Pack, type PackInfo } from "packfs-web";
import { runP1 } from "packfs-web/runner";

const out = document.getElementById("out")!;

async function main(): Promise<void> {
  await init();
  const pack: Pack = await Pack.fromUrl("/fixtures/app.pack");
  const hello: string = new TextDecoder().decode(await pack.readFile("data/hello.txt"));
  const info: PackInfo = pack.info();

  const fs = new MemFs();
  fs.writeFileSync("notes.txt", "written in the app");
  const compacted: Uint8Array = await fs.compact({ compress: "zstd" });
  const again = Pack.fromBytes(compacted);

  const guest = await (await fetch("/fixtures/demo.wasm")).arrayBuffer();
  let stdout = "";
  const run = await runP1(guest, {
    args: ["demo"],
    preopens: [{ path: "/", kind: "overlay", url: "/fixtures/app.pack" }],
    stdout: (bytes: Uint8Array) => (stdout += new TextDecoder().decode(bytes)),
  });
  const result = {
    hello,
    version: info.version,
    compactedVersion: again.info().version,
    notes: new TextDecoder().decode(again.readFileSync("notes.txt")),
    exitCode: run.exitCode,
    stdout,
  };
  out.textContent = JSON.stringify(result, null, 2);
  (window as unknown as { appResult: unknown }).appResult = result;
}

main().catch((e: unknown) => {
  out.textContent = String(e);
  (window as unknown as { appResult: unknown }).appResult = { error: String(e) };
});
