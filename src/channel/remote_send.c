/*
 * remote_send.c - the sends of the channels between nodes (proxy thread):
 * a control message (a header and its small payload) to a peer, the sends
 * in flight and their completion, and what an MPI error code means. Below
 * both the operations (remote.c) and the receiving side (remote_recv.c),
 * which answers with acknowledgements.
 */
#define _GNU_SOURCE
#include "channel/remote_internal.h"
#include "engine/engine_info.h"
#include "util/backoff.h"
#include "util/log.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *mpi_why(int rc, char *buf)
{
    int len = 0;

    if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS) {
        snprintf(buf, MPI_MAX_ERROR_STRING, "MPI error %d", rc);
    }
    return buf;
}

int tc__net_sends_test(tc_chan_net_t *n)
{
    int outcount = 0, i, j;

    if (n->ns == 0) {
        return 0;
    }
    if (MPI_Testsome(n->ns, n->sreq, &outcount, n->sidx, MPI_STATUSES_IGNORE) != MPI_SUCCESS ||
        outcount == MPI_UNDEFINED) {
        return -1;
    }
    if (outcount == 0) {
        return 0;
    }
    /* Testsome set the completed ones to MPI_REQUEST_NULL: drop them. */
    for (i = 0, j = 0; i < n->ns; i++) {
        if (n->sreq[i] == MPI_REQUEST_NULL) {
            free(n->sbuf[i]);
            n->out_to[n->speer[i]]--;
            continue;
        }
        n->sreq[j] = n->sreq[i];
        n->sbuf[j] = n->sbuf[i];
        n->speer[j] = n->speer[i];
        j++;
    }
    n->ns = j;
    return outcount;
}

/* Keeps req (buf freed at completion). 0, or an MPI error code. */
int tc__net_sends_add(tc_chan_net_t *n, MPI_Request req, void *buf, int peer)
{
    if (n->ns == n->cap) {
        int cap = n->cap > 0 ? n->cap * 2 : 64;
        MPI_Request *sreq = realloc(n->sreq, (size_t)cap * sizeof(*sreq));
        void **sbuf = sreq != NULL ? realloc(n->sbuf, (size_t)cap * sizeof(*sbuf)) : NULL;
        int *speer = sbuf != NULL ? realloc(n->speer, (size_t)cap * sizeof(*speer)) : NULL;
        int *sidx = speer != NULL ? realloc(n->sidx, (size_t)cap * sizeof(*sidx)) : NULL;

        if (sreq != NULL) {
            n->sreq = sreq;
        }
        if (sbuf != NULL) {
            n->sbuf = sbuf;
        }
        if (speer != NULL) {
            n->speer = speer;
        }
        if (sidx == NULL) {
            /* Out of memory: wait for this one here. */
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            free(buf);
            return 0;
        }
        n->sidx = sidx;
        n->cap = cap;
    }
    n->sreq[n->ns] = req;
    n->sbuf[n->ns] = buf;
    n->speer[n->ns] = peer;
    n->ns++;
    n->out_to[peer]++;
    return 0;
}

/* Sends hdr plus payload (len bytes, may be 0) as one CTRL message. 0 or an
 * MPI error code (ENOMEM as -1). */
int tc__net_send_ctrl(tc_chan_net_t *n, int peer, const net_hdr_t *hdr, const void *payload,
                      size_t len)
{
    char *buf = malloc(sizeof(*hdr) + len);
    MPI_Request req;
    int rc;

    if (buf == NULL) {
        return -1;
    }
    memcpy(buf, hdr, sizeof(*hdr));
    if (len > 0) {
        memcpy(buf + sizeof(*hdr), payload, len);
    }
    rc = MPI_Isend(buf, (int)(sizeof(*hdr) + len), MPI_BYTE, peer, n->tag_ctrl, n->comm, &req);
    if (rc != MPI_SUCCESS) {
        free(buf);
        return rc;
    }
    return tc__net_sends_add(n, req, buf, peer);
}

void tc__net_describe(int rc, char *buf, size_t len)
{
    char why[MPI_MAX_ERROR_STRING];

    if (rc == -1) {
        snprintf(buf, len, "out of memory");
    } else {
        snprintf(buf, len, "%s", mpi_why(rc, why));
    }
}
