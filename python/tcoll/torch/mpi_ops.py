"""tcoll.torch.mpi_ops: the asynchronous and in-place collectives of
horovod.torch over tcoll (the differentiable blocking ones are in
tcoll.torch.autograd), plus join and barrier.

Every ``*_async`` call submits at once and returns an int handle for
``poll``/``synchronize`` (tcoll.torch.handles), except
``sparse_allreduce_async``, which returns a handle function as Horovod's
does (two allgathers, indices and values, behind it). The in-place calls
(``allreduce_async_``, ``grouped_allreduce_async_``, ``broadcast_async_``)
write the result into the tensor they were given: a contiguous tensor is
handed to tcoll as it is, a non-contiguous one through a contiguous copy
that ``synchronize`` copies back. The out-of-place calls copy a
non-contiguous input first; allreduce and broadcast write into a new
contiguous tensor, allgather, reducescatter and alltoall return tensors
over the memory tcoll allocated for the result (no copy; for CUDA tensors,
a copy on the device into memory of torch's allocator).

CUDA tensors go to tcoll as device tensors on the tensor's device, ordered
after the work torch's current stream had queued when the call was made;
once synchronized (or ``poll`` said done) the result is in place for every
stream.

Ops: ``op=None`` is Average, as in Horovod (``average=`` is still accepted,
deprecated: True is Average, False is Sum; giving both is a ValueError).
Average of an integer tensor is a Sum scaled by 1/n (truncated toward
zero, as Horovod scales integers). Sum, Average, Min, Max and Product run
in tcoll; Adasum raises NotImplementedError.
"""

import warnings

import torch

from tcoll import _tcoll

from . import handles as _h
from .basics import Adasum, Average, Max, Min, Product, Sum, global_process_set

__all__ = [
    "allreduce_async", "allreduce_async_", "allreduce_", "grouped_allreduce_async",
    "grouped_allreduce_async_", "grouped_allreduce_", "sparse_allreduce_async",
    "allgather_async", "grouped_allgather_async", "broadcast_async", "broadcast_async_",
    "broadcast_", "alltoall_async", "reducescatter_async", "grouped_reducescatter_async",
    "join", "barrier",
]

_OPS = (Sum, Average, Min, Max, Product)
_FLOATS = frozenset((torch.float16, torch.bfloat16, torch.float32, torch.float64))
_Tensor = torch.Tensor
_STRIDED = torch.strided


def resolve_op(op, average, default=Average):
    """Horovod's op/average rule: op wins when given; average= (deprecated)
    maps True to Average and False to Sum; both given is a ValueError."""
    if op is not None and average is not None:
        raise ValueError("The op parameter supersedes average. Please provide only one of them.")
    if average is not None:
        warnings.warn("Parameter `average` has been replaced with `op` (hvd.Average or hvd.Sum)",
                      DeprecationWarning, stacklevel=3)
        return Average if average else Sum
    return default if op is None else op


def reduce_args(op, dtypes, process_set, postscale):
    """tcoll's op code and postscale for op over tensors of dtypes."""
    if op == Adasum:
        raise NotImplementedError("Adasum is not supported by tcoll: use hvd.Average or hvd.Sum")
    if op not in _OPS:
        raise ValueError("unknown reduction op %r (hvd.Sum, Average, Min, Max, Product)" % (op,))
    if op == Average and not all(d.is_floating_point for d in dtypes):
        return Sum, float(postscale) / _h.pset_size(process_set)
    return op, float(postscale)


# ---- allreduce -------------------------------------------------------------------

def fast_code(tensor, op):
    """The tcoll dtype code of tensor if it can go to tcoll as it is with op
    (resolved): a plain dense contiguous CPU tensor of a reducible dtype,
    and an op tcoll runs as given (not Average of integers). Else None: the
    general path checks, copies or refuses."""
    if (type(tensor) is not _Tensor or not tensor.is_cpu or tensor.layout is not _STRIDED
            or not tensor.is_contiguous() or tensor.is_neg()):
        return None
    code = _h.REDUCE_CODES.get(tensor.dtype)
    if code is None or op not in _OPS or (op == Average and tensor.dtype not in _FLOATS):
        return None
    return code


