/*
 * cuda_rt.c - cuda.h over the CUDA runtime (a build with TCOLL_CUDA).
 *
 * The runtime is linked statically: it loads the driver (libcuda.so.1) only
 * when first asked, so on a machine without one cudaGetDeviceCount fails
 * and tc__cuda_available says why; nothing else here is reached then.
 *
 * Per device, made on first use and kept for the process's life (outputs
 * of requests not yet freed live in its pool): tcoll's stream
 * (non-blocking: it never waits for the legacy default stream), an event
 * with blocking sync that the engine thread sleeps on, and a memory pool for
 * the outputs tcoll allocates, with a stream of its own for allocating. A
 * device without memory pools (cudaDevAttrMemoryPoolsSupported 0, as some
 * virtual GPUs) gets its outputs from cudaMalloc instead; their frees wait
 * on a list for their stream's work (an event each) and are carried out
 * by the engine thread's next allocation or tc_shutdown, since cudaFree
 * waits for the device and no thread of the application may be made to.
 * A thread that is not the engine's (a submission marking its stream, a
 * request freed) gets its current device back as it was.
 */
#define _GNU_SOURCE
#include <cuda.h> /* the driver's types, for cuMemGetAddressRange through the runtime */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda.h"
#include "cuda/cuda_internal.h"
#include "util/log.h"

/* A free of memory from cudaMalloc (a device without pools), once ev has
 * happened. */
typedef struct deferred {
    struct deferred *next;
    void *p;
    cudaEvent_t ev;
} deferred_t;

typedef struct {
    pthread_mutex_t mu;
    int made;
    cudaStream_t stream;
    cudaEvent_t done;   /* blocking sync: the engine thread sleeps on it */
    cudaMemPool_t pool; /* NULL: the device has no memory pools */
    cudaStream_t alloc; /* allocations from pool only: nothing else is queued on it */
    deferred_t *frees;  /* without pools: frees waiting for their event (mu) */
} devctx_t;

struct tc_cuda_mark {
    struct tc_cuda_mark *next;
    int dev;
    cudaEvent_t ev;
};

typedef CUresult (*range_fn_t)(CUdeviceptr *base, size_t *size, CUdeviceptr ptr);
typedef CUresult (*state_fn_t)(CUdevice dev, unsigned int *flags, int *active);

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int ndev;         /* > 0 once available */
static char no_why[256]; /* why not, when ndev is 0 */
static devctx_t *devs;   /* [ndev] */
static range_fn_t range_fn;
static state_fn_t state_fn; /* cuDevicePrimaryCtxGetState */

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static tc_cuda_mark_t *marks; /* free marks, any device */

static void probe(void)
{
    int n = 0, i;
    cudaError_t e = cudaGetDeviceCount(&n);
    enum cudaDriverEntryPointQueryResult q;
    void *fn = NULL;

    if (e != cudaSuccess) {
        snprintf(no_why, sizeof(no_why), "no usable CUDA driver (cudaGetDeviceCount: %s: %s)",
                 cudaGetErrorName(e), cudaGetErrorString(e));
        (void)cudaGetLastError();
        return;
    }
    if (n <= 0) {
        snprintf(no_why, sizeof(no_why), "no CUDA device");
        return;
    }
    devs = calloc((size_t)n, sizeof(*devs));
    if (devs == NULL) {
        snprintf(no_why, sizeof(no_why), "out of memory");
        return;
    }
    for (i = 0; i < n; i++) {
        pthread_mutex_init(&devs[i].mu, NULL);
    }
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault,
                                         &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess) {
        range_fn = (range_fn_t)fn;
    }
    fn = NULL;
    if (cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &fn, 12000,
                                         cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess) {
        state_fn = (state_fn_t)fn;
    }
    (void)cudaGetLastError();
    ndev = n;
}

int tc__cuda_any_context(void)
{
    unsigned int flags = 0;
    int i, active = 0;

    if (!tc__cuda_available(NULL)) {
        return 0;
    }
    if (state_fn == NULL) {
        return 1; /* cannot tell: assume one */
    }
    for (i = 0; i < ndev; i++) {
        if (state_fn((CUdevice)i, &flags, &active) == CUDA_SUCCESS && active) {
            return 1;
        }
    }
    return 0;
}

