#!/usr/bin/env bash
# Runs test_lost_rank under Open MPI with --enable-recovery (without it,
# mpiexec ends the whole job as soon as a rank dies: that is Open MPI's
# default, and what a user sees) and checks that every surviving rank printed
# its "survived" line. mpiexec's own exit status is not the verdict: a killed
# rank and survivors that leave MPI unfinalized make it non-zero by design.
# With SHM (TCOLL_SHM: auto, memfd, posix or off) the job runs with that
# segment mode, and ALGO (TCOLL_ALLREDUCE_ALGO) with that algorithm; after
# it no tcoll segment may be left in /dev/shm.
# Usage: run_lost_rank.sh MPIEXEC NP PROGRAM MODE [SHM [ALGO]] (MODE: the case)
set -u
mpiexec=$1 np=$2 prog=$3 mode=$4 shm=${5:-auto} algo=${6:-auto}
segments() { ls /dev/shm 2>/dev/null | grep '^tcoll-' | sort; }
before=$(segments)
out=$(TCOLL_PEER_TIMEOUT_S=3 TCOLL_SHM=$shm TCOLL_ALLREDUCE_ALGO=$algo timeout 90 "$mpiexec" \
      -n "$np" --oversubscribe --enable-recovery -x TCOLL_PEER_TIMEOUT_S -x TCOLL_SHM \
      -x TCOLL_ALLREDUCE_ALGO "$prog" --case "$mode" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -eq 124 ]; then
    echo "run_lost_rank: mpiexec did not finish within 90 s" >&2
    exit 1
fi
survived=$(printf '%s\n' "$out" | grep -c "^test_lost_rank $mode: rank [0-9]* survived")
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
echo "run_lost_rank $mode (TCOLL_SHM=$shm, TCOLL_ALLREDUCE_ALGO=$algo): all $((np - 1)) surviving ranks failed cleanly," \
     "nothing left in /dev/shm"
