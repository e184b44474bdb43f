#!/usr/bin/env bash
# campaign.sh - a fault campaign: a cluster whose every rank loops verified
# exchanges while random faults are injected one after another.
#
# usage: campaign.sh A2A_COORDINATOR A2A_WORKER SEQCHECK PREAUTH_CHECK
# env:
#   CAMPAIGN_FAULTS   how many faults (default 50)
#   CAMPAIGN_SEED     the seed of bash's RANDOM: the same seed gives the same
#                     sequence of faults and arguments (default: from the clock,
#                     printed first)
#   CAMPAIGN_MODE     loopback (default) or netns: 3 emulated hosts
#                     (tests/netns/hosts.sh; needs root and ip netns), which adds
#                     two kinds of fault: a host's link cut at the switch for
#                     0.5-5 s, and its rate dropped to 1 Mbit/s (tc tbf) for 1-5 s
#   CAMPAIGN_TIMEOUT_MS  timeout_ms of every call (default 3000)
#   CAMPAIGN_LATE_MS  a call returning later than its deadline plus this is
#                     late (default 500, README "Never late"); counted and
#                     reported, the worst lateness printed; a late call whose
#                     own worker was not SIGSTOPped while it ran fails the
#                     campaign (CAMPAIGN_LATE_FATAL=0: reported only)
#   CAMPAIGN_HANG_MS  a call not returned after its deadline plus this is a hang
#                     (default 5000): FAIL; the job is then killed and restarted
#   CAMPAIGN_GAP_MS   the longest pause between two faults (default 1000; each
#                     pause is random in 0..GAP)
#   CAMPAIGN_STUCK_FATAL  1 (default): a stuck group or no recovery fails the run; 0 reports it
#   CAMPAIGN_RECOVERY_S  after the last fault, how long a round OK on every rank
#                     may take to come (default 30)
#   CAMPAIGN_KINDS    the kinds of fault to draw from (default: all of the mode)
#   KEEP_DIR=1        keep the logs (also kept, and said so, on failure)
#
# The cluster: a coordinator and 3 workers (w1, w2, w3) of 2 ranks each, with
# security.token_file; group "camp" = world ranks [0 2 4 1 3 5]. Every rank
# runs "seqcheck lockstep" (tests/integration/seqcheck.c): the ranks meet at a
# barrier of files before every call, the round number is the call index, and
# element k of the slice S sends to D in round I is MAGIC ^ (I<<40 | S<<28 |
# D<<16 | k), checked on receipt with a guard after every slice: data of
# another operation, another sender or receiver is caught, not only corrupt
# bytes. A restarted job joins the current round.
#
# The kinds of fault, drawn uniformly:
#   worker_kill   kill -9 of a worker, restarted after 0-2 s
#   coord_kill    kill -9 of the coordinator, restarted after 0-2 s
#   job_kill      kill -9 of a rank's job, restarted by the campaign after 0-1 s
#   worker_stop   SIGSTOP of a worker for 0.3-5 s, then SIGCONT
#   bytes         64 KiB of random bytes, and a valid-looking SP greeting then
#                 garbage, at one port (coordinator, a worker's API or data port)
#   slow          4-16 connections at one port sending a byte every 0.3 s for
#                 1-4 s (a data port: preauth_check link-slowloris, 8 connections)
#   link_cut      (netns) a host's link cut for 0.5-5 s
#   rate          (netns) a host's link at 1 Mbit/s for 1-5 s
#
# When no round was OK on every rank for CAMPAIGN_STUCK_S (default 30) seconds
# after a fault, the group is stuck: that is a FAIL, the logs are kept in
# stuck.N/, and every job and service is started again so that the campaign goes
# on.
#
# Report: faults by kind, calls and rounds (operations) completed, errors by
# status, late errors and the worst lateness past the deadline, hangs, wrong
# data, services that died without being killed, and recovery after the last
# fault (rounds from the first round started after it ended to the first round
# OK on every rank). Exit 1 on any wrong data, hang, unexpected death, late
# call of a rank whose worker was not stopped (CAMPAIGN_LATE_FATAL), stuck
# group or no recovery; 2 on bad usage or a cluster that does not start.
set -u
coord_bin=$1 worker_bin=$2 seqcheck=$3 pre=$4
NFAULTS=${CAMPAIGN_FAULTS:-50}
SEED=${CAMPAIGN_SEED:-$(($(date +%s%N) % 32768))}
MODE=${CAMPAIGN_MODE:-loopback}
TMO=${CAMPAIGN_TIMEOUT_MS:-3000}
LATE=${CAMPAIGN_LATE_MS:-500}
HANG=${CAMPAIGN_HANG_MS:-5000}
GAP=${CAMPAIGN_GAP_MS:-1000}
RECOVERY_S=${CAMPAIGN_RECOVERY_S:-30}
RANDOM=$SEED
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
hosts=$here/../netns/hosts.sh
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-campaign.XXXXXX")
cfg=$dir/cluster.yaml
token=$dir/token
declare -A pid=()   # service -> pid
declare -A down=()  # service -> 1 while the campaign holds it killed
rank_pids=()
WORKERS=(w1 w2 w3)
RANKS=(0 1 2 3 4 5)
members=0,2,4,1,3,5
P=a2ac$$
nap_pid=
# shellcheck source=services.sh
. "$here/services.sh"

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
log() { echo "$(date -u +%T.%3N) $*" | tee -a "$dir/campaign.log"; }

