# shellcheck shell=bash
# Sourced by the other scripts: installs the Debian packages tcoll needs to
# build and test, when any is missing (set TC_NO_APT=1 to skip), and holds the
# steps the test scripts share.
TCOLL_DEBIAN_PACKAGES="build-essential cmake pkg-config libopenmpi-dev openmpi-bin libhwloc-dev"
# What the test scripts add: python3 (tools/perf_algos.sh merges its runs'
# figures with it; its smoke test is skipped without it), and for the Python
# package python3-dev (the extension is built only with it), python3-numpy
# and python3-pytest (its tests), python3-mpi4py (the tests compare their
# results with it), python3-torch (the PyTorch API's tests; with what it
# pulls in, about 140 MiB to download and 620 MiB installed on Debian 12)
# and python3-torchvision (the smoke test of
# tools/python/bench_synthetic.py, skipped without it; 1 MiB more),
# python3-sklearn and python3-tqdm (the short run of the demo, python.demo.np2),
# and iproute2 and nftables (the emulated cluster, tools/cluster/emu.sh).
# shellcheck disable=SC2034 # used by the scripts that source this file
TCOLL_DEBIAN_TEST_PACKAGES="python3 python3-dev python3-numpy python3-pytest python3-mpi4py
python3-torch python3-torchvision python3-sklearn python3-tqdm iproute2 nftables"
tc_src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# tc_install_deps [package...]: the packages above and the ones given.
tc_install_deps() {
    local missing="" p
    [ "${TC_NO_APT:-0}" = 1 ] && return 0
    for p in $TCOLL_DEBIAN_PACKAGES "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    echo "tcoll: installing Debian packages:$missing" >&2
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
            echo "tcoll: please install as root: apt-get install$missing" >&2; return 1
        fi
    fi
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    # shellcheck disable=SC2086
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
    tc_keep_openmpi_default $sudo
}

# tc_keep_openmpi_default [sudo]: MPICH installs beside Open MPI under the same
# alternatives (mpicc, mpirun/mpiexec, the mpi.h directory). Debian ranks Open
# MPI higher (50 against 40), so they stay on it, but one left in manual mode
# would not: set any that points elsewhere back to Open MPI. The scripts, the
# demo and the README use the plain mpicc/mpiexec and mean Open MPI; MPICH is
# reached through mpicc.mpich/mpiexec.mpich (scripts/test_mpich.sh).
tc_keep_openmpi_default() {
    local name mode value choice
    command -v update-alternatives >/dev/null 2>&1 || return 0
    update-alternatives --get-selections | while read -r name mode value; do
        case $name in mpi | mpirun | mpi-*-linux-*) ;; *) continue ;; esac
        case $value in *openmpi*) continue ;; esac
        choice=$(update-alternatives --list "$name" | sed -n '/openmpi/p' | sed -n 1p)
        [ -n "$choice" ] || continue
        echo "tcoll: the $name alternative ($mode) was $value; setting it back to $choice" >&2
        "$@" update-alternatives --auto "$name" >/dev/null
        case $(update-alternatives --query "$name" | sed -n 's/^Value: //p') in
            *openmpi*) ;;
            *) "$@" update-alternatives --set "$name" "$choice" >/dev/null ;;
        esac
    done
}

# mpirun refuses to run as root unless told; tests oversubscribe the cores.
tc_mpi_env() {
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1
}

# tc_build_and_test DIR [cmake-arg...] [-- ctest-arg...]: configures tcoll in
# DIR with -Werror and the CMake arguments, builds it, then runs the unit tests
# (in parallel), the multi-rank tests, the Python package's tests (one at a
# time; none in a build without the package) and, as root, the multi-rank
# tests across an emulated cluster (skipped otherwise) with CTest; of those
# only the ones matching TCOLL_TEST_CLUSTER (a CTest -R regex) if it is set.
tc_build_and_test() {
    local build=$1 cmake_args=() cluster_re=${TCOLL_TEST_CLUSTER:-}
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do cmake_args+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    cmake -S "$tc_src" -B "$build" -DTCOLL_WERROR=ON "${cmake_args[@]}" >/dev/null
    cmake --build "$build" -j"$(nproc)"
    (
        # The scripts' own TCOLL_* settings are no knobs: tcoll would warn.
        unset TCOLL_CMAKE_ARGS TCOLL_TEST_MAX_NP TCOLL_TEST_CLUSTER TCOLL_TEST_EMU
        cd "$build" || exit
        ctest -L unit -j"$(nproc)" --output-on-failure "$@"
        ctest -L mpi --output-on-failure "$@"
        ctest -L python --output-on-failure "$@"
        ctest -L cluster ${cluster_re:+-R "$cluster_re"} --output-on-failure "$@"
    )
}

# tc_emu_test DIR [cmake-arg...]: where the CUDA toolkit is (its headers),
# builds in DIR libtcoll against the CUDA runtime stand-in (tests/cuda_emu,
# TCOLL_CUDA_EMU=ON) with the GPU tests that are C programs, and runs them
# (CTest label gpu): every kind on device tensors over 1 to 4 processes,
# through CUDA IPC, refused IPC, the chunked staging, on a machine without a
# GPU. Says so and returns 0 where there is no toolkit.
tc_emu_test() {
    local build=$1
    shift
    if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
        echo "no CUDA toolkit: the device paths are not run on the CUDA runtime stand-in"
        return 0
    fi
    cmake -S "$tc_src" -B "$build" -DTCOLL_WERROR=ON -DTCOLL_CUDA_EMU=ON \
        -DTCOLL_BUILD_PYTHON=OFF "$@" >/dev/null
    cmake --build "$build" -j"$(nproc)" --target test_gpu_kinds test_gpu_chan_host test_gpu_chan_host_killed test_emu_faults \
        test_gpu_host_map tcoll-perf
    (
        unset TCOLL_CMAKE_ARGS TCOLL_TEST_MAX_NP TCOLL_TEST_CLUSTER TCOLL_TEST_EMU
        cd "$build" || exit
        ctest -L gpu --no-tests=error --output-on-failure
    )
}
