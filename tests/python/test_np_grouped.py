"""Grouped calls: several arrays (mixed dtypes and shapes) as one unit, with
automatic and given names; one disagreeing member fails them all on every
rank; a bad member refuses the whole group at once and queues nothing."""

import numpy as np
import pytest

import tcoll
from np_util import (OPS, assert_reduced, assert_same, need_ranks, reduce_expected, rows_of,
                     together, values)

MEMBERS = [((3,), "float32"), ((2, 2), "int8"), ((0,), "float64"), ((5,), "float16"),
           ((), "int64"), ((1, 3), "uint16")]


def member_inputs(rank, op="sum"):
    return [values(rank, shape, dtype, op, salt=i) for i, (shape, dtype) in enumerate(MEMBERS)]


@pytest.mark.parametrize("op", ["sum", "min", "max", "product"])
def test_grouped_allreduce(op, rank, size, name):
    mine = member_inputs(rank, op)
    names = [name("m%d" % i) for i in range(len(mine))]
    auto, named, from_async = together(
        lambda: tcoll.grouped_allreduce(mine, op=OPS[op]),
        lambda: tcoll.grouped_allreduce(mine, op=OPS[op], names=names),
        lambda: tcoll.grouped_allreduce_async(mine, op=OPS[op],
                                              names=[n + "a" for n in names]).wait())
    everyone = [member_inputs(r, op) for r in range(size)]
    for results in (auto, named, from_async):
        assert isinstance(results, list) and len(results) == len(MEMBERS)
        for i, got in enumerate(results):
            assert_reduced(got, reduce_expected([e[i] for e in everyone], op, MEMBERS[i][1]), op)


def test_grouped_allreduce_average_scaled(rank, size, name):
    mine = [values(rank, (4,), "float32"), values(rank, (2, 3), "float64", salt=1)]
    got, = together(lambda: tcoll.grouped_allreduce(mine, op=tcoll.Average,
                                                    prescale_factor=2, postscale_factor=0.5))
    for i, dtype in enumerate(["float32", "float64"]):
        want = reduce_expected([[values(r, (4,), "float32"),
                                 values(r, (2, 3), "float64", salt=1)][i] for r in range(size)],
                               "average", dtype)
        assert_reduced(got[i], want, "average")


def test_grouped_allgather(rank, size, name):
    mine = [values(rank, (rank + 1, 2), "int32"), values(rank, (1,), "float16", salt=1),
            np.array(rank, dtype=np.uint8), np.zeros((0, 3), np.int16)]
    auto, from_async = together(
        lambda: tcoll.grouped_allgather(mine),
        lambda: tcoll.grouped_allgather_async(mine, names=[name(str(i)) for i in range(4)]).wait())
    for got in (auto, from_async):
        assert_same(got[0], np.concatenate([values(r, (r + 1, 2), "int32") for r in range(size)]))
        assert_same(got[1], np.concatenate([values(r, (1,), "float16", salt=1)
                                            for r in range(size)]))
        assert_same(got[2], np.arange(size, dtype=np.uint8))
        assert got[3].shape == (0, 3) and got[3].dtype == np.int16


def test_grouped_reducescatter(rank, size, name):
    shapes = [(size + 1, 2), (2 * size,), (1,)]
    mine = [values(rank, s, "float32", salt=i) for i, s in enumerate(shapes)]
    auto, from_async = together(
        lambda: tcoll.grouped_reducescatter(mine, op=tcoll.Max),
        lambda: tcoll.grouped_reducescatter_async(mine, op=tcoll.Max,
                                                  names=[name(str(i)) for i in range(3)]).wait())
    for got in (auto, from_async):
        for i, s in enumerate(shapes):
            full = reduce_expected([values(r, s, "float32", salt=i) for r in range(size)],
                                   "max", "float32")
            start, count = rows_of(s[0], size, rank)
            assert_reduced(got[i], full[start:start + count], "max")


def test_one_member_disagrees(rank, size, name):
    """A member whose shape differs across ranks fails every member of the
    group, on every rank, with that member's MismatchError; wait() returns
    once every member has completed, so their names are free at once."""
    need_ranks(size, 2)
    names = [name("a"), name("b"), name("c")]
    handle = tcoll.grouped_allreduce_async([np.ones(3), np.ones(2 + rank), np.ones(4)],
                                           names=names)
    failed, again = together(
        lambda: pytest.raises(tcoll.MismatchError, handle.wait),
        lambda: tcoll.grouped_allreduce([np.ones(3), np.ones(2), np.ones(4)], names=names))
    assert handle.done()
    message = str(failed.value)
    assert name("b") in message and "shape mismatch" in message
    assert all("rank %d" % r in message for r in range(size))
    # each member's own request (the handle's, internal) failed with b's message
    assert [name("b") in req.error for req in handle._reqs] == [True] * 3
    assert_same(again[1], np.full(2, float(size)))


def test_refused_groups(rank, size, name):
    """Refused at once, on every rank, with nothing queued: a bad dtype
    (TypeError), a name twice in the group (DuplicateNameError, a
    ValueError), names of the wrong number (ValueError), no members."""
    ok = np.ones(2)
    bad_dtype, twice, wrong_count, empty, got = together(
        lambda: pytest.raises(TypeError, tcoll.grouped_allreduce, [ok, np.ones(2, bool)],
                              names=[name("x"), name("y")]),
        lambda: pytest.raises(tcoll.DuplicateNameError, tcoll.grouped_allgather, [ok, ok],
                              names=[name("x"), name("x")]),
        lambda: pytest.raises(ValueError, tcoll.grouped_reducescatter, [ok],
                              names=[name("x"), name("y")]),
        lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.grouped_allreduce, []),
        # nothing was queued: the same names run now
        lambda: tcoll.grouped_allreduce([ok, ok], names=[name("x"), name("y")]))
    assert isinstance(twice.value, ValueError)
    assert "count 0" in str(empty.value)
    assert_same(got[0], np.full(2, float(size)))
