"""tcoll's lifetime and ids, against mpi4py and the launcher: rank, size,
local rank and size, the version, init() twice, init() after shutdown().
(Before init: see test_np_errors.py; after the last shutdown: the session
fixture in conftest.py.)"""

import os
import re

import numpy as np

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


def test_init_after_shutdown(rank, size):
    """init() after shutdown() starts tcoll again, afresh, three times over:
    the sets added before are gone (and can be added again), unnamed calls
    are numbered from 0 again, names of the last run can be used again,
    and everything runs as in the first run. Every call first, then the
    checks; tcoll runs again afterwards for the tests that follow."""
    kept = tcoll.add_process_set(list(range(size)))
    seen = []
    for run in range(3):
        if run > 0:
            tcoll.init()
            seen.append(("set after init", run, kept.process_set_id))
            tcoll.add_process_set(kept)
            # the first unnamed allreduce of the run is allreduce.noname.0:
            # the sequence starts again (a duplicate-name probe would race
            # with the call's completion, so the sequence is read directly)
            seen.append(("unnamed counter", run, dict(tcoll._counters), {}))
            h = tcoll.allreduce_async(np.ones(2))
            seen.append(("unnamed counter", run, dict(tcoll._counters),
                         {("allreduce", 0): 1}))
            seen.append(("unnamed", run, h.wait().tolist(), [float(size)] * 2))
        seen.append(("ids", run, tcoll.is_initialized(), tcoll.rank(), tcoll.size(),
                     (rank, size)))
        for _ in range(3):  # cached from the second call, then the small-message path
            out = tcoll.allreduce(np.full(4, rank + 1.0 + run), name="lifecycle/reinit")
        want = sum(r + 1.0 + run for r in range(size))
        seen.append(("allreduce", run, out.tolist(), [want] * 4))
        out = tcoll.allreduce(np.full(3, run, dtype=np.int32), process_set=kept,
                              name="lifecycle/reinit/set")
        seen.append(("in the set", run, out.tolist(), [run * size] * 3))
        rows = tcoll.allgather(np.full((rank + 1, 2), run, dtype=np.int64),
                               name="lifecycle/reinit/ag")
        seen.append(("allgather", run, rows.shape, (size * (size + 1) // 2, 2),
                     bool((rows == run).all())))
        last = tcoll.join()
        tcoll.barrier()
        tcoll.shutdown()
        seen.append(("after shutdown", run, tcoll.is_initialized(), 0 <= last < size))
        try:
            tcoll.allreduce(np.ones(1), name="lifecycle/reinit/late")
            seen.append(("late call", run, "ran"))
        except tcoll.ShutdownError:
            pass
    tcoll.init()  # the session goes on
    for entry in seen:
        what = entry[0]
        if what == "set after init":
            assert entry[2] is None, entry
        elif what in ("unnamed", "unnamed counter", "allreduce", "in the set"):
            assert entry[2] == entry[3], entry
        elif what == "ids":
            assert entry[2] and (entry[3], entry[4]) == entry[5], entry
        elif what == "allgather":
            assert entry[2] == entry[3] and entry[4], entry
        elif what == "after shutdown":
            assert not entry[2] and entry[3], entry
        else:
            raise AssertionError(entry)
