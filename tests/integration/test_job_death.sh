#!/usr/bin/env bash
# test_job_death.sh - a job killed in the middle of a call (integration.job_death).
#
# usage: test_job_death.sh A2A_COORDINATOR A2A_WORKER SEQCHECK
# (A2A_JOB_MODE=remote: the jobs' slices go over TCP, a remote session; integration.job_death.remote)
#
# Group m = world ranks 0 (w0) and 1 (w1). Rank 0's job serves calls told over a fifo and lives
# through the test; rank 1's job makes one call, which waits for rank 0 (its eager slice has
# left for w0), and is killed with -9 while it waits. Then:
#   a. w1 fails that operation at once, naming the rank whose job ended (log), and rank 0's
#      call of it gets UNAVAILABLE naming world rank 1 (before: rank 0's call completed OK with
#      the dead job's slice, and w1 wrote rank 0's into the dead job's memory, so that the
#      others could go on from a call whose job never saw its end, while its replacement
#      started over: the fault campaign's wrong data);
#   b. it does so long before the dead call's deadline (20 s): no one waits for a dead job;
#   c. rank 1's replacement job and rank 0's job then make 3 calls each, all OK with the right
#      data (the replacement asks where the group is and joins rank 0's next call);
#   d. the same with the replacement started at once, joining the call rank 0 is about to make
#      (as a lockstep job does): whichever of w1's session close and the new job's call comes
#      first fails the orphaned operation (engine_sess_gone, orphans_fail); rank 0's call of it
#      fails, and so does the replacement's (it is that operation's latecomer: the two agree),
#      and the next calls are OK.
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-jobdeath.XXXXXX")
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
    [ -n "$serve_pid" ] && kill -9 "$serve_pid" 2>/dev/null
    services_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export A2A_LOG_LEVEL=${A2A_LOG_LEVEL:-debug} # in_call reads the workers' debug lines

write_config() { two_workers 1 m; }
api() { echo "tcp://127.0.0.1:${ports[1 + 2 * $1]}"; }

start_cluster 5 w0 w1

# rank 0's job: one process through the whole test, told how many calls to make (serve)
serve_start 0 "$dir/r0.log" --group m --members 0,1 --timeout 5000
# r0_call I: rank 0's line of call I
r0_call() { grep "^rank 0 call $1 " "$dir/r0.log"; }
# rank1 LOG ARGS...: a job of world rank 1 in the background
rank1() {
    local log=$1
    shift
    A2A_WORKER_URL=$(api 1) A2A_RANK=1 "$seqcheck" --group m --members 0,1 "$@" >"$log" 2>&1 &
    rank_pids[1]=$!
}
# in_call N: rank 1's call of operation N is in w1 (its debug line, or give it 1 s)
in_call() {
    local end=$((SECONDS + 3))
    while ! grep -q "world rank 1's call is operation $1 " "$dir/w1.log" && ((SECONDS < end)); do
        sleep 0.05
    done
    sleep 0.3
}

# warm-up: both jobs call once, OK (operation 0)
rank1 "$dir/warm.log" --timeout 5000 calls 1
serve 1 || fail "warm-up: rank 0's call did not return"
wait_pid "${rank_pids[1]}" 10 || fail "warm-up: rank 1's call did not return"
r0_call 0 | grep -q "status=OK data=ok" || fail "warm-up: $(r0_call 0)"
grep -q "status=OK data=ok" "$dir/warm.log" || fail "warm-up: $(cat "$dir/warm.log")"
ok "warm-up: operation 0 OK on both ranks"

# a, b: rank 1's job (a replacement: w1 knows the rank) calls operation 1 and dies in it
rank1 "$dir/dead.log" --timeout 20000 --base 1 calls 1
in_call 1
t0=$(date +%s%N)
kill -9 "${rank_pids[1]}"
wait "${rank_pids[1]}" 2>/dev/null
end=$((SECONDS + 5))
while ! grep -q "job of world rank 1 went away during operation 1" "$dir/w1.log"; do
    ((SECONDS < end)) || fail "check a: w1 did not fail operation 1 when its job died: $(tail -n 5 "$dir/w1.log")"
    sleep 0.05
