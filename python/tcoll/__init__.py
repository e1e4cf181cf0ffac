"""tcoll for NumPy: named, negotiated collectives over MPI.

Every collective is asynchronous underneath: the ``*_async`` calls return a
:class:`Handle` at once (``wait()``, ``done()``), the plain calls wait for it.
A collective runs when every rank of its process set has submitted the same
name; ranks may submit in any order, from any thread. Names are optional:
without one, the k-th unnamed call of a kind in a process set gets the name
``"<kind>.noname.<k>"``, the same on every rank (as Horovod does).

Buffers are not copied on the way in when they are C-contiguous: the input
array itself is what the engine reads (hold it unchanged until the handle
completes; the handle keeps it alive). A non-contiguous input is copied
first (``numpy.ascontiguousarray``) by the out-of-place calls; the in-place
calls (``allreduce_``, ``broadcast_``) refuse it with ``ValueError``.
Outputs tcoll allocates (allgather, reducescatter, alltoall) are returned as
arrays over that memory, without a copy.

Errors: bad arguments raise ``ValueError`` or ``TypeError`` at once
(:class:`InvalidArgumentError` is both a ``ValueError`` and a
:class:`Error`); what fails across ranks raises a subclass of :class:`Error`
from ``wait()``: :class:`MismatchError`, :class:`DuplicateNameError` (also a
``ValueError``, at submission), :class:`ShutdownError`,
:class:`TransportError`, :class:`StateError`, :class:`OutOfMemoryError`,
:class:`TimeoutError` (also the builtin ``TimeoutError``).
"""

import threading
import weakref

import numpy as _np

from . import _tcoll
from ._tcoll import (  # noqa: F401  (re-exported)
    cuda_available,
    cuda_built,
    cuda_info,
    DuplicateNameError,
    Error,
    InvalidArgumentError,
    MismatchError,
    OutOfMemoryError,
    Request,
    ShutdownError,
    StateError,
    TimeoutError,
    TransportError,
)

__all__ = [
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size",
    "cuda_built", "cuda_available", "cuda_info",
    "Sum", "Average", "Min", "Max", "Product",
    "allreduce", "allreduce_", "allreduce_async", "allreduce_async_",
    "allgather", "allgather_async", "broadcast", "broadcast_", "broadcast_async",
    "broadcast_async_", "reducescatter", "reducescatter_async", "alltoall", "alltoall_async",
    "grouped_allreduce", "grouped_allreduce_async", "grouped_allgather",
    "grouped_allgather_async", "grouped_reducescatter", "grouped_reducescatter_async",
    "barrier", "barrier_async", "join", "join_async",
    "ProcessSet", "global_process_set", "add_process_set", "remove_process_set",
    "Handle", "Error", "InvalidArgumentError", "StateError", "MismatchError",
    "DuplicateNameError", "ShutdownError", "TransportError", "OutOfMemoryError", "TimeoutError",
]

__version__ = _tcoll.version()

# Reduction ops (Horovod's names; the C codes of tcoll.h).
Sum = _tcoll.SUM
Average = _tcoll.AVG
Min = _tcoll.MIN
Max = _tcoll.MAX
Product = _tcoll.PROD
_OPS = {Sum: "sum", Average: "average", Min: "min", Max: "max", Product: "product"}

_DTYPES = {
    _np.dtype(_np.uint8): _tcoll.UINT8,
    _np.dtype(_np.int8): _tcoll.INT8,
    _np.dtype(_np.int16): _tcoll.INT16,
    _np.dtype(_np.uint16): _tcoll.UINT16,
    _np.dtype(_np.int32): _tcoll.INT32,
    _np.dtype(_np.int64): _tcoll.INT64,
    _np.dtype(_np.float16): _tcoll.FLOAT16,
    _np.dtype(_np.float32): _tcoll.FLOAT32,
    _np.dtype(_np.float64): _tcoll.FLOAT64,
}
_FLOAT_CODES = (_tcoll.FLOAT16, _tcoll.BFLOAT16, _tcoll.FLOAT32, _tcoll.FLOAT64)

_initialized = False
_state_lock = threading.Lock()


# ---- lifetime and ids --------------------------------------------------------