int tc__cuda_alloc_range(const void *ptr, void **base_p, size_t *size_p)
{
    CUdeviceptr base = 0;
    size_t size = 0;

    if (range_fn == NULL || range_fn(&base, &size, (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS) {
        return 0;
    }
    *base_p = (void *)(uintptr_t)base;
    *size_p = size;
    return 1;
}

int tc__cuda_mapped_range(const void *ptr, size_t bytes, void **base_p, size_t *size_p)
{
    CUdeviceptr base = 0, next_base = 0;
    size_t size = 0, next_size = 0;
    uintptr_t end = (uintptr_t)ptr + bytes;
    struct cudaPointerAttributes a, b;
    int k;

    if (range_fn == NULL || range_fn(&base, &size, (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS) {
        return 0;
    }
    /* Virtual-memory allocations (cuMemCreate pieces mapped side by side,
     * as PyTorch's expandable segments are) report the piece holding ptr
     * only: go on through the pieces mapped right after it, on the same
     * device, while the range runs past. */
    if ((uintptr_t)base + size < end && cudaPointerGetAttributes(&a, ptr) == cudaSuccess) {
        for (k = 0; k < 65536 && (uintptr_t)base + size < end; k++) {
            CUdeviceptr at = base + size;
            if (range_fn(&next_base, &next_size, at) != CUDA_SUCCESS || next_base != at ||
                next_size == 0 ||
                cudaPointerGetAttributes(&b, (const void *)(uintptr_t)at) != cudaSuccess ||
                b.type != a.type || b.device != a.device) {
                break;
            }
            size += next_size;
        }
    }
    (void)cudaGetLastError();
    *base_p = (void *)(uintptr_t)base;
    *size_p = size;
    return 1;
}

int tc__cuda_built(void)
{
    return 1;
}

int tc__cuda_available(const char **why_p)
{
    pthread_once(&probe_once, probe);
    if (ndev == 0 && why_p != NULL) {
        *why_p = no_why;
    }
    return ndev > 0;
}

int tc__cuda_device_count(void)
{
    return tc__cuda_available(NULL) ? ndev : 0;
}

static void version_text(char *buf, size_t len, int v)
{
    snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

void tc__cuda_describe(char *buf, size_t len)
{
    int drv = 0, rt = 0, i;
    size_t pos;
    char dv[16], rv[16];

    (void)cudaRuntimeGetVersion(&rt);
    version_text(rv, sizeof(rv), rt);
    if (!tc__cuda_available(NULL)) {
        snprintf(buf, len, "built with the CUDA %s runtime; not available: %s", rv, no_why);
        return;
    }
    (void)cudaDriverGetVersion(&drv);
    version_text(dv, sizeof(dv), drv);
    pos = (size_t)snprintf(buf, len, "driver %s, runtime %s, %d device%s", dv, rv, ndev,
                           ndev == 1 ? "" : "s");
    for (i = 0; i < ndev && pos < len; i++) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
            (void)cudaGetLastError();
            continue;
        }
        pos +=
            (size_t)snprintf(buf + pos, len - pos, "; %d: %s (compute %d.%d, %.0f GiB)", i, p.name,
                             p.major, p.minor, (double)p.totalGlobalMem / (1024.0 * 1024 * 1024));
    }
}

tc_status_t tc__cuda_failed(tc_status_t st, char *why, size_t len, const char *what, cudaError_t e)
{
    snprintf(why, len, "%s: %s: %s", what, cudaGetErrorName(e), cudaGetErrorString(e));
    (void)cudaGetLastError();
    return st;
}

tc_status_t tc__cuda_check_ptr(int dev, const void *ptr, size_t bytes, char *why, size_t len)
{
    struct cudaPointerAttributes a;
    cudaError_t e;

    if (bytes == 0) {
        return TC_OK;
    }
    e = cudaPointerGetAttributes(&a, ptr);
    if (e != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_ARG, why, len,
                               "not memory CUDA knows (cudaPointerGetAttributes)", e);
    }
    switch (a.type) {
    case cudaMemoryTypeDevice:
    case cudaMemoryTypeManaged: break;
    case cudaMemoryTypeHost:
        snprintf(why, len, "is page-locked host memory, not device memory");
        return TC_ERR_ARG;
    default: snprintf(why, len, "is host memory, not device memory"); return TC_ERR_ARG;
    }
    if (a.device != dev) {
        snprintf(why, len, "is memory of CUDA device %d, not of device %d", a.device, dev);
        return TC_ERR_ARG;
    }
    if (a.type == cudaMemoryTypeDevice) {
        void *base = NULL;
        size_t size = 0;
        uintptr_t p = (uintptr_t)ptr;
        int cur = dev, old = -1, found;
        /* the driver's query needs a current context: dev's (the memory is
         * its), made current on a thread that may never have chosen one,
         * and the caller's device given back after */
        if (tc__cuda_enter(&cur, &old) != cudaSuccess) {
            (void)cudaGetLastError();
        }
        found = tc__cuda_mapped_range(ptr, bytes, &base, &size);
        tc__cuda_restore(dev, old);
        if (found && size > 0 && (bytes > size || p - (uintptr_t)base > size - bytes)) {
            snprintf(why, len, "runs %zu bytes past the end of its allocation",
                     (size_t)(p - (uintptr_t)base) + bytes - size);
            return TC_ERR_ARG;
        }
    }
    return TC_OK;
}

/* Makes dev current on this thread (its previous device in *old_p, when
 * old_p is not NULL) and its context's objects exist. */
static tc_status_t use_dev(int dev, int *old_p, devctx_t **c_p, char *why, size_t len)
{
    devctx_t *c;
    cudaError_t e;

    if (!tc__cuda_available(NULL) || dev < 0 || dev >= ndev) {
        snprintf(why, len, "CUDA device %d is not available (%.180s)", dev,
                 ndev == 0 ? no_why : "no such device");
        return TC_ERR_ARG;
    }
    if (old_p != NULL && cudaGetDevice(old_p) != cudaSuccess) {
        *old_p = -1;
        (void)cudaGetLastError();
    }
    if ((old_p == NULL || *old_p != dev) && (e = cudaSetDevice(dev)) != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "cudaSetDevice", e);
    }
    c = &devs[dev];
    pthread_mutex_lock(&c->mu);
    if (!c->made) {
        struct cudaMemPoolProps props;
        uint64_t keep = (uint64_t)1 << 30; /* what the pool keeps between uses */
        int no = 0, pools = 0;
        memset(&props, 0, sizeof(props));
        props.allocType = cudaMemAllocationTypePinned;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = dev;
        if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, dev) != cudaSuccess) {
            (void)cudaGetLastError();
            pools = 0;
        }
        c->pool = NULL;
        if ((e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) != cudaSuccess ||
            (e = cudaEventCreateWithFlags(&c->done, cudaEventBlockingSync |
                                                        cudaEventDisableTiming)) != cudaSuccess ||
            (pools && (e = cudaMemPoolCreate(&c->pool, &props)) != cudaSuccess) ||
            (e = cudaStreamCreateWithFlags(&c->alloc, cudaStreamNonBlocking)) != cudaSuccess) {
            pthread_mutex_unlock(&c->mu);
            return tc__cuda_failed(TC_ERR_TRANSPORT, why, len,
                                   "making tcoll's stream, event and pool", e);
        }
        if (c->pool != NULL) {
            (void)cudaMemPoolSetAttribute(c->pool, cudaMemPoolAttrReleaseThreshold, &keep);
            /* a block is given out again only once its free has run (tc__cuda_alloc) */
            (void)cudaMemPoolSetAttribute(c->pool, cudaMemPoolReuseFollowEventDependencies, &no);
            (void)cudaMemPoolSetAttribute(c->pool, cudaMemPoolReuseAllowInternalDependencies, &no);
        } else {
            TC_INFO("cuda",
                    "device %d has no memory pools: tcoll's device outputs come from cudaMalloc, "
                    "freed by the engine thread once their stream's work is done",
                    dev);
        }
        c->made = 1;
        TC_DEBUG("cuda", "device %d: tcoll's stream, event and memory pool made", dev);
    }
    pthread_mutex_unlock(&c->mu);
    *c_p = c;
    return TC_OK;
}

