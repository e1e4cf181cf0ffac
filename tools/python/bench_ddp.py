#!/usr/bin/python3
"""DistributedDataParallel over tcoll's torch.distributed backend against
DDP over Gloo, on ResNet-50's gradient workload, in the same run.

Run under an MPI launcher, one process per rank, all on one node (Gloo
meets on 127.0.0.1 through the store the tcoll backend sets up):

    mpiexec -n 2 /usr/bin/python3 tools/python/bench_ddp.py

The model has one parameter per line of the workload file (ResNet-50's 161
tensors, 25.6 M float32 elements, 102 MB) and a forward pass that costs
almost nothing: the loss is the sum of every parameter's sum times an
input, so backprop produces every gradient (a full tensor each, last
parameter first) and the step's time is DDP's: its buckets (bucket_cap_mb
25, DDP's default), their allreduces overlapped with backprop, and the wait
for them. Three ways, timed in the same run, interleaved step by step (the
order rotating), each step after a barrier:

  local      the same model without DDP: the step's own cost (no communication)
  DDP-none   DDP with a comm hook that communicates nothing (it only scales
             each bucket by 1/ranks, as DDP does before its allreduce): DDP's
             own cost (copying gradients into buckets and back)
  DDP-gloo   DDP over a Gloo group of every rank
  DDP-tcoll  DDP over the default process group, init_process_group("tcoll")

Time per step = the slowest rank's; median and mean over the timed steps.
The machine's limit, measured in the same run: the time one process takes
to copy the workload's bytes once in memory (torch's copy_, the median of
a few), and the communication time of each DDP way (its median minus
DDP-none's) divided by it. After timing, one more step of each DDP way with
inputs of known average checks every gradient element ("wrong" column).

Exit status: 0, 1 when an element was wrong, 2 when it cannot run.
"""

import argparse
import os
import statistics
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import (  # noqa: E402
    default_workload, destroy_process_group, read_workload, say, summary, table,
)

PROG = "bench_ddp"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", default=default_workload(),
                   help="tensors, one per line: name<TAB>elements<TAB>shape "
                        "(default: the source tree's data/resnet50.tsv)")
    p.add_argument("--steps", type=int, default=20, help="timed steps of each way (20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps of each way first (3)")
    p.add_argument("--bucket-mb", type=float, default=25.0, help="DDP's bucket_cap_mb (25)")
    p.add_argument("--bucket-view", action="store_true",
                   help="DDP(gradient_as_bucket_view=True): gradients live in the buckets, "
                        "so DDP copies nothing (default: DDP's default, False)")
    a = p.parse_args(argv)
    if a.steps < 1 or a.warmup < 0 or a.bucket_mb <= 0:
        p.error("--steps must be positive, --warmup not negative, --bucket-mb above 0")
    return a


class Workload(nn.Module):
    """One parameter per workload tensor; loss = x * (sum of every
    parameter's sum), so each gradient is x everywhere."""

    def __init__(self, shapes):
        super().__init__()
        self.params = nn.ParameterList([nn.Parameter(torch.zeros(s)) for s in shapes])

    def forward(self, x):
        total = x.new_zeros(())
        for p in self.params:
            total = total + p.sum()
        return total * x


def step(model, x):
    """One training step's communication-relevant part: forward, backward
    (DDP reduces the gradients), and nothing else."""
    for p in model.parameters():
        p.grad = None
    model(x).backward()


def _no_communication(size, bucket):
    """A DDP comm hook that reduces nothing, but scales the bucket by
    1/ranks as DDP's own allreduce path does: DDP's cost per step."""
    buf = bucket.buffer() if hasattr(bucket, "buffer") else bucket.get_tensor()
    buf.div_(size)
    fut = torch.futures.Future()
    fut.set_result(buf)
    return fut


