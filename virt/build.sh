#!/usr/bin/env bash
# Builds the virtual filesystem's module and copies it where the host crate
# embeds it (host/src/virt/adapter.wasm); `--check` instead compares it
# with that file, as the test command does. The build is reproducible: the
# same toolchain gives the same bytes from any checkout. Paths are
# remapped, and the sources are built from one fixed place, because cargo
# names a path dependency's symbols by where it is, and the order of
# functions in the module follows their names.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
root="$(pwd)"
target="$(realpath -m "${CARGO_TARGET_DIR:-target}")/virt"
place=/tmp/packfs-virt-build
exec 9>"$place.lock"
flock 9
rm -rf "$place" && mkdir -p "$place"
# The sources the module is built from (tar keeps their times, so an
# unchanged tree rebuilds nothing).
tar -c --exclude=virt/target Cargo.toml core virt | tar -x -C "$place"
export RUSTFLAGS="--remap-path-prefix=$place=/packfs --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo"
(cd "$place/virt" && CARGO_TARGET_DIR="$target" cargo build --locked --release --target wasm32-unknown-unknown)
out="$target/wasm32-unknown-unknown/release/packfs_virt_adapter.wasm"
if [ "${1:-}" = --check ]; then
    cmp "$out" "$root/host/src/virt/adapter.wasm" ||
        { echo "host/src/virt/adapter.wasm is not what virt/ builds: run virt/build.sh" >&2; exit 1; }
else
    cp "$out" "$root/host/src/virt/adapter.wasm"
fi
rm -rf "$place"
