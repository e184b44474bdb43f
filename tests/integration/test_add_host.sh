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
#   1. coordinator, w0 (world ranks 0 1), w1 (2 3): a verified exchange of 4 ranks on
#      hccl_world_group ("exchange_check random", which checks the world group's size).
#   2. the pids (and start times) of w0 and w1 are recorded.
#   3. w2 (world ranks 4 5) appended to the file, SIGHUP ("reloaded"), w2 started on the new
#      file: within ~10 s a verified exchange of all 6 ranks passes (the first attempts may
#      fail while w0 and w1 have not yet learned of w2: each failed attempt is killed and run
#      again); w0 and w1 are the same processes.
#   4. a file without w0 (w1's world ranks would move): "reload refused", a 6-rank loop that
#      runs across it loses no operation; the good file back, SIGHUP, 6 ranks exchange.
#   5. w2 removed from the file, SIGHUP, w2 stopped (SIGTERM): within ~10 s 4 ranks exchange
#      on hccl_world_group again (its size 4); 4 s later, w0's and w1's logs say nothing more
#      about w2 (they stopped dialing it) for 5 s.
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

# destroy_rgroup: exchange_check random creates "exchange_even_reversed" of the even ranks; a
# run with another number of ranks needs it gone (not there: fine)
destroy_rgroup() {
    "$ctl_bin" --coordinator "tcp://127.0.0.1:${ports[0]}" --timeout 5000 \
        destroy exchange_even_reversed >/dev/null 2>&1
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

# exchange N PREFIX WINDOW SEED: "exchange_check random SEED 1" of world ranks 0..N-1, attempted
# again (the failed attempt's ranks killed) until one passes or WINDOW seconds have passed since
# the first began; each attempt gets 60 s. 0 when one passed ($attempts attempts, $took
# seconds); else 1, and $why is what the last attempt's first failed rank said.
exchange() {
    local n=$1 prefix=$2 window=$3 seed=$4 t0=$SECONDS end r st running bad log gone
    attempts=0 why=
    while :; do
        attempts=$((attempts + 1))
        log=$prefix.a$attempts.r
        run_ranks "$n" "$log" random "$seed" 1
        end=$((SECONDS + 60))
        bad=-1
        gone=()
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
            done
            ((bad != -1 || !running)) && break
            if ((SECONDS >= end)); then
                bad=-2 # timed out
                break
            fi
            sleep 0.05
        done
        if ((bad == -1)); then
            for ((r = 0; r < n; r++)); do
                grep -q "random ok" "$dir/$log$r.log" || {
                    bad=$r
                    break
                }
            done
        fi
        kill_ranks
        if ((bad == -1)); then
            took=$((SECONDS - t0))
            return 0
        fi
        if ((bad == -2)); then
            why="attempt $attempts: the ranks still ran after 60 s: $(tail -n 2 "$dir/${log}0.log" | tr '\n' ' ')"
        else
            why="attempt $attempts: rank $bad: $(grep -v ' ok$' "$dir/$log$bad.log" | tail -n 3 | tr '\n' ' ' | cut -c1-600)"
        fi
        ((SECONDS - t0 < window)) || return 1
        sleep 0.5
    done
}

# ---- 1. two workers, 4 ranks ----
start_cluster 7 w0 w1
echo "cluster: coordinator ${ports[0]}, w0 ${ports[1]}/${ports[2]}, w1 ${ports[3]}/${ports[4]} (w2 to come: ${ports[5]}/${ports[6]})"
exchange 4 s1 0 11 || fail "step 1: 4 ranks on w0 and w1 did not exchange: $why"
echo "step 1: 4 ranks on 2 workers: ok"

# ---- 2. who w0 and w1 are ----
id_w0=$(ident w0) id_w1=$(ident w1)
[ -n "$id_w0" ] && [ -n "$id_w1" ] || fail "step 2: w0 or w1 is gone"
echo "step 2: w0 is pid ${pid[w0]}, w1 pid ${pid[w1]}"

# ---- 3. w2 appended ----
put_yaml 0 1 2
hup "reloaded" || fail "step 3: the coordinator did not reload the file with w2 appended: $(last_reload)"
cp "$cfg" "$dir/w2.yaml"
wcfg[w2]=$dir/w2.yaml
start_worker w2
wait_listening w2 "$dir/w2.log" || fail "step 3: w2 did not start (port ${ports[5]} or ${ports[6]} taken?)"
destroy_rgroup
exchange 6 s3 10 33 ||
    fail "step 3: no verified exchange of 6 ranks on w0, w1 and w2 within 10 s of w2's start ($attempts attempts; w0 and w1 have not learned of w2?): $why"
[ "$(ident w0)" = "$id_w0" ] && [ "$(ident w1)" = "$id_w1" ] || fail "step 3: w0 or w1 is not the same process"
echo "step 3: 6 ranks on 3 workers: ok (attempt $attempts, ${took} s; w0 and w1 not restarted)"

# ---- 4. a reload that would move world ranks is refused ----
run_ranks 6 s4.loop.r loop 4
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
exchange 6 s4 10 44 || fail "step 4: 6 ranks did not exchange after the refused reload: $why"
echo "step 4: refused ($(echo "$refused" | sed 's/^.*reload refused/reload refused/' | cut -c1-120)); a loop across it lost nothing; 6 ranks: ok"

# ---- 5. the last worker removed ----
put_yaml 0 1
hup "reloaded" || fail "step 5: the coordinator did not reload the file without w2: $(last_reload)"
kill -TERM "${pid[w2]}"
wait_pid "${pid[w2]}" 10 || fail "step 5: w2 did not exit within 10 s of SIGTERM"
unset 'pid[w2]'
destroy_rgroup
exchange 4 s5 10 55 ||
    fail "step 5: no verified exchange of 4 ranks on hccl_world_group within 10 s of w2's removal ($attempts attempts): $why"
echo "step 5: 4 ranks on 2 workers after w2's removal: ok (attempt $attempts, ${took} s)"
sleep 4
n0=$(wc -l <"$dir/w0.log") n1=$(wc -l <"$dir/w1.log")
sleep 5
w2pat="\bw2\b\|127\.0\.0\.1:\(${ports[5]}\|${ports[6]}\)\b"
said=$({
    tail -n +$((n0 + 1)) "$dir/w0.log" | sed 's/^/w0: /'
    tail -n +$((n1 + 1)) "$dir/w1.log" | sed 's/^/w1: /'
} | grep "$w2pat")
[ -z "$said" ] || fail "step 5: w0 or w1 still speaks of w2 4-9 s after its removal: $(echo "$said" | head -n 4)"
[ "$(ident w0)" = "$id_w0" ] && [ "$(ident w1)" = "$id_w1" ] || fail "step 5: w0 or w1 is not the same process"
echo "step 5: w0 and w1 said nothing of w2 from 4 s to 9 s after; not restarted"

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