def copy_seconds(nbytes, reps=5):
    """Median time one process takes to copy nbytes in memory once."""
    n = nbytes // 4
    src, dst = torch.ones(n), torch.empty(n)
    dst.copy_(src)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        dst.copy_(src)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv):
    args = parse_args(argv)
    torch.set_num_threads(1)
    try:
        import torch.distributed as dist
        import tcoll.torch.distributed  # noqa: F401  (registers the backend)
    except ImportError as e:
        say(PROG, "SKIPPED: cannot import tcoll.torch.distributed (%s): build the Python "
            "package and run with PYTHONPATH=build/python" % e)
        return 2
    if not dist.is_gloo_available():
        say(PROG, "SKIPPED: torch.distributed has no Gloo")
        return 2
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("tcoll")
    rank, size = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    shapes = [shape for _name, shape in read_workload(args.workload)]
    nbytes = sum(4 * torch.Size(s).numel() for s in shapes)
    def ddp(module, **kw):
        return nn.parallel.DistributedDataParallel(
            module, gradient_as_bucket_view=args.bucket_view, **kw)
    none = ddp(Workload(shapes), bucket_cap_mb=args.bucket_mb)
    none.register_comm_hook(size, _no_communication)
    ways = {
        "local": Workload(shapes),
        "DDP-none": none,
        "DDP-gloo": ddp(Workload(shapes), process_group=gloo, bucket_cap_mb=args.bucket_mb),
        "DDP-tcoll": ddp(Workload(shapes), bucket_cap_mb=args.bucket_mb),
    }
    names = list(ways)
    x = torch.tensor(1.0)
    times = {n: [] for n in names}
    for k in range(args.warmup + args.steps):
        for j in range(len(names)):
            name = names[(k + j) % len(names)]
            dist.barrier()
            t0 = time.perf_counter()
            step(ways[name], x)
            dt = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
            dist.all_reduce(dt, op=dist.ReduceOp.MAX)
            if k >= args.warmup:
                times[name].append(dt.item())
    # the check: rank r's input is r + 1, so every gradient element is the
    # average (n + 1) / 2, exactly
    want = (size + 1) / 2.0
    wrong = {}
    for name in names[2:]:
        step(ways[name], torch.tensor(float(rank + 1)))
        bad = sum(int((p.grad != want).sum()) for p in ways[name].parameters())
        bad_t = torch.tensor([bad], dtype=torch.int64)
        dist.all_reduce(bad_t)
        wrong[name] = int(bad_t.item())
    limit = torch.tensor([copy_seconds(nbytes)], dtype=torch.float64)
    dist.all_reduce(limit, op=dist.ReduceOp.MAX)
    limit = limit.item()
    if rank == 0:
        med = {n: summary(times[n])[0] for n in names}
        rows = []
        for n in names:
            m, mean = summary(times[n])
            comm = m - med["DDP-none"]
            rows.append([n, "%.2f" % (m * 1e3), "%.2f" % (mean * 1e3),
                         "%.2f" % (comm * 1e3) if n.startswith("DDP-") and n != "DDP-none"
                         else "-",
                         "%.1f" % (comm / limit) if n.startswith("DDP-") and n != "DDP-none"
                         else "-",
                         str(wrong.get(n, "-"))])
        print("%s: %d ranks, %d tensors, %.1f MB of float32 gradients, DDP buckets of %g MiB%s, "
              "%d timed steps (after %d)" % (PROG, size, len(shapes), nbytes / 1e6,
                                             args.bucket_mb, ", gradients as bucket views"
                                             if args.bucket_view else "", args.steps,
                                             args.warmup))
        print("machine limit: one copy of %.1f MB in memory takes %.2f ms (%.1f GB/s)"
              % (nbytes / 1e6, limit * 1e3, nbytes / limit / 1e9))
        for line in table(["way", "median ms", "mean ms", "comm ms", "comm/copy", "wrong"],
                          rows):
            print(line)
        speed = med["DDP-gloo"] / med["DDP-tcoll"]
        comm_speed = (med["DDP-gloo"] - med["DDP-none"]) / max(
            med["DDP-tcoll"] - med["DDP-none"], 1e-9)
        print("DDP-tcoll against DDP-gloo: %.2fx the steps per second, %.2fx on the "
              "communication alone (goal at 2 ranks: 3x)" % (speed, comm_speed))
    ok = all(v == 0 for v in wrong.values())
    destroy_process_group(dist)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
