#!/usr/bin/env bash
# test_add_host.sh - a host added to a running cluster, and the last one removed, without
# restarting the other workers (integration.add_host).
#
# usage: test_add_host.sh A2A_COORDINATOR A2A_WORKER A2A_CTL EXCHANGE_CHECK
# (KEEP_DIR=1 keeps the logs; they are kept anyway when it fails)
#
# The coordinator reads $dir/cluster.yaml, and again on SIGHUP; each worker gets its own copy of
# the file as it was when the worker started, never rewritten: w0 and w1 never see w2 in a
# file, only through the coordinator.
#   1. coordinator, w0 (world ranks 0 1), w1 (2 3): verified exchanges of 4 ranks on
#      hccl_world_group ("exchange_check loop").
#   2. the pids (and start times) of w0 and w1 are recorded.
#   3. w2 (world ranks 4 5) appended to the file, SIGHUP ("reloaded"), w2 started on the new
#      file: within ~10 s a loop of all 6 ranks passes (its first calls may fail while w0 and w1
#      have not yet learned of w2, and a loop that does not pass is run again), then
#      "exchange_check random" of 6 ranks (it checks the world's size); w0 and w1 are the same
#      processes.
#   4. a file without w0 (w1's world ranks would move): "reload refused", a 6-rank loop that
#      runs across it loses no operation; the good file back, SIGHUP, 6 ranks exchange.
#   5. w2 removed from the file, SIGHUP, w2 stopped (SIGTERM): within ~10 s 4 ranks exchange
#      on hccl_world_group again (its size 4); 1 s later, w0's and w1's logs say nothing more
#      about w2 (they stopped dialing it) for 4 s.
#   6. SIGTERM to every service: each exits within 10 s.
set -u
coord_bin=$1 worker_bin=$2 ctl_bin=$3 check=$4
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-addhost.XXXXXX")
cfg=$dir/cluster.yaml # the coordinator's file
declare -A pid=()
declare -A wcfg=() # worker -> the file it was started with
rank_pids=()
# shellcheck source=services.sh
. "$(dirname "${BASH_SOURCE[0]}")/services.sh"
# shellcheck source=cluster.sh
. "$(dirname "${BASH_SOURCE[0]}")/cluster.sh"
trap services_cleanup EXIT
trap 'exit 130' INT TERM
export A2A_LOG_LEVEL=${A2A_LOG_LEVEL:-info}
unset A2A_TOKEN_FILE A2A_TLS_CERT A2A_TLS_KEY A2A_TLS_CA

# fail MESSAGE: cluster.sh's, and the logs are kept
fail() {
    echo "FAIL: $*"
    show_service_logs 40
    echo "logs in $dir"
    KEEP_DIR=1
    exit 1
}

# yaml W...: the coordinator and workers wW of 2 ranks each (API port ports[1 + 2W], data port
# ports[2 + 2W]), in that order
yaml() {
    local w
    echo "coordinator:"
    echo "  url: tcp://127.0.0.1:${ports[0]}"
    echo "workers:"
    for w in "$@"; do
        echo "  - name: w$w"
        echo "    url: tcp://127.0.0.1:${ports[1 + 2 * w]}"
        echo "    data_url: tcp://127.0.0.1:${ports[2 + 2 * w]}"
        echo "    socket: $dir/w$w.sock"
        echo "    ranks: 2"
    done
}
# put_yaml W...: replaces the coordinator's file whole (a temporary file and rename)
put_yaml() {
    yaml "$@" >"$cfg.tmp" && mv "$cfg.tmp" "$cfg"
}
write_config() {
    put_yaml 0 1
    cp "$cfg" "$dir/w0w1.yaml"
    wcfg[w0]=$dir/w0w1.yaml wcfg[w1]=$dir/w0w1.yaml
}
# start_worker NAME: cluster.sh's, on the worker's own file
start_worker() {
    rm -f "$dir/$1.log"
    start "$1" "$dir/$1.log" "$worker_bin" --config "${wcfg[$1]}" --name "$1"
}
api() { echo "tcp://127.0.0.1:${ports[1 + 2 * ($1 / 2)]}"; } # of world rank R (2 a worker)

# ident NAME: pid and start time of service NAME ("" when gone)
ident() {
    local p=${pid[$1]}
    [ -r "/proc/$p/stat" ] || return 0
    echo "$p:$(awk '{print $22}' "/proc/$p/stat")"
}

# hup PATTERN: SIGHUP to the coordinator; 0 once its log has one more line of "reloaded" or
# "reload refused", and that line matches PATTERN
hup() {
    local log=$dir/coordinator.log last
    hup_until coordinator "$log" "reloaded\|reload refused" || return 1
    last=$(grep "reloaded\|reload refused" "$log" | tail -n 1)
    echo "$last" | grep -q "$1"
}
last_reload() { grep "reloaded\|reload refused" "$dir/coordinator.log" | tail -n 1 | cut -c1-240; }

