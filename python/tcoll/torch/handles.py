"""tcoll.torch.handles: what every collective of tcoll.torch shares: the
handle table behind Horovod's integer handles (``poll``, ``synchronize``),
the passage of torch tensors to tcoll's buffers, and operation names.

Handles: each asynchronous call returns a new int (1, 2, ...). The table
maps it to the tcoll requests it made and a function that builds the result
once they completed. ``synchronize(handle)`` removes the entry, waits for
the requests (the GIL is released while waiting, so other Python threads
run), and returns the result; a handle that is not in the table (already
synchronized, or never made) gives None, as in Horovod. ``poll(handle)``
never blocks. Submit, poll and synchronize from any threads: each touches
the table with one dict operation, which the GIL makes atomic, and handles
come from one itertools counter (atomic too). ``sparse_allreduce_async``
returns a FunctionHandle instead, as Horovod returns a function: calling it
synchronizes the int handle inside and builds the result (``poll`` and
``synchronize`` take it too).

Tensors: CPU and CUDA tensors of uint8, int8, int16, int32, int64,
float16, bfloat16, float32 and float64 (bool where only bytes move:
broadcast, allgather, alltoall). A contiguous tensor's memory is handed to
tcoll as it is (the extension takes its ``data_ptr()`` and holds the tensor
until the operation completes: no copy, no NumPy view; bfloat16 goes as its
16-bit pattern, bool as bytes); a non-contiguous one is copied to a
contiguous tensor first, and the in-place calls copy the result back into it
when synchronized. A CUDA tensor goes as a device tensor of its device with
torch's current stream of that device (tcoll reads it after the work queued
there by then); an output tcoll allocated on the device is copied into a
tensor of torch's allocator on the current stream, and tcoll's memory is
given back once that copy has run. Sparse tensors and other devices are
refused with ValueError.

Names: ``<kind>.<name>`` for a given name (so an allreduce and a broadcast
may share one, as in Horovod), else ``<kind>.noname.<k>`` where k counts
this kind's unnamed calls in the process set (one count with the NumPy
API's unnamed calls, which are named the same way): the same on every
rank when every rank makes the same calls.
"""

import itertools

import numpy as _np
import torch

import tcoll as _tc
from tcoll import _tcoll

from . import basics
from .exceptions import internal_error, is_caller_mistake

__all__ = ["poll", "synchronize"]

# torch dtype -> (tcoll dtype code, torch dtype of the bytes tcoll sees)
_CODES = {
    torch.uint8: (_tcoll.UINT8, torch.uint8),
    torch.int8: (_tcoll.INT8, torch.int8),
    torch.int16: (_tcoll.INT16, torch.int16),
    torch.int32: (_tcoll.INT32, torch.int32),
    torch.int64: (_tcoll.INT64, torch.int64),
    torch.float16: (_tcoll.FLOAT16, torch.float16),
    torch.bfloat16: (_tcoll.BFLOAT16, torch.int16),
    torch.float32: (_tcoll.FLOAT32, torch.float32),
    torch.float64: (_tcoll.FLOAT64, torch.float64),
}
_BOOL = (_tcoll.UINT8, torch.uint8)

# the extension takes CPU tensors' memory directly from here on (tensor.c)
_tcoll._register_torch(torch.Tensor, torch.strided)

# dtype -> tcoll code, for the reducible dtypes: the fast paths' lookup
REDUCE_CODES = {dt: code for dt, (code, _view) in _CODES.items()}


# ---- tensors -----------------------------------------------------------------