def init():
    """Starts tcoll (and MPI, unless the application initialized it with
    MPI_THREAD_MULTIPLE). Collective: every rank calls it. A second call
    while tcoll runs does nothing. After shutdown() it starts tcoll again,
    afresh: only the global process set (sets added before can be added
    again), unnamed calls numbered from 0; MPI stays initialized between
    the runs (tcoll finalizes MPI it initialized when the process exits).
    StateError if the last run ended after a failure."""
    global _initialized
    with _state_lock:
        if _initialized:
            return
        _tcoll.init()
        _reset_run()
        _initialized = True


def shutdown():
    """Stops tcoll on every rank (pending operations fail with
    ShutdownError). Collective. A call when tcoll is not running does
    nothing. init() may start tcoll again afterwards."""
    global _initialized
    with _state_lock:
        if not _initialized:
            return
        _initialized = False
        try:
            _tcoll.shutdown()
        finally:
            _reset_run()


def _reset_run():
    """What a run of tcoll leaves behind in this module: the counters of
    unnamed calls (a new run numbers them from 0 on every rank) and the
    ids of the process sets added (gone with the run: each such ProcessSet
    is "not added" again, so it can be added in the next run)."""
    with _counters_lock:
        _counters.clear()
    with _added_lock:
        added = [ref() for ref in _added]
        _added.clear()
    for ps in added:
        if ps is not None and ps._added_ranks is not None:
            ps.process_set_id = None
            ps._ranks = ps._added_ranks
            ps._added_ranks = None


def is_initialized():
    """Whether init() has been called and shutdown() has not."""
    return _initialized


def rank():
    """This process's rank (0..size()-1)."""
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


def _check_init():
    if not _initialized:
        raise StateError("tcoll has not been initialized: call tcoll.init() first")


# ---- process sets ------------------------------------------------------------

class ProcessSet:
    """A subset of the ranks that collectives run among (pass it as
    ``process_set=``). Made with :func:`add_process_set`, collectively;
    ``global_process_set`` is every rank."""

    def __init__(self, ranks_or_id):
        self._added_ranks = None  # its ranks while added by add_process_set
        if isinstance(ranks_or_id, int):
            self.process_set_id = ranks_or_id
            self._ranks = None
        else:
            self.process_set_id = None  # not registered yet
            self._ranks = sorted(int(r) for r in ranks_or_id)

    @property
    def ranks(self):
        """The members' global ranks, ascending."""
        if self.process_set_id is None:
            return list(self._ranks)
        return _tcoll.process_set_ranks(self.process_set_id)

    def size(self):
        """The number of members (-1 when the set does not exist)."""
        _check_init()
        return _tcoll.process_set_size(self._id())

    def rank(self):
        """This rank's place among the members (-1 when not a member)."""
        _check_init()
        return _tcoll.process_set_rank(self._id())

    def included(self):
        """Whether this rank is a member."""
        return self.rank() >= 0

    def _id(self):
        if self.process_set_id is None:
            raise ValueError("the process set has not been added (tcoll.add_process_set)")
        return self.process_set_id

    def __eq__(self, other):
        return isinstance(other, ProcessSet) and other.process_set_id == self.process_set_id \
            and self.process_set_id is not None

    def __hash__(self):
        return hash(self.process_set_id)

    def __repr__(self):
        if self.process_set_id is None:
            return "ProcessSet(%r, not added)" % (self._ranks,)
        return "ProcessSet(id=%d)" % self.process_set_id


global_process_set = ProcessSet(0)

# The sets add_process_set made in this run (weak: a set may be dropped);
# shutdown() makes them "not added" again (_reset_run).
_added = []
_added_lock = threading.Lock()


def add_process_set(process_set):
    """Creates a process set from a list of ranks (or an unregistered
    ProcessSet) and returns it. Collective over every rank: each passes the
    same ranks (MismatchError on every rank otherwise)."""
    _check_init()
    if isinstance(process_set, ProcessSet):
        if process_set.process_set_id is not None:
            raise ValueError("%r is already added" % (process_set,))
        ranks = process_set._ranks
        ps = process_set
    else:
        ranks = [int(r) for r in process_set]
        ps = ProcessSet(ranks)
    ps.process_set_id = _tcoll.process_set_add(ranks)
    ps._ranks = None
    ps._added_ranks = sorted(int(r) for r in ranks)
    with _added_lock:
        _added.append(weakref.ref(ps))
    return ps


def remove_process_set(process_set):
    """Removes a process set, collectively (every rank, the same set).
    Returns True. Operations of the set still waiting for some member fail
    with StateError."""
    _check_init()
    _tcoll.process_set_remove(_pset_id(process_set))
    return True


