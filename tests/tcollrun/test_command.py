"""The launcher's command line tcollrun builds, for Open MPI and for MPICH's
Hydra, token by token; the launcher's flavor from its --version text; the
variables passed on."""

import pytest

from conftest import VERSION_TEXT


@pytest.fixture
def mpi(runner):
    return runner.mpi


def ompi(mpi, version=(4, 1, 4)):
    return mpi.Launcher("/usr/bin/mpiexec", mpi.OPENMPI, version)


def mpich(mpi):
    return mpi.Launcher("/usr/bin/mpiexec.mpich", mpi.MPICH, (4, 0, 2))


def test_flavor_from_version_text(mpi):
    assert mpi.parse_version(VERSION_TEXT["openmpi"]) == (mpi.OPENMPI, (4, 1, 4), "Open MPI 4.1.4")
    assert mpi.parse_version(VERSION_TEXT["openmpi5"])[:2] == (mpi.OPENMPI, (5, 0, 3))
    assert mpi.parse_version(VERSION_TEXT["mpich"]) == (mpi.MPICH, (4, 0, 2), "MPICH (Hydra) 4.0.2")
    intel = "Intel(R) MPI Library for Linux* OS, Version 2021.9 Build 20230307\n"
    assert mpi.parse_version(intel)[0] == mpi.MPICH
    assert mpi.parse_version(VERSION_TEXT["other"]) is None


def test_openmpi_as_root_with_hosts_and_knobs(mpi):
    plan = mpi.Plan(4, ["python3", "train.py", "--lr", "0.1"], hosts=[("h1", 2), ("h2", 2)],
                    root=True, rank_env={"TCOLL_CACHE_CAPACITY": "77", "TCOLL_TIMELINE": "/t l"},
                    forward=["LD_LIBRARY_PATH", "PATH"])
    argv, lenv = mpi.build_command(ompi(mpi), plan)
    assert argv == ["/usr/bin/mpiexec", "--allow-run-as-root", "-np", "4", "-H", "h1:2,h2:2",
                    "--bind-to", "none", "--map-by", "slot",
                    "-x", "LD_LIBRARY_PATH", "-x", "PATH",
                    "-x", "TCOLL_CACHE_CAPACITY=77", "-x", "TCOLL_TIMELINE=/t l",
                    "python3", "train.py", "--lr", "0.1"]
    assert lenv == {}
    assert mpi.format_command(argv, lenv).endswith(
        "-x TCOLL_CACHE_CAPACITY=77 -x 'TCOLL_TIMELINE=/t l' python3 train.py --lr 0.1")


def test_openmpi_not_root_no_hosts_oversubscribed(mpi):
    argv, _ = mpi.build_command(ompi(mpi), mpi.Plan(3, ["a.out"], oversubscribe=True))
    assert argv == ["/usr/bin/mpiexec", "-np", "3", "--bind-to", "none", "--map-by", "slot",
                    "--oversubscribe", "a.out"]
    argv, _ = mpi.build_command(ompi(mpi, (5, 0, 3)), mpi.Plan(3, ["a.out"], oversubscribe=True))
    assert argv == ["/usr/bin/mpiexec", "-np", "3", "--bind-to", "none", "--map-by",
                    "slot:OVERSUBSCRIBE", "a.out"]


def test_openmpi_hostfile_passes_as_is(mpi):
    argv, _ = mpi.build_command(ompi(mpi), mpi.Plan(2, ["a.out"], hosts=[("h", 2)],
                                                    hostfile="/etc/hosts.hvd"))
    assert argv[1:5] == ["-np", "2", "--hostfile", "/etc/hosts.hvd"]
    assert "-H" not in argv


def test_openmpi_ssh_nics_output_binding_extra_args(mpi):
    plan = mpi.Plan(2, ["a.out"], hosts=[("h", 2)], binding=["--bind-to", "core"],
                    oversubscribe=True, ssh_port=2222, ssh_identity="/k ey", nics=["eth0", "ib0"],
                    output_filename="out", timestamp_output=True,
                    mpi_args=["--mca", "pml", "ob1"])
    argv, lenv = mpi.build_command(ompi(mpi), plan)
    assert argv == ["/usr/bin/mpiexec", "-np", "2", "-H", "h:2", "--bind-to", "core",
                    "--oversubscribe", "--mca", "plm_rsh_args", "-p 2222 -i '/k ey'",
                    "--mca", "btl_tcp_if_include", "eth0,ib0", "--output-filename", "out",
                    "--timestamp-output", "--mca", "pml", "ob1", "a.out"]
    assert lenv == {}


