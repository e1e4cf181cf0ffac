"""torch.distributed's collectives on the tcoll backend, against results
computed here from every rank's input (each rank can compute any rank's)."""

import pytest
import torch
import torch.distributed as dist

import tcoll.torch as hvd

R = dist.ReduceOp
DTYPES = [torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
          torch.float64]


def data(seed, r, shape, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed * 7919 + r)
    lo = 0 if dtype == torch.uint8 else -4
    return torch.randint(lo, 5, shape, generator=g).to(dtype)


def everyone(seed, shape, dtype=torch.float32):
    return [data(seed, r, shape, dtype) for r in range(dist.get_world_size())]


def ref(tensors, op):
    wide = torch.float64 if tensors[0].dtype.is_floating_point else torch.int64
    s = torch.stack([t.to(wide) for t in tensors])
    if op == R.SUM:
        out = s.sum(0)
    elif op == R.AVG:
        out = s.sum(0) / len(tensors)
        if not tensors[0].dtype.is_floating_point:
            out = torch.trunc(out)
    elif op == R.PRODUCT:
        out = s.prod(0)
    elif op == R.MIN:
        out = s.min(0).values
    else:
        out = s.max(0).values
    return out


def me():
    return dist.get_rank()


def n():
    return dist.get_world_size()


def test_init_from_tcoll(pg):
    assert dist.is_initialized()
    assert dist.get_backend() == "tcoll"
    assert (dist.get_rank(), dist.get_world_size()) == (hvd.rank(), hvd.size())
    assert pg.getBackendName() == "tcoll"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["SUM", "AVG", "PRODUCT", "MIN", "MAX"])
def test_all_reduce(op, dtype):
    op = getattr(R, op)
    if op == R.PRODUCT and dtype in (torch.uint8,):
        pytest.skip("products of these small integers wrap around in uint8")
    t = data(1, me(), (5, 3), dtype)
    dist.all_reduce(t, op=op)
    want = ref(everyone(1, (5, 3), dtype), op)
    assert t.dtype == dtype
    assert torch.equal(t.to(torch.float64), want.to(dtype).to(torch.float64)), (t, want)


def test_all_reduce_non_contiguous():
    base = data(2, me(), (4, 6))
    t = base.t()
    dist.all_reduce(t)
    want = ref([x.t() for x in everyone(2, (4, 6))], R.SUM)
    assert torch.equal(t.double(), want)


@pytest.mark.parametrize("op", ["BAND", "BOR", "BXOR"])
def test_all_reduce_refuses_ops_tcoll_lacks(op):
    t = torch.ones(3, dtype=torch.int32)
    with pytest.raises(ValueError, match="ReduceOp.%s is not supported" % op):
        dist.all_reduce(t, op=getattr(R, op))
    assert torch.equal(t, torch.ones(3, dtype=torch.int32))  # untouched
    # the refusal took no name: the next call still matches across ranks
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((3,), n(), dtype=torch.int32))


def test_all_reduce_coalesced():
    ts = [data(3, me(), (4,)), data(4, me(), (2, 2))]
    dist.all_reduce_coalesced(ts)
    assert torch.equal(ts[0].double(), ref(everyone(3, (4,)), R.SUM))
    assert torch.equal(ts[1].double(), ref(everyone(4, (2, 2)), R.SUM))


def test_broadcast_every_root():
    for root in range(n()):
        t = data(5, me(), (7,))
        dist.broadcast(t, src=root)
        assert torch.equal(t, data(5, root, (7,)))


def test_reduce_every_root():
    for root in range(n()):
        t = data(6, me(), (3,))
        mine = t.clone()
        dist.reduce(t, dst=root, op=R.MAX)
        want = ref(everyone(6, (3,)), R.MAX).float() if me() == root else mine
        assert torch.equal(t, want)


def test_all_gather():
    outs = [torch.empty(2, 3) for _ in range(n())]
    dist.all_gather(outs, data(7, me(), (2, 3)))
    for r, o in enumerate(outs):
        assert torch.equal(o, data(7, r, (2, 3)))


def test_all_gather_into_tensor():
    out = torch.empty(n() * 4, dtype=torch.int64)
    dist.all_gather_into_tensor(out, data(8, me(), (4,), torch.int64))
    assert torch.equal(out, torch.cat(everyone(8, (4,), torch.int64)))
    bad = torch.empty(n() * 4 + 1, dtype=torch.int64)
    with pytest.raises(ValueError, match="all_gather_into_tensor"):
        dist.all_gather_into_tensor(bad, data(8, me(), (4,), torch.int64))


