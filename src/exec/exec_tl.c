/*
 * exec_tl.c - what ran, on this rank's timeline (util/timeline.h): per
 * tensor, its negotiation, its wait in the queue and what ran; fusion
 * groups and their copies (the negotiation's marks are the engine's,
 * engine/engine_tl.c).
 *
 * Called from the engine thread only (tc__exec_tl_fast also from the
 * thread that completes a small-message call: fast.c), and only while a
 * timeline runs (tc__tl_active()): the callers test that first, so that
 * nothing is built for the timeline when none runs. Recording never blocks.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "exec/algo.h"
#include "exec/exec.h"
#include "kind/kind.h"
#include "util/backoff.h"
#include "util/timeline.h"

/* A tensor's row: its negotiation (submission to the cycle that made it
 * ready everywhere), its wait, then what ran, from t0 to t1. */
void tc__exec_tl_tensor(const tc_exec_t *e, const tc_request_t *req, const char *algo, uint64_t t0,
                        uint64_t t1, int fused, tc_status_t st)
{
    tc_tl_args_t a = TC_TL_ARGS_INIT;
    int track = tc__tl_track(req->name, req->name_len);
    const tc_kind_desc_t *kd = tc__kind_of(req);
    const uint64_t ready = e->run.ready_ns;

    if (track < 0) {
        return;
    }
    a.kind = kd->name;
    a.dtype = req->dtype;
    a.bytes = (int64_t)(req->count * tc_dtype_size(req->dtype));
    a.cycle = (int64_t)e->run.cycle;
    if (kd->params & TC_PARAM_OP) {
        a.op = req->op;
    }
    if (kd->params & TC_PARAM_ROOT) {
        a.root = req->root;
    }
    if (ready > req->submit_ns) {
        tc__tl_complete(track, "NEGOTIATE", 9, "negotiation", req->submit_ns,
                        ready - req->submit_ns, &a);
    }
    if (t0 > ready) {
        tc__tl_complete(track, "QUEUE", 5, "negotiation", ready, t0 - ready, NULL);
    }
    a.algo = algo;
    a.status = st;
    a.fused = fused > 1 ? fused : -1;
    tc__tl_complete(track, kd->upper, strlen(kd->upper), "collective", t0, t1 > t0 ? t1 - t0 : 0,
                    &a);
}

/* A small-message call (fast.c): NEGOTIATE from its submission until every
 * rank's input was there (t0), then the reduction (t0..t1) as the
 * collective, with the algorithm "shm, fast" and, as its cycle, its use of
 * the name (it runs in no cycle). Any thread. */
void tc__exec_tl_fast(const tc_request_t *req, uint64_t t0, uint64_t t1, tc_status_t st)
{
    tc_tl_args_t a = TC_TL_ARGS_INIT;
    int track = tc__tl_track(req->name, req->name_len);
    const tc_kind_desc_t *kd = tc__kind_of(req);

    if (track < 0) {
        return;
    }
    a.kind = kd->name;
    a.dtype = req->dtype;
    a.bytes = (int64_t)(req->count * tc_dtype_size(req->dtype));
    a.cycle = (int64_t)req->fast_use;
    a.op = req->op;
    if (t0 > req->submit_ns) {
        tc__tl_complete(track, "NEGOTIATE", 9, "negotiation", req->submit_ns, t0 - req->submit_ns,
                        &a);
    }
    a.algo = TC_ALGO_FAST_NAME;
    a.status = st;
    tc__tl_complete(track, kd->upper, strlen(kd->upper), "collective", t0, t1 > t0 ? t1 - t0 : 0,
                    &a);
}

/* A fusion group's slice on the collectives row. */
void tc__exec_tl_fused(const tc_exec_t *e, tc_request_t *const *reqs, uint32_t n, const char *algo,
                       size_t bytes, uint64_t t0, uint64_t t1, tc_status_t st)
{
    char label[TC_TL_NAME_MAX];
    int len = snprintf(label, sizeof(label), "fused(%u) %s, ...", n, reqs[0]->name);
    tc_tl_args_t a = TC_TL_ARGS_INIT;

    a.kind = tc__kind_of(reqs[0])->name;
    a.algo = algo;
    a.bytes = (int64_t)bytes;
    a.fused = (int32_t)n;
    a.cycle = (int64_t)e->run.cycle;
    a.status = st;
    tc__tl_complete(TC_TL_TRACK_COLLECTIVES, label,
                    len < (int)sizeof(label) ? (size_t)len : sizeof(label) - 1, "collective", t0,
                    t1 - t0, &a);
}

/* A copy into or out of the fusion buffer, from t0 to now. what: a literal. */
void tc__exec_tl_copy(const char *what, size_t bytes, uint32_t n, uint64_t t0)
{
    tc_tl_args_t a = TC_TL_ARGS_INIT;

    a.bytes = (int64_t)bytes;
    a.fused = (int32_t)n;
    tc__tl_complete(TC_TL_TRACK_COLLECTIVES, what, strlen(what), "fusion", t0, tc__now_ns() - t0,
                    &a);
}
