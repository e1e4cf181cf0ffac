/*
 * device.c - how a device tensor runs (algo.h, docs/gpu.md "Data paths"):
 * the first record of its kind that handles device memory and applies
 * (today allreduce's and broadcast's in-node records, device_node.c), after this rank's
 * input is complete (the submission's mark); else, or where that record
 * declines, staged through host memory (staged.c).
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

tc_status_t tc__exec_device(tc_kind_run_t run, const tc_algo_ctx_t *x, tc_request_t *req,
                            const tc_wire_response_t *r, char *msg, size_t len)
{
    size_t bytes = req->count * tc_dtype_size(req->dtype);
    tc_algo_call_t c = {req->kind, req->dtype, req->op, bytes, TC_MEM_CUDA, 0};
    tc_device_job_t d = {req->cuda.dev, req->prescale, req->postscale, 0, ""};
    const tc_algo_t *a = NULL;
    tc_status_t st;

    /* not while ranks have joined: they run a host request */
    if (!r->has_desc && req->kind == TC_KIND_ALLREDUCE) {
        a = tc__algo_pick(&tc__exec_allreduce, x, &c);
    } else if (!r->has_desc && req->kind == TC_KIND_BROADCAST) {
        a = tc__algo_pick(&tc__exec_broadcast, x, &c);
    }
    if (a != NULL) {
        if ((st = wait_input(req, &d)) != TC_OK) {
            return tc__algo_failed(req, st, d.why, msg, len);
        }
        req->algo = a;
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
