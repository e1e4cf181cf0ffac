/*
 * mode_copy.c - the sweep's collectives that move data without combining
 * it: allgather (tc_allgather, output allocated by tcoll, vs MPI_Allgather),
 * broadcast (tc_broadcast vs MPI_Bcast, both in place) and alltoall
 * (tc_alltoall with equal splits, output allocated by tcoll, vs
 * MPI_Alltoallv with equal counts). The data is any integer the dtype holds
 * exactly, a hash of the element's place in the result (for alltoall: of
 * its sender, its receiver and its place in the block), so an element
 * delivered to the wrong place is caught.
 */
#include "perf.h"

#include <string.h>

/* Element i of the gathered output, or of the broadcast buffer. */
static int64_t want_copied(const perf_bench_t *b, uint64_t i)
{
    return perf_copy_value(b->o->dtype, i, b->salt);
}

/* ------------------------------------------------------------------------ */
/* Allgather: each rank sends count/n elements, every rank gets count        */
/* ------------------------------------------------------------------------ */

static void allgather_setup(perf_bench_t *b)
{
    b->per = b->count / (uint64_t)perf_size;
    b->tensor.shape[0] = (int64_t)b->per;
}

static void allgather_fill(perf_bench_t *b)
{
    tc_dtype_t dt = b->o->dtype;
    for (uint64_t i = 0; i < b->per; i++) {
        perf_put_int(dt, b->send, i,
                     perf_copy_value(dt, (uint64_t)perf_rank * b->per + i, b->salt));
    }
    perf_poison_recv(b);
}

static long long allgather_tcoll(perf_bench_t *b, int check)
{
    tc_request_t *req = NULL;
    long long wrong = 0;
    perf_tc_submit_ok(b, tc_allgather(b->name, &b->tensor, &req));
    perf_tc_wait(b, req);
    if (check) {
        wrong =
            perf_check_result(b, perf_tc_output(b, req, b->count), b->count, want_copied, "tcoll");
    }
    tc_request_free(req);
    return wrong;
}

static long long allgather_mpi(perf_bench_t *b, int check)
{
    MPI_Allgather(b->send, (int)b->per, b->mdt, b->recv, (int)b->per, b->mdt, perf_comm);
    return check ? perf_check_result(b, b->recv, b->count, want_copied, "MPI") : 0;
}

const perf_sweep_ops_t perf_allgather_ops = {
    .busbw = PERF_BUSBW_RING,
    .count_multiple_of_n = 1,
    .needs_recv = 1,
    .size_note = "the gathered output; each rank sends count/n elements",
    .setup = allgather_setup,
    .fill = allgather_fill,
    .poison = perf_poison_recv,
    .tcoll_once = allgather_tcoll,
    .mpi_once = allgather_mpi,
};

/* ------------------------------------------------------------------------ */
/* Broadcast: root's count elements to every rank, in place                  */
/* ------------------------------------------------------------------------ */

static void broadcast_setup(perf_bench_t *b)
{
    b->per = b->count;
    b->tensor.shape[0] = (int64_t)b->count;
}

static void broadcast_poison(perf_bench_t *b)
{
    if (perf_rank != b->o->root) {
        memset(b->send, PERF_POISON, b->count * tc_dtype_size(b->o->dtype));
    }
}

static void broadcast_fill(perf_bench_t *b)
{
    tc_dtype_t dt = b->o->dtype;
    if (perf_rank == b->o->root) {
        for (uint64_t i = 0; i < b->count; i++) {
            perf_put_int(dt, b->send, i, perf_copy_value(dt, i, b->salt));
        }
    } else {
        broadcast_poison(b);
    }
}

static long long broadcast_tcoll(perf_bench_t *b, int check)
{
    tc_request_t *req = NULL;
    long long wrong = 0;
    perf_tc_submit_ok(b, tc_broadcast(b->name, &b->tensor, b->o->root, &req));
    perf_tc_wait(b, req);
    if (check) {
        wrong = perf_check_result(b, b->send, b->count, want_copied, "tcoll");
    }
    tc_request_free(req);
    return wrong;
}

