"""tcoll's lifetime and ids, against mpi4py and the launcher: rank, size,
local rank and size, the version, init() twice. (Before init: see
test_np_errors.py; after shutdown: the session fixture in conftest.py.)"""

import os
import re

import tcoll


def test_initialized():
    assert tcoll.is_initialized()
    tcoll.init()  # a second call while running does nothing
    assert tcoll.is_initialized()


def test_ids(rank, size, comm):
    if comm is not None:  # collective: before any assertion
        from mpi4py import MPI
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        node_ids = (node.Get_rank(), node.Get_size())
        node.Free()
    assert 0 <= rank < size
    assert 0 <= tcoll.local_rank() < tcoll.local_size() <= size
    for var in ("OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        if var in os.environ:
            assert rank == int(os.environ[var])
    for var in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"):
        if var in os.environ:
            assert size == int(os.environ[var])
    if comm is not None:
        assert (rank, size) == (comm.Get_rank(), comm.Get_size())
        assert (tcoll.local_rank(), tcoll.local_size()) == node_ids


def test_version_and_names():
    assert re.fullmatch(r"\d+\.\d+\.\d+", tcoll.__version__)
    for symbol in tcoll.__all__:
        assert hasattr(tcoll, symbol), symbol
    assert {tcoll.Sum, tcoll.Average, tcoll.Min, tcoll.Max, tcoll.Product} == set(range(5))
