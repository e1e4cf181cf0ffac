/*
 * test_scaling.c - prescale and postscale factors (tc_opts_t, tc_allreduce_ex)
 * on every path an allreduce takes: eager inside the negotiation (small),
 * fused with its neighbours (mid-size, submitted together), and the ring
 * (large); every dtype and op, results checked bit for bit against values
 * computed here from the rule in tcoll.h. Then what must fail: factors that
 * differ across ranks (TC_ERR_MISMATCH on every rank, naming both), and bad
 * options (TC_ERR_ARG at once, nothing changed).
 *
 * Inputs are small integers (|v| <= 100), so with a prescale of 0.5 and at
 * most 4 ranks every float sum and product below is exact; integer dtypes
 * truncate, wrap and saturate as documented.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>

#include "mpi_common.h"

#define MAX_TASKS 256

typedef struct {
    char name[96];
    tc_dtype_t dt;
    tc_op_t op;
    int64_t count;
    double pre, post;
    void *send, *recv;
    tc_request_t *req;
} task_t;

static task_t g_tasks[MAX_TASKS];
static int g_ntasks;

static const tc_dtype_t dtypes[] = {TC_UINT8,    TC_INT8,    TC_INT32,   TC_INT64, TC_FLOAT16,
                                    TC_BFLOAT16, TC_FLOAT32, TC_FLOAT64, TC_INT16, TC_UINT16};
static const tc_op_t ops[] = {TC_SUM, TC_AVG, TC_MIN, TC_MAX, TC_PROD};

/* Rank r's element i: a small integer (0..100 for uint8 and uint16, |v| <= 30
 * for bfloat16, whose 8 bits must hold every halved partial sum; PROD keeps
 * to 1..3 in size so that products stay exact in every float dtype). */
static int64_t input(const task_t *t, int r, int64_t i)
{
    uint64_t h = tt_key(tt_hash_str(t->name), (uint64_t)r, (uint64_t)i);
    if (t->op == TC_PROD) {
        static const int64_t v[6] = {1, 2, 3, -1, -2, -3};
        return t->dt == TC_UINT8 || t->dt == TC_UINT16 ? v[h % 3] : v[h % 6];
    }
    if (t->dt == TC_BFLOAT16) {
        return (int64_t)(h % 61) - 30;
    }
    return t->dt == TC_UINT8 || t->dt == TC_UINT16 ? (int64_t)(h % 101) : (int64_t)(h % 201) - 100;
}

static double int_lo(tc_dtype_t dt)
{
    switch (dt) {
    case TC_UINT8: return 0;
    case TC_INT8: return -128;
    case TC_UINT16: return 0;
    case TC_INT16: return -32768;
    case TC_INT32: return -2147483648.0;
    default: return -9223372036854775808.0;
    }
}

static double int_hi(tc_dtype_t dt)
{
    switch (dt) {
    case TC_UINT8: return 255;
    case TC_INT8: return 127;
    case TC_UINT16: return 65535;
    case TC_INT16: return 32767;
    case TC_INT32: return 2147483647.0;
    default: return 9223372036854775807.0;
    }
}

/* v * f by tcoll.h's rule, as a double holding the dtype's value. */
static double scale_ref(tc_dtype_t dt, double v, double f)
{
    unsigned char b[8];

    switch (dt) {
    case TC_FLOAT64: return v * f;
    case TC_FLOAT32: return (double)((float)v * (float)f);
    case TC_FLOAT16:
    case TC_BFLOAT16:
        tt_store_real(dt, b, 0, (double)((float)v * (float)f));
        return tt_load(dt, b, 0);
    default: { /* truncated toward zero (the cast), saturated */
        double x = v * f;
        return x <= int_lo(dt) ? int_lo(dt) : x >= int_hi(dt) ? int_hi(dt) : (double)(int64_t)x;
    }
    }
}

