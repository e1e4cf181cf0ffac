#!/usr/bin/python3
"""Synthetic data-parallel training throughput: a torchvision model on
random images, tcoll.torch's DistributedOptimizer against PyTorch's
DistributedDataParallel over Gloo, one after the other in the same launch.

Run under an MPI launcher, one process per rank (all on one node: Gloo
meets on 127.0.0.1):

    mpiexec -n 2 /usr/bin/python3 tools/python/bench_synthetic.py
    mpiexec -n 2 /usr/bin/python3 tools/python/bench_synthetic.py --model resnet18 \\
        --batch-size 32 --image-size 32 --backends ddp,tcoll

Each backend, in the order --backends gives, starts (hvd.init() or
init_process_group), builds the model from the same seed (random weights,
weights=None) with plain SGD, wraps it (hvd.DistributedOptimizer plus the
broadcasts of parameters and optimizer state, or DDP with its defaults:
25 MiB buckets, buffers broadcast every forward), trains --num-warmup
batches untimed, then --num-iters timed iterations of --num-batches-per-iter
batches, and stops again (tcoll cannot start twice in one process, so a
backend runs once). Each rank trains on its own fixed random batch of
--batch-size images of 3 x --image-size x --image-size with random labels
(the ranks' gradients differ, so only averaged ones keep their weights the
same).

An iteration's time is that of its slowest rank; img/s per rank =
batch-size x batches per iteration / that time, mean over the iterations
+- 1.96 standard deviations; total = per rank x ranks; ratio = the row's
img/s / DDP's (> 1: faster than DDP; without DDP, / the first row's).
After timing, every rank's parameters are compared bit for bit (the
"same" column; the batch norms' running statistics are each rank's own
with tcoll.torch, as in Horovod, so they are left out). Only rank 0 prints.

Exit status: 0, 1 when the ranks' weights differ, 2 when it cannot run.
"""

import argparse
import hashlib
import os
import statistics
import sys
import time
import warnings

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import (  # noqa: E402
    destroy_process_group, gloo_init, import_tcoll_torch, launcher_rank_size, say, table,
)

PROG = "bench_synthetic"
BACKENDS = ("tcoll", "ddp")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet50",
                   help="a torchvision.models constructor (resnet50)")
    p.add_argument("--batch-size", type=int, default=16, help="images per batch and rank (16)")
    p.add_argument("--image-size", type=int, default=64,
                   help="height and width of the images, 3 channels (64)")
    p.add_argument("--num-classes", type=int, default=1000, help="the model's classes (1000)")
    p.add_argument("--num-warmup", type=int, default=3, help="untimed batches first (3)")
    p.add_argument("--num-iters", type=int, default=5, help="timed iterations (5)")
    p.add_argument("--num-batches-per-iter", type=int, default=2,
                   help="batches per timed iteration (2)")
    p.add_argument("--backends", default="tcoll,ddp",
                   help="which backends run, in this order, comma-separated (tcoll,ddp)")
    p.add_argument("--lr", type=float, default=0.01, help="SGD learning rate (0.01)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads per rank (1: one core each)")
    p.add_argument("--seed", type=int, default=0, help="weights, images and labels (0)")
    a = p.parse_args(argv)
    a.backends = [b.strip() for b in a.backends.split(",") if b.strip()]
    if not a.backends or any(b not in BACKENDS for b in a.backends) \
            or len(set(a.backends)) != len(a.backends):
        p.error("--backends takes tcoll, ddp or both, each once, comma-separated")
    if min(a.batch_size, a.image_size, a.num_classes, a.num_iters, a.num_batches_per_iter,
           a.threads) < 1 or a.num_warmup < 0:
        p.error("sizes, counts and --threads must be positive (--num-warmup at least 0)")
    import torchvision.models
    if not callable(getattr(torchvision.models, a.model, None)) or a.model.startswith("_"):
        p.error("--model: torchvision.models has no model %r" % a.model)
    return a


def make_model(args):
    import torchvision.models
    torch.manual_seed(args.seed)
    return getattr(torchvision.models, args.model)(weights=None, num_classes=args.num_classes)


def synthetic_batch(args, rank):
    g = torch.Generator().manual_seed(args.seed + 1 + rank)
    x = torch.randn(args.batch_size, 3, args.image_size, args.image_size, generator=g)
    y = torch.randint(0, args.num_classes, (args.batch_size,), generator=g)
    return x, y


