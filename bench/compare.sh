#!/usr/bin/env bash
# compare.sh - a2a-bench next to the MPI reference (Open MPI over TCP), same
# workloads, same run, alternating; prints a2a/MPI and a2a/ideal per size.
# See bench/README.md. Not part of the test suite.
#
#   bench/compare.sh [--quick] [--sizes lat|bw|both] [-b MIN -e MAX -f FACTOR]
#                    [--patterns LIST] [--target S] [--repeat R] [--shapes "2x2 4x1 2x4 4x2"]
#                    [--build-dir DIR] [--out DIR] [--no-mpi] [--shared] [--ceiling-gbit G]
#                    [--netns [--hosts K] [--ranks-per-host R] [--rate RATE] [--goodput GBIT]]
#                    bench/compare.sh --table RESULT_DIR
#
# Shapes are WORKERSxRANKS_PER_WORKER for a2a-launch; MPI runs N = W*R ranks.
# --netns: ideal = busiest host's max(out, in) / B with B the TCP goodput of one
# host link (WORKLOADS.md 5), measured with iperf3 between two namespaces
# (--goodput GBIT to give it; without iperf3 the nominal --rate is used).
# --hosts K (default 4, at most 250) emulated hosts of --ranks-per-host R ranks
# (default 1) each: one worker per host, N = K*R ranks, rank r on host r/R + 1,
# Open MPI's ranks placed the same way. With R > 1 no ideal time is printed (the
# ideal above counts one rank per host).
# The MPI reference is bench/mpi_alltoallv_bench.c, built with mpicc; without
# Open MPI (mpicc, mpirun) compare.sh stops at once unless --no-mpi.
# Environment: MPICC, MPIRUN (default mpicc, mpirun); A2A_SHARED (default
# ../shared beside the repository) only for --netns (its netns_cluster.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${A2A_SHARED:-$ROOT/../shared}
MPICC=${MPICC:-mpicc} MPIRUN_BIN=${MPIRUN:-mpirun}
BUILD=$ROOT/build
QUICK=0 SIZES=both PATTERNS=all TARGET="" REPEAT=2 SHAPES="2x2 4x1 2x4 4x2"
BMIN="" BMAX="" BFAC="" OUT="" TABLE_ONLY="" MPI=1 CEIL_GBIT=47.6 NETNS=0 RATE="" GOODPUT=""
HOSTS=4 RPH=1

usage() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit "${1:-2}"; }
A2A_EXTRA=""
while [ $# -gt 0 ]; do
    case $1 in # an option with a value needs one
        --sizes | -b | -e | -f | -p | --patterns | -t | --target | --repeat | --shapes | --build-dir | \
            --out | --ceiling-gbit | --rate | --goodput | --table | --hosts | --ranks-per-host)
            [ $# -ge 2 ] || { echo "compare.sh: $1 needs a value (see compare.sh --help)" >&2; exit 2; } ;;
    esac
    case $1 in
        --quick) QUICK=1 ;;
        --sizes) SIZES=$2; shift ;;
        -b) BMIN=$2; shift ;;
        -e) BMAX=$2; shift ;;
        -f) BFAC=$2; shift ;;
        -p|--patterns) PATTERNS=$2; shift ;; # -p, -t: older spellings, kept (a2a-bench has
        -t|--target) TARGET=$2; shift ;;     # only the long ones: nccl-tests' -p, -t differ)
        --repeat) REPEAT=$2; shift ;;
        --shapes) SHAPES=$2; shift ;;
        --build-dir) BUILD=$(cd "$2" 2>/dev/null && pwd || echo "$2"); shift ;;
        --out) OUT=$2; shift ;;
        --no-mpi) MPI=0 ;;
        --shared) A2A_EXTRA="$A2A_EXTRA --shared" ;; # a2a-bench in buffers shared with the worker
        --ceiling-gbit) CEIL_GBIT=$2; shift ;;
        --netns) NETNS=1 ;;
        --rate) RATE=$2; shift ;;
        --goodput) GOODPUT=$2; shift ;;
        --hosts) HOSTS=$2; shift ;;
        --ranks-per-host) RPH=$2; shift ;;
        --table) TABLE_ONLY=$2; shift ;;
        -h|--help) usage 0 ;;
        *) echo "compare.sh: unknown option $1" >&2; usage >&2 ;;
    esac
    shift