/* The expected element i, stored into out. */
static void expect(const task_t *t, int64_t i, void *out)
{
    double acc = 0;
    uint64_t iacc = 0;
    int r;

    for (r = 0; r < tt_size; r++) {
        double v = scale_ref(t->dt, (double)input(t, r, i), t->pre);
        if (!tt_is_float(t->dt)) {
            uint64_t u = (uint64_t)(int64_t)v;
            if (r == 0) {
                iacc = u;
                acc = v;
            } else if (t->op == TC_SUM) {
                iacc += u;
            } else if (t->op == TC_PROD) {
                iacc *= u;
            } else {
                acc = t->op == TC_MIN ? (v < acc ? v : acc) : (v > acc ? v : acc);
            }
            continue;
        }
        if (r == 0) {
            acc = v;
        } else if (t->op == TC_SUM || t->op == TC_AVG) {
            acc += v;
        } else if (t->op == TC_PROD) {
            acc *= v;
        } else {
            acc = t->op == TC_MIN ? (v < acc ? v : acc) : (v > acc ? v : acc);
        }
    }
    if (!tt_is_float(t->dt)) {
        if (t->op == TC_SUM || t->op == TC_PROD) {
            acc = (double)tt_wrap(t->dt, iacc);
        }
        tt_store(t->dt, out, 0, (int64_t)scale_ref(t->dt, acc, t->post));
        return;
    }
    if (t->op == TC_AVG) { /* divide in the dtype's arithmetic, then round */
        unsigned char b[8];
        tt_store_real(t->dt, b, 0,
                      t->dt == TC_FLOAT64 ? acc / tt_size : (double)((float)acc / (float)tt_size));
        acc = tt_load(t->dt, b, 0);
    }
    tt_store_real(t->dt, out, 0, scale_ref(t->dt, acc, t->post));
}

static void add(tc_dtype_t dt, tc_op_t op, int64_t count, double pre, double post)
{
    task_t *t;
    size_t es = tt_dtype_bytes(dt);
    int64_t i;

    CHECK_LT(g_ntasks, MAX_TASKS);
    t = &g_tasks[g_ntasks];
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "sc/%s/%s/%lld/%d", tt_dtype_str(dt), tt_op_str(op),
             (long long)count, g_ntasks);
    t->dt = dt;
    t->op = op;
    t->count = count;
    t->pre = pre;
    t->post = post;
    t->send = tt_xmalloc((size_t)count * es);
    t->recv = tt_xmalloc((size_t)count * es);
    for (i = 0; i < count; i++) {
        tt_store(dt, t->send, i, input(t, tt_rank, i));
    }
    g_ntasks++;
}

static void submit(task_t *t)
{
    tc_opts_t o = TC_OPTS_INIT;
    tc_tensor_t x = {t->send, t->dt, 1, {t->count}};

    o.prescale = t->pre;
    o.postscale = t->post;
    CHECK_OK(tc_allreduce_ex(t->name, &x, t->recv, t->op, &o, &t->req));
}

static void finish(task_t *t)
{
    size_t es = tt_dtype_bytes(t->dt);
    int64_t i;

    CHECK_OK(tc_wait(t->req));
    tc_request_free(t->req);
    for (i = 0; i < t->count; i++) {
        unsigned char want[8];
        expect(t, i, want);
        if (memcmp((char *)t->recv + (size_t)i * es, want, es) != 0) {
            TC_CHECK_FAIL("%s (prescale %g, postscale %g, np %d): element %lld is %.17g, "
                          "want %.17g",
                          t->name, t->pre, t->post, tt_size, (long long)i,
                          tt_load(t->dt, t->recv, i), tt_load(t->dt, want, 0));
        }
    }
    free(t->send);
    free(t->recv);
}

/* Every dtype and op (avg on floating dtypes only) at three sizes: a
 * few elements, 5000 elements three times in a row, and 100000 elements
 * (the ring), all submitted at once. Three rounds with the same names: the
 * first negotiates them (the 5000-element triples fuse), the second finds
 * them cached (the small ones ride eagerly, up to 16 KiB), the third keeps
 * the prescale but drops the postscale (other parameters than the cache's:
 * negotiated again). */