static long long broadcast_mpi(perf_bench_t *b, int check)
{
    MPI_Bcast(b->send, (int)b->count, b->mdt, b->o->root, perf_comm);
    return check ? perf_check_result(b, b->send, b->count, want_copied, "MPI") : 0;
}

const perf_sweep_ops_t perf_broadcast_ops = {
    .busbw = PERF_BUSBW_1,
    .setup = broadcast_setup,
    .fill = broadcast_fill,
    .poison = broadcast_poison,
    .tcoll_once = broadcast_tcoll,
    .mpi_once = broadcast_mpi,
};

/* ------------------------------------------------------------------------ */
/* Alltoall: each rank sends count/n elements to every rank, block j to j    */
/* ------------------------------------------------------------------------ */
/*
 * A 1-D tensor of a multiple of n elements with equal splits (splits NULL),
 * against MPI_Alltoallv with equal counts, as code ported from Horovod's
 * alltoall calls it. Both outputs stack the blocks received in rank order.
 */

/* Element i of the block rank src sends to rank dst. */
static int64_t exchanged_value(const perf_bench_t *b, uint64_t src, uint64_t dst, uint64_t i)
{
    return perf_copy_value(b->o->dtype, (src * (uint64_t)perf_size + dst) * b->per + i, b->salt);
}

/* Element i of the output: element i mod per of what rank i / per sent here. */
static int64_t want_exchanged(const perf_bench_t *b, uint64_t i)
{
    return exchanged_value(b, i / b->per, (uint64_t)perf_rank, i % b->per);
}

static void alltoall_setup(perf_bench_t *b)
{
    b->per = b->count / (uint64_t)perf_size;
    b->tensor.shape[0] = (int64_t)b->count;
    for (int j = 0; j < perf_size; j++) {
        b->counts[j] = (int)b->per;
        b->displs[j] = (int)(b->per * (uint64_t)j);
    }
}

static void alltoall_fill(perf_bench_t *b)
{
    for (uint64_t j = 0; j < (uint64_t)perf_size; j++) {
        for (uint64_t i = 0; i < b->per; i++) {
            perf_put_int(b->o->dtype, b->send, j * b->per + i,
                         exchanged_value(b, (uint64_t)perf_rank, j, i));
        }
    }
    perf_poison_recv(b);
}

static long long alltoall_tcoll(perf_bench_t *b, int check)
{
    tc_request_t *req = NULL;
    long long wrong = 0;
    perf_tc_submit_ok(b, tc_alltoall(b->name, &b->tensor, NULL, &req));
    perf_tc_wait(b, req);
    if (check) {
        wrong = perf_check_result(b, perf_tc_output(b, req, b->count), b->count, want_exchanged,
                                  "tcoll");
    }
    tc_request_free(req);
    return wrong;
}

static long long alltoall_mpi(perf_bench_t *b, int check)
{
    MPI_Alltoallv(b->send, b->counts, b->displs, b->mdt, b->recv, b->counts, b->displs, b->mdt,
                  perf_comm);
    return check ? perf_check_result(b, b->recv, b->count, want_exchanged, "MPI") : 0;
}

const perf_sweep_ops_t perf_alltoall_ops = {
    .busbw = PERF_BUSBW_RING,
    .count_multiple_of_n = 1,
    .needs_recv = 1,
    .size_note = "what each rank sends in all (a 1-D tensor of a multiple of n elements), "
                 "count/n elements to each rank; it receives as much",
    .setup = alltoall_setup,
    .fill = alltoall_fill,
    .poison = perf_poison_recv,
    .tcoll_once = alltoall_tcoll,
    .mpi_once = alltoall_mpi,
};