cudaError_t tc__cuda_enter(int *dev, int *old_p)
{
    *old_p = -1;
    if (*dev < 0) {
        if (cudaGetDevice(dev) != cudaSuccess) {
            (void)cudaGetLastError();
            *dev = -1;
        }
        return cudaSuccess;
    }
    if (cudaGetDevice(old_p) != cudaSuccess) {
        (void)cudaGetLastError();
        *old_p = -1;
    }
    return cudaSetDevice(*dev);
}

void tc__cuda_restore(int dev, int old)
{
    unsigned int flags = 0;
    int active = 1;

    if (old < 0 || old == dev) {
        return;
    }
    /* A thread that never chose a device reads device 0 as its current
     * one: setting it back would start device 0's context (a GPU the
     * process may not use at all), so only a device whose context is
     * active already is made current again. */
    if (state_fn != NULL && state_fn((CUdevice)old, &flags, &active) != CUDA_SUCCESS) {
        active = 1;
    }
    if (active) {
        (void)cudaSetDevice(old);
    }
}

tc_status_t tc__cuda_ctx(int dev, int *old_p, tc_cuda_ctx_t *ctx, char *why, size_t len)
{
    devctx_t *c;
    tc_status_t st = use_dev(dev, old_p, &c, why, len);

    if (st == TC_OK) {
        ctx->stream = c->stream;
        ctx->done = c->done;
    }
    return st;
}