# coord_world: the coordinator's hccl_world_group, "group hccl_world_group: N ranks, epoch E"
coord_world() {
    "$ctl_bin" --coordinator "tcp://127.0.0.1:${ports[0]}" --timeout 5000 resolve hccl_world_group 2>&1 |
        head -n 1
}

# run_ranks N PREFIX ARGS...: world ranks 0..N-1 of exchange_check ARGS
run_ranks() {
    local n=$1 prefix=$2 r
    shift 2
    rank_pids=()
    for ((r = 0; r < n; r++)); do
        A2A_WORKER_URL=$(api "$r") A2A_RANK=$r A2A_WORLD_SIZE=$n \
            A2A_COORDINATOR_URL="tcp://127.0.0.1:${ports[0]}" \
            "$check" "$@" >"$dir/$prefix$r.log" 2>&1 &
        rank_pids+=($!)
    done
}

# kill_ranks: kill -9 the ranks still running, reaped
kill_ranks() {
    local p
    for p in "${rank_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    for p in "${rank_pids[@]}"; do wait "$p" 2>/dev/null; done
    rank_pids=()
}

# watch_ranks N PREFIX BOUND GRACE: 0 when ranks 0..N-1 of run_ranks (logs $dir/PREFIXR.log)
# all exit 0 within BOUND seconds. Once one has exited, the others get GRACE seconds more (a
# loop's ranks stop at the same operation; a rank of a random that failed takes the others'
# calls of that operation down with it); those still running then are killed. Else 1, and $why
# says who failed, with its last error.
watch_ranks() {
    local n=$1 prefix=$2 end=$((SECONDS + $3)) grace=$4 r st running bad=-1 gone=() late=()
    while :; do
        running=0
        for ((r = 0; r < n; r++)); do
            [ -n "${gone[r]:-}" ] && continue
            if kill -0 "${rank_pids[r]}" 2>/dev/null; then
                running=1
                continue
            fi
            wait "${rank_pids[r]}"
            st=$?
            gone[r]=$st
            ((st != 0 && bad == -1)) && bad=$r
            ((SECONDS + grace < end)) && end=$((SECONDS + grace))
        done
        ((running)) || break
        ((SECONDS < end)) || break
        sleep 0.05
    done
    for ((r = 0; r < n; r++)); do
        [ -n "${gone[r]:-}" ] || late+=("$r")
    done
    kill_ranks
    ((bad == -1 && ${#late[@]} == 0)) && return 0
    why=
    ((${#late[@]} > 0)) && why="ranks ${late[*]} still ran (killed); "
    ((bad == -1)) && bad=${late[0]}
    why+="rank $bad: $(grep -h ': [A-Z_]*: \|FAILED\|no common' "$dir/$prefix$bad.log" | tail -n 2 |
        tr '\n' ' ' | cut -c1-600)"
    return 1
}

# exchange N PREFIX WINDOW [SEED]: world ranks 0..N-1 of "exchange_check loop 2" on
# hccl_world_group, run again until one passes (every rank ends with verified operations after
# its last failed one) while WINDOW seconds have not passed since the first began (each run gets
# 20 s). A loop of all N passes only when every worker's hccl_world_group is those N ranks (the
# ranks of a worker that sees another world wait for, or on, ranks that do not call with them).
# Given SEED, then "exchange_check random SEED 1" once: it checks the world's size and rank
# conversions as each rank's worker sees them, and exchanges every dtype with gaps. It also runs
# on a group it creates, "exchange_even_reversed" of the even ranks: so only with one N in this
# test (destroyed and created again with other members, the group's first call failed on
# operation numbers w0 kept from the old one, and calls still in it hung). 0 when all passed
# ($attempts loops, the last passed $took s after the first began); 1 when no loop passed, 2
# when the random failed; $why says why.
exchange() {
    local n=$1 prefix=$2 window=$3 seed=${4:-} t0=$SECONDS
    attempts=0 why=
    while :; do
        attempts=$((attempts + 1))
        run_ranks "$n" "$prefix.loop$attempts.r" loop 2
        watch_ranks "$n" "$prefix.loop$attempts.r" 20 4 && break
        why="loop attempt $attempts: $why"
        ((SECONDS - t0 < window)) || return 1
        sleep 0.3
    done
    took=$((SECONDS - t0))
    [ -n "$seed" ] || return 0
    run_ranks "$n" "$prefix.random.r" random "$seed" 1
    watch_ranks "$n" "$prefix.random.r" 60 5 && return 0
    why="random: $why"
    return 2
}

# exchange_step STEP N PREFIX WINDOW SEED WHAT: exchange (SEED "": no random), or fail saying
# which part did not pass
exchange_step() {
    exchange "$2" "$3" "$4" "$5"
    case $? in
    1) fail "step $1: no loop of $2 ranks on hccl_world_group passed within $4 s (loops run: $attempts; $6): $why" ;;
    2) fail "step $1: $2 ranks looped on hccl_world_group, then \"exchange_check random\" failed ($6): $why" ;;
    esac
}
# same_workers STEP: w0 and w1 are the processes of step 2
same_workers() {
    [ "$(ident w0)" = "$id_w0" ] || fail "step $1: w0 is not process $id_w0 (pid:start time) of step 2 but '$(ident w0)'"
    [ "$(ident w1)" = "$id_w1" ] || fail "step $1: w1 is not process $id_w1 (pid:start time) of step 2 but '$(ident w1)'"
}

# ---- 1. two workers, 4 ranks ----
start_cluster 7 w0 w1
echo "cluster: coordinator ${ports[0]}, w0 ${ports[1]}/${ports[2]}, w1 ${ports[3]}/${ports[4]} (w2 to come: ${ports[5]}/${ports[6]})"
exchange_step 1 4 s1 0 "" "w0 and w1 from the start"
echo "step 1: 4 ranks on 2 workers: ok"

# ---- 2. who w0 and w1 are ----
id_w0=$(ident w0) id_w1=$(ident w1)
if [ -z "$id_w0" ] || [ -z "$id_w1" ]; then fail "step 2: w0 or w1 is gone"; fi
echo "step 2: w0 is pid ${pid[w0]}, w1 pid ${pid[w1]}"

# ---- 3. w2 appended ----
put_yaml 0 1 2
hup "reloaded" || fail "step 3: the coordinator did not reload the file with w2 appended: $(last_reload)"
cp "$cfg" "$dir/w2.yaml"
wcfg[w2]=$dir/w2.yaml
start_worker w2
wait_listening w2 "$dir/w2.log" || fail "step 3: w2 did not start (port ${ports[5]} or ${ports[6]} taken?)"
same_workers 3
exchange_step 3 6 s3 10 33 "ranks 4 5 on w2, appended to the file: have w0 and w1 learned of w2?"
same_workers 3
cw=$(coord_world)
[[ $cw == *": 6 ranks"* ]] || fail "step 3: the coordinator's hccl_world_group: $cw"
echo "step 3: 6 ranks on 3 workers: ok (loop attempt $attempts passed ${took} s after the first; w0 and w1 not restarted)"

# ---- 4. a reload that would move world ranks is refused ----
run_ranks 6 s4.loop.r loop 3
sleep 1
put_yaml 1 2
hup "reload refused" || fail "step 4: a file without w0 (w1's ranks would move) was not refused: $(last_reload)"
refused=$(last_reload)
put_yaml 0 1 2
hup "reloaded" || fail "step 4: the good file back was not reloaded: $(last_reload)"
wait_ranks 70 s4.loop.r || fail "step 4: a 6-rank loop across the refused reload failed"
for ((r = 0; r < 6; r++)); do
    grep -q " 0 failed" "$dir/s4.loop.r$r.log" ||
        fail "step 4: rank $r lost operations across the refused reload: $(grep -h 'operation' "$dir/s4.loop.r$r.log" | head -n 3)"
done
exchange_step 4 6 s4 10 44 "after the refused reload and the good file back"
echo "step 4: $(echo "$refused" | sed 's/^.*reload refused/reload refused/' | cut -c1-150)"
echo "step 4: a loop of 6 ranks across the refused reload lost nothing; 6 ranks after it: ok"

# ---- 5. the last worker removed ----
put_yaml 0 1
hup "reloaded" || fail "step 5: the coordinator did not reload the file without w2: $(last_reload)"
kill -TERM "${pid[w2]}"
wait_pid "${pid[w2]}" 10 || fail "step 5: w2 did not exit within 10 s of SIGTERM"
unset 'pid[w2]'
exchange_step 5 4 s5 10 "" "w2 removed from the file and stopped: has hccl_world_group shrunk back on w0 and w1?"
cw=$(coord_world)
[[ $cw == *": 4 ranks"* ]] || fail "step 5: the coordinator's hccl_world_group: $cw"
echo "step 5: 4 ranks on 2 workers after w2's removal: ok (loop attempt $attempts passed ${took} s after the first)"
sleep 1
n0=$(wc -l <"$dir/w0.log") n1=$(wc -l <"$dir/w1.log")
sleep 4
w2pat="\bw2\b\|127\.0\.0\.1:\(${ports[5]}\|${ports[6]}\)\b"
said=$({
    tail -n +$((n0 + 1)) "$dir/w0.log" | sed 's/^/w0: /'
    tail -n +$((n1 + 1)) "$dir/w1.log" | sed 's/^/w1: /'
} | grep "$w2pat")
[ -z "$said" ] || fail "step 5: w0 or w1 still speaks of w2 1-5 s after its removal: $(echo "$said" | head -n 4)"
same_workers 5
echo "step 5: w0 and w1 said nothing of w2 from 1 s to 5 s after; not restarted"

# ---- 6. SIGTERM ----
for s in coordinator w0 w1; do kill -TERM "${pid[$s]}" 2>/dev/null; done
end=$((SECONDS + 10))
for s in coordinator w0 w1; do
    left=$((end - SECONDS))
    ((left > 0)) || left=1
    wait_pid "${pid[$s]}" "$left" || fail "step 6: $s did not exit within 10 s of SIGTERM"
    unset "pid[$s]"
done
echo "step 6: every service exited on SIGTERM"
echo "PASS"
