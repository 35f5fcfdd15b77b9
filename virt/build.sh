#!/usr/bin/env bash
# Builds the virtual filesystem's modules and copies them where the host
# crate embeds them (host/src/virt/adapter.wasm, adapter-sockets.wasm,
# adapter-http.wasm, adapter-p3.wasm);
# `--check` instead compares them with those files, as the test command
# does. The build is reproducible: the
# same toolchain gives the same bytes from any checkout. Paths are
# remapped, and the sources are built from one fixed place, because cargo
# names a path dependency's symbols by where it is, and the order of
# functions in the module follows their names.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
root="$(pwd)"
target="$(realpath -m "${CARGO_TARGET_DIR:-target}")/virt"
# The fixed place is in a shared directory: it must be ours, made fresh
# (mkdir fails if anyone made it meanwhile), never a symlink followed.
place=/tmp/packfs-virt-build
if [ -e "$place" ] || [ -L "$place" ]; then
    { [ -O "$place" ] && [ ! -L "$place" ]; } || { echo "$place: not this user's directory; remove it" >&2; exit 1; }
    rm -rf "$place"
fi
mkdir -m 700 "$place"
trap 'rm -rf "$place"' EXIT
# The sources the module is built from.
tar -c --exclude=virt/target Cargo.toml core virt | tar -x -C "$place"
export RUSTFLAGS="--remap-path-prefix=$place=/packfs --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo"
# One module per world: `adapter`, `adapter-sockets` for a guest that
# imports wasi:sockets (feature `sockets`), `adapter-http` for one that
# imports wasi:http (feature `http`), `adapter-p3` for a WASI 0.3 guest
# (feature `p3`).
for variant in adapter adapter-sockets adapter-http adapter-p3; do
    features=()
    [ "$variant" = adapter-sockets ] && features=(--features sockets)
    [ "$variant" = adapter-http ] && features=(--features http)
    [ "$variant" = adapter-p3 ] && features=(--features p3)
    (cd "$place/virt" && CARGO_TARGET_DIR="$target" cargo build --locked --release --target wasm32-unknown-unknown "${features[@]}")
    out="$target/wasm32-unknown-unknown/release/packfs_virt_adapter.wasm"
    if [ "${1:-}" = --check ]; then
        cmp "$out" "$root/host/src/virt/$variant.wasm" ||
            { echo "host/src/virt/$variant.wasm is not what virt/ builds: run virt/build.sh" >&2; exit 1; }
    else
        cp "$out" "$root/host/src/virt/$variant.wasm"
    fi
done
