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
 * The blocks come from arrays (tc__ring_allgatherv) or are the segments of
 * tc__segment (tc__ring_allgather_segments).
 */
#define _GNU_SOURCE
#include "coll/coll.h"

/* Block i: bytes at *displ. */
typedef void (*block_fn_t)(const void *arg, int n, int i, size_t *displ, size_t *bytes);

static tc_status_t ring_allgather(tc_transport_t *t, char *base, block_fn_t block, const void *arg)
{
    const int n = t->size, r = t->rank;
    const int right = (r + 1) % n, left = (r - 1 + n) % n;
    int s;

    for (s = 0; s < n - 1; s++) {
        size_t sd, sb, rd, rb;
        tc_status_t st;
        block(arg, n, (r - s + n) % n, &sd, &sb);
        block(arg, n, (r - s - 1 + n) % n, &rd, &rb);
        if ((st = t->sendrecv(t, base + sd, sb, right, base + rd, rb, left)) != TC_OK) {
            return st;
        }
    }
    return TC_OK;
}

typedef struct {
    const size_t *bytes, *displs;
} arrays_t;

static void array_block(const void *arg, int n, int i, size_t *displ, size_t *bytes)
{
    const arrays_t *a = arg;

    (void)n;
    *displ = a->displs[i];
    *bytes = a->bytes[i];
}

tc_status_t tc__ring_allgatherv(tc_transport_t *t, void *out, const size_t *bytes,
                                const size_t *displs)
{
    arrays_t a = {bytes, displs};

    return ring_allgather(t, out, array_block, &a);
}

typedef struct {
    size_t count, es;
} segs_t;

static void seg_block(const void *arg, int n, int i, size_t *displ, size_t *bytes)
{
    const segs_t *g = arg;

    tc__segment(g->count, n, i, displ, bytes);
    *displ *= g->es;
    *bytes *= g->es;
}

tc_status_t tc__ring_allgather_segments(tc_transport_t *t, void *buf, size_t count, size_t es)
{
    segs_t g = {count, es};

    return ring_allgather(t, buf, seg_block, &g);
}
