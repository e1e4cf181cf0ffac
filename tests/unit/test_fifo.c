/*
 * test_fifo.c - unit tests of the trigger FIFO on its own (no proxy thread,
 * no MPI): bad arguments, every 128-bit value carried, try_push on full,
 * push waiting (parked, not spinning) on full, sync with and without a
 * timeout, and 1..8 producers through FIFOs of 1, 2 and 512 slots with a
 * consumer thread written here that checks exactly-once and per-producer
 * order. Must pass under ThreadSanitizer; iteration counts shrink there.
 */
#define _GNU_SOURCE
#include "check.h"
#include "proxy_testutil.h"
#include "util/backoff.h"
#include "tc_test.h"
#include "tcoll.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

TC_CASE(bad_args)
{
    tc_fifo_t *f = (tc_fifo_t *)(uintptr_t)0x1234;
    tc_fifo_t *orig = f;
    tc_trigger_t t = trig(1, 2);
    uint64_t pos = 77;

    CHECK_STATUS(tc_fifo_create(0, &f), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "power of two");
    CHECK_STATUS(tc_fifo_create(3, &f), TC_ERR_ARG);
    CHECK_STATUS(tc_fifo_create(96, &f), TC_ERR_ARG);
    CHECK_STATUS(tc_fifo_create((1u << 20) + 1, &f), TC_ERR_ARG);
    CHECK_STATUS(tc_fifo_create(1u << 21, &f), TC_ERR_ARG);
    CHECK_STATUS(tc_fifo_create(1u << 31, &f), TC_ERR_ARG);
    CHECK_STATUS(tc_fifo_create(UINT32_MAX, &f), TC_ERR_ARG);
    CHECK_STATUS(tc_fifo_create(4, NULL), TC_ERR_ARG);
    CHECK(f == orig); /* untouched on failure */

    CHECK_EQ(tc_fifo_push(NULL, t), UINT64_MAX);
    CHECK_STR_CONTAINS(tc_last_error(), "NULL");
    CHECK_EQ(tc_fifo_try_push(NULL, t, &pos), 0);
    CHECK_EQ(pos, 77);
    CHECK_EQ(tc_fifo_poll(NULL, &t), 0);
    tc_fifo_pop(NULL);
    tc_fifo_destroy(NULL);
    CHECK_STATUS(tc_fifo_sync(NULL, 0, 0), TC_ERR_ARG);

    CHECK_OK(tc_fifo_create(1u << 20, &f)); /* the largest size is accepted */
    CHECK_EQ(tc_fifo_poll(f, NULL), 0);
    CHECK_STATUS(tc_fifo_sync(f, 0, 0), TC_ERR_ARG); /* nothing pushed yet */
    CHECK_STR_CONTAINS(tc_last_error(), "never pushed");
    CHECK_STATUS(tc_fifo_sync(f, UINT64_MAX, -1), TC_ERR_ARG);
    tc_fifo_destroy(f);
}

/* One thread: order, positions, every special value, try_push on full,
 * poll/pop on empty, sync of popped and unpopped positions. */
