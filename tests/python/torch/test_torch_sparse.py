"""tcoll.torch with sparse tensors, as Horovod: sparse_allreduce_async returns
a handle function whose call gives the reduction (every member's entries,
concatenated in rank order; Average divides the values by the set's
size), also with members without entries, hybrid tensors and process
sets, and refuses what has no sparse form at once; DistributedOptimizer
keeps nn.Embedding(sparse=True) gradients sparse (SparseAdam trains, with
weights equal on every rank and equal to a model trained here on the
reduced gradients), also with backward_passes_per_step, groups,
gradient_predivide_factor, sparse_as_dense and missing gradients."""

import pytest
import torch
from torch import nn

import tcoll.torch as hvd
from tcoll.torch import handles as hvd_handles
from tcoll.torch import optimizer as hvd_optimizer
from torch_helpers import assert_identical_on_ranks, sparse_data

# ---- sparse_allreduce_async ----------------------------------------------------------


def _nnz(seed, r):
    """Rank r's entry count: none on every third rank from rank 1."""
    return 0 if r % 3 == 1 else 3 + (seed + r) % 4


def _expected(seed, shape, sparse_dim, dtype, op, ranks):
    """The members' tensors, and the reference: their dense sum (divided
    for Average) computed here."""
    tensors = [sparse_data(seed, k, shape, sparse_dim, _nnz(seed, k), dtype) for k in ranks]
    total = sum(t.to_dense().to(torch.float64) for t in tensors)
    if op == hvd.Average:
        total = total / len(ranks)
    return tensors, total


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average])
@pytest.mark.parametrize("shape,sparse_dim", [((7,), 1), ((6, 5), 1), ((6, 5), 2),
                                              ((5, 4, 3), 1), ((4, 3, 2), 2)])
def test_handle_function_gives_the_reduction(op, shape, sparse_dim):
    r = hvd.rank()
    tensors, ref = _expected(11, shape, sparse_dim, torch.float64, op, range(hvd.size()))
    handle = hvd.sparse_allreduce_async(tensors[r], name="sp.%d.%s" % (sparse_dim, shape),
                                        op=op)
    assert callable(handle)
    out = handle()
    assert out.is_sparse and out.shape == torch.Size(shape) and out.dtype == torch.float64
    assert out.sparse_dim() == sparse_dim and out.dense_dim() == len(shape) - sparse_dim
    # Horovod's form: every member's entries in rank order, not summed up
    assert torch.equal(out._indices(), torch.cat([t._indices() for t in tensors], 1))
    scale = hvd.size() if op == hvd.Average else 1
    assert torch.equal(out._values(), torch.cat([t._values() for t in tensors]) / scale)
    assert torch.allclose(out.to_dense(), ref, rtol=1e-12, atol=1e-12)
    assert handle() is out  # calling again gives the same result
    assert_identical_on_ranks(out.to_dense())


def test_default_name_op_none_and_synchronize():
    r = hvd.rank()
    tensors, ref = _expected(12, (9, 2), 1, torch.float32, hvd.Average, range(hvd.size()))
    handles = [hvd.sparse_allreduce_async(tensors[r], None, None) for _ in range(3)]
    assert isinstance(hvd.poll(handles[0]), bool)
    outs = [hvd.synchronize(handles[0]), handles[1](), handles[2]()]
    assert hvd.poll(handles[0]) is True and hvd.synchronize(handles[0]) is outs[0]
    for out in outs:  # op=None is Average, as everywhere in tcoll.torch
        assert torch.allclose(out.to_dense().double(), ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int32,
                                   torch.int64])
def test_dtypes(dtype):
    r, n = hvd.rank(), hvd.size()
    for op in (hvd.Sum, hvd.Average):
        tensors, ref = _expected(13, (8, 3), 1, dtype, op, range(n))
        out = hvd.sparse_allreduce_async(tensors[r], "dt.%s.%s" % (dtype, op), op)()
        assert out.dtype == dtype
        if dtype.is_floating_point:
            assert torch.allclose(out.to_dense().double(), ref, rtol=2e-2, atol=2e-2)
        else:  # integer Average: the sum divided, truncated toward zero (as dense Average)
            sums = sum(t.to_dense() for t in tensors)
            exp = torch.div(sums, n, rounding_mode="trunc") if op == hvd.Average else sums
            assert torch.equal(out.to_dense(), exp)
        assert_identical_on_ranks(out.to_dense())


