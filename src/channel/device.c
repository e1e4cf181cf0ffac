/*
 * device.c - a context's device side: handles through which GPU kernels
 * (or host threads, through the same header) signal and wait on
 * semaphores, put and get over memory channels and push port channel
 * operations (tcoll_channel_device.h), and the memory those handles point
 * into.
 *
 * A context made with TC_CHAN_CUDA maps for its device, at creation: this
 * rank's semaphore area and those of the ranks of its node (their lines are
 * what device signals add to and device waits poll), and the per-channel
 * failure counters a device flush reads. The proxy's FIFO is mapped by the
 * proxy itself (tc_proxy_create_device). Memory of memory channels is
 * mapped when a handle first needs it: this rank's registered memory (the
 * whole tc_mem_alloc region it lies in, counted, so that several
 * registrations in one region share one CUDA registration) and each opened
 * peer region; they are unmapped when their registration is deregistered
 * or their handle closed, and what is left when the context goes.
 *
 * In any other context the handles hold host addresses: the FIFO is put in
 * device mode all the same (a push through the device header rings no
 * doorbell, so the proxy must park with a time limit).
 *
 * A device signal cannot wake a futex, so a handle that may signal a line
 * marks it (tc_sem_line_t.device): host waits on a marked line park for a
 * limited time (semaphore.c).
 */
#define _GNU_SOURCE
#include "channel/channel_internal.h"
#include "cuda/cuda.h"
#include "tcoll_channel_device.h"
#include "util/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAILS_BYTES (((size_t)TC_CHAN_NCHANS * sizeof(uint64_t) + 4095u) & ~(size_t)4095u)

/* A range of this rank's host memory mapped for the device, shared by the
 * registrations that lie in it. */
struct tc_chan_devmap {
    struct tc_chan_devmap *next;
    char *host;
    uint64_t len;
    char *dev;
    int refs;
};

int tc__chan_device_setup(tc_chan_ctx_t *ctx, int device, char *why, size_t len)
{
    char cwhy[256];
    void *dev = NULL;
    int r, n;

    ctx->device = -1;
    if (device == TC_CHAN_NO_DEVICE) {
        ctx->fails = calloc(TC_CHAN_NCHANS, sizeof(*ctx->fails));
        if (ctx->fails == NULL) {
            snprintf(why, len, "out of memory");
            return 0;
        }
        ctx->fails_dev = (uint64_t *)(void *)ctx->fails;
        return 1;
    }
    if (device == TC_PROXY_CURRENT_DEVICE &&
        tc__cuda_current(&device, cwhy, sizeof(cwhy)) != TC_OK) {
        snprintf(why, len, "TC_CHAN_CUDA: no current CUDA device: %s", cwhy);
        return 0;
    }
    n = tc__cuda_device_count(); /* a context for host threads never asks CUDA */
    if (device < 0 || device >= n) {
        const char *no = "";
        if (!tc__cuda_available(&no)) {
            snprintf(why, len, "TC_CHAN_CUDA: CUDA device %d: %s", device, no);
        } else {
            snprintf(why, len, "TC_CHAN_CUDA: CUDA device %d does not exist (this process sees %d)",
                     device, n);
        }
        return 0;
    }
    ctx->device = device;
    ctx->fails = aligned_alloc(4096, FAILS_BYTES);
    if (ctx->fails == NULL) {
        snprintf(why, len, "out of memory");
        return 0;
    }
    memset((void *)ctx->fails, 0, FAILS_BYTES);
    if (tc__cuda_host_map(ctx->device, (void *)ctx->fails, FAILS_BYTES, &dev, cwhy, sizeof(cwhy)) !=
        TC_OK) {
        snprintf(why, len, "TC_CHAN_CUDA: mapping the failure counters for device %d: %s", device,
                 cwhy);
        free((void *)ctx->fails);
        ctx->fails = NULL;
        return 0;
    }
    ctx->fails_dev = dev;
    for (r = 0; r < ctx->size; r++) {
        tc_chan_peer_t *p = &ctx->peers[r];
        if (!p->same_node) {
            continue;
        }
        if (tc__cuda_host_map(ctx->device, p->area, (size_t)p->area_len, &dev, cwhy,
                              sizeof(cwhy)) != TC_OK) {
            snprintf(why, len, "TC_CHAN_CUDA: mapping rank %d's semaphores for device %d: %s", r,
                     device, cwhy);
            return 0;
        }
        p->area_dev = dev;
    }
    /* the proxy thread's staging buffer, page-locked now: allocating it in
     * a handler, while a kernel that pushed the trigger spins, would ask
     * CUDA for page-locked memory with the kernel running (an operation
     * CUDA may order after the device's work) */
    (void)tc__chan_bounce(ctx);
    return 1;
}