done

# values that would otherwise run something else (--shapes 3 ran 3x3) or nothing (--repeat x)
bad() { echo "compare.sh: $1 (see compare.sh --help)" >&2; exit 2; }
case $SIZES in lat | bw | both) ;; *) bad "--sizes $SIZES: not lat, bw or both" ;; esac
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || bad "--repeat $REPEAT: not a count >= 1"
[[ $HOSTS =~ ^[1-9][0-9]*$ ]] && [ "$HOSTS" -ge 2 ] && [ "$HOSTS" -le 250 ] ||
    bad "--hosts $HOSTS: not a count of 2 to 250"
[[ $RPH =~ ^[1-9][0-9]*$ ]] || bad "--ranks-per-host $RPH: not a count >= 1"
[ -n "${SHAPES// /}" ] || bad "--shapes: no shape given"
for s in $SHAPES; do
    [[ $s =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]] || bad "--shapes: \"$s\" is not WORKERSxRANKS_PER_WORKER (e.g. 2x2)"
done

# ---- size ranges: "MIN MAX FACTOR" per range ----
if [ -n "$BMIN$BMAX$BFAC" ]; then
    RANGES=("${BMIN:-64} ${BMAX:-64M} ${BFAC:-4}")
elif [ "$QUICK" = 1 ]; then
    case $SIZES in lat) RANGES=("64 4K 64") ;; bw) RANGES=("1M 16M 16") ;;
        *) RANGES=("64 4K 64" "1M 16M 16") ;; esac
else
    case $SIZES in lat) RANGES=("64 4K 4") ;; bw) RANGES=("1M 64M 4") ;;
        *) RANGES=("64 4K 4" "1M 64M 4") ;; esac
fi
[ -n "$TARGET" ] || { [ "$QUICK" = 1 ] && TARGET=0.1 || TARGET=0.3; }

log() { echo "[$(date +%T)] $*" >&2; }

prepare() {
    # ---- build ----
    if [ ! -f "$BUILD/CMakeCache.txt" ]; then
        cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
    fi
    cmake --build "$BUILD" -j"$(nproc)" --target a2a-bench a2a-launch a2a-worker a2a-coordinator \
        >/dev/null
    LAUNCH=$BUILD/tools/a2a-launch BENCH=$BUILD/tools/a2a-bench
    WORKER=$BUILD/worker/a2a-worker COORD=$BUILD/coordinator/a2a-coordinator

    OUT=${OUT:-$BUILD/bench-results/$(date +%Y%m%d-%H%M%S)}
    mkdir -p "$OUT"
    OUT=$(cd "$OUT" && pwd)

    MPIBENCH=""
    if [ "$MPI" = 1 ]; then
        MPIBENCH=$OUT/mpi_alltoallv_bench
        "$MPICC" -O2 -I"$ROOT" -I"$BUILD/generated" -o "$MPIBENCH" "$ROOT/bench/mpi_alltoallv_bench.c" \
            "$ROOT/tools/benchopt.c" "$ROOT/tools/workload.c" ||
            { echo "compare.sh: $MPICC could not build bench/mpi_alltoallv_bench.c" >&2; exit 1; }
    fi
}

# Open MPI is half of the comparison: without it, stop before anything runs
if [ -z "$TABLE_ONLY" ] && [ "$MPI" = 1 ]; then
    for tool in "$MPICC" "$MPIRUN_BIN"; do
        command -v "$tool" >/dev/null || {
            echo "compare.sh: no $tool: install Open MPI (apt-get install openmpi-bin libopenmpi-dev), or pass --no-mpi for a2a alone" >&2
            exit 1; }
    done
fi

MPIRUN=("$MPIRUN_BIN" --oversubscribe --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)

# run_one FILE CMD...: the bench lines of one run into FILE (summarize.sh format)
FAILED=0
run_one() {
    local f=$1 name=$2; shift 2
    { echo "# cmd: $*"; echo "# date: $(date -Is)"; } >"$f"
    log "$name: $*"
    if ! "$@" >>"$f.log" 2>&1; then
        echo "# EXIT CODE (see the .log file)" >>"$f"; FAILED=1
    fi
}

benchargs() { echo "--patterns $PATTERNS -b $1 -e $2 -f $3 --target $TARGET"; }

