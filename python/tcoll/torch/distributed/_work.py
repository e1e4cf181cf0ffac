"""tcoll.torch.distributed._work: the Work objects the ``tcoll`` process
group returns, the names its collectives take, and the thread that
completes the futures DistributedDataParallel waits on.

A Work holds one tcoll.torch handle and what to do once it completed (copy
a result into the caller's output tensors). Whoever comes first completes
it, exactly once: ``wait()``, ``is_completed()`` when the operation is
done, or the completer thread once ``get_future()`` was asked for.
"""

import collections
import datetime
import threading
import time

import torch
import torch.distributed as dist

from .. import handles as _h

__all__ = ["Work", "Names", "done_work", "settle"]

# How many calls of one group may be in flight under distinct names: call k
# of a group is named by k modulo this, so names repeat (tcoll's response
# cache then knows them) and the ranks, which make the same calls in the same
# order, give each call the same name. A call whose name is still in flight
# on this rank waits for that earlier call first.
WINDOW = 64


class Names:
    """The names of one process group's calls: ``tcoll.dist.<group>.<k>``."""

    def __init__(self, group_id):
        self._prefix = "tcoll.dist.%d." % group_id
        self._count = 0
        self._in_flight = {}  # name -> Work
        self._lock = threading.Lock()

    def take(self):
        """The next call's name, once no earlier call of this rank holds it."""
        with self._lock:
            name = self._prefix + str(self._count % WINDOW)
            self._count += 1
            earlier = self._in_flight.pop(name, None)
        if earlier is not None:
            earlier.complete()  # its error, if any, belongs to its own waiter
        return name

    def give_back(self, name):
        """Undoes take() of a call refused at once, so that it takes no name
        (the other ranks' calls keep theirs)."""
        with self._lock:
            if self._count and self._prefix + str((self._count - 1) % WINDOW) == name:
                self._count -= 1

    def hold(self, name, work):
        """Records that work holds name until it completes."""
        with self._lock:
            self._in_flight[name] = work


class Work(dist.Work):
    """An operation of the ``tcoll`` process group. ``wait(timeout)``
    blocks until it completed (and its results are in the output tensors)
    and raises its error; ``is_completed()`` never blocks; ``get_future()``
    gives a ``torch.futures.Future`` completed with ``result()``."""

    def __init__(self, handle, finish, result, what):
        super().__init__()
        self._handle = handle      # tcoll.torch handle, None once completed
        self._finish = finish      # callable(output) run once it completed, or None
        self._result = result      # list of tensors: result() and the future's value
        self._what = what          # "allreduce", ... for messages
        self._lock = threading.Lock()
        self._done = handle is None
        self._error = None
        self._future = None

    # ---- completing --------------------------------------------------------

    def complete(self):
        """Completes the operation (blocking) unless done; returns its error
        or None."""
        with self._lock:
            if not self._done:
                self._error = self._run()
                self._done = True
            fut, self._future = self._future, None
        if fut is not None:
            settle(fut, self)
        return self._error

    def _run(self):
        """Waits for the operation and runs its finish; returns its error."""
        error = None
        try:
            out = _h.synchronize(self._handle)
            if self._finish is not None:
                self._finish(out)
        except Exception as e:  # noqa: BLE001 (handed to the waiter)
            error = e
        self._handle = None
        self._finish = None
        return error

    def _ready(self):
        """Whether complete() would not block."""
        handle = self._handle
        if self._done or handle is None:
            return True
        try:
            return _h.poll(handle)
        except ValueError:  # completed meanwhile by another thread
            return True

    # ---- torch's Work interface ------------------------------------------

    def wait(self, timeout=datetime.timedelta(0)):
        """Blocks until the operation completed; raises its error. A
        positive timeout (a timedelta, or seconds) bounds the wait:
        RuntimeError past it, the operation going on."""
        seconds = _seconds(timeout)
        if seconds > 0 and not self._done:
            deadline = time.monotonic() + seconds
            pause = 1e-5
            while not self._ready():
                if time.monotonic() >= deadline:
                    raise RuntimeError("tcoll %s: not completed within %.3f s (Work.wait "
                                       "timeout); it is still in progress"
                                       % (self._what, seconds))
                time.sleep(pause)
                pause = min(pause * 2, 1e-3)
        error = self.complete()
        if error is not None:
            raise error
        return True

    def is_completed(self):
        """Whether the operation completed (successfully or not); never
        blocks."""
        if self._done:
            return True
        if not self._ready():
            return False
        if not self._lock.acquire(blocking=False):
            return False  # another thread is completing it right now
        self._lock.release()
        self.complete()
        return True

    def is_success(self):
        """Whether it completed without error (waits for it, as torch's
        deprecated call does)."""
        return self.complete() is None

    def exception(self):
        """The error once completed, else None."""
        return self._error if self._done else None

    def result(self):
        """The output tensors (waits for them)."""
        self.wait()
        return list(self._result)

    def synchronize(self):
        """For CPU and CUDA alike: the result is in place once wait() returned."""
        self.wait()

    def source_rank(self):
        raise RuntimeError("tcoll: source_rank() is for recv from any source, which the "
                           "tcoll backend does not provide")

    def get_future(self):
        """A torch.futures.Future holding ``result()`` once the operation
        completed (DistributedDataParallel waits on these)."""
        devices = sorted({t.device.index for t in self._result
                          if isinstance(t, torch.Tensor) and t.device.type == "cuda"})
        fut = torch.futures.Future(devices=devices) if devices else torch.futures.Future()
        with self._lock:
            if not self._done:
                self._future = fut
                _completer().put(self)
                return fut
        settle(fut, self)
        return fut


def done_work(result, what):
    """A Work already completed (a call with nothing to do)."""
    return Work(None, None, result, what)


def settle(fut, work):
    if work._error is not None:
        fut.set_exception(work._error)
    else:
        fut.set_result(list(work._result))


def _seconds(timeout):
    if timeout is None:
        return 0.0
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


# ---- the completer thread ---------------------------------------------------------

class _Completer:
    """One daemon thread that completes, in submission order, the works
    whose futures were asked for. It sleeps in tcoll's wait (without the
    GIL) and is idle when nothing is pending."""

    def __init__(self):
        self._queue = collections.deque()
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="tcoll-dist-completer",
                                        daemon=True)
        self._thread.start()

    def put(self, work):
        with self._cond:
            self._queue.append(work)
            self._cond.notify()

    def _run(self):
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                work = self._queue.popleft()
            work.complete()


_the_completer = None
_completer_lock = threading.Lock()


def _completer():
    global _the_completer
    with _completer_lock:
        if _the_completer is None:
            _the_completer = _Completer()
        return _the_completer
