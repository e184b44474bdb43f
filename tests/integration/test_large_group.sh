#!/usr/bin/env bash
# test_large_group.sh - the first operation of a large group whose ranks on one worker call
# after the others (integration.large_group). 64 world ranks on 4 workers (16 each); the ranks
# of w0..w2 call first, those of w3 1.5 s later, each job's first thing its first call
# (--members: it asks its worker nothing before). The 48 early ranks' READYs and eager slices
# for w3's 16 ranks (48 x 17 = 816 frames) reach w3 before any call of w3 has resolved the
# group, more than w3's store of frames for groups not resolved yet holds (256 frames a group).
# Found with 64 ranks on 16 emulated hosts (bench/compare.sh --netns --hosts 16
# --ranks-per-host 4): the frames past the bound were dropped, and operation 0 waited for its
# deadline at every rank (60 s).
#   a. hccl_world_group: every worker installs it ahead of its calls (the watch, worker/watch.c),
#      so w3 keeps those frames in the operation itself: both calls of every rank are OK with
#      the right data, and w3 dropped no frame;
#   b. the same on a group of the YAML ("big", the same 64 ranks), installed ahead the same way;
#   c. w3 restarted with A2A_WATCH_AHEAD=0 (no group installed ahead: it learns of "big"'s new
#      epoch from the frames of the others' first call, as every worker did of every group
#      before): the store of early frames fills, and the link receivers resolve the group
#      themselves instead of dropping the frames past its bounds (they read no more of their
#      link meanwhile): both calls of every rank are OK with the right data, w3 dropped no
#      frame, and it logged that it resolved "big" for those frames. Before, the frames past
#      the bounds were dropped: the 48 early ranks' call completed OK, and w3's 16 failed at
#      their deadline (the operation's outcome not agreed).
#
# usage: test_large_group.sh A2A_COORDINATOR A2A_WORKER SEQCHECK
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-large.XXXXXX")
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
    for p in "${rank_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    services_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export A2A_LOG_LEVEL=${A2A_LOG_LEVEL:-info}

W=4 R=16 N=64
TIMEOUT_MS=20000
write_config() {
    local w
    {
        echo "coordinator:"
        echo "  url: tcp://127.0.0.1:${ports[0]}"
        echo "workers:"
        for ((w = 0; w < W; w++)); do
            echo "  - name: w$w"
            echo "    url: tcp://127.0.0.1:${ports[1 + 2 * w]}"
            echo "    data_url: tcp://127.0.0.1:${ports[2 + 2 * w]}"
            echo "    socket: $dir/w$w.sock"
            echo "    ranks: $R"
        done
        echo "groups:"
        echo "  - name: big"
        echo "    ranks: [$(seq -s ', ' 0 $((N - 1)))]"
    } >"$cfg"
}
api() { echo "tcp://127.0.0.1:${ports[1 + 2 * ($1 / R)]}"; }
members=$(seq -s, 0 $((N - 1)))

# round GROUP TAG [TIMEOUT_MS]: ranks 0..47 call twice on GROUP (indices 0 and 1), ranks 48..63
# 1.5 s later; waits for all (30 s); $late_ms: how long the last of w3's ranks took from its start
round() {
    local group=$1 tag=$2 to=${3:-$TIMEOUT_MS} r t0
    rank_pids=()
    for ((r = 0; r < N; r++)); do
        if ((r == 3 * R)); then
            sleep 1.5
            t0=$(date +%s%N)
        fi
        A2A_WORKER_URL=$(api "$r") A2A_RANK=$r "$seqcheck" --group "$group" --members "$members" \
            --timeout "$to" calls 2 >"$dir/$tag.r$r.log" 2>&1 &
        rank_pids[r]=$!
    done
    for ((r = 0; r < N; r++)); do
        wait_pid "${rank_pids[r]}" 30 || fail "$tag: rank $r did not end in 30 s"
    done
    late_ms=$((($(date +%s%N) - t0) / 1000000))
}

# lines TAG CALL: every rank's line for call CALL
lines() {
    local r
    for ((r = 0; r < N; r++)); do grep -h "^rank $r call $2 " "$dir/$1.r$r.log" || echo "rank $r call $2: no line ($(tail -c 300 "$dir/$1.r$r.log"))"; done
}

start_cluster $((1 + 2 * W)) w0 w1 w2 w3
sleep 0.6 # a watch round (250 ms) at every worker

# a: hccl_world_group
round hccl_world_group a
bad=$(lines a 0; lines a 1) && bad=$(grep -v "status=OK data=ok" <<<"$bad")
[ -z "$bad" ] || fail "check a: not every call of hccl_world_group is OK with the right data: $(head -c 1500 <<<"$bad")"
! grep -q "dropped a frame" "$dir/w3.log" || fail "check a: w3 dropped frames of hccl_world_group: $(grep -m2 'dropped a frame' "$dir/w3.log")"
ok "check a: 64 ranks, w3's 1.5 s late: both calls OK with the right data on every rank (w3's last in $late_ms ms), no frame dropped"

# b: a group of the YAML
round big b
bad=$(lines b 0; lines b 1) && bad=$(grep -v "status=OK data=ok" <<<"$bad")
[ -z "$bad" ] || fail "check b: not every call of group big is OK with the right data: $(head -c 1500 <<<"$bad")"
! grep -q "dropped a frame" "$dir/w3.log" || fail "check b: w3 dropped frames of big: $(grep -m2 'dropped a frame' "$dir/w3.log")"
ok "check b: group big: both calls OK with the right data on every rank, no frame dropped"

# c: w3 resolves groups at their first call only
A2A_WATCH_AHEAD=0 restart_worker w3
sleep 1 # the others see big's new epoch (w3's new incarnation) and install it
round big c 8000
bad=$(lines c 0; lines c 1) && bad=$(grep -v "status=OK data=ok" <<<"$bad")
[ -z "$bad" ] || fail "check c: not every call of group big is OK with the right data: $(head -c 1500 <<<"$bad")"
! grep -q "dropped a frame" "$dir/w3.log" || fail "check c: w3 dropped frames of big: $(grep -m2 'dropped a frame' "$dir/w3.log")"
grep -q 'group "big" (epoch [0-9]*) resolved for the frames of it that came before a call' "$dir/w3.log" ||
    fail "check c: w3 did not log that a link resolved big for its frames (were they kept in the store? $(grep -c 'installed ahead' "$dir/w3.log"))"
ok "check c: w3 (nothing installed ahead) resolved big for the frames that came first: both calls OK with the right data on every rank, no frame dropped"
echo "passed: $passed checks"
