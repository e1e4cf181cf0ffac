"""tcoll.runner.hosts: where the ranks go.

Parses Horovod's two ways of naming hosts (``-H host1:2,host2:2`` and a
hostfile of ``host slots=N`` lines) into one list of ``(host, slots)``,
tells local hosts from remote ones, counts the cores Open MPI gives slots
to when no host is named, and checks, before a launch across hosts, that
ssh reaches every remote host (what ``--start-timeout`` bounds).

Nothing here starts a rank or changes the environment; the only process it
runs is ssh, in ``check_ssh``.
"""

import concurrent.futures
import os
import re
import socket
import subprocess
import time

# A host name or address as Open MPI and MPICH take them (no spaces, no
# ':' except inside an IPv6 literal, which neither launcher's -H takes).
_HOST_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")

# Set inside a resource manager's allocation: the MPI launcher then starts
# ranks through the resource manager (not ssh) and takes its slots from it.
RESOURCE_MANAGER_VARS = ("SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID")


class HostError(ValueError):
    """A host list or hostfile that cannot be used; the message says where."""


def _slots(text, where):
    if not text.isdigit() or int(text) < 1:
        raise HostError("%s: slots must be a whole number of at least 1, not %r" % (where, text))
    return int(text)


def _add(hosts, name, slots, where):
    if not _HOST_RE.match(name):
        raise HostError("%s: %r is not a host name" % (where, name))
    if any(h == name for h, _ in hosts):
        raise HostError("%s: host %s is named twice (give it once, with all its slots)"
                        % (where, name))
    hosts.append((name, slots))


def parse_hosts(text):
    """``-H``/``--hosts``: ``host[:slots],...`` (a host without ``:slots``
    has one slot, as in Horovod and Open MPI) -> [(host, slots)]."""
    hosts = []
    for item in text.split(","):
        item = item.strip()
        where = "-H %s" % text
        if not item:
            raise HostError("%s: empty host name" % where)
        name, sep, count = item.partition(":")
        _add(hosts, name, _slots(count, where) if sep else 1, where)
    return hosts


def parse_hostfile(path):
    """A hostfile in Horovod's format: one ``host slots=N`` per line; blank
    lines and ``#`` comments are skipped. Every line needs ``slots=N``
    (Open MPI would read a bare host as "as many slots as it has cores",
    Horovod as an error). -> [(host, slots)]."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise HostError("--hostfile %s: %s" % (path, e.strerror or e)) from None
    hosts = []
    for number, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        where = "--hostfile %s line %d" % (path, number)
        fields = line.split()
        if len(fields) != 2 or not fields[1].startswith("slots="):
            raise HostError("%s: %r is not 'host slots=N' (Horovod's hostfile format)"
                            % (where, line))
        _add(hosts, fields[0], _slots(fields[1][len("slots="):], where), where)
    if not hosts:
        raise HostError("--hostfile %s: no hosts in it" % path)
    return hosts


def hosts_arg(hosts):
    """[(host, slots)] -> ``host:slots,...`` (Open MPI's -H, MPICH's -hosts)."""
    return ",".join("%s:%d" % (h, s) for h, s in hosts)


def local_names():
    """The names and addresses under which this machine is itself."""
    names = {"localhost", "127.0.0.1", "::1", "localhost.localdomain"}
    host = socket.gethostname()
    names.update({host, host.split(".")[0]})
    try:
        names.add(socket.getfqdn())
    except OSError:
        pass
    return names


def remote_hosts(hosts, names=None):
    """The hosts of [(host, slots)] that are not this machine."""
    names = local_names() if names is None else names
    return [h for h, _ in hosts if h not in names and not h.startswith("127.")]


def local_cores():
    """The processor cores this process may run on, counted as Open MPI
    counts slots when no host is named (cores, not hardware threads);
    os.cpu_count() when the topology cannot be read."""
    try:
        cpus = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return os.cpu_count() or 1
    cores = set()
    for cpu in cpus:
        base = "/sys/devices/system/cpu/cpu%d/topology/" % cpu
        try:
            with open(base + "physical_package_id") as f:
                package = f.read().strip()
            with open(base + "core_id") as f:
                core = f.read().strip()
        except OSError:
            return len(cpus)
        cores.add((package, core))
    return max(1, len(cores))


def in_resource_manager(environ):
    """Whether the launch happens inside a resource manager's allocation."""
    return any(environ.get(v) for v in RESOURCE_MANAGER_VARS)


def ssh_command(host, port=None, identity=None, connect_timeout=10):
    """The command that checks one host: ``ssh ... host true``, never
    asking for a password (BatchMode), with the port and identity the MPI
    launcher will use."""
    cmd = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=%d" % max(1, connect_timeout)]
    if port:
        cmd += ["-p", str(port)]
    if identity:
        cmd += ["-i", identity]
    return cmd + [host, "true"]


def check_ssh(hosts, timeout, port=None, identity=None, environ=None):
    """Runs ``ssh host true`` for every host at once; all must succeed
    within ``timeout`` seconds. -> [(host, why)] for those that did not
    (empty: all reachable)."""
    deadline = time.monotonic() + timeout

    def one(host):
        cmd = ssh_command(host, port, identity, min(10, int(timeout) or 1))
        try:
            r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=environ,
                               timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return "no answer within %g s (--start-timeout)" % timeout
        except OSError as e:
            return "cannot run ssh: %s" % (e.strerror or e)
        if r.returncode != 0:
            text = r.stdout.decode("utf-8", "replace").strip().splitlines()
            return "ssh exited with %d%s" % (r.returncode, ": " + text[-1] if text else "")
        return None

    if not hosts:
        return []
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(32, len(hosts))) as pool:
        results = list(pool.map(one, hosts))
    return [(h, why) for h, why in zip(hosts, results) if why]
