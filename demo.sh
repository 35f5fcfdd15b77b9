#!/usr/bin/env bash
# The main job, end to end on a fresh machine: build the `packfs` command and
# a WASI guest, pack a sample tree, run the guest on the pack with an
# in-memory overlay for its writes, save what it left as a new pack, and
# look inside. Everything it makes goes to target/demo/.
set -euo pipefail
cd "$(dirname "$0")"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "set-up: the wasm32-wasip1 target, the packfs command, the demo guest"
rustup target list --installed | grep -qx wasm32-wasip1 || rustup target add wasm32-wasip1
cargo build -p packfs-cli
# The guest (guest-tests/src/bin/demo.rs): counts lines, words and bytes of
# /data/**/*.txt and writes a report to /out/report.txt.
cargo build --release --target wasm32-wasip1 --manifest-path guest-tests/Cargo.toml \
    --target-dir target/guest-tests --bin demo
packfs="${CARGO_TARGET_DIR:-target}/debug/packfs"
guest=target/guest-tests/wasm32-wasip1/release/demo.wasm

work=target/demo
rm -rf "$work"
mkdir -p "$work/tree/data/poems" "$work/tree/etc"
cat >"$work/tree/data/poems/ozymandias.txt" <<'TEXT'
I met a traveller from an antique land,
Who said - "Two vast and trunkless legs of stone
Stand in the desert. . . . Near them, on the sand,
Half sunk a shattered visage lies, whose frown,
TEXT
cat >"$work/tree/data/poems/the-tyger.txt" <<'TEXT'
Tyger Tyger, burning bright,
In the forests of the night;
What immortal hand or eye,
Could frame thy fearful symmetry?
TEXT
cat >"$work/tree/data/notes.txt" <<'TEXT'
A pack is read in place from a memory map; the guest's writes go to an
in-memory overlay and never touch the pack or the host disk.
TEXT
cp "$work/tree/data/notes.txt" "$work/tree/data/notes-copy.txt" # stored once
echo "PackFS demo" >"$work/tree/etc/motd"

step "packfs pack $work/tree -o $work/app.pack"
"$packfs" pack "$work/tree" -o "$work/app.pack"
"$packfs" ls -lR "$work/app.pack"

step "packfs run --mount /=app.pack+mem --save after.pack demo.wasm"
"$packfs" run --mount "/=$work/app.pack+mem" --save "$work/after.pack" "$guest"

step "packfs ls -lR $work/after.pack"
"$packfs" ls -lR "$work/after.pack"

step "packfs cat $work/after.pack /out/report.txt"
"$packfs" cat "$work/after.pack" /out/report.txt

step "packfs diff app.pack after.pack (the pack the guest ran on is unchanged)"
"$packfs" diff "$work/app.pack" "$work/after.pack" || true
