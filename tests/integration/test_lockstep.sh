#!/usr/bin/env bash
# test_lockstep.sh - ranks that retry in lockstep, as SPMD programs do, through
# a sequence of faults: the group must recover within two rounds of each
# fault's end, and no call may return OK with another operation's data.
#
# usage: test_lockstep.sh A2A_COORDINATOR A2A_WORKER SEQCHECK
# env: LOCKSTEP_TIMEOUT_MS (the calls' timeout, default 3000),
#      LOCKSTEP_MAX_RECOVERY (failed rounds allowed after a fault ended,
#      default 1: the second round after it must be OK on every rank),
#      LOCKSTEP_COUNT (uint64 per slice, default 8), LOCKSTEP_BUDGET_S (no
#      fault begins after this many seconds, default 270: the ctest timeout is
#      420), LOCKSTEP_FAULTS (the schedule, words FAULT:ARG:ARG of worker_kill
#      NAME DOWN_S, job_kill RANK DOWN_S, worker_stop NAME STOPPED_S; default:
#      the seven below), KEEP_DIR=1 keeps the logs.
#
# Three workers x 2 ranks; group ls = world ranks [0 2 4 1 3 5]. Each rank
# runs "seqcheck lockstep": before every call the ranks meet at a barrier of
# files outside a2a, and the round number is the call index (a restarted rank
# joins the current round). The faults, one after another, each followed by
# a healthy period that lasts until 3 rounds after the fault's end were OK on
# every rank (20 s at most; when the group is not healthy by then, the next
# fault gets a new cluster and new jobs, so that each fault is judged alone):
#   kill -9 of a worker, restarted at once; kill -9 of a worker, restarted
#   after 2 s; kill -9 of a job, restarted after 1 s and at once; SIGSTOP of
#   a worker for 0.5, 2 and 4 s, then SIGCONT.
# For each fault: the first round that every rank started after the fault
# ended is R; recovery is the number of rounds from R to the first round OK
# on every rank (0: R itself). FAIL: wrong data in an OK call anywhere; a
# recovery over LOCKSTEP_MAX_RECOVERY, or none; a round that failed after
# recovery with no fault (a relapse); INVALID_ARGUMENT for a call whose
# arguments are valid (a peer's job that died must be UNAVAILABLE).
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3
TMO=${LOCKSTEP_TIMEOUT_MS:-3000}
MAXREC=${LOCKSTEP_MAX_RECOVERY:-1}
COUNT=${LOCKSTEP_COUNT:-8}
BUDGET=${LOCKSTEP_BUDGET_S:-270}
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-lockstep.XXXXXX")
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
    local p
    for p in "${pid[@]}"; do kill -CONT "$p" 2>/dev/null; done
    services_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export A2A_LOG_LEVEL=${A2A_LOG_LEVEL:-info}

write_config() {
    cat >"$cfg" <<EOF
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
    ranks: 2
  - name: w2
    url: tcp://127.0.0.1:${ports[5]}
    data_url: tcp://127.0.0.1:${ports[6]}
    socket: $dir/w2.sock
    ranks: 2
groups:
  - name: ls
    ranks: [0, 2, 4, 1, 3, 5]
EOF
}

members=0,2,4,1,3,5
RANKS=(0 1 2 3 4 5)
now_ms() { date +%s%3N; }

seg=0 # a new segment (cluster, barrier, round numbers) after a fault the group did not survive

# start_rank R: (re)starts the lockstep job of world rank R, appending to $dir/ls.SEG.R.log.
start_rank() {
    local r=$1 w=$(($1 / 2))
    A2A_WORKER_URL="tcp://127.0.0.1:${ports[1 + 2 * w]}" A2A_RANK=$r \
        "$seqcheck" --group ls --members "$members" --timeout "$TMO" --count "$COUNT" --pause 20 \
        lockstep "$dir/barrier.$seg" 900 >>"$dir/ls.$seg.$r.log" 2>&1 &
    rank_pids[r]=$!
}

stop_ranks() {
    local r
    touch "$dir/barrier.$seg/stop"
    for r in "${RANKS[@]}"; do
        wait_pid "${rank_pids[r]}" $(((TMO + 10000) / 1000)) || echo "rank $r's job did not stop: killed"
    done
    rank_pids=()
}