def _pset_id(process_set):
    if process_set is None:
        return 0
    if isinstance(process_set, ProcessSet):
        return process_set._id()
    if isinstance(process_set, int):
        return process_set
    raise TypeError("process_set must be a ProcessSet, not %s" % type(process_set).__name__)


# ---- names -------------------------------------------------------------------

_counters = {}
_counters_lock = threading.Lock()


def _name(kind, name, pset):
    """The name of a call: the given one, or the next "<kind>.noname.<k>" of
    this kind in this process set, taken at once (tcoll.torch names its calls
    with this: its unnamed calls and this module's share one sequence)."""
    if name is not None:
        if not isinstance(name, str):
            raise TypeError("name must be a str, not %s" % type(name).__name__)
        return name
    with _counters_lock:
        k = _counters.get((kind, pset), 0)
        _counters[(kind, pset)] = k + 1
    return "%s.noname.%d" % (kind, k)


def _submit(kind, name, pset, call):
    """Submits a call: ``call(name)`` with the given name, or with the next
    "<kind>.noname.<k>" of this kind in this process set (the same sequence
    on every rank). An automatic name is taken only when the call is
    accepted: one refused at once (a bad argument, maybe on one rank only)
    leaves the sequence as it was, so the ranks' k-th unnamed calls still
    meet."""
    if name is not None:
        if not isinstance(name, str):
            raise TypeError("name must be a str, not %s" % type(name).__name__)
        return call(name)
    with _counters_lock:
        k = _counters.get((kind, pset), 0)
        result = call("%s.noname.%d" % (kind, k))
        _counters[(kind, pset)] = k + 1
    return result


# ---- arrays --------------------------------------------------------------------

def _code(array):
    code = _DTYPES.get(array.dtype)
    if code is None:
        raise TypeError("tcoll does not reduce or move %s arrays (dtypes: %s)" % (
            array.dtype, ", ".join(str(d) for d in _DTYPES)))
    return code


def _input(array):
    """A C-contiguous array over the same data when possible (no copy), of
    the same shape (numpy.ascontiguousarray would turn a 0-dim array into a
    1-dim one)."""
    return _np.asarray(array, order="C")


def _in_place(array, what):
    if not isinstance(array, _np.ndarray):
        raise TypeError("%s works in place on a NumPy array, not %s" % (what, type(array).__name__))
    if not array.flags.c_contiguous:
        raise ValueError("%s works in place: the array must be C-contiguous (copy it with "
                         "numpy.ascontiguousarray, or use the out-of-place call)" % what)
    if not array.flags.writeable:
        raise ValueError("%s works in place: the array is read-only" % what)
    return array


def _op(op):
    if op not in _OPS:
        raise ValueError("unknown op %r (tcoll.Sum, Average, Min, Max, Product)" % (op,))
    return op


def _from_output(req, dtype):
    """The output tcoll allocated for req, as an array of dtype without a
    copy (the array keeps the request, and so the memory, alive)."""
    _dt, shape = req.output_info()
    return _np.frombuffer(req, dtype=dtype).reshape(shape)


class Handle:
    """An operation in flight: ``wait()`` blocks (without the GIL) until it
    completes and returns its result or raises its error; ``done()`` says
    whether it has completed, never blocking."""

    __slots__ = ("_reqs", "_finish", "_result", "_waited")

    def __init__(self, reqs, finish):
        self._reqs = reqs
        self._finish = finish
        self._result = None
        self._waited = False

    def done(self):
        return all(r.done() for r in self._reqs)

    def wait(self):
        if not self._waited:
            # Every request (a grouped call has one per member) is waited
            # for before any error is raised: the members of a failed group
            # complete one by one, and the caller may reuse their names as
            # soon as wait() returns or raises.
            error = None
            for r in self._reqs:
                try:
                    r.wait()
                except Exception as e:  # noqa: BLE001 (raised below)
                    if error is None:
                        error = e
            if error is not None:
                raise error
            self._result = self._finish(self._reqs)
            self._waited = True
        return self._result


# ---- the collectives -----------------------------------------------------------

def allreduce_async(array, op=Sum, name=None, prescale_factor=1.0, postscale_factor=1.0,
                    process_set=global_process_set):
    """Starts an allreduce of ``array`` into a new array (the default op is
    Sum; Average divides by the process set's size and needs a floating
    dtype). A non-contiguous input is copied first."""
    pset = _pset_id(process_set)
    src = _input(array)
    out = _np.empty_like(src)
    req = _submit("allreduce", name, pset, lambda n: _tcoll.submit(
        "allreduce", n, src, out, _code(src), src.shape, op=_op(op),
        prescale=float(prescale_factor), postscale=float(postscale_factor), process_set=pset))
    return Handle([req], lambda reqs: out)