void tc__chan_device_teardown(tc_chan_ctx_t *ctx)
{
    struct tc_chan_devmap *m, *next;
    int r;

    tc__cuda_copier_destroy(ctx->copier);
    ctx->copier = NULL;
    if (ctx->bounce != NULL) {
        if (ctx->bounce_pinned) {
            tc__cuda_host_free(ctx->bounce);
        } else {
            free(ctx->bounce);
        }
        ctx->bounce = NULL;
    }

    for (m = ctx->maps; m != NULL; m = next) {
        next = m->next;
        tc__cuda_host_unmap(m->host);
        free(m);
    }
    ctx->maps = NULL;
    if (ctx->device >= 0) {
        for (r = 0; ctx->peers != NULL && r < ctx->size; r++) {
            if (ctx->peers[r].area_dev != NULL) {
                tc__cuda_host_unmap(ctx->peers[r].area);
                ctx->peers[r].area_dev = NULL;
            }
        }
        if (ctx->fails != NULL) {
            tc__cuda_host_unmap((void *)ctx->fails);
        }
    }
    free((void *)ctx->fails);
    ctx->fails = NULL;
    ctx->fails_dev = NULL;
}

tc_status_t tc__chan_copy(tc_chan_ctx_t *ctx, void *dst, const void *src, uint64_t size, char *why,
                          size_t len)
{
    tc_status_t st;

    if (ctx->copier == NULL &&
        (st = tc__cuda_copier_create(ctx->device, &ctx->copier, why, len)) != TC_OK) {
        return st;
    }
    if ((st = tc__cuda_copier_copy(ctx->copier, dst, src, (size_t)size, why, len)) != TC_OK) {
        return st;
    }
    return tc__cuda_copier_finish(ctx->copier, why, len);
}

char *tc__chan_bounce(tc_chan_ctx_t *ctx)
{
    if (ctx->bounce == NULL) {
        ctx->bounce = tc__cuda_host_alloc(TC_CHAN_BOUNCE);
        ctx->bounce_pinned = ctx->bounce != NULL;
        if (ctx->bounce == NULL) {
            ctx->bounce = malloc(TC_CHAN_BOUNCE);
        }
    }
    return ctx->bounce;
}

void tc__chan_device_forget_mem(tc_mem_t *mem)
{
    tc_chan_ctx_t *ctx = mem->ctx;
    struct tc_chan_devmap **pp, *m = NULL;

    pthread_mutex_lock(&ctx->mu);
    if (mem->devmap != NULL && --mem->devmap->refs == 0) {
        for (pp = &ctx->maps; *pp != NULL; pp = &(*pp)->next) {
            if (*pp == mem->devmap) {
                m = *pp;
                *pp = m->next;
                break;
            }
        }
    }
    mem->devmap = NULL;
    pthread_mutex_unlock(&ctx->mu);
    if (m != NULL) {
        tc__cuda_host_unmap(m->host);
        free(m);
    }
}

void tc__chan_device_forget_rmem(tc_rmem_t *rmem)
{
    if (rmem->mapped_dev != NULL) {
        tc__cuda_host_unmap(rmem->mapped);
        rmem->mapped_dev = NULL;
    }
}

/* ---- handles ---------------------------------------------------------------- */

