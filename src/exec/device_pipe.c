/*
 * device_pipe.c - the chunked staging records of device allreduce and
 * broadcast (algo.h; docs/gpu.md, "Data paths"): a device tensor larger
 * than TCOLL_CUDA_STAGE_CHUNK_KB goes through host memory in chunks, its
 * copies on tcoll's copy streams (cuda_pipe.c) overlapping the host
 * collective of the chunks before and after (the schedule: stage_pipe.c).
 *
 * Each chunk runs the host record the selector picks for a host tensor of
 * the chunk's size (among the kind's records, which device.c hands over in
 * the device job), in place in a page-locked slot: the same algorithms,
 * the same documented order. Every operation these kinds run is elementwise
 * (prescale, the combination in the order, the average's division,
 * postscale), so an element gets the bits it gets unchunked; under
 * TCOLL_DETERMINISTIC=0 the ring's order depends on where an element falls
 * in its block, so chunked and unchunked runs may differ there, alike on
 * every rank. The chunks are the same on every rank of the set: the count
 * and dtype are agreed, and so is the knob.
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "exec/algo.h"
#include "exec/exec.h"
#include "exec/stage_pipe.h"
#include "reduce/reduce.h"
#include "util/log.h"

/* the slots' copies are marked with the copy streams' per-slot events */
_Static_assert(TC_STAGE_SLOTS <= TC_CUDA_PIPE_SLOTS, "a staging slot without a copy event");

/* The chunk for elements of es bytes: the knob, whole elements, at least one. */
static size_t chunk_of(const tc_algo_ctx_t *x, size_t es)
{
    size_t c = x->stage_chunk;

    if (c == 0 || es == 0) {
        return 0;
    }
    return c < es ? es : c - c % es;
}

int tc__device_pipe_applies(const tc_algo_ctx_t *x, const tc_algo_call_t *c)
{
    size_t chunk = chunk_of(x, tc_dtype_size(c->dtype));

    return c->memory == TC_MEM_CUDA && !c->packed && chunk > 0 && c->bytes > chunk;
}

/* The slots of r, of chunk bytes each (kept for the next run). */
static tc_status_t slots(tc_exec_t *e, tc_stage_run_t *r, int dev, char *why, size_t len)
{
    char *p = tc__exec_stage_reserve(&e->run.pipe, (size_t)TC_STAGE_SLOTS * r->chunk);
    int s;

    if (p == NULL) {
        snprintf(why, len, "out of memory for %d staging buffers of %zu bytes", TC_STAGE_SLOTS,
                 r->chunk);
        return TC_ERR_NOMEM;
    }
    for (s = 0; s < TC_STAGE_SLOTS; s++) {
        r->slots[s] = p + (size_t)s * r->chunk;
    }
    if (!e->run.pipe_said) {
        e->run.pipe_said = 1;
        TC_INFO("cuda",
                "device allreduces and broadcasts over %zu bytes run staged in chunks of that "
                "size through %s host memory (device %d)",
                r->chunk, e->run.pipe.registered ? "page-locked" : "pageable", dev);
    }
    return TC_OK;
}

static tc_status_t pipe_copy(void *ctx, int slot, int to_device, void *dst, const void *src,
                             size_t bytes, char *why, size_t len)
{
    return tc__cuda_pipe_copy(*(const int *)ctx, slot, to_device, dst, src, bytes, why, len);
}

static tc_status_t pipe_wait(void *ctx, int slot, int to_device, char *why, size_t len)
{
    return tc__cuda_pipe_wait(*(const int *)ctx, slot, to_device, why, len);
}

/* The reason of a chunk whose host record h failed. */
static void chunk_failed(const tc_algo_ctx_t *x, const tc_algo_t *h, size_t off, char *why,
                         size_t len)
{
    snprintf(why, len, "%s (%s, the chunk at byte %zu)", tc__algo_err(x, h), h->name, off);
}

/* Runs r through fn over tcoll's copy streams for dev (j's device). */
static tc_status_t run(const tc_algo_ctx_t *x, tc_device_job_t *d, tc_stage_run_t *r,
                       tc_stage_chunk_fn fn, void *arg)
{
    tc_stage_copier_t cp = {&d->device, pipe_copy, pipe_wait};
    tc_status_t st = slots(x->exec, r, d->device, d->why, sizeof(d->why));

    return st != TC_OK ? st : tc__stage_pipeline(&cp, r, fn, arg, d->why, sizeof(d->why));
}

typedef struct {
    const tc_algo_ctx_t *x;
    const tc_allreduce_job_t *j;
} ar_arg_t;

/* One chunk of an allreduce, in place in the slot: what the kind's run
 * does for a host tensor (algo_allreduce.c). */
static tc_status_t ar_chunk(void *arg, void *slot, size_t off, size_t bytes, char *why, size_t len)
{
    const ar_arg_t *a = arg;
    const tc_allreduce_job_t *j = a->j;
    size_t n = bytes / tc_dtype_size(j->dtype);
    tc_algo_call_t c = {TC_KIND_ALLREDUCE, j->dtype, j->op, bytes, TC_MEM_HOST, 0};
    const tc_algo_t *h = tc__algo_pick(j->dev->kind, a->x, &c);
    tc_allreduce_job_t hj = {NULL, slot, n, j->dtype, j->op, NULL};
    tc_status_t st;

    if (j->dev->prescale != 1.0) {
        tc__scale(j->dtype, slot, slot, n, j->dev->prescale);
    }
    if ((st = h->run.allreduce(a->x, &hj)) != TC_OK) {
        chunk_failed(a->x, h, off, why, len);
        return st;
    }
    if (j->dev->postscale != 1.0) {
        tc__scale(j->dtype, slot, slot, n, j->dev->postscale);
    }
    return TC_OK;
}

tc_status_t tc__device_pipe_allreduce(const tc_algo_ctx_t *x, const tc_allreduce_job_t *j)
{
    size_t es = tc_dtype_size(j->dtype);
    tc_stage_run_t r = {
        j->src != NULL ? j->src : j->buf, j->buf, j->count * es, chunk_of(x, es), {NULL}};
    ar_arg_t a = {x, j};

    return run(x, j->dev, &r, ar_chunk, &a);
}

typedef struct {
    const tc_algo_ctx_t *x;
    const tc_broadcast_job_t *j;
} bc_arg_t;

static tc_status_t bc_chunk(void *arg, void *slot, size_t off, size_t bytes, char *why, size_t len)
{
    const bc_arg_t *a = arg;
    tc_algo_call_t c = {TC_KIND_BROADCAST, TC_UINT8, TC_SUM, bytes, TC_MEM_HOST, 0};
    const tc_algo_t *h = tc__algo_pick(a->j->dev->kind, a->x, &c);
    tc_broadcast_job_t hj = {slot, bytes, a->j->root, NULL};
    tc_status_t st;

    if ((st = h->run.broadcast(a->x, &hj)) != TC_OK) {
        chunk_failed(a->x, h, off, why, len);
    }
    return st;
}

tc_status_t tc__device_pipe_broadcast(const tc_algo_ctx_t *x, const tc_broadcast_job_t *j)
{
    int root = x->tp->rank == j->root;
    /* the root sends and keeps its buffer; the others only receive */
    tc_stage_run_t r = {
        root ? j->buf : NULL, root ? NULL : j->buf, j->bytes, chunk_of(x, 1), {NULL}};
    bc_arg_t a = {x, j};

    return run(x, j->dev, &r, bc_chunk, &a);
}
