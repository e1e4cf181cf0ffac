/*
 * futex.h - thin wrappers over Linux futexes (bitset flavour; process-private,
 * and shared between processes) and a CPU pause hint, for the few places in tcoll that park a
 * thread on a 32-bit word instead of polling it.
 *
 * A futex is only a sleeping place: it never carries data and never orders
 * memory for the caller. Every waiter must re-check its condition with the
 * atomics that do the ordering, and every waker must publish its change
 * before it wakes. Include this header before any system header, or define
 * _GNU_SOURCE first: syscall() needs it.
 */
#ifndef TC_UTIL_FUTEX_H
#define TC_UTIL_FUTEX_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before including util/futex.h (syscall() needs it)"
#endif

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define tc__cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define tc__cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define tc__cpu_relax() ((void)0)
#endif

/* Wakes every waiter, whatever bitset it waits with. */
#define TC_FUTEX_BITSET_ALL 0xffffffffu

/*
 * Sleeps while *addr == val, until a wake whose bitset shares a bit with
 * bitset, a signal, a spurious wake-up, or the absolute CLOCK_MONOTONIC time
 * deadline (NULL: no limit). Returns 0 when woken, else -1 with errno
 * EAGAIN (*addr != val at the call), ETIMEDOUT or EINTR. Callers treat every
 * return alike: re-check their condition.
 */
static inline int tc__futex_wait(_Atomic uint32_t *addr, uint32_t val, uint32_t bitset,
                                 const struct timespec *deadline)
{
    return (int)syscall(SYS_futex, (void *)addr, FUTEX_WAIT_BITSET_PRIVATE, val, deadline, NULL,
                        bitset);
}

/* Wakes up to n threads waiting on addr with a bitset that shares a bit with bitset. */
static inline void tc__futex_wake(_Atomic uint32_t *addr, int n, uint32_t bitset)
{
    (void)syscall(SYS_futex, (void *)addr, FUTEX_WAKE_BITSET_PRIVATE, n, NULL, NULL, bitset);
}

/* The same on a word in memory shared between processes (MAP_SHARED): the
 * kernel keys the wait by the page, not by this process's address. */
static inline int tc__futex_wait_shared(_Atomic uint32_t *addr, uint32_t val,
                                        const struct timespec *deadline)
{
    return (int)syscall(SYS_futex, (void *)addr, FUTEX_WAIT_BITSET, val, deadline, NULL,
                        TC_FUTEX_BITSET_ALL);
}

static inline void tc__futex_wake_shared(_Atomic uint32_t *addr, int n)
{
    (void)syscall(SYS_futex, (void *)addr, FUTEX_WAKE_BITSET, n, NULL, NULL, TC_FUTEX_BITSET_ALL);
}

/* CLOCK_MONOTONIC nanoseconds as a timespec, for tc__futex_wait deadlines. */
static inline struct timespec tc__timespec_from_ns(uint64_t ns)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ns / 1000000000ull);
    ts.tv_nsec = (long)(ns % 1000000000ull);
    return ts;
}

#endif
