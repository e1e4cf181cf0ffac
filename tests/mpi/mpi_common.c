/*
 * mpi_common.c - the skeleton every multi-rank test program shares: its main
 * (tt_mpi_main) and its worker threads (tt_run_batch). See mpi_common.h.
 *
 * Like the rest of the tests it uses tcoll's public API only; MPI itself
 * only where the program owns MPI (tt_program_t.app_mpi).
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>
#include <stdarg.h>

#include "mpi_common.h"

int tt_rank = -1, tt_size = -1;

void tt_say(const char *fmt, ...)
{
    va_list ap;
    if (tt_rank > 0 || (tt_rank < 0 && !tc_test_prints())) {
        return;
    }
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

/* Every rank must run the cases rank 0 runs: argv is the same everywhere
 * under one mpiexec, but not under an MPMD launch (prog --case a : prog). */
static void check_same_cases(int tcoll_up)
{
    uint64_t mine = tc_test_selection_hash(), root = mine;
    if (tcoll_up) {
        tc_tensor_t t = {&root, TC_INT64, 0, {0}};
        tc_request_t *req = NULL;
        CHECK_OK(tc_broadcast("tt/cases", &t, 0, &req));
        tc_status_t st = tc_wait(req);
        CHECK_MSG(st == TC_OK, "the broadcast of rank 0's cases: %s (%s)", tc_status_string(st),
                  tc_request_error(req));
        tc_request_free(req);
    } else {
        CHECK_EQ(MPI_Bcast(&root, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), MPI_SUCCESS);
    }
    CHECK_MSG(root == mine, "rank %d was asked to run other cases than rank 0 (%d selected)",
              tt_rank, tc_test_nselected());
}

/*
 * The verdict: every rank reaches it after its own checks have passed (a
 * failed one aborts the job), having run as many cases. Over tcoll it is the
 * end-of-test barrier (see tt_final_barrier: a rank may see TC_ERR_SHUTDOWN
 * from it when a faster rank already shut down); over the application's MPI
 * an MPI_Allreduce.
 */
static void verdict(int tcoll_up, int ran)
{
    int64_t mine[2] = {1, ran}, sum[2] = {0, 0};
    if (tcoll_up) {
        tc_tensor_t t = {mine, TC_INT64, 1, {2}};
        tc_request_t *req = NULL;
        CHECK_OK(tc_allreduce("tt/verdict", &t, sum, TC_SUM, &req));
        tc_status_t st = tc_wait(req);
        CHECK_MSG(st == TC_OK || st == TC_ERR_SHUTDOWN, "verdict: %s (%s)", tc_status_string(st),
                  tc_request_error(req));
        tc_request_free(req);
        if (st != TC_OK) {
            return;
        }
    } else {
        CHECK_EQ(MPI_Allreduce(mine, sum, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    }
    CHECK_EQ(sum[0], tt_size);
    CHECK_MSG(sum[1] == (int64_t)ran * tt_size, "the ranks ran %lld cases in all, want %d x %d",
              (long long)sum[1], ran, tt_size);
}

int tt_mpi_main(int argc, char **argv, const tt_program_t *prog)
{
    tc_test_opts_t opts = {prog->args, prog->one_case_per_run || prog->case_ends_tcoll};
    int tcoll_up = 0, ran;
    double t0;

    tc_test_parse(argc, argv, &opts);
    if (opts.one_case_per_run && tc_test_nselected() != 1) {
        if (tc_test_prints()) {
            fprintf(stderr,
                    "%s: each case needs a run of its own: name one with --case "
                    "(--list shows them)\n",
                    tc_test_prog());
        }
        return 2;
    }
    if (prog->app_mpi) {
        int provided = 0, multiple = prog->app_mpi_level >= MPI_THREAD_MULTIPLE;
        MPI_Init_thread(&argc, &argv, prog->app_mpi_level, &provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &tt_rank);
        MPI_Comm_size(MPI_COMM_WORLD, &tt_size);
        if ((provided >= MPI_THREAD_MULTIPLE) != multiple) {
            tt_say(multiple ? "%s: MPI gives no MPI_THREAD_MULTIPLE; skipped\n"
                            : "%s: MPI gave MPI_THREAD_MULTIPLE for a lower request; "
                              "nothing to test\n",
                   tc_test_prog());
            MPI_Finalize();
            return 0;
        }
    }
    if (prog->before_init != NULL) {
        prog->before_init();
    }
    if (!prog->app_mpi || prog->app_mpi_level >= MPI_THREAD_MULTIPLE) {
        CHECK_OK(tc_init());
        tcoll_up = 1;
        if (prog->app_mpi) {
            CHECK_EQ(tc_rank(), tt_rank);
            CHECK_EQ(tc_size(), tt_size);
        }
        tt_rank = tc_rank();
        tt_size = tc_size();
        CHECK(tt_rank >= 0 && tt_rank < tt_size);
    }
    check_same_cases(tcoll_up);

    t0 = tt_now();
    ran = tc_test_run();
    if (!prog->case_ends_tcoll) {
        verdict(tcoll_up, ran);
        if (tcoll_up) {
            CHECK_OK(tc_shutdown());
        }
    }
    if (prog->app_mpi) {
        int fin = 1;
        MPI_Finalized(&fin);
        CHECK_MSG(fin == 0, "tcoll finalized MPI that the application initialized");
    }
    if (prog->after_shutdown != NULL) {
        prog->after_shutdown();
    }
    tt_say("%s: %d case%s OK on %d rank%s (%.2f s)\n", tc_test_prog(), ran, ran == 1 ? "" : "s",
           tt_size, tt_size == 1 ? "" : "s", tt_now() - t0);
    if (prog->app_mpi) {
        MPI_Finalize();
    }
    return 0;
}

/* ---- worker threads --------------------------------------------------------- */

typedef struct {
    const tt_batch_t *b;
    const int *order;
} batch_run_t;

static void batch_thread(int ti, void *arg)
{
    const batch_run_t *run = (const batch_run_t *)arg;
    const tt_batch_t *b = run->b;
    tt_rng_t rng = {tt_key(b->pause_seed, (uint64_t)tt_rank, (uint64_t)ti)};
    int *mine = tt_xmalloc(sizeof(int) * (size_t)b->ntasks);
    int n = 0;

    for (int j = ti; j < b->ntasks; j += b->nthreads) {
        mine[n++] = run->order[j];
    }
    for (int k = 0; k < n; k++) {
        b->submit(mine[k], b->arg);
        if (b->pause_one_in > 0 && tt_rng_below(&rng, (uint64_t)b->pause_one_in) == 0) {
            tt_sleep_ms(1); /* let the engine see a partial set now and then */
        }
    }
    for (int k = 0; k < n; k++) {
        b->complete(mine[b->complete_in_reverse ? n - 1 - k : k], b->arg);
    }
    free(mine);
}

void tt_run_batch(const tt_batch_t *b)
{
    int *order = tt_xmalloc(sizeof(int) * (size_t)(b->ntasks > 0 ? b->ntasks : 1));
    tt_rng_t rng = {b->order_seed};
    batch_run_t run = {b, order};

    CHECK(b->nthreads >= 1);
    for (int i = 0; i < b->ntasks; i++) {
        order[i] = i;
    }
    tt_shuffle(order, b->ntasks, &rng);
    if (b->nthreads == 1) {
        batch_thread(0, &run);
    } else {
        tt_run_threads(b->nthreads, batch_thread, &run);
    }
    free(order);
}
