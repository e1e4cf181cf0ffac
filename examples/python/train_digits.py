#!/usr/bin/python3
"""Data-parallel training of a small CNN on scikit-learn's handwritten digits.

Run it under an MPI launcher, one process per rank:

    mpiexec -n 2 /usr/bin/python3 examples/python/train_digits.py

Each rank trains on its own shard of the training images; tcoll.torch (the
Horovod API: ``import tcoll.torch as hvd``) averages the gradients at every
step, so every rank applies the same update and ends with the same weights.
At the end the script

* checks that the weights are bit-for-bit identical on every rank,
* trains the same model in one process on the whole training set, with the
  global batch (per-rank batch x ranks), the same epochs, learning rate and
  data order, and checks that the distributed run's held-out accuracy is at
  most one point below that one.

``--device cuda`` trains on GPUs: rank r on CUDA device (local rank mod the
number of devices), gradients averaged on the device; the one-process
baseline then runs on the first device.

It exits 1 when a check fails, 2 when it cannot run (e.g. tcoll.torch is not
importable, or --device cuda without a usable GPU). ``--compare ddp`` also trains with PyTorch's own
DistributedDataParallel, over Gloo (loopback TCP, so all ranks on one
machine) and over tcoll's torch.distributed backend (``import
tcoll.torch.distributed``; ``init_process_group("tcoll")``), and prints the
time of each epoch for the three. ``--backend ddp`` trains with DDP over
Gloo only, ``--backend ddp-tcoll`` with DDP over tcoll only.
"""

import argparse
import hashlib
import os
import statistics
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn
from tqdm import tqdm


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=10, help="passes over the training set (10)")
    p.add_argument("--batch-size", type=int, default=32,
                   help="images per step on each rank (32); the global batch is this x ranks")
    p.add_argument("--lr", type=float, default=0.05, help="SGD learning rate (0.05)")
    p.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (0.9)")
    p.add_argument("--seed", type=int, default=42,
                   help="seeds the split, the data order and the initial weights (42)")
    p.add_argument("--no-baseline", action="store_true",
                   help="skip the one-process run and the accuracy check")
    p.add_argument("--compare", choices=["ddp"],
                   help="also train with torch DistributedDataParallel (over Gloo and over "
                        "tcoll) and compare times")
    p.add_argument("--backend", choices=["tcoll", "ddp", "ddp-tcoll"], default="tcoll",
                   help="what averages the gradients (tcoll: tcoll.torch's "
                        "DistributedOptimizer; ddp: DDP over Gloo; ddp-tcoll: DDP over tcoll)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="where the model trains (cpu); cuda: a GPU per rank, shared when "
                        "there are fewer GPUs than ranks")
    a = p.parse_args(argv)
    if a.epochs < 1 or a.batch_size < 1 or a.lr <= 0:
        p.error("--epochs and --batch-size must be positive, --lr above 0")
    if a.compare == "ddp" and a.backend != "tcoll":
        p.error("--compare ddp runs tcoll and DDP; --backend ddp or ddp-tcoll runs DDP alone")
    return a


# ---- data and model (the same in every run) ----------------------------------

def load_data(seed):
    """The 1797 8x8 digit images (pixels 0..16, scaled to 0..1), split 80/20,
    stratified by class, the same way on every rank."""
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    y = digits.target.astype(np.int64)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.2, stratify=y, random_state=seed)
    return tuple(torch.from_numpy(a) for a in (xtr, ytr, xte, yte))


