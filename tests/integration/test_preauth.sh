#!/usr/bin/env bash
# test_preauth.sh - what peers without the secret cost: floods and slow
# connections at every port of a cluster with security.token_file.
#
# usage: test_preauth.sh A2A_COORDINATOR A2A_WORKER EXCHANGE_CHECK PREAUTH_CHECK
# (KEEP_DIR=1 keeps the logs)
#
# A coordinator and two workers (node-a: world ranks 0 1, node-b: 2 3) with a
# token, the links up after a first verified exchange. Then:
#  1. an unauthenticated RPC flood at the coordinator (one source address,
#     over the per-source cap) and at node-a's API (8 sources), while a client
#     with the token times Health calls (preauth_check rpc-flood); the
#     process keeps its descriptors and threads;
#  2. a slowloris at node-a's data port (300 connections from 10 sources, one
#     byte a second; HELLO, 1 MiB headers, 4 MiB payloads) while the four
#     ranks run verified exchanges; node-a's RSS and threads stay bounded,
#     connections beyond the cap are refused at once, the others closed at
#     the handshake deadline;
#  3. SIGTERM stops each process within 5 s.
set -u
coord_bin=$1 worker_bin=$2 check=$3 pre=$4
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-preauth.XXXXXX")
cfg=$dir/cluster.yaml
token=$dir/token
declare -A pid=() # service name -> pid
rank_pids=()
# shellcheck source=services.sh
. "$(dirname "${BASH_SOURCE[0]}")/services.sh"
trap services_cleanup EXIT
trap 'exit 130' INT TERM

fail() {
    echo "FAIL: $*"
    show_logs
    exit 1
}

