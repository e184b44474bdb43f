#!/usr/bin/env bash
# test_trickle.sh - a peer that trickles a slice past the deadline: the call
# must return within its deadline plus a small bound, and no byte may land in
# its receive buffer after it returned.
#
# usage: test_trickle.sh A2A_COORDINATOR A2A_WORKER SEQCHECK FAKEPEER
# env: TRICKLE_SECONDS (how long the payload trickles, default 12),
#      TRICKLE_TIMEOUT_MS (the call's timeout, default 2000), TRICKLE_BOUND_MS
#      (how much later than its timeout it may return, default 2000),
#      KEEP_DIR=1 keeps the logs.
#
# The YAML has a real worker node-a (world rank 0) and node-f (world rank 1),
# which runs no a2a-worker: fakepeer plays it (a worker without a token). Group
# tf = [0, 1]. Rank 0 (seqcheck sentinel) receives 2048 uint64 (16 KiB: the
# rendezvous path) from rank 1 and sends nothing. node-a sends its READY to
# the fake, which confirms, announces SLICE and a DATA frame of 16 KiB, and
# writes its payload one small piece a second for TRICKLE_SECONDS. seqcheck
# checks the return time, then fills its buffer with a sentinel and watches
# it for TRICKLE_SECONDS + 3 s. Twice: a private receive buffer (the worker
# writes it with process_vm_writev once the frame is in), and one from
# a2a_buffer_alloc (the worker reads the socket straight into it).
# FAIL: the call returned OK, or late, or the buffer changed after it
# returned; node-a died.
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3 fakepeer=$4
SECS=${TRICKLE_SECONDS:-12}
TMO=${TRICKLE_TIMEOUT_MS:-2000}
BOUND=${TRICKLE_BOUND_MS:-2000}
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-trickle.XXXXXX")
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
    fake_peer_config
}

start_cluster 5 node-a
echo "cluster: coordinator ${ports[0]}, node-a ${ports[1]}/${ports[2]}, node-f (fakepeer) data ${ports[4]}"

bad=0
# one_run LABEL [shared]
one_run() {
    local label=$1 kind=${2:-} fp vp
    "$fakepeer" trickle node-f "tcp://127.0.0.1:${ports[4]}" "tcp://127.0.0.1:${ports[2]}" "$SECS" \
        >"$dir/fake.$label.log" 2>&1 &
    fp=$!
    rank_pids=("$fp")
    fake_connected "$fp" "$dir/fake.$label.log" "$label"
    A2A_WORKER_URL="tcp://127.0.0.1:${ports[1]}" A2A_RANK=0 \
        "$seqcheck" --group tf --members 0,1 --timeout "$TMO" --bound "$BOUND" \
        sentinel 1 2048 $(((SECS + 3) * 1000)) $kind >"$dir/victim.$label.log" 2>&1 &
    vp=$!
    rank_pids+=("$vp")
    wait_pid "$vp" $((SECS + TMO / 1000 + 30)) || echo "$label: FAIL: the job still ran after $((SECS + TMO / 1000 + 30)) s: killed"
    local vst=$wait_status
    wait_pid "$fp" 20 || echo "$label: fakepeer still ran 20 s after the job ended: killed"
    rank_pids=()
    echo "---- $label: fakepeer"
    sed 's/^/    /' "$dir/fake.$label.log"
    echo "---- $label: the job"
    sed 's/^/    /' "$dir/victim.$label.log"
    # the point of the test: the fake got to trickling (before, a first call's WHERE went
    # unanswered, the call failed asking, and nothing trickled: a test that could not fail)
    if ! grep -q "now its payload over" "$dir/fake.$label.log"; then
        echo "$label: FAIL: the fake peer never trickled a slice (no READY came to it)"
        bad=1
    elif ! grep -q "waiting for group rank(s) none (all arrived; data still in flight)" \
        "$dir/victim.$label.log"; then
        echo "$label: FAIL: the call did not fail waiting for the trickling data"
        bad=1
    fi
    if ((vst != 0)); then
        echo "$label: FAIL: the job exited with $vst: $(grep -h "FAIL" "$dir/victim.$label.log" | tr '\n' ' ')"
        bad=1
    else
        echo "$label: ok: $(grep -h "returned" "$dir/victim.$label.log" | head -1)"
    fi
    kill -0 "${pid[node-a]}" 2>/dev/null || fail "$label: node-a died"
}

one_run private
one_run shared shared
echo "node-a's log, the lines about the trickling peer:"
grep -h "node-f\|group \"tf\"" "$dir/node-a.log" | grep -v "debug: link" | head -20 | sed 's/^/    /'
if ((bad)); then
    exit 1
fi
echo "PASS"
