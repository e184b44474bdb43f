#!/usr/bin/env bash
# test_coordinator.sh - integration test of a2a-coordinator and a2a-ctl.
#
# usage: test_coordinator.sh A2A_COORDINATOR A2A_CTL CONFIGS_DIR
#
# Starts the real coordinator on loopback ephemeral ports and drives it with
# a2a-ctl, raw TCP garbage and signals. Prints one line per check, then
# "N passed, M failed"; exits non-zero when a check failed. Every process it
# starts is killed and its temporary directory removed on any exit.
set -euo pipefail

if [ $# -ne 3 ]; then
    echo "usage: $0 A2A_COORDINATOR A2A_CTL CONFIGS_DIR" >&2
    exit 2
fi
COORD=$1
CTL=$2
CONFIGS=$3
CLUSTER=$CONFIGS/cluster.yaml
for f in "$COORD" "$CTL"; do
    [ -x "$f" ] || { echo "$0: $f is not an executable" >&2; exit 2; }
done
[ -r "$CLUSTER" ] || { echo "$0: $CLUSTER is not readable" >&2; exit 2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/a2a-itest-coord.XXXXXX")
PIDS=()
PASSED=0
FAILED=0

cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM HUP
    set +e
    for pid in "${PIDS[@]}"; do
        kill -KILL "$pid" 2>/dev/null
    done
    for pid in "${PIDS[@]}"; do
        timeout 5 tail --pid="$pid" -f /dev/null 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    if [ -n "${KEEP_TMP:-}" ]; then
        echo "# kept $TMP" >&2
    else
        rm -rf "$TMP"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Sanitizer runtimes: make reports fatal and visible, keep leak checks on.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
unset A2A_COORDINATOR_URL

# ---- reporting ----

pass() {
    PASSED=$((PASSED + 1))
    echo "ok   - $1"
}

fail() {
    FAILED=$((FAILED + 1))
    echo "FAIL - $1"
    shift
    local line
    for line in "$@"; do
        printf '       %s\n' "$line"
    done
}

# show FILE prints FILE's first lines, indented, for a failure report.
show() {
    [ -s "$1" ] || { echo "       ($(basename "$1") is empty)"; return 0; }
    head -n 20 "$1" | sed 's/^/       | /'
}

# ---- running a2a-ctl ----

CTL_SEQ=0
CTL_ALL_ERR=$TMP/ctl-all.err
: >"$CTL_ALL_ERR"

# ctl ARGS... runs a2a-ctl (bounded) and sets RC, OUT (stdout file), ERR (stderr file).
ctl() {
    CTL_SEQ=$((CTL_SEQ + 1))
    OUT=$TMP/ctl.$CTL_SEQ.out
    ERR=$TMP/ctl.$CTL_SEQ.err
    RC=0
    timeout 20 "$CTL" "$@" >"$OUT" 2>"$ERR" || RC=$?
    cat "$ERR" >>"$CTL_ALL_ERR"
}

# ctlc ARGS... is ctl against the main coordinator.
ctlc() {
    ctl --coordinator "$URL" "$@"
}

# expect_ok NAME: the last ctl exited 0 with nothing on stderr.
expect_ok() {
    if [ "$RC" -eq 0 ] && [ ! -s "$ERR" ]; then
        pass "$1"
    else
        fail "$1" "exit $RC (want 0); stdout and stderr:" "$(show "$OUT")" "$(show "$ERR")"
    fi
}

# expect_err NAME RC REGEX: the last ctl exited RC with exactly one stderr line matching REGEX.
expect_err() {
    local lines
    lines=$(wc -l <"$ERR")
    if [ "$RC" -eq "$2" ] && [ "$lines" -eq 1 ] && grep -Eq -- "$3" "$ERR"; then
        pass "$1"
    else
        fail "$1" "exit $RC (want $2), $lines stderr lines, want one matching /$3/; stderr:" \
            "$(show "$ERR")"
    fi
}

# expect_out NAME REGEX: the last ctl exited 0 and its stdout matches REGEX.
expect_out() {
    if [ "$RC" -eq 0 ] && grep -Eq -- "$2" "$OUT"; then
        pass "$1"
    else
        fail "$1" "exit $RC (want 0), want stdout matching /$2/; stdout and stderr:" \
            "$(show "$OUT")" "$(show "$ERR")"
    fi
}

# expect_py NAME CODE: the last ctl exited 0 and python3 CODE accepts its stdout as JSON `d`.
expect_py() {
    local why
    if [ "$RC" -ne 0 ]; then
        fail "$1" "exit $RC (want 0); stderr:" "$(show "$ERR")"
        return 0
    fi
    if why=$(python3 -c '
import json, os, sys
env = os.environ
text = open(sys.argv[1]).read()
try:
    d = json.loads(text)
except ValueError as e:
    print("not JSON (%s): %s" % (e, text[:300].rstrip()))
    sys.exit(1)
ok = eval(sys.argv[2])
if not ok:
    print("condition false for: %s" % json.dumps(d)[:600])
    sys.exit(1)
' "$OUT" "$2" 2>&1); then
        pass "$1"
    else
        fail "$1" "want: $2" "$why"
    fi
}

# ---- running the coordinator ----

# start_coord TAG CONFIG: starts a coordinator on an ephemeral port; sets CPID and CURL.
# Its stdout and stderr go to $TMP/TAG.out and $TMP/TAG.err.
start_coord() {
    local tag=$1 config=$2
    "$COORD" --config "$config" --listen tcp://127.0.0.1:0 >"$TMP/$tag.out" 2>"$TMP/$tag.err" &
    CPID=$!
    PIDS+=("$CPID")
    CURL=
    if ! timeout 15 bash -c 'until grep -q "^listening on " "$1"; do
                                 kill -0 "$2" 2>/dev/null || exit 1; sleep 0.05; done' \
        _ "$TMP/$tag.out" "$CPID"; then
        return 1
    fi
    CURL=$(sed -n 's/^listening on //p' "$TMP/$tag.out" | head -n 1)
    [ -n "$CURL" ]
}

# wait_exit PID SECS: waits at most SECS for PID to exit; sets EXIT_RC (124 on timeout).
wait_exit() {
    EXIT_RC=0
    if ! timeout "$2" tail --pid="$1" -f /dev/null 2>/dev/null; then
        EXIT_RC=124
        return 0
    fi
    wait "$1" 2>/dev/null || EXIT_RC=$?
    forget "$1"
}

# forget PID drops a reaped PID from the list the cleanup kills.
forget() {
    local keep=() pid
    for pid in "${PIDS[@]}"; do
        [ "$pid" = "$1" ] || keep+=("$pid")
    done
    PIDS=("${keep[@]}")
}

# run_coord_fail NAME WANT_RC REGEX ARGS...: the coordinator run with ARGS exits
# (within 10 s) with WANT_RC ("nz" for any non-zero) and stderr matching REGEX.
run_coord_fail() {
    local name=$1 want=$2 re=$3 rc=0
    shift 3
    timeout 10 "$COORD" "$@" >"$TMP/once.out" 2>"$TMP/once.err" || rc=$?
    cat "$TMP/once.err" >>"$TMP/once-all.err"
    if { [ "$want" = nz ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; } || [ "$rc" = "$want" ]; then
        if [ -z "$re" ] || grep -Eq -- "$re" "$TMP/once.err"; then
            pass "$name"
            return 0
        fi
    fi
    fail "$name" "exit $rc (want $want), want stderr matching /$re/; stderr:" \
        "$(show "$TMP/once.err")"
}

# port_of URL prints the port of tcp://host:port.
port_of() {
    echo "${1##*:}"
}

# send_raw PORT FILE: sends FILE's bytes to 127.0.0.1:PORT and closes (bounded).
send_raw() {
    timeout 5 python3 - "$1" "$2" <<'EOF' || true
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
try:
    s.sendall(open(sys.argv[2], "rb").read())
    time.sleep(0.05)
except OSError:
    pass
s.close()
EOF
}

# ======================================================================
echo "# coordinator: $COORD"
echo "# ctl:         $CTL"
echo "# temp dir:    $TMP"

# ---- command lines that never reach a coordinator ----

: >"$TMP/once-all.err"
run_coord_fail "coordinator --help exits 0" 0 '' --help
if grep -q '^usage: a2a-coordinator' "$TMP/once.out"; then
    pass "coordinator --help prints usage on stdout"
else
    fail "coordinator --help prints usage on stdout" "$(show "$TMP/once.out")"
fi
run_coord_fail "coordinator without --config: exit 2 with usage" 2 '^usage: a2a-coordinator'
run_coord_fail "coordinator with an unknown option: exit 2" 2 'usage' --bogus
run_coord_fail "coordinator with a stray argument: exit 2" 2 'usage' --config "$CLUSTER" extra
run_coord_fail "coordinator with a missing config file exits non-zero naming it" nz \
    "$TMP/does-not-exist.yaml: No such file" --config "$TMP/does-not-exist.yaml"

# bad_config NAME FILE LINE REGEX: the coordinator refuses FILE with FILE:LINE:COL: REGEX.
bad_config() {
    run_coord_fail "$1" nz "^a2a-coordinator: $2:$3:[0-9]+: .*$4" \
        --config "$2" --listen tcp://127.0.0.1:0
}

cp "$CLUSTER" "$TMP/unknown-key.yaml"
printf '  - name: oops\n    ranks: [0]\n    colour: red\n' >>"$TMP/unknown-key.yaml"
bad_config "bad config (unknown key) refused with file:line:column" \
    "$TMP/unknown-key.yaml" "$(wc -l <"$TMP/unknown-key.yaml")" 'unknown key "?colour'

cp "$CLUSTER" "$TMP/dup-group.yaml"
printf '  - name: experts_odd\n    ranks: [0]\n' >>"$TMP/dup-group.yaml"
bad_config "bad config (duplicate group name) refused with file:line:column" \
    "$TMP/dup-group.yaml" "[0-9]+" 'duplicate group name "experts_odd"'

cp "$CLUSTER" "$TMP/range.yaml"
printf '  - name: too_far\n    ranks: [0, 4]\n' >>"$TMP/range.yaml"
bad_config "bad config (rank out of range) refused with file:line:column" \
    "$TMP/range.yaml" "$(wc -l <"$TMP/range.yaml")" '4'

cp "$CLUSTER" "$TMP/dup-rank.yaml"
printf '  - name: twice\n    ranks: [1, 1]\n' >>"$TMP/dup-rank.yaml"
bad_config "bad config (duplicate rank) refused with file:line:column" \
    "$TMP/dup-rank.yaml" "$(wc -l <"$TMP/dup-rank.yaml")" '1'

NAME128=$(printf 'n%.0s' $(seq 1 128))
cp "$CLUSTER" "$TMP/long-name.yaml"
printf '  - name: %s\n    ranks: [0]\n' "$NAME128" >>"$TMP/long-name.yaml"
bad_config "bad config (128-byte group name) refused with file:line:column" \
    "$TMP/long-name.yaml" "$(($(wc -l <"$TMP/long-name.yaml") - 1))" '128'

printf 'coordinator: [unclosed\n' >"$TMP/syntax.yaml"
bad_config "bad config (YAML syntax error) refused with file:line:column" \
    "$TMP/syntax.yaml" "[0-9]+" 'YAML syntax error'

run_coord_fail "coordinator with a bad --listen URL exits non-zero" nz '.' \
    --config "$CLUSTER" --listen 'bogus://nowhere'

ctl --help
if [ "$RC" -eq 0 ] && grep -q '^usage: a2a-ctl' "$OUT"; then
    pass "a2a-ctl --help exits 0 with usage on stdout"
else
    fail "a2a-ctl --help exits 0 with usage on stdout" "exit $RC" "$(show "$OUT")"
fi
ctl
[ "$RC" -eq 2 ] && pass "a2a-ctl without a command: exit 2" ||
    fail "a2a-ctl without a command: exit 2" "exit $RC" "$(show "$ERR")"
ctl --bogus health
[ "$RC" -eq 2 ] && pass "a2a-ctl with an unknown option: exit 2" ||
    fail "a2a-ctl with an unknown option: exit 2" "exit $RC" "$(show "$ERR")"
ctl health
if [ "$RC" -eq 2 ] && grep -q 'A2A_COORDINATOR_URL' "$ERR"; then
    pass "a2a-ctl without a coordinator URL: exit 2 naming A2A_COORDINATOR_URL"
else
    fail "a2a-ctl without a coordinator URL: exit 2 naming A2A_COORDINATOR_URL" "exit $RC" \
        "$(show "$ERR")"
fi

# ---- a coordinator on the shipped cluster.yaml ----

if ! start_coord main "$CLUSTER"; then
    fail "coordinator starts on cluster.yaml and prints its URL" "$(show "$TMP/main.err")"
    echo "$PASSED passed, $FAILED failed"
    exit 1
fi
MAIN_PID=$CPID
URL=$CURL
PORT=$(port_of "$URL")
if [[ "$URL" =~ ^tcp://127\.0\.0\.1:[0-9]+$ ]] && [ "$PORT" -gt 0 ]; then
    pass "coordinator prints \"listening on $URL\" with a real port"
else
    fail "coordinator prints \"listening on URL\" with a real port" "got \"$URL\""
fi

# bad usage against a live coordinator
for args in "bogus" "resolve" "resolve a b" "destroy" "create g" "groups extra" "health extra"; do
    # shellcheck disable=SC2086
    ctlc $args
    [ "$RC" -eq 2 ] && pass "a2a-ctl $args: exit 2 (bad usage)" ||
        fail "a2a-ctl $args: exit 2 (bad usage)" "exit $RC" "$(show "$ERR")"
done
ctlc --timeout 0 health
[ "$RC" -eq 2 ] && pass "a2a-ctl --timeout 0: exit 2" ||
    fail "a2a-ctl --timeout 0: exit 2" "exit $RC" "$(show "$ERR")"

# health
ctlc health
expect_out "health (text)" '^SERVING: coordinator, 4 ranks, 4 groups, .*config .*cluster\.yaml$'
ctlc --json health
expect_py "health (--json)" \
    'd["status"] == "SERVING" and d["service"] == "coordinator" and d["world_size"] == 4 and d["groups"] == 4 and d["config"].endswith("cluster.yaml")'

# groups
NAME127=a_group_name_exactly_127_bytes_long_which_is_the_hccl_limit_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
if [ "${#NAME127}" -ne 127 ]; then
    fail "test setup: the 127-byte name is ${#NAME127} bytes"
fi
ctlc groups
expect_out "groups lists hccl_world_group with 4 ranks" '^4 +builtin +[0-9]+ +hccl_world_group$'
expect_out "groups lists experts_even (config, 2 ranks)" '^2 +config +[0-9]+ +experts_even$'
expect_out "groups lists experts_odd (config, 2 ranks)" '^2 +config +[0-9]+ +experts_odd$'
expect_out "groups lists the 127-byte group (config, 4 ranks)" "^4 +config +[0-9]+ +$NAME127\$"
ctlc --json groups
expect_py "groups (--json) lists exactly the world and the 3 config groups" \
    '[(g["name"], g["size"], g["origin"]) for g in d] == [("hccl_world_group", 4, "builtin"), ("experts_even", 2, "config"), ("experts_odd", 2, "config"), ("'"$NAME127"'", 4, "config")]'

# resolve
ctlc resolve "$NAME127"
expect_out "resolve the 127-byte group name" "^group $NAME127: 4 ranks, epoch [0-9]+\$"
ctlc --json resolve "$NAME127"
expect_py "resolve the 127-byte group name (--json)" \
    'len(d["name"]) == 127 and [m["world_rank"] for m in d["members"]] == [0, 1, 2, 3]'
ctlc resolve "$NAME128"
expect_err "resolve a 128-byte group name: INVALID_ARGUMENT" 1 \
    '^a2a-ctl: resolve: INVALID_ARGUMENT: .*128'
ctlc resolve x
expect_err "resolve an unknown group: NOT_FOUND" 1 '^a2a-ctl: resolve: NOT_FOUND: no group "x"$'
ctlc --json resolve hccl_world_group
expect_py "resolve hccl_world_group (--json): world ranks 0..3 in order with their workers" \
    '[(m["group_rank"], m["world_rank"], m["worker"]) for m in d["members"]] == [(0, 0, "node-a"), (1, 1, "node-a"), (2, 2, "node-b"), (3, 3, "node-b")] and d["size"] == 4 and d["name"] == "hccl_world_group"'
expect_py "resolve hccl_world_group (--json): worker URLs from the file" \
    '[m["url"] for m in d["members"]] == ["tcp://127.0.0.1:7100"] * 2 + ["tcp://127.0.0.1:7200"] * 2 and [m["data_url"] for m in d["members"]] == ["tcp://127.0.0.1:7101"] * 2 + ["tcp://127.0.0.1:7201"] * 2'
ctlc resolve hccl_world_group
expect_out "resolve hccl_world_group (text)" '^group hccl_world_group: 4 ranks, epoch [0-9]+$'
ctlc --json resolve experts_odd
expect_py "resolve experts_odd (--json): world ranks 1 and 3" \
    '[(m["group_rank"], m["world_rank"], m["worker"]) for m in d["members"]] == [(0, 1, "node-a"), (1, 3, "node-b")]'
ctlc resolve experts_even
expect_out "resolve experts_even (text): group rank 1 is world rank 2 on node-b" \
    '^1 +2 +node-b +tcp://127\.0\.0\.1:7200$'

# create and destroy
ctlc --json create itest_group 3 1
expect_py "create itest_group 3 1" \
    'd["name"] == "itest_group" and [m["world_rank"] for m in d["members"]] == [3, 1]'
EPOCH1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["epoch"])' "$OUT" 2>/dev/null || echo none)
ctlc --json create itest_group 3 1
expect_py "create itest_group again with the same members (idempotent, same epoch)" \
    'd["epoch"] == '"${EPOCH1//none/-1}"' and [m["world_rank"] for m in d["members"]] == [3, 1]'
ctlc create itest_group 1 3
expect_err "create itest_group with other members: ALREADY_EXISTS" 1 \
    '^a2a-ctl: create: ALREADY_EXISTS: .*itest_group'
ctlc create experts_even 0 2
expect_out "create a config group with its own members (idempotent)" '^group experts_even: 2 ranks'
ctlc create experts_even 1 3
expect_err "create a config group with other members: ALREADY_EXISTS" 1 \
    '^a2a-ctl: create: ALREADY_EXISTS: '
ctlc create hccl_world_group 0 1 2 3
expect_err "create hccl_world_group fails" 1 '^a2a-ctl: create: [A-Z_]+: .*hccl_world_group'
ctlc create itest_range 0 4
expect_err "create with an out-of-range rank: INVALID_ARGUMENT" 1 \
    '^a2a-ctl: create: INVALID_ARGUMENT: .*4'
ctlc create itest_dup 2 2
expect_err "create with a duplicate rank: INVALID_ARGUMENT" 1 '^a2a-ctl: create: INVALID_ARGUMENT: '
ctlc create itest_neg -1
expect_err "create with a negative rank: INVALID_ARGUMENT" 1 '^a2a-ctl: create: INVALID_ARGUMENT: '
ctlc create "$NAME128" 0
expect_err "create with a 128-byte name: INVALID_ARGUMENT" 1 '^a2a-ctl: create: INVALID_ARGUMENT: '
ctlc resolve itest_group
expect_out "resolve itest_group: group rank 0 is world rank 3" '^0 +3 +node-b '
ctlc --json groups
expect_py "groups lists itest_group as runtime" \
    '("itest_group", 2, "runtime") in [(g["name"], g["size"], g["origin"]) for g in d] and len(d) == 5'
ctlc destroy itest_group
expect_out "destroy itest_group" '^destroyed itest_group$'
ctlc destroy itest_group
expect_err "destroy itest_group again: NOT_FOUND" 1 '^a2a-ctl: destroy: NOT_FOUND: no group "itest_group"$'
ctlc resolve itest_group
expect_err "resolve a destroyed group: NOT_FOUND" 1 '^a2a-ctl: resolve: NOT_FOUND: no group "itest_group"$'
ctlc destroy hccl_world_group
expect_err "destroy hccl_world_group fails" 1 '^a2a-ctl: destroy: [A-Z_]+: .*hccl_world_group'
ctlc destroy experts_even
expect_err "destroy a config group fails" 1 '^a2a-ctl: destroy: [A-Z_]+: .*experts_even'
ctlc resolve experts_even
expect_out "a config group survives a refused destroy" '^group experts_even: 2 ranks'
ctlc --json create itest_group 0 1 2
expect_py "create a destroyed name again with new members" \
    '[m["world_rank"] for m in d["members"]] == [0, 1, 2]'

# names the contract refuses, and one it must carry intact
ctlc create "" 0
expect_err "create with an empty name: INVALID_ARGUMENT" 1 '^a2a-ctl: create: INVALID_ARGUMENT: '
ctlc create $'itest\nnewline' 0
expect_err "create with a control character in the name: INVALID_ARGUMENT" 1 \
    '^a2a-ctl: create: INVALID_ARGUMENT: '
ctlc resolve ""
expect_err "resolve an empty name: INVALID_ARGUMENT" 1 '^a2a-ctl: resolve: INVALID_ARGUMENT: '
export QNAME='itest "quoted" \ name'
ctlc --json create "$QNAME" 1
expect_py "create a name with quotes and a backslash (--json escapes it)" \
    'd["name"] == env["QNAME"]'
ctlc --json destroy "$QNAME"
expect_py "destroy --json prints valid JSON for a name with quotes" \
    'd == {"destroyed": env["QNAME"]}'

# concurrent calls: 24 identical creates, 24 distinct ones, all at once
for i in $(seq 1 24); do
    timeout 20 "$CTL" --coordinator "$URL" create itest_same 0 3 >/dev/null 2>>"$TMP/par.err" &
    PIDS+=($!)
    timeout 20 "$CTL" --coordinator "$URL" create "itest_par_$i" "$((i % 4))" >/dev/null \
        2>>"$TMP/par.err" &
    PIDS+=($!)
done
PAR_FAILED=0
for pid in "${PIDS[@]}"; do
    [ "$pid" = "$MAIN_PID" ] && continue
    wait_exit "$pid" 25
    [ "$EXIT_RC" -eq 0 ] || PAR_FAILED=$((PAR_FAILED + 1))
done
cat "$TMP/par.err" >>"$CTL_ALL_ERR"
if [ "$PAR_FAILED" -eq 0 ]; then
    pass "48 concurrent creates all succeed"
else
    fail "48 concurrent creates all succeed" "$PAR_FAILED failed:" "$(show "$TMP/par.err")"
fi
ctlc --json groups
expect_py "groups after concurrent creates: itest_same once, 24 itest_par_*" \
    '[g["name"] for g in d].count("itest_same") == 1 and len([g for g in d if g["name"].startswith("itest_par_")]) == 24'
for i in $(seq 1 24); do
    ctlc destroy "itest_par_$i"
    [ "$RC" -eq 0 ] || fail "destroy itest_par_$i" "$(show "$ERR")"
done
ctlc destroy itest_same
expect_out "destroy the concurrently created groups" '^destroyed itest_same$'

# A2A_COORDINATOR_URL instead of --coordinator
CTL_SEQ=$((CTL_SEQ + 1))
OUT=$TMP/ctl.$CTL_SEQ.out ERR=$TMP/ctl.$CTL_SEQ.err RC=0
A2A_COORDINATOR_URL=$URL timeout 20 "$CTL" health >"$OUT" 2>"$ERR" || RC=$?
cat "$ERR" >>"$CTL_ALL_ERR"
expect_out "health with A2A_COORDINATOR_URL" '^SERVING: coordinator'
CTL_SEQ=$((CTL_SEQ + 1))
OUT=$TMP/ctl.$CTL_SEQ.out ERR=$TMP/ctl.$CTL_SEQ.err RC=0
A2A_COORDINATOR_URL=$URL timeout 20 "$CTL" --json resolve experts_odd >"$OUT" 2>"$ERR" || RC=$?
cat "$ERR" >>"$CTL_ALL_ERR"
expect_py "resolve with A2A_COORDINATOR_URL" '[m["world_rank"] for m in d["members"]] == [1, 3]'
CTL_SEQ=$((CTL_SEQ + 1))
OUT=$TMP/ctl.$CTL_SEQ.out ERR=$TMP/ctl.$CTL_SEQ.err RC=0
A2A_COORDINATOR_URL=tcp://127.0.0.1:1 timeout 20 "$CTL" --coordinator "$URL" health \
    >"$OUT" 2>"$ERR" || RC=$?
cat "$ERR" >>"$CTL_ALL_ERR"
expect_out "--coordinator overrides A2A_COORDINATOR_URL" '^SERVING: coordinator'

# garbage on the coordinator's port
for i in 1 2 3 4 5; do
    head -c 4096 /dev/urandom >"$TMP/garbage.$i"
    send_raw "$PORT" "$TMP/garbage.$i"
done
# A valid SP header (REQ, protocol 0x30) then a frame of random bytes.
{ printf '\x00SP\x00\x00\x30\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00'; head -c 256 /dev/urandom; } \
    >"$TMP/sp-garbage"
send_raw "$PORT" "$TMP/sp-garbage"
# The same with a request id (high bit set) so the RPC layer sees the garbage.
{ printf '\x00SP\x00\x00\x30\x00\x00\x00\x00\x00\x00\x00\x00\x01\x04\x80\x00\x00\x01'
  head -c 256 /dev/urandom; } >"$TMP/sp-garbage-id"
send_raw "$PORT" "$TMP/sp-garbage-id"
# A msgpack-looking body: a map with a huge declared size.
{ printf '\x00SP\x00\x00\x30\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0b\x80\x00\x00\x02'
  printf '\xdf\xff\xff\xff\xff\xa1x'; } >"$TMP/sp-msgpack"
send_raw "$PORT" "$TMP/sp-msgpack"
# A frame claiming 2^63 bytes, and one cut short.
printf '\x00SP\x00\x00\x30\x00\x00\x7f\xff\xff\xff\xff\xff\xff\xff' >"$TMP/sp-huge"
send_raw "$PORT" "$TMP/sp-huge"
printf '\x00SP\x00\x00\x30\x00\x00\x00\x00\x00\x00\x00\x10\x00\x00\x80\x00' >"$TMP/sp-short"
send_raw "$PORT" "$TMP/sp-short"
# A wrong protocol (PUB, 0x20) in an otherwise valid header.
printf '\x00SP\x00\x00\x20\x00\x00' >"$TMP/sp-pub"
send_raw "$PORT" "$TMP/sp-pub"
if kill -0 "$MAIN_PID" 2>/dev/null; then
    pass "coordinator survives random bytes and bad SP frames"
else
    fail "coordinator survives random bytes and bad SP frames" "$(show "$TMP/main.err")"
fi
# An idle connection that never sends its header must not block others.
exec 7<>"/dev/tcp/127.0.0.1/$PORT"
ctlc health
expect_out "health after garbage, with an idle connection open" '^SERVING: coordinator'
exec 7>&-
ctlc --json resolve itest_group
expect_py "runtime group intact after garbage" '[m["world_rank"] for m in d["members"]] == [0, 1, 2]'

# unreachable coordinator: take a port, then free it
start_coord gone "$CLUSTER" || true
GONE_URL=$CURL
GONE_PID=$CPID
kill -TERM "$GONE_PID" 2>/dev/null || true
wait_exit "$GONE_PID" 5
T0=$(date +%s%N)
# --timeout bounds the wait for a connection; a port that refuses for 1 s ends it early
ctl --coordinator "${GONE_URL:-tcp://127.0.0.1:1}" --timeout 2000 health
T1=$(date +%s%N)
MS=$(((T1 - T0) / 1000000))
expect_err "unreachable coordinator: exit 1 with UNAVAILABLE and the reason" 1 \
    '^a2a-ctl: health: UNAVAILABLE: cannot reach tcp://[0-9.:]+ in [0-9]+ ms: nothing listens there \(connection refused: is it running\?\)'
if [ "$MS" -lt 5000 ]; then
    pass "unreachable coordinator fails within 5 s (${MS} ms)"
else
    fail "unreachable coordinator fails within 5 s" "took ${MS} ms"
fi
T0=$(date +%s%N)
ctl --coordinator tcp://127.0.0.1:1 --timeout 300 resolve experts_even
T1=$(date +%s%N)
MS=$(((T1 - T0) / 1000000))
expect_err "unreachable coordinator with --timeout 300: exit 1 with UNAVAILABLE or DEADLINE_EXCEEDED" 1 \
    '^a2a-ctl: resolve: (UNAVAILABLE|DEADLINE_EXCEEDED): '
if [ "$MS" -lt 3000 ]; then
    pass "unreachable coordinator with --timeout 300 fails within 3 s (${MS} ms)"
else
    fail "unreachable coordinator with --timeout 300 fails within 3 s" "took ${MS} ms"
fi
ctl --coordinator 'bogus://x' health
expect_err "a bad coordinator URL: exit 1 with one line" 1 '^a2a-ctl: health: [A-Z_]+: '

# ---- reload ----

RELOAD=$TMP/reload.yaml
cp "$CLUSTER" "$RELOAD"
if start_coord reload "$RELOAD"; then
    RPID=$CPID
    RURL=$CURL
    ctl --coordinator "$RURL" create itest_runtime 2 0
    expect_out "reload: create a runtime group before reloading" '^group itest_runtime: 2 ranks'
    printf '  - name: itest_added\n    ranks: [3, 0]\n' >>"$RELOAD"
    kill -HUP "$RPID"
    # bounded wait for the reload to take effect
    if timeout 10 bash -c 'until grep -q "reloaded" "$1"; do sleep 0.05; done' _ "$TMP/reload.err"; then
        pass "reload: SIGHUP reloads the edited file"
    else
        fail "reload: SIGHUP reloads the edited file" "$(show "$TMP/reload.err")"
    fi
    ctl --coordinator "$RURL" --json resolve itest_added
    expect_py "reload: the added group resolves" \
        '[(m["world_rank"], m["worker"]) for m in d["members"]] == [(3, "node-b"), (0, "node-a")]'
    ctl --coordinator "$RURL" --json groups
    expect_py "reload: groups lists the added group (config) and keeps the runtime group" \
        '("itest_added", 2, "config") in [(g["name"], g["size"], g["origin"]) for g in d] and ("itest_runtime", 2, "runtime") in [(g["name"], g["size"], g["origin"]) for g in d]'

    GOOD_LINES=$(wc -l <"$RELOAD")
    cp "$RELOAD" "$TMP/reload.good"
    printf '  - name: itest_broken\n    ranks: [1]\n    colour: red\n' >>"$RELOAD"
    BAD_LINE=$((GOOD_LINES + 3))
    kill -HUP "$RPID"
    if timeout 10 bash -c 'until grep -q "reload refused" "$1"; do sleep 0.05; done' _ "$TMP/reload.err"; then
        pass "reload: a broken file is refused"
    else
        fail "reload: a broken file is refused" "$(show "$TMP/reload.err")"
    fi
    if grep -Eq "reload refused.*$RELOAD:$BAD_LINE:[0-9]+: .*colour" "$TMP/reload.err"; then
        pass "reload: stderr gives file:line:column of the unknown key"
    else
        fail "reload: stderr gives file:line:column of the unknown key" \
            "want $RELOAD:$BAD_LINE:COL; stderr:" "$(show "$TMP/reload.err")"
    fi
    if kill -0 "$RPID" 2>/dev/null; then
        pass "reload: the coordinator keeps running after a broken file"
    else
        fail "reload: the coordinator keeps running after a broken file" "$(show "$TMP/reload.err")"
    fi
    ctl --coordinator "$RURL" health
    expect_out "reload: health after a broken file" '^SERVING: coordinator, 4 ranks, 6 groups'
    ctl --coordinator "$RURL" --json resolve itest_added
    expect_py "reload: the last good groups are still served" \
        '[m["world_rank"] for m in d["members"]] == [3, 0]'
    ctl --coordinator "$RURL" resolve itest_broken
    expect_err "reload: the broken file's group is not served" 1 '^a2a-ctl: resolve: NOT_FOUND: '

    # a file that fails to parse at all, then a file that cannot be read
    printf 'workers: [\n' >"$RELOAD"
    kill -HUP "$RPID"
    timeout 10 bash -c 'until [ "$(grep -c "reload refused" "$1")" -ge 2 ]; do sleep 0.05; done' \
        _ "$TMP/reload.err" || true
    rm -f "$RELOAD"
    kill -HUP "$RPID"
    timeout 10 bash -c 'until [ "$(grep -c "reload refused" "$1")" -ge 3 ]; do sleep 0.05; done' \
        _ "$TMP/reload.err" || true
    if [ "$(grep -c "reload refused" "$TMP/reload.err")" -ge 3 ]; then
        pass "reload: a syntax error and a missing file are refused too"
    else
        fail "reload: a syntax error and a missing file are refused too" "$(show "$TMP/reload.err")"
    fi
    ctl --coordinator "$RURL" --json resolve itest_added
    expect_py "reload: still serving the last good groups" '[m["world_rank"] for m in d["members"]] == [3, 0]'

    # back to the shipped file: the added group goes away
    cp "$CLUSTER" "$RELOAD"
    kill -HUP "$RPID"
    timeout 10 bash -c 'until [ "$(grep -c "reloaded" "$1")" -ge 2 ]; do sleep 0.05; done' \
        _ "$TMP/reload.err" || true
    ctl --coordinator "$RURL" resolve itest_added
    expect_err "reload: a group removed from the file is gone" 1 '^a2a-ctl: resolve: NOT_FOUND: '
    ctl --coordinator "$RURL" --json resolve itest_runtime
    expect_py "reload: the runtime group survives reloads" '[m["world_rank"] for m in d["members"]] == [2, 0]'

    # SIGINT stops it cleanly too
    kill -INT "$RPID"
    wait_exit "$RPID" 5
    [ "$EXIT_RC" -eq 0 ] && pass "SIGINT stops the coordinator with exit 0 within 5 s" ||
        fail "SIGINT stops the coordinator with exit 0 within 5 s" "exit $EXIT_RC" \
            "$(show "$TMP/reload.err")"
else
    fail "reload: coordinator starts on a copy of the config" "$(show "$TMP/reload.err")"
fi

# ---- SIGTERM ----

ctlc health
expect_out "health just before SIGTERM" '^SERVING: coordinator'
kill -TERM "$MAIN_PID"
T0=$(date +%s%N)
wait_exit "$MAIN_PID" 5
T1=$(date +%s%N)
if [ "$EXIT_RC" -eq 0 ]; then
    pass "SIGTERM stops the coordinator with exit 0 within 5 s ($(((T1 - T0) / 1000000)) ms)"
else
    fail "SIGTERM stops the coordinator with exit 0 within 5 s" "exit $EXIT_RC (124: still running)" \
        "$(show "$TMP/main.err")"
fi
ctlc --timeout 1000 health
expect_err "a stopped coordinator no longer answers" 1 '^a2a-ctl: health: (UNAVAILABLE|DEADLINE_EXCEEDED): '

# ---- sanitizer reports ----

SAN_RE='ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:|WARNING: ThreadSanitizer'
SAN_HITS=$(grep -El "$SAN_RE" "$TMP"/*.err 2>/dev/null || true)
if [ -z "$SAN_HITS" ]; then
    pass "no sanitizer reports in any stderr"
else
    fail "no sanitizer reports in any stderr" "in: $(echo "$SAN_HITS" | xargs -n1 basename | tr '\n' ' ')" \
        "$(grep -Eh -A12 "$SAN_RE" $SAN_HITS | head -n 40)"
fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
