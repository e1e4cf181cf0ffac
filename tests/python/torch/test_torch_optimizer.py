"""tcoll.torch DistributedOptimizer on a tiny model: every rank trains on its
own batches and ends with the weights of one model trained here on the
average of every rank's gradients; gradients are submitted from hooks
while backprop is still running; backward_passes_per_step, compression,
gradient_predivide_factor, groups, sparse gradients, process sets and the
misuse errors."""

import warnings

import pytest
import torch
from torch import nn

import tcoll.torch as hvd
from torch_helpers import assert_same_object_everywhere


class Probe(torch.autograd.Function):
    """Identity whose backward calls a function: runs in the middle of
    backprop, after the layers above it got their gradients."""

    @staticmethod
    def forward(ctx, x, callback):
        ctx.callback = callback
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        ctx.callback()
        return g, None


class Net(nn.Module):
    def __init__(self, probe=None):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.fc2 = nn.Linear(6, 3)
        self.probe = probe

    def forward(self, x):
        h = self.fc1(x)
        if self.probe is not None:
            h = Probe.apply(h, self.probe)
        return self.fc2(torch.tanh(h))


def batch(step, r):
    g = torch.Generator().manual_seed(1000 * step + r)
    return (torch.randn(5, 4, generator=g, dtype=torch.float64),
            torch.randn(5, 3, generator=g, dtype=torch.float64))


def make_net(seed=0, **kw):
    torch.manual_seed(seed)
    return Net(**kw).double()


def loss_of(model, step, r):
    x, y = batch(step, r)
    return ((model(x) - y) ** 2).mean()


def reference(steps, opt_fn, passes=1, ranks=None, reduce="mean"):
    """The weights after training one model on the average (or sum) over
    the ranks of each rank's gradients."""
    ranks = list(range(hvd.size())) if ranks is None else ranks
    model = make_net()
    opt = opt_fn(model.parameters())
    for s in range(steps):
        total = [torch.zeros_like(p) for p in model.parameters()]
        for k in ranks:
            for j in range(passes):
                model.zero_grad()
                loss_of(model, s * passes + j, k).backward()
                for t, p in zip(total, model.parameters()):
                    t += p.grad
        for t, p in zip(total, model.parameters()):
            p.grad = t / len(ranks) if reduce == "mean" else t
        opt.step()
    return [p.detach() for p in model.parameters()]


def train(model, opt, steps, passes=1):
    for s in range(steps):
        opt.zero_grad()
        for j in range(passes):
            loss_of(model, s * passes + j, hvd.rank()).backward()
        opt.step()


def assert_same_everywhere(model, process_set=hvd.global_process_set):
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    rows = hvd.allgather(flat.unsqueeze(0), process_set=process_set)
    for row in rows:
        assert torch.equal(row, flat)


def assert_matches(model, ref, tol=1e-10):
    for p, q in zip(model.parameters(), ref):
        assert torch.allclose(p.detach(), q, rtol=tol, atol=tol), (p, q)


def sgd(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def test_weights_match_reference_and_agree():
    model = make_net(seed=hvd.rank() + 7)  # different initial weights on each rank
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)  # ... made equal
    if hvd.rank() == 0:
        assert all(torch.equal(p, q) for p, q in zip(model.parameters(),
                                                     make_net(seed=7).parameters()))
    model.load_state_dict(make_net().state_dict())  # the reference's start
    base = sgd(model.parameters())
    opt = hvd.DistributedOptimizer(base, named_parameters=model.named_parameters())
    assert isinstance(opt, torch.optim.SGD) and type(opt).__name__ == "SGD"
    assert opt.param_groups is base.param_groups and opt.state is base.state
    train(model, opt, 3)
    assert_same_everywhere(model)
    assert_matches(model, reference(3, sgd))


