"""tcoll.runner.cli: the ``tcollrun`` command line.

``tcollrun -np 4 [-H host1:2,host2:2 | --hostfile F] [flags] python train.py
args...`` starts the job through the MPI launcher with the flags that suit a
Python training job (no binding, ranks placed slot by slot, leave to
oversubscribe when the ranks outnumber the slots, ``--allow-run-as-root``
for root under Open MPI), the launcher's variables that ranks need passed
on, and horovodrun's tuning flags as TCOLL_* knobs. The command is
everything from the first argument that is not a flag on. tcollrun then
becomes the launcher (exec), so its exit status is the job's.

Exit status of tcollrun itself: 2 for a bad command line (unknown flag,
missing command, a value out of its knob's range, a refused flag); 1 when
no usable launcher is found or a remote host does not answer ssh.
"""

import argparse
import glob
import os
import shlex
import sys

from . import check_build, hosts, knobs, mpi

DEFAULT_START_TIMEOUT = 30

# horovodrun flags tcollrun refuses, with the reason, and whether each takes
# a value.
REFUSED = [
    (("--gloo",), False, "tcoll's controller is MPI only: drop --gloo (or pass --mpi)"),
    (("--jsrun",), False, "tcollrun starts jobs through mpiexec only"),
    (("--gloo-timeout-seconds",), True, "tcoll has no Gloo controller"),
    (("--num-nccl-streams",), True, "tcoll does not use NCCL"),
    (("--thread-affinity",), True, "tcoll does not pin its engine thread (TCOLL_PROXY_CPUS "
                                   "binds the proxy thread)"),
    (("--tcp",), False, "it is an IBM Spectrum MPI flag; pass launcher flags with --mpi-args"),
    (("--config-file",), True, "put the flags on the command line"),
    (("--min-num-proc", "--min-np"), True, "tcoll has no elastic training"),
    (("--max-num-proc", "--max-np"), True, "tcoll has no elastic training"),
    (("--slots-per-host", "--slots"), True, "tcoll has no elastic training (use -H host:slots)"),
    (("--elastic-timeout",), True, "tcoll has no elastic training"),
    (("--reset-limit",), True, "tcoll has no elastic training"),
    (("--blacklist-cooldown-range",), True, "tcoll has no elastic training"),
    (("--host-discovery-script",), True, "tcoll has no elastic training (use -H or "
                                         "--hostfile)"),
]


class _Refuse(argparse.Action):
    """A horovodrun flag tcollrun does not take: an error naming it."""

    def __init__(self, option_strings, dest, reason="", **kw):
        super().__init__(option_strings, dest, **kw)
        self.reason = reason

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error("%s is not supported: %s" % (option_string, self.reason))


