/*
 * shm_bcast.c - broadcast of bytes from one rank among the ranks of one
 * node, without MPI: root's buf ends up in every rank's buf (root is a
 * local index), two ways.
 *
 * Direct (tc__cma_bcast: where process_vm_readv works between the local
 * ranks, tc_shm_seg_t.cma), one step g for the whole broadcast:
 *
 *   step  rank r                                           then stores
 *   1     root: writes the address of its buffer into its  arrived = g
 *         control block; the others: nothing
 *   2     waits for every rank's arrived >= g
 *   3     not root: reads the root's buffer into its own   done = g
 *   4     waits for every rank's done >= g (the root's
 *         buffer must stay as it is until every rank has
 *         read it)
 *
 * Each byte crosses between processes once per reader, all readers at
 * once: no tree of copies.
 *
 * Through the slots (tc__shm_bcast: without process_vm_readv, or for
 * small buffers), step k of ceil(bytes / slot) moves bytes
 * [k x slot, (k+1) x slot), one slot step each (shm_steps.h):
 *
 *   step  rank r                                           then stores
 *   1     waits until no one reads its slot for this step  -
 *   2     root: copies piece k of its buffer into its      arrived = g
 *         slot; the others: nothing
 *   3     waits for every rank's arrived >= g
 *   4     not root: copies piece k from the root's slot    done = g
 *         into its buffer
 *
 * With two or more slots the root fills piece k+1 while the others copy
 * piece k. Either way every rank ends with the root's bytes: the binomial
 * tree's result. Must never read the root's data before its arrived says it
 * is there, nor let the root go on before every reader is done with it.
 */
#define _GNU_SOURCE
#include "coll/shm_steps.h"

#include <string.h>

tc_status_t tc__cma_bcast(tc_shm_coll_t *c, void *buf, size_t bytes, int root)
{
    const int n = c->seg->n, me = c->seg->me;
    tc_status_t st;
    uint64_t g;

    if (n == 1 || bytes == 0) {
        return TC_OK;
    }
    if ((st = tc__shm_direct_open(c, me == root ? buf : NULL, NULL, &g)) != TC_OK) {
        return st;
    }
    if (me != root && (st = tc__shm_direct_read(c, root, g, buf, tc__shm_direct_addr(c, root, 0),
                                                bytes, "broadcast")) != TC_OK) {
        return st;
    }
    return tc__shm_direct_close(c, g);
}

tc_status_t tc__shm_bcast(tc_shm_coll_t *c, void *buf, size_t bytes, int root)
{
    const int n = c->seg->n, me = c->seg->me;
    const size_t slot = c->seg->slot_bytes;
    char *base = buf, *mine;
    size_t at, k;
    tc_status_t st;
    uint64_t g;

    if (n == 1) {
        return TC_OK;
    }
    for (at = 0; at < bytes; at += slot) {
        k = bytes - at < slot ? bytes - at : slot;
        if ((st = tc__shm_slot_open(c, &g, &mine)) != TC_OK) {
            return st;
        }
        if (me == root) {
            memcpy(mine, base + at, k);
        }
        if ((st = tc__shm_slot_ready(c, g)) != TC_OK) {
            return st;
        }
        if (me != root) {
            memcpy(base + at, tc__shm_slot_of(c, root, g), k);
        }
        tc__shm_slot_close(c, g);
    }
    return TC_OK;
}
