/*
 * mpi_cuda.c - whether the MPI takes device memory (a CUDA-aware MPI), as
 * the MPI itself says: Open MPI's MPIX_Query_cuda_support (mpi-ext.h),
 * MPICH's MPIX_GPU_query_support; an MPI that has neither is taken not to.
 * The job uses it (the device records of device_mpi.c) only where every
 * rank's MPI says so and TCOLL_MPI_CUDA is on, decided once at start-up by
 * every rank alike, since the selector must pick the same record everywhere.
 */
#define _GNU_SOURCE
#include <stdio.h>

#include <mpi.h>
#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* Open MPI's extensions: MPIX_CUDA_AWARE_SUPPORT */
#endif
#endif

#include "exec/exec.h"
#include "util/log.h"

int tc__mpi_cuda_support(char *why, size_t len)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    if (MPIX_Query_cuda_support()) {
        snprintf(why, len, "yes (Open MPI, MPIX_Query_cuda_support)");
        return 1;
    }
    snprintf(why, len, "no (Open MPI built with CUDA, but not at run time)");
    return 0;
#elif defined(MPIX_CUDA_AWARE_SUPPORT)
    snprintf(why, len, "no (this Open MPI was built without CUDA support)");
    return 0;
#elif defined(MPIX_GPU_SUPPORT_CUDA)
    int yes = 0;

    if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &yes) != MPI_SUCCESS) {
        snprintf(why, len, "no (MPIX_GPU_query_support failed)");
        return 0;
    }
    snprintf(why, len, "%s",
             yes ? "yes (MPICH, MPIX_GPU_query_support)" : "no (this MPICH does not support CUDA)");
    return yes != 0;
#else
    snprintf(why, len, "no (this MPI does not say whether it takes device memory)");
    return 0;
#endif
}

void tc__mpi_cuda_setup(tc_exec_t *e)
{
    char why[128];
    int mine = tc__mpi_cuda_support(why, sizeof(why)), all = 0;

    e->mpi.cuda_aware = 0;
    if (!e->cfg->mpi_cuda) {
        return; /* the knob agrees on every rank (KNOB_AGREE): nobody asks */
    }
    if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, e->mpi.ctrl) != MPI_SUCCESS) {
        all = 0; /* the job's control path is broken: it ends at the next collective */
    }
    e->mpi.cuda_aware = all != 0;
    if (e->mpi.cuda_aware) {
        TC_INFO("cuda", "the MPI is CUDA-aware on every rank: device tensors may go over MPI");
    } else {
        TC_DEBUG("cuda", "device tensors are not given to MPI: this rank's MPI: %s", why);
    }
}