def test_all_gather_coalesced():
    """Several allgathers seen as one work (the coalesced calls)."""
    outs = [[torch.empty(2) for _ in range(n())], [torch.empty(3) for _ in range(n())]]
    fut = dist.all_gather_coalesced(outs, [data(20, me(), (2,)), data(21, me(), (3,))],
                                    async_op=True)
    if not isinstance(fut, torch.futures.Future):  # a work object (torch 2.x)
        fut = fut.get_future()
    assert len(fut.wait()) == 2 * n()
    for r in range(n()):
        assert torch.equal(outs[0][r], data(20, r, (2,)))
        assert torch.equal(outs[1][r], data(21, r, (3,)))


def test_reduce_scatter():
    ins = [data(9, me() * 100 + j, (3,)) for j in range(n())]
    out = torch.empty(3)
    dist.reduce_scatter(out, ins, op=R.SUM)
    want = ref([data(9, r * 100 + me(), (3,)) for r in range(n())], R.SUM)
    assert torch.equal(out.double(), want)


def test_reduce_scatter_unequal_blocks():
    sizes = [j + 1 for j in range(n())]
    ins = [data(10, me() * 100 + j, (sizes[j],)) for j in range(n())]
    out = torch.empty(sizes[me()])
    dist.reduce_scatter(out, ins)
    want = ref([data(10, r * 100 + me(), (sizes[me()],)) for r in range(n())], R.SUM)
    assert torch.equal(out.double(), want)


def test_reduce_scatter_tensor():
    inp = data(11, me(), (n() * 2, 3))
    out = torch.empty(2, 3)
    dist.reduce_scatter_tensor(out, inp, op=R.MIN)
    want = ref(everyone(11, (n() * 2, 3)), R.MIN)[me() * 2:me() * 2 + 2]
    assert torch.equal(out.double(), want)


def test_all_to_all_single_even():
    inp = torch.arange(n() * 2, dtype=torch.float32) + 100 * me()
    out = torch.empty(n() * 2)
    dist.all_to_all_single(out, inp)
    want = torch.cat([torch.arange(me() * 2, me() * 2 + 2, dtype=torch.float32) + 100 * r
                      for r in range(n())])
    assert torch.equal(out, want)


def test_all_to_all_single_splits():
    # rank r sends j+1 rows of 2 to rank j, each row holding (r, j)
    send = [j + 1 for j in range(n())]
    inp = torch.cat([torch.tensor([[me(), j]] * (j + 1)) for j in range(n())])
    recv = [me() + 1] * n()
    out = torch.empty(sum(recv), 2, dtype=torch.int64)
    dist.all_to_all_single(out, inp, output_split_sizes=recv, input_split_sizes=send)
    want = torch.cat([torch.tensor([[r, me()]] * (me() + 1)) for r in range(n())])
    assert torch.equal(out, want)


def test_all_to_all_list():
    ins = [torch.full((j + 1,), float(me() * 10 + j)) for j in range(n())]
    outs = [torch.empty(me() + 1) for _ in range(n())]
    dist.all_to_all(outs, ins)
    for r, o in enumerate(outs):
        assert torch.equal(o, torch.full((me() + 1,), float(r * 10 + me())))


def test_gather_and_scatter_every_root():
    for root in range(n()):
        t = data(12, me(), (2, 2))
        outs = [torch.empty(2, 2) for _ in range(n())] if me() == root else None
        dist.gather(t, gather_list=outs, dst=root)
        if me() == root:
            for r, o in enumerate(outs):
                assert torch.equal(o, data(12, r, (2, 2)))
        out = torch.empty(3)
        ins = [data(13, root * 100 + j, (3,)) for j in range(n())] if me() == root else None
        dist.scatter(out, scatter_list=ins, src=root)
        assert torch.equal(out, data(13, root * 100 + me(), (3,)))


def test_barrier_and_async_work():
    dist.barrier()
    t = torch.full((4,), float(me()))
    work = dist.all_reduce(t, async_op=True)
    assert work.wait() is True
    assert work.is_completed()
    assert torch.equal(t, torch.full((4,), float(sum(range(n())))))
    t2 = torch.ones(2)
    work = dist.all_reduce(t2, async_op=True)
    fut = work.get_future()
    value = fut.wait()
    assert isinstance(value, list) and value[0] is t2
    assert torch.equal(t2, torch.full((2,), float(n())))
    while not work.is_completed():
        pass  # already completed: the future had its value


