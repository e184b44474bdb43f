#!/usr/bin/env bash
# cpucost.sh - CPU seconds per operation of everything a2a runs (coordinator, workers, jobs)
# beside Open MPI's (mpirun and its ranks), and what an idle cluster costs (issue 14's CPU
# target). See docs/PERFORMANCE.md, "CPU cost".
#
# Each measurement is the user + system time of one whole run (bash's `time`: the run's
# process and every descendant it waited for; a2a-launch and mpirun reap everything they
# start). A run's start, warm-up and verification cost CPU too, so each cell runs twice, with
# LO and HI timed iterations, and reports (CPU(HI) - CPU(LO)) / (HI - LO): the CPU of one more
# iteration, which is one timed operation and the barrier before it (a2a-bench and
# bench/mpi_alltoallv_bench both run that barrier). Idle: a2a-launch running `sleep 12` against
# `sleep 2`, per second of an idle cluster (no call made).
#
# usage: bench/cpucost.sh [ROUNDS] [SHAPES] [SIZES]
#   defaults: 3, "2x2 4x1", "64 4096 1M 16M" (bytes each rank sends in all, k/M suffixes)
#   needs build/ (ln -s to a build dir) and Open MPI (mpicc, mpirun); prints one table
set -eu
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
b=$root/build/tools
rounds=${1:-3}
shapes=${2:-"2x2 4x1"}
sizes=${3:-"64 4096 1M 16M"}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mpicc -O2 -I"$root" -I"$root/build/generated" -o "$out/mpibench" "$root/bench/mpi_alltoallv_bench.c" \
    "$root/tools/benchopt.c" "$root/tools/workload.c"
MPIRUN=(mpirun --oversubscribe --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)

# iters SIZE: the LO and HI iteration counts (runs of a few seconds)
iters() {
    case $1 in
    *M) [ "${1%M}" -ge 16 ] && echo "10 40" || echo "200 800" ;;
    *) echo "1000 5000" ;;
    esac
}

# cpu CMD...: "user+system seconds" of CMD and its waited-for descendants; fails if CMD fails
cpu() {
    local TIMEFORMAT='%3U %3S' t
    { t=$( { time "$@" >"$out/last.log" 2>&1; } 2>&1); } || {
        tail -n 5 "$out/last.log" >&2
        return 1
    }
    awk '{printf "%.3f\n", $1 + $2}' <<<"$t"
}

echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
for shape in $shapes; do
    w=${shape%x*} r=${shape#*x} n=$((${shape%x*} * ${shape#*x}))
    for round in $(seq "$rounds"); do
        for s in $sizes; do
            read -r lo hi <<<"$(iters "$s")"
            for who in a2a mpi; do
                for k in $lo $hi; do
                    opts=(--patterns uniform -b "$s" -e "$s" -n "$k" -w 1 --quiet)
                    if [ $who = a2a ]; then
                        c=$(cpu "$b/a2a-launch" --workers "$w" --ranks-per-worker "$r" -- "$b/a2a-bench" "${opts[@]}")
                    else
                        c=$(cpu "${MPIRUN[@]}" -np "$n" "$out/mpibench" "${opts[@]}")
                    fi
                    echo "$shape $s $who $k $c" >>"$out/runs"
                done
            done
        done
        for k in 2 12; do
            echo "$shape idle a2a $k $(cpu "$b/a2a-launch" --workers "$w" --ranks-per-worker "$r" -- sleep "$k")" >>"$out/runs"
        done
    done
done
python3 - "$out/runs" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    shape, s, who, k, c = line.split()
    runs[(shape, s, who)].setdefault(int(k), []).append(float(c))
print("%-5s %8s %18s %18s %8s" % ("shape", "S", "a2a_cpu_us_per_op", "mpi_cpu_us_per_op", "a2a/mpi"))
per = {}
for (shape, s, who), byk in runs.items():
    lo, hi = sorted(byk)
    # per round: the difference of that round's two runs, then the median over rounds
    d = [(h - l) / (hi - lo) for l, h in zip(byk[lo], byk[hi])]
    per[(shape, s, who)] = statistics.median(d) * 1e6
for (shape, s, who) in sorted(per):
    if who != "a2a":
        continue
    if s == "idle":
        print("%-5s %8s %18.0f %18s %8s   (us of CPU per second, idle cluster)" % (shape, s, per[(shape, s, who)], "-", "-"))
        continue
    m = per.get((shape, s, "mpi"))
    print("%-5s %8s %18.1f %18.1f %8.2f" % (shape, s, per[(shape, s, who)], m, per[(shape, s, who)] / m))
PY
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