static void test_single_thread(uint32_t size)
{
    static const uint64_t vals[][2] = {
        {0, 0},
        {ALL_ONES, ALL_ONES},
        {0, ALL_ONES},
        {ALL_ONES, 0},
        {1, 0},
        {0, 1},
        {0x8000000000000000ull, 0x8000000000000000ull},
        {0x0123456789abcdefull, 0xfedcba9876543210ull},
    };
    const uint32_t nvals = sizeof(vals) / sizeof(vals[0]);
    tc_fifo_t *f;
    tc_trigger_t t;
    uint64_t pos, next_pos = 0, popped = 0;
    uint32_t round, i, k;

    CHECK_OK(tc_fifo_create(size, &f));
    CHECK_EQ(tc_fifo_poll(f, &t), 0);
    tc_fifo_pop(f); /* no trigger: ignored */
    CHECK_EQ(tc_fifo_poll(f, &t), 0);

    for (round = 0; round < 5; round++) {
        /* Fill it with try_push, then one more must fail. */
        for (i = 0; i < size; i++) {
            k = (uint32_t)((next_pos) % nvals);
            CHECK_EQ(tc_fifo_try_push(f, trig(vals[k][0], vals[k][1]), &pos), 1);
            CHECK_EQ(pos, next_pos);
            next_pos++;
        }
        pos = 12345;
        CHECK_EQ(tc_fifo_try_push(f, trig(0, 0), &pos), 0);
        CHECK_EQ(pos, 12345); /* untouched when full */
        CHECK_EQ(tc_fifo_try_push(f, trig(0, 0), NULL), 0);
        CHECK_STATUS(tc_fifo_sync(f, next_pos - 1, 0), TC_ERR_TIMEOUT);
        CHECK_STATUS(tc_fifo_sync(f, next_pos - 1, 1000), TC_ERR_TIMEOUT);
        CHECK_STR_CONTAINS(tc_last_error(), "not handled");
        /* Drain in order; poll twice to see it is idempotent until pop. */
        for (i = 0; i < size; i++) {
            k = (uint32_t)(popped % nvals);
            CHECK_EQ(tc_fifo_poll(f, &t), 1);
            CHECK_EQ(tc_fifo_poll(f, &t), 1);
            CHECK(t.fst == vals[k][0] && t.snd == vals[k][1]);
            tc_fifo_pop(f);
            CHECK_OK(tc_fifo_sync(f, popped, 0));
            CHECK_OK(tc_fifo_sync(f, popped, -1));
            popped++;
        }
        CHECK_EQ(tc_fifo_poll(f, &t), 0);
        /* Blocking push into the empty FIFO returns at once with the next position. */
        for (i = 0; i < size; i++) {
            k = (uint32_t)(next_pos % nvals);
            CHECK_EQ(tc_fifo_push(f, trig(vals[k][0], vals[k][1])), next_pos);
            next_pos++;
        }
        for (i = 0; i < size; i++) {
            k = (uint32_t)(popped % nvals);
            CHECK_EQ(tc_fifo_poll(f, &t), 1);
            CHECK(t.fst == vals[k][0] && t.snd == vals[k][1]);
            tc_fifo_pop(f);
            popped++;
        }
    }
    CHECK_OK(tc_fifo_sync(f, 0, 0));
    tc_fifo_destroy(f);
}

/* ---- push on a full FIFO waits, parked ------------------------------------ */

typedef struct {
    tc_fifo_t *f;
    _Atomic int done;
    _Atomic uint64_t pos;
    uint64_t cpu_ns;
} blocked_push_t;

static void *blocked_push_main(void *arg)
{
    blocked_push_t *b = arg;
    uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t pos = tc_fifo_push(b->f, trig(0xabc, 0xdef));

    b->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    atomic_store(&b->pos, pos);
    atomic_store(&b->done, 1);
    return NULL;
}

static void test_push_waits_when_full(uint32_t size)
{
    blocked_push_t b;
    pthread_t th;
    tc_trigger_t t;
    uint32_t i;

    CHECK_OK(tc_fifo_create(size, &b.f));
    atomic_init(&b.done, 0);
    atomic_init(&b.pos, 0);
    for (i = 0; i < size; i++) {
        CHECK_EQ(tc_fifo_push(b.f, trig(i, i)), i);
    }
    CHECK_EQ(pthread_create(&th, NULL, blocked_push_main, &b), 0);
    sleep_ms(300);
    CHECK_EQ(atomic_load(&b.done), 0); /* still waiting for room */
    CHECK_EQ(tc_fifo_poll(b.f, &t), 1);
    CHECK_EQ(t.fst, 0);
    tc_fifo_pop(b.f);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_EQ(atomic_load(&b.done), 1);
    CHECK_EQ(atomic_load(&b.pos), size);
    /* It waited ~300 ms; a parked waiter burns a tiny fraction of that. */
    CHECK_MSG(b.cpu_ns < 60000000ull, "blocked push used %.1f ms of CPU in 300 ms",
              (double)b.cpu_ns / 1e6);
    for (i = 1; i <= size; i++) {
        CHECK_EQ(tc_fifo_poll(b.f, &t), 1);
        CHECK_EQ(t.fst, i == size ? 0xabc : i);
        tc_fifo_pop(b.f);
    }
    CHECK_EQ(tc_fifo_poll(b.f, &t), 0);
    tc_fifo_destroy(b.f);
}

