/*
 * device_node.c - the in-node records of device tensors (algo.h,
 * docs/gpu.md "Data paths"): every rank of the process set on this node
 * (which every rank knows alike: the set's node table), TCOLL_CUDA_IPC on,
 * no joined rank, and at least TCOLL_CUDA_IPC_MIN_KB. Allreduce:
 *
 *   1. each rank gives the CUDA IPC handles of its input and output
 *      buffers (an allgather over the set's transport: once it is over,
 *      every rank's input is complete, since each waited for its stream's
 *      mark before joining it);
 *   2. each rank opens the others' buffers; the ranks tell each other
 *      whether that worked, and if any could not (no IPC in this sandbox,
 *      devices without peer access, memory from a stream-ordered pool),
 *      every rank of the set declines alike and the caller stages this
 *      tensor through host memory (said once per process, in one log
 *      line). Nothing of it is remembered: what every rank decides next
 *      time must not depend on which sets a rank was in;
 *   3. rank r combines block r of every rank's input (the blocks split the
 *      elements as evenly as possible) into block r of its own output with
 *      the combine kernel: prescale, the documented order, the average's
 *      division, postscale (the host's bits: cuda/reduce_ops.cuh);
 *   4. after a barrier, each rank copies the other blocks from their
 *      owners' outputs;
 *   5. each rank closes the handles it opened (its copies are done), then
 *      another barrier: once it is over no one has this rank's buffers
 *      open, and the request may complete (an owner may then free them).
 * Reducescatter is steps 1-3 (only the inputs shared; block r is rank r's
 * rows, its output tcoll's) and 5; allgather shares the inputs, and each
 * rank copies every rank's input to its place in its own output, then 5;
 * broadcast shares the root's buffer, which the others copy, then 5;
 * alltoall shares the inputs, and each rank copies the rows every rank
 * sends it from that rank's input to their place in its output, then 5.
 * A barrier here is an allgather of each rank's status, so a rank whose
 * kernel or copies failed stops every rank of the set at the same step:
 * the tensor fails on every rank alike, and the engine goes on.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda.h"
#include "exec/algo.h"
#include "exec/exec.h"
#include "util/log.h"

typedef struct {
    tc_cuda_ipc_t h[2]; /* the buffers a rank shares: input, output */
    int32_t ok;         /* all exported */
    int32_t pad;
} rec_t;

int tc__device_node_applies(const tc_algo_ctx_t *x, const tc_algo_call_t *c)
{
    return c->memory == TC_MEM_CUDA && x->cuda_ipc_bytes > 0 && c->bytes >= x->cuda_ipc_bytes &&
           !c->packed && x->tp->size >= 2 && x->tp->size <= TC_CUDA_MAX_COMBINE &&
           tc__algo_one_node(x);
}

/* Every rank of the set declines alike (bad: the first rank that could not
 * take part; ok: whether this one could): said once per process. */
static void declined(const tc_algo_ctx_t *x, tc_device_job_t *d, int ok, int bad, const char *why)
{
    if (x->exec->run.ipc_said) {
        /* said once */
    } else if (!ok) {
        TC_WARN("cuda",
                "CUDA IPC cannot be used here (%s): device tensors go staged through host "
                "memory (said once)",
                why[0] ? why : "another rank's handle was refused");
    } else {
        TC_INFO("cuda",
                "CUDA IPC refused on rank %d of the set: device tensors go staged through "
                "host memory (said once)",
                bad);
    }
    x->exec->run.ipc_said = 1;
    d->declined = 1;
}

/* A step that failed on rank bad of the set (or an exchange that failed:
 * st): every rank ends the collective here, the reason (this rank's own
 * why, where it was the one) in d->why; d->agreed where the exchanges
 * worked (only the tensor fails). The handles still open (maps) are
 * closed, and where the exchanges still work one more makes every rank
 * wait until every rank has closed them: an owner may free its buffers
 * once its request fails, and CUDA forbids freeing memory another process
 * still has open. */