def check_tensor(tensor, what, allow_bool=False):
    """Refuses what tcoll cannot take: not a tensor, on a device other than
    the CPU or a CUDA GPU, sparse, or a dtype it has no code for."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError("%s takes a torch.Tensor, not %s" % (what, type(tensor).__name__))
    if tensor.device.type not in ("cpu", "cuda"):
        raise ValueError("%s: the tensor is on %s, but tcoll takes CPU and CUDA tensors only"
                         % (what, tensor.device))
    if tensor.layout != torch.strided:
        hint = "; sparse_allreduce_async reduces sparse COO tensors" \
            if tensor.layout == torch.sparse_coo else ""
        raise ValueError("%s: %s tensors are not supported (dense tensors only%s)"
                         % (what, tensor.layout, hint))
    if tensor.dtype == torch.bool:
        if not allow_bool:
            raise ValueError("%s: bool tensors cannot be reduced (tcoll takes bool only where "
                             "bytes just move: broadcast, allgather, alltoall)" % what)
    elif tensor.dtype not in _CODES:
        raise ValueError("%s: tensor type %s is not supported (uint8, int8, int16, int32, "
                         "int64, float16, bfloat16, float32, float64)" % (what, tensor.dtype))
    return tensor


def code_of(tensor):
    """The tcoll dtype code of tensor."""
    return (_BOOL if tensor.dtype == torch.bool else _CODES[tensor.dtype])[0]


def wire(tensor):
    """What tcoll reads and writes: the contiguous tensor itself (the
    extension takes its memory, no copy), a lazy negation resolved first."""
    return tensor.resolve_neg() if tensor.is_neg() else tensor


def stream_of(tensor):
    """The stream a tensor's producer ran on, as tcoll takes it: torch's
    current stream of a CUDA tensor's device (its cudaStream_t as an int;
    0 is the legacy default stream), 0 for a CPU tensor."""
    if tensor.device.type != "cuda":
        return 0
    return torch.cuda.current_stream(tensor.device).cuda_stream


def contiguous(tensor):
    """tensor itself if contiguous, else a contiguous copy."""
    return tensor if tensor.is_contiguous() else tensor.contiguous()


class _DeviceOutput:
    """tcoll's device memory of a completed request, as torch reads it
    (``__cuda_array_interface__``); holds the request, which owns it."""

    def __init__(self, req, ptr, shape, typestr):
        self.req = req
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr,
                                         "data": (ptr, False), "version": 2, "strides": None}


# (event, _DeviceOutput): tcoll memory still read by a queued copy
_device_outputs = []


def _release_device_outputs():
    """Lets go of the requests whose device outputs' copies have run."""
    while _device_outputs and _device_outputs[0][0].query():
        _device_outputs.pop(0)


def from_output(req, dtype, shape=None):
    """The output tcoll allocated for a completed request, as a tensor of
    dtype: for a host request over that memory (no copy; the tensor keeps
    the request alive); for a device request a copy, on torch's current
    stream, into a tensor of torch's allocator (the request is let go once
    the copy has run)."""
    _code, out_shape = req.output_info()
    if shape is None:
        shape = out_shape
    view = (_BOOL if dtype == torch.bool else _CODES[dtype])[1]
    np_dtype = torch.empty((), dtype=view).numpy().dtype
    count = int(_np.prod(out_shape)) if len(out_shape) else 1
    if req.device >= 0:
        device = torch.device("cuda", req.device)
        _release_device_outputs()
        out = torch.empty(shape, dtype=dtype, device=device)
        if count == 0:
            return out
        ptr, _dev = req.output_device_ptr()
        holder = _DeviceOutput(req, ptr, out_shape, np_dtype.str)
        src = torch.as_tensor(holder, device=device)
        out.view(view).reshape(-1).copy_(src.reshape(-1))
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(device))
        _device_outputs.append((event, holder))
        return out
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    array = _np.frombuffer(req, dtype=np_dtype).reshape(shape)
    t = torch.from_numpy(array)
    return t.view(dtype) if view != dtype else t


# ---- names -------------------------------------------------------------------

def op_name(kind, name, process_set_id):
    """The name tcoll gets for a call of kind (see the module docstring)."""
    if name is not None:
        if not isinstance(name, str):
            raise TypeError("name must be a str, not %s" % type(name).__name__)
        return "%s.%s" % (kind, name)
    # the NumPy API's counters: unnamed calls of both APIs share one sequence
    # per kind and set, so they never take the same name
    return _tc._name(kind, None, process_set_id)


def pset_id(process_set):
    """The id of a ProcessSet (None: the global set)."""
    if process_set is None:
        return 0
    if isinstance(process_set, _tc.ProcessSet):
        return process_set._id()
    raise TypeError("process_set must be a ProcessSet, not %s" % type(process_set).__name__)


