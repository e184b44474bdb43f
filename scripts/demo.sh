#!/usr/bin/env bash
# demo.sh - builds a2a and shows it working, on this machine alone.
#
# usage: scripts/demo.sh
#
# 1. installs the missing Debian packages (scripts/deps.sh --build);
# 2. configures and builds into build/;
# 3. runs a verified alltoallv across a local cluster (2 workers x 2 ranks)
#    with a2a-launch and a2a-demo: one line per rank, ending in "verified";
# 4. starts a coordinator on a free loopback port with configs/cluster.yaml
#    and asks it with a2a-ctl for its groups and the members of experts_even,
#    then stops it.
# Exits non-zero if any step fails; leaves nothing running.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUILD=build

step() {
    printf '\n==> %s\n' "$*"
}

step "dependencies"
"$ROOT/scripts/deps.sh" --build
echo "all present"

step "build into $BUILD/"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j"$(nproc)"

step "alltoallv on a local cluster: a2a-launch --workers 2 --ranks-per-worker 2 -- a2a-demo"
OUT=$(mktemp "${TMPDIR:-/tmp}/a2a-demo.XXXXXX")
COORD_PID=
cleanup() {
    local rc=$?
    trap - EXIT INT TERM HUP
    if [ -n "$COORD_PID" ] && kill -0 "$COORD_PID" 2>/dev/null; then
        kill -TERM "$COORD_PID" 2>/dev/null || true
        timeout 5 tail --pid="$COORD_PID" -f /dev/null 2>/dev/null || kill -KILL "$COORD_PID" 2>/dev/null
        wait "$COORD_PID" 2>/dev/null || true
    fi
    rm -f "$OUT" "$OUT.coord" "$OUT.coord.err"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

timeout 120 "$BUILD/tools/a2a-launch" --workers 2 --ranks-per-worker 2 -- "$BUILD/tools/a2a-demo" \
    </dev/null | tee "$OUT"
verified=$(grep -c 'verified$' "$OUT" || true)
if [ "$verified" -ne 4 ]; then
    echo "demo: expected 4 ranks to print \"verified\", got $verified" >&2
    exit 1
fi

step "the coordinator: a2a-coordinator --config configs/cluster.yaml --listen tcp://127.0.0.1:0"
"$BUILD/coordinator/a2a-coordinator" --config configs/cluster.yaml --listen tcp://127.0.0.1:0 \
    >"$OUT.coord" 2>"$OUT.coord.err" </dev/null &
COORD_PID=$!
URL=
for _ in $(seq 1 200); do # up to 10 s for its first line, "listening on URL"
    URL=$(sed -n '1s/^listening on //p' "$OUT.coord")
    [ -n "$URL" ] && break
    if ! kill -0 "$COORD_PID" 2>/dev/null; then
        break
    fi
    sleep 0.05
done
if [ -z "$URL" ]; then
    echo "demo: the coordinator did not start:" >&2
    cat "$OUT.coord.err" >&2
    exit 1
fi
echo "listening on $URL"

CTL=("$BUILD/tools/a2a-ctl" --coordinator "$URL")
step "a2a-ctl --coordinator $URL groups"
"${CTL[@]}" groups
step "a2a-ctl --coordinator $URL resolve experts_even"
"${CTL[@]}" resolve experts_even

step "stop the coordinator (SIGTERM)"
kill -TERM "$COORD_PID"
rc=0
timeout 10 tail --pid="$COORD_PID" -f /dev/null || rc=$?
wait "$COORD_PID" || rc=$?
COORD_PID=
if [ "$rc" -ne 0 ]; then
    echo "demo: the coordinator did not stop cleanly (status $rc):" >&2
    cat "$OUT.coord.err" >&2
    exit 1
fi
echo "stopped"

printf '\ndemo: OK\n'
