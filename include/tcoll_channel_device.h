/*
 * tcoll_channel_device.h - semaphores, memory channels and port channels
 * (tcoll_channel.h) driven from GPU kernels: header-only, C11, C++ and CUDA
 * C. Every function is __host__ __device__ under nvcc, so the same calls
 * also run on host threads (tcoll's CPU tests drive them that way).
 *
 * A handle is plain data, filled on the host by tc_sem_device_handle,
 * tc_memchan_device_handle or tc_portchan_device_handle and passed to a
 * kernel by value (as an argument, or copied into device memory). In a
 * context made with TC_CHAN_CUDA (tc_chan_opts_t.flags) its pointers are
 * device addresses: the semaphore areas, the proxy's FIFO and the host
 * memory of memory channels are page-locked and mapped for the context's
 * device. In any other context they are host addresses, for host threads.
 *
 * The same semantics as the host calls (docs/channels.md):
 *   - a memory channel put is complete when it returns (plain stores into
 *     the peer's memory); a port channel put is carried out by the proxy,
 *     and the operations of one channel complete in push order;
 *   - a signal is seen only after every earlier put of its channel: a
 *     memory channel's signal fences (system scope) before it adds to the
 *     peer's counter, a port channel's travels through the FIFO after them;
 *   - flush means done at the destination and the source is free: for a
 *     port channel, the proxy has carried out every earlier operation (the
 *     kernel waits for its flush trigger's pop); for a memory channel, a
 *     system-scope fence;
 *   - a wait consumes one signal, and sees every byte put before it.
 *
 * Who may call: put and get by one thread (tid 0 of 1) or by the threads
 * of a block together (tid = threadIdx.x, nthreads = blockDim.x: each
 * copies its share; then __syncthreads() and one thread signals). Signal,
 * wait, poll, flush and the port channel's calls: one thread. A handle's
 * waits count what they consumed in the handle (expected): keep one copy
 * of it per waiting thread, and wait on a semaphore either on the host
 * (tc_sem_wait) or through handles, not both.
 *
 * Atomicity across the bus: a device signal is an atomicAdd_system on a
 * counter in host memory. It is atomic against the CPU's signals (and so
 * may share a semaphore with host signallers) only where the device has
 * cudaDevAttrHostNativeAtomicSupported; elsewhere signal one semaphore from
 * the device or from the host, not both at once (a port channel's signal
 * is the proxy's: a host signal; a memory channel's from a kernel is the
 * device's). Waits are plain loads and work everywhere. The same holds
 * for the context's FIFO: a kernel takes its place in it with an
 * atomicAdd_system on its head, and the host's own pushes into it (port
 * channel puts, signals, flushes and destroys from host threads, and
 * semaphore signals to another node) take theirs with the CPU's atomics.
 * Without cudaDevAttrHostNativeAtomicSupported (most PCIe machines), do
 * not make those host calls on a context while a kernel may push into
 * it: two pushers could get one place, and a trigger would be lost.
 *
 * Time limits: a device wait takes timeout_ns (< 0: none), measured with
 * the GPU's global timer; it cannot see a peer's process exit, so give
 * kernels that wait on other processes a limit.
 */
#ifndef TCOLL_CHANNEL_DEVICE_H
#define TCOLL_CHANNEL_DEVICE_H

#include "tcoll_channel.h"
#include "tcoll_fifo_device.h"
#include "tcoll_trigger.h"

#include <stdint.h>
#if !defined(__CUDA_ARCH__)
#include <string.h>
#include <time.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A semaphore (peer, id) of this rank. */
typedef struct {
    uint64_t *inbound;          /* this rank's counter: signals from the peer */
    uint64_t *outbound;         /* the peer's counter this rank signals; NULL: another node */
    uint64_t expected;          /* signals consumed through this handle */
    tc_fifo_device_t fifo;      /* the context's proxy FIFO (signals to another node) */
    tc_trigger_t remote_signal; /* the trigger that signals a peer on another node */
} tc_sem_device_t;

/* A memory channel: this rank's memory and the peer's, both reachable here. */
typedef struct {
    char *src; /* this rank's registered memory */
    char *dst; /* the peer's, mapped */
    uint64_t src_size, dst_size;
    tc_sem_device_t sem;
} tc_memchan_device_t;

