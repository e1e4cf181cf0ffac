# shellcheck shell=bash
# need_cluster.sh - sourced by the cluster test scripts: exits 77 (CTest's
# skip) unless this machine can make an emulated cluster (root; network,
# mount and PID namespaces; ip, tc and nsenter). $1 names the tests in the
# message.
need_cluster() {
    local cmd
    if [ "$(id -u)" != 0 ] || ! unshare --net --mount --pid --fork true 2>/dev/null; then
        echo "$1: need root and network, mount and PID namespaces: skipped"
        exit 77
    fi
    for cmd in ip tc nsenter; do
        command -v "$cmd" >/dev/null || { echo "$1: no $cmd here: skipped"; exit 77; }
    done
}
