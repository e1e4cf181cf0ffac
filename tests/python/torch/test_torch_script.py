"""A Horovod 0.28 PyTorch training script, as its examples write one, with
only the import changed: seeds, lr scaled by size, DistributedSampler,
broadcasts of parameters and optimizer state, DistributedOptimizer with
fp16 compression, metric averaging by name. Every rank must end with the
same weights, and the loss must go down."""

import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import tcoll.torch as hvd


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.bn = nn.BatchNorm1d(16)
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        return F.log_softmax(self.fc2(F.relu(self.bn(self.fc1(x)))), dim=1)


def metric_average(val, name):
    return hvd.allreduce(torch.tensor(val), name=name).item()


def test_training_script():
    hvd.init()
    torch.manual_seed(42 + hvd.rank())  # different on purpose: the broadcasts fix it
    g = torch.Generator().manual_seed(0)
    x = torch.randn(240, 8, generator=g)
    y = (x[:, 0] + x[:, 1] > 0).long()
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset, num_replicas=hvd.size(), rank=hvd.rank(), seed=1)
    loader = DataLoader(dataset, batch_size=16, sampler=sampler)
    model = Net()
    optimizer = optim.SGD(model.parameters(), lr=0.05 * hvd.size(), momentum=0.5)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=hvd.Compression.fp16, op=hvd.Average)
    losses = []
    for epoch in range(3):
        model.train()
        sampler.set_epoch(epoch)
        total = 0.0
        for data, target in loader:
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
            total += loss.item()
        losses.append(metric_average(total / len(loader), "avg_loss"))
    assert losses[-1] < losses[0]
    assert len(set(map(tuple, hvd.allgather_object(losses)))) == 1  # the same everywhere
    for name, p in model.named_parameters():
        assert torch.equal(p.detach(), hvd.broadcast(p.detach(), 0, name="check." + name))
    model.eval()
    correct = (model(x).argmax(1) == y).float().mean().item()
    assert metric_average(correct, "accuracy") > 0.7
