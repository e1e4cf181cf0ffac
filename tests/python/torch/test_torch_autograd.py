"""tcoll.torch autograd: the gradient of each differentiable collective,
against the value Horovod's convention gives, computed here from every
rank's upstream gradient (each rank weighs the output differently, so the
ranks' gradients differ)."""

import torch

import tcoll.torch as hvd
from torch_helpers import assert_close, data, everyone


def _w(seed, r, shape):
    return data(seed, r, shape, torch.float64)


def _leaf(seed, shape):
    return data(seed, hvd.rank(), shape, torch.float64).requires_grad_()


def _mean(ts):
    return torch.stack(ts).mean(0)


def test_allreduce_grad_each_op_and_scale():
    n, r = hvd.size(), hvd.rank()
    for i, (op, pre, post) in enumerate([(hvd.Sum, 1.0, 1.0), (hvd.Average, 1.0, 1.0),
                                          (hvd.Sum, 2.0, 0.25), (hvd.Average, 3.0, 1.0)]):
        x = _leaf(i, (3, 2))
        y = hvd.allreduce(x, op=op, prescale_factor=pre, postscale_factor=post)
        (y * _w(100 + i, r, (3, 2))).sum().backward()
        ws = everyone(100 + i, (3, 2), torch.float64)
        exp = torch.stack(ws).sum(0) * pre * post
        if op == hvd.Average:
            exp = exp / n
        assert_close(x.grad, exp)


def test_allreduce_grad_with_fp16_compression():
    x = _leaf(5, (4,)).float().detach().requires_grad_()
    y = hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16)
    assert y.dtype == torch.float32
    y.sum().backward()
    assert x.grad.dtype == torch.float32
    assert torch.equal(x.grad, torch.full((4,), float(hvd.size())))


def test_grouped_allreduce_grad():
    r = hvd.rank()
    xs = [_leaf(10, (2,)), _leaf(11, (3, 1))]
    ys = hvd.grouped_allreduce(xs, op=hvd.Average)
    loss = (ys[0] * _w(110, r, (2,))).sum() + (ys[1] * _w(111, r, (3, 1))).sum()
    loss.backward()
    assert_close(xs[0].grad, _mean(everyone(110, (2,), torch.float64)))
    assert_close(xs[1].grad, _mean(everyone(111, (3, 1), torch.float64)))


def test_allgather_grad_is_average_of_my_rows():
    n, r = hvd.size(), hvd.rank()
    total = n * (n + 1) // 2
    x = _leaf(20, (r + 1, 2))
    y = hvd.allgather(x)
    assert y.shape == (total, 2)
    (y * _w(120, r, (total, 2))).sum().backward()
    start = r * (r + 1) // 2
    exp = _mean(everyone(120, (total, 2), torch.float64))[start:start + r + 1]
    assert_close(x.grad, exp)
    s = torch.tensor(float(r), dtype=torch.float64, requires_grad=True)
    hvd.allgather(s).sum().backward()
    assert s.grad.shape == () and s.grad.item() == 1.0


def test_grouped_allgather_grad():
    n, r = hvd.size(), hvd.rank()
    xs = [_leaf(21, (1, 3)), _leaf(22, (2,))]
    ys = hvd.grouped_allgather(xs)
    loss = (ys[0] * _w(121, r, (n, 3))).sum() + (ys[1] * _w(122, r, (2 * n,))).sum()
    loss.backward()
    assert_close(xs[0].grad, _mean(everyone(121, (n, 3), torch.float64))[r:r + 1])
    assert_close(xs[1].grad, _mean(everyone(122, (2 * n,), torch.float64))[2 * r:2 * r + 2])


def test_broadcast_grad_root_gets_average_others_zero():
    n, r = hvd.size(), hvd.rank()
    for root in range(n):
        x = _leaf(30 + root, (2, 2))
        y = hvd.broadcast(x, root)
        (y * _w(130 + root, r, (2, 2))).sum().backward()
        if r == root:
            assert_close(x.grad, _mean(everyone(130 + root, (2, 2), torch.float64)))
        else:
            assert torch.equal(x.grad, torch.zeros(2, 2, dtype=torch.float64))


def test_alltoall_grad_goes_back_where_rows_went():
    n, r = hvd.size(), hvd.rank()
    splits = [(r + j) % 2 + 1 for j in range(n)]  # rows rank r sends to rank j
    x = _leaf(40, (sum(splits), 2))
    y, received = hvd.alltoall(x, splits=splits)
    assert not received.requires_grad
    (y * _w(140, r, tuple(y.shape))).sum().backward()
    # rows r sent to rank j sit in j's output after the rows from ranks < r
    rows = []
    for j in range(n):
        recv_j = [(k + j) % 2 + 1 for k in range(n)]
        wj = _w(140, j, (sum(recv_j), 2))
        start = sum(recv_j[:r])
        rows.append(wj[start:start + recv_j[r]])
    assert_close(x.grad, torch.cat(rows))
    z = _leaf(41, (2 * n,))
    hvd.alltoall(z).sum().backward()
    assert torch.equal(z.grad, torch.ones(2 * n, dtype=torch.float64))


def test_reducescatter_grad_horovod_scaling():
    n, r = hvd.size(), hvd.rank()
    for i, (op, factor) in enumerate([(hvd.Sum, n), (hvd.Average, 1)]):
        x = _leaf(50 + i, (2 * n, 3))
        y = hvd.reducescatter(x, op=op)
        (y * _w(150 + i, r, (2, 3))).sum().backward()
        exp = torch.cat(everyone(150 + i, (2, 3), torch.float64)) * factor
        assert_close(x.grad, exp)
    x = _leaf(52, (n, 1))
    hvd.reducescatter(x, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5).sum().backward()
    assert torch.equal(x.grad, torch.full((n, 1), float(n), dtype=torch.float64))


def test_grouped_reducescatter_grad():
    n = hvd.size()
    xs = [_leaf(60, (n, 2)), _leaf(61, (2 * n,))]
    ys = hvd.grouped_reducescatter(xs, op=hvd.Average)
    (ys[0].sum() * 2 + ys[1].sum()).backward()
    assert torch.equal(xs[0].grad, torch.full((n, 2), 2.0, dtype=torch.float64))
    assert torch.equal(xs[1].grad, torch.ones(2 * n, dtype=torch.float64))


def test_chained_collectives_grad():
    # allreduce then allgather: the gradient passes through both
    n, r = hvd.size(), hvd.rank()
    x = _leaf(70, (1, 2))
    y = hvd.allgather(hvd.allreduce(x, op=hvd.Sum))
    (y * _w(170, r, (n, 2))).sum().backward()
    avg = _mean(everyone(170, (n, 2), torch.float64))
    # the allgather's backward gives every rank its row of the average; the
    # allreduce's backward sums those rows over the ranks
    assert_close(x.grad, avg.sum(0, keepdim=True))
