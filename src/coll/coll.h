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
#include <stdint.h>

#include "reduce/reduce.h"
#include "tcoll.h"
#include "transport/peer_map.h"
#include "transport/shm_seg.h"
#include "util/status.h"
#include "transport/transport.h"

struct tc_wait_policy; /* transport/wait.h */

/* A growable scratch buffer owned by the caller and reused across calls. */
typedef struct {
    void *data;
    size_t cap;
    int shared; /* data is tc_mem_alloc memory (tc__scratch_reserve_shared) */
} tc_scratch_t;

/* Ensures s holds at least bytes; TC_OK or TC_ERR_NOMEM (s unchanged). */
tc_status_t tc__scratch_reserve(tc_scratch_t *s, size_t bytes);

/* The same in memory the node's ranks can map (tc_mem_alloc: the direct
 * algorithms read such buffers with loads), grown to a power of two so
 * that it seldom moves, its contents not kept when it does; private
 * memory where that fails. TC_OK or TC_ERR_NOMEM (s unchanged). */
tc_status_t tc__scratch_reserve_shared(tc_scratch_t *s, size_t bytes);
void tc__scratch_free(tc_scratch_t *s);

/* Split count elements into n segments as evenly as possible: the first
 * count % n segments get one element more. Segment i starts at *off_p. */
void tc__segment(size_t count, int n, int i, size_t *off_p, size_t *len_p);

/* Split rows rows of row_elems elements each into n blocks of whole rows, as
 * tc__segment splits elements: the first rows % n blocks get one row more.
 * Block i starts at element *off_p and is *len_p elements long (0 when it has
 * no rows). rows * row_elems must fit in a size_t (it is an element count). */
void tc__row_block(size_t rows, size_t row_elems, int n, int i, size_t *off_p, size_t *len_p);

/* Ring allreduce of count elements of dtype into buf, from src (NULL or buf:
 * in place; otherwise src must not overlap buf). TC_AVG divides by the group
 * size. Reduce-scatter steps move chunk_bytes at a time (every rank must pass
 * the same value). Every rank ends with identical bits. */
tc_status_t tc__ring_allreduce(tc_transport_t *t, const void *src, void *buf, size_t count,
                               tc_dtype_t dtype, tc_op_t op, size_t chunk_bytes,
                               tc_scratch_t *scratch);

/* Ring reduce-scatter by row blocks. src holds rows rows of row_elems
 * elements of dtype on every rank; the rows are cut into n blocks as
 * tc__row_block cuts them (block i to rank i; blocks may be empty), and out
 * receives this rank's block, tc__row_block(rows, row_elems, n, rank) long,
 * reduced with op over all ranks' src. TC_AVG sums, then divides by the
 * group size once, as tc__ring_allreduce does. The reduction order is fixed
 * (ring_reducescatter.c), so the same inputs always give the same bits.
 * src is only read; out must not overlap src (or scratch). Extra memory: two
 * chunks of chunk_bytes in scratch (none for n <= 2), never a copy of the
 * input. Collective: every rank must pass the same rows, row_elems, dtype,
 * op and chunk_bytes; it makes nchunks x (n-1) sendrecv calls. */
tc_status_t tc__ring_reducescatter(tc_transport_t *t, const void *src, void *out, size_t rows,
                                   size_t row_elems, tc_dtype_t dtype, tc_op_t op,
                                   size_t chunk_bytes, tc_scratch_t *scratch);

/* Allreduce and reduce-scatter in the documented order (ordered_rs.c,
 * docs/reproducibility.md): every element combined node by node, each
 * node's ranks left to right in rank order, then the nodes' results left to
 * right in the order of their lowest rank, whatever the chunking, the block
 * or the buffer the element is in. node[p] is the lowest rank of the group
 * on group rank p's node (NULL: every rank on one node); every rank passes
 * the same table. Arguments otherwise as tc__ring_allreduce's and
 * tc__ring_reducescatter's, with the same traffic; scratch holds about
 * n chunks (at most 64 MiB). */
tc_status_t tc__ordered_allreduce(tc_transport_t *t, const void *src, void *buf, size_t count,
                                  tc_dtype_t dtype, tc_op_t op, size_t chunk_bytes,
                                  tc_scratch_t *scratch, const int *node);
tc_status_t tc__ordered_reducescatter(tc_transport_t *t, const void *src, void *out, size_t rows,
                                      size_t row_elems, tc_dtype_t dtype, tc_op_t op,
                                      size_t chunk_bytes, tc_scratch_t *scratch, const int *node);

/* Ring allgather of the segments tc__segment cuts count elements of es bytes
 * into: rank r holds segment r of buf; every rank ends with all of them. */
