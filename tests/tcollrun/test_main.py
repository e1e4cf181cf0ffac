"""tcollrun as a whole, against a fake mpiexec: what it prints with --verbose
and --dry-run, what it execs (argv and environment), its exit status
(the launcher's; 2 for a bad command line, 1 without a launcher), the
PYTHONPATH ranks get, and --check-build's report."""

import io
import os
import shlex
import subprocess
import sys

import pytest


def run_main(runner, argv, environ, build=None):
    """-> (status, stdout, stderr, exec call or None)."""
    calls = []

    def execve(path, argv_, env):
        calls.append((path, argv_, env))
        return 0

    out, err = io.StringIO(), io.StringIO()
    status = runner.cli.main(argv, build=build or {"pkgdir": "", "mpiexec": "", "version": "9.9"},
                             environ=environ, execve=execve, out=out, err=err)
    return status, out.getvalue(), err.getvalue(), calls[0] if calls else None


@pytest.fixture
def environ(tmp_path):
    return {"PATH": str(tmp_path) + ":/usr/bin:/bin", "HOME": "/root", "TCOLL_SPIN": "3",
            "TCOLL_CACHE_CAPACITY": "5", "OMP_NUM_THREADS": "1"}


@pytest.mark.parametrize("flavor", ["openmpi", "mpich"])
def test_verbose_prints_what_it_execs(runner, fake_launcher, environ, flavor):
    path, _ = fake_launcher(flavor)
    status, out, err, call = run_main(runner, [
        "--verbose", "-np", "2", "-H", "localhost:2", "--cache-capacity", "77", "-p", "2222",
        "--cycle-time-ms", "5", "python3", "train.py", "--x", "a b"], environ)
    assert status == 0 and call is not None
    exec_path, argv, env = call
    assert exec_path == path == argv[0]
    line = out.splitlines()[0]
    if flavor == "openmpi":
        assert shlex.split(line) == argv  # the exact command, shell-quoted
        assert env == environ
        root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        assert argv == [path] + root + [
            "-np", "2", "-H", "localhost:2", "--bind-to", "none", "--map-by", "slot",
            "--mca", "plm_rsh_args", "-p 2222",
            "-x", "OMP_NUM_THREADS", "-x", "PATH", "-x", "TCOLL_SPIN",
            "-x", "TCOLL_CACHE_CAPACITY=77", "python3", "train.py", "--x", "a b"]
    else:
        assert line == "HYDRA_LAUNCHER_EXTRA_ARGS='-p 2222' " + shlex.join(argv)
        assert env == dict(environ, HYDRA_LAUNCHER_EXTRA_ARGS="-p 2222")
        assert argv == [path, "-n", "2", "-hosts", "localhost:2", "-bind-to", "none",
                        "-genv", "TCOLL_CACHE_CAPACITY", "77", "python3", "train.py", "--x",
                        "a b"]
    assert "--cycle-time-ms has no effect" in err


def test_dry_run_prints_and_does_not_run(runner, fake_launcher, environ):
    fake_launcher("openmpi")
    status, out, err, call = run_main(runner, ["--dry-run", "-np", "2", "a.out"], environ)
    assert status == 0 and call is None
    assert "-np 2" in out and out.rstrip().endswith(" a.out")


def test_quiet_without_verbose(runner, fake_launcher, environ):
    fake_launcher("openmpi")
    status, out, err, call = run_main(runner, ["-np", "1", "--cycle-time-ms", "5", "a.out"],
                                      environ)
    assert status == 0 and call is not None and out == "" and err == ""
    status, out, err, call = run_main(runner, ["-np", "1", "--autotune", "a.out"], environ)
    assert "--autotune has no effect" in err