# ---- loopback: alternate a2a shapes and MPI, REPEAT times ----
loopback() {
    local r shape w rpw n ns
    ns=$(for s in $SHAPES; do echo $((${s%x*} * ${s#*x})); done | sort -un)
    for r in $(seq 1 "$REPEAT"); do
        for range in "${RANGES[@]}"; do
            set -- $range
            local args; args=$(benchargs "$1" "$2" "$3")
            for shape in $SHAPES; do
                w=${shape%x*} rpw=${shape#*x} n=$((w * rpw))
                local f=$OUT/a2a_${shape}_N${n}_r$r.txt
                local part=$OUT/.part.txt
                run_one "$part" "$(basename "$f")" "$LAUNCH" --workers "$w" --ranks-per-worker "$rpw" -- \
                    "$BENCH" $args $A2A_EXTRA --output "$part.out"
                cat "$part" "$part.out" >>"$f" 2>/dev/null || true
                cat "$part.log" >>"$f.log"; rm -f "$part" "$part.out" "$part.log"
            done
            if [ "$MPI" = 1 ]; then
                for n in $ns; do
                    local f=$OUT/ompi_tcp_N${n}_r$r.txt part=$OUT/.part.txt
                    run_one "$part" "$(basename "$f")" "${MPIRUN[@]}" -np "$n" "$MPIBENCH" $args
                    cat "$part" >>"$f"; grep -v '^\[' "$part.log" >>"$f" || true
                    rm -f "$part" "$part.log"
                done
            fi
        done
    done
}

# ---- K emulated hosts (network namespaces), one worker and R ranks per host ----
netns() {
    local NS=$SHARED/bench/netns_cluster.sh K=$HOSTS R=$RPH NET=${A2A_NS_NET:-10.77.0}
    [ "$(id -u)" = 0 ] || { log "--netns needs root"; exit 1; }
    [ -x "$NS" ] || [ -f "$NS" ] || { log "no $NS"; exit 1; }
    bash "$NS" up $K $RATE >&2
    local Y=$OUT/netns_cluster.yaml pids=() k
    { echo "coordinator:"; echo "  url: tcp://$NET.1:7000"; echo "workers:"
      for k in $(seq 1 $K); do
          printf '  - name: h%d\n    url: tcp://%s.%d:7100\n    data_url: tcp://%s.%d:7101\n    ranks: %d\n' \
              "$k" "$NET" "$k" "$NET" "$k" "$R"
          # the jobs of a host reach its worker over its Unix socket, as beside a real worker
          # (without one they would be remote jobs, their slices in RPCs over TCP)
          printf '    socket: %s/h%d.sock\n' "$OUT" "$k"; done; } >"$Y"
    bash "$NS" exec 1 "$COORD" --config "$Y" >"$OUT/netns_coordinator.log" 2>&1 & pids+=($!)
    for k in $(seq 1 $K); do
        bash "$NS" exec "$k" "$WORKER" --config "$Y" --name "h$k" >"$OUT/netns_worker$k.log" 2>&1 &
        pids+=($!)
    done
    local deadline=$((SECONDS + 20))
    until [ "$(cat "$OUT"/netns_worker*.log "$OUT/netns_coordinator.log" | grep -c 'listening on')" -ge $((K + 1)) ]; do
        [ $SECONDS -lt $deadline ] || { log "netns services did not start (see $OUT/netns_*.log)"; break; }
        sleep 0.2
    done
    if [ -z "$GOODPUT" ] && [ -n "$RATE" ] && command -v iperf3 >/dev/null; then
        bash "$NS" exec 1 iperf3 -s -1 >/dev/null 2>&1 &
        local ip=$!
        sleep 0.5
        GOODPUT=$(bash "$NS" exec 2 iperf3 -c "$NET.1" -t 4 -J 2>/dev/null |
            awk -F'[:,]' '/"sum_received"/ {r = 1} r && /"bits_per_second"/ {printf "%.4f", $2 / 1e9; exit}' ||
            true)
        kill "$ip" 2>/dev/null || true
        wait "$ip" 2>/dev/null || true
        log "iperf3 goodput h2 -> h1: ${GOODPUT:-?} Gbit/s"
    fi
    [ -n "$GOODPUT" ] && echo "$GOODPUT" >"$OUT/goodput_gbit.txt"
    local label=a2a_netns hosts
    hosts=$(for k in $(seq 1 $K); do printf '%s.%d:%d,' "$NET" "$k" "$R"; done); hosts=${hosts%,}
    local n=$((K * R)) rank
    for r in $(seq 1 "$REPEAT"); do
        for range in "${RANGES[@]}"; do
            set -- $range
            local args; args=$(benchargs "$1" "$2" "$3")
            local f=$OUT/${label}_N${n}_r$r.txt
            { echo "# cmd: netns a2a-bench $args"; echo "# date: $(date -Is)"; } >>"$f"
            log "$(basename "$f") $args"
            local jp=()
            for rank in $(seq 1 $((n - 1))); do
                k=$((rank / R + 1))
                bash "$NS" exec "$k" env A2A_JOB_MODE=local A2A_WORKER_URL="tcp://$NET.$k:7100" A2A_RANK=$rank \
                    A2A_WORLD_SIZE=$n A2A_COORDINATOR_URL="tcp://$NET.1:7000" \
                    "$BENCH" $args >>"$f.log" 2>&1 & jp+=($!)
            done
            bash "$NS" exec 1 env A2A_JOB_MODE=local A2A_WORKER_URL="tcp://$NET.1:7100" A2A_RANK=0 A2A_WORLD_SIZE=$n \
                A2A_COORDINATOR_URL="tcp://$NET.1:7000" "$BENCH" $args --output "$f.part" \
                >>"$f.log" 2>&1 || FAILED=1
            for p in "${jp[@]}"; do wait "$p" || FAILED=1; done
            cat "$f.part" >>"$f" 2>/dev/null || true; rm -f "$f.part"
            if [ "$MPI" = 1 ]; then
                local g=$OUT/ompi_tcp_netns_N${n}_r$r.txt
                run_one "$g.p" "$(basename "$g")" bash "$NS" exec 1 "$MPIRUN_BIN" --allow-run-as-root -np $n -H "$hosts" \
                    --mca plm_rsh_agent "$NS rsh" --mca plm_rsh_no_tree_spawn 1 --mca pml ob1 \
                    --mca btl tcp,self --mca btl_tcp_if_include "$NET.0/24" \
                    --mca oob_tcp_if_include "$NET.0/24" --mca mpi_yield_when_idle 1 "$MPIBENCH" $args
                cat "$g.p" >>"$g"; grep -v '^\[' "$g.p.log" >>"$g" || true; rm -f "$g.p" "$g.p.log"
            fi
        done
    done
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    bash "$NS" down >&2
}

# ---- table: median over runs of each run's median; ratios ----
# B in bytes/s: loopback -> wire bytes / B; netns -> max(out, in) / B
table() {
    local glob=$1 mode=$2 gbit=$3
    echo "| pattern | N | shape | S bytes | a2a us | MPI us | a2a/MPI | ideal us | a2a/ideal | MPI/ideal |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    for f in $OUT/$glob; do
        [ -f "$f" ] || continue
        local b; b=$(basename "$f" .txt)
        local label=${b%_N*}
        awk -v label="$label" '
            !/^#/ && NF == 7 { last = $1 " " $2 " " $3; print last, label, $4, $7 }
            /^#   iters=/ && last != "" {
                for (i = 2; i <= NF; i++) { split($i, kv, "="); d[kv[1]] = kv[2] }
                print last, "_traffic", d["wire_bytes"], \
                    (d["max_host_out"] > d["max_host_in"] ? d["max_host_out"] : d["max_host_in"]) }' "$f"
    done | awk -v mode="$mode" -v B="$gbit" '
        function median(s,   a, n, i, j, t) {
            n = split(s, a, " ")
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
                if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        BEGIN { P["uniform"] = 1; P["skew"] = 2; P["incast"] = 3; P["sparse"] = 4 }
        $4 == "_traffic" { wire[$1 " " $2 " " $3] = $5; mx[$1 " " $2 " " $3] = $6; next }
        { key = $1 " " $2 " " $3; lab = $4
          if ($6 != "ok") bad[key, lab] = 1
          if (lab ~ /^ompi/) { mpi[key] = mpi[key] " " $5 }
          else { a2a[key SUBSEP lab] = a2a[key SUBSEP lab] " " $5; shapes[key SUBSEP lab] = 1 } }
        END {
          for (ks in shapes) {
            split(ks, kk, SUBSEP); key = kk[1]; lab = kk[2]; split(key, k, " ")
            shape = lab; sub(/^a2a_/, "", shape)
            ta = median(a2a[ks]); tm = (key in mpi) ? median(mpi[key]) : 0
            ib = (mode == "host") ? mx[key] : wire[key]
            ideal = B > 0 ? 1e6 * ib / (B * 1e9 / 8) : 0
            printf("%d %04d %s %012d | %s | %s | %s | %s | %.1f%s | %s | %s | %s | %s | %s |\n",
                P[k[1]], k[2], shape, k[3], k[1], k[2], shape, k[3], ta, bad[key, lab] ? " FAIL" : "",
                tm > 0 ? sprintf("%.1f", tm) : "-", tm > 0 ? sprintf("%.2fx", ta / tm) : "-",
                ideal > 0 ? sprintf("%.1f", ideal) : "-",
                ideal > 0 ? sprintf("%.2fx", ta / ideal) : "-",
                (ideal > 0 && tm > 0) ? sprintf("%.2fx", tm / ideal) : "-")
          } }' | sort -k1,1n -k2,2n -k3,3 -k4,4n | sed 's/^[0-9]* [0-9]* [^ ]* [0-9]* //'
}

if [ -n "$TABLE_ONLY" ]; then
    OUT=$(cd "$TABLE_ONLY" && pwd)
    mode=wire gbit=$CEIL_GBIT glob="*_N*_r*.txt"
    if ls "$OUT" | grep -q netns; then
        glob="*netns_N*_r*.txt"
        [ -n "$RATE" ] && mode=host gbit=$(echo "$RATE" | awk '/gbit$/ {print $0 + 0} /mbit$/ {print ($0 + 0) / 1000}')
        [ -f "$OUT/goodput_gbit.txt" ] && mode=host gbit=$(cat "$OUT/goodput_gbit.txt")
        [ -n "$GOODPUT" ] && mode=host gbit=$GOODPUT
    fi
    table "$glob" $mode "$gbit"
    exit 0
fi
prepare
{ echo "# compare.sh $(date -Is)  $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || true)"
  echo "# sizes: ${RANGES[*]}  patterns=$PATTERNS  target=${TARGET}s  repeat=$REPEAT  mpi=$MPI"
} >"$OUT/README.txt"

if [ "$NETNS" = 1 ]; then
    netns
    gbit=$CEIL_GBIT mode=wire
    if [ -n "$RATE" ]; then
        mode=host
        gbit=$(echo "$RATE" | awk '/gbit$/ {print $0 + 0} /mbit$/ {print ($0 + 0) / 1000}')
        [ -n "$GOODPUT" ] && gbit=$GOODPUT
    fi
    [ "$RPH" = 1 ] || gbit=0 # the ideal counts one rank per host
    { echo "## $HOSTS emulated hosts (netns) of $RPH rank(s), rate=${RATE:-unlimited}, ideal = $(
          [ "$RPH" != 1 ] && echo 'not computed (ranks per host > 1)' ||
          { [ $mode = host ] && echo 'max(out,in)' || echo 'wire bytes'; }) / $gbit Gbit/s"
      echo; table "*netns_N*_r*.txt" $mode "$gbit"; } | tee "$OUT/table.md"
else
    loopback
    { echo "## loopback, ideal = wire bytes / $CEIL_GBIT Gbit/s (--ceiling-gbit;" \
           "the best aggregate iperf3 loopback goodput on the project's VM, ../shared/bench/RESULTS.md)"
      echo; echo "a2a us / MPI us: median over $REPEAT runs of each run's median op time (max over ranks)."
      echo; table "*_N*_r*.txt" wire "$CEIL_GBIT"; } | tee "$OUT/table.md"
fi
bash "$ROOT/bench/summarize.sh" "$OUT" >"$OUT/summary.md"
log "results in $OUT (table.md, summary.md, raw *_N*_r*.txt and their .log)"
if grep -h -v '^#' "$OUT"/*_N*_r*.txt 2>/dev/null | awk 'NF == 7 && $7 != "ok" {b = 1} END {exit !b}'; then
    log "some lines are not ok"; FAILED=1
fi
exit $FAILED
