#!/usr/bin/env bash
# test_misplace.sh - a peer worker that streams its slice to a discovering rank at the wrong
# place: the call fails INTERNAL naming the place, nothing of the slice is taken for data, and
# the worker serves on.
#
# usage: test_misplace.sh A2A_COORDINATOR A2A_WORKER SEQCHECK FAKEPEER
# env: KEEP_DIR=1 keeps the logs.
#
# The YAML has a real worker node-a (world rank 0) and node-f (world rank 1), which runs no
# a2a-worker: fakepeer plays it. Group tf = [0, 1]. Rank 0 (seqcheck --discover 1 --count 8:
# it sends itself 8 uint64, rank 1 6, and holds 18) discovers its counts. The fake answers
# rank 0's first READY with its own (its row: 4 elements for rank 0), then SLICE(4) with a
# place and 4 elements of DATA:
#   past  place 15: elements 15..18 of a buffer of 18, past its end
#   over  place 0: where rank 0's own slice goes (rank 0's counts put rank 1's at 8)
# FAIL: the call did not fail INTERNAL with the message that names the place; node-a died; a
# call of node-a's other group (rank 0 alone) failed afterwards.
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3 fakepeer=$4
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-misplace.XXXXXX")
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
    fake_peer_config '  - name: solo' '    ranks: [0]'
}

start_cluster 5 node-a
echo "cluster: coordinator ${ports[0]}, node-a ${ports[1]}/${ports[2]}, node-f (fakepeer) data ${ports[4]}"

bad=0
# one_run KIND WANT: the fake misplaces its slice as KIND; rank 0's call must fail with WANT
one_run() {
    local kind=$1 want=$2 fp vp
    "$fakepeer" misplace node-f "tcp://127.0.0.1:${ports[4]}" "tcp://127.0.0.1:${ports[2]}" \
        "$kind" 4 >"$dir/fake.$kind.log" 2>&1 &
    fp=$!
    rank_pids=("$fp")
    fake_connected "$fp" "$dir/fake.$kind.log" "$kind"
    A2A_WORKER_URL="tcp://127.0.0.1:${ports[1]}" A2A_RANK=0 \
        "$seqcheck" --group tf --members 0,1 --timeout 3000 --count 8 --discover 1 calls 1 \
        >"$dir/victim.$kind.log" 2>&1 &
    vp=$!
    rank_pids+=("$vp")
    wait_pid "$vp" 30 || echo "$kind: FAIL: the job still ran after 30 s: killed"
    wait_pid "$fp" 20 || echo "$kind: fakepeer still ran 20 s after the job ended: killed"
    rank_pids=()
    echo "---- $kind: fakepeer"
    sed 's/^/    /' "$dir/fake.$kind.log"
    echo "---- $kind: the job"
    sed 's/^/    /' "$dir/victim.$kind.log"
    if ! grep -q "SLICE with place" "$dir/fake.$kind.log"; then
        echo "$kind: FAIL: the fake peer never sent its misplaced slice (no discovering READY came)"
        bad=1
    elif ! grep -q "status=INTERNAL data=none.*$want" "$dir/victim.$kind.log"; then
        echo "$kind: FAIL: the call did not fail INTERNAL with \"$want\""
        bad=1
    else
        echo "$kind: ok: INTERNAL, \"$want\""
    fi
    kill -0 "${pid[node-a]}" 2>/dev/null || fail "$kind: node-a died"
    # node-a serves on: a call of a group of rank 0 alone, discovering, right data
    if A2A_WORKER_URL="tcp://127.0.0.1:${ports[1]}" A2A_RANK=0 \
        timeout 30 "$seqcheck" --group solo --members 0 --timeout 3000 --count 8 --discover 1 \
        calls 2 >"$dir/solo.$kind.log" 2>&1; then
        echo "$kind: ok: node-a serves on ($(tail -n 1 "$dir/solo.$kind.log"))"
    else
        echo "$kind: FAIL: a call of group solo failed after it: $(cat "$dir/solo.$kind.log")"
        bad=1
    fi
}

one_run past "placed its slice for rank 0 at element 15, past its receive buffer of 18 elements"
one_run over "placed its slice for rank 0 at element 0, which rank 0's counts place at 8"
echo "node-a's log, the lines about the misplacing peer:"
grep -h "node-f\|group \"tf\"" "$dir/node-a.log" | grep -v "debug: link" | head -20 | sed 's/^/    /'
if ((bad)); then
    exit 1
fi
echo "PASS"