done
ok "check a: w1: $(grep -o -m1 'the job of world rank 1 went away during operation 1.*' "$dir/w1.log")"
if [ "${A2A_JOB_MODE:-}" = remote ]; then # the job's slices went over TCP: a remote session
    grep -q "remote session [0-9]* (world rank 1): its connection closed" "$dir/w1.log" ||
        fail "check a: A2A_JOB_MODE=remote, but w1 had no remote session of rank 1 that closed"
    ok "check a: it was a remote session (A2A_JOB_MODE=remote)"
fi
serve 1 || fail "check a: rank 0's call 1 did not return"
line=$(r0_call 1)
t1=$(date +%s%N)
case "$line" in
*"status=OK"*) fail "check a: rank 0's call of the dead job's operation returned OK: $line" ;;
*"status=UNAVAILABLE"*"world rank 1"*"ended during operation 1"*) ok "check a: rank 0: ${line:0:240}" ;;
*) fail "check a: rank 0's call 1 is not UNAVAILABLE naming world rank 1: $line" ;;
esac
ms=$(((t1 - t0) / 1000000))
((ms < 6000)) || fail "check b: rank 0's call took until ${ms} ms after the kill (the dead call's deadline is 20 s)"
ok "check b: failed ${ms} ms after the kill, not at the dead call's deadline (20 s)"

# c: the replacement and rank 0's job, 3 calls each (indices 2..4 on both)
rank1 "$dir/repl.log" --timeout 5000 --base 2 calls 3
serve 3 || fail "check c: rank 0's calls did not return"
wait_pid "${rank_pids[1]}" 20 || fail "check c: the replacement's calls did not return"
for i in 2 3 4; do
    r0_call "$i" | grep -q "status=OK data=ok" || fail "check c: rank 0 call $i: $(r0_call "$i")"
    grep -q "^rank 1 call $i status=OK data=ok" "$dir/repl.log" ||
        fail "check c: rank 1 call $i: $(cat "$dir/repl.log")"
done
ok "check c: calls 2-4 OK with the right data on both ranks after the replacement"

# d: rank 1's job dies in operation 5, and its replacement starts at once and joins call 5,
# which rank 0 makes 1.5 s later (after the replacement's patience of 500 ms)
rank1 "$dir/dead2.log" --timeout 20000 --base 5 calls 1
in_call 5
kill -9 "${rank_pids[1]}"
wait "${rank_pids[1]}" 2>/dev/null
rank1 "$dir/repl2.log" --timeout 5000 --base 5 calls 3
sleep 1.5
serve 1 || fail "check d: rank 0's call 5 did not return"
line=$(r0_call 5)
case "$line" in
*"status=OK"*) fail "check d: rank 0's call of the dead job's operation returned OK: $line" ;;
*"status=UNAVAILABLE"*"world rank 1"*) ok "check d: rank 0: ${line:0:200}" ;;
*) fail "check d: rank 0's call 5 is not UNAVAILABLE naming world rank 1: $line" ;;
esac
serve 2 || fail "check d: rank 0's calls 6-7 did not return"
wait_pid "${rank_pids[1]}" 20 || fail "check d: the replacement's calls did not return"
grep -q "^rank 1 call 5 status=OK" "$dir/repl2.log" &&
    fail "check d: the replacement's call 5 is OK while rank 0's failed: $(cat "$dir/repl2.log")"
for i in 6 7; do
    r0_call "$i" | grep -q "status=OK data=ok" || fail "check d: rank 0 call $i: $(r0_call "$i")"
    grep -q "^rank 1 call $i status=OK data=ok" "$dir/repl2.log" ||
        fail "check d: rank 1 call $i: $(cat "$dir/repl2.log")"
done
ok "check d: call 5 failed on both ranks, calls 6-7 OK with the right data on both"

serve_stop
echo "PASS ($passed checks)"
