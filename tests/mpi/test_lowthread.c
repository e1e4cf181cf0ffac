/*
 * test_lowthread.c - the application initialized MPI with a thread level
 * below MPI_THREAD_MULTIPLE: tc_init must refuse with TC_ERR_STATE and a
 * message that names MPI_THREAD_MULTIPLE, and leave MPI alone (still
 * initialized, still usable, finalized by the application).
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include "mpi_common.h"

/* tc_init refuses the application's MPI below MPI_THREAD_MULTIPLE, says why,
 * and leaves MPI initialized and usable. */
TC_CASE(tc_init_refuses_low_thread_level)
{
    int provided = -1;
    MPI_Query_thread(&provided);
    CHECK_STATUS(tc_init(), TC_ERR_STATE);
    CHECK_STR_CONTAINS(tc_last_error(), "MPI_THREAD_MULTIPLE");

    int fin = 1;
    MPI_Finalized(&fin);
    CHECK_MSG(fin == 0, "a failed tc_init finalized the application's MPI");
    int in = 1, sum = 0;
    MPI_Allreduce(&in, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK_EQ(sum, tt_size);
    tt_say("test_lowthread: tc_init refused MPI thread level %d (%d ranks)\n", provided, tt_size);
}

/* The skeleton initializes MPI with MPI_THREAD_FUNNELED and never starts
 * tcoll: the case does, and it must fail. */
int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv,
                       &(tt_program_t){.app_mpi = 1, .app_mpi_level = MPI_THREAD_FUNNELED});
}