def test_gradients_are_submitted_during_backprop():
    seen = []
    model = make_net(probe=lambda: seen.append(_submitted(opt, model)))
    opt = hvd.DistributedOptimizer(sgd(model.parameters()),
                                   named_parameters=model.named_parameters())
    order = []
    for name, p in model.named_parameters():  # after the optimizer's hooks: runs after them
        acc = p.expand_as(p).grad_fn.next_functions[0][0]
        acc.register_hook(lambda *_, name=name: order.append((name, _submitted(opt, model))))
    opt.zero_grad()
    loss_of(model, 0, hvd.rank()).backward()
    # when backprop reached the probe (fc1's gradients not computed yet), fc2's
    # allreduces had been submitted already
    assert seen == [{"fc2.weight", "fc2.bias"}]
    last_name, at_last = order[-1]
    assert last_name.startswith("fc1")
    first_name, at_first = order[0]
    assert first_name.startswith("fc2") and first_name in at_first
    assert len(at_first) < 4  # submitted one by one, not all at the end
    opt.step()
    assert_same_everywhere(model)


def _submitted(opt, model):
    names = {p: n for n, p in model.named_parameters()}
    out = set()
    for key, (handle, _c, _w) in opt._handles.items():
        if handle is not None:
            out.update(names[p] for p in (key if isinstance(key, tuple) else (key,)))
    return out


def test_backward_passes_per_step():
    model = make_net()
    opt = hvd.DistributedOptimizer(sgd(model.parameters()),
                                   named_parameters=model.named_parameters(),
                                   backward_passes_per_step=2)
    train(model, opt, 2, passes=2)
    # the gradients of two passes add up locally, then are averaged over ranks
    assert_matches(model, reference(2, sgd, passes=2))
    assert_same_everywhere(model)
    opt.zero_grad()
    for j in range(2):
        loss_of(model, j, hvd.rank()).backward()
    with pytest.raises(AssertionError, match="backward_passes_per_step"):
        loss_of(model, 2, hvd.rank()).backward()
    opt.synchronize()  # drain what was submitted; the library goes on
    opt.set_backward_passes_per_step(1)
    with opt.skip_synchronize():
        opt.step()
    # The refused pass still added its gradient (autograd runs the hook after
    # accumulating) into a p.grad whose allreduce was in flight, as in
    # Horovod: that step's result may differ between ranks, and so may the
    # momentum it left in the optimizer's state, so start the next one from
    # rank 0's parameters and optimizer state.
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    opt.zero_grad()
    loss_of(model, 3, hvd.rank()).backward()
    opt.step()
    assert_same_everywhere(model)


def test_zero_grad_while_outstanding_and_skip_synchronize():
    model = make_net()
    opt = hvd.DistributedOptimizer(sgd(model.parameters()),
                                   named_parameters=model.named_parameters())
    loss_of(model, 0, hvd.rank()).backward()
    with pytest.raises(AssertionError, match="zero_grad"):
        opt.zero_grad()
    opt.synchronize()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with opt.skip_synchronize():
            opt.step()
    opt.zero_grad()
    assert_matches(model, reference(1, sgd))
    loss_of(model, 1, hvd.rank()).backward()
    opt.synchronize()
    with pytest.warns(UserWarning, match="skip_synchronize"):
        opt.step()  # after synchronize() without the context: works, warns
    assert_same_everywhere(model)


@pytest.mark.parametrize("kind", ["fp16", "predivide", "sum", "groups2", "groups_list",
                                  "unnamed", "adam"])
def test_options_match_reference(kind):
    model = make_net()
    opt_fn, kw, tol, red = sgd, {}, 1e-10, "mean"
    if kind == "fp16":
        kw, tol = {"compression": hvd.Compression.fp16}, 2e-3
    elif kind == "predivide":
        kw = {"gradient_predivide_factor": 4.0}
    elif kind == "sum":
        kw, red = {"op": hvd.Sum}, "sum"
    elif kind == "groups2":
        kw = {"groups": 2}
    elif kind == "groups_list":
        kw = {"groups": [[model.fc1.weight, model.fc2.bias]]}
    elif kind == "adam":
        opt_fn = lambda ps: torch.optim.Adam(ps, lr=0.01)  # noqa: E731
    named = None if kind == "unnamed" else model.named_parameters()
    opt = hvd.DistributedOptimizer(opt_fn(model.parameters()), named_parameters=named, **kw)
    train(model, opt, 2)
    assert_same_everywhere(model)
    assert_matches(model, reference(2, opt_fn, reduce=red), tol)


