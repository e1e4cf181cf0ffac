"""No copies: a C-contiguous input is what tcoll reads (held by the request
until wait()), a non-contiguous one is copied at submission; the in-place
calls return the array itself; outputs tcoll allocates are arrays over its
memory."""

import sys

import numpy as np

import tcoll
from np_util import assert_same, need_ranks, together, values, wait_all


def test_input_is_read_from_the_array_itself(rank, size, name):
    """Rank 0 changes its inputs after submitting them, before the other
    ranks submit (they wait for a collective rank 0 joins only after the
    change): the contiguous input's change shows in the result, the
    non-contiguous one's does not (it was copied at submission)."""
    need_ranks(size, 2)
    contiguous = np.full(4, 1.0)
    backing = np.full((4, 2), 1.0)
    strided = backing[:, 0]
    go = lambda: tcoll.allreduce(np.ones(1), name=name("go"))  # noqa: E731
    if rank == 0:
        handles = [tcoll.allreduce_async(contiguous, name=name("contiguous")),
                   tcoll.allreduce_async(strided, name=name("strided"))]
        contiguous[:] = 5.0
        backing[:] = 5.0
        together(go)
    else:
        together(go)
        handles = [tcoll.allreduce_async(contiguous, name=name("contiguous")),
                   tcoll.allreduce_async(strided, name=name("strided"))]
    got_contiguous, got_strided = wait_all(handles)
    assert_same(got_contiguous, np.full(4, 5.0 + (size - 1)))
    assert_same(got_strided, np.full(4, float(size)))


def test_request_holds_the_input_until_wait(rank, size, name):
    """The request holds a buffer of the contiguous input itself (one more
    reference) until wait() lets it go; a non-contiguous input is not held
    (its copy is)."""
    x = values(rank, (16,), "float32")
    strided = values(rank, (16, 2), "float32")[:, 1]
    refs_x, refs_strided = sys.getrefcount(x), sys.getrefcount(strided)
    hx = tcoll.allreduce_async(x, name=name("x"))
    hs = tcoll.allreduce_async(strided, name=name("strided"))
    held_x, held_strided = sys.getrefcount(x), sys.getrefcount(strided)
    wait_all([hx, hs])
    assert held_x == refs_x + 1
    assert held_strided == refs_strided
    assert sys.getrefcount(x) == refs_x


def test_in_place_returns_the_array(rank, size, name):
    a = np.full(3, float(rank))
    b = np.full((2, 2), rank, np.int32)
    got_a, got_b, got_a_async = together(
        lambda: tcoll.allreduce_(a, name=name("a")),
        lambda: tcoll.broadcast_(b, size - 1, name=name("b")),
        lambda: tcoll.allreduce_async_(a, name=name("a2")).wait())
    assert got_a is a and got_b is b and got_a_async is a
    total = size * (size - 1) / 2
    assert_same(a, np.full(3, total * size))
    assert_same(b, np.full((2, 2), size - 1, np.int32))


def test_outputs_are_tcolls_memory(rank, size, name):
    """allgather, reducescatter and alltoall return arrays over the memory
    tcoll allocated: no copy; the array keeps that memory alive."""
    outs = together(
        lambda: tcoll.allgather(np.ones((1, 2)), name=name("ag")),
        lambda: tcoll.reducescatter(np.ones((size, 2)), name=name("rs")),
        lambda: tcoll.alltoall(np.ones((size, 2)), name=name("a2a"))[0],
        lambda: tcoll.grouped_allgather([np.ones(2)], names=[name("gag")])[0])
    for out in outs:
        base = out
        while isinstance(base, np.ndarray):
            base = base.base
        assert isinstance(base, memoryview) and isinstance(base.obj, tcoll.Request)
        assert out.flags.writeable and out.flags.c_contiguous
    allreduced, = together(lambda: tcoll.allreduce(np.ones(2), name=name("ar")))
    assert allreduced.base is None  # a plain new array of NumPy's
