"""tcoll.torch collectives: every collective x dtype (x op), against values
computed here from every rank's data, and against mpi4py and
torch.distributed (Gloo)."""

import numpy as np
import pytest
import torch

import tcoll.torch as hvd
from torch_helpers import DTYPES, assert_close, data, everyone, reduce_ref

OPS = [hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product]


def _expected_reduce(seed, shape, dtype, op, **kw):
    ref = reduce_ref(everyone(seed, shape, dtype, **kw), op)
    if op == hvd.Average and not dtype.is_floating_point:
        ref = torch.trunc(ref.to(torch.float64)).to(torch.int64)  # Sum scaled by 1/n, truncated
    return ref


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_allreduce_every_op(dtype):
    n = hvd.size()
    for i, op in enumerate(OPS):
        lo, hi = (-2, 2) if op == hvd.Product else (-4, 4)
        if dtype in (torch.uint8, torch.int8) and op == hvd.Product and n > 2:
            lo, hi = (0 if dtype == torch.uint8 else -1), 1
        x = data(i, hvd.rank(), (3, 5), dtype, lo, hi)
        out = hvd.allreduce(x, op=op, name="ar.%s.%d" % (dtype, i))
        assert out.dtype == dtype and out.shape == x.shape
        exp = _expected_reduce(i, (3, 5), dtype, op, lo=lo, hi=hi)
        if dtype == torch.uint8 and op in (hvd.Sum,):
            exp = exp % 256
        assert_close(out, exp, dtype)
        assert torch.equal(x, data(i, hvd.rank(), (3, 5), dtype, lo, hi))  # input untouched
    assert n >= 1


def test_allreduce_default_is_average_and_average_kwarg():
    x = data(1, hvd.rank(), (4,), torch.float32)
    exp = reduce_ref(everyone(1, (4,), torch.float32), hvd.Average)
    assert_close(hvd.allreduce(x), exp)
    with pytest.warns(DeprecationWarning):
        assert_close(hvd.allreduce(x, average=True), exp)
    with pytest.warns(DeprecationWarning):
        assert_close(hvd.allreduce(x, average=False),
                     reduce_ref(everyone(1, (4,), torch.float32), hvd.Sum))
    with pytest.raises(ValueError):
        hvd.allreduce(x, average=True, op=hvd.Sum)


def test_allreduce_scale_factors():
    n = hvd.size()
    for dtype in (torch.float32, torch.float64, torch.int32):
        x = data(2, hvd.rank(), (6,), dtype)
        out = hvd.allreduce(x, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5)
        assert_close(out, reduce_ref(everyone(2, (6,), dtype), hvd.Sum))
    x = data(3, hvd.rank(), (6,), torch.float64)
    out = hvd.allreduce(x, op=hvd.Average, prescale_factor=3.0, postscale_factor=0.25)
    assert_close(out, reduce_ref(everyone(3, (6,), torch.float64), hvd.Sum) * 0.75 / n)