def allreduce(array, op=Sum, name=None, prescale_factor=1.0, postscale_factor=1.0,
              process_set=global_process_set):
    """Allreduce of ``array`` into a new array: see allreduce_async."""
    return allreduce_async(array, op, name, prescale_factor, postscale_factor,
                           process_set).wait()


def allreduce_async_(array, op=Sum, name=None, prescale_factor=1.0, postscale_factor=1.0,
                     process_set=global_process_set):
    """Starts an allreduce in place: ``array`` (C-contiguous, writable)
    receives the result."""
    pset = _pset_id(process_set)
    buf = _in_place(array, "allreduce_")
    req = _submit("allreduce", name, pset, lambda n: _tcoll.submit(
        "allreduce", n, buf, buf, _code(buf), buf.shape, op=_op(op),
        prescale=float(prescale_factor), postscale=float(postscale_factor), process_set=pset))
    return Handle([req], lambda reqs: array)


def allreduce_(array, op=Sum, name=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set):
    """Allreduce in place; returns ``array``."""
    return allreduce_async_(array, op, name, prescale_factor, postscale_factor,
                            process_set).wait()


def allgather_async(array, name=None, process_set=global_process_set):
    """Starts an allgather: every rank's ``array`` stacked along dimension 0
    in rank order (ranks may give different first dimensions)."""
    pset = _pset_id(process_set)
    src = _input(array)
    if src.ndim == 0:
        src = src.reshape(1)
    req = _submit("allgather", name, pset, lambda n: _tcoll.submit(
        "allgather", n, src, None, _code(src), src.shape, process_set=pset))
    return Handle([req], lambda reqs: _from_output(reqs[0], src.dtype))


def allgather(array, name=None, process_set=global_process_set):
    """Allgather: see allgather_async."""
    return allgather_async(array, name, process_set).wait()


def broadcast_async_(array, root_rank, name=None, process_set=global_process_set):
    """Starts a broadcast in place: ``array`` takes root_rank's values
    (root_rank is a global rank, a member of the process set)."""
    pset = _pset_id(process_set)
    buf = _in_place(array, "broadcast_")
    req = _submit("broadcast", name, pset, lambda n: _tcoll.submit(
        "broadcast", n, buf, None, _code(buf), buf.shape, root=int(root_rank),
        process_set=pset))
    return Handle([req], lambda reqs: array)


def broadcast_(array, root_rank, name=None, process_set=global_process_set):
    """Broadcast in place; returns ``array``."""
    return broadcast_async_(array, root_rank, name, process_set).wait()


def broadcast_async(array, root_rank, name=None, process_set=global_process_set):
    """Starts a broadcast into a copy of ``array``."""
    return broadcast_async_(_np.array(array, copy=True, order="C"), root_rank, name,
                            process_set)


def broadcast(array, root_rank, name=None, process_set=global_process_set):
    """Broadcast: returns a new array with root_rank's values."""
    return broadcast_async(array, root_rank, name, process_set).wait()


def reducescatter_async(array, op=Sum, name=None, prescale_factor=1.0, postscale_factor=1.0,
                        process_set=global_process_set):
    """Starts a reducescatter: the reduction of ``array`` across ranks, of
    which each rank keeps its block of dimension 0 (rows split as evenly as
    possible, the first ranks one more)."""
    pset = _pset_id(process_set)
    src = _input(array)
    req = _submit("reducescatter", name, pset, lambda n: _tcoll.submit(
        "reducescatter", n, src, None, _code(src), src.shape, op=_op(op),
        prescale=float(prescale_factor), postscale=float(postscale_factor), process_set=pset))
    return Handle([req], lambda reqs: _from_output(reqs[0], src.dtype))


def reducescatter(array, op=Sum, name=None, prescale_factor=1.0, postscale_factor=1.0,
                  process_set=global_process_set):
    """Reducescatter: see reducescatter_async."""
    return reducescatter_async(array, op, name, prescale_factor, postscale_factor,
                               process_set).wait()


