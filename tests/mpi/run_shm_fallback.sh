#!/usr/bin/env bash
# Shared memory unavailable: tcoll must log why once and run over MPI, never
# fail the job. Runs PROGRAM (an allreduce test) with TCOLL_SHM=posix in a
# private mount namespace where /dev/shm is first read-only, then a 64 KiB
# tmpfs (too small for the segment): both runs must pass and print exactly one
# "no shared memory on this node" warning. Needs root (unshare -m, mount);
# elsewhere it is skipped (exit 77).
# Usage: run_shm_fallback.sh MPIEXEC NP PROGRAM
set -u
mpiexec=$1 np=$2 prog=$3
if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null; then
    echo "run_shm_fallback: needs root and unshare -m: skipped"
    exit 77
fi
empty=$(mktemp -d)
trap 'rmdir "$empty"' EXIT
for how in read-only tiny; do
    if [ "$how" = read-only ]; then
        setup="mount --bind '$empty' /dev/shm && mount -o remount,ro,bind /dev/shm"
    else
        setup="mount -t tmpfs -o size=64k tmpfs /dev/shm"
    fi
    out=$(TCOLL_SHM=posix timeout 120 unshare -m sh -c "$setup && exec \"\$0\" \"\$@\"" \
          "$mpiexec" -n "$np" --oversubscribe -x TCOLL_SHM "$prog" 2>&1)
    rc=$?
    printf '%s\n' "$out"
    warned=$(printf '%s\n' "$out" | grep -c "no shared memory on this node")
    if [ "$rc" -ne 0 ]; then
        echo "run_shm_fallback ($how /dev/shm): the job failed (exit $rc)" >&2
        exit 1
    fi
    if [ "$warned" -ne 1 ]; then
        echo "run_shm_fallback ($how /dev/shm): $warned warnings, want 1" >&2
        exit 1
    fi
    echo "run_shm_fallback ($how /dev/shm): ran over MPI after one warning"
done
