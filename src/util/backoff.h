/*
 * backoff.h - the one waiting policy for every polling loop in tcoll:
 * spin briefly, then yield for a while, then sleep for growing intervals up
 * to a cap.
 *
 * On an oversubscribed machine (more ranks than cores) a poller that never
 * yields steals the core from the peer it waits for; this policy keeps short
 * waits fast and long waits cheap. Call tc__backoff_reset() on progress.
 * A thread that may run on one CPU only does not spin (tc__cpu_single).
 */
#ifndef TC_UTIL_BACKOFF_H
#define TC_UTIL_BACKOFF_H

#include <stdint.h>
#include <time.h>

typedef struct {
    uint32_t iter;      /* polls since the last progress */
    uint32_t spin;      /* polls spent spinning before yielding */
    uint32_t yield_ns;  /* then yield for this long (TCOLL_YIELD_US) */
    uint64_t yield_end; /* monotonic deadline of the yield phase, 0 before it */
    uint32_t sleep_ns;  /* current sleep length once sleeping */
    uint32_t max_ns;    /* cap on sleep_ns */
} tc_backoff_t;

void tc__backoff_init(tc_backoff_t *b, uint32_t spin, uint32_t max_us);
static inline void tc__backoff_reset(tc_backoff_t *b)
{
    b->iter = 0;
    b->sleep_ns = 0;
    b->yield_end = 0;
}
/* One step of waiting. Returns the nanoseconds it wants to sleep (0 while
 * spinning or yielding) so a caller that can sleep on a condition variable
 * instead may do so; tc__backoff_wait() does the whole step itself. */
uint32_t tc__backoff_next(tc_backoff_t *b);
void tc__backoff_wait(tc_backoff_t *b);

static inline uint64_t tc__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Absolute CLOCK_REALTIME time ns from now, for pthread_cond_timedwait. */
struct timespec tc__deadline_after_ns(uint64_t ns);

/*
 * Whether the calling thread may run on exactly one CPU (its affinity set,
 * sched_getaffinity). A waiter on such a thread must not busy-spin: what it
 * waits for often needs a thread that shares that one CPU with it (the
 * proxy and the application thread of a rank bound to one core: the
 * waiter's own trigger must be handled before the peer can answer), and a
 * spin only keeps that thread off the CPU until the scheduler preempts the
 * spinner. Each waiter says what it does instead (park at once, or poll
 * with sched_yield, which hands the CPU to a thread waiting for it and
 * returns at once when there is none).
 *
 * The rule is the size of the set, not whether other threads share it: a
 * thread cannot tell cheaply who else may need its CPU, and with one CPU
 * no thread that may need it can run while it spins.
 *
 * The answer is kept per thread and read again once it is older than
 * TC_CPU_SINGLE_RECHECK_NS, so a later change of affinity (a proxy's init
 * hook binding it, an application pinning its threads) is seen within that
 * time; now_ns is tc__now_ns(). If the set cannot be read, the answer is 0
 * (spin). Any thread.
 */
#define TC_CPU_SINGLE_RECHECK_NS 100000000ull
int tc__cpu_single(uint64_t now_ns);

#endif
