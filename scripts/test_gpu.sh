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
#   torch2    tcoll.torch on CUDA tensors at 2 ranks (tests/gpu/test_torch_cuda.py)
#   dist-cuda2 the torch.distributed backend on CUDA tensors, DDP on the GPU
#             against Gloo (tests/gpu/test_dist_cuda.py)
#   demo      the main job on the GPU: train_digits.py --device cuda, 2 ranks
#   torch2-ipc tcoll.torch on CUDA tensors with TCOLL_CUDA_IPC=1 (every size)
#   perf2-ipc, perf4-ipc  tcoll-perf --device cuda at 2 and 4 ranks with
#             TCOLL_CUDA_IPC=1 (the table the goal is read from)
#   chan-bench tcoll-chan-bench --device cuda -e 1G: device push latency and
#             rate, kernel-to-kernel signal/wait, channel put bandwidth
#             against the device-to-device copy
#   perf2, perf4  the same tables staged through host memory (the default)
#   torch4    tcoll.torch on CUDA tensors at 4 ranks
#   dist-cpu2 the backend's CPU tests (tests/python/torch_dist) under the
#             machine's torch (2.x)
#   perf2-nodes tcoll-perf --device cuda at 2 pretend nodes of one rank, 64 MiB
#             to 1 GiB: staged in chunks
# and prints one summary line: "test_gpu.sh: SUMMARY: ..." with each step's
# result. Exit status: 0 every step passed, 77 no GPU or no nvcc here, 1 a
# step failed or skipped itself (with a GPU present, a skip means tcoll or
# torch did not find it: a failure here).
# Needs what tcoll's build needs (MPI, hwloc, CMake); on a GPU machine without
# MPI, unpack Debian's packages fetched by scripts/gpu_debs.sh (DEBS=dir,
# default .gpu-debs). The Python steps need the Python headers of python3
# (PYTHON=...), torch with CUDA, and for the demo scikit-learn and tqdm.
# The whole run keeps to BUDGET_S seconds (default 480): each step's limit is
# cut to what is left, a step with under 15 s left is not run (NOT-RUN, a
# failure), the steps go most telling first, and a run stopped from outside
# (TERM, INT) still prints its summary. Each step's output is also kept in
# <step>.log next to LOG (with ctest's own log), and a step whose output says CUDA
# IPC was refused is marked so in the summary.
# Usage: scripts/test_gpu.sh; BUILD=dir (default build-gpu), NVCC=path,
# CUDA_ARCH=90 (default: the first GPU's), LOG=file (default BUILD/test_gpu.log),
# BUDGET_S=seconds.
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
budget=${BUDGET_S:-480}
deadline=$((t_start + budget))
mkdir -p "$build"
log=${LOG:-$build/test_gpu.log}
logdir=$(dirname "$log")
mkdir -p "$logdir"
exec > >(tee "$log") 2>&1
tee_pid=$!

summary=()
failed=0
current=
session=()
finish() {
    if [ -n "$current" ]; then
        end_step "$current"
        summary+=("$current stopped")
    fi
    cp "$build/Testing/Temporary/LastTest.log" "$logdir/ctest_LastTest.log" 2>/dev/null || true
    echo
    echo "test_gpu.sh: SUMMARY: $([ "$failed" -eq 0 ] && echo PASS || echo FAIL) in" \
        "$(($(date +%s) - t_start)) s: ${summary[*]}"
    exec 1>&- 2>&-
    wait "$tee_pid" 2>/dev/null
    exit "$failed"
}
trap 'summary+=("stopped from outside"); failed=1; finish' TERM INT

debs=${DEBS:-$here/.gpu-debs}
if ! command -v mpicc >/dev/null 2>&1; then
    if compgen -G "$debs/*.deb" >/dev/null && bash "$here/scripts/gpu_debs.sh" install "$debs"; then
        summary+=("debs PASS")
    else
        echo "test_gpu.sh: no MPI here, and Debian's packages in $debs could not be unpacked" \
            "(fetch them with scripts/gpu_debs.sh fetch on Debian 12)"
        summary+=("debs FAIL")
        failed=1
        finish
    fi
