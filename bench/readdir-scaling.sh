#!/usr/bin/env bash
# Listing a directory as it grows: the guest workload's create and readdir
# phases (a p1 guest listing one directory of N files) on PackFS's MemFs
# and on wasmtime's native preview1 over /dev/shm, N = 10^2 to 10^5, each
# N a run of the guest benchmark (its configurations interleaved, RUNS
# runs, default 3). wasmtime-wasi's preview1 `fd_readdir` re-reads the
# directory from its start on every call (a cookie is an index), so its
# listing is O(N^2) in 4 KiB buffers: the ratio grows with N, and that is
# the peer's pathology, not PackFS's speed. Writes a Markdown table to
# stdout: median [min–max] of each, and the ratio of medians.
#
# Run: bench/readdir-scaling.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
raw=$(mktemp)
table=$(mktemp)
trap 'rm -f "$raw" "$table"' EXIT
{
echo "| files in the directory | PackFS \`mem\`, ms | wasmtime preview1, /dev/shm, ms | wasmtime ÷ PackFS |"
echo "|--:|--:|--:|--:|"
for n in 100 1000 10000 100000; do
    : >"$raw"
    GUEST_BENCH_N=$n GUEST_BENCH_RUNS=$runs GUEST_BENCH_ONLY=p1/mem,p1/wasi-p1-shm \
        GUEST_BENCH_PHASES=create,readdir GUEST_BENCH_RAW="$raw" \
        cargo bench -q -p packfs-bench --bench guest >/dev/null
    python3 - "$raw" "$n" <<'PY'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    target, backend, phase, ns, _ = line.split()
    if target == "p1" and phase == "readdir":
        times.setdefault(backend, []).append(int(ns) / 1e6)
def cell(v):
    return f"{statistics.median(v):.2f} [{min(v):.2f}–{max(v):.2f}]"
ours, theirs = times["mem"], times["wasi-p1-shm"]
ratio = statistics.median(theirs) / statistics.median(ours)
print(f"| {int(sys.argv[2]):,} | {cell(ours)} | {cell(theirs)} | {ratio:.2f}x |")
PY
done
} | tee "$table"
# Only the default run is the results file's.
[ -z "${RUNS:-}" ] || exit 0
cargo run -q -p packfs-bench --bin results -- write guest --variant readdir-scaling --command bench/readdir-scaling.sh \
    --code bench/readdir-scaling.sh bench/benches/guest.rs guest-tests/src/bin/bench_workload.rs core/src host/src Cargo.lock <"$table"
