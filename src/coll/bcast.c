/*
 * bcast.c - binomial-tree broadcast: ceil(log2 n) rounds, and the root sends
 * at most ceil(log2 n) messages instead of n-1.
 *
 * Ranks are renumbered relative to the root: v = (r - root) mod n. Let m be
 * the lowest set bit of v (for the root, the smallest power of two >= n).
 *
 *   rank v       receives from          then sends to
 *   v = 0        -                      v + m' for m' = m/2, m/4, ..., 1 (if < n)
 *   v > 0        v - m                  v + m' for m' = m/2, m/4, ..., 1 (if < n)
 *
 * Example n = 4, root 0: round 1: 0->2; round 2: 0->1, 2->3.
 */
#define _GNU_SOURCE
#include "coll/coll.h"

tc_status_t tc__bcast_binomial(tc_transport_t *t, void *buf, size_t bytes, int root)
{
    const int n = t->size;
    const int v = (t->rank - root + n) % n;
    int mask = 1;
    tc_status_t st;

    if (n == 1 || bytes == 0) {
        return TC_OK;
    }
    while (mask < n) {
        if (v & mask) {
            st = tc__recv(t, buf, bytes, (v - mask + root) % n);
            if (st != TC_OK) {
                return st;
            }
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while (mask > 0) {
        if (v + mask < n) {
            st = tc__send(t, buf, bytes, (v + mask + root) % n);
            if (st != TC_OK) {
                return st;
            }
        }
        mask >>= 1;
    }
    return TC_OK;
}
