"""tcoll.torch.distributed._group: ProcessGroupTcoll, the process group
``dist.init_process_group("tcoll")`` and ``dist.new_group(...)`` make.

Each call of torch.distributed becomes one tcoll operation of the group's
process set (the global set for the default group, a process set of its
own for every group new_group makes), named by the group's call count
(_work.Names), so the ranks, which make the same calls in the same order,
give each the same name, and a disagreement between them (shapes, dtypes,
ops, roots) is a tcoll mismatch raised on every rank instead of a hang.

What the calls become:
* allreduce, allreduce_coalesced: tcoll allreduce, in place (grouped for
  coalesced); SUM, AVG, PRODUCT, MIN, MAX; other ReduceOps are refused.
* broadcast: tcoll broadcast, in place.
* allgather, _allgather_base (all_gather_into_tensor): tcoll allgather of
  the flattened input, copied into the outputs.
* reduce_scatter, _reduce_scatter_base (reduce_scatter_tensor): tcoll
  reducescatter of the inputs as rows (equal blocks); blocks of unequal
  sizes go through an allreduce of which each rank keeps its block.
* alltoall_base (all_to_all_single, with or without splits), alltoall
  (all_to_all): tcoll alltoall with splits.
* reduce: an allreduce into a copy, written into the root's tensor only.
* gather, scatter: a tcoll alltoall in which only the root receives (gather)
  or sends (scatter).
* barrier: tcoll barrier (after this rank's earlier calls of the group).
* send, recv: refused (RuntimeError); tcoll's engine matches collectives by
  name across a whole process set and has no point-to-point path.
"""

import torch
import torch.distributed as dist

from tcoll import _tcoll

from .. import handles as _h
from .. import mpi_ops as _ops
from ..basics import Average, Max, Min, Product, Sum
from ._work import Names, Work, done_work

__all__ = ["ProcessGroupTcoll"]

_ReduceOp = dist.ReduceOp
_OPS = (("SUM", Sum), ("AVG", Average), ("PRODUCT", Product), ("MIN", Min), ("MAX", Max))


def _op_name(op):
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        if hasattr(_ReduceOp, name) and op == getattr(_ReduceOp, name):
            return "ReduceOp." + name
    return repr(op)


def tcoll_op(opts, what):
    """The tcoll.torch op of a torch options object's reduceOp (SUM without
    options); ValueError for an op tcoll does not have."""
    op = getattr(opts, "reduceOp", None) if opts is not None else None
    if op is None:
        return Sum
    for name, ours in _OPS:
        if hasattr(_ReduceOp, name) and op == getattr(_ReduceOp, name):
            return ours
    raise ValueError("tcoll backend: %s with %s is not supported (tcoll reduces with "
                     "ReduceOp.SUM, AVG, PRODUCT, MIN and MAX)" % (what, _op_name(op)))


def _flat(t):
    """t as a contiguous 1-dim tensor (a copy only if t is not contiguous)."""
    return t.reshape(-1) if t.is_contiguous() else t.contiguous().reshape(-1)


def _check_list(tensors, what, n=1):
    if not isinstance(tensors, (list, tuple)) or len(tensors) != n:
        raise ValueError("tcoll backend: %s takes %d tensor%s per call here (one device per "
                         "process), got %s" % (what, n, "" if n == 1 else "s",
                                               len(tensors) if isinstance(tensors, (list, tuple))
                                               else type(tensors).__name__))
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError("tcoll backend: %s takes torch.Tensor, not %s"
                            % (what, type(t).__name__))
    return tensors


def _one_list(lists, what):
    """The one list of a list of lists (one device per process)."""
    if not isinstance(lists, (list, tuple)) or len(lists) != 1 or \
            not isinstance(lists[0], (list, tuple)):
        raise ValueError("tcoll backend: %s takes one list of tensors per call here (one "
                         "device per process)" % what)
    return list(lists[0])


def _check_same(outs, inp, what):
    for o in outs:
        if o.dtype != inp.dtype:
            raise ValueError("tcoll backend: %s: output dtype %s differs from input dtype %s"
                             % (what, o.dtype, inp.dtype))
        if o.device != inp.device:
            raise ValueError("tcoll backend: %s: output on %s, input on %s"
                             % (what, o.device, inp.device))


def _copy_into(dst, src, what):
    if dst.numel() != src.numel():
        raise ValueError("tcoll backend: %s: received %d elements for an output of %d"
                         % (what, src.numel(), dst.numel()))
    with torch.no_grad():
        dst.copy_(src.reshape(dst.shape))


