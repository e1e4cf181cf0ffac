/*
 * ordered_rs.c - reduce-scatter (and allreduce on top of it) that combines
 * every element in the one documented order, whatever the chunking, the
 * block an element falls in or the buffer it was fused into
 * (docs/reproducibility.md).
 *
 * The order: the group's ranks grouped by node (node[p], the lowest group
 * rank on p's node), nodes in the order of their lowest rank; each node's
 * inputs combined left to right in rank order, then the node results left
 * to right in node order. On one node that is x0 op x1 op ... op x(n-1),
 * left to right. Every combination is tc__reduce's two-operand kernel with
 * the running result on the left, as every other algorithm of tcoll uses.
 *
 * How: the input is cut into n blocks (block p to rank p); the owner of a
 * block receives every other rank's contribution to it and combines them
 * itself, in the order, so no partial sum ever crosses the network in an
 * order that depends on the ring. Per round k (chunk k of every block, the
 * same number of rounds on every rank):
 *
 *   step j (1..n-1)   rank r sends chunk k of its block (r + j) mod n to
 *                     rank r + j, and receives chunk k of rank r - j's
 *                     contribution to block r into slot r - j
 *   then              rank r combines chunk k of block r from the n inputs
 *                     (its own from its buffer, the others' from the slots)
 *                     into its output, in the order
 *
 * Each rank sends and receives (n-1)/n of its input, as the ring does, with
 * n-1 exchanges per chunk, as the ring does. Memory: n chunks of scratch
 * (the slots), at most SCRATCH_MAX bytes; the combining adds into the
 * slots themselves, so a rank copies at most one chunk more than the ring.
 * TC_AVG sums, then divides once by n.
 *
 * Must never skip an exchange because its sizes are zero (exchanges are
 * paired by their place in the sequence), nor combine an input before the
 * exchange that brings it has completed.
 */
#define _GNU_SOURCE
#include "coll/coll.h"
#include "reduce/reduce.h"

#include <string.h>

#define SCRATCH_MAX ((size_t)64 << 20) /* the slots' total, whatever the group size */

/* Block i of the input: elements [*off, *off + *len). */
typedef void (*block_fn_t)(const void *arg, int n, int i, size_t *off, size_t *len);

typedef struct {
    size_t rows, row_elems;
} rows_t;

static void seg_block(const void *arg, int n, int i, size_t *off, size_t *len)
{
    tc__segment(*(const size_t *)arg, n, i, off, len);
}

static void row_block(const void *arg, int n, int i, size_t *off, size_t *len)
{
    const rows_t *r = arg;

    tc__row_block(r->rows, r->row_elems, n, i, off, len);
}

static size_t chunk_len(size_t len, size_t k, size_t chunk)
{
    return k * chunk >= len ? 0 : len - k * chunk < chunk ? len - k * chunk : chunk;
}

/* The reduce-scatter of blocks(): this rank's block, combined, into out
 * (TC_AVG divided). */
static tc_status_t ordered_rs(tc_transport_t *t, const char *in, char *out, block_fn_t blocks,
                              const void *arg, tc_dtype_t dtype, tc_op_t op, size_t chunk_bytes,
                              tc_scratch_t *scratch, const int *node)
{
    const int n = t->size, r = t->rank;
    const size_t es = tc_dtype_size(dtype);
    const tc_op_t sum_op = op == TC_AVG ? TC_SUM : op;
    size_t off, len, myoff, mylen, max_len = 0, chunk, nrounds, k, slots_bytes;
    char **x, *slots;
    tc_status_t st;
    int p, j;

    for (p = 0; p < n; p++) {
        blocks(arg, n, p, &off, &len);
        max_len = len > max_len ? len : max_len;
    }
    blocks(arg, n, r, &myoff, &mylen);
    if (max_len == 0) {
        return TC_OK; /* every block empty, on every rank alike */
    }
    chunk = chunk_bytes / es > 0 ? chunk_bytes / es : 1;
    if (chunk > SCRATCH_MAX / es / (size_t)n) {
        chunk = SCRATCH_MAX / es / (size_t)n > 0 ? SCRATCH_MAX / es / (size_t)n : 1;
    }
    chunk = chunk < max_len ? chunk : max_len;
    nrounds = (max_len + chunk - 1) / chunk;
    /* scratch: n slots of one chunk each, then the inputs' pointers */
    slots_bytes = ((size_t)n * chunk * es + 63) / 64 * 64;
    if ((st = tc__scratch_reserve(scratch, slots_bytes + (size_t)n * sizeof(char *))) != TC_OK) {
        return st;
    }
    slots = scratch->data;
    x = (char **)(void *)(slots + slots_bytes);

    for (k = 0; k < nrounds; k++) {
        const size_t m = chunk_len(mylen, k, chunk);
        char *dst = out + k * chunk * es;
        for (j = 1; j < n; j++) {
            const int to = (r + j) % n, from = (r - j + n) % n;
            size_t toff, tlen;
            blocks(arg, n, to, &toff, &tlen);
            st = t->sendrecv(t, in + (toff + k * chunk) * es, chunk_len(tlen, k, chunk) * es, to,
                             slots + (size_t)from * chunk * es, m * es, from);
            if (st != TC_OK) {
                return st;
            }
        }
        if (m == 0) {
            continue;
        }
        for (p = 0; p < n; p++) {
            x[p] = slots + (size_t)p * chunk * es;
        }
        x[r] = (char *)in + (myoff + k * chunk) * es;
        tc__combine_ordered(dtype, sum_op, node, n, r, x, dst, m);
        if (op == TC_AVG) {
            tc__reduce_avg_finish(dtype, dst, m, n);
        }
    }
    return TC_OK;
}

tc_status_t tc__ordered_reducescatter(tc_transport_t *t, const void *src, void *out, size_t rows,
                                      size_t row_elems, tc_dtype_t dtype, tc_op_t op,
                                      size_t chunk_bytes, tc_scratch_t *scratch, const int *node)
{
    rows_t arg = {rows, row_elems};
    size_t off, len;

    if (t->size == 1) {
        tc__row_block(rows, row_elems, 1, 0, &off, &len);
        if (len > 0) {
            memcpy(out, src, len * tc_dtype_size(dtype));
        }
        return TC_OK;
    }
    return ordered_rs(t, src, out, row_block, &arg, dtype, op, chunk_bytes, scratch, node);
}

tc_status_t tc__ordered_allreduce(tc_transport_t *t, const void *src, void *buf, size_t count,
                                  tc_dtype_t dtype, tc_op_t op, size_t chunk_bytes,
                                  tc_scratch_t *scratch, const int *node)
{
    const size_t es = tc_dtype_size(dtype);
    const char *in = src != NULL ? src : buf;
    size_t off, len;
    tc_status_t st;

    if (t->size == 1 || count == 0) {
        if (in != buf && count > 0) {
            memcpy(buf, in, count * es);
        }
        return TC_OK;
    }
    tc__segment(count, t->size, t->rank, &off, &len);
    st = ordered_rs(t, in, (char *)buf + off * es, seg_block, &count, dtype, op, chunk_bytes,
                    scratch, node);
    return st != TC_OK ? st : tc__ring_allgather_segments(t, buf, count, es);
}
