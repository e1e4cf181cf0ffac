/*
 * bench_proxy.c - tcoll-proxy-bench: how fast the proxy moves triggers,
 * measured side by side in one run with a plain mutex + condition-variable
 * queue doing the same work (same slot count, same handler), as ratios:
 *
 *   - throughput with 1, 2 and 4 producer threads (each pushes its share;
 *     timed from the start signal to the last trigger handled);
 *   - push-to-handler latency p50/p99 while the consumer is active (one
 *     producer pushes, waits until the handler has run, pushes the next);
 *   - wake-up latency of a parked (idle) consumer;
 *   - CPU used by an idle proxy over a few seconds (getrusage of the process
 *     while the main thread sleeps).
 *
 * A benchmark, not a test: it prints a Markdown table and never fails on
 * numbers. Uses only the public API. Options: -n triggers per throughput run
 * (default 2000000), -l latency samples (200000), -r runs per cell, the
 * median is shown (3), -i idle seconds (3), -s FIFO slots (512).
 */
#define _GNU_SOURCE
#include "tcoll.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define relax() _mm_pause()
#else
#define relax() ((void)0)
#endif

#define MAX_PRODUCERS 4

static uint64_t opt_n = 2000000, opt_lat = 200000, opt_runs = 3;
static double opt_idle_s = 3.0;
static uint32_t opt_slots = 512;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void die(const char *what, tc_status_t st)
{
    fprintf(stderr, "tcoll-proxy-bench: %s: %s (%s)\n", what, tc_status_string(st),
            tc_last_error());
    exit(1);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t percentile(uint64_t *v, uint64_t n, double q)
{
    uint64_t i;

    qsort(v, n, sizeof(*v), cmp_u64);
    i = (uint64_t)(q * (double)(n - 1) + 0.5);
    return v[i];
}

static double median(double *v, uint64_t n)
{
    uint64_t i, j;
    double t;

    for (i = 1; i < n; i++) {
        for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
            t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    }
    return v[n / 2];
}

/* ------------------------------------------------------------------------ */
/* The work both queues do per trigger                                       */
/* ------------------------------------------------------------------------ */

typedef struct {
    _Atomic uint64_t handled; /* published count, for waiters */
    uint64_t sum;             /* keeps the handler from being optimized away */
    uint64_t *lat;            /* latency samples (NULL: throughput run) */
    uint64_t nlat;
} work_t;

static inline void do_work(work_t *w, tc_trigger_t t)
{
    uint64_t n = atomic_load_explicit(&w->handled, memory_order_relaxed);

    if (w->lat != NULL && n < w->nlat) {
        w->lat[n] = now_ns() - t.fst;
    }
    w->sum += t.fst ^ t.snd;
    /* release: the producer in a latency run waits for this count (acquire). */
    atomic_store_explicit(&w->handled, n + 1, memory_order_release);
}

/* ------------------------------------------------------------------------ */
/* Baseline: a ring buffer under one mutex, two condition variables           */
/* ------------------------------------------------------------------------ */

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
    tc_trigger_t *ring;
    uint64_t size, head, tail;
    int quit;
    work_t *work;
    pthread_t thread;
} cvq_t;

static void *cvq_consumer(void *arg)
{
    cvq_t *q = arg;
    tc_trigger_t t;

    for (;;) {
        pthread_mutex_lock(&q->lock);
        while (q->head == q->tail && !q->quit) {
            pthread_cond_wait(&q->not_empty, &q->lock);
        }
        if (q->head == q->tail) {
            pthread_mutex_unlock(&q->lock);
            return NULL;
        }
        t = q->ring[q->tail % q->size];
        q->tail++;
        pthread_cond_signal(&q->not_full);
        pthread_mutex_unlock(&q->lock);
        do_work(q->work, t);
    }
}

static void cvq_push(cvq_t *q, tc_trigger_t t)
{
    pthread_mutex_lock(&q->lock);
    while (q->head - q->tail == q->size) {
        pthread_cond_wait(&q->not_full, &q->lock);
    }
    q->ring[q->head % q->size] = t;
    q->head++;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->lock);
}

