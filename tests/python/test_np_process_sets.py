"""Process sets: creation (collective, every rank), queries, every kind of
collective inside sets of different members against references, what a
non-member gets (InvalidArgumentError, a ValueError), removal, rank lists
that differ across ranks, names per set."""

import numpy as np
import pytest

import tcoll
from np_util import (assert_reduced, assert_same, need_ranks, reduce_expected, rows_of,
                     together, values)


def member_lists(size):
    """Sets every rank count has: rank 0 alone, the last rank alone, every
    rank (given in reverse order), the even ranks."""
    return {"first": [0], "last": [size - 1], "all": list(range(size))[::-1],
            "even": list(range(0, size, 2))}


def run_kinds(ps, rank, name):
    """Every kind of collective in ps (members only); the results, in order."""
    members = ps.ranks
    k = len(members)
    return together(
        lambda: tcoll.allreduce(values(rank, (5,), "float32"), name=name("ar"), process_set=ps),
        lambda: tcoll.allreduce(values(rank, (5,), "float32"), op=tcoll.Average,
                                name=name("avg"), process_set=ps),
        lambda: tcoll.allgather(values(rank, (rank % 2 + 1, 2), "int8"), name=name("ag"),
                                process_set=ps),
        lambda: tcoll.broadcast(values(rank, (3,), "int64"), members[-1], name=name("bc"),
                                process_set=ps),
        lambda: tcoll.reducescatter(values(rank, (k + 1, 2), "int32"), name=name("rs"),
                                    process_set=ps),
        lambda: tcoll.alltoall(np.full((k, 1), rank, np.uint16), name=name("a2a"),
                               process_set=ps),
        lambda: tcoll.barrier(process_set=ps))


@pytest.mark.parametrize("which", ["first", "last", "all", "even"])
def test_collectives_in_a_set(which, rank, size, name):
    ranks = member_lists(size)[which]
    ps, = together(lambda: tcoll.add_process_set(ranks))
    set_id = ps.process_set_id
    members = sorted(ranks)
    member = rank in members
    if member:
        results = together(lambda: run_kinds(ps, rank, name))[0]
    else:
        results = None
    refused = together(
        lambda: pytest.raises(ValueError, tcoll.allreduce, np.ones(2), name=name("x"),
                              process_set=ps) if not member else None,
        lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.barrier,
                              process_set=ps) if not member else None,
        lambda: tcoll.remove_process_set(ps))
    assert set_id > 0
    if member:
        k = len(members)
        ar, avg, ag, bc, rs, (a2a, got_splits), barrier = results
        inputs = [values(r, (5,), "float32") for r in members]
        assert_reduced(ar, reduce_expected(inputs, "sum", "float32"), "sum")
        assert_reduced(avg, reduce_expected(inputs, "average", "float32"), "average")
        assert_same(ag, np.concatenate([values(r, (r % 2 + 1, 2), "int8") for r in members]))
        assert_same(bc, values(members[-1], (3,), "int64"))
        full = reduce_expected([values(r, (k + 1, 2), "int32") for r in members], "sum",
                               "int32")
        start, count = rows_of(k + 1, k, members.index(rank))
        assert_reduced(rs, full[start:start + count], "sum")
        assert_same(a2a, np.array(members, np.uint16).reshape(k, 1))
        assert list(got_splits) == [1] * k
        assert barrier is None
    else:
        assert isinstance(refused[0].value, tcoll.InvalidArgumentError)
        assert "not in process set" in str(refused[0].value)
    assert refused[2] is True


def test_queries(rank, size):
    lists = member_lists(size)
    sets = together(*[lambda r=r: tcoll.add_process_set(r) for r in lists.values()])
    queries = [(ps.ranks, ps.size(), ps.rank(), ps.included()) for ps in sets]
    ids = [ps.process_set_id for ps in sets]
    removed = together(*[lambda ps=ps: tcoll.remove_process_set(ps) for ps in sets])
    after = [(ps.size(), ps.rank(), ps.included()) for ps in sets]
    assert len(set(ids)) == len(ids) and all(i > 0 for i in ids)
    for ranks, (got_ranks, got_size, got_rank, included) in zip(lists.values(), queries):
        members = sorted(ranks)
        assert got_ranks == members and got_size == len(members)
        assert got_rank == (members.index(rank) if rank in members else -1)
        assert included == (rank in members)
    assert removed == [True] * len(sets)
    assert after == [(-1, -1, False)] * len(sets)
    g = tcoll.global_process_set
    assert g.process_set_id == 0 and g.size() == size and g.rank() == rank
    assert g.ranks == list(range(size))