def test_mpich_hosts_knobs_and_ssh(mpi):
    plan = mpi.Plan(4, ["python3", "t.py"], hosts=[("h1", 2), ("h2", 2)], root=True,
                    oversubscribe=True, rank_env={"TCOLL_LOG_LEVEL": "info", "PYTHONPATH": "/p"},
                    ssh_port=2222, nics=["eth0"], output_filename="out",
                    mpi_args=["-prepend-rank"])
    argv, lenv = mpi.build_command(mpich(mpi), plan)
    assert argv == ["/usr/bin/mpiexec.mpich", "-n", "4", "-hosts", "h1:2,h2:2",
                    "-bind-to", "none", "-iface", "eth0",
                    "-outfile-pattern", "out/rank.%r.stdout", "-errfile-pattern",
                    "out/rank.%r.stderr",
                    "-genv", "TCOLL_LOG_LEVEL", "info", "-genv", "PYTHONPATH", "/p",
                    "-prepend-rank", "python3", "t.py"]
    assert lenv == {"HYDRA_LAUNCHER_EXTRA_ARGS": "-p 2222"}
    assert mpi.format_command(argv, lenv).startswith(
        "HYDRA_LAUNCHER_EXTRA_ARGS='-p 2222' /usr/bin/mpiexec.mpich -n 4 ")


def test_mpich_refusals(mpi):
    with pytest.raises(ValueError, match="one network interface"):
        mpi.build_command(mpich(mpi), mpi.Plan(1, ["a"], nics=["a", "b"]))
    with pytest.raises(ValueError, match="Open MPI's launcher"):
        mpi.build_command(mpich(mpi), mpi.Plan(1, ["a"], timestamp_output=True))
    with pytest.raises(ValueError, match="space"):
        mpi.build_command(mpich(mpi), mpi.Plan(1, ["a"], ssh_identity="/k ey"))


def test_forwarded_variables(mpi):
    environ = {"TCOLL_SPIN": "4", "HOROVOD_FUSION_THRESHOLD": "1", "PYTHONPATH": "/p",
               "OMP_NUM_THREADS": "1", "LD_LIBRARY_PATH": "/l", "PATH": "/b", "NCCL_DEBUG": "x",
               "CUDA_VISIBLE_DEVICES": "0", "HOME": "/root", "OMPI_ALLOW_RUN_AS_ROOT": "1",
               "SSH_AUTH_SOCK": "/s", "BASH_FUNC_x%%": "() {}", "PATHX": "no",
               "TCOLL_CACHE_CAPACITY": "5"}
    assert mpi.forward_names(environ, exclude={"TCOLL_CACHE_CAPACITY": "77"}) == [
        "CUDA_VISIBLE_DEVICES", "HOROVOD_FUSION_THRESHOLD", "LD_LIBRARY_PATH", "NCCL_DEBUG",
        "OMP_NUM_THREADS", "PATH", "PYTHONPATH", "TCOLL_SPIN"]


def test_find_and_detect(mpi, fake_launcher, tmp_path):
    path, _ = fake_launcher("mpich", name="mpiexec")
    environ = {"PATH": str(tmp_path)}
    assert mpi.find(None, None, environ) == path
    assert mpi.find(None, "/nonexistent/mpiexec", environ) == path
    assert mpi.find(None, path, {"PATH": "/nonexistent"}) == path
    with pytest.raises(mpi.LaunchError, match="--mpiexec nope"):
        mpi.find("nope", path, environ)
    with pytest.raises(mpi.LaunchError, match="neither mpiexec nor mpirun"):
        mpi.find(None, None, {"PATH": "/nonexistent"})
    launcher = mpi.detect(path)
    assert (launcher.flavor, launcher.version) == (mpi.MPICH, (4, 0, 2))
    other, _ = fake_launcher("other", name="other")
    with pytest.raises(mpi.LaunchError, match="neither Open MPI's nor MPICH's launcher"):
        mpi.detect(other)