class Net(nn.Module):
    """conv 3x3 (16) -> conv 3x3 (32) -> max pool -> 64 -> 10."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def new_model(seed, args):
    torch.manual_seed(seed)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    return model, opt


def epoch_order(n, epoch, seed, size):
    """This epoch's order of the n training images, the same on every rank:
    a permutation, padded (by repeating its start) to a multiple of size, as
    torch's DistributedSampler does. Rank r trains on order[r::size]; the
    union of the ranks' k-th batches of b is then exactly order[k*b*size :
    (k+1)*b*size], the k-th batch of b*size of a one-process run."""
    perm = np.random.default_rng([seed, epoch]).permutation(n)
    pad = -n % size
    return torch.from_numpy(np.concatenate([perm, perm[:pad]]))


def train_epoch(model, opt, x, y, order, batch, desc, show):
    """One pass over x[order] in batches; returns the mean loss per image."""
    model.train()
    steps = (len(order) + batch - 1) // batch
    total = 0.0
    bar = tqdm(total=steps, desc=desc, disable=not show, leave=False, ncols=80,
               file=sys.stdout, mininterval=0.25)
    for k in range(steps):
        idx = order[k * batch:(k + 1) * batch]
        opt.zero_grad()
        loss = F.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        total += loss.item() * len(idx)
        bar.update()
    bar.close()
    return total / len(order)


@torch.no_grad()
def accuracy(model, x, y):
    model.eval()
    return 100.0 * (model(x).argmax(1) == y).float().mean().item()


def flat_weights(model):
    return torch.cat([t.detach().reshape(-1) for t in model.state_dict().values()])


def same_weights(gathered):
    """gathered: every rank's flat weights, one row each. Says whether they
    are bitwise identical and returns it."""
    size = gathered.shape[0]
    gathered = gathered.cpu()
    bits = gathered.view(torch.int32)
    digest = hashlib.sha256(gathered[0].numpy().tobytes()).hexdigest()[:16]
    bad = [r for r in range(1, size) if not torch.equal(bits[r], bits[0])]
    if not bad:
        print(f"weights identical on all {size} ranks ({gathered.shape[1]} values, "
              f"sha256 {digest}...)", flush=True)
        return True
    for r in bad:
        diff = (bits[r] != bits[0]).sum().item()
        worst = (gathered[r] - gathered[0]).abs().max().item()
        print(f"FAIL: rank {r}'s weights differ from rank 0's in {diff} of "
              f"{gathered.shape[1]} values (max |difference| {worst:.3g})", flush=True)
    return False


# ---- what averages the gradients ---------------------------------------------

class Tcoll:
    """tcoll.torch, through Horovod's PyTorch API."""
    name = "tcoll"

    def __init__(self, hvd):
        self.hvd = hvd
        hvd.init()
        self.rank, self.size = hvd.rank(), hvd.size()

    def wrap(self, model, opt):
        hvd = self.hvd
        opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(),
                                       op=hvd.Average)
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(opt, root_rank=0)
        return model, opt

    def average(self, value, name):
        return self.hvd.allreduce(torch.tensor([value]), name=name, op=self.hvd.Average).item()

    def gather_rows(self, t):
        return self.hvd.allgather(t.unsqueeze(0), name="weights")


class Ddp:
    """torch DistributedDataParallel over torch.distributed's Gloo (rank and
    size from the MPI launcher, rank 0's address 127.0.0.1 and a port every
    rank derives alike) or over tcoll's backend (rank and size from tcoll,
    nothing else to set)."""

    def __init__(self, backend):
        import torch.distributed as dist
        self.dist = dist
        self.held = []  # tensors given to the group, until close()
        if backend == "tcoll":
            import tcoll.torch.distributed  # noqa: F401  (registers "tcoll")
            self.name = "DDP-tcoll"
            dist.init_process_group("tcoll")
            self.rank, self.size = dist.get_rank(), dist.get_world_size()
            return
        self.name = "DDP-gloo"
        self.rank, self.size = launcher_rank_size()
        port = os.environ.get("MASTER_PORT") or str(20000 + os.getppid() % 20000)
        master = self.rank == 0
        try:
            store = dist.TCPStore("127.0.0.1", int(port), self.size, master)
        except RuntimeError as e:  # torch >= 2.4 built without libuv (Debian's)
            if "libuv" not in str(e):
                raise
            store = dist.TCPStore("127.0.0.1", int(port), self.size, master, use_libuv=False)
        dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.size)

    def wrap(self, model, opt):
        # DDP broadcasts rank 0's parameters when it wraps the model; the
        # optimizer has no state yet. Its warning that conv1's gradient
        # strides differ from the weight's (they do, along conv1's single
        # input channel, which changes no element's place) is no concern.
        warnings.filterwarnings("ignore", message="Grad strides do not match")
        return nn.parallel.DistributedDataParallel(model), opt

    def average(self, value, name):
        t = torch.tensor([value])
        self.dist.all_reduce(t)
        self.held.append(t)
        return t.item() / self.size

    def gather_rows(self, t):
        rows = [torch.empty_like(t) for _ in range(self.size)]
        self.dist.all_gather(rows, t)
        self.held += [t] + rows
        return torch.stack(rows)

    def close(self):
        # torch 2.x's Gloo group joins its worker threads in its destructor
        # holding the interpreter lock, and a worker that drops the last
        # reference to a Python tensor waits for that lock: both would wait
        # forever. So the tensors given to the group stay alive until it is
        # gone (held), every earlier work is done (the barrier), and the
        # workers get the lock to let go of theirs (the sleep).
        self.dist.barrier()
        time.sleep(0.1)
        self.dist.destroy_process_group()
        self.held.clear()


