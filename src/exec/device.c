/*
 * device.c - how a device tensor runs (algo.h, docs/gpu.md "Data paths"):
 * the records of its kind that handle device memory and apply, in order
 * (allreduce's and broadcast's: the in-node one over CUDA IPC,
 * device_node.c, then the chunked staging, device_pipe.c), after this
 * rank's input is complete (the submission's mark); a record that declines
 * hands over to the next; after the last, or for the other kinds, staged
 * through host memory whole (staged.c).
 */
#define _GNU_SOURCE
#include <stdio.h>

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

tc_status_t tc__exec_device(tc_kind_run_t run, const tc_algo_ctx_t *x, tc_request_t *req,
                            const tc_wire_response_t *r, char *msg, size_t len)
{
    size_t bytes = req->count * tc_dtype_size(req->dtype), from = 0;
    tc_algo_call_t c = {req->kind, req->dtype, req->op, bytes, TC_MEM_CUDA, 0};
    tc_device_job_t d = {req->cuda.dev, NULL, req->prescale, req->postscale, 0, ""};
    const tc_kind_exec_t *k = NULL;
    const tc_algo_t *a;
    tc_status_t st;

    /* not while ranks have joined: they run a host request */
    if (!r->has_desc && req->kind == TC_KIND_ALLREDUCE) {
        k = &tc__exec_allreduce;
    } else if (!r->has_desc && req->kind == TC_KIND_BROADCAST) {
        k = &tc__exec_broadcast;
    }
    while (k != NULL && (a = next_record(k, x, &c, &from)) != NULL) {
        if (req->cuda.mark != NULL && (st = wait_input(req, &d)) != TC_OK) {
            return tc__algo_failed(req, st, d.why, msg, len);
        }
        req->algo = a;
        d.kind = k;
        d.declined = 0;
        d.why[0] = '\0';
        if (req->kind == TC_KIND_ALLREDUCE) {
            tc_allreduce_job_t j = {req->send == req->recv ? NULL : req->send,
                                    req->recv,
                                    req->count,
                                    req->dtype,
                                    req->op,
                                    &d};
            st = a->run.allreduce(x, &j);
        } else {
            tc_broadcast_job_t j = {req->recv, bytes, req->root_index, &d};
            st = a->run.broadcast(x, &j);
        }
        if (st != TC_OK) {
            return tc__algo_failed(req, st, d.why[0] ? d.why : tc__algo_err(x, a), msg, len);
        }
        if (!d.declined) {
            tc__request_set_output(req, req->recv, -1);
            return TC_OK;
        }
        req->algo = NULL;
    }
    return tc__exec_staged(run, x, req, r, msg, len);
}
