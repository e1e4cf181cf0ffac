# Sourced by the other scripts: installs the Debian packages tcoll needs to
# build and test, when any is missing. Set TC_NO_APT=1 to skip.
TCOLL_DEBIAN_PACKAGES="build-essential cmake pkg-config libopenmpi-dev openmpi-bin libhwloc-dev"

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
}

# mpirun refuses to run as root unless told; tests oversubscribe the cores.
tc_mpi_env() {
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1
}
