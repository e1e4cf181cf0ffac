/*
 * transport_mpi.h - the MPI implementation of the transport ops table.
 */
#ifndef TC_TRANSPORT_MPI_H
#define TC_TRANSPORT_MPI_H

#include <mpi.h>

#include "transport/transport.h"
#include "util/backoff.h"

typedef struct {
    MPI_Comm comm;      /* data-plane communicator, owned by the caller */
    tc_backoff_t proto; /* back-off settings for waits */
} tc_transport_mpi_t;

/* Fills t to send over comm (which must have MPI_ERRORS_RETURN set). */
void tc__transport_mpi_init(tc_transport_t *t, tc_transport_mpi_t *impl, MPI_Comm comm,
                            uint32_t spin, uint32_t backoff_max_us);

/* Waits for n MPI requests, polling with back-off. MPI_SUCCESS or an MPI error code. */
int tc__mpi_wait_all(int n, MPI_Request *reqs, const tc_backoff_t *proto);

/* MPI error code -> text, in buf. */
const char *tc__mpi_strerror(int code, char *buf, size_t len);

#endif