# start_segment: a cluster (on new ports after the first), a barrier and the six lockstep jobs.
start_segment() {
    local r p
    if ((seg > 0)); then
        for p in "${pid[@]}"; do kill -9 "$p" 2>/dev/null; done
        wait 2>/dev/null
        pid=()
        mkdir -p "$dir/seg$((seg - 1))"
        mv "$dir"/coordinator.log "$dir"/w[0-9]*.log "$dir/seg$((seg - 1))/" 2>/dev/null
    fi
    start_cluster 7 w0 w1 w2
    echo "segment $seg: coordinator ${ports[0]}, w0 ${ports[1]}, w1 ${ports[3]}, w2 ${ports[5]}; group ls = [$members], timeout $TMO ms"
    mkdir -p "$dir/barrier.$seg"
    touch "$dir/barrier.$seg/start"
    for r in "${RANKS[@]}"; do start_rank "$r"; done
    healthy "$(now_ms)" || fail "segment $seg: the group did not run 3 OK lockstep rounds in 20 s before any fault"
}

# analyze HEAL_MS UNTIL_MS [SEG]: over the rounds that every rank started at or after HEAL_MS and
# that ended before UNTIL_MS, prints "R0 OKROUND RECOVERY RELAPSES ROUNDS" (OKROUND and
# RECOVERY -1 when no round was OK on every rank; R0 -1 when no round started).
analyze() {
    awk -v heal="$1" -v until_="$2" -v nranks=${#RANKS[@]} '
        $3 == "round" && $5 ~ /^status=/ {
            r = $4; k = $2
            st = $5; sub("status=", "", st)
            d = $6; sub("data=", "", d)
            s = $8; sub("start=", "", s)
            e = $9; sub("end=", "", e)
            seen[r]++
            if (!(r in rmin) || s + 0 < rmin[r]) rmin[r] = s + 0
            if (!(r in rmax) || e + 0 > rmax[r]) rmax[r] = e + 0
            if (st == "OK" && d == "ok") good[r]++
            if (r > maxr) maxr = r
        }
        END {
            r0 = -1
            for (r = 0; r <= maxr; r++)
                if ((r in rmin) && rmin[r] >= heal && rmax[r] < until_) { r0 = r; break }
            if (r0 < 0) { print -1, -1, -1, 0, 0; exit }
            okr = -1; relapse = 0; n = 0
            for (r = r0; r <= maxr; r++) {
                if (!(r in rmin) || rmax[r] >= until_) continue
                n++
                ok = seen[r] == nranks && good[r] == nranks
                if (okr < 0 && ok) okr = r
                else if (okr >= 0 && !ok) relapse++
            }
            print r0, okr, (okr < 0 ? -1 : okr - r0), relapse, n
        }' "$dir"/ls."${3:-$seg}".*.log
}

# healthy HEAL_MS: waits until 3 rounds started after HEAL_MS were OK on every rank (at least
# 2 s, at most 20 s).
healthy() {
    local heal=$1 t0=$SECONDS res
    sleep 2
    while ((SECONDS - t0 < 20)); do
        read -r -a res <<<"$(analyze "$heal" 9999999999999)"
        if ((res[1] >= 0)) && ((res[4] - res[2] >= 3)); then
            return 0
        fi
        sleep 0.5
    done
    return 1
}

skipped=0  # faults not run for lack of time
faults=()  # descriptions
heals=()   # when each fault ended (Unix ms)
injects=() # when each began
segs=()    # its segment
ends=()    # when its segment ended, for the last fault of a segment
t_begin=$(now_ms)
start_segment
echo "healthy: 3 OK rounds before any fault"

# fault DESCRIPTION: records the injection time; heal records its end
fault_begin() {
    if ((SECONDS > BUDGET)); then
        echo "FAIL: the time budget of $BUDGET s is spent: fault skipped: $1"
        skipped=$((skipped + 1))
        return 1
    fi
    faults+=("$1")
    injects+=("$(now_ms)")
    segs+=("$seg")
    echo "$(date -u +%T.%3N) fault ${#faults[@]}: $1"
}
fault_end() {
    heals+=("$(now_ms)")
    healthy "${heals[-1]}" && return 0
    echo "  not healthy 20 s after fault ${#faults[@]} ended: a new cluster and new jobs for the next fault"
    ends[${#faults[@]} - 1]=$(now_ms)
    stop_ranks
    seg=$((seg + 1))
    start_segment
}

worker_kill() { # NAME DOWN_S
    fault_begin "kill -9 $1, restarted after $2 s" || return
    kill -9 "${pid[$1]}"
    wait "${pid[$1]}" 2>/dev/null
    sleep "$2"
    start_worker "$1"
    wait_listening "$1" "$dir/$1.log" || fail "$1 did not restart"
    fault_end
}
job_kill() { # RANK DOWN_S
    fault_begin "kill -9 of rank $1's job, restarted after $2 s" || return
    kill -9 "${rank_pids[$1]}"
    wait "${rank_pids[$1]}" 2>/dev/null
    sleep "$2"
    start_rank "$1"
    fault_end
}
worker_stop() { # NAME STOPPED_S
    fault_begin "SIGSTOP $1 for $2 s, then SIGCONT" || return
    kill -STOP "${pid[$1]}"
    sleep "$2"
    kill -CONT "${pid[$1]}"
    fault_end
}

for f in ${LOCKSTEP_FAULTS:-worker_kill:w1:0 job_kill:3:1 worker_stop:w2:0.5 worker_kill:w2:2 job_kill:0:0 worker_stop:w0:4 worker_stop:w1:2}; do
    IFS=: read -r fn a1 a2 <<<"$f"
    case $fn in
    worker_kill | job_kill | worker_stop) "$fn" "$a1" "$a2" ;;
    *) fail "LOCKSTEP_FAULTS: unknown fault $f" ;;
    esac
done
t_end=$(now_ms)
stop_ranks

bad=$((skipped > 0)) worst=0
for ((i = 0; i < ${#faults[@]}; i++)); do
    until_=$t_end
    ((i + 1 < ${#faults[@]})) && until_=${injects[i + 1]}
    [ -n "${ends[i]:-}" ] && until_=${ends[i]}
    read -r -a res <<<"$(analyze "${heals[i]}" "$until_" "${segs[i]}")"
    # the rounds the fault touched: started from the fault's beginning, before it ended
    during=$(awk -v a="${injects[i]}" -v b="${heals[i]}" '$3 == "round" { s = $8; sub("start=", "", s); if (s + 0 >= a && s + 0 < b) { if ($5 != "status=OK") e++; n++ } } END { printf "%d calls started during the fault, %d failed", n, e }' "$dir"/ls."${segs[i]}".*.log)
    if ((res[0] < 0)); then
        echo "fault $((i + 1)) (${faults[i]}): FAIL: no round started after it ended ($during)"
        bad=1
    elif ((res[1] < 0)) && [ "${LOCKSTEP_RECOVERY_FATAL:-1}" = 0 ]; then
        # the open finding (docs/RELIABILITY.md): members that counted different failures stay
        # one operation apart; reported, not failed, where ctest says so (faults.cmake)
        echo "fault $((i + 1)) (${faults[i]}): KNOWN (not counted, LOCKSTEP_RECOVERY_FATAL=0): no recovery: none of the ${res[4]} rounds from round ${res[0]} was OK on every rank ($during)"
    elif ((res[1] < 0)); then
        echo "fault $((i + 1)) (${faults[i]}): FAIL: NO RECOVERY: none of the ${res[4]} rounds from round ${res[0]} (the first after it ended) was OK on every rank ($during)"
        bad=1
    else
        msg="fault $((i + 1)) (${faults[i]}): recovered at round ${res[1]}, ${res[2]} failed rounds after it ended (first round after it: ${res[0]}), ${res[3]} relapses in ${res[4]} rounds up to the next fault ($during)"
        ((res[2] > worst)) && worst=${res[2]}
        if ((res[2] > MAXREC)); then
            echo "$msg: FAIL: more than $MAXREC failed rounds"
            bad=1
        elif ((res[3] > 0)); then
            echo "$msg: FAIL: rounds failed again after recovery, with no fault"
            bad=1
        else
            echo "$msg"
        fi
    fi
done

wrong=$(grep -h " data=wrong" "$dir"/ls.*.log | wc -l)
if ((wrong > 0)); then
    echo "FAIL: $wrong calls returned OK with another operation's data; the first ones:"
    grep -h " data=wrong" "$dir"/ls.*.log | head -5 | cut -c1-300
    bad=1
fi
# every call's arguments are valid: a peer's job or worker that died is UNAVAILABLE, never
# INVALID_ARGUMENT (DESIGN, "the status says whose fault it is")
blame=$(grep -h " status=INVALID_ARGUMENT" "$dir"/ls.*.log | wc -l)
if ((blame > 0)); then
    echo "FAIL: $blame calls with valid arguments got INVALID_ARGUMENT; the first ones:"
    grep -h " status=INVALID_ARGUMENT" "$dir"/ls.*.log | head -3 | cut -c1-300
    bad=1
fi
total=$(grep -h " round .* status=" "$dir"/ls.*.log | wc -l)
okc=$(grep -h " status=OK data=ok" "$dir"/ls.*.log | wc -l)
echo "lockstep: ${#faults[@]} faults in $(((t_end - t_begin) / 1000)) s; $total calls: $okc OK, $wrong OK with wrong data, $((total - okc - wrong)) failed ($(grep -ho " status=[A-Z_]*" "$dir"/ls.*.log | grep -v "=OK" | sort | uniq -c | awk '{printf "%s%s %d", (NR > 1 ? ", " : ""), substr($2, 8), $1}')); worst recovery $worst rounds"
if ((bad)); then
    show_service_logs 15
    exit 1
fi
echo "PASS"