def test_removed_set_refuses(rank, size, name):
    """A removed set's id refuses submissions; the same ranks added again
    get a new id."""
    ps, = together(lambda: tcoll.add_process_set(list(range(size))))
    old = ps.process_set_id
    _, refused, again = together(
        lambda: tcoll.remove_process_set(ps),
        lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.allreduce, np.ones(2),
                              name=name("after"), process_set=ps),
        lambda: tcoll.add_process_set(list(range(size))))
    out, _ = together(lambda: tcoll.allreduce(np.ones(2), name=name("new"), process_set=again),
                      lambda: tcoll.remove_process_set(again))
    assert "does not exist" in str(refused.value)
    assert again.process_set_id != old
    assert_same(out, np.full(2, float(size)))


def test_process_set_object(size):
    """A ProcessSet made from ranks is not added until add_process_set; it
    cannot be added twice; equality is by id."""
    ps = tcoll.ProcessSet(list(range(size))[::-1])
    assert ps.process_set_id is None and ps.ranks == list(range(size))
    assert "not added" in repr(ps)
    refused, added = together(
        lambda: pytest.raises(ValueError, tcoll.allreduce, np.ones(1), name="never",
                              process_set=ps),
        lambda: tcoll.add_process_set(ps))
    twice, _ = together(lambda: pytest.raises(ValueError, tcoll.add_process_set, ps),
                        lambda: tcoll.remove_process_set(ps))
    assert added is ps and ps.process_set_id > 0
    assert ps == tcoll.ProcessSet(ps.process_set_id) and hash(ps) == hash(ps.process_set_id)
    assert ps != tcoll.global_process_set
    assert "not been added" in str(refused.value)
    assert "already added" in str(twice.value)
    with pytest.raises(TypeError):
        tcoll.allreduce(np.ones(1), name="never", process_set="0")


def test_bad_rank_lists(size):
    """Refused at once on every rank (InvalidArgumentError): a rank out of
    range, a rank twice, a negative rank."""
    out_of_range, twice, negative = together(
        lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.add_process_set, [0, size]),
        lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.add_process_set, [0, 0]),
        lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.add_process_set, [-1]))
    assert "outside" in str(out_of_range.value)
    # (with one rank the list is too long before anything else)
    assert ("twice" if size > 1 else "nranks 2") in str(twice.value)
    assert isinstance(negative.value, ValueError)


def test_rank_lists_differ(rank, size):
    """Ranks passing different lists get MismatchError on every rank, naming
    the ranks and their lists."""
    need_ranks(size, 2)
    mine = [0] if rank == 0 else list(range(size))
    mismatch, = together(lambda: pytest.raises(tcoll.MismatchError, tcoll.add_process_set, mine))
    message = str(mismatch.value)
    assert "rank list mismatch" in message and "rank 0 has [0]" in message


def test_same_name_in_two_sets(rank, size, name):
    """Names are per set: the same name may be in flight in the global set
    and another at once."""
    ps, = together(lambda: tcoll.add_process_set(list(range(size))))
    h_global = tcoll.allreduce_async(np.full(3, 1.0), name=name("same"))
    h_set = tcoll.allreduce_async(np.full(3, 2.0), name=name("same"), process_set=ps)
    g, s, _ = together(h_global.wait, h_set.wait, lambda: tcoll.remove_process_set(ps))
    assert_same(g, np.full(3, 1.0 * size))
    assert_same(s, np.full(3, 2.0 * size))


def test_automatic_names_per_set(rank, size):
    """Unnamed calls count per set: the members of a set making unnamed
    calls in it leave the global sequence alone on those ranks."""
    ps, = together(lambda: tcoll.add_process_set([0]))
    calls = []
    if rank == 0:
        calls = [lambda: tcoll.allreduce(np.ones(2), process_set=ps) for _ in range(3)]
    *in_set, g, _ = together(*calls, lambda: tcoll.allreduce(np.full(2, rank, np.int32)),
                             lambda: tcoll.remove_process_set(ps))
    for got in in_set:
        assert_same(got, np.ones(2))
    assert_same(g, np.full(2, size * (size - 1) // 2, np.int32))


def test_join_in_a_set(rank, size, name):
    """A join within a set: the members run uneven steps there and join it;
    the global set is not involved."""
    members = list(range(size))
    ps, = together(lambda: tcoll.add_process_set(members))
    steps = [lambda s=s: tcoll.allreduce(np.full(2, float(rank + 1)), name=name(str(s)),
                                         process_set=ps)
             for s in range(rank + 1)]
    *results, last, _ = together(*steps, lambda: tcoll.join(process_set=ps),
                                 lambda: tcoll.remove_process_set(ps))
    assert last == size - 1
    for s, got in enumerate(results):
        assert_same(got, np.full(2, float(sum(r + 1 for r in members if r >= s))))
