/*
 * test_allgather.c - allgather of every dtype with ndim 1..3 where each rank
 * contributes a different number of rows (0 on some ranks, 0 on all ranks in
 * some cases, rows of zero elements in others), submitted from several
 * threads in a different random order on each rank. Checks the output's
 * dtype and shape (dim0 = the sum of every rank's dim0, the other dims as
 * submitted) and that it is the rank-order concatenation, byte for byte.
 * One larger case moves about 1 MiB in all.
 */
#define _POSIX_C_SOURCE 200809L

#include "mpi_common.h"

#define NTHREADS 3
#define MAX_TASKS 128

typedef struct {
    char name[96];
    tc_dtype_t dt;
    int ndim;
    int64_t inner[TC_MAX_DIMS]; /* dims 1..ndim-1 */
    int64_t inner_count;
    int64_t rows[64]; /* rows[r]: rank r's dim0 */
    uint64_t salt;
    void *send;
    void *send_copy;
    tc_request_t *req;
} task_t;

static task_t g_tasks[MAX_TASKS];
static int g_ntasks;

/* Element k of rank r's block: any value the dtype holds exactly. */
static int64_t elem(const task_t *t, int r, int64_t k)
{
    return tt_value(t->dt, TC_MAX, t->salt, r, k);
}

static void add_task(const char *tag, tc_dtype_t dt, int ndim, const int64_t *inner,
                     const int64_t *rows)
{
    CHECK_LT(g_ntasks, MAX_TASKS);
    CHECK_LE(tt_size, 64);
    task_t *t = &g_tasks[g_ntasks];
    memset(t, 0, sizeof *t);
    t->dt = dt;
    t->ndim = ndim;
    t->inner_count = 1;
    for (int d = 1; d < ndim; d++) {
        t->inner[d] = inner[d - 1];
        t->inner_count *= inner[d - 1];
    }
    for (int r = 0; r < tt_size; r++) {
        t->rows[r] = rows[r];
    }
    snprintf(t->name, sizeof t->name, "ag/%s/%s/ndim%d/%d", tag, tt_dtype_str(dt), ndim, g_ntasks);
    t->salt = tt_hash_str(t->name);

    int64_t n = rows[tt_rank] * t->inner_count;
    size_t bytes = (size_t)n * tt_dtype_bytes(dt);
    if (n == 0 && (g_ntasks & 1)) {
        t->send = NULL; /* NULL data is fine with zero elements */
    } else {
        t->send = tt_xmalloc(bytes);
        for (int64_t k = 0; k < n; k++) {
            tt_store(dt, t->send, k, elem(t, tt_rank, k));
        }
        t->send_copy = tt_xmalloc(bytes);
        memcpy(t->send_copy, t->send, bytes);
    }
    g_ntasks++;
}

static void submit(int task, void *arg)
{
    task_t *t = &g_tasks[task];
    (void)arg;
    tc_tensor_t ten;
    memset(&ten, 0, sizeof ten);
    ten.data = t->send;
    ten.dtype = t->dt;
    ten.ndim = t->ndim;
    ten.shape[0] = t->rows[tt_rank];
    for (int d = 1; d < t->ndim; d++) {
        ten.shape[d] = t->inner[d];
    }
    t->req = NULL;
    CHECK_OK(tc_allgather(t->name, &ten, &t->req));
    CHECK(t->req != NULL);
}

static void complete_and_check(int task, void *arg)
{
    task_t *t = &g_tasks[task];
    (void)arg;
    tc_status_t st = tc_wait(t->req);
    CHECK_MSG(st == TC_OK, "%s: %s: %s", t->name, tc_status_string(st), tc_request_error(t->req));
    CHECK_MSG(tc_request_error(t->req)[0] == '\0', "%s: error on success: '%s'", t->name,
              tc_request_error(t->req));
    int done = 0;
    CHECK_OK(tc_test(t->req, &done));
    CHECK_EQ(done, 1);

    tc_tensor_t out;
    memset(&out, 0, sizeof out);
    CHECK_OK(tc_request_output(t->req, &out));
    CHECK_EQ(out.dtype, t->dt);
    CHECK_EQ(out.ndim, t->ndim);
    int64_t total_rows = 0;
    for (int r = 0; r < tt_size; r++) {
        total_rows += t->rows[r];
    }
    CHECK_MSG(out.shape[0] == total_rows, "%s: output dim0 %lld, want %lld", t->name,
              (long long)out.shape[0], (long long)total_rows);
    for (int d = 1; d < t->ndim; d++) {
        CHECK_EQ(out.shape[d], t->inner[d]);
    }
    int64_t total = total_rows * t->inner_count;
    if (total > 0) {
        CHECK_MSG(out.data != NULL, "%s: NULL output data for %lld elements", t->name,
                  (long long)total);
        CHECK_MSG(out.data != t->send, "%s: output aliases the send buffer", t->name);
    }
    /* the same answer when asked twice */
    tc_tensor_t out2;
    CHECK_OK(tc_request_output(t->req, &out2));
    CHECK(out2.data == out.data);

    size_t es = tt_dtype_bytes(t->dt);
    int64_t pos = 0;
    for (int r = 0; r < tt_size; r++) {
        int64_t n = t->rows[r] * t->inner_count;
        for (int64_t k = 0; k < n; k++, pos++) {
            unsigned char want[8];
            tt_store(t->dt, want, 0, elem(t, r, k));
            if (memcmp((const char *)out.data + (size_t)pos * es, want, es) != 0) {
                TC_CHECK_FAIL("%s: output element %lld (rank %d's element %lld) is %.17g, want "
                              "%.17g",
                              t->name, (long long)pos, r, (long long)k,
                              tt_load(t->dt, out.data, pos), tt_load(t->dt, want, 0));
            }
        }
    }
    if (t->send_copy) {
        CHECK_MSG(memcmp(t->send, t->send_copy, (size_t)(t->rows[tt_rank] * t->inner_count) * es) ==
                      0,
                  "%s: allgather modified the send buffer", t->name);
    }
    tc_request_free(t->req);
    t->req = NULL;
}