def local_rank():
    """This process's rank among the launcher's processes on this node (0
    when not launched by Open MPI or Hydra)."""
    for v in ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"):
        if v in os.environ:
            return int(os.environ[v])
    return 0


def launcher_rank_size():
    """This process's rank and the number of ranks, as the launcher says
    (Open MPI, MPICH/Hydra); 0 and 1 when not launched by one."""
    for r, s in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE")):
        if r in os.environ and s in os.environ:
            return int(os.environ[r]), int(os.environ[s])
    return 0, 1


def import_tcoll_torch():
    """tcoll.torch, or None after saying (on rank 0) why it is not there."""
    try:
        import tcoll
    except ImportError as e:
        why = (f"cannot import tcoll ({e}).\n  Build its Python package (cmake --build "
               "build --target tcoll_pyext) and run with\n  PYTHONPATH=build/python, "
               "as scripts/demo.sh does.")
    else:
        try:
            import tcoll.torch as hvd
            return hvd
        except ImportError as e:
            why = (f"cannot import tcoll.torch ({e}).\n  tcoll itself is "
                   f"{os.path.dirname(tcoll.__file__)}; its PyTorch module\n  "
                   "(python/tcoll/torch/ in the source tree) is missing there or failed "
                   "to import.")
    if launcher_rank_size()[0] == 0:
        print(f"train_digits: {why}\n  To train with PyTorch's DistributedDataParallel "
              "alone: --backend ddp.", file=sys.stderr)
    return None


# ---- the runs ----------------------------------------------------------------

def train_distributed(comm, data, args):
    """Trains on this rank's shard; returns (per-epoch seconds, accuracy,
    whether the weights are the same on all ranks)."""
    rank, size = comm.rank, comm.size
    device = torch.device("cpu")
    if args.device == "cuda":
        device = torch.device("cuda", local_rank() % torch.cuda.device_count())
        torch.cuda.set_device(device)
    xtr, ytr, xte, yte = (t.to(device) for t in data)
    # Each rank starts from its own random weights: wrap() must make them
    # rank 0's, which are the one-process baseline's.
    model, opt = new_model(args.seed + rank, args)
    model.to(device)
    model, opt = comm.wrap(model, opt)
    net = getattr(model, "module", model)
    times, acc = [], 0.0
    if rank == 0:
        print(f"{comm.name}: {size} ranks, {-(-len(xtr) // size)} training images each, "
              f"batch {args.batch_size} per rank ({args.batch_size * size} in all), "
              f"lr {args.lr}", flush=True)
    for epoch in range(1, args.epochs + 1):
        order = epoch_order(len(xtr), epoch, args.seed, size)[rank::size]
        t0 = time.perf_counter()
        loss = train_epoch(model, opt, xtr, ytr, order, args.batch_size,
                           f"{comm.name} epoch {epoch}", rank == 0)
        times.append(time.perf_counter() - t0)
        loss = comm.average(loss, f"loss.{epoch}")
        acc = accuracy(net, xte, yte)
        if rank == 0:
            print(f"{comm.name} epoch {epoch:2d}: loss {loss:.4f}  held-out accuracy "
                  f"{acc:5.1f}%  {times[-1]:.2f} s", flush=True)
    # Every rank gets every rank's weights; rank 0 compares them.
    gathered = comm.gather_rows(flat_weights(net))
    same = same_weights(gathered) if rank == 0 else None
    return times, acc, same


