/*
 * test_join.c - tc_join, for ranks with uneven amounts of data: a rank out
 * of batches joins, and until every rank has joined the others' allreduces
 * and reducescatters run without it (it contributes zeros to sum and avg,
 * the op's identity to min, max and prod, never scaled), their barriers
 * complete without it, and their allgathers, broadcasts and alltoalls fail
 * with TC_ERR_STATE naming it. A rank whose join is pending can submit
 * nothing. The join's output, the rank that joined last, is the same on
 * every rank; after it the next step runs as usual, cached names included,
 * and the next epoch can join again.
 *
 * Each case ends with every rank past a completed join, so any one case can
 * run alone. Expected results are computed here from the set of ranks still
 * active at each step, with the identities written out for the others; the
 * inputs are small integers, so every float result is exact and checked bit
 * for bit.
 *
 * Some cases make one rank join while the others sleep before they submit,
 * so that the others' calls meet a rank that has already joined. The sleep
 * orders the calls on any sane machine but does not prove it; where the
 * outcome would be the same either way (by tcoll.h's rules) it only keeps
 * the case about what it says. No assertion is about time.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>

#include "mpi_common.h"

/* ---- helpers ---------------------------------------------------------------- */

static void wait_free(tc_request_t *req)
{
    CHECK_OK(tc_wait(req));
    tc_request_free(req);
}

/* Waits for the join j, checks that its output (a 0-dim int32) and
 * tc_request_last_joined agree on a rank of the job, frees it, and returns
 * that rank. */
static int finish_join(tc_request_t *j)
{
    tc_tensor_t out;
    int32_t v;
    int last = -1;

    CHECK_OK(tc_wait(j));
    CHECK_OK(tc_request_output(j, &out));
    CHECK_EQ(out.dtype, TC_INT32);
    CHECK_EQ(out.ndim, 0);
    CHECK(out.data != NULL);
    memcpy(&v, out.data, sizeof v);
    CHECK_OK(tc_request_last_joined(j, &last));
    CHECK_EQ(last, v);
    CHECK_MSG(last >= 0 && last < tt_size, "rank %d: the join says rank %d joined last (np %d)",
              tt_rank, last, tt_size);
    tc_request_free(j);
    return last;
}

static int join_now(void)
{
    tc_request_t *j = NULL;

    CHECK_OK(tc_join(&j));
    CHECK(j != NULL);
    return finish_join(j);
}

/* Every rank saw the same last rank: the max of (last, -last) over the ranks
 * is (largest, -smallest). Runs after the join, with every rank: it is also
 * the first ordinary step of the new epoch. */
static void check_same_everywhere(const char *what, int last)
{
    int32_t in[2] = {last, -last}, out[2] = {-1, -1};
    tc_tensor_t t = {in, TC_INT32, 1, {2}};
    tc_request_t *req;

    CHECK_OK(tc_allreduce("join/same-last", &t, out, TC_MAX, &req));
    wait_free(req);
    CHECK_MSG(out[0] == last && -out[1] == last,
              "%s: rank %d saw rank %d join last, but the ranks saw ranks %d to %d", what, tt_rank,
              last, -out[1], out[0]);
}

/* The identities a joined rank contributes, as doubles (exact for every
 * integer dtype used here). */
static double int_lo(tc_dtype_t dt)
{
    switch (dt) {
    case TC_UINT8: return 0;
    case TC_INT8: return -128;
    case TC_INT16: return -32768;
    case TC_INT32: return -2147483648.0;
    default: CHECK_MSG(0, "no range for %s here", tt_dtype_str(dt)); return 0;
    }
}

static double int_hi(tc_dtype_t dt)
{
    switch (dt) {
    case TC_UINT8: return 255;
    case TC_INT8: return 127;
    case TC_INT16: return 32767;
    case TC_INT32: return 2147483647.0;
    default: CHECK_MSG(0, "no range for %s here", tt_dtype_str(dt)); return 0;
    }
}

static double identity(tc_dtype_t dt, tc_op_t op)
{
    switch (op) {
    case TC_SUM:
    case TC_AVG: return 0;
    case TC_PROD: return 1;
    case TC_MIN: return tt_is_float(dt) ? INFINITY : int_hi(dt);
    case TC_MAX: return tt_is_float(dt) ? -INFINITY : int_lo(dt);
    }
    return 0;
}

