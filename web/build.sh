#!/usr/bin/env bash
# Builds the browser package: web/pkg/packfs_web.{js,d.ts} + packfs_web_bg.wasm,
# and the preview1 runner (runner.js, runner.d.ts, worker.js).
#
#   web/build.sh            release build (what the demo page and tests use)
#   web/build.sh --debug    debug build
#
# Installs what is missing first: the wasm32-unknown-unknown target, and
# wasm-bindgen-cli at exactly the version of the wasm-bindgen crate pinned
# in web/Cargo.toml (the two must match).
set -euo pipefail
web="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$web")"
cd "$root"

profile=release
[ "${1:-}" = "--debug" ] && profile=debug

# The pinned version: `wasm-bindgen = "=X.Y.Z"` in web/Cargo.toml.
version="$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)".*/\1/p' web/Cargo.toml)"
[ -n "$version" ] || { echo "build.sh: no pinned wasm-bindgen version in web/Cargo.toml" >&2; exit 2; }

rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$version" ]; then
    # Not --locked: the CLI's own lock file does not build here (docs/design.md).
    cargo install wasm-bindgen-cli --version "$version"
fi

flags=()
[ "$profile" = release ] && flags+=(--release)
cargo build -p packfs-web --target wasm32-unknown-unknown "${flags[@]}"
wasm-bindgen --target web --out-dir web/pkg \
    "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/$profile/packfs_web.wasm"
# The preview1 runner: runP1 (runner.js, runner.d.ts) and the Worker it starts;
# and the demo page's guest (guest-tests/src/bin/demo.rs), as pkg/demo.wasm.
# The entry point (index.js: init in every runtime), the WASI class and
# what differs between runtimes.
cp web/js/*.js web/js/*.d.ts web/pkg/
# The npm package: its manifest (the workspace's version) and README.
crate_version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
sed "s/@VERSION@/$crate_version/" web/npm/package.json.in >web/pkg/package.json
cp web/npm/README.md web/pkg/
rustup target list --installed | grep -qx wasm32-wasip1 || rustup target add wasm32-wasip1
cargo build --release --target wasm32-wasip1 --manifest-path guest-tests/Cargo.toml \
    --target-dir target/guest-tests --bin demo
cp target/guest-tests/wasm32-wasip1/release/demo.wasm web/pkg/
echo "built web/pkg ($profile, wasm-bindgen $version)"
