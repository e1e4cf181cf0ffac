/*
 * backoff.c - spin, yield, then sleep with doubling intervals up to a cap;
 * and whether the calling thread has a CPU of its own to spin on.
 */
#define _GNU_SOURCE
#include "util/backoff.h"

#include <errno.h>
#include <sched.h>

#include "util/config.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

void tc__backoff_init(tc_backoff_t *b, uint32_t spin, uint32_t max_us)
{
    b->iter = 0;
    /* One CPU (tc__cpu_single): no spin, straight to the yield phase, whose
     * yields let the thread we wait for run. Yielding spin polls instead
     * made it worse: with TCOLL_SPIN=1000 and every thread on one CPU,
     * test_fifo's producers_and_one_consumer took 25 s spinning, 55 s
     * yielding (the producers yield to each other) and 3 s without a spin. */
    b->spin = spin != 0 && tc__cpu_single(tc__now_ns()) ? 0 : spin;
    b->yield_ns = (uint32_t)tc__config()->yield_us * 1000u;
    b->yield_end = 0;
    b->sleep_ns = 0;
    b->max_ns = max_us == 0 ? 1000u : max_us * 1000u;
}

/* After this long without progress, sleeps may grow past the cap to
 * PARK_NS: a rank waiting seconds for a slow peer then wakes ~250 times a
 * second instead of thousands (measured: 12% of a core -> under 1%), at the
 * price of noticing the end of such a wait up to 4 ms late. */
#define PARK_AFTER_NS 100000000ull
#define PARK_NS 4000000u

uint32_t tc__backoff_next(tc_backoff_t *b)
{
    uint32_t it = b->iter, cap;

    if (b->iter < UINT32_MAX) {
        b->iter++;
    }
    if (it < b->spin) {
        cpu_relax();
        return 0;
    }
    if (b->sleep_ns == 0) {
        /* Yield phase: gives the core to any runnable thread (a peer rank on
         * an oversubscribed machine) but keeps polling while the core is free,
         * so a transfer that completes in microseconds is not slept through. */
        uint64_t now = tc__now_ns();
        if (b->yield_end == 0) {
            b->yield_end = now + b->yield_ns;
        }
        if (now < b->yield_end) {
            sched_yield();
            return 0;
        }
    }
    cap = b->max_ns;
    if (cap < PARK_NS && tc__now_ns() > b->yield_end + PARK_AFTER_NS) {
        cap = PARK_NS; /* a long wait (a slow or stalled peer): park, nearly idle */
    }
    b->sleep_ns = b->sleep_ns == 0 ? 1000u : b->sleep_ns * 2u;
    if (b->sleep_ns > cap) {
        b->sleep_ns = cap;
    }
    return b->sleep_ns;
}

void tc__backoff_wait(tc_backoff_t *b)
{
    uint32_t ns = tc__backoff_next(b);

    if (ns != 0) {
        struct timespec ts = {0, (long)ns};
        nanosleep(&ts, NULL);
    }
}

struct timespec tc__deadline_after_ns(uint64_t ns)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ns += (uint64_t)ts.tv_nsec;
    ts.tv_sec += (time_t)(ns / 1000000000ull);
    ts.tv_nsec = (long)(ns % 1000000000ull);
    return ts;
}

/* The calling thread's affinity set holds exactly one CPU: 1; more: 0;
 * unreadable: -1. The set grows until the kernel's mask fits (EINVAL). */
static int cpu_single_read(void)
{
    int ncpu = CPU_SETSIZE, n;
    cpu_set_t *set;
    size_t bytes;

    for (;;) {
        set = CPU_ALLOC((size_t)ncpu);
        if (set == NULL) {
            return -1;
        }
        bytes = CPU_ALLOC_SIZE((size_t)ncpu);
        if (sched_getaffinity(0, bytes, set) == 0) {
            n = CPU_COUNT_S(bytes, set);
            CPU_FREE(set);
            return n == 1;
        }
        CPU_FREE(set);
        if (errno != EINVAL || ncpu >= (1 << 20)) {
            return -1;
        }
        ncpu *= 2;
    }
}

/* Per thread: tc__cpu_single's answer and when it was read (0: never). */
static _Thread_local int cpu_single;
static _Thread_local uint64_t cpu_single_read_ns;

int tc__cpu_single(uint64_t now_ns)
{
    if (cpu_single_read_ns == 0 || now_ns - cpu_single_read_ns >= TC_CPU_SINGLE_RECHECK_NS) {
        cpu_single = cpu_single_read() == 1;
        cpu_single_read_ns = now_ns != 0 ? now_ns : 1;
    }
    return cpu_single;
}
