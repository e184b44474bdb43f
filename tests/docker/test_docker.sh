#!/usr/bin/env bash
# test_docker.sh - docker/docker-compose.yml under a real Docker engine (the
# "docker" stage of scripts/test.sh; docker/README.md says the same in prose).
#
# usage: tests/docker/test_docker.sh        (as root, or with sudo for apt-get and dockerd)
#
#  1. installs docker.io, docker-compose and debootstrap when missing (apt-get);
#  2. starts dockerd when none answers (and stops it at the end); where it
#     cannot start, prints one line "SKIP: ..." and exits 0;
#  3. makes the base image debian:12 when it is absent: debootstrap
#     --variant=minbase bookworm from this machine's apt mirror
#     (/etc/apt/sources.list.d/*.sources, else /etc/apt/sources.list), then
#     `tar -C DIR -c . | docker import - debian:12` (no registry is needed);
#  4. builds a2a:latest from docker/Dockerfile (a context of the folders the
#     build reads, the classic builder: no frontend image to pull);
#  5. brings up coordinator, node-a, node-b and waits until all three are
#     healthy; runs job-a and job-b (the sidecars): 4 ranks "verified"; then
#     job-a and job-remote-b (node-b's ranks without its socket volume: remote
#     mode): 4 ranks verified, 2 of them in remote mode;
#  6. runs loop-a and loop-b (profile test: exchange_check loop, verified
#     operations), `docker kill`s node-b's container under them: node-a's ranks
#     must get UNAVAILABLE naming node-b within 10 s; `docker start`s it; the
#     loops must go on to succeed again and exit 0, and no other container may
#     have been restarted;
#  7. the same cluster with docker-compose.tls.yml (certificates from
#     make-certs.sh): healthy, and job-a + job-b verified;
#  8. `docker-compose down -v`: no container, network or volume of the
#     project is left.
# Every step is bounded in time (A2A_DOCKER_SECONDS, default 1800, for all).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
BUDGET=${A2A_DOCKER_SECONDS:-1800}
END=$((SECONDS + BUDGET))
PROJECT=a2atest$$
work=$(mktemp -d "${TMPDIR:-/var/tmp}/a2a-docker.XXXXXX")
dockerd_pid=
tls=0
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

say() { printf 'docker: %s\n' "$*"; }
left() { local l=$((END - SECONDS)); ((l > 10)) && echo "$l" || echo 10; }
# bounded CMD...: CMD with what is left of the budget (at most $MAX s, default 600)
bounded() {
    local max=${MAX:-600} l
    l=$(left)
    ((l < max)) || l=$max
    timeout -k 5 "$l" "$@"
}

compose_files() {
    echo "-f docker/docker-compose.yml"
    ((tls)) && echo "-f docker/docker-compose.tls.yml"
}
# compose ARGS...: docker-compose on this test's project
compose() {
    # shellcheck disable=SC2046
    bounded docker-compose -p "$PROJECT" $(compose_files) "$@"
}

cleanup() {
    if command -v docker-compose >/dev/null 2>&1 && [ -S /var/run/docker.sock ]; then
        MAX=120 compose --profile test --profile remote down -v --remove-orphans \
            >"$work/down-final.log" 2>&1
    fi
    if [ -n "$dockerd_pid" ]; then
        say "stopping the dockerd this test started (pid $dockerd_pid)"
        $SUDO kill "$dockerd_pid" 2>/dev/null
        for ((i = 0; i < 100; i++)); do
            kill -0 "$dockerd_pid" 2>/dev/null || break
            sleep 0.2
        done
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
    say "FAILED: $*"
    if command -v docker-compose >/dev/null 2>&1; then
        compose --profile test ps 2>&1 | sed 's/^/  /'
        compose --profile test logs --no-color --tail 30 2>&1 | sed 's/^/  /' | tail -120
    fi
    exit 1
}

