"""tcoll.torch.optimizer: Horovod's DistributedOptimizer over tcoll.

``DistributedOptimizer(optimizer, ...)`` returns an optimizer of a subclass
of ``optimizer``'s own class (same name; ``isinstance`` still holds) that
shares ``optimizer``'s parameter groups, defaults and state (use the
returned one from then on). It registers a hook on each parameter's
gradient accumulator (the AccumulateGrad node), which runs as soon as
backprop has accumulated that parameter's gradient and submits its
allreduce at once, in place on ``p.grad``, asynchronously: communication
overlaps the rest of the backward pass. ``step()`` first synchronizes every
outstanding allreduce (submitting those whose gradients never came, with
zeros, so every rank submits the same names), then runs the wrapped
optimizer's step.

Names: each gradient is ``allreduce.<parameter name>`` from
``named_parameters``; without it, ``allreduce.noname.<group>.<index>`` by
the parameter's place in the parameter groups (the same on every rank).
Names must be unique (ValueError), and when ``named_parameters`` is given
every parameter of the optimizer must be in it (ValueError).

Average runs as tcoll's average with prescale ``1/gradient_predivide_factor``
and postscale ``gradient_predivide_factor`` (so the sum of the prescaled
gradients is divided by the set's size, then multiplied back), as Horovod
splits it. ``backward_passes_per_step=k`` accumulates k backward passes
locally and submits on the k-th; a (k+1)-th before ``step()`` raises
AssertionError, and so does ``zero_grad()`` while allreduces are
outstanding. ``groups`` (or the deprecated ``num_groups``): an int n
splits the parameters (in name order) into n groups; a list of lists of
parameters groups those (others go alone); each group is submitted as one
grouped allreduce once all its gradients are in. ``op=Adasum`` raises
NotImplementedError.

Sparse gradients (``nn.Embedding(..., sparse=True)``, for
``torch.optim.SparseAdam`` and the like) stay sparse, as in Horovod: from
the same hook, each is reduced by ``sparse_allreduce_async`` (allgathers of
its indices and values, ``allgather.<name>.indices`` and ``.values``), and
``p.grad`` becomes the sparse result, not coalesced; in a group they go on
their own, the group's dense gradients together. That path applies no
compression and no ``gradient_predivide_factor`` (the average is the
same), and takes only Sum and Average (another op raises ValueError from
the hook: use ``sparse_as_dense``). ``backward_passes_per_step`` works as
for dense gradients (autograd adds up the sparse gradients locally).
``sparse_as_dense=True`` densifies them for the allreduce (compression and
scale factors as for dense ones) and makes the result sparse again before
the step. A rank on which a parameter got no gradient sends zeros under
the same names, or no entries for a parameter whose gradient was sparse
before; at a parameter's first reduction a rank cannot know that, so a
gradient sparse on some ranks and missing on others then goes under other
names on each (tcoll's stall check reports it; Horovod has the same limit).

Shared gradients (``shared_gradients=True``, the default; tcoll's own, not
Horovod's): after the first ``synchronize()``, the dense CPU gradients are
moved, values and all, into one buffer of memory the node's ranks can map
(``tc_mem_alloc``), each ``p.grad`` a view of it, 64-byte aligned. Autograd
accumulates into an existing ``.grad`` in place, so the gradients stay
there, and from then on the direct allreduce inside a node reads the other
ranks' gradients with loads instead of ``process_vm_readv`` (``cma,
mapped``); small ones fuse through a shared fusion buffer alike. To keep
them there, ``zero_grad()`` zeroes those gradients in place (they are zero
tensors afterwards, not None, whatever ``set_to_none`` says; for the step
this changes nothing, since every trainable parameter gets a gradient at
each synchronize). A gradient replaced from elsewhere (``model.zero_grad()``
with ``set_to_none``, an assignment) simply leaves the buffer: still
reduced, through the usual path. Sparse and GPU gradients, and jobs with
one rank per node, never use it. ``shared_gradients=False`` turns it off.
"""

import warnings
from contextlib import contextmanager

import torch

from tcoll import _tcoll

from . import handles as _h
from . import mpi_ops as _ops
from .basics import Adasum, Average, Max, Min, Product, Sum, global_process_set
from .compression import Compression

__all__ = ["DistributedOptimizer"]