/* ---- sync: waits for the pop, and times out --------------------------------- */

typedef struct {
    tc_fifo_t *f;
    uint64_t pos;
    int64_t timeout_ns;
    tc_status_t st;
    _Atomic int done;
} syncer_t;

static void *syncer_main(void *arg)
{
    syncer_t *s = arg;
    s->st = tc_fifo_sync(s->f, s->pos, s->timeout_ns);
    atomic_store(&s->done, 1);
    return NULL;
}

static void test_sync(void)
{
    tc_fifo_t *f;
    syncer_t s[3];
    pthread_t th[3];
    tc_trigger_t t;
    uint64_t t0, el;
    int i;

    CHECK_OK(tc_fifo_create(4, &f));
    CHECK_EQ(tc_fifo_push(f, trig(0, 0)), 0);
    CHECK_EQ(tc_fifo_push(f, trig(1, 1)), 1);

    /* Timeout: returns TC_ERR_TIMEOUT after about the time asked for. */
    t0 = tc__now_ns();
    CHECK_STATUS(tc_fifo_sync(f, 0, 50000000), TC_ERR_TIMEOUT);
    el = tc__now_ns() - t0;
    CHECK_GE(el, 50000000);
    CHECK_LT(el, 5000000000ull);

    /* Forever, and with a long timeout, on positions 0 and 1 from other threads;
     * a third with a short timeout on position 1 gives up. */
    for (i = 0; i < 3; i++) {
        s[i].f = f;
        s[i].pos = i == 0 ? 0 : 1;
        s[i].timeout_ns = i == 0 ? -1 : i == 1 ? 60000000000ll : 20000000;
        s[i].st = TC_ERR_STATE;
        atomic_init(&s[i].done, 0);
        CHECK_EQ(pthread_create(&th[i], NULL, syncer_main, &s[i]), 0);
    }
    sleep_ms(200);
    for (i = 0; i < 2; i++) {
        CHECK_EQ(atomic_load(&s[i].done), 0);
    }
    CHECK_EQ(pthread_join(th[2], NULL), 0);
    CHECK_STATUS(s[2].st, TC_ERR_TIMEOUT);

    CHECK_EQ(tc_fifo_poll(f, &t), 1);
    tc_fifo_pop(f); /* position 0 */
    CHECK_EQ(pthread_join(th[0], NULL), 0);
    CHECK_OK(s[0].st);
    sleep_ms(50);
    CHECK_EQ(atomic_load(&s[1].done), 0); /* position 1 not popped yet */
    CHECK_EQ(tc_fifo_poll(f, &t), 1);
    tc_fifo_pop(f); /* position 1 */
    CHECK_EQ(pthread_join(th[1], NULL), 0);
    CHECK_OK(s[1].st);
    tc_fifo_destroy(f);
}

/* ---- many producers, one consumer ------------------------------------------ */

/* Trigger of producer p, number i: fst = p << 40 | i; snd alternates all
 * zeros and all ones, so producer 0's first trigger is all zeros. Every
 * producer ends with one all-ones trigger. */
#define PROD_SHIFT 40

typedef struct {
    tc_fifo_t *f;
    int id;
    uint64_t n;
    int use_try;
    _Atomic int *go;
} producer_t;

static void *producer_main(void *arg)
{
    producer_t *p = arg;
    uint64_t i, pos, last = 0;

    while (!atomic_load(p->go)) {
        sleep_us(50);
    }
    for (i = 0; i < p->n; i++) {
        tc_trigger_t t = trig((uint64_t)p->id << PROD_SHIFT | i, (i & 1) ? ALL_ONES : 0);
        if (p->use_try && (i & 1)) {
            /* try_push, and push once it says full: a thread that only
             * retries try_push starves behind busy processes on a loaded
             * machine. */
            if (!tc_fifo_try_push(p->f, t, &pos)) {
                pos = tc_fifo_push(p->f, t);
            }
        } else {
            pos = tc_fifo_push(p->f, t);
        }
        CHECK(i == 0 || pos > last); /* positions increase in push order */
        last = pos;
    }
    tc_fifo_push(p->f, trig(ALL_ONES, ALL_ONES));
    return NULL;
}

