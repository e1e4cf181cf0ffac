#!/usr/bin/env bash
# emu.sh - an emulated cluster on one Linux machine, for running MPI jobs
# across "hosts" that share nothing tcoll uses inside a node.
#
# Each host is a set of namespaces held open by one process (its PID 1):
#   network  its own stack: lo and eth0, a veth to the cluster's bridge,
#            address 10.77.0.<i>/24 (TCOLL_EMU_NET changes the prefix)
#   mount    its own /dev/shm (a tmpfs) and /etc/hosts (the cluster's
#            names); the rest of the file system, /tmp included, is the
#            machine's, as a cluster's shared file system
#   PID      its processes see only each other (pids, /proc, pidfds)
#   UTS      its hostname, h<i>
# The bridge lives in a namespace of its own (the switch), so no traffic
# reaches the machine's own network. mpirun runs on a head of its own
# (network, mount and UTS namespaces, address .254, no ranks, unshaped link)
# that still sees every process: its launch agent enters each host's
# namespaces, so every rank, h1's included, is started the same way. Links are shaped with tc (tbf, both
# directions) and lose packets through an nftables random-drop rule.
# Killing a host's PID 1 ends every process of that host and frees its
# namespaces, interfaces, mounts and rules: nothing else is left to undo.
#
# Usage (as root):
#   emu.sh up [-n N] [--rate R]        make hosts h1..hN (default 2; links
#                                      of R, tc units, default 10gbit; 0:
#                                      unshaped)
#   emu.sh run -np N --per-host K [--rate R] [--loss HOST:PCT]
#              [--timeout S] [--mpirun-arg ARG]... PROGRAM [ARGS...]
#                                      mpirun on the head, K ranks per host on
#                                      h1, h2, ... (Open MPI over TCP between
#                                      hosts; the launch agent enters each
#                                      host's namespaces); exit status of
#                                      the job; S: kill it after S seconds
#   emu.sh -n N [run's options] PROGRAM [ARGS...]
#                                      the same as run: emu.sh can stand
#                                      where a script expects mpiexec
#   emu.sh shape [--rate R] [--loss HOST:PCT]...
#                                      change the links (loss 0: none)
#   emu.sh link HOST down|up           cut or restore a host's link
#   emu.sh kill HOST                   kill every process of a host (not
#                                      its namespaces)
#   emu.sh exec HOST CMD [ARGS...]     run a command inside a host
#   emu.sh status                      the hosts, their links and processes
#   emu.sh down                        remove everything (also after a
#                                      failed run or a failed up)
#   emu.sh agent HOST CMD...           (Open MPI's launch agent, internal)
# State lives in TCOLL_EMU_STATE (default /run/tcoll-emu); TCOLL_EMU_MPIRUN
# is Open MPI's launcher (default mpirun).
set -euo pipefail

STATE=${TCOLL_EMU_STATE:-/run/tcoll-emu}
NET=${TCOLL_EMU_NET:-10.77.0}
SELF=$(readlink -f "${BASH_SOURCE[0]}")
# PID 1 of a host: waits for whatever ends there, forever (perl's $0 names it)
# shellcheck disable=SC2016
REAPER='$0 = "tcoll-emu-init"; while (1) { sleep 1 if waitpid(-1, 0) < 0 }'

die() {
    echo "emu.sh: $*" >&2
    exit 1
}

need_root() {
    [ "$(id -u)" = 0 ] || die "must run as root (namespaces, interfaces, qdiscs)"
}

# PID 1 of host NAME (h1, h2, ...; sw: the switch), as the machine sees it.
pid_of() {
    local f="$STATE/$1.pid" p
    [ -f "$f" ] || die "no host '$1' (emu.sh status lists them)"
    p=$(cat "$f")
    [ -d "/proc/$p" ] || die "host '$1' is gone (its PID 1, $p, exited): emu.sh down, then up"
    echo "$p"
}

hosts() {
    [ -f "$STATE/hosts.list" ] || die "no cluster is up (emu.sh up)"
    cat "$STATE/hosts.list"
}

# Runs ARGS inside host $1's namespaces (network, mount, UTS, PID).
in_host() {
    local p
    p=$(pid_of "$1")
    shift
    nsenter -t "$p" -n -m -u -p -- "$@"
}

in_switch() {
    local p
    p=$(pid_of sw)
    nsenter -t "$p" -n -- "$@"
}

