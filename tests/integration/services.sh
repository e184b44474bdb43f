# services.sh - sourced by the integration scripts that start a cluster by
# hand. The sourcing script declares `declare -A pid=()` (service -> pid).

# start NAME LOG CMD...: runs a service in the background, appending to LOG.
start() {
    local name=$1 log=$2
    shift 2
    "$@" >>"$log" 2>&1 &
    pid[$name]=$!
}

# wait_listening NAME LOG: 0 once LOG says "listening on", 1 if the service died or took 10 s.
wait_listening() {
    local name=$1 log=$2 i
    for ((i = 0; i < 200; i++)); do
        grep -q "listening on" "$log" 2>/dev/null && return 0
        kill -0 "${pid[$name]}" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}
