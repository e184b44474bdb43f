#!/usr/bin/env bash
# test_persist.sh - state that survives a coordinator restart, and groups that change (issue 11,
# item 3).
#
# usage: test_persist.sh A2A_COORDINATOR A2A_WORKER A2A_CTL EXCHANGE_CHECK
# (KEEP_DIR=1 keeps the logs)
#
# A coordinator with a journal (coordinator.journal in the YAML) and two workers
# (w0: world ranks 0 1, w1: 2 3), four ranks of exchange_check:
#  1. a runtime group "rt" (3 1 2 0) is created; four ranks loop verified exchanges
#     on it while the coordinator is killed (-9) and started again: no operation
#     fails, and every group (runtime, YAML, world) keeps its epoch;
#  2. a damaged journal (one byte changed; cut in half) stops the coordinator's start
#     with an error naming the file, and the journal is left as it was;
#  3. with the coordinator down, the YAML group "moving" (0 1 2 3) becomes (3 2 1 0):
#     after the start its epoch is larger, the others' are the same, and the workers,
#     which had it cached, exchange right on the new order (every element encodes its
#     sender and receiver world ranks);
#  4. exchange_check recreate: rank 0 destroys "rg" and creates it again with other
#     members and size; every worker (also w1, which did not forward it) refuses the
#     old size, and the new group exchanges right; its epoch is new.
set -u
coord_bin=$1 worker_bin=$2 ctl_bin=$3 check=$4
dir=$(mktemp -d "${TMPDIR:-/tmp}/a2a-persist.XXXXXX")
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
moving="0, 1, 2, 3"

write_config() {
    cat >"$cfg" <<EOF2
coordinator:
  url: tcp://127.0.0.1:${ports[0]}
  journal: $dir/journal
workers:
  - name: w0
    url: tcp://127.0.0.1:${ports[1]}
    data_url: tcp://127.0.0.1:${ports[2]}
    socket: $dir/w0.sock
    ranks: 2
  - name: w1
    url: tcp://127.0.0.1:${ports[3]}
    data_url: tcp://127.0.0.1:${ports[4]}
    socket: $dir/w1.sock
    ranks: 2
groups:
  - name: fixed
    ranks: [1, 3]
  - name: moving
    ranks: [$moving]
EOF2
}

ctl() { "$ctl_bin" --coordinator "tcp://127.0.0.1:${ports[0]}" --timeout 5000 "$@"; }

# epochs: "NAME EPOCH" of every group, sorted
epochs() {
    ctl --json groups | grep -o '"name":"[^"]*","size":[0-9]*,"epoch":[0-9]*' |
        sed 's/"name":"\([^"]*\)","size":[0-9]*,"epoch":\([0-9]*\)/\1 \2/' | sort
}
epoch_of() { epochs | awk -v g="$1" '$1 == g {print $2}'; }

kill_coordinator() {
    kill -9 "${pid[coordinator]}" 2>/dev/null
    wait "${pid[coordinator]}" 2>/dev/null
}

# start_coordinator: with a fresh log (the old one appended to coordinator.old.log)
start_coordinator() {
    [ -f "$dir/coordinator.log" ] && cat "$dir/coordinator.log" >>"$dir/coordinator.old.log"
    rm -f "$dir/coordinator.log"
    start coordinator "$dir/coordinator.log" "$coord_bin" --config "$cfg"
    wait_listening coordinator "$dir/coordinator.log"
}

# run_ranks PREFIX ARGS...: world ranks 0..3 of exchange_check ARGS
run_ranks() {
    local prefix=$1 r
    shift
    rank_pids=()
    for r in 0 1 2 3; do
        local w=$((r / 2))
        A2A_WORKER_URL="tcp://127.0.0.1:${ports[1 + 2 * w]}" A2A_RANK=$r A2A_WORLD_SIZE=4 \
            "$check" "$@" >"$dir/$prefix$r.log" 2>&1 &
        rank_pids+=($!)
    done
}

start_cluster 5 w0 w1
echo "cluster: coordinator ${ports[0]}, w0 ${ports[1]}, w1 ${ports[3]}"
grep -q "no journal at $dir/journal yet" "$dir/coordinator.log" || fail "the first start did not say it had no journal"
[ -s "$dir/journal" ] || fail "no journal written at the start"

