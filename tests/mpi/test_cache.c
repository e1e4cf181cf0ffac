/*
 * test_cache.c - the response cache must be invisible except for speed.
 *
 * NSTEPS steps; in each, every rank submits the same set of names (allreduce
 * in float32, float64, int32, int64 and float16 with sum, max, min, prod and
 * avg; 0 elements, a scalar, 1, 7, 1000, a 2-d [10,100], and two tensors
 * above the 64 KiB fusion threshold; two broadcasts with fixed roots; an
 * allgather with rank-dependent rows) plus one name used only once
 * ("once.<step>"), in an order shuffled per (rank, step), then waits for all.
 * Every third step or so the names are split over two threads. Data depends
 * on (name, step, rank), so a stale or swapped result is caught; every
 * element is checked on every rank.
 *
 * On some steps, after the names are surely cached, one rank submits a
 * cached name with different parameters:
 *   step 10: the last rank, an allreduce with one more element (shape);
 *   step 14: rank 0, an allreduce in another dtype;
 *   step 18: rank 1 % np, an allreduce with another op;
 *   step 22: the last rank, a broadcast with another root;
 *   step 26: the last rank, the allgather with another dim 1.
 * Every rank must get TC_ERR_MISMATCH for that name (the message names the
 * tensor and the field), every other tensor of the step must be right, and
 * the name must work again with its usual parameters in the next steps.
 * With one rank the "odd" rank is every rank: the change is legal and the
 * result must be right with the new parameters.
 * Legal changes: from step 30 every rank submits one allreduce with 1500
 * elements instead of 1000; from step 32 rank 0 contributes two more
 * allgather rows, and at step 34 the last rank contributes none.
 *
 * The expected outcome of each name is derived from the parameters of every
 * rank (params()), so each rank knows whether a name must fail.
 * The CTests run it with the default cache, with TCOLL_CACHE_CAPACITY=3
 * (fewer slots than names) and with TCOLL_CACHE_CAPACITY=0 (cache off).
 */
#define _POSIX_C_SOURCE 200809L

#include "mpi_common.h"

#define NSTEPS 40
#define NFIXED 14
#define NTASKS (NFIXED + 1)

/* above the 64 KiB fusion threshold (smaller under ThreadSanitizer) */
#define BIG1 40000
#define BIG2 (TEST_TSAN ? 30000 : 300000)

typedef tt_params_t params_t;

typedef struct {
    char name[64];
    params_t p;        /* what this rank submits */
    uint64_t salt;     /* from the name and the step */
    int in_place;      /* allreduce: recv == send */
    const char *field; /* expected mismatch field, NULL: must succeed */
    void *send;        /* allreduce/allgather input, broadcast buffer */
    void *recv;        /* allreduce output */
    tc_request_t *req;
} task_t;

static int g_step;
static task_t g_tasks[NTASKS];

static params_t P(tt_kind_t k, tc_dtype_t dt, tc_op_t op, int root, int ndim, int64_t d0,
                  int64_t d1)
{
    return tt_params(k, dt, op, root, ndim, d0, d1, 0);
}

/* Allgather rows rank r contributes at a step (dim 0 may differ per rank). */
static int64_t ag_rows(int step, int r)
{
    int64_t rows = r + 1;
    if (step >= 32 && r == 0) {
        rows += 2;
    }
    if (step == 34 && r == tt_size - 1) {
        rows = 0;
    }
    return rows;
}

