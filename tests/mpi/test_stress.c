/*
 * test_stress.c - many small operations from several threads with names
 * reused from step to step: each of 4 threads runs STEPS steps; in each step
 * it submits, in a rank-dependent random order, an int32 sum allreduce, a
 * float32 max allreduce (in place), and every few steps an allgather or a
 * broadcast, under names "s<thread>/<kind>" that are reused once the step's
 * requests have completed; every result is checked.
 *
 * Usage: test_stress [--case NAME] [steps]   (default 200)
 */
#define _POSIX_C_SOURCE 200809L

#include "mpi_common.h"

#define NTHREADS 4

static int g_steps = 200;

typedef struct {
    char name[32];
    int kind; /* 0 sum, 1 max (in place), 2 allgather, 3 broadcast */
    int32_t a[64], ao[64];
    float f[64];
    int64_t n;
    int root;
    tc_request_t *req;
} op_t;

static void submit(op_t *o)
{
    tc_request_t **rp = &o->req;
    switch (o->kind) {
    case 0: {
        tc_tensor_t t = {o->a, TC_INT32, 1, {o->n}};
        CHECK_OK(tc_allreduce(o->name, &t, o->ao, TC_SUM, rp));
        break;
    }
    case 1: {
        tc_tensor_t t = {o->f, TC_FLOAT32, 1, {o->n}};
        CHECK_OK(tc_allreduce(o->name, &t, o->f, TC_MAX, rp));
        break;
    }
    case 2: {
        tc_tensor_t t = {o->a, TC_INT32, 2, {tt_rank % 3, 2}};
        CHECK_OK(tc_allgather(o->name, &t, rp));
        break;
    }
    default: {
        tc_tensor_t t = {o->a, TC_INT32, 1, {o->n}};
        CHECK_OK(tc_broadcast(o->name, &t, o->root, rp));
        break;
    }
    }
}

static void check(op_t *o, int ti, int step)
{
    tc_status_t st = tc_wait(o->req);
    CHECK_MSG(st == TC_OK, "thread %d step %d %s: %s: %s", ti, step, o->name, tc_status_string(st),
              tc_request_error(o->req));
    switch (o->kind) {
    case 0:
        for (int64_t i = 0; i < o->n; i++) {
            /* sum over r of (r+1)*(step+1) + i + ti */
            int64_t want = (int64_t)tt_size * (tt_size + 1) / 2 * (step + 1) + tt_size * (i + ti);
            CHECK_EQ(o->ao[i], want);
        }
        break;
    case 1:
        for (int64_t i = 0; i < o->n; i++) {
            /* max over r of ((r * 7 + i + step) % 5) - ti */
            int best = -1;
            for (int r = 0; r < tt_size; r++) {
                int v = (int)((r * 7 + i + step) % 5);
                best = v > best ? v : best;
            }
            CHECK_EQ(o->f[i], (float)(best - ti));
        }
        break;
    case 2: {
        tc_tensor_t out;
        CHECK_OK(tc_request_output(o->req, &out));
        int64_t rows = 0;
        for (int r = 0; r < tt_size; r++) {
            for (int k = 0; k < (r % 3) * 2; k++) {
                CHECK_EQ(((int32_t *)out.data)[rows * 2 + k], r * 100 + step + k);
            }
            rows += r % 3;
        }
        CHECK_EQ(out.shape[0], rows);
        CHECK_EQ(out.shape[1], 2);
        break;
    }
    default:
        for (int64_t i = 0; i < o->n; i++) {
            CHECK_EQ(o->a[i], o->root * 1000 + step * 3 + (int)i);
        }
        break;
    }
    tc_request_free(o->req);
    o->req = NULL;
}

/* The optional argument: how many steps each thread runs. */
static void read_steps(void)
{
    if (tc_test_nargs() > 0) {
        g_steps = atoi(tc_test_arg(0));
        CHECK(g_steps > 0);
    }
}

