"""tcoll.torch.distributed: a torch.distributed backend named ``tcoll``.

::

    import torch.distributed as dist
    import tcoll.torch.distributed  # registers the backend

    dist.init_process_group("tcoll")          # rank and size from tcoll
    model = torch.nn.parallel.DistributedDataParallel(model)
    dist.all_reduce(t)                         # runs on tcoll

Start the job with ``mpiexec -n N`` or ``tcollrun -np N``: rank and world
size come from tcoll (MPI), so no MASTER_ADDR, MASTER_PORT, RANK or
WORLD_SIZE is needed. Importing this module

* registers the backend ``tcoll`` (``dist.Backend.register_backend``);
* registers the rendezvous ``tcoll://`` (``init_method="tcoll://"``): it
  starts tcoll if it is not running (``tcoll.torch.init()``), and gives
  torch the store it keeps for itself (a TCPStore served by rank 0 on a
  port the system picks, its address sent to the others by tcoll: 127.0.0.1
  when the job is on one node, else MASTER_ADDR if set, else rank 0's host
  name);
* makes ``init_process_group("tcoll")`` without ``init_method`` or
  ``store`` use ``tcoll://`` (torch's default would be ``env://``);
  ``rank``/``world_size`` given anyway must be tcoll's;
* makes ``new_group(ranks)`` of the tcoll backend create, on every rank (as
  new_group itself must be called), a tcoll process set of those ranks, in
  which the group's collectives run.

The default group runs in tcoll's global process set. The operations and
their mapping are in ``tcoll.torch.distributed._group``; the Work objects
(``wait(timeout)``, ``is_completed()``, ``get_future()``) in ``_work``.
When this module starts tcoll, it also stops it at exit (``atexit``,
after a barrier of every rank, so a rank that ends early does not cut the
others' work short; ``tcoll.torch.shutdown()`` before that is fine). When it starts tcoll and ``TCOLL_STALL_ABORT_S`` is not set, it
sets it to the process group's timeout (torch's default: 30 minutes), so a
collective that some rank never calls fails on the ranks that did, as
torch's backends time out, instead of waiting forever.
"""

import atexit
import datetime
import functools
import importlib
import inspect
import os
import socket
import threading
import urllib.parse

import torch.distributed as dist
import torch.distributed.distributed_c10d as _c10d

from .. import basics as _basics
from .. import mpi_ops as _ops
from ..functions import broadcast_object
from ._group import ProcessGroupTcoll, tcoll_op
from ._work import Work

# (torch.distributed.rendezvous, the attribute, is the function of that name)
_rdzv = importlib.import_module("torch.distributed.rendezvous")

__all__ = ["ProcessGroupTcoll", "Work", "BACKEND", "tcoll_op"]

BACKEND = "tcoll"

_lock = threading.Lock()
_state = {"groups": 0, "pending": None}


def _is_tcoll(backend):
    """Whether a backend argument (a name, a Backend, or 2.x's
    "cpu:tcoll,cuda:tcoll") means this backend."""
    if backend is None:
        return False
    text = str(backend).lower()
    return text == BACKEND or all(part.split(":")[-1].strip() == BACKEND
                                  for part in text.split(","))


def _start(timeout):
    """Starts tcoll unless it runs; the stall abort follows torch's timeout."""
    if _basics.is_initialized():
        return
    if timeout is not None and not any(v in os.environ for v in (
            "TCOLL_STALL_ABORT_S", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS",
            "HOROVOD_STALL_CHECK_DISABLE")):
        seconds = int(timeout.total_seconds()) if isinstance(timeout, datetime.timedelta) \
            else int(timeout)
        os.environ["TCOLL_STALL_ABORT_S"] = str(max(1, min(seconds, 86400)))
    _basics.init()
    # started here, so stopped here: at exit, after the script's own work
    atexit.register(_stop_at_exit)


def _stop_at_exit():
    """Stops tcoll once every rank is exiting: a rank done early (not in a
    group the others still use) waits for them at a barrier instead of
    failing their operations with its shutdown."""
    if not _basics.is_initialized():
        return
    try:
        _ops.barrier()
    except Exception:  # noqa: BLE001 (a lost rank: shut down all the same)
        pass
    _basics.shutdown()


# ---- the store: torch's own bookkeeping ---------------------------------------------

def _store_host():
    if _basics.local_size() == _basics.size():
        return "127.0.0.1"
    return os.environ.get("MASTER_ADDR") or socket.gethostname()


def _tcp_store(host, port, size, is_master, timeout, **kwargs):
    """torch's TCPStore. From 2.4 its server defaults to libuv, which some
    builds of torch lack (Debian's: "use_libuv was requested but PyTorch was
    build without libuv support"): such a build gets the older server."""
    try:
        return dist.TCPStore(host, port, size, is_master, timeout, **kwargs)
    except RuntimeError as e:
        if "libuv" not in str(e):
            raise
        return dist.TCPStore(host, port, size, is_master, timeout, use_libuv=False, **kwargs)


def _make_store(timeout):
    """A TCPStore served by rank 0 (HashStore for one rank)."""
    if _basics.size() == 1:
        store = dist.HashStore()
        store.set_timeout(timeout)
        return store
    if _basics.rank() == 0:
        host = _store_host()
        store = _tcp_store(host, 0, _basics.size(), True, timeout, wait_for_workers=False)
        where = (host, int(store.port))
    else:
        where = None
    host, port = broadcast_object(where, 0, name="tcoll.dist.store")
    if _basics.rank() != 0:
        store = _tcp_store(host, port, _basics.size(), False, timeout)
    return store


