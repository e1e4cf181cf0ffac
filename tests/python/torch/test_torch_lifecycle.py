"""hvd.init() after hvd.shutdown() in one process, as Horovod allows (and
tests): each run starts afresh and works as the first did; a ProcessSet
given to init(process_sets=...) is added again in every run. Every call
first, then the checks; tcoll.torch runs again afterwards for the tests
that follow."""

import torch

import tcoll.torch as hvd


def test_init_after_shutdown():
    n, r = hvd.size(), hvd.rank()
    everyone = hvd.ProcessSet(list(range(n)))
    hvd.add_process_set(everyone)
    seen = []
    for run in range(3):
        if run > 0:
            hvd.init(process_sets=[everyone])  # added again: its last id went with the run
        seen.append(("ids", run, hvd.is_initialized(), hvd.rank(), hvd.size(), (r, n),
                     everyone.process_set_id is not None, everyone.included()))
        for _ in range(3):  # the same name every run, cached from the second call on
            out = hvd.allreduce(torch.full((4,), float(r + run)), op=hvd.Sum, name="reinit.grad")
        seen.append(("allreduce", run, out.tolist(), [float(sum(range(n)) + n * run)] * 4))
        h = hvd.allreduce_async(torch.full((2,), float(run)), op=hvd.Average,
                                process_set=everyone)  # unnamed, in the set
        seen.append(("async", run, hvd.synchronize(h).tolist(), [float(run)] * 2))
        model = torch.nn.Linear(3, 2)
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(float(r * 10 + run))
        hvd.broadcast_parameters(model.state_dict(), root_rank=run % n)
        seen.append(("broadcast", run,
                     all(bool((p == float((run % n) * 10 + run)).all())
                         for p in model.parameters())))
        obj = hvd.broadcast_object({"run": run, "from": r}, root_rank=0)
        seen.append(("object", run, obj, {"run": run, "from": 0}))
        last = hvd.join()
        seen.append(("join", run, 0 <= last < n))
        hvd.barrier()
        hvd.shutdown()
        try:
            hvd.rank()
            seen.append(("rank after shutdown", run, "no error"))
        except ValueError:
            pass
        seen.append(("after", run, hvd.is_initialized()))
    hvd.init()  # the session goes on
    for entry in seen:
        what = entry[0]
        if what == "ids":
            assert entry[2] and (entry[3], entry[4]) == entry[5] and entry[6] and entry[7], entry
        elif what in ("allreduce", "async", "object"):
            assert entry[2] == entry[3], entry
        elif what in ("broadcast", "join"):
            assert entry[2], entry
        elif what == "after":
            assert not entry[2], entry
        else:
            raise AssertionError(entry)
