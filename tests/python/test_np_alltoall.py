"""tcoll.alltoall on NumPy arrays: equal parts, uneven and empty splits and
the splits each rank received, every dtype, against an independently
computed result and mpi4py's Alltoallv; refused splits."""

import numpy as np
import pytest

import tcoll
from np_util import DTYPES, assert_same, mpi_alltoall, need_ranks, together


def sent(src, dst, shape_rest, dtype, splits):
    """The rows rank src sends to rank dst: each element encodes both ranks
    and its place, small enough for int8."""
    n = splits(src)[dst]
    count = n * int(np.prod(shape_rest, dtype=np.int64))
    v = (np.arange(count) + 10 * src + 3 * dst) % 50
    return v.reshape((n,) + tuple(shape_rest)).astype(dtype)


def uneven(size):
    # rank r sends (r + 2j) % 3 rows to rank j: 0, 1 or 2, never the same
    # pattern on every rank
    return lambda r: [(r + 2 * j) % 3 for j in range(size)]


def input_of(rank, size, shape_rest, dtype, splits):
    return np.concatenate([sent(rank, j, shape_rest, dtype, splits) for j in range(size)])


def received_by(rank, size, shape_rest, dtype, splits):
    return np.concatenate([sent(q, rank, shape_rest, dtype, splits) for q in range(size)])


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype(dtype, rank, size, comm, name):
    equal = lambda r: [2] * size  # noqa: E731
    split = uneven(size)
    x_equal = input_of(rank, size, (3,), dtype, equal)
    x_uneven = input_of(rank, size, (3,), dtype, split)
    (out_eq, got_eq), (out_un, got_un), (out_as, got_as), ref_eq, ref_un = together(
        lambda: tcoll.alltoall(x_equal, name=name("equal")),
        lambda: tcoll.alltoall(x_uneven, splits=split(rank), name=name("uneven")),
        lambda: tcoll.alltoall_async(x_uneven, splits=split(rank), name=name("async")).wait(),
        lambda: mpi_alltoall(comm, x_equal, None),
        lambda: mpi_alltoall(comm, x_uneven, split(rank)))
    assert_same(out_eq, received_by(rank, size, (3,), dtype, equal))
    assert_same(got_eq, np.full(size, 2, dtype=np.int64))
    want = received_by(rank, size, (3,), dtype, split)
    want_splits = np.array([split(q)[rank] for q in range(size)], dtype=np.int64)
    for out, got in ((out_un, got_un), (out_as, got_as)):
        assert_same(out, want)
        assert_same(got, want_splits)
    if ref_eq is not None:
        assert_same(out_eq, ref_eq[0])
        assert_same(out_un, ref_un[0])
        assert_same(got_un, ref_un[1])


@pytest.mark.parametrize("kind", ["list", "tuple", "ndarray"])
def test_splits_forms(kind, rank, size, name):
    split = uneven(size)
    mine = {"list": list, "tuple": tuple, "ndarray": np.array}[kind](split(rank))
    x = input_of(rank, size, (), "int32", split)
    (out, got), = together(lambda: tcoll.alltoall(x, splits=mine, name=name()))
    assert_same(out, received_by(rank, size, (), "int32", split))
    assert list(got) == [split(q)[rank] for q in range(size)]


def test_empty(rank, size, name):
    """Every split 0: an empty result and zero received splits."""
    x = np.zeros((0, 2), np.float16)
    (out, got), (out_none, got_none) = together(
        lambda: tcoll.alltoall(x, splits=[0] * size, name=name("zeros")),
        lambda: tcoll.alltoall(x, name=name("none")))
    for o, g in ((out, got), (out_none, got_none)):
        assert o.shape == (0, 2) and o.dtype == np.float16
        assert_same(g, np.zeros(size, np.int64))


def test_to_one_rank(rank, size, name):
    """Everything goes to the last rank."""
    split = lambda r: [0] * (size - 1) + [r + 1]  # noqa: E731
    x = input_of(rank, size, (2,), "float64", split)
    (out, got), = together(lambda: tcoll.alltoall(x, splits=split(rank), name=name()))
    assert_same(out, received_by(rank, size, (2,), "float64", split))
    if rank == size - 1:
        assert list(got) == list(range(1, size + 1))
    else:
        assert list(got) == [0] * size


def test_non_contiguous_input(rank, size, name):
    split = lambda r: [1] * size  # noqa: E731
    full = np.repeat(input_of(rank, size, (2,), "int16", split), 2, axis=1)  # (size, 4)
    (out, _), = together(lambda: tcoll.alltoall(full[:, ::2], name=name()))
    assert_same(out, received_by(rank, size, (2,), "int16", split))


def test_refused_splits(rank, size, name):
    """Wrong number of splits (ValueError), a total other than the rows or a
    negative split (InvalidArgumentError, also a ValueError): refused at once
    on every rank, nothing queued."""
    x = np.zeros((size, 2), np.float32)
    too_many, wrong_total, negative, zero_dim, (out, _) = together(
        lambda: pytest.raises(ValueError, tcoll.alltoall, x, splits=[1] * (size + 1),
                              name=name("many")),
        lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.alltoall, x,
                              splits=[size + 1] + [0] * (size - 1), name=name("total")),
        lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.alltoall, x,
                              splits=[-1] + [1] * (size - 1), name=name("negative")),
        lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.alltoall, np.array(1.0),
                              name=name("0-dim")),
        # the refused names were never queued: they run now
        lambda: tcoll.alltoall(x, name=name("total")))
    assert "splits" in str(too_many.value)
    assert "add up" in str(wrong_total.value)
    assert "negative" in str(negative.value)
    assert "ndim" in str(zero_dim.value)
    assert out.shape == (size, 2)


def test_indivisible_rows_without_splits(size, name):
    need_ranks(size, 2)
    refused, = together(lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.alltoall,
                                              np.zeros((size + 1, 2)), name=name()))
    assert "divisible" in str(refused.value)