tc_status_t tc__cuda_finish(const tc_cuda_ctx_t *ctx, char *why, size_t len)
{
    cudaError_t e;

    if ((e = cudaEventRecord(ctx->done, ctx->stream)) != cudaSuccess) {
        /* what is queued must still be over before the caller goes on (it
         * may close the mappings or fail the request the copies write) */
        (void)cudaStreamSynchronize(ctx->stream);
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "waiting for tcoll's stream", e);
    }
    if ((e = cudaEventSynchronize(ctx->done)) != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "waiting for tcoll's stream", e);
    }
    return TC_OK;
}

tc_status_t tc__cuda_mark(int dev, void *stream, tc_cuda_mark_t **mark_p, char *why, size_t len)
{
    tc_cuda_mark_t *m, **pp;
    devctx_t *c;
    cudaError_t e;
    enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    int old = -1;
    tc_status_t st = use_dev(dev, &old, &c, why, len);

    if (st != TC_OK) {
        tc__cuda_restore(dev, old);
        return st;
    }
    /* a stream capturing a CUDA graph: an event recorded there and waited
     * for on tcoll's stream would pull tcoll's work into the graph */
    if (cudaStreamIsCapturing((cudaStream_t)stream, &capture) == cudaSuccess &&
        capture != cudaStreamCaptureStatusNone) {
        tc__cuda_restore(dev, old);
        snprintf(why, len,
                 "the stream %p is capturing a CUDA graph: tcoll's collectives cannot be "
                 "captured (submit outside the capture)",
                 stream);
        return TC_ERR_ARG;
    }
    (void)cudaGetLastError();
    pthread_mutex_lock(&pool_mu);
    for (pp = &marks; *pp != NULL && (*pp)->dev != dev; pp = &(*pp)->next) {
    }
    m = *pp;
    if (m != NULL) {
        *pp = m->next;
    }
    pthread_mutex_unlock(&pool_mu);
    if (m == NULL) {
        if ((m = calloc(1, sizeof(*m))) == NULL) {
            tc__cuda_restore(dev, old);
            snprintf(why, len, "out of memory");
            return TC_ERR_NOMEM;
        }
        m->dev = dev;
        if ((e = cudaEventCreateWithFlags(&m->ev, cudaEventDisableTiming)) != cudaSuccess) {
            free(m);
            tc__cuda_restore(dev, old);
            return tc__cuda_failed(TC_ERR_NOMEM, why, len, "cudaEventCreate", e);
        }
    }
    e = cudaEventRecord(m->ev, (cudaStream_t)stream);
    tc__cuda_restore(dev, old);
    if (e != cudaSuccess) {
        /* a handle of the caller's, or the device's own failure (an earlier
         * kernel's fault is sticky) */
        int callers = e == cudaErrorInvalidResourceHandle || e == cudaErrorInvalidValue;
        tc__cuda_mark_release(m);
        if (callers) {
            snprintf(why, len,
                     "the stream %p cannot be used on CUDA device %d (cudaEventRecord: %s: %s)",
                     stream, dev, cudaGetErrorName(e), cudaGetErrorString(e));
        } else {
            snprintf(why, len,
                     "CUDA device %d cannot take work (cudaEventRecord on the stream %p: %s: %s)",
                     dev, stream, cudaGetErrorName(e), cudaGetErrorString(e));
        }
        (void)cudaGetLastError();
        return callers ? TC_ERR_ARG : TC_ERR_TRANSPORT;
    }
    *mark_p = m;
    return TC_OK;
}

