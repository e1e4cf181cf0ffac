"""Helpers of the tcoll.torch tests: per-rank data any rank can recompute,
so results are checked against values computed here, independently of
tcoll."""

import torch

import tcoll.torch as hvd

INT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
DTYPES = INT_DTYPES + FLOAT_DTYPES


def data(seed, r, shape, dtype, lo=-4, hi=4):
    """Rank r's tensor for a test: small integers (exact in every dtype and
    in small sums and products), the same wherever it is computed."""
    g = torch.Generator().manual_seed(seed * 7919 + r)
    if dtype == torch.uint8 or dtype == torch.bool:
        lo = 0
    t = torch.randint(lo, hi + 1, shape, generator=g)
    return t.bool() if dtype == torch.bool else t.to(dtype)


def everyone(seed, shape, dtype, ranks=None, **kw):
    """Every rank's tensor (of ranks, default all), in rank order."""
    ranks = range(hvd.size()) if ranks is None else ranks
    return [data(seed, r, shape, dtype, **kw) for r in ranks]


def reduce_ref(tensors, op):
    """The reduction computed here, in float64 (int64 for integers)."""
    wide = torch.float64 if tensors[0].dtype.is_floating_point else torch.int64
    stack = torch.stack([t.to(wide) for t in tensors])
    if op == hvd.Sum:
        return stack.sum(0)
    if op == hvd.Average:
        return stack.sum(0) / len(tensors)
    if op == hvd.Min:
        return stack.min(0).values
    if op == hvd.Max:
        return stack.max(0).values
    if op == hvd.Product:
        return stack.prod(0)
    raise AssertionError(op)


def tol(dtype):
    return {torch.float16: 1e-2, torch.bfloat16: 2e-2}.get(dtype, 1e-6)


def assert_close(actual, expected, dtype=None):
    dtype = dtype or actual.dtype
    assert tuple(actual.shape) == tuple(expected.shape), (actual.shape, expected.shape)
    a = actual.to(torch.float64)
    e = expected.to(torch.float64)
    if not dtype.is_floating_point and dtype != torch.bool:
        assert torch.equal(a, e), (actual, expected)
    else:
        assert torch.allclose(a, e, rtol=tol(dtype), atol=tol(dtype)), (actual, expected)


def sparse_data(seed, r, shape, sparse_dim, nnz, dtype=torch.float64):
    """Rank r's sparse COO tensor for a test: nnz entries (an index may come
    more than once) in the first sparse_dim dimensions of shape, the others
    dense (a hybrid tensor), small integer values; not coalesced."""
    g = torch.Generator().manual_seed(seed * 7919 + r)
    idx = torch.stack([torch.randint(0, shape[d], (nnz,), generator=g)
                       for d in range(sparse_dim)])
    vals = torch.randint(-4, 5, (nnz,) + tuple(shape[sparse_dim:]), generator=g).to(dtype)
    return torch.sparse_coo_tensor(idx, vals, shape)


def assert_identical_on_ranks(tensor, process_set=hvd.global_process_set):
    """Every member of process_set holds a tensor equal to this rank's
    (dense, compared through an allgather of the flattened values)."""
    flat = tensor.detach().reshape(1, -1)
    rows = hvd.allgather(flat, process_set=process_set)
    assert rows.shape[0] == process_set.size()
    for row in rows:
        assert torch.equal(row, flat[0]), (row, flat[0])


def assert_same_object_everywhere(obj, process_set=hvd.global_process_set):
    """Every member of process_set holds an object equal to this rank's:
    nested dicts, lists and tuples compared item by item, tensors with
    torch.equal (dtype and shape too)."""
    for other in hvd.allgather_object(obj, process_set=process_set):
        _assert_same(other, obj, "")


def _assert_same(a, b, where):
    if torch.is_tensor(b):
        assert torch.is_tensor(a) and a.dtype == b.dtype and torch.equal(a, b), where
    elif isinstance(b, dict):
        assert isinstance(a, dict) and a.keys() == b.keys(), where
        for k in b:
            _assert_same(a[k], b[k], "%s.%s" % (where, k))
    elif isinstance(b, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, "%s[%d]" % (where, i))
    else:
        assert a == b, (where, a, b)
