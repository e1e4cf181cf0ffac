/*
 * test_proxy.c - unit tests of the proxy service thread (no MPI, no
 * tc_init): bad arguments, the init hook (on the proxy thread, before the
 * first trigger, slow ones warned about), 1..8 producers through FIFOs of 1,
 * 2 and 512 slots with a checking handler, handler STOP, stop draining
 * (also while producers keep pushing), restart, calls from the handler,
 * destroy while running, and an idle proxy that parks. Must pass under
 * ThreadSanitizer; iteration counts shrink there.
 */
#define _GNU_SOURCE
#include "check.h"
#include "proxy_testutil.h"
#include "tc_test.h"
#include "util/backoff.h"
#include "tcoll.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#define PROD_SHIFT 40

/* ---- the checking handler --------------------------------------------------- */

/* Triggers of producer p: fst = p << 40 | i, snd all zeros or all ones by
 * parity of i (producer 0's first trigger is all zeros); {~0, ~0} is an
 * extra end marker each producer may push. */
typedef struct {
    int nprod;
    uint64_t next[MAX_PRODUCERS]; /* handler thread only; read after stop */
    uint64_t ones;                /* end markers seen */
    _Atomic uint64_t handled;     /* every trigger, markers included */
    uint64_t stop_after;          /* return TC_PROXY_STOP once handled reaches it (0: never) */
    uint64_t spin_ns;             /* busy time per trigger, to make the proxy slow */

    /* init hook bookkeeping */
    _Atomic int init_ran;
    pthread_t init_thread;
    clockid_t init_clock;
    int init_sleep_ms;
    _Atomic int bad_order; /* a trigger reached the handler before init, or on another thread */

    /* calls from the handler to the proxy itself */
    tc_proxy_t *self;
    tc_status_t self_stop, self_start;
} checker_t;

static void checker_init(checker_t *c, int nprod)
{
    memset(c, 0, sizeof(*c));
    c->nprod = nprod;
    atomic_init(&c->handled, 0);
    atomic_init(&c->init_ran, 0);
    atomic_init(&c->bad_order, 0);
    c->self_stop = c->self_start = TC_OK;
}

static void check_init(void *arg)
{
    checker_t *c = arg;

    c->init_thread = pthread_self();
    CHECK_EQ(pthread_getcpuclockid(pthread_self(), &c->init_clock), 0);
    if (c->init_sleep_ms > 0) {
        sleep_ms(c->init_sleep_ms);
    }
    atomic_store(&c->init_ran, 1);
}

static tc_proxy_result_t check_handler(tc_trigger_t t, void *arg)
{
    checker_t *c = arg;
    uint64_t n;

    if (!atomic_load(&c->init_ran) || !pthread_equal(pthread_self(), c->init_thread)) {
        atomic_store(&c->bad_order, 1);
    }
    if (t.fst == ALL_ONES && t.snd == ALL_ONES) {
        c->ones++;
    } else {
        uint64_t p = t.fst >> PROD_SHIFT, k = t.fst & ((1ull << PROD_SHIFT) - 1);
        CHECK_LT(p, (uint64_t)c->nprod);
        CHECK_MSG(k == c->next[p], "producer %llu: handled #%llu, expected #%llu",
                  (unsigned long long)p, (unsigned long long)k, (unsigned long long)c->next[p]);
        CHECK(t.snd == ((k & 1) ? ALL_ONES : 0));
        c->next[p]++;
    }
    if (c->spin_ns != 0) {
        uint64_t t0 = tc__now_ns();
        while (tc__now_ns() - t0 < c->spin_ns) {
        }
    }
    if (c->self != NULL) {
        c->self_stop = tc_proxy_stop(c->self);
        c->self_start = tc_proxy_start(c->self, 1);
        tc_proxy_destroy(c->self); /* refused: logs an error, changes nothing */
        c->self = NULL;
    }
    /* release: a reader that sees the count (acquire) sees the state above. */
    n = atomic_fetch_add_explicit(&c->handled, 1, memory_order_release) + 1;
    return c->stop_after != 0 && n == c->stop_after ? TC_PROXY_STOP : TC_PROXY_CONTINUE;
}

