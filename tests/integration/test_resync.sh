#!/usr/bin/env bash
# test_resync.sh - the finding of the fault campaign (docs/RELIABILITY.md):
# lockstep ranks never meet again after one failed operation that only one
# worker counted (integration.resync; it failed before a new job's first call
# asked the member workers where the group is).
#
# usage: test_resync.sh A2A_COORDINATOR A2A_WORKER SEQCHECK
#
# w0 (rank 0) runs, w1 (rank 1) does not: rank 0 makes one call, which fails
# (UNAVAILABLE, w1 cannot be reached: w0 numbers it operation 0). Then w1
# starts and both ranks loop in lockstep for 15 s. README: "ranks that retry
# in lockstep meet again within two calls". FAIL when no round is OK on both.
#
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-resync.XXXXXX")
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

write_config() { two_workers 1 m; }
api() { echo "tcp://127.0.0.1:${ports[1 + 2 * $1]}"; }
data() { echo "tcp://127.0.0.1:${ports[2 + 2 * $1]}"; }
# expect CHECK LOG ERE: some line of LOG matches ERE, and no line says "Object closed"
expect() {
    if ! grep -Eq -- "$3" "$2"; then
        echo "---- $2"
        tail -n 20 "$2"
        fail "check $1: no line matches: $3"
    fi
    if grep -q "Object closed\|: Connection refused$\|: Connection reset$" "$2"; then
        grep -m3 "Object closed\|: Connection refused$\|: Connection reset$" "$2"
        fail "check $1: a bare NNG or OS string reached the caller"
    fi
    ok "check $1: $(grep -Eo -m1 -- "$3" "$2" | head -n 1 | cut -c1-220)"
}
rank() { # R LOG ARGS...: a job of world rank R in the background
    local r=$1 log=$2
    shift 2
    A2A_WORKER_URL=$(api "$r") A2A_RANK=$r "$seqcheck" --group m --members 0,1 "$@" >"$log" 2>&1 &
    rank_pids[r]=$!
}
re() { printf '%s' "$1" | sed 's/[.]/[.]/g'; } # a URL as an ERE

start_cluster 5 w0
rank 0 "$dir/first.log" --timeout 3000 calls 1
wait_pid "${rank_pids[0]}" 20 || fail "rank 0's first call did not return"
cat "$dir/first.log"
start_worker w1
wait_listening w1 "$dir/w1.log" || fail "w1 did not start"
mkdir -p "$dir/bar"
rank 0 "$dir/l0.log" --timeout 3000 --pause 20 lockstep "$dir/bar" 15
rank 1 "$dir/l1.log" --timeout 3000 --pause 20 lockstep "$dir/bar" 15
wait_pid "${rank_pids[0]}" 40 || fail "rank 0 did not end"
wait_pid "${rank_pids[1]}" 40 || fail "rank 1 did not end"
head -n 4 "$dir/l0.log" "$dir/l1.log" | cut -c1-260
ok=$(awk '$5 == "status=OK" && $6 == "data=ok" { n[$4]++ } END { for (r in n) if (n[r] == 2) k++; print k + 0 }' "$dir"/l[01].log)
((ok > 0)) || fail "no round OK on both ranks in 15 s after w1 started"
echo "$ok rounds OK on both ranks"
echo "PASS"
