"""How tcoll.torch hands tensors' memory to tcoll: the extension takes a
contiguous CPU tensor's own memory (no NumPy view, no copy) and holds the
tensor until the operation completes; everything else goes through the
general path (copies, refusals). Also the extension's own guard against
tensors it must not take as plain memory."""

import gc
import sys
import weakref

import pytest
import torch

import tcoll
import tcoll.torch as hvd
from tcoll import _tcoll
from torch_helpers import assert_close, data, everyone, reduce_ref


def test_in_place_on_a_slice_touches_only_the_slice():
    n = hvd.size()
    big = torch.full((10,), -7.0)
    part = big[3:6]  # contiguous, at an offset into big's storage
    part.fill_(hvd.rank() + 1.0)
    assert hvd.allreduce_(part, op=hvd.Sum, name="mem.slice") is part
    assert torch.equal(part, torch.full((3,), n * (n + 1) / 2.0))
    assert torch.equal(big[:3], torch.full((3,), -7.0))
    assert torch.equal(big[6:], torch.full((4,), -7.0))


def test_out_of_place_leaves_the_input_and_returns_new_memory():
    x = data(31, hvd.rank(), (5, 3), torch.float32)
    out = hvd.allreduce(x, op=hvd.Sum, name="mem.oop")
    assert out.data_ptr() != x.data_ptr()
    assert torch.equal(x, data(31, hvd.rank(), (5, 3), torch.float32))
    assert_close(out, reduce_ref(everyone(31, (5, 3), torch.float32), hvd.Sum))


def test_parameter_and_requires_grad_tensors():
    exp = reduce_ref(everyone(32, (4,), torch.float32), hvd.Average)
    p = torch.nn.Parameter(data(32, hvd.rank(), (4,), torch.float32))
    assert_close(hvd.allreduce(p.detach(), name="mem.param"), exp)
    g = data(32, hvd.rank(), (4,), torch.float32).requires_grad_()
    assert_close(hvd.allreduce(g, name="mem.reqgrad"), exp)
    # in place on a parameter's .data, as optimizers and Horovod's examples do
    hvd.allreduce_(p.data, name="mem.param_data")
    assert_close(p.detach(), exp)


def test_lazy_negation_is_resolved():
    x = data(33, hvd.rank(), (6,), torch.float32)
    neg = torch._neg_view(x)
    assert neg.is_neg()
    out = hvd.allreduce(neg, op=hvd.Sum, name="mem.neg")
    assert_close(out, -reduce_ref(everyone(33, (6,), torch.float32), hvd.Sum))


def test_empty_and_zero_dim_in_place():
    e = torch.empty(0)
    assert hvd.allreduce_(e, op=hvd.Sum, name="mem.empty") is e
    s = torch.tensor(float(hvd.rank()))
    hvd.allreduce_(s, op=hvd.Max, name="mem.scalar")
    assert s.item() == hvd.size() - 1


def test_request_holds_the_tensor_until_done():
    t = torch.ones(1000)
    ref = weakref.ref(t)
    before = sys.getrefcount(t)
    req = _tcoll.submit("allreduce", "mem.hold", t, t, _tcoll.FLOAT32, t.shape)
    assert sys.getrefcount(t) > before  # the request's view holds it
    del t
    gc.collect()
    assert ref() is not None  # still alive: the operation may write into it
    req.wait()
    del req
    gc.collect()
    assert ref() is None


def test_extension_refuses_tensors_it_cannot_take_as_memory():
    x = torch.ones(4, 6)
    cases = [
        (x.t(), _tcoll.FLOAT32, "not contiguous"),
        (torch._neg_view(torch.ones(3)), _tcoll.FLOAT32, "negation"),
        (torch.ones(3).to_sparse(), _tcoll.FLOAT32, "dense"),
        (torch.ones(3, dtype=torch.float64), _tcoll.FLOAT32, "bytes"),
    ]
    for t, code, words in cases:
        with pytest.raises(ValueError, match=words):
            _tcoll.submit("allreduce", "mem.refused", t, t, code, tuple(t.shape))
    # nothing was submitted: the name is free on every rank
    y = torch.ones(2)
    _tcoll.submit("allreduce", "mem.refused", y, y, _tcoll.FLOAT32, (2,)).wait()
    assert torch.equal(y, torch.full((2,), float(hvd.size())))


def test_numpy_api_takes_tensors_too():
    # the extension is shared: a tensor given to the NumPy-level call is
    # taken as memory as well (tcoll.torch registered the type)
    t = torch.full((3,), 2.0)
    r = _tcoll.submit("allreduce", "mem.np_ext", t, t, _tcoll.FLOAT32, (3,))
    r.wait()
    assert torch.equal(t, torch.full((3,), 2.0 * hvd.size()))
    assert tcoll.size() == hvd.size()