static uint64_t handled(checker_t *c)
{
    return atomic_load_explicit(&c->handled, memory_order_acquire);
}

/* ---- producers --------------------------------------------------------------- */

typedef struct {
    tc_fifo_t *f;
    int id;
    uint64_t n;  /* triggers to push (UINT64_MAX: until quit) */
    int marker;  /* push an all-ones end marker after them */
    int use_try; /* try_push with yields instead of push */
    _Atomic int *go;
    _Atomic int *quit;
    _Atomic int *stopping;
    uint64_t pushed;   /* how many it pushed */
    uint64_t full;     /* try_push said full */
    uint64_t safe_pos; /* last position pushed before it saw *stopping */
    int have_safe;
} producer_t;

static void *producer_main(void *arg)
{
    producer_t *p = arg;
    uint64_t i, pos = 0;

    while (p->go != NULL && !atomic_load(p->go)) {
        sleep_us(50);
    }
    for (i = 0; i < p->n; i++) {
        tc_trigger_t t = trig((uint64_t)p->id << PROD_SHIFT | i, (i & 1) ? ALL_ONES : 0);
        if (p->use_try && p->quit != NULL) {
            /* Must not block: the proxy may be stopped for good. */
            while (!tc_fifo_try_push(p->f, t, &pos)) {
                if (atomic_load(p->quit)) {
                    return NULL;
                }
                sleep_us(20);
            }
        } else if (p->use_try) {
            /* try_push, and push once it says full: a thread that only
             * retries try_push starves behind busy processes on a loaded
             * machine, and the blocking path is tested by the others. */
            if (!tc_fifo_try_push(p->f, t, &pos)) {
                p->full++;
                pos = tc_fifo_push(p->f, t);
            }
        } else {
            pos = tc_fifo_push(p->f, t);
        }
        p->pushed++;
        if (p->stopping != NULL && !atomic_load(p->stopping)) {
            /* seq_cst load after the push returned: the push finished before
             * the main thread set stopping, so before it called tc_proxy_stop. */
            p->safe_pos = pos;
            p->have_safe = 1;
        }
        if (p->quit != NULL && atomic_load(p->quit)) {
            return NULL;
        }
    }
    if (p->marker) {
        tc_fifo_push(p->f, trig(ALL_ONES, ALL_ONES));
    }
    return NULL;
}

/* ---- tests ------------------------------------------------------------------- */

