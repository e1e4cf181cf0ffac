/*
 * queue.c - the submission queue and the table of names in flight
 * (eng_shared_t): linking a submission in, and the engine thread's side
 * (take, finish, fail what is left). What a submission is checked against
 * first is submit.c's. Everything under the engine's mutex.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "kind/kind.h"
#include "util/backoff.h"
#include "util/log.h"
#include "util/status.h"

/* Links req at the queue's tail; mu held. */
void tc__queue_append_locked(tc_request_t *req)
{
    eng_shared_t *sh = &tc__engine_shared;

    req->next = NULL;
    if (sh->q_tail != NULL) {
        sh->q_tail->next = req;
    } else {
        sh->q_head = req;
    }
    sh->q_tail = req;
}

/* ---- the engine thread's side ---------------------------------------------- */

/* Takes the oldest max requests application threads queued (all of them
 * when there are fewer), and whether tc_shutdown was called once the queue
 * is empty: a shutdown follows everything submitted before it. Returns the
 * number of requests. */
size_t tc__queue_take(size_t max, tc_request_t **head_p, int *shutdown_p)
{
    eng_shared_t *sh = &tc__engine_shared;
    size_t n = 0;
    tc_request_t *r, *last = NULL;

    pthread_mutex_lock(&sh->mu);
    *head_p = sh->q_head;
    for (r = sh->q_head; r != NULL && n < max; last = r, r = r->next) {
        n++;
    }
    if (last != NULL) {
        last->next = NULL;
    }
    sh->q_head = r;
    if (r == NULL) {
        sh->q_tail = NULL;
    }
    *shutdown_p = r == NULL && sh->shutdown_requested;
    pthread_mutex_unlock(&sh->mu);
    return n;
}

/* Removes req from the in-flight table (so the name can be reused at once) and
 * completes it. */
void tc__queue_finish(tc_request_t *req, tc_status_t st, const char *msg)
{
    eng_shared_t *sh = &tc__engine_shared;

    char key[TC_WIRE_KEY_MAX];
    eng_pset_t *ps;

    pthread_mutex_lock(&sh->mu);
    tc__hmap_remove(&sh->inflight, key, tc__wire_key(key, req->name, req->name_len, req->pset));
    if (tc__kind_of(req)->joins && (ps = tc__pset_get(req->pset)) != NULL) {
        ps->join_pending = 0;
    }
    pthread_mutex_unlock(&sh->mu);
    tc__request_complete(req, st, msg);
}

typedef struct {
    uint32_t pset;
    uint64_t min;
} oldest_t;

static void oldest(const char *key, size_t len, void *val, void *arg)
{
    const tc_request_t *req = val;
    oldest_t *o = arg;

    (void)key;
    (void)len;
    if (req->pset == o->pset && req->seq < o->min) {
        o->min = req->seq;
    }
}

uint64_t tc__queue_oldest_seq(uint32_t pset)
{
    eng_shared_t *sh = &tc__engine_shared;
    oldest_t o = {pset, UINT64_MAX};

    pthread_mutex_lock(&sh->mu);
    tc__hmap_foreach(&sh->inflight, oldest, &o);
    pthread_mutex_unlock(&sh->mu);
    return o.min;
}

/* Requests in flight on this rank: submitted, not completed. */
size_t tc__queue_inflight(void)
{
    eng_shared_t *sh = &tc__engine_shared;
    size_t n;

    pthread_mutex_lock(&sh->mu);
    n = sh->inflight.count;
    pthread_mutex_unlock(&sh->mu);
    return n;
}

static void collect(const char *key, size_t len, void *val, void *arg)
{
    tc_request_t ***pp = arg;
    (void)key;
    (void)len;
    *(*pp)++ = val;
}

/* Fails every request still in flight with st and msg (the engine has left
 * RUNNING, so no submission comes after them). */
void tc__queue_fail_all(tc_status_t st, const char *msg)
{
    eng_shared_t *sh = &tc__engine_shared;
    tc_request_t **all, **end;
    size_t n, i;

    pthread_mutex_lock(&sh->mu);
    n = sh->inflight.count;
    all = calloc(n > 0 ? n : 1, sizeof(*all));
    end = all;
    if (all != NULL) {
        tc__hmap_foreach(&sh->inflight, collect, &end);
    }
    tc__hmap_destroy(&sh->inflight);
    sh->q_head = sh->q_tail = NULL;
    for (i = 0; i < sh->npsets; i++) {
        if (sh->psets[i] != NULL) {
            sh->psets[i]->join_pending = 0;
        }
    }
    pthread_mutex_unlock(&sh->mu);
    if (all == NULL) {
        TC_ERROR("engine", "out of memory: %zu pending requests cannot be completed", n);
        return;
    }
    for (i = 0; i < n; i++) {
        tc__request_complete(all[i], st, msg);
    }
    free(all);
}
