/*
 * ring_allgatherv.c - allgather with a different block size per rank.
 *
 * Rank r starts with its own block in place and, in n-1 steps, passes blocks
 * around the ring (right = r+1, left = r-1 mod n), receiving straight into the
 * output: no staging copies.
 *
 *   step s (0..n-2)   rank r sends block (r - s) mod n to right
 *                     rank r receives block (r - s - 1) mod n from left
 *
 * Zero-byte blocks are skipped on both ends (both compute the same sizes).
 */
#define _GNU_SOURCE
#include "coll/coll.h"

tc_status_t tc__ring_allgatherv(tc_transport_t *t, void *out, const size_t *bytes,
                                const size_t *displs)
{
    const int n = t->size, r = t->rank;
    const int right = (r + 1) % n, left = (r - 1 + n) % n;
    char *base = out;
    int s;

    for (s = 0; s < n - 1; s++) {
        int si = (r - s + n) % n;
        int ri = (r - s - 1 + n) % n;
        tc_status_t st = t->sendrecv(t, base + displs[si], bytes[si], right, base + displs[ri],
                                     bytes[ri], left);
        if (st != TC_OK) {
            return st;
        }
    }
    return TC_OK;
}
