#!/usr/bin/env bash
# Every GPU test of tcoll in one run, on a machine with an NVIDIA GPU: builds
# the CUDA build (TCOLL_CUDA=ON) in BUILD and runs, each under a time limit:
#   info      tcoll-info's CUDA line (device, driver, runtime)
#   ctest     ctest -L gpu: the device push into the proxy's FIFO
#             (test_gpu_fifo), the combine kernel against the host reduction
#             (test_gpu_reduce), every kind on device tensors against the
#             host path at 1, 2 and 4 ranks sharing the GPUs, under
#             TCOLL_DETERMINISTIC=1 with random floats, with the IPC path
#             on, and staged in small chunks (test_gpu_kinds), tcoll-perf --device cuda checked; the
#             proxy and channels driven from kernels (test_gpu_chan: a
#             million device pushes into a device proxy, memory and port
#             channel ping-pong and bulk puts on device memory, host to
#             device and back, across pretend nodes, a peer killed mid-put)
#   torch2/4  tcoll.torch on CUDA tensors at 2 and 4 ranks
#             (tests/gpu/test_torch_cuda.py)
#   demo      the main job on the GPU: train_digits.py --device cuda, 2 ranks
#   perf2/4   tcoll-perf --device cuda at 2 and 4 ranks (the table), staged
#             through host memory and (-ipc) with TCOLL_CUDA_IPC=1
#   perf2-nodes tcoll-perf --device cuda at 2 pretend nodes of one rank, 64 MiB
#             to 1 GiB: staged in chunks (the default), then (-whole) with
#             TCOLL_CUDA_STAGE_CHUNK_KB=0, staged whole
#   chan-bench tcoll-chan-bench --device cuda -e 1G: device push latency and
#             rate, kernel-to-kernel signal/wait, channel put bandwidth
#             against the device-to-device copy
#   torch2-ipc tcoll.torch on CUDA tensors with TCOLL_CUDA_IPC=1
#   dist-cuda2 the torch.distributed backend on CUDA tensors, DDP on the GPU
#             against Gloo (tests/gpu/test_dist_cuda.py)
#   dist-cpu2 the backend's CPU tests (tests/python/torch_dist) under the
#             machine's torch (2.x)
# and prints one summary line: "test_gpu.sh: SUMMARY: ..." with each step's
# result. Exit status: 0 every step passed, 77 no GPU or no nvcc here, 1 a
# step failed or skipped itself (with a GPU present, a skip means tcoll or
# torch did not find it: a failure here).
# Needs what tcoll's build needs (MPI, hwloc, CMake); on a GPU machine without
# MPI, unpack Debian's packages fetched by scripts/gpu_debs.sh (DEBS=dir,
# default .gpu-debs). The Python steps need the Python headers of python3
# (PYTHON=...), torch with CUDA, and for the demo scikit-learn and tqdm.
# Usage: scripts/test_gpu.sh; BUILD=dir (default build-gpu), NVCC=path,
# CUDA_ARCH=90 (default: the first GPU's), LOG=file (default BUILD/test_gpu.log).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$here/build-gpu}
python=${PYTHON:-$(command -v python3 || echo /usr/bin/python3)}
t_start=$(date +%s)

nvcc=${NVCC:-$(command -v nvcc || true)}
if [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
    nvcc=/usr/local/cuda/bin/nvcc
fi
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
    echo "test_gpu.sh: skipped: nvcc not found (put it in PATH or set NVCC=/path/to/nvcc)"
    exit 77
fi
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "test_gpu.sh: skipped: no NVIDIA GPU (nvidia-smi missing or lists none)"
    exit 77
fi
debs=${DEBS:-$here/.gpu-debs}
if ! command -v mpicc >/dev/null 2>&1 && compgen -G "$debs/*.deb" >/dev/null; then
    bash "$here/scripts/gpu_debs.sh" install "$debs"
fi
mkdir -p "$build"
log=${LOG:-$build/test_gpu.log}
exec > >(tee "$log") 2>&1

arch=${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
    head -n 1 | tr -d ' .')}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
echo "test_gpu.sh: $(date -u '+%F %T') UTC; $(nvidia-smi -L | head -n 1)"
echo "test_gpu.sh: driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1);" \
    "$("$nvcc" --version | tail -n 1); MPI: $(mpiexec --version 2>&1 | head -n 1);" \
    "python3: $("$python" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -n 1)"

