#!/usr/bin/env bash
# `packfs pack` / `packfs unpack` of a generated tree of 100,000 files
# against `tar -cf` / `tar -xf` and `zip -0` / `unzip` (stored, like a pack)
# on the same tree, in the same run, the tools taking turns in every round
# (RUNS rounds, default 5); median [min–max] of each, written as a
# Markdown table to stdout and, on a whole run, bench/cli-results.md. All
# on tmpfs (/dev/shm): on a disk, writeback of the last run's files made
# extraction times spread 15-fold.
#
# Run: bench/cli.sh [FILES]   (default 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
files=${1:-100000}
command -v zip >/dev/null && command -v unzip >/dev/null || {
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get install -y -qq zip unzip >/dev/null
}
cargo build -q --release -p packfs-cli
packfs=$PWD/target/release/packfs
shm=/dev/shm
[ -d "$shm" ] || shm=${TMPDIR:-/tmp}
work=$(mktemp -d "$shm/packfs-cli-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# A tree like a source checkout: 1,000 directories, sizes 100 B to 8 KiB,
# one file in ten a duplicate of another.
python3 - "$work/tree" "$files" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
blobs = []
for i in range(n):
    d = os.path.join(root, f"d{i % 1000:03}", f"s{i % 7}")
    os.makedirs(d, exist_ok=True)
    if blobs and rng.random() < 0.1:
        data = rng.choice(blobs)
    else:
        data = rng.randbytes(rng.randint(100, 8192))
        if len(blobs) < 1000:
            blobs.append(data)
    with open(os.path.join(d, f"f{i}.dat"), "wb") as f:
        f.write(data)
PY
bytes=$(du -sb "$work/tree" | cut -f1)

# Wall-clock seconds of one run of "$@" (after "$prep", untimed).
timed() {
    local prep=$1; shift
    eval "$prep"
    local t0=$(date +%s%N)
    "$@" >/dev/null
    local t1=$(date +%s%N)
    awk -v ns="$(( t1 - t0 ))" 'BEGIN { printf "%.3f", ns / 1e9 }'
}
# The median, min and max of a list of seconds: "MEDIAN [MIN–MAX]".
spread() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { printf "%s [%s–%s]", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

cd "$work"
# Interleaved: each round runs every tool once, so none gets a quieter
# minute of the machine; before each, untimed, `sync` writes back what
# the last one left dirty, so that no run pays for another's writes. The
# pack is stored (--compress none), as tar and zip -0 are. tar extracts
# with --no-same-owner: as root it would restore owners, which packfs
# unpack does not.
runs=${RUNS:-5}
pack=() tar_c=() zip_c=() unpack=() tar_x=() zip_x=()
for _ in $(seq "$runs"); do
    pack+=("$(timed 'rm -f tree.pack; sync' "$packfs" pack tree -o tree.pack --compress none)")
    tar_c+=("$(timed 'rm -f tree.tar; sync' tar -cf tree.tar -C tree .)")
    zip_c+=("$(timed 'rm -f tree.zip; sync' sh -c 'cd tree && zip -q -r -0 ../tree.zip .')")
    unpack+=("$(timed 'rm -rf out && mkdir out && sync' "$packfs" unpack tree.pack out)")
    tar_x+=("$(timed 'rm -rf out && mkdir out && sync' tar --no-same-owner -xf tree.tar -C out)")
    zip_x+=("$(timed 'rm -rf out && mkdir out && sync' unzip -q tree.zip -d out)")
done
size() { stat -c %s "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }

table() {
echo "Tree: $files files, $bytes bytes, 1,000 directories, on $(df --output=fstype "$work" | tail -1) (bench/cli.sh). $runs rounds, each running every tool once in turn; median [min–max], seconds."
echo
echo "| | packfs | tar | zip -0 / unzip | tar ÷ packfs | zip ÷ packfs |"
echo "|---|---:|---:|---:|---:|---:|"
echo "| build archive | $(spread "${pack[@]}") | $(spread "${tar_c[@]}") | $(spread "${zip_c[@]}") | $(ratio "$(median "${tar_c[@]}")" "$(median "${pack[@]}")") | $(ratio "$(median "${zip_c[@]}")" "$(median "${pack[@]}")") |"
echo "| extract (tar --no-same-owner) | $(spread "${unpack[@]}") | $(spread "${tar_x[@]}") | $(spread "${zip_x[@]}") | $(ratio "$(median "${tar_x[@]}")" "$(median "${unpack[@]}")") | $(ratio "$(median "${zip_x[@]}")" "$(median "${unpack[@]}")") |"
echo "| archive bytes | $(size tree.pack) | $(size tree.tar) | $(size tree.zip) | | |"
}
table | tee "$work/table.md"
if [ "$files" = 100000 ] && [ -z "${RUNS:-}" ]; then
    cargo run -q --manifest-path "$repo/Cargo.toml" -p packfs-bench --bin results -- write cli --command bench/cli.sh \
        --code bench/cli.sh host/cli/src/pack.rs host/cli/src/packing.rs host/cli/src/unpack.rs host/os/src core/src/pack <"$work/table.md"
fi
