#!/usr/bin/env bash
# tcoll's allreduce algorithms side by side, each against MPI_Allreduce
# measured in the same run. The algorithm is a per-process knob
# (TCOLL_ALLREDUCE_ALGO, read once at tc_init), so this launches tcoll-perf
# once per algorithm and run: an allreduce sweep and the workload mode, each
# with --json; then tools/perf_algos.py prints one table, a row per size and
# a row for the workload, for each algorithm its time and its ratio against
# the MPI time of that same run. It prints what it measured and never judges
# a time. Not installed.
#
#   tools/perf_algos.sh [-n NP] [-b SIZE] [-e SIZE] [-f F] [-i ITERS] [-w N]
#                       [--runs R] [--algos LIST] [--nodes K]
#                       [--workload FILE | --no-workload] [--steps N]
#                       [--plot FILE.png|FILE.svg] [--markdown] [--dir DIR]
#                       [--mpiexec PATH] [--tcoll-perf PATH]
#                       [tcoll-perf options...] [-- tcoll-perf options...]
#
#   -n NP            ranks (default 2)
#   -b, -e, -f       the sweep's sizes, as tcoll-perf takes them (default
#                    -b 4 -e 64M -f 4: 4 B, 16 B, ... 64 KiB, ... 1 MiB, ... 64 MiB)
#   -i, --iters N    timed iterations per size (tcoll-perf -n; default its own)
#   -w, --warmup N   untimed iterations or steps first (tcoll-perf -w)
#   --runs R         launches per algorithm (default 1); with R > 1 every
#                    cell shows the range over the runs, lowest-highest. The
#                    runs take turns: run 1 of every algorithm, then run 2...
#   --algos LIST     the columns, comma-separated, each ALGO or ALGO@K: a run
#                    with TCOLL_ALLREDUCE_ALGO=ALGO, and for ALGO@K also
#                    TCOLL_RANKS_PER_NODE=K (pretend nodes of K ranks, so the
#                    path across nodes runs over MPI on one machine).
#                    A column ending in -nd runs with TCOLL_DETERMINISTIC=0
#                    (the others with 1): e.g. ring,ring-nd for the cost of
#                    the documented reduction order.
#                    Default auto,ring,shm,cma
#   --nodes K        adds auto@K (the hierarchical allreduce) and ring@K
#   --workload FILE  the workload mode's tensors (default tcoll-perf's:
#                    ResNet-50's 161 gradients); --no-workload skips it
#   --steps N        the workload's timed steps (default tcoll-perf's, 20)
#   --plot FILE.png  busbw against size, one line per algorithm and one for
#                    MPI (medians over the runs), drawn by gnuplot; without
#                    gnuplot on PATH a note, and FILE.gp, the gnuplot script
#                    with its data, to draw it elsewhere (gnuplot FILE.gp).
#                    FILE.svg: the same plot as SVG, drawn without gnuplot
#   --markdown       the table in Markdown (for a README) instead of text
#   --dir DIR        keep every run's JSON, output and log in DIR (default: a
#                    temporary folder, removed at the end)
#   --mpiexec PATH   the launcher (default $MPIEXEC, else mpiexec)
#   --tcoll-perf PATH  default $BUILD/tools/tcoll-perf
#   Any other option, and everything after --, goes to the sweeps' tcoll-perf
#   (e.g. -d float64, -o max, -c 0); the workload runs get -w, --steps and
#   --workload only.
#
# Environment: BUILD (the build tree, default ./build next to tools/),
# MPIEXEC, MPIEXEC_FLAGS (default --oversubscribe with Open MPI's launcher,
# none with others), PYTHON (default /usr/bin/python3, else python3 on PATH).
# Other TCOLL_* settings (e.g. TCOLL_SHM_DIRECT_KB) apply to every run; each
# run sets TCOLL_ALLREDUCE_ALGO, TCOLL_DETERMINISTIC, TCOLL_RANKS_PER_NODE (unset without @K) and
# TCOLL_LOG_LEVEL=info (rank 0's log then names the algorithm that ran: cma
# runs as shm where process_vm_readv is refused, shm and cma as ring across
# pretend nodes); with Open MPI they are exported to the ranks with -x. As
# root with Open MPI, set OMPI_ALLOW_RUN_AS_ROOT=1 and
# OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1. Exit status: 0; 1 when a tcoll-perf run
# fails (its output is shown); 2 bad options.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
build=${BUILD:-$src/build}
mpiexec=${MPIEXEC:-mpiexec}
if [ -n "${PYTHON:-}" ]; then
    python=$PYTHON
elif [ -x /usr/bin/python3 ]; then
    python=/usr/bin/python3
else
    python=python3
fi

usage() { sed -n '2,/^set -e/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die_usage() { echo "perf_algos.sh: $*" >&2; exit 2; }
need() { [ $# -ge 2 ] || die_usage "$1 needs a value"; }

np=2
perf=$build/tools/tcoll-perf
minb=4
maxb=64M
factor=4
iters=()
warmup=()
steps=()
runs=1
algos=auto,ring,shm,cma
nodes=
workload=()
do_workload=1
plot=
markdown=0
keep=
extra=()
while [ $# -gt 0 ]; do
    case $1 in
        -n) need "$@"; np=$2; shift 2 ;;
        -b) need "$@"; minb=$2; shift 2 ;;
        -e) need "$@"; maxb=$2; shift 2 ;;
        -f) need "$@"; factor=$2; shift 2 ;;
        -i|--iters) need "$@"; iters=(-n "$2"); shift 2 ;;
        -w|--warmup) need "$@"; warmup=(-w "$2"); shift 2 ;;
        --runs) need "$@"; runs=$2; shift 2 ;;
        --algos) need "$@"; algos=$2; shift 2 ;;
        --nodes) need "$@"; nodes=$2; shift 2 ;;
        --workload) need "$@"; workload=(--workload "$2"); do_workload=1; shift 2 ;;
        --no-workload) do_workload=0; shift ;;
        --steps) need "$@"; steps=(-n "$2"); shift 2 ;;
        --plot) need "$@"; plot=$2; shift 2 ;;
        --markdown) markdown=1; shift ;;
        --dir) need "$@"; keep=$2; shift 2 ;;
        --mpiexec) need "$@"; mpiexec=$2; shift 2 ;;
        --tcoll-perf) need "$@"; perf=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --) shift; extra+=("$@"); break ;;
        *) extra+=("$1"); shift ;;
    esac
