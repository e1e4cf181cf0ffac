"""tcoll.torch on CUDA tensors, under mpiexec (any number of ranks, which may
share one GPU): every collective and its async and in-place forms against
the same call on CPU tensors (bit for bit: small-integer data, exact in
every dtype), autograd, grouped calls, DistributedOptimizer, the demo's
model trained for a few steps on the GPU against the same steps on the
host, broadcast_parameters, broadcast_optimizer_state, SyncBatchNorm and
join(device). Plain Python (no pytest): each check raises, the rank prints
FAIL and exits 1; exit 77 with one line when torch has no CUDA device.

    mpiexec -n 2 python3 tests/gpu/test_torch_cuda.py
"""

import os
import sys

import torch

if not torch.cuda.is_available():
    print("test_torch_cuda: skipped: torch finds no usable CUDA device")
    sys.exit(77)

import tcoll  # noqa: E402
import tcoll.torch as hvd  # noqa: E402

CHECKS = [0]


def check(cond, what):
    CHECKS[0] += 1
    if not cond:
        raise AssertionError(what)


def same(dev_result, host_result, what):
    """dev_result (a CUDA tensor) holds host_result's bits."""
    check(dev_result.is_cuda, "%s: the result is not a CUDA tensor" % what)
    a, b = dev_result.detach().cpu(), host_result.detach()
    check(a.shape == b.shape and a.dtype == b.dtype,
          "%s: %s %s vs %s %s" % (what, a.dtype, tuple(a.shape), b.dtype, tuple(b.shape)))
    if a.dtype.is_floating_point:  # compare bits: -0.0 and NaN too
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        a, b = a.view(bits), b.view(bits)
    check(torch.equal(a, b), "%s: the CUDA result differs from the CPU result" % what)


def data(shape, dtype, salt, op=hvd.Sum):
    """Small integers, the same on every run, different on every rank."""
    g = torch.Generator().manual_seed(1000 * salt + hvd.rank())
    v = torch.randint(-3, 4, shape, generator=g)
    if op == hvd.Product:
        v = torch.where(v < -1, -1, torch.where(v > 1, 2, 1))
    if dtype in (torch.uint8,):
        v = v.abs()
    return v.to(dtype)


def collectives(dev):
    dtypes = (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32,
              torch.int64, torch.uint8)
    ops = (hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product)
    k = 0
    for dt in dtypes:
        for op in ops:
            k += 1
            x = data((37, 5), dt, k, op)
            host = hvd.allreduce(x, op=op, name="h%d" % k)
            same(hvd.allreduce(x.to(dev), op=op, name="d%d" % k), host, "allreduce %s %s" % (dt, op))
            y = x.to(dev)
            hvd.allreduce_(y, op=op, name="di%d" % k)
            same(y, host, "allreduce_ %s %s" % (dt, op))
            h = hvd.allreduce_async(x.to(dev), op=op, name="da%d" % k)
            same(hvd.synchronize(h), host, "allreduce_async %s %s" % (dt, op))
    # scaling factors, non-contiguous input
    x = data((16, 8), torch.float32, 99)
    host = hvd.allreduce(x.t(), op=hvd.Sum, prescale_factor=0.5, postscale_factor=4.0, name="hs")
    same(hvd.allreduce(x.to(dev).t(), op=hvd.Sum, prescale_factor=0.5, postscale_factor=4.0,
                       name="ds"), host, "scaled, non-contiguous")
    # allgather (rows differ per rank), broadcast, alltoall, reducescatter
    x = data((hvd.rank() + 1, 3), torch.float16, 7)
    same(hvd.allgather(x.to(dev), name="dag"), hvd.allgather(x, name="hag"), "allgather")
    b = torch.ones(5, dtype=torch.bool) if hvd.rank() == 0 else torch.zeros(5, dtype=torch.bool)
    same(hvd.allgather(b.to(dev), name="dagb"), hvd.allgather(b, name="hagb"), "allgather bool")
    for root in range(hvd.size()):
        x = data((1000,), torch.bfloat16, 20 + root)
        same(hvd.broadcast(x.to(dev), root, name="dbc%d" % root),
             hvd.broadcast(x, root, name="hbc%d" % root), "broadcast from %d" % root)
        y = x.to(dev)
        hvd.broadcast_(y, root, name="dbci%d" % root)
        same(y, hvd.broadcast(x, root, name="hbci%d" % root), "broadcast_ from %d" % root)
    n = hvd.size()
    splits = [(hvd.rank() + j) % 3 for j in range(n)]
    x = data((sum(splits), 4), torch.float32, 30)
    dout, dsplits = hvd.alltoall(x.to(dev), splits=splits, name="da2a")
    hout, hsplits = hvd.alltoall(x, splits=splits, name="ha2a")
    same(dout, hout, "alltoall")
    check(torch.equal(dsplits, hsplits), "alltoall received splits")
    x = data((2 * n + 1, 6), torch.float32, 31)
    same(hvd.reducescatter(x.to(dev), op=hvd.Sum, name="drs"),
         hvd.reducescatter(x, op=hvd.Sum, name="hrs"), "reducescatter")
    xs = [data((s,), torch.float32, 40 + s) for s in (3, 1000, 7)]
    for d, h in zip(hvd.grouped_allreduce([t.to(dev) for t in xs], op=hvd.Sum, name="dg"),
                    hvd.grouped_allreduce(xs, op=hvd.Sum, name="hg")):
        same(d, h, "grouped_allreduce")
    for d, h in zip(hvd.grouped_allgather([t.to(dev) for t in xs], name="dgg"),
                    hvd.grouped_allgather(xs, name="hgg")):
        same(d, h, "grouped_allgather")
    # a tensor on the GPU on one rank and the CPU on another is a mismatch
    if n > 1:
        t = torch.ones(4, device=dev) if hvd.rank() else torch.ones(4)
        try:
            hvd.allreduce(t, name="mixed")
            check(False, "host and device under one name ran")
        except hvd.HorovodInternalError as e:
            check("memory mismatch" in str(e), "mismatch message: %s" % e)