def test_np_from_slots_and_oversubscribe_note(runner, fake_launcher, environ):
    fake_launcher("openmpi")
    _, _, _, call = run_main(runner, ["-H", "localhost:2,127.0.0.1:1", "a.out"], environ)
    argv = call[1]
    assert argv[argv.index("-np") + 1] == "3" and "--oversubscribe" not in argv
    _, _, err, call = run_main(runner, ["-np", "4", "-H", "localhost:2", "a.out"], environ)
    assert "--oversubscribe" in call[1] and "4 ranks on 2 slots: oversubscribing" in err


def test_hostfile_for_each_flavor(runner, fake_launcher, environ, tmp_path):
    hf = tmp_path / "hostfile"
    hf.write_text("localhost slots=2\n")
    fake_launcher("openmpi")
    _, _, _, call = run_main(runner, ["--hostfile", str(hf), "a.out"], environ)
    argv = call[1]
    assert argv[argv.index("--hostfile") + 1] == str(hf) and "-H" not in argv
    assert argv[argv.index("-np") + 1] == "2"
    path, _ = fake_launcher("mpich", name="mpiexec.mpich")
    _, _, _, call = run_main(runner, ["--mpiexec", path, "-hostfile", str(hf), "a.out"], environ)
    assert call[1][:5] == [path, "-n", "2", "-hosts", "localhost:2"]


def test_usage_errors_exit_2(runner, fake_launcher, environ, capsys):
    fake_launcher("openmpi")
    mpich, _ = fake_launcher("mpich", name="mpiexec.mpich")
    for argv, needle in [(["-np", "2"], "no command to run"),
                         (["python3"], "-np is required"),
                         (["-np", "2", "--bogus", "python3"], "unrecognized arguments: --bogus"),
                         (["-H", "a:0", "python3"], "at least 1"),
                         (["--mpiexec", mpich, "--network-interfaces", "a,b", "-np", "1",
                           "python3"], "one network interface"),
                         (["-np", "1", "--mpi-args", "'unclosed", "python3"], "cannot split"),
                         (["-np", "1", "--no-stall-check", "--stall-check-shutdown-time-"
                           "seconds", "9", "python3"], "--no-stall-check contradicts")]:
        with pytest.raises(SystemExit) as e:
            run_main(runner, argv, environ)
        assert e.value.code == 2
        assert needle in capsys.readouterr().err


def test_no_launcher_exits_1(runner, environ):
    environ["PATH"] = "/nonexistent"
    status, _, err, call = run_main(runner, ["-np", "1", "a.out"], environ)
    assert status == 1 and call is None and "neither mpiexec nor mpirun" in err


def test_remote_hosts_checked_by_ssh(runner, fake_launcher, environ, tmp_path):
    fake_launcher("openmpi")
    ssh = tmp_path / "ssh"
    ssh.write_text("#!/bin/sh\necho no route >&2\nexit 255\n")
    ssh.chmod(0o755)
    status, _, err, call = run_main(runner, ["-H", "elsewhere.invalid:2", "--start-timeout",
                                             "5", "a.out"], environ)
    assert status == 1 and call is None
    assert "ssh to elsewhere.invalid failed: ssh exited with 255: no route" in err
    # inside a resource manager's allocation the launcher does not use ssh
    status, _, _, call = run_main(runner, ["-H", "elsewhere.invalid:2", "a.out"],
                                  dict(environ, SLURM_JOB_ID="1"))
    assert status == 0 and call is not None


def test_rank_pythonpath(runner, tmp_path):
    pkg = tmp_path / "py"
    (pkg / "tcoll").mkdir(parents=True)
    f = runner.cli.rank_pythonpath
    assert f(str(pkg), {}, []) is None  # no extension there: not a built package
    (pkg / "tcoll" / "_tcoll.cpython-311-x86_64-linux-gnu.so").write_text("")
    assert f(str(pkg), {}, []) == str(pkg)
    assert f(str(pkg), {"PYTHONPATH": "/a"}, []) == "/a:" + str(pkg)
    assert f(str(pkg), {"PYTHONPATH": str(pkg)}, []) is None
    assert f(str(pkg), {}, ["/x", str(pkg)]) is None