static tc_status_t step_failed(tc_transport_t *tp, tc_device_job_t *d, tc_cuda_ipc_maps_t *maps,
                               tc_status_t st, int bad, const char *what, const char *why)
{
    int ignored;

    if (maps != NULL) {
        tc__cuda_ipc_close(d->device, maps);
        if (st == TC_OK) {
            st = tc__direct_agree(tp, 1, &ignored);
        }
    }
    snprintf(d->why, sizeof(d->why), "%s failed on rank %d of the set%s%.160s", what, bad,
             bad == tp->rank ? ": " : "", bad == tp->rank ? why : "");
    d->agreed = st == TC_OK; /* every rank knows, and no one has a buffer open */
    return st != TC_OK ? st : TC_ERR_TRANSPORT;
}

/* Step 5 after this rank's last step (st, why): its reads of the others'
 * buffers are done (its copies and kernels were waited for), so it closes
 * their handles; then every rank says whether its own step worked, which
 * also tells each owner that no one has its buffers open any more, or
 * every rank fails alike (step_failed, naming what). */
static tc_status_t last_step(const tc_algo_ctx_t *x, tc_device_job_t *d, tc_cuda_ipc_maps_t *maps,
                             tc_status_t st, const char *what, const char *why)
{
    int bad = -1;

    tc__cuda_ipc_close(d->device, maps);
    if ((st = tc__direct_agree(x->tp, st == TC_OK, &bad)) != TC_OK || bad >= 0) {
        return step_failed(x->tp, d, NULL, st, bad, what, why);
    }
    return TC_OK;
}

/* Steps 1 and 2 for nb (1 or 2) buffers of each rank, bufs[] here: on
 * TC_OK either peer[(nb * m) + b] is buffer b of the m-th other rank (in
 * rank order) and *maps_p holds them open, or every rank declined
 * (d->declined); another status when an exchange failed. bufs NULL: this
 * rank takes part only to decline (d->why says why). */
static tc_status_t share(const tc_algo_ctx_t *x, tc_device_job_t *d, const void *const *bufs,
                         int nb, void **peer, tc_cuda_ipc_maps_t **maps_p)
{
    tc_transport_t *tp = x->tp;
    int n = tp->size, me = tp->rank, k, b, m = 0, bad = -1, ok = 1;
    rec_t recs[TC_CUDA_MAX_COMBINE];
    tc_cuda_ipc_t hs[2 * TC_CUDA_MAX_COMBINE];
    char why[256] = "";
    tc_status_t st;

    *maps_p = NULL;
    memset(recs, 0, sizeof(recs));
    if (bufs == NULL) {
        ok = 0;
        snprintf(why, sizeof(why), "%s", d->why);
    }
    for (b = 0; b < nb && ok; b++) {
        if (b > 0 && bufs[b] == bufs[b - 1]) {
            recs[me].h[b] = recs[me].h[b - 1];
        } else {
            ok = tc__cuda_ipc_export(d->device, bufs[b], &recs[me].h[b], why, sizeof(why)) == TC_OK;
        }
    }
    recs[me].ok = ok;
    if ((st = tc__ring_allgather_segments(tp, recs, (size_t)tp->size, sizeof(rec_t))) != TC_OK) {
        return st;
    }
    for (k = 0; k < n; k++) {
        ok = ok && recs[k].ok;
        for (b = 0; k != me && b < nb; b++) {
            hs[m++] = recs[k].h[b];
        }
    }
    if (ok) {
        ok = tc__cuda_ipc_open(d->device, hs, m, peer, maps_p, why, sizeof(why)) == TC_OK;
    }
    if ((st = tc__direct_agree(tp, ok, &bad)) != TC_OK || bad >= 0) {
        tc__cuda_ipc_close(d->device, *maps_p);
        *maps_p = NULL;
        if (st == TC_OK) {
            declined(x, d, ok, bad, why);
        }
    }
    return st;
}

static size_t block_lo(size_t count, int n, int k)
{
    size_t base = count / (size_t)n, rem = count % (size_t)n;
    return (size_t)k * base + ((size_t)k < rem ? (size_t)k : rem);
}