def pset_size(process_set):
    n = _tcoll.size() if pset_id(process_set) == 0 else process_set.size()
    if n < 0:
        raise ValueError("%r does not exist (removed?)" % (process_set,))
    return n


def pset_rank(process_set):
    return _tcoll.rank() if pset_id(process_set) == 0 else process_set.rank()


# ---- submission ----------------------------------------------------------------

def submit(fn, *args, **kwargs):
    """Calls a _tcoll submission, raising caller mistakes as they are and
    other tcoll errors as HorovodInternalError."""
    basics._check_init()
    try:
        return fn(*args, **kwargs)
    except _tc.Error as e:
        if is_caller_mistake(e):
            raise
        raise internal_error(e) from e


# ---- the handle table -------------------------------------------------------------

class _Pending:
    __slots__ = ("reqs", "finish", "keep")

    def __init__(self, reqs, finish, keep):
        self.reqs = reqs      # tcoll Requests
        self.finish = finish  # () -> the result, once every request completed;
        #                       None: the result is keep
        self.keep = keep      # objects held until then (inputs, staging copies)


_table = {}
_next_handle = itertools.count(1)


def register(reqs, finish, keep=()):
    """A new handle for requests reqs; finish() builds the result (finish
    None: the result is keep)."""
    handle = next(_next_handle)
    _table[handle] = _Pending(list(reqs), finish, keep)
    return handle


def register_one(req, result):
    """A new handle for one request whose result is the object result."""
    handle = next(_next_handle)
    _table[handle] = _Pending((req,), None, result)
    return handle


def _clear():
    _table.clear()
    for event, _holder in _device_outputs:
        event.synchronize()
    _device_outputs.clear()


basics._reset_hooks.append(_clear)


class FunctionHandle:
    """The handle of an operation whose result is built from one int
    handle's by a function, as Horovod's ``sparse_allreduce_async`` returns
    it: calling it waits and returns the result (the same object on each
    later call; an error is raised again). ``poll`` and ``synchronize``
    take it too."""

    __slots__ = ("_handle", "_build", "_result", "_error", "_finished")

    def __init__(self, handle, build):
        self._handle = handle  # an int handle of the table
        self._build = build    # the int handle's result -> this handle's result
        self._result = None
        self._error = None
        self._finished = False

    def __call__(self):
        if not self._finished:
            self._finished = True
            try:
                self._result = self._build(synchronize(self._handle))
            except Exception as e:
                self._error = e
            self._build = None
        if self._error is not None:
            raise self._error
        return self._result

    def done(self):
        """Whether calling would not block."""
        return self._finished or poll(self._handle)


def poll(handle):
    """Whether the operation of handle has completed (successfully or not);
    never blocks. After it returns True, synchronize(handle) does not block.
    ValueError for a handle that is not pending (never made, or already
    synchronized)."""
    if isinstance(handle, FunctionHandle):
        return handle.done()
    pending = _table.get(handle)
    if pending is None:
        raise ValueError("handle %r was not created or has been synchronized" % (handle,))
    return all(r.done() for r in pending.reqs)


def synchronize(handle):
    """Waits (without the GIL) until the operation of handle completes and
    returns its result: a tensor, a list of tensors for grouped calls, or
    (tensor, received_splits) for alltoall. Raises HorovodInternalError (of
    the tcoll error's class too) if it failed, on every rank it failed on.
    A FunctionHandle is called. A handle not in the table gives None."""
    if isinstance(handle, FunctionHandle):
        return handle()
    pending = _table.pop(handle, None)
    if pending is None:
        return None
    wait_requests(pending.reqs)
    return pending.keep if pending.finish is None else pending.finish()


def wait_requests(reqs):
    """Waits for tcoll requests (every one of them, so that a grouped call's
    names are all free again) and raises the first one's error, as
    HorovodInternalError of the tcoll error's class too."""
    if len(reqs) == 1:
        try:
            reqs[0].wait()
        except _tc.Error as e:
            raise internal_error(e) from e
        return
    first = None
    for r in reqs:
        try:
            r.wait()
        except _tc.Error as e:
            if first is None:
                first = e
    if first is not None:
        raise internal_error(first) from first