class _DistributedOptimizer:
    """The methods a DistributedOptimizer adds to the wrapped optimizer's
    class (placed before it in the MRO)."""

    def _tc_setup(self, named_parameters, compression, backward_passes_per_step, op,
                  gradient_predivide_factor, groups, sparse_as_dense, process_set,
                  shared_gradients=True):
        self._arena_wanted = bool(shared_gradients)
        self._arena = None  # (SharedBuffer, its uint8 tensor, {param: view})
        self._compression = compression
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        self.process_set = process_set
        all_params = [p for g in self.param_groups for p in g["params"]]
        if named_parameters is not None:
            named = list(named_parameters)
            if any(not isinstance(x, tuple) for x in named):
                raise ValueError("named_parameters should be a sequence of tuples (name, "
                                 "parameter), usually produced by model.named_parameters().")
            seen, dups = set(), set()
            for k, _ in named:
                (dups if k in seen else seen).add(k)
            if dups:
                raise ValueError("Parameter names in named_parameters must be unique. Found "
                                 "duplicates: %s" % ", ".join(sorted(dups)))
            named_ids = {id(v) for _, v in named}
            unnamed = [p for p in all_params if id(p) not in named_ids]
            if unnamed:
                raise ValueError("named_parameters was specified, but one or more model "
                                 "parameters were not named. Python object ids: %s"
                                 % ", ".join(str(id(p)) for p in unnamed))
            self._parameter_names = {v: k for k, v in named}
        else:
            self._parameter_names = {p: "noname.%d.%d" % (i, j)
                                     for i, g in enumerate(self.param_groups)
                                     for j, p in enumerate(g["params"])}
        self.backward_passes_per_step = backward_passes_per_step
        self._allreduce_delay = {p: backward_passes_per_step for p in all_params}
        self._handles = {}    # param, or group tuple -> (handle, ctxs, wires)
        self._group_ready = {}  # group tuple -> params whose gradients are in
        self._grad_accs = []
        self._requires_update = []
        self._sparse_dims = {}  # param -> sparse_dim of its gradients, once one was sparse
        self._synchronized = False
        self._should_synchronize = True
        self._groups, self._p_to_group = self._make_groups(groups, all_params)
        if process_set.included():
            self._register_hooks()

    def _make_groups(self, groups, all_params):
        if groups is None or (isinstance(groups, int) and groups == 0):
            return None, {}
        trainable = [p for p in all_params if p.requires_grad]
        if isinstance(groups, int):
            if groups < 0:
                raise ValueError("groups must be a non-negative integer or a list of lists of "
                                 "parameters")
            ordered = sorted(trainable, key=lambda p: self._parameter_names[p])
            n = min(groups, len(ordered)) or 1
            size, extra = divmod(len(ordered), n)
            made, start = [], 0
            for i in range(n):
                end = start + size + (1 if i < extra else 0)
                made.append(tuple(ordered[start:end]))
                start = end
        else:
            known = {id(p) for p in all_params}
            made = []
            for g in groups:
                members = tuple(g)
                if any(not isinstance(p, torch.Tensor) or id(p) not in known for p in members):
                    raise ValueError("groups must hold parameters of this optimizer")
                made.append(members)
        made = [g for g in made if len(g) > 1]
        p_to_group = {}
        for g in made:
            for p in g:
                if p in p_to_group:
                    raise ValueError("a parameter is in more than one group")
                p_to_group[p] = g
        return made, p_to_group

    def _register_hooks(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    self._requires_update.append(p)
                    accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
                    accumulator.register_hook(self._make_hook(p))
                    self._grad_accs.append(accumulator)

    def _make_hook(self, p):
        def hook(*_ignored):
            if self._allreduce_delay[p] <= 0:
                raise AssertionError("Gradients were computed more than "
                                     "backward_passes_per_step times before call to step(). "
                                     "Increase backward_passes_per_step to accumulate "
                                     "gradients locally.")
            assert not p.grad.requires_grad
            self._allreduce_delay[p] -= 1
            if self._allreduce_delay[p] > 0:
                self._handles.setdefault(p, (None, None, None))
                return
            group = self._p_to_group.get(p)
            if group is None:
                self._handles[p] = self._submit((p,))
                return
            ready = self._group_ready.setdefault(group, set())
            ready.add(p)
            self._handles.setdefault(p, (None, None, None))
            if len(ready) == len(group):
                self._submit_group(group)
        return hook

    def _scales(self):
        if self.op == Average:
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _sparse_grad(self, p):
        """The sparse gradient of p to allgather, or None when p's gradient
        goes through an allreduce (dense, or sparse_as_dense). Remembers
        which parameters have sparse gradients: a rank where such a
        parameter got no gradient sends no entries (the others allgather
        too), and with sparse_as_dense its reduced gradient is made sparse
        again."""
        grad = p.grad
        if grad is not None and grad.is_sparse:
            self._sparse_dims[p] = grad.sparse_dim()
        if self.sparse_as_dense:
            return None
        if grad is None and p in self._sparse_dims:
            sparse_dim = self._sparse_dims[p]
            grad = torch.sparse_coo_tensor(
                torch.empty((sparse_dim, 0), dtype=torch.int64, device=p.device),
                torch.empty((0,) + tuple(p.shape[sparse_dim:]), dtype=p.dtype, device=p.device),
                p.shape)
        if grad is None or not grad.is_sparse:
            return None
        if self.op not in (Sum, Average):
            op = {Min: "Min", Max: "Max", Product: "Product"}.get(self.op, repr(self.op))
            raise ValueError("DistributedOptimizer: the gradient of %s is sparse, and op=hvd.%s "
                             "has no sparse form: use op=hvd.Average or hvd.Sum, or "
                             "sparse_as_dense=True" % (self._parameter_names[p], op))
        return grad

    def _submit_sparse(self, p, grad):
        """Submits the allgathers of a sparse gradient (Horovod's way: no
        compression, and gradient_predivide_factor is not applied, which
        gives the same average)."""
        handle = _ops.sparse_allreduce_async(grad, self._parameter_names[p], self.op,
                                             self.process_set)
        return handle, [None], [None]

    def _wire_grad(self, p):
        if p.grad is None:
            # Another rank may have this gradient (a dynamic graph): every
            # rank must submit the same names, so send zeros.
            p.grad = torch.zeros_like(p, memory_format=torch.contiguous_format)
        grad = p.grad
        if grad.is_sparse:  # sparse_as_dense (else _sparse_grad took it)
            grad = grad.to_dense()
        return self._compression.compress(grad)

    def _submit(self, params):
        """Submits the reduction of one parameter's gradient: (handle, ctxs,
        wires)."""
        p = params[0]
        grad = self._sparse_grad(p)
        if grad is not None:
            return self._submit_sparse(p, grad)
        wire, ctx = self._wire_grad(p)
        pre, post = self._scales()
        handle = _ops.allreduce_async_(wire, name=self._parameter_names[p], op=self.op,
                                       prescale_factor=pre, postscale_factor=post,
                                       process_set=self.process_set)
        return handle, [ctx], [wire]

    def _submit_group(self, group):
        """Submits a group's dense gradients as one grouped allreduce; its
        sparse gradients go on their own (allgathers)."""
        for p in group:
            self._handles.pop(p, None)
        self._group_ready.pop(group, None)
        dense = []
        for p in group:
            grad = self._sparse_grad(p)
            if grad is None:
                dense.append(p)
            else:
                self._handles[p] = self._submit_sparse(p, grad)
        if not dense:
            return
        dense = tuple(dense)
        pairs = [self._wire_grad(p) for p in dense]
        wires = [w for w, _ in pairs]
        names = ["allreduce." + self._parameter_names[p] for p in dense]
        pre, post = self._scales()
        reqs, finish, keep = _ops.submit_grouped("allreduce", wires, True, names, self.op, pre,
                                                 post, self.process_set)
        self._handles[dense] = (_h.register(reqs, finish, keep), [c for _, c in pairs], wires)

    def synchronize(self):
        """Waits for every gradient's allreduce (submitting the ones not
        submitted yet) and puts the results in ``p.grad``."""
        if not self.process_set.included():
            self._synchronized = True
            return
        covered = set()
        for key, entry in self._handles.items():
            if entry[0] is not None:
                covered.update(key if isinstance(key, tuple) else (key,))
        for p in self._requires_update:
            if p in covered:
                continue
            group = self._p_to_group.get(p)
            if group is None:
                self._handles[p] = self._submit((p,))
            else:
                self._submit_group(group)
            covered.update(group or (p,))
        first = None
        for key, (handle, ctxs, wires) in list(self._handles.items()):
            params = key if isinstance(key, tuple) else (key,)
            try:
                out = _h.synchronize(handle)
            except Exception as e:  # synchronize every handle before raising
                if first is None:
                    first = e
                continue
            outs = out if isinstance(key, tuple) else [out]
            for p, o, ctx, wire in zip(params, outs, ctxs, wires):
                if wire is None:  # a sparse gradient, allgathered
                    p.grad = o
                    continue
                result = self._compression.decompress(o, ctx)
                if self.sparse_as_dense and p in self._sparse_dims:  # sparse again for the step
                    p.grad = result.to_sparse(self._sparse_dims[p])
                    continue
                if result is p.grad:
                    continue
                if p.grad.is_sparse or p.grad.shape != result.shape:
                    p.grad = result
                else:
                    p.grad.copy_(result)
        self._handles.clear()
        self._group_ready.clear()
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step
        self._synchronized = True
        if first is not None:
            raise first
        if self._arena_wanted and self._arena is None:
            self._arena_attach()

    def _arena_attach(self):
        """Once: moves the dense CPU gradients into one buffer the node's
        ranks can map (see the module docstring), values and all."""
        self._arena = (None, None, {})
        if _tcoll.local_size() < 2:
            return
        layout, total = [], 0
        for p in self._requires_update:
            g = p.grad
            if (g is None or g.is_sparse or g.device.type != "cpu" or not g.is_contiguous()
                    or g.numel() == 0 or p in self._sparse_dims or g.shape != p.shape):
                continue
            total = (total + 63) // 64 * 64
            layout.append((p, total, g.numel() * g.element_size()))
            total += layout[-1][2]
        if total == 0:
            return
        try:
            buf = _tcoll.mem_alloc(total)
        except Exception as e:  # no shared memory: the usual path, said once
            warnings.warn("tcoll.torch: gradients stay in private memory (%s)" % e)
            return
        flat = torch.frombuffer(buf, dtype=torch.uint8)
        views = {}
        for p, off, nbytes in layout:
            view = flat[off:off + nbytes].view(p.grad.dtype).view(p.grad.shape)
            view.copy_(p.grad)
            p.grad = view
            views[p] = view
        self._arena = (buf, flat, views)

    def _arena_kept(self):
        """The parameters whose gradient is still their view of the buffer."""
        views = self._arena[2] if self._arena is not None else {}
        return [(p, v) for p, v in views.items()
                if p.grad is not None and p.grad.data_ptr() == v.data_ptr()]

    @contextmanager
    def skip_synchronize(self):
        """A context in which step() does not synchronize (for a step after
        an explicit synchronize(), e.g. to clip gradients in between)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        """Synchronizes the gradients (unless in skip_synchronize()), then
        runs the wrapped optimizer's step."""
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() "
                              "context after optimizer.synchronize(). This can cause training "
                              "slowdown. You may want to consider using "
                              "optimizer.skip_synchronize() context if you use "
                              "optimizer.synchronize() in your code.")
            self.synchronize()
        self._synchronized = False
        return super().step(closure)

    def zero_grad(self, *args, **kwargs):
        """The wrapped zero_grad; AssertionError while allreduces are
        outstanding (it would race with them)."""
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but "
                                 "before optimizer.step() or optimizer.synchronize(). This is "
                                 "prohibited as it can cause a race condition.")
        kept = self._arena_kept()
        for _, v in kept:
            v.zero_()
        result = super().zero_grad(*args, **kwargs)
        for p, v in kept:  # set_to_none would have let them go: they stay, zeroed
            if p.grad is None:
                p.grad = v
        return result

    def set_backward_passes_per_step(self, passes):
        """Changes backward_passes_per_step (resetting the local counts)."""
        if passes <= 0:
            raise ValueError("backward_passes_per_step must be > 0")
        self.backward_passes_per_step = passes
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = passes


