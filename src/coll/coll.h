/*
 * coll.h - collective algorithms over a transport.
 *
 * Each algorithm lives in its own file, opens with its step table, and knows
 * only bytes, element counts and the reduce kernels: nothing here knows what
 * a tensor name, a request or the engine is. Every rank of the transport's
 * group must call the same algorithm with the same sizes, in the same order.
 */
#ifndef TC_COLL_COLL_H
#define TC_COLL_COLL_H

#include <stddef.h>

#include "tcoll.h"
#include "transport/transport.h"

/* A growable scratch buffer owned by the caller and reused across calls. */
typedef struct {
    void *data;
    size_t cap;
} tc_scratch_t;

/* Ensures s holds at least bytes; TC_OK or TC_ERR_NOMEM (s unchanged). */
tc_status_t tc__scratch_reserve(tc_scratch_t *s, size_t bytes);
void tc__scratch_free(tc_scratch_t *s);

/* Split count elements into n segments as evenly as possible: the first
 * count % n segments get one element more. Segment i starts at *off_p. */
void tc__segment(size_t count, int n, int i, size_t *off_p, size_t *len_p);

/* Ring allreduce of count elements of dtype into buf, from src (NULL or buf:
 * in place; otherwise src must not overlap buf). TC_AVG divides by the group
 * size. Reduce-scatter steps move chunk_bytes at a time (every rank must pass
 * the same value). Every rank ends with identical bits. */
tc_status_t tc__ring_allreduce(tc_transport_t *t, const void *src, void *buf, size_t count,
                               tc_dtype_t dtype, tc_op_t op, size_t chunk_bytes,
                               tc_scratch_t *scratch);

/* Ring allgather with variable block sizes: block i (bytes[i] bytes) starts at
 * displs[i] of out; this rank's block must already be in place. */
tc_status_t tc__ring_allgatherv(tc_transport_t *t, void *out, const size_t *bytes,
                                const size_t *displs);

/* Binomial-tree broadcast of bytes from root: ceil(log2 n) rounds. */
tc_status_t tc__bcast_binomial(tc_transport_t *t, void *buf, size_t bytes, int root);

#endif