tc_status_t tc__device_node_allreduce(const tc_algo_ctx_t *x, const tc_allreduce_job_t *j)
{
    tc_transport_t *tp = x->tp;
    int n = tp->size, me = tp->rank, k, m = 0, bad = -1;
    size_t es = tc_dtype_size(j->dtype);
    const void *src = j->src != NULL ? j->src : j->buf;
    const void *bufs[2] = {src, j->buf}, *const *bufs_p = bufs;
    void *peer[2 * TC_CUDA_MAX_COMBINE];
    const void *xs[TC_CUDA_MAX_COMBINE];
    void *dsts[TC_CUDA_MAX_COMBINE];
    const void *srcs[TC_CUDA_MAX_COMBINE];
    size_t bytes[TC_CUDA_MAX_COMBINE], lo, hi;
    tc_cuda_ipc_maps_t *maps = NULL;
    char why[256] = "";
    tc_status_t st;

    /* 1-2. the inputs and outputs shared, or every rank declines (also
     * where a rank's GPU cannot run the combine kernel) */
    if (tc__cuda_combine_ready(j->dev->device, j->dtype, j->dev->why, sizeof(j->dev->why)) !=
        TC_OK) {
        bufs_p = NULL;
    }
    if ((st = share(x, j->dev, bufs_p, 2, peer, &maps)) != TC_OK || j->dev->declined) {
        return st;
    }
    /* 3. this rank's block of every input */
    lo = block_lo(j->count, n, me);
    hi = block_lo(j->count, n, me + 1);
    for (k = 0, m = 0; k < n; k++) {
        xs[k] = (k == me ? (const char *)src : (const char *)peer[2 * m++]) + lo * es;
    }
    st = tc__cuda_combine(j->dev->device, j->dtype, j->op, n, xs, (char *)j->buf + lo * es, hi - lo,
                          j->dev->prescale, j->dev->postscale, why, sizeof(why));
    if ((st = tc__direct_agree(tp, st == TC_OK, &bad)) != TC_OK || bad >= 0) {
        return step_failed(tp, j->dev, maps, st, bad, "the combine kernel", why);
    }
    /* 4. the other blocks, from their owners' outputs */
    for (k = 0, m = 0; k < n; k++) {
        size_t klo = block_lo(j->count, n, k), khi = block_lo(j->count, n, k + 1);
        if (k == me) {
            continue;
        }
        dsts[m] = (char *)j->buf + klo * es;
        srcs[m] = (const char *)peer[2 * m + 1] + klo * es;
        bytes[m] = (khi - klo) * es;
        m++;
    }
    st = tc__cuda_copy_many(j->dev->device, m, dsts, srcs, bytes, why, sizeof(why));
    /* 5. no one reads this rank's buffers any more */
    return last_step(x, j->dev, maps, st, "copying the blocks", why);
}

tc_status_t tc__device_node_reducescatter(const tc_algo_ctx_t *x, const tc_reducescatter_job_t *j)
{
    int n = x->tp->size, me = x->tp->rank, k, m = 0;
    size_t es = tc_dtype_size(j->dtype), off, elems;
    void *peer[TC_CUDA_MAX_COMBINE];
    const void *xs[TC_CUDA_MAX_COMBINE];
    tc_cuda_ipc_maps_t *maps = NULL;
    char why[256] = "";
    tc_status_t st;

    /* 1-2. the inputs shared, or every rank declines (also where a rank
     * has no output, or its GPU cannot run the combine kernel) */
    int ready = j->out != NULL && tc__cuda_combine_ready(j->dev->device, j->dtype, j->dev->why,
                                                         sizeof(j->dev->why)) == TC_OK;
    if ((st = share(x, j->dev, ready ? &j->src : NULL, 1, peer, &maps)) != TC_OK ||
        j->dev->declined) {
        return st;
    }
    /* 3. this rank's rows of every input, combined into its output */
    tc__row_block(j->rows, j->row_elems, n, me, &off, &elems);
    for (k = 0, m = 0; k < n; k++) {
        xs[k] = (k == me ? (const char *)j->src : (const char *)peer[m++]) + off * es;
    }
    st = tc__cuda_combine(j->dev->device, j->dtype, j->op, n, xs, j->out, elems, j->dev->prescale,
                          j->dev->postscale, why, sizeof(why));
    /* 5. no one reads this rank's input any more */
    return last_step(x, j->dev, maps, st, "the combine kernel", why);
}