def test_members_without_entries():
    r, n = hvd.rank(), hvd.size()
    # no entries anywhere: an empty sparse tensor of the shape
    empty = torch.sparse_coo_tensor(torch.empty(2, 0, dtype=torch.int64),
                                    torch.empty(0, 3), (4, 5, 3))
    out = hvd.sparse_allreduce_async(empty, "empty.all", hvd.Average)()
    assert out.is_sparse and out.shape == (4, 5, 3) and out._nnz() == 0
    assert out.sparse_dim() == 2 and torch.equal(out.to_dense(), torch.zeros(4, 5, 3))
    # entries on rank 0 only
    mine = sparse_data(14, 0, (4, 5, 3), 2, 5, torch.float32) if r == 0 else empty
    out = hvd.sparse_allreduce_async(mine, "empty.some", hvd.Sum)()
    assert torch.equal(out.to_dense(), sparse_data(14, 0, (4, 5, 3), 2, 5,
                                                   torch.float32).to_dense())
    assert out._nnz() == 5
    # the last rank only (averaged over every member)
    mine = sparse_data(15, n - 1, (4, 5, 3), 2, 2, torch.float32) if r == n - 1 else empty
    out = hvd.sparse_allreduce_async(mine, "empty.last", hvd.Average)()
    exp = sparse_data(15, n - 1, (4, 5, 3), 2, 2, torch.float32).to_dense() / n
    assert torch.allclose(out.to_dense(), exp)
    assert_identical_on_ranks(out.to_dense())


def test_coalesced_and_autograd_inputs():
    r = hvd.rank()
    tensors, ref = _expected(16, (6, 4), 1, torch.float64, hvd.Sum, range(hvd.size()))
    mine = tensors[r].coalesce().requires_grad_()
    out = hvd.sparse_allreduce_async(mine, "coalesced", hvd.Sum)()
    assert not out.requires_grad
    assert torch.allclose(out.to_dense(), ref)


def test_process_sets():
    n, r = hvd.size(), hvd.rank()
    for members in ([0], list(range(min(2, n))), list(range(1, n)) or [0]):
        ps = hvd.add_process_set(members)
        try:
            if ps.included():
                tensors, ref = _expected(17, (10, 2), 1, torch.float64, hvd.Average, members)
                h = hvd.sparse_allreduce_async(tensors[members.index(r)], "ps", hvd.Average,
                                               process_set=ps)
                out = h()
                assert torch.allclose(out.to_dense(), ref)
                assert torch.equal(out._values(),
                                   torch.cat([t._values() for t in tensors]) / len(members))
                assert_identical_on_ranks(out.to_dense(), process_set=ps)
        finally:
            hvd.remove_process_set(ps)


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support")
def test_refused_at_once():
    t = sparse_data(18, hvd.rank(), (5, 2), 1, 3)
    with pytest.raises(ValueError, match="sparse COO"):
        hvd.sparse_allreduce_async(torch.ones(5, 2), "bad", hvd.Sum)
    with pytest.raises(ValueError, match="sparse COO"):
        hvd.sparse_allreduce_async(torch.ones(5, 2).to_sparse_csr(), "bad", hvd.Sum)
    with pytest.raises(TypeError):
        hvd.sparse_allreduce_async([1.0, 2.0], "bad", hvd.Sum)
    for op in (hvd.Min, hvd.Max, hvd.Product):
        with pytest.raises(ValueError, match="no sparse form"):
            hvd.sparse_allreduce_async(t, "bad", op)
    with pytest.raises(NotImplementedError, match="Adasum"):
        hvd.sparse_allreduce_async(t, "bad", hvd.Adasum)
    with pytest.raises(ValueError, match="bool"):
        hvd.sparse_allreduce_async(t.bool(), "bad", hvd.Sum)
    # the dense calls refuse sparse tensors, pointing to the sparse one
    with pytest.raises(ValueError, match="sparse_allreduce_async"):
        hvd.allreduce(t)
    with pytest.raises(ValueError, match="sparse_allreduce_async"):
        hvd.allreduce_async_(t)
    with pytest.raises(ValueError, match="sparse"):
        hvd.broadcast_(t, 0)
    with pytest.raises(ValueError, match="sparse"):
        hvd.broadcast_parameters({"emb": t}, root_rank=0)
    # nothing was submitted, no name was taken: the same calls work after
    out = hvd.sparse_allreduce_async(t, None, hvd.Sum)()
    assert_identical_on_ranks(out.to_dense())
    out = hvd.sparse_allreduce_async(t, "bad", hvd.Sum)()
    assert_identical_on_ranks(out.to_dense())


