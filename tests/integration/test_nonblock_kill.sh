#!/usr/bin/env bash
# test_nonblock_kill.sh - a worker killed (-9) while non-blocking requests are in flight, and
# restarted (issue 12).
#
# usage: test_nonblock_kill.sh A2A_COORDINATOR A2A_WORKER NONBLOCK_CHECK
#
# A coordinator and two workers (w0: world ranks 0 1, w1: ranks 2 3); ranks 1, 2 and 3 of
# "nonblock_check kill" start three operations each, which cannot complete (rank 0 waits);
# w1 is killed: every request in flight must fail UNAVAILABLE (the first within 10 s; the
# ranks of w1 name it), none may hang or succeed. w1 is restarted, rank 0 joins, and every
# rank must end with a verified operation without being restarted.
set -u
coord_bin=$1 worker_bin=$2 check=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-nbkill.XXXXXX")
cfg=$dir/cluster.yaml
declare -A pid=()   # service name -> pid
rank_pids=()
# shellcheck source=services.sh
. "$(dirname "${BASH_SOURCE[0]}")/services.sh"
trap services_cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=cluster.sh
. "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" # fail, start_cluster, start_worker

export A2A_LOG_LEVEL=${A2A_LOG_LEVEL:-info}

write_config() { two_workers 2; }

# run_ranks LOGPREFIX ARGS...: starts world ranks 0..3 of exchange_check ARGS.
run_ranks() {
    local prefix=$1 r
    shift
    rank_pids=()
    for r in 0 1 2 3; do
        local w=$((r / 2))
        A2A_WORKER_URL="tcp://127.0.0.1:${ports[1 + 2 * w]}" A2A_RANK=$r A2A_WORLD_SIZE=4 \
            A2A_COORDINATOR_URL="tcp://127.0.0.1:${ports[0]}" \
            "$check" "$@" >"$dir/$prefix$r.log" 2>&1 &
        rank_pids+=($!)
    done
}

# wait_ranks SECONDS: 0 when all ranks exited 0 within SECONDS; prints who failed.
wait_ranks() {
    local end=$((SECONDS + $1)) r st ok=0
    for ((r = 0; r < 4; r++)); do
        while kill -0 "${rank_pids[r]}" 2>/dev/null && ((SECONDS < end)); do
            sleep 0.2
        done
        if kill -0 "${rank_pids[r]}" 2>/dev/null; then
            echo "rank $r still runs after $1 s"
            ok=1
            continue
        fi
        wait "${rank_pids[r]}"
        st=$?
        if ((st != 0)); then
            echo "rank $r exited with $st"
            ok=1
        fi
    done
    return $ok
}

start_cluster 5 w0 w1
echo "cluster: coordinator ${ports[0]}, w0 ${ports[1]}/${ports[2]}, w1 ${ports[3]}/${ports[4]}"
export NB_GATE=$dir/gate
run_ranks nb kill
for ((i = 0; i < 150; i++)); do # 15 s for the three to start
    n=0
    for r in 1 2 3; do grep -q "kill: started" "$dir/nb$r.log" 2>/dev/null && n=$((n + 1)); done
    ((n == 3)) && break
    sleep 0.1
done
((i < 150)) || fail "ranks 1-3 did not start their requests"
sleep 0.5
kill -9 "${pid[w1]}"
wait "${pid[w1]}" 2>/dev/null
t0=$SECONDS
for ((i = 0; i < 100; i++)); do # 10 s
    n=0
    for r in 1 2 3; do grep -q "in flight: op 0: UNAVAILABLE" "$dir/nb$r.log" && n=$((n + 1)); done
    ((n == 3)) && break
    sleep 0.1
done
((i < 100)) || fail "the requests in flight did not all fail UNAVAILABLE within 10 s of the kill"
echo "requests in flight failed after $((i * 100)) ms:"
grep -h "in flight: op 0" "$dir/nb1.log" "$dir/nb2.log" "$dir/nb3.log"
for r in 2 3; do
    grep -q "in flight: op 0: UNAVAILABLE.*w1" "$dir/nb$r.log" || fail "rank $r's failure does not name w1"
done
sleep 1
mv "$dir/w1.log" "$dir/w1-killed.log"
start_worker w1
wait_listening w1 "$dir/w1.log" || fail "w1 did not restart"
echo "restarted w1 after $((SECONDS - t0)) s"
touch "$NB_GATE"
wait_ranks 120 || fail "the ranks did not all end with a verified operation"
grep -h "verified after" "$dir"/nb?.log
echo "PASS"