def alltoall_async(array, splits=None, name=None, process_set=global_process_set):
    """Starts an alltoall: ``splits[j]`` rows of dimension 0 go to the j-th
    member (None: equal parts). The result is ``(array, received_splits)``."""
    pset = _pset_id(process_set)
    src = _input(array)
    if splits is not None:
        splits = [int(s) for s in _np.asarray(splits).reshape(-1)]
    req = _submit("alltoall", name, pset, lambda n: _tcoll.submit(
        "alltoall", n, src, None, _code(src), src.shape, splits=splits, process_set=pset))
    return Handle([req], lambda reqs: (_from_output(reqs[0], src.dtype),
                                      _np.asarray(reqs[0].splits(), dtype=_np.int64)))


def alltoall(array, splits=None, name=None, process_set=global_process_set):
    """Alltoall: returns ``(array, received_splits)``; see alltoall_async."""
    return alltoall_async(array, splits, name, process_set).wait()


def _grouped(kind, arrays, op, names, prescale, postscale, process_set):
    pset = _pset_id(process_set)
    srcs = [_input(a) for a in arrays]
    if kind == "allgather":  # as allgather_async: a 0-dim array is one row
        srcs = [s.reshape(1) if s.ndim == 0 else s for s in srcs]
    outs = [_np.empty_like(s) for s in srcs] if kind == "allreduce" else None

    def call(member_names):
        return _tcoll.grouped(kind, list(member_names), srcs, outs, [_code(s) for s in srcs],
                              [s.shape for s in srcs], op=_op(op), prescale=float(prescale),
                              postscale=float(postscale), process_set=pset)

    if names is None:
        reqs = _submit("grouped_" + kind, None, pset,
                       lambda first: call(["%s.%d" % (first, i) for i in range(len(srcs))]))
    else:
        reqs = call(names)
    if kind == "allreduce":
        return Handle(reqs, lambda rs: outs)
    return Handle(reqs, lambda rs: [_from_output(r, s.dtype) for r, s in zip(rs, srcs)])


def grouped_allreduce_async(arrays, op=Sum, names=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    """Starts allreduces of a list of arrays as one unit: all run, or all fail
    with the first disagreeing member's MismatchError."""
    return _grouped("allreduce", arrays, op, names, prescale_factor, postscale_factor,
                    process_set)


def grouped_allreduce(arrays, op=Sum, names=None, prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set):
    """Grouped allreduce: returns a list of new arrays."""
    return grouped_allreduce_async(arrays, op, names, prescale_factor, postscale_factor,
                                   process_set).wait()


def grouped_allgather_async(arrays, names=None, process_set=global_process_set):
    """Starts allgathers of a list of arrays as one unit."""
    return _grouped("allgather", arrays, Sum, names, 1.0, 1.0, process_set)


def grouped_allgather(arrays, names=None, process_set=global_process_set):
    """Grouped allgather: returns a list of arrays."""
    return grouped_allgather_async(arrays, names, process_set).wait()


def grouped_reducescatter_async(arrays, op=Sum, names=None, prescale_factor=1.0,
                                postscale_factor=1.0, process_set=global_process_set):
    """Starts reducescatters of a list of arrays as one unit."""
    return _grouped("reducescatter", arrays, op, names, prescale_factor, postscale_factor,
                    process_set)


def grouped_reducescatter(arrays, op=Sum, names=None, prescale_factor=1.0,
                          postscale_factor=1.0, process_set=global_process_set):
    """Grouped reducescatter: returns a list of arrays."""
    return grouped_reducescatter_async(arrays, op, names, prescale_factor, postscale_factor,
                                       process_set).wait()


def barrier_async(process_set=global_process_set):
    """Starts a barrier: completes once every member has reached it, and
    after every operation this rank submitted before it (in the set)."""
    req = _tcoll.barrier(process_set=_pset_id(process_set))
    return Handle([req], lambda reqs: None)


def barrier(process_set=global_process_set):
    """Waits until every member of the process set has called barrier."""
    barrier_async(process_set).wait()


def join_async(process_set=global_process_set):
    """Starts a join (for uneven data): until every member has joined, the
    others' allreduces and reducescatters run without this rank (which adds
    zeros, or the op's identity); the result is the rank that joined last."""
    req = _tcoll.join(process_set=_pset_id(process_set))
    return Handle([req], lambda reqs: reqs[0].last_joined())


def join(process_set=global_process_set):
    """Joins and waits for every member to join; returns the last rank to
    join (the same on every rank)."""
    return join_async(process_set).wait()
