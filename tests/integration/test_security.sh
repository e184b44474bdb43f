#!/usr/bin/env bash
# test_security.sh - security.token_file and security.tls, end to end.
#
# usage: test_security.sh A2A_COORDINATOR A2A_WORKER A2A_CTL EXCHANGE_CHECK SECURITY_CHECK
#                         BOUNDARY_CHECK
# (KEEP_DIR=1 keeps the logs, certificates and YAML)
#
# Part 1, token: a coordinator and two workers (node-a: world ranks 0 1,
# node-b: 2 3) from a YAML with security.token_file. a2a-ctl without the
# token, with a wrong one, with the right one; four ranks of exchange_check
# with A2A_TOKEN_FILE (peer links authenticated); a job without the token; a
# job claiming a rank of the other worker; security_check's attacks on a
# worker's data port and API (no proof, a replayed proof, garbage, a replayed
# RPC proof) while a verified loop runs; then a verified exchange; then
# boundary_check's attacks on node-a's local socket: descriptors that are no
# memfd or not sealed, ranks another job holds or node-a does not own, the
# worker's record of pid and uid (also as another uid), calls naming memory
# never handed over, and a new process on a dead job's pid.
#
# Part 2, TLS: the same cluster over tls+tcp:// with security.tls (and the
# token), certificates from a test CA made here with openssl; a2a-ctl and
# ranks with A2A_TLS_* set; a client certificate from an "evil" CA on the API
# and on the data port is refused, and the cluster serves on.
set -u
coord_bin=$1 worker_bin=$2 ctl=$3 check=$4 sec=$5 bcheck=$6
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-security.XXXXXX")
cfg=$dir/cluster.yaml
token=$dir/token
declare -A pid=() # service name -> pid
rank_pids=()
# shellcheck source=services.sh
. "$(dirname "${BASH_SOURCE[0]}")/services.sh"
trap services_cleanup EXIT
scheme=tcp # tls+tcp in part 2
part="token"

trap 'exit 130' INT TERM

fail() {
    echo "FAIL ($part): $*"
    show_logs
    exit 1
}

export A2A_LOG_LEVEL=${A2A_LOG_LEVEL:-info}
unset A2A_TOKEN_FILE A2A_TLS_CERT A2A_TLS_KEY A2A_TLS_CA

# port_busy PORT: something accepts connections on it.
port_busy() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# pick_ports: five free ports from 20000 + (pid + attempt) % 20000.
pick_ports() {
    local base=$((20000 + ($$ * 13 + $1 * 101 + RANDOM) % 20000)) p
    ports=()
    for ((p = base; ${#ports[@]} < 5 && p < 65000; p++)); do
        port_busy "$p" || ports+=("$p")
    done
}

url() { echo "$scheme://127.0.0.1:${ports[$1]}"; }
coord_url() { url 0; }
api_url() { url $((1 + 2 * $1)); }  # worker 0 = node-a, 1 = node-b
data_url() { url $((2 + 2 * $1)); }

# write_config [TLS]: the cluster YAML; with TLS, security.tls as well.
write_config() {
    cat >"$cfg" <<EOF
coordinator:
  url: $(coord_url)
workers:
  - name: node-a
    url: $(api_url 0)
    data_url: $(data_url 0)
    socket: $dir/node-a.sock
    ranks: 2
  - name: node-b
    url: $(api_url 1)
    data_url: $(data_url 1)
    socket: $dir/node-b.sock
    ranks: 2
security:
  token_file: $token
EOF
    if [ -n "${1:-}" ]; then
        cat >>"$cfg" <<EOF
  tls:
    cert: $dir/node.crt
    key: $dir/node.key
    ca: $dir/ca.crt
EOF
    fi
}

# start, wait_listening

stop_cluster() {
    local p
    for p in "${pid[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pid[@]}"; do wait "$p" 2>/dev/null; done
    pid=()
}

# start_cluster [TLS]
start_cluster() {
    local attempt
    for ((attempt = 0; attempt < 5; attempt++)); do
        pick_ports "$attempt"
        write_config "${1:-}"
        rm -f "$dir"/coordinator.log "$dir"/node-a.log "$dir"/node-b.log
        start coordinator "$dir/coordinator.log" "$coord_bin" --config "$cfg"
        if wait_listening coordinator "$dir/coordinator.log"; then
            start node-a "$dir/node-a.log" "$worker_bin" --config "$cfg" --name node-a
            start node-b "$dir/node-b.log" "$worker_bin" --config "$cfg" --name node-b
            if wait_listening node-a "$dir/node-a.log" && wait_listening node-b "$dir/node-b.log"; then
                return 0
            fi
        fi
        echo "attempt $attempt: the cluster did not start (a port taken?), trying other ports"
        show_logs
        stop_cluster
    done
    fail "the cluster did not start in 5 attempts"
}

alive() {
    local s
    for s in coordinator node-a node-b; do
        kill -0 "${pid[$s]}" 2>/dev/null || fail "$s died"
    done
}

# ctl_expect WANT(ok|PERMISSION_DENIED|fail) WHAT ARGS...: runs a2a-ctl ARGS, checks the outcome.
ctl_expect() {
    local want=$1 what=$2 out rc
    shift 2
    out=$("$ctl" --timeout 4000 "$@" 2>&1)
    rc=$?
    echo "  $what: exit $rc: $(echo "$out" | head -n 1)"
    case $want in
    ok) ((rc == 0)) || fail "$what: a2a-ctl failed: $out" ;;
    fail) ((rc == 1)) || fail "$what: a2a-ctl should fail with exit 1, got $rc: $out" ;;
    *)
        ((rc == 1)) || fail "$what: a2a-ctl should fail with exit 1, got $rc: $out"
        grep -q "$want" <<<"$out" || fail "$what: expected $want, got: $out"
        ;;
    esac
    ctl_out=$out
}

