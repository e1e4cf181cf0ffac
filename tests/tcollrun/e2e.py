"""tcollrun's end-to-end tests: real jobs on this machine through the real
MPI launcher (tests/tcollrun/CMakeLists.txt registers one CTest per case).

    e2e.py CASE --tcollrun PATH --python PY [--flavor openmpi|mpich]
           [--build DIR --cmake PATH] [--mpich PATH]

Cases:
  hosts         -np 2 -H localhost:2 with knob flags: job.py checks rank,
                size, an allreduce and the knobs' variables on every rank;
                tcoll's own info log shows it read the knob
  hostfile      --hostfile of 'localhost slots=2' (ranks from its slots)
  verbose       --verbose prints the launcher's command, which is then run
                again as printed and must give the same job
  exit_status   the job's exit status (3) is tcollrun's
  check_build   --check-build against what the package says itself
  oversubscribe more ranks than cores, and than -H slots
  mpich         MPICH's launcher (mpiexec.mpich), ranks without tcoll
  installed     cmake --install to a scratch prefix, then that tcollrun
                with no PYTHONPATH: --check-build and a 2-rank job

Open MPI's leave to run as root and to oversubscribe is taken out of the
environment: tcollrun must give both itself. A case prints what it ran
and what came out, and exits 1 on the first failed check.
"""

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "job.py")
MARK = ("HOROVOD_E2E_MARK", "forwarded")  # a variable tcollrun passes on by name


def fail(text):
    print("FAILED: " + text, flush=True)
    sys.exit(1)


def check(cond, text):
    if not cond:
        fail(text)


def environ(**extra):
    env = dict(os.environ)
    for name in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
                 "OMPI_MCA_rmaps_base_oversubscribe"):
        env.pop(name, None)
    env[MARK[0]] = MARK[1]
    env.update(extra)
    return env


def run(argv, env=None, timeout=240):
    print("$ " + shlex.join(argv), flush=True)
    r = subprocess.run(argv, env=env or environ(), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True, timeout=timeout)
    print(r.stdout, end="", flush=True)
    print("(exit status %d)" % r.returncode, flush=True)
    return r