_classes = {}


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         process_set=global_process_set, shared_gradients=True):
    """Wraps a torch.optim.Optimizer so that gradients are averaged (op)
    across the process set before each step; see the module docstring."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError("DistributedOptimizer wraps a torch.optim.Optimizer, not %s"
                        % type(optimizer).__name__)
    if op == Adasum:
        raise NotImplementedError("Adasum is not supported by tcoll: use hvd.Average or hvd.Sum")
    if op not in _ops._OPS:
        raise ValueError("unknown reduction op %r" % (op,))
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if num_groups != 0:
        warnings.warn("Parameter `num_groups` has been replaced by `groups`",
                      DeprecationWarning, stacklevel=2)
        if groups is None:
            groups = num_groups
    if backward_passes_per_step <= 0:
        raise ValueError("backward_passes_per_step must be > 0")
    base = optimizer.__class__
    if isinstance(optimizer, _DistributedOptimizer):
        raise ValueError("the optimizer is already a DistributedOptimizer")
    cls = _classes.get(base)
    if cls is None:
        cls = type(base.__name__, (_DistributedOptimizer, base),
                   {"__module__": __name__,
                    "__doc__": "%s with its gradients reduced across ranks by tcoll "
                               "(tcoll.torch.DistributedOptimizer)." % base.__name__})
        _classes[base] = cls
    wrapped = cls.__new__(cls)
    wrapped.__dict__.update(optimizer.__dict__)
    wrapped._tc_setup(named_parameters, compression, backward_passes_per_step, op,
                      float(gradient_predivide_factor), groups, sparse_as_dense, process_set,
                      shared_gradients)
    return wrapped