void tc__cuda_mark_release(tc_cuda_mark_t *mark)
{
    if (mark == NULL) {
        return;
    }
    pthread_mutex_lock(&pool_mu);
    mark->next = marks;
    marks = mark;
    pthread_mutex_unlock(&pool_mu);
}

/* Queues a copy on dev's stream after `after`, then sleeps until it is done. */
static tc_status_t copy(int dev, void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                        const tc_cuda_mark_t *after, char *why, size_t len)
{
    devctx_t *c;
    cudaError_t e;
    tc_status_t st = use_dev(dev, NULL, &c, why, len);

    if (st != TC_OK) {
        return st;
    }
    if (after != NULL && (e = cudaStreamWaitEvent(c->stream, after->ev, 0)) != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "cudaStreamWaitEvent", e);
    }
    if (bytes > 0 && (e = cudaMemcpyAsync(dst, src, bytes, kind, c->stream)) != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "cudaMemcpyAsync", e);
    }
    {
        tc_cuda_ctx_t ctx = {c->stream, c->done};
        return tc__cuda_finish(&ctx, why, len);
    }
}

tc_status_t tc__cuda_mark_query(const tc_cuda_mark_t *mark, int *done_p, char *why, size_t len)
{
    cudaError_t e;

    *done_p = 1;
    if (mark == NULL || (e = cudaEventQuery(mark->ev)) == cudaSuccess) {
        return TC_OK;
    }
    if (e == cudaErrorNotReady) {
        (void)cudaGetLastError();
        *done_p = 0;
        return TC_OK;
    }
    return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "the submitting stream's work", e);
}

tc_status_t tc__cuda_to_host(int dev, void *dst, const void *src, size_t bytes,
                             const tc_cuda_mark_t *after, char *why, size_t len)
{
    return copy(dev, dst, src, bytes, cudaMemcpyDeviceToHost, after, why, len);
}

tc_status_t tc__cuda_to_device(int dev, void *dst, const void *src, size_t bytes, char *why,
                               size_t len)
{
    return copy(dev, dst, src, bytes, cudaMemcpyHostToDevice, NULL, why, len);
}

/* Carries out c's deferred frees whose event has happened (every one,
 * waiting, with all); engine thread or tc_shutdown, dev current. The list
 * is taken out of c first: cudaFree waits for the device, and a thread
 * deferring a free must not wait for it too. */
static void reap(devctx_t *c, int all)
{
    deferred_t *mine, *d, *keep = NULL, **tail = &keep;

    pthread_mutex_lock(&c->mu);
    mine = c->frees;
    c->frees = NULL;
    pthread_mutex_unlock(&c->mu);
    while ((d = mine) != NULL) {
        cudaError_t e = all ? cudaEventSynchronize(d->ev) : cudaEventQuery(d->ev);
        mine = d->next;
        if (e == cudaErrorNotReady) {
            d->next = NULL;
            *tail = d;
            tail = &d->next;
            continue;
        }
        if (e != cudaSuccess || cudaFree(d->p) != cudaSuccess) {
            TC_WARN("cuda", "freeing output %p: %s", d->p, cudaGetErrorString(cudaGetLastError()));
        }
        (void)cudaEventDestroy(d->ev);
        free(d);
    }
    (void)cudaGetLastError();
    if (keep != NULL) {
        pthread_mutex_lock(&c->mu);
        *tail = c->frees;
        c->frees = keep;
        pthread_mutex_unlock(&c->mu);
    }
}

/* Without pools: p is freed once what is queued on c's stream by now is
 * done (reap). 0 when it cannot be ordered so (p is then kept). */
static int defer_free(devctx_t *c, void *p)
{
    deferred_t *d = calloc(1, sizeof(*d));

    if (d == NULL || cudaEventCreateWithFlags(&d->ev, cudaEventDisableTiming) != cudaSuccess) {
        free(d);
        return 0;
    }
    if (cudaEventRecord(d->ev, c->stream) != cudaSuccess) {
        (void)cudaEventDestroy(d->ev);
        free(d);
        return 0;
    }
    d->p = p;
    pthread_mutex_lock(&c->mu);
    d->next = c->frees;
    c->frees = d;
    pthread_mutex_unlock(&c->mu);
    return 1;
}

