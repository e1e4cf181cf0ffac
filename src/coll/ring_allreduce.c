/*
 * ring_allreduce.c - bandwidth-optimal allreduce over a ring of n ranks.
 *
 * The buffer is cut into n segments (uneven by at most one element when n
 * does not divide the count). Rank r sends to right = r+1 and receives from
 * left = r-1 (mod n). Each rank moves 2(n-1)/n of the buffer in total.
 *
 *   phase            step s (0..n-2)      rank r sends seg      rank r receives seg, then
 *   reduce-scatter   s                    (r - s) mod n         (r - s - 1) mod n: seg op= recv
 *   (after it, rank r holds segment (r + 1) mod n fully reduced; TC_AVG divides it here)
 *   allgather        s                    (r + 1 - s) mod n     (r - s) mod n: seg = recv
 *
 * Within a reduce-scatter step the segment moves in chunks of chunk_bytes, so
 * each received chunk is reduced while it is still in cache and the scratch
 * buffer stays one chunk long. Chunking does not change the result.
 *
 * Out of place (src != NULL), a segment is copied from src into buf only on
 * the rank that reduces into it, chunk by chunk just before the reduction
 * (while the chunk is in cache), and step 0 sends straight from src: no
 * separate pass copies the whole input. Segment r, which rank r never reduces,
 * arrives whole in the allgather phase.
 *
 * Every segment is reduced in one fixed order on one rank and then copied, so
 * all ranks end with identical bits. Must never reduce a segment twice or read
 * the scratch buffer before the receive that fills it has completed.
 */
#define _GNU_SOURCE
#include "coll/coll.h"
#include "reduce/reduce.h"

#include <string.h>

tc_status_t tc__ring_allreduce(tc_transport_t *t, const void *src, void *buf, size_t count,
                               tc_dtype_t dtype, tc_op_t op, size_t chunk_bytes,
                               tc_scratch_t *scratch)
{
    const int n = t->size, r = t->rank;
    const int right = (r + 1) % n, left = (r - 1 + n) % n;
    const size_t es = tc_dtype_size(dtype);
    char *base = buf;
    const char *in = src != NULL && src != buf ? src : NULL;
    size_t off, len, max_len, chunk;
    tc_status_t st;
    int s;

    if (n == 1 || count == 0) {
        if (in != NULL && count > 0) {
            memcpy(base, in, count * es);
        }
        return TC_OK; /* the sum of one contribution, divided by 1 */
    }
    tc__segment(count, n, 0, &off, &max_len); /* segment 0 is a largest one */
    chunk = chunk_bytes / es > 0 ? chunk_bytes / es : 1;
    chunk = chunk < max_len ? chunk : max_len;
    st = tc__scratch_reserve(scratch, chunk * es);
    if (st != TC_OK) {
        return st;
    }

    for (s = 0; s < n - 1; s++) {
        size_t soff, slen, roff, rlen, k;
        tc__segment(count, n, (r - s + n) % n, &soff, &slen);
        tc__segment(count, n, (r - s - 1 + 2 * n) % n, &roff, &rlen);
        /* chunk by chunk: the received chunk is reduced while it is in cache */
        /* step 0 sends this rank's own segment, still only in the input */
        const char *from = s == 0 && in != NULL ? in : base;
        for (k = 0; k * chunk < slen || k * chunk < rlen; k++) {
            size_t sk = k * chunk < slen ? slen - k * chunk : 0;
            size_t rk = k * chunk < rlen ? rlen - k * chunk : 0;
            char *dst = base + (roff + k * chunk) * es;
            sk = sk < chunk ? sk : chunk;
            rk = rk < chunk ? rk : chunk;
            st = t->sendrecv(t, from + (soff + k * chunk) * es, sk * es, right, scratch->data,
                             rk * es, left);
            if (st != TC_OK) {
                return st;
            }
            if (in != NULL && rk > 0) { /* each segment is reduced into once here */
                memcpy(dst, in + (roff + k * chunk) * es, rk * es);
            }
            tc__reduce(dtype, op, dst, scratch->data, rk);
        }
    }

    if (op == TC_AVG) {
        tc__segment(count, n, (r + 1) % n, &off, &len);
        tc__reduce_avg_finish(dtype, base + off * es, len, n);
    }

    for (s = 0; s < n - 1; s++) {
        size_t soff, slen, roff, rlen;
        tc__segment(count, n, (r + 1 - s + n) % n, &soff, &slen);
        tc__segment(count, n, (r - s + n) % n, &roff, &rlen);
        st = t->sendrecv(t, base + soff * es, slen * es, right, base + roff * es, rlen * es, left);
        if (st != TC_OK) {
            return st;
        }
    }
    return TC_OK;
}
