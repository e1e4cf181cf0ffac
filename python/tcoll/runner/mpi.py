"""tcoll.runner.mpi: the MPI launcher's command line, for Open MPI and MPICH.

Finds the launcher (``mpiexec``), tells Open MPI's from MPICH's Hydra by
what ``--version`` prints, and turns a ``Plan`` (ranks, hosts, binding,
the variables every rank gets) into the launcher's argv plus the variables
only the launcher itself reads. The two dialects:

=====================  ===============================  ===========================
what                   Open MPI (mpiexec/mpirun)        MPICH Hydra (mpiexec)
=====================  ===============================  ===========================
ranks                  ``-np N``                        ``-n N``
hosts                  ``-H h:s,...``                   ``-hosts h:s,...``
hostfile               ``--hostfile F`` (same format)   ``-hosts h:s,...`` from F
binding                ``--bind-to none --map-by slot`` ``-bind-to none``
more ranks than slots  ``--oversubscribe``              (Hydra has no slot limit)
as root                ``--allow-run-as-root``          (nothing needed)
a rank's variable      ``-x NAME=value``                ``-genv NAME value``
forwarded variables    ``-x NAME`` each                 (Hydra passes all: -genvall)
ssh port, identity     ``--mca plm_rsh_args "-p P"``    HYDRA_LAUNCHER_EXTRA_ARGS
network interfaces     ``--mca btl_tcp_if_include I``   ``-iface I`` (one)
output to files        ``--output-filename D``          ``-outfile-pattern`` per rank
=====================  ===============================  ===========================

Nothing here runs the job: ``detect`` runs ``<launcher> --version``, and
that is all.
"""

import os
import re
import shlex
import shutil
import subprocess

OPENMPI = "openmpi"
MPICH = "mpich"

# Variables forwarded to every rank (Open MPI: -x NAME), by prefix and by
# name: tcoll's knobs, Horovod's variables (kept for the script's own use),
# Python's, the threading and math libraries', CUDA's and NCCL's, the paths.
FORWARD_PREFIXES = ("TCOLL_", "HOROVOD_", "PYTHON", "OMP_", "MKL_", "KMP_", "OPENBLAS_",
                    "NCCL_", "CUDA_", "TORCH_", "UCX_")
FORWARD_NAMES = ("PATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV", "TMPDIR")
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class LaunchError(RuntimeError):
    """No usable MPI launcher; the message says what to do."""


class Launcher:
    """An MPI launcher: its path, flavor (OPENMPI or MPICH), version as a
    tuple of ints (may be empty) and a one-line description."""

    def __init__(self, path, flavor, version=(), description=""):
        self.path = path
        self.flavor = flavor
        self.version = tuple(version)
        self.description = description or flavor

    def __repr__(self):
        return "Launcher(%r, %r, %r)" % (self.path, self.flavor, self.version)


class Plan:
    """What to launch. ``hosts``: [(host, slots)] or None (the launcher's
    default: this machine); ``hostfile``: a validated Horovod hostfile (used
    as is by Open MPI) or None; ``rank_env``: variables set for every rank,
    in order; ``forward``: names of the launcher's variables passed on;
    ``binding``: the binding arguments, None for the default."""

    def __init__(self, np, command, hosts=None, hostfile=None, oversubscribe=False, root=False,
                 rank_env=None, forward=(), binding=None, mpi_args=(), ssh_port=None,
                 ssh_identity=None, nics=(), output_filename=None, timestamp_output=False):
        self.np = np
        self.command = list(command)
        self.hosts = hosts
        self.hostfile = hostfile
        self.oversubscribe = oversubscribe
        self.root = root
        self.rank_env = dict(rank_env or {})
        self.forward = list(forward)
        self.binding = None if binding is None else list(binding)
        self.mpi_args = list(mpi_args)
        self.ssh_port = ssh_port
        self.ssh_identity = ssh_identity
        self.nics = list(nics)
        self.output_filename = output_filename
        self.timestamp_output = timestamp_output


def find(explicit=None, configured=None, environ=None):
    """The launcher to use: ``--mpiexec`` if given, else the one tcoll was
    built with (it matches the MPI libtcoll links), else ``mpiexec`` or
    ``mpirun`` on PATH."""
    path = (environ or os.environ).get("PATH")
    if explicit:
        found = shutil.which(explicit, path=path)
        if not found:
            raise LaunchError("--mpiexec %s: not an executable file" % explicit)
        return found
    if configured and os.access(configured, os.X_OK) and os.path.isfile(configured):
        return configured
    for name in ("mpiexec", "mpirun"):
        found = shutil.which(name, path=path)
        if found:
            return found
    raise LaunchError("no MPI launcher: neither mpiexec nor mpirun is on PATH (Debian: "
                      "openmpi-bin); install one, or name it with --mpiexec PATH")


def parse_version(text):
    """(flavor, version, description) from what ``mpiexec --version``
    prints, or None for an MPI tcollrun does not know."""
    m = re.search(r"\((?:OpenRTE|Open MPI)\)\s*(\d+)\.(\d+)(?:\.(\d+))?", text)
    if m or "Open MPI" in text or "OpenRTE" in text:
        v = tuple(int(x) for x in m.groups() if x is not None) if m else ()
        return OPENMPI, v, "Open MPI" + (" " + ".".join(map(str, v)) if v else "")
    if "HYDRA" in text or "MPICH" in text or "Intel(R) MPI" in text:
        m = re.search(r"Version:\s*(\d+)\.(\d+)(?:\.(\d+))?", text)
        v = tuple(int(x) for x in m.groups() if x is not None) if m else ()
        name = "Intel MPI (Hydra)" if "Intel(R) MPI" in text else "MPICH (Hydra)"
        return MPICH, v, name + (" " + ".".join(map(str, v)) if v else "")
    return None


