"""Every error path of the NumPy API: bad dtypes (TypeError), ops, roots and
names (ValueError / InvalidArgumentError, at once); parameters that differ
across ranks (MismatchError on every rank, from wait(), naming the ranks);
a name already in flight (DuplicateNameError, a ValueError, at once); the
library goes on after each. Automatic names agree across ranks."""

import numpy as np
import pytest

import tcoll
from np_util import BAD_DTYPES, assert_same, need_ranks, together, wait_all


def test_exception_classes():
    for cls in (tcoll.InvalidArgumentError, tcoll.StateError, tcoll.MismatchError,
                tcoll.DuplicateNameError, tcoll.ShutdownError, tcoll.TransportError,
                tcoll.OutOfMemoryError, tcoll.TimeoutError):
        assert issubclass(cls, tcoll.Error)
    assert issubclass(tcoll.Error, RuntimeError)
    assert issubclass(tcoll.InvalidArgumentError, ValueError)
    assert issubclass(tcoll.DuplicateNameError, ValueError)
    assert issubclass(tcoll.TimeoutError, TimeoutError)
    assert not issubclass(tcoll.MismatchError, ValueError)


def every_kind(array, name):
    """One call of every kind that takes an array, each refused the same way
    for a bad array."""
    buf = array.copy() if isinstance(array, np.ndarray) else array
    return [
        lambda: tcoll.allreduce(array, name=name("allreduce")),
        lambda: tcoll.allreduce_(buf, name=name("allreduce_")),
        lambda: tcoll.allreduce_async(array, name=name("allreduce_async")),
        lambda: tcoll.allgather(array, name=name("allgather")),
        lambda: tcoll.broadcast(array, 0, name=name("broadcast")),
        lambda: tcoll.broadcast_(buf, 0, name=name("broadcast_")),
        lambda: tcoll.reducescatter(array, name=name("reducescatter")),
        lambda: tcoll.alltoall(array, name=name("alltoall")),
        lambda: tcoll.grouped_allreduce([np.ones(2), array]),
        lambda: tcoll.grouped_allgather([array]),
        lambda: tcoll.grouped_reducescatter([array]),
    ]


@pytest.mark.parametrize("dtype", BAD_DTYPES)
def test_bad_dtype(dtype, size, name):
    """A dtype tcoll does not move is a TypeError from every call, at once."""
    array = np.zeros((size, 2), dtype=dtype)
    outcomes = together(*[lambda c=c: pytest.raises(TypeError, c)
                          for c in every_kind(array, name)])
    for o in outcomes:
        assert "does not reduce or move" in str(o.value)


def test_bad_op(name):
    x = np.ones((2, 2))
    calls = []
    for op in (99, -1, "sum", None, 1.5):
        calls += [lambda op=op: pytest.raises(ValueError, tcoll.allreduce, x, op=op,
                                              name=name("ar")),
                  lambda op=op: pytest.raises(ValueError, tcoll.allreduce_, x, op=op,
                                              name=name("ar_")),
                  lambda op=op: pytest.raises(ValueError, tcoll.reducescatter, x, op=op,
                                              name=name("rs")),
                  lambda op=op: pytest.raises(ValueError, tcoll.grouped_allreduce, [x], op=op)]
    for o in together(*calls):
        assert "unknown op" in str(o.value)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "uint16", "int32", "int64"])
def test_average_needs_a_floating_dtype(dtype, name):
    x = np.ones((2, 2), dtype)
    outcomes = together(
        lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.allreduce, x, op=tcoll.Average,
                              name=name("ar")),
        lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.reducescatter, x,
                              op=tcoll.Average, name=name("rs")),
        lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.grouped_allreduce, [x],
                              op=tcoll.Average))
    for o in outcomes:
        assert "floating-point" in str(o.value)


def test_bad_root(size, name):
    x = np.ones(3)
    outcomes = together(*[
        lambda root=root: pytest.raises(tcoll.InvalidArgumentError, tcoll.broadcast, x, root,
                                        name=name("b%d" % root))
        for root in (size, -1, size + 7)])
    for o in outcomes:
        assert "outside" in str(o.value)