def test_allreduce_against_gloo_and_mpi(gloo, comm):
    from mpi4py import MPI
    x = torch.randn(64, generator=torch.Generator().manual_seed(hvd.rank()))
    for op, dop, mop in [(hvd.Sum, gloo.ReduceOp.SUM, MPI.SUM),
                         (hvd.Min, gloo.ReduceOp.MIN, MPI.MIN),
                         (hvd.Max, gloo.ReduceOp.MAX, MPI.MAX),
                         (hvd.Product, gloo.ReduceOp.PRODUCT, MPI.PROD)]:
        ours = hvd.allreduce(x, op=op)
        theirs = x.clone()
        gloo.all_reduce(theirs, op=dop)
        mpi = np.empty(64, dtype=np.float32)
        comm.Allreduce(x.numpy(), mpi, op=mop)
        assert torch.allclose(ours, theirs, rtol=1e-5, atol=1e-6)
        assert torch.allclose(ours, torch.from_numpy(mpi), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_allreduce_in_place_and_non_contiguous(dtype):
    x = data(4, hvd.rank(), (4, 6), dtype)
    exp = reduce_ref(everyone(4, (4, 6), dtype), hvd.Max)
    y = x.clone()
    assert hvd.allreduce_(y, op=hvd.Max) is y
    assert_close(y, exp, dtype)
    # a transposed (non-contiguous) tensor: the result lands in it, in place
    t = x.clone().t()
    assert not t.is_contiguous()
    h = hvd.allreduce_async_(t, op=hvd.Max, name="inplace.noncontig")
    assert hvd.synchronize(h) is t
    assert_close(t, exp.t(), dtype)
    # out of place from a non-contiguous input
    assert_close(hvd.allreduce(x.t(), op=hvd.Max), exp.t(), dtype)


def test_allreduce_scalar_and_empty():
    s = torch.tensor(float(hvd.rank() + 1))
    assert_close(hvd.allreduce(s, op=hvd.Sum), torch.tensor(hvd.size() * (hvd.size() + 1) / 2))
    e = torch.empty(0, 3)
    assert hvd.allreduce(e, op=hvd.Sum).shape == (0, 3)


@pytest.mark.parametrize("dtype", DTYPES + [torch.bool], ids=str)
def test_allgather_uneven(dtype):
    n, r = hvd.size(), hvd.rank()
    x = data(5, r, (r + 1, 3), dtype)
    out = hvd.allgather(x)
    exp = torch.cat([data(5, k, (k + 1, 3), dtype) for k in range(n)])
    assert out.dtype == dtype
    assert_close(out, exp, dtype)
    # a 0-dim tensor counts as one row
    s = hvd.allgather(torch.tensor(r, dtype=torch.int64) if dtype != torch.bool
                      else torch.tensor(r % 2 == 0))
    assert s.shape == (n,)


def test_allgather_against_gloo(gloo):
    x = torch.randn(3, 2, generator=torch.Generator().manual_seed(10 + hvd.rank()))
    theirs = [torch.empty(3, 2) for _ in range(hvd.size())]
    gloo.all_gather(theirs, x)
    assert torch.equal(hvd.allgather(x), torch.cat(theirs))


def test_grouped_allgather():
    n, r = hvd.size(), hvd.rank()
    xs = [data(6, r, (r + 1,), torch.int32), data(7, r, (2, 2), torch.float64)]
    outs = hvd.grouped_allgather(xs, name="gag")
    assert_close(outs[0], torch.cat([data(6, k, (k + 1,), torch.int32) for k in range(n)]))
    assert_close(outs[1], torch.cat(everyone(7, (2, 2), torch.float64)))
    outs2 = hvd.synchronize(hvd.grouped_allgather_async(xs))
    assert all(torch.equal(a, b) for a, b in zip(outs, outs2))


@pytest.mark.parametrize("dtype", DTYPES + [torch.bool], ids=str)
def test_broadcast_every_root(dtype):
    n, r = hvd.size(), hvd.rank()
    for root in range(n):
        x = data(8 + root, r, (2, 3), dtype)
        exp = data(8 + root, root, (2, 3), dtype)
        out = hvd.broadcast(x, root)
        assert_close(out, exp, dtype)
        assert torch.equal(x, data(8 + root, r, (2, 3), dtype))  # not in place
        y = x.clone()
        assert hvd.broadcast_(y, root, name="bc_.%d" % root) is y
        assert_close(y, exp, dtype)
        z = x.clone().t()
        assert hvd.synchronize(hvd.broadcast_async_(z, root)) is z
        assert_close(z, exp.t(), dtype)
        assert_close(hvd.synchronize(hvd.broadcast_async(x, root)), exp, dtype)


def test_broadcast_against_gloo(gloo):
    x = torch.randn(5, generator=torch.Generator().manual_seed(20 + hvd.rank()))
    root = hvd.size() - 1
    theirs = x.clone()
    gloo.broadcast(theirs, src=root)
    assert torch.equal(hvd.broadcast(x, root), theirs)


@pytest.mark.parametrize("dtype", DTYPES + [torch.bool], ids=str)
def test_alltoall(dtype):
    n, r = hvd.size(), hvd.rank()
    # uneven splits: rank r sends (r + j) % 3 rows to rank j
    splits = [(r + j) % 3 for j in range(n)]
    x = data(30, r, (sum(splits), 2), dtype)
    out, received = hvd.alltoall(x, splits=splits)
    assert received.dtype == torch.int32
    exp_rows, exp_splits = [], []
    for k in range(n):
        ks = [(k + j) % 3 for j in range(n)]
        kx = data(30, k, (sum(ks), 2), dtype)
        start = sum(ks[:r])
        exp_rows.append(kx[start:start + ks[r]])
        exp_splits.append(ks[r])
    assert received.tolist() == exp_splits
    assert_close(out, torch.cat(exp_rows), dtype)
    # equal parts without splits: the tensor alone, as in Horovod
    y = data(31, r, (2 * n, 3), dtype)
    out = hvd.alltoall(y)
    assert isinstance(out, torch.Tensor)
    assert_close(out, torch.cat([data(31, k, (2 * n, 3), dtype)[2 * r:2 * r + 2]
                                 for k in range(n)]), dtype)
    out2, rs = hvd.synchronize(hvd.alltoall_async(y, splits=torch.tensor([2] * n)))
    assert torch.equal(out, out2) and rs.tolist() == [2] * n


def test_alltoall_against_mpi(comm):
    n, r = hvd.size(), hvd.rank()
    splits = [j + 1 for j in range(n)]
    x = torch.arange(sum(splits), dtype=torch.float64) + 100 * r
    out, received = hvd.alltoall(x, splits=splits)
    recv_counts = [r + 1] * n
    buf = np.empty(sum(recv_counts))
    comm.Alltoallv([x.numpy(), splits], [buf, recv_counts])
    assert received.tolist() == recv_counts
    assert np.array_equal(out.numpy(), buf)


def _my_block(rows, n, r):
    base, extra = divmod(rows, n)
    start = r * base + min(r, extra)
    return start, base + (1 if r < extra else 0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_reducescatter_every_op(dtype):
    n, r = hvd.size(), hvd.rank()
    rows = 2 * n + 1  # uneven: the first rank gets one more row
    start, count = _my_block(rows, n, r)
    for i, op in enumerate(OPS):
        lo, hi = (-1, 1) if op == hvd.Product else (-4, 4)
        x = data(40 + i, r, (rows, 2), dtype, lo, hi)
        out = hvd.reducescatter(x, op=op)
        exp = _expected_reduce(40 + i, (rows, 2), dtype, op, lo=lo, hi=hi)
        if dtype == torch.uint8 and op == hvd.Sum:
            exp = exp % 256
        assert_close(out, exp[start:start + count], dtype)


def test_reducescatter_default_average_scales_and_mpi(comm):
    from mpi4py import MPI
    n, r = hvd.size(), hvd.rank()
    x = data(50, r, (2 * n, 3), torch.float64)
    exp = reduce_ref(everyone(50, (2 * n, 3), torch.float64), hvd.Sum)
    out = hvd.reducescatter(x)
    assert_close(out, exp[2 * r:2 * r + 2] / n)
    out = hvd.synchronize(hvd.reducescatter_async(x, op=hvd.Sum, prescale_factor=0.5,
                                                  postscale_factor=3.0))
    assert_close(out, exp[2 * r:2 * r + 2] * 1.5)
    buf = np.empty((2, 3))
    comm.Reduce_scatter(x.numpy(), buf, recvcounts=[6] * n, op=MPI.SUM)
    assert np.allclose(hvd.reducescatter(x, op=hvd.Sum).numpy(), buf)


def test_grouped_allreduce_and_reducescatter():
    n, r = hvd.size(), hvd.rank()
    xs = [data(60, r, (3,), torch.float32), data(61, r, (2, 2), torch.int32),
          data(62, r, (n, 2), torch.float64)]
    outs = hvd.grouped_allreduce(xs, op=hvd.Sum)
    for i, (o, x) in enumerate(zip(outs, xs)):
        assert_close(o, reduce_ref(everyone(60 + i, tuple(x.shape), x.dtype), hvd.Sum))
    avg = hvd.grouped_allreduce(xs)  # Average: the integer member is a truncated Sum / n
    assert_close(avg[0], reduce_ref(everyone(60, (3,), torch.float32), hvd.Average))
    ys = [x.clone() for x in xs]
    assert hvd.grouped_allreduce_(ys, op=hvd.Max) is not None
    for i, y in enumerate(ys):
        assert_close(y, reduce_ref(everyone(60 + i, tuple(xs[i].shape), xs[i].dtype), hvd.Max))
    ys = [x.clone() for x in xs]
    res = hvd.synchronize(hvd.grouped_allreduce_async_(ys, op=hvd.Min, name="gar_"))
    assert all(a is b for a, b in zip(res, ys))
    res = hvd.synchronize(hvd.grouped_allreduce_async(xs, op=hvd.Sum))
    assert all(torch.equal(a, b) for a, b in zip(res, outs))
    rs = hvd.grouped_reducescatter([xs[2], xs[2] * 2], op=hvd.Sum)
    exp = reduce_ref(everyone(62, (n, 2), torch.float64), hvd.Sum)[r:r + 1]
    assert_close(rs[0], exp)
    assert_close(rs[1], exp * 2)
    rs2 = hvd.synchronize(hvd.grouped_reducescatter_async([xs[2]], op=hvd.Sum))
    assert_close(rs2[0], exp)


def test_compression_fp16():
    x = data(70, hvd.rank(), (8,), torch.float32)
    out = hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16)
    assert out.dtype == torch.float32
    assert_close(out, reduce_ref(everyone(70, (8,), torch.float32), hvd.Sum))
    w, ctx = hvd.Compression.fp16.compress(x)
    assert w.dtype == torch.float16
    assert hvd.Compression.fp16.decompress(w, ctx).dtype == torch.float32
    i = torch.ones(2, dtype=torch.int32)
    assert hvd.Compression.fp16.compress(i)[0] is i
    rs = hvd.reducescatter(torch.ones(hvd.size(), 2), op=hvd.Sum,
                           compression=hvd.Compression.fp16)
    assert rs.dtype == torch.float32 and torch.equal(rs, torch.full((1, 2), hvd.size() * 1.0))


def test_join_and_barrier():
    hvd.barrier()
    last = hvd.join()
    assert 0 <= last < hvd.size()
    assert hvd.allgather(torch.tensor([last])).unique().numel() == 1
    # a rank with data allreduces while a joined one adds zeros
    if hvd.rank() == 0:
        out = hvd.allreduce(torch.ones(3), op=hvd.Sum, name="join.uneven")
        assert torch.equal(out, torch.ones(3))
        assert hvd.join() == 0
    else:
        assert hvd.join() == 0


def test_sparse_allreduce():
    n, r = hvd.size(), hvd.rank()
    idx = torch.tensor([[r, (r + 1) % 4]])
    vals = torch.tensor([1.0, 2.0])
    sp = torch.sparse_coo_tensor(idx, vals, (4,))
    out = hvd.synchronize(hvd.sparse_allreduce_async(sp, name="sp", op=hvd.Sum))
    exp = torch.zeros(4)
    for k in range(n):
        exp[k % 4] += 1.0
        exp[(k + 1) % 4] += 2.0
    assert torch.allclose(out.to_dense(), exp)