# ---- 1. packages ----
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]}"
    MAX=900 bounded $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y \
        --no-install-recommends "${missing[@]}" >"$work/apt.log" 2>&1 ||
        { tail -20 "$work/apt.log"; fail "apt-get install ${missing[*]}"; }
fi
# The Debian client talks to the Debian daemon (another docker on PATH may be newer).
DOCKER=docker
[ -x /usr/bin/docker ] && DOCKER=/usr/bin/docker
docker() { "$DOCKER" "$@"; }

# ---- 2. the engine ----
if ! docker info >/dev/null 2>&1; then
    say "no dockerd answers: starting one"
    $SUDO dockerd >"$work/dockerd.log" 2>&1 &
    dockerd_pid=$!
    for ((i = 0; i < 150; i++)); do
        docker info >/dev/null 2>&1 && break
        kill -0 "$dockerd_pid" 2>/dev/null || break
        sleep 0.2
    done
    if ! docker info >/dev/null 2>&1; then
        why=$(grep -m1 -iE 'level=(fatal|error)' "$work/dockerd.log" | sed 's/.*msg="\([^"]*\)".*/\1/')
        echo "SKIP: docker: dockerd cannot start here: ${why:-no answer within 30 s}"
        dockerd_pid_left=$dockerd_pid
        [ -n "$dockerd_pid_left" ] && $SUDO kill "$dockerd_pid_left" 2>/dev/null
        dockerd_pid=
        exit 0
    fi
fi
say "engine: $(docker version --format '{{.Server.Version}}' 2>/dev/null)"

# ---- 3. the base image ----
apt_mirror() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        # deb822 stanzas: the URIs of the first "Types: deb" stanza whose Suites name bookworm
        awk 'BEGIN { RS = ""; FS = "\n" }
            { t = u = s = ""
              for (i = 1; i <= NF; i++) {
                  if ($i ~ /^Types:/) t = $i
                  if ($i ~ /^URIs:/) { u = $i; sub(/^URIs:[ \t]*/, "", u); sub(/[ \t].*/, "", u) }
                  if ($i ~ /^Suites:/) s = " " $i " "
              }
              if (t ~ /[ \t]deb([ \t]|$)/ && s ~ /[ \t]bookworm[ \t]/ && u != "") { print u; exit } }' "$f"
    done | head -n 1
    [ -f /etc/apt/sources.list ] &&
        awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list
}
if ! docker image inspect debian:12 >/dev/null 2>&1; then
    mirror=$(apt_mirror | head -n 1)
    [ -n "$mirror" ] || fail "no bookworm mirror in /etc/apt/sources.list.d/*.sources or sources.list"
    say "making debian:12: debootstrap --variant=minbase bookworm from $mirror"
    MAX=900 bounded $SUDO debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" \
        >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log"; fail "debootstrap"; }
    $SUDO tar -C "$work/rootfs" -c . | docker import - debian:12 >/dev/null || fail "docker import"
    $SUDO rm -rf "$work/rootfs"
fi

# ---- 4. the project image ----
# The folders the Dockerfile copies, and nothing else (the classic builder sends its whole
# context; no BuildKit frontend is pulled).
ctx=$work/context
mkdir -p "$ctx/tests/integration" "$ctx/configs" "$ctx/docker"
cp -r CMakeLists.txt cmake include common server coordinator worker tools "$ctx/"
cp tests/integration/exchange_check.c "$ctx/tests/integration/"
cp configs/docker-cluster.yaml "$ctx/configs/"
cp docker/Dockerfile "$ctx/docker/"
t0=$SECONDS
DOCKER_BUILDKIT=0 MAX=1200 bounded "$DOCKER" build -q -f "$ctx/docker/Dockerfile" -t a2a:latest \
    "$ctx" >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; fail "docker build"; }
say "built a2a:latest in $((SECONDS - t0)) s"