tc_status_t tc__cuda_alloc(int dev, size_t bytes, void **p_p, char *why, size_t len)
{
    devctx_t *c;
    cudaError_t e;
    void *p = NULL;
    tc_status_t st = use_dev(dev, NULL, &c, why, len);

    if (st != TC_OK) {
        return st;
    }
    if (c->pool == NULL) { /* no pools: at once usable by every stream, process and MPI */
        reap(c, 0);
        if ((e = cudaMalloc(&p, bytes > 0 ? bytes : 1)) != cudaSuccess) {
            return tc__cuda_failed(TC_ERR_NOMEM, why, len, "cudaMalloc", e);
        }
        *p_p = p;
        return TC_OK;
    }
    /* On a stream of its own that nothing else uses, then synchronized:
     * the memory is at once usable by any stream, a peer process or MPI.
     * On tcoll's stream, the pool could give out a block whose free is
     * still queued there behind a wait for the user's stream (a request's
     * output freed while the user's kernels read it), usable in that
     * stream's order only. The pool reuses blocks whose free has run
     * (its event dependencies and internal dependencies are off), so the
     * synchronization never waits for anything but the allocation. */
    e = cudaMallocFromPoolAsync(&p, bytes > 0 ? bytes : 1, c->pool, c->alloc);
    if (e == cudaSuccess && (e = cudaStreamSynchronize(c->alloc)) != cudaSuccess) {
        (void)cudaFreeAsync(p, c->alloc);
    }
    if (e != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_NOMEM, why, len, "cudaMallocFromPoolAsync", e);
    }
    *p_p = p;
    return TC_OK;
}

void tc__cuda_free(int dev, void *p)
{
    tc__cuda_free_after(dev, p, NULL);
}

void tc__cuda_free_after(int dev, void *p, const tc_cuda_mark_t *after)
{
    devctx_t *c;
    char why[256];
    int old = -1;

    if (p == NULL) {
        return;
    }
    if (use_dev(dev, &old, &c, why, sizeof(why)) != TC_OK) {
        TC_WARN("cuda", "device %d: %s: output %p not freed", dev, why, p);
    } else if (after != NULL && cudaStreamWaitEvent(c->stream, after->ev, 0) != cudaSuccess) {
        /* not ordered after it: better kept than freed under a reader */
        TC_WARN("cuda", "device %d: cudaStreamWaitEvent: %s: output %p not freed", dev,
                cudaGetErrorString(cudaGetLastError()), p);
    } else if (c->pool == NULL) {
        if (!defer_free(c, p)) {
            TC_WARN("cuda", "device %d: %s: output %p not freed", dev,
                    cudaGetErrorString(cudaGetLastError()), p);
        }
    } else if (cudaFreeAsync(p, c->stream) != cudaSuccess) {
        TC_WARN("cuda", "device %d: cudaFreeAsync(%p): %s", dev, p,
                cudaGetErrorString(cudaGetLastError()));
    }
    tc__cuda_restore(dev, old);
}

void *tc__cuda_host_alloc(size_t bytes)
{
    void *p = NULL;

    if (!tc__cuda_available(NULL) ||
        cudaHostAlloc(&p, bytes > 0 ? bytes : 1, cudaHostAllocPortable) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return p;
}

void tc__cuda_host_free(void *p)
{
    if (p != NULL && cudaFreeHost(p) != cudaSuccess) {
        (void)cudaGetLastError();
    }
}

void tc__cuda_release(void)
{
    tc_cuda_mark_t *m, *next;
    int i, old = 0;

    pthread_mutex_lock(&pool_mu);
    m = marks;
    marks = NULL;
    pthread_mutex_unlock(&pool_mu);
    for (; m != NULL; m = next) {
        next = m->next;
        (void)cudaEventDestroy(m->ev);
        free(m);
    }
    if (ndev == 0 || cudaGetDevice(&old) != cudaSuccess) {
        return; /* never used (or no driver): nothing to wait for */
    }
    for (i = 0; i < ndev; i++) {
        devctx_t *c = &devs[i];
        /* the stream, event and pool stay for the process's life: outputs
         * of requests not yet freed live in the pool, and are freed on the
         * stream */
        pthread_mutex_lock(&c->mu);
        if (c->made && cudaSetDevice(i) == cudaSuccess) {
            (void)cudaStreamSynchronize(c->stream);
        }
        pthread_mutex_unlock(&c->mu);
        if (c->made) { /* the frees made so far (without pools) */
            reap(c, 1);
        }
    }
    tc__cuda_restore(-1, old); /* not starting old's context where it has none */
    (void)cudaGetLastError();
}
