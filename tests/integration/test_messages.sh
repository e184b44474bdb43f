#!/usr/bin/env bash
# test_messages.sh - failures say what happened, naming the peer, instead of
# NNG's and the OS's short strings ("Object closed", "Connection refused"),
# with the real binaries (issue 11, item 2).
#
# usage: test_messages.sh A2A_COORDINATOR A2A_WORKER SEQCHECK
#
# A coordinator and workers w0 (world rank 0) and w1 (world rank 1); group
# m = [0 1]. Each check looks for the message a rank's call returns, in this
# order (no line may say "Object closed", or end in a bare "Connection
# refused" or "Connection reset"):
#   d. w1 stopped (SIGSTOP) for 6 s while both ranks loop with a 10 s timeout:
#      rank 0 gets "worker w1 (URL) is unavailable: w1 sent nothing for 3 s,
#      not even a heartbeat (...)"
#   c. w1 killed (-9) while both ranks loop: "... the link to w1 was closed by
#      w1" or "... was reset by w1's end"
#   a. w1 still dead: rank 0's call is UNAVAILABLE "worker w1 (URL) is
#      unavailable: cannot connect: nothing listens at URL (connection refused:
#      is w1 running?)"
#   b. a job of w1's rank: "cannot reach API_URL: nothing listens there
#      (connection refused: is it running?)" (or, when the API answered, the
#      local socket's "nothing listens at its local socket PATH")
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-messages.XXXXXX")
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

write_config() {
    cat >"$cfg" <<EOF
coordinator:
  url: tcp://127.0.0.1:${ports[0]}
workers:
  - name: w0
    url: tcp://127.0.0.1:${ports[1]}
    data_url: tcp://127.0.0.1:${ports[2]}
    socket: $dir/w0.sock
    ranks: 1
  - name: w1
    url: tcp://127.0.0.1:${ports[3]}
    data_url: tcp://127.0.0.1:${ports[4]}
    socket: $dir/w1.sock
    ranks: 1
groups:
  - name: m
    ranks: [0, 1]
EOF
}
api() { echo "tcp://127.0.0.1:${ports[1 + 2 * $1]}"; }
data() { echo "tcp://127.0.0.1:${ports[2 + 2 * $1]}"; }
passed=0
ok() {
    echo "ok: $*"
    passed=$((passed + 1))
}
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

start_cluster 5 w0 w1
echo "cluster: coordinator ${ports[0]}, w0 ${ports[1]}/${ports[2]}, w1 ${ports[3]}/${ports[4]}"

# loop PREFIX TIMEOUT_MS SECONDS: both ranks loop in lockstep; returns once rank 0 had an OK round
loop() {
    mkdir -p "$dir/bar.$1"
    rank 0 "$dir/$1.0.log" --timeout "$2" --pause 20 lockstep "$dir/bar.$1" "$3"
    rank 1 "$dir/$1.1.log" --timeout "$2" --pause 20 lockstep "$dir/bar.$1" "$3"
    for ((i = 0; i < 150; i++)); do
        grep -q "status=OK data=ok" "$dir/$1.0.log" 2>/dev/null && return 0
        sleep 0.1
    done
    fail "check $1: no OK round before the fault"
}
end_loop() { # PREFIX
    wait_pid "${rank_pids[0]}" 40 || fail "check $1: rank 0 did not end"
    wait_pid "${rank_pids[1]}" 40 || fail "check $1: rank 1 did not end"
}

# d. w1 stopped for 6 s while rank 0 calls with a 10 s timeout: its link falls silent
loop d 10000 14
kill -STOP "${pid[w1]}"
sleep 6
kill -CONT "${pid[w1]}"
end_loop d
expect d "$dir/d.0.log" "status=UNAVAILABLE .*worker w1 \\($(re "$(data 1)")\\) is unavailable: w1 sent nothing for 3 s, not even a heartbeat"

# c. w1 killed while both ranks loop
loop c 3000 6
kill -9 "${pid[w1]}"
wait "${pid[w1]}" 2>/dev/null
end_loop c
expect c "$dir/c.0.log" "status=UNAVAILABLE .*worker w1 \\($(re "$(data 1)")\\) is unavailable: (the link to w1 was closed by w1|the link to w1 was reset by w1's end)"

# a. a peer worker that is not running (w1, still dead)
rank 0 "$dir/a.log" --timeout 3000 calls 1
wait_pid "${rank_pids[0]}" 20 || fail "check a: rank 0's call did not return"
expect a "$dir/a.log" "status=UNAVAILABLE .*worker w1 \\($(re "$(data 1)")\\) is unavailable: cannot connect: nothing listens at $(re "$(data 1)") \\(connection refused: is w1 running\\?\\)"

# b. a job whose own worker is not running
rank 1 "$dir/b.log" --timeout 3000 calls 1
wait_pid "${rank_pids[1]}" 20 || fail "check b: rank 1's job did not end"
expect b "$dir/b.log" "UNAVAILABLE: .*(cannot reach $(re "$(api 1)"): nothing listens there \\(connection refused: is it running\\?\\)|nothing listens at its local socket)"

echo "$passed checks passed"
echo "PASS"
