#!/usr/bin/env bash
# Builds tcoll and runs its whole test suite (unit tests, then multi-rank
# tests under mpiexec -n 1..4, then the Python package's tests under mpiexec
# -n 1..3). Installs missing Debian packages first.
# Where the CUDA toolkit is, last the GPU tests that are C programs against
# the CUDA runtime stand-in (tests/cuda_emu), in BUILD-emu; TCOLL_TEST_EMU=0
# leaves that out.
# Usage: scripts/test.sh [extra ctest args]; BUILD=dir and TCOLL_CMAKE_ARGS=...
# choose the build directory and extra CMake options.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/deps.sh
. "$here/scripts/deps.sh"
# shellcheck disable=SC2086
tc_install_deps $TCOLL_DEBIAN_TEST_PACKAGES
tc_mpi_env
# shellcheck disable=SC2086
tc_build_and_test "${BUILD:-$here/build}" ${TCOLL_CMAKE_ARGS:-} -- "$@"
if [ "${TCOLL_TEST_EMU:-1}" != 0 ]; then
    # shellcheck disable=SC2086
    tc_emu_test "${BUILD:-$here/build}-emu" ${TCOLL_CMAKE_ARGS:-}
fi
