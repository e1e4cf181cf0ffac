"""Fixtures of the tcoll.torch tests: run them under MPI, every rank the
same tests, e.g.

    PYTHONPATH=build/python mpiexec -n 3 /usr/bin/python3 -m pytest -x -q tests/python/torch

mpi4py initializes MPI (at MPI_THREAD_MULTIPLE) before tcoll starts, so the
tests can compare with mpi4py's collectives on MPI_COMM_WORLD while tcoll
works on its duplicates; torch.distributed's Gloo backend is started
lazily, over a file store in a directory rank 0 makes, for the tests that
compare with it.
"""

import os
import tempfile
import time

import pytest
import torch

import os

MPI = None
if os.environ.get("TC_TEST_MPI4PY", "1") != "0":  # 0: an MPI that mpi4py is not built on
    try:
        from mpi4py import MPI
    except ImportError:  # pragma: no cover - mpi4py is a test dependency
        MPI = None

import tcoll.torch as hvd

torch.set_num_threads(1)  # several ranks share few cores


@pytest.fixture(scope="session", autouse=True)
def hvd_session():
    hvd.init()
    yield hvd
    hvd.shutdown()


@pytest.fixture(scope="session")
def comm(hvd_session):
    """mpi4py's COMM_WORLD, when MPI runs at MPI_THREAD_MULTIPLE (the same
    answer on every rank, so every rank skips or none does)."""
    if MPI is None or not hvd.mpi_threads_supported():
        pytest.skip("mpi4py did not initialize MPI at MPI_THREAD_MULTIPLE before tcoll")
    return MPI.COMM_WORLD


@pytest.fixture(scope="session")
def gloo(comm):
    """torch.distributed over Gloo, every rank in one group."""
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed without Gloo")
    workdir = tempfile.mkdtemp(prefix="tcoll-gloo-") if comm.rank == 0 else None
    workdir = comm.bcast(workdir, root=0)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", init_method="file://" + os.path.join(workdir, "store"),
                            rank=comm.rank, world_size=comm.size)
    yield dist
    # torch 2.x's Gloo group joins its workers in its destructor holding the
    # interpreter lock, which a worker letting go of a Python tensor waits
    # for: every work done first, and the workers given the lock
    dist.barrier()
    time.sleep(0.1)
    dist.destroy_process_group()
    comm.Barrier()
    if comm.rank == 0:
        for f in os.listdir(workdir):
            os.unlink(os.path.join(workdir, f))
        os.rmdir(workdir)