def test_parameter_missing_on_some_ranks():
    model = make_net()
    extra = nn.Linear(3, 3).double()
    params = list(model.named_parameters()) + [("extra." + n, p)
                                               for n, p in extra.named_parameters()]
    opt = hvd.DistributedOptimizer(torch.optim.SGD([p for _, p in params], lr=0.1),
                                   named_parameters=params)
    opt.zero_grad()
    out = model(batch(0, hvd.rank())[0])
    if hvd.rank() == 0:  # a dynamic graph: only rank 0 uses the extra layer
        out = extra(out)
    out.sum().backward()
    opt.step()  # the other ranks send zeros for the extra layer's gradients
    assert_same_everywhere(extra)
    assert_same_everywhere(model)


def test_sparse_gradients():
    n = hvd.size()
    for dense in (False, True):
        torch.manual_seed(3)
        emb = nn.Embedding(6, 2, sparse=True).double()
        start = emb.weight.detach().clone()
        opt = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=1.0),
                                       named_parameters=emb.named_parameters(),
                                       sparse_as_dense=dense)
        opt.zero_grad()
        emb(torch.tensor([hvd.rank() % 6, 5])).sum().backward()
        assert emb.weight.grad.is_sparse
        opt.step()
        exp = start.clone()
        for k in range(n):
            exp[k % 6] -= 1.0 / n
            exp[5] -= 1.0 / n
        assert torch.allclose(emb.weight.detach(), exp)
        assert_same_everywhere(emb)


def test_process_set_optimizer():
    n, r = hvd.size(), hvd.rank()
    members = list(range(min(2, n)))
    ps = hvd.add_process_set(members)
    try:
        model = make_net()
        opt = hvd.DistributedOptimizer(sgd(model.parameters()),
                                       named_parameters=model.named_parameters(),
                                       process_set=ps)
        train(model, opt, 2)
        if ps.included():
            assert_matches(model, reference(2, sgd, ranks=members))
            assert_same_everywhere(model, process_set=ps)
        else:  # outside the set: a plain local optimizer
            assert_matches(model, reference(2, sgd, ranks=[r]))
    finally:
        hvd.remove_process_set(ps)


def test_misuse_is_refused():
    model = make_net()
    params = list(model.named_parameters())
    with pytest.raises(ValueError, match="unique"):
        hvd.DistributedOptimizer(sgd(model.parameters()),
                                 named_parameters=[("w", params[0][1]), ("w", params[1][1]),
                                                   ("a", params[2][1]), ("b", params[3][1])])
    with pytest.raises(ValueError, match="not named"):
        hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=params[:2])
    with pytest.raises(ValueError, match="tuples"):
        hvd.DistributedOptimizer(sgd(model.parameters()),
                                 named_parameters=[p for _, p in params])
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(sgd(model.parameters()), backward_passes_per_step=0)
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(sgd(model.parameters()), op=hvd.Sum,
                                 gradient_predivide_factor=2.0)
    two_groups = torch.optim.SGD([{"params": [model.fc1.weight]},
                                  {"params": [model.fc2.weight, model.fc1.bias,
                                              model.fc2.bias]}], lr=0.1)
    with pytest.raises(ValueError, match="unique"):  # the same name in two parameter groups
        hvd.DistributedOptimizer(two_groups, named_parameters=[
            ("same", model.fc1.weight), ("same", model.fc2.weight), ("b1", model.fc1.bias),
            ("b2", model.fc2.bias)])