# Starts a holder: unshare makes the namespaces, its child (PID 1 there)
# runs SCRIPT and then, until killed, reaps the processes orphaned inside
# (Open MPI's daemons end as its children). Prints the child's pid.
start_holder() {
    local flags script=$2 up child i
    read -r -a flags <<<"$1"
    # setsid: the holder outlives this shell and its terminal
    setsid unshare "${flags[@]}" --fork sh -c "$script && exec perl -e '$REAPER'" \
        </dev/null >/dev/null 2>"$STATE/holder.err" &
    up=$!
    for i in $(seq 1 100); do
        child=$(tr -d ' ' <"/proc/$up/task/$up/children" 2>/dev/null || true)
        if [ -n "$child" ] && [ "$(readlink "/proc/$child/exe" 2>/dev/null)" != "" ] &&
            grep -qs tcoll-emu-init "/proc/$child/cmdline"; then
            echo "$child"
            return 0
        fi
        [ -d "/proc/$up" ] || break
        sleep 0.05
    done
    die "a host's namespaces could not be made: $(cat "$STATE/holder.err" 2>/dev/null)"
}

# tbf on both ends of host $1's link at rate $2 (0 or none: unshaped).
shape_rate() {
    local h=$1 rate=$2
    in_host "$h" tc qdisc del dev eth0 root 2>/dev/null || true
    in_switch tc qdisc del dev "tce-$h" root 2>/dev/null || true
    if [ "$rate" != 0 ] && [ "$rate" != none ]; then
        # burst: enough for a 64 KiB TSO segment at any rate; latency: the
        # most a packet may queue before it is dropped
        in_host "$h" tc qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 100ms
        in_switch tc qdisc add dev "tce-$h" root tbf rate "$rate" burst 256kb latency 100ms
    fi
    echo "$rate" >"$STATE/$h.rate"
}

# Drops PCT% of the packets host $1's link carries, each way (0: none).
shape_loss() {
    local h=$1 pct=$2
    in_host "$h" nft delete table inet tcoll_emu 2>/dev/null || true
    if [ "$pct" != 0 ]; then
        in_host "$h" nft -f - <<EOF
table inet tcoll_emu {
    chain in { type filter hook input priority 0; iifname "eth0" numgen random mod 100 < $pct drop; }
    chain out { type filter hook output priority 0; oifname "eth0" numgen random mod 100 < $pct drop; }
}
EOF
    fi
    echo "$pct" >"$STATE/$h.loss"
}

# A veth from the switch's bridge (port tce-NAME) to eth0 of the
# namespaces held by pid $2, address $3.
connect() {
    local h=$1 p=$2 addr=$3 a b
    a="tc$$${h}s"
    b="tc$$${h}e"
    # made in the machine's namespace under names of this process (another
    # cluster may be coming up beside it), then renamed where they live
    ip link add "$a" type veth peer name "$b"
    ip link set "$a" netns "$(pid_of sw)"
    ip link set "$b" netns "$p"
    in_switch ip link set "$a" name "tce-$h"
    in_switch ip link set "tce-$h" master br0
    in_switch ip link set "tce-$h" up
    nsenter -t "$p" -n ip link set "$b" name eth0
    nsenter -t "$p" -n ip addr add "$addr/24" dev eth0
    nsenter -t "$p" -n ip link set eth0 up
}

