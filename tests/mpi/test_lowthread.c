/*
 * test_lowthread.c - the application initialized MPI with a thread level
 * below MPI_THREAD_MULTIPLE: tc_init must refuse with TC_ERR_STATE and a
 * message that names MPI_THREAD_MULTIPLE, and leave MPI alone (still
 * initialized, still usable, finalized by the application).
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include "mpi_common.h"

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided >= MPI_THREAD_MULTIPLE) {
        if (rank == 0) {
            printf("test_lowthread: MPI gave MPI_THREAD_MULTIPLE for a FUNNELED request; "
                   "nothing to test\n");
        }
        MPI_Finalize();
        return 0;
    }

    CHECK_STATUS(tc_init(), TC_ERR_STATE);
    CHECK_STR_CONTAINS(tc_last_error(), "MPI_THREAD_MULTIPLE");

    int fin = 1;
    MPI_Finalized(&fin);
    CHECK_MSG(fin == 0, "a failed tc_init finalized the application's MPI");
    int in = 1, sum = 0;
    MPI_Allreduce(&in, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK_EQ(sum, size);
    if (rank == 0) {
        printf("test_lowthread: tc_init refused MPI thread level %d (%d ranks)\n", provided, size);
    }
    MPI_Finalize();
    return 0;
}
