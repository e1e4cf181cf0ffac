"""tcoll.torch.functions: Horovod's helpers for starting every rank from the
same state: broadcast_parameters, broadcast_optimizer_state,
broadcast_object and allgather_object.

Objects travel pickled (cloudpickle when it is installed, as Horovod uses,
else pickle) as uint8 tensors; broadcast_object sends the length first.
Without a name, each call gets names from a counter, the same on every
rank that makes the same calls (Horovod names by the object's type, which
can differ between the root and the others).

broadcast_optimizer_state sends the root's whole ``state_dict()``: the
options of every parameter group (learning rate, momentum, ...) and every
per-parameter state entry, tensors or not, nested or not. The root first
broadcasts the structure (with each tensor's shape and dtype), then every
tensor in place, and the other ranks load the result with
``load_state_dict``; so a rank whose optimizer has no state yet (not
stepped) ends with the root's, and no optimizer step is taken to create
state (Horovod steps with zero gradients for that). Parameters without
state on the root (frozen ones, ones that never had a gradient) end
without state on every rank; every member ends with the root's options in
every parameter group, and the same state.
"""

import pickle
from collections import OrderedDict

import numpy as _np
import torch

from . import handles as _h
from . import mpi_ops as _ops
from .basics import global_process_set, rank

try:  # Horovod's choice: it pickles lambdas and local classes too
    import cloudpickle as _pickler
except ImportError:  # pragma: no cover - depends on the installation
    _pickler = pickle

__all__ = ["broadcast_parameters", "broadcast_optimizer_state", "broadcast_object",
           "allgather_object"]


def _sync_all(handles):
    """Synchronizes every handle, then raises the first error, if any."""
    first = None
    for h in handles:
        try:
            _h.synchronize(h)
        except Exception as e:  # keep going: leave nothing pending
            if first is None:
                first = e
    if first is not None:
        raise first


def broadcast_parameters(params, root_rank, process_set=global_process_set):
    """Overwrites tensors in place with root_rank's: a dict of name ->
    tensor (``model.state_dict()``; broadcast in sorted name order, each
    under its name) or a list or iterable of tensors or of (name, tensor)
    pairs (``model.named_parameters()``, ``model.parameters()``). Entries
    that are None are skipped."""
    if isinstance(params, dict):
        items = sorted(params.items())
    else:
        try:
            items = [p if isinstance(p, tuple) else (None, p) for p in params]
        except TypeError:
            raise ValueError("invalid params of type: %s" % type(params)) from None
    handles = []
    try:
        for name, p in items:
            if p is None:
                continue
            if not isinstance(p, torch.Tensor):
                raise ValueError("broadcast_parameters: %r is a %s, not a tensor"
                                 % (name, type(p).__name__))
            if p.layout != torch.strided:
                raise ValueError("broadcast_parameters: %r is a %s tensor; only dense tensors "
                                 "are broadcast in place" % (name, p.layout))
            handles.append(_ops.broadcast_async_(p, root_rank, name, process_set))
    finally:
        _sync_all(handles)


def _pickle(obj):
    data = _pickler.dumps(obj)
    return torch.from_numpy(_np.frombuffer(data, dtype=_np.uint8).copy())


def _unpickle(t):
    return pickle.loads(t.numpy().tobytes())


def _base(name, kind, process_set):
    return name if name is not None else _h.op_name(kind, None, _h.pset_id(process_set))


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """Returns root_rank's ``obj`` on every member of the process set (the
    root gets its own object back). Any picklable object."""
    base = _base(name, "broadcast_object", process_set)
    if rank() == root_rank:
        payload = _pickle(obj)
        length = torch.tensor([payload.numel()], dtype=torch.int64)
    else:
        length = torch.zeros(1, dtype=torch.int64)
    _ops.broadcast_(length, root_rank, base + ".sz", process_set)
    if rank() != root_rank:
        payload = torch.empty(int(length[0]), dtype=torch.uint8)
    _ops.broadcast_(payload, root_rank, base + ".t", process_set)
    return obj if rank() == root_rank else _unpickle(payload)


def allgather_object(obj, name=None, process_set=global_process_set):
    """Returns the list of every member's ``obj``, in rank order."""
    base = _base(name, "allgather_object", process_set)
    req, finish, _keep = _ops.submit_allgather(_pickle(obj), base, process_set)
    _h.wait_requests([req])
    data = finish()
    out, offset = [], 0
    for n in req.splits():
        out.append(_unpickle(data[offset:offset + n]))
        offset += n
    return out


class _TensorSlot:
    """Where a tensor sat in an optimizer's state, in the structure the root
    broadcasts: its index, shape and dtype."""

    __slots__ = ("index", "shape", "dtype")

    def __init__(self, index, shape, dtype):
        self.index, self.shape, self.dtype = index, shape, dtype

    def __getstate__(self):
        return (self.index, self.shape, str(self.dtype).replace("torch.", ""))

    def __setstate__(self, state):
        self.index, self.shape, dtype = state
        self.dtype = getattr(torch, dtype)


def _same_mapping(obj, pairs):
    """A dict of pairs, an OrderedDict when obj is one."""
    return OrderedDict(pairs) if isinstance(obj, OrderedDict) else dict(pairs)


def _strip(obj, tensors):
    """obj with each tensor replaced by a _TensorSlot (appended to tensors;
    a GPU tensor as a host copy: the receivers make host tensors, which
    load_state_dict moves to their parameters' devices)."""
    if isinstance(obj, torch.Tensor):
        tensors.append(obj if obj.device.type == "cpu" else obj.detach().cpu())
        return _TensorSlot(len(tensors) - 1, tuple(obj.shape), obj.dtype)
    if isinstance(obj, dict):
        return _same_mapping(obj, ((k, _strip(v, tensors)) for k, v in obj.items()))
    if isinstance(obj, (list, tuple)) and type(obj) in (list, tuple):
        return type(obj)(_strip(v, tensors) for v in obj)
    return obj


def _slots(obj, out):
    """Appends every _TensorSlot in obj to out."""
    if isinstance(obj, _TensorSlot):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _slots(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _slots(v, out)


def _fill(obj, tensors):
    """The inverse of _strip."""
    if isinstance(obj, _TensorSlot):
        return tensors[obj.index]
    if isinstance(obj, dict):
        return _same_mapping(obj, ((k, _fill(v, tensors)) for k, v in obj.items()))
    if isinstance(obj, (list, tuple)) and type(obj) in (list, tuple):
        return type(obj)(_fill(v, tensors) for v in obj)
    return obj


def broadcast_optimizer_state(optimizer, root_rank, model=None, process_set=global_process_set):
    """Makes every member's optimizer state (options and per-parameter
    state) the root's. Works on plain torch optimizers and on
    DistributedOptimizer. ``model`` is accepted for Horovod's signature and
    not needed (the state comes whole from the root)."""
    del model
    root = rank() == root_rank
    tensors = []
    skeleton = _strip(optimizer.state_dict(), tensors) if root else None
    skeleton = broadcast_object(skeleton, root_rank, process_set=process_set)
    if not root:
        slots = []
        _slots(skeleton, slots)
        tensors = [torch.empty(sl.shape, dtype=sl.dtype)
                   for sl in sorted(slots, key=lambda sl: sl.index)]
    handles = []
    try:
        for t in tensors:
            handles.append(_ops.broadcast_async_(t, root_rank, None, process_set))
    finally:
        _sync_all(handles)
    if not root:
        optimizer.load_state_dict(_fill(skeleton, tensors))
