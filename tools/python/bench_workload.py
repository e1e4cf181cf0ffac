#!/usr/bin/python3
"""ResNet-50's gradient workload through torch tensors: tcoll.torch against
torch.distributed over Gloo, and Python's cost per operation over tcoll's C
API.

Run under an MPI launcher, one process per rank (all on one node: Gloo
meets on 127.0.0.1):

    mpiexec -n 2 /usr/bin/python3 tools/python/bench_workload.py

or through tools/python/bench_workload.sh, which first runs the C benchmark
(tcoll-perf) for the C rows of both tables and hands its figures over with
--c-json.

A step reduces (averages) every tensor of the workload file once, last line
first (the order backprop produces them), as a data-parallel training step
does, and waits for all. Three ways, timed in the same run, interleaved step
by step (the order rotating), each step after a barrier:

  a  tcoll.torch: hvd.allreduce_async_ per tensor, named (the same names
     every step, as DistributedOptimizer does), then hvd.synchronize each;
  b  Gloo: dist.all_reduce(async_op=True) per tensor, then wait and divide
     each by the number of ranks;
  c  Gloo with DDP's buckets: the tensors, last first, packed into buckets
     (the first closed at 1 MiB, the others at 25 MiB, as DDP assigns them),
     each scaled by 1/ranks on its way in (as DDP does), all_reduce'd
     asynchronously as soon as it is full, then waited for and copied back.

Time per step = the slowest rank's; median and mean over the timed steps.
After timing, one more step of each way on data with known averages checks
every element (the "wrong" column). The second table times one 4-byte
float32 allreduce (sum) at a time through the extension alone, the NumPy
API and tcoll.torch, as tcoll-perf times the C API: an MPI_Barrier before
each (through mpi4py, imported first so that MPI runs with
MPI_THREAD_MULTIPLE; without mpi4py a tcoll barrier, whose ranks leave it
further apart, so every row reads higher), the slowest rank's time, the
median. The difference from the C row is what Python adds per operation.
With another MPI than the one mpi4py is built on (Debian's: Open MPI), pass
--barrier tcoll (bench_workload.sh does, under another launcher): two MPI
libraries in one process do not mix.

Exit status: 0, 1 when an element was wrong, 2 when it cannot run.
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import (  # noqa: E402
    default_workload, destroy_process_group, read_workload,
    gloo_init, import_tcoll_torch, launcher_rank_size, say, summary, table,
)

PROG = "bench_workload"
MIB = 1 << 20


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", default=default_workload(),
                   help="tensors, one per line: name<TAB>elements<TAB>shape "
                        "(default: the source tree's data/resnet50.tsv)")
    p.add_argument("--steps", type=int, default=20, help="timed steps of each way (20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps of each way first (3)")
    p.add_argument("--bucket-mb", type=float, default=25.0,
                   help="bucket size of way c in MiB, DDP's bucket_cap_mb (25)")
    p.add_argument("--first-bucket-mb", type=float, default=1.0,
                   help="size at which way c closes its first bucket, as DDP does (1)")
    p.add_argument("--latency-iters", type=int, default=1000,
                   help="4-byte allreduces per way and round in the latency table "
                        "(1000; 0 skips the table)")
    p.add_argument("--latency-rounds", type=int, default=3,
                   help="rounds of the latency ways, interleaved (3)")
    p.add_argument("--barrier", choices=("mpi", "tcoll"), default="mpi",
                   help="what separates the latency table's operations: mpi "
                        "(MPI_Barrier through mpi4py, as tcoll-perf; mpi4py must be "
                        "built on the MPI tcoll runs on: Debian's is Open MPI's) or "
                        "tcoll (a tcoll barrier; every row reads higher)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads per rank (1: one core each)")
    p.add_argument("--c-json", action="append", default=[], metavar="FILE",
                   help="tcoll-perf --json output for the C rows: a workload run (-m "
                        "workload -o avg) and/or a 4-byte allreduce run (-b 4 -e 4); "
                        "repeat for several runs (their median is shown)")
    a = p.parse_args(argv)
    if a.steps < 1 or a.warmup < 0 or a.latency_iters < 0 or a.latency_rounds < 1:
        p.error("--steps and --latency-rounds must be positive, --warmup and "
                "--latency-iters at least 0")
    if a.bucket_mb <= 0 or a.first_bucket_mb <= 0 or a.threads < 1:
        p.error("--bucket-mb, --first-bucket-mb and --threads must be positive")
    return a


# ---- the workload ---------------------------------------------------------------

def ddp_buckets(sizes, first_cap, cap):
    """DDP's assignment of tensors (their byte sizes, forward order) to
    buckets: walking them last first, a bucket closes once it holds at least
    its cap (first_cap for the first bucket, cap for the others). Returns
    lists of tensor indices, in the order the buckets fill."""
    buckets, cur, cur_bytes, limit = [], [], 0, first_cap
    for k in reversed(range(len(sizes))):
        cur.append(k)
        cur_bytes += sizes[k]
        if cur_bytes >= limit:
            buckets.append(cur)
            cur, cur_bytes, limit = [], 0, cap
    if cur:
        buckets.append(cur)
    return buckets


# ---- the three ways ---------------------------------------------------------------

class TcollWay:
    """a: one named in-place allreduce (average) per tensor, then synchronize."""

    def __init__(self, hvd, grads, names):
        self.hvd, self.grads = hvd, grads
        self.order = [(grads[k], "bench_workload." + names[k]) for k in reversed(range(len(grads)))]
        self.submit_s = []  # per step: seconds spent in the allreduce_async_ calls

    def step(self):
        hvd = self.hvd
        t0 = time.perf_counter()
        handles = [hvd.allreduce_async_(g, name=n, op=hvd.Average) for g, n in self.order]
        self.submit_s.append(time.perf_counter() - t0)
        for h in handles:
            hvd.synchronize(h)


class GlooWay:
    """b: one asynchronous all_reduce (sum) per tensor, then wait and divide."""

    def __init__(self, dist, grads, size):
        self.dist, self.size = dist, size
        self.order = [grads[k] for k in reversed(range(len(grads)))]

    def step(self):
        works = [self.dist.all_reduce(g, async_op=True) for g in self.order]
        for g, w in zip(self.order, works):
            w.wait()
            g.div_(self.size)


class GlooBucketWay:
    """c: DDP's buckets: each tensor scaled by 1/ranks into its place in a
    flat bucket, each full bucket all_reduce'd asynchronously, then all
    waited for and copied back into the tensors."""

    def __init__(self, dist, grads, size, first_cap, cap):
        self.dist, self.scale = dist, 1.0 / size
        self.buckets = []  # (flat tensor, [(grad, view of flat)])
        for idx in ddp_buckets([g.numel() * g.element_size() for g in grads], first_cap, cap):
            flat = torch.zeros(sum(grads[k].numel() for k in idx))
            views, off = [], 0
            for k in idx:
                n = grads[k].numel()
                views.append((grads[k], flat[off:off + n].view(grads[k].shape)))
                off += n
            self.buckets.append((flat, views))

    def step(self):
        works = []
        for flat, views in self.buckets:
            for g, v in views:
                torch.mul(g, self.scale, out=v)
            works.append(self.dist.all_reduce(flat, async_op=True))
        for (flat, views), w in zip(self.buckets, works):
            w.wait()
            for g, v in views:
                g.copy_(v)


def fill_known(grads, rank):
    """Tensor k of rank r holds (r + 1) * (1 + k % 7): the average over n
    ranks is (n + 1) / 2 * (1 + k % 7)."""
    for k, g in enumerate(grads):
        g.fill_((rank + 1) * (1 + k % 7))


def count_wrong(grads, size):
    wrong = 0
    for k, g in enumerate(grads):
        want = (size + 1) / 2.0 * (1 + k % 7)
        wrong += int(((g - want).abs() > 1e-6 * want).sum())
    return wrong


# ---- C figures ----------------------------------------------------------------------

def read_c_json(paths, workload):
    """From tcoll-perf --json files: the tcoll ms/step of workload runs and
    the tcoll us of 4-byte allreduce runs (lists), and notes on runs that
    do not match this one."""
    wl_ms, lat_us, notes = [], [], []
    ntensors = len(workload)
    nelems = sum(int(np.prod(s)) for _, s in workload)
    for path in paths:
        with open(path) as f:
            rows = json.load(f)
        for r in rows:
            if r.get("mode") == "workload" and r.get("impl") == "tcoll":
                if (r.get("tensors"), r.get("elements")) != (ntensors, nelems):
                    notes.append("%s: the C workload has %s tensors, %s elements, not %d, %d"
                                 % (path, r.get("tensors"), r.get("elements"), ntensors, nelems))
                if r.get("op") != "avg":
                    notes.append("%s: the C workload ran with op %s, not avg" % (path, r.get("op")))
                wl_ms.append(float(r["ms_per_step"]))
            elif r.get("mode") == "allreduce" and r.get("size") == 4 \
                    and r.get("dtype") == "float32":
                lat_us.append(float(r["tcoll_time_us"]))
    return wl_ms, lat_us, notes


# ---- the runs ---------------------------------------------------------------------------

def slowest(hvd, samples, name):
    """Element-wise maximum over the ranks of a list of floats. Collective."""
    t = torch.tensor(samples, dtype=torch.float64)
    return hvd.allreduce(t, name=name, op=hvd.Max).tolist()


def run_workload(hvd, ways, args):
    """Interleaved timed steps of every way; {name: per-step seconds of the
    slowest rank}."""
    times = {name: [] for name in ways}
    names = list(ways)
    for s in range(args.warmup + args.steps):
        rot = s % len(names)
        for name in names[rot:] + names[:rot]:
            hvd.barrier()
            t0 = time.perf_counter()
            ways[name].step()
            dt = time.perf_counter() - t0
            if s >= args.warmup:
                times[name].append(dt)
    return {name: slowest(hvd, times[name], "bench_workload.times." + name) for name in names}


def mpi_barrier():
    """MPI_Barrier through mpi4py, initializing MPI with
    MPI_THREAD_MULTIPLE (before tcoll does); None without mpi4py."""
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    return MPI.COMM_WORLD.Barrier


def run_latency(hvd, ways, args, barrier):
    """Rounds of args.latency_iters single operations per way (the order
    rotating), barrier() before each; {name: per-op seconds of the slowest
    rank}."""
    times = {name: [] for name in ways}
    names = list(ways)
    warm = max(10, args.latency_iters // 10)
    for rnd in range(args.latency_rounds):
        rot = rnd % len(names)
        for name in names[rot:] + names[:rot]:
            fn, mine = ways[name], []
            for i in range(warm + args.latency_iters):
                barrier()
                t0 = time.perf_counter()
                fn()
                dt = time.perf_counter() - t0
                if i >= warm:
                    mine.append(dt)
            times[name] += mine
    return {name: slowest(hvd, times[name], "bench_workload.lat." + name) for name in names}


def main(argv):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    try:
        workload = read_workload(args.workload)
        c_wl, c_lat, c_notes = read_c_json(args.c_json, workload)
    except (OSError, ValueError, KeyError) as e:
        say(PROG, str(e))
        return 2
    barrier = mpi_barrier() if args.latency_iters > 0 and args.barrier == "mpi" else None
    hvd = import_tcoll_torch(PROG)
    if hvd is None:
        return 2
    import tcoll
    from tcoll import _tcoll
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    if (rank, size) != launcher_rank_size():
        say(PROG, "tcoll says rank %d of %d, the launcher %s: run it under Open MPI's or "
            "MPICH's mpiexec" % (rank, size, launcher_rank_size()))
        return 2
    dist = gloo_init(rank, size)

    grads = [torch.zeros(shape) for _, shape in workload]  # one allocation each
    ways = {
        "a": TcollWay(hvd, grads, [n for n, _ in workload]),
        "b": GlooWay(dist, grads, size),
        "c": GlooBucketWay(dist, grads, size, int(args.first_bucket_mb * MIB),
                           int(args.bucket_mb * MIB)),
    }
    fill_known(grads, rank)
    times = run_workload(hvd, ways, args)
    wrong = {}
    for name, way in ways.items():
        fill_known(grads, rank)
        way.step()
        w = torch.tensor([count_wrong(grads, size)], dtype=torch.int64)
        wrong[name] = int(hvd.allreduce(w, name="bench_workload.wrong." + name, op=hvd.Sum))
    submit = slowest(hvd, ways["a"].submit_s[args.warmup:], "bench_workload.submit")

    lat = None
    if args.latency_iters > 0:
        arr = np.zeros(1, dtype=np.float32)
        one = torch.zeros(1)
        one_gloo = torch.zeros(1)
        raw = np.zeros(1, dtype=np.float32)
        lat = run_latency(hvd, {
            "ext": lambda: _tcoll.submit("allreduce", "bench_workload.lat.ext", raw, raw,
                                         _tcoll.FLOAT32, (1,)).wait(),
            "numpy": lambda: tcoll.allreduce_(arr, name="bench_workload.lat.numpy"),
            "torch": lambda: hvd.allreduce_(one, name="bench_workload.lat.torch", op=hvd.Sum),
            "gloo": lambda: dist.all_reduce(one_gloo),
        }, args, barrier or hvd.barrier)

    destroy_process_group(dist)
    hvd.shutdown()
    if rank == 0:
        report(args, workload, size, times, wrong, submit, lat, c_wl, c_lat, c_notes,
               len(ways["c"].buckets), tcoll.__version__, barrier is not None)
    return 1 if any(wrong.values()) else 0


def report(args, workload, size, times, wrong, submit, lat, c_wl, c_lat, c_notes, nbuckets,
           version, mpi_barrier_used):
    nelems = sum(int(np.prod(s)) for _, s in workload)
    ms = {name: summary([t * 1e3 for t in ts]) for name, ts in times.items()}
    base = ms["c"][0]

    def speedup(median):
        return "%.2f" % (base / median)

    print("# bench_workload: tcoll %s, torch %s, %d ranks, %d torch thread(s) per rank"
          % (version, torch.__version__, size, args.threads))
    print("# workload %s: %d tensors, %d float32 elements (%d bytes), op average"
          % (args.workload, len(workload), nelems, nelems * 4))
    print("# one step: every tensor reduced once, last line first, then all waited for;")
    print("# ms/step of the slowest rank, median and mean over %d steps after %d warm-up, "
          "ways a-c interleaved step by step" % (args.steps, args.warmup))
    print("# speedup = c's median / the row's median (> 1: faster than Gloo's DDP buckets)")
    rows = [
        ["a", "tcoll.torch: allreduce_async_ per tensor",
         "%.2f" % ms["a"][0], "%.2f" % ms["a"][1], speedup(ms["a"][0]), str(wrong["a"])],
        ["b", "Gloo: all_reduce async per tensor",
         "%.2f" % ms["b"][0], "%.2f" % ms["b"][1], speedup(ms["b"][0]), str(wrong["b"])],
        ["c", "Gloo: %d DDP bucket%s (%g + %g MiB)" % (nbuckets, "s" * (nbuckets > 1),
                                                       args.first_bucket_mb, args.bucket_mb),
         "%.2f" % ms["c"][0], "%.2f" % ms["c"][1], "1.00", str(wrong["c"])],
    ]
    if c_wl:
        med = statistics.median(c_wl)
        rows.append(["d", "tcoll C API (tcoll-perf, %d run%s)" % (len(c_wl), "s" * (len(c_wl) > 1)),
                     "%.2f" % med, "-", speedup(med), "-"])
    else:
        rows.append(["d", "tcoll C API (tcoll-perf): not given (--c-json)", "-", "-", "-", "-"])
    for line in table(["", "way", "median ms", "mean ms", "speedup", "wrong"], rows,
                      ["<", "<", ">", ">", ">", ">"]):
        print(line)
    print("# a: %.2f us per allreduce_async_ call (submission only; median step of the slowest "
          "rank / %d)" % (statistics.median(submit) * 1e6 / len(workload), len(workload)))
    for n in c_notes:
        print("# note: " + n)

    if lat is None:
        return
    us = {name: statistics.median(ts) * 1e6 for name, ts in lat.items()}
    c = statistics.median(c_lat) if c_lat else None

    def added(x):
        return "%+.2f" % (x - c) if c is not None else "-"

    print()
    print("# one 4-byte float32 allreduce (sum) at a time, %s before each: us of the slowest "
          "rank," % ("an MPI_Barrier (mpi4py)" if mpi_barrier_used
                     else "a tcoll barrier (no mpi4py: not tcoll-perf's MPI_Barrier)"))
    print("# median over %d x %d operations per way (rounds interleaved); added = the row's us - "
          "the C API's" % (args.latency_rounds, args.latency_iters))
    rows = []
    if c is not None:
        rows.append(["C: tc_allreduce + tc_wait + tc_request_free (tcoll-perf -b 4 -e 4, "
                     "%d run%s)" % (len(c_lat), "s" * (len(c_lat) > 1)), "%.2f" % c, "-"])
    else:
        rows.append(["C: tcoll-perf -b 4 -e 4: not given (--c-json)", "-", "-"])
    rows.append(["extension alone: _tcoll.submit(...).wait()", "%.2f" % us["ext"],
                 added(us["ext"])])
    rows.append(["NumPy: tcoll.allreduce_(array, name=...)", "%.2f" % us["numpy"],
                 added(us["numpy"])])
    rows.append(["tcoll.torch: hvd.allreduce_(tensor, name=..., op=hvd.Sum)",
                 "%.2f" % us["torch"], added(us["torch"])])
    rows.append(["Gloo: dist.all_reduce(tensor), for reference", "%.2f" % us["gloo"],
                 added(us["gloo"])])
    for line in table(["way", "median us", "added us"], rows):
        print(line)
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
