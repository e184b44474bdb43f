#!/usr/bin/env bash
# test_link_loop.sh - one peer's link stops in the middle of a frame: the worker's other links
# go on. A worker reads all its incoming links in one thread (the link loop, worker/link.c); a
# read that waited for the bytes of one link would hold every other link, and every call, with it.
#
# usage: test_link_loop.sh A2A_COORDINATOR A2A_WORKER SEQCHECK FAKEPEER
# env: STALL_SECONDS (how long the fake trickles its frame, default 12), KEEP_DIR=1 keeps the logs.
#
# The YAML has real workers node-a (world rank 0) and node-b (rank 1), and node-f (rank 2), which
# runs no a2a-worker: fakepeer plays it. Group ab = [0, 1].
#  1. fakepeer stall: HELLO to node-a, then a READY frame: its prefix and the start of its
#     header at once, the rest one byte every 300 ms, never finished.
#  2. Meanwhile ranks 0 and 1 make 40 calls of group ab with eager slices (8 elements), then 10
#     with rendezvous slices (8192 elements: READY, SLICE and DATA frames through node-a's loop):
#     every call OK with the right data (seqcheck), all done while the fake still trickles.
#  3. The fake stops one byte short of the frame's end: node-a closes the link after its
#     dead-link time (3 s) of silence, says why in its log, and stays up; then 10 more calls.
# FAIL otherwise.
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3 fakepeer=$4
SECS=${STALL_SECONDS:-12}
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-loop.XXXXXX")
cfg=$dir/cluster.yaml
declare -A pid=()
rank_pids=()
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=services.sh
. "$here/services.sh"
# shellcheck source=cluster.sh
. "$here/cluster.sh"
trap services_cleanup EXIT
trap 'exit 130' INT TERM
export A2A_LOG_LEVEL=${A2A_LOG_LEVEL:-info}

write_config() {
    fake_trio_config 1 "0, 1"
}

start_cluster 7 node-a node-b
echo "cluster: coordinator ${ports[0]}, node-a ${ports[2]}, node-b ${ports[4]}, node-f (fakepeer) ${ports[6]}"

# calls LABEL BASE N [--count C]: ranks 0 and 1 make N calls of group ab from index BASE
calls() {
    local label=$1 base=$2 n=$3 r
    shift 3
    for r in 0 1; do
        A2A_WORKER_URL="tcp://127.0.0.1:${ports[1 + 2 * r]}" A2A_RANK=$r \
            "$seqcheck" --group ab --members 0,1 --timeout 5000 --base "$base" "$@" calls "$n" \
            >"$dir/$label$r.log" 2>&1 &
        rank_pids+=($!)
    done
    wait_ranks 60 "$label" || fail "$label: the calls did not all succeed"
    ok "$label: $n calls of each rank OK with the right data"
}

"$fakepeer" stall node-f "tcp://127.0.0.1:${ports[2]}" "$SECS" >"$dir/fake.log" 2>&1 &
fp=$!
fake_connected "$fp" "$dir/fake.log" stall
sleep 1 # node-a's loop has begun reading the frame's header
calls eager 0 40
calls rendezvous 40 10 --count 8192
grep -q "stopped mid-frame" "$dir/fake.log" &&
    fail "the calls took longer than the fake's trickle ($SECS s): they proved nothing"
kill -0 "$fp" 2>/dev/null || fail "the fake peer ended early: $(cat "$dir/fake.log")"
ok "the calls were done while node-a read a frame begun on node-f's link"

wait_pid "$fp" $((SECS + 25)) || fail "the fake peer still ran $((SECS + 25)) s after it started"
sed 's/^/    /' "$dir/fake.log"
((wait_status == 0)) || fail "node-a did not close the silent link"
ms=$(sed -n 's/.*closed the link \([0-9]*\) ms after our last byte.*/\1/p' "$dir/fake.log")
{ [ -n "$ms" ] && ((ms >= 2500 && ms <= 9000)); } ||
    fail "node-a closed the link ${ms:-?} ms after its last byte, not after its 3 s of silence"
grep -q "node-f sent nothing for 3 s" "$dir/node-a.log" ||
    fail "node-a's log does not say why it closed the link: $(grep -h node-f "$dir/node-a.log" | tail -3)"
ok "node-a closed the link $ms ms after its last byte: $(grep -h "node-f sent nothing" "$dir/node-a.log" | head -1)"
kill -0 "${pid[node-a]}" 2>/dev/null || fail "node-a died"
calls after 50 10
echo "PASS"