cmd_up() {
    local n=2 rate=10gbit i h sw p c
    while [ $# -gt 0 ]; do
        case $1 in
        -n) n=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        *) die "up: unknown option '$1'" ;;
        esac
    done
    need_root
    if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 200 ]; then
        die "up: -n must be 1..200"
    fi
    [ ! -f "$STATE/hosts.list" ] || die "a cluster is up already ($STATE): emu.sh down first"
    for c in nsenter unshare ip tc perl; do
        command -v "$c" >/dev/null || die "needs nsenter, unshare (util-linux), ip, tc (iproute2) and perl; no $c here"
    done
    mkdir -p "$STATE"
    trap 'echo "emu.sh: up failed; removing what it made" >&2; cmd_down >/dev/null 2>&1 || true' ERR
    {
        echo "127.0.0.1 localhost"
        for i in $(seq 1 "$n"); do echo "$NET.$i h$i"; done
        echo "$NET.254 head"
    } >"$STATE/etc_hosts"
    sw=$(start_holder "--net" "ip link set lo up && ip link add br0 type bridge && ip link set br0 up")
    echo "$sw" >"$STATE/sw.pid"
    p=$(start_holder "--net --mount --uts --propagation private" \
        "hostname head && mount --bind $STATE/etc_hosts /etc/hosts && ip link set lo up")
    echo "$p" >"$STATE/head.pid"
    connect head "$p" "$NET.254"
    for i in $(seq 1 "$n"); do
        h=h$i
        p=$(start_holder "--net --mount --uts --pid --mount-proc --propagation private" \
            "hostname $h && mount -t tmpfs -o mode=1777 tmpfs /dev/shm &&
             mount --bind $STATE/etc_hosts /etc/hosts && ip link set lo up")
        echo "$p" >"$STATE/$h.pid"
        connect "$h" "$p" "$NET.$i"
        shape_rate "$h" "$rate"
        echo 0 >"$STATE/$h.loss"
        echo "$h" >>"$STATE/hosts.list"
    done
    trap - ERR
    echo "emu.sh: $n hosts up (h1..h$n at $NET.1..$NET.$n, links $rate)"
}

cmd_down() {
    local f p
    [ -d "$STATE" ] || return 0
    for f in "$STATE"/*.pid; do
        [ -f "$f" ] || continue
        p=$(cat "$f")
        # PID 1 of a host: its end ends every process in the host
        kill -9 "$p" 2>/dev/null || true
    done
    for f in "$STATE"/*.pid; do
        [ -f "$f" ] || continue
        p=$(cat "$f")
        for _ in $(seq 1 100); do
            [ -d "/proc/$p" ] || break
            sleep 0.05
        done
    done
    rm -rf "$STATE"
}

# --loss HOST:PCT / --rate R, applied to every host (rate) or one (loss).
apply_shaping() {
    local rate=$1 h
    shift
    if [ -n "$rate" ]; then
        for h in $(hosts); do shape_rate "$h" "$rate"; done
    fi
    for spec in "$@"; do
        [[ "$spec" =~ ^(h[0-9]+):([0-9]+)$ ]] || die "--loss wants HOST:PCT (h2:5), not '$spec'"
        pid_of "${BASH_REMATCH[1]}" >/dev/null
        shape_loss "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
    done
}

cmd_shape() {
    local rate="" losses=()
    while [ $# -gt 0 ]; do
        case $1 in
        --rate) rate=$2; shift 2 ;;
        --loss) losses+=("$2"); shift 2 ;;
        *) die "shape: unknown option '$1'" ;;
        esac
    done
    need_root
    apply_shaping "$rate" "${losses[@]+"${losses[@]}"}"
}

cmd_run() {
    local np="" per=1 rate="" losses=() timeout=0 margs=() list="" i=0 h nhosts rc
    while [ $# -gt 0 ]; do
        case $1 in
        -np | -n) np=$2; shift 2 ;;
        --per-host) per=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        --loss) losses+=("$2"); shift 2 ;;
        --timeout) timeout=$2; shift 2 ;;
        --mpirun-arg) margs+=("$2"); shift 2 ;;
        --) shift; break ;;
        -*) die "run: unknown option '$1'" ;;
        *) break ;;
        esac
    done
    need_root
    [ $# -ge 1 ] || die "run: no program"
    if ! [[ "$per" =~ ^[0-9]+$ ]] || [ "$per" -lt 1 ]; then
        die "run: --per-host must be at least 1"
    fi
    nhosts=$(hosts | wc -l)
    np=${np:-$((per * nhosts))}
    if ! [[ "$np" =~ ^[0-9]+$ ]] || [ "$np" -lt 1 ]; then
        die "run: -np must be a positive number"
    fi
    [ $(((np + per - 1) / per)) -le "$nhosts" ] ||
        die "run: $np ranks at $per per host need $(((np + per - 1) / per)) hosts; $nhosts are up"
    apply_shaping "$rate" "${losses[@]+"${losses[@]}"}"
    for h in $(hosts); do
        [ $((i * per)) -lt "$np" ] || break
        list="${list:+$list,}$h:$per"
        i=$((i + 1))
    done
    local prog
    prog=$(command -v "$1" || true)
    [ -n "$prog" ] || die "run: '$1' not found"
    prog=$(readlink -f "$prog")
    in_host h1 test -x "$prog" || die "run: $prog cannot be run inside the hosts"
    in_host h1 test -d "$PWD" || die "run: the working directory $PWD is not there inside the hosts"
    shift
    # Environment: the agent starts each host's daemon with this process's
    # environment (no ssh in between), and the daemons pass it to the ranks.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # shellcheck disable=SC2054 # the commas are in Open MPI's arguments
    local cmd=("${TCOLL_EMU_MPIRUN:-mpirun}" --oversubscribe --bind-to none -np "$np" --host "$list" --wdir "$PWD"
        --mca plm_rsh_agent "$SELF agent" --mca plm_rsh_no_tree_spawn 1
        --mca btl self,vader,tcp --mca btl_tcp_if_include eth0
        --mca oob_tcp_if_include eth0 --mca orte_keep_fqdn_hostnames 1)
    if [ "$np" -gt "$(nproc)" ]; then
        # the hosts share this machine's CPUs: more ranks than CPUs, and
        # Open MPI's ranks must yield when idle (each host thinks it has a
        # core per rank, so Open MPI would not see it by itself)
        cmd+=(--mca mpi_yield_when_idle 1)
    fi
    if [ "$timeout" != 0 ]; then
        cmd+=(--timeout "$timeout")
    fi
    cmd+=("${margs[@]+"${margs[@]}"}" "$prog" "$@")
    set +e
    if [ "$timeout" != 0 ]; then
        # mpirun's own --timeout first; this one if mpirun itself is stuck
        timeout -s KILL $((timeout + 30)) nsenter -t "$(pid_of head)" -n -m -u -- "${cmd[@]}"
    else
        nsenter -t "$(pid_of head)" -n -m -u -- "${cmd[@]}"
    fi
    rc=$?
    set -e
    return $rc
}

cmd_agent() {
    # Open MPI calls: AGENT HOST COMMAND... (as it would call ssh)
    local h=$1
    shift
    exec nsenter -t "$(pid_of "$h")" -n -m -u -p -- /bin/sh -c "$*"
}

cmd_link() {
    local h=$1 how=$2
    need_root
    case $how in
    down | up) in_switch ip link set "tce-$h" "$how" ;;
    *) die "link: down or up, not '$how'" ;;
    esac
}

cmd_kill() {
    local h=$1
    need_root
    # kill -1 from inside the host: every process there but PID 1 and itself
    in_host "$h" sh -c 'kill -9 -1' || true
}

# Processes in host $1's PID namespace, its PID 1 not counted.
count_procs() {
    local ns n=0 f
    ns=$(readlink "/proc/$(pid_of "$1")/ns/pid")
    for f in /proc/[0-9]*/ns/pid; do
        [ "$(readlink "$f" 2>/dev/null)" = "$ns" ] && n=$((n + 1))
    done
    echo $((n - 1))
}