static tc_status_t fifo_view(tc_chan_ctx_t *ctx, tc_fifo_device_t *v)
{
    return ctx->device >= 0 ? tc_proxy_fifo_device(ctx->proxy, v)
                            : tc_fifo_device_view(ctx->fifo, v);
}

/* A semaphore line of rank r's area as the handles see it. */
static uint64_t *line_addr(const tc_chan_ctx_t *ctx, int r, tc_sem_line_t *line)
{
    const tc_chan_peer_t *p = &ctx->peers[r];

    if (ctx->device < 0) {
        return (uint64_t *)(void *)&line->value;
    }
    return (uint64_t *)(void *)(p->area_dev + ((char *)(void *)line - (char *)(void *)p->area));
}

static void sem_fill(tc_sem_t *sem, const tc_fifo_device_t *v, tc_sem_device_t *h)
{
    tc_chan_ctx_t *ctx = sem->ctx;

    memset(h, 0, sizeof(*h));
    h->inbound = line_addr(ctx, ctx->rank, sem->in);
    if (sem->out != NULL) {
        h->outbound = line_addr(ctx, sem->peer, sem->out);
        /* relaxed: the waiter reads it before each park; a signal it
         * misses before the mark is seen by its next look (at most
         * TC_CHAN_PEER_CHECK_NS later). */
        atomic_store_explicit(&sem->out->device, 1, memory_order_relaxed);
    }
    h->expected = sem->expected;
    h->fifo = *v;
    h->remote_signal = tc__chan_own_trigger(ctx, TC_CHAN_OWN_SEM, (uint32_t)sem->peer, sem->id);
}

tc_status_t tc_sem_device_handle(tc_sem_t *sem, tc_sem_device_t *h_p)
{
    tc_fifo_device_t v;
    tc_status_t st;

    if (sem == NULL || h_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_sem_device_handle: %s is NULL",
                             sem == NULL ? "sem" : "h_p");
    }
    if ((st = fifo_view(sem->ctx, &v)) != TC_OK) {
        return st;
    }
    sem_fill(sem, &v, h_p);
    return TC_OK;
}

tc_status_t tc_sem_device_done(tc_sem_t *sem, const tc_sem_device_t *h)
{
    if (sem == NULL || h == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_sem_device_done: %s is NULL",
                             sem == NULL ? "sem" : "h");
    }
    if (h->inbound != line_addr(sem->ctx, sem->ctx->rank, sem->in)) {
        return tc__set_error(TC_ERR_ARG, "tc_sem_device_done: h is not a handle of this semaphore");
    }
    if (h->expected > sem->expected) {
        sem->expected = h->expected;
    }
    return TC_OK;
}

tc_status_t tc_portchan_device_handle(tc_portchan_t *ch, tc_portchan_device_t *h_p)
{
    tc_portchan_device_t h;
    tc_chan_ctx_t *ctx;
    tc_status_t st;

    if (ch == NULL || h_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_portchan_device_handle: %s is NULL",
                             ch == NULL ? "ch" : "h_p");
    }
    ctx = ch->ctx;
    memset(&h, 0, sizeof(h));
    if ((st = fifo_view(ctx, &h.fifo)) != TC_OK) {
        return st;
    }
    h.chan = ch->id;
    h.src_size = ch->local->size;
    h.dst_size = ch->remote->size;
    h.failures = ctx->fails_dev + ch->id;
    h.failures_seen = atomic_load_explicit(&ctx->fails[ch->id], memory_order_acquire);
    sem_fill(ch->sem, &h.fifo, &h.sem);
    *h_p = h;
    return TC_OK;
}

/* This rank's memory of mem as the device sees it: the range it lies in
 * (its tc_mem_alloc region, or itself) mapped once, counted per mem. */