/* A port channel: triggers into the context's proxy FIFO. */
typedef struct {
    tc_fifo_device_t fifo;
    uint32_t chan; /* the channel's id in the proxy */
    uint32_t pad;
    uint64_t src_size, dst_size;
    const uint64_t *failures; /* operations of this channel id that failed, ever */
    uint64_t failures_seen;   /* the count when the handle was made (or last flushed) */
    tc_sem_device_t sem;
} tc_portchan_device_t;

/* Host: fill a handle. TC_ERR_ARG: NULL arguments; TC_ERR_TRANSPORT: the
 * memory could not be mapped for the context's device (the message says
 * why). tc_memchan_device_handle maps the channel's host memory for the
 * device on first use (page-locked until its registration or handle is
 * closed). */
tc_status_t tc_sem_device_handle(tc_sem_t *sem, tc_sem_device_t *h_p);
tc_status_t tc_memchan_device_handle(tc_memchan_t *ch, tc_memchan_device_t *h_p);
tc_status_t tc_portchan_device_handle(tc_portchan_t *ch, tc_portchan_device_t *h_p);
/* Host, once the waits through h are over (the kernel has finished; copy
 * the handle back first if it waited on a copy in device memory): the
 * semaphore's host waits go on from what h consumed. TC_ERR_ARG: NULL
 * arguments, or h is not a handle of sem. */
tc_status_t tc_sem_device_done(tc_sem_t *sem, const tc_sem_device_t *h);

/* ---- time and pauses ---------------------------------------------------- */

