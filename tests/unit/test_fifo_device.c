/*
 * test_fifo_device.c - unit tests of the device push (tcoll_fifo_device.h)
 * on the CPU: host threads play the GPU, running the header's host path of
 * tc_fifo_device_push (same slot protocol, no futex, no doorbell). Covered:
 * bad arguments, the view's layout and rebasing, device pushes mixed with
 * tc_fifo_push/try_push on one FIFO, a device push waiting for a free slot,
 * device and host producers together into a running proxy through FIFOs of
 * 1, 2 and 512 slots (each trigger handled once, in each producer's order,
 * fields round-tripped through tc_trigger_encode/decode), a proxy that is
 * parked (also without a time limit, before the view existed) when a device
 * push comes, and tc_proxy_stop draining device pushes that never ring.
 * No check depends on timing; a hang fails by CTest's timeout. Must pass
 * under ThreadSanitizer; iteration counts shrink there.
 */
#define _GNU_SOURCE
#include "check.h"
#include "proxy/fifo_internal.h" /* the doorbell's parked flag: is the proxy asleep? */
#include "proxy_testutil.h"
#include "tc_test.h"
#include "tcoll.h"
#include "tcoll_fifo_device.h"
#include "tcoll_trigger.h"
#include "util/backoff.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* fifo_device_strict.c: the header compiled as strict C11. */
uint64_t strict_device_push(const tc_fifo_device_t *v, tc_trigger_t t);

/* ---- triggers: producer id and number, through the channel encoding --------- */

#define SRC_ID_SHIFT 37 /* src_offset = id << 37 | k (below 2^40 for id < 8) */

typedef struct {
    uint32_t type, chan;
    uint64_t size, src, dst;
} want_t;

/* The fields of producer id's trigger number k: every field varies, the
 * offsets' high bits (above 32) included. */
static want_t want_of(uint32_t id, uint64_t k)
{
    want_t w;

    w.type = 1u + (uint32_t)((id + k) % TC_TRIG_TYPE_MASK);
    w.chan = id * 512u + (uint32_t)(k % 512u);
    w.size = k;
    w.src = (uint64_t)id << SRC_ID_SHIFT | k;
    w.dst = TC_TRIG_MAX_OFFSET - k * 3u - id;
    return w;
}

static tc_trigger_t make_trigger(uint32_t id, uint64_t k)
{
    want_t w = want_of(id, k);
    tc_trigger_t t;

    CHECK_EQ(tc_trigger_encode(w.type, w.chan, w.dst, w.src, w.size, &t), 0);
    return t;
}

/* ---- the checking handler ---------------------------------------------------- */

typedef struct {
    uint32_t nprod;
    uint64_t next[MAX_PRODUCERS]; /* handler thread only; read after stop or sync */
    _Atomic uint64_t handled;
    pthread_t thread; /* the proxy thread (init hook) */
    clockid_t clock;  /* its CPU clock */
} checker_t;

static void checker_init(checker_t *c, uint32_t nprod)
{
    memset(c, 0, sizeof(*c));
    c->nprod = nprod;
    atomic_init(&c->handled, 0);
}

static void check_init(void *arg)
{
    checker_t *c = arg;

    c->thread = pthread_self();
    CHECK_EQ(pthread_getcpuclockid(pthread_self(), &c->clock), 0);
}

static tc_proxy_result_t check_handler(tc_trigger_t t, void *arg)
{
    checker_t *c = arg;
    tc_trigger_fields_t f;
    uint64_t id, k;
    want_t w;

    CHECK_EQ(tc_trigger_decode(t, &f), 0);
    id = f.src_offset >> SRC_ID_SHIFT;
    k = f.size;
    CHECK_LT(id, (uint64_t)c->nprod);
    CHECK_MSG(k == c->next[id], "producer %llu: handled #%llu, expected #%llu",
              (unsigned long long)id, (unsigned long long)k, (unsigned long long)c->next[id]);
    w = want_of((uint32_t)id, k);
    CHECK_EQ(f.type, w.type);
    CHECK_EQ(f.chan, w.chan);
    CHECK_EQ(f.src_offset, w.src);
    CHECK_EQ(f.dst_offset, w.dst);
    c->next[id]++;
    /* release: a reader that sees the count (acquire) sees next[] as well. */
    atomic_fetch_add_explicit(&c->handled, 1, memory_order_release);
    return TC_PROXY_CONTINUE;
}

