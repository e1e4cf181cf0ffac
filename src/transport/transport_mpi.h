/*
 * transport_mpi.h - the MPI implementation of the transport ops table
 * (transport.h).
 */
#ifndef TC_TRANSPORT_MPI_H
#define TC_TRANSPORT_MPI_H

#include <mpi.h>

#include "transport/transport.h"

typedef struct {
    MPI_Comm comm; /* data-plane communicator, owned by the caller */
} tc_transport_mpi_t;

/* Fills t to send over comm (which must have MPI_ERRORS_RETURN set); it
 * reaches every rank of comm. The wait policy backs off with spin polls
 * then sleeps up to backoff_max_us and has no hooks (the owner sets
 * t->wait's). No close: comm stays the caller's. */
void tc__transport_mpi_init(tc_transport_t *t, tc_transport_mpi_t *impl, MPI_Comm comm,
                            uint32_t spin, uint32_t backoff_max_us);

/* MPI error code -> text, in buf. */
const char *tc__mpi_strerror(int code, char *buf, size_t len);

#endif