/* The name and parameters rank r submits for task idx at a step. */
static params_t params(int idx, int step, int r, char *name, size_t cap)
{
    const int last = tt_size - 1;
    params_t p;
    switch (idx) {
    case 0: /* legal change on every rank from step 30 */
        snprintf(name, cap, "cache/ar.f32.sum");
        p = P(TT_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, step >= 30 ? 1500 : 1000, 0);
        break;
    case 1: /* dtype mismatch at step 14 (rank 0) */
        snprintf(name, cap, "cache/ar.f64.max.7");
        p = P(TT_ALLREDUCE, step == 14 && r == 0 ? TC_FLOAT32 : TC_FLOAT64, TC_MAX, 0, 1, 7, 0);
        break;
    case 2: /* op mismatch at step 18 (rank 1, or 0 alone) */
        snprintf(name, cap, "cache/ar.i32.min.1");
        p = P(TT_ALLREDUCE, TC_INT32, step == 18 && r == 1 % tt_size ? TC_MAX : TC_MIN, 0, 1, 1, 0);
        break;
    case 3: /* shape mismatch at step 10 (last rank) */
        snprintf(name, cap, "cache/ar.i64.sum.7");
        p = P(TT_ALLREDUCE, TC_INT64, TC_SUM, 0, 1, step == 10 && r == last ? 8 : 7, 0);
        break;
    case 4:
        snprintf(name, cap, "cache/ar.f16.avg.1000");
        p = P(TT_ALLREDUCE, TC_FLOAT16, TC_AVG, 0, 1, 1000, 0);
        break;
    case 5: /* values in {1, 2, -1, -2, 3}: exact */
        snprintf(name, cap, "cache/ar.f32.prod.7");
        p = P(TT_ALLREDUCE, TC_FLOAT32, TC_PROD, 0, 1, 7, 0);
        break;
    case 6: /* a scalar */
        snprintf(name, cap, "cache/ar.i64.prod.scalar");
        p = P(TT_ALLREDUCE, TC_INT64, TC_PROD, 0, 0, 0, 0);
        break;
    case 7: /* zero elements */
        snprintf(name, cap, "cache/ar.f64.avg.0");
        p = P(TT_ALLREDUCE, TC_FLOAT64, TC_AVG, 0, 1, 0, 0);
        break;
    case 8:
        snprintf(name, cap, "cache/ar.i32.max.10x100");
        p = P(TT_ALLREDUCE, TC_INT32, TC_MAX, 0, 2, 10, 100);
        break;
    case 9:
        snprintf(name, cap, "cache/ar.f32.sum.big1");
        p = P(TT_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, BIG1, 0);
        break;
    case 10:
        snprintf(name, cap, "cache/ar.f32.min.big2");
        p = P(TT_ALLREDUCE, TC_FLOAT32, TC_MIN, 0, 1, BIG2, 0);
        break;
    case 11: /* root mismatch at step 22 (last rank) */
        snprintf(name, cap, "cache/bc.i32.1000");
        p = P(TT_BROADCAST, TC_INT32, TC_SUM, step == 22 && r == last ? 0 : last, 1, 1000, 0);
        break;
    case 12:
        snprintf(name, cap, "cache/bc.f64.7");
        p = P(TT_BROADCAST, TC_FLOAT64, TC_SUM, tt_size / 2, 1, 7, 0);
        break;
    case 13: /* dim 1 mismatch at step 26 (last rank); rows change from step 32 */
        snprintf(name, cap, "cache/ag.i32");
        p = P(TT_ALLGATHER, TC_INT32, TC_SUM, 0, 2, ag_rows(step, r),
              step == 26 && r == last ? 4 : 3);
        break;
    default: /* once.<step>: first-time negotiation among cached names */
        snprintf(name, cap, "once.%d", step);
        switch (step % 3) {
        case 0: p = P(TT_ALLREDUCE, TC_FLOAT64, TC_SUM, 0, 1, 5 + step, 0); break;
        case 1: p = P(TT_BROADCAST, TC_INT64, TC_SUM, step % tt_size, 1, 3, 0); break;
        default: p = P(TT_ALLGATHER, TC_UINT8, TC_SUM, 0, 2, (r + step) % 3, 2); break;
        }
        break;
    }
    return p;
}

