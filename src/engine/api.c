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
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': process set %d does not exist", fn, name,
                             (int)id);
    }
    return TC_OK;
}

/* Set on this thread while tcoll's own layers submit under names in the
 * reserved space (tc__allgather_reserved and the like). */
static _Thread_local int reserved_ok;

/* Validates a submission and builds its request; nothing is shared yet. */
tc_status_t tc__request_make(const char *fn, tc_kind_t kind, const char *name, const tc_tensor_t *t,
                             void *recv, tc_op_t op, int root, const int64_t *splits,
                             const tc_opts_t *opts, tc_request_t **req_p, tc_request_t **out_p)
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
        return tc__set_error(TC_ERR_ARG, "%s: name '%s': names starting with '%s' are tcoll's", fn,
                             name, TC_AUTO_NAME_PREFIX);
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
    if (o.device != TC_DEVICE_HOST &&
        tc__opts_check_device(fn, name, kd, &o, t->data, recv, count, es) != TC_OK) {
        return TC_ERR_ARG;
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
    if (o.device != TC_DEVICE_HOST) {
        char why[256];
        tc_status_t st;
        req->cuda.on = 1;
        req->cuda.dev = o.device;
        req->cuda.stream = o.cuda_stream;
        st = tc__cuda_mark(o.device, o.cuda_stream, &req->cuda.mark, why, sizeof(why));
        if (st != TC_OK) {
            tc__request_destroy(req);
            return tc__set_error(st, "%s: tensor '%s': %s", fn, name, why);
        }
    }
    *out_p = req;
    return TC_OK;
}

/* The submission path of every collective: checks, then queues. */
static tc_status_t submit_split(const char *fn, tc_kind_t kind, const char *name,
                                const tc_tensor_t *t, void *recv, tc_op_t op, int root,
                                const int64_t *splits, const tc_opts_t *opts, tc_request_t **req_p)
{
    tc_request_t *req = NULL;
    tc_status_t st;

    tc__clear_error();
    st = tc__request_make(fn, kind, name, t, recv, op, root, splits, opts, req_p, &req);
    if (st == TC_OK && (st = tc__queue_submit(fn, req)) == TC_OK) {
        *req_p = req;
    }
    return st;
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
    return submit_kind("tc_allreduce_ex", TC_KIND_ALLREDUCE, name, send, recv, op, 0, opts, req_p);
}

tc_status_t tc_allgather(const char *name, const tc_tensor_t *send, tc_request_t **req_p)
{
    return submit_kind("tc_allgather", TC_KIND_ALLGATHER, name, send, NULL, TC_SUM, 0, NULL, req_p);
}

tc_status_t tc__allgather_reserved(const char *name, const tc_tensor_t *send, tc_request_t **req_p)
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
    return submit_kind("tc_reducescatter_ex", TC_KIND_REDUCESCATTER, name, send, NULL, op, 0, opts,
                       req_p);
}

tc_status_t tc_alltoall(const char *name, const tc_tensor_t *send, const int64_t *splits,
                        tc_request_t **req_p)
{
    return submit_split("tc_alltoall", TC_KIND_ALLTOALL, name, send, NULL, TC_SUM, 0, splits, NULL,
                        req_p);
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
    return submit_kind("tc_barrier", TC_KIND_BARRIER, TC_AUTO_NAME_PREFIX, &no_tensor, NULL, TC_SUM,
                       0, NULL, req_p);
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
    return submit_kind("tc_join_ex", TC_KIND_JOIN, TC_AUTO_NAME_PREFIX, &no_tensor, NULL, TC_SUM, 0,
                       opts, req_p);
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