/* ---- one training step's tensors ---------------------------------------- */

typedef enum { K_ALLREDUCE, K_REDUCESCATTER } kind_t;

/* An allreduce is 1-dim (rows elements), a reducescatter rows x cols. */
typedef struct {
    const char *name;
    kind_t kind;
    tc_dtype_t dt;
    tc_op_t op;
    int64_t rows, cols;
    double pre, post;
} spec_t;

/*
 * The same names every step, so that from the second step on they are
 * cached, also while ranks have joined. Sizes: a few elements (eager, in the
 * negotiation messages), two 6000-element float32 sums in a row (fused), one
 * of 65536 (the ring). Reducescatter rows that no rank count from 2 to 4
 * divides (7, 5).
 */
static const spec_t g_specs[] = {
    {"join/f32-sum", K_ALLREDUCE, TC_FLOAT32, TC_SUM, 13, 1, 1.0, 1.0},
    {"join/f32-avg", K_ALLREDUCE, TC_FLOAT32, TC_AVG, 13, 1, 1.0, 1.0},
    {"join/f64-min", K_ALLREDUCE, TC_FLOAT64, TC_MIN, 9, 1, 1.0, 1.0},
    {"join/f64-max", K_ALLREDUCE, TC_FLOAT64, TC_MAX, 9, 1, 1.0, 1.0},
    {"join/f16-min", K_ALLREDUCE, TC_FLOAT16, TC_MIN, 9, 1, 1.0, 1.0},
    {"join/i32-prod", K_ALLREDUCE, TC_INT32, TC_PROD, 11, 1, 1.0, 1.0},
    {"join/i16-sum", K_ALLREDUCE, TC_INT16, TC_SUM, 11, 1, 1.0, 1.0},
    {"join/i8-min", K_ALLREDUCE, TC_INT8, TC_MIN, 11, 1, 1.0, 1.0},
    {"join/bf16-sum", K_ALLREDUCE, TC_BFLOAT16, TC_SUM, 17, 1, 1.0, 1.0},
    {"join/u8-max", K_ALLREDUCE, TC_UINT8, TC_MAX, 17, 1, 1.0, 1.0},
    {"join/f32-sum-scaled", K_ALLREDUCE, TC_FLOAT32, TC_SUM, 7, 1, 0.5, 2.0},
    {"join/f32-prod-scaled", K_ALLREDUCE, TC_FLOAT32, TC_PROD, 7, 1, 0.5, 2.0},
    {"join/f32-sum-fused-a", K_ALLREDUCE, TC_FLOAT32, TC_SUM, 6000, 1, 1.0, 1.0},
    {"join/f32-sum-fused-b", K_ALLREDUCE, TC_FLOAT32, TC_SUM, 6000, 1, 1.0, 1.0},
    {"join/f32-sum-ring", K_ALLREDUCE, TC_FLOAT32, TC_SUM, 65536, 1, 1.0, 1.0},
    {"join/rs-f32-sum", K_REDUCESCATTER, TC_FLOAT32, TC_SUM, 7, 3, 1.0, 1.0},
    {"join/rs-i32-max", K_REDUCESCATTER, TC_INT32, TC_MAX, 5, 2, 1.0, 1.0},
};
#define NSPECS ((int)(sizeof(g_specs) / sizeof(g_specs[0])))

/* Training steps every rank runs in an epoch, and the extra ones by rank:
 * at np 3 and 4 ranks run 0, 1 and 3 extra steps; the rank with the most is
 * unique at every np up to 4 (the highest in epoch 0, rank 0 in epoch 1),
 * so it is the one that joins last. */
#define BASE_STEPS 2
#define NEPOCHS 2

static int extra_steps(int epoch, int rank)
{
    static const int extra[4] = {0, 1, 3, 4};
    int r = epoch == 0 ? rank : tt_size - 1 - rank;
    return r < 4 ? extra[r] : r; /* past 4 ranks: ties, allowed */
}

static int steps_of(int epoch, int rank)
{
    return BASE_STEPS + extra_steps(epoch, rank);
}

