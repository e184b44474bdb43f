#!/usr/bin/env bash
# test_restart_race.sh - the restart race of issue 9: a worker killed (-9) and
# restarted between operations must never make a call return A2A_OK with
# another operation's data, and the group must recover.
#
# usage: test_restart_race.sh A2A_COORDINATOR A2A_WORKER SEQCHECK
# env: RACE_ROUNDS (rounds of the fresh variant, default 100),
#      RACE_PERSISTENT_ROUNDS (of the persistent one, default 50),
#      RACE_TIMEOUT_MS (the calls' timeout, default 3000), RACE_COUNT (uint64
#      per slice, default 8: eager slices; 4100 takes the rendezvous path),
#      RACE_BUDGET_S (no round starts after this many seconds, default 330: the
#      ctest timeout is 420; the fresh variant gets 2/5 of it, the persistent
#      one the rest), RACE_DISCOVER=1 (the calls discover their counts, which
#      differ by call: seqcheck --discover), KEEP_DIR=1 keeps the logs.
#
# Two workers, node-a (world ranks 0 1) and node-b (2 3); group ab = [0, 2].
# Every element seqcheck sends encodes (sender, receiver, call index), so an
# OK call holding another call's data is caught. Each round, as in the issue:
# kill -9 node-b, restart it with the same command, then each rank of ab
# makes 2 calls at the same time.
#   fresh:      new job processes every round (call indices 2*round, +1)
#   persistent: the same two job processes through all rounds (seqcheck
#               serve, told over a fifo; indices count the calls since the
#               job started), the reviewer's scenario
# Every 10 rounds and after the last, a recovery check: up to 3 attempts of
# 2 calls each with no fault; one must have all 4 calls OK.
# FAIL: any OK call with wrong data; a recovery check that failed; a job that
# hung (a call over its timeout + 15 s) or died.
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3
ROUNDS=${RACE_ROUNDS:-100}
PROUNDS=${RACE_PERSISTENT_ROUNDS:-50}
TMO=${RACE_TIMEOUT_MS:-3000}
COUNT=${RACE_COUNT:-8}
BUDGET=${RACE_BUDGET_S:-330}
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-race.XXXXXX")
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
    cat >"$cfg" <<EOF
coordinator:
  url: tcp://127.0.0.1:${ports[0]}
workers:
  - name: node-a
    url: tcp://127.0.0.1:${ports[1]}
    data_url: tcp://127.0.0.1:${ports[2]}
    socket: $dir/node-a.sock
    ranks: 2
  - name: node-b
    url: tcp://127.0.0.1:${ports[3]}
    data_url: tcp://127.0.0.1:${ports[4]}
    socket: $dir/node-b.sock
    ranks: 2
groups:
  - name: ab
    ranks: [0, 2]
EOF
}

url_of() { # WORLD_RANK
    if (($1 < 2)); then echo "tcp://127.0.0.1:${ports[1]}"; else echo "tcp://127.0.0.1:${ports[3]}"; fi
}

seq_args=(--group ab --members 0,2 --timeout "$TMO" --count "$COUNT" --discover "${RACE_DISCOVER:-0}")
call_limit=$(((TMO + 15000) / 1000)) # seconds: a call may take its timeout + liba2a's slack

start_cluster 5 node-a node-b
echo "cluster: coordinator ${ports[0]}, node-a ${ports[1]}/${ports[2]}, node-b ${ports[3]}/${ports[4]}"
echo "$ROUNDS fresh rounds, $PROUNDS persistent rounds, timeout $TMO ms, $COUNT uint64 per slice"

# totals, per variant
declare -A v_rounds v_allok v_second v_errcalls v_wrong v_unrecovered v_worst v_sec
declare -A status_count=()

