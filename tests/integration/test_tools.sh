#!/usr/bin/env bash
# test_tools.sh MODE COORD WORKER CTL LAUNCH DEMO BENCH SOURCE_DIR BUILD_DIR - the
# command-line habits a newcomer brings from mpirun and nccl-tests (issue 15).
#   cli      --version on every binary, --help texts, usage errors with reasons,
#            one warning line for bad environment values
#   launch   a2a-launch -np, the failing rank named, A2A_LOCAL_RANK/SIZE, stderr
#            apart from stdout, --keep creating DIR, A2A_LAUNCH_VERBOSE=0|1
#   ctl      a2a-ctl options after the command, --json errors, TLS flags, URL
#            without a scheme, --timeout while connecting, the reasons why a URL
#            cannot be reached (not an a2a service, TLS on one side)
#   sighup   a worker that gets SIGHUP logs it and keeps serving
#   compare  bench/compare.sh without ../shared: MPI columns filled, summary.md
#            written; without Open MPI it stops with one line
set -u
mode=$1 coord=$2 worker=$3 ctl=$4 launch=$5 demo=$6 bench=$7 src=$8 build=$9
tmp=$(mktemp -d "${TMPDIR:-/tmp}/a2a-tools.XXXXXX")
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
pass=0 failed=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
# expect NAME STATUS REGEX CMD...: CMD exits with STATUS and its stdout+stderr match REGEX
expect() {
    local name=$1 want=$2 re=$3 rc
    shift 3
    "$@" >"$tmp/out" 2>&1 </dev/null
    rc=$?
    if [ "$rc" = "$want" ] && { [ -z "$re" ] || grep -Eq -- "$re" "$tmp/out"; }; then
        ok "$name"
    else
        bad "$name (status $rc, want $want; want output matching /$re/):"
        sed 's/^/    /' "$tmp/out" | head -20
    fi
}
# lines FILE REGEX: how many lines of FILE match REGEX
lines() { grep -Ec -- "$2" "$1" || true; }
finish() {
    echo "$pass passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
}

