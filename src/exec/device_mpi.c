/*
 * device_mpi.c - the device records over a CUDA-aware MPI (algo.h,
 * docs/gpu.md "Data paths"): where every rank's MPI says it takes device
 * memory (mpi_cuda.c) and TCOLL_MPI_CUDA is on, a device tensor that the
 * in-node IPC records do not take goes over the set's MPI transport in
 * device memory (x->cuda_mpi: every peer over MPI, those of this node too,
 * whose CUDA-aware MPI has its own in-node path), with no copy through
 * host memory:
 *
 *   broadcast      the binomial tree (coll/bcast.c) on the device buffer;
 *   allgather      this rank's input copied to its place in the output
 *                  (device memory tcoll allocates), then the ring
 *                  (coll/ring_allgatherv.c) over it;
 *   alltoall       this rank's own rows copied, then the pairwise exchange
 *                  (coll/alltoallv.c) between the input and the output;
 *   allreduce      the input cut into one block per rank (tc__segment);
 *                  each rank sends every other rank its block of its input
 *                  and receives every rank's contribution to its own block
 *                  into device scratch (the pairwise schedule), combines
 *                  them with the combine kernel in rank order (prescale,
 *                  the average's division, postscale: the host's bits),
 *                  then the blocks are allgathered in place (the ring);
 *   reducescatter  the same by blocks of rows, without the allgather.
 *
 * Rank order is the documented order only where the set is on one node or
 * each of its ranks on a node of its own, so under TCOLL_DETERMINISTIC the
 * reducing kinds apply there only, for the order-sensitive combinations
 * (float sum, avg, prod); elsewhere those are staged (the hierarchical
 * order). Every rank decides alike: the set, the knobs, the agreed MPI.
 *
 * Agreement: a rank that cannot run its part (no device memory for its
 * output or the scratch, a failed local copy) says so in a status exchange
 * before any data moves, and every rank of the set declines alike (the
 * tensor is then staged); after the combine, a second exchange makes every
 * rank fail alike where one rank's kernel failed, so no rank gathers a
 * block that was never computed. The core functions take the memory's own
 * operations (tc_direct_mem_t): CUDA's here, host stand-ins in the unit
 * test (test_device_mpi), which runs them over in-memory transports.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda.h"
#include "exec/algo.h"
#include "reduce/reduce.h"
#include "util/log.h"

const tc_direct_mem_t tc__direct_cuda = {tc__cuda_copy_many, tc__cuda_combine,
                                         tc__cuda_combine_ready, tc__cuda_alloc, tc__cuda_free};

/* ---- when they apply ------------------------------------------------------------- */

int tc__device_mpi_applies(const tc_algo_ctx_t *x, const tc_algo_call_t *c)
{
    return c->memory == TC_MEM_CUDA && x->cuda_mpi != NULL && !c->packed && x->tp->size >= 2;
}

/* Rank order is the documented order: one node, or a node per rank. */
static int rank_order(const tc_algo_ctx_t *x)
{
    int i, own_nodes = 1;

    if (tc__algo_one_node(x)) {
        return 1;
    }
    for (i = 0; i < x->tp->size; i++) {
        own_nodes = own_nodes && x->node[i] == i;
    }
    return own_nodes;
}

int tc__device_mpi_reduce_applies(const tc_algo_ctx_t *x, const tc_algo_call_t *c)
{
    return tc__device_mpi_applies(x, c) && x->tp->size <= TC_CUDA_MAX_COMBINE &&
           (!x->ordered || !tc__order_matters(c->dtype, c->op) || rank_order(x));
}

/* base + off bytes; NULL where base is (an empty tensor may have no buffer). */
static char *at(const void *base, size_t off)
{
    return base != NULL ? (char *)base + off : NULL;
}

/* ---- the status exchanges ---------------------------------------------------------- */

tc_status_t tc__direct_agree(tc_transport_t *tp, int ok, int *bad_p)
{
    /* one flag a rank: on the stack up to TC_CUDA_MAX_COMBINE ranks (the
     * in-node records), so that nothing there can fail */
    int32_t small[TC_CUDA_MAX_COMBINE];
    int32_t *flags =
        tp->size <= TC_CUDA_MAX_COMBINE ? small : malloc((size_t)tp->size * sizeof(int32_t));
    tc_status_t st;
    int k;

    *bad_p = -1;
    if (flags == NULL) {
        snprintf(tp->err, sizeof(tp->err), "out of memory for a status exchange");
        return TC_ERR_NOMEM;
    }
    flags[tp->rank] = ok ? 1 : 0;
    st = tc__ring_allgather_segments(tp, flags, (size_t)tp->size, sizeof(int32_t));
    for (k = 0; st == TC_OK && k < tp->size && *bad_p < 0; k++) {
        if (!flags[k]) {
            *bad_p = k;
        }
    }
    if (flags != small) {
        free(flags);
    }
    return st;
}

