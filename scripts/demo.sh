#!/usr/bin/env bash
# The main demo: builds tcoll's Python package and trains a small CNN on
# scikit-learn's handwritten digits with PyTorch on 2 local ranks, tcoll.torch
# averaging the gradients (examples/python/train_digits.py). Installs missing
# Debian packages first. Extra arguments go to the script (e.g. --epochs 20,
# --compare ddp); NP=4 runs it on 4 ranks. It exits non-zero when the ranks'
# weights differ or the accuracy falls more than a point below one process's.
# The C example is scripts/demo_c.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/deps.sh
. "$here/scripts/deps.sh"
# What the demo needs beyond what building tcoll does (Debian's, for
# /usr/bin/python3: the extension is built for that interpreter).
TCOLL_DEMO_DEBIAN_PACKAGES="python3-dev python3-numpy python3-torch python3-sklearn python3-tqdm"
# shellcheck disable=SC2086
tc_install_deps $TCOLL_DEMO_DEBIAN_PACKAGES
tc_mpi_env
build=${BUILD:-$here/build}
cmake -S "$here" -B "$build" >/dev/null
if ! cmake --build "$build" -j"$(nproc)" --target tcoll_pyext >/dev/null; then
    echo "tcoll: could not build the Python package (target tcoll_pyext) in $build;" \
         "it needs python3-dev (see the CMake output: cmake -S $here -B $build)" >&2
    exit 2
fi
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
exec mpiexec -n "${NP:-2}" --oversubscribe /usr/bin/python3 "$here/examples/python/train_digits.py" "$@"
