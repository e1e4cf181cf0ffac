"""tcoll.torch handles: async calls, poll and synchronize, many in flight,
from several threads, and waits that release the GIL."""

import threading
import time

import pytest
import torch

import tcoll.torch as hvd
from torch_helpers import assert_close, data, everyone, reduce_ref


def test_handles_are_ints_poll_and_synchronize():
    x = data(1, hvd.rank(), (10,), torch.float32)
    h = hvd.allreduce_async(x, op=hvd.Sum, name="async.one")
    assert isinstance(h, int)
    while not hvd.poll(h):
        time.sleep(0.001)
    out = hvd.synchronize(h)
    assert_close(out, reduce_ref(everyone(1, (10,), torch.float32), hvd.Sum))
    assert hvd.synchronize(h) is None  # already synchronized: None, as in Horovod
    with pytest.raises(ValueError):
        hvd.poll(h)


def test_many_in_flight_any_order():
    n, r = hvd.size(), hvd.rank()
    names = ["async.many.%d" % i for i in range(20)]
    order = list(range(20))
    if r % 2:
        order.reverse()  # ranks submit in different orders
    handles = {}
    for i in order:
        handles[i] = hvd.allreduce_async(torch.full((4,), float(i + r)), op=hvd.Sum,
                                         name=names[i])
    gathered = hvd.allgather_async(torch.tensor([r]))
    for i in range(20):
        assert torch.equal(hvd.synchronize(handles[i]),
                           torch.full((4,), float(n * i + n * (n - 1) / 2)))
    assert hvd.synchronize(gathered).tolist() == list(range(n))


def test_unnamed_calls_get_matching_names():
    # unnamed calls of one kind pair up by their order on each rank
    hs = [hvd.allreduce_async(torch.tensor([float(i)]), op=hvd.Sum) for i in range(5)]
    hb = hvd.broadcast_async(torch.tensor([hvd.rank()]), 0)
    for i, h in enumerate(hs):
        assert hvd.synchronize(h).item() == i * hvd.size()
    assert hvd.synchronize(hb).item() == 0


def test_submit_from_threads():
    n, r = hvd.size(), hvd.rank()
    results = {}

    def work(t):
        for i in range(5):
            out = hvd.allreduce(torch.tensor([float(t * 10 + i)]), op=hvd.Sum,
                                name="threads.%d.%d" % (t, i))
            results[(t, i)] = out.item()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == {(t, i): float(n * (t * 10 + i)) for t in range(3) for i in range(5)}
    assert r < n


def test_wait_releases_the_gil():
    n, r = hvd.size(), hvd.rank()
    if n == 1:
        pytest.skip("needs a second rank to keep the operation pending")
    late = n - 1
    stamps = []
    stop = threading.Event()

    def spin():  # pure Python: runs only while the GIL is free
        while not stop.is_set():
            stamps.append(time.monotonic())
            time.sleep(0.0005)

    if r == late:
        time.sleep(0.4)  # the others wait for this rank meanwhile
        hvd.synchronize(hvd.allreduce_async(torch.ones(2), op=hvd.Sum, name="gil"))
        return
    h = hvd.allreduce_async(torch.ones(2), op=hvd.Sum, name="gil")
    th = threading.Thread(target=spin)
    th.start()
    try:
        t0 = time.monotonic()
        out = hvd.synchronize(h)
        t1 = time.monotonic()
    finally:
        stop.set()
        th.join()
    assert torch.equal(out, torch.full((2,), float(n)))
    assert t1 - t0 > 0.1  # it did wait for the late rank
    during = [s for s in stamps if t0 < s < t1]
    assert len(during) > 20, "the other thread made no progress during the wait"


def test_unnamed_calls_of_both_apis_never_share_a_name():
    import numpy as np
    import tcoll
    hn = tcoll.allreduce_async(np.ones(2, np.float32))  # "allreduce.noname.<k>"
    ht = hvd.allreduce_async(torch.ones(2), op=hvd.Sum)  # the next k, not the same
    assert torch.equal(hvd.synchronize(ht), torch.full((2,), float(hvd.size())))
    assert np.array_equal(hn.wait(), np.full(2, hvd.size(), np.float32))
