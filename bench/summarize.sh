#!/usr/bin/env bash
# summarize.sh DIR - summary.md of a compare.sh results folder: per pattern, one
# row per (N, S bytes), one column per label (a2a_2x2, ompi_tcp, ...) with each
# run's median op time in microseconds ("r1 / r2 ..."; FAIL when a size did not
# verify), and the wire bytes of the workload. Reads DIR/<label>_N<N>_r<R>.txt,
# the 7-column lines and "#   iters=" detail lines that a2a-bench and
# bench/mpi_alltoallv_bench print (WORKLOADS.md section 6).
set -euo pipefail
DIR=${1:?usage: summarize.sh RESULT_DIR}
shopt -s nullglob
files=("$DIR"/*_N*_r*.txt)
echo "# compare.sh results: $DIR"
echo
if [ ${#files[@]} -eq 0 ]; then
    echo "(no result files)"
    exit 0
fi
echo "Median op time (us, max over ranks) of each run, r1 / r2 / ...; see table.md for the ratios."
for f in "${files[@]}"; do
    b=$(basename "$f" .txt)
    label=${b%_N*} run=${b##*_r}
    awk -v label="$label" -v run="$run" '
        !/^#/ && NF == 7 { key = $1 " " $2 " " $3; print key, label, run, $4, $7 }
        /^#   iters=/ && key != "" { for (i = 2; i <= NF; i++) if ($i ~ /^wire_bytes=/) {
            split($i, kv, "="); print key, "_wire", 0, kv[2], "-" } }' "$f"
done | awk '
    BEGIN { P["uniform"] = 1; P["skew"] = 2; P["incast"] = 3; P["sparse"] = 4 }
    $4 == "_wire" { wire[$1 " " $2 " " $3] = $6; next }
    { key = $1 " " $2 " " $3; lab = $4
      if (!(lab in seen)) { seen[lab] = 1; labs[++nl] = lab }
      if (!(key in rows)) { rows[key] = 1; keys[++nk] = key }
      t[key, lab, $5] = $7 == "ok" ? sprintf("%.1f", $6) : sprintf("%.1f FAIL", $6)
      if ($5 > maxrun) maxrun = $5 }
    END {
      # labels: a2a shapes first, MPI last
      for (i = 1; i <= nl; i++) for (j = i + 1; j <= nl; j++)
          if ((labs[j] !~ /^ompi/ && labs[i] ~ /^ompi/) ||
              ((labs[i] ~ /^ompi/) == (labs[j] ~ /^ompi/) && labs[j] < labs[i])) {
              x = labs[i]; labs[i] = labs[j]; labs[j] = x }
      for (i = 1; i <= nk; i++) for (j = i + 1; j <= nk; j++) {
          split(keys[i], a, " "); split(keys[j], b, " ")
          if (P[b[1]] < P[a[1]] || (P[b[1]] == P[a[1]] && (b[2] < a[2] ||
              (b[2] == a[2] && b[3] + 0 < a[3] + 0)))) { x = keys[i]; keys[i] = keys[j]; keys[j] = x } }
      last = ""
      for (i = 1; i <= nk; i++) {
          split(keys[i], k, " ")
          if (k[1] != last) {
              last = k[1]
              printf("\n## %s\n\n| N | S bytes | wire bytes |", k[1])
              for (l = 1; l <= nl; l++) printf(" %s |", labs[l])
              printf("\n|---|---|---|"); for (l = 1; l <= nl; l++) printf("---|"); printf("\n")
          }
          printf("| %s | %s | %s |", k[2], k[3], (keys[i] in wire) ? wire[keys[i]] : "-")
          for (l = 1; l <= nl; l++) {
              cell = ""
              for (r = 1; r <= maxrun; r++) if ((keys[i], labs[l], r) in t)
                  cell = cell (cell == "" ? "" : " / ") t[keys[i], labs[l], r]
              printf(" %s |", cell == "" ? "-" : cell)
          }
          printf("\n")
      } }'
