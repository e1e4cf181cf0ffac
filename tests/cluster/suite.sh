#!/usr/bin/env bash
# suite.sh - runs tcoll's multi-rank test programs on an emulated cluster
# (tools/cluster/emu.sh): HOSTS hosts, each with its own network, /dev/shm,
# /tmp and PID namespace, PER ranks on each, Open MPI over TCP between them.
# tcoll finds the hosts itself (no TCOLL_RANKS_PER_NODE). Each program runs
# under a time limit; the cluster is removed at the end, whatever happened.
#
# Usage: suite.sh EMU BUILD_DIR HOSTS PER PROGRAM[:ENV=V[,ENV=V...]][@ARG]...
# Exit: 0 every program passed; 1 one failed; 77 this machine cannot make
# the cluster (not root, or no network namespaces).
set -uo pipefail
emu=$1 build=$2 hosts=$3 per=$4
shift 4

# shellcheck source=tests/cluster/need_cluster.sh
. "$(dirname "$0")/need_cluster.sh"
need_cluster "cluster tests"

export TCOLL_EMU_STATE=/run/tcoll-emu-test-$$
trap '"$emu" down' EXIT
"$emu" up -n "$hosts" || exit 1

failed=0
for spec in "$@"; do
    prog=${spec%%[:@]*}
    envs=""
    args=()
    rest=${spec#"$prog"}
    case $rest in :*) envs=${rest#:}; envs=${envs%%@*} ;; esac
    case $rest in *@*) read -r -a args <<<"${rest#*@}" ;; esac
    start=$(date +%s)
    log=$(mktemp)
    # shellcheck disable=SC2086 # the ENV=V list splits on commas
    env ${envs//,/ } "$emu" run -np $((hosts * per)) --per-host "$per" --timeout 150 \
        "$build/tests/mpi/$prog" "${args[@]+"${args[@]}"}" >"$log" 2>&1
    rc=$?
    if [ $rc = 0 ]; then
        echo "ok   $prog${envs:+ ($envs)}${args[*]:+ ${args[*]}}: $(tail -n 1 "$log") [$(($(date +%s) - start)) s]"
    else
        echo "FAIL $prog${envs:+ ($envs)}${args[*]:+ ${args[*]}}: exit $rc after $(($(date +%s) - start)) s; its output:"
        sed 's/^/    /' "$log" | tail -n 60
        failed=1
    fi
    rm -f "$log"
done
exit $failed