static void cvq_start(cvq_t *q, work_t *w)
{
    memset(q, 0, sizeof(*q));
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    q->size = opt_slots;
    q->ring = calloc(q->size, sizeof(*q->ring));
    q->work = w;
    if (q->ring == NULL || pthread_create(&q->thread, NULL, cvq_consumer, q) != 0) {
        fprintf(stderr, "tcoll-proxy-bench: cannot start the baseline queue\n");
        exit(1);
    }
}

static void cvq_stop(cvq_t *q)
{
    pthread_mutex_lock(&q->lock);
    q->quit = 1;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->lock);
    pthread_join(q->thread, NULL);
    free(q->ring);
    pthread_cond_destroy(&q->not_full);
    pthread_cond_destroy(&q->not_empty);
    pthread_mutex_destroy(&q->lock);
}

/* ------------------------------------------------------------------------ */
/* The proxy                                                                  */
/* ------------------------------------------------------------------------ */

static tc_proxy_result_t proxy_handler(tc_trigger_t t, void *arg)
{
    do_work(arg, t);
    return TC_PROXY_CONTINUE;
}

static tc_proxy_t *proxy_start(work_t *w)
{
    tc_proxy_t *p;
    tc_status_t st;

    st = tc_proxy_create(proxy_handler, w, NULL, NULL, opt_slots, &p);
    if (st != TC_OK) {
        die("tc_proxy_create", st);
    }
    st = tc_proxy_start(p, 1);
    if (st != TC_OK) {
        die("tc_proxy_start", st);
    }
    return p;
}

/* ------------------------------------------------------------------------ */
/* Throughput                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct {
    int use_proxy;
    tc_fifo_t *fifo;
    cvq_t *q;
    uint64_t n;
    _Atomic int *go;
} producer_t;

static void *producer_main(void *arg)
{
    producer_t *p = arg;
    uint64_t i;

    while (!atomic_load_explicit(p->go, memory_order_acquire)) {
        relax();
    }
    for (i = 0; i < p->n; i++) {
        tc_trigger_t t = {i, ~i};
        if (p->use_proxy) {
            tc_fifo_push(p->fifo, t);
        } else {
            cvq_push(p->q, t);
        }
    }
    return NULL;
}

/* Triggers per second handled with nprod producers. */
static double run_throughput(int use_proxy, int nprod)
{
    producer_t prods[MAX_PRODUCERS];
    pthread_t th[MAX_PRODUCERS];
    uint64_t per = opt_n / (uint64_t)nprod, total = per * (uint64_t)nprod, t0, t1;
    _Atomic int go;
    tc_proxy_t *proxy = NULL;
    cvq_t q;
    work_t w;
    int i;

    memset(&w, 0, sizeof(w));
    atomic_init(&w.handled, 0);
    atomic_init(&go, 0);
    if (use_proxy) {
        proxy = proxy_start(&w);
    } else {
        cvq_start(&q, &w);
    }
    for (i = 0; i < nprod; i++) {
        prods[i].use_proxy = use_proxy;
        prods[i].fifo = proxy ? tc_proxy_fifo(proxy) : NULL;
        prods[i].q = &q;
        prods[i].n = per;
        prods[i].go = &go;
        if (pthread_create(&th[i], NULL, producer_main, &prods[i]) != 0) {
            fprintf(stderr, "tcoll-proxy-bench: pthread_create failed\n");
            exit(1);
        }
    }
    sleep_ns(10000000); /* let the producers reach the start line */
    t0 = now_ns();
    atomic_store_explicit(&go, 1, memory_order_release);
    for (i = 0; i < nprod; i++) {
        pthread_join(th[i], NULL);
    }
    /* acquire: pairs with the release store in do_work. */
    while (atomic_load_explicit(&w.handled, memory_order_acquire) < total) {
        sched_yield();
    }
    t1 = now_ns();
    if (use_proxy) {
        tc_proxy_destroy(proxy);
    } else {
        cvq_stop(&q);
    }
    return (double)total / ((double)(t1 - t0) / 1e9);
}