def build_parser():
    p = argparse.ArgumentParser(
        prog="tcollrun", allow_abbrev=False,
        usage="tcollrun -np N [-H HOSTS | --hostfile FILE] [flags] command [args...]",
        description="Starts a tcoll job (tcoll, tcoll.torch) through the MPI launcher, "
                    "as horovodrun starts a Horovod job. See docs/tcollrun.md.",
        epilog="Refused, with the reason: %s. Exit status: the job's; 2 for a bad command "
               "line; 1 without a usable launcher or when ssh does not reach a host."
               % ", ".join(f for flags, _, _ in REFUSED for f in flags))
    p.add_argument("-v", "--version", action="store_true", help="print tcoll's version")
    p.add_argument("-np", "--num-proc", "-n", dest="num_proc", metavar="N",
                   type=knobs.int_in(1, 1 << 24, "ranks"),
                   help="number of ranks (default with -H or --hostfile: all their slots)")
    p.add_argument("-cb", "--check-build", action="store_true",
                   help="print what tcoll was built with, and exit")
    p.add_argument("--verbose", action="store_true",
                   help="print the launcher's command line before running it, and notes")
    p.add_argument("--dry-run", action="store_true",
                   help="print the launcher's command line and exit without running it")
    p.add_argument("--mpiexec", metavar="PATH",
                   help="the MPI launcher (default: the one tcoll was built with, else "
                        "mpiexec or mpirun on PATH)")
    p.add_argument("--disable-cache", action="store_true",
                   help="accepted, no effect (tcollrun caches no checks)")
    p.add_argument("--start-timeout", type=knobs.int_in(1, 86400, "seconds"), metavar="S",
                   help="seconds the ssh check of remote hosts may take (default %d)"
                        % DEFAULT_START_TIMEOUT)
    p.add_argument("--output-filename", metavar="DIR",
                   help="write each rank's output under DIR (the launcher's option)")
    p.add_argument("--prefix-output-with-timestamp", action="store_true",
                   help="stamp each output line with the time (Open MPI only)")
    p.add_argument("--network-interfaces", "--network-interface", dest="nics", action="append",
                   metavar="IF[,IF...]", help="network interfaces MPI may use")

    g = p.add_argument_group("hosts")
    h = g.add_mutually_exclusive_group()
    h.add_argument("-H", "--hosts", metavar="HOST:SLOTS,...",
                   help="hosts and their slots, e.g. host1:2,host2:2 (a host alone: 1 slot)")
    h.add_argument("-hostfile", "--hostfile", metavar="FILE",
                   help="a file of 'host slots=N' lines")
    g.add_argument("-p", "--ssh-port", type=knobs.int_in(1, 65535, "port"), metavar="PORT",
                   help="ssh port of the hosts")
    g.add_argument("-i", "--ssh-identity-file", metavar="FILE",
                   help="ssh private key for the hosts")

    g = p.add_argument_group("controller and MPI")
    g.add_argument("--mpi", action="store_true", help="the MPI controller (the only one)")
    g.add_argument("--mpi-args", metavar="ARGS", default="",
                   help="more arguments for the launcher, one string: --mpi-args=\"--mca X Y\"")
    g.add_argument("--binding-args", metavar="ARGS",
                   help="binding arguments in place of the default (Open MPI: "
                        "'--bind-to none --map-by slot'; MPICH: '-bind-to none')")

    knobs.add_arguments(p)

    g = p.add_argument_group("refused (horovodrun flags tcoll cannot honour)")
    for flags, takes_value, reason in REFUSED:
        g.add_argument(*flags, action=_Refuse, reason=reason, nargs=None if takes_value else 0,
                       dest="refused_" + flags[0].lstrip("-").replace("-", "_"),
                       help=argparse.SUPPRESS)

    p.add_argument("command", nargs=argparse.REMAINDER, help="the program to run and its "
                   "arguments")
    return p


def default_build():
    """What ``python3 -m tcoll.runner`` knows of its build: the directory
    that holds the tcoll package (this package's grandparent)."""
    here = os.path.dirname(os.path.abspath(__file__))
    tc = sys.modules.get("tcoll")
    return {"pkgdir": os.path.dirname(os.path.dirname(here)), "mpiexec": "",
            "version": getattr(tc, "__version__", "")}


def oversubscribe(np, host_list, environ, cores):
    """Whether the ranks outnumber the slots: those of the hosts named, else
    (no hosts, outside a resource manager) this machine's cores, which Open
    MPI counts as its slots."""
    if host_list:
        return np > sum(s for _, s in host_list)
    if hosts.in_resource_manager(environ):
        return False
    return np > cores


def rank_pythonpath(pkgdir, environ, search_path):
    """The PYTHONPATH every rank gets so that it imports the tcoll package
    tcollrun belongs to: PYTHONPATH with pkgdir appended, or None when
    Python finds the package without it (search_path: this interpreter's
    sys.path, less the script's own directory) or pkgdir holds none."""
    if not pkgdir or not glob.glob(os.path.join(glob.escape(pkgdir), "tcoll", "_tcoll*.so")):
        return None  # no built package there (the source tree's python/)
    real = os.path.realpath(pkgdir)
    if any(p and os.path.realpath(p) == real for p in search_path):
        return None
    current = environ.get("PYTHONPATH", "")
    if any(p and os.path.realpath(p) == real for p in current.split(os.pathsep)):
        return None
    return current + os.pathsep + pkgdir if current else pkgdir


def _say(text, err):
    print("tcollrun: " + text, file=err, flush=True)


def _launcher(args, build, environ):
    path = mpi.find(args.mpiexec, build.get("mpiexec"), environ)
    return mpi.detect(path, environ)


