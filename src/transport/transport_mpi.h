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
    /* A wait that sees no transfer complete for timeout_ns gives up and names
     * the ranks it was waiting for (a lost peer). 0: never. */
    uint64_t timeout_ns;
    /* Called about every millisecond of waiting; a nonzero return abandons
     * the transfer with TC_ERR_TRANSPORT and the text it wrote into why (the
     * engine looks for another rank's abort here). NULL: none. */
    int (*interrupt)(void *arg, char *why, size_t len);
    /* Asked, at a timeout, whether the silent peer still answers: 1 yes (the
     * wait goes on), 0 no (it is lost), -1 the wait must end with why.
     * NULL: a timeout always means lost. */
    int (*peer_alive)(void *arg, int peer, char *why, size_t len);
    void *interrupt_arg; /* for both */
} tc_transport_mpi_t;

/* Fills t to send over comm (which must have MPI_ERRORS_RETURN set). */
void tc__transport_mpi_init(tc_transport_t *t, tc_transport_mpi_t *impl, MPI_Comm comm,
                            uint32_t spin, uint32_t backoff_max_us);

/* Waits for n MPI requests, polling with back-off. MPI_SUCCESS or an MPI error code. */
/* Waits for n requests under the back-off, the timeout and the interrupt of
 * m. Returns MPI_SUCCESS, an MPI error code, or -1 when it gave up (timeout
 * or interrupt) with the reason in why; requests still pending are left as
 * they are (the caller stops using MPI). nrecv: how many of reqs, first, are
 * receives from src (the rest are sends to dst), to name the silent peer. */
int tc__mpi_wait_all(const tc_transport_mpi_t *m, int n, MPI_Request *reqs, int nrecv, int src,
                     int dst, char *why, size_t len);

/* MPI error code -> text, in buf. */
const char *tc__mpi_strerror(int code, char *buf, size_t len);

#endif
