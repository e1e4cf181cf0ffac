/*
 * test_reinit.c - tc_init after tc_shutdown in the same process: three runs
 * of tcoll one after the other, each starting afresh. One case per run of
 * the program (the case shuts tcoll down itself):
 *
 *   three_runs   tcoll initializes MPI at the first tc_init (the default),
 *                or, with the argument app-mpi, the application does
 *                (MPI_THREAD_MULTIPLE) and finalizes it at the end.
 *
 * Each run (the skeleton's tc_init starts the first): ids as MPI's; no
 * process set but the global one (the last run's set is gone, and the new
 * one gets id 1 again); the same names as every run: small allreduces
 * repeated until they are cached and take the small-message path, a large
 * one, one in the process set, an allgather, a broadcast from a root that
 * changes per run, barriers and a join (auto names from 0 again), with data
 * that depends on the run so a result left over from an earlier run cannot
 * pass; a job-wide timeline (one per run: the second run may record one
 * again) that rank 0 finds written after tc_shutdown. After each
 * tc_shutdown: submissions refused, a second tc_shutdown refused, the ids
 * kept, MPI still initialized and not finalized (when tcoll initialized
 * it, it finalizes it at exit: mpiexec fails the job otherwise).
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpi_common.h"

#define NRUNS 3
#define SMALL 5
#define BIG 70001

static void wait_ok(tc_request_t *req, const char *what)
{
    tc_status_t st = tc_wait(req);
    CHECK_MSG(st == TC_OK, "rank %d: %s: %s (%s)", tt_rank, what, tc_status_string(st),
              tc_request_error(req));
}

/* An allreduce (sum) of count floats, rank r's element i being
 * (r + 1) * (i % 13 + 1) + run; checked exactly against the members'. */
static void allreduce_check(const char *name, int64_t count, int run, uint32_t pset,
                            const int *members, int nmembers)
{
    float *in = tt_xmalloc(sizeof(float) * (size_t)count);
    float *out = tt_xmalloc(sizeof(float) * (size_t)count);
    tc_tensor_t t = {in, TC_FLOAT32, 1, {count}};
    tc_opts_t o = TC_OPTS_INIT;
    tc_request_t *req = NULL;
    int64_t i;
    int k, factor = 0;

    for (k = 0; k < nmembers; k++) {
        factor += members[k] + 1;
    }
    for (i = 0; i < count; i++) {
        in[i] = (float)((tt_rank + 1) * (i % 13 + 1) + run);
    }
    o.process_set = pset;
    CHECK_OK(tc_allreduce_ex(name, &t, out, TC_SUM, &o, &req));
    wait_ok(req, name);
    tc_request_free(req);
    for (i = 0; i < count; i++) {
        float want = (float)(factor * (i % 13 + 1) + nmembers * run);
        CHECK_MSG(tt_f32_bits(out[i]) == tt_f32_bits(want),
                  "run %d, rank %d: %s[%lld] = %g, want %g", run, tt_rank, name, (long long)i,
                  (double)out[i], (double)want);
    }
    free(in);
    free(out);
}

/* A path for this run's job-wide timeline, the same on every rank (rank 0's
 * pid and the run). */
static void timeline_path(int run, char *path, size_t cap)
{
    int64_t pid = (int64_t)getpid();
    tc_tensor_t t = {&pid, TC_INT64, 0, {0}};
    tc_request_t *req = NULL;
    const char *dir = getenv("TMPDIR");

    CHECK_OK(tc_broadcast("reinit/pid", &t, 0, &req));
    wait_ok(req, "reinit/pid");
    tc_request_free(req);
    snprintf(path, cap, "%s/tcoll-reinit-%lld-run%d.json", dir != NULL && dir[0] ? dir : "/tmp",
             (long long)pid, run);
}

