"""tcoll.torch.basics: lifetime, ranks and sizes, the node topology, the
build queries, the timeline and process sets, with Horovod's names.

``init()`` starts tcoll (``tcoll.init()``; a second call does nothing) and
then, collectively, learns the node topology with one allgather of every
rank's local rank and local size: ``cross_rank()``/``cross_size()`` are
then exact in Horovod's sense (the ranks sharing this rank's local rank,
one per node, numbered by global rank) and ``is_homogeneous()`` says
whether every node runs the same number of ranks.

``init(comm=...)``: tcoll always runs over ``MPI_COMM_WORLD``, so ``comm``
must be None, a list of every rank (``list(range(size))`` in any order) or
an mpi4py communicator congruent to ``MPI.COMM_WORLD`` (its duplicate, say);
anything else raises ``ValueError`` (on every rank that passes it, after
shutting tcoll down again where it had to start it to know the size).
``init(process_sets=...)`` takes a list of ``ProcessSet`` objects (or rank
lists) and adds them, collectively, in order (also when tcoll was already
running; sets already added are left as they are); ``"dynamic"`` is
accepted (process sets can always be added and removed later).

``init()`` after ``shutdown()`` starts tcoll again (as Horovod allows),
afresh: only the global process set (a ``ProcessSet`` added in the last
run is "not added" again: pass it to ``init(process_sets=...)`` or
``add_process_set`` to have it back), handles and unnamed calls numbered
anew, the topology learned again. MPI stays initialized in between (tcoll
finalizes MPI it initialized itself when the process exits). It raises if
the last run ended after a failure (MPI was left as it was).
"""

import sys
import threading

import numpy as _np

import tcoll as _tc
from tcoll import _tcoll
from tcoll import ProcessSet, global_process_set  # noqa: F401  (re-exported)

from .exceptions import internal_error

__all__ = [
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size",
    "cross_rank", "cross_size", "is_homogeneous", "mpi_threads_supported", "mpi_built",
    "mpi_enabled", "gloo_built", "gloo_enabled", "nccl_built", "ddl_built", "ccl_built",
    "cuda_built", "rocm_built", "start_timeline", "stop_timeline", "ProcessSet",
    "global_process_set", "add_process_set", "remove_process_set",
    "Sum", "Average", "Min", "Max", "Product", "Adasum",
]

# Reduction ops: tcoll's codes (the same objects as tcoll.Sum, ...).
Sum = _tc.Sum
Average = _tc.Average
Min = _tc.Min
Max = _tc.Max
Product = _tc.Product
# Horovod's Adasum: accepted as a name, refused by every call that takes an op
# (NotImplementedError). Its value is outside tcoll's op codes.
Adasum = 100

_lock = threading.RLock()
_state = {
    "init": False,        # tcoll.torch.init() completed (and shutdown() not called)
    "cross_rank": None,
    "cross_size": None,
    "homogeneous": None,
    "mpi_multiple": False,  # MPI was initialized by the application at THREAD_MULTIPLE
}
_reset_hooks = []  # called by shutdown() (the handle table clears itself there)


def _mpi4py_world():
    """mpi4py's MPI module if the application imported it and MPI is
    initialized, else None."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None:
        return None
    try:
        return mpi if mpi.Is_initialized() and not mpi.Is_finalized() else None
    except Exception:  # pragma: no cover - a broken mpi4py
        return None


def _check_comm(comm):
    """Checks init()'s comm before tcoll starts where that can be done;
    returns a list of ranks to check once the size is known, or None."""
    if comm is None:
        return None
    if hasattr(comm, "Get_size") and hasattr(comm, "Get_group"):
        mpi = _mpi4py_world()
        if mpi is None:
            raise ValueError("init(comm=...): an MPI communicator needs MPI initialized (mpi4py)")
        if mpi.Comm.Compare(comm, mpi.COMM_WORLD) not in (mpi.IDENT, mpi.CONGRUENT):
            raise ValueError("init(comm=...): tcoll runs over MPI_COMM_WORLD only; the "
                             "communicator given is not congruent to it (use process sets, "
                             "add_process_set, for collectives among fewer ranks)")
        return None
    try:
        ranks = [int(r) for r in comm]
    except TypeError:
        raise ValueError("init(comm=...) takes None, a list of ranks or an mpi4py "
                         "communicator, not %s" % type(comm).__name__) from None
    return ranks


def init(comm=None, process_sets=None):
    """Starts tcoll and learns the node topology. Collective: every rank
    calls it. See the module's docstring for ``comm`` and
    ``process_sets``."""
    ranks = _check_comm(comm)
    with _lock:
        if not _state["init"]:
            _start(ranks)
        elif ranks is not None and sorted(ranks) != list(range(_tcoll.size())):
            raise ValueError("init(comm=%r): tcoll runs over every rank (0..%d)"
                             % (ranks, _tcoll.size() - 1))
    if process_sets is not None and process_sets != "dynamic":
        for ps in process_sets:
            if not (isinstance(ps, ProcessSet) and ps.process_set_id is not None):
                add_process_set(ps)


def _start(ranks):
    with _lock:
        mpi = _mpi4py_world()
        _state["mpi_multiple"] = mpi is not None and \
            mpi.Query_thread() == mpi.THREAD_MULTIPLE
        try:
            _tc.init()
        except _tc.Error as e:
            if isinstance(e, ValueError):
                raise
            raise internal_error(e) from e
        n = _tcoll.size()
        if ranks is not None and sorted(ranks) != list(range(n)):
            _tc.shutdown()
            raise ValueError("init(comm=%r): tcoll runs over MPI_COMM_WORLD, so comm must "
                             "list every rank (0..%d); use add_process_set for fewer ranks"
                             % (ranks, n - 1))
        _learn_topology()
        _state["init"] = True


def _learn_topology():
    me = _np.array([[_tcoll.local_rank(), _tcoll.local_size()]], dtype=_np.int64)
    everyone = _tc.allgather(me, name="tcoll.torch.init.topology")
    local_ranks = everyone[:, 0]
    r = _tcoll.rank()
    mine = local_ranks[r]
    _state["cross_size"] = int(_np.count_nonzero(local_ranks == mine))
    _state["cross_rank"] = int(_np.count_nonzero(local_ranks[:r] == mine))
    _state["homogeneous"] = bool(_np.all(everyone[:, 1] == everyone[0, 1]))


def shutdown():
    """Stops tcoll on every rank: operations still pending fail with a
    HorovodInternalError (tcoll.ShutdownError). A call when tcoll is not
    running does nothing."""
    with _lock:
        for hook in list(_reset_hooks):
            hook()
        _state["init"] = False
        _tc.shutdown()


def is_initialized():
    """Whether init() has completed and shutdown() has not been called."""
    return _state["init"]


def _check_init():
    if not _state["init"]:
        raise ValueError("tcoll.torch has not been initialized; use hvd.init().")


def rank():
    """This process's rank, 0..size()-1."""
    _check_init()
    return _tcoll.rank()


