/*
 * test_fast.c - the small-message path inside a node (src/exec/fast.c):
 * cached small allreduces that skip the engine thread. Every case runs on
 * one node (np 2..4), where names go that way after their first run.
 *
 *   steps      many steps of eight names (every dtype, sum/avg/min/max/prod,
 *              scaled ones, 0 and 1 elements, up to the box size) submitted
 *              in a different order per rank and step from two threads, every
 *              element checked exactly, the same bits on every rank;
 *   mismatch   a rank changes a fast name's count, then its dtype: every rank
 *              gets TC_ERR_MISMATCH naming the field and the ranks; the name
 *              then runs through the engine, right again;
 *   grow       every rank grows a fast name past the box: legal, it runs
 *              through the engine, right;
 *   large      names of 8 KiB to 128 KiB take the large boxes
 *              (TCOLL_SHM_FAST_LARGE_BYTES), exact, and one grown past them
 *              runs through the engine; with TCOLL_SHM_FAST_NAMES=2 (its own
 *              CTest) the steps' small names take large boxes too, every
 *              name still reaching the path;
 *   barrier    a fast allreduce nobody waits for, then a barrier: the barrier
 *              completes (the engine completes the allreduce);
 *   join       ranks run 0..3 extra steps of a fast name, then join: the
 *              joined ranks' engines add the identity, results exact;
 *   stall      (TCOLL_STALL_ABORT_S=2) the last rank skips one use of a fast
 *              name: the others fail with TC_ERR_TIMEOUT saying it stalled,
 *              and every rank's next calls of the name meet, through the
 *              engine.
 */
#define _GNU_SOURCE

#include <pthread.h>

#include "mpi_common.h"

#define NNAMES 8

typedef struct {
    const char *name;
    tc_dtype_t dt;
    tc_op_t op;
    int64_t count;
    double pre, post;
} spec_t;

static const spec_t specs[NNAMES] = {
    {"fast/f32.sum", TC_FLOAT32, TC_SUM, 1, 1.0, 1.0},
    {"fast/f64.avg", TC_FLOAT64, TC_AVG, 33, 1.0, 1.0},
    {"fast/i32.max", TC_INT32, TC_MAX, 100, 1.0, 1.0},
    {"fast/i64.prod", TC_INT64, TC_PROD, 7, 1.0, 1.0},
    {"fast/f16.min", TC_FLOAT16, TC_MIN, 500, 1.0, 1.0},
    {"fast/u8.sum", TC_UINT8, TC_SUM, 0, 1.0, 1.0},
    {"fast/f32.scaled", TC_FLOAT32, TC_SUM, 64, 2.0, 0.5},
    {"fast/bf16.sum", TC_BFLOAT16, TC_SUM, 4096, 1.0, 1.0}, /* 8 KiB: in a box */
};

typedef struct {
    spec_t s;
    uint64_t salt;
    void *send, *recv;
    tc_request_t *req;
} call_t;

static void call_prepare(call_t *c, const spec_t *s, int step, int rank)
{
    size_t bytes = (size_t)(s->count > 0 ? s->count : 1) * tt_dtype_bytes(s->dt);
    char key[96];

    c->s = *s;
    snprintf(key, sizeof(key), "%s/%d", s->name, step);
    c->salt = tt_hash_str(key);
    c->send = tt_xmalloc(bytes);
    c->recv = tt_xmalloc(bytes);
    tt_fill(s->dt, s->op, c->salt, rank, c->send, s->count);
}

static int g_fast_calls;      /* calls tc_request_algorithm says the small-message path ran */
static unsigned g_fast_specs; /* bit i: a call of specs[i] took that path */

static tc_status_t call_submit(call_t *c)
{
    tc_tensor_t t = {c->send, c->s.dt, 1, {c->s.count}};
    tc_opts_t o = TC_OPTS_INIT;

    o.prescale = c->s.pre;
    o.postscale = c->s.post;
    return tc_allreduce_ex(c->s.name, &t, c->recv, c->s.op, &o, &c->req);
}

/* Waits, checks exact values (unscaled calls: the scaled one is checked as
 * the sum times pre x post = 1, exactly representable here), frees. */
static void call_finish(call_t *c)
{
    tc_status_t st = tc_wait(c->req);

    CHECK_MSG(st == TC_OK, "%s: %s (%s)", c->s.name, tc_status_string(st),
              tc_request_error(c->req));
    tt_check_allreduce(c->s.name, c->s.dt, c->s.op, c->salt, tt_size, c->recv, c->s.count);
    /* which path carried it: the small-message path's name, or an engine record's */
    CHECK(tc_request_algorithm(c->req) != NULL);
    if (strcmp(tc_request_algorithm(c->req), "shm, fast") == 0) {
        g_fast_calls++;
        for (int i = 0; i < NNAMES; i++) {
            g_fast_specs |= strcmp(c->s.name, specs[i].name) == 0 ? 1u << i : 0u;
        }
    }
    tc_request_free(c->req);
    free(c->send);
    free(c->recv);
}