tc_status_t tc__ring_allgather_segments(tc_transport_t *t, void *buf, size_t count, size_t es);

/* Ring allgather with variable block sizes: block i (bytes[i] bytes) starts at
 * displs[i] of out; this rank's block must already be in place. */
tc_status_t tc__ring_allgatherv(tc_transport_t *t, void *out, const size_t *bytes,
                                const size_t *displs);

/* Alltoallv by pairwise exchange: this rank's block for rank i is
 * send_bytes[i] bytes at send + send_displs[i]; the block from rank i lands
 * at recv + recv_displs[i] and must be recv_bytes[i] bytes, exactly what rank
 * i sends this rank (learn them first with tc__alltoall_counts). Blocks may
 * be empty. send and recv must not overlap; blocks within recv must not
 * either. n-1 sendrecv calls (alltoallv.c), then this rank's own block is a
 * memcpy: send_bytes[rank] != recv_bytes[rank] gives TC_ERR_ARG (after the
 * exchange, so the other ranks are not left waiting). recv is written only
 * inside its blocks. Collective: every rank calls it, with matching sizes. */
tc_status_t tc__alltoallv(tc_transport_t *t, const void *send, const size_t *send_bytes,
                          const size_t *send_displs, void *recv, const size_t *recv_bytes,
                          const size_t *recv_displs);

/* Exchange one count per rank pair: recv_counts[i] = rank i's
 * send_counts[this rank]; recv_counts[rank] = send_counts[rank]. Arrays of n
 * counts, in host byte order (every rank of a job runs the same ABI). The
 * same schedule as tc__alltoallv with 8-byte blocks in rank order, which is
 * what it runs; it allocates nothing. Collective. */
tc_status_t tc__alltoall_counts(tc_transport_t *t, const uint64_t *send_counts,
                                uint64_t *recv_counts);

/* What the shared-memory collectives run with: the node's segment, the
 * wait policy of the data transport, and the chunk count that numbers the
 * segment's slots (advanced by every collective; the same on every local
 * rank, since they run the same collectives in the same order). */
typedef struct {
    const tc_shm_seg_t *seg;
    const struct tc_wait_policy *wait;
    const int *ranks;    /* [seg->n]: local index -> rank in the wait policy's group; NULL: same */
    uint64_t seq;        /* steps run so far (chunks, or whole direct collectives) */
    tc_scratch_t bounce; /* the direct algorithms' cache-sized buffer (the owner frees it) */
    size_t cma_from;     /* buffers of at least this many bytes go direct (cma_allreduce.c)
                       * where the segment allows it; SIZE_MAX: never */
    tc_peer_maps_t maps; /* the peers' tc_mem_alloc regions mapped here: the direct
                          * algorithms read buffers in them with loads (the owner frees) */
    uint32_t loads, readvs; /* the last direct collective's reads of peers' buffers: with
                             * loads (mapped here), through process_vm_readv */
    char err[256];          /* the reason for the last TC_ERR_TRANSPORT */
} tc_shm_coll_t;

/* Allreduce of count elements of dtype among the node's ranks (every rank
 * of the segment must call it with the same count, dtype and op) through
 * the segment (shm_allreduce.c): into buf, from src (NULL or buf: in place;
 * else src must not overlap buf). TC_AVG divides by the number of ranks.
 * The result has the bits tc__ring_allreduce gives for the same inputs on
 * the same ranks. TC_OK, or TC_ERR_TRANSPORT with c->err (a lost peer, an
 * abort); after an error the segment must not be used again. */
tc_status_t tc__shm_allreduce(tc_shm_coll_t *c, const void *src, void *buf, size_t count,
                              tc_dtype_t dtype, tc_op_t op);

/* Whether a collective of bytes runs direct (process_vm_readv) rather
 * than through the slots: the same on every local rank. */
static inline int tc__shm_uses_cma(const tc_shm_coll_t *c, size_t bytes)
{
    return c->seg->cma && bytes >= c->cma_from;
}

/* The same allreduce (same arguments, same bits) reading the other local
 * ranks' buffers directly with process_vm_readv (cma_allreduce.c): for
 * large buffers, where c->seg->cma says the call works. */
tc_status_t tc__cma_allreduce(tc_shm_coll_t *c, const void *src, void *buf, size_t count,
                              tc_dtype_t dtype, tc_op_t op);

