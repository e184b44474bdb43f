# cluster.sh - sourced by the fault tests of the exchange engine
# (test_restart_race.sh, test_lockstep.sh, test_trickle.sh, test_flood.sh),
# after services.sh. A cluster by hand: a generated YAML on free loopback
# ports, the real a2a-coordinator and a2a-worker binaries.
#
# The sourcing script sets $dir, $cfg, $coord_bin, $worker_bin, declares
# `declare -A pid=()` and `rank_pids=()`, and defines write_config, which
# writes $cfg from ${ports[@]}; it calls start_cluster NPORTS WORKER...
# (the workers it starts; others of the YAML may be fakes).

# port_busy PORT: something accepts connections on it.
port_busy() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# pick_ports N ATTEMPT: N ports from 20000 + (pid, attempt, random) on which nobody answers,
# below the kernel's ephemeral range (an outgoing connection can then never hold the port of a
# worker that restarts: "Address already in use").
pick_ports() {
    local low want=$1 p base
    low=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    ((low > 21000)) || low=32768
    base=$((20000 + ($$ * 7 + $2 * 101 + RANDOM) % (low - 20500)))
    ports=()
    for ((p = base; ${#ports[@]} < want && p < low; p++)); do
        port_busy "$p" || ports+=("$p")
    done
}

# yaml_worker NAME URL_PORT DATA_PORT RANKS [SOCKET]: one worker's lines in a YAML's workers list
# (on 127.0.0.1; a local socket when SOCKET is given)
yaml_worker() {
    printf '  - name: %s\n    url: tcp://127.0.0.1:%s\n    data_url: tcp://127.0.0.1:%s\n' "$1" "$2" "$3"
    [ -z "${5:-}" ] || printf '    socket: %s\n' "$5"
    printf '    ranks: %s\n' "$4"
}

# two_workers RANKS [GROUP]: writes $cfg: the coordinator and workers w0 and w1 of RANKS ranks
# each on ${ports[0..4]}, sockets in $dir, and, given GROUP, a group of that name of every world
# rank (the YAML most fault tests start from: their write_config calls it).
two_workers() {
    local w
    {
        echo "coordinator:"
        echo "  url: tcp://127.0.0.1:${ports[0]}"
        echo "workers:"
        for w in 0 1; do
            yaml_worker "w$w" "${ports[1 + 2 * w]}" "${ports[2 + 2 * w]}" "$1" "$dir/w$w.sock"
        done
        if [ -n "${2:-}" ]; then
            echo "groups:"
            echo "  - name: $2"
            echo "    ranks: [$(seq -s ', ' 0 $((2 * $1 - 1)))]"
        fi
    } >"$cfg"
}

# serve_start R LOG ARGS...: a job of world rank R, "$seqcheck ARGS serve" (tests/integration/
# seqcheck.c), that lives through the test and makes calls when told (serve); its worker's URL
# from the sourcing script's api R; its pid in serve_pid (the EXIT trap should kill it)
serve_start() {
    local r=$1 log=$2
    shift 2
    mkfifo "$dir/in.$r"
    A2A_WORKER_URL=$(api "$r") A2A_RANK=$r "$seqcheck" "$@" serve <"$dir/in.$r" >"$log" 2>&1 &
    serve_pid=$!
    serve_rank=$r
    serve_log=$log
    serve_ncmd=0
    exec {serve_fd}>"$dir/in.$r" # opens once the job has opened its end
}

# serve_send N: tell the serving job to make N more calls, without waiting for them
serve_send() {
    serve_ncmd=$((serve_ncmd + 1))
    echo "$1" >&"$serve_fd"
}

# serve_wait [S]: 0 when the serving job said "done" for the last serve_send within S s (20)
serve_wait() {
    local end=$((SECONDS + ${1:-20}))
    while ! grep -q "^rank $serve_rank done $serve_ncmd\$" "$serve_log"; do
        ((SECONDS < end)) || return 1
        kill -0 "$serve_pid" 2>/dev/null ||
            fail "rank $serve_rank's serving job died: $(tail -n 5 "$serve_log")"
        sleep 0.02
    done
}

# serve N: the serving job makes N more calls; 0 when it said "done" within 20 s
serve() {
    serve_send "$1"
    serve_wait
}

# serve_stop: end of its input; the serving job ends
serve_stop() {
    exec {serve_fd}>&-
    wait_pid "$serve_pid" 10
    serve_pid=
}

# show_service_logs [LINES]: the last LINES (30) lines of the services' logs (not the jobs').
show_service_logs() {
    local f n=${1:-30}
    for f in "$dir"/coordinator.log "$dir"/node-*.log "$dir"/w[0-9]*.log "$dir"/fake*.log; do
        [ -f "$f" ] || continue
        echo "---- $(basename "$f") (last $n lines)"
        tail -n "$n" "$f"
    done
}

# ok MESSAGE: a check passed (counted in passed, for the script's last line)
passed=0
ok() {
    echo "ok: $*"
    passed=$((passed + 1))
}

# fail MESSAGE: prints FAIL and the services' logs, exits 1 (the EXIT trap cleans up).
fail() {
    echo "FAIL: $*"
    show_service_logs 40
    exit 1
}

# start_worker NAME: (re)starts worker NAME with a fresh $dir/NAME.log (the
# previous one is appended to $dir/NAME.old.log).
start_worker() {
    if [ -f "$dir/$1.log" ]; then
        cat "$dir/$1.log" >>"$dir/$1.old.log"
        rm -f "$dir/$1.log"
    fi
    start "$1" "$dir/$1.log" "$worker_bin" --config "$cfg" --name "$1"
}

# restart_worker NAME: kill -9, reaped, started again with the same command; 1 if it did not come up.
restart_worker() {
    kill -9 "${pid[$1]}" 2>/dev/null
    wait "${pid[$1]}" 2>/dev/null
    start_worker "$1"
    wait_listening "$1" "$dir/$1.log"
}

# start_cluster NPORTS WORKER...: coordinator and the named workers, up to 5 attempts on new ports.
start_cluster() {
    local nports=$1 attempt w ok p
    shift
    for ((attempt = 0; attempt < 5; attempt++)); do
        pick_ports "$nports" "$attempt"
        write_config
        rm -f "$dir/coordinator.log"
        for w in "$@"; do rm -f "$dir/$w.log" "$dir/$w.old.log"; done
        start coordinator "$dir/coordinator.log" "$coord_bin" --config "$cfg"
        ok=0
        if wait_listening coordinator "$dir/coordinator.log"; then
            ok=1
            for w in "$@"; do start_worker "$w"; done
            for w in "$@"; do wait_listening "$w" "$dir/$w.log" || ok=0; done
        fi
        ((ok)) && return 0
        echo "attempt $attempt: the cluster did not start (a port taken?), trying other ports"
        show_service_logs 20
        for p in "${pid[@]}"; do kill -9 "$p" 2>/dev/null; done
        wait 2>/dev/null
        pid=()
    done
    fail "the cluster did not start in 5 attempts"
}

# rss_kib PID: VmRSS of the process in KiB (0 when gone).
rss_kib() {
    awk '/^VmRSS:/ {print $2; found=1} END {if (!found) print 0}' "/proc/$1/status" 2>/dev/null || echo 0
}

# fake_peer_config [YAML...]: writes $cfg for a real worker node-a (world rank 0, ports 1 and 2,
# its socket in $dir) and node-f (world rank 1, ports 3 and 4), which runs no a2a-worker (a
# fakepeer plays it), with group tf = [0, 1] and the YAML lines given after it (more groups).
fake_peer_config() {
    {
        printf 'coordinator:\n  url: tcp://127.0.0.1:%s\nworkers:\n' "${ports[0]}"
        yaml_worker node-a "${ports[1]}" "${ports[2]}" 1 "$dir/node-a.sock"
        yaml_worker node-f "${ports[3]}" "${ports[4]}" 1
        printf 'groups:\n  - name: tf\n    ranks: [0, 1]\n'
    } >"$cfg"
    [ $# -eq 0 ] || printf '%s\n' "$@" >>"$cfg"
}

# fake_trio_config RANKS AB: writes $cfg for real workers node-a and node-b of RANKS ranks each
# (ports 1-4, their sockets in $dir) and node-f of one rank (ports 5 and 6), which runs no
# a2a-worker (a fakepeer plays it), with group ab of the world ranks AB ("0, 2").
fake_trio_config() {
    {
        printf 'coordinator:\n  url: tcp://127.0.0.1:%s\nworkers:\n' "${ports[0]}"
        yaml_worker node-a "${ports[1]}" "${ports[2]}" "$1" "$dir/node-a.sock"
        yaml_worker node-b "${ports[3]}" "${ports[4]}" "$1" "$dir/node-b.sock"
        yaml_worker node-f "${ports[5]}" "${ports[6]}" 1
        printf 'groups:\n  - name: ab\n    ranks: [%s]\n' "$2"
    } >"$cfg"
}

# fake_connected PID LOG LABEL: waits up to 5 s for the fakepeer PID to say in LOG that it
# connected to the real worker; fails the test (naming LABEL, with LOG) when it does not.
fake_connected() {
    local i
    for ((i = 0; i < 100; i++)); do
        grep -q "connected to" "$2" && return 0
        kill -0 "$1" 2>/dev/null || break
        sleep 0.05
    done
    grep -q "connected to" "$2" || fail "$3: fakepeer did not connect: $(cat "$2")"
}

# wait_pid PID SECONDS: 0 when PID ended within SECONDS (reaped, its status in $wait_status),
# 1 when it still runs (then it is killed with -9).
wait_pid() {
    local p=$1 end=$((SECONDS + $2))
    while kill -0 "$p" 2>/dev/null && ((SECONDS < end)); do
        sleep 0.05
    done
    if kill -0 "$p" 2>/dev/null; then
        kill -9 "$p" 2>/dev/null
        wait "$p" 2>/dev/null
        wait_status=137
        return 1
    fi
    wait "$p" 2>/dev/null
    wait_status=$?
    return 0
}

# wait_ranks SECONDS PREFIX: 0 when every job of rank_pids ended with status 0 within SECONDS
# (a job still running is killed; a failed one's last lines of $dir/PREFIXR.log are shown)
wait_ranks() {
    local r bad=0
    for r in "${!rank_pids[@]}"; do
        if ! wait_pid "${rank_pids[r]}" "$1"; then
            echo "rank $r still ran after $1 s (killed)"
            bad=1
        elif ((wait_status != 0)); then
            echo "rank $r exited with $wait_status:"
            tail -n 5 "$dir/$2$r.log"
            bad=1
        fi
    done
    rank_pids=()
    return $bad
}

# hup_until NAME LOG PATTERN: SIGHUP to service NAME; 0 once LOG has one more line matching
# PATTERN (within 5 s)
hup_until() {
    local name=$1 log=$2 pat=$3 n i
    n=$(grep -c "$pat" "$log")
    kill -HUP "${pid[$name]}"
    for ((i = 0; i < 100; i++)); do
        (($(grep -c "$pat" "$log") > n)) && return 0
        sleep 0.05
    done
    return 1
}
