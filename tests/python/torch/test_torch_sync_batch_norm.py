"""tcoll.torch SyncBatchNorm: the output, input gradient and running
statistics of every rank are those of one BatchNorm over the concatenation
of every rank's batch (uneven batches, one of them possibly empty)."""

import pytest
import torch
from torch import nn

import tcoll.torch as hvd


def _batch(r, shape_rest, seed):
    g = torch.Generator().manual_seed(seed * 100 + r)
    rows = r % 3 + 1 if hvd.size() > 1 else 3
    return torch.randn((rows,) + shape_rest, generator=g, dtype=torch.float64) * (r + 1) + r


def _upstream(r, shape, seed):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed * 100 + 50 + r),
                       dtype=torch.float64)


@pytest.mark.parametrize("shape_rest,ref_cls", [((4,), nn.BatchNorm1d),
                                                ((4, 5), nn.BatchNorm1d),
                                                ((4, 3, 2), nn.BatchNorm2d)])
def test_matches_batch_norm_of_all_batches(shape_rest, ref_cls):
    n, r = hvd.size(), hvd.rank()
    seed = len(shape_rest)
    sbn = hvd.SyncBatchNorm(4).double()
    ref = ref_cls(4).double()
    with torch.no_grad():
        for m in (sbn, ref):
            m.weight.copy_(torch.linspace(0.5, 2.0, 4))
            m.bias.copy_(torch.linspace(-1.0, 1.0, 4))
    xs = [_batch(k, shape_rest, seed).requires_grad_() for k in range(n)]
    x = xs[r].detach().clone().requires_grad_()
    y = sbn(x)
    (y * _upstream(r, tuple(y.shape), seed)).sum().backward()
    y_all = ref(torch.cat(xs))
    loss = sum((y_k * _upstream(k, tuple(y_k.shape), seed)).sum()
               for k, y_k in enumerate(torch.split(y_all, [t.shape[0] for t in xs])))
    loss.backward()
    start = sum(t.shape[0] for t in xs[:r])
    assert torch.allclose(y, y_all[start:start + x.shape[0]], atol=1e-10)
    assert torch.allclose(x.grad, xs[r].grad, atol=1e-10)
    assert torch.allclose(sbn.running_mean, ref.running_mean, atol=1e-10)
    assert torch.allclose(sbn.running_var, ref.running_var, atol=1e-10)
    # weight and bias gradients are this rank's: their sum is the whole batch's
    assert torch.allclose(hvd.allreduce(sbn.weight.grad, op=hvd.Sum), ref.weight.grad)
    assert torch.allclose(hvd.allreduce(sbn.bias.grad, op=hvd.Sum), ref.bias.grad)
    sbn.eval()
    ref.eval()
    assert torch.allclose(sbn(x), ref(x), atol=1e-10)  # running statistics, no collective


def test_empty_batch_on_one_rank_and_momentum_none():
    n, r = hvd.size(), hvd.rank()
    sbn = hvd.SyncBatchNorm(3, momentum=None, affine=False).double()
    ref = nn.BatchNorm1d(3, momentum=None, affine=False).double()
    xs = [torch.arange(6 * k, dtype=torch.float64).reshape(2 * k, 3) if k else
          torch.empty(0, 3, dtype=torch.float64) for k in range(n)]
    if n == 1:
        xs = [torch.arange(6, dtype=torch.float64).reshape(2, 3)]
    for _ in range(2):
        out = sbn(xs[r])
        ref(torch.cat(xs))
    assert out.shape == xs[r].shape
    assert torch.allclose(sbn.running_mean, ref.running_mean)
    assert torch.allclose(sbn.running_var, ref.running_var)
    assert int(sbn.num_batches_tracked) == 2