# ---- DistributedOptimizer with sparse gradients --------------------------------------


class Bag(nn.Module):
    """A sparse embedding (its gradients are sparse) and, optionally, a
    dense layer after it."""

    def __init__(self, dense=False):
        super().__init__()
        self.emb = nn.Embedding(12, 3, sparse=True)
        self.fc = nn.Linear(3, 1) if dense else None

    def forward(self, idx):
        h = self.emb(idx)
        return (self.fc(h) if self.fc is not None else h.sum(-1, keepdim=True)).squeeze(-1)


def make_bag(dense=False):
    torch.manual_seed(5)
    return Bag(dense).double()


def bag_loss(model, step, r, use_emb=True):
    g = torch.Generator().manual_seed(100 * step + r)
    idx = torch.randint(0, 12, (4,), generator=g)
    y = torch.randn(4, generator=g, dtype=torch.float64)
    if not use_emb:  # a step that leaves the embedding without a gradient
        return ((model.fc(torch.ones(4, 3, dtype=torch.float64)).squeeze(-1) - y) ** 2).mean()
    return ((model(idx) - y) ** 2).mean()


def sparse_adam(params):
    return torch.optim.SparseAdam(list(params), lr=0.1)


def sgd(params):
    return torch.optim.SGD(list(params), lr=0.2)


def reference(steps, opt_fn, ranks, passes=1, op=hvd.Average, dense=False, uses=None):
    """The weights after training one model here, each step on every
    member's gradients together: the sparse ones concatenated (divided by
    the member count for Average), the dense ones added (and divided)."""
    model = make_bag(dense)
    opt = opt_fn(model.parameters())
    scale = len(ranks) if op == hvd.Average else 1
    for s in range(steps):
        sparse, dense_sum = [], [torch.zeros_like(p) for p in model.parameters()]
        for k in ranks:
            model.zero_grad(set_to_none=True)
            for j in range(passes):
                use = True if uses is None else uses(s, k)
                bag_loss(model, s * passes + j, k, use).backward()
            for i, p in enumerate(model.parameters()):
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    sparse.append(p.grad)
                else:
                    dense_sum[i] += p.grad
        for i, p in enumerate(model.parameters()):
            if p is model.emb.weight:
                grads = sparse or [torch.sparse_coo_tensor(torch.empty(1, 0, dtype=torch.int64),
                                                          torch.empty(0, 3, dtype=p.dtype),
                                                          p.shape)]
                p.grad = torch.sparse_coo_tensor(torch.cat([g._indices() for g in grads], 1),
                                                 torch.cat([g._values() for g in grads]) / scale,
                                                 p.shape)
            else:
                p.grad = dense_sum[i] / scale
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def train(model, opt, steps, passes=1, uses=None):
    for s in range(steps):
        opt.zero_grad(set_to_none=True)
        for j in range(passes):
            use = True if uses is None else uses(s, hvd.rank())
            bag_loss(model, s * passes + j, hvd.rank(), use).backward()
        opt.step()


def check(model, ref, process_set=hvd.global_process_set, tol=1e-12):
    for p, q in zip(model.parameters(), ref):
        assert torch.allclose(p.detach(), q, rtol=tol, atol=tol), (p, q)
    assert_identical_on_ranks(torch.cat([p.detach().reshape(-1) for p in model.parameters()]),
                              process_set)


@pytest.mark.parametrize("kind", ["average", "sum", "passes", "predivide", "unnamed"])
def test_sparse_adam_trains(kind):
    model = make_bag()
    kw, passes, op = {}, 1, hvd.Average
    if kind == "sum":
        kw, op = {"op": hvd.Sum}, hvd.Sum
    elif kind == "passes":
        kw, passes = {"backward_passes_per_step": 2}, 2
    elif kind == "predivide":  # not applied to sparse gradients: the same average
        kw = {"gradient_predivide_factor": 2.0}
    named = None if kind == "unnamed" else model.named_parameters()
    opt = hvd.DistributedOptimizer(sparse_adam(model.parameters()), named_parameters=named,
                                   **kw)
    seen = []
    model.emb.weight.register_hook(lambda g: seen.append(g.is_sparse))
    train(model, opt, 3, passes)
    assert seen and all(seen)
    assert model.emb.weight.grad.is_sparse  # the reduced gradient, still sparse
    assert isinstance(opt, torch.optim.SparseAdam) and len(opt.state) == 1
    check(model, reference(3, sparse_adam, range(hvd.size()), passes, op))


