/*
 * hier_allreduce.c - allreduce across several nodes: inside each node
 * through its shared-memory segment, between nodes over MPI among one
 * leader per node (local rank 0), then back inside each node.
 *
 *   step  every rank                             the node's leader
 *   1     allreduce inside its node (shm or cma, by size; avg sums here)
 *   2     -                                      ring allreduce of the node sums
 *                                                with the other leaders (MPI);
 *                                                avg divides by the job's size
 *   3     copies the result out of the leader's  copies its result into its
 *         slot, chunk by chunk                   slot, chunk by chunk
 *
 * Step 3 reads the leader's buffer directly where process_vm_readv works
 * and the buffer is large (as the cma allreduce: the leader waits until
 * every rank has read), else goes through the segment's slots (chunk g in
 * slot g mod nslots):
 * the leader fills a slot once every local rank is done with it (their
 * `done` >= g - nslots), stores arrived = g; each other rank waits for the
 * leader's arrived >= g, copies, stores done = g (the leader stores done = g
 * too: it has nothing to read). A rank alone on its node is its own leader
 * and skips steps 1 and 3.
 *
 * Why leaders: nodes may hold different numbers of ranks (pretend nodes
 * with TCOLL_RANKS_PER_NODE, or a real job), and with one leader per node
 * every node's share of the cross-node traffic is the same whatever its
 * size; slicing the buffer among the ranks of equal local rank needs equal
 * nodes. Bits: every rank of the job ends with the bits the leaders' ring
 * produced (copied, never recomputed), so all ranks agree; the order of
 * additions is node sums first, then the ring over nodes, so the bits may
 * differ from the flat ring's for floating-point sums.
 */
#define _GNU_SOURCE
#include "coll/shm_sync.h"
#include "reduce/reduce.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A failed part: its reason into h->err. */
static tc_status_t failed(const tc_hier_t *h, tc_status_t st, const char *what, const char *why)
{
    snprintf(h->err, h->errlen, "%s: %s", what, st == TC_ERR_NOMEM ? "out of memory" : why);
    return st;
}

/* Step 3 where process_vm_readv works: the leader publishes its buffer's
 * address (arrived = g), every other rank reads it whole (done = g), and
 * the leader waits for every done before its buffer may change. */
static tc_status_t node_bcast_direct(tc_shm_coll_t *c, void *buf, size_t bytes)
{
    const tc_shm_seg_t *s = c->seg;
    const uint64_t g = ++c->seq;
    tc_status_t st;

    if (s->me == 0) {
        tc__shm_ctl(s, 0)->out_addr = (uint64_t)(uintptr_t)buf;
        tc__shm_publish(s, TC_SHM_ARRIVED, g);
        tc__shm_publish(s, TC_SHM_DONE, g);
        return tc__shm_wait_all(c, TC_SHM_DONE, g);
    }
    if ((st = tc__shm_wait_rank(c, TC_SHM_ARRIVED, 0, g)) != TC_OK) {
        return st;
    }
    if (tc__shm_peer_read(s, 0, buf, tc__shm_ctl(s, 0)->out_addr, bytes) != 0) {
        snprintf(c->err, sizeof(c->err), "%s rank %d: %s, reading its result",
                 errno == ESRCH ? "lost" : "reading the buffer of",
                 c->ranks != NULL ? c->ranks[0] : 0, strerror(errno));
        return TC_ERR_TRANSPORT;
    }
    tc__shm_publish(s, TC_SHM_DONE, g);
    return TC_OK;
}

/* Step 3: the leader's buf to every local rank, through the slots. */
static tc_status_t node_bcast(tc_shm_coll_t *c, void *buf, size_t bytes)
{
    const tc_shm_seg_t *s = c->seg;
    size_t at, chunk = s->slot_bytes;
    tc_status_t st;

    for (at = 0; at < bytes; at += chunk) {
        const uint64_t g = ++c->seq;
        const int slot = (int)(g % (uint64_t)s->nslots);
        size_t k = bytes - at < chunk ? bytes - at : chunk;
        char *lead = tc__shm_slot(s, 0, slot);

        if (s->me == 0) {
            if (g > (uint64_t)s->nslots &&
                (st = tc__shm_wait_all(c, TC_SHM_DONE, g - (uint64_t)s->nslots)) != TC_OK) {
                return st;
            }
            memcpy(lead, (char *)buf + at, k);
            tc__shm_publish(s, TC_SHM_ARRIVED, g);
        } else {
            if ((st = tc__shm_wait_rank(c, TC_SHM_ARRIVED, 0, g)) != TC_OK) {
                return st;
            }
            memcpy((char *)buf + at, lead, k);
        }
        tc__shm_publish(s, TC_SHM_DONE, g);
    }
    return TC_OK;
}

tc_status_t tc__hier_allreduce(const tc_hier_t *h, const void *src, void *buf, size_t count,
                               tc_dtype_t dtype, tc_op_t op)
{
    const size_t es = tc_dtype_size(dtype), bytes = count * es;
    const tc_op_t sum_op = op == TC_AVG ? TC_SUM : op; /* avg divides once, at the end */
    tc_status_t st;

    if (count == 0) {
        return TC_OK;
    }
    if (h->node != NULL) {
        st = tc__shm_uses_cma(h->node, bytes)
                 ? tc__cma_allreduce(h->node, src, buf, count, dtype, sum_op)
                 : tc__shm_allreduce(h->node, src, buf, count, dtype, sum_op);
        if (st != TC_OK) {
            return failed(h, st, "inside the node", h->node->err);
        }
    } else if (src != NULL && src != buf) {
        memcpy(buf, src, bytes);
    }
    if (h->leaders != NULL) {
        st = tc__ring_allreduce(h->leaders, NULL, buf, count, dtype, sum_op, h->chunk_bytes,
                                h->scratch);
        if (st != TC_OK) {
            return failed(h, st, "between the nodes' leaders", h->leaders->err);
        }
        if (op == TC_AVG) {
            tc__reduce_avg_finish(dtype, buf, count, h->world_size);
        }
    }
    if (h->node != NULL &&
        (st = tc__shm_uses_cma(h->node, bytes) ? node_bcast_direct(h->node, buf, bytes)
                                               : node_bcast(h->node, buf, bytes)) != TC_OK) {
        return failed(h, st, "inside the node", h->node->err);
    }
    return TC_OK;
}
