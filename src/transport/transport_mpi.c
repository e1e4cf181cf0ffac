/*
 * transport_mpi.c - moves bytes between ranks with MPI point-to-point calls.
 *
 * Only the engine thread calls into this file. Transfers larger than 1 GiB are
 * split into pieces so MPI's int counts never overflow; all pieces are posted
 * at once and completed together with MPI_Testall under our own back-off, so a
 * rank waiting for a slow peer yields its core instead of busy-polling inside
 * a blocking MPI call (the wait policy is wait.h's, shared with every
 * transport). Never blocks without backing off.
 */
#define _GNU_SOURCE
#include "transport/transport_mpi.h"

#include <stdio.h>
#include <stdlib.h>

#define PIECE_BYTES ((size_t)1 << 30)
#define DATA_TAG 17
#define MAX_STACK_REQS 16

const char *tc__mpi_strerror(int code, char *buf, size_t len)
{
    char text[MPI_MAX_ERROR_STRING];
    int n = 0;

    if (MPI_Error_string(code, text, &n) != MPI_SUCCESS) {
        snprintf(buf, len, "MPI error %d", code);
    } else {
        snprintf(buf, len, "%.*s", n, text);
    }
    return buf;
}

int tc__mpi_wait_all(const tc_transport_mpi_t *m, int n, MPI_Request *reqs, int nrecv, int src,
                     int dst, char *why, size_t len)
{
    tc_waiter_t w;
    int done = 0, i, r;

    tc__waiter_start(&w, &m->wait);
    for (;;) {
        int rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        if (done) {
            return MPI_SUCCESS;
        }
        if ((r = tc__waiter_idle(&w, why, len)) == 0) {
            continue;
        }
        if (r < 0) {
            return -1;
        }
        /* Name the side still waiting: a receive waits on src, a send on dst. */
        for (i = 0; i < n; i++) {
            int flag = 1;
            if (reqs[i] != MPI_REQUEST_NULL) {
                MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE);
            }
            if (!flag) {
                break;
            }
        }
        if (tc__waiter_timeout(&w, i < nrecv ? src : dst, why, len) < 0) {
            return -1;
        }
    }
}

static size_t npieces(size_t bytes)
{
    return (bytes + PIECE_BYTES - 1) / PIECE_BYTES;
}

static tc_status_t mpi_sendrecv(tc_transport_t *t, const void *sbuf, size_t sbytes, int dst,
                                void *rbuf, size_t rbytes, int src)
{
    tc_transport_mpi_t *m = t->impl;
    MPI_Request stack_reqs[MAX_STACK_REQS];
    MPI_Request *reqs = stack_reqs;
    size_t ns = dst >= 0 ? npieces(sbytes) : 0;
    size_t nr = src >= 0 ? npieces(rbytes) : 0;
    size_t i, n = 0;
    int rc = MPI_SUCCESS;
    char why[MPI_MAX_ERROR_STRING];

    if (ns + nr == 0) {
        return TC_OK;
    }
    if (ns + nr > MAX_STACK_REQS) {
        reqs = malloc((ns + nr) * sizeof(*reqs));
        if (reqs == NULL) {
            snprintf(t->err, sizeof(t->err), "out of memory for %zu MPI requests", ns + nr);
            return TC_ERR_NOMEM;
        }
    }
    /* Sends first: when the partner's data is already waiting, posting the
     * receive may copy it at once (a single-copy rendezvous), and this
     * rank's own data would leave only after that copy; posted first, it
     * is copied by the partner at the same time. The receives still take
     * reqs[0..nr-1], as tc__mpi_wait_all expects. */
    for (i = 0; i < ns && rc == MPI_SUCCESS; i++) {
        size_t off = i * PIECE_BYTES;
        size_t len = sbytes - off < PIECE_BYTES ? sbytes - off : PIECE_BYTES;
        rc = MPI_Isend((const char *)sbuf + off, (int)len, MPI_BYTE, dst, DATA_TAG, m->comm,
                       &reqs[nr + i]);
    }
    for (i = 0; i < nr && rc == MPI_SUCCESS; i++) {
        size_t off = i * PIECE_BYTES;
        size_t len = rbytes - off < PIECE_BYTES ? rbytes - off : PIECE_BYTES;
        rc = MPI_Irecv((char *)rbuf + off, (int)len, MPI_BYTE, src, DATA_TAG, m->comm, &reqs[i]);
    }
    n = nr + ns;
    if (rc == MPI_SUCCESS) {
        rc = tc__mpi_wait_all(m, (int)n, reqs, (int)nr, src, dst, t->err, sizeof(t->err));
    }
    if (reqs != stack_reqs) {
        free(reqs);
    }
    if (rc == -1) {
        return TC_ERR_TRANSPORT; /* t->err says why */
    }
    if (rc != MPI_SUCCESS) {
        snprintf(t->err, sizeof(t->err), "MPI exchange with ranks %d/%d failed: %s", dst, src,
                 tc__mpi_strerror(rc, why, sizeof(why)));
        return TC_ERR_TRANSPORT;
    }
    return TC_OK;
}

void tc__transport_mpi_init(tc_transport_t *t, tc_transport_mpi_t *impl, MPI_Comm comm,
                            uint32_t spin, uint32_t backoff_max_us)
{
    impl->comm = comm;
    tc__wait_policy_init(&impl->wait, spin, backoff_max_us);
    MPI_Comm_rank(comm, &t->rank);
    MPI_Comm_size(comm, &t->size);
    t->sendrecv = mpi_sendrecv;
    t->impl = impl;
    t->err[0] = '\0';
}