cleanup() {
    trap '' INT TERM
    exec 2>/dev/null
    touch "$dir/barrier/stop" 2>/dev/null
    local p
    for p in "${pid[@]}"; do kill -CONT "$p" 2>/dev/null; done
    for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
    for p in "${rank_pids[@]}" "${pid[@]}" $nap_pid; do kill -9 "$p" 2>/dev/null; done
    [ "$MODE" = netns ] && "$hosts" down "$P"
    { wait; } 2>/dev/null
    if [ -n "${KEEP_DIR:-}" ] || ((${keep:-0})); then echo "kept $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM
export A2A_LOG_LEVEL=${A2A_LOG_LEVEL:-info}
unset A2A_TLS_CERT A2A_TLS_KEY A2A_TLS_CA

# ---- where things run ----
declare -a addr
if [ "$MODE" = netns ]; then
    if [ "$(id -u)" != 0 ] || ! ip netns add "$P-probe" 2>/dev/null; then
        echo "SKIP: the netns mode needs root and ip netns"
        exit 0
    fi
    ip netns del "$P-probe"
    "$hosts" up "$P" 3 >/dev/null || { echo "could not create the hosts"; exit 2; }
    for k in 1 2 3; do addr[k]=$("$hosts" ip "$P" "$k"); done
    KINDS=${CAMPAIGN_KINDS:-worker_kill coord_kill job_kill worker_stop bytes slow link_cut rate}
elif [ "$MODE" = loopback ]; then
    KINDS=${CAMPAIGN_KINDS:-worker_kill coord_kill job_kill worker_stop bytes slow}
else
    echo "CAMPAIGN_MODE: loopback or netns, not $MODE"
    exit 2
fi
read -r -a kinds <<<"$KINDS"

# host_of SERVICE: the host (1-3) it runs on: coordinator on 1, wK on K.
host_of() { case $1 in coordinator) echo 1 ;; w*) echo "${1#w}" ;; esac; }
# on HOST: sets the array "on" to the prefix that runs a command on HOST (netns: inside
# the host's namespace, with the same pid; loopback: nothing), so that $! is the command's pid.
on() {
    on=()
    [ "$MODE" = netns ] && on=("$hosts" exec "$P" "$1")
    return 0
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# below the kernel's ephemeral range: an outgoing connection (a worker's, or any other
# process's) can then never hold the port of a service that is restarting ("Address already in
# use", seen with ports above 32768), nor a dial to a dead port connect to itself
eph_low=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
((eph_low > 21000)) || eph_low=32768
pick_ports() {
    local base=$((20000 + ($$ * 13 + $1 * 101 + RANDOM) % (eph_low - 20500))) p
    ports=()
    for ((p = base; ${#ports[@]} < 7 && p < eph_low; p++)); do
        port_busy "$p" || ports+=("$p")
    done
}
# host:port of each endpoint
ep_coord() { if [ "$MODE" = netns ]; then echo "${addr[1]}:7000"; else echo "127.0.0.1:${ports[0]}"; fi; }
ep_api() { if [ "$MODE" = netns ]; then echo "${addr[$1]}:7100"; else echo "127.0.0.1:${ports[2 * $1 - 1]}"; fi; }
ep_data() { if [ "$MODE" = netns ]; then echo "${addr[$1]}:7101"; else echo "127.0.0.1:${ports[2 * $1]}"; fi; }

write_config() {
    {
        echo "coordinator:"
        echo "  url: tcp://$(ep_coord)"
        echo "workers:"
        for k in 1 2 3; do
            echo "  - name: w$k"
            echo "    url: tcp://$(ep_api $k)"
            echo "    data_url: tcp://$(ep_data $k)"
            echo "    socket: $dir/w$k.sock"
            echo "    ranks: 2"
        done
        echo "groups:"
        echo "  - name: camp"
        echo "    ranks: [$members]"
        echo "security:"
        echo "  token_file: $token"
    } >"$cfg"
}

start_service() { # NAME
    local k
    k=$(host_of "$1")
    on "$k"
    if [ "$1" = coordinator ]; then
        start "$1" "$dir/$1.log" "${on[@]}" "$coord_bin" --config "$cfg"
    else
        start "$1" "$dir/$1.log" "${on[@]}" "$worker_bin" --config "$cfg" --name "$1"
    fi
}
# up NAME: waits until NAME's log says "listening on" once more than before its start
up() {
    local i want=$(($(grep -c "listening on" "$dir/$1.log" 2>/dev/null) + 1))
    [ -n "${2:-}" ] && want=$2
    for ((i = 0; i < 400; i++)); do
        (($(grep -c "listening on" "$dir/$1.log" 2>/dev/null) >= want)) && return 0
        kill -0 "${pid[$1]}" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}
restart_service() { # NAME
    local before
    before=$(grep -c "listening on" "$dir/$1.log" 2>/dev/null)
    echo "==== restarted by the campaign at $(date -u +%T.%3N)" >>"$dir/$1.log"
    start_service "$1"
    up "$1" $((before + 1))
}

start_rank() { # R
    local r=$1 w
    w=$((r / 2 + 1))
    on "$w"
    A2A_WORKER_URL="tcp://$(ep_api $w)" A2A_RANK=$r A2A_TOKEN_FILE=$token \
        "${on[@]}" "$seqcheck" --group camp --members "$members" --timeout "$TMO" --count 8 \
        --pause 10 --announce 1 lockstep "$dir/barrier" 100000 >>"$dir/rank.$r.log" 2>&1 &
    rank_pids[r]=$!
}

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$token"
chmod 600 "$token"
started=0
for ((attempt = 0; attempt < 5 && !started; attempt++)); do
    [ "$MODE" = loopback ] && pick_ports "$attempt"
    write_config
    rm -f "$dir"/*.log
    start_service coordinator
    if up coordinator 1; then
        started=1
        for w in "${WORKERS[@]}"; do start_service "$w"; done
        for w in "${WORKERS[@]}"; do up "$w" 1 || started=0; done
    fi
    if ((!started)); then
        for p in "${pid[@]}"; do kill -9 "$p" 2>/dev/null; done
        wait 2>/dev/null
        pid=()
        [ "$MODE" = netns ] && break
    fi
done
if ((!started)); then
    keep=1
    echo "FAIL: the cluster did not start"
    show_logs 20
    exit 2
fi
log "campaign: seed $SEED, mode $MODE, $NFAULTS faults of kinds [$KINDS], timeout $TMO ms, late past +$LATE ms, hang past +$HANG ms; coordinator $(ep_coord), workers $(ep_api 1) $(ep_api 2) $(ep_api 3); logs in $dir"
mkdir -p "$dir/barrier"
touch "$dir/barrier/start"
for r in "${RANKS[@]}"; do start_rank "$r"; done

# ---- the watchdog, run while the campaign waits ----
hangs=0 deaths=0 open_fails=0
declare -A hung=() # rank -> the round reported hung
# check: every running job's open call (its last line "begin") younger than
# TMO + HANG; every service the campaign has not killed alive.
check() {
    local r line t s w now
    now=$(now_ms)
    for r in "${RANKS[@]}"; do
        [ -n "${down[$r]:-}" ] && continue
        line=$(tail -n 1 "$dir/rank.$r.log" 2>/dev/null)
        # a line being written is not read: it may be torn ("start=179630271" of a
        # 13-digit time read mid-write made a false hang of a call that returned at once)
        [ "$(tail -c 1 "$dir/rank.$r.log" 2>/dev/null | wc -l)" -eq 1 ] || line=""
        case $line in
        "rank $r round "*" begin start="*)
            t=${line##*start=}
            [[ $t =~ ^[0-9]{13}$ ]] || t=$now
            if ((now - t > TMO + HANG)) && [ "${hung[$r]:-}" != "$line" ]; then
                hung[$r]=$line
                hangs=$((hangs + 1))
                log "HANG: rank $r: ${line#rank $r }: not returned after $((now - t)) ms (timeout $TMO); stacks in $dir/hang.$hangs.txt; the job is killed and restarted"
                {
                    for s in "${!pid[@]}"; do
                        echo "==== $s (pid ${pid[$s]})"
                        gdb -p "${pid[$s]}" -batch -ex "thread apply all bt" 2>/dev/null | grep -E "^#|^Thread"
                    done
                    echo "==== rank $r's job (pid ${rank_pids[r]})"
                    gdb -p "${rank_pids[r]}" -batch -ex "thread apply all bt" 2>/dev/null | grep -E "^#|^Thread"
                } >"$dir/hang.$hangs.txt" 2>&1
                kill -9 "${rank_pids[r]}" 2>/dev/null
                wait "${rank_pids[r]}" 2>/dev/null
                start_rank "$r"
            fi
            ;;
        esac
        if ! kill -0 "${rank_pids[r]}" 2>/dev/null; then
            wait "${rank_pids[r]}" 2>/dev/null
            s=$?
            line=$(tail -n 1 "$dir/rank.$r.log")
            if [ "$s" = 1 ] && [[ $line == "rank $r open status=UNAVAILABLE"* ]]; then
                # seqcheck ends when a2a_job_open fails: its worker was down as it started
                open_fails=$((open_fails + 1))
                log "open failed: rank $r's job: ${line:0:200}; started again"
            else
                deaths=$((deaths + 1))
                log "DIED: rank $r's job ended by itself (status $s): ${line:0:200}; restarted"
            fi
            start_rank "$r"
        fi
    done
    for s in coordinator "${WORKERS[@]}"; do
        [ -n "${down[$s]:-}" ] && continue
        if ! kill -0 "${pid[$s]}" 2>/dev/null; then
            deaths=$((deaths + 1))
            log "DIED: $s ended without being killed: $(tail -n 3 "$dir/$s.log" | tr '\n' '|' | cut -c1-300); restarted"
            restart_service "$s" || log "DIED: $s did not restart"
        fi
    done
}
# nap MS: waits MS milliseconds, checking every 200 ms
nap() {
    local end=$(($(now_ms) + $1)) left
    while :; do
        left=$((end - $(now_ms)))
        ((left <= 0)) && break
        ((left > 200)) && left=200
        sleep "$(printf '0.%03d' "$left")"
        check
    done
}
# rnd MIN MAX: R = a random number in MIN..MAX (in this shell, not a $(...) subshell, so that
# the seed gives the same sequence)
rnd() { R=$((RANDOM % ($2 - $1 + 1) + $1)); }

# ---- the faults ----
f_worker_kill() {
    local w=${WORKERS[RANDOM % 3]} ms
    rnd 0 2000; ms=$R
    log "fault $fi: worker_kill $w, restarted after $ms ms"
    down[$w]=1
    kill -9 "${pid[$w]}"
    wait "${pid[$w]}" 2>/dev/null
    nap "$ms"
    restart_service "$w" || log "FAULT TOOL: $w did not come back"
    unset "down[$w]"
}
f_coord_kill() {
    local ms
    rnd 0 2000; ms=$R
    log "fault $fi: coord_kill, restarted after $ms ms"
    down[coordinator]=1
    kill -9 "${pid[coordinator]}"
    wait "${pid[coordinator]}" 2>/dev/null
    nap "$ms"
    restart_service coordinator || log "FAULT TOOL: the coordinator did not come back"
    unset "down[coordinator]"
}
f_job_kill() {
    local r=${RANKS[RANDOM % 6]} ms
    rnd 0 1000; ms=$R
    log "fault $fi: job_kill rank $r, restarted after $ms ms"
    down[$r]=1
    kill -9 "${rank_pids[r]}"
    wait "${rank_pids[r]}" 2>/dev/null
    echo "==== killed by the campaign (fault $fi)" >>"$dir/rank.$r.log"
    nap "$ms"
    start_rank "$r"
    unset "down[$r]"
}
f_worker_stop() {
    local w=${WORKERS[RANDOM % 3]} ms
    rnd 300 5000; ms=$R
    log "fault $fi: worker_stop $w for $ms ms"
    local t0
    t0=$(now_ms)
    kill -STOP "${pid[$w]}"
    nap "$ms"
    kill -CONT "${pid[$w]}"
    echo "${w#w} $t0 $(now_ms)" >>"$dir/stops" # for the report: whose worker was stopped when
}
# pick_endpoint: k hp what = a random endpoint: its host, host:port, and what it is
pick_endpoint() {
    local e
    rnd 1 3; k=$R
    e=$((RANDOM % 7))
    case $e in
    0) k=1 hp=$(ep_coord) what=coordinator ;;
    1 | 2 | 3) hp=$(ep_api "$k") what=w$k-api ;;
    *) hp=$(ep_data "$k") what=w$k-data ;;
    esac
}
f_bytes() {
    local k hp what
    pick_endpoint
    log "fault $fi: bytes at $what ($hp)"
    # from host k's namespace in netns mode, a neighbour then
    on "$k"
    "${on[@]}" bash -c '
        head -c 65536 /dev/urandom >"/dev/tcp/${1%:*}/${1#*:}" 2>/dev/null
        { printf "\x00SP\x00\x00\x10\x00\x00"; head -c 4096 /dev/urandom; } >"/dev/tcp/${1%:*}/${1#*:}" 2>/dev/null
        exit 0' _ "$hp" &
    local bp=$!
    nap 300
    kill -9 "$bp" 2>/dev/null
    wait "$bp" 2>/dev/null
}
f_slow() {
    local k hp what ms n
    pick_endpoint
    rnd 1000 4000; ms=$R
    rnd 4 16; n=$R
    if [[ $what == *-data ]] && [ "$MODE" = loopback ] && ((RANDOM % 2)); then
        log "fault $fi: slow: preauth_check link-slowloris at $what ($hp), 8 connections, $((ms / 1000 + 1)) s"
        on "$k"
        "${on[@]}" "$pre" link-slowloris "tcp://$hp" $((ms / 1000 + 1)) 8 2 >>"$dir/slowloris.log" 2>&1 &
    else
        log "fault $fi: slow: $n connections at $what ($hp), a byte every 0.3 s for $ms ms"
        on "$k"
        "${on[@]}" bash -c '
            for ((i = 0; i < $2; i++)); do
                ( exec 3<>"/dev/tcp/${1%:*}/${1#*:}" || exit 0
                  end=$((SECONDS + $3 / 1000 + 1))
                  while ((SECONDS < end)); do printf "\x00" >&3 || exit 0; sleep 0.3; done ) 2>/dev/null &
            done
            wait' _ "$hp" "$n" "$ms" &
    fi
    local sp=$!
    nap $((ms + 1500)) # the connections end by themselves after ms + 1 s
    kill -9 "$sp" 2>/dev/null
    wait "$sp" 2>/dev/null
}
f_link_cut() {
    local k ms
    rnd 1 3; k=$R
    rnd 500 5000; ms=$R
    log "fault $fi: link_cut host $k for $ms ms"
    "$hosts" cut "$P" "$k"
    nap "$ms"
    "$hosts" heal "$P" "$k"
}
f_rate() {
    local k ms
    rnd 1 3; k=$R
    rnd 1000 5000; ms=$R
    log "fault $fi: rate host $k at 1 Mbit/s for $ms ms"
    ip netns exec "$P-sw" tc qdisc replace dev "h$k" root tbf rate 1mbit burst 32kb latency 400ms
    ip netns exec "$P-h$k" tc qdisc replace dev eth0 root tbf rate 1mbit burst 32kb latency 400ms
    nap "$ms"
    ip netns exec "$P-sw" tc qdisc del dev "h$k" root 2>/dev/null
    ip netns exec "$P-h$k" tc qdisc del dev eth0 root 2>/dev/null
}

# rounds_ok_after T: "R0 OKROUND N": over the rounds every rank started at or after T (Unix
# ms), the first one (R0), the first one OK on every rank (OKROUND, -1: none) and how many.
rounds_ok_after() {
    awk -v heal="$1" -v nranks=${#RANKS[@]} '
        $3 == "round" && $5 ~ /^status=/ {
            r = $4; s = $8; sub("start=", "", s)
            seen[r]++
            if (!(r in rmin) || s + 0 < rmin[r]) rmin[r] = s + 0
            if ($5 == "status=OK" && $6 == "data=ok") good[r]++
            if (r > maxr) maxr = r
        }
        END {
            r0 = -1; okr = -1; n = 0
            for (r = 0; r <= maxr; r++) {
                if (!(r in rmin) || rmin[r] < heal) continue
                if (r0 < 0) r0 = r
                n++
                if (okr < 0 && seen[r] == nranks && good[r] == nranks) okr = r
            }
            print r0, okr, n
        }' "$dir"/rank.*.log
}

# ---- the campaign ----
t_begin=$(now_ms)
nap 3000
read -r r0 okr n <<<"$(rounds_ok_after "$t_begin")"
if ((okr < 0)); then
    keep=1
    echo "FAIL: no round OK on every rank in the 3 s before the first fault"
    show_logs 20
    exit 1
fi
# last_all_ok: sets LAST_OK to the end (Unix ms) of the newest round OK on every rank (not
# in a $(...) subshell: it keeps where it stopped reading, in off). The OK lines of the
# ranks' logs are copied to ok.lines as the logs grow (whole lines, from where the last look
# ended), so that a flood of fast failing rounds does not hide the last good one.
declare -A off=()
last_all_ok() {
    local f sz o part
    for f in "$dir"/rank.*.log; do
        sz=$(stat -c %s "$f")
        o=${off[$f]:-0}
        ((sz > o)) || continue
        tail -c +$((o + 1)) "$f" | head -c $((sz - o)) >"$dir/.chunk"
        part=0
        [ -n "$(tail -c 1 "$dir/.chunk")" ] && part=$(tail -n 1 "$dir/.chunk" | wc -c)
        head -c $((sz - o - part)) "$dir/.chunk" | grep " status=OK data=ok" >>"$dir/ok.lines"
        off[$f]=$((sz - part))
    done
    LAST_OK=$(tail -n 6000 "$dir/ok.lines" 2>/dev/null | awk '
        $3 == "round" { e = $9; sub("end=", "", e); n[$4]++; if (e + 0 > end[$4]) end[$4] = e + 0 }
        END { for (r in n) if (n[r] == 6 && end[r] > m) m = end[r]; printf "%.0f\n", m }')
}
# unstick: when no round was OK on every rank for STUCK_S, the group is stuck (FAIL): the logs
# of that moment are kept, and every job and service is killed and started again, so that the
# campaign goes on and judges the next faults alone.
STUCK_S=${CAMPAIGN_STUCK_S:-30}
stuck=0 resumed=$(now_ms)
unstick() {
    local t s r
    last_all_ok
    t=$LAST_OK
    ((t < resumed)) && t=$resumed
    (($(now_ms) - t < STUCK_S * 1000)) && return 0
    stuck=$((stuck + 1))
    log "STUCK: no round OK on every rank for $(((($(now_ms) - t)) / 1000)) s (since fault $fi or before); logs in $dir/stuck.$stuck; every job and service is restarted"
    mkdir -p "$dir/stuck.$stuck"
    cp "$dir"/*.log "$dir/stuck.$stuck/"
    for r in "${RANKS[@]}"; do down[$r]=1; kill -9 "${rank_pids[r]}" 2>/dev/null; wait "${rank_pids[r]}" 2>/dev/null; done
    for s in coordinator "${WORKERS[@]}"; do
        down[$s]=1
        kill -CONT "${pid[$s]}" 2>/dev/null
        kill -9 "${pid[$s]}" 2>/dev/null
        wait "${pid[$s]}" 2>/dev/null
    done
    for s in coordinator "${WORKERS[@]}"; do
        restart_service "$s" || log "FAULT TOOL: $s did not come back"
        unset "down[$s]"
    done
    for r in "${RANKS[@]}"; do
        echo "==== restarted by the campaign (stuck $stuck)" >>"$dir/rank.$r.log"
        start_rank "$r"
        unset "down[$r]"
    done
    resumed=$(now_ms)
}

declare -A by_kind=()
for ((fi = 1; fi <= NFAULTS; fi++)); do
    kind=${kinds[RANDOM % ${#kinds[@]}]}
    by_kind[$kind]=$((${by_kind[$kind]:-0} + 1))
    "f_$kind"
    rnd 0 "$GAP"
    nap "$R"
    unstick
done
t_last=$(now_ms)
log "the last fault ended; waiting up to $RECOVERY_S s for a round OK on every rank"
rec=-1
for ((i = 0; i < RECOVERY_S * 5; i++)); do
    read -r r0 okr n <<<"$(rounds_ok_after "$t_last")"
    if ((okr >= 0)); then
        rec=$((okr - r0))
        break
    fi
    nap 200
done
nap 1000
t_end=$(now_ms)
touch "$dir/barrier/stop"
for r in "${RANKS[@]}"; do
    end=$((SECONDS + (TMO + HANG) / 1000 + 5))
    while kill -0 "${rank_pids[r]}" 2>/dev/null && ((SECONDS < end)); do sleep 0.1; done
    if kill -0 "${rank_pids[r]}" 2>/dev/null; then
        hangs=$((hangs + 1))
        log "HANG: rank $r's job did not stop at the end: $(tail -n 1 "$dir/rank.$r.log" | cut -c1-200)"
        kill -9 "${rank_pids[r]}" 2>/dev/null
    fi
    wait "${rank_pids[r]}" 2>/dev/null
done

# ---- the report ----
L=("$dir"/rank.*.log)
calls=$(grep -h " round .* status=" "${L[@]}" | wc -l)
okc=$(grep -h " status=OK data=ok" "${L[@]}" | wc -l)
wrong=$(grep -h " data=wrong" "${L[@]}" | wc -l)
ops=$(awk '$3 == "round" && $5 == "status=OK" && $6 == "data=ok" { g[$4]++ } END { for (r in g) if (g[r] == 6) n++; print n + 0 }' "${L[@]}")
rounds=$(awk '$3 == "round" && $5 ~ /^status=/ { g[$4] = 1 } END { print length(g) }' "${L[@]}")
# lateness of every failed call past its deadline; late ones over LATE; the same for the calls
# of ranks whose own worker was not SIGSTOPped while they ran (those cannot answer before SIGCONT)
touch "$dir/stops"
read -r late worst late_run worst_run worst_line <<<"$(awk -v tmo="$TMO" -v late="$LATE" '
    FILENAME ~ /stops$/ { ns++; sw[ns] = $1; sa[ns] = $2; sb[ns] = $3; next }
    $3 == "round" && $5 ~ /^status=/ && $5 != "status=OK" {
        ms = $7; sub("ms=", "", ms); over = ms - tmo
        s = $8; sub("start=", "", s); e = $9; sub("end=", "", e)
        w = int($2 / 2) + 1; stopped = 0
        for (i = 1; i <= ns; i++) if (sw[i] == w && sa[i] < e + 0 && sb[i] > s + 0) stopped = 1
        if (over > late) n++
        if (over > worst) worst = over
        if (!stopped) {
            if (over > late) nr++
            if (over > worstr) { worstr = over; line = $0 }
        }
    }
    END { gsub(" ", "_", line); printf "%d %d %d %d %s\n", n, worst + 0, nr, worstr + 0, substr(line, 1, 240) }' \
    "$dir/stops" "${L[@]}")"
okmax=$(awk '$5 == "status=OK" { ms = $7; sub("ms=", "", ms); if (ms + 0 > m) m = ms + 0 } END { print m + 0 }' "${L[@]}")
blame=$(grep -h " status=INVALID_ARGUMENT" "${L[@]}" | wc -l)
echo
echo "==== campaign report (seed $SEED, mode $MODE, $(((t_end - t_begin) / 1000)) s)"
kinds_line=""
for k in "${kinds[@]}"; do kinds_line+=" $k=${by_kind[$k]:-0}"; done
echo "faults: $NFAULTS:$kinds_line"
echo "calls: $calls ($okc OK and verified), rounds: $rounds ($ops OK on all 6 ranks)"
echo "errors by status: $(grep -ho " status=[A-Z_]*" "${L[@]}" | grep -v "=OK$" | sort | uniq -c | awk '{printf "%s%s=%d", (NR > 1 ? " " : ""), substr($2, 8), $1}')"
echo "wrong data in an OK call: $wrong"
echo "hangs (not returned by deadline + $HANG ms): $hangs"
echo "late errors (past deadline + $LATE ms): $late; worst error latency past the deadline: $worst ms; slowest OK call: $okmax ms"
echo "  of calls whose own worker was not SIGSTOPped while they ran: $late_run late, worst $worst_run ms past the deadline"
[ "$worst_run" -gt 0 ] && echo "  the latest of those: ${worst_line//_/ }"
echo "INVALID_ARGUMENT for valid calls: $blame"
echo "services or jobs that died without being killed: $deaths"
echo "jobs whose a2a_job_open failed with UNAVAILABLE (their worker down as they started; started again): $open_fails"
echo "stuck (no round OK on every rank for $STUCK_S s; everything restarted): $stuck"
[ -f "$dir/slowloris.log" ] && echo "preauth_check link-slowloris runs that found a fault: $(grep -c "FAIL" "$dir/slowloris.log")"
if ((rec >= 0)); then
    echo "recovery after the last fault: round $okr OK on every rank, $rec failed rounds before it (first round after the fault: $r0)"
else
    echo "recovery after the last fault: NONE in $RECOVERY_S s ($n rounds started)"
fi
bad=0
((wrong > 0)) && { bad=1; echo "FAIL: wrong data:"; grep -h " data=wrong" "${L[@]}" | head -5 | cut -c1-400; }
((hangs > 0)) && { bad=1; echo "FAIL: $hangs hangs:"; grep -h "HANG" "$dir/campaign.log" | head -5; }
((deaths > 0)) && { bad=1; echo "FAIL: $deaths unexpected deaths:"; grep -h "DIED" "$dir/campaign.log" | head -5; }
# the bound (README "Never late"): a call whose own worker ran all along returns by its deadline
# plus LATE. CAMPAIGN_LATE_FATAL=0 (ctest, for now): reported, not failed, until the open
# finding (about 1 s late, rarely, after a job restart: docs/RELIABILITY.md) is fixed
if ((late_run > 0)); then
    if [ "${CAMPAIGN_LATE_FATAL:-1}" = 1 ]; then
        bad=1
        echo "FAIL: $late_run calls whose worker was not stopped returned later than their deadline + $LATE ms (worst $worst_run ms past it):"
    else
        echo "KNOWN (not counted, CAMPAIGN_LATE_FATAL=0): $late_run calls whose worker was not stopped returned later than their deadline + $LATE ms (worst $worst_run ms past it):"
    fi
    echo "  ${worst_line//_/ }"
fi
# CAMPAIGN_STUCK_FATAL=0 (ctest, for now): a group that does not recover is reported, not
# failed: lockstep ranks whose members counted different failures stay one operation apart
# (docs/RELIABILITY.md, the open finding; tests/integration/test_resync.sh reproduces it)
if [ "${CAMPAIGN_STUCK_FATAL:-1}" = 1 ]; then
    ((rec < 0)) && { bad=1; echo "FAIL: no recovery after the last fault"; }
    ((stuck > 0)) && { bad=1; echo "FAIL: the group was stuck $stuck times:"; grep -h "STUCK" "$dir/campaign.log" | head -5; }
else
    ((rec < 0)) && echo "KNOWN (not counted, CAMPAIGN_STUCK_FATAL=0): no recovery after the last fault"
    ((stuck > 0)) && echo "KNOWN (not counted, CAMPAIGN_STUCK_FATAL=0): the group was stuck $stuck times"
fi
if ((bad)); then
    keep=1
    cp "$dir/campaign.log" "$dir/faults-seed$SEED.log"
    show_logs 15
    exit 1
fi
echo "PASS"