# tally LOGS...: counts the call lines of the logs into tally_ok, tally_err, tally_wrong and
# status_count; echoes each wrong line.
tally() {
    local f line st
    tally_ok=0 tally_err=0 tally_wrong=0
    for f in "$@"; do
        while IFS= read -r line; do
            st=${line#* status=}
            st=${st%% *}
            if [[ $line == *" data=wrong "* ]]; then
                tally_wrong=$((tally_wrong + 1))
                echo "  WRONG DATA: $line"
            elif [[ $st == OK ]]; then
                tally_ok=$((tally_ok + 1))
            else
                tally_err=$((tally_err + 1))
                status_count[$st]=$((${status_count[$st]:-0} + 1))
            fi
        done < <(grep -h " status=" "$f" 2>/dev/null)
    done
}

# ---- fresh job processes every round ----

# fresh_calls TAG BASE: both ranks of ab run "calls 2" at once; 0 when both ended in time.
# Their logs: $dir/TAG.0.log, $dir/TAG.2.log.
fresh_calls() {
    local tag=$1 base=$2 r p0 p2 hung=0
    for r in 0 2; do
        A2A_WORKER_URL=$(url_of $r) A2A_RANK=$r \
            "$seqcheck" "${seq_args[@]}" --base "$base" calls 2 >"$dir/$tag.$r.log" 2>&1 &
        if ((r == 0)); then p0=$!; else p2=$!; fi
    done
    rank_pids=("$p0" "$p2")
    wait_pid "$p0" "$call_limit" || { echo "  rank 0 still runs after ${call_limit} s: killed"; hung=1; }
    wait_pid "$p2" "$call_limit" || { echo "  rank 2 still runs after ${call_limit} s: killed"; hung=1; }
    rank_pids=()
    return $hung
}

cur_logs() { echo "$dir/$1.0.log $dir/$1.2.log"; }

# summary_of LOG: "OK OK" / "OK DEADLINE_EXCEEDED" ... the statuses of its calls (wrong: WRONG).
summary_of() {
    local s
    s=$(awk '/ status=/ { st = $5; sub("status=", "", st); if ($6 == "data=wrong") st = "WRONG"; printf "%s ", st }' "$1")
    echo "${s:-none}"
}

# recovered VARIANT ROUND CALLS_FN TAG: up to 3 attempts of 2 calls with no fault; 0 when one
# had all 4 calls OK. Counts wrong data into $wrong, sets $att.
recovered() {
    local v=$1 round=$2 fn=$3
    for ((att = 1; att <= 3; att++)); do
        "$fn" "$v$round.rec$att" $((100000 + 10 * round + 2 * att)) || return 1
        tally $(cur_logs "$v$round.rec$att")
        wrong=$((wrong + tally_wrong))
        ((tally_ok == 4)) && return 0
        echo "  $v recovery attempt $att after round $round: rank 0: $(summary_of "$(cur_logs "$v$round.rec$att" | cut -d' ' -f1)")| rank 2: $(summary_of "$(cur_logs "$v$round.rec$att" | cut -d' ' -f2)")"
    done
    return 1
}

# run_variant NAME CALLS_FN ROUNDS UNTIL_S: ROUNDS rounds (none begins after UNTIL_S on $SECONDS) of (kill -9 node-b, restart, 2 calls on each rank);
# every 10 rounds and after the last, the recovery check.
run_variant() {
    local v=$1 fn=$2 rounds=$3 until_s=$4 round t0=$SECONDS allok=0 second_ok=0 errcalls=0 unrecovered=0 worst=0
    wrong=0
    for ((round = 1; round <= rounds; round++)); do
        if ((SECONDS > until_s)); then
            echo "$v: its time budget (until $until_s s of $BUDGET) is spent: $((round - 1)) of $rounds rounds run"
            rounds=$((round - 1))
            # the recovery check after the last round run
            if ((rounds % 10 != 0)) && ! recovered "$v" "$rounds" "$fn"; then
                echo "  NO RECOVERY: 3 attempts of 2 calls with no fault after round $rounds all had errors"
                unrecovered=$((unrecovered + 1))
            fi
            break
        fi
        restart_worker node-b || fail "$v round $round: node-b did not restart"
        "$fn" "$v$round" $((2 * round)) || fail "$v round $round: a job hung or died"
        tally $(cur_logs "$v$round")
        wrong=$((wrong + tally_wrong))
        errcalls=$((errcalls + tally_err))
        set -- $(cur_logs "$v$round")
        if [[ "$(summary_of "$1")$(summary_of "$2")" == *"OK OK "*"OK OK "* ]]; then
            allok=$((allok + 1))
        else
            echo "$v round $round: rank 0: $(summary_of "$1")| rank 2: $(summary_of "$2")"
            grep -h " status=" "$1" "$2" | grep -v "status=OK data=ok" | sed 's/^/    /' | cut -c1-300
        fi
        # the second call of both ranks
        [[ "$(summary_of "$1")" == *" OK " && "$(summary_of "$2")" == *" OK " ]] && second_ok=$((second_ok + 1))
        if ((round % 10 == 0 || round == rounds)); then
            if recovered "$v" "$round" "$fn"; then
                ((att > worst)) && worst=$att
            else
                echo "  NO RECOVERY: 3 attempts of 2 calls with no fault after round $round all had errors"
                unrecovered=$((unrecovered + 1))
            fi
        fi
    done
    v_rounds[$v]=$rounds v_allok[$v]=$allok v_second[$v]=$second_ok v_errcalls[$v]=$errcalls
    v_wrong[$v]=$wrong v_unrecovered[$v]=$unrecovered v_worst[$v]=$worst v_sec[$v]=$((SECONDS - t0))
}

# ---- the same job processes through all rounds ----

declare -A fifo_fd
ncmd=0   # commands sent to each job
ncalls=0 # calls made by each job so far

start_servers() {
    local r fd
    rank_pids=()
    for r in 0 2; do
        mkfifo "$dir/in.$r"
        A2A_WORKER_URL=$(url_of $r) A2A_RANK=$r \
            "$seqcheck" "${seq_args[@]}" serve <"$dir/in.$r" >"$dir/serve.$r.log" 2>&1 &
        rank_pids+=($!)
        exec {fd}>"$dir/in.$r" # opens once the job has opened its end
        fifo_fd[$r]=$fd
    done
}

# serve_calls: each job makes 2 calls; 0 when both said "done" in time. The calls' lines are
# appended to $dir/serve.cur.R.log.
serve_calls() {
    local r end first=$ncalls
    ncmd=$((ncmd + 1))
    ncalls=$((ncalls + 2))
    for r in 0 2; do echo 2 >&"${fifo_fd[$r]}"; done
    end=$((SECONDS + 2 * call_limit))
    for r in 0 2; do
        while ! grep -q "^rank $r done $ncmd\$" "$dir/serve.$r.log"; do
            ((SECONDS < end)) || { echo "  the serving job of rank $r did not finish command $ncmd"; return 1; }
            kill -0 "${rank_pids[$((r / 2))]}" 2>/dev/null || { echo "  the serving job of rank $r died"; return 1; }
            sleep 0.05
        done
        awk -v a="$first" -v b="$ncalls" '$3 == "call" && $4 >= a && $4 < b' "$dir/serve.$r.log" >"$dir/serve.cur.$r.log"
    done
    return 0
}

# persistent_calls TAG BASE: the serving jobs make 2 calls each (BASE is theirs: the calls
# since they started); their lines go to $dir/TAG.R.log.
persistent_calls() {
    serve_calls || return 1
    cp "$dir/serve.cur.0.log" "$dir/$1.0.log"
    cp "$dir/serve.cur.2.log" "$dir/$1.2.log"
}

stop_servers() {
    eval "exec ${fifo_fd[0]}>&- ${fifo_fd[2]}>&-" # end of input: the jobs end
    wait_pid "${rank_pids[0]}" 10
    wait_pid "${rank_pids[1]}" 10
    rank_pids=()
}

# a sanity check before any fault
fresh_calls warm 0 || fail "the first calls, before any fault, hung"
tally "$dir/warm.0.log" "$dir/warm.2.log"
((tally_ok == 4)) || fail "the first calls, before any fault, failed: $(cat "$dir"/warm.*.log)"

run_variant fresh fresh_calls "$ROUNDS" $((SECONDS + BUDGET * 2 / 5))
start_servers
persistent_calls serve.warm 0 || fail "persistent: the jobs did not answer before any fault"
tally "$dir/serve.warm.0.log" "$dir/serve.warm.2.log"
((tally_ok == 4)) || fail "persistent: the first calls, before any fault, failed: $(cat "$dir"/serve.warm.*.log)"
run_variant persistent persistent_calls "$PROUNDS" "$BUDGET"
stop_servers

bad=0
for v in fresh persistent; do
    echo "$v: ${v_rounds[$v]} rounds in ${v_sec[$v]} s: ${v_allok[$v]} with all 4 calls OK, ${v_second[$v]} with both second calls OK, ${v_errcalls[$v]} failed calls, ${v_wrong[$v]} OK calls with WRONG data; recovery checks failed: ${v_unrecovered[$v]} (worst: attempt ${v_worst[$v]})"
    ((v_wrong[$v] > 0)) && { echo "FAIL: $v: ${v_wrong[$v]} calls returned OK with another operation's data"; bad=1; }
    ((v_unrecovered[$v] > 0)) && { echo "FAIL: $v: ${v_unrecovered[$v]} rounds after which the group did not recover in 3 attempts"; bad=1; }
done
if ((${#status_count[@]} > 0)); then
    printf "failed calls by status:"
    for s in "${!status_count[@]}"; do printf " %s %d" "$s" "${status_count[$s]}"; done
    echo
fi
if ((bad)); then
    show_service_logs 20
    exit 1
fi
echo "PASS"
