"""Shared set-up of tcoll's Python tests: every rank of an mpiexec job runs
pytest on the same files, and the tests call collectives, so

* tcoll is started once per process (before the first test) and shut down
  once (after the last), on every rank;
* every rank must collect the same tests in the same order: right after
  collection the ranks compare a digest of their test ids (one allgather)
  and all stop at once if any differs;
* a test decides whether it applies from what every rank knows alike (the
  number of ranks), never from its own rank, so that every rank runs or
  skips it;
* a test makes all its collective calls first, on every rank, whatever
  their results, and only then asserts (``together`` in np_util runs a list
  of calls and raises the first error after all of them ran): an assertion
  that fails on one rank then never leaves the other ranks waiting for a
  call it skipped. Explicit names carry the test's id (the ``name``
  fixture), so a call left over from a test that broke off on some rank
  cannot meet a call of a later test. A call some rank never makes (an
  unexpected exception between two calls of a test on one rank) fails on
  the others with tcoll.TimeoutError after TCOLL_STALL_ABORT_S (20 s here
  unless set), and after each test the ranks wait for each other (an
  allreduce named after the test, in a process set of every rank that only
  these use, submitted again after a TimeoutError), so that a rank that
  broke off early does not run ahead into the next tests and fail them
  too. The CTest time limit ends the job as a last resort;
  pytest.ini's faulthandler_timeout prints every thread's stack before
  that. A failure is printed at once, with its rank
  (``pytest_runtest_logreport``), not only in the summary at the end, which
  a job killed for a hang never reaches.

mpi4py: the results are also compared with mpi4py's, unless
TC_TEST_MPI4PY=0 (the CTests set it when tcoll's MPI is not the one
Debian's python3-mpi4py is built on) or mpi4py does not import. Imported
first, mpi4py initializes MPI with MPI_THREAD_MULTIPLE, which tc_init needs
from an application that initialized MPI itself; tcoll then leaves MPI to
it (mpi4py finalizes it at exit).
"""

import hashlib
import os
import sys

# Knobs read by tc_init (setdefault: a run may choose its own). Rank 0's
# values count, so they need not agree.
os.environ.setdefault("TCOLL_STALL_WARN_S", "10")
os.environ.setdefault("TCOLL_STALL_ABORT_S", "20")

MPI = None
if os.environ.get("TC_TEST_MPI4PY", "1") != "0":
    try:
        from mpi4py import MPI  # noqa: F811 (initializes MPI, THREAD_MULTIPLE)
    except ImportError:
        MPI = None

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import tcoll  # noqa: E402


def _start():
    if not tcoll.is_initialized():
        tcoll.init()


def _stop():
    if tcoll.is_initialized():
        tcoll.shutdown()


def pytest_report_header(config):
    mpi = "mpi4py %s" % MPI.Get_library_version().splitlines()[0].strip() if MPI else \
        "no mpi4py (TC_TEST_MPI4PY=%s)" % os.environ.get("TC_TEST_MPI4PY", "unset")
    return "tcoll %s from %s, numpy %s, %s" % (
        tcoll.__version__, os.path.dirname(tcoll.__file__), np.__version__, mpi)


def pytest_collection_finish(session):
    """Starts tcoll, then checks that every rank collected the same tests in
    the same order."""
    _start()
    ids = "\n".join(item.nodeid for item in session.items).encode()
    digest = np.frombuffer(hashlib.sha256(ids).digest(), dtype=np.uint8)
    every = tcoll.allgather(digest, name="conftest/collection").reshape(tcoll.size(), -1)
    differ = [r for r in range(tcoll.size()) if not np.array_equal(every[r], every[0])]
    if differ:
        pytest.exit("ranks %s collected other tests than rank 0 (%d here): every rank "
                    "must run the same tests in the same order" % (differ, len(session.items)),
                    returncode=3)


def pytest_unconfigure(config):
    _stop()  # if the session ended before the session fixture's teardown


def pytest_runtest_logreport(report):
    """A failure is printed at once, with this rank (mpiexec interleaves the
    ranks' output, and a job killed for a hang prints no summary)."""
    if report.failed and tcoll.is_initialized():
        sys.stderr.write("\n[tcoll rank %d of %d] %s %s FAILED:\n%s\n" % (
            tcoll.rank(), tcoll.size(), report.nodeid, report.when, report.longreprtext))
        sys.stderr.flush()


_between_tests = None  # the process set of the waits between tests


@pytest.fixture(scope="session", autouse=True)
def tcoll_session():
    """tcoll, started on every rank; at the end every rank waits for the
    others (so no rank's shutdown fails a collective another still runs),
    then shuts it down (unless a fixture of the tests did: tcoll.torch's
    tests shut down through hvd.shutdown())."""
    global _between_tests
    _start()
    _between_tests = tcoll.add_process_set(list(range(tcoll.size())))
    yield tcoll
    if MPI is not None:
        MPI.COMM_WORLD.Barrier()
    elif tcoll.is_initialized():
        tcoll.barrier()
    tcoll.shutdown()
    # After shutdown: nothing runs (init() could start tcoll again:
    # test_np_lifecycle.py).
    assert not tcoll.is_initialized()
    with pytest.raises(tcoll.ShutdownError):
        tcoll.allreduce(np.ones(2), name="conftest/after-shutdown")
    with pytest.raises(tcoll.StateError):
        tcoll.rank()


@pytest.fixture(autouse=True)
def ranks_in_step(tcoll_session, request):
    """After each test, every rank waits for the others: an allreduce named
    after the test, in a set no test uses. A rank that broke off its test
    early waits here while the others' calls of that test expire
    (TimeoutError after TCOLL_STALL_ABORT_S), and its own wait may expire
    too: it submits the same name again (a barrier would not do: the k-th
    barrier meets the others' k-th, and an expired one would leave the
    ranks' counts apart for good)."""
    yield
    if _between_tests.process_set_id is None:  # tcoll started again (test_*lifecycle*)
        tcoll.add_process_set(_between_tests)
    name = "conftest/after/" + request.node.nodeid
    for attempt in range(10):
        try:
            tcoll.allreduce(np.zeros(1, np.int8), name=name, process_set=_between_tests)
            return
        except tcoll.TimeoutError:
            if attempt == 9:
                raise


@pytest.fixture(scope="session")
def rank():
    return tcoll.rank()


@pytest.fixture(scope="session")
def size():
    return tcoll.size()


@pytest.fixture(scope="session")
def comm():
    """mpi4py's COMM_WORLD, or None without mpi4py (then the comparisons with
    mpi4py are left out, on every rank alike)."""
    return MPI.COMM_WORLD if MPI is not None else None


@pytest.fixture
def name(request):
    """name(suffix) -> a collective's name unique to this test (its id)."""
    return lambda suffix="": "%s/%s" % (request.node.nodeid, suffix)