def submit_allreduce(tensor, in_place, name, op, prescale_factor, postscale_factor,
                     process_set):
    """Submits an allreduce of tensor (op already resolved): (request,
    finish, keep); finish None means the result is keep."""
    if process_set is global_process_set:
        # the common case in a few calls: one tensor tcoll takes as it is
        code = fast_code(tensor, op)
        if code is not None:
            out = tensor if in_place else torch.empty(tensor.shape, dtype=tensor.dtype)
            req = _h.submit(_tcoll.submit, "allreduce", _h.op_name("allreduce", name, 0),
                            tensor, out, code, tensor.shape, op=op,
                            prescale=float(prescale_factor),
                            postscale=float(postscale_factor))
            return req, None, out
    _h.check_tensor(tensor, "allreduce")
    ps = _h.pset_id(process_set)
    tc_op, post = reduce_args(op, [tensor.dtype], process_set, postscale_factor)
    src = _h.contiguous(tensor)
    send = _h.wire(src)
    if in_place:
        out, recv = src, send
    else:
        out = torch.empty(src.shape, dtype=src.dtype, device=src.device)
        recv = _h.wire(out)
    req = _h.submit(_tcoll.submit, "allreduce", _h.op_name("allreduce", name, ps), send, recv,
                    _h.code_of(src), tuple(src.shape), op=tc_op,
                    prescale=float(prescale_factor), postscale=post, process_set=ps,
                    stream=_h.stream_of(src))
    if in_place and src is not tensor:
        def finish():
            tensor.detach().copy_(src)
            return tensor
    elif in_place:
        def finish():
            return tensor
    else:
        def finish():
            return out
    return req, finish, (tensor, src, out)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    """Starts a reduction of ``tensor`` across the process set into a new
    tensor (``tensor`` is not modified). Returns a handle."""
    op = resolve_op(op, average)
    req, finish, keep = submit_allreduce(tensor, False, name, op, prescale_factor,
                                         postscale_factor, process_set)
    return _h.register_one(req, keep) if finish is None else _h.register([req], finish, keep)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    """Starts an in-place reduction: ``tensor`` holds the result once
    synchronized. Returns a handle."""
    op = resolve_op(op, average)
    req, finish, keep = submit_allreduce(tensor, True, name, op, prescale_factor,
                                         postscale_factor, process_set)
    return _h.register_one(req, keep) if finish is None else _h.register([req], finish, keep)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    """In-place reduction; returns ``tensor`` (not differentiable)."""
    return _h.synchronize(allreduce_async_(tensor, average, name, op, prescale_factor,
                                           postscale_factor, process_set))


# ---- grouped ---------------------------------------------------------------------

def member_names(kind, name, count, process_set_id):
    """The names of a group's members: ``<grouped base>.<i>``."""
    base = _h.op_name("grouped_" + kind, name, process_set_id)
    return ["%s.%d" % (base, i) for i in range(count)]


