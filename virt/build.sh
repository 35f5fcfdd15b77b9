#!/usr/bin/env bash
# Builds the virtual filesystem's module and copies it where the host crate
# embeds it (host/src/virt/adapter.wasm). The build is reproducible: the
# same toolchain gives the same bytes wherever the checkout and the cargo
# home are (their paths are remapped), which the test command checks.
set -euo pipefail
cd "$(dirname "$0")"
rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
root="$(cd .. && pwd)"
export RUSTFLAGS="--remap-path-prefix=$root=/packfs --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}/virt"
cargo build --locked --release --target wasm32-unknown-unknown
out="$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/packfs_virt_adapter.wasm"
if [ "${1:-}" = --check ]; then
    cmp "$out" ../host/src/virt/adapter.wasm ||
        { echo "host/src/virt/adapter.wasm is not what virt/ builds: run virt/build.sh" >&2; exit 1; }
else
    cp "$out" ../host/src/virt/adapter.wasm
fi
