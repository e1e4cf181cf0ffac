#!/usr/bin/env bash
# ResNet-50's gradient workload through tcoll's C API, tcoll.torch and Gloo,
# in one table: runs the C benchmark (tcoll-perf: the workload once, a 4-byte
# allreduce three times), then tools/python/bench_workload.py, which prints
# both tables with the C figures in their rows. Everything on this node.
#
#   tools/python/bench_workload.sh [-n NP] [--tcoll-perf PATH] [--c-runs K]
#                                  [bench_workload.py options...]
#
# --steps, --warmup and --workload go to both programs, --latency-iters sets
# the C latency runs' iterations too; the other options go to the Python
# script (--help lists them). Environment: BUILD (the build tree, default
# ./build next to tools/: tcoll-perf and the Python package are found there),
# MPIEXEC (default mpiexec), MPIEXEC_FLAGS (default --oversubscribe with
# Open MPI's launcher, none with others), PYTHON (default /usr/bin/python3).
# As root with Open MPI, set OMPI_ALLOW_RUN_AS_ROOT=1 and
# OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1. Exit status: the Python script's, or 2
# when tcoll-perf fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${BUILD:-$src/build}
mpiexec=${MPIEXEC:-mpiexec}
python=${PYTHON:-/usr/bin/python3}
openmpi=0
if "$mpiexec" --version 2>/dev/null | grep -q "Open MPI\|OpenRTE"; then
    openmpi=1
fi
if [ -z "${MPIEXEC_FLAGS+set}" ]; then
    if [ "$openmpi" = 1 ]; then
        MPIEXEC_FLAGS=--oversubscribe
    else
        MPIEXEC_FLAGS=
    fi
fi
read -r -a flags <<<"$MPIEXEC_FLAGS"

np=2
perf=$build/tools/tcoll-perf
c_runs=3
steps=20
warmup=3
lat_iters=1000
workload=()
py_args=()
need() { [ $# -ge 2 ] || { echo "bench_workload.sh: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
    case $1 in
        -n) need "$@"; np=$2; shift 2 ;;
        --tcoll-perf) need "$@"; perf=$2; shift 2 ;;
        --c-runs) need "$@"; c_runs=$2; shift 2 ;;
        --steps) need "$@"; steps=$2; py_args+=("$1" "$2"); shift 2 ;;
        --warmup) need "$@"; warmup=$2; py_args+=("$1" "$2"); shift 2 ;;
        --latency-iters) need "$@"; lat_iters=$2; py_args+=("$1" "$2"); shift 2 ;;
        --workload) need "$@"; workload=(--workload "$2"); py_args+=("$1" "$2"); shift 2 ;;
        -h|--help)
            sed -n '2,/^set -e/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
            exit 0 ;;
        *) py_args+=("$1"); shift ;;
    esac
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
json=()
run_c() { # name, tcoll-perf arguments...
    local name=$1
    shift
    echo "# C: $mpiexec -n $np${flags[*]:+ ${flags[*]}} $perf $*"
    if ! "$mpiexec" -n "$np" "${flags[@]}" "$perf" "$@" --json "$tmp/$name.json" \
            >"$tmp/$name.log" 2>&1; then
        cat "$tmp/$name.log" >&2
        echo "bench_workload.sh: tcoll-perf failed" >&2
        exit 2
    fi
    json+=(--c-json "$tmp/$name.json")
}
if [ -x "$perf" ]; then
    run_c workload -m workload -o avg -n "$steps" -w "$warmup" "${workload[@]}"
    if [ "$lat_iters" -gt 0 ]; then
        for i in $(seq "$c_runs"); do
            run_c "latency$i" -b 4 -e 4 -n "$lat_iters"
        done
    fi
else
    echo "bench_workload.sh: no tcoll-perf at $perf (--tcoll-perf PATH): no C rows" >&2
fi

# Debian's mpi4py is built on Open MPI: under another launcher (MPICH) the
# latency table's barrier is tcoll's, unless --barrier was given
if [ "$openmpi" = 0 ] && [[ " ${py_args[*]} " != *" --barrier "* ]]; then
    py_args+=(--barrier tcoll)
fi
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
echo "# Python: $mpiexec -n $np${flags[*]:+ ${flags[*]}} $python $here/bench_workload.py" \
     "${py_args[*]}"
exec "$mpiexec" -n "$np" "${flags[@]}" "$python" "$here/bench_workload.py" "${json[@]}" \
    "${py_args[@]}"
