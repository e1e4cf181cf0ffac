/*
 * exec.c - running what every rank agreed on, in the agreed order.
 *
 * The negotiation hands over a list of responses with this rank's request
 * for each; every rank gets the same list. An ERROR fails its request; a RUN
 * runs through its kind's run, which asks the selector for an algorithm
 * record (algo.h). Consecutive small requests of a fusable kind (kind.h),
 * with one dtype and op, are fused: packed into one persistent buffer, run
 * as one collective by the record the selector picks for the group's
 * total, unpacked. The grouping
 * depends only on what every rank agreed on (order, kind, dtype, op, count)
 * and on knobs that must be equal on every rank, so all ranks form the same
 * groups. A failed collective stops the engine: the others cannot go on
 * without this rank; except a device tensor's failure that every rank of
 * its set knew of alike, or that came after the collective was over
 * (request.h, cuda.failed_alone): only that tensor fails. Must never touch
 * a request after completing it.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/algo.h"
#include "exec/exec.h"
#include "kind/kind.h"
#include "reduce/reduce.h"
#include "util/backoff.h"
#include "util/log.h"
#include "util/timeline.h"

/* What a request of process set pset runs with: the set's data transport,
 * and the node's segment and the hierarchical allreduce where the set may
 * use them (shm.c); the records decide which they take. */
static tc_algo_ctx_t algo_ctx(tc_exec_t *e, uint32_t pset)
{
    tc_algo_ctx_t x = {tc__pset_transport(e, pset),
                       (size_t)e->cfg->ring_chunk_kb * 1024,
                       &e->run.scratch,
                       e,
                       tc__shm_for(e, pset),
                       tc__hier_for(e, pset),
                       e->cfg->deterministic,
                       tc__pset_node_table(e, pset),
                       0,
                       (size_t)e->cfg->cuda_stage_chunk_kb * 1024,
                       e->mpi.cuda_aware ? tc__pset_mpi_transport(e, pset) : NULL};
    if (e->cfg->cuda_ipc) {
        x.cuda_ipc_bytes = e->cfg->cuda_ipc_min_kb > 0 ? (size_t)e->cfg->cuda_ipc_min_kb * 1024 : 1;
    }
    return x;
}

/* Whether the response for req may join a fusion group: a small tensor of a
 * kind that can run packed. */
static int fusable(const tc_exec_t *e, const tc_request_t *req, const tc_wire_response_t *r)
{
    return r->rtype == TC_WIRE_RUN && req != NULL && !req->cuda.on && tc__kind_of(req)->fusable &&
           req->count > 0 &&
           req->count * tc_dtype_size(req->dtype) <= (size_t)e->cfg->fusion_threshold_kb * 1024;
}

/* Runs reqs[0..n-1] (small tensors of one fusable kind, dtype and op) as
 * one collective over the fusion buffer: pack, run, unpack. The record that
 * ran it in *algo_p. */
