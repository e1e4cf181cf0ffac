/*
 * staged.c - device tensors run through host memory: the record every kind
 * has for CUDA memory today (docs/gpu.md, "Data paths").
 *
 * The engine thread copies the input from the device into a page-locked
 * staging buffer (memory the node's ranks can map, registered with CUDA) (after the event the submission recorded on the caller's
 * stream: what the stream had queued by then), runs the kind's own run over
 * the staging buffers (the host records: the same selector, the same
 * reduction order, the same bits as a host tensor), and copies the result
 * to the device: into recv, into the buffer (broadcast), or into device
 * memory tcoll allocates for the kinds whose output it allocates. The
 * request completes after the copy back is done (cuda.h: the engine thread
 * sleeps on an event), so after tc_wait the result is in place for the host
 * and for every stream. Where that last copy (or the output's allocation)
 * fails, the collective is already over on every rank: only this rank's
 * request fails, and the engine goes on.
 *
 * A rank that joined takes part with a host request of the op's identity
 * (exec.c), which fits: on every rank the data moves between host buffers.
 * Device tensors never fuse (exec.c) and never take the small-message path
 * (fast.c) or ride eagerly (the negotiation knows their memory).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/algo.h"
#include "exec/exec.h"
#include "util/log.h"

void *tc__exec_stage_reserve(tc_stage_buf_t *b, size_t bytes)
{
    void *dev;
    char why[256];

    if (b->mem.data != NULL && bytes <= b->mem.cap) {
        return b->mem.data;
    }
    tc__exec_stage_release(b);
    if (tc__scratch_reserve_shared(&b->mem, bytes > 0 ? bytes : 1) != TC_OK) {
        return NULL;
    }
    b->registered = tc__cuda_host_map(-1, b->mem.data, b->mem.cap, &dev, why, sizeof(why)) == TC_OK;
    if (!b->registered) {
        TC_DEBUG("cuda", "staging %zu bytes through pageable memory (%s)", b->mem.cap, why);
    }
    return b->mem.data;
}

void tc__exec_stage_release(tc_stage_buf_t *b)
{
    if (b->registered) {
        tc__cuda_host_unmap(b->mem.data);
    }
    b->registered = 0;
    tc__scratch_free(&b->mem);
}

void tc__exec_stage_free(tc_exec_t *e)
{
    tc__exec_stage_release(&e->run.stage);
    tc__exec_stage_release(&e->run.pipe);
}

static size_t out_bytes(const tc_request_t *req)
{
    size_t n = tc_dtype_size(req->output.dtype);
    int d;

    for (d = 0; d < req->output.ndim; d++) {
        n *= (size_t)req->output.shape[d];
    }
    return n;
}

/* Moves the host output of a kind whose output tcoll allocates to device
 * memory of its own, and gives the host buffer back. */
static tc_status_t output_to_device(tc_request_t *req, char *why, size_t len)
{
    size_t bytes = out_bytes(req);
    void *d = NULL;
    tc_status_t st = tc__cuda_alloc(req->cuda.dev, bytes, &d, why, len);

    if (st != TC_OK) {
        return st;
    }
    st = tc__cuda_to_device(req->cuda.dev, d, req->output.data, bytes, why, len);
    if (st != TC_OK) {
        tc__cuda_free(req->cuda.dev, d);
        return st;
    }
    tc__output_release(req->owned_output, req->owned_cap);
    req->owned_output = NULL;
    req->owned_cap = 0;
    req->cuda.output = d;
    req->output.data = d;
    return TC_OK;
}

tc_status_t tc__exec_staged(tc_kind_run_t run, const tc_algo_ctx_t *x, tc_request_t *req,
                            const tc_wire_response_t *r, char *msg, size_t len)
{
    const tc_kind_desc_t *kd = tc__kind_of(req);
    size_t bytes = req->count * tc_dtype_size(req->dtype);
    int apart = kd->output == TC_OUT_RECV && req->recv != req->send; /* recv its own buffer */
    int reads = !(kd->params & TC_PARAM_ROOT) || x->tp->rank == req->root_index;
    const void *dsend = req->send;
    void *drecv = req->recv, *h;
    char why[256];
    tc_status_t st;

    if (!x->exec->run.stage_said) { /* once per process: which path device tensors take */
        x->exec->run.stage_said = 1;
        TC_INFO("cuda",
                "device tensors run staged through page-locked host memory (device %d: "
                "first tensor '%s')",
                req->cuda.dev, req->name);
    }
    /* the device current before CUDA is asked anything (registering the
     * staging buffer): else the runtime would start device 0's context;
     * then the input's stream waited for, the engine's hooks answered */
    if ((st = tc__cuda_set_current(req->cuda.dev, why, sizeof(why))) != TC_OK ||
        (st = tc__exec_wait_mark(x, req, why, sizeof(why))) != TC_OK) {
        tc__cuda_mark_release(req->cuda.mark); /* NULL after the wait */
        req->cuda.mark = NULL;
        return tc__algo_failed(req, st, why, msg, len);
    }
    if ((h = tc__exec_stage_reserve(&x->exec->run.stage, apart ? 2 * bytes : bytes)) == NULL) {
        return tc__algo_failed(req, TC_ERR_NOMEM, "out of memory for the staging buffer", msg, len);
    }
    /* a broadcast's receivers read nothing (they waited for their stream
     * above: the copy back does not overtake the work queued on it) */
    if (reads &&
        (st = tc__cuda_to_host(req->cuda.dev, h, dsend, bytes, NULL, why, sizeof(why))) != TC_OK) {
        return tc__algo_failed(req, st, why, msg, len);
    }
    req->send = h;
    req->recv = kd->output == TC_OUT_RECV       ? (apart ? (char *)h + bytes : h)
                : kd->output == TC_OUT_IN_PLACE ? h
                                                : NULL;
    st = run(x, req, r, msg, len);
    if (st == TC_OK) {
        switch (kd->output) {
        case TC_OUT_RECV:
        case TC_OUT_IN_PLACE:
            st = tc__cuda_to_device(req->cuda.dev, drecv, req->recv, bytes, why, sizeof(why));
            req->output.data = drecv;
            break;
        case TC_OUT_GATHERED:
        case TC_OUT_ALLOCATED: st = output_to_device(req, why, sizeof(why)); break;
        case TC_OUT_NONE: break;
        }
        if (st != TC_OK) { /* the collective is over on every rank: only this
                            * rank's tensor fails, the engine goes on */
            tc__algo_failed(req, st, why, msg, len);
            req->cuda.failed_alone = 1;
        }
    }
    req->send = dsend;
    req->recv = drecv;
    return st;
}
