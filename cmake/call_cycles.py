#!/usr/bin/env python3
"""Checks that the files of tcoll's layers call each other without a cycle.

Reads every layer archive (libtcoll_<layer>.a under the build's src/) with
nm: a file calls another when it has an undefined symbol the other defines.
Calls between layers go downward only (the build's layer checks enforce
that); this checks that no set of files, in one folder or across folders,
calls each other in a circle. Prints each cycle found with the calls that
close it, and exits 1; exits 0 when there is none.

Usage: call_cycles.py BUILD_DIR [NM]
"""
import collections
import glob
import os
import subprocess
import sys


def read_archives(build, nm):
    defs, undef = {}, collections.defaultdict(set)
    for lib in sorted(glob.glob(os.path.join(build, 'src', '*', 'libtcoll_*.a'))):
        layer = os.path.basename(os.path.dirname(lib))
        out = subprocess.run([nm, lib], capture_output=True, text=True, check=True).stdout
        cur = None
        for line in out.splitlines():
            if line.endswith('.o:') and not line.startswith(' '):
                cur = layer + '/' + line[:-len('.o:')]
                undef[cur]
                continue
            parts = line.split()
            if cur is None:
                continue
            if len(parts) == 2 and parts[0] == 'U':
                undef[cur].add(parts[1])
            elif len(parts) == 3 and parts[1] in 'TDBRCV':
                defs[parts[2]] = cur
    return defs, undef


def cycles(defs, undef):
    graph, why = collections.defaultdict(set), collections.defaultdict(set)
    for f, syms in undef.items():
        for s in syms:
            g = defs.get(s)
            if g is not None and g != f:
                graph[f].add(g)
                why[(f, g)].add(s)
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan's strongly connected components, iterative
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))

    for v in sorted(undef):
        if v not in index:
            visit(v)
    return found, why


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    nm = sys.argv[2] if len(sys.argv) > 2 else 'nm'
    defs, undef = read_archives(sys.argv[1], nm)
    if not undef:
        print('call_cycles: no layer archives under %s/src' % sys.argv[1], file=sys.stderr)
        return 2
    found, why = cycles(defs, undef)
    for comp in found:
        print('cycle of %d files: %s' % (len(comp), ', '.join(comp)))
        members = set(comp)
        for (a, b), syms in sorted(why.items()):
            if a in members and b in members:
                print('  %s -> %s: %s' % (a, b, ' '.join(sorted(syms))))
    print('call_cycles: %d files, %d cycle%s' % (len(undef), len(found),
                                                  '' if len(found) == 1 else 's'))
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