static tc_status_t run_fused(tc_exec_t *e, tc_request_t **reqs, uint32_t n, size_t total,
                             const tc_algo_t **algo_p, char *msg, size_t msglen)
{
    const tc_kind_desc_t *kd = tc__kind_of(reqs[0]);
    tc_algo_ctx_t x = algo_ctx(e, reqs[0]->pset);
    tc_algo_call_t c = {reqs[0]->kind, reqs[0]->dtype, reqs[0]->op, total, TC_MEM_HOST, 1};
    const tc_algo_t *a = tc__algo_select(&x, &c);
    size_t es = tc_dtype_size(reqs[0]->dtype), off = 0;
    uint64_t t0;
    char *buf;
    tc_status_t st;
    uint32_t k;

    st = tc__scratch_reserve_shared(&e->run.fusion, total); /* the peers map it (cma, mapped) */
    if (st != TC_OK) {
        snprintf(msg, msglen, "out of memory for a %zu-byte fusion buffer", total);
        return st;
    }
    TC_DEBUG("engine", "fused %u tensors (%s, %zu bytes), first '%s'", n, kd->name, total,
             reqs[0]->name);
    buf = e->run.fusion.data;
    t0 = tc__tl_active() ? tc__now_ns() : 0;
    for (k = 0; k < n; k++) { /* each input times its prescale (algo.h) */
        if (reqs[k]->prescale != 1.0) {
            tc__scale(reqs[k]->dtype, buf + off, reqs[k]->send, reqs[k]->count, reqs[k]->prescale);
        } else {
            memcpy(buf + off, reqs[k]->send, reqs[k]->count * es);
        }
        off += reqs[k]->count * es;
    }
    if (t0 != 0) {
        tc__exec_tl_copy("MEMCPY_IN_FUSION_BUFFER", total, n, t0);
    }
    *algo_p = a;
    {
        tc_allreduce_job_t j = {NULL, buf, total / es, reqs[0]->dtype, reqs[0]->op, NULL};
        st = a->run.allreduce(&x, &j); /* the one fusable kind: allreduce (kind.h) */
    }
    if (st != TC_OK) {
        snprintf(msg, msglen, "fused %s of %u tensors ('%s', ...) failed: %s", kd->name, n,
                 reqs[0]->name, st == TC_ERR_NOMEM ? "out of memory" : tc__algo_err(&x, a));
        return st;
    }
    t0 = tc__tl_active() ? tc__now_ns() : 0;
    for (k = 0, off = 0; k < n; k++) {
        tc_request_t *req = reqs[k];
        memcpy(req->recv, buf + off, req->count * es);
        if (req->postscale != 1.0) {
            tc__scale(req->dtype, req->recv, req->recv, req->count, req->postscale);
        }
        off += req->count * es;
        tc__request_set_output(req, req->recv, -1);
    }
    if (t0 != 0) {
        tc__exec_tl_copy("MEMCPY_OUT_FUSION_BUFFER", total, n, t0);
    }
    return TC_OK;
}

/* The end of the fusion group that starts at i: j with reqs[i..j-1] in it
 * (j == i + 1: no group); their bytes in *total_p. */
static uint32_t fusion_group(const tc_exec_t *e, const tc_wire_response_t *resps,
                             tc_request_t **reqs, uint32_t i, uint32_t n, size_t *total_p)
{
    const tc_request_t *first = reqs[i];
    size_t es = tc_dtype_size(first->dtype), cap = (size_t)e->cfg->fusion_buffer_kb * 1024;
    size_t total = first->count * es;
    uint32_t j = i + 1;

    while (j < n && fusable(e, reqs[j], &resps[j]) && reqs[j]->kind == first->kind &&
           reqs[j]->dtype == first->dtype && reqs[j]->op == first->op &&
           reqs[j]->pset == first->pset && total + reqs[j]->count * es <= cap) {
        total += reqs[j]->count * es;
        j++;
    }
    *total_p = total;
    return j;
}

/* req ran; it completes once this rank's earlier requests have
 * (tc__exec_deferred). Out of memory to remember it: it completes now. */
static void defer(tc_exec_t *e, tc_request_t *req)
{
    if (e->run.ndeferred == e->run.capdeferred) {
        size_t cap = e->run.capdeferred < 8 ? 8 : e->run.capdeferred * 2;
        tc_request_t **v = realloc(e->run.deferred, cap * sizeof(*v));
        if (v == NULL) {
            tc__queue_finish(req, TC_OK, NULL);
            return;
        }
        e->run.deferred = v;
        e->run.capdeferred = cap;
    }
    e->run.deferred[e->run.ndeferred++] = req;
    atomic_store_explicit(&tc__engine_shared.deferred, 1, memory_order_relaxed);
}

/* This rank joined (tc_join) and runs r without having submitted it: a
 * request of the description rank 0 sent, over a buffer of the op's
 * identity, unscaled, that no one waits for (exec_finish frees it). NULL
 * when it has nothing to move (a barrier, *oom_p 0) or out of memory (*oom_p
 * 1: the engine must stop, the others need this rank's part). */
