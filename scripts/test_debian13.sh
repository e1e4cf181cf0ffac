#!/usr/bin/env bash
# tcoll on Debian 13 (trixie): torch 2.6 (python3-torch), Python 3.13, gcc 14,
# Open MPI 5 and hwloc 2.12, where Debian 12 has torch 1.13, Python 3.11,
# gcc 12 and Open MPI 4. Makes a Debian 13 root with mmdebstrap (Debian
# 12's package; about 2 GiB, downloaded from deb.debian.org once and kept in
# DEB13_ROOT, default build-deb13/root), mounts the source tree into it
# read-only, builds tcoll there with -Werror and runs the tests of the labels
# in DEB13_LABELS (a CTest -L regex, default "python": the NumPy, PyTorch
# and torch.distributed tests, the demo's short run, the benchmarks' smoke
# tests and tcollrun's), so the frontends are tested on torch 2.x too.
# DEB13_LABELS='unit|mpi|python' runs the rest of the suite there as well.
# Needs root (mmdebstrap, chroot, mounts); installs mmdebstrap if missing
# (TC_NO_APT=1 skips that). Usage: scripts/test_debian13.sh [extra ctest args]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/deps.sh
. "$here/scripts/deps.sh"
if [ "$(id -u)" != 0 ]; then
    echo "test_debian13: needs root (it makes a Debian 13 root and chroots into it)" >&2
    exit 1
fi
tc_install_deps mmdebstrap
root=${DEB13_ROOT:-$here/build-deb13/root}
labels=${DEB13_LABELS:-python}
mirror=${DEB13_MIRROR:-http://deb.debian.org/debian}
packages="build-essential cmake pkg-config libopenmpi-dev openmpi-bin libhwloc-dev
python3 python3-dev python3-numpy python3-pytest python3-mpi4py python3-torch
python3-torchvision python3-sklearn python3-tqdm"
stamp="$root/.tcoll-packages"

# What is mounted under the root, deepest first; release_root unmounts it
# (mounts an earlier run left when it was killed), and stops the script if
# anything stays: the root is never removed through a mount of the source
# tree or of /dev.
mounted_under() { findmnt -rn -o TARGET | awk -v r="$root/" 'index($0, r) == 1' | sort -r; }
release_root() {
    local m
    for m in $(mounted_under); do umount -R -l "$m" 2>/dev/null || true; done
    if [ -n "$(mounted_under)" ]; then
        echo "test_debian13: still mounted under $root: $(mounted_under | tr '\n' ' ')" >&2
        exit 1
    fi
}
release_root

# Exit status 77: the root could not be made (twice), e.g. the archive could
# not be reached; nothing was tested.
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$packages" ]; then
    mkdir -p "$(dirname "$root")"
    for try in 1 2; do
        release_root
        rm -rf "$root"
        echo "test_debian13: making a Debian 13 root in $root (try $try)"
        if mmdebstrap --variant=apt --mode=root --include="$(echo "$packages" | tr -s ' \n' ',,')" \
            trixie "$root" "$mirror" >"$root.log" 2>&1; then
            echo "$packages" >"$stamp"
            break
        fi
        tail -20 "$root.log" >&2
        echo "test_debian13: mmdebstrap failed (whole log: $root.log)" >&2
    done
    [ -f "$stamp" ] || exit 77
fi

mounts=()
cleanup() {
    local i
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -R -l "${mounts[i]}" || true; done
}
trap cleanup EXIT
mount_in() { # mount_in DIR-INSIDE mount-args...: DIR-INSIDE under the root
    local dir="$root$1"
    shift
    mkdir -p "$dir"
    mount "$@" "$dir"
    mounts+=("$dir")
}
mount_in /proc -t proc proc
mount_in /sys --rbind /sys
mount_in /dev --rbind /dev
mount_in /src --bind "$here"
mount -o remount,bind,ro "$root/src"

# A clean environment: only what the tests need, nothing of the host's.
jobs=$(nproc)
# shellcheck disable=SC2016 # the script inside runs in the root's shell
chroot "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_rmaps_base_oversubscribe=1 bash -euo pipefail -c '
echo "test_debian13: $(. /etc/os-release && echo "$PRETTY_NAME"), $(gcc --version | sed -n 1p),"\
" $(mpiexec --version | sed -n 1p), Python $(python3 -c "import platform; print(platform.python_version())"),"\
" torch $(python3 -c "import torch; print(torch.__version__)")"
cmake -S /src -B /build -DTCOLL_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/build.log
cmake --build /build -j"$1" >>/build.log 2>&1 || { tail -40 /build.log; exit 1; }
cd /build
shift
ctest -L "$@" --output-on-failure
' test_debian13 "$jobs" "$labels" "$@"