/* The first exchange: every rank can run its part (ok), or every rank
 * declines (TC_OK, d->declined); another status when the exchange failed. */
static tc_status_t start(tc_transport_t *tp, tc_device_job_t *d, int ok, const char *why)
{
    int bad = -1;
    tc_status_t st = tc__direct_agree(tp, ok, &bad);

    if (st != TC_OK) {
        snprintf(d->why, sizeof(d->why), "%s", tp->err);
    } else if (bad >= 0) {
        TC_INFO("cuda", "rank %d of the set cannot run a device collective over MPI%s%s: staged",
                bad, ok ? "" : ": ", ok ? "" : why);
        d->declined = 1;
    }
    return st;
}

/* A transfer failed: its reason in d->why. */
static tc_status_t moved(tc_transport_t *tp, tc_device_job_t *d, tc_status_t st)
{
    if (st != TC_OK) {
        snprintf(d->why, sizeof(d->why), "%s", tp->err);
    }
    return st;
}

/* ---- the kinds that move data -------------------------------------------------------- */

tc_status_t tc__direct_broadcast(tc_transport_t *tp, const tc_direct_mem_t *mem,
                                 const tc_broadcast_job_t *j)
{
    (void)mem;
    return moved(tp, j->dev, tc__bcast_binomial(tp, j->buf, j->bytes, j->root));
}

tc_status_t tc__direct_allgather(tc_transport_t *tp, const tc_direct_mem_t *mem,
                                 const tc_allgather_job_t *j)
{
    tc_device_job_t *d = j->dev;
    void *dst = at(j->buf, j->displs[tp->rank]);
    char why[256] = "";
    int ok = j->buf != NULL;
    tc_status_t st;

    if (ok && j->bytes[tp->rank] > 0) {
        ok = mem->copy(d->device, 1, &dst, &j->src, &j->bytes[tp->rank], why, sizeof(why)) == TC_OK;
    } else if (!ok) {
        snprintf(why, sizeof(why), "%s", d->why);
    }
    if ((st = start(tp, d, ok, why)) != TC_OK || d->declined) {
        return st;
    }
    return moved(tp, d, tc__ring_allgatherv(tp, j->buf, j->bytes, j->displs));
}

tc_status_t tc__direct_alltoall(tc_transport_t *tp, const tc_direct_mem_t *mem,
                                const tc_alltoall_job_t *j)
{
    tc_device_job_t *d = j->dev;
    int n = tp->size, me = tp->rank, ok = j->out != NULL;
    size_t *sb = malloc(2 * (size_t)n * sizeof(size_t)), *rb;
    void *dst = at(j->out, j->rd[me]);
    const void *src = at(j->send, j->sd[me]);
    char why[256] = "";
    tc_status_t st;

    if (sb == NULL) {
        ok = 0;
        snprintf(why, sizeof(why), "out of memory");
    } else if (!ok) {
        snprintf(why, sizeof(why), "%s", d->why);
    } else if (j->sb[me] > 0) {
        ok = mem->copy(d->device, 1, &dst, &src, &j->sb[me], why, sizeof(why)) == TC_OK;
    }
    if ((st = start(tp, d, ok, why)) != TC_OK || d->declined) {
        free(sb);
        return st;
    }
    /* the others' blocks; this rank's own is in place already */
    rb = sb + n;
    memcpy(sb, j->sb, (size_t)n * sizeof(size_t));
    memcpy(rb, j->rb, (size_t)n * sizeof(size_t));
    sb[me] = rb[me] = 0;
    st = tc__alltoallv(tp, j->send, sb, j->sd, j->out, rb, j->rd);
    free(sb);
    return moved(tp, d, st);
}

/* ---- the reducing kinds ------------------------------------------------------------------ */

/* What the reducing kinds share: the blocks (rank k's: off[k], len[k]
 * elements), this rank's input, where its block's result goes. */
typedef struct {
    const char *src;
    char *dst;    /* this rank's block of the result */
    int have_out; /* 0: its output could not be allocated (d->why says why) */
    size_t es, off[TC_CUDA_MAX_COMBINE], len[TC_CUDA_MAX_COMBINE];
    tc_dtype_t dtype;
    tc_op_t op;
} blocks_t;

/* Every rank's contribution to this rank's block, into scratch (block k's
 * in slot (me - k) mod n, k != me, of the largest block's size), combined
 * into b->dst in rank order; then the second exchange. A rank that cannot
 * get scratch (or has no output) declines, and so does every
 * rank; so does one whose GPU cannot run the combine kernel. */
