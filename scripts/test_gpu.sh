#!/usr/bin/env bash
# Runs the GPU test of the device push (tests/gpu/test_gpu_fifo.cu): CUDA
# kernels push triggers into a proxy's FIFO mapped with cudaHostRegister, and
# the proxy checks each one. Not part of CI, which needs neither nvcc nor a GPU.
# Builds libtcoll (tcoll's usual dependencies: MPI, hwloc) in BUILD, compiles
# the test with nvcc against it, runs it.
# Exit status: 0 PASS, 77 skipped (no nvcc, no GPU
# in nvidia-smi, or one older than compute capability 7.0), anything else FAIL.
# Usage: scripts/test_gpu.sh; BUILD=dir (default build-gpu), NVCC=path to
# nvcc, CUDA_ARCH=sm_90 (default: the first GPU's, from nvidia-smi),
# TIMEOUT=seconds for the test (default 300).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

nvcc=${NVCC:-}
if [ -z "$nvcc" ]; then
    nvcc=$(command -v nvcc || true)
fi
if [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
    nvcc=/usr/local/cuda/bin/nvcc
fi
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
    echo "test_gpu.sh: skipped: nvcc not found (put it in PATH or set NVCC=/path/to/nvcc)"
    exit 77
fi
if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "test_gpu.sh: skipped: nvidia-smi not found (no NVIDIA driver on this machine)"
    exit 77
fi
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "test_gpu.sh: skipped: nvidia-smi lists no GPU"
    exit 77
fi

arch=${CUDA_ARCH:-}
if [ -z "$arch" ]; then
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .' || true)
    if [[ "$cap" =~ ^[0-9]+$ ]]; then
        arch=sm_$cap
    else
        arch=native # nvcc 11.6 and newer
    fi
fi

build=${BUILD:-$here/build-gpu}
# A GPU machine with CUDA but no MPI: unpack the Debian packages that
# scripts/gpu_debs.sh fetched into .gpu-debs (or DEBS=dir), if there are any.
debs=${DEBS:-$here/.gpu-debs}
if ! command -v mpicc >/dev/null 2>&1 && compgen -G "$debs/*.deb" >/dev/null; then
    bash "$here/scripts/gpu_debs.sh" install "$debs"
fi
echo "test_gpu.sh: $("$nvcc" --version | tail -n 1); GPU: $(nvidia-smi -L | head -n 1); arch $arch"
cmake -S "$here" -B "$build" -DTCOLL_BUILD_TESTS=OFF -DTCOLL_BUILD_EXAMPLES=OFF \
    -DTCOLL_BUILD_PYTHON=OFF
cmake --build "$build" --target tcoll -j "$(nproc)"
"$nvcc" -std=c++17 -O2 -arch="$arch" -I"$here/include" \
    "$here/tests/gpu/test_gpu_fifo.cu" -o "$build/test_gpu_fifo" \
    -L"$build" -ltcoll -Xlinker -rpath -Xlinker "$build"

rc=0
timeout "${TIMEOUT:-300}" "$build/test_gpu_fifo" || rc=$?
case $rc in
    0 | 77) ;;
    124) echo "test_gpu.sh: FAIL: the test did not finish within ${TIMEOUT:-300} s (a lost trigger?)" ;;
    *) echo "test_gpu.sh: FAIL: test_gpu_fifo exited with status $rc" ;;
esac
exit "$rc"
