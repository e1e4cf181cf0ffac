/*
 * transport_mpi.h - the MPI implementation of the transport ops table
 * (transport.h), over a communicator it makes and frees itself.
 */
#ifndef TC_TRANSPORT_MPI_H
#define TC_TRANSPORT_MPI_H

#include <mpi.h>

#include "transport/transport.h"

typedef struct {
    MPI_Comm comm; /* the data communicator: the transport's own, freed by close */
} tc_transport_mpi_t;

/*
 * Opens t over a communicator of its own, made from parent, with
 * MPI_ERRORS_RETURN set on it: a duplicate of parent (ranks NULL: the group
 * is parent's), or the communicator of ranks[0..n-1] (ranks of parent,
 * ascending; this rank among them) made by MPI_Comm_create_group with tag.
 * Collective: every rank of parent (a duplicate), or every listed rank, opens
 * it at the same point. Reaches every rank of its group. The wait policy backs
 * off with spin polls then sleeps up to backoff_max_us and has no hooks (the
 * owner sets t->wait's). impl must live until t is closed; close
 * (tc__transport_close) frees the communicator, a collective call, so it is
 * skipped after a failure (the engine leaves MPI as it is then). TC_OK, or
 * TC_ERR_TRANSPORT with the reason in t->err and t not open.
 */
tc_status_t tc__transport_mpi_open(tc_transport_t *t, tc_transport_mpi_t *impl, MPI_Comm parent,
                                   const int *ranks, int n, int tag, uint32_t spin,
                                   uint32_t backoff_max_us);

/* MPI error code -> text, in buf. */
const char *tc__mpi_strerror(int code, char *buf, size_t len);

#endif
