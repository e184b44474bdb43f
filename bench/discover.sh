#!/usr/bin/env bash
# discover.sh - count discovery against known counts, and an operation overlapped with compute
# (issue 12): a2a-bench under a2a-launch, uniform pattern, known counts and --discover in
# alternating rounds, then --overlap (a compute phase that spins) and --overlap-idle (one that
# sleeps, as while an accelerator computes); prints one table (medians over the rounds of a2a-bench's
# median, microseconds) and the overlap lines. See docs/PERFORMANCE.md.
#
# usage: bench/discover.sh [ROUNDS] [SHAPES]     (defaults: 3, "2x2 4x1 4x2")
set -eu
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
b=$root/build/tools
rounds=${1:-3}
shapes=${2:-"2x2 4x1 4x2"}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
for shape in $shapes; do
    w=${shape%x*} r=${shape#*x}
    max=64M # S is what a rank sends in all: 8 ranks at 64 MiB take about 2 GiB with staging
    for round in $(seq "$rounds"); do
        for mode in known discover; do
            extra=""
            [ $mode = discover ] && extra=--discover
            for range in "64 4096" "1M $max"; do
                set -- $range
                "$b/a2a-launch" --workers "$w" --ranks-per-worker "$r" -- \
                    "$b/a2a-bench" --patterns uniform -b "$1" -e "$2" -f 64 --json $extra 2>/dev/null |
                    sed -n 's/^\[0\] //p' >>"$out/$shape.$mode"
            done
        done
    done
    for kind in overlap overlap-idle; do
        "$b/a2a-launch" --workers "$w" --ranks-per-worker "$r" -- \
            "$b/a2a-bench" --patterns uniform -b 64 -e "$max" -f 16 --$kind --quiet 2>/dev/null |
            sed -n 's/^\[0\] \(# overlap\)/\1/p' | sed "s/^/$shape /" >>"$out/overlap"
    done
done
python3 - "$out" $shapes <<'PY'
import json, os, statistics, sys
d = sys.argv[1]
print("%-5s %10s %12s %12s %8s" % ("shape", "S_bytes", "known_us", "discover_us", "ratio"))
for shape in sys.argv[2:]:
    t = {}
    for mode in ("known", "discover"):
        for line in open(os.path.join(d, shape + "." + mode)):
            j = json.loads(line)
            assert j["ok"], line
            t.setdefault((j["S_bytes"], mode), []).append(j["time_us_median"])
    for s in sorted({k[0] for k in t}):
        k, x = statistics.median(t[(s, "known")]), statistics.median(t[(s, "discover")])
        print("%-5s %10d %12.1f %12.1f %8.3f" % (shape, s, k, x, x / k))
PY
cat "$out/overlap"
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