def job_ok(r, size, nvars):
    check(r.returncode == 0, "exit status %d" % r.returncode)
    for rank in range(size):
        check("tcollrun job rank %d/%d: ok" % (rank, size) in r.stdout, "rank %d not ok" % rank)
    summary = "tcollrun job: %d ranks, allreduce %d, %d variables ok" % (
        size, size * (size + 1) // 2, nvars)
    check(summary in r.stdout, "no line '%s'" % summary)


def case_hosts(a):
    flags = ["--cache-capacity", "77", "--fusion-threshold-mb", "2",
             "--stall-check-warning-time-seconds", "30", "--log-level", "INFO",
             "--mpi-threads-disable", "--hierarchical-allreduce"]
    want = ["TCOLL_CACHE_CAPACITY=77", "TCOLL_FUSION_THRESHOLD_KB=2048",
            "TCOLL_FUSION_BUFFER_KB=2048", "TCOLL_STALL_WARN_S=30", "TCOLL_LOG_LEVEL=info",
            "TCOLL_MPI_THREAD=funneled", "TCOLL_ALLREDUCE_ALGO=hier", "=".join(MARK)]
    r = run([a.tcollrun, "-np", "2", "-H", "localhost:2"] + flags +
            [a.python, JOB, "--size", "2"] + ["--env=" + w for w in want])
    job_ok(r, 2, len(want))
    # the engine itself read the knob (its info log names each override)
    check(r.stdout.count("TCOLL_CACHE_CAPACITY=77 (from the environment)") >= 2,
          "tcoll's info log does not show TCOLL_CACHE_CAPACITY=77 on both ranks")


def case_hostfile(a):
    path = os.path.join(a.scratch, "hostfile")
    with open(path, "w") as f:
        f.write("localhost slots=2\n")
    want = ["TCOLL_STALL_WARN_S=0", "TCOLL_STALL_ABORT_S=0", "TCOLL_CACHE_CAPACITY=0"]
    r = run([a.tcollrun, "--hostfile", path, "--no-stall-check", "--cache-capacity", "0",
             a.python, JOB, "--size", "2"] + ["--env=" + w for w in want])
    job_ok(r, 2, len(want))


def case_verbose(a):
    argv = [a.tcollrun, "--verbose", "-np", "2", "-H", "localhost:2", "--cache-capacity", "77",
            a.python, JOB, "--size", "2", "--env", "TCOLL_CACHE_CAPACITY=77"]
    r = run(argv)
    job_ok(r, 2, 1)
    line = r.stdout.splitlines()[0]
    cmd = shlex.split(line)
    print("printed command: %r" % cmd)
    check(os.path.basename(cmd[0]).startswith(("mpiexec", "mpirun")), "not a launcher: " + line)
    check(cmd[-6:] == [a.python, JOB, "--size", "2", "--env", "TCOLL_CACHE_CAPACITY=77"],
          "the command does not end with the job's")
    text = " " + " ".join(cmd) + " "
    if a.flavor == "openmpi":
        for part in (" -np 2 ", " -H localhost:2 ", " --bind-to none --map-by slot ",
                     " -x TCOLL_CACHE_CAPACITY=77 ", " -x %s " % MARK[0], " -x PATH "):
            check(part in text, "no '%s' in the command" % part.strip())
        check(("--allow-run-as-root" in cmd) == (os.geteuid() == 0),
              "--allow-run-as-root must be there exactly when running as root")
    else:
        for part in (" -n 2 ", " -hosts localhost:2 ", " -bind-to none ",
                     " -genv TCOLL_CACHE_CAPACITY 77 "):
            check(part in text, "no '%s' in the command" % part.strip())
    # the printed command is the whole story: run as printed, the same job
    again = run(cmd)
    job_ok(again, 2, 1)


def case_exit_status(a):
    r = run([a.tcollrun, "-np", "2", "-H", "localhost:2", a.python, JOB, "--size", "2",
             "--exit", "3"])
    check(r.returncode == 3, "exit status %d, expected the job's 3" % r.returncode)
    check("tcollrun job rank 1/2: ok" in r.stdout, "the job did not run")


def _package_says(a, env=None):
    r = subprocess.run([a.python, "-c", "import tcoll; print(tcoll.__version__, "
                        "int(tcoll.cuda_built()), __import__('os').path.dirname(tcoll.__file__))"],
                       env=env or environ(), stdout=subprocess.PIPE, universal_newlines=True)
    version, cuda, where = r.stdout.split()
    torch = subprocess.run([a.python, "-c", "import tcoll.torch"], env=env or environ(),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    return version, cuda == "1", torch, where


def check_build_ok(a, tcollrun, env=None):
    version, cuda, torch, where = _package_says(a, env)
    r = run([tcollrun, "--check-build"], env=env)
    check(r.returncode == 0, "exit status %d" % r.returncode)
    lines = r.stdout.splitlines()

    def box(on):
        return "[X]" if on else "[ ]"

    for want in ["tcoll v%s:" % version, "    %s PyTorch (tcoll.torch)" % box(torch),
                 "    [X] NumPy (tcoll)", "    [X] MPI (tcoll's engine)",
                 "    %s CUDA (device tensors)" % box(cuda), "    [ ] NCCL",
                 "Python package: %s" % where]:
        check(want in lines, "no line %r" % want)
    i = lines.index("Available Controllers:")
    check(lines[i + 1:i + 3] == ["    [X] MPI", "    [ ] Gloo"], "controllers")
    lib = {"openmpi": "MPI library: Open MPI v", "mpich": "MPI library: MPICH"}.get(a.flavor)
    check(lib is None or any(l.startswith(lib) for l in lines), "no line starting %r" % lib)
    check(not any(l.startswith("WARNING") for l in lines), "a warning")
    return r


def case_check_build(a):
    check_build_ok(a, a.tcollrun)


def case_oversubscribe(a):
    cores = len(os.sched_getaffinity(0))
    np_ = cores + 1
    if np_ > 8:
        print("SKIPPED: %d cores; the case wants more ranks than cores, at most 8" % cores)
        return
    hello = "import os, sys; sys.stdout.write('hello from %s\\n' % " \
            "os.environ.get('OMPI_COMM_WORLD_RANK', os.environ.get('PMI_RANK')))"
    r = run([a.tcollrun, "-np", str(np_), a.python, "-c", hello])
    check(r.returncode == 0 and r.stdout.count("hello from") == np_,
          "%d ranks on %d cores did not run" % (np_, cores))
    r = run([a.tcollrun, "-np", "3", "-H", "localhost:2", a.python, "-c", hello])
    check(r.returncode == 0 and r.stdout.count("hello from") == 3, "3 ranks on 2 slots")
    check("3 ranks on 2 slots: oversubscribing" in r.stdout, "no note about oversubscribing")


def case_mpich(a):
    show = ("import os, sys; e = os.environ; sys.stdout.write('rank %%s of %%s %%s %%s %%s\\n' "
            "%% (e['PMI_RANK'], e['PMI_SIZE'], e.get('TCOLL_CACHE_CAPACITY'), "
            "e.get('TCOLL_LOG_LEVEL'), e.get('%s')))" % MARK[0])
    r = run([a.tcollrun, "--verbose", "--mpiexec", a.mpich, "-np", "2", "-H", "localhost:2",
             "--cache-capacity", "5", "--log-level", "DEBUG", a.python, "-c", show])
    check(r.returncode == 0, "exit status %d" % r.returncode)
    check(" -genv TCOLL_CACHE_CAPACITY 5 " in r.stdout.splitlines()[0], "no -genv")
    for rank in (0, 1):
        want = "rank %d of 2 5 debug %s" % (rank, MARK[1])
        check(want in r.stdout, "no line %r" % want)


def case_installed(a):
    prefix = os.path.join(a.scratch, "prefix")
    shutil.rmtree(prefix, ignore_errors=True)
    r = run([a.cmake, "--install", a.build, "--prefix", prefix])
    check(r.returncode == 0, "cmake --install failed")
    tcollrun = os.path.join(prefix, "bin", "tcollrun")
    check(os.access(tcollrun, os.X_OK), "no executable %s" % tcollrun)
    env = environ()
    env.pop("PYTHONPATH", None)
    pkgdir = os.path.join(prefix, "lib", "python3", "dist-packages")
    r = check_build_ok(a, tcollrun, dict(env, PYTHONPATH=pkgdir))
    check("Python package: %s" % os.path.join(pkgdir, "tcoll") in r.stdout.splitlines(),
          "the installed tcollrun does not use the installed package")
    r = run([tcollrun, "--verbose", "-np", "2", "-H", "localhost:2", "--cache-capacity", "3",
             a.python, JOB, "--size", "2", "--env", "TCOLL_CACHE_CAPACITY=3"], env=env)
    job_ok(r, 2, 1)
    line = r.stdout.splitlines()[0]  # Open MPI: -x NAME=value; MPICH: -genv NAME value
    check("PYTHONPATH=%s" % pkgdir in line or "-genv PYTHONPATH %s" % pkgdir in line,
          "the ranks were not given the installed package's directory")


CASES = {name[5:]: f for name, f in globals().items() if name.startswith("case_")}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=sorted(CASES))
    p.add_argument("--tcollrun", required=True)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--flavor", default="")
    p.add_argument("--build")
    p.add_argument("--cmake", default="cmake")
    p.add_argument("--mpich", default="mpiexec.mpich")
    p.add_argument("--scratch", help="a directory for files (default: one per case under /tmp)")
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="tcollrun-e2e-", dir=a.scratch) as scratch:
        a.scratch = scratch
        CASES[a.case](a)
    print("PASSED: %s" % a.case)


if __name__ == "__main__":
    main()