def test_wait_timeout_then_completes(gloo):
    """Rank 0 waits with a timeout for an allreduce the others submit only
    after it timed out (they are held at a Gloo barrier until then)."""
    t = torch.ones(3)
    if me() == 0:
        work = dist.all_reduce(t, async_op=True)
        if n() > 1:
            with pytest.raises(RuntimeError, match="not completed within"):
                work.wait(timeout=0.05)
            assert not work.is_completed()
        dist.barrier(group=gloo)
        work.wait()
    else:
        dist.barrier(group=gloo)
        dist.all_reduce(t)
    assert torch.equal(t, torch.full((3,), float(n())))


def test_disagreeing_ranks_fail_everywhere():
    """Different shapes on different ranks: an error on every rank, not a hang."""
    t = torch.ones(me() + 2) if n() > 1 else torch.ones(2)
    if n() == 1:
        dist.all_reduce(t)
        return
    with pytest.raises(RuntimeError, match="mismatch|shape"):
        dist.all_reduce(t)
    dist.all_reduce(torch.ones(1))  # and the group goes on


def test_coalescing_context(pg):
    """torch 2.x's coalescing manager brackets calls with these two."""
    pg._start_coalescing(torch.device("cpu"))
    t = torch.ones(2)
    dist.all_reduce(t)
    work = pg._end_coalescing(torch.device("cpu"))
    assert work.wait() and work.is_completed()
    assert torch.equal(t, torch.full((2,), float(n())))


def test_send_recv_refused():
    if n() == 1:
        # torch 2.x refuses a send to oneself before the backend sees it
        # (ValueError); torch 1.13 hands it to the backend, which refuses it
        for call in (lambda: dist.send(torch.ones(1), dst=0),
                     lambda: dist.recv(torch.ones(1), src=0)):
            with pytest.raises((RuntimeError, ValueError)) as e:
                call()
            assert e.type is ValueError or "send/recv are not supported" in str(e.value)
        return
    with pytest.raises(RuntimeError, match="send/recv are not supported"):
        dist.send(torch.ones(1), dst=(me() + 1) % n())
    with pytest.raises(RuntimeError, match="send/recv are not supported"):
        dist.recv(torch.ones(1), src=(me() + 1) % n())


def test_new_group_subsets():
    world = list(range(n()))
    for ranks in (world[:1], world[-2:], world[1:] or world, world):
        g = dist.new_group(ranks)
        if me() not in ranks:
            assert g == dist.GroupMember.NON_GROUP_MEMBER
            continue
        assert dist.get_world_size(g) == len(ranks)
        assert dist.get_rank(g) == sorted(ranks).index(me())
        t = torch.tensor([float(me())])
        dist.all_reduce(t, group=g)
        assert t.item() == float(sum(ranks))
        root = max(ranks)
        b = torch.tensor([float(me())])
        dist.broadcast(b, src=root, group=g)
        assert b.item() == float(root)
        outs = [torch.empty(1) for _ in ranks]
        dist.all_gather(outs, torch.tensor([float(me())]), group=g)
        assert [o.item() for o in outs] == [float(r) for r in sorted(ranks)]


def test_matches_gloo(gloo):
    for op in (R.SUM, R.MAX):
        a = data(14, me(), (33,))
        b = a.clone()
        dist.all_reduce(a, op=op)
        dist.all_reduce(b, op=op, group=gloo)
        assert torch.equal(a, b)


def test_partition_into_groups():
    """Disjoint groups made one after another (as new_subgroups does), each
    running at once in its own process set."""
    size = 2 if n() % 2 == 0 else 1
    groups = [dist.new_group(list(range(k, k + size))) for k in range(0, n(), size)]
    mine = groups[me() // size]
    t = torch.tensor([float(me())])
    dist.all_reduce(t, group=mine)
    first = me() - me() % size
    assert t.item() == float(sum(range(first, first + size)))


def test_wrong_rank_or_size_refused():
    """The tcoll rendezvous refuses a rank or world size that is not tcoll's."""
    import tcoll.torch.distributed as td
    with pytest.raises(ValueError, match="rank and world size come from the MPI launcher"):
        next(td._rendezvous("tcoll://?rank=%d&world_size=%d" % (me(), n() + 1)))
