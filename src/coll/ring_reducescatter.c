/*
 * ring_reducescatter.c - reduce-scatter by row blocks over a ring of n ranks.
 *
 * The input is rows rows of row_elems elements. tc__row_block cuts the rows
 * into n blocks (the first rows % n blocks one row longer, so blocks may be
 * empty), and rank r ends with block r reduced over every rank's input, in
 * out. This is the reduce-scatter half of ring_allreduce.c, shifted by one
 * step so that the block a rank completes is its own. Rank r sends to
 * right = r+1 and receives from left = r-1 (mod n); each rank sends and
 * receives about (n-1)/n of its input in total.
 *
 *   step s (0..n-2)   rank r sends block (r - s - 1) mod n to right:
 *                       s = 0: its own input's block, straight from src
 *                       s > 0: the partial received in step s-1
 *                     rank r receives block (r - s - 2) mod n from left,
 *                     then reduces its own input's block into it:
 *                       s < n-2: in scratch; it is sent in step s+1
 *                       s = n-2: this is block r, in out (TC_AVG divides here)
 *
 * Example, n = 3, block 0: in step 0 rank 1 sends x1; rank 2 makes x1 op x2
 * and sends it in step 1; rank 0 makes (x1 op x2) op x0 in out.
 *
 * Reduction order: block j is ((x[j+1] op x[j+2]) op ...) op x[j], ranks
 * mod n, with the running partial always the left operand (tc__reduce's dst)
 * and the rank's own input the right one. The order is fixed by the ring:
 * the same inputs give the same bits, whatever chunk_bytes is. It is not the
 * order ring allreduce uses for the same elements (its segments are cut by
 * elements and start one rank later), so the two agree bit for bit only
 * where order cannot matter: integers, min, max, exactly representable sums.
 * TC_AVG is that sum divided once by n with tc__reduce_avg_finish, as in
 * ring allreduce.
 *
 * Chunks: a block moves chunk_bytes at a time (at least one element), and
 * the loop is chunk-major: chunk k goes through all n-1 steps before chunk
 * k+1 starts. A step of chunk k needs only chunk k of the step before, so the
 * data moves exactly as in the table, every rank makes the same
 * nchunks x (n-1) sendrecv calls in the same order, and the partial in flight
 * is one chunk long: the scratch buffer holds two chunks (the one being sent
 * and the one being received), never a block, and each received chunk is
 * reduced while it is still in cache. n = 2 needs no scratch at all (step 0
 * sends from src and receives into out).
 *
 * Must never write to src, reduce a part of this rank's input in twice, or
 * skip a sendrecv call because its sizes are zero: calls are paired by their
 * place in the sequence, the same on every rank.
 */
#define _GNU_SOURCE
#include "coll/coll.h"
#include "reduce/reduce.h"

#include <string.h>

/* Elements of chunk k of a block of len elements (0 past its end). */
static size_t chunk_len(size_t len, size_t k, size_t chunk)
{
    size_t start = k * chunk;

    if (start >= len) {
        return 0;
    }
    return len - start < chunk ? len - start : chunk;
}

tc_status_t tc__ring_reducescatter(tc_transport_t *t, const void *src, void *out, size_t rows,
                                   size_t row_elems, tc_dtype_t dtype, tc_op_t op,
                                   size_t chunk_bytes, tc_scratch_t *scratch)
{
    const int n = t->size, r = t->rank;
    const int right = (r + 1) % n, left = (r - 1 + n) % n;
    const size_t es = tc_dtype_size(dtype);
    const char *in = src;
    char *dst = out;
    char *bufs[2] = {NULL, NULL};
    size_t off, max_len, chunk, nchunks, k;
    tc_status_t st;
    int s;

    if (n == 1) {
        tc__row_block(rows, row_elems, 1, 0, &off, &max_len);
        if (max_len > 0) {
            memcpy(dst, in, max_len * es);
        }
        return TC_OK; /* one contribution; dividing it by 1 changes no bits */
    }
    tc__row_block(rows, row_elems, n, 0, &off, &max_len); /* block 0 is a largest one */
    if (max_len == 0) {
        return TC_OK; /* every block is empty, on every rank alike */
    }
    chunk = chunk_bytes / es > 0 ? chunk_bytes / es : 1;
    chunk = chunk < max_len ? chunk : max_len;
    nchunks = (max_len + chunk - 1) / chunk;
    if (n > 2) {
        st = tc__scratch_reserve(scratch, 2 * chunk * es);
        if (st != TC_OK) {
            return st;
        }
        bufs[0] = scratch->data;
        bufs[1] = bufs[0] + chunk * es;
    }

    for (k = 0; k < nchunks; k++) {
        for (s = 0; s < n - 1; s++) {
            size_t soff, slen, roff, rlen, sk, rk;
            const char *from = NULL;
            char *to = NULL;

            tc__row_block(rows, row_elems, n, (r - s - 1 + n) % n, &soff, &slen);
            tc__row_block(rows, row_elems, n, (r - s - 2 + 2 * n) % n, &roff, &rlen);
            sk = chunk_len(slen, k, chunk);
            rk = chunk_len(rlen, k, chunk);
            if (sk > 0) {
                from = s == 0 ? in + (soff + k * chunk) * es : bufs[(s - 1) & 1];
            }
            if (rk > 0) {
                to = s == n - 2 ? dst + k * chunk * es : bufs[s & 1];
            }
            st = t->sendrecv(t, from, sk * es, right, to, rk * es, left);
            if (st != TC_OK) {
                return st;
            }
            if (rk > 0) {
                tc__reduce(dtype, op, to, in + (roff + k * chunk) * es, rk);
                if (s == n - 2 && op == TC_AVG) {
                    tc__reduce_avg_finish(dtype, to, rk, n);
                }
            }
        }
    }
    return TC_OK;
}