/*
 * Every dtype with ndim 1..3 where each rank contributes a different number
 * of rows (0 on some ranks; 0 on every rank; rows of zero elements; many
 * rows; about 1 MiB in all), all in flight at once: NTHREADS threads submit
 * every NTHREADS-th task of this rank's shuffled order, then complete them.
 */
TC_CASE(rows_differ_per_rank_from_threads)
{
    const struct {
        int ndim;
        int64_t inner[2];
    } layouts[] = {
        {1, {0, 0}}, /* [rows] */
        {2, {5, 0}}, /* [rows, 5] */
        {3, {2, 3}}, /* [rows, 2, 3] */
        {3, {4, 0}}, /* [rows, 4, 0]: no elements at all */
    };
    int64_t rows[64];
    int c = 0;
    g_ntasks = 0;
    for (int di = 0; di < TT_NDTYPES; di++) {
        for (int li = 0; li < 4; li++, c++) {
            /* rank r contributes (r + c) % 3 rows: 0 on some ranks */
            for (int r = 0; r < tt_size; r++) {
                rows[r] = (r + c) % 3;
            }
            add_task("var", tt_dtype(di), layouts[li].ndim, layouts[li].inner, rows);
        }
        /* every rank contributes 0 rows */
        for (int r = 0; r < tt_size; r++) {
            rows[r] = 0;
        }
        add_task("empty", tt_dtype(di), 2, layouts[1].inner, rows);
        /* more rows, different on every rank */
        for (int r = 0; r < tt_size; r++) {
            rows[r] = 17 + 11 * r;
        }
        add_task("rows", tt_dtype(di), 3, layouts[2].inner, rows);
    }
    /* about 1 MiB in all: float32 [~200 rows per rank, 320] */
    {
        const int64_t inner[1] = {320};
        for (int r = 0; r < tt_size; r++) {
            rows[r] = (4 * 200) / tt_size + 7 * r;
        }
        add_task("large", TC_FLOAT32, 2, inner, rows);
    }

    double t0 = tt_now();
    tt_run_batch(&(tt_batch_t){.ntasks = g_ntasks,
                               .nthreads = NTHREADS,
                               .order_seed = tt_key(0xa9, (uint64_t)tt_rank, 0),
                               .submit = submit,
                               .complete = complete_and_check});
    double el = tt_now() - t0;

    for (int i = 0; i < g_ntasks; i++) {
        free(g_tasks[i].send);
        free(g_tasks[i].send_copy);
    }
    tt_say("test_allgather: %d allgathers OK on %d ranks from %d threads (%.2f s)\n", g_ntasks,
           tt_size, NTHREADS, el);
}

/* Large outputs are recycled through the output pool once freed: each round
 * must see its own data, never a previous round's. */
TC_CASE(output_pool_reuse)
{
    const int64_t rows = 1 << 15, cols = 16; /* 2 MiB of int32 per rank */
    int32_t *send = tt_xmalloc((size_t)(rows * cols) * sizeof(int32_t));

    for (int round = 0; round < 4; round++) {
        tc_tensor_t t, out;
        tc_request_t *req;
        memset(&t, 0, sizeof t);
        t.data = send;
        t.dtype = TC_INT32;
        t.ndim = 2;
        t.shape[0] = rows;
        t.shape[1] = cols;
        for (int64_t i = 0; i < rows * cols; i++) {
            send[i] = (int32_t)(round * 1000003 + tt_rank * 7919 + i);
        }
        CHECK_OK(tc_allgather("ag/reuse", &t, &req));
        CHECK_OK(tc_wait(req));
        CHECK_OK(tc_request_output(req, &out));
        CHECK_EQ(out.shape[0], rows * tt_size);
        for (int r = 0; r < tt_size; r++) {
            const int32_t *blk = (const int32_t *)out.data + r * rows * cols;
            for (int64_t i = 0; i < rows * cols; i++) {
                CHECK_MSG(blk[i] == (int32_t)(round * 1000003 + r * 7919 + i),
                          "round %d block %d element %lld: got %d", round, r, (long long)i,
                          (int)blk[i]);
            }
        }
        tc_request_free(req);
    }
    free(send);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