static uint64_t handled(checker_t *c)
{
    return atomic_load_explicit(&c->handled, memory_order_acquire);
}

/* ---- producers --------------------------------------------------------------- */

typedef struct {
    tc_fifo_t *f;
    const tc_fifo_device_t *view; /* non-NULL: a "device" producer */
    uint32_t id;
    uint64_t n;
    _Atomic int *go;
    _Atomic uint64_t done; /* pushes that have returned */
} producer_t;

static void *producer_main(void *arg)
{
    producer_t *p = arg;
    uint64_t k, pos, last = 0;

    while (p->go != NULL && !atomic_load(p->go)) {
        sleep_us(50);
    }
    for (k = 0; k < p->n; k++) {
        tc_trigger_t t = make_trigger(p->id, k);

        if (p->view != NULL) {
            pos = strict_device_push(p->view, t);
        } else if (k % 3 == 1 && tc_fifo_try_push(p->f, t, &pos)) {
            /* pushed without waiting */
        } else {
            pos = tc_fifo_push(p->f, t);
        }
        CHECK(k == 0 || pos > last); /* positions increase in push order */
        last = pos;
        atomic_store(&p->done, k + 1);
    }
    return NULL;
}

static void producer_init(producer_t *p, tc_fifo_t *f, const tc_fifo_device_t *view, uint32_t id,
                          uint64_t n, _Atomic int *go)
{
    p->f = f;
    p->view = view;
    p->id = id;
    p->n = n;
    p->go = go;
    atomic_init(&p->done, 0);
}

/* Waits (without a time limit: CTest's timeout ends a hang) until the proxy
 * thread has announced that it parks. */
static void wait_parked(tc_fifo_t *f)
{
    while (atomic_load(&f->parked) == 0) {
        sleep_us(200);
    }
}

/* ---- cases -------------------------------------------------------------------- */

TC_CASE(bad_args)
{
    tc_fifo_device_t v, orig;
    tc_fifo_t *f;

    memset(&v, 0xab, sizeof(v));
    orig = v;
    CHECK_STATUS(tc_fifo_device_view(NULL, &v), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "fifo is NULL");
    CHECK(memcmp(&v, &orig, sizeof(v)) == 0); /* untouched on failure */
    CHECK_OK(tc_fifo_create(4, &f));
    CHECK_STATUS(tc_fifo_device_view(f, NULL), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "view_p is NULL");
    CHECK_STATUS(tc_fifo_device_view(NULL, NULL), TC_ERR_ARG);
    tc_fifo_destroy(f);
}

/* The view: sizes, whole pages holding head and slots, the same view twice,
 * and rebasing to another address and back. */
TC_CASE(view_layout)
{
    static const uint32_t sizes[] = {1, 2, 512, 4096};
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    tc_fifo_device_t v, v2, moved, back;
    uintptr_t base, end;
    size_t si;
    tc_fifo_t *f;

    for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        CHECK_OK(tc_fifo_create(sizes[si], &f));
        CHECK_OK(tc_fifo_device_view(f, &v));
        CHECK_EQ(v.size, sizes[si]);
        CHECK_EQ(v.mask, sizes[si] - 1);
        CHECK_EQ(v.slots_bytes, (size_t)sizes[si] * 32u);
        CHECK_EQ(sizeof(tc_fifo_device_slot_t), 32);
        base = (uintptr_t)v.map_base;
        end = base + v.map_bytes;
        CHECK_EQ(base % page, 0);
        CHECK_EQ(v.map_bytes % page, 0);
        CHECK((uintptr_t)v.head >= base && (uintptr_t)(v.head + 1) <= end);
        CHECK((uintptr_t)v.slots >= base && (uintptr_t)v.slots + v.slots_bytes <= end);
        CHECK_EQ((uintptr_t)v.slots % 64, 0);
        CHECK_EQ(__atomic_load_n(v.head, __ATOMIC_RELAXED), 0);
        CHECK_OK(tc_fifo_device_view(f, &v2)); /* again: the same view */
        CHECK(memcmp(&v, &v2, sizeof(v)) == 0);

        tc_fifo_device_rebase(&v, (void *)(uintptr_t)0x7000000000ull, &moved);
        CHECK_EQ((uintptr_t)moved.map_base, 0x7000000000ull);
        CHECK_EQ((uintptr_t)moved.head - 0x7000000000ull, (uintptr_t)v.head - base);
        CHECK_EQ((uintptr_t)moved.slots - 0x7000000000ull, (uintptr_t)v.slots - base);
        CHECK(moved.size == v.size && moved.mask == v.mask && moved.map_bytes == v.map_bytes &&
              moved.slots_bytes == v.slots_bytes);
        tc_fifo_device_rebase(&moved, v.map_base, &back);
        CHECK(memcmp(&v, &back, sizeof(v)) == 0);
        tc_fifo_destroy(f);
    }
}