def _rendezvous(url, timeout=_c10d.default_pg_timeout, **kwargs):
    """The ``tcoll://`` rendezvous: (store, rank, world_size) from tcoll."""
    del kwargs
    _start(timeout)
    rank, size = _basics.rank(), _basics.size()
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(url).query))
    for key, ours in (("rank", rank), ("world_size", size)):
        if key in query and int(query[key]) not in (-1, ours):
            raise ValueError("init_process_group: %s=%s, but tcoll says %s is %d (rank and "
                             "world size come from the MPI launcher)"
                             % (key, query[key], key, ours))
    yield (_make_store(timeout), rank, size)
    raise RuntimeError("the tcoll:// rendezvous cannot be done twice in one process")


# ---- the backend ---------------------------------------------------------------

def _create(store, rank, size, timeout):
    """Backend creator: the group's process group (tcoll must be running:
    init_process_group's rendezvous started it, or tcoll.torch.init())."""
    del store
    _start(timeout)
    with _lock:
        pending, _state["pending"] = _state["pending"], None
    if pending is None:
        if not size:
            raise ValueError("tcoll backend: a group needs at least one rank")
        if size != _basics.size():
            raise RuntimeError("tcoll backend: a group of %d ranks made without new_group "
                               "(tcoll runs on %d ranks)" % (size, _basics.size()))
        ranks, ps, gid = list(range(size)), _basics.global_process_set, 0
    else:
        ranks, ps, gid = pending
    if rank != ranks.index(_basics.rank()) or size != len(ranks):
        raise RuntimeError("tcoll backend: torch says rank %d of %d, tcoll says rank %d of %d "
                           "(start the job with mpiexec or tcollrun, and give "
                           "init_process_group no other rank or world_size)"
                           % (rank, size, ranks.index(_basics.rank())
                              if _basics.rank() in ranks else -1, len(ranks)))
    return ProcessGroupTcoll(rank, size, ranks, ps, gid)


def _wrap_new_group_helper(helper):
    sig = inspect.signature(helper)

    @functools.wraps(helper)
    def wrapped(*args, **kwargs):
        bound = sig.bind_partial(*args, **kwargs)
        backend = bound.arguments.get("backend")
        ranks = bound.arguments.get("global_ranks_in_group")
        if not _is_tcoll(backend) or not ranks:
            return helper(*args, **kwargs)
        # every rank is here (new_group is called by all): the process set is
        # made collectively, then torch calls the creator on its members only
        ranks = sorted(int(r) for r in ranks)
        ps = _basics.add_process_set(ranks)
        with _lock:
            _state["groups"] += 1
            _state["pending"] = (ranks, ps, ps.process_set_id) \
                if _basics.rank() in ranks else None
        try:
            return helper(*args, **kwargs)
        finally:
            with _lock:
                _state["pending"] = None
    wrapped._tcoll_wrapped = True
    return wrapped


def _wrap_new_group(new_group):
    """torch 2.x's new_group(use_local_synchronization=True) is called by
    the members only: tcoll makes a process set with every rank, so that is
    refused for this backend instead of waiting for the others."""
    sig = inspect.signature(new_group)

    @functools.wraps(new_group)
    def wrapped(*args, **kwargs):
        bound = sig.bind_partial(*args, **kwargs)
        if bound.arguments.get("use_local_synchronization"):
            backend = bound.arguments.get("backend")
            if backend is None and dist.is_initialized():
                backend = dist.get_backend()
            if _is_tcoll(backend):
                raise ValueError("tcoll backend: new_group(use_local_synchronization=True) "
                                 "is not supported: every rank calls new_group, as by default")
        return new_group(*args, **kwargs)
    wrapped._tcoll_wrapped = True
    return wrapped


def _wrap_init(init):
    sig = inspect.signature(init)

    @functools.wraps(init)
    def init_process_group(*args, **kwargs):
        bound = sig.bind_partial(*args, **kwargs)
        a = bound.arguments
        if _is_tcoll(a.get("backend")) and a.get("init_method") is None and \
                a.get("store") is None:
            a["init_method"] = "tcoll://"
            return init(*bound.args, **bound.kwargs)
        return init(*args, **kwargs)
    init_process_group._tcoll_wrapped = True
    return init_process_group


def _register():
    if "tcoll" not in _rdzv._rendezvous_handlers:
        _rdzv.register_rendezvous_handler("tcoll", _rendezvous)
    if not hasattr(dist.Backend, BACKEND.upper()):
        params = inspect.signature(dist.Backend.register_backend).parameters
        if "devices" in params:
            dist.Backend.register_backend(BACKEND, _create, devices=["cpu", "cuda"])
        else:
            dist.Backend.register_backend(BACKEND, _create)
    if not getattr(_c10d._new_process_group_helper, "_tcoll_wrapped", False):
        _c10d._new_process_group_helper = _wrap_new_group_helper(
            _c10d._new_process_group_helper)
    if hasattr(_c10d, "_new_group_with_tag") and \
            not getattr(_c10d._new_group_with_tag, "_tcoll_wrapped", False):
        _c10d._new_group_with_tag = _wrap_new_group(_c10d._new_group_with_tag)
    if not getattr(_c10d.init_process_group, "_tcoll_wrapped", False):
        wrapped = _wrap_init(_c10d.init_process_group)
        _c10d.init_process_group = wrapped
        dist.init_process_group = wrapped


_register()
