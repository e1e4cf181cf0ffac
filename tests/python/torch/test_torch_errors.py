"""tcoll.torch errors: mismatches raise from synchronize on every rank, a
duplicate in-flight name raises ValueError at once, bad arguments are
refused, Adasum is not supported, and tcoll stays usable after each."""

import pytest
import torch

import tcoll
import tcoll.torch as hvd


def _still_works():
    out = hvd.allreduce(torch.ones(3), op=hvd.Sum)
    assert torch.equal(out, torch.full((3,), float(hvd.size())))


def test_shape_mismatch_raises_on_every_rank(comm):
    if hvd.size() == 1:
        pytest.skip("a mismatch needs two ranks")
    x = torch.ones(hvd.rank() + 1)
    h = hvd.allreduce_async(x, name="mismatch.shape")
    with pytest.raises(hvd.HorovodInternalError) as info:
        hvd.synchronize(h)
    assert isinstance(info.value, tcoll.MismatchError)
    assert isinstance(info.value, RuntimeError)
    assert "mismatch.shape" in str(info.value)
    # every rank raised: they all get here and agree
    assert comm.allgather(True) == [True] * hvd.size()
    _still_works()


def test_dtype_mismatch_in_blocking_call(comm):
    if hvd.size() == 1:
        pytest.skip("a mismatch needs two ranks")
    x = torch.ones(2, dtype=torch.float32 if hvd.rank() == 0 else torch.float64)
    with pytest.raises(tcoll.MismatchError):
        hvd.allreduce(x, name="mismatch.dtype")
    with pytest.raises(hvd.HorovodInternalError):
        hvd.broadcast(x, 0, name="mismatch.dtype")
    _still_works()


def test_duplicate_name_raises_at_once(comm):
    if hvd.size() == 1:
        pytest.skip("needs a second rank to keep the first submission in flight")
    x = torch.ones(4)
    if hvd.rank() == 0:
        h = hvd.allreduce_async(x, op=hvd.Sum, name="dup")
        with pytest.raises(ValueError):
            hvd.allreduce_async(x, op=hvd.Sum, name="dup")
        with pytest.raises(ValueError):
            hvd.allreduce_async_(x.clone(), op=hvd.Sum, name="dup")
        comm.Barrier()  # the others submit only now
    else:
        comm.Barrier()
        h = hvd.allreduce_async(x, op=hvd.Sum, name="dup")
    assert torch.equal(hvd.synchronize(h), torch.full((4,), float(hvd.size())))
    _still_works()


def test_adasum_not_supported():
    with pytest.raises(NotImplementedError):
        hvd.allreduce(torch.ones(2), op=hvd.Adasum)
    with pytest.raises(NotImplementedError):
        hvd.allreduce_async_(torch.ones(2), op=hvd.Adasum)
    with pytest.raises(NotImplementedError):
        hvd.grouped_allreduce([torch.ones(2)], op=hvd.Adasum)
    with pytest.raises(NotImplementedError):
        hvd.reducescatter(torch.ones(2), op=hvd.Adasum)
    model = torch.nn.Linear(2, 1)
    with pytest.raises(NotImplementedError):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), op=hvd.Adasum)
    _still_works()


def test_refused_tensors():
    with pytest.raises(ValueError, match="CPU and CUDA tensors only"):
        hvd.allreduce(torch.ones(2, device="meta"))
    with pytest.raises(ValueError):
        hvd.allreduce(torch.ones(2, dtype=torch.complex64))
    with pytest.raises(ValueError):
        hvd.allreduce(torch.ones(2, dtype=torch.bool))
    with pytest.raises(ValueError):
        hvd.allreduce(torch.ones(2).to_sparse())
    with pytest.raises(TypeError):
        hvd.allreduce_async([1.0, 2.0])
    with pytest.raises(ValueError):
        hvd.allreduce(torch.ones(2), op=12345)
    with pytest.raises(ValueError):
        hvd.alltoall(torch.tensor(1.0))  # no dimension to split
    if hvd.size() > 1:
        with pytest.raises(ValueError):
            hvd.alltoall(torch.ones(hvd.size() + 1))  # not divisible by the ranks
    _still_works()


def test_bad_root_and_splits():
    with pytest.raises(ValueError):
        hvd.broadcast(torch.ones(2), hvd.size())  # no such rank
    with pytest.raises(ValueError):
        hvd.alltoall(torch.ones(3), splits=[1] * (hvd.size() + 1))
    _still_works()