TC_CASE(bad_args)
{
    tc_proxy_t *p = (tc_proxy_t *)(uintptr_t)0x1234, *orig = p;
    checker_t c;

    checker_init(&c, 1);
    CHECK_STATUS(tc_proxy_create(NULL, NULL, NULL, NULL, 0, &p), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "handler");
    CHECK_STATUS(tc_proxy_create(check_handler, &c, NULL, NULL, 0, NULL), TC_ERR_ARG);
    CHECK_STATUS(tc_proxy_create(check_handler, &c, NULL, NULL, 3, &p), TC_ERR_ARG);
    CHECK_STATUS(tc_proxy_create(check_handler, &c, NULL, NULL, 1000, &p), TC_ERR_ARG);
    CHECK_STATUS(tc_proxy_create(check_handler, &c, NULL, NULL, 1u << 21, &p), TC_ERR_ARG);
    CHECK_STATUS(tc_proxy_create(check_handler, &c, NULL, NULL, UINT32_MAX, &p), TC_ERR_ARG);
    CHECK(p == orig);
    CHECK_STATUS(tc_proxy_start(NULL, 1), TC_ERR_ARG);
    CHECK_STATUS(tc_proxy_stop(NULL), TC_ERR_ARG);
    CHECK(tc_proxy_fifo(NULL) == NULL);
    tc_proxy_destroy(NULL);

    /* State errors; the default FIFO has 512 slots. */
    CHECK_OK(tc_proxy_create(check_handler, &c, check_init, &c, 0, &p));
    CHECK(tc_proxy_fifo(p) != NULL);
    CHECK_STATUS(tc_proxy_stop(p), TC_ERR_STATE);
    CHECK_STR_CONTAINS(tc_last_error(), "not running");
    for (uint64_t i = 0; i < 512; i++) {
        CHECK_EQ(tc_fifo_try_push(tc_proxy_fifo(p), trig(i, (i & 1) ? ALL_ONES : 0), NULL), 1);
    }
    CHECK_EQ(tc_fifo_try_push(tc_proxy_fifo(p), trig(0, 0), NULL), 0);
    CHECK_OK(tc_proxy_start(p, 1));
    CHECK_STATUS(tc_proxy_start(p, 1), TC_ERR_STATE);
    CHECK_STATUS(tc_proxy_start(p, 0), TC_ERR_STATE);
    CHECK_STR_CONTAINS(tc_last_error(), "already running");
    CHECK_OK(tc_proxy_stop(p));
    CHECK_EQ(handled(&c), 512);
    CHECK_EQ(c.next[0], 512);
    CHECK_STATUS(tc_proxy_stop(p), TC_ERR_STATE);
    tc_proxy_destroy(p);

    /* Size 1 is accepted. */
    CHECK_OK(tc_proxy_create(check_handler, &c, NULL, NULL, 1, &p));
    tc_proxy_destroy(p); /* never started */
}

/* The init hook runs on the proxy thread before any trigger; a blocking start
 * returns after it; a non-blocking start may return before it, and triggers
 * pushed meanwhile wait for it. */
TC_CASE(init_hook)
{
    tc_proxy_t *p;
    checker_t c;
    uint64_t pos = 0;
    int i;

    checker_init(&c, 1);
    c.init_sleep_ms = 30;
    CHECK_OK(tc_proxy_create(check_handler, &c, check_init, &c, 2, &p));
    CHECK_OK(tc_proxy_start(p, 1));
    CHECK_EQ(atomic_load(&c.init_ran), 1);
    CHECK(!pthread_equal(c.init_thread, pthread_self()));
    CHECK_OK(tc_proxy_stop(p));

    /* Non-blocking start with a slow init: triggers wait for it. */
    checker_init(&c, 1);
    c.init_sleep_ms = 100;
    CHECK_OK(tc_proxy_start(p, 0));
    for (i = 0; i < 10; i++) {
        pos = tc_fifo_push(tc_proxy_fifo(p), trig((uint64_t)i, (i & 1) ? ALL_ONES : 0));
    }
    CHECK_OK(tc_fifo_sync(tc_proxy_fifo(p), pos, -1));
    CHECK_EQ(atomic_load(&c.init_ran), 1);
    CHECK_EQ(atomic_load(&c.bad_order), 0);
    CHECK_EQ(handled(&c), 10);
    CHECK_OK(tc_proxy_stop(p));
    tc_proxy_destroy(p);
}

/* A blocking start whose init takes over a second warns while it waits. */
TC_CASE(slow_init_warns)
{
    char path[] = "/tmp/tcoll_test_proxy_XXXXXX";
    char buf[4096];
    tc_proxy_t *p;
    checker_t c;
    ssize_t n;
    int fd, saved;

    checker_init(&c, 1);
    c.init_sleep_ms = 1300;
    CHECK_OK(tc_proxy_create(check_handler, &c, check_init, &c, 0, &p));
    fd = mkstemp(path);
    CHECK(fd >= 0);
    fflush(stderr);
    saved = dup(2);
    CHECK(saved >= 0);
    CHECK(dup2(fd, 2) == 2);
    tc_status_t st = tc_proxy_start(p, 1);
    fflush(stderr);
    CHECK(dup2(saved, 2) == 2);
    close(saved);
    CHECK_OK(st);
    CHECK_EQ(atomic_load(&c.init_ran), 1);
    n = pread(fd, buf, sizeof(buf) - 1, 0);
    CHECK(n > 0);
    buf[n] = '\0';
    CHECK_STR_CONTAINS(buf, "still waiting for the proxy's init hook");
    close(fd);
    unlink(path);
    tc_proxy_destroy(p);
}