/*
 * Rank r's element i at a step, a small integer chosen so that a joined
 * rank's contribution shows if it is wrong: min takes positive values (a
 * zero instead of the identity would win), max negative ones (uint8: 1..200),
 * prod nonzero ones (a zero would wipe it out, a prescaled identity would
 * halve it), sum and avg -30..30 (every partial sum exact in bfloat16).
 */
static int64_t input(const spec_t *s, int epoch, int step, int rank, int64_t i)
{
    static const int64_t prod_v[5] = {1, 2, -1, -2, 3};
    uint64_t salt = tt_key(tt_hash_str(s->name), (uint64_t)epoch, (uint64_t)step);
    uint64_t h = tt_key(salt, (uint64_t)rank, (uint64_t)i);

    switch (s->op) {
    case TC_PROD: return prod_v[h % 5];
    case TC_MIN: return 1 + (int64_t)(h % 100);
    case TC_MAX: return s->dt == TC_UINT8 ? 1 + (int64_t)(h % 200) : -1 - (int64_t)(h % 100);
    default: return (int64_t)(h % 61) - 30;
    }
}

/* The expected element i (of the whole tensor) at a step, into out: ranks
 * that have run out of steps contribute the identity, unscaled. Every value
 * and partial result is exact in the dtype, so doubles stand for it. */
static void expect(const spec_t *s, int epoch, int step, int64_t i, void *out)
{
    double acc = 0;
    int r;

    for (r = 0; r < tt_size; r++) {
        double v = step < steps_of(epoch, r) ? (double)input(s, epoch, step, r, i) * s->pre
                                             : identity(s->dt, s->op);
        if (r == 0) {
            acc = v;
            continue;
        }
        switch (s->op) {
        case TC_SUM:
        case TC_AVG: acc += v; break;
        case TC_PROD: acc *= v; break;
        case TC_MIN: acc = v < acc ? v : acc; break;
        case TC_MAX: acc = v > acc ? v : acc; break;
        }
    }
    if (s->op == TC_AVG) { /* by every rank, joined or not; float32 only here */
        CHECK_EQ(s->dt, TC_FLOAT32);
        acc = (double)((float)acc / (float)tt_size);
    }
    tt_store_real(s->dt, out, 0, acc * s->post);
}

/* This rank's block of a reducescatter: first row and row count (rows split
 * over every rank of the job, joined or not). */
static void my_block(int64_t rows, int64_t *first, int64_t *n)
{
    int64_t base = rows / tt_size, extra = rows % tt_size;

    *n = base + (tt_rank < extra);
    *first = tt_rank * base + (tt_rank < extra ? tt_rank : extra);
}

/* Which ranks are still active at a step, for messages: "0,2,3". */
static void active_str(int epoch, int step, char *buf, size_t cap)
{
    size_t len = 0;
    int r;

    buf[0] = '\0';
    for (r = 0; r < tt_size && len < cap; r++) {
        if (step < steps_of(epoch, r)) {
            len += (size_t)snprintf(buf + len, cap - len, "%s%d", len ? "," : "", r);
        }
    }
}

typedef struct {
    void *send[NSPECS], *recv[NSPECS];
    tc_request_t *req[NSPECS];
} step_bufs_t;

static void submit_all(step_bufs_t *b, int epoch, int step)
{
    int k;

    for (k = 0; k < NSPECS; k++) {
        const spec_t *s = &g_specs[k];
        int64_t count = s->rows * s->cols, i;
        tc_opts_t o = TC_OPTS_INIT;

        for (i = 0; i < count; i++) {
            tt_store(s->dt, b->send[k], i, input(s, epoch, step, tt_rank, i));
        }
        o.prescale = s->pre;
        o.postscale = s->post;
        b->req[k] = NULL;
        if (s->kind == K_REDUCESCATTER) {
            tc_tensor_t x = {b->send[k], s->dt, 2, {s->rows, s->cols}};
            CHECK_OK(tc_reducescatter_ex(s->name, &x, s->op, &o, &b->req[k]));
        } else {
            tc_tensor_t x = {b->send[k], s->dt, 1, {s->rows}};
            if (s->pre == 1.0 && s->post == 1.0) {
                CHECK_OK(tc_allreduce(s->name, &x, b->recv[k], s->op, &b->req[k]));
            } else {
                CHECK_OK(tc_allreduce_ex(s->name, &x, b->recv[k], s->op, &o, &b->req[k]));
            }
        }
    }
}