def main(argv=None, build=None, environ=None, execve=os.execve, out=None, err=None):
    """Runs tcollrun; returns its exit status when it does not become the
    launcher. argv: the arguments (default sys.argv[1:]); build: {pkgdir,
    mpiexec, version} from the installed script; execve: os.execve (a test
    passes another)."""
    build = build or default_build()
    environ = dict(os.environ if environ is None else environ)
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.version:
        print("tcollrun (tcoll %s)" % (build.get("version") or "unknown version"), file=out)
        return 0
    if args.check_build:
        try:
            launcher, why = _launcher(args, build, environ), ""
        except mpi.LaunchError as e:
            launcher, why = None, str(e)
        return check_build.run(build.get("pkgdir"), launcher, why, args.verbose, out, err)

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command to run (e.g. tcollrun -np 2 python train.py)")
    try:
        rank_env = knobs.knob_env(args)
        if args.hosts is not None:
            host_list = hosts.parse_hosts(args.hosts)
        elif args.hostfile is not None:
            host_list = hosts.parse_hostfile(args.hostfile)
        else:
            host_list = None
    except ValueError as e:
        parser.error(str(e))
    np = args.num_proc
    if np is None:
        if not host_list:
            parser.error("-np is required without -H or --hostfile")
        np = sum(s for _, s in host_list)
    nics = [n for item in args.nics or [] for n in item.split(",") if n]

    loud, quiet = knobs.notes(args)
    for text in loud + (quiet if args.verbose else []):
        _say(text, err)
    try:
        launcher = _launcher(args, build, environ)
    except mpi.LaunchError as e:
        _say(str(e), err)
        return 1

    over = oversubscribe(np, host_list, environ, hosts.local_cores())
    if over and host_list:
        _say("%d ranks on %d slots: oversubscribing" % (np, sum(s for _, s in host_list)), err)
    pythonpath = rank_pythonpath(build.get("pkgdir"), environ, sys.path[1:])
    if pythonpath is not None:
        rank_env["PYTHONPATH"] = pythonpath
    try:
        plan = mpi.Plan(
            np, command, hosts=host_list,
            hostfile=args.hostfile if launcher.flavor == mpi.OPENMPI else None,
            oversubscribe=over, root=os.geteuid() == 0, rank_env=rank_env,
            forward=mpi.forward_names(environ, exclude=rank_env)
            if launcher.flavor == mpi.OPENMPI else (),
            binding=None if args.binding_args is None else _split(args.binding_args),
            mpi_args=_split(args.mpi_args), ssh_port=args.ssh_port,
            ssh_identity=args.ssh_identity_file, nics=nics,
            output_filename=args.output_filename,
            timestamp_output=args.prefix_output_with_timestamp)
        argv_, launcher_env = mpi.build_command(launcher, plan)
    except ValueError as e:
        parser.error(str(e))

    if args.verbose or args.dry_run:
        print(mpi.format_command(argv_, launcher_env), file=out, flush=True)
    if args.dry_run:
        return 0
    remote = hosts.remote_hosts(host_list or [])
    if remote and not hosts.in_resource_manager(environ):
        timeout = args.start_timeout or DEFAULT_START_TIMEOUT
        failed = hosts.check_ssh(remote, timeout, args.ssh_port, args.ssh_identity_file, environ)
        for host, why in failed:
            _say("ssh to %s failed: %s" % (host, why), err)
        if failed:
            _say("the launcher starts ranks on other hosts through ssh without a password: "
                 "set up keys (and -p/-i) for every host, or run inside a resource "
                 "manager's allocation", err)
            return 1
    if args.output_filename and launcher.flavor == mpi.MPICH:
        os.makedirs(args.output_filename, exist_ok=True)
    environ.update(launcher_env)
    for stream in (out, err, sys.stdout, sys.stderr):
        stream.flush()
    try:
        return execve(argv_[0], argv_, environ) or 0
    except OSError as e:
        _say("cannot run %s: %s" % (argv_[0], e.strerror or e), err)
        return 1


def _split(text):
    try:
        return shlex.split(text or "")
    except ValueError as e:
        raise ValueError("cannot split %r: %s" % (text, e)) from None
