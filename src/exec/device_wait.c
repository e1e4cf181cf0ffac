/*
 * device_wait.c - how the engine thread waits for a device tensor's input
 * (algo.h, tc__exec_wait_mark): the event the submission recorded on the
 * caller's stream is polled, backing off, under the set's wait policy, so
 * that the engine keeps answering the other ranks while the GPU works
 * through what was queued before the collective (docs/gpu.md, "Ordering").
 */
#define _GNU_SOURCE
#include "exec/algo.h"
#include "exec/exec.h"

tc_status_t tc__exec_wait_mark(const tc_algo_ctx_t *x, tc_request_t *req, char *why, size_t len)
{
    tc_waiter_t w;
    tc_status_t st;
    int done = 0;

    tc__waiter_start(&w, &x->tp->wait);
    while ((st = tc__cuda_mark_query(req->cuda.mark, &done, why, len)) == TC_OK && !done) {
        /* the set's wait policy: back off, and about once a millisecond
         * answer the engine's hooks (liveness probes, other ranks' aborts);
         * its lost-peer timeout means nothing here (no peer is waited for) */
        if (tc__waiter_idle(&w, why, len) < 0) {
            st = TC_ERR_TRANSPORT;
            break;
        }
    }
    /* done (or given up): the work it marks is over, nothing waits on it again */
    tc__cuda_mark_release(req->cuda.mark);
    req->cuda.mark = NULL;
    return st;
}