tc_status_t tc__device_node_allgather(const tc_algo_ctx_t *x, const tc_allgather_job_t *j)
{
    int n = x->tp->size, me = x->tp->rank, k, m = 0;
    void *peer[TC_CUDA_MAX_COMBINE], *dsts[TC_CUDA_MAX_COMBINE];
    const void *srcs[TC_CUDA_MAX_COMBINE];
    size_t bytes[TC_CUDA_MAX_COMBINE];
    tc_cuda_ipc_maps_t *maps = NULL;
    char why[256] = "";
    tc_status_t st;

    /* 1-2. the inputs shared, or every rank declines */
    if ((st = share(x, j->dev, j->buf != NULL ? &j->src : NULL, 1, peer, &maps)) != TC_OK ||
        j->dev->declined) {
        return st;
    }
    /* 3. every rank's input to its place in this rank's output */
    for (k = 0, m = 0; k < n; k++) {
        dsts[k] = (char *)j->buf + j->displs[k];
        srcs[k] = k == me ? j->src : peer[m++];
        bytes[k] = j->bytes[k];
    }
    st = tc__cuda_copy_many(j->dev->device, n, dsts, srcs, bytes, why, sizeof(why));
    /* 5. no one reads this rank's input any more */
    return last_step(x, j->dev, maps, st, "copying the blocks", why);
}

tc_status_t tc__device_node_alltoall(const tc_algo_ctx_t *x, const tc_alltoall_job_t *j)
{
    int n = x->tp->size, me = x->tp->rank, p, m = 0;
    void *peer[TC_CUDA_MAX_COMBINE], *dsts[TC_CUDA_MAX_COMBINE];
    const void *srcs[TC_CUDA_MAX_COMBINE], *inputs[TC_CUDA_MAX_COMBINE];
    size_t bytes[TC_CUDA_MAX_COMBINE];
    tc_cuda_ipc_maps_t *maps = NULL;
    char why[256] = "";
    tc_status_t st;

    /* 1-2. the inputs shared, or every rank declines */
    if ((st = share(x, j->dev, j->out != NULL ? &j->send : NULL, 1, peer, &maps)) != TC_OK ||
        j->dev->declined) {
        return st;
    }
    /* 3. from every rank p, the rows p sends this one */
    for (p = 0; p < n; p++) {
        inputs[p] = p == me ? j->send : peer[m++];
    }
    tc__alltoall_blocks(j, n, me, inputs, dsts, srcs, bytes);
    st = tc__cuda_copy_many(j->dev->device, n, dsts, srcs, bytes, why, sizeof(why));
    /* 5. no one reads this rank's input any more */
    return last_step(x, j->dev, maps, st, "copying the blocks", why);
}

tc_status_t tc__device_node_broadcast(const tc_algo_ctx_t *x, const tc_broadcast_job_t *j)
{
    tc_transport_t *tp = x->tp;
    int me = tp->rank, bad = -1, ok = 1;
    rec_t recs[TC_CUDA_MAX_COMBINE];
    void *root_buf = NULL;
    const void *from;
    tc_cuda_ipc_maps_t *maps = NULL;
    char why[256] = "";
    tc_status_t st;

    /* 1. the root's handle, exchanged: also the sign that every buffer is
     * ready (the root's input, the others' earlier work on theirs) */
    memset(recs, 0, sizeof(recs));
    if (me == j->root) {
        ok = tc__cuda_ipc_export(j->dev->device, j->buf, &recs[me].h[0], why, sizeof(why)) == TC_OK;
    }
    recs[me].ok = ok;
    if ((st = tc__ring_allgather_segments(tp, recs, (size_t)tp->size, sizeof(rec_t))) != TC_OK) {
        return st;
    }
    /* 2. the root's buffer opened on every other rank, or all decline */
    ok = ok && recs[j->root].ok;
    if (ok && me != j->root) {
        ok = tc__cuda_ipc_open(j->dev->device, &recs[j->root].h[0], 1, &root_buf, &maps, why,
                               sizeof(why)) == TC_OK;
    }
    if ((st = tc__direct_agree(tp, ok, &bad)) != TC_OK) {
        tc__cuda_ipc_close(j->dev->device, maps);
        return st;
    }
    if (bad >= 0) {
        tc__cuda_ipc_close(j->dev->device, maps);
        declined(x, j->dev, ok, bad, why);
        return TC_OK;
    }
    /* 3. the copies, then no one reads the root's buffer any more */
    st = TC_OK;
    if (me != j->root) {
        from = root_buf;
        st = tc__cuda_copy_many(j->dev->device, 1, &j->buf, &from, &j->bytes, why, sizeof(why));
    }
    return last_step(x, j->dev, maps, st, "copying the root's buffer", why);
}