static tc_status_t map_local(tc_chan_ctx_t *ctx, tc_mem_t *mem, char **dev_p)
{
    char *host = mem->fd >= 0 ? mem->base - mem->region_off : mem->base;
    uint64_t len = mem->fd >= 0 ? mem->region_len : mem->size;
    struct tc_chan_devmap *m;
    void *dev = NULL;
    char why[256];

    pthread_mutex_lock(&ctx->mu);
    if (mem->devmap == NULL) {
        for (m = ctx->maps; m != NULL; m = m->next) {
            if (m->host <= mem->base &&
                tc__chan_fits((uint64_t)(mem->base - m->host), mem->size, m->len)) {
                break;
            }
        }
        if (m == NULL) {
            if (tc__cuda_host_map(ctx->device, host, (size_t)(len > 0 ? len : 1), &dev, why,
                                  sizeof(why)) != TC_OK) {
                pthread_mutex_unlock(&ctx->mu);
                return tc__set_error(TC_ERR_TRANSPORT,
                                     "tc_memchan_device_handle: mapping this rank's %llu bytes "
                                     "at %p for CUDA device %d: %s",
                                     (unsigned long long)len, (void *)host, ctx->device, why);
            }
            m = calloc(1, sizeof(*m));
            if (m == NULL) {
                pthread_mutex_unlock(&ctx->mu);
                tc__cuda_host_unmap(host);
                return tc__set_error(TC_ERR_NOMEM, "tc_memchan_device_handle: out of memory");
            }
            m->host = host;
            m->len = len;
            m->dev = dev;
            m->next = ctx->maps;
            ctx->maps = m;
        }
        m->refs++;
        mem->devmap = m;
    }
    m = mem->devmap;
    *dev_p = m->dev + (mem->base - m->host);
    pthread_mutex_unlock(&ctx->mu);
    return TC_OK;
}

/* The peer's region of rmem as the device sees it, mapped once per handle. */
static tc_status_t map_remote(tc_chan_ctx_t *ctx, tc_rmem_t *rmem, char **dev_p)
{
    void *dev = NULL;
    char why[256];
    tc_status_t st = TC_OK;

    pthread_mutex_lock(&ctx->mu);
    if (rmem->mapped_dev == NULL) {
        if (tc__cuda_host_map(ctx->device, rmem->mapped, (size_t)rmem->region_len, &dev, why,
                              sizeof(why)) != TC_OK) {
            st = tc__set_error(TC_ERR_TRANSPORT,
                               "tc_memchan_device_handle: mapping rank %d's memory for CUDA "
                               "device %d: %s",
                               rmem->rank, ctx->device, why);
        } else {
            rmem->mapped_dev = dev;
        }
    }
    if (st == TC_OK) {
        *dev_p = rmem->mapped_dev + rmem->region_off;
    }
    pthread_mutex_unlock(&ctx->mu);
    return st;
}

tc_status_t tc_memchan_device_handle(tc_memchan_t *ch, tc_memchan_device_t *h_p)
{
    tc_memchan_device_t h;
    tc_fifo_device_t v;
    tc_chan_ctx_t *ctx;
    tc_status_t st;

    if (ch == NULL || h_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_memchan_device_handle: %s is NULL",
                             ch == NULL ? "ch" : "h_p");
    }
    ctx = ch->sem->ctx;
    memset(&h, 0, sizeof(h));
    if ((st = fifo_view(ctx, &v)) != TC_OK) {
        return st;
    }
    if (ctx->device < 0) {
        h.src = ch->local->base;
        h.dst = ch->dst;
    } else {
        /* device memory is used as it is (this rank's, or a peer's opened
         * with CUDA IPC); host memory is mapped for the device */
        if (ch->local->device >= 0) {
            h.src = ch->local->base;
        } else if ((st = map_local(ctx, ch->local, &h.src)) != TC_OK) {
            return st;
        }
        if (ch->remote->device >= 0) {
            h.dst = ch->dst;
        } else if ((st = map_remote(ctx, ch->remote, &h.dst)) != TC_OK) {
            return st;
        }
    }
    h.src_size = ch->local->size;
    h.dst_size = ch->remote->size;
    sem_fill(ch->sem, &v, &h.sem);
    *h_p = h;
    return TC_OK;
}