static tc_request_t *joined_request(tc_exec_t *e, const tc_wire_response_t *r, int *oom_p)
{
    const tc_kind_desc_t *kd = tc__kind_get(r->desc.kind);
    size_t count = 1, es = tc_dtype_size((tc_dtype_t)r->desc.dtype);
    tc_request_t *req;
    char *block = NULL;
    int d;

    const eng_pset_t *ps = tc__pset_get(r->pset);

    *oom_p = 0;
    if (kd == NULL || kd->params & TC_PARAM_NONE_TENSOR || ps == NULL || ps->index < 0) {
        return NULL; /* nothing to move, or not in its process set */
    }
    for (d = 0; d < r->desc.ndim; d++) {
        count *= (size_t)r->desc.shape[d]; /* the submitting ranks' sizes fit */
    }
    *oom_p = 1;
    req = calloc(1, sizeof(*req));
    if (req == NULL || (req->name = strndup(r->name, r->name_len)) == NULL ||
        (block = malloc(count * es > 0 ? 2 * count * es : 1)) == NULL) {
        if (req != NULL) {
            free(req->name);
        }
        free(req);
        return NULL;
    }
    req->synthetic = 1;
    req->submit_ns = e->run.ready_ns; /* the timeline: no negotiation of its own */
    req->pset = r->pset;
    req->name_len = r->name_len;
    req->kind = (tc_kind_t)r->desc.kind;
    req->dtype = (tc_dtype_t)r->desc.dtype;
    req->op = (tc_op_t)r->desc.op;
    req->ndim = r->desc.ndim;
    memcpy(req->shape, r->desc.shape, sizeof(req->shape));
    req->count = count;
    req->prescale = req->postscale = 1.0;
    tc__reduce_identity(req->dtype, req->op, block, count);
    req->send = block; /* the input, then room for the output (not read) */
    req->recv = block + count * es;
    *oom_p = 0;
    return req;
}

/* req ran (or failed) with st: a synthetic one is freed, one that runs after
 * this rank's earlier requests waits for them, the rest complete. */
static void exec_finish(tc_exec_t *e, tc_request_t *req, tc_status_t st, const char *msg)
{
    if (req->synthetic) {
        tc__request_destroy(req);
    } else if (st == TC_OK && tc__kind_of(req)->after_earlier) {
        defer(e, req);
    } else {
        tc__queue_finish(req, st, msg);
    }
}

/* The end of the group of requests that run together from i: a fusion
 * group (j - i >= 2), or i alone; the group's bytes in *total_p. */
static uint32_t group_end(const tc_exec_t *e, const tc_wire_response_t *resps, tc_request_t **reqs,
                          uint32_t i, uint32_t n, size_t *total_p)
{
    *total_p = 0;
    if (reqs[i] != NULL && resps[i].rtype == TC_WIRE_RUN && fusable(e, reqs[i], &resps[i])) {
        return fusion_group(e, resps, reqs, i, n, total_p);
    }
    return i + 1;
}

/* Runs resps[i] for reqs[i], in order (see the file comment). reqs[i] is
 * NULL for a name this rank never submitted: an ERROR (a stalled tensor rank
 * 0 gave up on, or one that cannot run while ranks have joined), or a RUN
 * that this rank, having joined, takes part in (joined_request). */
