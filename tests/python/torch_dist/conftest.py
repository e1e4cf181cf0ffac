"""Fixtures of the torch.distributed backend's tests: run under MPI, every
rank the same tests in the same order, e.g.

    PYTHONPATH=build/python mpiexec -n 3 /usr/bin/python3 -m pytest -q tests/python/torch_dist

The default process group is tcoll's, made once per process with
``dist.init_process_group("tcoll")`` and nothing else (no MASTER_ADDR): the
backend starts tcoll itself. A Gloo group of every rank, made with
``new_group(backend="gloo")`` over the store the tcoll rendezvous set up,
is the reference some tests compare with.
"""

import os
import time

import pytest
import torch
import torch.distributed as dist

import tcoll.torch.distributed  # noqa: F401  (registers the backend)

torch.set_num_threads(1)  # several ranks share few cores

_order = []


@pytest.fixture(scope="session", autouse=True)
def pg():
    for var in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        assert var not in os.environ, "the tests run without %s" % var
    dist.init_process_group("tcoll")
    yield dist.group.WORLD
    # every rank ran the same tests in the same order
    names = [None] * dist.get_world_size()
    dist.all_gather_object(names, _order)
    assert all(n == names[0] for n in names), names
    # the tests' Gloo groups go too: torch 2.x's Gloo group joins its workers
    # in its destructor holding the interpreter lock, which a worker letting
    # go of a Python tensor waits for, so every work is done first and the
    # workers are given the lock
    dist.barrier()
    time.sleep(0.1)
    dist.destroy_process_group()


@pytest.fixture(autouse=True)
def _record(request):
    _order.append(request.node.nodeid)
    yield


@pytest.fixture(scope="session")
def gloo(pg):
    """A Gloo group of every rank, over the same store."""
    if not dist.is_gloo_available():
        pytest.skip("torch.distributed without Gloo")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    return dist.new_group(backend="gloo")