cli() {
    local v b
    v=$(sed -n 's/^project(a2a VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
    for b in "$coord" "$worker" "$ctl" "$launch" "$demo" "$bench"; do
        expect "$(basename "$b") --version" 0 "^$(basename "$b") $v\$" "$b" --version
    done
    expect "a2a-demo --help describes ROUNDS" 0 "usage: a2a-demo \[ROUNDS\]" "$demo" --help
    expect "a2a-demo --help does not talk of a worker URL to pass" 0 "A2A_WORKER_URL" "$demo" --help
    expect "a2a-demo bad ROUNDS" 2 "ROUNDS must be a positive integer" "$demo" x
    # outside a2a-launch: what to do, not liba2a's "pass its URL" (an a2a_job_open argument)
    expect "a2a-demo without A2A_WORKER_URL says to use a2a-launch" 2 \
        "^a2a-demo: no A2A_WORKER_URL: run it under a2a-launch" env -u A2A_WORKER_URL "$demo"
    expect "a2a-bench without A2A_RANK says to use a2a-launch" 2 \
        "^a2a-bench: no A2A_RANK: run it under a2a-launch" env -u A2A_RANK A2A_WORKER_URL=tcp://127.0.0.1:1 "$bench"
    expect "a2a-coordinator without --config names it" 2 "^a2a-coordinator: no --config FILE" "$coord"
    expect "a2a-worker without --name names it" 2 "^a2a-worker: no --name NAME" \
        "$worker" --config "$src/configs/cluster.yaml"
    expect "a2a-launch --workers 0" 2 "^a2a-launch: --workers 0: must be a positive integer" \
        "$launch" --workers 0 -- "$demo"
    expect "a2a-launch without a program" 2 "no PROGRAM" "$launch" --workers 2
    expect "a2a-launch -n 3 --workers 2" 2 "-n 3 does not split" "$launch" -n 3 --workers 2 "$demo"
    expect "a2a-launch unknown option" 2 "unknown option --bogus" "$launch" --bogus "$demo"
    expect "a2a-launch --workers 65" 2 "at most 64 workers" "$launch" --workers 65 "$demo"
    expect "a2a-bench -d float128 names the option" 2 "^a2a-bench: -d float128: not one of" \
        "$bench" -d float128
    expect "a2a-bench -t (nccl-tests threads) refused with why" 2 "^a2a-bench: -t: nccl-tests' threads" \
        "$bench" -t 2
    expect "a2a-bench -b 64Q" 2 "^a2a-bench: -b 64Q: not a size" "$bench" -b 64Q
    expect "a2a-bench --patterns foo" 2 "^a2a-bench: --patterns foo:" "$bench" --patterns foo
    expect "a2a-ctl URL without a scheme" 1 "URL must start with tcp://, tls\+tcp:// or ipc://" \
        "$ctl" health --coordinator 127.0.0.1:7000
    expect "a2a-ctl without a command" 2 "no command" "$ctl" --json
    A2A_LOG_LEVEL=loud "$ctl" health --coordinator tcp://127.0.0.1:1 --timeout 200 >"$tmp/ll" 2>&1
    if [ "$(lines "$tmp/ll" 'A2A_LOG_LEVEL="loud" is not')" = 1 ]; then
        ok "bad A2A_LOG_LEVEL: one warning line"
    else
        bad "bad A2A_LOG_LEVEL: one warning line"; cat "$tmp/ll"
    fi
    A2A_LOG_LEVEL=loud timeout 10 "$coord" --config "$src/configs/cluster.yaml" \
        --listen tcp://127.0.0.1:0 >"$tmp/c.out" 2>"$tmp/c.err" &
    pids+=($!)
    sleep 0.5
    kill -TERM "${pids[-1]}" 2>/dev/null
    wait "${pids[-1]}" 2>/dev/null
    if [ "$(lines "$tmp/c.err" 'A2A_LOG_LEVEL="loud"')" = 1 ]; then
        ok "bad A2A_LOG_LEVEL: one warning line from a daemon"
    else
        bad "bad A2A_LOG_LEVEL: one warning line from a daemon"; cat "$tmp/c.err"
    fi
    A2A_LAUNCH_GRACE_MS=soon A2A_LAUNCH_VERBOSE=yes "$launch" -n 1 -- true >"$tmp/g" 2>&1
    if [ "$(lines "$tmp/g" 'A2A_LAUNCH_GRACE_MS="soon" is not')" = 1 ] &&
        [ "$(lines "$tmp/g" 'A2A_LAUNCH_VERBOSE="yes" is not 0 or 1')" = 1 ]; then
        ok "bad A2A_LAUNCH_GRACE_MS / A2A_LAUNCH_VERBOSE: one warning line each"
    else
        bad "bad A2A_LAUNCH_GRACE_MS / A2A_LAUNCH_VERBOSE"; cat "$tmp/g"
    fi
    # the services' own warning is hidden with their logs: a2a-launch gives it, once
    A2A_LOG_LEVEL=loud "$launch" -n 1 -- true >"$tmp/g" 2>&1
    if [ "$(lines "$tmp/g" 'a2a-launch: warning: A2A_LOG_LEVEL="loud" is not')" = 1 ] &&
        [ "$(wc -l <"$tmp/g")" = 1 ]; then
        ok "bad A2A_LOG_LEVEL under a2a-launch: one warning line"
    else
        bad "bad A2A_LOG_LEVEL under a2a-launch: one warning line"; cat "$tmp/g"
    fi
}

launch() {
    expect "a2a-launch -np 4 a2a-demo (no --)" 0 "\[3\] rank 3 of 4: .*verified" "$launch" -np 4 "$demo"
    [ "$(lines "$tmp/out" 'verified$')" = 4 ] && ok "-np 4: four ranks verified" ||
        bad "-np 4: four ranks verified"
    # only a2a-launch's own -np is mpirun's spelling: the program's reaches it unchanged
    expect "PROGRAM's own -np is passed on unchanged" 0 '^\[0\] args: -np 3 -n 4$' \
        "$launch" -np 1 sh -c 'echo "args: $*"' sh -np 3 -n 4
    expect "--keep DIR -np 1 -- PROGRAM -np: unchanged too" 0 '^\[0\] args: -np 3$' \
        "$launch" --keep "$tmp/keep-np" -np 1 -- sh -c 'echo "args: $*"' sh -np 3
    expect "the failing rank is named" 3 "^a2a-launch: rank 3 exited with status 3" \
        "$launch" -n 4 -- sh -c '[ "$A2A_RANK" != 3 ] || exit 3'
    expect "a rank killed by a signal is named" 137 "^a2a-launch: rank 1 was killed by signal 9" \
        "$launch" -n 2 -- sh -c '[ "$A2A_RANK" != 1 ] || kill -9 $$'
    "$launch" -n 4 --workers 2 -- sh -c 'echo "out $A2A_RANK $A2A_LOCAL_RANK/$A2A_LOCAL_SIZE $A2A_WORLD_SIZE"; echo "err $A2A_RANK" >&2' \
        >"$tmp/so" 2>"$tmp/se"
    if grep -qx '\[3\] out 3 1/2 4' "$tmp/so" && grep -qx '\[2\] out 2 0/2 4' "$tmp/so" &&
        grep -qx '\[0\] out 0 0/2 4' "$tmp/so"; then
        ok "A2A_LOCAL_RANK / A2A_LOCAL_SIZE"
    else
        bad "A2A_LOCAL_RANK / A2A_LOCAL_SIZE"; cat "$tmp/so"
    fi
    if [ "$(lines "$tmp/se" '^\[[0-3]\] err [0-3]$')" = 4 ] && [ "$(lines "$tmp/so" 'err')" = 0 ]; then
        ok "ranks' stderr on stderr, prefixed; stdout clean"
    else
        bad "ranks' stderr apart"; cat "$tmp/so" "$tmp/se"
    fi
    expect "--keep creates DIR" 0 "" "$launch" --keep "$tmp/keep/a/b" -n 1 -- true
    [ -s "$tmp/keep/a/b/cluster.yaml" ] && ok "--keep DIR/cluster.yaml written" ||
        bad "--keep DIR/cluster.yaml written"
    env -u A2A_LOG_LEVEL A2A_LAUNCH_VERBOSE=1 "$launch" -n 1 -- true >"$tmp/v1" 2>&1
    env -u A2A_LOG_LEVEL A2A_LAUNCH_VERBOSE=0 "$launch" -n 1 -- true >"$tmp/v0" 2>&1
    if [ "$(lines "$tmp/v1" '^\[worker w0\] .* a2a-worker: info:')" -ge 1 ] &&
        [ "$(lines "$tmp/v1" '^\[coordinator\] .*info:')" -ge 1 ] && [ ! -s "$tmp/v0" ]; then
        ok "A2A_LAUNCH_VERBOSE=1 shows the services' info logs, =0 nothing"
    else
        bad "A2A_LAUNCH_VERBOSE"; cat "$tmp/v1" "$tmp/v0"
    fi
    A2A_OP_TIMEOUT_MS=soon "$launch" -n 1 -- "$demo" >"$tmp/ot" 2>&1
    if [ "$(lines "$tmp/ot" 'liba2a: warning: A2A_OP_TIMEOUT_MS="soon"')" = 1 ] && grep -q verified "$tmp/ot"; then
        ok "bad A2A_OP_TIMEOUT_MS: one warning line from liba2a"
    else
        bad "bad A2A_OP_TIMEOUT_MS"; cat "$tmp/ot"
    fi
}

ctl_mode() {
    local url p
    "$coord" --config "$src/configs/cluster.yaml" --listen tcp://127.0.0.1:0 >"$tmp/c.out" 2>"$tmp/c.err" &
    pids+=($!)
    for _ in $(seq 100); do
        url=$(sed -n 's/^listening on //p' "$tmp/c.out")
        [ -n "$url" ] && break
        sleep 0.05
    done
    expect "groups --json (option after the command)" 0 '^\[\{"name":"hccl_world_group"' \
        "$ctl" groups --json --coordinator "$url"
    expect "resolve G --json" 0 '"name":"experts_even"' "$ctl" resolve experts_even --coordinator "$url" --json
    expect "--json error is JSON" 1 '^\{"error":"no group \\"nope\\"","status":"NOT_FOUND","command":"resolve"\}$' \
        "$ctl" --json resolve nope --coordinator "$url"
    expect "plain error is one line" 1 '^a2a-ctl: resolve: NOT_FOUND: no group "nope"$' \
        "$ctl" resolve nope --coordinator "$url"
    expect "options after the arguments; a negative rank stays an argument" 1 \
        '^a2a-ctl: create: INVALID_ARGUMENT: "-1" is not a world rank$' "$ctl" create g 1 -1 --coordinator "$url"
    expect "--json usage error is JSON" 2 '^\{"error":"resolve takes GROUP' "$ctl" resolve --json --coordinator "$url"
    expect "--tls-cert alone: all three or none, naming the flags and what is missing" 1 \
        "all of --tls-cert, --tls-key and --tls-ca \\(or A2A_TLS_CERT, A2A_TLS_KEY and A2A_TLS_CA\\), or none: --tls-key \\(A2A_TLS_KEY\\) is missing" \
        "$ctl" health --coordinator "$url" --tls-cert /etc/hostname
    expect "--tls-* flags are options" 0 "--tls-ca FILE" "$ctl" --help
    # a port that accepts and never answers: --timeout bounds the call, connecting included
    python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1])); time.sleep(30)' "$tmp/port" &
    pids+=($!)
    for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
    p=$(cat "$tmp/port")
    # what starting the binary costs (seconds under TSan) is not the call's: measured apart
    local t0=$(date +%s%N)
    "$ctl" --version >/dev/null 2>&1
    local start_ms=$((($(date +%s%N) - t0) / 1000000))
    t0=$(date +%s%N)
    "$ctl" health --coordinator "tcp://127.0.0.1:$p" --timeout 500 >"$tmp/to" 2>&1
    local rc=$? ms=$((($(date +%s%N) - t0) / 1000000))
    # a sanitized build runs NNG's timers late: it gets 4 s, the plain build 1.5 s
    local bound=1500
    grep -qE "__tsan_init|__asan_init" "$ctl" 2>/dev/null && bound=4000
    if [ "$rc" = 1 ] && [ "$ms" -lt $((bound + 2 * start_ms)) ] && grep -q UNAVAILABLE "$tmp/to"; then
        ok "--timeout 500 on a silent port: UNAVAILABLE after $ms ms"
    else
        bad "--timeout 500 on a silent port: status $rc after $ms ms"; cat "$tmp/to"
    fi
    # a long --timeout is honoured while connecting (the wait was capped near 2 s)
    t0=$(date +%s%N)
    "$ctl" health --coordinator "tcp://127.0.0.1:$p" --timeout 4000 >"$tmp/to" 2>&1
    rc=$? ms=$((($(date +%s%N) - t0) / 1000000))
    if [ "$rc" = 1 ] && [ "$ms" -ge 3700 ] && [ "$ms" -lt $((4000 + bound + 2 * start_ms)) ] &&
        grep -q "in [0-9]* ms: it accepts connections but does not answer" "$tmp/to"; then
        ok "--timeout 4000 on a silent port: waits it out ($ms ms) and says it does not answer"
    else
        bad "--timeout 4000 on a silent port: status $rc after $ms ms"; cat "$tmp/to"
    fi
    refused
    reasons "$url"
}

