"""tcoll.reducescatter on NumPy arrays: every dtype and op, row counts
around the number of ranks (uneven blocks, ranks with no rows), against an
independently computed result and mpi4py's Reduce_scatter."""

import numpy as np
import pytest

import tcoll
from np_util import (DTYPE_OPS, FLOATS, OPS, assert_reduced, mpi_reducescatter,
                     reduce_expected, rows_of, together, values)


@pytest.mark.parametrize("dtype,op", DTYPE_OPS, ids=["%s-%s" % p for p in DTYPE_OPS])
def test_every_dtype_and_op(dtype, op, rank, size, comm, name):
    shape = (2 * size + 1, 2)  # uneven: the first rank gets one row more
    x = values(rank, shape, dtype, op)
    original = x.copy()
    out, out_async, ref = together(
        lambda: tcoll.reducescatter(x, op=OPS[op], name=name("sync")),
        lambda: tcoll.reducescatter_async(x, op=OPS[op], name=name("async")).wait(),
        lambda: mpi_reducescatter(comm, x, op))
    full = reduce_expected([values(r, shape, dtype, op) for r in range(size)], op, dtype)
    start, count = rows_of(shape[0], size, rank)
    for got in (out, out_async):
        assert_reduced(got, full[start:start + count], op)
    np.testing.assert_array_equal(x, original)
    if ref is not None:
        assert_reduced(out, ref, op)


@pytest.mark.parametrize("extra", [-1, 0, 1, 2], ids=lambda e: "size%+d" % e)
@pytest.mark.parametrize("cols", [(), (3,), (2, 2)], ids=str)
def test_uneven_rows(extra, cols, rank, size, comm, name):
    """size-1, size, size+1 and size+2 rows: some ranks get no row, or the
    first ones one more."""
    rows = max(size + extra, 0)
    shape = (rows,) + cols
    x = values(rank, shape, "float32")
    out, ref = together(lambda: tcoll.reducescatter(x, name=name()),
                        lambda: mpi_reducescatter(comm, x, "sum"))
    full = reduce_expected([values(r, shape, "float32") for r in range(size)], "sum", "float32")
    start, count = rows_of(rows, size, rank)
    assert_reduced(out, full[start:start + count], "sum")
    if ref is not None:
        assert_reduced(out, ref, "sum")


def test_zero_rows(name):
    out, = together(lambda: tcoll.reducescatter(np.zeros((0, 4), np.int16), name=name()))
    assert out.shape == (0, 4) and out.dtype == np.int16


@pytest.mark.parametrize("dtype", ["int32"] + FLOATS)
def test_scaling(dtype, rank, size, name):
    shape = (size + 1, 3)
    x = values(rank, shape, dtype)
    out, = together(lambda: tcoll.reducescatter(x, name=name(), prescale_factor=2,
                                                postscale_factor=0.5 if dtype in FLOATS else 3))
    post = 0.5 if dtype in FLOATS else 3
    full = (sum(values(r, shape, dtype).astype(np.float64) * 2 for r in range(size)) * post)
    start, count = rows_of(shape[0], size, rank)
    assert_reduced(out, full[start:start + count].astype(dtype), "sum")


def test_non_contiguous_input(rank, size, name):
    full = values(rank, (size + 2, 6), "int64")
    out, = together(lambda: tcoll.reducescatter(full[:, ::3], op=tcoll.Max, name=name()))
    want = reduce_expected([values(r, (size + 2, 6), "int64")[:, ::3] for r in range(size)],
                           "max", "int64")
    start, count = rows_of(size + 2, size, rank)
    assert_reduced(out, want[start:start + count], "max")


def test_output_is_tcolls_memory(rank, size, name):
    out, = together(lambda: tcoll.reducescatter(values(rank, (size, 2), "float64"), name=name()))
    base = out
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(base, memoryview) and isinstance(base.obj, tcoll.Request)
    assert out.flags.writeable
