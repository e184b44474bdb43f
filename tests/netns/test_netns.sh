#!/usr/bin/env bash
# test_netns.sh - the cluster on 4 emulated hosts (network namespaces, hosts.sh).
#
# usage: test_netns.sh BIN_DIR
#        test_netns.sh A2A_COORDINATOR A2A_WORKER EXCHANGE_CHECK
#
# BIN_DIR is searched for a2a-coordinator, a2a-worker and exchange_check (also
# in its bin/, coordinator/, worker/ and tests/integration/). Needs root and
# "ip netns"; otherwise prints one SKIP line and exits 0.
#
# Hosts PREFIX-h1..h4 (PREFIX=a2at$$) on a bridge; the coordinator on host 1,
# worker hostK on host K with RANKS_PER_HOST ranks (default 2: world of 8),
# every service on the host's own address with fixed ports 7000/7100/7101.
# Each rank runs exchange_check inside its worker's host. Checks:
#   a. random exchanges across the hosts, verified
#   b. big (~48 MiB per rank) across the hosts, verified
#   c. host 4's link cut (silently, at the switch) for 4 s during a loop run:
#      the ranks of hosts 1-3 get UNAVAILABLE or DEADLINE_EXCEEDED within
#      CUT_DETECT_BOUND s (default 6), no wrong data, all end with verified
#      operations after the heal
#   d. host 3's worker killed (-9) during a loop run and started again 2 s later:
#      the ranks of the other hosts get UNAVAILABLE naming host3, all end with
#      verified operations
# Prints "check X (...): ok|FAILED" per check, then "N passed, M failed".
# Environment: KEEP_DIR=1 keeps the logs, A2A_LOG_LEVEL (default info) for the
# services, RANKS_PER_HOST, CUT_DETECT_BOUND.
set -u

SKIP_LINE="SKIP: network-namespace tests need root (ip netns)"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
hosts=$here/hosts.sh
P=a2at$$
K=4
R=${RANKS_PER_HOST:-2}
N=$((K * R))
CUT_DETECT_BOUND=${CUT_DETECT_BOUND:-6}

