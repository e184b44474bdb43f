#!/usr/bin/env bash
# test_job_release.sh - everything a job held is released when its connection
# closes: a job killed with SIGKILL, and a new job for the same rank gets it at
# once and exchanges verified data with the ranks that stayed. Also what
# `a2a-ctl jobs` shows of each job (its mode), in text and JSON.
#
# usage: test_job_release.sh A2A_COORDINATOR A2A_WORKER A2A_CTL EXCHANGE_CHECK MODE
# MODE: local (jobs on the worker's Unix socket) or remote (A2A_JOB_MODE=remote:
# the slices over the job's TCP connection). KEEP_DIR=1 keeps the logs.
#
# w0 has world ranks 0 and 1, w1 rank 2. Ranks 0 and 2 run "loop" (plain
# buffers), rank 1 "loop-shared" (buffers from a2a_buffer_alloc). After 3 s,
# `a2a-ctl jobs` on w0 must list ranks 0 and 1 in their modes (local: staging
# and shared; remote: both remote). Rank 0 is killed (-9); 0.2 s later a new
# rank 0 starts: its a2a_job_open must succeed (a rank still held fails it at
# once with ALREADY_EXISTS), `a2a-ctl jobs` must show rank 0 in a new session
# within 2 s of the kill (5 s for a sanitized build, whose processes start
# slowly), and every rank must end with verified operations
# (the new rank 0 with the two that stayed).
set -u
coord_bin=$1 worker_bin=$2 ctl=$3 check=$4 mode=$5
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-release.XXXXXX")
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
case $mode in
local) export A2A_JOB_MODE=local want0=staging want1=shared ;;
remote) export A2A_JOB_MODE=remote want0=remote want1=remote ;;
*) echo "usage: $0 COORD WORKER CTL CHECK local|remote"; exit 2 ;;
esac

write_config() {
    cat >"$cfg" <<EOC
coordinator:
  url: tcp://127.0.0.1:${ports[0]}
workers:
  - name: w0
    url: tcp://127.0.0.1:${ports[1]}
    data_url: tcp://127.0.0.1:${ports[2]}
    socket: $dir/w0.sock
    ranks: 2
  - name: w1
    url: tcp://127.0.0.1:${ports[3]}
    data_url: tcp://127.0.0.1:${ports[4]}
    socket: $dir/w1.sock
    ranks: 1
EOC
}

start_cluster 5 w0 w1
w0=tcp://127.0.0.1:${ports[1]}
echo "cluster: coordinator ${ports[0]}, w0 ${ports[1]}, w1 ${ports[3]}; jobs in $mode mode"

# run_rank RANK LOG ARGS...: starts world rank RANK of exchange_check ARGS; its pid in $rp.
run_rank() {
    local r=$1 log=$2 w=0
    shift 2
    ((r == 2)) && w=1
    A2A_WORKER_URL="tcp://127.0.0.1:${ports[1 + 2 * w]}" A2A_RANK=$r A2A_WORLD_SIZE=3 \
        A2A_COORDINATOR_URL="tcp://127.0.0.1:${ports[0]}" "$check" "$@" >"$dir/$log" 2>&1 &
    rp=$!
}

# jobs_json: a2a-ctl jobs on w0, JSON, one job per line.
jobs_json() {
    "$ctl" jobs "$w0" --json --timeout 3000 | sed 's/},{/}\n{/g'
}

# session_of RANK: w0's session of world rank RANK (empty: none).
session_of() {
    jobs_json | grep "\"world_rank\":$1," | sed 's/.*"session":\([0-9]*\).*/\1/'
}

run_rank 0 rank0.log loop 16
p0=$rp
run_rank 1 rank1.log loop-shared 16
p1=$rp
run_rank 2 rank2.log loop 16
p2=$rp
rank_pids=("$p0" "$p1" "$p2")
sleep 3
for p in "$p0" "$p1" "$p2"; do kill -0 "$p" 2>/dev/null || fail "a rank ended before the kill"; done

