#!/usr/bin/env bash
# test_flood.sh - a peer floods a worker with READY frames for groups that do
# not exist and for future epochs of a real group: the worker's memory must
# stay bounded and healthy operations must go on working, during and after.
#
# usage: test_flood.sh A2A_COORDINATOR A2A_WORKER SEQCHECK FAKEPEER
# env: FLOOD_FRAMES (big READY frames, default 3000), FLOOD_PAIRS (pairs in
#      each, default 8192: 16 bytes each in memory, 32 KiB on the wire),
#      FLOOD_SMALL (small frames after them, default 2000), FLOOD_RSS_MIB
#      (the bound on node-a's growth, default 64), KEEP_DIR=1 keeps the logs.
#
# Real workers node-a (world ranks 0 1) and node-b (2 3); node-f (world rank
# 4) is fakepeer, a worker of the YAML without a token. Groups: ab = [0, 2]
# and g0..g7 = [1, 3], the g* not used before the flood.
#   1. ranks 0 and 2 run seqcheck lockstep on ab through the whole test;
#   2. fakepeer sends node-a FLOOD_FRAMES READY frames of FLOOD_PAIRS pairs,
#      half for groups "flood-I" that do not exist, half for ab at epochs
#      above 2^62; then FLOOD_SMALL one-pair frames of unknown groups (past
#      the 4096 frames a worker keeps for replay), and holds the link;
#   3. while the link is held: ranks 1 and 3 make 3 calls on each g* (their
#      first use: a worker may get the other's READY before it resolved the
#      group, and must keep it).
# node-a's VmRSS is sampled every 0.2 s. FAIL: growth over FLOOD_RSS_MIB; any
# call of ab or g* not OK (the faults here are only the fake peer's frames),
# or OK with wrong data; a worker died.
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3 fakepeer=$4
FRAMES=${FLOOD_FRAMES:-3000}
PAIRS=${FLOOD_PAIRS:-8192}
SMALL=${FLOOD_SMALL:-2000}
RSS_MIB=${FLOOD_RSS_MIB:-64}
# under AddressSanitizer freed memory waits in its quarantine (256 MiB by default): the
# resident size then says nothing of what the worker keeps; the plain build checks it
if grep -q __asan_init "$2" 2>/dev/null; then
    RSS_MIB=$((RSS_MIB + 320))
    echo "node-a is built with ASan: its RSS bound is raised by ASan's quarantine to +$RSS_MIB MiB"
