#!/usr/bin/env bash
# test_keep_awake.sh - a worker's keep_awake_us (README "Configuration", worker/awake.h), with
# the real binaries: worker w0 has keep_awake_us: 2000, w1 none. Checks that
#   - w0 runs one thread "a2a-awake" under SCHED_IDLE (so it takes no CPU another thread
#     wants), w1 none (off by default);
#   - calls across both workers return every byte right (seqcheck: each element names its
#     operation, sender and receiver), and the thread spun while they ran;
#   - once the calls are over the thread sleeps: over 2 s of an idle cluster it is on a CPU
#     for under 20 ms (a spinning thread would be for most of the 2 s);
#   - a bad A2A_KEEP_AWAKE_US stops the worker's start with a message naming it.
#
# usage: test_keep_awake.sh A2A_COORDINATOR A2A_WORKER SEQCHECK
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-keepawake.XXXXXX")
cfg=$dir/cluster.yaml
declare -A pid=()
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=services.sh
. "$here/services.sh"
# shellcheck source=cluster.sh
. "$here/cluster.sh"
trap services_cleanup EXIT
trap 'exit 130' INT TERM
unset A2A_KEEP_AWAKE_US

write_config() {
    two_workers 2 g
    sed -i "/^  - name: w0\$/a\\    keep_awake_us: 2000" "$cfg"
}
api() { echo "tcp://127.0.0.1:${ports[1 + 2 * ($1 / 2)]}"; }

# awake_tid PID: the thread of PID named a2a-awake, or nothing
awake_tid() {
    local t
    for t in /proc/"$1"/task/*; do
        [ "$(cat "$t/comm" 2>/dev/null)" = a2a-awake ] && basename "$t"
    done
}
# policy PID TID: the thread's scheduling policy (/proc stat field 41; 5 is SCHED_IDLE)
policy() { sed 's/^.*) //' "/proc/$1/task/$2/stat" | awk '{print $39}'; }
# oncpu_ns PID TID: the thread's time on a CPU so far (schedstat), in ns
oncpu_ns() { awk '{print $1}' "/proc/$1/task/$2/schedstat"; }

start_cluster 5 w0 w1
grep -q "keep-awake: a SCHED_IDLE thread spins" "$dir/w0.log" ||
    fail "worker w0 (keep_awake_us: 2000) did not say it keeps awake"
grep -q "keep-awake" "$dir/w1.log" && fail "worker w1 (no keep_awake_us) keeps awake"
tid=$(awake_tid "${pid[w0]}")
[ -n "$tid" ] || fail "worker w0 has no thread a2a-awake"
[ -z "$(awake_tid "${pid[w1]}")" ] || fail "worker w1 (no keep_awake_us) has a thread a2a-awake"
p=$(policy "${pid[w0]}" "$tid")
[ "$p" = 5 ] || fail "w0's a2a-awake runs under policy $p, not SCHED_IDLE (5)"
ok "w0 has one a2a-awake thread, under SCHED_IDLE; w1 none"

before=$(oncpu_ns "${pid[w0]}" "$tid")
rp=()
for r in 0 1 2 3; do
    A2A_WORKER_URL=$(api $r) A2A_RANK=$r timeout 60 "$seqcheck" --group g --members 0,1,2,3 \
        --timeout 5000 calls 400 >"$dir/rank.$r.log" 2>&1 &
    rp[r]=$!
done
for r in 0 1 2 3; do
    wait "${rp[r]}" || {
        tail -n 5 "$dir/rank.$r.log"
        fail "rank $r: its calls failed or returned wrong data"
    }
done
n=$(cat "$dir"/rank.*.log | grep -c "status=OK data=ok")
((n == 1600)) || fail "$n of 1600 calls returned OK with the right data"
spun=$(($(oncpu_ns "${pid[w0]}" "$tid") - before))
((spun > 0)) || fail "w0's a2a-awake was on no CPU while 400 calls ran"
ok "1600 calls OK with the right data; a2a-awake spun $((spun / 1000)) us meanwhile"

sleep 0.5
a=$(oncpu_ns "${pid[w0]}" "$tid")
sleep 2
b=$(oncpu_ns "${pid[w0]}" "$tid")
(((b - a) < 20000000)) || fail "idle for 2 s, w0's a2a-awake was on a CPU for $(((b - a) / 1000)) us"
ok "idle, a2a-awake was on a CPU for $(((b - a) / 1000)) us in 2 s"

# a worker started with a bad A2A_KEEP_AWAKE_US says so and stops (before it binds anything)
for bad in abc -5 1000001; do
    out=$(A2A_KEEP_AWAKE_US=$bad timeout 20 "$worker_bin" --config "$cfg" --name w1 2>&1)
    rc=$?
    ((rc == 1)) || fail "A2A_KEEP_AWAKE_US=$bad: the worker exited $rc, not 1: $out"
    grep -q "A2A_KEEP_AWAKE_US=\"$bad\" is not a number of microseconds from 0 to 1000000" <<<"$out" ||
        fail "A2A_KEEP_AWAKE_US=$bad: no message naming it: $out"
done
ok "a bad A2A_KEEP_AWAKE_US stops the worker's start with a message naming it"
echo "PASS ($passed checks)"