def test_bad_names(size, name):
    """A name must be a str (TypeError), at most 1024 bytes, and not start
    with 'tcoll/' (InvalidArgumentError)."""
    x = np.ones(2)
    not_str, too_long, reserved, longest = together(
        lambda: pytest.raises(TypeError, tcoll.allreduce, x, name=5),
        lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.allreduce, x, name="n" * 1025),
        lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.allgather, x, name="tcoll/x"),
        lambda: tcoll.allreduce(x, name="n" * 1024))
    assert "1024" in str(too_long.value)
    assert "tcoll/" in str(reserved.value)
    assert_same(longest, np.full(2, float(size)))


def mismatched_calls(rank, name):
    """Calls whose parameters differ on every rank, submitted asynchronously:
    (kind of mismatch, handle)."""
    return [
        ("shape", tcoll.allreduce_async(np.ones(2 + rank), name=name("shape"))),
        ("dtype", tcoll.allreduce_async(np.ones(2, ["float32", "float64", "int32",
                                                    "int8"][rank % 4]), name=name("dtype"))),
        ("op", tcoll.allreduce_async(np.ones(2), op=[tcoll.Sum, tcoll.Max, tcoll.Min,
                                                     tcoll.Product][rank % 4],
                                     name=name("op"))),
        ("scaling factor", tcoll.allreduce_async(np.ones(2), prescale_factor=rank + 1,
                                                 name=name("scale"))),
        ("root", tcoll.broadcast_async(np.ones(2), rank, name=name("root"))),
        ("collective", (tcoll.allreduce_async if rank == 0 else tcoll.allgather_async)(
            np.ones(2), name=name("kind"))),
        ("shape", tcoll.allgather_async(np.ones((1, 2 + rank)), name=name("ag-shape"))),
        ("shape", tcoll.reducescatter_async(np.ones((2 + rank, 2)), name=name("rs-shape"))),
    ]


def test_mismatch_fails_on_every_rank(rank, size, name):
    """Every rank's wait() raises MismatchError whose message names the kind
    of mismatch and every rank with its value; then the same names run."""
    need_ranks(size, 2)
    pending = mismatched_calls(rank, name)
    outcomes = together(*[lambda h=h: pytest.raises(tcoll.MismatchError, h.wait)
                          for _, h in pending])
    again = together(lambda: tcoll.allreduce(np.ones(2), name=name("shape")),
                     lambda: tcoll.broadcast(np.ones(2), 0, name=name("root")))
    for (kind, handle), o in zip(pending, outcomes):
        message = str(o.value)
        assert kind + " mismatch" in message, message
        for r in range(min(size, 4)):
            assert "rank %d" % r in message, message
        assert handle.done()
    assert_same(again[0], np.full(2, float(size)))


def test_duplicate_name_in_flight(rank, size, name):
    """A name in flight on this rank cannot be submitted again there
    (DuplicateNameError, a ValueError, at once); once it completed it can.
    Rank r's own name stays in flight until every rank got past its
    refusal: the others submit it only after a collective ("go") that rank
    r joins after its refusal. done() is False meanwhile."""
    need_ranks(size, 2)
    mine = name("r%d" % rank)
    first = tcoll.allreduce_async(np.full(2, 1.0), name=mine)
    refused, pending_done = together(
        lambda: pytest.raises(tcoll.DuplicateNameError, tcoll.allreduce_async, np.ones(2),
                              name=mine),
        first.done)
    refused_other_kind, = together(
        lambda: pytest.raises(ValueError, tcoll.allgather_async, np.ones(2), name=mine))
    # "go" (an allreduce: a barrier would wait for this rank's pending name)
    together(lambda: tcoll.allreduce(np.ones(1), name=name("go")))
    others = [tcoll.allreduce_async(np.full(2, 1.0), name=name("r%d" % r))
              for r in range(size) if r != rank]
    results = wait_all([first] + others)
    reused, = together(lambda: tcoll.allreduce(np.ones(2), name=name("r0")))
    assert pending_done is False
    assert "already in flight" in str(refused.value)
    assert isinstance(refused_other_kind.value, tcoll.DuplicateNameError)
    for got in results:
        assert_same(got, np.full(2, float(size)))
    assert_same(reused, np.full(2, float(size)))