def submit_grouped(kind, tensors, in_place, names, op, prescale_factor, postscale_factor,
                   process_set):
    """Submits a group of kind (allreduce, allgather, reducescatter) with the
    given full member names: (requests, finish, keep)."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("grouped_%s: the list of tensors is empty" % kind)
    for t in tensors:
        _h.check_tensor(t, "grouped_" + kind, allow_bool=kind == "allgather")
    ps = _h.pset_id(process_set)
    if kind == "allgather":
        tc_op, post = Sum, 1.0
    else:
        op = Average if op is None else op
        tc_op, post = reduce_args(op, [t.dtype for t in tensors], process_set, postscale_factor)
    srcs = [_h.contiguous(t) for t in tensors]
    if kind == "allgather":
        srcs = [s.reshape(1) if s.dim() == 0 else s for s in srcs]
    sends = [_h.wire(s) for s in srcs]
    outs, recvs = None, None
    if kind == "allreduce":
        outs = srcs if in_place else [torch.empty(s.shape, dtype=s.dtype, device=s.device)
                                      for s in srcs]
        recvs = sends if in_place else [_h.wire(o) for o in outs]
    reqs = _h.submit(_tcoll.grouped, kind, list(names), sends, recvs,
                     [_h.code_of(s) for s in srcs], [tuple(s.shape) for s in srcs], op=tc_op,
                     prescale=float(prescale_factor), postscale=post, process_set=ps,
                     stream=_h.stream_of(srcs[0]))
    if kind == "allreduce" and in_place:
        def finish():
            for t, s in zip(tensors, srcs):
                if s is not t:
                    t.detach().copy_(s)
            return tensors
    elif kind == "allreduce":
        def finish():
            return outs
    else:
        def finish():
            return [_h.from_output(r, t.dtype) for r, t in zip(reqs, tensors)]
    return reqs, finish, (tensors, srcs, outs)


def _grouped_handle(kind, tensors, in_place, name, op, prescale_factor, postscale_factor,
                    process_set):
    tensors = list(tensors)
    names = member_names(kind, name, len(tensors), _h.pset_id(process_set))
    reqs, finish, keep = submit_grouped(kind, tensors, in_place, names, op, prescale_factor,
                                        postscale_factor, process_set)
    return _h.register(reqs, finish, keep)


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    """Starts reductions of a list of tensors as one unit (all succeed or
    all fail, on every rank); the result is a list of new tensors."""
    op = resolve_op(op, average)
    return _grouped_handle("allreduce", tensors, False, name, op, prescale_factor,
                           postscale_factor, process_set)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    """In-place grouped reduction: each tensor holds its result once
    synchronized (the result is the list of tensors)."""
    op = resolve_op(op, average)
    return _grouped_handle("allreduce", tensors, True, name, op, prescale_factor,
                           postscale_factor, process_set)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    """In-place grouped reduction; returns the list of tensors."""
    return _h.synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                                   postscale_factor, process_set))


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    """Starts allgathers of a list of tensors as one unit."""
    return _grouped_handle("allgather", tensors, False, name, None, 1.0, 1.0, process_set)


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=global_process_set,
                                prescale_factor=1.0, postscale_factor=1.0):
    """Starts reducescatters of a list of tensors as one unit."""
    return _grouped_handle("reducescatter", tensors, False, name, op, prescale_factor,
                           postscale_factor, process_set)


# ---- allgather, broadcast, alltoall, reducescatter ---------------------------------

def submit_allgather(tensor, name, process_set):
    """Submits an allgather: (request, finish, keep). A 0-dim tensor goes as
    one row."""
    _h.check_tensor(tensor, "allgather", allow_bool=True)
    ps = _h.pset_id(process_set)
    src = _h.contiguous(tensor)
    if src.dim() == 0:
        src = src.reshape(1)
    req = _h.submit(_tcoll.submit, "allgather", _h.op_name("allgather", name, ps), _h.wire(src),
                    None, _h.code_of(src), tuple(src.shape), process_set=ps,
                    stream=_h.stream_of(src))
    return req, (lambda: _h.from_output(req, tensor.dtype)), (tensor, src)


def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts an allgather: every member's ``tensor`` concatenated along
    dimension 0 in rank order (first dimensions may differ)."""
    req, finish, keep = submit_allgather(tensor, name, process_set)
    return _h.register([req], finish, keep)


