/*
 * api.c - the public submission calls (tc_allreduce, tc_allgather,
 * tc_broadcast, ..., tc_join), the ids (tc_rank, ...), and the submission queue between
 * application threads and the engine thread.
 *
 * A submission validates its arguments at once (the checks every kind
 * shares, then its descriptor's: kind/kind.h), records the name as in flight
 * and queues the request, all under the shared mutex; it never calls MPI
 * and never waits for the engine. Bad input returns a status and changes
 * nothing. The engine thread takes the queue, and completes each request
 * through tc__queue_finish, which frees its name for reuse first.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_info.h"
#include "engine/engine_internal.h"
#include "kind/kind.h"
#include "util/backoff.h"
#include "util/log.h"
#include "util/status.h"

/* ------------------------------------------------------------------------ */
/* Submission                                                                */
/* ------------------------------------------------------------------------ */

/* The size of the process set a submission goes to, for its kind's checks:
 * -1 before tc_init (the checks that need it wait for submit_locked, which
 * says tcoll is not running). TC_ERR_ARG for a set that does not exist. */
static tc_status_t set_size(const char *fn, const char *name, uint32_t id, int *size_p)
{
    eng_shared_t *sh = &tc__engine_shared;
    eng_pset_t *ps;

    *size_p = atomic_load_explicit(&sh->size, memory_order_relaxed);
    if (id == 0 || *size_p <= 0) {
        return TC_OK;
    }
    pthread_mutex_lock(&sh->mu);
    ps = tc__pset_get(id);
    *size_p = ps != NULL ? ps->n : -1;
    pthread_mutex_unlock(&sh->mu);
    if (ps == NULL) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': process set %d does not exist", fn,
                             name, (int)id);
    }
    return TC_OK;
}

/* Set on this thread while tcoll's own layers submit under names in the
 * reserved space (tc__allgather_reserved and the like). */
static _Thread_local int reserved_ok;