# run_ranks LOGPREFIX ARGS...: starts world ranks 0..3 of exchange_check ARGS (env as set).
run_ranks() {
    local prefix=$1 r
    shift
    rank_pids=()
    for r in 0 1 2 3; do
        A2A_WORKER_URL=$(api_url $((r / 2))) A2A_RANK=$r A2A_WORLD_SIZE=4 \
            A2A_COORDINATOR_URL=$(coord_url) \
            "$check" "$@" >"$dir/$prefix$r.log" 2>&1 &
        rank_pids+=($!)
    done
}

# wait_ranks SECONDS: 0 when all ranks exited 0 within SECONDS; prints who failed.
wait_ranks() {
    local end=$((SECONDS + $1)) r st ok=0
    for ((r = 0; r < ${#rank_pids[@]}; r++)); do
        while kill -0 "${rank_pids[r]}" 2>/dev/null && ((SECONDS < end)); do
            sleep 0.1
        done
        if kill -0 "${rank_pids[r]}" 2>/dev/null; then
            echo "rank $r still runs after $1 s"
            kill -9 "${rank_pids[r]}" 2>/dev/null
            ok=1
            continue
        fi
        wait "${rank_pids[r]}"
        st=$?
        if ((st != 0)); then
            echo "rank $r exited with $st: $(tail -n 3 "$dir/$prefix_last$r.log" 2>/dev/null)"
            ok=1
        fi
    done
    rank_pids=()
    return $ok
}

# exchange PREFIX SEED: a verified random exchange on all four ranks, with the env as set.
exchange() {
    local prefix=$1 seed=$2 r
    prefix_last=$prefix
    run_ranks "$prefix" random "$seed" 2
    wait_ranks 60 || fail "exchange $prefix failed: $(cat "$dir/$prefix"*.log)"
    for r in 0 1 2 3; do
        grep -q "random ok" "$dir/$prefix$r.log" || fail "rank $r: no \"random ok\" in $prefix"
    done
    echo "  exchange $prefix: 4 ranks random ok"
}

# one_job LOG RANK WORKER: one exchange_check rank that must fail in a2a_job_open; prints why.
one_job() {
    local log=$1 rank=$2 w=$3 rc
    A2A_WORKER_URL=$(api_url "$w") A2A_RANK=$rank A2A_WORLD_SIZE=4 \
        A2A_COORDINATOR_URL=$(coord_url) timeout 30 "$check" random 1 1 >"$log" 2>&1
    rc=$?
    ((rc != 0)) || fail "a job that must be refused ran: $(cat "$log")"
    grep -m1 "a2a_job_open" "$log"
}

# ============================== part 1: the token ==============================
if command -v openssl >/dev/null; then
    openssl rand -hex 32 >"$token"
else
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$token"
fi
echo "wrong-token-$(date +%s%N)-padding" >"$dir/wrong-token"
chmod 600 "$token" "$dir/wrong-token"

start_cluster
echo "token cluster: coordinator ${ports[0]}, node-a ${ports[1]}/${ports[2]}, node-b ${ports[3]}/${ports[4]}"

echo "a2a-ctl:"
ctl_expect PERMISSION_DENIED "health without a token" --coordinator "$(coord_url)" health
grep -q "authentication required.*--token-file FILE" <<<"$ctl_out" ||
    fail "a2a-ctl without the token is not told of --token-file: $ctl_out"
ctl_expect PERMISSION_DENIED "health with a wrong token" --coordinator "$(coord_url)" \
    --token-file "$dir/wrong-token" health
grep -qi "wrong token" <<<"$ctl_out" || fail "the wrong-token refusal does not say so: $ctl_out"
ctl_expect ok "health with --token-file" --coordinator "$(coord_url)" --token-file "$token" health
A2A_TOKEN_FILE=$token ctl_expect ok "health with A2A_TOKEN_FILE" --coordinator "$(coord_url)" health
ctl_expect PERMISSION_DENIED "worker node-a's API without a token" --coordinator "$(api_url 0)" health
ctl_expect ok "worker node-a's API with the token" --coordinator "$(api_url 0)" \
    --token-file "$token" health

echo "jobs:"
export A2A_TOKEN_FILE=$token
exchange token 7
unset A2A_TOKEN_FILE
why=$(one_job "$dir/notoken.log" 0 0)
echo "  a job without the token: $why"
grep -q "a2a_job_open: PERMISSION_DENIED" <<<"$why" || fail "a job without the token: $why"
# a job has no --token-file: it is told of the variable it reads
grep -q "authentication required.*A2A_TOKEN_FILE" <<<"$why" && ! grep -q -- "--token-file" <<<"$why" ||
    fail "a job without the token is not told of A2A_TOKEN_FILE (alone): $why"
why=$(A2A_TOKEN_FILE=$token one_job "$dir/otherrank.log" 2 0)
echo "  a job claiming rank 2 on node-a: $why"
grep -q "a2a_job_open: PERMISSION_DENIED" <<<"$why" || fail "a job claiming rank 2 on node-a: $why"
why=$(A2A_TOKEN_FILE=$dir/wrong-token one_job "$dir/wrongjob.log" 0 0)
echo "  a job with a wrong token: $why"
grep -q "a2a_job_open: PERMISSION_DENIED" <<<"$why" || fail "a job with a wrong token: $why"

echo "attacks, while a verified loop runs on all four ranks:"
export A2A_TOKEN_FILE=$token
prefix_last=loop
run_ranks loop loop 8
loop_pids=("${rank_pids[@]}")
sleep 1
"$sec" link-noproof "$(data_url 0)" node-b || fail "link-noproof"
"$sec" link-replay "$(data_url 0)" "$token" node-b || fail "link-replay"
"$sec" link-control "$(data_url 0)" "$token" a2a-security-check || fail "link-control"
"$sec" link-garbage "$(data_url 0)" || fail "link-garbage"
"$sec" link-garbage "$(data_url 1)" || fail "link-garbage on node-b"
"$sec" rpc-replay "$(api_url 0)" "$token" || fail "rpc-replay on node-a"
"$sec" rpc-replay "$(coord_url)" "$token" || fail "rpc-replay on the coordinator"
# the worker's log says why it closed each link: the control's proof passed (and only the name
# was unknown), so the refusals of the other two are for their proofs, not for a broken checker
grep -q 'HELLO from "node-b" without a proof of the token: PERMISSION_DENIED' "$dir/node-a.log" ||
    fail "node-a's log does not show the HELLO without a proof refused"
grep -q 'HELLO from "node-b" with a wrong proof of the token: PERMISSION_DENIED' "$dir/node-a.log" ||
    fail "node-a's log does not show the replayed proof refused"
grep -q 'HELLO from unknown worker "a2a-security-check"' "$dir/node-a.log" ||
    fail "node-a's log does not show the control's correct proof accepted (then its name refused)"
rank_pids=("${loop_pids[@]}")
wait_ranks 60 || fail "the loop under attack did not end well: $(cat "$dir"/loop*.log)"
for r in 0 1 2 3; do
    line=$(grep -h "operations verified" "$dir/loop$r.log")
    echo "  rank $r: $line"
    grep -q " 0 failed" <<<"$line" || fail "rank $r lost operations during the attacks: $line"
done
alive
exchange after 8

echo "the local socket (the job-to-worker boundary) of node-a:"
chmod 711 "$dir" # the socket's folder lets another uid reach it (the token file stays 600)
for m in fds ranks creds; do
    "$bcheck" $m "$dir/node-a.sock" "$token" | sed 's/^/  /'
    ((PIPESTATUS[0] == 0)) || fail "boundary_check $m"
done
"$bcheck" memory "$dir/node-a.sock" "$token" "$(api_url 0)" | sed 's/^/  /'
((PIPESTATUS[0] == 0)) || fail "boundary_check memory"
"$bcheck" pid-reuse "$dir/node-a.sock" "$token" "$(api_url 0)" "${pid[node-a]}" | sed 's/^/  /'
((PIPESTATUS[0] == 0)) || fail "boundary_check pid-reuse"
alive
A2A_TOKEN_FILE=$token exchange boundary 9

echo "a listener without the token on node-b's data port (node-b stopped):"
kill "${pid[node-b]}" 2>/dev/null
wait "${pid[node-b]}" 2>/dev/null
"$sec" rogue-listener "$(data_url 1)" >"$dir/rogue.log" 2>&1 &
rogue=$!
for ((i = 0; i < 50; i++)); do
    grep -q "listening on" "$dir/rogue.log" && break
    sleep 0.1
done
# rank 0 alone: node-a dials node-b for its READY and must refuse the rogue's WELCOME (again
# if node-a had not yet noticed that node-b's old link is gone, and failed the op for that)
for ((i = 0; i < 3; i++)); do
    A2A_WORKER_URL=$(api_url 0) A2A_RANK=0 A2A_WORLD_SIZE=4 A2A_COORDINATOR_URL=$(coord_url) \
        timeout 30 "$check" random 1 1 >"$dir/rogue-job.log" 2>&1
    grep -q "HELLO from" "$dir/rogue.log" && break
done
wait "$rogue"
rc=$?
sed 's/^/  /' "$dir/rogue.log"
((rc == 0)) || fail "the rogue listener's check failed"
grep -q "node-b.*the listener did not prove the token" "$dir/node-a.log" ||
    fail "node-a's log does not say that node-b's listener did not prove the token"
echo "  node-a: $(grep -m1 "the listener did not prove the token" "$dir/node-a.log" | sed 's/.*: warn: //')"
grep -q "UNAVAILABLE.*node-b" "$dir/rogue-job.log" ||
    fail "the job did not get UNAVAILABLE naming node-b: $(cat "$dir/rogue-job.log")"
echo "  the job: $(grep -m1 "UNAVAILABLE" "$dir/rogue-job.log")"
unset A2A_TOKEN_FILE
stop_cluster
echo "part 1 (token): PASS"

# ============================== part 2: TLS ==============================
part="TLS"
command -v openssl >/dev/null || fail "openssl is needed to make the test certificates"
tls_fail=""
# shellcheck source=certs.sh
. "$(dirname "${BASH_SOURCE[0]}")/certs.sh"
{ mkca ca && mkcert node ca && mkcert client ca && mkca evilca && mkcert evil evilca; } ||
    fail "openssl could not make the certificates: $(cat "$dir/openssl.out")"
openssl verify -CAfile "$dir/ca.crt" "$dir/node.crt" "$dir/client.crt" >/dev/null ||
    fail "the test certificates do not verify"

scheme=tls+tcp
start_cluster tls
echo "TLS cluster: coordinator ${ports[0]}, node-a ${ports[1]}/${ports[2]}, node-b ${ports[3]}/${ports[4]}"
export A2A_TOKEN_FILE=$token
good=("A2A_TLS_CERT=$dir/client.crt" "A2A_TLS_KEY=$dir/client.key" "A2A_TLS_CA=$dir/ca.crt")
evil=("A2A_TLS_CERT=$dir/evil.crt" "A2A_TLS_KEY=$dir/evil.key" "A2A_TLS_CA=$dir/ca.crt")

# tls_check WHAT CMD...: runs a check of part 2; a failure is recorded, the next checks still run.
tls_check() {
    local what=$1
    shift
    if "$@"; then
        echo "  ok: $what"
    else
        echo "  FAILED: $what"
        tls_fail="$tls_fail; $what"
    fi
}

echo "a2a-ctl over TLS:"
ctl_tls() { # WANT WHAT ENV...
    local want=$1 what=$2 out rc
    shift 2
    out=$(env "$@" "$ctl" --timeout 4000 --coordinator "$(coord_url)" health 2>&1)
    rc=$?
    echo "  $what: exit $rc: $(echo "$out" | head -n 1)"
    if [ "$want" = ok ]; then
        ((rc == 0))
    else # refused, and the message says it was the TLS handshake
        ((rc == 1)) && [[ "$out" == *"cannot reach $(coord_url) in "*" ms: TLS handshake failed"* ]]
    fi
}
tls_check "health with a good client certificate" ctl_tls ok "good certificate" "${good[@]}"
tls_check "health with the evil certificate is refused" ctl_tls fail "evil certificate" "${evil[@]}"
tls_check "health without TLS settings is refused" ctl_tls fail "no TLS settings"
tls_check "health trusting only the evil CA is refused" ctl_tls fail "evil CA as trust anchor" \
    "A2A_TLS_CERT=$dir/client.crt" "A2A_TLS_KEY=$dir/client.key" "A2A_TLS_CA=$dir/evilca.crt"

echo "ranks over TLS:"
tls_exchange() {
    local r
    prefix_last=tls
    export "${good[@]}"
    run_ranks tls random 9 2
    unset A2A_TLS_CERT A2A_TLS_KEY A2A_TLS_CA
    wait_ranks 60 || return 1
    for r in 0 1 2 3; do grep -q "random ok" "$dir/tls$r.log" || return 1; done
    echo "  4 ranks random ok, data over TLS links"
}
tls_check "exchange_check random over TLS" tls_exchange
if [[ "$tls_fail" == *"exchange_check"* ]]; then
    for r in 0 1 2 3; do echo "  rank $r: $(tail -n 2 "$dir/tls$r.log")"; done
fi

echo "peers on the TLS data port:"
tls_check "a peer with a good certificate gets a TLS session" \
    "$sec" tls-peer "$(data_url 0)" "$dir/client.crt" "$dir/client.key" "$dir/ca.crt" accepted
tls_check "a peer with the evil certificate is refused" \
    "$sec" tls-peer "$(data_url 0)" "$dir/evil.crt" "$dir/evil.key" "$dir/ca.crt" refused
tls_check "a plain-TCP peer on the TLS data port is refused" \
    "$sec" link-garbage "tcp://127.0.0.1:${ports[2]}"
alive
tls_exchange2() {
    local r
    prefix_last=tls2
    export "${good[@]}"
    run_ranks tls2 random 10 2
    unset A2A_TLS_CERT A2A_TLS_KEY A2A_TLS_CA
    wait_ranks 60 || return 1
    for r in 0 1 2 3; do grep -q "random ok" "$dir/tls2$r.log" || return 1; done
}
tls_check "an exchange over TLS after the refused peers" tls_exchange2
alive
if [ -n "$tls_fail" ]; then
    echo "worker logs of the TLS cluster:"
    show_logs
    echo "FAIL (TLS): ${tls_fail#; }"
    exit 1
fi
echo "part 2 (TLS): PASS"
echo "PASS"