# ---- 1. a runtime group and every epoch across kill -9 of the coordinator ----
ctl create rt 3 1 2 0 >/dev/null || fail "create rt"
run_ranks warm loop 1 moving # the workers cache "moving" (its old order) for part 3
wait_ranks 60 warm || fail "a loop on moving failed"
before=$(epochs)
echo "epochs before the restart:"
echo "$before"
[ "$(echo "$before" | wc -l)" -eq 4 ] || fail "expected 4 groups (world, fixed, moving, rt)"
run_ranks loop loop 10 rt
sleep 3
kill_coordinator
echo "coordinator killed (-9) under the loops"
sleep 1
start_coordinator || fail "the coordinator did not start again"
grep -q "journal $dir/journal: 1 runtime groups" "$dir/coordinator.log" || fail "the journal was not read"
after=$(epochs)
[ "$after" = "$before" ] || fail "epochs changed across the restart: before
$before
after
$after"
wait_ranks 90 loop || fail "a loop on rt across the coordinator's restart failed"
for r in 0 1 2 3; do
    grep -q " 0 failed" "$dir/loop$r.log" || fail "rank $r had failed operations across the restart: $(grep -h 'failed\|operation' "$dir/loop$r.log" | head -3)"
done
echo "1. rt and every epoch survived kill -9 of the coordinator; $(grep -ho '[0-9]* operations verified' "$dir/loop0.log") by rank 0, none failed"
ctl resolve rt | grep -q "^1 *1 " || fail "rt lost its members: $(ctl resolve rt)"

# ---- 2. a damaged journal stops the start, and is left alone ----
kill_coordinator
cp "$dir/journal" "$dir/journal.good"
check_refused() { # WHAT
    start_coordinator && fail "$1: the coordinator started on a damaged journal"
    wait_pid "${pid[coordinator]}" 5 || fail "$1: the coordinator neither started nor exited"
    ((wait_status == 1)) || fail "$1: exit status $wait_status, expected 1"
    grep -q "error: $dir/journal: .*the journal is damaged: move it aside" "$dir/coordinator.log" ||
        fail "$1: no clear error: $(tail -n 3 "$dir/coordinator.log")"
}
sed -i 's/^group 4 3 1 2 0 rt$/group 4 3 1 2 1 rt/' "$dir/journal"
cmp -s "$dir/journal" "$dir/journal.good" && fail "the test's sed changed nothing"
cp "$dir/journal" "$dir/journal.bad"
check_refused "a changed rank"
cmp -s "$dir/journal" "$dir/journal.bad" || fail "the coordinator rewrote a damaged journal"
grep -o "error: .*" "$dir/coordinator.log" | head -1
head -c $(($(stat -c %s "$dir/journal.good") / 2)) "$dir/journal.good" >"$dir/journal"
check_refused "a journal cut in half"
grep -o "error: .*" "$dir/coordinator.log" | head -1
cp "$dir/journal.good" "$dir/journal"
echo "2. a damaged journal (changed, cut) stops the start with an error naming it"

# ---- 3. a YAML group's members change while the coordinator is down ----
moving="3, 2, 1, 0"
write_config
start_coordinator || fail "the coordinator did not start on the good journal"
after=$(epochs)
for g in hccl_world_group fixed rt; do
    [ "$(echo "$after" | awk -v g=$g '$1 == g')" = "$(echo "$before" | awk -v g=$g '$1 == g')" ] ||
        fail "group $g changed its epoch though its members did not"
done
old=$(echo "$before" | awk '$1 == "moving" {print $2}')
new=$(echo "$after" | awk '$1 == "moving" {print $2}')
((new > old)) || fail "moving's epoch did not move forward: $old -> $new"
ctl resolve moving | grep -q "^0 *3 " || fail "moving is not (3 2 1 0): $(ctl resolve moving)"
run_ranks moved loop 2 moving
wait_ranks 60 moved || fail "a loop on the changed group failed (wrong data if it says so)"
echo "3. moving's epoch moved forward ($old -> $new), the others kept theirs; the workers use its new order"

# ---- 4. destroyed and created again: new everywhere ----
run_ranks re recreate
wait_ranks 60 re || fail "recreate failed"
[ "$(ctl resolve rg | awk 'NR > 2 {print $2}' | tr '\n' ' ')" = "3 1 " ] || fail "rg is not (3 1)"
grep -q 'destroyed group "rg"' "$dir/coordinator.log" || fail "rg was not destroyed"
grep -q "has not listed the groups" "$dir/coordinator.log" &&
    fail "a worker did not see the change within 1 s: $(grep 'has not listed' "$dir/coordinator.log")"
grep -q 'group "rg" is gone at the coordinator\|group "rg" has epoch' "$dir/w1.log" ||
    fail "w1 (which did not forward the change) did not hear of it"
echo "4. rg destroyed and created again (3 1): every worker refused the old size, the new one exchanged"

# the journal holds what a restart needs, and nothing of destroyed groups' pasts
grep -q "^group 2 3 1 rg$" "$dir/journal" || fail "the journal lacks rg (3 1)"
grep -c "^epoch .* rg$" "$dir/journal" | grep -qx 1 || fail "rg has more than one epoch record"
echo "PASS"