def size():
    """The number of ranks."""
    _check_init()
    return _tcoll.size()


def local_rank():
    """This process's rank among the ranks on its node."""
    _check_init()
    return _tcoll.local_rank()


def local_size():
    """The number of ranks on this node."""
    _check_init()
    return _tcoll.local_size()


def cross_rank():
    """This rank's place among the ranks with its local rank (one per node,
    ordered by global rank): the node's index when every node runs the same
    number of ranks."""
    _check_init()
    return _state["cross_rank"]


def cross_size():
    """The number of ranks with this rank's local rank: the number of nodes
    when every node runs the same number of ranks."""
    _check_init()
    return _state["cross_size"]


def is_homogeneous():
    """Whether every node runs the same number of ranks."""
    _check_init()
    return _state["homogeneous"]


def mpi_threads_supported():
    """Whether MPI runs at MPI_THREAD_MULTIPLE: True when the application
    initialized MPI through mpi4py at that level before init() (tcoll then
    works on duplicates of MPI_COMM_WORLD); False when tcoll initialized MPI
    itself (its engine thread alone calls MPI)."""
    _check_init()
    return _state["mpi_multiple"]


def mpi_built():
    """tcoll always runs over MPI: True."""
    return True


def mpi_enabled():
    """tcoll always runs over MPI: True."""
    return True


def gloo_built():
    """tcoll has no Gloo transport: False."""
    return False


def gloo_enabled():
    """tcoll has no Gloo transport: False."""
    return False


def nccl_built():
    """0: tcoll does not use NCCL (Horovod returns NCCL's version, 0 for none); CUDA
    tensors run on tcoll's own device path (``cuda_built()``)."""
    return 0


def ddl_built():
    """False: no IBM DDL."""
    return False


def ccl_built():
    """False: no oneCCL."""
    return False


def cuda_built():
    """Whether libtcoll was built with CUDA (then CUDA tensors are taken
    wherever a driver and a device are found at run time: see
    ``tcoll.cuda_info()``)."""
    return bool(_tcoll.cuda_built())


def rocm_built():
    """False: tcoll has no ROCm support."""
    return False


def start_timeline(file_path, mark_cycles=False):
    """Starts recording this rank's timeline, a Chrome trace (see the
    README's "Timeline": "%r" in the path gives each rank a file of its own;
    without it rank 0 writes one file for the job at shutdown).
    ``mark_cycles`` is accepted and ignored (tcoll's timeline has no
    cycle markers)."""
    _check_init()
    del mark_cycles
    _tcoll.timeline_start(str(file_path))


def stop_timeline():
    """Stops recording the timeline (see start_timeline)."""
    _check_init()
    _tcoll.timeline_stop()


def _ranks_of(process_set):
    """A rank list from a list, a ProcessSet not added yet, or an mpi4py
    communicator (its members' ranks in MPI_COMM_WORLD)."""
    if hasattr(process_set, "Get_group") and hasattr(process_set, "Get_size"):
        mpi = _mpi4py_world()
        if mpi is None:
            raise ValueError("a process set from an MPI communicator needs mpi4py's MPI")
        group = process_set.Get_group()
        world = mpi.COMM_WORLD.Get_group()
        return [int(r) for r in mpi.Group.Translate_ranks(group, list(range(group.Get_size())),
                                                          world)]
    return process_set


def add_process_set(process_set):
    """Adds a process set: a list of ranks, a ``ProcessSet`` made from one
    and not added yet, or an mpi4py communicator (its ranks). Collective
    over every rank (each passes the same ranks). Returns the ProcessSet."""
    _check_init()
    return _tc.add_process_set(_ranks_of(process_set))


def remove_process_set(process_set):
    """Removes a process set, collectively. Returns True."""
    _check_init()
    return _tc.remove_process_set(process_set)