# refused: a port that refuses ends a2a-ctl's wait early, with the reason, whatever its
# --timeout (it waited all of it: 9.5 s of 10); one that starts listening during the wait is
# still waited for (bounds are fractions of the timeout, not of the machine's speed)
refused() {
    local p rc ms t0
    p=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    t0=$(date +%s%N)
    "$ctl" health --coordinator "tcp://127.0.0.1:$p" --timeout 10000 >"$tmp/ref" 2>&1
    rc=$? ms=$((($(date +%s%N) - t0) / 1000000))
    if [ "$rc" = 1 ] && [ "$ms" -lt 5000 ] &&
        grep -q "UNAVAILABLE: cannot reach tcp://127.0.0.1:$p in [0-9]* ms: nothing listens there (connection refused: is it running?)" "$tmp/ref"; then
        ok "--timeout 10000 on a refusing port: ends early ($ms ms) saying nothing listens"
    else
        bad "--timeout 10000 on a refusing port: status $rc after $ms ms (want 1, well under 5000)"
        cat "$tmp/ref"
    fi
    # a host name that does not resolve (.invalid never does, RFC 6761) ends it early too,
    # said as such (it was "not an address that can be dialed" after all of the timeout)
    t0=$(date +%s%N)
    if ! timeout 2 getent hosts a2a-test.invalid >/dev/null 2>&1 &&
        [ $((($(date +%s%N) - t0) / 1000000)) -lt 1000 ]; then
        t0=$(date +%s%N)
        "$ctl" health --coordinator "tcp://a2a-test.invalid:7000" --timeout 10000 >"$tmp/ref" 2>&1
        rc=$? ms=$((($(date +%s%N) - t0) / 1000000))
        if [ "$rc" = 1 ] && [ "$ms" -lt 5000 ] &&
            grep -q "cannot reach tcp://a2a-test.invalid:7000 in [0-9]* ms: its host name does not resolve" "$tmp/ref"; then
            ok "--timeout 10000 on a name that does not resolve: ends early ($ms ms) saying so"
        else
            bad "--timeout 10000 on a name that does not resolve: status $rc after $ms ms"
            cat "$tmp/ref"
        fi
    else
        echo "SKIP: this machine's resolver is slow to say that a2a-test.invalid does not exist"
    fi
    # the port starts to accept (and never answers) as soon as a2a-ctl runs: waited out
    rm -f "$tmp/go"
    python3 -c '
import os, socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close()
open(sys.argv[1] + ".tmp", "w").write(str(p)); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
end = time.time() + 30
while not os.path.exists(sys.argv[2]) and time.time() < end: time.sleep(0.01)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", p)); s.listen(8); time.sleep(30)' "$tmp/late.port" "$tmp/go" &
    pids+=($!)
    for _ in $(seq 100); do [ -s "$tmp/late.port" ] && break; sleep 0.05; done
    p=$(cat "$tmp/late.port")
    t0=$(date +%s%N)
    "$ctl" health --coordinator "tcp://127.0.0.1:$p" --timeout 3000 >"$tmp/ref" 2>&1 &
    local cpid=$!
    : >"$tmp/go"
    wait "$cpid"
    rc=$? ms=$((($(date +%s%N) - t0) / 1000000))
    if [ "$rc" = 1 ] && [ "$ms" -ge 2700 ] &&
        grep -q "it accepts connections but does not answer" "$tmp/ref"; then
        ok "a port that starts listening during the wait is waited for ($ms ms of 3000)"
    else
        bad "a port that starts listening during the wait: status $rc after $ms ms"; cat "$tmp/ref"
    fi
}