# ---- 5. the cluster and the demo ----
cid() { compose --profile test ps -q "$1" 2>/dev/null; }
health() { docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}' "$1" 2>/dev/null; }
wait_healthy() { # SECONDS SERVICE...
    local until=$((SECONDS + $1)) s id ok
    shift
    while ((SECONDS < until)); do
        ok=1
        for s in "$@"; do
            id=$(cid "$s")
            [ -n "$id" ] && [ "$(health "$id")" = healthy ] || ok=0
        done
        ((ok)) && return 0
        sleep 1
    done
    for s in "$@"; do say "  $s: $(health "$(cid "$s")")"; done
    return 1
}
demo() { # LABEL: job-a and job-b, 4 ranks verified
    compose up -d --no-deps --no-build job-a job-b >"$work/demo-up.log" 2>&1 ||
        { cat "$work/demo-up.log"; fail "$1: starting job-a and job-b"; }
    local a b ra rb n
    a=$(cid job-a) b=$(cid job-b)
    ra=$(MAX=120 bounded "$DOCKER" wait "$a") rb=$(MAX=120 bounded "$DOCKER" wait "$b")
    compose logs --no-color job-a job-b >"$work/demo.log" 2>&1
    n=$(grep -c "| verified" "$work/demo.log")
    sed -n 's/^.*| rank/  rank/p' "$work/demo.log"
    [ "$ra" = 0 ] && [ "$rb" = 0 ] && [ "$n" = 4 ] ||
        fail "$1: job-a exit $ra, job-b exit $rb, $n of 4 ranks verified"
    say "$1: job-a and job-b exited 0, 4 ranks verified"
}

compose up -d --no-build coordinator node-a node-b >"$work/up.log" 2>&1 ||
    { cat "$work/up.log"; fail "docker-compose up coordinator node-a node-b"; }
wait_healthy 120 coordinator node-a node-b || fail "the services did not become healthy"
say "coordinator, node-a, node-b: healthy"
for s in coordinator node-a node-b; do
    u=$(docker inspect -f '{{.Config.User}}' "$(cid "$s")")
    caps=$(docker inspect -f 'cap_add {{.HostConfig.CapAdd}}, cap_drop {{.HostConfig.CapDrop}}, pid mode "{{.HostConfig.PidMode}}", read-only {{.HostConfig.ReadonlyRootfs}}' "$(cid "$s")")
    say "  $s runs as $u: $caps"
done
demo "the sidecars"
# the remote job: node-b's ranks from a container without node-b's socket volume
compose --profile remote up -d --no-deps --no-build job-a job-remote-b >"$work/remote-up.log" 2>&1 ||
    { cat "$work/remote-up.log"; fail "starting job-a and job-remote-b"; }
ra=$(MAX=120 bounded "$DOCKER" wait "$(cid job-a)")
rr=$(MAX=120 bounded "$DOCKER" wait "$(compose --profile remote ps -q job-remote-b)")
# (job-a's container ran before: its log holds both runs; job-remote-b's only this one)
compose --profile remote logs --no-color job-remote-b >"$work/remote.log" 2>&1
n=$(grep -c "| verified" "$work/remote.log")
m=$(grep -c "remote mode" "$work/remote.log")
grep -m1 "remote mode" "$work/remote.log" | sed 's/^[^|]*| */  /'
[ "$ra" = 0 ] && [ "$rr" = 0 ] && [ "$n" = 2 ] && [ "$m" = 2 ] ||
    fail "remote job: job-a exit $ra, job-remote-b exit $rr, $n of 2 verified, $m of 2 remote"
say "a remote job: job-remote-b's 2 ranks in remote mode, 4 ranks verified"

# ---- 6. a worker killed under a loop of verified operations ----
LOOP_SECONDS=30
export LOOP_SECONDS
compose --profile test up -d --no-deps --no-build loop-a loop-b >"$work/loop-up.log" 2>&1 ||
    { cat "$work/loop-up.log"; fail "starting loop-a and loop-b"; }
la=$(cid loop-a) lb=$(cid loop-b) nb=$(cid node-b)
before=""
for s in coordinator node-a loop-a loop-b; do
    before+="$s:$(docker inspect -f '{{.RestartCount}} {{.State.StartedAt}}' "$(cid "$s")") "