static void complete_all(step_bufs_t *b, int epoch, int step)
{
    char active[64];
    int k;

    active_str(epoch, step, active, sizeof active);
    for (k = 0; k < NSPECS; k++) {
        const spec_t *s = &g_specs[k];
        size_t es = tt_dtype_bytes(s->dt);
        const void *got = b->recv[k];
        int64_t first = 0, n = s->rows, i;
        tc_status_t st = tc_wait(b->req[k]);

        CHECK_MSG(st == TC_OK, "%s, epoch %d step %d (active ranks %s): %s (%s)", s->name, epoch,
                  step, active, tc_status_string(st), tc_request_error(b->req[k]));
        if (s->kind == K_REDUCESCATTER) {
            tc_tensor_t out;
            CHECK_OK(tc_request_output(b->req[k], &out));
            my_block(s->rows, &first, &n);
            CHECK_EQ(out.dtype, s->dt);
            CHECK_EQ(out.ndim, 2);
            CHECK_EQ(out.shape[0], n);
            CHECK_EQ(out.shape[1], s->cols);
            got = out.data;
        }
        for (i = 0; i < n * s->cols; i++) {
            unsigned char want[8];
            expect(s, epoch, step, first * s->cols + i, want);
            if (memcmp((const char *)got + (size_t)i * es, want, es) != 0) {
                TC_CHECK_FAIL("%s, epoch %d step %d (np %d, active ranks %s): element %lld of "
                              "rank %d's result is %.17g, want %.17g",
                              s->name, epoch, step, tt_size, active,
                              (long long)(first * s->cols + i), tt_rank, tt_load(s->dt, got, i),
                              tt_load(s->dt, want, 0));
            }
        }
        tc_request_free(b->req[k]);
        b->req[k] = NULL;
    }
}

/* ---- cases ------------------------------------------------------------------- */

/*
 * Two epochs of training with uneven step counts: each step submits every
 * tensor of g_specs under the same names and checks the results against
 * the ranks still active; a rank out of steps joins. In epoch 0 the highest
 * rank runs the most steps, in epoch 1 rank 0 (the coordinator); the rank
 * with the most steps can only finish its last one once every other rank
 * has joined, so it joins last, and every rank must say so. One rank: the
 * join completes by itself, rank 0 last.
 */
TC_CASE(uneven_steps)
{
    step_bufs_t b;
    int epoch, step, k, r, total = 0;

    for (k = 0; k < NSPECS; k++) {
        size_t bytes = (size_t)(g_specs[k].rows * g_specs[k].cols) * tt_dtype_bytes(g_specs[k].dt);
        b.send[k] = tt_xmalloc(bytes);
        b.recv[k] = tt_xmalloc(bytes);
    }
    for (epoch = 0; epoch < NEPOCHS; epoch++) {
        int most = -1, nmost = 0, last;
        char what[64];

        for (r = 0; r < tt_size; r++) {
            if (most < 0 || steps_of(epoch, r) > steps_of(epoch, most)) {
                most = r;
                nmost = 1;
            } else if (steps_of(epoch, r) == steps_of(epoch, most)) {
                nmost++;
            }
        }
        for (step = 0; step < steps_of(epoch, tt_rank); step++) {
            submit_all(&b, epoch, step);
            complete_all(&b, epoch, step);
            total++;
        }
        /* tc_join_ex with no options in the second epoch: the same call */
        if (epoch == 0) {
            last = join_now();
        } else {
            tc_request_t *j = NULL;
            CHECK_OK(tc_join_ex(NULL, &j));
            last = finish_join(j);
        }
        if (nmost == 1) {
            CHECK_MSG(last == most,
                      "epoch %d (np %d): rank %d saw rank %d join last, want rank "
                      "%d (the one with the most steps)",
                      epoch, tt_size, tt_rank, last, most);
        } else { /* a tie: one of the ranks with the most steps */
            CHECK_MSG(steps_of(epoch, last) == steps_of(epoch, most),
                      "epoch %d (np %d): rank %d saw rank %d join last, which ran %d steps, "
                      "not the most (%d)",
                      epoch, tt_size, tt_rank, last, steps_of(epoch, last), steps_of(epoch, most));
        }
        snprintf(what, sizeof what, "uneven_steps epoch %d", epoch);
        check_same_everywhere(what, last);
    }
    for (k = 0; k < NSPECS; k++) {
        free(b.send[k]);
        free(b.recv[k]);
    }
    tt_say("test_join: %d uneven steps of %d tensors checked on rank 0 (np %d)\n", total, NSPECS,
           tt_size);
}

