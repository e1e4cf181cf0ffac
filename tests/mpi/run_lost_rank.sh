#!/usr/bin/env bash
# Runs test_lost_rank under Open MPI with --enable-recovery (without it,
# mpiexec ends the whole job as soon as a rank dies: that is Open MPI's
# default, and what a user sees) and checks that every surviving rank printed
# its "survived" line. mpiexec's own exit status is not the verdict: a killed
# rank and survivors that leave MPI unfinalized make it non-zero by design.
# Any VAR=value after MODE (e.g. TCOLL_SHM=posix, TCOLL_ALLREDUCE_ALGO=shm,
# TCOLL_RANKS_PER_NODE=2) is set for the job; after it no tcoll segment may
# be left in /dev/shm.
# Usage: run_lost_rank.sh MPIEXEC NP PROGRAM MODE [VAR=value...] (MODE: the case)
set -u
mpiexec=$1 np=$2 prog=$3 mode=$4
shift 4
xs=(-x TCOLL_PEER_TIMEOUT_S)
for kv in "$@"; do
    export "${kv?}"
    xs+=(-x "${kv%%=*}")
done
segments() { ls /dev/shm 2>/dev/null | grep '^tcoll-' | sort; }
before=$(segments)
out=$(TCOLL_PEER_TIMEOUT_S=3 timeout 90 "$mpiexec" -n "$np" --oversubscribe --enable-recovery \
      "${xs[@]}" "$prog" --case "$mode" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -eq 124 ]; then
    echo "run_lost_rank: mpiexec did not finish within 90 s" >&2
    exit 1
fi
# each rank's line once, wherever it is: Open MPI 5's launcher may cut
# another rank's line in two around it
survived=$(printf '%s\n' "$out" | grep -oE "$(basename "$prog") $mode: rank [0-9]+ survived" |
    sort -u | wc -l)
# every rank said "<program>: skipped: ..." (no GPU, say): the test is skipped
if [ "$survived" -eq 0 ] &&
    [ "$(printf '%s\n' "$out" | grep -c "^$(basename "$prog"): skipped")" -eq "$np" ]; then
    echo "run_lost_rank: the program skipped itself on every rank"
    exit 77
fi
if printf '%s\n' "$out" | grep -q "CHECK FAILED"; then
    echo "run_lost_rank: a check failed" >&2
    exit 1
fi
if [ "$survived" -ne $((np - 1)) ]; then
    echo "run_lost_rank: $survived of $((np - 1)) surviving ranks reported" >&2
    exit 1
fi
left=$(comm -13 <(printf '%s\n' "$before") <(segments))
if [ -n "$left" ]; then
    echo "run_lost_rank: left in /dev/shm: $left" >&2
    exit 1
fi
echo "run_lost_rank $mode ($*): all $((np - 1)) surviving ranks failed cleanly," \
     "nothing left in /dev/shm"
