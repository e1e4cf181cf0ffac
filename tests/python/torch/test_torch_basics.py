"""tcoll.torch basics: ids against mpi4py, the topology, build queries,
init's checks, the timeline."""

import json
import os
import tempfile

import pytest

import tcoll
import tcoll.torch as hvd


def test_ids_match_mpi(comm):
    assert hvd.is_initialized()
    assert hvd.rank() == comm.rank
    assert hvd.size() == comm.size
    assert 0 <= hvd.local_rank() < hvd.local_size() <= hvd.size()


def test_topology_is_horovods(comm):
    # cross ranks: the ranks sharing this local rank, numbered by global rank
    from mpi4py import MPI
    local = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.rank)
    assert hvd.local_rank() == local.rank and hvd.local_size() == local.size
    cross = comm.Split(color=local.rank, key=comm.rank)
    assert hvd.cross_rank() == cross.rank
    assert hvd.cross_size() == cross.size
    sizes = comm.allgather(local.size)
    assert hvd.is_homogeneous() == (len(set(sizes)) == 1)
    cross.Free()
    local.Free()


def test_build_queries():
    assert hvd.mpi_built() is True and hvd.mpi_enabled() is True
    assert not hvd.gloo_built() and not hvd.gloo_enabled()
    assert hvd.nccl_built() == 0
    for q in (hvd.ddl_built, hvd.ccl_built, hvd.rocm_built):
        assert q() is False
    # CUDA: what libtcoll was built with; usable only with a driver and a device
    assert hvd.cuda_built() is tcoll.cuda_built()
    assert isinstance(tcoll.cuda_available(), bool) and isinstance(tcoll.cuda_info(), str)
    if not tcoll.cuda_built():
        assert not tcoll.cuda_available() and tcoll.cuda_info().startswith("not built: ")
    elif not tcoll.cuda_available():
        assert "not available: " in tcoll.cuda_info()
    assert hvd.mpi_threads_supported() in (True, False)


def test_init_again_checks_comm(comm):
    hvd.init()  # a second call does nothing
    hvd.init(comm=list(reversed(range(hvd.size()))))
    dup = comm.Dup()
    hvd.init(comm=dup)
    dup.Free()
    if hvd.size() > 1:
        with pytest.raises(ValueError):
            hvd.init(comm=[0])
        from mpi4py import MPI
        with pytest.raises(ValueError):
            hvd.init(comm=MPI.COMM_SELF)
    with pytest.raises(ValueError):
        hvd.init(comm=3.5)
    assert hvd.is_initialized()


def test_ops_and_exceptions_exist():
    ops = {hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product, hvd.Adasum}
    assert len(ops) == 6
    assert issubclass(hvd.HorovodInternalError, RuntimeError)
    assert issubclass(hvd.HostsUpdatedInterrupt, RuntimeError)


def test_timeline(comm):
    d = tempfile.mkdtemp() if comm.rank == 0 else None
    d = comm.bcast(d, root=0)
    path = os.path.join(d, "tl.%r.json")
    hvd.start_timeline(path, mark_cycles=True)
    import torch
    hvd.allreduce(torch.ones(4), name="timeline.x")
    hvd.stop_timeline()
    mine = os.path.join(d, "tl.%d.json" % hvd.rank())
    with open(mine) as f:
        events = json.load(f)["traceEvents"]
    assert any("timeline.x" in json.dumps(e) for e in events)
    comm.Barrier()
    os.unlink(mine)
    comm.Barrier()
    if comm.rank == 0:
        os.rmdir(d)
