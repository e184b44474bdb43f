#!/usr/bin/env bash
# test_compose.sh COORDINATOR SOURCE_DIR: docker/docker-compose.yml validates
# (docker-compose config; no engine needed) and agrees with
# configs/docker-cluster.yaml, which the real a2a-coordinator loads; the
# Dockerfile has a HEALTHCHECK and runs as a non-root user.
set -uo pipefail
coordinator=$1
src=$2
compose_file=$src/docker/docker-compose.yml
cluster=$src/configs/docker-cluster.yaml
dockerfile=$src/docker/Dockerfile

if ! command -v docker-compose >/dev/null 2>&1; then
    echo "SKIP: docker-compose not installed"
    exit 0
fi

tmp=$(mktemp -d)
coord_pid=
cleanup() {
    [ -n "$coord_pid" ] && kill "$coord_pid" 2>/dev/null && wait "$coord_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
pass=0 fail=0
ok() { echo "ok: $1"; pass=$((pass + 1)); }
bad() { # bad NAME [DETAIL]
    echo "FAILED: $1"
    [ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/    /' | tail -20
    fail=$((fail + 1))
}
check() { # check NAME CMD...
    local name=$1
    shift
    if "$@" >"$tmp/out" 2>&1; then ok "$name"; else bad "$name" "$(cat "$tmp/out")"; fi
}

# --- the compose file validates ----------------------------------------------
if docker-compose -f "$compose_file" config >"$tmp/config.yml" 2>"$tmp/config.err"; then
    ok "docker-compose config validates docker/docker-compose.yml"
else
    bad "docker-compose config validates docker/docker-compose.yml" "$(cat "$tmp/config.err")"
    echo "$pass passed, $((fail + 1)) failed (the other checks need a valid compose file)"
    exit 1
fi
docker-compose -f "$compose_file" config --services >"$tmp/services" 2>&1
mapfile -t services <"$tmp/services"

# svc_block SERVICE: the lines of one service in the normalized config
svc_block() {
    awk -v s="$1" '
        /^[^ ]/ { in_services = ($0 ~ /^services:/); on = 0; next }
        in_services && /^  [^ ]/ { name = $1; sub(/:$/, "", name); on = (name == s); next }
        on { print }' "$tmp/config.yml"
}
# svc_key SERVICE KEY: the scalar value of a top-level key of the service
svc_key() {
    svc_block "$1" | awk -v k="$2" '$0 ~ "^    " k ":" { sub("^    " k ": *", ""); gsub(/["'"'"']/, ""); print; exit }'
}
# svc_env SERVICE VAR: an environment variable of the service (map or list form)
svc_volume() { # SERVICE TARGET: the source mounted at TARGET
    svc_block "$1" | awk -v t="$2" '
        /^    volumes:/ { on = 1; next }
        /^    [^ -]/ { on = 0 }
        on && /^    - / { v = $0; sub(/^    - /, "", v); n = split(v, f, ":"); if (f[2] == t) { print f[1]; exit } }'
}
svc_env() {
    svc_block "$1" | awk -v v="$2" '
        /^    environment:/ { on = 1; next }
        /^    [^ -]/ { on = 0 }
        on {
            line = $0; sub(/^ *(- )?/, "", line); gsub(/["'"'"']/, "", line)
            if (index(line, v ": ") == 1) { print substr(line, length(v) + 3); exit }
            if (index(line, v "=") == 1) { print substr(line, length(v) + 2); exit }
        }'
}
# svc_cmd SERVICE: the command, one word a line (list form) or as one line
svc_cmd() {
    svc_block "$1" | awk '
        /^    command:/ { on = 1; rest = $0; sub(/^    command: */, "", rest); if (rest != "") print rest; next }
        /^    [^ -]/ { on = 0 }
        on { line = $0; sub(/^ *- */, "", line); gsub(/["'"'"']/, "", line); print line }'
}

for s in coordinator node-a node-b job-a job-b; do
    check "compose has the service $s" grep -qx "$s" "$tmp/services"
done

# --- the workers of configs/docker-cluster.yaml --------------------------------
# one line per worker: NAME URL DATA_URL
awk '
    { sub(/[ \t]+#.*$/, ""); sub(/^#.*$/, "") }
    /^[^ \t-]/ { on = ($0 ~ /^workers:/); next }
    !on { next }
    /^[ \t]*-?[ \t]*name:/ { if (n != "") print n, u, d; n = $0; sub(/^.*name:[ \t]*/, "", n); u = d = ""; next }
    /^[ \t]*url:/ { u = $0; sub(/^.*url:[ \t]*/, "", u); next }
    /^[ \t]*data_url:/ { d = $0; sub(/^.*data_url:[ \t]*/, "", d); next }
    END { if (n != "") print n, u, d }' "$cluster" | tr -d "\"'" >"$tmp/workers"
coord_url=$(awk '/^coordinator:/ { on = 1; next } /^[^ \t#]/ { on = 0 } on && /^[ \t]*url:/ { sub(/^.*url:[ \t]*/, ""); sub(/[ \t]+#.*$/, ""); gsub(/["'"'"']/, ""); print; exit }' "$cluster")
url_host() { echo "$1" | sed -E 's#^[a-z+]+://([^:/]+).*#\1#'; }

check "configs/docker-cluster.yaml names 2 or more workers" test "$(wc -l <"$tmp/workers")" -ge 2
check "the coordinator url's host is the service coordinator ($coord_url)" \
    test "$(url_host "$coord_url")" = coordinator
check "the coordinator's hostname is coordinator" test "$(svc_key coordinator hostname)" = coordinator
check "the service coordinator runs a2a-coordinator" test "$(svc_cmd coordinator | head -1)" = a2a-coordinator

worker_services=()
while read -r s; do
    svc_cmd "$s" | grep -qx a2a-worker && worker_services+=("$s")
done <"$tmp/services"
yaml_names=$(awk '{print $1}' "$tmp/workers" | sort | tr '\n' ' ')
compose_names=$(printf '%s\n' "${worker_services[@]}" | sort | tr '\n' ' ')
check "the a2a-worker services ($compose_names) are the YAML's workers ($yaml_names)" \
    test "$yaml_names" = "$compose_names"

while read -r name url data_url; do
    host=$(url_host "$url")
    check "worker $name: url host ($host) and data_url host are its name" \
        test "$host" = "$name" -a "$(url_host "$data_url")" = "$name"
    check "worker $name: the service $name has hostname $name" \
        test "$(svc_key "$name" hostname)" = "$name"
    given=$(svc_cmd "$name" | grep -A1 -x -- --name | tail -1)
    check "worker $name: the service runs a2a-worker --name $name (got \"$given\")" \
        test "$given" = "$name"
    # the sidecars: job services pointing at this worker share its socket's volume
    sock=$(awk -v w="$name" '
        { sub(/[ \t]+#.*$/, "") }
        /^[ \t]*-?[ \t]*name:/ { n = $0; sub(/^.*name:[ \t]*/, "", n); next }
        n == w && /^[ \t]*socket:/ { s = $0; sub(/^.*socket:[ \t]*/, "", s); print s; exit }' "$cluster" | tr -d "\"'")
    check "worker $name: the YAML gives it a socket ($sock)" test -n "$sock"
    sockdir=$(dirname "$sock")
    wvol=$(svc_volume "$name" "$sockdir")
    check "worker $name: a named volume holds its socket folder $sockdir ($wvol)" \
        bash -c '[ -n "$1" ] && [ "${1#/}" = "$1" ] && [ "${1#.}" = "$1" ]' _ "$wvol"
    jobs=
    for s in "${services[@]}"; do
        [ "$s" != "$name" ] && [ "$(svc_env "$s" A2A_WORKER_URL)" = "$url" ] && jobs="$jobs $s"
    done
    check "worker $name: a job service points at its url ($url)" test -n "$jobs"
    for j in $jobs; do
        if [[ $j == *remote* ]]; then # the remote-job example shares nothing with its worker
            check "remote job $j: no socket volume at $sockdir" test -z "$(svc_volume "$j" "$sockdir")"
        else
            check "job $j: mounts $name's socket volume $wvol at $sockdir" \
                test "$(svc_volume "$j" "$sockdir")" = "$wvol"
        fi
        juser=$(svc_key "$j" user)
        check "job $j: another uid than its worker's ($juser, worker $(svc_key "$name" user))" \
            test "${juser%%:*}" != "$(svc_key "$name" user | cut -d: -f1)"
    done
done <"$tmp/workers"

# --- what a security reviewer looks for, in every service ------------------------
for s in "${services[@]}"; do
    blk=$(svc_block "$s")
    check "service $s: no pid: (no shared PID namespace)" bash -c '! grep -q "^    pid:" <<<"$1"' _ "$blk"
    check "service $s: no cap_add, no privileged" \
        bash -c '! grep -Eq "^    (cap_add|privileged):" <<<"$1"' _ "$blk"
    check "service $s: cap_drop: ALL" \
        bash -c 'awk "/^    cap_drop:/ {on=1; next} /^    [^ -]/ {on=0} on" <<<"$1" | grep -q ALL' _ "$blk"
    check "service $s: no-new-privileges" grep -q "no-new-privileges:true" <<<"$blk"
    u=$(svc_key "$s" user)
    check "service $s: a non-root user ($u)" \
        bash -c '[ -n "$1" ] && ! grep -Eq "^(root|0)(:|\$)" <<<"$1"' _ "$u"
done
check "nothing mentions SYS_PTRACE" bash -c '! grep -q SYS_PTRACE "$1"' _ "$tmp/config.yml"

# --- the token: a compose secret where security.token_file points -------------
token_file=$(awk '/^security:/ { on = 1; next } /^[^ \t#]/ { on = 0 } on && /^[ \t]*token_file:/ { sub(/^.*token_file:[ \t]*/, ""); sub(/[ \t]+#.*$/, ""); gsub(/["'"'"']/, ""); print; exit }' "$cluster")
if [ -n "$token_file" ]; then
    check "security.token_file ($token_file) is the compose secret a2a_token" \
        test "$token_file" = /run/secrets/a2a_token
    for s in "${services[@]}"; do
        if svc_block "$s" | awk '/^    secrets:/ { on = 1; next } /^    [^ -]/ { on = 0 } on' | grep -q a2a_token; then
            ok "service $s mounts the secret a2a_token"
        else
            bad "service $s mounts the secret a2a_token"
        fi
        check "service $s sets A2A_TOKEN_FILE=$token_file" test "$(svc_env "$s" A2A_TOKEN_FILE)" = "$token_file"
    done
fi

# --- the cluster YAML loads in the real coordinator ----------------------------
# The token file lives in the containers; point a copy at a local one.
printf 'a-local-test-token-of-enough-bytes\n' >"$tmp/token"
chmod 600 "$tmp/token"
sed "s#/run/secrets/a2a_token#$tmp/token#" "$cluster" >"$tmp/cluster.yaml"
"$coordinator" --config "$tmp/cluster.yaml" --listen tcp://127.0.0.1:0 >"$tmp/coord.out" 2>"$tmp/coord.err" &
coord_pid=$!
for _ in $(seq 100); do
    grep -q "listening on" "$tmp/coord.out" 2>/dev/null && break
    kill -0 "$coord_pid" 2>/dev/null || break
    sleep 0.1
done
if grep -q "listening on" "$tmp/coord.out"; then
    ok "a2a-coordinator loads configs/docker-cluster.yaml"
else
    bad "a2a-coordinator loads configs/docker-cluster.yaml" "$(cat "$tmp/coord.out" "$tmp/coord.err")"
fi
kill "$coord_pid" 2>/dev/null
wait "$coord_pid" 2>/dev/null
coord_pid=

# --- the Dockerfile -------------------------------------------------------------
# instructions with their continuation lines joined
awk '{ line = line $0 } /\\$/ { sub(/\\$/, "", line); next } { print line; line = "" }' "$dockerfile" >"$tmp/instructions"
check "the Dockerfile has a HEALTHCHECK running a2a-ctl health" \
    grep -Eq '^HEALTHCHECK[[:space:]].*CMD.*a2a-ctl.*health' "$tmp/instructions"
last_user=$(awk '/^USER[[:space:]]/ { u = $2 } END { print u }' "$tmp/instructions")
# shellcheck disable=SC2016 # $1 is bash -c's argument
check "the Dockerfile's final USER is not root ($last_user)" \
    bash -c '[ -n "$1" ] && ! echo "$1" | grep -Eq "^(root|0)(:|\$)"' _ "$last_user"
# shellcheck disable=SC2016
check "the Dockerfile has no ENTRYPOINT" bash -c '! grep -q "^ENTRYPOINT" "$1"' _ "$dockerfile"

# --- TLS: the override, make-certs.sh, and the TLS cluster file -------------------
tls_file=$src/docker/docker-compose.tls.yml
check "docker-compose config validates docker-compose.yml + docker-compose.tls.yml" \
    env A2A_TLS_DIR="$tmp/tls" bash -c 'mkdir -p "$A2A_TLS_DIR" && touch "$A2A_TLS_DIR"/node.crt \
        "$A2A_TLS_DIR"/node.key "$A2A_TLS_DIR"/ca.crt && docker-compose -f "$1" -f "$2" config \
        | grep -q "tls+tcp://node-a:7100"' _ "$compose_file" "$tls_file"
rm -rf "$tmp/tls"
if command -v openssl >/dev/null 2>&1; then
    check "make-certs.sh makes a CA and a node certificate" \
        "$src/docker/make-certs.sh" "$tmp/tls" localhost 127.0.0.1
    check "make-certs.sh makes a second, unrelated CA" \
        "$src/docker/make-certs.sh" "$tmp/evil" localhost 127.0.0.1
    # the TLS cluster file, with its secrets' paths pointed at the made files
    sed -e "s#/run/secrets/a2a_cert#$tmp/tls/node.crt#; s#/run/secrets/a2a_key#$tmp/tls/node.key#" \
        -e "s#/run/secrets/a2a_ca#$tmp/tls/ca.crt#; s#/run/secrets/a2a_token#$tmp/token#" \
        "$src/configs/docker-cluster-tls.yaml" >"$tmp/tls.yaml"
    head -c 32 /dev/urandom | base64 >"$tmp/token"
    "$coordinator" --config "$tmp/tls.yaml" --listen tls+tcp://127.0.0.1:0 \
        >"$tmp/tcoord.out" 2>"$tmp/tcoord.err" &
    coord_pid=$!
    for _ in $(seq 100); do grep -q "listening on" "$tmp/tcoord.out" && break; sleep 0.1; done
    turl=$(awk '/listening on/ {print $3}' "$tmp/tcoord.out")
    ctl=$(dirname "$coordinator")/../tools/a2a-ctl
    if [ -n "$turl" ] && [ -x "$ctl" ]; then
        check "a2a-ctl health over TLS with the made certificate" \
            env A2A_TOKEN_FILE="$tmp/token" A2A_TLS_CERT="$tmp/tls/node.crt" \
            A2A_TLS_KEY="$tmp/tls/node.key" A2A_TLS_CA="$tmp/tls/ca.crt" \
            "$ctl" --timeout 3000 --coordinator "$turl" health
        # shellcheck disable=SC2016
        check "a certificate from another CA is refused" bash -c '! "$@"' _ \
            env A2A_TOKEN_FILE="$tmp/token" A2A_TLS_CERT="$tmp/evil/node.crt" \
            A2A_TLS_KEY="$tmp/evil/node.key" A2A_TLS_CA="$tmp/evil/ca.crt" \
            "$ctl" --timeout 1500 --coordinator "$turl" health
    else
        bad "the coordinator serves configs/docker-cluster-tls.yaml over TLS" \
            "$(cat "$tmp/tcoord.out" "$tmp/tcoord.err")"
    fi
    kill "$coord_pid" 2>/dev/null
    wait "$coord_pid" 2>/dev/null
    coord_pid=
else
    echo "note: openssl missing: the TLS certificate checks are skipped"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
