#!/usr/bin/env bash
# plot.sh - docs/perf_uniform_n4.png from compare.sh results: algbw against
# size, uniform, N = 4, shape 2x2, a2a with plain and with shared buffers
# beside Open MPI (the MPI times of the plain run).
#
#   bench/plot.sh PLAIN_RESULT_DIR SHARED_RESULT_DIR [OUT.png]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PLAIN=$1 SHARED=$2 OUT=${3:-$ROOT/docs/perf_uniform_n4.png}
command -v gnuplot >/dev/null || { echo "plot.sh: needs gnuplot (apt-get install gnuplot-nox)" >&2; exit 1; }

# rows of table.md: | pattern | N | shape | S | a2a us | MPI us | ...
rows() { awk -F'|' '$2 ~ /uniform/ && $3 + 0 == 4 && $4 ~ /2x2/ {
    gsub(/ /, "", $5); gsub(/ /, "", $6); gsub(/ /, "", $7); print $5, $6, $7 }' "$1/table.md"; }
dat=$(mktemp)
join -a 1 -e NaN -o 0,1.2,2.2,1.3 <(rows "$PLAIN" | sort -k1,1) <(rows "$SHARED" | sort -k1,1) |
    sort -n | awk '{ s = $1; printf "%s %s %s %s\n", s, ($2 == "NaN" ? "NaN" : s / ($2 * 1e3)),
                                ($3 == "NaN" ? "NaN" : s / ($3 * 1e3)), ($4 == "-" ? "NaN" : s / ($4 * 1e3)) }' >"$dat"
cp "$dat" "$ROOT/bench/plot.dat"
(cd "$ROOT/bench" && gnuplot -e "set output '$OUT'" plot.gp)
rm -f "$dat"
echo "plot.sh: wrote $OUT (data in bench/plot.dat: S a2a_plain a2a_shared mpi, GB/s)"
