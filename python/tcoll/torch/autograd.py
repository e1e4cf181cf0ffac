"""tcoll.torch.autograd: the blocking collectives of horovod.torch, each a
torch.autograd.Function, so gradients flow through them with Horovod's
conventions:

* allreduce: the gradient is the allreduce of the output's gradient with
  the same op and scale factors (Average stays Average; Min, Max and
  Product too apply their op to the gradients, as Horovod does: not the
  exact derivative).
* allgather: the gradient is the Average allreduce of the output's
  gradient, of which this rank keeps the rows it contributed (Horovod
  0.28's convention; its earliest versions summed). The row counts come
  from the forward allgather itself, so the backward is one allreduce.
* broadcast: the Average allreduce of the gradient on the root rank, zeros
  on the others.
* alltoall: the alltoall of the gradient with the splits this rank
  received, sending each block back where it came from.
* reducescatter: the allgather of the gradient, multiplied by the set's
  size for Sum (not for Average), and by prescale * postscale.
* grouped_*: the same, member by member, as one group.

Each of these copies a non-contiguous input to a contiguous tensor first;
none modifies its input. ``compression`` (allreduce, reducescatter and
their grouped forms) compresses before and decompresses after, inside the
autograd graph.
"""

import torch

from . import handles as _h
from . import mpi_ops as _ops
from .basics import Average, Sum, global_process_set, rank
from .compression import Compression

__all__ = ["allreduce", "grouped_allreduce", "allgather", "grouped_allgather", "broadcast",
           "alltoall", "reducescatter", "grouped_reducescatter"]


def _run(submitted):
    req, finish, keep = submitted
    _h.wait_requests([req])
    return req, keep if finish is None else finish()


def _run_group(submitted):
    reqs, finish, _keep = submitted
    _h.wait_requests(reqs)
    return reqs, finish()


class _Allreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, prescale, postscale, process_set):
        ctx.args = (op, prescale, postscale, process_set)
        return _run(_ops.submit_allreduce(tensor, False, name, op, prescale, postscale,
                                          process_set))[1]

    @staticmethod
    def backward(ctx, grad):
        op, prescale, postscale, process_set = ctx.args
        return (allreduce(grad, op=op, prescale_factor=prescale, postscale_factor=postscale,
                          process_set=process_set), None, None, None, None, None)


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Reduces ``tensor`` across the process set (default op: Average) and
    returns the result as a new tensor; differentiable."""
    op = _ops.resolve_op(op, average)
    wire, cctx = compression.compress(tensor)
    out = _Allreduce.apply(wire, name, op, float(prescale_factor), float(postscale_factor),
                           process_set)
    return compression.decompress(out, cctx)


class _GroupedAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, prescale, postscale, process_set, *tensors):
        ctx.args = (op, prescale, postscale, process_set)
        names = _ops.member_names("allreduce", name, len(tensors), _h.pset_id(process_set))
        return tuple(_run_group(_ops.submit_grouped("allreduce", tensors, False, names, op,
                                                    prescale, postscale, process_set))[1])

    @staticmethod
    def backward(ctx, *grads):
        op, prescale, postscale, process_set = ctx.args
        reduced = grouped_allreduce(list(grads), op=op, prescale_factor=prescale,
                                    postscale_factor=postscale, process_set=process_set)
        return (None, None, None, None, None) + tuple(reduced)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set):
    """Reduces a list of tensors as one unit; returns a list of new tensors;
    differentiable."""
    op = _ops.resolve_op(op, average)
    pairs = [compression.compress(t) for t in tensors]
    outs = _GroupedAllreduce.apply(name, op, float(prescale_factor), float(postscale_factor),
                                   process_set, *[w for w, _ in pairs])
    return [compression.decompress(o, c) for o, (_, c) in zip(outs, pairs)]


def _my_rows(grad, splits, process_set, scalar):
    r = _h.pset_rank(process_set)
    offset = int(sum(splits[:r]))
    rows = grad.narrow(0, offset, int(splits[r]))
    return rows.reshape(()) if scalar else rows


class _Allgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, process_set):
        req, out = _run(_ops.submit_allgather(tensor, name, process_set))
        ctx.splits = req.splits()
        ctx.scalar = tensor.dim() == 0
        ctx.process_set = process_set
        return out

    @staticmethod
    def backward(ctx, grad):
        reduced = allreduce(grad, op=Average, process_set=ctx.process_set)
        return _my_rows(reduced, ctx.splits, ctx.process_set, ctx.scalar), None, None


def allgather(tensor, name=None, process_set=global_process_set):
    """Concatenates every member's ``tensor`` along dimension 0 in rank
    order (first dimensions may differ; a 0-dim tensor counts as one row);
    differentiable."""
    return _Allgather.apply(tensor, name, process_set)


class _GroupedAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        names = _ops.member_names("allgather", name, len(tensors), _h.pset_id(process_set))
        reqs, outs = _run_group(_ops.submit_grouped("allgather", tensors, False, names, None,
                                                    1.0, 1.0, process_set))
        ctx.splits = [r.splits() for r in reqs]
        ctx.scalars = [t.dim() == 0 for t in tensors]
        ctx.process_set = process_set
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        reduced = grouped_allreduce(list(grads), op=Average, process_set=ctx.process_set)
        return (None, None) + tuple(_my_rows(g, s, ctx.process_set, sc)
                                    for g, s, sc in zip(reduced, ctx.splits, ctx.scalars))


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """Allgathers a list of tensors as one unit; returns a list;
    differentiable."""
    return list(_GroupedAllgather.apply(name, process_set, *tensors))


class _Broadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return _run(_ops.submit_broadcast(tensor, False, root_rank, name, process_set))[1]

    @staticmethod
    def backward(ctx, grad):
        reduced = allreduce(grad, op=Average, process_set=ctx.process_set)
        if rank() != ctx.root_rank:
            reduced = torch.zeros_like(reduced)
        return reduced, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """Returns a new tensor with root_rank's ``tensor`` (root_rank: a global
    rank, a member of the set); differentiable."""
    return _Broadcast.apply(tensor, root_rank, name, process_set)


class _Alltoall(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        _req, (out, received) = _run(_ops.submit_alltoall(tensor, splits, name, process_set))
        ctx.received = received
        ctx.process_set = process_set
        ctx.mark_non_differentiable(received)
        return out, received

    @staticmethod
    def backward(ctx, grad, _grad_splits):
        back, _ = alltoall(grad, splits=ctx.received, process_set=ctx.process_set)
        return back, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Sends ``splits[j]`` rows of dimension 0 to the j-th member (None:
    equal parts) and returns the rows received, stacked in rank order. As
    in Horovod, with ``splits`` given the result is ``(tensor,
    received_splits)``, without it the tensor alone. Differentiable."""
    out, received = _Alltoall.apply(tensor, splits, name, process_set)
    return out if splits is None else (out, received)