fi

arch=${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
    head -n 1 | tr -d ' .')}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# one machine, maybe without ssh (Open MPI's launcher would look for it);
# ctest runs several jobs at once, each of which would bind its ranks from
# core 0 up; a plugin whose fabric library is absent is not worth a line
# per rank
export OMPI_MCA_plm_rsh_agent='' OMPI_MCA_hwloc_base_binding_policy=none \
    OMPI_MCA_mca_base_component_show_load_errors=0
if [ "$(uname -r)" = 4.4.0 ]; then # gVisor: no process_vm_readv for Open MPI's own copies
    export OMPI_MCA_btl_vader_single_copy_mechanism=none
    echo "test_gpu.sh: gVisor kernel: Open MPI's single-copy transfers off"
fi
echo "test_gpu.sh: $(date -u '+%F %T') UTC; $(nvidia-smi -L | head -n 1)"
echo "test_gpu.sh: driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1);" \
    "$("$nvcc" --version | tail -n 1); MPI: $(mpiexec --version 2>&1 | head -n 1);" \
    "python3: $("$python" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -n 1)"

# Kills what step NAME left running (the ranks of a killed launcher are in
# its session), and forgets its files.
end_step() {
    local sid
    sid=$(cat "$logdir/.$1.sid" 2>/dev/null || true)
    if [ "${#session[@]}" -gt 0 ] && [ "${sid:-0}" -gt 1 ] 2>/dev/null; then
        pkill -KILL -s "$sid" 2>/dev/null || true
    fi
    rm -f "$logdir/.$1.sid" "$logdir/.$1.rc"
}

# step NAME SECONDS command...: runs it in a session of its own, under the
# smaller of SECONDS and what is left of the budget; records PASS, FAIL,
# SKIP (exit 77, which fails the run too: a GPU is there) or NOT-RUN.
step() {
    local name=$1 limit=$2 t0 rc left tag=""
    shift 2
    left=$((deadline - $(date +%s)))
    if [ "$left" -lt 15 ]; then
        summary+=("$name NOT-RUN (budget)")
        failed=1
        return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    echo
    echo "===== $name (up to $limit s): $* ====="
    t0=$(date +%s)
    # in the background, waited for: a TERM or INT to this script is then
    # handled at once (finish), not after the step
    rm -f "$logdir/.$name.rc"
    {
        # shellcheck disable=SC2016 # $$ and $@ are the inner shell's
        "${session[@]}" bash -c 'echo $$ > "$0"; exec timeout --kill-after=10 "$@"' \
            "$logdir/.$name.sid" "$limit" "$@" 2>&1
        echo $? >"$logdir/.$name.rc"
    } | tee "$logdir/$name.log" &
    current=$name
    wait $!
    rc=$(cat "$logdir/.$name.rc" 2>/dev/null || echo 1)
    end_step "$name"
    current=
    if grep -q "CUDA IPC cannot be used\|CUDA IPC refused" "$logdir/$name.log"; then
        tag=", CUDA IPC refused: staged"
    fi
    case $rc in
    0) summary+=("$name PASS ($(($(date +%s) - t0)) s$tag)") ;;
    77) summary+=("$name SKIP$tag"); failed=1 ;;
    124 | 137) summary+=("$name FAIL (over ${limit} s$tag)"); failed=1 ;;
    *) summary+=("$name FAIL (exit $rc$tag)"); failed=1 ;;
    esac
}

# a session of its own for each step, where setsid can wait for it
if setsid --help 2>&1 | grep -q -- --wait; then
    session=(setsid --wait)
fi
gen=()
if ! command -v make >/dev/null 2>&1 && command -v ninja >/dev/null 2>&1; then
    gen=(-G Ninja)
