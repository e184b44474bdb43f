#!/usr/bin/env bash
# test_tls_reload.sh - SIGHUP reads the security.tls files (certificate, key, CA) again, on the
# coordinator and the workers, without dropping established connections (issue 11, item 3).
#
# usage: test_tls_reload.sh A2A_COORDINATOR A2A_WORKER A2A_CTL EXCHANGE_CHECK
# (KEEP_DIR=1 keeps the logs)
#
# A TLS cluster (coordinator, w0: world ranks 0 1, w1: 2 3; tls+tcp:// everywhere) starts on
# certificates of CA "old". Four ranks loop verified exchanges while the cluster rotates to CA
# "new" the way an operator would, every service getting SIGHUP after each step:
#   1. ca.crt trusts both CAs;  2. node.crt/node.key are new's;  3. ca.crt trusts only new.
# No operation of the loop fails (its links and connections were made before). After each step
# a2a-ctl checks what new connections get: after 2 the servers present new's certificate (a
# client trusting only new gets in), after 3 old's client certificate is refused. Then w1 is
# restarted (links with w0 on new's certificates both ways) and the coordinator is restarted
# (w0's connection to it is dialed again, with the reloaded configuration), and four new ranks
# exchange. A bad key file keeps the configuration in use, and says why.
set -u
coord_bin=$1 worker_bin=$2 ctl_bin=$3 check=$4
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-tlsreload.XXXXXX")
cfg=$dir/cluster.yaml
declare -A pid=()
rank_pids=()
# shellcheck source=services.sh
. "$(dirname "${BASH_SOURCE[0]}")/services.sh"
# shellcheck source=cluster.sh
. "$(dirname "${BASH_SOURCE[0]}")/cluster.sh"
trap services_cleanup EXIT
trap 'exit 130' INT TERM
export A2A_LOG_LEVEL=${A2A_LOG_LEVEL:-info}
unset A2A_TOKEN_FILE A2A_TLS_CERT A2A_TLS_KEY A2A_TLS_CA
command -v openssl >/dev/null || fail "openssl is needed to make the test certificates"

# shellcheck source=certs.sh
. "$(dirname "${BASH_SOURCE[0]}")/certs.sh"
{ mkca oldca && mkcert old oldca && mkca newca && mkcert new newca; } ||
    fail "openssl could not make the certificates: $(cat "$dir/openssl.out")"
cat "$dir/oldca.crt" "$dir/newca.crt" >"$dir/both.crt"
mkdir -p "$dir/tls"
# put SRC DST: replaces DST in $dir/tls whole (a temporary file and rename, as an operator should)
put() {
    cp "$1" "$dir/tls/$2.tmp" && mv "$dir/tls/$2.tmp" "$dir/tls/$2"
}
put "$dir/old.crt" node.crt
put "$dir/old.key" node.key
put "$dir/oldca.crt" ca.crt

url() { echo "tls+tcp://127.0.0.1:${ports[$1]}"; }
write_config() {
    cat >"$cfg" <<EOF
coordinator:
  url: $(url 0)
security:
  tls:
    cert: $dir/tls/node.crt
    key: $dir/tls/node.key
    ca: $dir/tls/ca.crt
workers:
  - name: w0
    url: $(url 1)
    data_url: $(url 2)
    socket: $dir/w0.sock
    ranks: 2
  - name: w1
    url: $(url 3)
    data_url: $(url 4)
    socket: $dir/w1.sock
    ranks: 2
EOF
}

# ctl WANT WHAT URL CERT CA: a2a-ctl health at URL presenting CERT (old or new) and trusting CA
# (a file); WANT ok or refused (the TLS handshake failed)
ctl() {
    local want=$1 what=$2 u=$3 cert=$4 ca=$5 out rc
    out=$(A2A_TLS_CERT=$dir/$cert.crt A2A_TLS_KEY=$dir/$cert.key A2A_TLS_CA=$ca \
        "$ctl_bin" --timeout 4000 --coordinator "$u" health 2>&1)
    rc=$?
    echo "  $what: exit $rc: $(echo "$out" | head -n 1 | cut -c1-160)"
    if [ "$want" = ok ]; then
        ((rc == 0)) || fail "$what: wanted OK"
    else
        ((rc == 1)) && [[ "$out" == *"TLS handshake failed"* ]] || fail "$what: wanted a refused TLS handshake"
    fi
}

# run_ranks PREFIX CERT CA ARGS...: world ranks 0..3 of exchange_check ARGS over TLS
run_ranks() {
    local prefix=$1 cert=$2 ca=$3 r
    shift 3
    rank_pids=()
    for r in 0 1 2 3; do
        local w=$((r / 2))
        A2A_TLS_CERT=$dir/$cert.crt A2A_TLS_KEY=$dir/$cert.key A2A_TLS_CA=$ca \
            A2A_WORKER_URL=$(url $((1 + 2 * w))) A2A_RANK=$r A2A_WORLD_SIZE=4 \
            "$check" "$@" >"$dir/$prefix$r.log" 2>&1 &
        rank_pids+=($!)
    done
}

