/*
 * test_reducescatter.c - tc_reducescatter: every dtype x op on row counts
 * around the number of ranks (0 rows, fewer rows than ranks, uneven,
 * prime), rows of several elements, one large tensor, prescale and
 * postscale; each rank's block checked bit for bit against the exact
 * allreduce values of mpi_common.h (whose inputs make every result exact in
 * any reduction order). Then what must fail: a 0-dim tensor, avg of
 * integers, shapes that differ across ranks.
 */
#define _POSIX_C_SOURCE 200809L

#include "mpi_common.h"

#define MAX_TASKS 512

typedef struct {
    char name[96];
    tc_dtype_t dt;
    tc_op_t op;
    int64_t rows, row;
    uint64_t salt;
    void *send;
    tc_request_t *req;
} task_t;

static task_t g_tasks[MAX_TASKS];
static int g_ntasks;

static void add(tc_dtype_t dt, tc_op_t op, int64_t rows, int64_t row)
{
    task_t *t;

    CHECK_LT(g_ntasks, MAX_TASKS);
    t = &g_tasks[g_ntasks];
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "rs/%s/%s/%lldx%lld/%d", tt_dtype_str(dt), tt_op_str(op),
             (long long)rows, (long long)row, g_ntasks);
    t->dt = dt;
    t->op = op;
    t->rows = rows;
    t->row = row;
    t->salt = tt_hash_str(t->name);
    t->send = tt_xmalloc((size_t)(rows * row) * tt_dtype_bytes(dt) + 1);
    tt_fill(dt, op, t->salt, tt_rank, t->send, rows * row);
    g_ntasks++;
}

/* This rank's block: first row and row count. */
static void my_block(int64_t rows, int64_t *first, int64_t *n)
{
    int64_t base = rows / tt_size, extra = rows % tt_size;
    *n = base + (tt_rank < extra);
    *first = tt_rank * base + (tt_rank < extra ? tt_rank : extra);
}

static void check(task_t *t)
{
    tc_tensor_t out;
    int64_t first, n, i;
    size_t es = tt_dtype_bytes(t->dt);

    CHECK_OK(tc_wait(t->req));
    CHECK_OK(tc_request_output(t->req, &out));
    my_block(t->rows, &first, &n);
    CHECK_EQ(out.dtype, t->dt);
    CHECK_EQ(out.ndim, 2);
    CHECK_EQ(out.shape[0], n);
    CHECK_EQ(out.shape[1], t->row);
    for (i = 0; i < n * t->row; i++) {
        unsigned char want[8];
        tt_expect(t->dt, t->op, t->salt, tt_size, first * t->row + i, want);
        if (memcmp((const char *)out.data + (size_t)i * es, want, es) != 0) {
            TC_CHECK_FAIL("%s (np %d): element %lld of rank %d's block is %.17g, want %.17g",
                          t->name, tt_size, (long long)i, tt_rank, tt_load(t->dt, out.data, i),
                          tt_load(t->dt, want, 0));
        }
    }
    tc_request_free(t->req);
    free(t->send);
}

TC_CASE(every_dtype_and_op)
{
    const int64_t rows[] = {0, 1, tt_size - 1, tt_size, tt_size + 1, 2 * tt_size + 3, 97};
    int d, o, k;
    size_t ri;

    for (d = 0; d < TT_NDTYPES; d++) {
        for (o = 0; o < TT_NOPS; o++) {
            if (tt_op(o) == TC_AVG && !tt_is_float(tt_dtype(d))) {
                continue;
            }
            for (ri = 0; ri < sizeof(rows) / sizeof(rows[0]); ri++) {
                add(tt_dtype(d), tt_op(o), rows[ri], ri % 2 ? 3 : 1);
            }
        }
    }
    add(TC_FLOAT32, TC_SUM, 1 << 18, 3); /* 3 MiB: many ring chunks */
    add(TC_INT32, TC_MAX, 4099, 257);
    for (k = 0; k < g_ntasks; k++) {
        task_t *t = &g_tasks[k];
        tc_tensor_t x = {t->send, t->dt, 2, {t->rows, t->row}};
        CHECK_OK(tc_reducescatter(t->name, &x, t->op, &t->req));
    }
    for (k = 0; k < g_ntasks; k++) {
        check(&g_tasks[k]);
    }
    tt_say("test_reducescatter: %d tensors checked on %d ranks\n", g_ntasks, tt_size);
    g_ntasks = 0;
}

/* prescale 0.5, postscale 4: sum of halves times four, exact for these
 * integer inputs; avg divides by the ranks before the postscale. */
TC_CASE(scaled)
{
    float in[12], *o;
    tc_tensor_t x = {in, TC_FLOAT32, 1, {12}}, out;
    tc_opts_t opts = TC_OPTS_INIT;
    tc_request_t *req;
    int64_t first, n, i;
    int k;

    for (k = 0; k < 2; k++) {
        for (i = 0; i < 12; i++) {
            in[i] = (float)(2 * (i + tt_rank));
        }
        opts.prescale = 0.5;
        opts.postscale = 4.0;
        CHECK_OK(tc_reducescatter_ex("rs/scaled", &x, k ? TC_AVG : TC_SUM, &opts, &req));
        CHECK_OK(tc_wait(req));
        CHECK_OK(tc_request_output(req, &out));
        my_block(12, &first, &n);
        CHECK_EQ(out.shape[0], n);
        o = out.data;
        for (i = 0; i < n; i++) {
            /* sum over ranks of (i + r) = size * i + size (size - 1) / 2 */
            float sum = (float)(tt_size * (first + i)) + (float)(tt_size * (tt_size - 1) / 2);
            float want = k ? sum / (float)tt_size * 4.0f : sum * 4.0f;
            CHECK_MSG(o[i] == want, "rank %d row %lld: %g, want %g", tt_rank, (long long)i,
                      (double)o[i], (double)want);
        }
        tc_request_free(req);
    }
}

TC_CASE(refusals)
{
    int32_t in[6] = {1, 2, 3, 4, 5, 6};
    tc_tensor_t scalar = {in, TC_INT32, 0, {0}}, v = {in, TC_INT32, 1, {6}};
    tc_request_t *req = NULL;

    CHECK_EQ(tc_reducescatter("rs/bad", &scalar, TC_SUM, &req), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "reducescatter needs ndim >= 1") != NULL);
    CHECK_EQ(tc_reducescatter("rs/bad", &v, TC_AVG, &req), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "avg needs a floating-point dtype") != NULL);
    CHECK(req == NULL);
    if (tt_size < 2) {
        return;
    }
    if (tt_rank == tt_size - 1) {
        v.shape[0] = 5; /* one row less on the last rank */
    }
    CHECK_OK(tc_reducescatter("rs/shape", &v, TC_SUM, &req));
    CHECK_EQ(tc_wait(req), TC_ERR_MISMATCH);
    CHECK_MSG(strstr(tc_request_error(req), "reducescatter shape mismatch: rank 0 has [6]") != NULL,
              "message: %s", tc_request_error(req));
    tc_request_free(req);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