def submit_broadcast(tensor, in_place, root_rank, name, process_set):
    """Submits a broadcast: (request, finish, keep)."""
    _h.check_tensor(tensor, "broadcast", allow_bool=True)
    ps = _h.pset_id(process_set)
    if in_place:
        buf = _h.contiguous(tensor)
    else:
        buf = tensor.detach().clone(memory_format=torch.contiguous_format)
    req = _h.submit(_tcoll.submit, "broadcast", _h.op_name("broadcast", name, ps), _h.wire(buf),
                    None, _h.code_of(buf), tuple(buf.shape), root=int(root_rank),
                    process_set=ps, stream=_h.stream_of(buf))
    if in_place and buf is not tensor:
        def finish():
            tensor.detach().copy_(buf)
            return tensor
    elif in_place:
        def finish():
            return tensor
    else:
        def finish():
            return buf
    return req, finish, (tensor, buf)


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts a broadcast of root_rank's ``tensor`` (root_rank is a global
    rank, a member of the process set) into a new tensor."""
    req, finish, keep = submit_broadcast(tensor, False, root_rank, name, process_set)
    return _h.register([req], finish, keep)


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts an in-place broadcast: ``tensor`` takes root_rank's values."""
    req, finish, keep = submit_broadcast(tensor, True, root_rank, name, process_set)
    return _h.register([req], finish, keep)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """In-place broadcast; returns ``tensor`` (not differentiable)."""
    return _h.synchronize(broadcast_async_(tensor, root_rank, name, process_set))