/* The field in which some rank disagrees with rank 0, or NULL. */
static const char *mismatch_field(int idx, int step)
{
    char name[64];
    params_t p0 = params(idx, step, 0, name, sizeof name);
    for (int r = 1; r < tt_size; r++) {
        params_t q = params(idx, step, r, name, sizeof name);
        if (q.kind != p0.kind) {
            return "collective mismatch";
        }
        if (q.dt != p0.dt) {
            return "dtype mismatch";
        }
        if (p0.kind == TT_ALLREDUCE && q.op != p0.op) {
            return "op mismatch";
        }
        if (p0.kind == TT_BROADCAST && q.root != p0.root) {
            return "root mismatch";
        }
        if (q.ndim != p0.ndim) {
            return p0.kind == TT_ALLGATHER ? "ndim mismatch" : "shape mismatch";
        }
        for (int d = p0.kind == TT_ALLGATHER ? 1 : 0; d < p0.ndim; d++) {
            if (q.shape[d] != p0.shape[d]) {
                return "shape mismatch";
            }
        }
    }
    return NULL;
}

/* Broadcast element i: the root's is the value, the others start as garbage. */
static int64_t bc_value(const task_t *t, int r, int64_t i)
{
    return tt_value(t->p.dt, TC_MAX, r == t->p.root ? t->salt : ~t->salt, r, i);
}

/* Allgather element k of rank r's block. */
static int64_t ag_value(const task_t *t, int r, int64_t k)
{
    return tt_value(t->p.dt, TC_MAX, t->salt, r, k);
}

static void prepare(int idx)
{
    task_t *t = &g_tasks[idx];
    memset(t, 0, sizeof *t);
    t->p = params(idx, g_step, tt_rank, t->name, sizeof t->name);
    t->field = mismatch_field(idx, g_step);
    t->salt = tt_key(tt_hash_str(t->name), (uint64_t)g_step, 0xcac4e);
    int64_t n = tt_count(t->p.ndim, t->p.shape);
    size_t bytes = (size_t)n * tt_dtype_bytes(t->p.dt);
    t->send = tt_xmalloc(bytes);
    switch (t->p.kind) {
    case TT_ALLREDUCE:
        tt_fill(t->p.dt, t->p.op, t->salt, tt_rank, t->send, n);
        t->in_place = (idx + g_step) % 3 == 0;
        if (t->in_place) {
            t->recv = t->send;
        } else {
            t->recv = tt_xmalloc(bytes);
            memset(t->recv, 0xa5, bytes);
        }
        break;
    case TT_BROADCAST:
        for (int64_t i = 0; i < n; i++) {
            tt_store(t->p.dt, t->send, i, bc_value(t, tt_rank, i));
        }
        break;
    case TT_ALLGATHER:
        for (int64_t k = 0; k < n; k++) {
            tt_store(t->p.dt, t->send, k, ag_value(t, tt_rank, k));
        }
        break;
    }
}

static void submit(int idx, void *arg)
{
    task_t *t = &g_tasks[idx];
    (void)arg;
    t->req = tt_submit(t->name, &t->p, t->send, t->recv);
}

static void check_allgather(task_t *t, int idx)
{
    tc_tensor_t out;
    memset(&out, 0, sizeof out);
    CHECK_OK(tc_request_output(t->req, &out));
    CHECK_EQ(out.dtype, t->p.dt);
    CHECK_EQ(out.ndim, t->p.ndim);
    int64_t rows[64];
    int64_t total_rows = 0;
    char name[64];
    CHECK_LE(tt_size, 64);
    for (int r = 0; r < tt_size; r++) {
        rows[r] = params(idx, g_step, r, name, sizeof name).shape[0];
        total_rows += rows[r];
    }
    CHECK_MSG(out.shape[0] == total_rows, "step %d %s: output dim0 %lld, want %lld", g_step,
              t->name, (long long)out.shape[0], (long long)total_rows);
    int64_t inner = 1;
    for (int d = 1; d < t->p.ndim; d++) {
        CHECK_EQ(out.shape[d], t->p.shape[d]);
        inner *= t->p.shape[d];
    }
    size_t es = tt_dtype_bytes(t->p.dt);
    int64_t pos = 0;
    for (int r = 0; r < tt_size; r++) {
        for (int64_t k = 0; k < rows[r] * inner; k++, pos++) {
            unsigned char want[8];
            tt_store(t->p.dt, want, 0, ag_value(t, r, k));
            if (memcmp((const char *)out.data + (size_t)pos * es, want, es) != 0) {
                TC_CHECK_FAIL("step %d %s: output element %lld (rank %d's element %lld) is "
                              "%.17g, want %.17g",
                              g_step, t->name, (long long)pos, r, (long long)k,
                              tt_load(t->p.dt, out.data, pos), tt_load(t->p.dt, want, 0));
            }
        }
    }
}