export A2A_LOG_LEVEL=${A2A_LOG_LEVEL:-info}
unset A2A_TLS_CERT A2A_TLS_KEY A2A_TLS_CA

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pick_ports ATTEMPT: five free ports from 20000 + (pid + attempt) % 20000.
pick_ports() {
    local base=$((20000 + ($$ * 17 + $1 * 103 + RANDOM) % 20000)) p
    ports=()
    for ((p = base; ${#ports[@]} < 5 && p < 65000; p++)); do
        port_busy "$p" || ports+=("$p")
    done
}
url() { echo "tcp://127.0.0.1:${ports[$1]}"; }
coord_url() { url 0; }
api_url() { url $((1 + 2 * $1)); }
data_url() { url $((2 + 2 * $1)); }

write_config() {
    cat >"$cfg" <<EOF
coordinator:
  url: $(coord_url)
workers:
  - name: node-a
    url: $(api_url 0)
    data_url: $(data_url 0)
    socket: $dir/node-a.sock
    ranks: 2
  - name: node-b
    url: $(api_url 1)
    data_url: $(data_url 1)
    socket: $dir/node-b.sock
    ranks: 2
security:
  token_file: $token
EOF
}

start_cluster() {
    local attempt p
    for ((attempt = 0; attempt < 5; attempt++)); do
        pick_ports "$attempt"
        write_config
        rm -f "$dir"/*.log
        start coordinator "$dir/coordinator.log" "$coord_bin" --config "$cfg"
        if wait_listening coordinator "$dir/coordinator.log"; then
            start node-a "$dir/node-a.log" "$worker_bin" --config "$cfg" --name node-a
            start node-b "$dir/node-b.log" "$worker_bin" --config "$cfg" --name node-b
            if wait_listening node-a "$dir/node-a.log" && wait_listening node-b "$dir/node-b.log"; then
                return 0
            fi
        fi
        for p in "${pid[@]}"; do kill "$p" 2>/dev/null; done
        wait 2>/dev/null
        pid=()
    done
    fail "the cluster did not start in 5 attempts"
}

alive() {
    local s
    for s in coordinator node-a node-b; do
        kill -0 "${pid[$s]}" 2>/dev/null || fail "$s died"
    done
}

# stat_of SERVICE: "RSS_KIB THREADS FDS" of a running service.
stat_of() {
    local p=${pid[$1]} rss thr
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status")
    thr=$(awk '/^Threads:/ {print $2}' "/proc/$p/status")
    echo "$rss $thr $(ls "/proc/$p/fd" | wc -l)"
}

run_ranks() { # PREFIX ARGS...
    local prefix=$1 r
    shift
    rank_pids=()
    for r in 0 1 2 3; do
        A2A_WORKER_URL=$(api_url $((r / 2))) A2A_RANK=$r A2A_WORLD_SIZE=4 \
            A2A_COORDINATOR_URL=$(coord_url) A2A_TOKEN_FILE=$token \
            "$check" "$@" >"$dir/$prefix$r.log" 2>&1 &
        rank_pids+=($!)
    done
}

wait_ranks() { # PREFIX SECONDS
    local prefix=$1 end=$((SECONDS + $2)) r ok=0
    for ((r = 0; r < ${#rank_pids[@]}; r++)); do
        while kill -0 "${rank_pids[r]}" 2>/dev/null && ((SECONDS < end)); do sleep 0.1; done
        if kill -0 "${rank_pids[r]}" 2>/dev/null; then
            echo "rank $r still runs after $2 s"
            kill -9 "${rank_pids[r]}" 2>/dev/null
            ok=1
        elif ! wait "${rank_pids[r]}"; then
            echo "rank $r failed: $(tail -n 3 "$dir/$prefix$r.log")"
            ok=1
        fi
    done
    rank_pids=()
    return $ok
}

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$token"
chmod 600 "$token"
start_cluster
echo "cluster: coordinator ${ports[0]}, node-a ${ports[1]}/${ports[2]}, node-b ${ports[3]}/${ports[4]}"
run_ranks warm random 3 2
wait_ranks warm 60 || fail "the first exchange failed"
echo "a first exchange: 4 ranks random ok"

# flood SERVICE URL SECONDS SOURCES
flood() {
    local svc=$1 u=$2 secs=$3 src=$4 b a rc
    read -r -a b <<<"$(stat_of "$svc")"
    "$pre" rpc-flood "$u" "$token" "$secs" "$src" >"$dir/flood-$svc.out" 2>&1 &
    local fp=$! max_rss=${b[0]} max_thr=${b[1]} s
    while kill -0 "$fp" 2>/dev/null; do
        read -r -a s <<<"$(stat_of "$svc")"
        ((s[0] > max_rss)) && max_rss=${s[0]}
        ((s[1] > max_thr)) && max_thr=${s[1]}
        sleep 0.5
    done
    wait "$fp"
    rc=$?
    sed 's/^/  /' "$dir/flood-$svc.out"
    sleep 1
    read -r -a a <<<"$(stat_of "$svc")"
    echo "  $svc: RSS ${b[0]} KiB before, $max_rss KiB at most, ${a[0]} after;" \
        "threads ${b[1]}, $max_thr at most, ${a[1]} after; descriptors ${b[2]} before, ${a[2]} after"
    ((rc == 0)) || fail "the flood at $svc: preauth_check failed"
    alive
    ((a[2] <= b[2] + 8)) || fail "$svc kept $((a[2] - b[2])) more descriptors after the flood"
    ((max_thr <= b[1] + 4)) || fail "$svc started $((max_thr - b[1])) threads under the flood"
}

t0=$SECONDS
echo "1. unauthenticated RPC flood at the coordinator (one source):"
flood coordinator "$(coord_url)" 8 1
echo "   unauthenticated RPC flood at node-a's API (8 sources):"
flood node-a "$(api_url 0)" 8 8
echo "   (part 1: $((SECONDS - t0)) s)"

t0=$SECONDS
echo "2. slowloris at node-a's data port, while the four ranks exchange:"
read -r -a b <<<"$(stat_of node-a)"
"$pre" link-slowloris "$(data_url 0)" 12 300 10 >"$dir/loris.out" 2>&1 &
lp=$!
sleep 2
run_ranks during random 5 3
max_rss=${b[0]} max_thr=${b[1]} max_fd=${b[2]}
while kill -0 "$lp" 2>/dev/null; do
    read -r -a s <<<"$(stat_of node-a)"
    ((s[0] > max_rss)) && max_rss=${s[0]}
    ((s[1] > max_thr)) && max_thr=${s[1]}
    ((s[2] > max_fd)) && max_fd=${s[2]}
    sleep 0.5
done
wait "$lp"
rc=$?
sed 's/^/  /' "$dir/loris.out"
wait_ranks during 60 || fail "the exchange during the slowloris failed"
echo "  4 ranks random ok during the slowloris"
echo "  node-a: RSS ${b[0]} KiB before, $max_rss KiB at most (+$(((max_rss - b[0]) / 1024)) MiB);" \
    "threads ${b[1]} before, $max_thr at most; descriptors ${b[2]} before, $max_fd at most"
((rc == 0)) || fail "the slowloris: preauth_check failed"
grep -q "[1-9][0-9]* refused at once" "$dir/loris.out" || fail "no connection was refused at the cap"
# a sanitizer's shadow memory and quarantine grow with every allocation: the plain build
# checks the bound, a sanitized one only that the worker lives on
rss_bound=32
grep -qE "__asan_init|__tsan_init" "$worker_bin" 2>/dev/null && rss_bound=512
((max_rss - b[0] < rss_bound * 1024)) ||
    fail "node-a grew by $(((max_rss - b[0]) / 1024)) MiB (bound $rss_bound MiB)"
((max_thr - b[1] < 100)) || fail "node-a started $((max_thr - b[1])) threads"
alive
echo "   (part 2: $((SECONDS - t0)) s)"

echo "3. SIGTERM:"
for s in coordinator node-a node-b; do
    t=$(date +%s%N)
    kill -TERM "${pid[$s]}"
    for ((i = 0; i < 50; i++)); do
        kill -0 "${pid[$s]}" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "${pid[$s]}" 2>/dev/null && fail "$s still runs 5 s after SIGTERM"
    wait "${pid[$s]}"
    st=$?
    echo "  $s stopped in $((($(date +%s%N) - t) / 1000000)) ms (exit $st)"
    ((st == 0)) || fail "$s exited with $st after SIGTERM"
    unset "pid[$s]"
done
echo "PASS"
