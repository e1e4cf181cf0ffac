/*
 * agree.c - tc_init's check that the knobs which must agree across ranks do.
 *
 * A knob such as TCOLL_RING_CHUNK_KB decides the size of every ring transfer:
 * two ranks with different values post sends and receives that do not match,
 * and the job hangs or reads wrong data. So, once the communicators exist,
 * every rank contributes its must-agree values (a fixed-size int array, see
 * util/config.h) to one MPI_Allgather, and every rank judges the same table
 * with the same pure function: every rank reaches the same verdict and the
 * same message, and none waits for another.
 *
 *   rank r: vals[r] = its values --MPI_Allgather(comm)--> all[0..size) on every rank
 *   every rank: tc__config_agree_check(all) -> TC_OK, or TC_ERR_ARG + message
 *
 * Must never return without taking part in the exchange once it has begun
 * on another rank: a rank that cannot allocate the table aborts the job
 * rather than leave the others waiting for it.
 */
#define _GNU_SOURCE
#include "engine/agree.h"

#include <stdio.h>
#include <stdlib.h>

#include "transport/transport_mpi.h"
#include "util/log.h"

tc_status_t tc__knobs_agree(MPI_Comm comm, const tc_config_t *cfg, char *msg, size_t len)
{
    int mine[TC_CONFIG_AGREE_MAX], *all, rank = 0, size = 1, rc, ndiff;
    char why[MPI_MAX_ERROR_STRING];

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    tc__config_agree_values(cfg, mine);
    all = malloc((size_t)size * sizeof(mine));
    if (all == NULL) {
        /* The other ranks are already in the exchange, or about to be. */
        TC_ERROR("engine", "out of memory for %d ranks' knob values; aborting the job", size);
        MPI_Abort(comm, 1);
        return TC_ERR_NOMEM;
    }
    rc = MPI_Allgather(mine, TC_CONFIG_AGREE_MAX, MPI_INT, all, TC_CONFIG_AGREE_MAX, MPI_INT, comm);
    if (rc != MPI_SUCCESS) {
        free(all);
        snprintf(msg, len, "cannot compare the knobs that must agree across ranks: %s",
                 tc__mpi_strerror(rc, why, sizeof(why)));
        TC_ERROR("engine", "%s", msg);
        return TC_ERR_TRANSPORT;
    }
    ndiff = tc__config_agree_check(all, size, msg, len);
    free(all);
    if (ndiff == 0) {
        return TC_OK;
    }
    if (rank == 0) { /* one line for the job, not one per rank */
        TC_ERROR("engine", "%s", msg);
    }
    return TC_ERR_ARG;
}