typedef struct {
    call_t *calls;
    int *order;
    int from, step;
} half_t;

static void *submit_half(void *arg)
{
    half_t *h = arg;
    for (int i = h->from; i < NNAMES; i += 2) {
        CHECK_OK(call_submit(&h->calls[h->order[i]]));
    }
    return NULL;
}

/* One step of every name, in this rank's order for the step, from two
 * threads; then everything waited for and checked. */
static void one_step(int step)
{
    call_t calls[NNAMES];
    int order[NNAMES];
    tt_rng_t rng = {tt_key(0xfa57, (uint64_t)tt_rank, (uint64_t)step)};
    half_t h[2];
    pthread_t th;

    for (int i = 0; i < NNAMES; i++) {
        call_prepare(&calls[i], &specs[i], step, tt_rank);
        order[i] = i;
    }
    tt_shuffle(order, NNAMES, &rng);
    h[0] = (half_t){calls, order, 0, step};
    h[1] = (half_t){calls, order, 1, step};
    CHECK_EQ(pthread_create(&th, NULL, submit_half, &h[1]), 0);
    submit_half(&h[0]);
    CHECK_EQ(pthread_join(th, NULL), 0);
    for (int i = 0; i < NNAMES; i++) {
        call_finish(&calls[order[NNAMES - 1 - i]]);
    }
}

TC_CASE(steps)
{
    g_fast_calls = 0;
    g_fast_specs = 0;
    for (int step = 0; step < 60; step++) {
        one_step(step);
    }
    if (tt_size > 1 && tc_local_size() == tt_size) { /* one node: the path is there */
        CHECK_MSG(g_fast_calls > 0, "no call reported \"shm, fast\" by tc_request_algorithm");
        /* every name has a box: 8 small ones, or (TCOLL_SHM_FAST_NAMES=2)
         * 2 small and 6 large */
        CHECK_MSG(g_fast_specs == (1u << NNAMES) - 1, "names that took the path: mask %#x",
                  g_fast_specs);
    }
    tt_say("test_fast: 60 steps of %d names exact on %d ranks\n", NNAMES, tt_size);
}

/* One allreduce of name with count elements of dt (sum), expecting want. */
static void one_call(const char *name, tc_dtype_t dt, int64_t count, int step, tc_status_t want,
                     const char *text)
{
    spec_t s = {name, dt, TC_SUM, count, 1.0, 1.0};
    call_t c;
    tc_status_t st;

    call_prepare(&c, &s, step, tt_rank);
    CHECK_OK(call_submit(&c));
    st = tc_wait(c.req);
    CHECK_MSG(st == want, "%s: %s (%s), want %s", name, tc_status_string(st),
              tc_request_error(c.req), tc_status_string(want));
    if (want == TC_OK) {
        tt_check_allreduce(name, dt, TC_SUM, c.salt, tt_size, c.recv, count);
    } else {
        CHECK(tc_request_algorithm(c.req) == NULL); /* nothing carried out a failed call */
        if (text != NULL) {
            CHECK_STR_CONTAINS(tc_request_error(c.req), text);
        }
    }
    tc_request_free(c.req);
    free(c.send);
    free(c.recv);
}

TC_CASE(mismatch)
{
    const int odd = tt_size - 1;

    for (int step = 0; step < 5; step++) {
        one_call("fast/mm", TC_INT32, 10, step, TC_OK, NULL);
    }
    /* the last rank sends one more element: a shape mismatch everywhere */
    one_call("fast/mm", TC_INT32, tt_rank == odd ? 11 : 10, 5,
             tt_size > 1 ? TC_ERR_MISMATCH : TC_OK, tt_size > 1 ? "shape mismatch" : NULL);
    for (int step = 10; step < 14; step++) { /* through the engine now: right again */
        one_call("fast/mm", TC_INT32, 10, step, TC_OK, NULL);
    }
    /* another fast name: a dtype mismatch names the ranks */
    for (int step = 0; step < 3; step++) {
        one_call("fast/mm2", TC_FLOAT32, 4, step, TC_OK, NULL);
    }
    one_call("fast/mm2", tt_rank == odd ? TC_INT32 : TC_FLOAT32, 4, 3,
             tt_size > 1 ? TC_ERR_MISMATCH : TC_OK, tt_size > 1 ? "dtype mismatch" : NULL);
    one_call("fast/mm2", TC_FLOAT32, 4, 4, TC_OK, NULL);
    tt_say("test_fast: mismatches on fast names fail everywhere, then run again\n");
}

TC_CASE(grow)
{
    for (int step = 0; step < 4; step++) {
        one_call("fast/grow", TC_FLOAT64, 100, step, TC_OK, NULL);
    }
    /* 1 MiB of float64: past any box, on every rank: legal */
    for (int step = 4; step < 7; step++) {
        one_call("fast/grow", TC_FLOAT64, 131072, step, TC_OK, NULL);
    }
    one_call("fast/grow", TC_FLOAT64, 100, 7, TC_OK, NULL);
    tt_say("test_fast: a fast name grown past its box runs through the engine\n");
}

