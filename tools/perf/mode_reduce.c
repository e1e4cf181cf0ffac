/*
 * mode_reduce.c - the sweep's reductions: allreduce (tc_allreduce into the
 * user's buffer vs MPI_Allreduce) and reduce-scatter (tc_reducescatter, whose
 * output tcoll allocates, vs MPI_Reduce_scatter_block). The inputs come from
 * data.c's reduction scheme, so every result is exact whatever order either
 * library adds the ranks in. MPI has no average: avg is MPI_SUM and then a
 * division loop, timed, as a user of MPI would pay it.
 */
#include "perf.h"

#include <string.h>

static int64_t want_reduced(const perf_bench_t *b, uint64_t i)
{
    return b->ar->expect[perf_hbucket(i, b->salt)];
}

/* ------------------------------------------------------------------------ */
/* Allreduce: count elements in, the same count reduced out on every rank    */
/* ------------------------------------------------------------------------ */

static void allreduce_setup(perf_bench_t *b)
{
    b->per = b->count;
    b->tensor.shape[0] = (int64_t)b->count;
}

static void allreduce_fill(perf_bench_t *b)
{
    tc_dtype_t dt = b->o->dtype;
    for (uint64_t i = 0; i < b->count; i++) {
        perf_put_int(dt, b->send, i, perf_ar_value(b->ar, perf_rank, perf_hbucket(i, b->salt)));
    }
    perf_poison_recv(b);
}

static long long allreduce_tcoll(perf_bench_t *b, int check)
{
    tc_request_t *req = NULL;
    long long wrong = 0;
    perf_tc_submit_ok(b, tc_allreduce(b->name, &b->tensor, b->recv, b->o->op, &req));
    perf_tc_wait(b, req);
    if (check) {
        wrong = perf_check_result(b, b->recv, b->count, want_reduced, "tcoll");
    }
    tc_request_free(req);
    return wrong;
}

static long long allreduce_mpi(perf_bench_t *b, int check)
{
    MPI_Allreduce(b->send, b->recv, (int)b->count, b->mdt, b->mop, perf_comm);
    if (b->o->op == TC_AVG) {
        perf_mpi_avg_finish(b->o->dtype, b->recv, b->count);
    }
    return check ? perf_check_result(b, b->recv, b->count, want_reduced, "MPI") : 0;
}

const perf_sweep_ops_t perf_allreduce_ops = {
    .busbw = PERF_BUSBW_2RING,
    .takes_op = 1,
    .needs_recv = 1,
    .setup = allreduce_setup,
    .fill = allreduce_fill,
    .poison = perf_poison_recv,
    .tcoll_once = allreduce_tcoll,
    .mpi_once = allreduce_mpi,
};

/* ------------------------------------------------------------------------ */
/* Reduce-scatter: count elements in, rank r keeps block r of count/n        */
/* ------------------------------------------------------------------------ */
/*
 * A 1-D tensor of a multiple of n elements, so tcoll's blocks (rows split as
 * evenly as possible, the first rows mod n ranks one more) and
 * MPI_Reduce_scatter_block's equal blocks are the same.
 */

/* Element i of this rank's block: element r * count/n + i of the reduction. */
static int64_t want_block(const perf_bench_t *b, uint64_t i)
{
    return b->ar->expect[perf_hbucket((uint64_t)perf_rank * b->per + i, b->salt)];
}

static void reducescatter_setup(perf_bench_t *b)
{
    b->per = b->count / (uint64_t)perf_size;
    b->tensor.shape[0] = (int64_t)b->count;
}

static void reducescatter_poison(perf_bench_t *b)
{
    memset(b->recv, PERF_POISON, b->per * tc_dtype_size(b->o->dtype));
}

static void reducescatter_fill(perf_bench_t *b)
{
    tc_dtype_t dt = b->o->dtype;
    for (uint64_t i = 0; i < b->count; i++) {
        perf_put_int(dt, b->send, i, perf_ar_value(b->ar, perf_rank, perf_hbucket(i, b->salt)));
    }
    reducescatter_poison(b);
}

static long long reducescatter_tcoll(perf_bench_t *b, int check)
{
    tc_request_t *req = NULL;
    long long wrong = 0;
    perf_tc_submit_ok(b, tc_reducescatter(b->name, &b->tensor, b->o->op, &req));
    perf_tc_wait(b, req);
    if (check) {
        wrong = perf_check_result(b, perf_tc_output(b, req, b->per), b->per, want_block, "tcoll");
    }
    tc_request_free(req);
    return wrong;
}

static long long reducescatter_mpi(perf_bench_t *b, int check)
{
    MPI_Reduce_scatter_block(b->send, b->recv, (int)b->per, b->mdt, b->mop, perf_comm);
    if (b->o->op == TC_AVG) {
        perf_mpi_avg_finish(b->o->dtype, b->recv, b->per);
    }
    return check ? perf_check_result(b, b->recv, b->per, want_block, "MPI") : 0;
}

const perf_sweep_ops_t perf_reducescatter_ops = {
    .busbw = PERF_BUSBW_RING,
    .takes_op = 1,
    .count_multiple_of_n = 1,
    .needs_recv = 1,
    .size_note = "the whole input on each rank (a 1-D tensor of a multiple of n elements); "
                 "rank r keeps block r, count/n elements",
    .setup = reducescatter_setup,
    .fill = reducescatter_fill,
    .poison = reducescatter_poison,
    .tcoll_once = reducescatter_tcoll,
    .mpi_once = reducescatter_mpi,
};