def test_predivide_factor_reaches_tcoll_as_scale_factors(monkeypatch):
    from tcoll.torch import optimizer as optmod
    seen = []
    real = optmod._ops.allreduce_async_

    def spy(*args, **kwargs):
        seen.append((kwargs["op"], kwargs["prescale_factor"], kwargs["postscale_factor"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(optmod._ops, "allreduce_async_", spy)
    model = make_net()
    opt = hvd.DistributedOptimizer(sgd(model.parameters()),
                                   named_parameters=model.named_parameters(),
                                   gradient_predivide_factor=4.0)
    train(model, opt, 1)
    assert seen and all(s == (hvd.Average, 0.25, 4.0) for s in seen)
    assert_matches(model, reference(1, sgd))


# ---- broadcast_optimizer_state: frozen parameters, missing gradients, groups ----------

def _grouped_opt(kind, model, r):
    """An optimizer of two parameter groups whose options differ on every
    rank (the root's must win)."""
    groups = [{"params": [model.fc1.weight, model.fc1.bias], "lr": 0.05 * (r + 1)},
              {"params": [model.fc2.weight, model.fc2.bias]}]
    if kind == "sgd":
        return torch.optim.SGD(groups, lr=0.01 * (r + 1), momentum=0.5 + 0.1 * r)
    return torch.optim.Adam(groups, lr=0.001 * (r + 1), betas=(0.8, 0.9 + r / 100))


def _local_steps(model, opt, count, r, fc2_only):
    """count local steps; fc2_only: only fc2 gets gradients (fc1.bias none)."""
    g = torch.Generator().manual_seed(50 + r)
    for _ in range(count):
        opt.zero_grad(set_to_none=True)
        if fc2_only:
            model.fc2(torch.randn(5, 6, generator=g, dtype=torch.float64)).sum().backward()
        else:
            model(torch.randn(5, 4, generator=g, dtype=torch.float64)).sum().backward()
        opt.step()


@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("stepped", ["root_partly", "others_only", "nobody", "everyone"])
def test_broadcast_optimizer_state_frozen_and_missing_gradients(kind, stepped):
    r, root = hvd.rank(), 0
    model = make_net()
    model.fc1.weight.requires_grad_(False)  # frozen: never a gradient, never state
    opt = _grouped_opt(kind, model, r)
    if stepped == "root_partly" and r == root:
        _local_steps(model, opt, 2, r, fc2_only=True)  # fc1.bias without a gradient
    elif stepped == "others_only" and r != root:
        _local_steps(model, opt, 1, r, fc2_only=False)
    elif stepped == "everyone":
        _local_steps(model, opt, r + 1, r, fc2_only=r % 2 == 0)
    wrapped = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    hvd.broadcast_optimizer_state(wrapped, root_rank=root)
    state = wrapped.state_dict()
    assert_same_object_everywhere(state)
    # the root's options (rank 0's values), in every group
    lrs = [g["lr"] for g in wrapped.param_groups]
    if kind == "sgd":
        assert lrs == [0.05, 0.01]
        assert [g["momentum"] for g in wrapped.param_groups] == [0.5, 0.5]
    else:
        assert lrs == [0.05, 0.001]
        assert [g["betas"] for g in wrapped.param_groups] == [(0.8, 0.9), (0.8, 0.9)]
    with_state = {"root_partly": {2, 3}, "others_only": set(), "nobody": set(),
                  "everyone": {2, 3}}[stepped]
    assert {k for k, v in state["state"].items() if v} == with_state
    assert 0 not in state["state"] or not state["state"][0]  # the frozen weight
    # the state is usable: a step from the same weights ends the same everywhere
    hvd.broadcast_parameters(model.state_dict(), root_rank=root)
    frozen = model.fc1.weight.detach().clone()
    train(model, wrapped, 1)
    assert torch.equal(model.fc1.weight, frozen)
    assert_same_everywhere(model)
    assert_same_object_everywhere(wrapped.state_dict())


def test_broadcast_optimizer_state_sparse_adam():
    r = hvd.rank()
    root = hvd.size() - 1  # not rank 0
    torch.manual_seed(4)
    embs = nn.ModuleList(nn.Embedding(8, 2, sparse=True) for _ in range(3)).double()
    embs[1].weight.requires_grad_(False)
    opt = torch.optim.SparseAdam([{"params": [embs[0].weight, embs[1].weight],
                                   "lr": 0.1 * (r + 1)},
                                  {"params": [embs[2].weight], "betas": (0.5, 0.9 + r / 100)}],
                                 lr=0.01 * (r + 1))
    if r == root:  # only the first embedding gets gradients: state for it alone
        for s in range(2):
            opt.zero_grad(set_to_none=True)
            embs[0](torch.tensor([s, 3])).sum().backward()
            opt.step()
    wrapped = hvd.DistributedOptimizer(opt, named_parameters=embs.named_parameters())
    hvd.broadcast_optimizer_state(wrapped, root_rank=root)
    assert_same_object_everywhere(wrapped.state_dict())
    assert [g["lr"] for g in wrapped.param_groups] == [0.1 * (root + 1), 0.01 * (root + 1)]
    assert wrapped.param_groups[1]["betas"] == (0.5, 0.9 + root / 100)
    assert set(wrapped.state_dict()["state"]) == {0}
    hvd.broadcast_parameters(embs.state_dict(), root_rank=root)
    frozen = embs[1].weight.detach().clone()
    for s in range(2):  # sparse gradients, reduced across the ranks
        wrapped.zero_grad(set_to_none=True)
        (embs[0](torch.tensor([r % 8, 5])).sum() + embs[2](torch.tensor([s])).sum()).backward()
        wrapped.step()
    assert torch.equal(embs[1].weight, frozen)
    assert_same_everywhere(embs)
    assert_same_object_everywhere(wrapped.state_dict())


def _in_arena(opt, p):
    """Whether p's gradient lies in the optimizer's shared gradient buffer."""
    if opt._arena is None or opt._arena[1] is None or p.grad is None:
        return False
    flat = opt._arena[1]
    lo = flat.data_ptr()
    return lo <= p.grad.data_ptr() < lo + flat.numel()


@pytest.mark.parametrize("set_to_none", [False, True])
def test_shared_gradients_same_weights_and_stay_shared(set_to_none):
    """Gradients moved into tcoll's shared buffer after the first step: the
    same weights bit for bit as without it, every rank the same, and the
    gradients stay in the buffer through zero_grad (zeroed in place)."""
    results = {}
    for shared in (False, True):
        model = make_net()
        opt = hvd.DistributedOptimizer(sgd(model.parameters()),
                                       named_parameters=model.named_parameters(),
                                       shared_gradients=shared)
        for s in range(4):
            opt.zero_grad(set_to_none=set_to_none)
            if shared and s > 0 and hvd.local_size() > 1:
                for p in model.parameters():
                    assert _in_arena(opt, p), "zero_grad let a shared gradient go"
                    assert torch.count_nonzero(p.grad) == 0
            loss_of(model, s, hvd.rank()).backward()
            opt.step()
        if shared and hvd.local_size() > 1:
            assert all(_in_arena(opt, p) for p in model.parameters())
        elif shared:
            assert not any(_in_arena(opt, p) for p in model.parameters())
        assert_same_everywhere(model)
        results[shared] = [p.detach().clone() for p in model.parameters()]
    for a, b in zip(results[False], results[True]):
        assert torch.equal(a, b)
    assert_matches(model, reference(4, sgd))


def test_shared_gradients_replaced_from_elsewhere():
    """A gradient replaced behind the optimizer's back (model.zero_grad with
    set_to_none) leaves the shared buffer and is still reduced right."""
    model = make_net()
    opt = hvd.DistributedOptimizer(sgd(model.parameters()),
                                   named_parameters=model.named_parameters())
    for s in range(3):
        model.zero_grad(set_to_none=True)
        loss_of(model, s, hvd.rank()).backward()
        opt.step()
    assert_same_everywhere(model)
    assert_matches(model, reference(3, sgd))