/* Validates a submission and builds its request; nothing is shared yet. */
tc_status_t tc__request_make(const char *fn, tc_kind_t kind, const char *name,
                             const tc_tensor_t *t, void *recv, tc_op_t op, int root,
                             const int64_t *splits, const tc_opts_t *opts, tc_request_t **req_p,
                             tc_request_t **out_p)
{
    const tc_kind_desc_t *kd = tc__kind_get(kind);
    tc_opts_t o;
    tc_request_t *req;
    size_t len, es, count = 1;
    int d, has_zero = 0, size;

    if (req_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "%s: req_p is NULL", fn);
    }
    if (name == NULL) {
        return tc__set_error(TC_ERR_ARG, "%s: name is NULL", fn);
    }
    len = strnlen(name, TC_MAX_NAME_LEN + 1);
    if (len == 0) {
        return tc__set_error(TC_ERR_ARG, "%s: name is empty", fn);
    }
    if (!(kd->params & TC_PARAM_NONE_TENSOR) && !reserved_ok &&
        strncmp(name, TC_AUTO_NAME_PREFIX, strlen(TC_AUTO_NAME_PREFIX)) == 0) {
        return tc__set_error(TC_ERR_ARG, "%s: name '%s': names starting with '%s' are tcoll's",
                             fn, name, TC_AUTO_NAME_PREFIX);
    }
    if (len > TC_MAX_NAME_LEN) {
        return tc__set_error(TC_ERR_ARG, "%s: name is longer than %d bytes", fn, TC_MAX_NAME_LEN);
    }
    if (t == NULL) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': tensor is NULL", fn, name);
    }
    if (!tc__dtype_valid((int)t->dtype)) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': unknown dtype %d", fn, name,
                             (int)t->dtype);
    }
    if (t->ndim < 0 || t->ndim > TC_MAX_DIMS) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': ndim %d is outside 0..%d", fn, name,
                             t->ndim, TC_MAX_DIMS);
    }
    es = tc_dtype_size(t->dtype);
    for (d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0) {
            return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': dimension %d is negative (%lld)", fn,
                                 name, d, (long long)t->shape[d]);
        }
        if (t->shape[d] == 0) {
            has_zero = 1;
        } else if ((uint64_t)t->shape[d] > (SIZE_MAX / es) / count) {
            /* even with a zero dimension elsewhere, reject shapes whose
             * nonzero dims overflow: other ranks' sizes derive from them */
            return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': too many elements", fn, name);
        } else {
            count *= (size_t)t->shape[d];
        }
    }
    if (has_zero) {
        count = 0;
    }
    if (t->data == NULL && count > 0) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': data is NULL", fn, name);
    }
    if (tc__opts_read(fn, name, kd, opts, &o) != TC_OK) {
        return TC_ERR_ARG;
    }
    if (set_size(fn, name, (uint32_t)o.process_set, &size) != TC_OK) {
        return TC_ERR_ARG;
    }
    if (kd->validate != NULL) {
        tc_kind_args_t a = {t, count, recv, op, root, splits, size};
        char why[256];
        if (kd->validate(&a, why, sizeof(why)) != TC_OK) {
            return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': %s", fn, name, why);
        }
    }
    if (kd->output == TC_OUT_RECV && recv == NULL && count > 0) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': recv is NULL", fn, name);
    }
    req = calloc(1, sizeof(*req));
    if (req == NULL || (req->name = strdup(name)) == NULL) {
        free(req);
        return tc__set_error(TC_ERR_NOMEM, "%s: out of memory", fn);
    }
    req->name_len = (uint32_t)len;
    req->kind = kind;
    req->dtype = t->dtype;
    req->op = kd->params & TC_PARAM_OP ? op : TC_SUM;
    req->root = kd->params & TC_PARAM_ROOT ? root : 0;
    req->root_index = req->root;
    req->pset = (uint32_t)o.process_set;
    req->ndim = t->ndim;
    memcpy(req->shape, t->shape, (size_t)t->ndim * sizeof(t->shape[0]));
    req->count = count;
    req->prescale = o.prescale;
    req->postscale = o.postscale;
    req->send = t->data;
    req->recv = kd->output == TC_OUT_RECV ? recv : kd->output == TC_OUT_IN_PLACE ? t->data : NULL;
    if ((kd->params & TC_PARAM_SPLITS) && splits != NULL) {
        /* validate checked them against the set's size, which is known by now */
        int n = size;
        req->splits = n > 0 ? malloc((size_t)n * sizeof(*splits)) : NULL;
        if (req->splits == NULL && n > 0) {
            tc__request_destroy(req);
            return tc__set_error(TC_ERR_NOMEM, "%s: out of memory", fn);
        }
        if (n > 0) {
            memcpy(req->splits, splits, (size_t)n * sizeof(*splits));
            req->nsplits = n;
        }
    }
    *out_p = req;
    return TC_OK;
}

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
                                 (unsigned long long)(kd->set_op ? ps->nsetops
                                                                 : ps->nbarriers));
    char *name = strdup(buf);

    if (name == NULL) {
        return -1;
    }
    free(req->name);
    req->name = name;
    req->name_len = (uint32_t)n;
    return 0;
}

