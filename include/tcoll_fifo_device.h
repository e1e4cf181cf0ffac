/*
 * tcoll_fifo_device.h - pushing triggers into a proxy's FIFO from outside the
 * process's own threads, above all from a CUDA kernel. Header-only except for
 * tc_fifo_device_view; C11 and C++, and with nvcc every inline function is
 * __host__ __device__ (TC_HOST_DEVICE, tcoll_trigger.h).
 *
 * A device producer cannot make system calls, so it can neither park on a
 * futex nor ring the proxy's doorbell. tc_fifo_device_push therefore follows
 * the FIFO's slot protocol (src/proxy/fifo.c) without the parking half:
 *
 *   step  who              does                                        seq afterwards
 *   ----  ---------------  ------------------------------------------  --------------
 *    1    device producer  p = fetch_add(head, 1)                      (unchanged)
 *    2    device producer  polls the slot of p (with a growing pause)  2p
 *                          until seq == 2p: the pop of p - N freed it
 *    3    device producer  fence (acquire side); writes fst, snd;      2p + 1
 *                          fence (release side); stores seq = 2p + 1
 *    4    proxy thread     sees 2p + 1 when its poll reaches p, runs   2(p + N)
 *                          the handler, pops (frees the slot)
 *
 * It never touches the slot's waiters count (host threads parked on seq) and
 * never rings: tc_fifo_device_view puts the FIFO in device mode, in which
 * its proxy parks with a time limit (50 us, doubling to 1 ms while idle), so
 * a device push is handled within about a millisecond even when the proxy
 * sleeps, while an idle proxy costs only about a thousand short wake-ups a
 * second. Host pushes (tc_fifo_push) keep waking it at once.
 *
 * Using it from a GPU (compute capability 7.0 or newer: __nanosleep, and
 * independent thread scheduling so that the threads of one warp waiting on
 * different slots cannot block each other):
 *
 *   tc_fifo_device_t host_view, dev_view;
 *   tc_fifo_device_view(tc_proxy_fifo(proxy), &host_view);
 *   tc_fifo_device_map_cuda(&host_view, &dev_view);   (cudaHostRegister with
 *       cudaHostRegisterMapped of [map_base, map_base + map_bytes), then
 *       cudaHostGetDevicePointer and tc_fifo_device_rebase)
 *   kernel<<<...>>>(dev_view);   in it: tc_fifo_device_push(&dev_view, t)
 *   ...
 *   cudaHostUnregister(host_view.map_base);   before tc_proxy_destroy
 *
 * map_base and map_bytes are whole pages that hold the FIFO (its counters,
 * head among them, and its slots) and nothing else, so registering them
 * cannot collide with another registration.
 *
 * Atomicity across the bus. Step 1 is the only read-modify-write a producer
 * makes. GPU atomics on mapped host memory are atomic among the threads of
 * that GPU, but atomic against the CPU's (tc_fifo_push, tc_fifo_try_push)
 * only where the link supports it: cudaDevAttrHostNativeAtomicSupported.
 * Without it, a FIFO must have producers on one GPU only, or on the host
 * only; never both at once. Everything else is plain loads and stores.
 */
#ifndef TCOLL_FIFO_DEVICE_H
#define TCOLL_FIFO_DEVICE_H

#include "tcoll.h"
#include "tcoll_trigger.h" /* TC_HOST_DEVICE, and the trigger encoding a device pushes */

#include <stddef.h>
#include <stdint.h>
#if !defined(__CUDA_ARCH__)
#include <time.h>
#if !defined(__cplusplus)
#include <threads.h> /* thrd_sleep: C11, so this header needs no POSIX feature macro */
#endif
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700
#error "tcoll_fifo_device.h: the device push needs compute capability 7.0 or newer"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* One slot, exactly as the FIFO lays it out (32 bytes; checked where the
 * FIFO is built). seq == 2p: free for position p; 2p + 1: holds trigger p. */
typedef struct {
    uint32_t seq;
    uint32_t waiters; /* host threads parked on seq; a device producer leaves it alone */
    uint64_t fst;     /* the trigger, plain memory ordered by seq */
    uint64_t snd;
    uint64_t pad;
} tc_fifo_device_slot_t;

/* A view of one FIFO for producers outside the process's own threads. Plain
 * data: copy it by value into a kernel's arguments. */
typedef struct {
    tc_fifo_device_slot_t *slots; /* size slots; position p lives in slots[p & mask] */
    uint64_t *head;               /* the ticket counter: the next position to hand out */
    uint64_t size;                /* slots, a power of two */
    uint64_t mask;                /* size - 1 */
    void *map_base;               /* start of the FIFO's pages (head, slots and the rest) */
    size_t map_bytes;             /* their length (whole pages): what to register */
    size_t slots_bytes;           /* size * sizeof(tc_fifo_device_slot_t) */
} tc_fifo_device_t;