fi
TMO=3000
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-flood.XXXXXX")
cfg=$dir/cluster.yaml
declare -A pid=()
rank_pids=()
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=services.sh
. "$here/services.sh"
# shellcheck source=cluster.sh
. "$here/cluster.sh"
cleanup() {
    touch "$dir/barrier/stop" 2>/dev/null
    [ -n "${sampler:-}" ] && kill "$sampler" 2>/dev/null
    services_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export A2A_LOG_LEVEL=${A2A_LOG_LEVEL:-info}

write_config() {
    fake_trio_config 2 "0, 2"
    for g in 0 1 2 3 4 5 6 7; do
        printf '  - name: g%d\n    ranks: [1, 3]\n' "$g" >>"$cfg"
    done
}

url_of() { # WORLD_RANK
    if (($1 < 2)); then echo "tcp://127.0.0.1:${ports[1]}"; else echo "tcp://127.0.0.1:${ports[3]}"; fi
}

start_cluster 7 node-a node-b
echo "cluster: coordinator ${ports[0]}, node-a ${ports[1]}/${ports[2]}, node-b ${ports[3]}/${ports[4]}, node-f (fakepeer) data ${ports[6]}"

# 1. the healthy load on ab, and node-a's memory before the flood
mkdir -p "$dir/barrier"
touch "$dir/barrier/start"
lock_pids=()
for r in 0 2; do
    A2A_WORKER_URL=$(url_of $r) A2A_RANK=$r \
        "$seqcheck" --group ab --members 0,2 --timeout "$TMO" --pause 50 \
        lockstep "$dir/barrier" 300 >"$dir/ab.$r.log" 2>&1 &
    lock_pids+=($!)
done
rank_pids=("${lock_pids[@]}")
for ((i = 0; i < 100; i++)); do
    (($(grep -c "status=OK data=ok" "$dir/ab.0.log") >= 10)) && break
    sleep 0.1
done
((i < 100)) || fail "ab did not make 10 OK calls in 10 s before the flood: $(tail -3 "$dir/ab.0.log")"
base_kib=$(rss_kib "${pid[node-a]}")
echo "node-a before the flood: VmRSS $((base_kib / 1024)) MiB ($base_kib KiB); ab runs in lockstep"

# node-a's VmRSS every 0.2 s, into $dir/rss
(
    while kill -0 "${pid[node-a]}" 2>/dev/null; do
        echo "$(date +%s%3N) $(rss_kib "${pid[node-a]}")"
        sleep 0.2
    done
) >"$dir/rss" 2>/dev/null &
sampler=$!

# 2. the flood
t0=$SECONDS
"$fakepeer" flood node-f "tcp://127.0.0.1:${ports[6]}" "tcp://127.0.0.1:${ports[2]}" "$FRAMES" "$PAIRS" 1 \
    ab 4611686018427387904 >"$dir/fake.big.log" 2>&1 &
fp=$!
rank_pids=("${lock_pids[@]}" "$fp")
wait_pid "$fp" 120 || fail "the big flood took over 120 s"
sed 's/^/    /' "$dir/fake.big.log" | grep -v "frames sent"
big_kib=$(rss_kib "${pid[node-a]}")
echo "node-a after $FRAMES frames of $PAIRS pairs: VmRSS $((big_kib / 1024)) MiB ($((SECONDS - t0)) s)"
# the small frames; fakepeer holds its link 30 s while the g* groups are used
"$fakepeer" flood node-f "tcp://127.0.0.1:${ports[6]}" "tcp://127.0.0.1:${ports[2]}" "$SMALL" 1 30 \
    >"$dir/fake.small.log" 2>&1 &
fp=$!
rank_pids=("${lock_pids[@]}" "$fp")
for ((i = 0; i < 600; i++)); do
    grep -q "flood over" "$dir/fake.small.log" && break
    kill -0 "$fp" 2>/dev/null || break
    sleep 0.1
done
sed 's/^/    /' "$dir/fake.small.log" | grep -v "frames sent"
small_kib=$(rss_kib "${pid[node-a]}")
echo "node-a after $SMALL more small frames: VmRSS $((small_kib / 1024)) MiB"

# 3. groups used for the first time, after the flood (one group after the other: a worker
# admits one live job per rank, so the two jobs of each group run at once, the groups in turn)
gbad=0
for g in 0 1 2 3 4 5 6 7; do
    gp=()
    for r in 1 3; do
        A2A_WORKER_URL=$(url_of $r) A2A_RANK=$r \
            "$seqcheck" --group "g$g" --members 1,3 --timeout "$TMO" --base $((10 * g)) calls 3 \
            >"$dir/g$g.$r.log" 2>&1 &
        gp+=($!)
    done
    rank_pids=("${lock_pids[@]}" "$fp" "${gp[@]}")
    for p in "${gp[@]}"; do wait_pid "$p" 40 || echo "FAIL: a job of g$g still ran after 40 s: killed"; done
done
for g in 0 1 2 3 4 5 6 7; do
    n_ok=$(cat "$dir/g$g.1.log" "$dir/g$g.3.log" | grep -c "status=OK data=ok")
    if ((n_ok != 6)); then
        echo "FAIL: g$g (first used after the flood): $n_ok of 6 calls OK:"
        grep -h "status=\|open\|members" "$dir/g$g.1.log" "$dir/g$g.3.log" | sed 's/^/    /' | cut -c1-300
        gbad=1
    fi
done
((gbad)) || echo "g0..g7, first used after the flood: every call OK"
wait_pid "$fp" 40 || echo "the second fakepeer still ran: killed"
sleep 1
end_kib=$(rss_kib "${pid[node-a]}")
touch "$dir/barrier/stop"
for p in "${lock_pids[@]}"; do wait_pid "$p" 15 || echo "a lockstep job of ab did not stop: killed"; done
rank_pids=()
kill "$sampler" 2>/dev/null
wait "$sampler" 2>/dev/null
sampler=

bad=$gbad
for s in node-a node-b; do
    kill -0 "${pid[$s]}" 2>/dev/null || { echo "FAIL: $s died"; bad=1; }
done
peak_kib=$(awk 'BEGIN {m = 0} $2 > m {m = $2} END {print m}' "$dir/rss")
growth=$(((peak_kib - base_kib) / 1024))
echo "node-a VmRSS: $((base_kib / 1024)) MiB before, peak $((peak_kib / 1024)) MiB (+$growth MiB), $((end_kib / 1024)) MiB at the end; bound +$RSS_MIB MiB"
if ((growth > RSS_MIB)); then
    echo "FAIL: node-a grew by $growth MiB under a flood of frames for groups and epochs it does not know (bound $RSS_MIB MiB)"
    bad=1
fi
abn=$(cat "$dir"/ab.*.log | grep -c " status=")
abok=$(cat "$dir"/ab.*.log | grep -c "status=OK data=ok")
abwrong=$(cat "$dir"/ab.*.log "$dir"/g*.log | grep -c "data=wrong")
echo "ab in lockstep during the test: $abn calls, $abok OK, $abwrong OK with wrong data (with g*)"
if ((abok != abn)); then
    echo "FAIL: $((abn - abok)) calls of ab failed during the flood; the first ones:"
    grep -h " status=" "$dir"/ab.*.log | grep -v "status=OK data=ok" | head -6 | sed 's/^/    /' | cut -c1-300
    bad=1
fi
((abwrong > 0)) && { echo "FAIL: $abwrong calls returned OK with wrong data"; bad=1; }
# a worker of another version of the link protocol (1: HELLO without its version; 2: SLICE
# without a place, which would wait for a go READY that version 3 never sends) is refused by
# name, not taken for a peer that speaks ours
for v in 1 2; do
    if "$fakepeer" hello node-f "tcp://127.0.0.1:${ports[2]}" $v >"$dir/hello.$v.log" 2>&1 &&
        grep -q "HELLO from \"node-f\" speaks link protocol $v, this worker 3" "$dir/node-a.log"; then
        echo "a HELLO of link protocol $v: refused ($(grep -o "speaks link protocol $v.*a2a version" "$dir/node-a.log" | head -1))"
    else
        echo "FAIL: node-a did not refuse a HELLO of link protocol $v by name: $(cat "$dir/hello.$v.log")"
        bad=1
    fi
done
if ((bad)); then
    show_service_logs 15
    exit 1
fi
echo "PASS"