static double median_throughput(int use_proxy, int nprod)
{
    double v[16];
    uint64_t r, runs = opt_runs > 16 ? 16 : opt_runs;

    for (r = 0; r < runs; r++) {
        v[r] = run_throughput(use_proxy, nprod);
    }
    return median(v, runs);
}

/* ------------------------------------------------------------------------ */
/* Latency                                                                    */
/* ------------------------------------------------------------------------ */

/* Active: push, wait (spinning) for the handler, push the next. gap_ns > 0:
 * sleep that long between pushes so the consumer goes idle (parks) first,
 * and wait by yielding. */
static void run_latency(int use_proxy, uint64_t n, uint64_t gap_ns, uint64_t *p50_p,
                        uint64_t *p99_p)
{
    tc_proxy_t *proxy = NULL;
    uint64_t i;
    cvq_t q;
    work_t w;

    memset(&w, 0, sizeof(w));
    atomic_init(&w.handled, 0);
    w.lat = calloc(n, sizeof(uint64_t));
    w.nlat = n;
    if (w.lat == NULL) {
        fprintf(stderr, "tcoll-proxy-bench: out of memory\n");
        exit(1);
    }
    if (use_proxy) {
        proxy = proxy_start(&w);
    } else {
        cvq_start(&q, &w);
    }
    for (i = 0; i < n; i++) {
        if (gap_ns != 0) {
            sleep_ns(gap_ns);
        }
        tc_trigger_t t = {now_ns(), i};
        if (use_proxy) {
            tc_fifo_push(tc_proxy_fifo(proxy), t);
        } else {
            cvq_push(&q, t);
        }
        /* acquire: pairs with the release store in do_work. With gaps, wait
         * by yielding: Linux tends to wake the consumer on the waker's CPU,
         * and a spinning waker would keep it off that CPU until the next
         * scheduler tick (milliseconds), which would measure the scheduler. */
        while (atomic_load_explicit(&w.handled, memory_order_acquire) <= i) {
            if (gap_ns != 0) {
                sched_yield();
            } else {
                relax();
            }
        }
    }
    if (use_proxy) {
        tc_proxy_destroy(proxy);
    } else {
        cvq_stop(&q);
    }
    *p50_p = percentile(w.lat, n, 0.50);
    *p99_p = percentile(w.lat, n, 0.99);
    free(w.lat);
}

/* ------------------------------------------------------------------------ */
/* Idle CPU                                                                   */
/* ------------------------------------------------------------------------ */

static uint64_t process_cpu_ns(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_utime.tv_sec * 1000000000ull + (uint64_t)ru.ru_utime.tv_usec * 1000ull +
           (uint64_t)ru.ru_stime.tv_sec * 1000000000ull + (uint64_t)ru.ru_stime.tv_usec * 1000ull;
}

/* CPU the process used while its only other thread is an idle consumer. */
static double run_idle_cpu(int use_proxy, uint64_t *wall_p)
{
    tc_proxy_t *proxy = NULL;
    uint64_t c0, c1, t0, t1;
    cvq_t q;
    work_t w;

    memset(&w, 0, sizeof(w));
    atomic_init(&w.handled, 0);
    if (use_proxy) {
        proxy = proxy_start(&w);
    } else {
        cvq_start(&q, &w);
    }
    sleep_ns(50000000); /* past the spin phase */
    c0 = process_cpu_ns();
    t0 = now_ns();
    sleep_ns((uint64_t)(opt_idle_s * 1e9));
    c1 = process_cpu_ns();
    t1 = now_ns();
    if (use_proxy) {
        tc_proxy_destroy(proxy);
    } else {
        cvq_stop(&q);
    }
    *wall_p = t1 - t0;
    return (double)(c1 - c0);
}

/* ------------------------------------------------------------------------ */

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [-n triggers] [-l latency-samples] [-r runs] [-i idle-seconds] [-s slots]\n",
            argv0);
    exit(2);
}

