#!/usr/bin/env bash
# test_state_file.sh - the worker's state file (SOCKET.ranks, docs/ARCHITECTURE.md "Operation
# identity"): which of its ranks had a job on which group survives a restart of the worker.
#
# usage: test_state_file.sh A2A_COORDINATOR A2A_WORKER SEQCHECK
#
# Group m = world ranks 0 (w0) and 1 (w1).
#   a. no file before any call; after verified calls of both ranks, w0's says "0 m" and w1's
#      "1 m", once each, mode 0600;
#   b. the replacement case it is for: w0 down, a job of rank 1 calls (it fails, w1 cannot
#      reach w0: no frame of rank 1 ever reaches w0), w1 is killed and restarted (it forgets
#      all but its file); w0 comes back and rank 0's job (alive throughout) makes two calls
#      alone, which fail (operations 0 and 1); then rank 0 calls its index 2 and a new job of
#      rank 1 calls its index 2 (--base 2): both OK with the right data. Nobody heard of rank
#      1, so without the file that job would be the rank's first, operation 0 (failed long
#      ago) instead of 2, and every round after would miss the other's by one;
#   c. a file with garbage (not "RANK GROUP", a rank of another worker, an overlong line, a
#      last line without its newline): the worker starts, says how many lines it skipped,
#      serves, and appends nothing it had read already; a record it appends after that last
#      line starts a line of its own.
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-state.XXXXXX")
cfg=$dir/cluster.yaml
declare -A pid=()
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
export A2A_LOG_LEVEL=debug

write_config() { two_workers 1 m; }
api() { echo "tcp://127.0.0.1:${ports[1 + 2 * $1]}"; }
job() { # R LOG ARGS...: a job of world rank R, in the foreground
    local r=$1 log=$2
    shift 2
    A2A_WORKER_URL=$(api "$r") A2A_RANK=$r timeout 30 "$seqcheck" --group m --members 0,1 "$@" \
        >"$log" 2>&1
}
all_ok() { # LOG N: N calls, each status=OK data=ok
    [ "$(grep -c 'status=OK data=ok' "$1")" = "$2" ]
}

start_cluster 5 w0 w1
f0=$dir/w0.sock.ranks f1=$dir/w1.sock.ranks

# ---- a ----
[ ! -e "$f0" ] && [ ! -e "$f1" ] || fail "check a: a state file before any call"
job 0 "$dir/a0.log" calls 2 &
a0=$!
job 1 "$dir/a1.log" calls 2
wait "$a0"
all_ok "$dir/a0.log" 2 && all_ok "$dir/a1.log" 2 ||
    fail "check a: the calls failed: $(cat "$dir/a0.log" "$dir/a1.log")"
[ "$(cat "$f0")" = "0 m" ] && [ "$(cat "$f1")" = "1 m" ] ||
    fail "check a: the files say \"$(cat "$f0" 2>&1)\" and \"$(cat "$f1" 2>&1)\", not \"0 m\" and \"1 m\""
[ "$(stat -c %a "$f0")" = 600 ] || fail "check a: $f0 has mode $(stat -c %a "$f0"), not 600"
ok "check a: w0's file says \"0 m\", w1's \"1 m\", mode 600"

# ---- b ----
# a fresh start: the cluster of check a heard rank 1 (w0 would say so in HERE)
for w in w0 w1; do kill -9 "${pid[$w]}" 2>/dev/null; done
kill -9 "${pid[coordinator]}" 2>/dev/null
wait 2>/dev/null
rm -f "$f0" "$f1"
start_cluster 5 w1
job 1 "$dir/b1.log" --timeout 1500 calls 1
grep -q "status=OK" "$dir/b1.log" && fail "check b: rank 1's call succeeded without w0"
[ "$(cat "$f1" 2>/dev/null)" = "1 m" ] || fail "check b: w1's file says \"$(cat "$f1" 2>&1)\""
restart_worker w1 || fail "check b: w1 did not come back"
grep -q "state file $f1: 1 ranks' jobs on groups before this start" "$dir/w1.log" ||
    fail "check b: w1 did not read its file back: $(grep 'state file' "$dir/w1.log")"
start_worker w0
wait_listening w0 "$dir/w0.log" || fail "check b: w0 did not start"
serve_start 0 "$dir/b0.log" --group m --members 0,1 --timeout 1500
serve 2 || fail "check b: rank 0's two calls alone did not return"
[ "$(grep -c 'status=DEADLINE_EXCEEDED' "$dir/b0.log")" = 2 ] ||
    fail "check b: rank 0's calls alone: $(cat "$dir/b0.log")"
serve_send 1 # index 2: operation 2
job 1 "$dir/b1new.log" --timeout 3000 --base 2 calls 1
serve_wait 10 || fail "check b: rank 0's third call did not return"
grep -q "^rank 0 call 2 status=OK data=ok" "$dir/b0.log" && all_ok "$dir/b1new.log" 1 ||
    fail "check b: rank 0 and the new job of rank 1 did not meet: $(tail -n 1 "$dir/b0.log") / $(cat "$dir/b1new.log")"
grep -E "world rank 1's call is operation" "$dir/w1.log" | tail -n 1 | grep -q "operation 2 " ||
    fail "check b: w1 numbered the new job's call: $(grep -E "world rank 1's call is operation" "$dir/w1.log" | tail -n 1)"
ok "check b: after w1's restart, the new job of rank 1 (heard of by nobody) took operation 2 with rank 0, OK and verified"
serve_stop

# ---- c ----
kill -9 "${pid[w1]}" 2>/dev/null
wait "${pid[w1]}" 2>/dev/null
{
    echo "x m"
    echo "0 m"
    printf '1 %0300d\n' 0
    echo "1"
    printf '1 m-last-without-newline'
} >>"$f1"
before=$(wc -l <"$f1")
start_worker w1
wait_listening w1 "$dir/w1.log" || fail "check c: w1 did not start with garbage in its file"
grep -q "state file $f1: 5 of 6 lines skipped" "$dir/w1.log" ||
    fail "check c: w1 said: $(grep 'state file' "$dir/w1.log")"
job 0 "$dir/c0.log" --base 3 calls 2 &
c0=$!
job 1 "$dir/c1.log" --base 3 calls 2
wait "$c0"
all_ok "$dir/c0.log" 2 && all_ok "$dir/c1.log" 2 ||
    fail "check c: the calls failed: $(cat "$dir/c0.log" "$dir/c1.log")"
[ "$(wc -l <"$f1")" = "$before" ] || fail "check c: w1 appended to its file: $(tail -n 2 "$f1")"
# a group rank 1's jobs never called on before: hccl_world_group (both ranks)
A2A_WORKER_URL=$(api 1) A2A_RANK=1 timeout 30 "$seqcheck" --count 1 calls 1 >"$dir/c1w.log" 2>&1 &
c1w=$!
A2A_WORKER_URL=$(api 0) A2A_RANK=0 timeout 30 "$seqcheck" --count 1 calls 1 >"$dir/c0w.log" 2>&1
wait "$c1w"
all_ok "$dir/c0w.log" 1 && all_ok "$dir/c1w.log" 1 ||
    fail "check c: the calls on hccl_world_group failed: $(cat "$dir/c0w.log" "$dir/c1w.log")"
[ "$(tail -n 1 "$f1")" = "1 hccl_world_group" ] ||
    fail "check c: the record after the partial line: $(tail -n 2 "$f1" | od -c | head -n 5)"
ok "check c: 5 of 6 lines skipped with a warning, the worker serves, nothing appended twice, a new record on a line of its own"
echo "PASS ($passed checks)"