/* Where the FIFO's tail counter (positions below it have been handled) is:
 * this many bytes into the pages at map_base (checked where the FIFO is
 * built). Read only, by tc_fifo_device_sync. */
#define TC_FIFO_DEVICE_TAIL_OFFSET 128u

/*
 * Fills *view_p with host pointers to fifo's head and slots, and puts the
 * FIFO in device mode for the rest of its life: its proxy then parks with a
 * time limit (see above). Call it before the first device push; calling it
 * again gives the same view. Any thread. Not collective. TC_ERR_ARG when
 * fifo or view_p is NULL (*view_p untouched).
 */
tc_status_t tc_fifo_device_view(tc_fifo_t *fifo, tc_fifo_device_t *view_p);

/* Device (and host) waits for a free slot: pause lengths. */
#define TC_FIFO_DEVICE_SLEEP_MIN_NS 32u
#define TC_FIFO_DEVICE_SLEEP_MAX_NS 2048u
#define TC_FIFO_DEVICE_HOST_SPINS 64u           /* host: CPU pauses before sleeping */
#define TC_FIFO_DEVICE_HOST_SLEEP_MAX_NS 64000u /* host: longest sleep */

/*
 * The view moved to another address space: every pointer in [map_base,
 * map_base + map_bytes) of view is moved to the same offset from base (for a
 * GPU: what cudaHostGetDevicePointer gives for map_base). Host code.
 */
static inline void tc_fifo_device_rebase(const tc_fifo_device_t *view, void *base,
                                         tc_fifo_device_t *view_p)
{
    const char *from = (const char *)view->map_base;
    char *to = (char *)base;
    tc_fifo_device_t v = *view;

    v.slots = (tc_fifo_device_slot_t *)(to + ((const char *)view->slots - from));
    v.head = (uint64_t *)(to + ((const char *)view->head - from));
    v.map_base = base;
    *view_p = v;
}

#if !defined(__CUDA_ARCH__)
/* Host side of a wait for a free slot: pause instructions first, then sleeps
 * that double up to TC_FIFO_DEVICE_HOST_SLEEP_MAX_NS. Never a bare spin. */
static inline void tc__fifo_device_host_wait(uint32_t *round_p)
{
    uint32_t r = (*round_p)++;
    struct timespec ts;

    if (r < TC_FIFO_DEVICE_HOST_SPINS) {
#if defined(__x86_64__) || defined(__i386__)
        __asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__)
        __asm__ __volatile__("yield" ::: "memory");
#endif
        return;
    }
    r -= TC_FIFO_DEVICE_HOST_SPINS;
    ts.tv_sec = 0;
    ts.tv_nsec = r >= 6 ? (long)TC_FIFO_DEVICE_HOST_SLEEP_MAX_NS : 1000L << r; /* 1 .. 64 us */
#if defined(__cplusplus)
    (void)nanosleep(&ts, NULL); /* C++ compilers on Linux define _GNU_SOURCE */
#else
    (void)thrd_sleep(&ts, NULL);
#endif
}
#endif

/*
 * Pushes t (same slot protocol as tc_fifo_push, no parking, no doorbell) and
 * returns its position: unique, increasing in this producer's push order,
 * shared with the host's pushes (tc_fifo_sync takes it). Waits while the FIFO
 * is full: on the device with __nanosleep (32 ns doubling to 2 us), on the
 * host with pauses, then sleeps. Many threads at once. v must come from
 * tc_fifo_device_view (rebased for a device), and its FIFO must outlive the
 * push. Triggers of one thread are handled in the order it pushed them.
 */