cmd_status() {
    local h
    [ -f "$STATE/hosts.list" ] || {
        echo "no cluster is up"
        return 0
    }
    for h in $(hosts); do
        printf '%s: %s, link %s (rate %s, loss %s%%), %d processes\n' "$h" \
            "$(in_host "$h" ip -4 -o addr show dev eth0 | awk '{print $4}')" \
            "$(in_switch ip -o link show dev "tce-$h" | grep -q 'state UP' && echo up || echo down)" \
            "$(cat "$STATE/$h.rate")" "$(cat "$STATE/$h.loss")" "$(count_procs "$h")"
    done
}

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$SELF"; }
[ $# -ge 1 ] || { usage; exit 2; }
sub=$1
shift
case $sub in
up) cmd_up "$@" ;;
down) need_root; cmd_down ;;
run) cmd_run "$@" ;;
-n | -np) cmd_run "$sub" "$@" ;; # as a launcher in mpiexec's place
shape) cmd_shape "$@" ;;
link) [ $# -eq 2 ] || die "link HOST down|up"; cmd_link "$@" ;;
kill) [ $# -eq 1 ] || die "kill HOST"; cmd_kill "$1" ;;
exec) [ $# -ge 2 ] || die "exec HOST CMD..."; need_root; h=$1; shift; in_host "$h" "$@" ;;
status) cmd_status ;;
agent) [ $# -ge 2 ] || die "agent HOST CMD..."; cmd_agent "$@" ;;
-h | --help | help) usage ;;
*) die "unknown command '$sub' (emu.sh --help)" ;;
esac