/* What the hierarchical allreduce runs with (hier_allreduce.c). */
typedef struct {
    tc_shm_coll_t *node;     /* this rank's node; NULL when it is alone there */
    tc_transport_t *leaders; /* the nodes' leaders (local rank 0 each), on the leaders
                               * only; NULL elsewhere */
    int world_size;          /* the ranks of the job (avg divides by it) */
    size_t chunk_bytes;      /* the leaders' ring chunk */
    int ordered;             /* TCOLL_DETERMINISTIC: the leaders combine the node
                               * results in node order (tc__ordered_allreduce) */
    tc_scratch_t *scratch;   /* the leaders' ring scratch */
    char *err;               /* [errlen]: the reason for a TC_ERR_TRANSPORT */
    size_t errlen;
} tc_hier_t;

/* Allreduce across nodes (every rank of the job calls it, with the same
 * count, dtype and op): inside each node through shared memory, among the
 * leaders over MPI, then inside each node again (hier_allreduce.c). Every
 * rank ends with the same bits. TC_OK, or an error with the reason in
 * h->err. */
tc_status_t tc__hier_allreduce(const tc_hier_t *h, const void *src, void *buf, size_t count,
                               tc_dtype_t dtype, tc_op_t op);

/* Binomial-tree broadcast of bytes from root: ceil(log2 n) rounds. */
tc_status_t tc__bcast_binomial(tc_transport_t *t, void *buf, size_t bytes, int root);

/* ---- allgather, broadcast, reducescatter and alltoall among the node's
 * ranks (shm_allgather.c, shm_bcast.c, shm_reducescatter.c,
 * shm_alltoall.c; the steps they share: shm_steps.h). Each comes two ways
 * with the same arguments and the same result: tc__cma_* reads the other
 * local ranks' buffers directly with process_vm_readv (only where
 * c->seg->cma), tc__shm_* goes through the segment's slots. Which one runs
 * must be the same on every local rank: the engine picks with
 * tc__shm_uses_cma over a size every rank knows. Ranks are local indexes
 * (the arrays below have c->seg->n entries), every rank of the segment
 * must call the same function with the same sizes, and the result is the
 * bits the MPI algorithm named gives for the same inputs. TC_OK, or
 * TC_ERR_TRANSPORT with c->err (a lost peer, an abort; after it the
 * segment must not be used again), or TC_ERR_NOMEM. ---- */

/* Whether the segment's slots can carry these collectives' per-rank parts
 * (one 8-byte count per local rank in a slot); where not, run the MPI
 * algorithm instead. The same on every local rank. */
static inline int tc__shm_kinds_fit(const tc_shm_coll_t *c)
{
    return (size_t)c->seg->n * sizeof(uint64_t) <= c->seg->slot_bytes;
}

/* tc__ring_allgatherv's contract: block p (bytes[p] bytes) at displs[p] of
 * out, this rank's already in place. */
tc_status_t tc__shm_allgatherv(tc_shm_coll_t *c, void *out, const size_t *bytes,
                               const size_t *displs);
tc_status_t tc__cma_allgatherv(tc_shm_coll_t *c, void *out, const size_t *bytes,
                               const size_t *displs);

/* tc__bcast_binomial's: root's bytes of buf into every rank's buf. */
tc_status_t tc__shm_bcast(tc_shm_coll_t *c, void *buf, size_t bytes, int root);
tc_status_t tc__cma_bcast(tc_shm_coll_t *c, void *buf, size_t bytes, int root);

/* tc__ring_reducescatter's (same reduction order, same bits; src is only
 * read, out must not overlap it); uses c->bounce, no other scratch. */
tc_status_t tc__shm_reducescatter(tc_shm_coll_t *c, const void *src, void *out, size_t rows,
                                  size_t row_elems, tc_dtype_t dtype, tc_op_t op);
tc_status_t tc__cma_reducescatter(tc_shm_coll_t *c, const void *src, void *out, size_t rows,
                                  size_t row_elems, tc_dtype_t dtype, tc_op_t op);

/* Every rank's n counts (send_counts[q]: what this rank sends local rank
 * q) into matrix (n x n: matrix[p * n + q] is what p sends q), the same on
 * every rank, through one slot step. Collective. */
tc_status_t tc__shm_alltoall_counts(tc_shm_coll_t *c, const uint64_t *send_counts,
                                    uint64_t *matrix);

/* Alltoall with blocks in rank order on both sides: matrix (from
 * tc__shm_alltoall_counts) in units of unit bytes; this rank's blocks for
 * 0, 1, ... n-1 back to back in send, the blocks from 0, 1, ... land back
 * to back in recv. send and recv must not overlap. */
tc_status_t tc__shm_alltoall(tc_shm_coll_t *c, const void *send, void *recv, const uint64_t *matrix,
                             size_t unit);
tc_status_t tc__cma_alltoall(tc_shm_coll_t *c, const void *send, void *recv, const uint64_t *matrix,
                             size_t unit);

#endif