static void worker(int ti, void *arg)
{
    (void)arg;
    tt_rng_t rng = {tt_key(0x57, (uint64_t)tt_rank, (uint64_t)ti)};
    static const char *kinds[4] = {"sum", "max", "ag", "bc"};
    op_t ops[4];
    memset(ops, 0, sizeof ops);
    for (int k = 0; k < 4; k++) {
        snprintf(ops[k].name, sizeof ops[k].name, "s%d/%s", ti, kinds[k]);
        ops[k].kind = k;
    }
    for (int step = 0; step < g_steps; step++) {
        op_t *todo[4];
        int n = 0;
        /* sizes the same on every rank: derived from (thread, step) only */
        int64_t len = 1 + (int64_t)(tt_key(ti, (uint64_t)step, 1) % 64);
        ops[0].n = len;
        for (int64_t i = 0; i < len; i++) {
            ops[0].a[i] = (tt_rank + 1) * (step + 1) + (int32_t)i + ti;
        }
        todo[n++] = &ops[0];
        ops[1].n = 1 + (int64_t)(tt_key(ti, (uint64_t)step, 2) % 64);
        for (int64_t i = 0; i < ops[1].n; i++) {
            ops[1].f[i] = (float)((tt_rank * 7 + i + step) % 5 - ti);
        }
        todo[n++] = &ops[1];
        if (step % 3 == 1) {
            for (int k = 0; k < (tt_rank % 3) * 2; k++) {
                ops[2].a[k] = tt_rank * 100 + step + k;
            }
            todo[n++] = &ops[2];
        }
        if (step % 4 == 2) {
            ops[3].root = (step / 4 + ti) % tt_size;
            ops[3].n = 1 + (int64_t)(tt_key(ti, (uint64_t)step, 3) % 64);
            for (int64_t i = 0; i < ops[3].n; i++) {
                ops[3].a[i] = tt_rank == ops[3].root ? ops[3].root * 1000 + step * 3 + (int)i : -7;
            }
            todo[n++] = &ops[3];
        }
        /* submit in a random order, complete in another */
        int ord[4] = {0, 1, 2, 3};
        tt_shuffle(ord, n, &rng);
        for (int k = 0; k < n; k++) {
            submit(todo[ord[k]]);
        }
        tt_shuffle(ord, n, &rng);
        for (int k = 0; k < n; k++) {
            check(todo[ord[k]], ti, step);
        }
    }
}

/* The newer kinds from every thread: per step a reducescatter, an
 * alltoall, a grouped pair of allreduces in a random order, and on thread 0
 * every fifth step a barrier (from one thread, so that each rank's k-th
 * barrier is that thread's); names reused from step to step. */