static tc_status_t reduce_blocks(tc_transport_t *tp, const tc_direct_mem_t *mem, tc_device_job_t *d,
                                 const blocks_t *b)
{
    int n = tp->size, me = tp->rank, s, k, bad = -1;
    size_t slot = b->len[0] * b->es; /* tc__segment, tc__row_block: the first is the largest */
    const void *xs[TC_CUDA_MAX_COMBINE];
    char *scratch = NULL, why[256] = "";
    int ok = b->have_out;
    tc_status_t st;

    if (!ok) {
        snprintf(why, sizeof(why), "%s", d->why);
    } else if (mem->ready(d->device, b->dtype, why, sizeof(why)) != TC_OK) {
        ok = 0; /* this GPU cannot run the combine kernel */
    } else if (slot > 0) {
        ok = mem->alloc(d->device, (size_t)(n - 1) * slot, (void **)&scratch, why, sizeof(why)) ==
             TC_OK;
    }
    if ((st = start(tp, d, ok, why)) != TC_OK || d->declined) {
        mem->free(d->device, scratch);
        return st;
    }
    for (s = 1; s < n && st == TC_OK; s++) {
        int to = (me + s) % n, from = (me - s + n) % n;
        st = tp->sendrecv(tp, at(b->src, b->off[to] * b->es), b->len[to] * b->es, to,
                          at(scratch, (size_t)(s - 1) * slot), b->len[me] * b->es, from);
    }
    if (st != TC_OK) {
        mem->free(d->device, scratch);
        return moved(tp, d, st);
    }
    for (k = 0; k < n; k++) {
        xs[k] = k == me ? at(b->src, b->off[me] * b->es)
                        : at(scratch, (size_t)((me - k + n) % n - 1) * slot);
    }
    if (b->len[me] > 0) {
        st = mem->combine(d->device, b->dtype, b->op, n, xs, b->dst, b->len[me], d->prescale,
                          d->postscale, why, sizeof(why));
    }
    mem->free(d->device, scratch);
    if ((st = tc__direct_agree(tp, st == TC_OK, &bad)) != TC_OK) {
        return moved(tp, d, st);
    }
    if (bad >= 0) { /* every rank knows: only the tensor fails */
        snprintf(d->why, sizeof(d->why), "the combine kernel failed on rank %d of the set%s%.160s",
                 bad, bad == me ? ": " : "", bad == me ? why : "");
        d->agreed = 1;
        return TC_ERR_TRANSPORT;
    }
    return TC_OK;
}

tc_status_t tc__direct_allreduce(tc_transport_t *tp, const tc_direct_mem_t *mem,
                                 const tc_allreduce_job_t *j)
{
    blocks_t b;
    int k;
    tc_status_t st;

    b.src = j->src != NULL ? j->src : j->buf;
    b.es = tc_dtype_size(j->dtype);
    b.dtype = j->dtype;
    b.op = j->op;
    for (k = 0; k < tp->size; k++) {
        tc__segment(j->count, tp->size, k, &b.off[k], &b.len[k]);
    }
    b.dst = at(j->buf, b.off[tp->rank] * b.es);
    b.have_out = 1;
    if ((st = reduce_blocks(tp, mem, j->dev, &b)) != TC_OK || j->dev->declined) {
        return st;
    }
    /* the blocks are tc__segment's: its ring allgather puts them in place */
    return moved(tp, j->dev, tc__ring_allgather_segments(tp, j->buf, j->count, b.es));
}

tc_status_t tc__direct_reducescatter(tc_transport_t *tp, const tc_direct_mem_t *mem,
                                     const tc_reducescatter_job_t *j)
{
    blocks_t b;
    int k;

    b.src = j->src;
    b.dst = j->out;
    b.have_out = j->out != NULL;
    b.es = tc_dtype_size(j->dtype);
    b.dtype = j->dtype;
    b.op = j->op;
    for (k = 0; k < tp->size; k++) {
        tc__row_block(j->rows, j->row_elems, tp->size, k, &b.off[k], &b.len[k]);
    }
    return reduce_blocks(tp, mem, j->dev, &b);
}

/* ---- the records' movements (algo_<kind>.c) ----------------------------------------- */

tc_status_t tc__device_mpi_allreduce(const tc_algo_ctx_t *x, const tc_allreduce_job_t *j)
{
    return tc__direct_allreduce(x->cuda_mpi, &tc__direct_cuda, j);
}

tc_status_t tc__device_mpi_reducescatter(const tc_algo_ctx_t *x, const tc_reducescatter_job_t *j)
{
    return tc__direct_reducescatter(x->cuda_mpi, &tc__direct_cuda, j);
}

tc_status_t tc__device_mpi_allgather(const tc_algo_ctx_t *x, const tc_allgather_job_t *j)
{
    return tc__direct_allgather(x->cuda_mpi, &tc__direct_cuda, j);
}

tc_status_t tc__device_mpi_broadcast(const tc_algo_ctx_t *x, const tc_broadcast_job_t *j)
{
    return tc__direct_broadcast(x->cuda_mpi, &tc__direct_cuda, j);
}

tc_status_t tc__device_mpi_alltoall(const tc_algo_ctx_t *x, const tc_alltoall_job_t *j)
{
    return tc__direct_alltoall(x->cuda_mpi, &tc__direct_cuda, j);
}