def test_check_build_report(runner):
    cb = runner.check_build
    info = {"version": "0.1.0", "numpy": True, "torch": False, "cuda": True,
            "mpi_library": "MPICH Version: 4.0.2", "where": "/p/tcoll", "error": "",
            "torch_error": "ModuleNotFoundError: No module named 'torch'"}
    launcher = runner.mpi.Launcher("/usr/bin/mpiexec", runner.mpi.OPENMPI, (4, 1, 4),
                                   "Open MPI 4.1.4")
    text = cb.render(info, launcher, verbose=True)
    lines = text.splitlines()
    assert lines[0] == "tcoll v0.1.0:"
    assert "    [ ] PyTorch (tcoll.torch)" in lines
    assert "        (tcoll.torch does not import: ModuleNotFoundError: No module named 'torch')" \
        == lines[lines.index("    [ ] PyTorch (tcoll.torch)") + 1]
    assert "    [X] NumPy (tcoll)" in lines
    controllers = lines[lines.index("Available Controllers:") + 1:][:2]
    assert controllers == ["    [X] MPI", "    [ ] Gloo"]
    ops = lines[lines.index("Available Tensor Operations:") + 1:][:6]
    assert ops == ["    [ ] NCCL", "    [ ] DDL", "    [ ] CCL", "    [X] MPI (tcoll's engine)",
                   "    [ ] Gloo", "    [X] CUDA (device tensors)"]
    assert "MPI launcher: /usr/bin/mpiexec (Open MPI 4.1.4)" in lines
    assert any(l.startswith("WARNING: tcoll runs on MPICH") for l in lines)
    info.update(cuda=False, torch=True, mpi_library="Open MPI v4.1.4, package: Debian")
    lines = cb.render(info, None, "no MPI launcher").splitlines()
    assert "    [X] PyTorch (tcoll.torch)" in lines and "    [ ] CUDA (device tensors)" in lines
    assert "MPI launcher: none (no MPI launcher)" in lines
    assert not any(l.startswith("WARNING") for l in lines)


def test_check_build_without_the_package(runner, monkeypatch):
    cb = runner.check_build
    monkeypatch.setattr(cb, "_import", lambda name: (None, "ImportError: no tcoll here"))
    out, err = io.StringIO(), io.StringIO()
    assert cb.run("/nowhere", None, "", False, out, err) == 1
    assert "the tcoll Python package does not import from /nowhere: ImportError: no tcoll " \
        "here" in err.getvalue()
    assert out.getvalue() == ""


def test_script_exit_status_and_errors(tcollrun_script, fake_launcher, tmp_path):
    path, record = fake_launcher("openmpi", status=3)
    env = dict(os.environ, PATH="%s:%s" % (tmp_path, os.environ.get("PATH", "")))

    def script(*argv):
        return subprocess.run([sys.executable, tcollrun_script, "--mpiexec", path] + list(argv),
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=60)

    r = script("-np", "2", "--cache-capacity", "9", "python3", "-c", "pass")
    assert r.returncode == 3, r.stderr  # the launcher's (the job's) exit status
    rec = record()
    assert rec["argv"][0] == path and "TCOLL_CACHE_CAPACITY=9" in rec["argv"]
    assert rec["argv"][-3:] == ["python3", "-c", "pass"]
    r = script("-np", "2", "--no-such-flag", "python3")
    assert r.returncode == 2 and "unrecognized arguments: --no-such-flag" in r.stderr
    r = script("-np", "2")
    assert r.returncode == 2 and "no command to run" in r.stderr
    r = script("--fusion-threshold-mb", "4096", "-np", "2", "python3")
    assert r.returncode == 2 and "4096 is out of range 0..1024" in r.stderr
    r = script("--help")
    assert r.returncode == 0 and "--fusion-threshold-mb" in r.stdout
