#!/usr/bin/env bash
# boundary.sh - the job-to-worker boundary before and after, alternating:
# a2a-bench -p uniform (64 B .. 64 MiB) under a2a-launch, plain and shared
# buffers, shapes 2x2 and 4x1, REPEAT rounds; prints the median time per cell.
# (-p and -q are the a2a-bench of before issue 15's option letters: today's
# spells them --patterns uniform --quiet; bench/remote.sh does.)
#
# usage: bench/boundary.sh BEFORE_BUILD AFTER_BUILD [REPEAT] [OUT_DIR]
# A build is a folder with tools/a2a-launch, tools/a2a-bench, worker/a2a-worker,
# worker/liba2a.so.0, coordinator/a2a-coordinator (a CMake build tree, or a copy).
set -u
before=$(cd "$1" && pwd) after=$(cd "$2" && pwd) repeat=${3:-3} out=${4:-build/bench-results/boundary}
mkdir -p "$out"
run() { # BUILD LABEL W R [--shared]
    local b=$1 label=$2 w=$3 r=$4
    shift 4
    LD_LIBRARY_PATH=$b/worker "$b/tools/a2a-launch" --workers "$w" --ranks-per-worker "$r" -- \
        "$b/tools/a2a-bench" -p uniform -q "$@" 2>&1 | grep '^\[0\] uniform' |
        awk -v l="$label" -v s="${w}x${r}${1:+-shared}" '{print l, s, $4, $5}'
}
for ((i = 0; i < repeat; i++)); do
    for shape in "2 2" "4 1"; do
        for mode in "" --shared; do
            # shellcheck disable=SC2086
            run "$before" before $shape $mode >>"$out/raw.txt"
            # shellcheck disable=SC2086
            run "$after" after $shape $mode >>"$out/raw.txt"
        done
    done
done
# median and best per (shape, size), before and after
python3 - "$out/raw.txt" <<'PY' | tee "$out/table.md"
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, shape, size, t = line.split()
    rows.setdefault((shape, int(size)), {}).setdefault(label, []).append(float(t))
print("| shape | buffers | bytes per rank | before: median (best) us | after: median (best) us | after / before (medians) |")
print("|---|---|---|---|---|---|")
for shape, size in sorted(rows):
    r = rows[(shape, size)]
    if "before" not in r or "after" not in r:
        continue
    b, a = statistics.median(r["before"]), statistics.median(r["after"])
    s, kind = (shape.split("-") + ["plain"])[:2]
    print(f"| {s} | {kind} | {size} | {b:.0f} ({min(r['before']):.0f}) | {a:.0f} ({min(r['after']):.0f}) | {a / b:.2f} |")
PY
