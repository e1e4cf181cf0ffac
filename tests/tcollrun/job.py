"""The job tcollrun's end-to-end tests launch (e2e.py): every rank starts
tcoll, checks its rank and the job's size, makes one allreduce whose sum
is exact (1 + 2 + ... + size), and checks that the variables named with
--env reached it with those values (the knobs tcollrun set from its
flags). Each rank prints "rank R/N: ok" or what failed, and exits 1 on a
failure, else with --exit's status; rank 0 also prints a summary line.
All collective calls come before any check, so a failing rank never
leaves the others waiting."""

import argparse
import os
import sys

import numpy as np

import tcoll

p = argparse.ArgumentParser()
p.add_argument("--size", type=int, required=True, help="the number of ranks expected")
p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
               help="a variable every rank must have, with this value")
p.add_argument("--exit", type=int, default=0, help="the exit status when all is well")
a = p.parse_args()


def say(text):
    sys.stdout.write(text + "\n")  # one write: lines of ranks never mix
    sys.stdout.flush()


tcoll.init()
rank, size, local = tcoll.rank(), tcoll.size(), tcoll.local_size()
total = tcoll.allreduce(np.array([rank + 1], dtype=np.int64), name="tcollrun.e2e.sum")
tcoll.shutdown()

problems = []
if size != a.size:
    problems.append("size %d, expected %d" % (size, a.size))
if not 0 <= rank < size:
    problems.append("rank %d outside 0..%d" % (rank, size - 1))
if local != size:
    problems.append("local size %d, expected %d (one host)" % (local, size))
if int(total[0]) != size * (size + 1) // 2:
    problems.append("allreduce gave %d, expected %d" % (total[0], size * (size + 1) // 2))
for item in a.env:
    name, _, value = item.partition("=")
    if os.environ.get(name) != value:
        problems.append("%s=%r, expected %r" % (name, os.environ.get(name), value))


if problems:
    say("tcollrun job rank %d: FAILED: %s" % (rank, "; ".join(problems)))
    sys.exit(1)
say("tcollrun job rank %d/%d: ok" % (rank, size))
if rank == 0:
    say("tcollrun job: %d ranks, allreduce %d, %d variables ok" % (size, total[0], len(a.env)))
sys.exit(a.exit)
