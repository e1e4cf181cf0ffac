#!/usr/bin/env bash
# Runs a case after which tcoll stops on every rank (a failed collective),
# and checks that every rank printed "<program> <case>: rank N stopped
# cleanly" and no check failed. mpiexec's own exit status is not the
# verdict: tcoll leaves MPI unfinalized after a failure (MPI_Finalize could
# wait for a rank that is gone), which makes it non-zero by design.
# Usage: run_all_fail.sh MPIEXEC NP PROGRAM CASE [VAR=value...]
set -u
mpiexec=$1 np=$2 prog=$3 case=$4
shift 4
xs=()
for kv in "$@"; do
    export "${kv?}"
    xs+=(-x "${kv%%=*}")
done
# --enable-recovery: Open MPI would otherwise kill the other ranks as soon as
# the first one leaves without MPI_Finalize, before they print their line
out=$(timeout 90 "$mpiexec" -n "$np" --oversubscribe --enable-recovery "${xs[@]}" "$prog" \
    --case "$case" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -eq 124 ]; then
    echo "run_all_fail: mpiexec did not finish within 90 s" >&2
    exit 1
fi
if printf '%s\n' "$out" | grep -q "CHECK FAILED"; then
    echo "run_all_fail: a check failed" >&2
    exit 1
fi
stopped=$(printf '%s\n' "$out" | grep -oE "$(basename "$prog") $case: rank [0-9]+ stopped cleanly" |
    sort -u | wc -l)
if [ "$stopped" -ne "$np" ]; then
    echo "run_all_fail: $stopped of $np ranks stopped cleanly" >&2
    exit 1
fi
echo "run_all_fail $case: all $np ranks failed alike and stopped cleanly"