static inline TC_HOST_DEVICE uint64_t tc__dev_now_ns(void)
{
#if defined(__CUDA_ARCH__)
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#else
    struct timespec ts;
#if defined(CLOCK_MONOTONIC)
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
#else
    (void)timespec_get(&ts, TIME_UTC); /* strict C11: no POSIX clocks declared */
#endif
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* One round of a wait: __nanosleep doubling on a device, the FIFO header's
 * host back-off on the host. */
static inline TC_HOST_DEVICE void tc__dev_pause(uint32_t *round_p)
{
#if defined(__CUDA_ARCH__)
    uint32_t r = (*round_p)++;
    __nanosleep(r >= 6 ? TC_FIFO_DEVICE_SLEEP_MAX_NS : TC_FIFO_DEVICE_SLEEP_MIN_NS << r);
#else
    tc__fifo_device_host_wait(round_p);
#endif
}

/* ---- semaphores ------------------------------------------------------------ */

static inline TC_HOST_DEVICE uint64_t tc__dev_load(const uint64_t *p)
{
#if defined(__CUDA_ARCH__)
    return *(const volatile uint64_t *)p;
#else
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

/* Adds 1 to the peer's counter, after everything this thread wrote before
 * (system-scope fence). A peer on another node: pushed to the proxy, which
 * sends it after every trigger pushed before it. */
static inline TC_HOST_DEVICE void tc_sem_device_signal(tc_sem_device_t *h)
{
    if (h->outbound == NULL) {
        (void)tc_fifo_device_push(&h->fifo, h->remote_signal);
        return;
    }
#if defined(__CUDA_ARCH__)
    __threadfence_system(); /* release: earlier stores reach the peer first */
    atomicAdd_system((unsigned long long *)h->outbound, 1ull);
#else
    /* seq_cst: as tc_sem_signal (the waiter's acquire load sees our stores). */
    __atomic_fetch_add(h->outbound, (uint64_t)1, __ATOMIC_SEQ_CST);
#endif
}

/* 1 and one signal consumed if the peer has signalled more than this handle
 * has consumed; else 0. Never waits. */
static inline TC_HOST_DEVICE int tc_sem_device_poll(tc_sem_device_t *h)
{
    if (tc__dev_load(h->inbound) < h->expected + 1) {
        return 0;
    }
#if defined(__CUDA_ARCH__)
    __threadfence_system(); /* acquire: what the signaller wrote before is seen after */
#endif
    h->expected++;
    return 1;
}

/* Waits for the next signal: 0 once consumed, 1 when timeout_ns passed
 * first (nothing consumed; < 0: no limit). */
static inline TC_HOST_DEVICE int tc_sem_device_wait(tc_sem_device_t *h, int64_t timeout_ns)
{
    uint32_t round = 0;
    uint64_t t0 = 0;

    while (!tc_sem_device_poll(h)) {
        if (timeout_ns >= 0) {
            uint64_t now = tc__dev_now_ns();
            if (round == 0) {
                t0 = now;
            } else if (now - t0 >= (uint64_t)timeout_ns) {
                return 1;
            }
        }
        tc__dev_pause(&round);
    }
    return 0;
}

/* ---- memory channels ------------------------------------------------------- */

/* Copies size bytes from src to dst, thread tid of nthreads taking its
 * share: 16-byte words when both are 16-byte aligned, else bytes. */
static inline TC_HOST_DEVICE void tc__dev_copy(char *dst, const char *src, uint64_t size,
                                               uint32_t tid, uint32_t nthreads)
{
#if defined(__CUDA_ARCH__)
    uint64_t i = tid;
    if ((((uintptr_t)dst | (uintptr_t)src) & 15u) == 0) {
        uint64_t words = size / 16u;
        for (; i < words; i += nthreads) {
            ((uint4 *)(void *)dst)[i] = ((const uint4 *)(const void *)src)[i];
        }
        i = words * 16u + tid;
    }
    for (; i < size; i += nthreads) {
        dst[i] = src[i];
    }
#else
    /* nthreads contiguous shares (the host copies with memcpy) */
    uint64_t share = (size + nthreads - 1u) / nthreads;
    uint64_t from = share * tid;
    if (from < size) {
        memcpy(dst + from, src + from, (size_t)(size - from < share ? size - from : share));
    }
#endif
}

static inline TC_HOST_DEVICE int tc__dev_fits(uint64_t off, uint64_t size, uint64_t len)
{
    return off <= len && size <= len - off;
}

/* A checked copy between a memory channel's two sides: 1 (and nothing
 * copied) when a range is outside its memory or the thread is none of
 * nthreads, else this thread's share copied and 0. */
static inline TC_HOST_DEVICE int tc__dev_copy_checked(char *dst, uint64_t dst_size,
                                                      uint64_t dst_offset, const char *src,
                                                      uint64_t src_size, uint64_t src_offset,
                                                      uint64_t size, uint32_t tid,
                                                      uint32_t nthreads)
{
    if (!tc__dev_fits(src_offset, size, src_size) || !tc__dev_fits(dst_offset, size, dst_size) ||
        nthreads == 0 || tid >= nthreads) {
        return 1;
    }
    tc__dev_copy(dst + dst_offset, src + src_offset, size, tid, nthreads);
    return 0;
}

/* Copies size bytes from this rank's memory at src_offset to the peer's at
 * dst_offset: done when every participating thread has returned. 1 (and
 * nothing copied) when a range is outside either memory, else 0. */
static inline TC_HOST_DEVICE int tc_memchan_device_put(const tc_memchan_device_t *h,
                                                       uint64_t dst_offset, uint64_t src_offset,
                                                       uint64_t size, uint32_t tid,
                                                       uint32_t nthreads)
{
    return tc__dev_copy_checked(h->dst, h->dst_size, dst_offset, h->src, h->src_size, src_offset,
                                size, tid, nthreads);
}

/* Copies size bytes from the peer's memory at src_offset to this rank's at
 * dst_offset. */
static inline TC_HOST_DEVICE int tc_memchan_device_get(const tc_memchan_device_t *h,
                                                       uint64_t dst_offset, uint64_t src_offset,
                                                       uint64_t size, uint32_t tid,
                                                       uint32_t nthreads)
{
    return tc__dev_copy_checked(h->src, h->src_size, dst_offset, h->dst, h->dst_size, src_offset,
                                size, tid, nthreads);
}

static inline TC_HOST_DEVICE void tc_memchan_device_signal(tc_memchan_device_t *h)
{
    tc_sem_device_signal(&h->sem);
}

/* One thread: a put, then a signal. */
static inline TC_HOST_DEVICE int tc_memchan_device_put_with_signal(tc_memchan_device_t *h,
                                                                   uint64_t dst_offset,
                                                                   uint64_t src_offset,
                                                                   uint64_t size)
{
    if (tc_memchan_device_put(h, dst_offset, src_offset, size, 0, 1) != 0) {
        return 1;
    }
    tc_sem_device_signal(&h->sem);
    return 0;
}

static inline TC_HOST_DEVICE int tc_memchan_device_wait(tc_memchan_device_t *h, int64_t timeout_ns)
{
    return tc_sem_device_wait(&h->sem, timeout_ns);
}

static inline TC_HOST_DEVICE int tc_memchan_device_poll(tc_memchan_device_t *h)
{
    return tc_sem_device_poll(&h->sem);
}

/* A full system-scope fence: this thread's puts are visible to every
 * thread of every process before what it does next. */
static inline TC_HOST_DEVICE void tc_memchan_device_flush(const tc_memchan_device_t *h)
{
    (void)h;
#if defined(__CUDA_ARCH__)
    __threadfence_system();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* ---- port channels --------------------------------------------------------- */

/* Pushes one operation (TC_TRIG_* bits) and returns its FIFO position, or
 * UINT64_MAX (nothing pushed) when a range is outside either memory or a
 * field does not fit a trigger. */
static inline TC_HOST_DEVICE uint64_t tc__portchan_device_push(const tc_portchan_device_t *h,
                                                               uint32_t type, uint64_t dst_offset,
                                                               uint64_t src_offset, uint64_t size)
{
    tc_trigger_t t;

    if (((type & TC_TRIG_PUT) != 0 && (!tc__dev_fits(src_offset, size, h->src_size) ||
                                       !tc__dev_fits(dst_offset, size, h->dst_size))) ||
        tc_trigger_encode(type, h->chan, dst_offset, src_offset, size, &t) != 0) {
        return UINT64_MAX;
    }
    return tc_fifo_device_push(&h->fifo, t);
}

/* Each pushes one trigger and returns without waiting for it (only while
 * the FIFO is full): 0, or 1 when refused (nothing pushed). The proxy
 * reads the source when it carries the put out: keep it until a flush. */
static inline TC_HOST_DEVICE int tc_portchan_device_put(const tc_portchan_device_t *h,
                                                        uint64_t dst_offset, uint64_t src_offset,
                                                        uint64_t size)
{
    return tc__portchan_device_push(h, TC_TRIG_PUT, dst_offset, src_offset, size) == UINT64_MAX;
}

static inline TC_HOST_DEVICE int tc_portchan_device_signal(const tc_portchan_device_t *h)
{
    return tc__portchan_device_push(h, TC_TRIG_SIGNAL, 0, 0, 0) == UINT64_MAX;
}

static inline TC_HOST_DEVICE int tc_portchan_device_put_with_signal(const tc_portchan_device_t *h,
                                                                    uint64_t dst_offset,
                                                                    uint64_t src_offset,
                                                                    uint64_t size)
{
    return tc__portchan_device_push(h, TC_TRIG_PUT | TC_TRIG_SIGNAL, dst_offset, src_offset,
                                    size) == UINT64_MAX;
}

/* Pushes a flush and waits until the proxy has carried it out: every
 * operation pushed before it on this channel is then complete at the
 * destination and its source may be reused. 0, or 1 when an operation of
 * the channel failed since the handle was made or last flushed (the host's
 * tc_portchan_flush says which and why). */
static inline TC_HOST_DEVICE int tc_portchan_device_flush(tc_portchan_device_t *h)
{
    uint64_t pos = tc__portchan_device_push(h, TC_TRIG_FLUSH, 0, 0, 0);
    uint64_t failed;

    if (pos == UINT64_MAX) { /* refused (not a handle): nothing to wait for */
        return 1;
    }
    tc_fifo_device_sync(&h->fifo, pos);
    failed = tc__dev_load(h->failures);
    if (failed != h->failures_seen) {
        h->failures_seen = failed;
        return 1;
    }
    return 0;
}

/* The receiving side: waits for, or polls, the channel's semaphore. */
static inline TC_HOST_DEVICE int tc_portchan_device_wait(tc_portchan_device_t *h,
                                                         int64_t timeout_ns)
{
    return tc_sem_device_wait(&h->sem, timeout_ns);
}

static inline TC_HOST_DEVICE int tc_portchan_device_poll(tc_portchan_device_t *h)
{
    return tc_sem_device_poll(&h->sem);
}

#ifdef __cplusplus
}
#endif

#endif /* TCOLL_CHANNEL_DEVICE_H */
