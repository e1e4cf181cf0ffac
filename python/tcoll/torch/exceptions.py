"""tcoll.torch.exceptions: Horovod's exception names, and how tcoll's errors
map onto them.

* :class:`HorovodInternalError` (a ``RuntimeError``) is what an operation
  that failed across ranks raises from ``synchronize()`` (and from the
  blocking calls, which synchronize): a mismatch between ranks, a shutdown,
  a lost rank, a stall past ``TCOLL_STALL_ABORT_S``. The exception raised
  is of a class that is *both* :class:`HorovodInternalError` and the
  specific tcoll error (``tcoll.MismatchError``, ``tcoll.ShutdownError``,
  ...), so ``except hvd.HorovodInternalError`` and ``except
  tcoll.MismatchError`` both catch it; the original is chained as
  ``__cause__``.
* Caller mistakes found at submission stay what they are: ``ValueError``
  (``tcoll.InvalidArgumentError``, and ``tcoll.DuplicateNameError`` for a
  name already in flight on this rank, as Horovod raises ``ValueError``)
  and ``TypeError``; so is a call before ``init()`` (``ValueError``, as in
  Horovod). Other errors at submission (after a shutdown, while this rank's
  join is pending) are wrapped like the ones from ``synchronize()``.
* :class:`HostsUpdatedInterrupt` exists for scripts that name it; tcoll has
  no elastic mode and never raises it.
"""

import threading

import tcoll as _tcoll_np

__all__ = ["HorovodInternalError", "HostsUpdatedInterrupt"]


class HorovodInternalError(RuntimeError):
    """An operation failed across ranks (or tcoll is not running); the
    library stays usable for later operations unless it was shut down."""


class HostsUpdatedInterrupt(RuntimeError):
    """Horovod elastic's signal that the set of hosts changed. tcoll has no
    elastic mode and never raises it; it exists so that code naming it
    imports."""

    def __init__(self, skip_sync=False):
        super().__init__("hosts updated")
        self.skip_sync = skip_sync


_wrapped_classes = {}
_wrapped_lock = threading.Lock()


def _internal_class(cls):
    """The class that is both HorovodInternalError and cls (a tcoll.Error
    subclass), made once per cls."""
    with _wrapped_lock:
        wrapped = _wrapped_classes.get(cls)
        if wrapped is None:
            wrapped = type(cls.__name__, (HorovodInternalError, cls),
                           {"__module__": __name__,
                            "__doc__": "%s raised through tcoll.torch: also a "
                                       "HorovodInternalError." % cls.__name__})
            _wrapped_classes[cls] = wrapped
        return wrapped


def internal_error(err):
    """The exception to raise for tcoll error err: err itself when it is
    already a HorovodInternalError, else an instance of the class that is
    both (with err's message)."""
    if isinstance(err, HorovodInternalError):
        return err
    if isinstance(err, _tcoll_np.Error):
        return _internal_class(type(err))(*err.args)
    return HorovodInternalError(str(err))


def is_caller_mistake(err):
    """Whether a tcoll error raised at submission is the caller's mistake
    (kept as the ValueError it is) rather than an internal error."""
    return isinstance(err, ValueError)