# ---- a2a-ctl jobs: each job's mode ----
text=$("$ctl" jobs "$w0" --timeout 3000) || fail "a2a-ctl jobs failed: $text"
echo "$text"
json=$(jobs_json) || fail "a2a-ctl jobs --json failed: $json"
echo "$json"
head -1 <<<"$text" | grep -q "SESSION *WORLD_RANK *MODE *PID" || fail "a2a-ctl jobs: no header"
for r in 0 1; do
    want=want$r
    line=$(grep "\"world_rank\":$r," <<<"$json") || fail "a2a-ctl jobs --json does not list rank $r"
    [[ $line == *"\"mode\":\"${!want}\""* ]] || fail "rank $r: mode is not ${!want}: $line"
    if [ "$mode" = local ]; then
        [[ $line == *"\"pid\":$([ $r = 0 ] && echo "$p0" || echo "$p1"),"* ]] ||
            fail "rank $r: the pid is not the job's: $line"
    else
        [[ $line == *'"pid":null,"uid":null'* ]] || fail "rank $r: a remote job has a pid: $line"
    fi
done
grep -q '"world_rank":2,' <<<"$json" && fail "w0 lists rank 2 (w1's)"
# the same JSON shape as the other commands: an array of objects
[[ $json == "["*"]" ]] || fail "a2a-ctl jobs --json is not one JSON array: $json"
bad=$("$ctl" jobs --timeout 3000 2>&1) && fail "a2a-ctl jobs without WORKER_URL succeeded"
[[ $bad == *"jobs takes WORKER_URL"* ]] || fail "a2a-ctl jobs without WORKER_URL: $bad"

# ---- a job killed, a new one on its rank ----
old=$(session_of 0)
[ -n "$old" ] || fail "no session of rank 0 before the kill"
kill -9 "$p0"
wait "$p0" 2>/dev/null
t_kill=$(date +%s%N)
echo "killed rank 0 (pid $p0, session $old)"
sleep 0.2
run_rank 0 rank0-new.log loop 6
p0n=$rp
rank_pids=("$p0n" "$p1" "$p2")
# 2 s; a sanitized build starts the new process slowly (about 1 s under TSan): 5 s
limit=2
grep -qE "__tsan_init|__asan_init" "$check" 2>/dev/null && limit=5
new=
while (($(date +%s%N) - t_kill < limit * 1000000000)); do
    new=$(session_of 0)
    [ -n "$new" ] && [ "$new" != "$old" ] && break
    kill -0 "$p0n" 2>/dev/null || break
    sleep 0.1
done
ms=$((($(date +%s%N) - t_kill) / 1000000))
[ -n "$new" ] && [ "$new" != "$old" ] ||
    { cat "$dir/rank0-new.log"; fail "the new rank 0 did not get its rank within $limit s of the kill (session now: ${new:-none})"; }
echo "the new rank 0 holds the rank in session $new, $ms ms after the kill"
if [ "$mode" = remote ]; then
    grep -q "remote session $old (world rank 0): its connection closed" "$dir/w0.log" ||
        fail "w0 did not log that session $old's connection closed"
    for ((i = 0; i < 20; i++)); do
        grep -q "remote session $old: world rank 0 let go" "$dir/w0.log" && break
        sleep 0.1
    done
    ((i < 20)) || fail "w0 did not release session $old's staging"
else
    grep -q "session $old: process $p0 let go of world rank 0" "$dir/w0.log" ||
        fail "w0 did not log that session $old let go of rank 0"
fi
end=$((SECONDS + 60))
st=0
for p in "$p0n" "$p1" "$p2"; do
    while kill -0 "$p" 2>/dev/null && ((SECONDS < end)); do sleep 0.2; done
    kill -0 "$p" 2>/dev/null && fail "a rank still runs after 60 s"
    wait "$p" || st=1
done
for f in rank0-new rank1 rank2; do
    echo "$f: $(grep -h "operations verified" "$dir/$f.log")"
done
((st == 0)) || { tail -5 "$dir"/rank*.log; fail "a rank did not end with verified operations"; }
grep -q "loop ok" "$dir/rank0-new.log" || fail "the new rank 0 did not end with verified operations"
echo "PASS"
