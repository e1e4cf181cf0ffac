/*
 * proxy_testutil.h - small helpers shared by the FIFO and proxy unit tests.
 */
#ifndef TC_TEST_PROXY_TESTUTIL_H
#define TC_TEST_PROXY_TESTUTIL_H

#include <stdint.h>
#include <time.h>

#include "tcoll.h"

#define MAX_PRODUCERS 8
#define ALL_ONES UINT64_MAX

static inline uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static inline void sleep_us(int us)
{
    struct timespec ts = {0, (long)us * 1000L};
    nanosleep(&ts, NULL);
}

static inline tc_trigger_t trig(uint64_t fst, uint64_t snd)
{
    tc_trigger_t t = {fst, snd};
    return t;
}

#endif
