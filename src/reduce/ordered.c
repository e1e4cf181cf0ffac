/*
 * ordered.c - combining every rank's contribution in the one documented
 * order (docs/reproducibility.md): the ranks grouped by node, nodes in the
 * order of their lowest rank, each node's inputs left to right in rank
 * order, then the node results left to right. The ordered collectives
 * (coll/ordered_rs.c) and the negotiation's gathered eager inputs
 * (neg/neg_part.c) both end here, so they give the same bits.
 */
#define _GNU_SOURCE
#include "reduce/reduce.h"

#include <string.h>

/* Without copies: each node's result accumulates in its first rank's
 * input (scratch the caller gives up), or in dst when that rank is self
 * (whose input, which dst may alias, is read first); the nodes' results add
 * into the first node's; dst gets the total last, so an input aliasing dst
 * is read before dst is written. */
void tc__combine_ordered(tc_dtype_t dtype, tc_op_t op, const int *node, int n, int self,
                         char *const *x, char *dst, size_t m)
{
    const size_t bytes = m * tc_dtype_size(dtype);
    char *total = NULL;
    int p, q;

    for (p = 0; p < n; p++) {
        char *acc;
        if (node != NULL ? node[p] != p : p != 0) {
            continue; /* combined with its node's first rank */
        }
        acc = p == self ? dst : x[p];
        if (acc != x[p]) {
            memcpy(acc, x[p], bytes);
        }
        for (q = p + 1; q < n; q++) {
            if (node != NULL ? node[q] == p : 1) {
                tc__reduce(dtype, op, acc, x[q], m);
            }
        }
        if (total == NULL) {
            total = acc;
        } else {
            tc__reduce(dtype, op, total, acc, m);
        }
    }
    if (total != dst) {
        memcpy(dst, total, bytes);
    }
}