done
sleep 6
t_kill=$(date +%s.%N)
docker kill "$nb" >/dev/null || fail "docker kill node-b"
say "killed node-b's container"
sleep 3
docker start "$nb" >/dev/null || fail "docker start node-b"
say "started node-b's container again ($(docker inspect -f '{{.RestartCount}} restarts by its policy' "$nb"))"
wait_healthy 60 node-b || fail "node-b did not become healthy again"
ra=$(MAX=$((LOOP_SECONDS + 90)) bounded "$DOCKER" wait "$la")
rb=$(MAX=$((LOOP_SECONDS + 90)) bounded "$DOCKER" wait "$lb")
docker logs -t "$la" >"$work/loop-a.log" 2>&1
docker logs -t "$lb" >"$work/loop-b.log" 2>&1
grep -h "operations verified" "$work/loop-a.log" "$work/loop-b.log" | sed 's/^[^ ]* /  /'
[ "$ra" = 0 ] && [ "$rb" = 0 ] || fail "the loops exited $ra and $rb"
first=$(grep -m1 "UNAVAILABLE.*node-b" "$work/loop-a.log")
[ -n "$first" ] || fail "node-a's ranks got no UNAVAILABLE naming node-b"
t_first=$(date -d "$(cut -d' ' -f1 <<<"$first")" +%s.%N)
dt=$(awk -v a="$t_kill" -v b="$t_first" 'BEGIN { printf "%.1f", b - a }')
say "node-a's ranks: UNAVAILABLE naming node-b $dt s after the kill:"
echo "  ${first#* }"
awk -v d="$dt" 'BEGIN { exit !(d >= 0 && d <= 10) }' || fail "UNAVAILABLE came $dt s after the kill (> 10 s)"
after=""
for s in coordinator node-a loop-a loop-b; do
    after+="$s:$(docker inspect -f '{{.RestartCount}} {{.State.StartedAt}}' "$(cid "$s")") "
done
[ "$before" = "$after" ] || fail "a container other than node-b was restarted: $before / $after"
say "the loops went on after node-b came back; no other container was restarted"

# ---- 7. TLS ----
compose --profile test --profile remote down -v >"$work/down-plain.log" 2>&1 ||
    fail "docker-compose down"
mkdir -p "$work/tls"
docker/make-certs.sh "$work/tls" >/dev/null 2>&1 || fail "make-certs.sh"
# uid 10001 (services) and 10002 (jobs, group 10001) read the key
$SUDO chgrp 10001 "$work/tls/node.key" && $SUDO chmod 640 "$work/tls/node.key"
chmod 755 "$work" "$work/tls"
export A2A_TLS_DIR=$work/tls
tls=1
compose up -d --no-build coordinator node-a node-b >"$work/up-tls.log" 2>&1 ||
    { cat "$work/up-tls.log"; fail "docker-compose up with docker-compose.tls.yml"; }
wait_healthy 120 coordinator node-a node-b || fail "the TLS services did not become healthy"
say "TLS: coordinator, node-a, node-b healthy ($(docker inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$(cid node-a)" | grep -m1 A2A_HEALTH_URL))"
demo "TLS"

# ---- 8. down leaves nothing ----
compose --profile test --profile remote down -v --remove-orphans >"$work/down.log" 2>&1 ||
    fail "docker-compose down -v"
label=com.docker.compose.project=$PROJECT
left_c=$(docker ps -aq --filter "label=$label")
left_n=$(docker network ls -q --filter "label=$label")
left_v=$(docker volume ls -q --filter "label=$label")
[ -z "$left_c$left_n$left_v" ] ||
    fail "left behind: containers [$left_c] networks [$left_n] volumes [$left_v]"
say "docker-compose down -v: no container, network or volume of $PROJECT left"
say "all checks passed in $((BUDGET - END + SECONDS)) s"