static void worker_new(int ti, void *arg)
{
    tt_rng_t rng = {tt_key(0x99, (uint64_t)tt_rank, (uint64_t)ti)};
    char rs[32], a2a[32], g0[32], g1[32];
    const char *gn[2] = {g0, g1};
    int32_t in[256], gin[2][16], gout[2][16];
    void *grecv[2] = {gout[0], gout[1]};
    tc_tensor_t gt[2];
    (void)arg;

    snprintf(rs, sizeof(rs), "n%d/rs", ti);
    snprintf(a2a, sizeof(a2a), "n%d/a2a", ti);
    snprintf(g0, sizeof(g0), "n%d/g0", ti);
    snprintf(g1, sizeof(g1), "n%d/g1", ti);
    for (int step = 0; step < g_steps / 2; step++) {
        tc_request_t *req[5] = {NULL};
        int64_t rows = 1 + (int64_t)(tt_key(ti, (uint64_t)step, 7) % 9); /* per rank */
        int64_t per = 1 + (int64_t)(tt_key(ti, (uint64_t)step, 8) % 3);  /* alltoall rows */
        tc_tensor_t trs = {in, TC_INT32, 1, {rows * tt_size}};
        int32_t a2in[64];
        tc_tensor_t ta = {a2in, TC_INT32, 1, {per * tt_size}};
        int ord[4] = {0, 1, 2, 3}, k;
        for (int64_t i = 0; i < rows * tt_size; i++) {
            in[i] = (int32_t)(tt_rank + i + step);
        }
        for (int64_t i = 0; i < per * tt_size; i++) { /* row i goes to rank i / per */
            a2in[i] = (int32_t)(tt_rank * 1000 + i * 10 + step % 10);
        }
        for (k = 0; k < 2; k++) {
            for (int i = 0; i < 16; i++) {
                gin[k][i] = (int32_t)(tt_rank * (k + 1) + i + step);
            }
            gt[k] = (tc_tensor_t){gin[k], TC_INT32, 1, {8 + k}};
        }
        tt_shuffle(ord, 3 + (ti == 0 && step % 5 == 0), &rng);
        for (k = 0; k < 3 + (ti == 0 && step % 5 == 0); k++) {
            switch (ord[k]) {
            case 0: CHECK_OK(tc_reducescatter(rs, &trs, TC_SUM, &req[0])); break;
            case 1: CHECK_OK(tc_alltoall(a2a, &ta, NULL, &req[1])); break;
            case 2: CHECK_OK(tc_grouped_allreduce(2, gn, gt, grecv, TC_SUM, NULL, &req[2])); break;
            default: CHECK_OK(tc_barrier(&req[4])); break;
            }
        }
        for (k = 0; k < 5; k++) {
            tc_tensor_t out;
            if (req[k] == NULL) {
                continue;
            }
            CHECK_MSG(tc_wait(req[k]) == TC_OK, "thread %d step %d request %d: %s", ti, step, k,
                      tc_request_error(req[k]));
            if (k == 0) { /* rows rows of the sum of (r + i + step) */
                CHECK_OK(tc_request_output(req[k], &out));
                CHECK_EQ(out.shape[0], rows);
                for (int64_t i = 0; i < rows; i++) {
                    int64_t g = tt_rank * rows + i;
                    CHECK_EQ(((int32_t *)out.data)[i],
                             (int32_t)(tt_size * (g + step) + tt_size * (tt_size - 1) / 2));
                }
            } else if (k == 1) { /* per rows from each rank q: q's rows tt_rank*per.. */
                CHECK_OK(tc_request_output(req[k], &out));
                CHECK_EQ(out.shape[0], per * tt_size);
                for (int q = 0; q < tt_size; q++) {
                    for (int64_t i = 0; i < per; i++) {
                        int64_t src = tt_rank * per + i;
                        CHECK_EQ(((int32_t *)out.data)[q * per + i],
                                 (int32_t)(q * 1000 + src * 10 + step % 10));
                    }
                }
            } else if (k == 3) { /* both members done */
                for (int m = 0; m < 2; m++) {
                    for (int i = 0; i < 8 + m; i++) {
                        CHECK_EQ(gout[m][i], (int32_t)((m + 1) * tt_size * (tt_size - 1) / 2 +
                                                       tt_size * (i + step)));
                    }
                }
            }
            tc_request_free(req[k]);
        }
    }
}

TC_CASE(new_kinds_from_threads)
{
    double t0 = tt_now();
    tt_run_threads(NTHREADS, worker_new, NULL);
    tt_say("test_stress: new kinds, %d threads x %d steps OK on %d ranks (%.2f s)\n", NTHREADS,
           g_steps / 2, tt_size, tt_now() - t0);
}

/* NTHREADS threads, each running g_steps steps of its own operations. */
TC_CASE(reused_names_from_threads)
{
    double t0 = tt_now();
    tt_run_threads(NTHREADS, worker, NULL);
    double el = tt_now() - t0;
    tt_say("test_stress: %d threads x %d steps OK on %d ranks (%.2f s, %.0f us/step)\n", NTHREADS,
           g_steps, tt_size, el, el / g_steps * 1e6);
}

int main(int argc, char **argv)
{
    /* the step count is read in a hook: tc_test_arg() is set by tt_mpi_main */
    return tt_mpi_main(argc, argv, &(tt_program_t){.args = "[steps]", .before_init = read_steps});
}