def train(model, opt, args, rank):
    """Warm-up batches, then the timed iterations; this rank's seconds per
    iteration."""
    x, y = synthetic_batch(args, rank)
    model.train()

    def batch():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(args.num_warmup):
        batch()
    times = []
    for _ in range(args.num_iters):
        t0 = time.perf_counter()
        for _ in range(args.num_batches_per_iter):
            batch()
        times.append(time.perf_counter() - t0)
    return times


def weights_digest(model):
    """The first 8 bytes of the sha256 of every parameter, as an int64
    tensor of one element."""
    h = hashlib.sha256()
    for t in model.parameters():
        h.update(t.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return torch.tensor([int.from_bytes(h.digest()[:8], "little", signed=True)])


def run_tcoll(hvd, args):
    """(rank, size, slowest rank's seconds per iteration, weights the same)."""
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    model = make_model(args)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    times = train(model, opt, args, rank)
    slow = hvd.allreduce(torch.tensor(times, dtype=torch.float64), name="bench.times",
                         op=hvd.Max).tolist()
    digests = hvd.allgather(weights_digest(model), name="bench.digest")
    hvd.shutdown()
    return rank, size, slow, bool((digests == digests[0]).all())


def run_ddp(args):
    rank, size = launcher_rank_size()
    dist = gloo_init(rank, size)
    # DDP warns when a gradient's strides differ from its parameter's; it
    # copies into its buckets all the same.
    warnings.filterwarnings("ignore", message="Grad strides do not match")
    model = torch.nn.parallel.DistributedDataParallel(make_model(args))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    times = train(model, opt, args, rank)
    t = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    digests = [torch.zeros(1, dtype=torch.int64) for _ in range(size)]
    mine = weights_digest(model.module)  # alive until the group is gone
    dist.all_gather(digests, mine)
    # DDP's reducer holds the process group: it goes first, then the group.
    del model, opt
    destroy_process_group(dist)
    return rank, size, t.tolist(), all(bool(d == digests[0]) for d in digests)


def main(argv):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    hvd = None
    if "tcoll" in args.backends:
        hvd = import_tcoll_torch(PROG)
        if hvd is None:
            return 2
    results = {}  # backend -> (slowest seconds per iteration, weights the same)
    rank, size = launcher_rank_size()
    for b in args.backends:
        if b == "tcoll":
            r, n, slow, same = run_tcoll(hvd, args)
            if (r, n) != (rank, size):
                say(PROG, "tcoll says rank %d of %d, the launcher %s: run it under Open MPI's "
                    "or MPICH's mpiexec" % (r, n, (rank, size)))
                return 2
        else:
            _, _, slow, same = run_ddp(args)
        results[b] = (slow, same)
    if rank == 0:
        report(args, size, results)
    return 0 if all(same for _, same in results.values()) else 1


def report(args, size, results):
    import torchvision
    names = {"tcoll": "tcoll.torch DistributedOptimizer", "ddp": "DDP over Gloo"}
    per_iter = args.batch_size * args.num_batches_per_iter
    stats = {}
    for b, (slow, _) in results.items():
        ips = [per_iter / t for t in slow]
        ci = 1.96 * statistics.stdev(ips) if len(ips) > 1 else 0.0
        stats[b] = (statistics.fmean(ips), ci,
                    statistics.median(slow) * 1e3 / args.num_batches_per_iter)
    ref_name = "ddp" if "ddp" in stats else args.backends[0]
    ref = stats[ref_name][0]
    print("# bench_synthetic: %s (random weights), batch %d of 3x%dx%d per rank, %d classes, "
          "SGD; %d ranks, %d torch thread(s) each; torch %s, torchvision %s"
          % (args.model, args.batch_size, args.image_size, args.image_size, args.num_classes,
             size, args.threads, torch.__version__, torchvision.__version__))
    print("# %d warm-up batches, then %d iterations of %d batches; an iteration's time is its "
          "slowest rank's" % (args.num_warmup, args.num_iters, args.num_batches_per_iter))
    print("# img/s per rank: mean over iterations +- 1.96 sd; ms/batch: median; "
          "ratio = img/s / %s's" % names[ref_name])
    rows = []
    for b in args.backends:
        mean, ci, ms = stats[b]
        rows.append([names[b], "%.1f +- %.1f" % (mean, ci), "%.1f" % (mean * size),
                     "%.1f" % ms, "%.2f" % (mean / ref), "yes" if results[b][1] else "NO"])
    for line in table(["backend", "img/s per rank", "total img/s", "ms/batch", "ratio",
                       "same"], rows):
        print(line)
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
