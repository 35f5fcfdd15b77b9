#!/usr/bin/env python3
"""Fails if two source files of one crate import each other, directly or
around a longer loop: each file should depend on the ones below it only;
and if two modules (a file and what it nests) do, through any of their
files: `filesystem` using `p3` while `p3` uses `filesystem` is a cycle
between two concerns even when no two files name each other.

A file's imports are the crate paths its code names (`crate::a::b`, `super::x`,
`self::x`, and a child module by its bare name), each resolved to the file
of the deepest module it names; a name a module re-exports (`pub use
child::Name`) resolves to where it comes from, and is itself no import:
a module's face is not a dependency. A child's `#[cfg(test)] mod
tests` is the parent's own and is left out, as are tests and benches.

    .ci/import-cycles.py [CRATE_SRC_DIR...]   (default: every crate's src/)
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRATES = ["core/src", "host/src", "host/cli/src", "host/os/src", "host/remote/src", "host/testnet/src",
          "test-support/src", "web/src", "bench/src"]

MOD_DECL = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", re.M)
PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_TREE = re.compile(r"\buse\s+([^;]+);", re.S)


def strip(text):
    """The text without comments, strings and `#[cfg(test)]` modules."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def expand(tree):
    """`a::{b, c::{d, e}}` -> ["a::b", "a::c::d", "a::c::e"] (without `as`)."""
    tree = re.sub(r"\s+", "", tree)
    if "{" not in tree:
        return [tree.split("as")[0] if "::" in tree else tree]
    head, _, rest = tree.partition("{")
    body = rest[: rest.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    parts.append(cur)
    return [p for part in parts if part for p in expand(head + part)]


def modules(src):
    """Module path (tuple) -> file, for one crate."""
    mods = {}
    for f in src.rglob("*.rs"):
        rel = f.relative_to(src).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        if parts and parts[0] == "bin":
            continue
        mods[tuple(parts)] = f
    return mods


def check(src):
    mods = modules(src)
    texts = {m: strip(f.read_text()) for m, f in mods.items()}
    # Names a module re-exports, and the module path each comes from.
    reexports = {}
    for m, text in texts.items():
        for u in USE_TREE.finditer(text):
            start = text.rfind("\n", 0, u.start()) + 1
            if not re.match(r"\s*pub", text[start:u.start()] + " "):
                continue
            for path in expand(u.group(1)):
                segs = path.split("::")
                reexports[(m, segs[-1])] = segs

    def resolve(m, segs, depth=0):
        """The module (tuple) that `segs`, written in module `m`, names."""
        if segs[0] == "crate":
            base, segs = (), segs[1:]
        elif segs[0] in ("super", "self"):
            base = m
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    base = base[:-1]
                segs = segs[1:]
        elif (m + (segs[0],)) in mods:
            base = m
        else:
            return None
        at = base
        for i, s in enumerate(segs):
            if at + (s,) in mods:
                at = at + (s,)
                continue
            # An item of `at`: maybe one it re-exports from elsewhere.
            r = reexports.get((at, s))
            if r and depth < 8 and r[0] in ("crate", "super", "self") or (r and (at + (r[0],)) in mods):
                target = resolve(at, r, depth + 1)
                if target is not None:
                    return target
            break
        return at

    edges = {m: set() for m in mods}
    for m, text in texts.items():
        # A re-export (`pub use`) makes a module's face, not a dependency,
        # unless the module's own code uses the name too.
        pub_uses = re.findall(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text)
        body = re.sub(r"\bpub(?:\([^)]*\))?\s+use\s+[^;]+;", "", text)
        names = [("".join(p.groups())).split("::") for p in PATH.finditer(body)]
        for u in USE_TREE.finditer(body):
            names += [p.split("::") for p in expand(u.group(1))]
        for tree in pub_uses:
            for path in expand(tree):
                segs = path.split("::")
                if segs[-1] not in ("*", "self") and re.search(r"\b%s\b" % re.escape(segs[-1]), body):
                    names.append(segs)
        # A child module named bare: `child::x`.
        names += [[c, "x"] for c in re.findall(r"\b([a-z_][a-z0-9_]*)::", body) if (m + (c,)) in mods]
        for segs in names:
            t = resolve(m, segs)
            if t is not None and t != m:
                edges[m].add(t)

    # A module's edges to its own descendants are how Rust nests; a cycle
    # needs the way back up, which `super::`/`crate::` paths give.
    cycles, color, stack = [], {}, []

    def visit(m):
        color[m] = 1
        stack.append(m)
        for t in sorted(edges[m]):
            if color.get(t) == 1:
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in color:
                visit(t)
        stack.pop()
        color[m] = 2

    for m in sorted(mods):
        if m not in color:
            visit(m)
    show = lambda m: str(mods[m].relative_to(ROOT) if mods[m].is_relative_to(ROOT) else mods[m])
    found = [" -> ".join(show(m) for m in c) for c in cycles]

    # Between modules: an edge from one file to another joins the two
    # siblings, under their nearest common module, that hold them (a
    # module's own use of what it nests, or of its parent, is nesting).
    siblings, witness = {}, {}
    for m, targets in edges.items():
        for t in targets:
            n = 0
            while n < min(len(m), len(t)) and m[n] == t[n]:
                n += 1
            if n == len(m) or n == len(t):
                continue
            a, b = m[: n + 1], t[: n + 1]
            siblings.setdefault(a, set()).add(b)
            witness.setdefault((a, b), (m, t))
    color = {}

    def visit_module(m, path):
        color[m] = 1
        path.append(m)
        for t in sorted(siblings.get(m, ())):
            if color.get(t) == 1:
                loop = path[path.index(t):] + [t]
                steps = [f"{show(witness[(x, y)][0])} uses {show(witness[(x, y)][1])}" for x, y in zip(loop, loop[1:])]
                found.append(" -> ".join("::".join(x) for x in loop) + " (" + "; ".join(steps) + ")")
            elif t not in color:
                visit_module(t, path)
        path.pop()
        color[m] = 2

    for m in sorted(siblings):
        if m not in color:
            visit_module(m, [])
    return found


def main():
    dirs = [Path(d) for d in sys.argv[1:]] or [ROOT / c for c in CRATES]
    found = [c for d in dirs if d.exists() for c in check(d.resolve())]
    for c in found:
        print(f"import cycle: {c}")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
