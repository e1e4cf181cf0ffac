/*
 * submit.c - what a submission goes through before it is queued: the
 * engine's state (initialized, not shut down, running), its process set
 * (it exists, this rank is in it, a root is a member, no join pending),
 * the names tcoll gives calls without a tensor, the table of names in
 * flight (no name twice), and then the queue (queue.c) or the small-message
 * path (fast.c). Any application thread, under the engine's mutex.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "kind/kind.h"
#include "util/backoff.h"
#include "util/status.h"

/* A call without a tensor takes its kind's auto_name + "j.k" for its k-th
 * call after this rank's j-th join (counted only when queued), so that the
 * k-th calls of all ranks meet; a join takes auto_name + "j". Counting per
 * join keeps the ranks in step after a join: the barriers that ran while
 * some ranks had joined were not counted there. */
static int name_call(tc_request_t *req, const eng_pset_t *ps)
{
    const tc_kind_desc_t *kd = tc__kind_of(req);
    char buf[96];
    int n = kd->joins ? snprintf(buf, sizeof(buf), "%s%llu", kd->auto_name,
                                 (unsigned long long)ps->njoins)
                      : snprintf(buf, sizeof(buf), "%s%llu.%llu", kd->auto_name,
                                 (unsigned long long)ps->njoins,
                                 (unsigned long long)(kd->set_op ? ps->nsetops : ps->nbarriers));
    char *name = strdup(buf);

    if (name == NULL) {
        return -1;
    }
    free(req->name);
    req->name = name;
    req->name_len = (uint32_t)n;
    return 0;
}

tc_status_t tc__queue_submit_locked(const char *fn, tc_request_t *req)
{
    eng_shared_t *sh = &tc__engine_shared;
    const tc_kind_desc_t *kd = tc__kind_of(req);
    char key[TC_WIRE_KEY_MAX];
    size_t klen;
    eng_pset_t *ps;
    int size;

    if (sh->life == ENG_LIFE_NONE || sh->life == ENG_LIFE_STARTING) {
        return tc__set_error(TC_ERR_STATE, "%s: tc_init has not been called", fn);
    }
    if (sh->shutdown_requested) {
        return tc__set_error(TC_ERR_SHUTDOWN, "%s: tc_shutdown was called on this rank", fn);
    }
    if (sh->life == ENG_LIFE_START_FAILED) {
        return tc__set_error(TC_ERR_STATE, "%s: tc_init failed", fn);
    }
    if (sh->life != ENG_LIFE_RUNNING) { /* stopping or stopped: says why */
        return tc__set_error(sh->stop_status, "%s: %s", fn, sh->stop_msg);
    }
    if (tc__pset_check(fn, req->name, req->pset, (kd->params & TC_PARAM_ROOT) != 0, req->root,
                       &size, &req->root_index) != TC_OK) {
        return TC_ERR_ARG;
    }
    ps = tc__pset_get(req->pset);
    if (ps->join_pending) {
        return tc__set_error(TC_ERR_STATE,
                             "%s: this rank has joined%s (its tc_join is pending): "
                             "nothing can be submitted there until every rank has joined",
                             fn, req->pset != 0 ? " process set" : "");
    }
    if ((kd->params & TC_PARAM_NONE_TENSOR) && name_call(req, ps) != 0) {
        return tc__set_error(TC_ERR_NOMEM, "%s: out of memory", fn);
    }
    klen = tc__wire_key(key, req->name, req->name_len, req->pset);
    if (tc__hmap_get(&sh->inflight, key, klen) != NULL) {
        return tc__set_error(TC_ERR_DUPLICATE,
                             "%s: tensor '%s' is already in flight on rank %d; wait for it "
                             "before submitting the name again",
                             fn, req->name, atomic_load_explicit(&sh->rank, memory_order_relaxed));
    }
    if (tc__hmap_put(&sh->inflight, key, klen, req) != 0) {
        return tc__set_error(TC_ERR_NOMEM, "%s: out of memory", fn);
    }
    req->submit_ns = tc__now_ns();
    req->seq = sh->next_seq++;
    if (kd->joins) { /* a new epoch of auto names (name_call) */
        ps->njoins++;
        ps->nbarriers = ps->nsetops = 0;
        ps->join_pending = 1;
    } else if (kd->set_op) {
        ps->nsetops++;
    } else {
        ps->nbarriers += (kd->params & TC_PARAM_NONE_TENSOR) != 0;
    }
    if (tc__fast_take_locked(req)) {
        return TC_OK; /* the small-message path: the caller posts it (fast.c) */
    }
    tc__queue_append_locked(req);
    return TC_OK;
}

tc_status_t tc__queue_submit(const char *fn, tc_request_t *req)
{
    eng_shared_t *sh = &tc__engine_shared;
    tc_status_t st;

    pthread_mutex_lock(&sh->mu);
    st = tc__queue_submit_locked(fn, req);
    if (st == TC_OK && !req->fast && sh->engine_sleeping) {
        pthread_cond_signal(&sh->wake);
    }
    pthread_mutex_unlock(&sh->mu);
    if (st != TC_OK) {
        tc__request_destroy(req);
        return st;
    }
    if (req->fast) {
        tc__fast_post(req); /* before the caller has it: no one completes it earlier */
    }
    return TC_OK;
}

/* Queues reqs[0..n-1] together, all or none: on a failure the members
 * already queued are taken back (the engine thread takes the queue under
 * the same lock, so it has seen none of them) and every request is freed. */
tc_status_t tc__queue_submit_all(const char *fn, tc_request_t **reqs, int n)
{
    eng_shared_t *sh = &tc__engine_shared;
    tc_request_t *tail;
    tc_status_t st = TC_OK;
    int i, k;

    pthread_mutex_lock(&sh->mu);
    tail = sh->q_tail;
    for (i = 0; i < n && st == TC_OK; i++) {
        st = tc__queue_submit_locked(fn, reqs[i]);
    }
    if (st != TC_OK) {
        for (k = 0; k < i - 1; k++) {
            char key[TC_WIRE_KEY_MAX];
            tc__hmap_remove(&sh->inflight, key,
                            tc__wire_key(key, reqs[k]->name, reqs[k]->name_len, reqs[k]->pset));
        }
        sh->q_tail = tail;
        if (tail != NULL) {
            tail->next = NULL;
        } else {
            sh->q_head = NULL;
        }
    } else if (sh->engine_sleeping) {
        pthread_cond_signal(&sh->wake);
    }
    pthread_mutex_unlock(&sh->mu);
    if (st != TC_OK) {
        for (k = 0; k < n; k++) {
            tc__request_destroy(reqs[k]);
        }
    }
    return st;
}