# peer_http PORTFILE: for 30 s, a TCP peer on a free port (written to PORTFILE) that answers
# every connection like an HTTP proxy
peer_http() {
    python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
s.settimeout(1)
end = time.time() + 30
while time.time() < end:
    try: c, _ = s.accept()
    except socket.timeout: continue
    c.recv(64); c.sendall(b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n"); c.close()' "$1" &
    pids+=($!)
    for _ in $(seq 100); do [ -s "$1" ] && break; sleep 0.05; done
}

# reasons PLAIN_URL: why a2a-ctl cannot reach a URL, said as what is really wrong
# (PLAIN_URL: a coordinator without TLS)
reasons() {
    local plain=$1 p turl=""
    peer_http "$tmp/http.port"
    p=$(cat "$tmp/http.port")
    expect "something else answers (a proxy)" 1 \
        'something that is not an a2a service answers there \(it said "HTTP/1.1"\): the wrong host or port, or a proxy' \
        "$ctl" health --coordinator "tcp://127.0.0.1:$p" --timeout 1500
    # TLS on one side only
    command -v openssl >/dev/null || { bad "openssl is needed for the TLS reasons"; return; }
    (
        cd "$tmp" || exit 1
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key \
            -out ca.crt -days 2 -subj "/CN=a2a test ca" -addext "basicConstraints=critical,CA:TRUE" \
            -addext "keyUsage=keyCertSign,cRLSign" &&
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout node.key \
                -out node.csr -subj "/CN=localhost" &&
            printf '%s\n' "subjectAltName=IP:127.0.0.1" "basicConstraints=CA:FALSE" \
                "extendedKeyUsage=serverAuth,clientAuth" >node.ext &&
            openssl x509 -req -in node.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out node.crt \
                -days 2 -extfile node.ext
    ) >"$tmp/openssl.out" 2>&1 || { bad "openssl: $(cat "$tmp/openssl.out")"; return; }
    printf '%s\n' "coordinator:" "  url: tls+tcp://127.0.0.1:1" "workers:" "  - name: w0" \
        "    url: tls+tcp://127.0.0.1:2" "    data_url: tls+tcp://127.0.0.1:3" "    ranks: 1" \
        "security:" "  tls:" "    cert: $tmp/node.crt" "    key: $tmp/node.key" \
        "    ca: $tmp/ca.crt" >"$tmp/tls.yaml"
    "$coord" --config "$tmp/tls.yaml" --listen tls+tcp://127.0.0.1:0 >"$tmp/tls.out" 2>"$tmp/tls.err" &
    pids+=($!)
    for _ in $(seq 100); do
        turl=$(sed -n 's/^listening on //p' "$tmp/tls.out")
        [ -n "$turl" ] && break
        sleep 0.05
    done
    [ -n "$turl" ] || { bad "the TLS coordinator did not start: $(cat "$tmp/tls.err")"; return; }
    local tls=(--tls-cert "$tmp/node.crt" --tls-key "$tmp/node.key" --tls-ca "$tmp/ca.crt")
    expect "TLS coordinator, TLS client: serving" 0 "SERVING" "$ctl" health --coordinator "$turl" "${tls[@]}"
    expect "tcp:// to a TLS port says so" 1 \
        "it speaks TLS and closed our plain connection: use tls\+${turl#tls+} with the TLS settings" \
        "$ctl" health --coordinator "${turl#tls+}" --timeout 1500
    expect "tls+tcp:// to a plain port says so" 1 \
        "it is a plain \(not TLS\) a2a port: use ${plain}, or turn TLS on there" \
        "$ctl" health --coordinator "tls+$plain" --timeout 1500 "${tls[@]}"
}

sighup() {
    # the rank finds its worker (a sibling: a child of a2a-launch), sends it SIGHUP,
    # checks it still runs, then runs a verified exchange through it
    A2A_LAUNCH_VERBOSE=1 A2A_LOG_LEVEL=info "$launch" -n 1 -- bash -c '
        w=$(pgrep -P "$PPID" -f a2a-worker | head -1)
        [ -n "$w" ] || { echo "no worker"; exit 5; }
        kill -HUP "$w"; sleep 0.5; kill -HUP "$w"; sleep 0.3
        kill -0 "$w" || { echo "worker died"; exit 6; }
        exec "$0"' "$demo" >"$tmp/h" 2>&1
    local rc=$?
    if [ "$rc" = 0 ] && grep -q "verified" "$tmp/h" &&
        [ "$(lines "$tmp/h" 'a2a-worker: warn: SIGHUP: nothing to reload')" = 2 ]; then
        ok "a worker logs SIGHUP and keeps serving"
    else
        bad "worker SIGHUP (status $rc)"; cat "$tmp/h"
    fi
}

compare() {
    expect "compare.sh without Open MPI: one line, non-zero" 1 "^compare.sh: no /nonexistent/mpicc: install Open MPI" \
        env MPICC=/nonexistent/mpicc bash "$src/bench/compare.sh" --build-dir "$build" --out "$tmp/none"
    [ "$(wc -l <"$tmp/out")" = 1 ] && [ ! -e "$tmp/none" ] && ok "... and nothing else" || bad "... and nothing else"
    expect "compare.sh --help: its header comment" 0 "^Environment: MPICC" bash "$src/bench/compare.sh" --help
    [ "$(lines "$tmp/out" '^set |^ROOT=')" = 0 ] && ok "... and no code" || { bad "... and no code"; tail -3 "$tmp/out"; }
    expect "compare.sh --shapes 3: not a shape (it ran 3x3)" 2 '^compare.sh: --shapes: "3" is not WORKERSxRANKS' \
        bash "$src/bench/compare.sh" --no-mpi --shapes 3 --build-dir "$build" --out "$tmp/none"
    expect "compare.sh --repeat x: not a count (it ran nothing, exit 0)" 2 '^compare.sh: --repeat x: not a count' \
        bash "$src/bench/compare.sh" --no-mpi --repeat x --build-dir "$build" --out "$tmp/none"
    if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
        echo "SKIP: the comparison itself needs Open MPI (apt-get install openmpi-bin libopenmpi-dev)"
        finish
    fi
    # A2A_SHARED points nowhere: everything compare.sh needs is in the clone
    expect "compare.sh from the repository alone" 0 "results in" env A2A_SHARED=/nonexistent \
        bash "$src/bench/compare.sh" --build-dir "$build" --out "$tmp/cmp" --shapes 1x2 --repeat 1 \
        -b 64 -e 64 --patterns uniform,incast --target 0.01
    if grep -Eq '^\| uniform \| 2 \| 1x2 \| 64 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+x' "$tmp/cmp/table.md" &&
        [ "$(grep -c '^| .* | - | - |' "$tmp/cmp/table.md")" = 0 ]; then
        ok "table.md has the MPI columns filled"
    else
        bad "table.md MPI columns"; cat "$tmp/cmp/table.md"
    fi
    grep -q '^## incast' "$tmp/cmp/summary.md" && grep -q 'ompi_tcp' "$tmp/cmp/summary.md" &&
        ok "summary.md written" || { bad "summary.md"; cat "$tmp/cmp/summary.md"; }
    grep -q '^# mpi_alltoallv_bench .*lib=Open MPI' "$tmp/cmp/ompi_tcp_N2_r1.txt" &&
        ok "the MPI reference ran" || bad "the MPI reference ran"
}

case $mode in
    cli) cli ;;
    launch) launch ;;
    ctl) ctl_mode ;;
    sighup) sighup ;;
    compare) compare ;;
    *) echo "unknown mode $mode"; exit 2 ;;
esac
finish