/* One thread, no proxy: device pushes share positions and order with
 * tc_fifo_push/try_push, carry every 128-bit value, and are synced. */
TC_CASE(mixed_with_host_push)
{
    static const uint64_t vals[][2] = {
        {0, 0},
        {ALL_ONES, ALL_ONES},
        {0, ALL_ONES},
        {ALL_ONES, 0},
        {0x0123456789abcdefull, 0xfedcba9876543210ull},
    };
    static const uint32_t sizes[] = {1, 2, 8};
    uint64_t pos, next = 0, popped = 0;
    tc_fifo_device_t v;
    uint32_t i, round;
    tc_trigger_t t;
    size_t si, k;
    tc_fifo_t *f;

    for (si = 0; si < 3; si++) {
        CHECK_OK(tc_fifo_create(sizes[si], &f));
        CHECK_OK(tc_fifo_device_view(f, &v));
        next = popped = 0;
        for (round = 0; round < 20; round++) {
            for (i = 0; i < sizes[si]; i++) {
                k = next % 5;
                t = trig(vals[k][0], vals[k][1]);
                if ((next + round) % 3 == 0) {
                    pos = tc_fifo_push(f, t);
                } else if ((next + round) % 3 == 1) {
                    CHECK_EQ(tc_fifo_try_push(f, t, &pos), 1);
                } else {
                    pos = strict_device_push(&v, t);
                }
                CHECK_EQ(pos, next);
                next++;
            }
            CHECK_EQ(__atomic_load_n(v.head, __ATOMIC_RELAXED), next);
            CHECK_EQ(tc_fifo_try_push(f, trig(1, 1), NULL), 0); /* full */
            for (i = 0; i < sizes[si]; i++) {
                k = popped % 5;
                CHECK_EQ(tc_fifo_poll(f, &t), 1);
                CHECK(t.fst == vals[k][0] && t.snd == vals[k][1]);
                tc_fifo_pop(f);
                CHECK_OK(tc_fifo_sync(f, popped, 0));
                popped++;
            }
            CHECK_EQ(tc_fifo_poll(f, &t), 0);
        }
        tc_fifo_destroy(f);
    }
}

/* A device push into a full FIFO waits (it cannot park) until a pop frees
 * its slot, then lands after the triggers already there. */
TC_CASE(device_push_waits_for_room)
{
    static const uint32_t sizes[] = {1, 2};
    tc_fifo_device_t v;
    producer_t prod;
    tc_trigger_t t;
    pthread_t th;
    uint32_t i;
    size_t si;
    tc_fifo_t *f;

    for (si = 0; si < 2; si++) {
        CHECK_OK(tc_fifo_create(sizes[si], &f));
        CHECK_OK(tc_fifo_device_view(f, &v));
        for (i = 0; i < sizes[si]; i++) {
            CHECK_EQ(tc_fifo_push(f, make_trigger(1, i)), i);
        }
        producer_init(&prod, f, &v, 0, 3, NULL);
        CHECK_EQ(pthread_create(&th, NULL, producer_main, &prod), 0);
        sleep_ms(50);
        CHECK_EQ(atomic_load(&prod.done), 0); /* the FIFO is still full: it must wait */
        for (i = 0; i < sizes[si]; i++) {
            CHECK_EQ(tc_fifo_poll(f, &t), 1);
            CHECK(t.fst == make_trigger(1, i).fst && t.snd == make_trigger(1, i).snd);
            tc_fifo_pop(f);
        }
        for (i = 0; i < 3; i++) {
            while (!tc_fifo_poll(f, &t)) {
                sleep_us(100); /* the device producer pushes on its own time */
            }
            CHECK(t.fst == make_trigger(0, i).fst && t.snd == make_trigger(0, i).snd);
            tc_fifo_pop(f);
        }
        CHECK_EQ(pthread_join(th, NULL), 0);
        CHECK_EQ(atomic_load(&prod.done), 3);
        tc_fifo_destroy(f);
    }
}