/* The ordinary step of every kind, all ranks taking part, checked. */
static void normal_step(int round)
{
    int32_t ar_in[6], ar_out[6];
    int32_t *ag_in;
    double bc[5];
    int32_t *a2a_in;
    tc_tensor_t t, out;
    tc_request_t *ar, *ag, *bc_req, *a2a, *bar;
    const int64_t *splits;
    int nsplits, i, r;
    int64_t row;

    for (i = 0; i < 6; i++) {
        ar_in[i] = tt_rank * 10 + i + round;
    }
    t = (tc_tensor_t){ar_in, TC_INT32, 1, {6}};
    CHECK_OK(tc_allreduce("join/next/ar", &t, ar_out, TC_SUM, &ar));

    /* rank r gives r + 1 rows of 2 */
    ag_in = tt_xmalloc(sizeof(int32_t) * 2 * (size_t)(tt_rank + 1));
    for (i = 0; i < 2 * (tt_rank + 1); i++) {
        ag_in[i] = tt_rank * 100 + i + round;
    }
    t = (tc_tensor_t){ag_in, TC_INT32, 2, {tt_rank + 1, 2}};
    CHECK_OK(tc_allgather("join/next/ag", &t, &ag));

    for (i = 0; i < 5; i++) {
        bc[i] = tt_rank == tt_size - 1 ? 0.25 * i + 7 + round : -1;
    }
    t = (tc_tensor_t){bc, TC_FLOAT64, 1, {5}};
    CHECK_OK(tc_broadcast("join/next/bc", &t, tt_size - 1, &bc_req));

    /* two elements to every rank: rank r sends r * 1000 + j * 10 + k to j */
    a2a_in = tt_xmalloc(sizeof(int32_t) * 2 * (size_t)tt_size);
    for (r = 0; r < tt_size; r++) {
        a2a_in[2 * r] = tt_rank * 1000 + r * 10 + round;
        a2a_in[2 * r + 1] = tt_rank * 1000 + r * 10 + 1 + round;
    }
    t = (tc_tensor_t){a2a_in, TC_INT32, 1, {2 * tt_size}};
    CHECK_OK(tc_alltoall("join/next/a2a", &t, NULL, &a2a));
    CHECK_OK(tc_barrier(&bar));

    wait_free(ar);
    for (i = 0; i < 6; i++) {
        CHECK_EQ(ar_out[i], 10 * tt_size * (tt_size - 1) / 2 + tt_size * (i + round));
    }

    CHECK_OK(tc_wait(ag));
    CHECK_OK(tc_request_output(ag, &out));
    CHECK_EQ(out.ndim, 2);
    CHECK_EQ(out.shape[0], tt_size * (tt_size + 1) / 2);
    CHECK_EQ(out.shape[1], 2);
    row = 0;
    for (r = 0; r < tt_size; r++) {
        for (i = 0; i < 2 * (r + 1); i++) {
            CHECK_EQ(((const int32_t *)out.data)[2 * row + i], r * 100 + i + round);
        }
        row += r + 1;
    }
    CHECK_OK(tc_request_splits(ag, &splits, &nsplits));
    CHECK_EQ(nsplits, tt_size);
    for (r = 0; r < tt_size; r++) {
        CHECK_EQ(splits[r], r + 1);
    }
    tc_request_free(ag);

    wait_free(bc_req);
    for (i = 0; i < 5; i++) {
        CHECK(bc[i] == 0.25 * i + 7 + round);
    }

    CHECK_OK(tc_wait(a2a));
    CHECK_OK(tc_request_output(a2a, &out));
    CHECK_EQ(out.ndim, 1);
    CHECK_EQ(out.shape[0], 2 * tt_size);
    for (r = 0; r < tt_size; r++) {
        CHECK_EQ(((const int32_t *)out.data)[2 * r], r * 1000 + tt_rank * 10 + round);
        CHECK_EQ(((const int32_t *)out.data)[2 * r + 1], r * 1000 + tt_rank * 10 + 1 + round);
    }
    tc_request_free(a2a);
    wait_free(bar);
    free(ag_in);
    free(a2a_in);
}

