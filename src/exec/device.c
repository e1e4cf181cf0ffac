/*
 * device.c - how a device tensor runs (algo.h, docs/gpu.md "Data paths"):
 * the first record of its kind that handles device memory and applies
 * (today allreduce's in-node record, device_node.c), after this rank's
 * input is complete (the submission's mark); else, or where that record
 * declines, staged through host memory (staged.c).
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "exec/algo.h"
#include "exec/exec.h"

tc_status_t tc__exec_device(tc_kind_run_t run, const tc_algo_ctx_t *x, tc_request_t *req,
                            const tc_wire_response_t *r, char *msg, size_t len)
{
    /* not while ranks have joined: they run a host request */
    if (req->kind == TC_KIND_ALLREDUCE && !r->has_desc) {
        tc_algo_call_t c = {
            req->kind, req->dtype, req->op, req->count * tc_dtype_size(req->dtype), TC_MEM_CUDA, 0};
        const tc_algo_t *a = tc__algo_pick(&tc__exec_allreduce, x, &c);
        if (a != NULL) {
            tc_device_job_t d = {req->cuda.dev, req->prescale, req->postscale, 0, ""};
            tc_allreduce_job_t j = {req->send == req->recv ? NULL : req->send,
                                    req->recv,
                                    req->count,
                                    req->dtype,
                                    req->op,
                                    &d};
            /* this rank's input complete: what the stream had queued */
            tc_status_t st = tc__cuda_to_host(req->cuda.dev, NULL, NULL, 0, req->cuda.mark, d.why,
                                              sizeof(d.why));
            tc__cuda_mark_release(req->cuda.mark);
            req->cuda.mark = NULL;
            if (st != TC_OK) {
                return tc__algo_failed(req, st, d.why, msg, len);
            }
            req->algo = a;
            st = a->run.allreduce(x, &j);
            if (st != TC_OK) {
                return tc__algo_failed(req, st, d.why[0] ? d.why : tc__algo_err(x, a), msg, len);
            }
            if (!d.declined) {
                tc__request_set_output(req, req->recv, -1);
                return TC_OK;
            }
            req->algo = NULL;
        }
    }
    return tc__exec_staged(run, x, req, r, msg, len);
}
