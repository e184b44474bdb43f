#!/usr/bin/env bash
# test_auth_race.sh - a caller that holds the token is never told
# PERMISSION_DENIED because its connection was replaced while it called
# (issue 11; docs/RELIABILITY.md, finding 2), with the real binaries.
#
# usage: test_auth_race.sh A2A_COORDINATOR A2A_CTL
#
# The RPC client checks that its connection proved the token, then sends the
# call on the socket; NNG's REQ socket sends it on whatever connection is up
# by then. When the connection goes and NNG dials a new one in between, the
# call goes out on a connection that never proved the token, and the server
# refuses it "authentication required" (PERMISSION_DENIED) before running it.
# Seen twice in the 500-fault campaign (a worker's ResolveGroup, relayed to a
# job) when the worker ran late after a SIGSTOP or under load. Here the gap
# is made wide and certain: a2a-ctl (with the token) runs under gdb in
# non-stop mode, its calling thread is held at the call's send
# (client_roundtrip, third time: AuthChallenge, AuthProve, then the call)
# while NNG's threads keep running; the coordinator is killed and started
# again, NNG connects anew; then the thread goes on.
# PASS: `a2a-ctl health` succeeds (the refused call, which did not run, is sent
# again once the new connection proved the token). FAIL: PERMISSION_DENIED, or
# any other failure. SKIP without gdb.
set -u
coord_bin=$1 ctl_bin=$2
command -v gdb >/dev/null || {
    echo "SKIP: no gdb"
    exit 0
}
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-authrace.XXXXXX")
cfg=$dir/cluster.yaml
declare -A pid=()
rank_pids=()
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=services.sh
. "$here/services.sh"
# shellcheck source=cluster.sh
. "$here/cluster.sh"
trap services_cleanup EXIT
trap 'exit 130' INT TERM
export A2A_LOG_LEVEL=${A2A_LOG_LEVEL:-info}
unset A2A_TOKEN_FILE
token=$dir/token
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$token"
chmod 600 "$token"

write_config() {
    cat >"$cfg" <<EOF
coordinator:
  url: tcp://127.0.0.1:${ports[0]}
security:
  token_file: $token
workers:
  - name: w0
    url: tcp://127.0.0.1:${ports[1]}
    data_url: tcp://127.0.0.1:${ports[2]}
    socket: $dir/w0.sock
    ranks: 1
EOF
}
start_cluster 3 # the coordinator only
disown -a # its kill below is ours: no "Killed" line from bash
url=tcp://127.0.0.1:${ports[0]}

# restart.sh: run by gdb while the calling thread is held
cat >"$dir/restart.sh" <<EOF
#!/usr/bin/env bash
kill -9 \$(cat "$dir/coord.pid")
sleep 0.3
"$coord_bin" --config "$cfg" >>"$dir/coordinator.log" 2>&1 &
echo \$! >"$dir/coord.pid"
for i in \$(seq 100); do
    grep -c "listening on" "$dir/coordinator.log" | grep -q 2 && break
    sleep 0.05
done
sleep 1.5 # NNG redials (at most 500 ms between tries) and the new connection comes up
echo "restart.sh: coordinator restarted (pid \$(cat "$dir/coord.pid"))"
EOF
echo "${pid[coordinator]}" >"$dir/coord.pid"
pid[coordinator]= # from here the pid file has it
cat >"$dir/gdb.cmds" <<EOF
set pagination off
set confirm off
set non-stop on
break client_roundtrip
ignore 1 2
commands 1
  silent
  echo held before the call's send\n
  shell bash $dir/restart.sh
  delete 1
  continue
end
run
EOF
# LeakSanitizer cannot run under ptrace (the ASan stage): no leak check for this one process
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout 60 gdb -q -batch -x "$dir/gdb.cmds" --args "$ctl_bin" --coordinator "$url" \
    --token-file "$token" --timeout 20000 health >"$dir/gdb.log" 2>&1
rc=$?
kill -9 "$(cat "$dir/coord.pid")" 2>/dev/null
cat "$dir/gdb.log" | grep -v "^\[New Thread\|^\[Thread\|^\[Inferior\|libthread_db\|^Using host"
grep -q "held before the call's send" "$dir/gdb.log" || fail "the breakpoint was not reached (rc $rc)"
grep -q "coordinator restarted" "$dir/gdb.log" || fail "the coordinator was not restarted"
if grep -q "PERMISSION_DENIED\|authentication required" "$dir/gdb.log"; then
    fail "a2a-ctl, which has the token, was told PERMISSION_DENIED"
fi
grep -q "exited normally" "$dir/gdb.log" || fail "a2a-ctl health did not succeed"
echo "PASS"
