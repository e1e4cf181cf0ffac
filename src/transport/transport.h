/*
 * transport.h - the ops table the collective algorithms send data through.
 *
 * A transport moves bytes between ranks of one group; it knows nothing about
 * tensors, names or dtypes. Implementations: MPI (transport_mpi.c); a
 * shared-memory one within a node is planned. Every call blocks until its
 * transfers are complete, waiting with the back-off policy of util/backoff.h,
 * and returns TC_OK or TC_ERR_TRANSPORT with a reason in t->err.
 */
#ifndef TC_TRANSPORT_TRANSPORT_H
#define TC_TRANSPORT_TRANSPORT_H

#include <stddef.h>

#include "tcoll.h"

typedef struct tc_transport tc_transport_t;

struct tc_transport {
    int rank;
    int size;
    /* Sends sbytes from sbuf to rank dst while receiving rbytes into rbuf from
     * rank src. dst or src may be -1 to skip that side; zero byte counts skip too
     * (both ends compute the same sizes, so skipping is symmetric). */
    tc_status_t (*sendrecv)(tc_transport_t *t, const void *sbuf, size_t sbytes, int dst,
                            void *rbuf, size_t rbytes, int src);
    void *impl;
    char err[256]; /* reason for the last TC_ERR_TRANSPORT */
};

static inline tc_status_t tc__send(tc_transport_t *t, const void *buf, size_t bytes, int dst)
{
    return t->sendrecv(t, buf, bytes, dst, NULL, 0, -1);
}

static inline tc_status_t tc__recv(tc_transport_t *t, void *buf, size_t bytes, int src)
{
    return t->sendrecv(t, NULL, 0, -1, buf, bytes, src);
}

#endif