# hup NAME PATTERN: hup_until NAME with its log
hup() { hup_until "$1" "$dir/$1.log" "$2"; }
hup_all() { # WHAT
    local s
    for s in coordinator w0 w1; do
        hup "$s" "SIGHUP: TLS certificate $dir/tls/node.crt, key $dir/tls/node.key and CA $dir/tls/ca.crt read again" ||
            fail "$1: $s did not read the TLS files again: $(grep SIGHUP "$dir/$s.log" | tail -n 2)"
    done
    echo "$1: coordinator, w0 and w1 read the TLS files again"
}

start_cluster 5 w0 w1
echo "TLS cluster: coordinator ${ports[0]}, w0 ${ports[1]}/${ports[2]}, w1 ${ports[3]}/${ports[4]}"
ctl ok "health, old's certificate" "$(url 0)" old "$dir/oldca.crt"
ctl refused "health, new's certificate before the rotation" "$(url 0)" new "$dir/both.crt"

# ---- the rotation, under running ranks ----
n0=$(wc -l <"$dir/w0.log") n1=$(wc -l <"$dir/w1.log")
run_ranks loop old "$dir/oldca.crt" loop 12
sleep 2
put "$dir/both.crt" ca.crt
hup_all "step 1 (both CAs trusted)"
ctl ok "coordinator, new's certificate" "$(url 0)" new "$dir/both.crt"
ctl ok "w0's API, new's certificate" "$(url 1)" new "$dir/both.crt"
ctl refused "coordinator, trusting only new's CA (it still presents old's)" "$(url 0)" new "$dir/newca.crt"
put "$dir/new.crt" node.crt
put "$dir/new.key" node.key
hup_all "step 2 (new's certificate)"
ctl ok "coordinator, trusting only new's CA" "$(url 0)" new "$dir/newca.crt"
ctl ok "w1's API, trusting only new's CA" "$(url 3)" new "$dir/newca.crt"
put "$dir/newca.crt" ca.crt
hup_all "step 3 (only new's CA trusted)"
ctl refused "coordinator, old's certificate" "$(url 0)" old "$dir/both.crt"
ctl refused "w0's API, old's certificate" "$(url 1)" old "$dir/both.crt"
ctl ok "w0's API, new's certificate" "$(url 1)" new "$dir/newca.crt"
wait_ranks 90 loop || fail "a loop across the rotation failed"
for r in 0 1 2 3; do
    grep -q " 0 failed" "$dir/loop$r.log" ||
        fail "rank $r had failed operations across the rotation: $(grep -h 'operation' "$dir/loop$r.log" | head -3)"
done
echo "ranks connected before the rotation exchanged on: $(grep -ho '[0-9]* operations verified' "$dir/loop0.log") by rank 0, none failed"
{ tail -n +$((n0 + 1)) "$dir/w0.log"; tail -n +$((n1 + 1)) "$dir/w1.log"; } | grep "is unavailable" &&
    fail "a link was lost during the rotation"

# ---- new links and connections on the new files ----
restart_worker w1 || fail "w1 did not start again"
kill -9 "${pid[coordinator]}" 2>/dev/null
wait "${pid[coordinator]}" 2>/dev/null
cat "$dir/coordinator.log" >>"$dir/coordinator.old.log"
rm -f "$dir/coordinator.log"
start coordinator "$dir/coordinator.log" "$coord_bin" --config "$cfg"
wait_listening coordinator "$dir/coordinator.log" || fail "the coordinator did not start again"
run_ranks relinked new "$dir/newca.crt" loop 4
wait_ranks 60 relinked || fail "ranks after the restarts of w1 and the coordinator failed"
echo "after restarts of w1 and the coordinator: w0 and w1 linked, w0 reached the coordinator, 4 ranks exchanged ($(grep -ho '[0-9]* operations verified' "$dir/relinked0.log") by rank 0)"

# ---- a bad file keeps the configuration in use ----
echo "not a key" >"$dir/tls/node.key"
hup coordinator "SIGHUP: keeping the TLS certificate, key and CA in use" ||
    fail "the coordinator took a bad key file"
grep "SIGHUP: keeping the TLS" "$dir/coordinator.log" | tail -n 1 | grep -q "$dir/tls/node" ||
    fail "the refusal does not name the files: $(grep 'SIGHUP: keeping the TLS' "$dir/coordinator.log" | tail -n 1)"
hup w0 "SIGHUP: keeping the TLS certificate, key and CA in use" || fail "w0 took a bad key file"
ctl ok "coordinator after the bad key (new connections)" "$(url 0)" new "$dir/newca.crt"
ctl ok "w0's API after the bad key" "$(url 1)" new "$dir/newca.crt"
echo "a bad key file keeps the configuration in use: $(grep 'SIGHUP: keeping the TLS' "$dir/coordinator.log" | tail -n 1 | cut -c1-200)"
echo "PASS"