tc_status_t tc__exec_run(tc_exec_t *e, const tc_wire_response_t *resps, tc_request_t **reqs,
                         uint32_t n, uint32_t *failed_p, char *msg, size_t len)
{
    const tc_algo_t *algo;
    const char *label;
    uint32_t i, j, k;
    uint64_t t0;
    int oom = 0;

    for (i = 0; i < n && !oom; i++) { /* first, so that fusion groups match the other ranks' */
        if (reqs[i] == NULL && resps[i].rtype == TC_WIRE_RUN && resps[i].has_desc) {
            reqs[i] = joined_request(e, &resps[i], &oom);
        }
    }
    if (oom) { /* nothing ran: the synthetic ones made so far go */
        snprintf(msg, len, "out of memory running tensor '%.*s' for a joined rank",
                 (int)resps[i - 1].name_len, resps[i - 1].name);
        for (k = 0; k < n; k++) {
            if (reqs[k] != NULL && reqs[k]->synthetic) {
                tc__request_destroy(reqs[k]);
                reqs[k] = NULL;
            }
        }
        *failed_p = n;
        return TC_ERR_NOMEM;
    }
    for (i = 0; i < n; i = j) {
        const tc_wire_response_t *r = &resps[i];
        size_t total;
        tc_status_t st;

        j = group_end(e, resps, reqs, i, n, &total);
        msg[0] = '\0';
        if (reqs[i] == NULL) {
            continue; /* not here: an ERROR for others, a barrier of the others */
        }
        if (r->rtype == TC_WIRE_ERROR) {
            if (tc__tl_active()) {
                uint64_t now = tc__now_ns();
                tc__exec_tl_tensor(e, reqs[i], "none (failed in negotiation)", now, now, 1,
                                   (tc_status_t)r->status);
            }
            snprintf(msg, len, "%.*s", (int)r->text_len, r->text);
            tc__queue_finish(reqs[i], (tc_status_t)r->status, msg);
            continue;
        }
        t0 = tc__tl_active() ? tc__now_ns() : 0;
        algo = NULL;
        if (j - i >= 2) {
            st = run_fused(e, &reqs[i], j - i, total, &algo, msg, len);
        } else {
            tc_algo_ctx_t x = algo_ctx(e, reqs[i]->pset);
            tc_kind_run_t run = tc__kind_exec((int)reqs[i]->kind)->run;
            st = reqs[i]->cuda.on ? tc__exec_device(run, &x, reqs[i], r, msg, len)
                                  : run(&x, reqs[i], r, msg, len);
            algo = reqs[i]->algo;
        }
        if (algo != NULL) {
            TC_DEBUG("engine", "tensor '%s' (%s%s): %s%s", reqs[i]->name,
                     tc__kind_of(reqs[i])->name, j - i >= 2 ? ", fused with others" : "",
                     algo->name, j - i >= 2 ? ", fused" : "");
        }
        label = tc__algo_label(algo, j - i >= 2, tc__shm_for(e, reqs[i]->pset));
        if (t0 != 0) {
            uint64_t t1 = tc__now_ns();
            for (k = i; k < j; k++) {
                tc__exec_tl_tensor(e, reqs[k], label, t0, t1, (int)(j - i), st);
            }
            if (j - i >= 2) {
                tc__exec_tl_fused(e, &reqs[i], j - i, label, total, t0, t1, st);
            }
        }
        if (st != TC_OK && j - i == 1 && reqs[i]->cuda.failed_alone) {
            /* only this tensor failed (request.h): the other ranks are not
             * waiting for this one, and the engine goes on */
            TC_WARN("engine", "%s", msg);
            exec_finish(e, reqs[i], st, msg);
            continue;
        }
        if (st != TC_OK) {
            /* The collective cannot go on without this rank: the engine
             * stops first (so that later submissions already fail), then
             * completes these (tc__exec_fail_rest). */
            *failed_p = i;
            return st;
        }
        for (k = i; k < j; k++) { /* before completion: see fast.c */
            tc__fast_flip(e, reqs[k], &resps[k]);
        }
        for (k = i; k < j; k++) {
            reqs[k]->label = algo != NULL ? label : NULL;
            exec_finish(e, reqs[k], TC_OK, NULL);
        }
    }
    *failed_p = n;
    return TC_OK;
}

void tc__exec_fail_rest(tc_exec_t *e, const tc_wire_response_t *resps, tc_request_t **reqs,
                        uint32_t n, uint32_t failed, tc_status_t st, const char *msg)
{
    uint32_t i = failed, k;

    if (i < n && reqs[i] != NULL) {
        size_t total;
        uint32_t j = group_end(e, resps, reqs, i, n, &total);
        for (k = i; k < j; k++) {
            exec_finish(e, reqs[k], st, msg);
        }
        i = j;
    }
    for (; i < n; i++) { /* the engine stopped: no one else frees these */
        if (reqs[i] != NULL && reqs[i]->synthetic) {
            tc__request_destroy(reqs[i]);
        }
    }
}

/* Completes the deferred requests whose earlier requests (this rank's in
 * the same process set, by seq: a stall in another set must not hold a
 * barrier back) have all completed. The oldest request in flight in a set
 * is looked up once per step (a scan under the queue's lock): a deferred
 * request that was waiting only for one completed here completes in the
 * next step. Returns whether one completed. */
int tc__exec_deferred(tc_exec_t *e)
{
    uint64_t oldest = 0;
    uint32_t looked = UINT32_MAX; /* the set oldest is of */
    size_t i = 0, k;
    int done = 0;

    while (i < e->run.ndeferred) {
        tc_request_t *req = e->run.deferred[i];
        if (looked != req->pset) {
            oldest = tc__queue_oldest_seq(req->pset);
            looked = req->pset;
        }
        if (oldest < req->seq) {
            i++;
            continue;
        }
        for (k = i + 1; k < e->run.ndeferred; k++) {
            e->run.deferred[k - 1] = e->run.deferred[k];
        }
        e->run.ndeferred--;
        atomic_store_explicit(&tc__engine_shared.deferred, e->run.ndeferred > 0,
                              memory_order_relaxed);
        tc__queue_finish(req, TC_OK, NULL);
        done = 1;
    }
    return done;
}
