"""tcoll.torch process sets: Horovod's ProcessSet API, every collective
within a set, sets made at init and from an mpi4py communicator."""

import pytest
import torch

import tcoll.torch as hvd
from torch_helpers import assert_close, data, reduce_ref


@pytest.fixture(scope="module")
def sets():
    n = hvd.size()
    evens = hvd.ProcessSet([r for r in range(n) if r % 2 == 0])
    hvd.init(process_sets=[evens])  # sets given to init are added (init itself is done)
    odds = hvd.add_process_set([r for r in range(n) if r % 2 == 1]) if n > 1 else None
    yield evens, odds
    if odds is not None:
        hvd.remove_process_set(odds)
    hvd.remove_process_set(evens)


def _mine(sets):
    evens, odds = sets
    return evens if hvd.rank() % 2 == 0 else odds


def test_process_set_api(sets):
    evens, odds = sets
    n, r = hvd.size(), hvd.rank()
    assert evens.process_set_id is not None and evens.process_set_id > 0
    assert evens.ranks == list(range(0, n, 2))
    assert evens.size() == len(evens.ranks)
    assert evens.included() == (r % 2 == 0)
    assert evens.rank() == (r // 2 if r % 2 == 0 else -1)
    g = hvd.global_process_set
    assert g.process_set_id == 0 and g.size() == n and g.rank() == r and g.included()
    assert g.ranks == list(range(n))


def test_collectives_in_a_set(sets):
    ps = _mine(sets)
    members = ps.ranks
    r = hvd.rank()
    me = members.index(r)
    x = data(1, r, (3,), torch.float32)
    exp = reduce_ref([data(1, k, (3,), torch.float32) for k in members], hvd.Sum)
    assert_close(hvd.allreduce(x, op=hvd.Sum, process_set=ps), exp)
    assert_close(hvd.allreduce(x, process_set=ps), exp / len(members))
    ints = hvd.allreduce(torch.full((2,), 7, dtype=torch.int32), process_set=ps)  # integer Average
    assert torch.equal(ints, torch.full((2,), 7, dtype=torch.int32))
    g = hvd.allgather(torch.tensor([r, r]), process_set=ps)
    assert g.tolist() == [k for k in members for _ in range(2)]
    root = members[-1]
    assert hvd.broadcast(torch.tensor([r]), root, process_set=ps).item() == root
    out = hvd.alltoall(torch.arange(len(members)) + 10 * r, process_set=ps)
    assert out.tolist() == [10 * k + me for k in members]
    rs = hvd.reducescatter(torch.ones(len(members), 2), op=hvd.Sum, process_set=ps)
    assert torch.equal(rs, torch.full((1, 2), float(len(members))))
    gr = hvd.grouped_allreduce([x, x * 2], op=hvd.Sum, process_set=ps)
    assert_close(gr[1], exp * 2)
    hvd.barrier(process_set=ps)
    assert hvd.join(process_set=ps) in members
    objs = hvd.allgather_object({"r": r}, process_set=ps)
    assert objs == [{"r": k} for k in members]
    assert hvd.broadcast_object(r, root_rank=root, process_set=ps) == root


def test_non_member_is_refused(sets):
    evens, _ = sets
    if hvd.rank() % 2 == 1:
        with pytest.raises(ValueError):
            hvd.allreduce(torch.ones(1), process_set=evens)
    hvd.barrier()


def test_set_from_mpi_communicator(comm):
    n, low_side = hvd.size(), hvd.rank() < 2
    sub = comm.Split(color=0 if low_side else 1, key=hvd.rank())
    low, high = list(range(min(2, n))), list(range(2, n))
    # adding is collective over every rank: each adds both sets, in the same
    # order, its own side from its communicator, the other from a rank list
    ps_low = hvd.add_process_set(sub if low_side else low)
    ps_high = hvd.add_process_set(high if low_side else sub) if high else None
    assert ps_low.ranks == low
    if ps_high is not None:
        assert ps_high.ranks == high
    mine = ps_low if low_side else ps_high
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum, process_set=mine).item() == sub.size
    if ps_high is not None:
        hvd.remove_process_set(ps_high)
    assert hvd.remove_process_set(ps_low) is True
    sub.Free()
