/*
 * shm_allgather.c - allgather with a different block size per rank among
 * the ranks of one node, without MPI: the same contract as
 * ring_allgatherv.c (block p, bytes[p] bytes, at displs[p] of out; this
 * rank's block already in place), two ways.
 *
 * Direct (tc__cma_allgatherv: where process_vm_readv works between the
 * local ranks, tc_shm_seg_t.cma), one step g for the whole collective:
 *
 *   step  rank r                                           then stores
 *   1     writes the address of its output into its        arrived = g
 *         control block
 *   2     waits for every rank's arrived >= g
 *   3     reads block p from rank p's output, straight     done = g
 *         into its own, for p = r+1, r+2, ..., r-1 (each
 *         rank starts with a different peer)
 *   4     waits for every rank's done >= g (its output may
 *         be freed as soon as it returns)
 *
 * Each byte crosses between processes once. Rank r reads only block p of
 * rank p's output, which rank p wrote before step 1 and does not touch
 * again; it writes only blocks p != r of its own.
 *
 * Through the slots (tc__shm_allgatherv: without process_vm_readv, or for
 * small outputs), step k of K = ceil(max bytes[p] / slot) moves bytes
 * [k x slot, (k+1) x slot) of every block (none of a block that is
 * shorter), one slot step each (shm_steps.h):
 *
 *   step  rank r                                           then stores
 *   1     waits until no one reads its slot for this step  -
 *   2     copies its piece k into its slot                 arrived = g
 *   3     waits for every rank's arrived >= g
 *   4     copies piece k of every other block p from       done = g
 *         rank p's slot into its output
 *
 * Every rank computes the same K from the same bytes[], so the ranks agree
 * on the steps. Either way the result is the bytes themselves: the same as
 * the ring's. Must never read a block of a rank before its arrived says
 * it is there.
 */
#define _GNU_SOURCE
#include "coll/shm_steps.h"

#include <string.h>

tc_status_t tc__cma_allgatherv(tc_shm_coll_t *c, void *out, const size_t *bytes,
                               const size_t *displs)
{
    const int n = c->seg->n, me = c->seg->me;
    char *base = out;
    size_t total = 0;
    tc_status_t st;
    uint64_t g;
    int j, p;

    for (p = 0; p < n; p++) {
        total += bytes[p];
    }
    if (n == 1 || total == 0) {
        return TC_OK; /* nothing to move: the same on every rank */
    }
    if ((st = tc__shm_direct_open(c, NULL, out, &g)) != TC_OK) {
        return st;
    }
    for (j = 1; j < n; j++) {
        p = (me + j) % n;
        st = tc__shm_direct_read(c, p, g, base + displs[p],
                                 tc__shm_direct_addr(c, p, 1) + displs[p], bytes[p], "allgather");
        if (st != TC_OK) {
            return st;
        }
    }
    return tc__shm_direct_close(c, g);
}

tc_status_t tc__shm_allgatherv(tc_shm_coll_t *c, void *out, const size_t *bytes,
                               const size_t *displs)
{
    const int n = c->seg->n, me = c->seg->me;
    const size_t slot = c->seg->slot_bytes;
    char *base = out, *mine;
    size_t most = 0, at;
    tc_status_t st;
    uint64_t g;
    int p;

    for (p = 0; p < n; p++) {
        most = bytes[p] > most ? bytes[p] : most;
    }
    if (n == 1) {
        return TC_OK;
    }
    for (at = 0; at < most; at += slot) {
        if ((st = tc__shm_slot_open(c, &g, &mine)) != TC_OK) {
            return st;
        }
        if (at < bytes[me]) {
            memcpy(mine, base + displs[me] + at, bytes[me] - at < slot ? bytes[me] - at : slot);
        }
        if ((st = tc__shm_slot_ready(c, g)) != TC_OK) {
            return st;
        }
        for (p = 0; p < n; p++) {
            if (p != me && at < bytes[p]) {
                memcpy(base + displs[p] + at, tc__shm_slot_of(c, p, g),
                       bytes[p] - at < slot ? bytes[p] - at : slot);
            }
        }
        tc__shm_slot_close(c, g);
    }
    return TC_OK;
}