done
[[ $np =~ ^[1-9][0-9]*$ ]] || die_usage "-n wants a positive number of ranks, not '$np'"
[[ $runs =~ ^[1-9][0-9]*$ ]] || die_usage "--runs wants a positive number, not '$runs'"
if [ -n "$nodes" ]; then
    [[ $nodes =~ ^[1-9][0-9]*$ ]] || die_usage "--nodes wants ranks per node (K >= 1), not '$nodes'"
    algos="$algos,auto@$nodes,ring@$nodes"
fi
IFS=, read -r -a columns <<<"$algos"
[ ${#columns[@]} -gt 0 ] || die_usage "--algos names no algorithm"
for c in "${columns[@]}"; do
    case ",$algos," in *",$c,"*",$c,"*) die_usage "--algos names $c twice" ;; esac
    [[ $c =~ ^(auto|ring|shm|cma|hier)(@[1-9][0-9]*)?(-nd)?$ ]] ||
        die_usage "--algos: '$c' is not ALGO, ALGO@K or either with -nd (ALGO: auto, ring, shm, cma, hier)"
done
if [ -n "$plot" ] && [ ! -d "$(dirname "$plot")" ]; then
    die_usage "--plot $plot: no folder $(dirname "$plot")"
fi
[ -x "$perf" ] ||
    die_usage "no tcoll-perf at $perf (build it, or --tcoll-perf PATH, or BUILD=dir)"
if ! "$python" -c 'import json' 2>/dev/null; then
    echo "perf_algos.sh: no Python 3 at '$python' (PYTHON=path;" \
         "Debian: apt-get install python3)" >&2
    exit 2
fi

is_ompi=0
if "$mpiexec" --version 2>/dev/null | grep -q "Open MPI\|OpenRTE"; then
    is_ompi=1
fi
if [ -z "${MPIEXEC_FLAGS+set}" ]; then
    MPIEXEC_FLAGS=
    [ "$is_ompi" = 1 ] && MPIEXEC_FLAGS=--oversubscribe
fi
read -r -a flags <<<"$MPIEXEC_FLAGS"

if [ -n "$keep" ]; then
    mkdir -p "$keep"
    dir=$(cd "$keep" && pwd)
else
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
fi
manifest=$dir/manifest.tsv
: >"$manifest"

# run_perf COLUMN RUN KIND tcoll-perf-arguments...: one launch, its JSON,
# stdout and stderr in $dir, a line in the manifest; on failure its output
# and exit 1.
run_perf() {
    local col=$1 run=$2 kind=$3 spec=${1%-nd} algo rpn='' base det=1
    algo=${spec%@*}
    [ "$spec" != "$col" ] && det=0
    shift 3
    [ "$spec" != "$algo" ] && rpn=${spec#*@}
    base=$dir/${col/@/-at-}.$kind.$run
    local vars=(TCOLL_ALLREDUCE_ALGO="$algo" TCOLL_DETERMINISTIC=$det TCOLL_LOG_LEVEL=info) xs=()
    [ -n "$rpn" ] && vars+=(TCOLL_RANKS_PER_NODE="$rpn")
    if [ "$is_ompi" = 1 ]; then
        local v
        for v in "${vars[@]}"; do xs+=(-x "${v%%=*}"); done
    fi
    echo "# $col, run $run/$runs: ${vars[*]} $mpiexec -n $np${flags[*]:+ ${flags[*]}} $perf $*" >&2
    if ! env -u TCOLL_RANKS_PER_NODE "${vars[@]}" "$mpiexec" -n "$np" "${flags[@]}" "${xs[@]}" \
            "$perf" "$@" --json "$base.json" >"$base.out" 2>"$base.err"; then
        cat "$base.out" "$base.err" >&2
        echo "perf_algos.sh: tcoll-perf failed ($col, run $run, $kind)" >&2
        exit 1
    fi
    printf '%s\t%s\t%s\t%s\t%s\n' "$col" "$run" "$kind" "$base" "${vars[*]}" >>"$manifest"
}

for run in $(seq "$runs"); do
    for col in "${columns[@]}"; do
        run_perf "$col" "$run" sweep -m allreduce -b "$minb" -e "$maxb" -f "$factor" \
            "${iters[@]}" "${warmup[@]}" "${extra[@]}"
        if [ "$do_workload" = 1 ]; then
            run_perf "$col" "$run" workload -m workload "${steps[@]}" "${warmup[@]}" \
                "${workload[@]}"
        fi
    done
done

table=(--columns "$algos")
[ "$markdown" = 1 ] && table+=(--markdown)
[ -n "$plot" ] && table+=(--plot "$plot")
"$python" "$here/perf_algos.py" "${table[@]}" "$manifest"
[ -n "$keep" ] && echo "# the runs' JSON, output and logs: $dir" >&2
exit 0