summary=()
failed=0
# step NAME SECONDS command...: runs it, records PASS, FAIL or SKIP (exit 77,
# which fails the run too: a GPU is there).
step() {
    local name=$1 limit=$2 t0 rc
    shift 2
    echo
    echo "===== $name: $* ====="
    t0=$(date +%s)
    timeout --kill-after=10 "$limit" "$@"
    rc=$?
    case $rc in
    0) summary+=("$name PASS ($(($(date +%s) - t0)) s)") ;;
    77) summary+=("$name SKIP"); failed=1 ;;
    124 | 137) summary+=("$name FAIL (over ${limit} s)"); failed=1 ;;
    *) summary+=("$name FAIL (exit $rc)"); failed=1 ;;
    esac
}

step build 300 bash -c "cmake -S '$here' -B '$build' -DTCOLL_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES='${arch:-75}' -DCMAKE_CUDA_COMPILER='$nvcc' \
    -DTCOLL_BUILD_EXAMPLES=ON -DTCOLL_BUILD_TESTS=ON -DPython3_EXECUTABLE='$python' >/dev/null &&
    cmake --build '$build' -j \$(nproc) >/dev/null"
if [ "$failed" -ne 0 ]; then
    echo "test_gpu.sh: SUMMARY: ${summary[*]}"
    exit 1
fi
step info 60 mpiexec -n 1 "$build/tools/tcoll-info"
step ctest 420 bash -c "ctest --test-dir '$build' -L gpu -j3 --output-on-failure --timeout 300 \
    2>&1 | tee '$build/ctest_gpu.log'; test \${PIPESTATUS[0]} -eq 0 &&
    if grep -q '(Skipped)' '$build/ctest_gpu.log'; then echo 'a GPU test skipped itself'; exit 77; fi"
# which path the device alltoall took, and whether IPC was refused (for the record)
grep -h "device alltoall ran\|CUDA IPC cannot be used\|CUDA IPC refused" \
    "$build/Testing/Temporary/LastTest.log" 2>/dev/null | sed 's/^.*\] //' | sort | uniq -c || true

if [ -f "$build/python/tcoll/__init__.py" ] && compgen -G "$build/python/tcoll/_tcoll*.so" >/dev/null; then
    export PYTHONPATH=$build/python
    step torch2 240 mpiexec -n 2 "$python" "$here/tests/gpu/test_torch_cuda.py"
    step torch4 300 mpiexec -n 4 "$python" "$here/tests/gpu/test_torch_cuda.py"
    step torch2-ipc 240 env TCOLL_CUDA_IPC=1 mpiexec -n 2 "$python" \
        "$here/tests/gpu/test_torch_cuda.py"
    step demo 300 mpiexec -n 2 "$python" "$here/examples/python/train_digits.py" --device cuda \
        --epochs 3
    # the torch.distributed backend: CUDA tensors and DDP on the GPU, then
    # its CPU tests under this torch (2.x)
    step dist-cuda2 240 mpiexec -n 2 "$python" "$here/tests/gpu/test_dist_cuda.py"
    step dist-cpu2 240 env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONDONTWRITEBYTECODE=1 TC_TEST_MPI4PY=0 \
        OMP_NUM_THREADS=1 mpiexec -n 2 "$python" -m pytest -q -x --color=no \
        "$here/tests/python/torch_dist"
else
    echo "test_gpu.sh: the Python package was not built (no Python headers for $python?):" \
        "torch and demo not run"
    summary+=("torch NOT-BUILT" "demo NOT-BUILT")
    failed=1
fi
step perf2 300 mpiexec -n 2 "$build/tools/tcoll-perf" --device cuda
step perf4 400 mpiexec -n 4 "$build/tools/tcoll-perf" --device cuda
step perf2-ipc 300 env TCOLL_CUDA_IPC=1 mpiexec -n 2 "$build/tools/tcoll-perf" --device cuda
step perf4-ipc 300 env TCOLL_CUDA_IPC=1 mpiexec -n 4 "$build/tools/tcoll-perf" --device cuda
step perf2-nodes 240 env TCOLL_RANKS_PER_NODE=1 mpiexec -n 2 "$build/tools/tcoll-perf" \
    --device cuda -b 64M -e 1G -f 4
step perf2-nodes-whole 240 env TCOLL_RANKS_PER_NODE=1 TCOLL_CUDA_STAGE_CHUNK_KB=0 mpiexec -n 2 \
    "$build/tools/tcoll-perf" --device cuda -b 64M -e 1G -f 4
step chan-bench 300 mpiexec -n 2 "$build/tools/tcoll-chan-bench" --device cuda -e 1G

echo
echo "test_gpu.sh: SUMMARY: $([ "$failed" -eq 0 ] && echo PASS || echo FAIL) in" \
    "$(($(date +%s) - t_start)) s: ${summary[*]}"
exit "$failed"
