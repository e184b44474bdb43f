#!/usr/bin/env bash
# wakeup.sh - the cost of one thread hand-off here, on two CPUs and on one
# (bench/wakeup.c: a pipe ping-pong between threads and between processes).
# It explains a2a's small-operation latency: see docs/PERFORMANCE.md.
#
# usage: bench/wakeup.sh [ROUNDS]
set -eu
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$root/build/bench-wakeup
mkdir -p "$root/build"
cc -O2 -Wall -Wextra -o "$out" "$root/bench/wakeup.c" -lpthread
echo "# $(nproc) CPUs; cpuidle: $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo unknown)," \
    "guest_halt_poll_ns=$(cat /sys/module/haltpoll/parameters/guest_halt_poll_ns 2>/dev/null || echo n/a)"
echo "## any CPU"
"$out" "${1:-20000}"
echo "## one CPU (taskset -c 0)"
taskset -c 0 "$out" "${1:-20000}"
