"""Helpers of tcoll's NumPy tests: the dtypes and ops, inputs every rank can
compute for every other rank, expected results computed without tcoll, the
same collectives through mpi4py, and ``together``, which runs a test's
collective calls on every rank whatever happens (see conftest.py)."""

import numpy as np
import pytest

import tcoll

DTYPES = ["uint8", "int8", "int16", "uint16", "int32", "int64", "float16", "float32", "float64"]
FLOATS = ["float16", "float32", "float64"]
OPS = {"sum": tcoll.Sum, "average": tcoll.Average, "min": tcoll.Min, "max": tcoll.Max,
       "product": tcoll.Product}
# Every (dtype, op) tcoll reduces: average needs a floating dtype.
DTYPE_OPS = [(d, o) for d in DTYPES for o in OPS if o != "average" or d in FLOATS]
# dtypes tcoll refuses (TypeError).
BAD_DTYPES = ["bool", "uint32", "uint64", "complex64", "complex128", "longdouble", "U3",
              "object"]


def is_float(dtype):
    return np.dtype(dtype).kind == "f"


def is_signed(dtype):
    return np.dtype(dtype).kind in "if"


def need_ranks(size, n):
    """Skips the test (on every rank alike) below n ranks."""
    if size < n:
        pytest.skip("needs %d ranks" % n)


def values(rank, shape, dtype, op="sum", salt=0):
    """Rank `rank`'s input of a test: small integers, exact in every dtype
    (float16 included), so that sums, products, minima and maxima over up to
    6 ranks are exact and fit int8/uint8; they differ across ranks and
    elements. `salt` gives another sequence."""
    shape = tuple(shape)
    count = int(np.prod(shape, dtype=np.int64))
    v = np.arange(count, dtype=np.int64) * 7 + rank * 4 + salt * 11
    if op == "product":
        v = (v % 5) - 2 if is_signed(dtype) else v % 3
    else:
        v = (v % 9) - 4 if is_signed(dtype) else v % 5
    return v.reshape(shape).astype(dtype)


def reduce_expected(inputs, op, dtype, divide_by=None):
    """op over the list of the ranks' inputs, in int64 or float64, then cast
    to dtype; average divides by divide_by (default: the number of inputs)."""
    wide = np.float64 if is_float(dtype) else np.int64
    stack = np.stack([np.asarray(x, dtype=wide) for x in inputs])
    if op == "sum":
        out = stack.sum(axis=0)
    elif op == "average":
        out = stack.sum(axis=0) / (divide_by or len(inputs))
    elif op == "min":
        out = stack.min(axis=0)
    elif op == "max":
        out = stack.max(axis=0)
    elif op == "product":
        out = stack.prod(axis=0)
    else:
        raise ValueError(op)
    return out.astype(dtype)


def assert_reduced(got, want, op):
    """Same dtype and shape; equal values (average: to the dtype's precision,
    as tcoll divides in the dtype's own arithmetic, float16 in float32)."""
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                                 want.dtype, want.shape)
    if op == "average":
        rtol = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-12}[got.dtype.name]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                                   atol=0)
    else:
        np.testing.assert_array_equal(got, want)


def assert_same(got, want):
    """Same dtype, shape and values."""
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                                 want.dtype, want.shape)
    np.testing.assert_array_equal(got, want)


def rows_of(rows, n, r):
    """(start, count) of rank r's block when `rows` rows are split over n
    ranks as evenly as possible, the first ranks one more."""
    base, extra = divmod(rows, n)
    return r * base + min(r, extra), base + (1 if r < extra else 0)


def attempt(call):
    """call()'s result, or the exception it raised (pytest's failures
    included: pytest.raises that sees nothing raises a BaseException)."""
    try:
        return call()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 (together raises it again)
        return e


def together(*calls):
    """Runs every call, even after one raised (so that every rank makes the
    same collective calls), then raises the first exception, or returns the
    results."""
    results = [attempt(c) for c in calls]
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results


def wait_all(handles):
    """Waits for every handle (even after one raised); the results."""
    return together(*[h.wait for h in handles])


# ---- the same collectives through mpi4py (None without it) -----------------

def _mpi_op(op):
    from mpi4py import MPI
    return {"sum": MPI.SUM, "average": MPI.SUM, "min": MPI.MIN, "max": MPI.MAX,
            "product": MPI.PROD}[op]


def _movable(x):
    # MPI has no float16: move its bits.
    return x.view(np.uint16) if x.dtype == np.float16 else x


def mpi_allreduce(comm, x, op):
    if comm is None:
        return None
    x = np.ascontiguousarray(x)
    work = x.astype(np.float32) if x.dtype == np.float16 else x
    out = np.empty_like(work)
    comm.Allreduce(work, out, op=_mpi_op(op))
    if op == "average":
        out = out / comm.Get_size()
    return out.astype(x.dtype)


def mpi_allgather(comm, x):
    if comm is None:
        return None
    x = np.ascontiguousarray(x)
    rows = comm.allgather(x.shape[0])
    row = int(np.prod(x.shape[1:], dtype=np.int64))
    out = np.empty((sum(rows),) + x.shape[1:], dtype=x.dtype)
    counts = [r * row for r in rows]
    comm.Allgatherv(_movable(x), [_movable(out), counts])
    return out


def mpi_bcast(comm, x, root):
    if comm is None:
        return None
    out = np.array(x, copy=True, order="C")
    comm.Bcast(_movable(out), root=root)
    return out


def mpi_reducescatter(comm, x, op):
    if comm is None:
        return None
    x = np.ascontiguousarray(x)
    n, r = comm.Get_size(), comm.Get_rank()
    row = int(np.prod(x.shape[1:], dtype=np.int64))
    work = x.astype(np.float32) if x.dtype == np.float16 else x
    counts = [rows_of(x.shape[0], n, q)[1] * row for q in range(n)]
    out = np.empty((rows_of(x.shape[0], n, r)[1],) + x.shape[1:], dtype=work.dtype)
    comm.Reduce_scatter(work, out, recvcounts=counts, op=_mpi_op(op))
    if op == "average":
        out = out / n
    return out.astype(x.dtype)


def mpi_alltoall(comm, x, splits):
    """(output, received splits) of an alltoall; splits None: equal parts."""
    if comm is None:
        return None
    x = np.ascontiguousarray(x)
    n = comm.Get_size()
    if splits is None:
        splits = [x.shape[0] // n] * n
    splits = [int(s) for s in splits]
    received = comm.alltoall(splits)
    row = int(np.prod(x.shape[1:], dtype=np.int64))
    out = np.empty((sum(received),) + x.shape[1:], dtype=x.dtype)
    scounts = [s * row for s in splits]
    rcounts = [s * row for s in received]
    sdispl = [int(v) for v in np.concatenate([[0], np.cumsum(scounts)[:-1]])]
    rdispl = [int(v) for v in np.concatenate([[0], np.cumsum(rcounts)[:-1]])]
    comm.Alltoallv([_movable(x), (scounts, sdispl)], [_movable(out), (rcounts, rdispl)])
    return out, np.asarray(received, dtype=np.int64)