static void run_stress(uint32_t size, int nprod, uint64_t per_producer)
{
    producer_t prods[MAX_PRODUCERS];
    pthread_t th[MAX_PRODUCERS];
    _Atomic int go;
    tc_proxy_t *p;
    checker_t c;
    int i;

    checker_init(&c, nprod);
    CHECK_OK(tc_proxy_create(check_handler, &c, check_init, &c, size, &p));
    CHECK_OK(tc_proxy_start(p, size == 1)); /* blocking or not: both must work */
    atomic_init(&go, 0);
    for (i = 0; i < nprod; i++) {
        memset(&prods[i], 0, sizeof(prods[i]));
        prods[i].f = tc_proxy_fifo(p);
        prods[i].id = i;
        prods[i].n = per_producer;
        prods[i].marker = 1;
        prods[i].use_try = i % 2;
        prods[i].go = &go;
        CHECK_EQ(pthread_create(&th[i], NULL, producer_main, &prods[i]), 0);
    }
    atomic_store(&go, 1);
    for (i = 0; i < nprod; i++) {
        CHECK_EQ(pthread_join(th[i], NULL), 0);
    }
    CHECK_OK(tc_proxy_stop(p)); /* drains */
    for (i = 0; i < nprod; i++) {
        CHECK_EQ(c.next[i], per_producer);
    }
    CHECK_EQ(c.ones, (uint64_t)nprod);
    CHECK_EQ(handled(&c), (per_producer + 1) * (uint64_t)nprod);
    CHECK_EQ(atomic_load(&c.bad_order), 0);
    tc_proxy_destroy(p);
}

/* A handler returning TC_PROXY_STOP ends the thread after that trigger is
 * popped; the rest stay queued until the proxy is started again. */
TC_CASE(handler_stop)
{
    tc_proxy_t *p;
    tc_fifo_t *f;
    checker_t c;
    uint64_t i, pos[20];

    checker_init(&c, 1);
    c.stop_after = 5;
    CHECK_OK(tc_proxy_create(check_handler, &c, check_init, &c, 32, &p));
    f = tc_proxy_fifo(p);
    for (i = 0; i < 20; i++) {
        pos[i] = tc_fifo_push(f, trig(i, (i & 1) ? ALL_ONES : 0));
        CHECK_EQ(pos[i], i);
    }
    CHECK_OK(tc_proxy_start(p, 1));
    CHECK_OK(tc_fifo_sync(f, pos[4], -1)); /* the STOP trigger was popped */
    CHECK_STATUS(tc_fifo_sync(f, pos[5], 100000000), TC_ERR_TIMEOUT);
    CHECK_EQ(handled(&c), 5);
    /* The thread ended by itself: start again reaps it and goes on. */
    c.stop_after = 0;
    CHECK_OK(tc_proxy_start(p, 1));
    CHECK_OK(tc_fifo_sync(f, pos[19], -1));
    CHECK_EQ(handled(&c), 20);
    CHECK_OK(tc_proxy_stop(p));
    CHECK_EQ(c.next[0], 20);

    /* Ended by the handler, then stopped: stop reaps it and says TC_OK. */
    c.stop_after = 21;
    CHECK_OK(tc_proxy_start(p, 1));
    tc_fifo_push(f, trig(20, 0));
    CHECK_OK(tc_fifo_sync(f, 20, -1));
    CHECK_OK(tc_proxy_stop(p));
    CHECK_STATUS(tc_proxy_stop(p), TC_ERR_STATE);
    tc_proxy_destroy(p);
}

