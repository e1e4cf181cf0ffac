/*
 * transport_mpi.h - the MPI implementation of the transport ops table.
 */
#ifndef TC_TRANSPORT_MPI_H
#define TC_TRANSPORT_MPI_H

#include <mpi.h>

#include "transport/transport.h"
#include "transport/wait.h"

typedef struct {
    MPI_Comm comm;         /* data-plane communicator, owned by the caller */
    tc_wait_policy_t wait; /* back-off, interrupt and lost-peer timeout (wait.h) */
} tc_transport_mpi_t;

/* Fills t to send over comm (which must have MPI_ERRORS_RETURN set). */
void tc__transport_mpi_init(tc_transport_t *t, tc_transport_mpi_t *impl, MPI_Comm comm,
                            uint32_t spin, uint32_t backoff_max_us);

/* Waits for n requests under m's wait policy. Returns MPI_SUCCESS, an MPI error code, or -1 when it gave up (timeout
 * or interrupt) with the reason in why; requests still pending are left as
 * they are (the caller stops using MPI). nrecv: how many of reqs, first, are
 * receives from src (the rest are sends to dst), to name the silent peer. */
int tc__mpi_wait_all(const tc_transport_mpi_t *m, int n, MPI_Request *reqs, int nrecv, int src,
                     int dst, char *why, size_t len);

/* MPI error code -> text, in buf. */
const char *tc__mpi_strerror(int code, char *buf, size_t len);

#endif
