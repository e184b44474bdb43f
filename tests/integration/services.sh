# services.sh - sourced by the integration scripts that start a cluster by
# hand. The sourcing script sets $dir (its scratch folder, with the logs) and
# declares `declare -A pid=()` (service -> pid) and `rank_pids=()`.

# services_cleanup: kills every service and rank, then removes $dir (kept, and
# said so, when KEEP_DIR is set). For `trap services_cleanup EXIT`.
services_cleanup() {
    local p
    for p in "${rank_pids[@]}" "${pid[@]}"; do
        kill -9 "$p" 2>/dev/null
    done
    wait 2>/dev/null
    if [ -n "${KEEP_DIR:-}" ]; then echo "kept $dir"; else rm -rf "$dir"; fi
}

# show_logs [LINES]: the last LINES (30) lines of every log in $dir.
show_logs() {
    local f n=${1:-30}
    for f in "$dir"/*.log; do
        [ -f "$f" ] || continue
        echo "---- $(basename "$f") (last $n lines)"
        tail -n "$n" "$f"
    done
}

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