def detect(path, environ=None):
    """Runs ``path --version`` and returns the Launcher."""
    try:
        r = subprocess.run([path, "--version"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, env=environ, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise LaunchError("cannot run %s --version: %s" % (path, e)) from None
    text = r.stdout.decode("utf-8", "replace")
    found = parse_version(text)
    if found is None:
        first = text.strip().splitlines()[0] if text.strip() else "(nothing)"
        raise LaunchError("%s is neither Open MPI's nor MPICH's launcher (its --version "
                          "says: %s); name one with --mpiexec PATH" % (path, first))
    return Launcher(path, *found)


def forward_names(environ, exclude=()):
    """The names in environ that every rank should get, sorted."""
    return sorted(n for n in environ
                  if n not in exclude and _NAME_RE.match(n)
                  and (n.startswith(FORWARD_PREFIXES) or n in FORWARD_NAMES))


def _ssh_args(plan):
    args = []
    if plan.ssh_port:
        args += ["-p", str(plan.ssh_port)]
    if plan.ssh_identity:
        args += ["-i", plan.ssh_identity]
    return args


def _openmpi(launcher, plan):
    cmd = [launcher.path]
    if plan.root:
        cmd.append("--allow-run-as-root")
    cmd += ["-np", str(plan.np)]
    if plan.hostfile:
        cmd += ["--hostfile", plan.hostfile]
    elif plan.hosts:
        cmd += ["-H", ",".join("%s:%d" % hs for hs in plan.hosts)]
    v5 = launcher.version[:1] >= (5,)
    if plan.binding is None:
        # Open MPI 5 spells oversubscription as a mapping modifier.
        mapping = "slot:OVERSUBSCRIBE" if v5 and plan.oversubscribe else "slot"
        cmd += ["--bind-to", "none", "--map-by", mapping]
        if plan.oversubscribe and not v5:
            cmd.append("--oversubscribe")
    else:
        cmd += plan.binding
        if plan.oversubscribe:
            cmd.append("--oversubscribe")
    ssh = _ssh_args(plan)
    if ssh:
        cmd += ["--mca", "plm_rsh_args", " ".join(shlex.quote(a) for a in ssh)]
    if plan.nics:
        cmd += ["--mca", "btl_tcp_if_include", ",".join(plan.nics)]
    if plan.output_filename:
        cmd += ["--output-filename", plan.output_filename]
    if plan.timestamp_output:
        cmd.append("--timestamp-output")
    for name in plan.forward:
        cmd += ["-x", name]
    for name, value in plan.rank_env.items():
        cmd += ["-x", "%s=%s" % (name, value)]
    return cmd + plan.mpi_args + plan.command, {}


def _mpich(launcher, plan):
    cmd = [launcher.path, "-n", str(plan.np)]
    if plan.hosts:
        cmd += ["-hosts", ",".join("%s:%d" % hs for hs in plan.hosts)]
    cmd += ["-bind-to", "none"] if plan.binding is None else plan.binding
    if len(plan.nics) > 1:
        raise ValueError("MPICH's Hydra takes one network interface (-iface), not %s"
                         % ",".join(plan.nics))
    if plan.nics:
        cmd += ["-iface", plan.nics[0]]
    if plan.output_filename:
        base = os.path.join(plan.output_filename, "rank.%r.")
        cmd += ["-outfile-pattern", base + "stdout", "-errfile-pattern", base + "stderr"]
    if plan.timestamp_output:
        raise ValueError("--prefix-output-with-timestamp needs Open MPI's launcher "
                         "(MPICH's Hydra cannot stamp output)")
    for name, value in plan.rank_env.items():
        cmd += ["-genv", name, value]
    launcher_env = {}
    ssh = _ssh_args(plan)
    if ssh:
        # Hydra splits this variable on spaces into ssh's arguments.
        if any(" " in a for a in ssh):
            raise ValueError("MPICH's Hydra cannot pass an ssh argument with a space in it: %r"
                             % " ".join(ssh))
        launcher_env["HYDRA_LAUNCHER_EXTRA_ARGS"] = " ".join(ssh)
    return cmd + plan.mpi_args + plan.command, launcher_env


def build_command(launcher, plan):
    """(argv, launcher_env): the launcher's command line and the variables
    set for the launcher alone. Raises ValueError for what this MPI cannot
    do."""
    if launcher.flavor == OPENMPI:
        return _openmpi(launcher, plan)
    if launcher.flavor == MPICH:
        return _mpich(launcher, plan)
    raise ValueError("unknown MPI flavor %r" % launcher.flavor)


def format_command(argv, launcher_env=None):
    """The command as one shell line: ``VAR=value ... argv`` (quoted)."""
    prefix = ["%s=%s" % (k, shlex.quote(v)) for k, v in (launcher_env or {}).items()]
    return " ".join(prefix + [shlex.quote(a) for a in argv])