def test_library_goes_on_after_errors(rank, size, name):
    """After refusals of every kind the library runs as before."""
    together(lambda: pytest.raises(TypeError, tcoll.allreduce, np.ones(2, bool),
                                   name=name("bool")),
             lambda: pytest.raises(ValueError, tcoll.allreduce, np.ones(2), op=42,
                                   name=name("op")),
             lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.broadcast, np.ones(2),
                                   size, name=name("root")))
    out, gathered = together(
        lambda: tcoll.allreduce(np.full(2, rank), name=name("ok")),
        lambda: tcoll.allgather(np.array([rank]), name=name("ok2")))
    assert_same(out, np.full(2, size * (size - 1) // 2))
    assert_same(gathered, np.arange(size))


# ---- automatic names ---------------------------------------------------------

def test_automatic_names_agree(rank, size):
    """Unnamed calls of every kind, interleaved and in flight together: the
    k-th of a kind on each rank meets the others' k-th (each has a shape of
    its own, so a wrong pairing would be a mismatch)."""
    handles = []
    for k in range(4):
        handles += [tcoll.allreduce_async(np.full(k + 1, rank, np.int64)),
                    tcoll.allgather_async(np.full((1, k + 2), rank, np.int16)),
                    tcoll.broadcast_async(np.full(k + 3, rank, np.float32), k % size),
                    tcoll.reducescatter_async(np.ones((size, k + 1)), op=tcoll.Max),
                    tcoll.alltoall_async(np.full((size, k + 1), rank, np.int8))]
    handles.append(tcoll.grouped_allreduce_async([np.ones(1), np.ones(2)]))
    results = wait_all(handles)
    for k in range(4):
        ar, ag, bc, rs, (a2a, _) = results[5 * k:5 * k + 5]
        assert_same(ar, np.full(k + 1, size * (size - 1) // 2, np.int64))
        assert_same(ag, np.repeat(np.arange(size, dtype=np.int16)[:, None], k + 2, axis=1))
        assert_same(bc, np.full(k + 3, k % size, np.float32))
        assert_same(rs, np.ones((1, k + 1)))
        assert_same(a2a, np.repeat(np.arange(size, dtype=np.int8)[:, None], k + 1, axis=1))
    assert [g.shape for g in results[-1]] == [(1,), (2,)]


def test_automatic_name_format(rank, size):
    """The automatic name is "<kind>.noname.<k>", the same on every rank, as
    a mismatch's message shows."""
    need_ranks(size, 2)
    failed, = together(lambda: pytest.raises(tcoll.MismatchError, tcoll.allreduce,
                                             np.ones(1 + rank)))
    assert "'allreduce.noname." in str(failed.value)


def test_refused_unnamed_call_takes_no_name(rank, size):
    """An unnamed call refused at once on one rank only takes no automatic
    name there, so the ranks' next unnamed calls still meet."""
    refused = together(lambda: pytest.raises(TypeError, tcoll.allreduce, np.ones(2, bool))
                       if rank == 0 else None,
                       lambda: pytest.raises(ValueError, tcoll.allreduce_, np.ones((2, 2)).T)
                       if rank == size - 1 else None,
                       lambda: pytest.raises(tcoll.InvalidArgumentError, tcoll.broadcast,
                                             np.ones(2), size) if rank == 0 else None)
    out, = together(lambda: tcoll.allreduce(np.full(2, rank + 1, np.int32)))
    assert_same(out, np.full(2, size * (size + 1) // 2, np.int32))
    assert (refused[0] is not None) == (rank == 0)


def test_before_init_in_a_fresh_process():
    """Before init every call raises StateError (a fresh interpreter that
    imports tcoll without starting it; it never touches MPI)."""
    import os
    import subprocess
    import sys
    script = r'''
import numpy as np, tcoll
assert not tcoll.is_initialized()
tcoll.shutdown()  # does nothing before init
calls = [tcoll.rank, tcoll.size, tcoll.local_rank, tcoll.local_size,
         lambda: tcoll.allreduce(np.ones(2), name="a"),
         lambda: tcoll.allreduce_(np.ones(2)),
         lambda: tcoll.allgather(np.ones(2)),
         lambda: tcoll.broadcast(np.ones(2), 0),
         lambda: tcoll.reducescatter(np.ones(2)),
         lambda: tcoll.alltoall(np.ones(2)),
         lambda: tcoll.grouped_allreduce([np.ones(2)]),
         tcoll.barrier, tcoll.join,
         lambda: tcoll.add_process_set([0]),
         lambda: tcoll.remove_process_set(tcoll.ProcessSet(1)),
         lambda: tcoll.global_process_set.size()]
for i, call in enumerate(calls):
    try:
        call()
    except tcoll.StateError as e:
        continue
    raise SystemExit("call %d did not raise StateError" % i)
print("ok")
'''
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMIX_", "PMI_", "HYDRA_", "MPI_"))}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr
