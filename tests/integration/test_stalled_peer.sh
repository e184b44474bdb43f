#!/usr/bin/env bash
# test_stalled_peer.sh - a peer worker that stops reading its links (SIGSTOP) while our ranks
# keep calling: our link to it fills up, and no call may return later than its deadline plus
# the bound (500 ms) for that (RELIABILITY finding 3: a call's own thread wrote its READY and
# eager slices to the link and waited there, up to 3 s, for a peer that did not read).
#
# usage: test_stalled_peer.sh A2A_COORDINATOR A2A_WORKER SEQCHECK
# env: STALL_TIMEOUT_MS (each call's timeout, default 150), STALL_BOUND_MS (500)
#
# Group g = world ranks 0..7, w0 holds 0..3 and w1 4..7. All eight call once (the links come
# up), then w1 is stopped and ranks 0..3 go on calling with 32 KiB eager slices for every rank
# of w1 (512 KiB a round into the stopped peer's link, which holds a few MiB) until their link
# to w1 is given up (3 s of silence) and after. Every call fails (w1's ranks are gone or
# stopped), each within its timeout + the bound; the kept logs say whether the link filled.
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3
TIMEOUT=${STALL_TIMEOUT_MS:-150}
BOUND=${STALL_BOUND_MS:-500}
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-stall.XXXXXX")
cfg=$dir/cluster.yaml
declare -A pid=()
rank_pids=()
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=services.sh
. "$here/services.sh"
# shellcheck source=cluster.sh
. "$here/cluster.sh"
cleanup() {
    local p
    for p in "${pid[@]}"; do kill -CONT "$p" 2>/dev/null; done
    services_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export A2A_LOG_LEVEL=${A2A_LOG_LEVEL:-info}

write_config() { two_workers 4 g; }
api() { echo "tcp://127.0.0.1:${ports[1 + 2 * ($1 / 4)]}"; }
members=0,1,2,3,4,5,6,7

start_cluster 5 w0 w1
# ranks 4..7: one call each, then they end; ranks 0..3: that call and 60 more, 32 KiB a slice
for r in 4 5 6 7; do
    A2A_WORKER_URL=$(api $r) A2A_RANK=$r "$seqcheck" --group g --members $members \
        --timeout 5000 --count 4096 calls 1 >"$dir/r$r.log" 2>&1 &
    rank_pids[r]=$!
done
for r in 0 1 2 3; do
    A2A_WORKER_URL=$(api $r) A2A_RANK=$r "$seqcheck" --group g --members $members \
        --timeout 5000 --count 4096 calls 1 >"$dir/warm$r.log" 2>&1 &
    rank_pids[r]=$!
done
for r in 0 1 2 3 4 5 6 7; do
    wait_pid "${rank_pids[r]}" 30 || fail "rank $r's first call did not return"
done
grep -q "status=OK data=ok" "$dir/warm0.log" || fail "the first call was not OK: $(cat "$dir/warm0.log")"
echo "all 8 ranks: call 0 OK (w0 and w1 linked both ways)"

kill -STOP "${pid[w1]}"
stopped=$(date +%s%3N)
for r in 0 1 2 3; do
    A2A_WORKER_URL=$(api $r) A2A_RANK=$r "$seqcheck" --group g --members $members \
        --timeout "$TIMEOUT" --count 4096 --base 1 calls 40 >"$dir/r$r.log" 2>&1 &
    rank_pids[r]=$!
done
for r in 0 1 2 3; do
    wait_pid "${rank_pids[r]}" 120 || fail "rank $r's calls did not end in 120 s"
done
echo "w1 stopped; ranks 0..3 made 40 calls each with a $TIMEOUT ms timeout in $(($(date +%s%3N) - stopped)) ms"
kill -CONT "${pid[w1]}"

worst=0 late=0 n=0 worst_line=""
for r in 0 1 2 3; do
    while read -r line; do
        ms=$(sed -n 's/.* ms=\([0-9]*\).*/\1/p' <<<"$line")
        [ -n "$ms" ] || continue
        n=$((n + 1))
        ((ms > worst)) && worst=$ms worst_line=$line
        ((ms > TIMEOUT + BOUND)) && late=$((late + 1))
    done < <(grep " ms=" "$dir/r$r.log")
done
((n == 160)) || fail "$n results of 160 calls: $(tail -n 3 "$dir/r0.log")"
grep -h "status=OK" "$dir"/r[0-3].log && fail "a call was OK without w1's ranks"
echo "160 calls failed as they should; the slowest took $worst ms (bound $((TIMEOUT + BOUND)) ms)"
grep -h "socket took" "$dir/w0.log" | head -n 2
((late == 0)) || fail "$late calls returned later than their timeout + $BOUND ms (the slowest after $worst ms): $worst_line"
echo "PASS"
