#!/usr/bin/env bash
# hosts.sh - K emulated hosts as Linux network namespaces on one bridge, for tests.
#
#   hosts.sh up PREFIX K        create hosts PREFIX-h1..PREFIX-hK and the switch PREFIX-sw
#   hosts.sh down PREFIX        kill every process inside them and delete them (idempotent,
#                               also after a partial "up")
#   hosts.sh exec PREFIX k CMD...   run CMD in host k (exec: CMD keeps this process's pid)
#   hosts.sh ip PREFIX k        print host k's address
#   hosts.sh cut PREFIX k       cut host k's link at the switch (silent: the host sees no event)
#   hosts.sh heal PREFIX k      reconnect it
#   hosts.sh status PREFIX      namespaces, addresses, bridge ports
#
# Topology (nothing is added to the root namespace):
#
#   netns PREFIX-hK: lo + eth0 (NET.K/24) ==veth== hK (in netns PREFIX-sw) -- br0
#
# Every namespace has its own network stack, so two sets of hosts with other
# prefixes (parallel tests, the benchmark's "a2a-*") never see each other, even
# with the same addresses. NET is $A2A_NS_NET when set (three octets, e.g.
# 10.123.0), otherwise 10.(100 + N % 100).0 where N is the number in PREFIX
# (a test uses PREFIX=a2at$$). "ip" reads the address back from the namespace.
#
# Cutting a link: the kernels this project runs on may lack netem and tc
# classifiers, so "cut" takes the switch-side veth out of the bridge
# (ip link set hK nomaster): the host keeps carrier and its routes, its frames
# reach the switch port and are dropped there, nothing reaches it; no side gets
# a link event or a RST, as with a pulled cable further down the path.
# A2A_NS_CUT=down makes "cut" set the switch-side veth down instead (the host
# then sees NO-CARRIER on eth0); "heal" undoes both.
set -u

die() {
    echo "hosts.sh: $*" >&2
    exit 1
}

usage() {
    sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

[ "$(id -u)" = 0 ] || die "must run as root"

check_prefix() {
    [[ $1 =~ ^[A-Za-z0-9][A-Za-z0-9_.]{0,19}$ ]] ||
        die "bad PREFIX '$1' (letters, digits, _ and ., at most 20 characters)"
}

check_k() {
    [[ $1 =~ ^[0-9]+$ ]] && (($1 >= 1 && $1 <= 250)) || die "bad host number '$1' (1..250)"
}

net_of() { # PREFIX -> three octets
    if [ -n "${A2A_NS_NET:-}" ]; then
        echo "$A2A_NS_NET"
        return
    fi
    local digits=${1//[^0-9]/}
    digits=${digits:-0}
    ((${#digits} > 9)) && digits=${digits: -9}
    echo "10.$((100 + 10#$digits % 100)).0"
}

# namespaces of PREFIX: hosts (in numeric order), then the switch
spaces() {
    ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$1-h[0-9]+\$" | sort -t h -k2 -V
    ip netns list 2>/dev/null | awk '{print $1}' | grep -Fx "$1-sw"
}

host_ns() { # PREFIX k -> namespace name, which must exist
    local ns=$1-h$2
    ip netns list 2>/dev/null | awk '{print $1}' | grep -qFx "$ns" || die "no host $ns"
    echo "$ns"
}

cmd_up() {
    local prefix=$1 K=$2 net sw k ns
    check_prefix "$prefix"
    check_k "$K"
    net=$(net_of "$prefix")
    sw=$prefix-sw
    cmd_down "$prefix"
    trap 'echo "hosts.sh: up failed, removing what was made" >&2; cmd_down "$prefix"' ERR
    set -eE
    ip netns add "$sw"
    ip -n "$sw" link set lo up
    ip -n "$sw" link add br0 type bridge
    ip -n "$sw" link set br0 up
    for ((k = 1; k <= K; k++)); do
        ns=$prefix-h$k
        ip netns add "$ns"
        ip -n "$ns" link add eth0 type veth peer name "h$k" netns "$sw"
        ip -n "$ns" addr add "$net.$k/24" dev eth0
        ip -n "$ns" link set lo up
        ip -n "$ns" link set eth0 up
        ip -n "$sw" link set "h$k" master br0
        ip -n "$sw" link set "h$k" up
    done
    set +eE
    trap - ERR
    echo "up: $K hosts $prefix-h1..$prefix-h$K, $net.1..$net.$K"
}

cmd_down() {
    local prefix=$1 ns pids round
    check_prefix "$prefix"
    # processes keep a namespace alive after its name is gone: end them first
    for round in 1 2 3; do
        pids=
        for ns in $(spaces "$prefix"); do
            pids+=" $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
        done
        [ -n "${pids// /}" ] || break
        # shellcheck disable=SC2086
        kill -9 $pids 2>/dev/null
        sleep 0.1
    done
    for ns in $(spaces "$prefix"); do
        ip netns del "$ns" 2>/dev/null
    done
    return 0
}

cmd_exec() {
    local ns
    ns=$(host_ns "$1" "$2") || exit 1
    shift 2
    [ $# -gt 0 ] || usage
    exec ip netns exec "$ns" "$@"
}

cmd_ip() {
    local ns addr
    ns=$(host_ns "$1" "$2") || exit 1
    addr=$(ip -n "$ns" -4 -o addr show dev eth0 | awk '{split($4, a, "/"); print a[1]; exit}')
    [ -n "$addr" ] || die "$ns has no address on eth0"
    echo "$addr"
}

cmd_cut() {
    local prefix=$1 k=$2
    host_ns "$prefix" "$k" >/dev/null || exit 1
    if [ "${A2A_NS_CUT:-bridge}" = down ]; then
        ip -n "$prefix-sw" link set "h$k" down
    else
        ip -n "$prefix-sw" link set "h$k" nomaster
    fi
}

cmd_heal() {
    local prefix=$1 k=$2
    host_ns "$prefix" "$k" >/dev/null || exit 1
    ip -n "$prefix-sw" link set "h$k" master br0 &&
        ip -n "$prefix-sw" link set "h$k" up
}

cmd_status() {
    local ns
    for ns in $(spaces "$1"); do
        echo "== $ns"
        ip -n "$ns" -br addr | grep -v '^lo' || true
        case $ns in
        *-sw) ip -n "$ns" -br link show master br0 ;;
        esac
    done
}

cmd=${1:-}
shift || true
case $cmd in
up) [ $# -eq 2 ] || usage; cmd_up "$@" ;;
down) [ $# -eq 1 ] || usage; cmd_down "$1" ;;
exec) [ $# -ge 3 ] || usage; check_prefix "$1"; check_k "$2"; cmd_exec "$@" ;;
ip) [ $# -eq 2 ] || usage; check_prefix "$1"; check_k "$2"; cmd_ip "$@" ;;
cut) [ $# -eq 2 ] || usage; check_prefix "$1"; check_k "$2"; cmd_cut "$@" ;;
heal) [ $# -eq 2 ] || usage; check_prefix "$1"; check_k "$2"; cmd_heal "$@" ;;
status) [ $# -eq 1 ] || usage; check_prefix "$1"; cmd_status "$1" ;;
*) usage ;;
esac
