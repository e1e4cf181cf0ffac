"""DistributedDataParallel on the tcoll backend: it trains, and ends with
weights bit-identical to the same training on Gloo."""

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.bn = nn.BatchNorm2d(4)  # a buffer DDP broadcasts at each forward
        self.fc1 = nn.Linear(4 * 6 * 6, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


def train(group, steps=6, **ddp_kw):
    rank = dist.get_rank()
    torch.manual_seed(1234 + rank)  # different weights: DDP must broadcast rank 0's
    model = DDP(Net(), process_group=group, bucket_cap_mb=0.01, **ddp_kw)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(99 + rank)
    for _ in range(steps):
        x = torch.randn(8, 1, 8, 8, generator=g)
        y = torch.randint(0, 10, (8,), generator=g)
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    # parameters and buffers (BatchNorm's running statistics: each rank's
    # own after the last step; DDP broadcasts rank 0's before each forward)
    return [p.detach().clone() for p in model.module.state_dict().values()]


def n_params():
    return len(list(Net().parameters()))


def same_as_gloo(ours, theirs):
    """Bit-identical up to 2 ranks (a + b is b + a); beyond, Gloo's ring adds
    in another order than tcoll's documented one: close, not identical."""
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        if dist.get_world_size() <= 2:
            assert torch.equal(a, b)
        else:
            assert torch.allclose(a, b, rtol=1e-4, atol=1e-5)


def test_ddp_bit_identical_to_gloo(gloo):
    ours = train(None)
    theirs = train(gloo)
    same_as_gloo(ours, theirs)
    # and every rank has the same parameters
    params = [w for w, (k, _) in zip(ours, Net().state_dict().items())
              if k in dict(Net().named_parameters())]
    assert len(params) == n_params()
    flat = torch.cat([w.reshape(-1).double() for w in params])
    everyone = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, flat)
    assert all(torch.equal(everyone[0], e) for e in everyone)


def test_ddp_find_unused_parameters(gloo):
    ours = train(None, steps=3, find_unused_parameters=True)
    theirs = train(gloo, steps=3, find_unused_parameters=True)
    same_as_gloo(ours, theirs)


def test_ddp_comm_hook_and_bucket_views(gloo):
    """torch's own allreduce comm hook (dist.all_reduce(async_op=True)
    .get_future().then(...)) and gradients as views of the buckets."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    def run(group):
        rank = dist.get_rank()
        torch.manual_seed(5 + rank)
        model = DDP(Net(), process_group=group, bucket_cap_mb=0.01,
                    gradient_as_bucket_view=True)
        model.register_comm_hook(group, default_hooks.allreduce_hook)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        g = torch.Generator().manual_seed(3 + rank)
        for _ in range(3):
            x = torch.randn(4, 1, 8, 8, generator=g)
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
        return [p.detach().clone() for p in model.module.parameters()]
    same_as_gloo(run(None), run(gloo))
