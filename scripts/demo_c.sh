#!/usr/bin/env bash
# Builds tcoll and runs the C data-parallel training example
# (examples/train_mlp.c) on 2 local ranks. Installs missing Debian packages
# first. Extra arguments go to the example (e.g. --epochs 20); NP=4 runs it on
# 4 ranks. The main demo, PyTorch training through tcoll.torch, is
# scripts/demo.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/deps.sh
. "$here/scripts/deps.sh"
tc_install_deps
tc_mpi_env
build=${BUILD:-$here/build}
cmake -S "$here" -B "$build" >/dev/null
cmake --build "$build" -j"$(nproc)" --target tcoll-train-mlp >/dev/null
exec mpiexec -n "${NP:-2}" --oversubscribe "$build/examples/tcoll-train-mlp" "$@"