/* Producer i of ndev device and nhost host producers: the two kinds
 * alternate, then the more numerous kind goes on alone. */
static int is_device(uint32_t i, uint32_t ndev, uint32_t nhost)
{
    uint32_t both = ndev < nhost ? ndev : nhost;

    return i < 2 * both ? i % 2 == 0 : ndev > nhost;
}

/* ndev "device" and nhost host producers into a running proxy in device
 * mode (the view taken before or after the start); stop drains. */
static void run_mixed(uint32_t size, uint32_t ndev, uint32_t nhost, uint64_t per_producer,
                      int view_after_start)
{
    producer_t prods[MAX_PRODUCERS];
    pthread_t th[MAX_PRODUCERS];
    uint32_t i, nprod = ndev + nhost;
    tc_fifo_device_t v;
    tc_proxy_t *p;
    checker_t c;
    _Atomic int go;

    CHECK_LE(nprod, MAX_PRODUCERS);
    checker_init(&c, nprod);
    atomic_init(&go, 0);
    CHECK_OK(tc_proxy_create(check_handler, &c, check_init, &c, size, &p));
    if (!view_after_start) {
        CHECK_OK(tc_fifo_device_view(tc_proxy_fifo(p), &v));
    }
    CHECK_OK(tc_proxy_start(p, 1));
    if (view_after_start) {
        CHECK_OK(tc_fifo_device_view(tc_proxy_fifo(p), &v));
    }
    for (i = 0; i < nprod; i++) {
        producer_init(&prods[i], tc_proxy_fifo(p), is_device(i, ndev, nhost) ? &v : NULL, i,
                      per_producer, &go);
        CHECK_EQ(pthread_create(&th[i], NULL, producer_main, &prods[i]), 0);
    }
    atomic_store(&go, 1);
    for (i = 0; i < nprod; i++) {
        CHECK_EQ(pthread_join(th[i], NULL), 0);
    }
    CHECK_OK(tc_proxy_stop(p)); /* handles every push that returned */
    CHECK_EQ(handled(&c), (uint64_t)nprod * per_producer);
    for (i = 0; i < nprod; i++) {
        CHECK_EQ(c.next[i], per_producer);
    }
    tc_proxy_destroy(p);
}

/* 1+1, 2+2 and 4+4 device + host producers through 1, 2 and 512 slots, and
 * device producers alone. */
TC_CASE(device_and_host_producers)
{
    static const uint32_t sizes[] = {1, 2, 512};
    static const uint32_t pairs[] = {1, 2, 4};
    uint64_t total, t0;
    size_t si, pi;

    for (si = 0; si < 3; si++) {
        total = sizes[si] < 512 ? 8000 : 80000;
        if (TEST_TSAN) {
            total /= 4;
        }
        for (pi = 0; pi < 3; pi++) {
            t0 = tc__now_ns();
            run_mixed(sizes[si], pairs[pi], pairs[pi], total / (2u * pairs[pi]), (int)(pi % 2));
            printf("mixed: size %3u, %u device + %u host producers, %llu triggers: %.0f ms\n",
                   sizes[si], pairs[pi], pairs[pi], (unsigned long long)total,
                   (double)(tc__now_ns() - t0) / 1e6);
            fflush(stdout);
        }
        run_mixed(sizes[si], 3, 0, total / 6, 0);
    }
}

/* A parked proxy handles a device push, which never rings: first parked
 * without a time limit before any view existed (the view's ring wakes it),
 * then parked with ever longer limits after idle spells. */
