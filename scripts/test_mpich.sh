#!/usr/bin/env bash
# Builds tcoll against MPICH in build-mpich and runs the unit tests, then the
# multi-rank tests and the Python package's tests on 1 and 2 ranks, like
# scripts/test.sh (the Python tests without mpi4py, which Debian builds on
# Open MPI). Debian's mpich installs beside Open MPI, which stays the
# default: this uses mpicc.mpich and mpiexec.mpich. MPICH ranks busy-poll, so
# with more ranks than cores they fight for them: TCOLL_TEST_MAX_NP (default
# 2) caps the rank counts.
# Installs missing Debian packages first (TC_NO_APT=1 skips that).
# Usage: scripts/test_mpich.sh [extra ctest args]; BUILD=dir and
# TCOLL_CMAKE_ARGS=... as for scripts/test.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/deps.sh
. "$here/scripts/deps.sh"
# shellcheck disable=SC2086
tc_install_deps $TCOLL_DEBIAN_TEST_PACKAGES mpich libmpich-dev
if ! mpicc=$(command -v mpicc.mpich) || ! mpiexec=$(command -v mpiexec.mpich); then
    echo "tcoll: mpicc.mpich or mpiexec.mpich not found: apt-get install mpich libmpich-dev" >&2
    exit 1
fi
# shellcheck disable=SC2086
tc_build_and_test "${BUILD:-$here/build-mpich}" -DMPI_C_COMPILER="$mpicc" \
    -DMPIEXEC_EXECUTABLE="$mpiexec" -DTCOLL_TEST_MAX_NP="${TCOLL_TEST_MAX_NP:-2}" \
    ${TCOLL_CMAKE_ARGS:-} -- "$@"
