/*
 * test_cpu_single.c - tc__cpu_single: 1 on a thread bound to one CPU, 0 on
 * one that may use several, and a change of affinity is seen once the
 * cached answer is TC_CPU_SINGLE_RECHECK_NS old or forgotten (not before).
 * The answer is cached per thread, so each case runs in a thread of its own.
 */
#define _GNU_SOURCE
#include "check.h"
#include "tc_test.h"
#include "util/backoff.h"

#include <pthread.h>
#include <sched.h>

/* The process's allowed CPUs (as the main thread has them) and the first. */
static void allowed(cpu_set_t *set, int *first_p)
{
    int cpu;

    CHECK_EQ(sched_getaffinity(0, sizeof(*set), set), 0);
    for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, set); cpu++) {
    }
    CHECK_LT(cpu, CPU_SETSIZE);
    *first_p = cpu;
}

static void bind_one(int cpu)
{
    cpu_set_t one;

    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    CHECK_EQ(pthread_setaffinity_np(pthread_self(), sizeof(one), &one), 0);
}

static void run_in_thread(void *(*fn)(void *))
{
    pthread_t t;

    CHECK_EQ(pthread_create(&t, NULL, fn, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
}

static void *one_cpu_thread(void *arg)
{
    cpu_set_t set;
    int first;

    (void)arg;
    allowed(&set, &first);
    bind_one(first);
    CHECK_EQ(tc__cpu_single(tc__now_ns()), 1);
    return NULL;
}

/* Bound to one CPU: 1. */
TC_CASE(one_cpu)
{
    run_in_thread(one_cpu_thread);
}

static void *all_cpus_thread(void *arg)
{
    cpu_set_t set;
    int first;

    (void)arg;
    allowed(&set, &first);
    CHECK_EQ(pthread_setaffinity_np(pthread_self(), sizeof(set), &set), 0);
    CHECK_EQ(tc__cpu_single(tc__now_ns()), CPU_COUNT(&set) == 1);
    return NULL;
}

/* Every CPU the process may use: 0 unless that is one CPU. */
TC_CASE(all_cpus)
{
    run_in_thread(all_cpus_thread);
}

static void *recheck_thread(void *arg)
{
    cpu_set_t set;
    uint64_t t0 = tc__now_ns();
    int first;

    (void)arg;
    allowed(&set, &first);
    if (CPU_COUNT(&set) < 2) {
        printf("recheck: skipped, this process may use one CPU only\n");
        return NULL;
    }
    CHECK_EQ(pthread_setaffinity_np(pthread_self(), sizeof(set), &set), 0);
    CHECK_EQ(tc__cpu_single(t0), 0);
    bind_one(first);
    /* Cached: the same answer until it is old enough. */
    CHECK_EQ(tc__cpu_single(t0 + TC_CPU_SINGLE_RECHECK_NS - 1), 0);
    CHECK_EQ(tc__cpu_single(t0 + TC_CPU_SINGLE_RECHECK_NS), 1);
    CHECK_EQ(pthread_setaffinity_np(pthread_self(), sizeof(set), &set), 0);
    CHECK_EQ(tc__cpu_single(t0 + 2 * TC_CPU_SINGLE_RECHECK_NS), 0);
    return NULL;
}

/* A change of affinity is seen after TC_CPU_SINGLE_RECHECK_NS, not before. */
TC_CASE(recheck)
{
    run_in_thread(recheck_thread);
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    printf("test_cpu_single: ok\n");
    return 0;
}
