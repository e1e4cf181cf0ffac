"""tcoll.allreduce and its variants (in place, asynchronous) on NumPy arrays:
every dtype and op against an independently computed result and against
mpi4py; sizes around the fusion and eager limits; scaling; non-contiguous,
read-only, zero-size and 0-dim arrays."""

import numpy as np
import pytest

import tcoll
from np_util import (DTYPE_OPS, DTYPES, FLOATS, OPS, assert_reduced, mpi_allreduce,
                     reduce_expected, together, values)


@pytest.mark.parametrize("dtype,op", DTYPE_OPS, ids=["%s-%s" % p for p in DTYPE_OPS])
def test_every_dtype_and_op(dtype, op, rank, size, comm, name):
    shape = (3, 5)
    x = values(rank, shape, dtype, op)
    original = x.copy()
    in_place, in_place_async = x.copy(), x.copy()
    out, ip, out_async, ip_async, ref = together(
        lambda: tcoll.allreduce(x, op=OPS[op], name=name("out")),
        lambda: tcoll.allreduce_(in_place, op=OPS[op], name=name("in")),
        lambda: tcoll.allreduce_async(x, op=OPS[op], name=name("async")).wait(),
        lambda: tcoll.allreduce_async_(in_place_async, op=OPS[op], name=name("async_")).wait(),
        lambda: mpi_allreduce(comm, x, op))
    want = reduce_expected([values(r, shape, dtype, op) for r in range(size)], op, dtype)
    for got in (out, ip, out_async, ip_async):
        assert_reduced(got, want, op)
    assert ip is in_place and ip_async is in_place_async
    assert out is not x and not np.shares_memory(out, x)
    np.testing.assert_array_equal(x, original)  # the input is left alone
    if ref is not None:
        assert_reduced(out, ref, op)


@pytest.mark.parametrize("dtype", ["uint8", "float16", "int32", "float32", "float64"])
@pytest.mark.parametrize("count", [0, 1, 7, 4099, 70001])
def test_sizes(dtype, count, rank, size, comm, name):
    """Counts that ride eagerly, are fused, and run as ring allreduces of
    several chunks (TCOLL_FUSION_THRESHOLD_KB, TCOLL_RING_CHUNK_KB)."""
    x = values(rank, (count,), dtype)
    buf = x.copy()
    out, ip, ref = together(lambda: tcoll.allreduce(x, name=name("out")),
                            lambda: tcoll.allreduce_(buf, op=tcoll.Max, name=name("max")),
                            lambda: mpi_allreduce(comm, x, "sum"))
    assert_reduced(out, reduce_expected([values(r, (count,), dtype) for r in range(size)],
                                        "sum", dtype), "sum")
    assert_reduced(ip, reduce_expected([values(r, (count,), dtype) for r in range(size)],
                                       "max", dtype), "max")
    if ref is not None:
        assert_reduced(out, ref, "sum")


@pytest.mark.parametrize("dtype", DTYPES)
def test_scaling(dtype, rank, size, name):
    """prescale multiplies each input, postscale the result: floats in their
    own precision, integers in double, truncated toward zero."""
    shape = (2, 7)
    x = values(rank, shape, dtype)
    inputs = [values(r, shape, dtype).astype(np.float64) for r in range(size)]
    if dtype in FLOATS:
        got_sum, got_avg = together(
            lambda: tcoll.allreduce(x, name=name("sum"), prescale_factor=0.5,
                                    postscale_factor=4.0),
            lambda: tcoll.allreduce(x, op=tcoll.Average, name=name("avg"),
                                    prescale_factor=0.5, postscale_factor=4.0))
        assert_reduced(got_sum, (sum(v * 0.5 for v in inputs) * 4.0).astype(dtype), "sum")
        assert_reduced(got_avg, (sum(v * 0.5 for v in inputs) / size * 4.0).astype(dtype),
                       "average")
    else:
        got_exact, got_trunc = together(
            lambda: tcoll.allreduce(x, name=name("exact"), prescale_factor=3,
                                    postscale_factor=2),
            lambda: tcoll.allreduce(x, name=name("trunc"), prescale_factor=0.5,
                                    postscale_factor=1.5))
        assert_reduced(got_exact, (sum(v * 3 for v in inputs) * 2).astype(dtype), "sum")
        want = np.trunc(sum(np.trunc(v * 0.5) for v in inputs) * 1.5)
        assert_reduced(got_trunc, want.astype(dtype), "sum")


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_non_contiguous_input_is_copied(dtype, rank, size, name):
    full = values(rank, (4, 6), dtype)
    strided = full[:, ::2]
    transposed = full.T
    assert not strided.flags.c_contiguous and not transposed.flags.c_contiguous
    a, b, c, refused_ar, refused_ar_async = together(
        lambda: tcoll.allreduce(strided, name=name("strided")),
        lambda: tcoll.allreduce(transposed, name=name("transposed")),
        lambda: tcoll.allreduce_async(strided, op=tcoll.Min, name=name("async")).wait(),
        lambda: pytest.raises(ValueError, tcoll.allreduce_, strided, name=name("refused")),
        lambda: pytest.raises(ValueError, tcoll.allreduce_async_, transposed,
                              name=name("refused_async")))
    everyone = [values(r, (4, 6), dtype) for r in range(size)]
    assert_reduced(a, reduce_expected([v[:, ::2] for v in everyone], "sum", dtype), "sum")
    assert_reduced(b, reduce_expected([v.T for v in everyone], "sum", dtype), "sum")
    assert_reduced(c, reduce_expected([v[:, ::2] for v in everyone], "min", dtype), "min")
    assert a.flags.c_contiguous and b.flags.c_contiguous
    assert "C-contiguous" in str(refused_ar.value)
    np.testing.assert_array_equal(full, values(rank, (4, 6), dtype))


