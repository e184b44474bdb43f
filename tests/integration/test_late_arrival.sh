#!/usr/bin/env bash
# test_late_arrival.sh - a call that arrives after another member's call timed out, while that
# member's ABORT cannot come (its worker is stopped): it must fail, not complete OK with the
# slices the timed-out call sent (integration.late_arrival; RELIABILITY finding 5).
#
# usage: test_late_arrival.sh A2A_COORDINATOR A2A_WORKER SEQCHECK
#
# Group m = world ranks 0 (w0) and 1 (w1). Rank 0 calls with a 1 s timeout; its READY and eager
# slice reach w1. At 0.5 s w0 is stopped (SIGSTOP), so nothing of w0 (its ABORT at 1 s) can
# reach w1. At 1.6 s rank 1 calls:
#   a. rank 1's call fails at once with DEADLINE_EXCEEDED naming world rank 0 (rank 0's READY
#      said its call had 1 s left); before, it completed OK with rank 0's slice;
#   b. after SIGCONT, rank 0's call fails too (DEADLINE_EXCEEDED): the two agree;
#   c. the next calls of both are OK with the right data.
# Then the probe (worker/op.h, "Probes"): rank 0 calls with a 2 s timeout, w0 is stopped at
# 0.2 s, and rank 1 calls at 1.93 s, within the guard of rank 0's expiry (a tenth of its ttl:
# 1.8-2.0 s after its READY came), when rank 0's slice and READY are all it needs:
#   d. rank 1's call does not return while w0 is stopped (before probes it returned OK at
#      once, and rank 0's call then failed: the two disagreed); after SIGCONT at 2.6 s (less
#      than the 3 s after which w1 gives a silent peer up) the two agree: both fail
#      DEADLINE_EXCEEDED (w0 answers the PROBE with the failure of rank 0's call), or both are
#      OK with the right data (w0 completed rank 0's call with rank 1's frames before its
#      thread saw the deadline, and answers ALIVE);
#   e. the next calls of both are OK with the right data.
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-late.XXXXXX")
cfg=$dir/cluster.yaml
declare -A pid=()
rank_pids=()
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=services.sh
. "$here/services.sh"
# shellcheck source=cluster.sh
. "$here/cluster.sh"
serve_pid=
cleanup() {
    local p
    for p in "${pid[@]}"; do kill -CONT "$p" 2>/dev/null; done
    [ -n "$serve_pid" ] && kill -9 "$serve_pid" 2>/dev/null
    services_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export A2A_LOG_LEVEL=${A2A_LOG_LEVEL:-info}

write_config() { two_workers 1 m; }
api() { echo "tcp://127.0.0.1:${ports[1 + 2 * $1]}"; }
rank() { # R LOG ARGS...: a job of world rank R in the background
    local r=$1 log=$2
    shift 2
    A2A_WORKER_URL=$(api "$r") A2A_RANK=$r "$seqcheck" --group m --members 0,1 "$@" >"$log" 2>&1 &
    rank_pids[r]=$!
}

start_cluster 5 w0 w1

# rank 1's job serves calls told over a fifo, so that its late call has its number and asks
# nothing (a new job's first call would ask w0, which is stopped)
serve_start 1 "$dir/r1.log" --group m --members 0,1 --timeout 3000

# warm-up: operation 0 OK on both (the links are up, both ranks heard)
rank 0 "$dir/warm0.log" --timeout 5000 calls 1
serve 1 || fail "warm-up: rank 1's call did not return"
wait_pid "${rank_pids[0]}" 15 || fail "warm-up: rank 0's call did not return"
grep -q "status=OK data=ok" "$dir/warm0.log" && grep -q "^rank 1 call 0 status=OK data=ok" "$dir/r1.log" ||
    fail "warm-up: $(cat "$dir/warm0.log" "$dir/r1.log")"
ok "warm-up: operation 0 OK on both ranks"

# a: rank 0 calls operation 1 (1 s), w0 stopped at 0.5 s, rank 1 calls at 1.6 s
rank 0 "$dir/late0.log" --timeout 1000 --base 1 calls 1
sleep 0.5
kill -STOP "${pid[w0]}"
sleep 1.1
t0=$(date +%s%N)
serve 1 || fail "check a: rank 1's call did not return"
ms=$((($(date +%s%N) - t0) / 1000000))
line=$(grep "^rank 1 call 1 " "$dir/r1.log")
case "$line" in
*"status=OK"*)
    fail "check a: rank 1's call returned OK with the slices of a call that had timed out: $line" ;;