static void complete_and_check(int idx, void *arg)
{
    task_t *t = &g_tasks[idx];
    (void)arg;
    tc_status_t st = tc_wait(t->req);
    if (t->field != NULL) {
        CHECK_MSG(st == TC_ERR_MISMATCH, "step %d %s: got %s, want a %s (message '%s')", g_step,
                  t->name, tc_status_string(st), t->field, tc_request_error(t->req));
        char want[96];
        snprintf(want, sizeof want, "tensor '%s'", t->name);
        CHECK_STR_CONTAINS(tc_request_error(t->req), want);
        CHECK_STR_CONTAINS(tc_request_error(t->req), t->field);
        tc_request_free(t->req);
        t->req = NULL;
        return;
    }
    CHECK_MSG(st == TC_OK, "step %d %s: %s: %s", g_step, t->name, tc_status_string(st),
              tc_request_error(t->req));
    int64_t n = tt_count(t->p.ndim, t->p.shape);
    char what[96];
    snprintf(what, sizeof what, "step %d %s", g_step, t->name);
    switch (t->p.kind) {
    case TT_ALLREDUCE: {
        tc_tensor_t out;
        CHECK_OK(tc_request_output(t->req, &out));
        CHECK(out.data == t->recv);
        tt_check_allreduce(what, t->p.dt, t->p.op, t->salt, tt_size, t->recv, n);
        break;
    }
    case TT_BROADCAST: {
        size_t es = tt_dtype_bytes(t->p.dt);
        for (int64_t i = 0; i < n; i++) {
            unsigned char want[8];
            tt_store(t->p.dt, want, 0, bc_value(t, t->p.root, i));
            if (memcmp((const char *)t->send + (size_t)i * es, want, es) != 0) {
                TC_CHECK_FAIL("%s (root %d): element %lld is %.17g, want %.17g", what, t->p.root,
                              (long long)i, tt_load(t->p.dt, t->send, i),
                              tt_load(t->p.dt, want, 0));
            }
        }
        break;
    }
    case TT_ALLGATHER: check_allgather(t, idx); break;
    }
    tc_request_free(t->req);
    t->req = NULL;
}

/*
 * NSTEPS steps of the same names in a different order per rank and step, from
 * one thread (two on every fourth step), each step completing every name in
 * reverse; the planned disagreements must fail on every rank, everything else
 * must be right.
 */
TC_CASE(cached_names_steps)
{
    int mismatches = 0;
    double t0 = tt_now();

    CHECK_LE(tt_size, 64);
    for (g_step = 0; g_step < NSTEPS; g_step++) {
        for (int i = 0; i < NTASKS; i++) {
            prepare(i);
            mismatches += g_tasks[i].field != NULL;
        }
        tt_run_batch(
            &(tt_batch_t){.ntasks = NTASKS,
                          .nthreads = g_step % 4 == 3 ? 2 : 1,
                          .order_seed = tt_key((uint64_t)tt_rank, (uint64_t)g_step, 0x5107),
                          .complete_in_reverse = 1,
                          .submit = submit,
                          .complete = complete_and_check});
        for (int i = 0; i < NTASKS; i++) {
            if (g_tasks[i].recv != g_tasks[i].send) {
                free(g_tasks[i].recv);
            }
            free(g_tasks[i].send);
        }
    }
    /* every planned disagreement happened (and was seen) with 2+ ranks */
    CHECK_EQ(mismatches, tt_size > 1 ? 5 : 0);

    const char *cap = getenv("TCOLL_CACHE_CAPACITY");
    tt_say("test_cache: %d steps of %d names on %d ranks, %d mismatches detected, "
           "TCOLL_CACHE_CAPACITY=%s, %.2f s\n",
           NSTEPS, NTASKS, tt_size, mismatches, cap ? cap : "(default)", tt_now() - t0);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