def test_read_only(rank, size, name):
    x = values(rank, (5,), "float32")
    x.flags.writeable = False
    out, refused = together(lambda: tcoll.allreduce(x, name=name("out")),
                            lambda: pytest.raises(ValueError, tcoll.allreduce_, x,
                                                  name=name("in")))
    assert_reduced(out, reduce_expected([values(r, (5,), "float32") for r in range(size)],
                                        "sum", "float32"), "sum")
    assert "read-only" in str(refused.value)


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 2)], ids=str)
@pytest.mark.parametrize("dtype", ["int8", "float16", "float64"])
def test_zero_size(shape, dtype, name):
    x = np.zeros(shape, dtype=dtype)
    buf = x.copy()
    out, ip, out_async = together(
        lambda: tcoll.allreduce(x, name=name("out")),
        lambda: tcoll.allreduce_(buf, op=tcoll.Product, name=name("in")),
        lambda: tcoll.allreduce_async(x, op=tcoll.Max, name=name("async")).wait())
    for got in (out, ip, out_async):
        assert got.shape == shape and got.dtype == np.dtype(dtype)
    assert ip is buf


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_dim(dtype, rank, size, name):
    """A 0-dim array gives a 0-dim result (in place too)."""
    x = np.array(values(rank, (1,), dtype)[0])
    buf = x.copy()
    assert x.ndim == 0
    out, ip = together(lambda: tcoll.allreduce(x, name=name("out")),
                       lambda: tcoll.allreduce_(buf, op=tcoll.Min, name=name("in")))
    inputs = [np.array(values(r, (1,), dtype)[0]) for r in range(size)]
    assert_reduced(out, reduce_expected(inputs, "sum", dtype), "sum")
    assert_reduced(ip, reduce_expected(inputs, "min", dtype), "min")
    assert ip is buf


def test_python_values(rank, size, name):
    """Python scalars and lists go through numpy.asarray (float64, int64)."""
    scalar, lst = together(lambda: tcoll.allreduce(float(rank + 1), name=name("scalar")),
                           lambda: tcoll.allreduce([rank, 2 * rank], name=name("list")))
    assert scalar.shape == () and scalar.dtype == np.float64
    assert scalar == size * (size + 1) / 2
    assert lst.dtype == np.int64
    np.testing.assert_array_equal(lst, [size * (size - 1) // 2, size * (size - 1)])


def test_async_handle(rank, size, name):
    """done() never blocks and is True once complete; wait() returns the
    result, the same object every time."""
    x = values(rank, (9,), "float64")
    handles = [tcoll.allreduce_async(x, name=name(str(i))) for i in range(4)]
    results = together(*[h.wait for h in handles])
    want = reduce_expected([values(r, (9,), "float64") for r in range(size)], "sum", "float64")
    for h, got in zip(handles, results):
        assert h.done()
        assert h.wait() is got
        assert_reduced(got, want, "sum")
    assert isinstance(handles[0], tcoll.Handle)