TC_CASE(large)
{
    /* 80 000 B, 128 KiB (a large box's size exactly), 72 000 B averaged */
    static const spec_t big[3] = {
        {"fast/large.f32", TC_FLOAT32, TC_SUM, 20000, 1.0, 1.0},
        {"fast/large.i8", TC_INT8, TC_MAX, 131072, 1.0, 1.0},
        {"fast/large.f64", TC_FLOAT64, TC_AVG, 9000, 1.0, 1.0},
    };
    int fast = 0;

    for (int step = 0; step < 8; step++) {
        call_t c[3];
        for (int i = 0; i < 3; i++) {
            call_prepare(&c[i], &big[i], step, tt_rank);
            CHECK_OK(call_submit(&c[i]));
        }
        for (int i = 2; i >= 0; i--) {
            int before = g_fast_calls;
            call_finish(&c[i]);
            fast += step >= 3 && g_fast_calls > before;
        }
    }
    if (tt_size > 1 && tc_local_size() == tt_size) {
        CHECK_MSG(fast == 15, "%d of the 15 calls after the third step took the path", fast);
    }
    /* past the large box (160 000 B), on every rank: through the engine */
    for (int step = 8; step < 11; step++) {
        one_call("fast/large.f32", TC_FLOAT32, 40000, step, TC_OK, NULL);
    }
    one_call("fast/large.f32", TC_FLOAT32, 20000, 11, TC_OK, NULL);
    tt_say("test_fast: 8 KiB .. 128 KiB names take the large boxes, exact\n");
}

TC_CASE(barrier_after_unwaited)
{
    spec_t s = {"fast/unwaited", TC_INT64, TC_SUM, 5, 1.0, 1.0};

    for (int step = 0; step < 20; step++) {
        call_t c;
        tc_request_t *b = NULL;
        call_prepare(&c, &s, step, tt_rank);
        CHECK_OK(call_submit(&c));
        CHECK_OK(tc_barrier(&b));
        CHECK_OK(tc_wait(b)); /* the allreduce before it completes without a waiter */
        tc_request_free(b);
        call_finish(&c);
    }
    tt_say("test_fast: barriers after unwaited fast allreduces complete\n");
}

/* Step `step` of "fast/join" (int64 sum of 9): the ranks r with r % 4 >
 * step - 3 take part (every rank before step 3 and from step 10, after the
 * join); the joined ones add 0. */
static void join_call(int step)
{
    spec_t s = {"fast/join", TC_INT64, TC_SUM, 9, 1.0, 1.0};
    call_t c;

    call_prepare(&c, &s, step, tt_rank);
    CHECK_OK(call_submit(&c));
    CHECK_OK(tc_wait(c.req));
    for (int64_t i = 0; i < 9; i++) {
        uint64_t acc = 0;
        int64_t got;
        for (int r = 0; r < tt_size; r++) {
            if (step < 3 || step >= 10 || r % 4 > step - 3) {
                acc += (uint64_t)tt_value(TC_INT64, TC_SUM, c.salt, r, i);
            }
        }
        memcpy(&got, (char *)c.recv + i * 8, 8);
        CHECK_MSG(got == (int64_t)acc, "join step %d element %lld: %lld, want %lld", step,
                  (long long)i, (long long)got, (long long)acc);
    }
    tc_request_free(c.req);
    free(c.send);
    free(c.recv);
}

TC_CASE(join)
{
    const int extra = tt_rank % 4;
    tc_request_t *j = NULL;
    int step;

    for (step = 0; step < 3; step++) { /* every rank: the name becomes fast */
        join_call(step);
    }
    for (step = 3; step < 3 + extra; step++) {
        join_call(step);
    }
    CHECK_OK(tc_join(&j));
    CHECK_OK(tc_wait(j));
    tc_request_free(j);
    for (step = 10; step < 13; step++) { /* after the join: as usual */
        join_call(step);
    }
    tt_say("test_fast: joined ranks add the identity to fast names\n");
}

TC_CASE(stall)
{
    const int late = tt_size - 1;
    const char *knob = getenv("TCOLL_STALL_ABORT_S");

    if (knob == NULL || strcmp(knob, "2") != 0) {
        tt_say("test_fast: stall needs TCOLL_STALL_ABORT_S=2 (its own CTest): skipped\n");
        return;
    }
    for (int step = 0; step < 3; step++) {
        one_call("fast/stall", TC_INT32, 3, step, TC_OK, NULL);
    }
    if (tt_size > 1) {
        /* the last rank skips use 3: the others fail after 2 s, it waits
         * that long too; then every rank's next call meets (through the
         * engine) as after any stall */
        if (tt_rank != late) {
            one_call("fast/stall", TC_INT32, 3, 3, TC_ERR_TIMEOUT, "stalled for");
        } else {
            tt_sleep_ms(3000);
        }
    }
    for (int step = 10; step < 13; step++) { /* through the engine now */
        one_call("fast/stall", TC_INT32, 3, step, TC_OK, NULL);
    }
    tt_say("test_fast: a stalled fast name fails on every rank, then runs again\n");
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