fi
step build 300 bash -c "cmake ${gen[*]} -S '$here' -B '$build' -DTCOLL_CUDA=ON \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES='${arch:-75}' \
    -DCMAKE_CUDA_COMPILER='$nvcc' -DTCOLL_BUILD_EXAMPLES=ON -DTCOLL_BUILD_TESTS=ON \
    -DPython3_EXECUTABLE='$python' >/dev/null && cmake --build '$build' -j \$(nproc) >/dev/null"
if [ "$failed" -ne 0 ]; then
    finish
fi
step info 60 mpiexec -n 1 "$build/tools/tcoll-info"
step ctest 420 bash -c "ctest --test-dir '$build' -L gpu -j4 --output-on-failure --timeout 300 \
    2>&1 | tee '$build/ctest_gpu.log'; test \${PIPESTATUS[0]} -eq 0 &&
    if grep -q '(Skipped)' '$build/ctest_gpu.log'; then echo 'a GPU test skipped itself'; exit 77; fi"
# which path the device alltoall took, and whether IPC was refused (for the record)
grep -h "device alltoall ran\|CUDA IPC cannot be used\|CUDA IPC refused" \
    "$build/Testing/Temporary/LastTest.log" 2>/dev/null | sed 's/^.*\] //' | sort | uniq -c || true

# the most telling first: the budget cuts the last ones
if [ -f "$build/python/tcoll/__init__.py" ] && compgen -G "$build/python/tcoll/_tcoll*.so" >/dev/null; then
    export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
    py_built=1
    step torch2 240 mpiexec -n 2 "$python" "$here/tests/gpu/test_torch_cuda.py"
    # the torch.distributed backend: CUDA tensors and DDP on the GPU
    step dist-cuda2 240 mpiexec -n 2 "$python" "$here/tests/gpu/test_dist_cuda.py"
    step demo 300 mpiexec -n 2 "$python" "$here/examples/python/train_digits.py" --device cuda \
        --epochs 3
    # every tensor of the test over IPC (the default threshold is above most)
    step torch2-ipc 240 env TCOLL_CUDA_IPC=1 TCOLL_CUDA_IPC_MIN_KB=1 mpiexec -n 2 "$python" \
        "$here/tests/gpu/test_torch_cuda.py"
fi
# the benchmarks' tables: the goals are over IPC (issue text: 64 MiB and up at
# half the device copy bandwidth) and the channels'
step perf2-ipc 300 env TCOLL_CUDA_IPC=1 mpiexec -n 2 "$build/tools/tcoll-perf" --device cuda
step chan-bench 300 mpiexec -n 2 "$build/tools/tcoll-chan-bench" --device cuda -e 1G
step perf4-ipc 300 env TCOLL_CUDA_IPC=1 mpiexec -n 4 "$build/tools/tcoll-perf" --device cuda
step perf2 300 mpiexec -n 2 "$build/tools/tcoll-perf" --device cuda
if [ "${py_built:-0}" -eq 1 ]; then
    step torch4 300 mpiexec -n 4 "$python" "$here/tests/gpu/test_torch_cuda.py"
    # the backend's CPU tests under this torch (2.x)
    step dist-cpu2 240 env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONDONTWRITEBYTECODE=1 \
        TC_TEST_MPI4PY=0 OMP_NUM_THREADS=1 mpiexec -n 2 "$python" -m pytest -q -x --color=no \
        "$here/tests/python/torch_dist"
else
    echo "test_gpu.sh: the Python package was not built (no Python headers for $python?):" \
        "torch and demo not run"
    summary+=("torch NOT-BUILT" "demo NOT-BUILT")
    failed=1
fi
step perf4 400 mpiexec -n 4 "$build/tools/tcoll-perf" --device cuda
step perf2-nodes 240 env TCOLL_RANKS_PER_NODE=1 mpiexec -n 2 "$build/tools/tcoll-perf" \
    --device cuda -b 64M -e 1G -f 4
finish
