"""Threads: waits release the GIL (another Python thread keeps running while
one waits for a collective a rank delays); many threads submit and wait at
once with names of their own, in a different order on each rank; a handle
made in one thread is waited for in another; a handle dropped while its
operation is pending does no harm."""

import gc
import random
import threading
import time

import numpy as np

import tcoll
from np_util import assert_same, need_ranks, together, wait_all


def test_wait_releases_the_gil(rank, size, name):
    """While the other ranks wait for rank 0, which submits a second late, a
    Python thread that ticks every 5 ms keeps ticking on them: wait() does
    not hold the GIL (held, it would stop the ticker for the whole wait:
    each tick needs the GIL)."""
    need_ranks(size, 2)
    together(lambda: tcoll.allreduce(np.ones(1), name=name("start")))  # start together
    ticks = [0]
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            time.sleep(0.005)
            ticks[0] += 1

    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        if rank == 0:
            time.sleep(1.0)
        handle = tcoll.allreduce_async(np.ones(3), name=name("late"))
        before, start = ticks[0], time.monotonic()
        out, = together(handle.wait)  # the wait alone, nothing else in Python
        waited, ticked = time.monotonic() - start, ticks[0] - before
    finally:
        stop.set()
        thread.join()
    assert_same(out, np.full(3, float(size)))
    if rank != 0:
        assert waited > 0.5, waited
        assert ticked >= 10, (ticked, waited)


def test_many_threads(rank, size, name):
    """8 threads, each submitting 20 allreduces with names of its own (half
    asynchronously, then waiting for all; half one at a time), started in
    another order on each rank."""
    nthreads, per = 8, 20
    results, errors = {}, []
    start = threading.Barrier(nthreads)

    def work(t):
        try:
            start.wait()
            make = lambda i: np.full(4, t * 100 + i + rank, np.int64)  # noqa: E731
            if t % 2:
                handles = [(i, tcoll.allreduce_async(make(i), name=name("t%d.%d" % (t, i))))
                           for i in range(per)]
                for i, h in handles:
                    results[(t, i)] = h.wait()
            else:
                for i in range(per):
                    results[(t, i)] = tcoll.allreduce(make(i), name=name("t%d.%d" % (t, i)))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append((t, e))

    order = list(range(nthreads))
    random.Random(rank).shuffle(order)
    threads = [threading.Thread(target=work, args=(t,)) for t in order]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in threads)
    assert errors == []
    for t in range(nthreads):
        for i in range(per):
            want = size * (t * 100 + i) + size * (size - 1) // 2
            assert_same(results[(t, i)], np.full(4, want, np.int64))


def test_wait_in_another_thread(rank, size, name):
    handles = [tcoll.allgather_async(np.array([rank, i]), name=name(str(i))) for i in range(4)]
    outcome = {}

    def waiter():
        outcome["results"] = wait_all(handles)

    thread = threading.Thread(target=waiter)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive()
    for i, got in enumerate(outcome["results"]):
        assert_same(got, np.array([[r, i] for r in range(size)]).reshape(-1))


def test_handle_dropped_while_pending(rank, size, name):
    """Rank r drops its handle while the operation waits for the other
    ranks; the request keeps the arrays until it completes, and the other
    ranks get the right result."""
    need_ranks(size, 2)
    mine = name("r%d" % rank)
    handle = tcoll.allreduce_async(np.full(1000, 2.0), name=mine)
    del handle
    gc.collect()
    together(lambda: tcoll.allreduce(np.ones(1), name=name("go")))
    others = [tcoll.allreduce_async(np.full(1000, 2.0), name=name("r%d" % r))
              for r in range(size) if r != rank]
    results = wait_all(others)
    # every dropped request has completed by now; later calls release it
    after, = together(lambda: tcoll.allreduce(np.ones(1), name=name("after")))
    for got in results:
        assert_same(got, np.full(1000, 2.0 * size))
    assert after[0] == size
