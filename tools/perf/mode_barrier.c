/*
 * mode_barrier.c - the barrier mode: tc_barrier (no tensor, no name; then
 * tc_wait and tc_request_free) vs MPI_Barrier, timed like a sweep's
 * operations but once, with no sizes: one row, microseconds per barrier,
 * ratio = MPI time / tcoll time.
 *
 * The check, as for the other modes one extra untimed barrier per side,
 * counts the ranks whose barrier completed before the last rank had called
 * it. The last rank calls 20 ms late and, just before it calls, looks for a
 * message that each other rank sends the moment its own barrier completes:
 * one that is already there came from a rank that left too early. A check
 * built on messages and no clock never counts a right barrier as wrong, on
 * one node or many; a wrong one is caught as soon as its message arrives
 * within the 20 ms.
 */
#define _GNU_SOURCE
#include "perf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BARRIER_ITERS 1000    /* default timed barriers per side */
#define BARRIER_CHECK_TAG 731 /* "my barrier completed", to the last rank */
#define BARRIER_LATE_MS 20    /* how late the last rank calls in the check */

static void no_data(perf_bench_t *b)
{
    (void)b;
}

/* Before the checked barrier, on the last rank: waits, then counts the ranks
 * that already said their barrier completed. impl: "tcoll" or "MPI". */
static long long early_ranks(const char *impl)
{
    struct timespec late = {0, BARRIER_LATE_MS * 1000 * 1000};
    long long early = 0;
    if (perf_rank != perf_size - 1 || perf_size == 1) {
        return 0;
    }
    nanosleep(&late, NULL);
    for (int r = 0; r < perf_size - 1; r++) {
        int there = 0;
        MPI_Iprobe(r, BARRIER_CHECK_TAG, perf_comm, &there, MPI_STATUS_IGNORE);
        if (there) {
            fprintf(stderr,
                    "tcoll-perf: %s barrier: rank %d's completed before rank %d called it "
                    "(%d ms late)\n",
                    impl, r, perf_rank, BARRIER_LATE_MS);
            early++;
        }
    }
    return early;
}

/* After the checked barrier: every rank but the last says so; the last
 * collects what they said. */
static void after_checked_barrier(void)
{
    int token = 1;
    if (perf_size == 1) {
        return;
    }
    if (perf_rank != perf_size - 1) {
        MPI_Send(&token, 1, MPI_INT, perf_size - 1, BARRIER_CHECK_TAG, perf_comm);
        return;
    }
    for (int r = 0; r < perf_size - 1; r++) {
        MPI_Recv(&token, 1, MPI_INT, r, BARRIER_CHECK_TAG, perf_comm, MPI_STATUS_IGNORE);
    }
}

static long long barrier_tcoll(perf_bench_t *b, int check)
{
    tc_request_t *req = NULL;
    long long early = check ? early_ranks("tcoll") : 0;
    tc_status_t st = tc_barrier(&req);
    (void)b;
    if (st != TC_OK) {
        perf_die("tc_barrier failed: %s: %s", tc_status_string(st), tc_last_error());
    }
    st = tc_wait(req);
    if (st != TC_OK) {
        perf_die("tc_wait(barrier) failed: %s: %s", tc_status_string(st), tc_request_error(req));
    }
    tc_request_free(req);
    if (check) {
        after_checked_barrier();
    }
    return early;
}

static long long barrier_mpi(perf_bench_t *b, int check)
{
    long long early = check ? early_ranks("MPI") : 0;
    (void)b;
    MPI_Barrier(perf_comm);
    if (check) {
        after_checked_barrier();
    }
    return early;
}

const perf_sweep_ops_t perf_barrier_ops = {
    .busbw = PERF_BUSBW_1,
    .setup = no_data,
    .fill = no_data,
    .poison = no_data,
    .tcoll_once = barrier_tcoll,
    .mpi_once = barrier_mpi,
};

static void print_barrier_header(const perf_opts_t *o, int iters, int warmup)
{
    perf_print_banner();
    printf("# barrier: tc_barrier + tc_wait + tc_request_free vs MPI_Barrier; no data (-b, -e, "
           "-f do not apply), check %s\n",
           o->check ? "on" : "off");
    printf("# iterations: %d timed after %d warmup, per side\n", iters, warmup);
    printf("# time: median over iterations of the slowest rank (us per barrier); algbw and busbw "
           "do not apply\n");
    printf("# wrong = ranks whose barrier completed before the last rank called it (one extra "
           "barrier, the last rank %d ms late)\n",
           BARRIER_LATE_MS);
    printf("# ratio = MPI time / tcoll time: > 1 means tcoll is faster\n");
    printf("# limit: none (a barrier moves no data)\n");
    perf_print_columns(0);
}

perf_row_t *perf_run_barrier(const perf_opts_t *o, int *nrows_p, long long *wrong_p)
{
    const perf_sweep_ops_t *ops = &perf_barrier_ops;
    perf_row_t *r = perf_alloc(sizeof *r, "rows");
    perf_bench_t b;
    double *times;
    char w0[24], w1[24];

    memset(r, 0, sizeof *r);
    memset(&b, 0, sizeof b);
    b.o = o;
    r->iters = o->iters ? o->iters : BARRIER_ITERS;
    r->warmup = o->warmup >= 0 ? o->warmup : r->iters / 10 < 2 ? 2 : r->iters / 10;
    times = perf_alloc(sizeof *times * (size_t)r->iters, "timings");
    if (perf_rank == 0) {
        print_barrier_header(o, r->iters, r->warmup);
    }
    *wrong_p = 0;
    for (int impl = 0; impl < 2; impl++) {
        perf_progress("barrier: %s, %d iterations", impl == 0 ? "tcoll" : "MPI", r->iters);
        r->us[impl] = perf_time_side(ops, &b, impl, r->iters, r->warmup, times) * 1e6;
        r->wrong[impl] = o->check ? perf_check_side(ops, &b, impl) : -1;
        if (r->wrong[impl] > 0) {
            *wrong_p += r->wrong[impl];
        }
    }
    perf_progress_clear();
    if (perf_rank == 0) {
        perf_fmt_wrong(w0, sizeof w0, r->wrong[0]);
        perf_fmt_wrong(w1, sizeof w1, r->wrong[1]);
        printf("%12d %12d %8s  %10.2f %7s %7s %6s  %10.2f %7s %7s %6s  %6.2f\n", 0, 0, "-",
               r->us[0], "-", "-", w0, r->us[1], "-", "-", w1, r->us[1] / r->us[0]);
        fflush(stdout);
    }
    free(times);
    *nrows_p = 1;
    return r;
}
