/*
 * device.c - how a device tensor runs (algo.h, docs/gpu.md "Data paths"):
 * the records of its kind that handle device memory and apply, in order
 * (the in-node ones over CUDA IPC of allreduce, broadcast, allgather and
 * reducescatter, device_node.c; then allreduce's and broadcast's chunked
 * staging, device_pipe.c), after this
 * rank's input is complete (the submission's mark); a record that declines
 * hands over to the next; after the last, or for the other kinds, staged
 * through host memory whole (staged.c).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "exec/algo.h"
#include "exec/exec.h"

/* Waits for this rank's input (what the submission's stream had queued). */
static tc_status_t wait_input(tc_request_t *req, tc_device_job_t *d)
{
    tc_status_t st =
        tc__cuda_to_host(req->cuda.dev, NULL, NULL, 0, req->cuda.mark, d->why, sizeof(d->why));
    tc__cuda_mark_release(req->cuda.mark);
    req->cuda.mark = NULL;
    return st;
}

/* The first record of k after index *from that handles device memory and
 * applies to c (*from moves past it); NULL when none is left. */
static const tc_algo_t *next_record(const tc_kind_exec_t *k, const tc_algo_ctx_t *x,
                                    const tc_algo_call_t *c, size_t *from)
{
    while (*from < k->nalgos) {
        const tc_algo_t *a = k->algos[(*from)++];
        if ((a->memory & TC_MEM_CUDA) && (a->applies == NULL || a->applies(x, c))) {
            return a;
        }
    }
    return NULL;
}

/* An allgather's layout (tc__allgather_layout), for its device records. */
typedef struct {
    size_t *bytes, *displs; /* [set size] each, one allocation */
    size_t total;
    int64_t rows;
} layout_t;

/* Runs record a of req's kind (every kind with device records: allreduce,
 * broadcast, allgather, reducescatter), the output in place or in device
 * memory allocated here; sets the output unless a declined (the
 * allocation given back then). */
static tc_status_t run_record(const tc_algo_ctx_t *x, const tc_algo_t *a, tc_request_t *req,
                              const tc_wire_response_t *r, const layout_t *lay, tc_device_job_t *d)
{
    size_t es = tc_dtype_size(req->dtype), off = 0, elems = 0;
    int64_t rows = -1;
    void *out = NULL;
    tc_status_t st;

    switch (req->kind) {
    case TC_KIND_ALLREDUCE: {
        tc_allreduce_job_t j = {req->send == req->recv ? NULL : req->send,
                                req->recv,
                                req->count,
                                req->dtype,
                                req->op,
                                d};
        st = a->run.allreduce(x, &j);
        out = req->recv;
        break;
    }
    case TC_KIND_BROADCAST: {
        tc_broadcast_job_t j = {req->recv, req->count * es, req->root_index, d};
        st = a->run.broadcast(x, &j);
        out = req->recv;
        break;
    }
    case TC_KIND_ALLGATHER: {
        tc_allgather_job_t j = {NULL, lay->bytes, lay->displs, req->send, d};
        if ((st = tc__cuda_alloc(d->device, lay->total, &j.buf, d->why, sizeof(d->why))) == TC_OK) {
            st = a->run.allgather(x, &j);
        }
        out = j.buf;
        rows = lay->rows;
        break;
    }
    default: { /* TC_KIND_REDUCESCATTER */
        tc_reducescatter_job_t j = {
            req->send, NULL, (size_t)req->shape[0], tc__algo_row_elems(req), req->dtype,
            req->op,   d};
        tc__reducescatter_block(x, req, &off, &elems, &rows);
        if ((st = tc__cuda_alloc(d->device, elems * es, &j.out, d->why, sizeof(d->why))) == TC_OK) {
            st = a->run.reducescatter(x, &j);
        }
        out = j.out;
        break;
    }
    }
    if (out != req->recv && (st != TC_OK || d->declined)) {
        tc__cuda_free(d->device, out);
    } else if (st == TC_OK && !d->declined) {
        if (out != req->recv) {
            req->cuda.output = out;
        }
        if (req->kind == TC_KIND_ALLGATHER) {
            tc__allgather_output(req, r, x->tp->size, out, rows);
        } else {
            tc__request_set_output(req, out, rows);
        }
    }
    return st;
}

tc_status_t tc__exec_device(tc_kind_run_t run, const tc_algo_ctx_t *x, tc_request_t *req,
                            const tc_wire_response_t *r, char *msg, size_t len)
{
    size_t from = 0;
    tc_algo_call_t c = {req->kind,   req->dtype, req->op, req->count * tc_dtype_size(req->dtype),
                        TC_MEM_CUDA, 0};
    tc_device_job_t d = {
        req->cuda.dev, tc__kind_exec(req->kind), req->prescale, req->postscale, 0, ""};
    layout_t lay = {NULL, NULL, 0, 0};
    const tc_algo_t *a;
    tc_status_t st;

    /* not while ranks have joined: they run a host request */
    if (r->has_desc) {
        d.kind = NULL;
    } else if (req->kind == TC_KIND_ALLGATHER) { /* the selector reads the output's size */
        if ((lay.bytes = malloc(2 * (size_t)x->tp->size * sizeof(size_t))) == NULL) {
            snprintf(msg, len, "tensor '%s': out of memory", req->name);
            return TC_ERR_NOMEM;
        }
        lay.displs = lay.bytes + x->tp->size;
        st =
            tc__allgather_layout(x, req, r, lay.bytes, lay.displs, &lay.total, &lay.rows, msg, len);
        if (st != TC_OK) {
            free(lay.bytes);
            return st;
        }
        c.bytes = lay.total;
    }
    while (d.kind != NULL && (a = next_record(d.kind, x, &c, &from)) != NULL) {
        if (req->cuda.mark != NULL && (st = wait_input(req, &d)) != TC_OK) {
            free(lay.bytes);
            return tc__algo_failed(req, st, d.why, msg, len);
        }
        req->algo = a;
        d.declined = 0;
        d.why[0] = '\0';
        st = run_record(x, a, req, r, &lay, &d);
        if (st != TC_OK) {
            free(lay.bytes);
            return tc__algo_failed(req, st, d.why[0] ? d.why : tc__algo_err(x, a), msg, len);
        }
        if (!d.declined) {
            free(lay.bytes);
            return TC_OK;
        }
        req->algo = NULL;
    }
    free(lay.bytes);
    return tc__exec_staged(run, x, req, r, msg, len);
}
