/*
 * alltoallv.c - every rank sends a block of its own size to every rank, by
 * pairwise exchange in n-1 steps.
 *
 *   step s (1..n-1)   rank r sends its block for rank (r + s) mod n
 *                     rank r receives the block from rank (r - s) mod n
 *   then              rank r copies its block for itself (memcpy, no transport)
 *
 * In step s, rank d = (r + s) mod n receives from (d - s) mod n = r: every
 * send meets its receive in the partner's call of the same step, so a rank
 * only ever waits for partners at its own step. Each ordered pair of ranks
 * (r, d) exchanges exactly one message, in step (d - r) mod n. Blocks go
 * straight from the send buffer into the receive buffer: no staging copies,
 * no scratch.
 *
 * Both ends must know each block's size: the receiver learns its recv_bytes
 * beforehand, usually with tc__alltoall_counts (the same schedule with one
 * 8-byte count per block). Zero-byte blocks are skipped by the transport on
 * both ends. Must never skip a sendrecv call: calls are paired by their place
 * in the sequence, the same on every rank.
 */
#define _GNU_SOURCE
#include "coll/coll.h"
#include "util/log.h"

#include <string.h>

/* Block i of a buffer: from bytes/displs, or, where bytes is NULL, fixed-size
 * blocks of each bytes laid out in rank order. */
static void block(const size_t *bytes, const size_t *displs, size_t each, int i, size_t *off_p,
                  size_t *len_p)
{
    if (bytes == NULL) {
        *off_p = (size_t)i * each;
        *len_p = each;
    } else {
        *off_p = displs[i];
        *len_p = bytes[i];
    }
}

/* The pairwise exchange of both entry points (each: the block size when the
 * arrays are NULL). The rank's own block is checked and copied after the
 * steps, so that a mismatch there still lets the other ranks finish. */
static tc_status_t exchange(tc_transport_t *t, const char *send, const size_t *send_bytes,
                            const size_t *send_displs, char *recv, const size_t *recv_bytes,
                            const size_t *recv_displs, size_t each)
{
    const int n = t->size, r = t->rank;
    size_t soff, slen, roff, rlen;
    int s;

    for (s = 1; s < n; s++) {
        const int dst = (r + s) % n, src = (r - s + n) % n;
        tc_status_t st;

        block(send_bytes, send_displs, each, dst, &soff, &slen);
        block(recv_bytes, recv_displs, each, src, &roff, &rlen);
        st = t->sendrecv(t, slen > 0 ? send + soff : NULL, slen, dst, rlen > 0 ? recv + roff : NULL,
                         rlen, src);
        if (st != TC_OK) {
            return st;
        }
    }
    block(send_bytes, send_displs, each, r, &soff, &slen);
    block(recv_bytes, recv_displs, each, r, &roff, &rlen);
    if (slen != rlen) {
        TC_ERROR("coll",
                 "alltoallv: rank %d sends itself %zu bytes but expects %zu "
                 "(send_bytes[%d] != recv_bytes[%d])",
                 r, slen, rlen, r, r);
        return TC_ERR_ARG;
    }
    if (slen > 0) {
        memcpy(recv + roff, send + soff, slen);
    }
    return TC_OK;
}

tc_status_t tc__alltoallv(tc_transport_t *t, const void *send, const size_t *send_bytes,
                          const size_t *send_displs, void *recv, const size_t *recv_bytes,
                          const size_t *recv_displs)
{
    return exchange(t, send, send_bytes, send_displs, recv, recv_bytes, recv_displs, 0);
}

tc_status_t tc__alltoall_counts(tc_transport_t *t, const uint64_t *send_counts,
                                uint64_t *recv_counts)
{
    return exchange(t, (const char *)send_counts, NULL, NULL, (char *)recv_counts, NULL, NULL,
                    sizeof(uint64_t));
}