TC_CASE(factors)
{
    static const int64_t counts[] = {3, 5000, 100000};
    size_t d, o, c;
    int k, round, copy;

    for (round = 0; round < 3; round++) {
        g_ntasks = 0;
        for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            for (d = 0; d < sizeof(dtypes) / sizeof(dtypes[0]); d++) {
                for (o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
                    int64_t n = counts[c];
                    if (ops[o] == TC_AVG && !tt_is_float(dtypes[d])) {
                        continue;
                    }
                    if (n > 5000 && tt_dtype_bytes(dtypes[d]) > 4) {
                        n /= 2; /* keep the run short */
                    }
                    for (copy = 0; copy < (n == 5000 ? 3 : 1); copy++) {
                        add(dtypes[d], ops[o], n, 0.5, round < 2 ? -3.0 : 1.0);
                    }
                }
            }
        }
        for (k = 0; k < g_ntasks; k++) {
            submit(&g_tasks[k]);
        }
        for (k = 0; k < g_ntasks; k++) {
            finish(&g_tasks[k]);
        }
    }
    tt_say("test_scaling: %d scaled allreduces per round checked on %d ranks\n", g_ntasks, tt_size);
}

/* A postscale that differs on the last rank: every rank fails with
 * TC_ERR_MISMATCH naming both values; the engine goes on. */
TC_CASE(mismatch)
{
    float in[4] = {1, 2, 3, 4}, out[4];
    tc_tensor_t x = {in, TC_FLOAT32, 1, {4}};
    tc_opts_t o = TC_OPTS_INIT;
    tc_request_t *req;
    const char *err;

    if (tt_size < 2) {
        return;
    }
    o.postscale = tt_rank == tt_size - 1 ? 2.0 : 0.25;
    CHECK_OK(tc_allreduce_ex("sc/mismatch", &x, out, TC_SUM, &o, &req));
    CHECK_EQ(tc_wait(req), TC_ERR_MISMATCH);
    err = tc_request_error(req);
    CHECK_MSG(strstr(err, "tensor 'sc/mismatch': allreduce scaling factor mismatch: rank 0 has "
                          "prescale 1 postscale 0.25") != NULL &&
                  strstr(err, "has prescale 1 postscale 2") != NULL,
              "message: %s", err);
    tc_request_free(req);
    o.postscale = 0.25; /* the name is free again, and agreeing factors run */
    CHECK_OK(tc_allreduce_ex("sc/mismatch", &x, out, TC_SUM, &o, &req));
    CHECK_OK(tc_wait(req));
    tc_request_free(req);
    CHECK(out[3] == (float)(4 * tt_size) * 0.25f);
}

/* Bad options: TC_ERR_ARG at once with a message naming what is wrong, and
 * no request; a caller compiled with a smaller struct gets the defaults. */
TC_CASE(bad_opts)
{
    float in[2] = {1, 2}, out[2];
    tc_tensor_t x = {in, TC_FLOAT32, 1, {2}};
    tc_opts_t o = TC_OPTS_INIT;
    tc_request_t *req = NULL;

    o.size = 0;
    CHECK_EQ(tc_allreduce_ex("sc/bad", &x, out, TC_SUM, &o, &req), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "opts->size is 0") != NULL);
    o.size = sizeof(o) + 8;
    CHECK_EQ(tc_allreduce_ex("sc/bad", &x, out, TC_SUM, &o, &req), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "TC_OPTS_INIT") != NULL);
    o = (tc_opts_t)TC_OPTS_INIT;
    o.prescale = NAN;
    CHECK_EQ(tc_allreduce_ex("sc/bad", &x, out, TC_SUM, &o, &req), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "prescale nan is not finite") != NULL);
    o.prescale = 1.0;
    o.postscale = -INFINITY;
    CHECK_EQ(tc_allreduce_ex("sc/bad", &x, out, TC_SUM, &o, &req), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "postscale -inf is not finite") != NULL);
    o.postscale = 2.0; /* a kind without factors */
    CHECK_EQ(tc_allgather_ex("sc/bad", &x, &o, &req), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "allgather takes no scaling factors") != NULL);
    CHECK_EQ(tc_broadcast_ex("sc/bad", &x, 0, &o, &req), TC_ERR_ARG);
    CHECK(req == NULL);
    /* an older caller's struct: only the size field; defaults for the rest */
    o.prescale = 7.0;
    o.size = sizeof(o.size);
    CHECK_OK(tc_allreduce_ex("sc/bad", &x, out, TC_SUM, &o, &req));
    CHECK_OK(tc_wait(req));
    tc_request_free(req);
    CHECK(out[1] == (float)(2 * tt_size));
    CHECK_OK(tc_allreduce_ex("sc/bad", &x, out, TC_SUM, NULL, &req)); /* NULL: defaults */
    CHECK_OK(tc_wait(req));
    tc_request_free(req);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