def autograd(dev):
    x = data((6, 3), torch.float32, 50).to(dev).requires_grad_()
    y = hvd.allreduce(x, op=hvd.Sum, name="ag.ar")
    (y * 2).sum().backward()
    check(x.grad is not None and x.grad.is_cuda, "allreduce grad on the device")
    check(torch.equal(x.grad.cpu(), torch.full((6, 3), 2.0 * hvd.size())), "allreduce grad")
    x = data((2, 3), torch.float32, 51).to(dev).requires_grad_()
    y = hvd.allgather(x, name="ag.ag")
    y.sum().backward()
    check(torch.equal(x.grad.cpu(), torch.full((2, 3), float(hvd.size()))), "allgather grad")


def digits_model():
    """The demo's model class (examples/python/train_digits.py)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "examples", "python"))
    from train_digits import Net
    return Net


def train(dev, steps, prefix):
    """A few steps of the demo's model on dev with DistributedOptimizer;
    every rank starts from its own weights, made rank 0's by the
    broadcasts. Returns the flat weights."""
    import torch.nn.functional as F
    torch.manual_seed(7 + hvd.rank())
    model = digits_model()().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    opt = hvd.DistributedOptimizer(opt, named_parameters=[(prefix + n, p) for n, p in
                                                          model.named_parameters()])
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    g = torch.Generator().manual_seed(123 + hvd.rank())
    for _ in range(steps):
        x = torch.rand(16, 1, 8, 8, generator=g).to(dev)
        y = torch.randint(0, 10, (16,), generator=g).to(dev)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1).cpu() for p in model.parameters()])


def training(dev):
    w_dev = train(dev, 5, "gpu.")
    w_host = train(torch.device("cpu"), 5, "cpu.")
    rows = hvd.allgather(w_dev.unsqueeze(0).to(dev), name="weights").cpu()
    for r in range(hvd.size()):
        check(torch.equal(rows[r].view(torch.int32), rows[0].view(torch.int32)),
              "rank %d's GPU-trained weights differ from rank 0's" % r)
    err = (w_dev - w_host).abs().max().item()
    check(err < 1e-3, "GPU and host training differ by %g after 5 steps" % err)
    if hvd.rank() == 0:
        print("test_torch_cuda: 5 training steps, GPU vs host: max |difference| %.3g" % err)


def sync_bn_and_join(dev):
    bn = hvd.SyncBatchNorm(4).to(dev)
    x = data((3 + hvd.rank(), 4, 2), torch.float32, 60).to(dev)
    out = bn(x)
    check(out.is_cuda and torch.isfinite(out).all().item(), "SyncBatchNorm on the GPU")
    rows = hvd.allgather(x.cpu(), name="bn.rows")
    mean = rows.transpose(0, 1).reshape(4, -1).mean(1)
    check(torch.allclose(bn.running_mean.cpu(), 0.1 * mean, atol=1e-5), "SyncBatchNorm mean")
    # join: the last rank joins, the others reduce without it
    last = hvd.size() - 1
    if hvd.rank() != last:
        y = torch.ones(8, device=dev)
        hvd.allreduce_(y, op=hvd.Sum, name="join.ar")
        check(torch.equal(y.cpu(), torch.full((8,), float(hvd.size() - 1))),
              "allreduce beside a join")
    r = hvd.join(dev.index)
    both = hvd.allgather(torch.tensor([r]), name="join.last")
    check(0 <= r < hvd.size() and bool((both == r).all()), "join's last rank: %s" % both.tolist())


def main():
    hvd.init()
    dev = torch.device("cuda", int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
                       % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    # the GPU-vs-host training comparison wants float32 math, not TF32
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    check(hvd.cuda_built() and tcoll.cuda_available(), "cuda_built/cuda_available")
    try:
        for step in (collectives, autograd, training, sync_bn_and_join):
            step(dev)
    except Exception as e:  # noqa: BLE001
        print("test_torch_cuda: rank %d: FAIL: %s: %s" % (hvd.rank(), type(e).__name__, e),
              flush=True)
        sys.stdout.flush()
        os._exit(1)
    rank = hvd.rank()
    hvd.shutdown()
    print("test_torch_cuda: rank %d: PASS (%d checks) on %s" % (rank, CHECKS[0],
                                                              torch.cuda.get_device_name(dev)),
          flush=True)


if __name__ == "__main__":
    main()