static inline TC_HOST_DEVICE uint64_t tc_fifo_device_push(const tc_fifo_device_t *v, tc_trigger_t t)
{
    uint64_t pos;
    tc_fifo_device_slot_t *s;
    uint32_t want;

#if defined(__CUDA_ARCH__)
    unsigned int ns = TC_FIFO_DEVICE_SLEEP_MIN_NS;

    /* system scope, relaxed (CUDA atomics order nothing): head only hands
     * out unique numbers, as in tc_fifo_push; seq carries the ordering. */
    pos = (uint64_t)atomicAdd_system((unsigned long long *)v->head, 1ull);
    s = &v->slots[pos & v->mask];
    want = (uint32_t)(pos * 2u);
    /* volatile: a relaxed system-scope load, read from host memory each
     * time. The slot turns free by the proxy's pop (a seq_cst store). */
    while (*(volatile uint32_t *)&s->seq != want) {
        __nanosleep(ns);
        if (ns < TC_FIFO_DEVICE_SLEEP_MAX_NS) {
            ns *= 2u;
        }
    }
    /* Acquire side: the load that saw the slot free is ordered before our
     * writes of fst/snd, so the proxy's reads of the previous trigger in this
     * slot (before its pop) are not overwritten under it. */
    __threadfence_system();
    *(volatile uint64_t *)&s->fst = t.fst;
    *(volatile uint64_t *)&s->snd = t.snd;
    /* Release side: fst/snd reach host memory before the seq that publishes
     * them; pairs with the acquire load of seq in the proxy's poll. */
    __threadfence_system();
    *(volatile uint32_t *)&s->seq = want + 1u;
#else
    uint32_t round = 0;

    /* relaxed: as in tc_fifo_push, head only hands out unique numbers. */
    pos = __atomic_fetch_add(v->head, (uint64_t)1, __ATOMIC_RELAXED);
    s = &v->slots[pos & v->mask];
    want = (uint32_t)(pos * 2u);
    /* acquire: pairs with the pop's store of seq (release part of its
     * seq_cst store): the consumer's reads of the previous trigger in this
     * slot happen before our writes of the next one. */
    while (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != want) {
        tc__fifo_device_host_wait(&round);
    }
    s->fst = t.fst;
    s->snd = t.snd;
    /* release: pairs with the acquire load of seq in the consumer's poll,
     * which reads fst/snd only after seeing this. No seq_cst and no look at
     * the doorbell: a device producer never rings (the proxy's timed park
     * covers it), and this path does exactly what the device does. */
    __atomic_store_n(&s->seq, want + 1u, __ATOMIC_RELEASE);
#endif
    return pos;
}

/*
 * Waits until the trigger at pos (what tc_fifo_device_push returned) has
 * been handled: its handler has returned and the proxy has popped it, so
 * everything the handler did is done (for a port channel's flush: every
 * earlier operation of the channel is complete at the destination).
 * Same waits as the push. The proxy's pop stores tail with release after
 * the handler; here a volatile load that sees it, then a system-scope
 * fence (device) or an acquire load (host), so that what follows the wait
 * (reusing a source buffer) comes after the handler's work.
 */
static inline TC_HOST_DEVICE void tc_fifo_device_sync(const tc_fifo_device_t *v, uint64_t pos)
{
    uint64_t *tail = (uint64_t *)(void *)((char *)v->map_base + TC_FIFO_DEVICE_TAIL_OFFSET);
#if defined(__CUDA_ARCH__)
    unsigned int ns = TC_FIFO_DEVICE_SLEEP_MIN_NS;

    while (*(volatile uint64_t *)tail <= pos) {
        __nanosleep(ns);
        if (ns < TC_FIFO_DEVICE_SLEEP_MAX_NS) {
            ns *= 2u;
        }
    }
    __threadfence_system();
#else
    uint32_t round = 0;

    /* acquire: pairs with the pop's release store of tail. */
    while (__atomic_load_n(tail, __ATOMIC_ACQUIRE) <= pos) {
        tc__fifo_device_host_wait(&round);
    }
#endif
}

/* A proxy made by tc_proxy_create_device: *view_p is its FIFO as its device
 * sees it (the pages are mapped already; pass the view to kernels as it
 * is). TC_ERR_STATE for a host proxy; TC_ERR_ARG for NULL arguments. */
tc_status_t tc_proxy_fifo_device(tc_proxy_t *proxy, tc_fifo_device_t *view_p);

#if defined(__CUDACC__)
/*
 * Host code compiled by nvcc: registers the pages of host_view with CUDA
 * (cudaHostRegister, cudaHostRegisterMapped) and sets *dev_view_p to the
 * same view with device pointers (cudaHostGetDevicePointer, then
 * tc_fifo_device_rebase). Returns the first CUDA error, with nothing left
 * registered. Undo with cudaHostUnregister(host_view->map_base) before the
 * FIFO is destroyed.
 */
static inline cudaError_t tc_fifo_device_map_cuda(const tc_fifo_device_t *host_view,
                                                  tc_fifo_device_t *dev_view_p)
{
    void *dev = NULL;
    cudaError_t err;

    err = cudaHostRegister(host_view->map_base, host_view->map_bytes, cudaHostRegisterMapped);
    if (err != cudaSuccess) {
        return err;
    }
    err = cudaHostGetDevicePointer(&dev, host_view->map_base, 0);
    if (err != cudaSuccess) {
        (void)cudaHostUnregister(host_view->map_base);
        return err;
    }
    tc_fifo_device_rebase(host_view, dev, dev_view_p);
    return cudaSuccess;
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* TCOLL_FIFO_DEVICE_H */