def _scatter_grad(grad, op, prescale, postscale, process_set):
    factor = prescale * postscale
    if op == Sum:
        factor *= _h.pset_size(process_set)
    return grad * factor if factor != 1.0 else grad


class _Reducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale, postscale):
        ctx.args = (op, prescale, postscale, process_set)
        return _run(_ops.submit_reducescatter(tensor, name, op, process_set, prescale,
                                              postscale))[1]

    @staticmethod
    def backward(ctx, grad):
        op, prescale, postscale, process_set = ctx.args
        g = _scatter_grad(grad, op, prescale, postscale, process_set)
        return allgather(g, process_set=process_set), None, None, None, None, None


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """Reduces ``tensor`` across the members (default op: Average) and
    returns this rank's block of dimension 0 (rows split as evenly as
    possible, the first members one more); differentiable."""
    op = Average if op is None else op
    wire, cctx = compression.compress(tensor)
    out = _Reducescatter.apply(wire, name, op, process_set, float(prescale_factor),
                               float(postscale_factor))
    return compression.decompress(out, cctx)


class _GroupedReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, process_set, prescale, postscale, *tensors):
        ctx.args = (op, prescale, postscale, process_set)
        names = _ops.member_names("reducescatter", name, len(tensors), _h.pset_id(process_set))
        return tuple(_run_group(_ops.submit_grouped("reducescatter", tensors, False, names, op,
                                                    prescale, postscale, process_set))[1])

    @staticmethod
    def backward(ctx, *grads):
        op, prescale, postscale, process_set = ctx.args
        scaled = [_scatter_grad(g, op, prescale, postscale, process_set) for g in grads]
        return (None, None, None, None, None) + tuple(
            grouped_allgather(scaled, process_set=process_set))


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    """Reducescatters a list of tensors as one unit; returns a list;
    differentiable."""
    op = Average if op is None else op
    pairs = [compression.compress(t) for t in tensors]
    outs = _GroupedReducescatter.apply(name, op, process_set, float(prescale_factor),
                                       float(postscale_factor), *[w for w, _ in pairs])
    return [compression.decompress(o, c) for o, (_, c) in zip(outs, pairs)]