def test_sparse_gradients_submitted_from_the_hook():
    model = make_bag(dense=True)
    opt = hvd.DistributedOptimizer(sgd(model.parameters()),
                                   named_parameters=model.named_parameters())
    opt.zero_grad()
    bag_loss(model, 0, hvd.rank()).backward()
    handle = opt._handles[model.emb.weight][0]
    assert isinstance(handle, hvd_handles.FunctionHandle)  # submitted, not left to step()
    opt.step()
    check(model, reference(1, sgd, range(hvd.size()), dense=True))


def test_sparse_as_dense(monkeypatch):
    model = make_bag()
    opt = hvd.DistributedOptimizer(sparse_adam(model.parameters()),
                                   named_parameters=model.named_parameters(),
                                   sparse_as_dense=True)
    submitted = []
    real = hvd_optimizer._ops.allreduce_async_

    def spy(tensor, *a, **kw):
        submitted.append(tensor.is_sparse)
        return real(tensor, *a, **kw)
    monkeypatch.setattr(hvd_optimizer._ops, "allreduce_async_", spy)
    train(model, opt, 3)
    assert submitted == [False] * 3  # an allreduce of the dense form
    assert model.emb.weight.grad.is_sparse  # sparse again for SparseAdam
    check(model, reference(3, sparse_adam, range(hvd.size())), tol=1e-10)


@pytest.mark.parametrize("groups", ["list", "int"])
def test_groups_with_sparse_and_dense_gradients(groups):
    model = make_bag(dense=True)
    g = [[model.emb.weight, model.fc.weight]] if groups == "list" else 1
    opt = hvd.DistributedOptimizer(sgd(model.parameters()),
                                   named_parameters=model.named_parameters(), groups=g)
    train(model, opt, 3)
    assert model.emb.weight.grad.is_sparse
    check(model, reference(3, sgd, range(hvd.size()), dense=True), tol=1e-10)


def test_sparse_gradient_missing_on_some_ranks():
    # step 0: every rank uses the embedding; step 1: rank 0 only (the others
    # send no entries under the same names); step 2: none does
    def uses(step, k):
        return step == 0 or (step == 1 and k == 0)
    model = make_bag(dense=True)
    opt = hvd.DistributedOptimizer(sgd(model.parameters()),
                                   named_parameters=model.named_parameters())
    train(model, opt, 3, uses=uses)
    check(model, reference(3, sgd, range(hvd.size()), dense=True, uses=uses), tol=1e-10)


def test_process_set_and_rank_counts():
    n, r = hvd.size(), hvd.rank()
    for count in (1, 2, 3):
        if count > n:
            continue
        members = list(range(n - count, n))  # the last ranks: not always rank 0
        ps = hvd.add_process_set(members)
        try:
            model = make_bag()
            opt = hvd.DistributedOptimizer(sparse_adam(model.parameters()),
                                           named_parameters=model.named_parameters(),
                                           process_set=ps)
            train(model, opt, 3)
            if ps.included():
                check(model, reference(3, sparse_adam, members), process_set=ps)
            else:  # outside the set: a local optimizer
                for p, q in zip(model.parameters(), reference(3, sparse_adam, [r])):
                    assert torch.allclose(p.detach(), q, rtol=1e-12, atol=1e-12)
        finally:
            hvd.remove_process_set(ps)


def test_op_without_sparse_form_is_refused():
    model = make_bag()
    opt = hvd.DistributedOptimizer(sgd(model.parameters()),
                                   named_parameters=model.named_parameters(), op=hvd.Max)
    opt.zero_grad()
    with pytest.raises(ValueError, match="sparse_as_dense"):
        bag_loss(model, 0, hvd.rank()).backward()
    assert not opt._handles or all(h is None for h, _c, _w in opt._handles.values())