/*
 * After a join the next step works as usual. Twice: the last rank runs one
 * allreduce alone (the others have joined: zeros from them), then joins
 * last; then every rank runs an allreduce under that same name (negotiated
 * or cached while ranks were joined, now with every rank), an allgather
 * (refused while a rank was joined, fine now), a broadcast, an alltoall and
 * a barrier.
 */
TC_CASE(next_step_as_usual)
{
    int round, i, last;

    for (round = 0; round < 2; round++) {
        if (tt_rank == tt_size - 1) {
            int32_t in[6], out[6];
            tc_tensor_t t = {in, TC_INT32, 1, {6}};
            tc_request_t *req;

            for (i = 0; i < 6; i++) {
                in[i] = 5 * i - 7;
            }
            CHECK_OK(tc_allreduce("join/next/ar", &t, out, TC_SUM, &req));
            wait_free(req);
            for (i = 0; i < 6; i++) {
                CHECK_EQ(out[i], 5 * i - 7);
            }
        }
        last = join_now();
        /* its allreduce needed every other rank joined: it joined last */
        CHECK_EQ(last, tt_size - 1);
        check_same_everywhere("next_step_as_usual", last);
        normal_step(round);
    }
}

/*
 * While the last rank has joined, the others' allgather, broadcast (root 0)
 * and alltoall fail on each of them with TC_ERR_STATE and a message naming
 * the joined rank; their allreduce, submitted with them, runs (zeros from
 * the joined rank). They sleep first so that the last rank's join is in
 * before their calls (were it not, the calls would still need a rank that
 * joins, and fail the same way). After everyone has joined, the same names
 * run.
 */
TC_CASE(gather_kinds_fail_while_joined)
{
    int32_t one[2] = {0, 0}, *a2a_in;
    float x[3], y[3];
    tc_request_t *ag, *bc, *a2a, *ar;
    tc_tensor_t t;
    char joined[16];
    int last, i;

    if (tt_size < 2) {
        return;
    }
    snprintf(joined, sizeof joined, "%d", tt_size - 1);
    a2a_in = tt_xmalloc(sizeof(int32_t) * (size_t)tt_size);
    for (i = 0; i < tt_size; i++) {
        a2a_in[i] = tt_rank;
    }
    if (tt_rank == tt_size - 1) {
        last = join_now();
    } else {
        tc_request_t *reqs[3];
        const char *kinds[3] = {"allgather", "broadcast", "alltoall"};

        tt_sleep_ms(300);
        one[0] = tt_rank;
        t = (tc_tensor_t){one, TC_INT32, 1, {1}};
        CHECK_OK(tc_allgather("join/refused/ag", &t, &ag));
        t = (tc_tensor_t){one, TC_INT32, 1, {2}};
        CHECK_OK(tc_broadcast("join/refused/bc", &t, 0, &bc));
        t = (tc_tensor_t){a2a_in, TC_INT32, 1, {tt_size}};
        CHECK_OK(tc_alltoall("join/refused/a2a", &t, NULL, &a2a));
        for (i = 0; i < 3; i++) {
            x[i] = (float)(tt_rank + 1) * (float)(i + 1);
        }
        t = (tc_tensor_t){x, TC_FLOAT32, 1, {3}};
        CHECK_OK(tc_allreduce("join/refused/ar", &t, y, TC_SUM, &ar));
        reqs[0] = ag;
        reqs[1] = bc;
        reqs[2] = a2a;
        for (i = 0; i < 3; i++) {
            tc_status_t st = tc_wait(reqs[i]);
            const char *err = tc_request_error(reqs[i]);
            CHECK_MSG(st == TC_ERR_STATE,
                      "rank %d: the %s while rank %d had joined: %s (%s), "
                      "want TC_ERR_STATE",
                      tt_rank, kinds[i], tt_size - 1, tc_status_string(st), err);
            CHECK_STR_CONTAINS(err, "joined");
            CHECK_STR_CONTAINS(err, joined);
            tc_request_free(reqs[i]);
        }
        wait_free(ar);
        for (i = 0; i < 3; i++) { /* ranks 0..n-2 give (r + 1)(i + 1); the last gives 0 */
            CHECK(y[i] == (float)((tt_size - 1) * tt_size / 2) * (float)(i + 1));
        }
        last = join_now();
    }
    /* the last rank joined before the others' allreduce could run */
    CHECK_NE(last, tt_size - 1);
    check_same_everywhere("gather_kinds_fail_while_joined", last);

    /* a new epoch: the same names, every rank */
    one[0] = tt_rank;
    one[1] = tt_rank == 0 ? 42 : -1;
    t = (tc_tensor_t){one, TC_INT32, 1, {1}};
    CHECK_OK(tc_allgather("join/refused/ag", &t, &ag));
    t = (tc_tensor_t){a2a_in, TC_INT32, 1, {tt_size}};
    CHECK_OK(tc_alltoall("join/refused/a2a", &t, NULL, &a2a));
    CHECK_OK(tc_wait(ag));
    {
        tc_tensor_t out;
        CHECK_OK(tc_request_output(ag, &out));
        CHECK_EQ(out.shape[0], tt_size);
        for (i = 0; i < tt_size; i++) {
            CHECK_EQ(((const int32_t *)out.data)[i], i);
        }
        tc_request_free(ag);
        CHECK_OK(tc_wait(a2a));
        CHECK_OK(tc_request_output(a2a, &out));
        CHECK_EQ(out.shape[0], tt_size);
        for (i = 0; i < tt_size; i++) {
            CHECK_EQ(((const int32_t *)out.data)[i], i);
        }
        tc_request_free(a2a);
    }
    t = (tc_tensor_t){one, TC_INT32, 1, {2}};
    CHECK_OK(tc_broadcast("join/refused/bc", &t, 0, &bc));
    wait_free(bc);
    CHECK_EQ(one[0], 0);
    CHECK_EQ(one[1], 42);
    free(a2a_in);
}

