"""tcoll.allgather on NumPy arrays: every dtype, different first dimensions
per rank (zero rows included), 0-dim and zero-size inputs, non-contiguous
inputs, against an independently computed result and mpi4py's Allgatherv;
the output is tcoll's memory, not a copy."""

import numpy as np
import pytest

import tcoll
from np_util import DTYPES, assert_same, mpi_allgather, together, values


def rows(rank):
    return rank % 3  # 0, 1, 2, 0, ...: ranks give different numbers of rows, some none


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype(dtype, rank, size, comm, name):
    x = values(rank, (rows(rank), 3), dtype, salt=rank)
    original = x.copy()
    out, out_async, ref = together(
        lambda: tcoll.allgather(x, name=name("sync")),
        lambda: tcoll.allgather_async(x, name=name("async")).wait(),
        lambda: mpi_allgather(comm, x))
    want = np.concatenate([values(r, (rows(r), 3), dtype, salt=r) for r in range(size)])
    assert_same(out, want)
    assert_same(out_async, want)
    np.testing.assert_array_equal(x, original)
    if ref is not None:
        assert_same(out, ref)


@pytest.mark.parametrize("shape", [(2,), (1, 2, 2), (3, 1, 1, 2)], ids=str)
def test_shapes(shape, rank, size, comm, name):
    """The dims after the first are kept; each rank's first dimension is its own."""
    mine = (shape[0] + rank,) + shape[1:]
    x = values(rank, mine, "int16")
    out, ref = together(lambda: tcoll.allgather(x, name=name()),
                        lambda: mpi_allgather(comm, x))
    want = np.concatenate([values(r, (shape[0] + r,) + shape[1:], "int16")
                           for r in range(size)])
    assert_same(out, want)
    if ref is not None:
        assert_same(out, ref)


@pytest.mark.parametrize("dtype", ["uint8", "float16", "int64"])
def test_zero_dim(dtype, rank, size, name):
    """0-dim inputs are gathered as one row each: a vector of size()."""
    x = np.array(rank + 1, dtype=dtype)
    out, = together(lambda: tcoll.allgather(x, name=name()))
    assert_same(out, np.arange(1, size + 1, dtype=dtype))


def test_zero_size(name):
    """Every rank gives no rows."""
    out, flat = together(lambda: tcoll.allgather(np.zeros((0, 3), np.float32), name=name("2d")),
                         lambda: tcoll.allgather(np.zeros(0, np.int8), name=name("1d")))
    assert out.shape == (0, 3) and out.dtype == np.float32
    assert flat.shape == (0,) and flat.dtype == np.int8


def test_non_contiguous_input(rank, size, name):
    full = values(rank, (4, 6), "float64")
    out, out_t = together(lambda: tcoll.allgather(full[::2, 1::2], name=name("strided")),
                          lambda: tcoll.allgather(full.T, name=name("transposed")))
    everyone = [values(r, (4, 6), "float64") for r in range(size)]
    assert_same(out, np.concatenate([v[::2, 1::2] for v in everyone]))
    assert_same(out_t, np.concatenate([v.T for v in everyone]))


def test_output_is_tcolls_memory(rank, size, name):
    """The result is an array over the memory tcoll allocated (its base is
    a view of the request), writable, not sharing the input's memory, and
    it stays valid after the handle is gone."""
    x = values(rank, (2, 2), "int32")
    handle = tcoll.allgather_async(x, name=name())
    out, = together(handle.wait)
    del handle
    base = out
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(base, memoryview) and isinstance(base.obj, tcoll.Request)
    assert out.flags.writeable and out.flags.c_contiguous
    assert not np.shares_memory(out, x)
    out[...] = 7  # tcoll's buffer is the caller's now
    assert (out == 7).all()