TC_CASE(parked_proxy_takes_device_push)
{
    static const int idle_ms[] = {0, 1, 5, 30, 100};
    uint64_t pos, cpu0, cpu1, n = 0;
    tc_fifo_device_t v;
    tc_proxy_t *p;
    checker_t c;
    tc_fifo_t *f;
    size_t r;

    checker_init(&c, 2);
    CHECK_OK(tc_proxy_create(check_handler, &c, check_init, &c, 4, &p));
    f = tc_proxy_fifo(p);
    CHECK_OK(tc_proxy_start(p, 1));
    wait_parked(f); /* asleep without a time limit: not in device mode yet */
    CHECK_OK(tc_fifo_device_view(f, &v));
    for (r = 0; r < sizeof(idle_ms) / sizeof(idle_ms[0]); r++) {
        sleep_ms(idle_ms[r]);
        wait_parked(f);
        pos = strict_device_push(&v, make_trigger(0, n));
        CHECK_OK(tc_fifo_sync(f, pos, -1)); /* handled although nothing rang */
        n++;
        CHECK_EQ(handled(&c), n);
        CHECK_EQ(c.next[0], n);
    }
    /* A host push after a device push still rings and is handled in order. */
    wait_parked(f);
    (void)strict_device_push(&v, make_trigger(0, n));
    pos = tc_fifo_push(f, make_trigger(1, 0));
    CHECK_OK(tc_fifo_sync(f, pos, -1));
    CHECK_EQ(handled(&c), n + 2);

    /* Informational only: the device-mode idle proxy's CPU use. */
    sleep_ms(20);
    cpu0 = clock_ns(c.clock);
    sleep_ms(300);
    cpu1 = clock_ns(c.clock);
    printf("idle proxy in device mode: %.2f ms of CPU in 300 ms\n", (double)(cpu1 - cpu0) / 1e6);
    CHECK_OK(tc_proxy_stop(p));
    tc_proxy_destroy(p);
}

/* tc_proxy_stop handles every device push that returned before the call,
 * although none rings and producers keep pushing (and wait for room) during
 * it; the rest stays for the next start. Tiny FIFOs, so that a device
 * producer often holds a position the stop counts but publishes it only
 * after the proxy has gone idle. */
TC_CASE(stop_drains_device_pushes)
{
    static const uint32_t sizes[] = {1, 2, 16};
    producer_t prods[3];
    pthread_t th[3];
    uint64_t before, n = TEST_TSAN ? 400 : 2000;
    tc_fifo_device_t v;
    tc_proxy_t *p;
    checker_t c;
    _Atomic int go;
    size_t si;
    int i, round;

    for (si = 0; si < 3; si++) {
        checker_init(&c, 3);
        atomic_init(&go, 0);
        CHECK_OK(tc_proxy_create(check_handler, &c, check_init, &c, sizes[si], &p));
        CHECK_OK(tc_fifo_device_view(tc_proxy_fifo(p), &v));
        CHECK_OK(tc_proxy_start(p, 1));
        for (i = 0; i < 3; i++) {
            producer_init(&prods[i], tc_proxy_fifo(p), &v, (uint32_t)i, n, &go);
            CHECK_EQ(pthread_create(&th[i], NULL, producer_main, &prods[i]), 0);
        }
        atomic_store(&go, 1);
        for (round = 0; round < 4; round++) {
            sleep_ms(5);
            before = 0;
            for (i = 0; i < 3; i++) {
                before += atomic_load(&prods[i].done);
            }
            CHECK_OK(tc_proxy_stop(p));
            CHECK_GE(handled(&c), before);
            CHECK_OK(tc_proxy_start(p, round % 2));
        }
        for (i = 0; i < 3; i++) {
            CHECK_EQ(pthread_join(th[i], NULL), 0);
        }
        CHECK_OK(tc_proxy_stop(p));
        CHECK_EQ(handled(&c), 3 * n);
        for (i = 0; i < 3; i++) {
            CHECK_EQ(c.next[i], n);
        }
        tc_proxy_destroy(p);
    }
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    printf("test_fifo_device: all passed\n");
    return 0;
}
