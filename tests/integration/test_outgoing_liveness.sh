#!/usr/bin/env bash
# test_outgoing_liveness.sh - a peer worker that hangs before it ever linked to
# us, or whose data port accepts and never answers, is reported UNAVAILABLE,
# naming it, within seconds (like a peer whose own link to us falls silent: 3 s),
# not DEADLINE_EXCEEDED at the call's deadline. Issue 11, item 2 ("outgoing
# links are checked for liveness too"), with the real binaries.
#
# usage: test_outgoing_liveness.sh A2A_COORDINATOR A2A_WORKER SEQCHECK
# env: LIVENESS_BOUND_MS (how long a call may take to fail, default 4500: the
#      3 s of silence plus slack; before the fix these took 5 s with a token
#      and 10 s, the call's timeout, without), LIVENESS_TOKEN (1: the cluster
#      has a security.token_file, 0: not; default: both, one after the other).
#
# The YAML has w0 (world rank 0), w1 (rank 1) and w2 (rank 2), which runs no
# a2a-worker: its data port is a socket that accepts and never reads or
# writes. Groups m = [0 1], f = [0 2]. Every call is rank 0's, alone, with a
# 10 s timeout; it must fail UNAVAILABLE naming the peer within the bound:
#   silent: rank 0 calls on f (w0 dials w2's silent port);
#   after-accept: w1 freshly started; rank 0 calls on m (w0 dials w1, w1
#      accepts and has nothing of its own to send), then after 1 s w1 is
#      stopped (SIGSTOP): the bound counts from the stop;
#   before-dial: w1 restarted and stopped at once, before it linked to
#      anyone; rank 0 calls on m.
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3
BOUND=${LIVENESS_BOUND_MS:-4500}
here=$(dirname "${BASH_SOURCE[0]}")

if [ -z "${LIVENESS_TOKEN:-}" ]; then
    rc=0
    for t in 1 0; do
        echo "==== with a token: $t"
        LIVENESS_TOKEN=$t bash "${BASH_SOURCE[0]}" "$@" || rc=1
    done
    ((rc == 0)) && echo "PASS (both)"
    exit $rc
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-liveness.XXXXXX")
cfg=$dir/cluster.yaml
declare -A pid=()
rank_pids=()
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
unset A2A_TOKEN_FILE
token=$dir/token
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$token"
chmod 600 "$token"
security=""
if [ "$LIVENESS_TOKEN" = 1 ]; then
    security="security:
  token_file: $token"
    export A2A_TOKEN_FILE=$token
fi

write_config() {
    cat >"$cfg" <<EOF
coordinator:
  url: tcp://127.0.0.1:${ports[0]}
$security
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
  - name: w2
    url: tcp://127.0.0.1:${ports[5]}
    data_url: tcp://127.0.0.1:${ports[6]}
    socket: $dir/w2.sock
    ranks: 1
groups:
  - name: m
    ranks: [0, 1]
  - name: f
    ranks: [0, 2]
EOF
}
data() { echo "tcp://127.0.0.1:${ports[2 + 2 * $1]}"; }
re() { printf '%s' "$1" | sed 's/[.]/[.]/g'; } # a URL as an ERE

start_cluster 7 w0 w1
echo "cluster (token $LIVENESS_TOKEN): w0 ${ports[2]}, w1 ${ports[4]}, w2 (silent) ${ports[6]}"
# w2's data port: accepts every connection and never reads or writes
start silent "$dir/silent.log" python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64)
print("listening on", sys.argv[1], flush=True)
held = []
while True:
    c, _ = s.accept(); held.append(c)
' "${ports[6]}"
wait_listening silent "$dir/silent.log" || fail "the silent port did not start"

# call NAME GROUP MEMBERS: rank 0's one call on GROUP in the background (10 s timeout)
call() {
    A2A_WORKER_URL=tcp://127.0.0.1:${ports[1]} A2A_RANK=0 "$seqcheck" --group "$2" --members "$3" \
        --timeout 10000 calls 1 >"$dir/$1.log" 2>&1 &
    rank_pids[0]=$!
}
# judge NAME WORKER WORKER_INDEX EXTRA_MS: the call failed UNAVAILABLE naming WORKER within
# BOUND + EXTRA_MS
judge() {
    local name=$1 w=$2 i=$3 extra=$4 line ms
    wait_pid "${rank_pids[0]}" 30 || fail "$name: rank 0's call did not return"
    line=$(grep -m1 "call 0 status=" "$dir/$name.log")
    [ -n "$line" ] || fail "$name: no result: $(cat "$dir/$name.log")"
    echo "$name: $line" | cut -c1-300
    ms=$(sed -n 's/.* ms=\([0-9]*\).*/\1/p' <<<"$line")
    grep -Eq "status=UNAVAILABLE .*worker $w \\($(re "$(data "$i")")\\) is unavailable" <<<"$line" ||
        fail "$name: not UNAVAILABLE naming $w: $line"
    ((ms <= BOUND + extra)) || fail "$name: took $ms ms, more than $((BOUND + extra)) ms"
    echo "ok: $name in $ms ms"
}

# silent: w2's port accepts and never answers
call silent f 0,2
judge silent w2 2 0

# after-accept: w1 took w0's link (rank 1 never calls), then stops
restart_worker w1 || fail "w1 did not start again"
call after-accept m 0,1
sleep 1
kill -STOP "${pid[w1]}"
judge after-accept w1 1 1000
kill -CONT "${pid[w1]}"

# before-dial: w1 stopped as soon as it listens, before it linked to anyone
restart_worker w1 || fail "w1 did not start again"
kill -STOP "${pid[w1]}"
call before-dial m 0,1
judge before-dial w1 1 0
kill -CONT "${pid[w1]}"

kill -0 "${pid[w0]}" 2>/dev/null || fail "w0 died"
echo "PASS"
