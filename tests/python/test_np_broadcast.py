"""tcoll.broadcast and broadcast_ (in place), synchronous and asynchronous,
from every root, every dtype, against the root's values and mpi4py's Bcast;
0-dim, zero-size and non-contiguous arrays."""

import numpy as np
import pytest

import tcoll
from np_util import DTYPES, assert_same, mpi_bcast, together, values


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_every_root(dtype, rank, size, comm, name):
    shape = (2, 3)
    calls = []
    buffers = {}
    for root in range(size):
        x = values(rank, shape, dtype, salt=root)
        buffers[root] = (x.copy(), x.copy())
        calls += [
            lambda x=x, root=root: tcoll.broadcast(x, root, name=name("copy%d" % root)),
            lambda root=root: tcoll.broadcast_(buffers[root][0], root,
                                               name=name("in%d" % root)),
            lambda x=x, root=root: tcoll.broadcast_async(x, root,
                                                         name=name("async%d" % root)).wait(),
            lambda root=root: tcoll.broadcast_async_(buffers[root][1], root,
                                                     name=name("async_%d" % root)).wait(),
            lambda x=x, root=root: mpi_bcast(comm, x, root),
        ]
    results = together(*calls)
    for root in range(size):
        copy, in_place, copy_async, in_place_async, ref = results[5 * root:5 * root + 5]
        want = values(root, shape, dtype, salt=root)
        for got in (copy, in_place, copy_async, in_place_async):
            assert_same(got, want)
        assert in_place is buffers[root][0] and in_place_async is buffers[root][1]
        if ref is not None:
            assert_same(copy, ref)


def test_input_left_alone(rank, size, name):
    """broadcast (not in place) returns a new array; the input keeps this
    rank's values."""
    x = values(rank, (4,), "float32", salt=5)
    out, = together(lambda: tcoll.broadcast(x, size - 1, name=name()))
    assert_same(out, values(size - 1, (4,), "float32", salt=5))
    assert out is not x and not np.shares_memory(out, x)
    assert_same(x, values(rank, (4,), "float32", salt=5))


@pytest.mark.parametrize("dtype", ["int8", "float16", "float64"])
def test_zero_dim_and_zero_size(dtype, rank, size, name):
    scalar = np.array(rank + 10, dtype=dtype)
    empty = np.zeros((0, 2), dtype=dtype)
    out, ip, out_empty = together(
        lambda: tcoll.broadcast(scalar, 0, name=name("scalar")),
        lambda: tcoll.broadcast_(scalar, size - 1, name=name("scalar_")),
        lambda: tcoll.broadcast(empty, 0, name=name("empty")))
    assert out.shape == () and out == 10
    assert ip is scalar and scalar == size - 1 + 10
    assert out_empty.shape == (0, 2) and out_empty.dtype == np.dtype(dtype)


def test_python_values(rank, size, name):
    lst, = together(lambda: tcoll.broadcast([rank, rank + 1], size - 1, name=name()))
    assert_same(lst, np.array([size - 1, size], dtype=np.int64))


def test_non_contiguous(rank, size, name):
    """broadcast copies a non-contiguous input; broadcast_ refuses it."""
    full = values(rank, (3, 4), "int32")
    out, refused, refused_async = together(
        lambda: tcoll.broadcast(full[:, ::2], 0, name=name("copy")),
        lambda: pytest.raises(ValueError, tcoll.broadcast_, full[:, ::2], 0, name=name("in")),
        lambda: pytest.raises(ValueError, tcoll.broadcast_async_, full.T, 0,
                              name=name("in_async")))
    assert_same(out, values(0, (3, 4), "int32")[:, ::2])
    assert "C-contiguous" in str(refused.value)
    assert_same(full, values(rank, (3, 4), "int32"))