static void test_mpsc(uint32_t size, int nprod, uint64_t per_producer)
{
    producer_t prods[MAX_PRODUCERS];
    pthread_t th[MAX_PRODUCERS];
    uint64_t next[MAX_PRODUCERS] = {0};
    uint64_t total = (uint64_t)nprod * per_producer, got = 0, idle = 0, idle_since = 0;
    int ones = 0, i;
    _Atomic int go;
    tc_fifo_t *f;
    tc_trigger_t t;

    CHECK_OK(tc_fifo_create(size, &f));
    atomic_init(&go, 0);
    for (i = 0; i < nprod; i++) {
        prods[i].f = f;
        prods[i].id = i;
        prods[i].n = per_producer;
        prods[i].use_try = i % 2;
        prods[i].go = &go;
        CHECK_EQ(pthread_create(&th[i], NULL, producer_main, &prods[i]), 0);
    }
    atomic_store(&go, 1);
    while (got < total || ones < nprod) {
        if (!tc_fifo_poll(f, &t)) {
            /* A consumer on the public API can only poll: spin ~50 us, then
             * nap (a yielding spinner starves behind busy processes). */
            if (++idle % 64 == 0) {
                if (idle_since == 0) {
                    idle_since = tc__now_ns();
                } else if (tc__now_ns() - idle_since > 50000) {
                    sleep_us(20);
                }
            }
            continue;
        }
        idle_since = 0;
        if (t.fst == ALL_ONES && t.snd == ALL_ONES) {
            ones++;
        } else {
            uint64_t p = t.fst >> PROD_SHIFT, k = t.fst & ((1ull << PROD_SHIFT) - 1);
            CHECK_LT(p, (uint64_t)nprod);
            CHECK_MSG(k == next[p],
                      "producer %llu: got #%llu, expected #%llu (size %u, %d producers)",
                      (unsigned long long)p, (unsigned long long)k, (unsigned long long)next[p],
                      size, nprod);
            CHECK(t.snd == ((k & 1) ? ALL_ONES : 0));
            next[p]++;
            got++;
        }
        tc_fifo_pop(f);
    }
    for (i = 0; i < nprod; i++) {
        CHECK_EQ(pthread_join(th[i], NULL), 0);
        CHECK_EQ(next[i], per_producer);
    }
    CHECK_EQ(ones, nprod);
    CHECK_EQ(tc_fifo_poll(f, &t), 0);
    CHECK_OK(tc_fifo_sync(f, total + (uint64_t)nprod - 1, 0));
    tc_fifo_destroy(f);
}

/* FIFOs of 1, 2, 512 and 1024 slots. */
TC_CASE(single_thread)
{
    static const uint32_t sizes[] = {1, 2, 512};
    size_t si;

    for (si = 0; si < 3; si++) {
        test_single_thread(sizes[si]);
    }
    test_single_thread(1u << 10);
}

TC_CASE(push_waits_when_full)
{
    test_push_waits_when_full(1);
    test_push_waits_when_full(2);
}

TC_CASE(sync)
{
    test_sync();
}

/* 1, 2, 3 and 8 producers through FIFOs of 1, 2 and 512 slots. */
TC_CASE(producers_and_one_consumer)
{
    static const uint32_t sizes[] = {1, 2, 512};
    static const int producers[] = {1, 2, 3, 8};
    uint64_t total, t0;
    size_t si, pi;

    for (si = 0; si < 3; si++) {
        /* Tiny FIFOs hand over (and often park) on every trigger: fewer. */
        total = sizes[si] < 512 ? 60000 : 400000;
        if (TEST_TSAN) {
            total /= 4;
        }
        for (pi = 0; pi < sizeof(producers) / sizeof(producers[0]); pi++) {
            t0 = tc__now_ns();
            test_mpsc(sizes[si], producers[pi], total / (uint64_t)producers[pi]);
            printf("mpsc: size %4u, %d producers, %llu triggers: %.0f ms\n", sizes[si],
                   producers[pi], (unsigned long long)total, (double)(tc__now_ns() - t0) / 1e6);
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    printf("test_fifo: all passed\n");
    return 0;
}
