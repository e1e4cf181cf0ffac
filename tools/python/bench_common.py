"""What tools/python/bench_workload.py, bench_ddp.py and bench_synthetic.py
share: the launcher's rank and size, importing tcoll.torch, starting
torch.distributed over Gloo on loopback, reading a workload file,
statistics of per-step times and printing a table.

Not a benchmark itself: the scripts import it from their own directory.
Only rank 0 prints; every function here that talks to other ranks says so.
"""

import math
import os
import statistics
import sys


def launcher_rank_size():
    """This process's rank and the number of ranks as the MPI launcher says
    (Open MPI: OMPI_COMM_WORLD_*, MPICH/Hydra: PMI_*); (0, 1) without one."""
    for r, s in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE")):
        if r in os.environ and s in os.environ:
            return int(os.environ[r]), int(os.environ[s])
    return 0, 1


def say(prog, msg):
    """One line on stderr from rank 0 (by the launcher's count)."""
    if launcher_rank_size()[0] == 0:
        print("%s: %s" % (prog, msg), file=sys.stderr, flush=True)


def import_tcoll_torch(prog):
    """tcoll.torch, or None after rank 0 said why it cannot be imported."""
    try:
        import tcoll.torch as hvd
        return hvd
    except ImportError as e:
        say(prog, "cannot import tcoll.torch (%s): build the Python package "
            "(cmake --build build) and run with PYTHONPATH=build/python" % e)
        return None


def gloo_port():
    """The TCP port of rank 0's Gloo rendezvous: MASTER_PORT when set, else
    one every rank of this launch derives alike from its parent process (the
    launcher's daemon, the same for every rank on one node)."""
    port = os.environ.get("MASTER_PORT")
    if port:
        return int(port)
    return 20000 + os.getppid() % 20000


def gloo_init(rank, size):
    """Starts torch.distributed over Gloo on 127.0.0.1 (every rank on this
    node). Collective. Returns torch.distributed."""
    import torch.distributed as dist
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", store=tcp_store(gloo_port(), rank, size),
                            rank=rank, world_size=size)
    return dist


def destroy_process_group(dist):
    """dist.destroy_process_group(), once every rank's earlier work is done
    and torch's worker threads have had the interpreter lock to let go of
    it. torch 2.x's Gloo group joins its worker threads in its destructor,
    holding the lock, while a worker that drops the last reference to a
    Python tensor waits for the lock: both wait forever (seen now and then
    with Debian 13's torch 2.6, a rank that reached it right after its last
    collective). A barrier completes every earlier work; the sleep lets the
    workers take the lock."""
    import time
    dist.barrier()
    time.sleep(0.1)
    dist.destroy_process_group()


def tcp_store(port, rank, size):
    """torch's TCPStore on 127.0.0.1:port, served by rank 0. torch 2.4 and
    later serve it with libuv by default, which some builds lack (Debian's
    2.6: "use_libuv was requested but PyTorch was build without libuv
    support"): those get the older server."""
    import torch.distributed as dist
    try:
        return dist.TCPStore("127.0.0.1", port, size, rank == 0)
    except RuntimeError as e:
        if "libuv" not in str(e):
            raise
        return dist.TCPStore("127.0.0.1", port, size, rank == 0, use_libuv=False)


def default_workload():
    """The source tree's data/resnet50.tsv."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "data", "resnet50.tsv"))


def read_workload(path):
    """[(name, shape)] from a workload file (name<TAB>elements<TAB>shape per
    line), in file (forward) order."""
    out = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 3:
                raise ValueError("%s:%d: expected name<TAB>elements<TAB>shape" % (path, lineno))
            name, elems, shape = fields[0], int(fields[1]), tuple(
                int(d) for d in fields[2].split("x"))
            if math.prod(shape) != elems:
                raise ValueError("%s:%d: shape %s does not hold %d elements"
                                 % (path, lineno, fields[2], elems))
            out.append((name, shape))
    if not out:
        raise ValueError("%s: no tensors" % path)
    return out


def summary(samples):
    """(median, mean) of a list of numbers."""
    return statistics.median(samples), statistics.fmean(samples)


def table(header, rows, aligns=None):
    """Lines of a plain table: header and rows are lists of strings; the
    first column left-aligned, the others right-aligned unless aligns says
    ('<' or '>' per column)."""
    cols = len(header)
    if aligns is None:
        aligns = ["<"] + [">"] * (cols - 1)
    width = [max(len(str(r[i])) for r in [header] + rows) for i in range(cols)]
    out = []
    for r in [header] + rows:
        out.append("  ".join("%s" % format(str(r[i]), aligns[i] + str(width[i]))
                             for i in range(cols)).rstrip())
        if r is header:
            out.append("  ".join("-" * w for w in width))
    return out
