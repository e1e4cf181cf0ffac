"""tcoll.barrier and tcoll.join: a barrier waits for the last rank and for
this rank's earlier requests; ranks that run different numbers of steps
join, and while some have joined the others' allreduces and reducescatters
run without them (zeros, or the op's identity)."""

import time

import numpy as np
import pytest

import tcoll
from np_util import (OPS, assert_reduced, need_ranks, reduce_expected, rows_of, together,
                     values, wait_all)


def test_barrier(name):
    handle = tcoll.barrier_async()
    result, plain, several = together(
        handle.wait, tcoll.barrier,
        lambda: wait_all([tcoll.barrier_async() for _ in range(6)]))  # several in flight
    assert isinstance(handle, tcoll.Handle)
    assert result is None and handle.done()
    assert plain is None
    assert several == [None] * 6


def test_barrier_waits_for_earlier_requests(rank, size, name):
    handles = [tcoll.allreduce_async(np.ones(1000) * rank, name=name(str(i))) for i in range(3)]
    together(tcoll.barrier)
    done = [h.done() for h in handles]
    results = wait_all(handles)
    assert done == [True] * 3
    for got in results:
        assert got[0] == size * (size - 1) / 2


def test_barrier_waits_for_the_last_rank(rank, size):
    need_ranks(size, 2)
    together(tcoll.barrier)  # start together
    if rank == size - 1:
        time.sleep(1.0)
    start = time.monotonic()
    together(tcoll.barrier)
    waited = time.monotonic() - start
    if rank != size - 1:
        assert waited > 0.5, waited


def steps_of(rank):
    return rank + 1  # rank r runs r + 1 steps, then joins


@pytest.mark.parametrize("dtype,op", [("float32", "sum"), ("int32", "sum"),
                                      ("float64", "average"), ("int16", "min"),
                                      ("float16", "max"), ("int8", "product")],
                         ids=lambda v: str(v))
def test_join_uneven_steps(dtype, op, rank, size, name):
    """Step s runs among the ranks that have not joined (rank >= s); the
    joined ranks count as zeros (sum, average, which still divides by
    size()) or the op's identity (min, max, product). The last rank to join
    (the one with the most steps) is the join's result on every rank."""
    shape = (2, 3)
    calls = [lambda s=s: tcoll.allreduce(values(rank, shape, dtype, op, salt=s), op=OPS[op],
                                         name=name("step%d" % s))
             for s in range(steps_of(rank))]
    # afterwards every rank takes part again
    after = lambda: tcoll.allreduce(np.ones(3, dtype), name=name("after"))  # noqa: E731
    *results, last, got_after = together(*calls, tcoll.join, after)
    assert last == size - 1
    for s, got in enumerate(results):
        active = [values(r, shape, dtype, op, salt=s) for r in range(size) if r >= s]
        assert_reduced(got, reduce_expected(active, op, dtype, divide_by=size), op)
    assert_reduced(got_after, np.full(3, size, dtype), "sum")


def test_join_reducescatter(rank, size, name):
    """A joined rank adds zeros to a reducescatter, and gets no block."""
    shape = (size + 1, 2)
    calls = [lambda s=s: tcoll.reducescatter(values(rank, shape, "float32", salt=s),
                                             name=name("step%d" % s))
             for s in range(steps_of(rank))]
    *results, last = together(*calls, tcoll.join)
    assert last == size - 1
    for s, got in enumerate(results):
        full = reduce_expected([values(r, shape, "float32", salt=s) for r in range(size)
                                if r >= s], "sum", "float32")
        start, count = rows_of(shape[0], size, rank)
        assert_reduced(got, full[start:start + count], "sum")


def test_join_refusals(rank, size, name):
    """While rank 0's join is pending it cannot submit to the global set
    (StateError), and an allgather (which needs every rank) fails on the
    others with StateError naming the joined rank. The others join only
    after rank 0 has seen its refusal: they wait for it in a process set of
    every rank (another set than the join's, which rank 0 may still use)."""
    need_ranks(size, 2)
    everyone = tcoll.add_process_set(list(range(size)))
    signal = lambda: tcoll.barrier(process_set=everyone)  # noqa: E731
    if rank == 0:
        handle = tcoll.join_async()
        first = lambda: pytest.raises(tcoll.StateError, tcoll.allreduce,  # noqa: E731
                                      np.ones(2), name=name("while-joined"))
        join = handle.wait
    else:
        first = lambda: pytest.raises(tcoll.StateError, tcoll.allgather,  # noqa: E731
                                      np.ones(2), name=name("allgather"))
        join = tcoll.join
    # then every rank takes part again
    refused, _, last, after, _ = together(
        first, signal, join, lambda: tcoll.allgather(np.array([rank]), name=name("after")),
        lambda: tcoll.remove_process_set(everyone))
    if rank == 0:
        assert "join" in str(refused.value)
    else:
        assert "joined" in str(refused.value) and "0" in str(refused.value)
    assert last in range(1, size)
    np.testing.assert_array_equal(after, np.arange(size))
