#!/usr/bin/env bash
# Builds tcoll and runs its whole test suite (unit tests, then multi-rank
# tests under mpiexec -n 1..4). Installs missing Debian packages first.
# Usage: scripts/test.sh [extra ctest args]; BUILD=dir and TCOLL_CMAKE_ARGS=...
# choose the build directory and extra CMake options.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/deps.sh
. "$here/scripts/deps.sh"
tc_install_deps
tc_mpi_env
build=${BUILD:-$here/build}
# shellcheck disable=SC2086
cmake -S "$here" -B "$build" -DTCOLL_WERROR=ON ${TCOLL_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest -L unit -j"$(nproc)" --output-on-failure "$@"
ctest -L mpi --output-on-failure "$@"