/* stop/start/destroy from the handler are refused with TC_ERR_STATE. */
TC_CASE(calls_from_handler)
{
    tc_proxy_t *p;
    checker_t c;

    checker_init(&c, 1);
    CHECK_OK(tc_proxy_create(check_handler, &c, check_init, &c, 4, &p));
    c.self = p;
    CHECK_OK(tc_proxy_start(p, 1));
    CHECK_OK(tc_fifo_sync(tc_proxy_fifo(p), tc_fifo_push(tc_proxy_fifo(p), trig(0, 0)), -1));
    CHECK_STATUS(c.self_stop, TC_ERR_STATE);
    CHECK_STATUS(c.self_start, TC_ERR_STATE);
    CHECK_OK(tc_proxy_stop(p));
    tc_proxy_destroy(p);
}

/* Stop handles every trigger pushed before the call, even with a slow handler
 * and a full FIFO; restart goes on with triggers pushed while stopped. */
TC_CASE(stop_drains_and_restart)
{
    producer_t prod;
    pthread_t th;
    tc_proxy_t *p;
    checker_t c;
    uint64_t total = 0, n = TEST_TSAN ? 300 : 3000;
    int round;

    checker_init(&c, 1);
    c.spin_ns = 2000;
    CHECK_OK(tc_proxy_create(check_handler, &c, check_init, &c, 16, &p));
    for (round = 0; round < 5; round++) {
        CHECK_OK(tc_proxy_start(p, round % 2));
        /* One producer pushes n triggers into a FIFO of 16 (it waits while
         * full); stop right after it returns must handle all of them. */
        memset(&prod, 0, sizeof(prod));
        prod.f = tc_proxy_fifo(p);
        prod.id = 0;
        prod.n = n;
        CHECK_EQ(pthread_create(&th, NULL, producer_main, &prod), 0);
        CHECK_EQ(pthread_join(th, NULL), 0);
        CHECK_OK(tc_proxy_stop(p));
        CHECK_EQ(handled(&c), total + n);
        total += n;
        /* Renumber: the next round's producer continues the sequence. */
        c.next[0] = 0;
        /* Pushed while stopped: kept for the next start. */
        for (uint64_t i = 0; i < 10; i++) {
            CHECK_EQ(tc_fifo_try_push(tc_proxy_fifo(p), trig(ALL_ONES, ALL_ONES), NULL), 1);
        }
        total += 10;
        CHECK_EQ(handled(&c), total - 10);
    }
    CHECK_OK(tc_proxy_start(p, 1));
    CHECK_OK(tc_proxy_stop(p));
    CHECK_EQ(handled(&c), total);
    CHECK_EQ(c.ones, 50);
    tc_proxy_destroy(p);
}

/* Stop while producers keep pushing: every push that returned before the
 * call is handled; later ones wait in the FIFO and are not lost. */
TC_CASE(stop_under_load)
{
    producer_t prods[4];
    pthread_t th[4];
    _Atomic int go, quit, stopping;
    tc_proxy_t *p;
    checker_t c;
    uint64_t pushed = 0;
    int i;

    checker_init(&c, 4);
    CHECK_OK(tc_proxy_create(check_handler, &c, check_init, &c, 64, &p));
    CHECK_OK(tc_proxy_start(p, 1));
    atomic_init(&go, 0);
    atomic_init(&quit, 0);
    atomic_init(&stopping, 0);
    for (i = 0; i < 4; i++) {
        memset(&prods[i], 0, sizeof(prods[i]));
        prods[i].f = tc_proxy_fifo(p);
        prods[i].id = i;
        prods[i].n = UINT64_MAX;
        prods[i].use_try = 1; /* so they can give up once the proxy is stopped */
        prods[i].go = &go;
        prods[i].quit = &quit;
        prods[i].stopping = &stopping;
        CHECK_EQ(pthread_create(&th[i], NULL, producer_main, &prods[i]), 0);
    }
    atomic_store(&go, 1);
    sleep_ms(TEST_TSAN ? 100 : 50);
    atomic_store(&stopping, 1);
    CHECK_OK(tc_proxy_stop(p));
    atomic_store(&quit, 1);
    for (i = 0; i < 4; i++) {
        CHECK_EQ(pthread_join(th[i], NULL), 0);
        if (prods[i].have_safe) {
            CHECK_OK(tc_fifo_sync(tc_proxy_fifo(p), prods[i].safe_pos, 0));
        }
        pushed += prods[i].pushed;
    }
    CHECK_OK(tc_proxy_start(p, 1));
    CHECK_OK(tc_proxy_stop(p));
    CHECK_EQ(handled(&c), pushed);
    for (i = 0; i < 4; i++) {
        CHECK_EQ(c.next[i], prods[i].pushed);
    }
    tc_proxy_destroy(p);
}