*"status=DEADLINE_EXCEEDED"*"world rank 0"*) ok "check a: rank 1 (${ms} ms): ${line:0:230}" ;;
*) fail "check a: rank 1's call is not DEADLINE_EXCEEDED naming world rank 0: $line" ;;
esac
((ms < 2500)) || fail "check a: rank 1's call took ${ms} ms: not at once"
kill -CONT "${pid[w0]}"
wait_pid "${rank_pids[0]}" 10 || fail "check b: rank 0's call did not return after SIGCONT"
line=$(grep "^rank 0 call 1 " "$dir/late0.log")
case "$line" in
*"status=OK"*) fail "check b: rank 0's call returned OK while rank 1's failed: $line" ;;
*"status=DEADLINE_EXCEEDED"*) ok "check b: rank 0: ${line:0:200}" ;;
*) fail "check b: rank 0's call: $line" ;;
esac

# go_on CHECK BASE: rank 0 (a new job) and rank 1 (its serving one) make two calls from call
# BASE, the next operation for both: OK with the right data on both ranks
go_on() {
    local check=$1 base=$2 log=$dir/next$1.log last=$(($2 + 1))
    rank 0 "$log" --timeout 5000 --base "$base" calls 2
    serve 2 || fail "check $check: rank 1's calls did not return"
    wait_pid "${rank_pids[0]}" 20 || fail "check $check: rank 0's calls did not return"
    grep -q "^rank 0 call $last status=OK data=ok" "$log" || fail "check $check: rank 0: $(cat "$log")"
    grep -q "^rank 1 call $last status=OK data=ok" "$dir/r1.log" || fail "check $check: rank 1: $(cat "$dir/r1.log")"
    ok "check $check: the next calls are OK with the right data on both ranks"
}

# c: both go on (operation 2, the next for both)
go_on c 2

# d: rank 0 calls operation 4 (2 s), w0 stopped at 0.2 s, rank 1 calls at 1.93 s
t0=$(date +%s%N)
rank 0 "$dir/probe0.log" --timeout 2000 --base 4 calls 1
sleep 0.2
kill -STOP "${pid[w0]}"
since() { echo $((($(date +%s%N) - t0) / 1000000)); }
sleep "$(awk -v t="$(since)" 'BEGIN { printf "%.3f", (1930 - t) / 1000 }')"
serve_send 1 # rank 1's call of operation 4, not waited for here
called=$(since)
sleep "$(awk -v t="$(since)" 'BEGIN { printf "%.3f", (2600 - t) / 1000 }')"
line=$(grep "^rank 1 call 4 " "$dir/r1.log")
[ -z "$line" ] || {
    kill -CONT "${pid[w0]}"
    fail "check d: rank 1's call returned while w0 (rank 0's worker) was stopped: $line"
}
kill -CONT "${pid[w0]}"
serve_wait 10 || fail "check d: rank 1's call did not return after SIGCONT"
wait_pid "${rank_pids[0]}" 10 || fail "check d: rank 0's call did not return after SIGCONT"
line=$(grep "^rank 1 call 4 " "$dir/r1.log")
line0=$(grep "^rank 0 call 4 " "$dir/probe0.log")
# w0 wakes with rank 0 past its deadline and rank 1's frames queued: it either fails rank 0's
# call first (both DEADLINE_EXCEEDED) or completes it with them first (both OK, right data:
# its thread had not seen the deadline yet); never one of each
case "$line|$line0" in
*"status=OK data=ok"*"|"*"status=OK data=ok"*)
    ok "check d: both OK, the same outcome (rank 1 called at ${called} ms): ${line:0:120}; ${line0:0:120}" ;;
*"status=DEADLINE_EXCEEDED"*"|"*"status=DEADLINE_EXCEEDED"*)
    ok "check d: both failed (rank 1 called at ${called} ms): rank 1: ${line:0:200}; rank 0: ${line0:0:120}" ;;
*) fail "check d: rank 1 (within the guard of rank 0's expiry) and rank 0 do not agree: rank 1: $line; rank 0: $line0" ;;
esac
grep -q "asking worker w0 whether its call is still in the operation" "$dir/w1.log" ||
    [ "$A2A_LOG_LEVEL" != debug ] || fail "check d: w1 did not probe (its log says nothing of it)"

# e: both go on
go_on e 5
serve_stop
echo "PASS ($passed checks)"