def _split_into(outs, flat, what):
    sizes = [o.numel() for o in outs]
    if sum(sizes) != flat.numel():
        raise ValueError("tcoll backend: %s: received %d elements in all for outputs of %s "
                         "elements" % (what, flat.numel(), sizes))
    with torch.no_grad():
        for o, part in zip(outs, torch.split(flat, sizes)):
            o.copy_(part.reshape(o.shape))


class ProcessGroupTcoll(dist.ProcessGroup):
    """A torch.distributed process group whose collectives run on tcoll
    (see the module docstring). ``ranks`` are the global ranks of the
    group's members, in group-rank order; ``process_set`` is the tcoll.torch
    ProcessSet they run in."""

    def __init__(self, rank, size, ranks, process_set, group_id):
        super().__init__(rank, size)
        self._ranks = list(ranks)
        self._ps = process_set
        self._names = Names(group_id)

    # ---- identity ----------------------------------------------------------

    def getBackendName(self):  # noqa: N802 (torch's name)
        return "tcoll"

    def _get_backend_name(self):
        return "tcoll"

    @property
    def process_set(self):
        """The tcoll.torch ProcessSet of the group."""
        return self._ps

    def __repr__(self):
        return "ProcessGroupTcoll(rank=%d, size=%d, ranks=%s)" % (self.rank(), self.size(),
                                                                  self._ranks)

    # ---- plumbing ----------------------------------------------------------

    def _root(self, group_rank, what):
        if not 0 <= group_rank < len(self._ranks):
            raise ValueError("tcoll backend: %s: root %d is not a rank of this group of %d"
                             % (what, group_rank, len(self._ranks)))
        return self._ranks[group_rank]

    def _submit(self, what, result, submit, finish=None):
        """Names the call, submits it (submit(name) -> handle) and returns
        its Work; a call refused at once takes no name."""
        name = self._names.take()
        try:
            handle = submit(name)
        except BaseException:
            self._names.give_back(name)
            raise
        work = Work(handle, finish, result, what)
        self._names.hold(name, work)
        return work

    # ---- allreduce, broadcast ----------------------------------------------

    def allreduce(self, tensors, opts=None):
        (t,) = _check_list(tensors, "allreduce")
        op = tcoll_op(opts, "allreduce")
        return self._submit("allreduce", [t], lambda name: _ops.allreduce_async_(
            t, name=name, op=op, process_set=self._ps))

    def allreduce_coalesced(self, tensors, opts=None):
        tensors = list(tensors)
        _check_list(tensors, "allreduce_coalesced", len(tensors))
        op = tcoll_op(opts, "allreduce_coalesced")
        if not tensors:
            return done_work([], "allreduce_coalesced")
        return self._submit("allreduce_coalesced", tensors,
                            lambda name: _ops.grouped_allreduce_async_(
                                tensors, name=name, op=op, process_set=self._ps))

    def broadcast(self, tensors, opts=None):
        (t,) = _check_list(tensors, "broadcast")
        root = self._root(getattr(opts, "rootRank", 0) if opts is not None else 0, "broadcast")
        if opts is not None and getattr(opts, "rootTensor", 0) != 0:
            raise ValueError("tcoll backend: broadcast: rootTensor must be 0 (one tensor per "
                             "process)")
        return self._submit("broadcast", [t], lambda name: _ops.broadcast_async_(
            t, root, name=name, process_set=self._ps))

    def reduce(self, tensors, opts=None):
        (t,) = _check_list(tensors, "reduce")
        op = tcoll_op(opts, "reduce")
        root = self._root(getattr(opts, "rootRank", 0) if opts is not None else 0, "reduce")
        tmp = t.detach().clone(memory_format=torch.contiguous_format)
        mine = root == self._ranks[self.rank()]

        def finish(_out):
            if mine:
                with torch.no_grad():
                    t.copy_(tmp)
        return self._submit("reduce", [t], lambda name: _ops.allreduce_async_(
            tmp, name=name, op=op, process_set=self._ps), finish)

    # ---- allgather ------------------------------------------------------------

    def allgather(self, output_tensors, input_tensors, opts=None):
        (inp,) = _check_list(input_tensors, "allgather")
        outs = _one_list(output_tensors, "allgather")
        _check_list(outs, "allgather (outputs)", self.size())
        _check_same(outs, inp, "allgather")
        src = _flat(inp)
        return self._submit("allgather", outs, lambda name: _ops.allgather_async(
            src, name=name, process_set=self._ps),
            lambda out: _split_into(outs, out, "allgather"))

    def _allgather_base(self, output, input, opts=None):  # noqa: A002 (torch's name)
        _check_same([output], input, "all_gather_into_tensor")
        if output.numel() != input.numel() * self.size():
            raise ValueError("tcoll backend: all_gather_into_tensor: the output has %d elements, "
                             "not %d x %d" % (output.numel(), self.size(), input.numel()))
        src = _flat(input)
        return self._submit("all_gather_into_tensor", [output],
                            lambda name: _ops.allgather_async(src, name=name,
                                                              process_set=self._ps),
                            lambda out: _copy_into(output, out, "all_gather_into_tensor"))

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        works = [self.allgather([outs], [inp]) for outs, inp in zip(output_lists, input_list)]
        return _Joined(works, [t for outs in output_lists for t in outs], "allgather_coalesced")

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        works = [self._allgather_base(o, i) for o, i in zip(outputs, inputs)]
        return _Joined(works, list(outputs), "allgather_into_tensor_coalesced")

    # ---- reducescatter --------------------------------------------------------

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        (out,) = _check_list(output_tensors, "reduce_scatter")
        ins = _one_list(input_tensors, "reduce_scatter")
        n = self.size()
        _check_list(ins, "reduce_scatter (inputs)", n)
        _check_same(ins, out, "reduce_scatter")
        op = tcoll_op(opts, "reduce_scatter")
        m = out.numel()
        if all(t.numel() == m for t in ins):
            rows = torch.stack([t.reshape(-1) for t in ins]) if m else \
                out.new_empty((n, 0))
            return self._reduce_rows(out, rows, op, "reduce_scatter")
        # blocks of different sizes: an allreduce of them all, of which this
        # rank keeps its block
        flat = torch.cat([t.reshape(-1) for t in ins])
        start = sum(t.numel() for t in ins[:self.rank()])
        mine = ins[self.rank()].numel()
        if mine != m:
            raise ValueError("tcoll backend: reduce_scatter: this rank's block has %d elements, "
                             "its output %d" % (mine, m))
        return self._submit("reduce_scatter", [out], lambda name: _ops.allreduce_async_(
            flat, name=name, op=op, process_set=self._ps),
            lambda _o: _copy_into(out, flat[start:start + m], "reduce_scatter"))

    def _reduce_scatter_base(self, output, input, opts=None):  # noqa: A002 (torch's name)
        _check_same([output], input, "reduce_scatter_tensor")
        n = self.size()
        if input.numel() != output.numel() * n:
            raise ValueError("tcoll backend: reduce_scatter_tensor: the input has %d elements, "
                             "not %d x %d" % (input.numel(), n, output.numel()))
        op = tcoll_op(opts, "reduce_scatter_tensor")
        return self._reduce_rows(output, _flat(input).reshape(n, -1), op,
                                 "reduce_scatter_tensor")

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        works = [self._reduce_scatter_base(o, i, opts) for o, i in zip(outputs, inputs)]
        return _Joined(works, list(outputs), "reduce_scatter_tensor_coalesced")

    def _reduce_rows(self, out, rows, op, what):
        return self._submit(what, [out], lambda name: _ops.reducescatter_async(
            rows, name=name, op=op, process_set=self._ps),
            lambda res: _copy_into(out, res, what))

    # ---- alltoall, gather, scatter ------------------------------------------------

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes,  # noqa: A002
                      opts=None):
        _check_same([output], input, "all_to_all_single")
        n = self.size()
        if input.dim() == 0 or output.dim() == 0:
            raise ValueError("tcoll backend: all_to_all_single needs tensors of at least one "
                             "dimension")
        in_splits = [int(s) for s in (input_split_sizes or [])]
        out_splits = [int(s) for s in (output_split_sizes or [])]
        for what, splits, t in (("input", in_splits, input), ("output", out_splits, output)):
            if splits and (len(splits) != n or sum(splits) != t.shape[0] or min(splits) < 0):
                raise ValueError("tcoll backend: all_to_all_single: %s_split_sizes %s must have "
                                 "%d non-negative entries adding up to the %s's first "
                                 "dimension %d" % (what, splits, n, what, t.shape[0]))
            if not splits and t.shape[0] % n:
                raise ValueError("tcoll backend: all_to_all_single: without %s_split_sizes the "
                                 "%s's first dimension (%d) must divide by the group size %d"
                                 % (what, what, t.shape[0], n))
        src = input if input.is_contiguous() else input.contiguous()

        def finish(res):
            recv, got = res
            got = [int(s) for s in got.tolist()]
            if out_splits and got != out_splits:
                raise ValueError("tcoll backend: all_to_all_single: received splits %s, "
                                 "output_split_sizes %s" % (got, out_splits))
            _copy_into(output, recv, "all_to_all_single")
        return self._submit("all_to_all_single", [output], lambda name: _ops.alltoall_async(
            src, splits=in_splits or None, name=name, process_set=self._ps), finish)

    def alltoall(self, output_tensors, input_tensors, opts=None):
        n = self.size()
        outs, ins = list(output_tensors), list(input_tensors)
        _check_list(outs, "all_to_all (outputs)", n)
        _check_list(ins, "all_to_all (inputs)", n)
        _check_same(outs + ins[1:], ins[0], "all_to_all")
        src = torch.cat([t.reshape(-1) for t in ins])
        splits = [t.numel() for t in ins]
        return self._submit("all_to_all", outs, lambda name: _ops.alltoall_async(
            src, splits=splits, name=name, process_set=self._ps),
            lambda res: _split_into(outs, res[0], "all_to_all"))

    def gather(self, output_tensors, input_tensors, opts=None):
        (inp,) = _check_list(input_tensors, "gather")
        root = getattr(opts, "rootRank", 0) if opts is not None else 0
        self._root(root, "gather")
        n, me = self.size(), self.rank()
        outs = []
        if me == root:
            outs = _one_list(output_tensors, "gather")
            _check_list(outs, "gather (outputs)", n)
            _check_same(outs, inp, "gather")
        elif output_tensors and any(len(o) for o in output_tensors):
            raise ValueError("tcoll backend: gather: only the root (rank %d) passes outputs"
                             % root)
        src = _flat(inp)
        splits = [0] * n
        splits[root] = src.numel()
        return self._submit("gather", outs, lambda name: _ops.alltoall_async(
            src, splits=splits, name=name, process_set=self._ps),
            (lambda res: _split_into(outs, res[0], "gather")) if me == root else None)

    def scatter(self, output_tensors, input_tensors, opts=None):
        (out,) = _check_list(output_tensors, "scatter")
        root = getattr(opts, "rootRank", 0) if opts is not None else 0
        self._root(root, "scatter")
        n = self.size()
        if self.rank() == root:
            ins = _one_list(input_tensors, "scatter")
            _check_list(ins, "scatter (inputs)", n)
            _check_same(ins, out, "scatter")
            src = torch.cat([t.reshape(-1) for t in ins])
            splits = [t.numel() for t in ins]
        else:
            if input_tensors and any(len(i) for i in input_tensors):
                raise ValueError("tcoll backend: scatter: only the root (rank %d) passes "
                                 "inputs" % root)
            src = out.new_empty((0,))
            splits = [0] * n
        return self._submit("scatter", [out], lambda name: _ops.alltoall_async(
            src, splits=splits, name=name, process_set=self._ps),
            lambda res: _copy_into(out, res[0], "scatter"))

    # ---- barrier, point to point ------------------------------------------------

    def barrier(self, opts=None):
        ps = _h.pset_id(self._ps)

        def submit(_name):
            return _h.register([_h.submit(_tcoll.barrier, process_set=ps)], None, None)
        return self._submit("barrier", [], submit)

    def _start_coalescing(self, *args):
        """torch's coalescing context (2.x _coalescing_manager): the calls
        inside it run as they come (tcoll fuses small allreduces itself)."""

    def _end_coalescing(self, *args):
        return done_work([], "coalescing")

    def _no_p2p(self, *args, **kwargs):
        raise RuntimeError("tcoll backend: send/recv are not supported (tcoll runs collectives "
                           "of a whole group); for point-to-point use a group of another "
                           "backend, e.g. dist.new_group(backend='gloo')")

    send = recv = recv_anysource = _no_p2p


class _Joined(Work):
    """Several works seen as one (the coalesced calls)."""

    def __init__(self, works, result, what):
        super().__init__(None, None, result, what)
        self._works = works
        self._done = False

    def _run(self):
        """Completes every work; the first error."""
        errors = [w.complete() for w in self._works]
        return next((e for e in errors if e is not None), None)

    def _ready(self):
        return self._done or all(w._ready() for w in self._works)
