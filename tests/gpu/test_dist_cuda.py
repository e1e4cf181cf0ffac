"""tcoll's torch.distributed backend on CUDA tensors, under mpiexec (any
number of ranks, which may share one GPU): the collectives on CUDA tensors
against the same calls on CPU tensors (bit for bit: small-integer data),
async work and futures, and DistributedDataParallel of a CUDA model on the
tcoll backend against the same training on Gloo (CUDA tensors too):
bit-identical weights at 1 and 2 ranks, close beyond. Plain Python (no
pytest): a failed check raises, the rank prints FAIL and exits 1; exit 77
with one line when torch has no CUDA device.

    mpiexec -n 2 python3 tests/gpu/test_dist_cuda.py
"""

import os
import sys
import time

import torch

if not torch.cuda.is_available():
    print("test_dist_cuda: skipped: torch finds no usable CUDA device")
    sys.exit(77)

import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402

import tcoll.torch.distributed  # noqa: E402,F401

CHECKS = [0]


def check(cond, what):
    CHECKS[0] += 1
    if not cond:
        raise AssertionError(what)


def data(seed, r, shape, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed * 7919 + r)
    return torch.randint(-4, 5, shape, generator=g).to(dtype)


def collectives(dev):
    r, n = dist.get_rank(), dist.get_world_size()
    for dtype in (torch.float32, torch.float16, torch.int64):
        for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.AVG):
            h = data(1, r, (1000, 3), dtype)
            d = h.to(dev)
            dist.all_reduce(h, op=op)
            dist.all_reduce(d, op=op)
            check(torch.equal(d.cpu(), h), "all_reduce %s %s" % (dtype, op))
    for root in range(n):
        d = data(2, r, (77,)).to(dev)
        dist.broadcast(d, src=root)
        check(torch.equal(d.cpu(), data(2, root, (77,))), "broadcast from %d" % root)
    out = torch.empty(n * 5, device=dev)
    dist.all_gather_into_tensor(out, data(3, r, (5,)).to(dev))
    check(torch.equal(out.cpu(), torch.cat([data(3, k, (5,)) for k in range(n)])),
          "all_gather_into_tensor")
    outs = [torch.empty(4, device=dev) for _ in range(n)]
    dist.all_gather(outs, data(4, r, (4,)).to(dev))
    check(all(torch.equal(o.cpu(), data(4, k, (4,))) for k, o in enumerate(outs)), "all_gather")
    o = torch.empty(3, device=dev)
    inp = data(5, r, (n * 3,))
    dist.reduce_scatter_tensor(o, inp.to(dev))
    want = torch.stack([data(5, k, (n * 3,)) for k in range(n)]).sum(0)[r * 3:r * 3 + 3]
    check(torch.equal(o.cpu(), want), "reduce_scatter_tensor")
    a2a = torch.empty(n * 2, device=dev)
    dist.all_to_all_single(a2a, (torch.arange(n * 2.) + 100 * r).to(dev))
    want = torch.cat([torch.arange(r * 2, r * 2 + 2.) + 100 * k for k in range(n)])
    check(torch.equal(a2a.cpu(), want), "all_to_all_single")
    d = torch.ones(1 << 20, device=dev)
    work = dist.all_reduce(d, async_op=True)
    value = work.get_future().wait()
    check(value[0] is d and torch.equal(d, torch.full_like(d, float(n))), "future of a CUDA "
          "all_reduce")
    dist.barrier()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.bn = nn.BatchNorm1d(128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


def train(group, dev, steps=5):
    r = dist.get_rank()
    torch.manual_seed(7 + r)
    model = nn.parallel.DistributedDataParallel(Net().to(dev), device_ids=[dev.index],
                                                process_group=group, bucket_cap_mb=0.05)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(11 + r)
    for _ in range(steps):
        x = torch.randn(16, 64, generator=g).to(dev)
        y = torch.randint(0, 10, (16,), generator=g).to(dev)
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return [p.detach().cpu() for p in model.module.parameters()]


def main():
    dist.init_process_group("tcoll")
    r, n = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", os.environ.get("MPI_LOCALRANKID",
                                                                             r)))
    dev = torch.device("cuda", local % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    gloo = dist.new_group(backend="gloo")
    try:
        collectives(dev)
        ours, theirs = train(None, dev), train(gloo, dev)
        for a, b in zip(ours, theirs):
            check(torch.equal(a, b) if n <= 2 else torch.allclose(a, b, rtol=1e-4, atol=1e-5),
                  "DDP on CUDA: tcoll and Gloo weights differ")
    except Exception as e:  # noqa: BLE001
        print("test_dist_cuda: rank %d FAIL: %s: %s" % (r, type(e).__name__, e), flush=True)
        sys.stdout.flush()
        os._exit(1)
    # the Gloo group goes too: torch 2.x joins its workers holding the
    # interpreter lock, which a worker letting go of a Python tensor waits for
    dist.barrier()
    time.sleep(0.1)
    dist.destroy_process_group()
    if r == 0:
        print("test_dist_cuda: PASS: %d ranks, %d checks on rank 0 (torch %s)"
              % (n, CHECKS[0], torch.__version__))


if __name__ == "__main__":
    main()
