"""tcoll.torch: horovod.torch's API over tcoll, for PyTorch CPU and CUDA tensors.

``import tcoll.torch as hvd`` in a Horovod 0.28 PyTorch training script in
place of ``import horovod.torch as hvd``: the same names, signatures,
defaults (the default op is Average) and behaviour, run by tcoll's engine
over MPI. Launch with ``mpiexec -n N python script.py``.

What is where:

* basics: init (``comm``, ``process_sets``), shutdown, is_initialized,
  rank, size, local_rank, local_size, cross_rank, cross_size,
  is_homogeneous, mpi_threads_supported, the build queries (mpi_built and
  mpi_enabled are True; cuda_built says whether libtcoll has CUDA; gloo,
  nccl, ddl, ccl and rocm are not built),
  start_timeline/stop_timeline, process sets (ProcessSet,
  global_process_set, add_process_set, remove_process_set), and the ops
  Sum, Average, Min, Max, Product, Adasum (refused: NotImplementedError).
* mpi_ops: the ``*_async`` calls returning int handles, the in-place calls
  (``allreduce_``, ``broadcast_``, ``grouped_allreduce_`` and their async
  forms), sparse_allreduce_async, join, barrier; handles: poll,
  synchronize.
* autograd: allreduce, grouped_allreduce, allgather, grouped_allgather,
  broadcast, alltoall, reducescatter, grouped_reducescatter, each
  differentiable with Horovod's gradient conventions.
* functions: broadcast_parameters, broadcast_optimizer_state,
  broadcast_object, allgather_object.
* optimizer: DistributedOptimizer (hooks submit each gradient's allreduce
  as soon as backprop produces it).
* sync_batch_norm: SyncBatchNorm (batch statistics over every rank's batch).
* compression: Compression.none, Compression.fp16.
* exceptions: HorovodInternalError (errors from synchronize are both it and
  the tcoll error class), HostsUpdatedInterrupt.

CPU and CUDA tensors (CUDA ones on torch's current stream). Not provided
(yet): elastic training (``hvd.elastic``), Adasum, Gloo or NCCL.

``tcoll.torch.distributed`` (imported on its own) is a torch.distributed
backend named ``tcoll``: ``dist.init_process_group("tcoll")``, DDP.
"""

import torch as _torch  # noqa: F401  (tcoll.torch needs torch: fails here without it)

from .autograd import (  # noqa: F401
    allgather, allreduce, alltoall, broadcast, grouped_allgather, grouped_allreduce,
    grouped_reducescatter, reducescatter,
)
from .basics import (  # noqa: F401
    Adasum, Average, Max, Min, Product, ProcessSet, Sum, add_process_set, ccl_built,
    cross_rank, cross_size, cuda_built, ddl_built, gloo_built, gloo_enabled, global_process_set,
    init, is_homogeneous, is_initialized, local_rank, local_size, mpi_built, mpi_enabled,
    mpi_threads_supported, nccl_built, rank, remove_process_set, rocm_built, shutdown, size,
    start_timeline, stop_timeline,
)
from .compression import Compression  # noqa: F401
from .exceptions import HorovodInternalError, HostsUpdatedInterrupt  # noqa: F401
from .functions import (  # noqa: F401
    allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters,
)
from .handles import poll, synchronize  # noqa: F401
from .mpi_ops import (  # noqa: F401
    allgather_async, allreduce_, allreduce_async, allreduce_async_, alltoall_async, barrier,
    broadcast_, broadcast_async, broadcast_async_, grouped_allgather_async, grouped_allreduce_,
    grouped_allreduce_async, grouped_allreduce_async_, grouped_reducescatter_async, join,
    reducescatter_async, sparse_allreduce_async,
)
from .optimizer import DistributedOptimizer  # noqa: F401
from .sync_batch_norm import SyncBatchNorm  # noqa: F401

__all__ = [
    # basics
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size",
    "cross_rank", "cross_size", "is_homogeneous", "mpi_threads_supported", "mpi_built",
    "mpi_enabled", "gloo_built", "gloo_enabled", "nccl_built", "ddl_built", "ccl_built",
    "cuda_built", "rocm_built", "start_timeline", "stop_timeline",
    "ProcessSet", "global_process_set", "add_process_set", "remove_process_set",
    "Sum", "Average", "Min", "Max", "Product", "Adasum",
    # collectives
    "allreduce", "allreduce_", "allreduce_async", "allreduce_async_",
    "grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async",
    "grouped_allreduce_async_", "sparse_allreduce_async",
    "allgather", "allgather_async", "grouped_allgather", "grouped_allgather_async",
    "broadcast", "broadcast_", "broadcast_async", "broadcast_async_",
    "alltoall", "alltoall_async",
    "reducescatter", "reducescatter_async", "grouped_reducescatter",
    "grouped_reducescatter_async",
    "join", "barrier", "poll", "synchronize",
    # helpers, training
    "broadcast_parameters", "broadcast_optimizer_state", "broadcast_object", "allgather_object",
    "DistributedOptimizer", "SyncBatchNorm", "Compression",
    "HorovodInternalError", "HostsUpdatedInterrupt",
]
