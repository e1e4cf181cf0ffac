#!/usr/bin/env bash
# faults.sh - one fault on an emulated cluster (tools/cluster/emu.sh) while
# test_faults runs across it, and the verdict. Scenarios:
#
#   kill-host   2 hosts x 2 ranks; every process of h2 (its ranks and Open
#               MPI's daemon) is killed mid-step. Ranks 0-1 must each fail
#               naming "lost ranks 2-3" within the documented bound.
#   kill-first  4 hosts x 1 rank; h1, rank 0's host (the coordinator), is
#               killed. Ranks 1-3 must each fail naming "lost rank 0".
#   cut         2 hosts x 2 ranks; h2's link is cut mid-transfer and stays
#               cut. Ranks 0-1 must name "lost ranks 2-3", and ranks 2-3,
#               alone on their side, "lost ranks 0-1". The link comes back
#               only after that, so that their output and exit reach mpirun.
#   flap        2 hosts x 2 ranks, TCOLL_PEER_TIMEOUT_S=20; h2's link is cut
#               for 5 s, then restored: the job must go on, every step exact.
#   loss        2 hosts x 2 ranks; the same steps without loss, then with 5%
#               of the packets on h2's link dropped: exact, and slower; then
#               the test programs of every kind on that link.
#
# The jobs run under Open MPI's --enable-recovery: without it mpirun ends
# the whole job as soon as a daemon or rank is lost (the README says so).
# Usage: faults.sh EMU BUILD_DIR SCENARIO. Exit 0 passed, 1 failed, 77 this
# machine cannot make the cluster (not root, or no namespaces).
set -uo pipefail
emu=$1 build=$2 scenario=$3
prog=$build/tests/cluster/test_faults

# shellcheck source=tests/cluster/need_cluster.sh
. "$(dirname "$0")/need_cluster.sh"
need_cluster "cluster fault tests"

export TCOLL_EMU_STATE=/run/tcoll-emu-fault-$$
work=$(mktemp -d /tmp/tcoll-fault.XXXXXX)
marker=$work/marker
log=$work/log
trap '"$emu" down; rm -rf "$work"' EXIT

fail() {
    echo "FAIL $scenario: $*"
    echo "--- the job's output:"
    sed 's/^/    /' "$log" | tail -n 200
    exit 1
}

# wait_until S CMD...: polls CMD every 0.1 s for up to S s; 0 once it held.
wait_until() {
    local s=$1 _
    shift
    for _ in $(seq 1 $((s * 10))); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}

# At least $1 "survived" lines in the log.
survived_at_least() { [ "$(grep -c 'survived' "$log")" -ge "$1" ]; }

# start HOSTS PER CASE [ENV=V...]: the job in the background; $job its pid.
start() {
    local hosts=$1 per=$2 case=$3
    shift 3
    "$emu" up -n "$hosts" >/dev/null || fail "the cluster did not come up"
    env "$@" "$emu" run -np $((hosts * per)) --per-host "$per" --timeout 150 \
        --mpirun-arg --enable-recovery "$prog" --case "$case" "$marker" "${gone:-0}" \
        "${steps:-10}" >"$log" 2>&1 &
    job=$!
    wait_until 120 test -e "$marker.steps" || fail "the job did not reach its fourth step"
    t_fault=$(date +%s.%N)
}

# Test programs of this run still alive, on any host.
ranks_left() {
    local p n=0
    for p in $(pgrep -x test_faults); do
        grep -qs "$marker" "/proc/$p/cmdline" && n=$((n + 1))
    done
    echo "$n"
}

no_ranks_left() { [ "$(ranks_left)" -eq 0 ]; }

# check_survivors N PATTERN...: N ranks must report, each within the bound
# (the program checks its own), and then exit; every PATTERN must be in a
# report. Under --enable-recovery, mpirun does not end by itself once a
# host's daemon is gone: it is stopped here after the survivors have exited.
check_survivors() {
    local want=$1 named=$2 n
    wait_until 60 survived_at_least "$want" || true
    wait_until 30 no_ranks_left || fail "$(ranks_left) ranks did not exit after the failure"
    pkill -KILL -f "mpirun.*$marker" || true
    wait "$job" 2>/dev/null
    grep -q "CHECK FAILED" "$log" && fail "a check failed"
    n=$(grep -c "^test_faults lose: rank [0-9]* survived" "$log")
    [ "$n" -eq "$want" ] || fail "$n of $want surviving ranks reported"
    for pat in $named; do
        grep -q "survived: .*$pat" "$log" || fail "no survivor named '$pat'"
    done
    grep "survived" "$log" | sed 's/^/    /'
}

elapsed() { awk -v a="$t_fault" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

case $scenario in
kill-host)
    gone=2-3 start 2 2 lose TCOLL_PEER_TIMEOUT_S=6
    "$emu" kill h2
    check_survivors 2 "lost.ranks.2-3:"
    ;;
kill-first)
    gone=0 start 4 1 lose TCOLL_PEER_TIMEOUT_S=6
    "$emu" kill h1
    check_survivors 3 "lost.rank.0:"
    ;;
cut)
    gone=2-3 start 2 2 lose TCOLL_PEER_TIMEOUT_S=6
    "$emu" link h2 down
    # h1's ranks report through mpirun on the head (its link is up); h2's
    # only once the link is back, which must wait until they have failed
    # too: they are on the same clock as h1's
    wait_until 60 survived_at_least 2 || fail "ranks 0-1 did not fail within 60 s of the cut"
    echo "    ranks 0-1 failed $(elapsed) s after the cut"
    sleep 8
    "$emu" link h2 up
    check_survivors 4 "lost.ranks.2-3: lost.ranks.0-1:"
    ;;
flap)
    gone=2-3 start 2 2 flap TCOLL_PEER_TIMEOUT_S=20
    "$emu" link h2 down
    sleep 5
    "$emu" link h2 up
    touch "$marker.restored"
    wait "$job" || fail "the job did not survive a 5 s cut (TCOLL_PEER_TIMEOUT_S=20)"
    line=$(grep "^test_faults flap:" "$log") || fail "no summary line"
    echo "    $line"
    # the cut must have stalled a step (else it did not hit the job)
    longest=$(sed -n 's/.*took \([0-9.]*\) s$/\1/p' <<<"$line")
    awk -v l="$longest" 'BEGIN { exit !(l >= 4) }' || fail "no step waited for the link"
    ;;
loss)
    "$emu" up -n 2 >/dev/null || fail "the cluster did not come up"
    for pct in 0 5; do
        "$emu" run -np 4 --per-host 2 --timeout 300 --loss "h2:$pct" "$prog" --case loss \
            "$marker" 0 10 >"$log" 2>&1 || fail "the job failed with $pct% loss on h2's link"
        echo "    $pct% of the packets on h2's link lost: $(sed -n 's/^test_faults loss: //p' "$log")"
    done
    # every kind's own test, bit for bit, on the lossy link
    for t in test_bitwise test_allreduce test_allgather test_broadcast test_reducescatter \
        test_alltoall; do
        "$emu" run -np 4 --per-host 2 --timeout 300 "$build/tests/mpi/$t" >"$log" 2>&1 ||
            fail "$t failed with 5% loss on h2's link"
        echo "    5% loss: $(tail -n 1 "$log")"
    done
    ;;
*)
    echo "faults.sh: unknown scenario '$scenario'" >&2
    exit 2
    ;;
esac
echo "ok $scenario"
