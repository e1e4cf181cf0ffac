"""hvd.join()'s value: the rank that joined last, as Horovod defines it,
whatever the order the ranks join in and whether the allreduces before
the join use names run before (cached: they may skip rank 0 entirely on
one node) or new ones.

The order is forced by the data, not by time: a rank that joins at
position k of an order runs the allreduces of steps 0..k, and step k's
allreduces are submitted only by the ranks at positions k and up, so they
complete only once every earlier rank has joined."""

import itertools

import pytest
import torch

import tcoll.torch as hvd


def _step(name, active, bad):
    """A sum among the ranks in `active` (the others have joined); a wrong
    result goes to `bad` (asserted once every call is made)."""
    out = hvd.allreduce(torch.full((4,), float(hvd.rank() + 1)), op=hvd.Sum, name=name)
    want = float(sum(r + 1 for r in active))
    if not torch.equal(out, torch.full((4,), want)):
        bad.append((name, out.tolist(), want))


def _warm(names, bad):
    """Every rank runs each name twice: filed in the cache, then run cached."""
    for _ in range(2):
        for n in names:
            _step(n, range(hvd.size()), bad)


@pytest.mark.parametrize("cached", [False, True], ids=["uncached", "cached"])
def test_join_rank1_first_rank0_two_allreduces(cached):
    """Rank 1 (every rank but 0) joins first; rank 0 runs two allreduces and
    then joins: every rank gets 0 back, the rank that joined last."""
    if hvd.size() < 2:
        pytest.skip("needs two ranks")
    got, bad = [], []
    for it in range(5):
        names = ["join1st.%s.a" % ("c" if cached else "u%d" % it),
                 "join1st.%s.b" % ("c" if cached else "u%d" % it)]
        if cached:
            _warm(names, bad)
        if hvd.rank() == 0:
            for n in names:
                _step(n, [0], bad)
        got.append(hvd.join())
    assert not bad
    assert got == [0] * 5


@pytest.mark.parametrize("cached", [False, True], ids=["uncached", "cached"])
def test_join_every_order(cached):
    """Every order of the ranks: each rank gets the order's last rank."""
    n = hvd.size()
    results, bad = [], []
    for pi, order in enumerate(itertools.permutations(range(n))):
        pos = order.index(hvd.rank())
        tag = "c" if cached else "u%d" % pi
        names = [("joinorder.%s.%d.a" % (tag, k), "joinorder.%s.%d.b" % (tag, k))
                 for k in range(n)]
        if cached:
            _warm([x for pair in names for x in pair], bad)
        for k in range(pos + 1):
            for name in names[k]:
                _step(name, order[k:], bad)
        results.append((order, hvd.join()))
    assert not bad
    for order, last in results:
        assert last == order[-1], (order, last)
