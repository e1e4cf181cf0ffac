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
# shellcheck disable=SC2086
tc_build_and_test "${BUILD:-$here/build}" ${TCOLL_CMAKE_ARGS:-} -- "$@"