def submit_alltoall(tensor, splits, name, process_set):
    """Submits an alltoall: (request, finish, keep); finish gives (output,
    received_splits)."""
    _h.check_tensor(tensor, "alltoall", allow_bool=True)
    ps = _h.pset_id(process_set)
    src = _h.contiguous(tensor)
    if src.dim() == 0:
        raise ValueError("alltoall: the tensor needs at least one dimension")
    split_list, splits_dtype = None, torch.int32
    if splits is not None:
        if isinstance(splits, torch.Tensor):
            if splits.dtype in (torch.int32, torch.int64):
                splits_dtype = splits.dtype
            split_list = [int(s) for s in splits.detach().cpu().reshape(-1).tolist()]
        else:
            split_list = [int(s) for s in splits]
    req = _h.submit(_tcoll.submit, "alltoall", _h.op_name("alltoall", name, ps), _h.wire(src),
                    None, _h.code_of(src), tuple(src.shape), splits=split_list, process_set=ps,
                    stream=_h.stream_of(src))

    def finish():
        return (_h.from_output(req, tensor.dtype),
                torch.tensor(req.splits(), dtype=splits_dtype))
    return req, finish, (tensor, src)


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Starts an alltoall: ``splits[j]`` rows of dimension 0 go to the j-th
    member (None: equal parts). synchronize() gives ``(output,
    received_splits)``, received_splits an int32 tensor."""
    req, finish, keep = submit_alltoall(tensor, splits, name, process_set)
    return _h.register([req], finish, keep)


def submit_reducescatter(tensor, name, op, process_set, prescale_factor, postscale_factor):
    """Submits a reducescatter: (request, finish, keep)."""
    _h.check_tensor(tensor, "reducescatter")
    ps = _h.pset_id(process_set)
    op = Average if op is None else op
    tc_op, post = reduce_args(op, [tensor.dtype], process_set, postscale_factor)
    src = _h.contiguous(tensor)
    req = _h.submit(_tcoll.submit, "reducescatter", _h.op_name("reducescatter", name, ps),
                    _h.wire(src), None, _h.code_of(src), tuple(src.shape), op=tc_op,
                    prescale=float(prescale_factor), postscale=post, process_set=ps,
                    stream=_h.stream_of(src))
    return req, (lambda: _h.from_output(req, tensor.dtype)), (tensor, src)


def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0):
    """Starts a reducescatter: the reduction of ``tensor`` across the
    members, of which each keeps its block of dimension 0 (rows split as
    evenly as possible, the first members one more)."""
    req, finish, keep = submit_reducescatter(tensor, name, op, process_set, prescale_factor,
                                             postscale_factor)
    return _h.register([req], finish, keep)


# ---- sparse ----------------------------------------------------------------------

def _sparse_op(op):
    """op for a sparse reduction, resolved (None is Average); refuses the
    ops a sum of allgathered entries cannot give."""
    op = Average if op is None else op
    if op == Adasum:
        raise NotImplementedError("Adasum is not supported by tcoll: use hvd.Average or hvd.Sum")
    if op not in (Sum, Average):
        name = {Min: "Min", Max: "Max", Product: "Product"}.get(op, repr(op))
        raise ValueError("sparse_allreduce_async: op %s has no sparse form (hvd.Sum or "
                         "hvd.Average; densify the tensor and allreduce it for others)" % name)
    return op


def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """Starts the reduction of a sparse COO tensor as Horovod does: every
    member's indices (one row per entry) and values are allgathered
    (``<name>.indices``, ``<name>.values``; without a name, from a counter).
    Returns a handle *function*: calling it waits and gives the sparse
    tensor of every member's entries concatenated in rank order, not
    coalesced (repeated indices add up), of ``tensor``'s shape; Average
    divides the values by the set's size (integer values: the coalesced
    sum divided, truncated toward zero, as the dense Average). Hybrid
    tensors (values with dimensions of their own) and members without
    entries are fine; the sparse and dense dimensions must agree. A dense
    tensor, another layout, bool values and ops other than Sum and Average
    are refused at once."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError("sparse_allreduce_async takes a torch.Tensor, not %s"
                        % type(tensor).__name__)
    if tensor.layout != torch.sparse_coo:
        raise ValueError("sparse_allreduce_async takes a sparse COO tensor, not a %s one (use "
                         "allreduce_async for dense tensors)" % tensor.layout)
    op = _sparse_op(op)
    src = tensor.detach()
    values = _h.check_tensor(src._values(), "sparse_allreduce_async")  # (nnz, *dense dims)
    indices = src._indices().t()  # (nnz, sparse_dim): one row per entry, to concatenate
    base = name if name is not None else _h.op_name("sparse_allreduce", None,
                                                     _h.pset_id(process_set))
    n = _h.pset_size(process_set)
    # the same order on every rank: indices, then values
    ri, fi, ki = submit_allgather(indices, base + ".indices", process_set)
    rv, fv, kv = submit_allgather(values, base + ".values", process_set)
    handle = _h.register([ri, rv], lambda: (fi(), fv()), (ki, kv))
    shape = src.shape

    def build(gathered):
        idx, vals = gathered
        idx = idx.t()
        if op == Average and vals.dtype.is_floating_point:
            vals = vals / n
        out = torch.sparse_coo_tensor(idx, vals, shape)
        if op == Average and not vals.dtype.is_floating_point:
            out = out.coalesce()
            out._values().div_(n, rounding_mode="trunc")
        return out
    return _h.FunctionHandle(handle, build)


# ---- join and barrier ---------------------------------------------------------------

def join(device=-1, process_set=global_process_set):
    """Says this rank has no more data: until every member has joined, the
    others' allreduces and reducescatters run without it (it adds zeros, or
    the op's identity). Blocks until every member joined; returns the rank
    that joined last. ``device`` is accepted for Horovod's signature and
    not needed: a joined rank's share is made by tcoll, in whatever memory
    the others' tensors are in."""
    del device
    req = _h.submit(_tcoll.join, process_set=_h.pset_id(process_set))
    _h.wait_requests([req])
    return int(req.last_joined())


def barrier(process_set=global_process_set):
    """Blocks until every member of the process set has called barrier (and
    this rank's earlier operations in the set have completed)."""
    req = _h.submit(_tcoll.barrier, process_set=_h.pset_id(process_set))
    _h.wait_requests([req])
