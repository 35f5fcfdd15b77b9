#!/usr/bin/env bash
# `packfs pack` / `packfs unpack` of a generated tree of 100,000 files
# against `tar -cf` / `tar -xf` and `zip -0` / `unzip` (stored, like a pack)
# on the same tree, in the same run; medians of 3 runs, written as a
# Markdown table to stdout.
#
# Run: bench/cli.sh [FILES]   (default 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-100000}
command -v zip >/dev/null && command -v unzip >/dev/null || {
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get install -y -qq zip unzip >/dev/null
}
cargo build -q --release -p packfs-cli
packfs=$PWD/target/release/packfs
work=$(mktemp -d /tmp/packfs-cli-bench.XXXXXX)
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

# median of three wall-clock runs of "$@", in seconds; $prep runs before each.
median() {
    local times=()
    for _ in 1 2 3; do
        eval "$prep"
        local t0=$(date +%s%N)
        "$@" >/dev/null
        local t1=$(date +%s%N)
        times+=("$(( (t1 - t0) / 1000000 ))")
    done
    printf '%s\n' "${times[@]}" | sort -n | sed -n 2p | awk '{printf "%.3f", $1 / 1000}'
}

cd "$work"
prep='rm -f tree.pack'; pack=$(median "$packfs" pack tree -o tree.pack)
prep='rm -f tree.tar'; tar_c=$(median tar -cf tree.tar -C tree .)
prep='rm -f tree.zip'; zip_c=$(median sh -c 'cd tree && zip -q -r -0 ../tree.zip .')
prep='rm -rf out && mkdir out'; unpack=$(median "$packfs" unpack tree.pack out)
tar_x=$(median tar -xf tree.tar -C out)
zip_x=$(median unzip -q tree.zip -d out)
size() { stat -c %s "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }

echo "Tree: $files files, $bytes bytes, 1,000 directories (bench/cli.sh). Median of 3 runs, seconds."
echo
echo "| | packfs | tar | zip -0 / unzip | tar ÷ packfs | zip ÷ packfs |"
echo "|---|---:|---:|---:|---:|---:|"
echo "| build archive | $pack | $tar_c | $zip_c | $(ratio "$tar_c" "$pack") | $(ratio "$zip_c" "$pack") |"
echo "| extract | $unpack | $tar_x | $zip_x | $(ratio "$tar_x" "$unpack") | $(ratio "$zip_x" "$unpack") |"
echo "| archive bytes | $(size tree.pack) | $(size tree.tar) | $(size tree.zip) | | |"