def train_one_process(data, args, size):
    device = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    xtr, ytr, xte, yte = (t.to(device) for t in data)
    model, opt = new_model(args.seed, args)
    model.to(device)
    batch = args.batch_size * size
    print(f"baseline: 1 process, all {len(xtr)} training images, batch {batch}, "
          f"lr {args.lr}", flush=True)
    for epoch in range(1, args.epochs + 1):
        order = epoch_order(len(xtr), epoch, args.seed, size)
        loss = train_epoch(model, opt, xtr, ytr, order, batch, f"baseline epoch {epoch}", True)
    acc = accuracy(model, xte, yte)
    print(f"baseline after {args.epochs} epochs: loss {loss:.4f}  held-out accuracy "
          f"{acc:5.1f}%", flush=True)
    return acc


def print_times(runs, size):
    """Seconds per epoch of each run, and each run's time over the first's."""
    names = list(runs)
    first = names[0]
    cols = [runs[n][0] for n in names]
    w = max(10, max(len(n) for n in names) + 2)
    ratios = [f"{n + '/' + first:>{w + len(first) + 1}}" for n in names[1:]]
    print(f"\nseconds per epoch on {size} ranks (training steps only)")
    print(f"{'epoch':>6}  " + "  ".join(f"{n + ' s':>{w}}" for n in names) + "  "
          + "  ".join(ratios))

    def row(label, values):
        text = "  ".join(f"{v:{w}.3f}" for v in values)
        rel = "  ".join(f"{v / values[0]:{w + len(first) + 1}.2f}" for v in values[1:])
        print(f"{label:>6}  {text}  {rel}")
    for e, values in enumerate(zip(*cols), 1):
        row(str(e), values)
    row("total", [sum(c) for c in cols])
    row("median", [statistics.median(c) for c in cols])
    print("held-out accuracy: " + ", ".join(f"{n} {runs[n][1]:.1f}%" for n in names) + "\n")


def main(argv):
    args = parse_args(argv)
    torch.set_num_threads(1)  # one core per rank
    if args.device == "cuda" and not torch.cuda.is_available():
        if launcher_rank_size()[0] == 0:
            print("train_digits: --device cuda, but torch finds no usable CUDA device",
                  file=sys.stderr)
        return 2
    data = load_data(args.seed)
    runs = {}  # name -> (per-epoch seconds, accuracy, weights the same)
    hvd = None
    if args.backend in ("tcoll", "ddp-tcoll"):
        hvd = import_tcoll_torch()
        if hvd is None:
            return 2
    if args.backend == "tcoll":
        comm = Tcoll(hvd)
        runs[comm.name] = train_distributed(comm, data, args)
        if args.compare == "ddp" and (comm.rank, comm.size) != launcher_rank_size():
            print(f"train_digits: rank {comm.rank} of {comm.size} for tcoll but "
                  f"{launcher_rank_size()} for the launcher: --compare ddp needs "
                  "Open MPI's or Hydra's mpiexec", file=sys.stderr)
            return 2
    backends = {"ddp": ["gloo"], "ddp-tcoll": ["tcoll"]}.get(args.backend, [])
    if args.compare == "ddp":
        backends = ["gloo", "tcoll"]
    for backend in backends:
        comm = Ddp(backend)
        runs[comm.name] = train_distributed(comm, data, args)
        comm.close()
    if hvd is not None and hvd.is_initialized():
        hvd.shutdown()  # tcoll ran the tcoll.torch run and DDP over tcoll
    # Rank 0 has seen every rank's weights: it alone reports and gives the
    # exit status (mpiexec kills the others when one exits non-zero).
    rank, size = comm.rank, comm.size
    if rank != 0:
        return 0
    ok = all(same for _, _, same in runs.values())

    if len(runs) >= 2:
        print_times(runs, size)
    if not args.no_baseline:
        base = train_one_process(data, args, size)
        for name, (_, acc, _) in runs.items():
            verdict = "OK" if acc >= base - 1.0 else "FAIL: more than 1 point below"
            print(f"held-out accuracy: {name} on {size} ranks {acc:.1f}%, one process "
                  f"{base:.1f}%: {verdict}", flush=True)
            ok = ok and acc >= base - 1.0
    print("train_digits: all checks passed" if ok else "train_digits: FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