/* Destroy while running: stops, handling everything pushed before. */
TC_CASE(destroy_running)
{
    tc_proxy_t *p;
    checker_t c;
    uint64_t i, n = TEST_TSAN ? 2000 : 20000;

    checker_init(&c, 1);
    c.spin_ns = 200;
    CHECK_OK(tc_proxy_create(check_handler, &c, check_init, &c, 128, &p));
    CHECK_OK(tc_proxy_start(p, 0));
    for (i = 0; i < n; i++) {
        tc_fifo_push(tc_proxy_fifo(p), trig(i, (i & 1) ? ALL_ONES : 0));
    }
    tc_proxy_destroy(p);
    CHECK_EQ(handled(&c), n);
    CHECK_EQ(c.next[0], n);

    /* Destroy right after a non-blocking start, before init may have run. */
    checker_init(&c, 1);
    CHECK_OK(tc_proxy_create(check_handler, &c, check_init, &c, 0, &p));
    CHECK_OK(tc_proxy_start(p, 0));
    tc_proxy_destroy(p);
    CHECK_EQ(atomic_load(&c.init_ran), 1);
}

/* An idle proxy parks: its thread uses (almost) no CPU, and a push wakes it. */
TC_CASE(idle_parks)
{
    tc_proxy_t *p;
    checker_t c;
    uint64_t cpu0, cpu1, pos;
    int round;

    checker_init(&c, 1);
    CHECK_OK(tc_proxy_create(check_handler, &c, check_init, &c, 0, &p));
    CHECK_OK(tc_proxy_start(p, 1));
    for (round = 0; round < 3; round++) {
        sleep_ms(20); /* past the spin and yield phases */
        cpu0 = clock_ns(c.init_clock);
        sleep_ms(300);
        cpu1 = clock_ns(c.init_clock);
        CHECK_MSG(cpu1 - cpu0 < 30000000ull, "idle proxy used %.1f ms of CPU in 300 ms",
                  (double)(cpu1 - cpu0) / 1e6);
        pos = tc_fifo_push(tc_proxy_fifo(p), trig((uint64_t)round, (round & 1) ? ALL_ONES : 0));
        CHECK_OK(tc_fifo_sync(tc_proxy_fifo(p), pos, -1));
        CHECK_EQ(handled(&c), (uint64_t)round + 1);
    }
    CHECK_OK(tc_proxy_stop(p));
    tc_proxy_destroy(p);
}

/* 1, 2, 4 and 8 producers through FIFOs of 1, 2 and 512 slots. */
TC_CASE(stress)
{
    static const uint32_t sizes[] = {1, 2, 512};
    static const int producers[] = {1, 2, 4, 8};
    uint64_t total, t0;
    size_t si, pi;

    for (si = 0; si < 3; si++) {
        total = sizes[si] < 512 ? 60000 : 400000;
        if (TEST_TSAN) {
            total /= 4;
        }
        for (pi = 0; pi < sizeof(producers) / sizeof(producers[0]); pi++) {
            t0 = tc__now_ns();
            run_stress(sizes[si], producers[pi], total / (uint64_t)producers[pi]);
            printf("proxy stress: size %3u, %d producers, %llu triggers: %.0f ms\n", sizes[si],
                   producers[pi], (unsigned long long)total, (double)(tc__now_ns() - t0) / 1e6);
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    printf("test_proxy: all passed\n");
    return 0;
}
