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
 *   3     broadcast inside the node from the leader (shm_bcast.c: direct
 *         where process_vm_readv works and the buffer is large, else through
 *         the segment's slots)
 *
 * A rank alone on its node is its own leader and skips steps 1 and 3.
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

#include <stdio.h>
#include <string.h>

/* A failed part: its reason into h->err. */
static tc_status_t failed(const tc_hier_t *h, tc_status_t st, const char *what, const char *why)
{
    snprintf(h->err, h->errlen, "%s: %s", what, st == TC_ERR_NOMEM ? "out of memory" : why);
    return st;
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
        st = h->ordered && tc__order_matters(dtype, sum_op)
                 ? tc__ordered_allreduce(h->leaders, NULL, buf, count, dtype, sum_op,
                                         h->chunk_bytes, h->scratch, NULL)
                 : tc__ring_allreduce(h->leaders, NULL, buf, count, dtype, sum_op, h->chunk_bytes,
                                      h->scratch);
        if (st != TC_OK) {
            return failed(h, st, "between the nodes' leaders", h->leaders->err);
        }
        if (op == TC_AVG) {
            tc__reduce_avg_finish(dtype, buf, count, h->world_size);
        }
    }
    if (h->node != NULL &&
        (st = tc__shm_uses_cma(h->node, bytes) ? tc__cma_bcast(h->node, buf, bytes, 0)
                                               : tc__shm_bcast(h->node, buf, bytes, 0)) != TC_OK) {
        return failed(h, st, "inside the node", h->node->err);
    }
    return TC_OK;
}
