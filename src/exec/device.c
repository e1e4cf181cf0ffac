/*
 * device.c - how a device tensor runs (algo.h, docs/gpu.md "Data paths"):
 * the records of its kind that handle device memory and apply, in order
 * (the in-node ones over CUDA IPC of every kind that moves data,
 * device_node.c; then allreduce's and broadcast's chunked staging,
 * device_pipe.c), after this rank's input is complete (the submission's
 * mark); a record that declines hands over to the next; after the last,
 * or where none applies, staged through host memory whole (staged.c).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/algo.h"
#include "exec/exec.h"

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

/* An allgather's layout (tc__allgather_layout) or an alltoall's plan, for
 * their device records. */
typedef struct {
    size_t *bytes, *displs; /* [set size] each, one allocation */
    size_t total;
    int64_t rows;
    tc_alltoall_plan_t a2a;
} layout_t;

/* Runs record a of req's kind, the output in place or in device memory
 * allocated here; sets the output unless a declined (the allocation given
 * back then). A rank whose output cannot be allocated runs the record all
 * the same, without an output: it declines, and so does every rank. */
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
        (void)tc__cuda_alloc(d->device, lay->total, &j.buf, d->why, sizeof(d->why));
        st = a->run.allgather(x, &j);
        out = j.buf;
        rows = lay->rows;
        break;
    }
    case TC_KIND_ALLTOALL: {
        const tc_alltoall_plan_t *p = &lay->a2a;
        tc_alltoall_job_t j = {req->send, NULL, p->sb, p->sd, p->rb, p->rd, p->matrix, p->row, d};
        (void)tc__cuda_alloc(d->device, p->total, &j.out, d->why, sizeof(d->why));
        st = a->run.alltoall(x, &j);
        out = j.out;
        rows = p->rows;
        break;
    }
    default: { /* TC_KIND_REDUCESCATTER */
        tc_reducescatter_job_t j = {
            req->send, NULL, (size_t)req->shape[0], tc__algo_row_elems(req), req->dtype,
            req->op,   d};
        tc__reducescatter_block(x, req, &off, &elems, &rows);
        (void)tc__cuda_alloc(d->device, elems * es, &j.out, d->why, sizeof(d->why));
        st = a->run.reducescatter(x, &j);
        out = j.out;
        break;
    }
    }
    if (out != req->recv && (st != TC_OK || d->declined)) { /* tc__cuda_free takes NULL */
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

/* Before the records of req's kind are tried: an allgather's layout (the
 * selector reads the output's size); an alltoall's plan (the selector reads
 * the largest input of any rank, which only every rank's row counts tell:
 * exchanged only where a record could apply, which every rank decides
 * alike; if none can, *c_kind is set NULL). */
static tc_status_t prepare(const tc_algo_ctx_t *x, tc_request_t *req, const tc_wire_response_t *r,
                           tc_algo_call_t *c, const tc_kind_exec_t **c_kind, layout_t *lay,
                           char *msg, size_t len)
{
    tc_algo_call_t any = *c;
    size_t from = 0;
    tc_status_t st;

    if (req->kind == TC_KIND_ALLGATHER) {
        if ((lay->bytes = malloc(2 * (size_t)x->tp->size * sizeof(size_t))) == NULL) {
            snprintf(msg, len, "tensor '%s': out of memory", req->name);
            return TC_ERR_NOMEM;
        }
        lay->displs = lay->bytes + x->tp->size;
        st = tc__allgather_layout(x, req, r, lay->bytes, lay->displs, &lay->total, &lay->rows, msg,
                                  len);
        c->bytes = lay->total;
        return st;
    }
    if (req->kind != TC_KIND_ALLTOALL) {
        return TC_OK;
    }
    any.bytes = SIZE_MAX;
    if (next_record(*c_kind, x, &any, &from) == NULL) {
        *c_kind = NULL;
        return TC_OK;
    }
    if ((st = tc__alltoall_plan(x, req, &lay->a2a, msg, len)) == TC_OK) {
        c->bytes = lay->a2a.most;
    }
    return st;
}

/* What prepare made; an alltoall's output splits stay with req once a
 * record ran it (done), else they go too (the kind's run makes its own). */
static void unprepare(tc_request_t *req, layout_t *lay, int done)
{
    free(lay->bytes);
    if (lay->a2a.matrix != NULL) {
        tc__alltoall_plan_free(done ? NULL : req, &lay->a2a);
    }
}

tc_status_t tc__exec_device(tc_kind_run_t run, const tc_algo_ctx_t *x, tc_request_t *req,
                            const tc_wire_response_t *r, char *msg, size_t len)
{
    size_t from = 0;
    tc_algo_call_t c = {req->kind,   req->dtype, req->op, req->count * tc_dtype_size(req->dtype),
                        TC_MEM_CUDA, 0};
    tc_device_job_t d = {
        req->cuda.dev, tc__kind_exec(req->kind), req->prescale, req->postscale, 0, 0, ""};
    layout_t lay;
    const tc_algo_t *a;
    tc_status_t st = TC_OK;

    memset(&lay, 0, sizeof(lay));
    /* the tensor's device current on the engine thread before CUDA is asked
     * anything (the input's event, registering staging memory): else the
     * runtime would start device 0's context in every process */
    if ((st = tc__cuda_set_current(req->cuda.dev, d.why, sizeof(d.why))) != TC_OK) {
        return tc__algo_failed(req, st, d.why, msg, len);
    }
    /* not while ranks have joined: they run a host request */
    if (r->has_desc) {
        d.kind = NULL;
    } else if ((st = prepare(x, req, r, &c, &d.kind, &lay, msg, len)) != TC_OK) {
        unprepare(req, &lay, 0);
        return st;
    }
    while (d.kind != NULL && (a = next_record(d.kind, x, &c, &from)) != NULL) {
        if (req->cuda.mark != NULL &&
            (st = tc__exec_wait_mark(x, req, d.why, sizeof(d.why))) != TC_OK) {
            unprepare(req, &lay, 1);
            return tc__algo_failed(req, st, d.why, msg, len);
        }
        req->algo = a;
        d.declined = 0;
        d.why[0] = '\0';
        st = run_record(x, a, req, r, &lay, &d);
        if (st != TC_OK || !d.declined) {
            unprepare(req, &lay, 1);
            req->cuda.failed_alone = st != TC_OK && d.agreed;
            return st != TC_OK
                       ? tc__algo_failed(req, st, d.why[0] ? d.why : tc__algo_err(x, a), msg, len)
                       : TC_OK;
        }
        req->algo = NULL;
    }
    unprepare(req, &lay, 0);
    return tc__exec_staged(run, x, req, r, msg, len);
}
