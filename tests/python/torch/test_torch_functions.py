"""tcoll.torch helpers: broadcast_parameters and broadcast_optimizer_state
leave every rank with the root's model and optimizer state;
broadcast_object and allgather_object move any picklable object."""

import pytest
import torch
from torch import nn

import tcoll.torch as hvd


def _model(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))


def _same_as_root(tensors, root):
    for t in tensors:
        assert torch.equal(t, hvd.broadcast(t, root)), t


@pytest.mark.parametrize("form", ["state_dict", "named_parameters", "parameters"])
def test_broadcast_parameters(form):
    n, r = hvd.size(), hvd.rank()
    root = n - 1
    model = _model(seed=r)
    model(torch.randn(5, 3))  # batch norm statistics differ too
    if form == "state_dict":
        hvd.broadcast_parameters(model.state_dict(), root_rank=root)
        tensors = list(model.state_dict().values())
    elif form == "named_parameters":
        hvd.broadcast_parameters(list(model.named_parameters()), root_rank=root)
        tensors = [p.detach() for p in model.parameters()]
    else:
        hvd.broadcast_parameters(model.parameters(), root_rank=root)
        tensors = [p.detach() for p in model.parameters()]
    expected = _model(seed=root)
    for p, q in zip(model.parameters(), expected.parameters()):
        assert torch.equal(p.detach(), q.detach())
    _same_as_root(tensors, root)
    with pytest.raises(ValueError):
        hvd.broadcast_parameters(42, root_rank=0)


@pytest.mark.parametrize("kind", ["sgd", "adam", "adam_fresh_others"])
def test_broadcast_optimizer_state(kind):
    r = hvd.rank()
    root = 0
    model = _model(seed=1)
    if kind == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.01 * (r + 1), momentum=0.5 + 0.1 * r)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=0.001 * (r + 1), betas=(0.8, 0.9 + r / 100))
    steps = 0 if kind == "adam_fresh_others" and r != root else r + 1
    for s in range(steps):  # different state on every rank
        opt.zero_grad()
        model(torch.randn(4, 3, generator=torch.Generator().manual_seed(10 * r + s))).sum() \
            .backward()
        opt.step()
    wrapped = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    hvd.broadcast_optimizer_state(wrapped, root_rank=root)
    root_state = hvd.broadcast_object(wrapped.state_dict(), root_rank=root)
    mine = wrapped.state_dict()
    assert mine["param_groups"] == root_state["param_groups"]
    assert wrapped.param_groups[0]["lr"] == root_state["param_groups"][0]["lr"]
    assert mine["state"].keys() == root_state["state"].keys()
    for pid, entries in root_state["state"].items():
        for key, value in entries.items():
            got = mine["state"][pid][key]
            if torch.is_tensor(value):
                assert torch.equal(got, value), (pid, key)
            else:
                assert got == value
    # the optimizer goes on from the same state on every rank
    hvd.broadcast_parameters(model.state_dict(), root_rank=root)
    wrapped.zero_grad()
    model(torch.ones(4, 3)).sum().backward()
    wrapped.step()
    _same_as_root([p.detach() for p in model.parameters()], root)


def test_broadcast_optimizer_state_plain_optimizer_and_empty_state():
    model = _model(seed=2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1 + hvd.rank())
    hvd.broadcast_optimizer_state(opt, root_rank=0)  # nothing stepped: options only
    assert opt.param_groups[0]["lr"] == 0.1
    assert len(opt.state_dict()["state"]) == 0


def test_broadcast_object():
    n, r = hvd.size(), hvd.rank()
    for root in range(n):
        obj = {"root": r, "list": list(range(r * 50)), "t": torch.arange(3) * r, "s": "x" * r}
        got = hvd.broadcast_object(obj if r == root else None, root_rank=root)
        assert got["root"] == root and got["list"] == list(range(root * 50))
        assert torch.equal(got["t"], torch.arange(3) * root) and got["s"] == "x" * root
    assert hvd.broadcast_object(r, root_rank=0, name="named.object") == 0
    assert hvd.broadcast_object(None) is None


def test_allgather_object():
    n, r = hvd.size(), hvd.rank()
    objs = hvd.allgather_object({"r": r, "payload": "y" * (100 * r)})
    assert objs == [{"r": k, "payload": "y" * (100 * k)} for k in range(n)]
    assert hvd.allgather_object(r, name="named.gather") == list(range(n))