/* Queues req for the engine thread, or fails it at once. */
/* Checks req against the engine's state and queues it; sh->mu held. */
static tc_status_t submit_locked(eng_shared_t *sh, const char *fn, tc_request_t *req)
{
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
        return tc__set_error(TC_ERR_STATE, "%s: this rank has joined%s (its tc_join is pending): "
                             "nothing can be submitted there until every rank has joined", fn,
                             req->pset != 0 ? " process set" : "");
    }
    if ((kd->params & TC_PARAM_NONE_TENSOR) && name_call(req, ps) != 0) {
        return tc__set_error(TC_ERR_NOMEM, "%s: out of memory", fn);
    }
    klen = tc__wire_key(key, req->name, req->name_len, req->pset);
    if (tc__hmap_get(&sh->inflight, key, klen) != NULL) {
        return tc__set_error(TC_ERR_DUPLICATE,
                             "%s: tensor '%s' is already in flight on rank %d; wait for it "
                             "before submitting the name again", fn, req->name,
                             atomic_load_explicit(&sh->rank, memory_order_relaxed));
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

/* Queues req for the engine thread, or fails it at once (and frees it). */
static tc_status_t submit(const char *fn, tc_request_t *req, tc_request_t **req_p)
{
    eng_shared_t *sh = &tc__engine_shared;
    tc_status_t st;

    pthread_mutex_lock(&sh->mu);
    st = submit_locked(sh, fn, req);
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
    *req_p = req;
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
        st = submit_locked(sh, fn, reqs[i]);
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

/* The submission path of every collective: checks, then queues. */
static tc_status_t submit_split(const char *fn, tc_kind_t kind, const char *name,
                                const tc_tensor_t *t, void *recv, tc_op_t op, int root,
                                const int64_t *splits, const tc_opts_t *opts,
                                tc_request_t **req_p)
{
    tc_request_t *req = NULL;
    tc_status_t st;

    tc__clear_error();
    st = tc__request_make(fn, kind, name, t, recv, op, root, splits, opts, req_p, &req);
    return st != TC_OK ? st : submit(fn, req, req_p);
}

static tc_status_t submit_kind(const char *fn, tc_kind_t kind, const char *name,
                               const tc_tensor_t *t, void *recv, tc_op_t op, int root,
                               const tc_opts_t *opts, tc_request_t **req_p)
{
    return submit_split(fn, kind, name, t, recv, op, root, NULL, opts, req_p);
}

tc_status_t tc_allreduce(const char *name, const tc_tensor_t *send, void *recv, tc_op_t op,
                         tc_request_t **req_p)
{
    return submit_kind("tc_allreduce", TC_KIND_ALLREDUCE, name, send, recv, op, 0, NULL, req_p);
}

tc_status_t tc_allreduce_ex(const char *name, const tc_tensor_t *send, void *recv, tc_op_t op,
                            const tc_opts_t *opts, tc_request_t **req_p)
{
    return submit_kind("tc_allreduce_ex", TC_KIND_ALLREDUCE, name, send, recv, op, 0, opts,
                       req_p);
}

tc_status_t tc_allgather(const char *name, const tc_tensor_t *send, tc_request_t **req_p)
{
    return submit_kind("tc_allgather", TC_KIND_ALLGATHER, name, send, NULL, TC_SUM, 0, NULL,
                       req_p);
}

tc_status_t tc__allgather_reserved(const char *name, const tc_tensor_t *send,
                                   tc_request_t **req_p)
{
    tc_status_t st;

    reserved_ok = 1;
    st = tc_allgather(name, send, req_p);
    reserved_ok = 0;
    return st;
}

tc_status_t tc__allreduce_reserved(const char *name, const tc_tensor_t *send, void *recv,
                                   tc_op_t op, tc_request_t **req_p)
{
    tc_status_t st;

    reserved_ok = 1;
    st = tc_allreduce(name, send, recv, op, req_p);
    reserved_ok = 0;
    return st;
}

tc_status_t tc_allgather_ex(const char *name, const tc_tensor_t *send, const tc_opts_t *opts,
                            tc_request_t **req_p)
{
    return submit_kind("tc_allgather_ex", TC_KIND_ALLGATHER, name, send, NULL, TC_SUM, 0, opts,
                       req_p);
}

tc_status_t tc_broadcast(const char *name, tc_tensor_t *buf, int root, tc_request_t **req_p)
{
    return submit_kind("tc_broadcast", TC_KIND_BROADCAST, name, buf, NULL, TC_SUM, root, NULL,
                       req_p);
}

tc_status_t tc_broadcast_ex(const char *name, tc_tensor_t *buf, int root, const tc_opts_t *opts,
                            tc_request_t **req_p)
{
    return submit_kind("tc_broadcast_ex", TC_KIND_BROADCAST, name, buf, NULL, TC_SUM, root, opts,
                       req_p);
}

tc_status_t tc_reducescatter(const char *name, const tc_tensor_t *send, tc_op_t op,
                             tc_request_t **req_p)
{
    return submit_kind("tc_reducescatter", TC_KIND_REDUCESCATTER, name, send, NULL, op, 0, NULL,
                       req_p);
}

tc_status_t tc_reducescatter_ex(const char *name, const tc_tensor_t *send, tc_op_t op,
                                const tc_opts_t *opts, tc_request_t **req_p)
{
    return submit_kind("tc_reducescatter_ex", TC_KIND_REDUCESCATTER, name, send, NULL, op, 0,
                       opts, req_p);
}

tc_status_t tc_alltoall(const char *name, const tc_tensor_t *send, const int64_t *splits,
                        tc_request_t **req_p)
{
    return submit_split("tc_alltoall", TC_KIND_ALLTOALL, name, send, NULL, TC_SUM, 0, splits,
                        NULL, req_p);
}

tc_status_t tc_alltoall_ex(const char *name, const tc_tensor_t *send, const int64_t *splits,
                           const tc_opts_t *opts, tc_request_t **req_p)
{
    return submit_split("tc_alltoall_ex", TC_KIND_ALLTOALL, name, send, NULL, TC_SUM, 0, splits,
                        opts, req_p);
}

/* No tensor: an empty one stands in, and submit names the call. */
static const tc_tensor_t no_tensor = {NULL, TC_UINT8, 1, {0}};

tc_status_t tc_barrier(tc_request_t **req_p)
{
    return submit_kind("tc_barrier", TC_KIND_BARRIER, TC_AUTO_NAME_PREFIX, &no_tensor, NULL,
                       TC_SUM, 0, NULL, req_p);
}

tc_status_t tc_barrier_ex(const tc_opts_t *opts, tc_request_t **req_p)
{
    return submit_kind("tc_barrier_ex", TC_KIND_BARRIER, TC_AUTO_NAME_PREFIX, &no_tensor, NULL,
                       TC_SUM, 0, opts, req_p);
}

tc_status_t tc_join(tc_request_t **req_p)
{
    return submit_kind("tc_join", TC_KIND_JOIN, TC_AUTO_NAME_PREFIX, &no_tensor, NULL, TC_SUM, 0,
                       NULL, req_p);
}

tc_status_t tc_join_ex(const tc_opts_t *opts, tc_request_t **req_p)
{
    return submit_kind("tc_join_ex", TC_KIND_JOIN, TC_AUTO_NAME_PREFIX, &no_tensor, NULL, TC_SUM,
                       0, opts, req_p);
}

int tc_rank(void)
{
    return atomic_load_explicit(&tc__engine_shared.rank, memory_order_relaxed);
}

int tc_size(void)
{
    return atomic_load_explicit(&tc__engine_shared.size, memory_order_relaxed);
}

int tc_local_rank(void)
{
    return atomic_load_explicit(&tc__engine_shared.local_rank, memory_order_relaxed);
}

int tc_local_size(void)
{
    return atomic_load_explicit(&tc__engine_shared.local_size, memory_order_relaxed);
}

int tc__engine_node_first(void)
{
    return atomic_load_explicit(&tc__engine_shared.node_first, memory_order_relaxed);
}

int tc__engine_thread_multiple(void)
{
    return atomic_load_explicit(&tc__engine_shared.thread_multiple, memory_order_relaxed);
}

int tc__engine_chan_comm(void *comm_p, int *tag_ub_p)
{
    eng_shared_t *sh = &tc__engine_shared;

    if (!atomic_load_explicit(&sh->thread_multiple, memory_order_relaxed) ||
        sh->chan_comm == MPI_COMM_NULL) {
        return 0;
    }
    memcpy(comm_p, &sh->chan_comm, sizeof(MPI_Comm));
    *tag_ub_p = sh->chan_tag_ub;
    return 1;
}

void tc__engine_chan_use(int delta)
{
    atomic_fetch_add_explicit(&tc__engine_shared.chan_users, delta, memory_order_relaxed);
}

int tc__engine_failed(char *msg, size_t len)
{
    eng_shared_t *sh = &tc__engine_shared;
    int failed;

    pthread_mutex_lock(&sh->mu);
    failed = eng_broken();
    if (failed && msg != NULL) {
        snprintf(msg, len, "%s", sh->stop_msg);
    }
    pthread_mutex_unlock(&sh->mu);
    return failed;
}

/* ------------------------------------------------------------------------ */
/* The queue (engine thread)                                                 */
/* ------------------------------------------------------------------------ */

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