# ---- binaries ----
find_bin() { # DIR NAME
    local d
    for d in "$1" "$1/bin" "$1/coordinator" "$1/worker" "$1/tests/integration"; do
        [ -x "$d/$2" ] && [ -f "$d/$2" ] && { echo "$d/$2"; return 0; }
    done
    return 1
}
if [ $# -eq 3 ]; then
    coord_bin=$1 worker_bin=$2 check_bin=$3
elif [ $# -eq 1 ] && [ -d "$1" ]; then
    coord_bin=$(find_bin "$1" a2a-coordinator) || { echo "no a2a-coordinator in $1"; exit 2; }
    worker_bin=$(find_bin "$1" a2a-worker) || { echo "no a2a-worker in $1"; exit 2; }
    check_bin=$(find_bin "$1" exchange_check) || { echo "no exchange_check in $1"; exit 2; }
else
    echo "usage: $0 BIN_DIR | $0 A2A_COORDINATOR A2A_WORKER EXCHANGE_CHECK" >&2
    exit 2
fi
for b in "$coord_bin" "$worker_bin" "$check_bin"; do
    [ -x "$b" ] || { echo "not an executable: $b"; exit 2; }
done

# ---- root and ip netns, or skip ----
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null 2>&1 || ! ip netns list >/dev/null 2>&1 ||
    ! ip netns add "$P-probe" 2>/dev/null; then
    echo "$SKIP_LINE"
    exit 0
fi
ip netns del "$P-probe" 2>/dev/null

# Hosts left by runs of this test that were killed with SIGKILL (their pid is gone).
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | sed -nE 's/^(a2at[0-9]+)-(h[0-9]+|sw)$/\1/p' | sort -u); do
    kill -0 "${ns#a2at}" 2>/dev/null || "$hosts" down "$ns"
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-netns.XXXXXX")
cfg=$dir/cluster.yaml
declare -A pid=()  # service name -> pid (the service itself, inside its host)
rank_pids=()       # the ranks of the current check (timeout, inside the host)
nap_pid=
passed=0 failed=0
export A2A_LOG_LEVEL=${A2A_LOG_LEVEL:-info}

cleanup() {
    trap '' INT TERM
    exec 2>/dev/null # no "Killed" notices for the processes ended here
    local p
    for p in "${rank_pids[@]}" "${pid[@]}" $nap_pid; do
        kill -9 "$p" 2>/dev/null
    done
    "$hosts" down "$P" # and whatever else still runs inside the hosts
    { wait; } 2>/dev/null
    if [ -n "${KEEP_DIR:-}" ]; then echo "kept $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 143' TERM
trap 'echo "interrupted"; exit 130' INT

# nap SECONDS: sleep that a signal interrupts at once
nap() {
    sleep "$1" &
    nap_pid=$!
    wait "$nap_pid"
    nap_pid=
}

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

show_logs() { # [PATTERN]
    local f
    for f in "$dir"/${1:-*}.log; do
        [ -f "$f" ] || continue
        echo "---- $(basename "$f") (last 30 lines)"
        tail -n 30 "$f"
    done
}

result() { # CHECK DESCRIPTION STATUS(0 ok)
    if [ "$3" -eq 0 ]; then
        echo "check $1 ($2): ok"
        passed=$((passed + 1))
    else
        echo "check $1 ($2): FAILED"
        failed=$((failed + 1))
    fi
}

# ---- the cluster ----
"$hosts" up "$P" "$K" || { echo "could not create the hosts"; exit 1; }
declare -a addr
for ((k = 1; k <= K; k++)); do
    addr[k]=$("$hosts" ip "$P" "$k") || { echo "no address for host $k"; exit 1; }
done
coord_url=tcp://${addr[1]}:7000
{
    echo "coordinator:"
    echo "  url: $coord_url"
    echo "workers:"
    for ((k = 1; k <= K; k++)); do
        echo "  - name: host$k"
        echo "    url: tcp://${addr[k]}:7100"
        echo "    data_url: tcp://${addr[k]}:7101"
        echo "    socket: $dir/host$k.sock"
        echo "    ranks: $R"
    done
} >"$cfg"

# start NAME HOST LOG CMD...: a service in its host, appending to LOG
start() {
    local name=$1 k=$2 log=$3
    shift 3
    "$hosts" exec "$P" "$k" "$@" >>"$log" 2>&1 &
    pid[$name]=$!
}

# wait_listening NAME LOG: 0 once LOG says "listening on", 1 if it died or took 10 s
wait_listening() {
    local i
    for ((i = 0; i < 100; i++)); do
        grep -q "listening on" "$2" 2>/dev/null && return 0
        kill -0 "${pid[$1]}" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

start_worker() { # K
    start "host$1" "$1" "$dir/host$1.log" "$worker_bin" --config "$cfg" --name "host$1"
}

t_start=$SECONDS
start coordinator 1 "$dir/coordinator.log" "$coord_bin" --config "$cfg"
wait_listening coordinator "$dir/coordinator.log" || { show_logs; echo "the coordinator did not start"; exit 1; }
for ((k = 1; k <= K; k++)); do
    start_worker "$k"
done
for ((k = 1; k <= K; k++)); do
    wait_listening "host$k" "$dir/host$k.log" || { show_logs; echo "worker host$k did not start"; exit 1; }
done
echo "cluster: $K hosts ($P-h1..h$K, ${addr[1]%.*}.0/24), coordinator $coord_url, $R ranks per worker"

host_of() { echo $(($1 / R + 1)); } # world rank -> host

# run_ranks LOGPREFIX LIMIT ARGS...: world ranks 0..N-1 of exchange_check ARGS, each in
# its worker's host, at most LIMIT seconds each
run_ranks() {
    local prefix=$1 limit=$2 r k
    shift 2
    rank_pids=()
    for ((r = 0; r < N; r++)); do
        k=$(host_of "$r")
        A2A_WORKER_URL=tcp://${addr[k]}:7100 A2A_RANK=$r A2A_WORLD_SIZE=$N \
            A2A_COORDINATOR_URL=$coord_url \
            "$hosts" exec "$P" "$k" timeout -k 2 "$limit" "$check_bin" "$@" \
            >"$dir/$prefix$r.log" 2>&1 &
        rank_pids+=($!)
    done
}

# wait_ranks SECONDS: 0 when every rank exited 0 within SECONDS; says who did not
wait_ranks() {
    local end=$((SECONDS + $1)) r st bad=0
    for ((r = 0; r < N; r++)); do
        while kill -0 "${rank_pids[r]}" 2>/dev/null && ((SECONDS < end)); do
            sleep 0.2
        done
        if kill -0 "${rank_pids[r]}" 2>/dev/null; then
            echo "  rank $r still runs after $1 s"
            kill -9 "${rank_pids[r]}" 2>/dev/null
            bad=1
        fi
        wait "${rank_pids[r]}"
        st=$?
        if ((st != 0)); then
            echo "  rank $r exited with $st$( ((st == 124)) && echo ' (its timeout)')"
            bad=1
        fi
    done
    rank_pids=()
    return $bad
}

# verified PREFIX MODE: every rank printed "MODE ok" and no rank wrong data
verified() {
    local r bad=0
    for ((r = 0; r < N; r++)); do
        if ! grep -q "^rank $r: $2 ok\$" "$dir/$1$r.log"; then
            echo "  rank $r: no \"$2 ok\""
            bad=1
        fi
    done
    # wrong data: exchange_check says "..., expected 0x..." or "... changed from 0xa5 ..."
    if grep -Eh "FAILED|expected 0x|changed from|[Mm]ismatch|MISMATCH|[Cc]orrupt" "$dir/$1"*.log |
        head -5 | sed 's/^/  /' | grep .; then
        bad=1
    fi
    return $bad
}

services_alive() {
    local s
    for s in "${!pid[@]}"; do
        kill -0 "${pid[$s]}" 2>/dev/null || { echo "  $s is not running"; return 1; }
    done
}

# ---- a. random exchanges ----
t=$SECONDS
run_ranks rand 60 random 4242 3
st=0
wait_ranks 70 || st=1
verified rand random || st=1
((st == 0)) || show_logs "rand*"
result a "random exchanges across $K hosts, $N ranks, $((SECONDS - t)) s" $st

# ---- b. big ----
t=$SECONDS
run_ranks big 90 big
st=0
wait_ranks 100 || st=1
verified big big || st=1
((st == 0)) || show_logs "big*"
grep -h "bytes sent+received" "$dir"/big*.log | head -2 | sed 's/^/  /'
result b "big across $K hosts, $((SECONDS - t)) s" $st

# first_error LOG [SKIP]: the first failed operation's line in a loop log, after line SKIP
first_error() { tail -n +$((${2:-0} + 1)) "$1" | grep -m1 -E ": loop: operation [0-9]+ \([0-9]+ ms\): "; }

# mark PREFIX: lines[r] = lines in rank r's log now; says which ranks failed before
declare -a lines
mark() {
    local r
    for ((r = 0; r < N; r++)); do
        lines[r]=$(wc -l <"$dir/$1$r.log")
        first_error "$dir/$1$r.log" >/dev/null && echo "  note: rank $r had failed operations before that: $(first_error "$dir/$1$r.log" | cut -c1-200)"
    done
}

# ---- c. host 4's link cut during a loop run ----
t=$SECONDS
st=0
services_alive || st=1
t_ranks=$(now_ms)
run_ranks cut 90 loop 14
nap 3
for ((r = 0; r < N; r++)); do
    kill -0 "${rank_pids[r]}" 2>/dev/null || { echo "  rank $r ended before the cut"; st=1; }
done
mark cut
t_cut=$(now_ms)
"$hosts" cut "$P" 4 || st=1
echo "  cut host 4's link at $((SECONDS - t)) s"
declare -A seen=()
healed=0
while :; do
    el=$(($(now_ms) - t_cut))
    for ((r = 0; r < N; r++)); do
        [ -n "${seen[$r]:-}" ] && continue
        first_error "$dir/cut$r.log" "${lines[r]}" >/dev/null && seen[$r]=$el
    done
    if ((!healed && el >= 4000)); then
        "$hosts" heal "$P" 4 || st=1
        t_heal=$(now_ms)
        healed=1
        echo "  healed host 4's link after $el ms"
    fi
    ((healed && (${#seen[@]} == N || el >= 10000))) && break
    sleep 0.1
done
for ((r = 0; r < N; r++)); do
    k=$(host_of "$r")
    if [ -n "${seen[$r]:-}" ]; then
        echo "  rank $r (host $k): first error ${seen[$r]} ms after the cut: $(first_error "$dir/cut$r.log" "${lines[r]}" | sed 's/^rank [0-9]*: loop: //' | cut -c1-200)"
        if ((k != 4 && seen[$r] > CUT_DETECT_BOUND * 1000)); then
            echo "  rank $r: that is later than $CUT_DETECT_BOUND s"
            st=1
        fi
    elif ((k != 4)); then
        echo "  rank $r (host $k): no error within 10 s of the cut"
        st=1
    else
        echo "  rank $r (host $k): no error seen"
    fi
done
wait_ranks 90 || st=1
verified cut loop || st=1
other=$(grep -hE ": loop: operation [0-9]+ " "$dir"/cut*.log | grep -vE "\): (UNAVAILABLE|DEADLINE_EXCEEDED): ")
if [ -n "$other" ]; then
    echo "  errors other than UNAVAILABLE and DEADLINE_EXCEEDED:"
    echo "$other" | head -5 | sed 's/^/  /'
    st=1
fi
# the ranks' times count from their start, about t_ranks
for ((r = 0; r < N; r++)); do
    last=$(grep -E ": loop: operation [0-9]+ \([0-9]+ ms\): " "$dir/cut$r.log" | tail -1 | sed -E 's/.*operation [0-9]+ \(([0-9]+) ms\).*/\1/')
    [ -n "$last" ] && echo "  rank $r: last failed operation ended ~$((last - (t_heal - t_ranks))) ms after the heal"
done
grep -h "operations verified" "$dir"/cut*.log | sed 's/^/  /'
((st == 0)) || show_logs "cut*"
((st == 0)) || show_logs "host*"
result c "host 4's link cut for 4 s during a loop run, $((SECONDS - t)) s" $st

# ---- d. host 3's worker killed and restarted ----
t=$SECONDS
st=0
services_alive || st=1
run_ranks kill 90 loop 12
nap 3
for ((r = 0; r < N; r++)); do
    kill -0 "${rank_pids[r]}" 2>/dev/null || { echo "  rank $r ended before the kill"; st=1; }
done
mark kill
t_kill=$(now_ms)
kill -9 "${pid[host3]}"
wait "${pid[host3]}" 2>/dev/null
echo "  killed worker host3 (pid ${pid[host3]}) at $((SECONDS - t)) s"
unset 'pid[host3]'
seen=()
restarted=0
while :; do
    el=$(($(now_ms) - t_kill))
    for ((r = 0; r < N; r++)); do
        [ -n "${seen[$r]:-}" ] && continue
        tail -n +$((lines[r] + 1)) "$dir/kill$r.log" | grep -qE "UNAVAILABLE.*host3" && seen[$r]=$el
    done
    if ((!restarted && el >= 2000)); then
        mv "$dir/host3.log" "$dir/host3-killed.log"
        start_worker 3
        wait_listening host3 "$dir/host3.log" || { echo "  worker host3 did not restart"; st=1; }
        restarted=1
        echo "  restarted worker host3 $(($(now_ms) - t_kill)) ms after the kill"
    fi
    ((restarted && (${#seen[@]} == N || el >= 10000))) && break
    sleep 0.1
done
for ((r = 0; r < N; r++)); do
    k=$(host_of "$r")
    if [ -n "${seen[$r]:-}" ]; then
        echo "  rank $r (host $k): UNAVAILABLE naming host3 ${seen[$r]} ms after the kill: $(tail -n +$((lines[r] + 1)) "$dir/kill$r.log" | grep -m1 -E "UNAVAILABLE.*host3" | sed 's/^rank [0-9]*: loop: //' | cut -c1-200)"
    elif ((k != 3)); then
        echo "  rank $r (host $k): no UNAVAILABLE naming host3 within 10 s of the kill"
        st=1
    else
        echo "  rank $r (host $k, its worker killed): $(first_error "$dir/kill$r.log" "${lines[r]}" | sed 's/^rank [0-9]*: loop: //' | cut -c1-200)"
    fi
done
wait_ranks 90 || st=1
verified kill loop || st=1
grep -h "operations verified" "$dir"/kill*.log | sed 's/^/  /'
((st == 0)) || show_logs "kill*"
((st == 0)) || show_logs "host*"
result d "host 3's worker killed and restarted during a loop run, $((SECONDS - t)) s" $st

services_alive || failed=$((failed + 1))
echo "$passed passed, $failed failed ($((SECONDS - t_start)) s)"
((failed == 0))
