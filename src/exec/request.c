/*
 * request.c - the request object's completion, output and release (the
 * public calls on a request are request_api.c).
 *
 * Completion uses one process-wide mutex and condition variable: the engine
 * sets `done` while holding the mutex and broadcasts, and a waiter checks
 * `done` under the same mutex before sleeping, so no wake-up is lost. The
 * mutex is static, so a request can be freed the moment `done` is seen.
 */
#define _GNU_SOURCE
#include "exec/request.h"

#include "util/config.h"
#include "util/status.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;

void tc__request_complete(tc_request_t *req, tc_status_t status, const char *msg)
{
    req->status = status;
    if (status != TC_OK) {
        req->error = strdup(msg != NULL && msg[0] != '\0' ? msg : tc_status_string(status));
    }
    pthread_mutex_lock(&done_mu);
    /* release: pairs with the acquire loads in tc_test/tc_wait/tc_request_*,
     * so a thread that sees done == 1 also sees status, error and output. */
    atomic_store_explicit(&req->done, 1, memory_order_release);
    pthread_cond_broadcast(&done_cv);
    pthread_mutex_unlock(&done_mu);
}

void tc__request_set_output(tc_request_t *req, void *data, int64_t dim0)
{
    req->output.data = data;
    req->output.dtype = req->dtype;
    req->output.ndim = req->ndim;
    memcpy(req->output.shape, req->shape, sizeof(req->shape));
    if (dim0 >= 0) {
        req->output.shape[0] = dim0;
    }
}

/* The output pool: a few large buffers, at most TCOLL_OUTPUT_POOL_MB in all. */
#define POOL_SLOTS 8
#define POOL_MIN_BYTES ((size_t)1 << 20)
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    void *buf;
    size_t cap;
} pool[POOL_SLOTS];
static size_t pool_bytes;

void *tc__output_alloc(size_t bytes, size_t *cap_p)
{
    void *buf = NULL;
    size_t best = POOL_SLOTS, i;

    if (bytes >= POOL_MIN_BYTES) {
        pthread_mutex_lock(&pool_mu);
        /* the smallest pooled buffer that fits and wastes at most half */
        for (i = 0; i < POOL_SLOTS; i++) {
            if (pool[i].buf != NULL && pool[i].cap >= bytes && pool[i].cap / 2 <= bytes &&
                (best == POOL_SLOTS || pool[i].cap < pool[best].cap)) {
                best = i;
            }
        }
        if (best < POOL_SLOTS) {
            buf = pool[best].buf;
            *cap_p = pool[best].cap;
            pool_bytes -= pool[best].cap;
            pool[best].buf = NULL;
        }
        pthread_mutex_unlock(&pool_mu);
        if (buf != NULL) {
            return buf;
        }
    }
    buf = malloc(bytes > 0 ? bytes : 1);
    *cap_p = bytes;
    return buf;
}

void tc__output_release(void *buf, size_t cap)
{
    size_t limit = (size_t)tc__config()->output_pool_mb << 20, i;

    if (buf == NULL) {
        return;
    }
    if (cap >= POOL_MIN_BYTES && cap <= limit) {
        pthread_mutex_lock(&pool_mu);
        for (i = 0; i < POOL_SLOTS && pool_bytes + cap <= limit; i++) {
            if (pool[i].buf == NULL) {
                pool[i].buf = buf;
                pool[i].cap = cap;
                pool_bytes += cap;
                buf = NULL;
                break;
            }
        }
        pthread_mutex_unlock(&pool_mu);
    }
    free(buf);
}

void tc__output_pool_drain(void)
{
    size_t i;

    pthread_mutex_lock(&pool_mu);
    for (i = 0; i < POOL_SLOTS; i++) {
        free(pool[i].buf);
        pool[i].buf = NULL;
    }
    pool_bytes = 0;
    pthread_mutex_unlock(&pool_mu);
}

void tc__request_destroy(tc_request_t *req)
{
    if (req == NULL) {
        return;
    }
    free(req->name);
    free(req->error);
    free(req->splits);
    free(req->out_splits);
    free(req->group_key);
    free(req->set_ranks);
    if (req->synthetic) { /* its input (the op's identity) and output: one block */
        free((void *)req->send);
    }
    tc__output_release(req->owned_output, req->owned_cap);
    if (req->cuda.on) {
        tc__cuda_mark_release(req->cuda.mark);
        if (req->cuda.output != NULL) {
            /* after what the tensor's stream has queued by now: a kernel of
             * it that still reads the output (without one, freed at once) */
            tc_cuda_mark_t *m = NULL;
            char why[256];
            if (tc__cuda_mark(req->cuda.dev, req->cuda.stream, &m, why, sizeof(why)) != TC_OK) {
                m = NULL;
            }
            tc__cuda_free_after(req->cuda.dev, req->cuda.output, m);
            tc__cuda_mark_release(m);
        }
    }
    free(req);
}

int tc__request_done(const tc_request_t *req)
{
    /* acquire: pairs with the release store in tc__request_complete. */
    return atomic_load_explicit(&req->done, memory_order_acquire);
}

void tc__request_sleep(const tc_request_t *req)
{
    pthread_mutex_lock(&done_mu);
    while (!atomic_load_explicit(&req->done, memory_order_acquire)) {
        pthread_cond_wait(&done_cv, &done_mu);
    }
    pthread_mutex_unlock(&done_mu);
}
