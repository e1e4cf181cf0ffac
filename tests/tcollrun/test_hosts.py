"""-H and hostfiles (Horovod's format), their translation for each MPI, local
and remote hosts, when tcollrun oversubscribes, and the ssh check that
--start-timeout bounds (against a fake ssh)."""

import os
import stat
import time

import pytest


@pytest.fixture
def hosts(runner):
    return runner.hosts


def test_parse_hosts(hosts):
    assert hosts.parse_hosts("localhost:2") == [("localhost", 2)]
    assert hosts.parse_hosts("h1:2, h2:4,h3") == [("h1", 2), ("h2", 4), ("h3", 1)]
    for bad, needle in [("h1:0", "at least 1"), ("h1:x", "'x'"), ("h1,,h2", "empty host"),
                        ("h1:2,h1:1", "named twice"), ("h 1:2", "not a host name"),
                        ("h1:", "''")]:
        with pytest.raises(hosts.HostError, match=needle):
            hosts.parse_hosts(bad)


def test_hostfile_translation(hosts, runner, tmp_path):
    f = tmp_path / "hostfile"
    f.write_text("# the job's hosts\nlocalhost slots=2\n\n  node-2.example.com   slots=4  # gpu\n")
    parsed = hosts.parse_hostfile(str(f))
    assert parsed == [("localhost", 2), ("node-2.example.com", 4)]
    assert hosts.hosts_arg(parsed) == "localhost:2,node-2.example.com:4"
    mpi = runner.mpi
    # MPICH's Hydra gets the hosts inline; Open MPI reads the file itself
    # (the main program passes hostfile= only for Open MPI)
    argv, _ = mpi.build_command(mpi.Launcher("mpiexec", mpi.MPICH),
                                mpi.Plan(6, ["a"], hosts=parsed))
    assert argv[:5] == ["mpiexec", "-n", "6", "-hosts", "localhost:2,node-2.example.com:4"]
    assert not any(str(f) in a for a in argv)


@pytest.mark.parametrize("text,needle", [
    ("localhost\n", "line 1: 'localhost' is not 'host slots=N'"),
    ("a slots=2\nb max_slots=2\n", "line 2"),
    ("a slots=0\n", "at least 1"),
    ("a slots=2\na slots=1\n", "named twice"),
    ("# nothing\n\n", "no hosts in it"),
])
def test_bad_hostfiles(hosts, tmp_path, text, needle):
    f = tmp_path / "hf"
    f.write_text(text)
    with pytest.raises(hosts.HostError, match=needle):
        hosts.parse_hostfile(str(f))
    with pytest.raises(hosts.HostError, match="No such file"):
        hosts.parse_hostfile(str(tmp_path / "missing"))


def test_local_and_remote(hosts):
    import socket
    me = socket.gethostname()
    h = [("localhost", 1), ("127.0.1.1", 1), (me, 1), ("elsewhere.invalid", 2)]
    assert hosts.remote_hosts(h) == ["elsewhere.invalid"]


def test_oversubscription(runner):
    over = runner.cli.oversubscribe
    assert not over(2, None, {}, cores=2)
    assert over(3, None, {}, cores=2)
    assert not over(3, None, {"SLURM_JOB_ID": "7"}, cores=2)  # the allocation's slots rule
    assert not over(4, [("a", 2), ("b", 2)], {}, cores=1)
    assert over(5, [("a", 2), ("b", 2)], {"SLURM_JOB_ID": "7"}, cores=64)


def test_local_cores(hosts):
    n = hosts.local_cores()
    assert 1 <= n <= len(os.sched_getaffinity(0))


@pytest.fixture
def fake_ssh(tmp_path, monkeypatch):
    """An ssh on PATH: host 'good' answers, 'bad' is refused, 'slow' hangs;
    every call appends its arguments to calls.txt."""
    ssh = tmp_path / "ssh"
    calls = tmp_path / "calls.txt"
    ssh.write_text("#!/bin/sh\n"
                   "echo \"$*\" >> %s\n"
                   "for a; do host=$prev; prev=$a; done\n"
                   "case $host in\n"
                   "  good) exit 0 ;;\n"
                   "  slow) exec sleep 30 ;;\n"
                   "  *) echo \"ssh: connect to host $host port 22: Connection refused\" >&2;"
                   " exit 255 ;;\n"
                   "esac\n" % calls)
    ssh.chmod(ssh.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", "%s:%s" % (tmp_path, os.environ.get("PATH", "")))
    return calls


def test_ssh_check(hosts, fake_ssh):
    assert hosts.check_ssh([], 5) == []
    assert hosts.check_ssh(["good"], 5, port=2222, identity="/k") == []
    assert "-o BatchMode=yes -o ConnectTimeout=5 -p 2222 -i /k good true" in fake_ssh.read_text()
    t0 = time.monotonic()
    failed = dict(hosts.check_ssh(["good", "bad", "slow"], 2))
    took = time.monotonic() - t0
    assert sorted(failed) == ["bad", "slow"]
    assert "exited with 255: ssh: connect to host bad port 22: Connection refused" in failed["bad"]
    assert "no answer within 2 s (--start-timeout)" in failed["slow"]
    assert took < 10, took  # the hosts are checked at once, bounded by the timeout
