#!/usr/bin/env bash
# remote.sh - remote jobs (A2A_JOB_MODE=remote: the slices over the job's TCP
# connection) before and after a change of liba2a, alternating: a2a-bench
# --patterns uniform (64 B .. 64 MiB) under a2a-launch, plain buffers, shapes
# 2x2 and 4x1, REPEAT rounds; prints the median (and best) time per cell.
#
# usage: bench/remote.sh BEFORE_LIB_DIR AFTER_BUILD [REPEAT] [OUT_DIR]
# AFTER_BUILD is a CMake build tree (tools/a2a-launch, tools/a2a-bench,
# worker/a2a-worker, worker/liba2a.so.0, coordinator/a2a-coordinator); the
# "before" runs use the same binaries with BEFORE_LIB_DIR's liba2a.so.0 (only
# the job's library differs, the services are the same).
set -u
before=$(cd "$1" && pwd) after=$(cd "$2" && pwd) repeat=${3:-3} out=${4:-build/bench-results/remote}
mkdir -p "$out"
: >"$out/raw.txt"
run() { # LIBDIR LABEL W R
    local lib=$1 label=$2 w=$3 r=$4
    A2A_JOB_MODE=remote LD_LIBRARY_PATH=$lib "$after/tools/a2a-launch" --workers "$w" \
        --ranks-per-worker "$r" -- "$after/tools/a2a-bench" --patterns uniform --quiet -w 1 \
        2>&1 | grep '^\[0\] uniform' | awk -v l="$label" -v s="${w}x${r}" '{print l, s, $4, $5}'
}
for ((i = 0; i < repeat; i++)); do
    for shape in "2 2" "4 1"; do
        # shellcheck disable=SC2086
        run "$before" before $shape >>"$out/raw.txt"
        # shellcheck disable=SC2086
        run "$after/worker" after $shape >>"$out/raw.txt"
    done
done
python3 - "$out/raw.txt" <<'PY' | tee "$out/table.md"
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, shape, size, t = line.split()
    rows.setdefault((shape, int(size)), {}).setdefault(label, []).append(float(t))
print("| shape | bytes per rank | before: median (best) us | GB/s | after: median (best) us | GB/s | after / before |")
print("|---|---|---|---|---|---|---|")
for shape, size in sorted(rows):
    r = rows[(shape, size)]
    if "before" not in r or "after" not in r:
        continue
    b, a = statistics.median(r["before"]), statistics.median(r["after"])
    print(f"| {shape} | {size} | {b:.0f} ({min(r['before']):.0f}) | {size / b / 1e3:.3f} | {a:.0f} ({min(r['after']):.0f}) | {size / a / 1e3:.3f} | {a / b:.2f} |")
PY