/* The call fails with TC_ERR_STATE at once, names the join, and leaves
 * *req_p alone. `req` must be in scope. */
#define EXPECT_REFUSED_WHILE_JOINING(call)                                                         \
    do {                                                                                           \
        req = TT_SENTINEL;                                                                         \
        CHECK_STATUS(call, TC_ERR_STATE);                                                          \
        CHECK_STR_CONTAINS(tc_last_error(), "join");                                               \
        CHECK_MSG(req == TT_SENTINEL, "%s changed *req_p on failure", #call);                      \
    } while (0)

/*
 * While its own join is pending, rank 0 can submit nothing: an allreduce,
 * an allgather, a barrier and a second join are refused at once; the
 * join's result is not there yet. The other ranks sleep before they join,
 * which keeps rank 0's join pending meanwhile (checked with tc_test, so
 * that a machine too slow for the window says so). Nothing of the refused
 * calls remains: after the join the allreduce's name runs, and the next
 * barrier and join of every rank meet.
 */
TC_CASE(pending_join_refuses)
{
    float x[4] = {1, 2, 3, 4}, y[4];
    tc_tensor_t t = {x, TC_FLOAT32, 1, {4}}, out;
    tc_request_t *req, *j;
    int last = -7, done = 1, i;

    if (tt_size < 2) {
        return;
    }
    if (tt_rank == 0) {
        CHECK_OK(tc_join(&j));
        CHECK_OK(tc_test(j, &done));
        CHECK_MSG(done == 0, "the others joined within their 300 ms sleep: rank 0's join is no "
                             "longer pending (a machine too slow for this case)");
        EXPECT_REFUSED_WHILE_JOINING(tc_allreduce("join/pending/ar", &t, y, TC_SUM, &req));
        EXPECT_REFUSED_WHILE_JOINING(tc_allgather("join/pending/ag", &t, &req));
        EXPECT_REFUSED_WHILE_JOINING(tc_barrier(&req));
        EXPECT_REFUSED_WHILE_JOINING(tc_join(&req));
        EXPECT_REFUSED_WHILE_JOINING(tc_join_ex(NULL, &req));
        CHECK_EQ(tc_request_last_joined(j, &last), TC_ERR_STATE);
        CHECK_EQ(last, -7);
        CHECK_EQ(tc_request_output(j, &out), TC_ERR_STATE);
        last = finish_join(j);
    } else {
        tt_sleep_ms(300);
        last = join_now();
    }
    CHECK_NE(last, 0); /* rank 0 joined first */
    check_same_everywhere("pending_join_refuses", last);

    CHECK_OK(tc_allreduce("join/pending/ar", &t, y, TC_SUM, &req));
    wait_free(req);
    for (i = 0; i < 4; i++) {
        CHECK(y[i] == x[i] * (float)tt_size);
    }
    CHECK_OK(tc_barrier(&req));
    wait_free(req);
    last = join_now();
    check_same_everywhere("pending_join_refuses, second join", last);
}

/*
 * Barriers complete without the joined ranks: the upper half joins (the
 * last rank; at 4 ranks ranks 2 and 3), the lower half runs two barriers
 * and a min allreduce (a joined rank's +inf must not win), then joins.
 * The barriers cannot complete before the upper half has joined, so a rank
 * of the lower half joins last. Then a barrier of every rank.
 */
TC_CASE(barrier_without_joined)
{
    int half = (tt_size + 1) / 2, last, i;
    tc_request_t *req;

    if (tt_rank >= half) {
        last = join_now();
    } else {
        double x[3], y[3];
        tc_tensor_t t = {x, TC_FLOAT64, 1, {3}};

        CHECK_OK(tc_barrier(&req));
        wait_free(req);
        CHECK_OK(tc_barrier(&req));
        wait_free(req);
        for (i = 0; i < 3; i++) {
            x[i] = 10.0 + tt_rank + i;
        }
        CHECK_OK(tc_allreduce("join/bar/min", &t, y, TC_MIN, &req));
        wait_free(req);
        for (i = 0; i < 3; i++) {
            CHECK(y[i] == 10.0 + i);
        }
        last = join_now();
    }
    CHECK_LT(last, half);
    check_same_everywhere("barrier_without_joined", last);
    CHECK_OK(tc_barrier(&req));
    wait_free(req);
}

/*
 * tc_request_last_joined on other kinds of requests, without a request or
 * without rank_p: TC_ERR_ARG, *rank_p untouched. Joins refused at once (no
 * request pointer, scaling factors a join does not take) and a user name in
 * the join's reserved space; none of them is counted, so the join after
 * them meets the other ranks'.
 */
TC_CASE(accessor_errors)
{
    float x[2] = {1, 2}, y[2];
    tc_tensor_t t = {x, TC_FLOAT32, 1, {2}};
    tc_opts_t o = TC_OPTS_INIT;
    tc_request_t *req, *bar, *j;
    const int64_t *splits;
    int nsplits, last = -7, last2 = -7;

    CHECK_OK(tc_allreduce("join/acc/ar", &t, y, TC_SUM, &req));
    CHECK_OK(tc_wait(req));
    CHECK_EQ(tc_request_last_joined(req, &last), TC_ERR_ARG);
    CHECK_EQ(last, -7);
    tc_request_free(req);
    CHECK_OK(tc_barrier(&bar));
    CHECK_OK(tc_wait(bar));
    CHECK_EQ(tc_request_last_joined(bar, &last), TC_ERR_ARG);
    CHECK_EQ(last, -7);
    tc_request_free(bar);
    CHECK_EQ(tc_request_last_joined(NULL, &last), TC_ERR_ARG);
    CHECK_EQ(last, -7);

    CHECK_EQ(tc_join(NULL), TC_ERR_ARG);
    CHECK_EQ(tc_join_ex(NULL, NULL), TC_ERR_ARG);
    o.prescale = 2.0;
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_join_ex(&o, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce("tcoll/join/0", &t, y, TC_SUM, &req));
    CHECK_STR_CONTAINS(tc_last_error(), "are tcoll's");

    o = (tc_opts_t)TC_OPTS_INIT;
    CHECK_OK(tc_join_ex(&o, &j));
    CHECK_OK(tc_wait(j));
    CHECK_EQ(tc_request_last_joined(j, NULL), TC_ERR_ARG);
    CHECK_EQ(tc_request_splits(j, &splits, &nsplits), TC_ERR_ARG);
    CHECK_OK(tc_request_last_joined(j, &last));
    last2 = finish_join(j);
    CHECK_EQ(last, last2);
    check_same_everywhere("accessor_errors", last);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
