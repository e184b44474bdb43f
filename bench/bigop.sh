#!/usr/bin/env bash
# bigop.sh - one large operation size against a smaller one, and the workers'
# peak memory: the "1 GiB per rank" check of the benchmark issue.
#
#   bench/bigop.sh [--shape 2x2] [--sizes "64M 1G"] [-p uniform] [--shared] [--build-dir DIR]
#
# Runs a2a-bench under a2a-launch once per size (--target 0.3: at least 5 timed
# iterations), samples the peak resident memory (VmHWM) of every a2a-worker
# while it runs, and prints per size: median time, algbw, and the largest
# worker peak. Compare the algbw of the sizes, and the peak with the README's
# "Memory bound". Not part of the test suite; needs 2 x size x ranks of RAM.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build SHAPE=2x2 SIZES="64M 1G" PAT=uniform EXTRA=""
while [ $# -gt 0 ]; do
    case $1 in
        --shape) SHAPE=$2; shift ;;
        --sizes) SIZES=$2; shift ;;
        -p) PAT=$2; shift ;;
        --shared) EXTRA="--shared" ;;
        --build-dir) BUILD=$2; shift ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bigop.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target a2a-bench a2a-launch a2a-worker a2a-coordinator >/dev/null

w=${SHAPE%x*} r=${SHAPE#*x}
echo "| shape | pattern | S per rank | time us | algbw GB/s | worker peak RSS MiB (max over workers) |"
echo "|---|---|---|---|---|---|"
for S in $SIZES; do
    out=$(mktemp)
    "$BUILD/tools/a2a-launch" --workers "$w" --ranks-per-worker "$r" -- \
        "$BUILD/tools/a2a-bench" --patterns "$PAT" -b "$S" -e "$S" --target 0.3 --quiet $EXTRA --output "$out" \
        >"$out.log" 2>&1 &
    launch=$! peak=0
    while kill -0 "$launch" 2>/dev/null; do
        for p in $(pgrep -x a2a-worker 2>/dev/null || true); do
            # only the workers of this run: children of our a2a-launch
            [ "$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')" = "$launch" ] || continue
            kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
            [ "${kb:-0}" -gt "$peak" ] && peak=$kb
        done
        sleep 0.2
    done
    rc=0; wait "$launch" || rc=$?
    line=$(grep -v '^#' "$out" | awk 'NF == 7' | head -1)
    if [ "$rc" != 0 ] || [ -z "$line" ]; then
        echo "| $SHAPE | $PAT | $S | FAILED (exit $rc, see $out.log) | | |"
        continue
    fi
    set -- $line
    printf '| %s | %s | %s | %s | %s | %s |%s\n' "$SHAPE" "$1" "$S" "$4" "$5" \
        "$(awk -v k="$peak" 'BEGIN { printf "%.1f", k / 1024 }')" "$( [ "$7" = ok ] || echo " NOT OK")"
    rm -f "$out" "$out.log"
done
