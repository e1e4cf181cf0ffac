#!/usr/bin/env bash
# The MPI and hwloc that tcoll builds against, for a GPU machine that has
# CUDA but neither (a bare image with nvcc and PyTorch, say).
#
#   scripts/gpu_debs.sh fetch [DIR]    on a Debian 12 machine with apt: download
#                                      Debian's Open MPI, hwloc, pkg-config and
#                                      what they load into DIR (default .gpu-debs)
#   scripts/gpu_debs.sh install [DIR]  on the GPU machine, as root: unpack them
#                                      into /, keeping every file already there
#
# install adds files only: a library the machine already has (libc, a newer
# libibverbs, ...) is left as it is, and so are directories that are links
# (a merged /usr). scripts/test_gpu.sh calls install itself when it finds no
# mpicc and DIR holds packages.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
verb=${1:-}
dir=${2:-$here/.gpu-debs}

# Open MPI with what its libraries and launcher load (fabric and PMIx
# plugins), hwloc, and pkg-config, which CMake's FindPkgConfig runs.
packages="openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev
libhwloc15 libhwloc-dev libhwloc-plugins libpmix2 libpmix-dev
libevent-2.1-7 libevent-core-2.1-7 libevent-pthreads-2.1-7 libevent-extra-2.1-7
libevent-openssl-2.1-7 libevent-dev libfabric1 libucx0 libpsm2-2
libpsm-infinipath1 libibverbs1 ibverbs-providers librdmacm1 libnl-3-200
libnl-route-3-200 libmunge2 libnuma1 libpciaccess0 libxnvctrl0 libltdl7
libjansson4 pkgconf pkgconf-bin libpkgconf3 pkg-config"

case $verb in
fetch)
    mkdir -p "$dir"
    # shellcheck disable=SC2086
    (cd "$dir" && apt-get download $packages)
    du -sh "$dir"
    ;;
install)
    shopt -s nullglob
    debs=("$dir"/*.deb)
    if [ ${#debs[@]} -eq 0 ]; then
        echo "gpu_debs.sh: no packages in $dir (run 'scripts/gpu_debs.sh fetch' on Debian 12)" >&2
        exit 1
    fi
    stage=$(mktemp -d)
    for d in "${debs[@]}"; do dpkg-deb -x "$d" "$stage" 2>/dev/null || {
        # no dpkg-deb: a .deb is an ar archive holding data.tar.*
        t=$(mktemp -d); (cd "$t" && ar x "$d" && tar -xf data.tar.* -C "$stage"); rm -rf "$t"
    }; done
    tar -C "$stage" -cf - . | tar -C "${ROOT:-/}" --skip-old-files --keep-directory-symlink -xf -
    rm -rf "$stage"
    ldconfig 2>/dev/null || true
    # The unversioned names are Debian's alternatives, made by maintainer
    # scripts that unpacking does not run.
    for b in mpicc mpicxx mpiexec mpirun; do
        [ -e "/usr/bin/$b" ] || ln -s "$b.openmpi" "/usr/bin/$b"
    done
    inc=/usr/include/x86_64-linux-gnu/mpi
    [ -e "$inc" ] || { mkdir -p "$(dirname "$inc")"; ln -s /usr/lib/x86_64-linux-gnu/openmpi/include "$inc"; }
    echo "gpu_debs.sh: unpacked ${#debs[@]} packages into /: $(command -v mpicc || echo 'no mpicc?')"
    ;;
*)
    echo "usage: scripts/gpu_debs.sh fetch|install [DIR]" >&2
    exit 2
    ;;
esac