int main(int argc, char **argv)
{
    static const int nprods[] = {1, 2, 4};
    double tp[2], cpu[2];
    uint64_t p50[2], p99[2], w50[2], w99[2], wall[2];
    char label[64];
    size_t k;
    int c, u;

    while ((c = getopt(argc, argv, "n:l:r:i:s:h")) != -1) {
        switch (c) {
        case 'n': opt_n = strtoull(optarg, NULL, 10); break;
        case 'l': opt_lat = strtoull(optarg, NULL, 10); break;
        case 'r': opt_runs = strtoull(optarg, NULL, 10); break;
        case 'i': opt_idle_s = strtod(optarg, NULL); break;
        case 's': opt_slots = (uint32_t)strtoul(optarg, NULL, 10); break;
        default: usage(argv[0]);
        }
    }
    if (opt_n < MAX_PRODUCERS || opt_lat < 1 || opt_runs < 1 || opt_idle_s <= 0) {
        usage(argv[0]);
    }

    printf(
        "tcoll-proxy-bench: tcoll %s proxy vs a mutex+condvar queue, %u slots each, %ld CPUs online\n",
        tc_version(), opt_slots, sysconf(_SC_NPROCESSORS_ONLN));
    printf("throughput: %llu triggers per run, median of %llu runs; latency: %llu samples\n\n",
           (unsigned long long)opt_n, (unsigned long long)opt_runs, (unsigned long long)opt_lat);
    printf("| measure | tcoll proxy | mutex+condvar | ratio (tcoll better by) |\n");
    printf("| --- | ---: | ---: | ---: |\n");
    fflush(stdout);

    for (k = 0; k < sizeof(nprods) / sizeof(nprods[0]); k++) {
        for (u = 1; u >= 0; u--) {
            tp[u] = median_throughput(u, nprods[k]);
        }
        snprintf(label, sizeof(label), "throughput, %d producer%s (M triggers/s)", nprods[k],
                 nprods[k] > 1 ? "s" : "");
        printf("| %s | %.2f | %.2f | %.1fx |\n", label, tp[1] / 1e6, tp[0] / 1e6, tp[1] / tp[0]);
        fflush(stdout);
    }

    for (u = 1; u >= 0; u--) {
        run_latency(u, opt_lat, 0, &p50[u], &p99[u]);
    }
    printf("| push-to-handler latency p50, active (ns) | %llu | %llu | %.1fx |\n",
           (unsigned long long)p50[1], (unsigned long long)p50[0], (double)p50[0] / (double)p50[1]);
    printf("| push-to-handler latency p99, active (ns) | %llu | %llu | %.1fx |\n",
           (unsigned long long)p99[1], (unsigned long long)p99[0], (double)p99[0] / (double)p99[1]);
    fflush(stdout);

    for (u = 1; u >= 0; u--) {
        run_latency(u, 50, 5000000, &w50[u], &w99[u]);
    }
    printf("| wake-up latency of an idle consumer p50 (us) | %.1f | %.1f | %.1fx |\n",
           (double)w50[1] / 1e3, (double)w50[0] / 1e3, (double)w50[0] / (double)w50[1]);
    printf("| wake-up latency of an idle consumer max of 50 (us) | %.1f | %.1f | %.1fx |\n",
           (double)w99[1] / 1e3, (double)w99[0] / 1e3, (double)w99[0] / (double)w99[1]);
    fflush(stdout);

    for (u = 1; u >= 0; u--) {
        cpu[u] = run_idle_cpu(u, &wall[u]);
    }
    printf("| idle CPU over %.1f s (ms; %% of one core) | %.2f; %.3f%% | %.2f; %.3f%% | - |\n",
           (double)wall[1] / 1e9, cpu[1] / 1e6, 100.0 * cpu[1] / (double)wall[1], cpu[0] / 1e6,
           100.0 * cpu[0] / (double)wall[0]);
    return 0;
}