/* One run's work; tcoll is running. */
static void one_run(int run)
{
    int all[64], some[64], nsome = 0, id = -7, r, n = tt_size;
    tc_request_t *req = NULL, *bar[2] = {NULL, NULL};
    int last = -1;
    char path[512];

    CHECK(n <= 64);
    /* the first run's ids (the skeleton's, from tcoll; MPI's own calls are
     * not this thread's to make when tcoll initialized MPI) */
    CHECK_EQ(tc_rank(), tt_rank);
    CHECK_EQ(tc_size(), tt_size);
    CHECK_STATUS(tc_init(), TC_ERR_STATE); /* twice in one run */

    timeline_path(run, path, sizeof(path));
    CHECK_OK(tc_timeline_start(path));

    /* only the global set: the last run's set 1 is gone */
    CHECK_EQ(tc_process_set_size(1), -1);
    CHECK_EQ(tc_process_set_rank(1), -1);
    for (r = 0; r < n; r++) {
        all[r] = r;
        if (r < n - 1 || n == 1) {
            some[nsome++] = r;
        }
    }
    CHECK_OK(tc_process_set_add(some, nsome, &id));
    CHECK_MSG(id == 1, "run %d: the first process set got id %d, want 1 (ids start afresh)", run,
              id);

    /* small names, cached from their second run and on the small-message
     * path from their third; a large one; one in the set */
    for (r = 0; r < 4; r++) {
        allreduce_check("reinit/small", SMALL, run, 0, all, n);
        allreduce_check("reinit/small2", 1, run, 0, all, n);
    }
    allreduce_check("reinit/big", BIG, run, 0, all, n);
    if (tc_process_set_rank((uint32_t)id) >= 0) {
        allreduce_check("reinit/in-set", SMALL, run, (uint32_t)id, some, nsome);
        allreduce_check("reinit/in-set", SMALL, run, (uint32_t)id, some, nsome);
    }

    /* allgather: rank r gives r + 1 rows of (r, run) */
    {
        int32_t mine[2 * 64];
        tc_tensor_t t = {mine, TC_INT32, 2, {tt_rank + 1, 2}};
        tc_tensor_t out;
        int64_t row = 0;
        for (r = 0; r <= tt_rank; r++) {
            mine[2 * r] = tt_rank;
            mine[2 * r + 1] = run;
        }
        CHECK_OK(tc_allgather("reinit/ag", &t, &req));
        wait_ok(req, "reinit/ag");
        CHECK_OK(tc_request_output(req, &out));
        CHECK_EQ(out.shape[0], (int64_t)n * (n + 1) / 2);
        for (r = 0; r < n; r++) {
            for (int k = 0; k <= r; k++, row++) {
                CHECK_EQ(((const int32_t *)out.data)[2 * row], r);
                CHECK_EQ(((const int32_t *)out.data)[2 * row + 1], run);
            }
        }
        tc_request_free(req);
    }
    /* broadcast from a root that changes per run */
    {
        int64_t v[3] = {tt_rank, run, -1};
        tc_tensor_t t = {v, TC_INT64, 1, {3}};
        int root = run % n;
        CHECK_OK(tc_broadcast("reinit/bc", &t, root, &req));
        wait_ok(req, "reinit/bc");
        tc_request_free(req);
        CHECK_EQ(v[0], root);
        CHECK_EQ(v[1], run);
    }
    /* barriers and a join: their automatic names start from 0 again */
    CHECK_OK(tc_barrier(&bar[0]));
    CHECK_OK(tc_barrier(&bar[1]));
    wait_ok(bar[0], "barrier 0");
    wait_ok(bar[1], "barrier 1");
    tc_request_free(bar[0]);
    tc_request_free(bar[1]);
    CHECK_OK(tc_join(&req));
    wait_ok(req, "join");
    CHECK_OK(tc_request_last_joined(req, &last));
    CHECK(last >= 0 && last < n);
    tc_request_free(req);
    {
        int32_t in[2] = {last, -last}, out[2];
        tc_tensor_t t = {in, TC_INT32, 1, {2}};
        CHECK_OK(tc_allreduce("reinit/last", &t, out, TC_MAX, &req));
        wait_ok(req, "reinit/last");
        tc_request_free(req);
        CHECK_MSG(out[0] == last && -out[1] == last,
                  "run %d: the ranks disagree on the join's "
                  "last rank",
                  run);
    }

    /* every rank is done before anyone shuts down */
    allreduce_check("reinit/done", 1, run, 0, all, n);
    CHECK_OK(tc_shutdown());

    /* after the shutdown */
    {
        float x = 1, y;
        tc_tensor_t t = {&x, TC_FLOAT32, 0, {0}};
        int flag = -1;
        EXPECT_IMMEDIATE(TC_ERR_SHUTDOWN, tc_allreduce("reinit/late", &t, &y, TC_SUM, &req));
        CHECK_STATUS(tc_shutdown(), TC_ERR_STATE);
        CHECK_EQ(tc_rank(), tt_rank); /* the last values */
        CHECK_EQ(tc_size(), tt_size);
        MPI_Initialized(&flag);
        CHECK_EQ(flag, 1);
        MPI_Finalized(&flag);
        CHECK_MSG(flag == 0, "run %d: MPI was finalized at tc_shutdown", run);
    }
    if (tt_rank == 0) { /* rank 0 wrote the job-wide file at its tc_shutdown */
        struct stat sb;
        CHECK_MSG(stat(path, &sb) == 0 && sb.st_size > 0, "run %d: no timeline at %s", run, path);
        unlink(path);
    }
}

TC_CASE(three_runs)
{
    int run;

    for (run = 0; run < NRUNS; run++) {
        if (run > 0) {
            tc_status_t st = tc_init();
            CHECK_MSG(st == TC_OK, "run %d: tc_init after tc_shutdown: %s (%s)", run,
                      tc_status_string(st), tc_last_error());
        }
        one_run(run);
    }
    tt_say("  %d runs on %d rank%s, MPI %s\n", NRUNS, tt_size, tt_size == 1 ? "" : "s",
           tc_test_nargs() > 0 ? "the application's" : "tcoll's");
}

int main(int argc, char **argv)
{
    int app = argc > 1 && strcmp(argv[argc - 1], "app-mpi") == 0;

    return tt_mpi_main(argc, argv,
                       &(tt_program_t){.args = "[app-mpi]",
                                       .case_ends_tcoll = 1,
                                       .app_mpi = app,
                                       .app_mpi_level = MPI_THREAD_MULTIPLE});
}
