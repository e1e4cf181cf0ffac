/*
 * test_preinit.c - the application initializes MPI itself with
 * MPI_THREAD_MULTIPLE before tc_init. tcoll must work on its own
 * communicators (the application's MPI calls on MPI_COMM_WORLD, made while
 * tcoll runs, never match tcoll's messages), agree with MPI on rank and size,
 * and leave MPI to the application: after tc_shutdown MPI is not finalized
 * and MPI_COMM_WORLD still works until the application calls MPI_Finalize.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include "mpi_common.h"

/* tcoll agrees with MPI on rank and size. */
TC_CASE(rank_and_size_match_mpi)
{
    int mpi_rank, mpi_size;
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
    CHECK_EQ(tc_rank(), mpi_rank);
    CHECK_EQ(tc_size(), mpi_size);
    CHECK(tc_local_size() >= 1 && tc_local_size() <= mpi_size);
}

/* Allreduces with application point-to-point and collectives in between. */
TC_CASE(allreduce_beside_application_mpi)
{
    const int mpi_rank = tt_rank, mpi_size = tt_size;
    for (int it = 0; it < 5; it++) {
        int64_t v[100], o[100];
        for (int i = 0; i < 100; i++) {
            v[i] = (int64_t)(mpi_rank + 1) * (i + it);
        }
        tc_tensor_t t = {v, TC_INT64, 2, {10, 10}};
        tc_request_t *req = NULL;
        CHECK_OK(tc_allreduce("pre/ar", &t, o, TC_SUM, &req));

        /* a ring of sends on MPI_COMM_WORLD while the allreduce may be running */
        int64_t token = mpi_rank * 1000 + it, got = -1;
        MPI_Sendrecv(&token, 1, MPI_INT64_T, (mpi_rank + 1) % mpi_size, it, &got, 1, MPI_INT64_T,
                     (mpi_rank + mpi_size - 1) % mpi_size, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK_EQ(got, ((mpi_rank + mpi_size - 1) % mpi_size) * 1000 + it);
        MPI_Barrier(MPI_COMM_WORLD);

        tc_status_t st = tc_wait(req);
        CHECK_MSG(st == TC_OK, "%s: %s", tc_status_string(st), tc_request_error(req));
        tc_request_free(req);
        for (int i = 0; i < 100; i++) {
            CHECK_EQ(o[i], (int64_t)mpi_size * (mpi_size + 1) / 2 * (i + it));
        }
    }
}

/* Broadcast and allgather too. */
TC_CASE(broadcast_and_allgather)
{
    const int mpi_rank = tt_rank, mpi_size = tt_size;
    double b[3] = {0, 0, 0};
    if (mpi_rank == mpi_size - 1) {
        b[0] = 1.5;
        b[1] = -2;
        b[2] = 1e300;
    }
    tc_tensor_t t = {b, TC_FLOAT64, 1, {3}};
    tc_request_t *req = NULL;
    CHECK_OK(tc_broadcast("pre/bc", &t, mpi_size - 1, &req));
    CHECK_OK(tc_wait(req));
    tc_request_free(req);
    CHECK(b[0] == 1.5 && b[1] == -2 && b[2] == 1e300);

    int32_t mine[2] = {mpi_rank, -mpi_rank};
    tc_tensor_t g = {mine, TC_INT32, 1, {2}};
    CHECK_OK(tc_allgather("pre/ag", &g, &req));
    CHECK_OK(tc_wait(req));
    tc_tensor_t out;
    CHECK_OK(tc_request_output(req, &out));
    CHECK_EQ(out.shape[0], 2 * mpi_size);
    for (int r = 0; r < mpi_size; r++) {
        CHECK_EQ(((int32_t *)out.data)[2 * r], r);
        CHECK_EQ(((int32_t *)out.data)[2 * r + 1], -r);
    }
    tc_request_free(req);
}

/* After the skeleton's tc_shutdown (which came after an MPI_Allreduce, so
 * nobody shut down while others still worked, and which must have left MPI
 * initialized): MPI still belongs to the application. */
static void mpi_still_usable(void)
{
    CHECK_STATUS(tc_shutdown(), TC_ERR_STATE);
    int fin = 1;
    MPI_Finalized(&fin);
    CHECK_MSG(fin == 0, "tcoll finalized MPI that the application initialized");
    MPI_Barrier(MPI_COMM_WORLD);
    long in = tt_rank + 1, sum = 0;
    MPI_Allreduce(&in, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    CHECK_EQ(sum, (long)tt_size * (tt_size + 1) / 2);
    tt_say("test_preinit: tcoll ran on the application's MPI and left it usable (%d ranks)\n",
           tt_size);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv,
                       &(tt_program_t){.app_mpi = 1,
                                       .app_mpi_level = MPI_THREAD_MULTIPLE,
                                       .after_shutdown = mpi_still_usable});
}
