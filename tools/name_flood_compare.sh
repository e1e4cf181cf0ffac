#!/usr/bin/env bash
# Side-by-side runs of tcoll-name-flood (tools/name_flood.c) against this
# tree's libtcoll and an older commit's, alternating, in one session: the
# same source compiled against each (it uses the public API only).
#
# Usage: tools/name_flood_compare.sh OLD_COMMIT [NP] [RUNS] [tcoll-name-flood args]
#   e.g. tools/name_flood_compare.sh 964515f 2 3 -n 10000,50000,200000 -o reverse
# Builds OLD_COMMIT's library in a temporary worktree (removed at the end)
# and this tree's in BUILD (default build). Needs git, cmake, cc and mpiexec.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
old=${1:?usage: $0 OLD_COMMIT [NP] [RUNS] [args]}
np=${2:-2}
runs=${3:-3}
shift $(($# < 3 ? $# : 3))
build=${BUILD:-$here/build}
tmp=$(mktemp -d)
trap 'git -C "$here" worktree remove --force "$tmp/old" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

git -C "$here" worktree add --detach "$tmp/old" "$old" >/dev/null
cmake -S "$tmp/old" -B "$tmp/old/build" -DTCOLL_BUILD_TESTS=OFF -DTCOLL_BUILD_EXAMPLES=OFF \
    -DTCOLL_BUILD_PYTHON=OFF >/dev/null
cmake --build "$tmp/old/build" --target tcoll -j "$(nproc)" >/dev/null
cmake --build "$build" --target tcoll -j "$(nproc)" >/dev/null
for which in old new; do
    if [ $which = old ]; then inc=$tmp/old/include lib=$tmp/old/build; else inc=$here/include lib=$build; fi
    cc -std=c11 -O2 -I"$inc" "$here/tools/name_flood.c" -o "$tmp/flood-$which" \
        -L"$lib" -ltcoll -Wl,-rpath,"$lib"
done
mpi_flags=(--oversubscribe)
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpiexec --version 2>/dev/null | grep -qiE "open ?mpi|openrte" || mpi_flags=()
for r in $(seq 1 "$runs"); do
    for which in old new; do
        echo "== $which ($([ $which = old ] && echo "$old" || echo "this tree, $build")), run $r, $np ranks"
        mpiexec -n "$np" "${mpi_flags[@]}" "$tmp/flood-$which" "$@"
    done
done
