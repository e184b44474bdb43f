#!/usr/bin/env bash
# test_opnum.sh - every path a call takes from a job to its worker carries the
# job's operation number back and forth: the shared-memory channel, the
# worker's Unix socket (A2A_CHANNEL=0) and the TCP API (A2A_JOB_MODE=remote).
# The worker logs (at debug) the number each job sends; after six calls the
# sixth must have been sent as operation 5. Before the fix, a reply on the
# socket or over TCP was decoded after its next number had been passed on (C
# leaves the order of arguments' evaluation open), so such a job kept sending
# its old number (or none): ranks that retried in lockstep then drifted apart.
#
# usage: test_opnum.sh A2A_COORDINATOR A2A_WORKER SEQCHECK
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-opnum.XXXXXX")
cfg=$dir/cluster.yaml
declare -A pid=()
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=services.sh
. "$here/services.sh"
# shellcheck source=cluster.sh
. "$here/cluster.sh"
trap services_cleanup EXIT
trap 'exit 130' INT TERM
export A2A_LOG_LEVEL=debug

write_config() { two_workers 1 m; }
api() { echo "tcp://127.0.0.1:${ports[1 + 2 * $1]}"; }
passed=0
done=()
rp=()

start_cluster 5 w0 w1
for mode in channel socket remote; do
    for r in 0 1; do
        case $mode in
        channel) env=() ;;
        socket) env=(A2A_CHANNEL=0) ;;
        remote) env=(A2A_JOB_MODE=remote) ;;
        esac
        env "${env[@]}" A2A_LOG_LEVEL=warn A2A_WORKER_URL="$(api $r)" A2A_RANK=$r \
            timeout 60 "$seqcheck" --group m --members 0,1 --timeout 5000 --base 0 calls 6 \
            >"$dir/$mode.$r.log" 2>&1 &
        rp[r]=$!
    done
    for r in 0 1; do
        wait "${rp[r]}" || {
            cat "$dir/$mode.$r.log"
            fail "$mode: rank $r's calls failed"
        }
    done
    # new jobs each time: the first call of each sends -1 (the worker numbers it), the five
    # others their own numbers
    for w in w0 w1; do
        n=$(grep -c "call is operation .* (its job said [0-9]" "$dir/$w.log")
        if ((n < 5 * (${#done[@]} + 1))); then
            grep "its job said" "$dir/$w.log" | tail -n 8
            fail "$mode: worker $w was told the job's own number on $n calls, not 5 of 6"
        fi
    done
    done+=("$mode")
    echo "ok: $mode: the jobs told their workers their numbers"
    passed=$((passed + 1))
done
echo "PASS ($passed modes)"
