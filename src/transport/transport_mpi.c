/*
 * transport_mpi.c - moves bytes between ranks with MPI point-to-point calls,
 * over a communicator the transport makes at open and frees at close.
 *
 * Only the engine thread calls into this file. A transfer is posted as
 * MPI_Isend or MPI_Irecv pieces and tested with MPI_Testall; it never waits
 * inside MPI: the blocking exchange (transport.c) polls the test under the
 * shared wait policy (wait.h), so a rank waiting for a slow peer yields its
 * core instead of busy-polling inside a blocking MPI call. Transfers larger
 * than 1 GiB are split into pieces so MPI's int counts never overflow; all
 * pieces are posted at once and complete together. The pieces' requests sit
 * in the transfer's inline state up to INLINE_REQS of them (4 GiB), and on
 * the heap beyond.
 */
#define _GNU_SOURCE
#include "transport/transport_mpi.h"

#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>

#define PIECE_BYTES ((size_t)1 << 30)
#define DATA_TAG 17
#define INLINE_REQS 4

/* A transfer's state (tc_xfer_t.state) between post and done. */
typedef struct {
    int n;             /* pieces */
    MPI_Request *heap; /* [n] when n > INLINE_REQS, else NULL */
    MPI_Request inl[INLINE_REQS];
} mpi_xfer_t;

_Static_assert(sizeof(mpi_xfer_t) <= TC_XFER_STATE_BYTES,
               "an MPI transfer's state must fit in tc_xfer_t");
_Static_assert(alignof(mpi_xfer_t) <= alignof(max_align_t),
               "an MPI transfer's state must be aligned in tc_xfer_t");

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

static mpi_xfer_t *xfer_state(tc_xfer_t *x)
{
    return (mpi_xfer_t *)(void *)x->state.bytes;
}

static MPI_Request *xfer_reqs(mpi_xfer_t *s)
{
    return s->heap != NULL ? s->heap : s->inl;
}

/* Writes why x failed with MPI error rc into t->err. */
static tc_status_t xfer_failed(tc_transport_t *t, const tc_xfer_t *x, int rc)
{
    char why[MPI_MAX_ERROR_STRING];

    snprintf(t->err, sizeof(t->err), "MPI %s rank %d failed: %s",
             x->dir == TC_XFER_SEND ? "send to" : "receive from", x->peer,
             tc__mpi_strerror(rc, why, sizeof(why)));
    return TC_ERR_TRANSPORT;
}

static int mpi_reaches(tc_transport_t *t, int peer)
{
    return peer >= 0 && peer < t->size;
}

static tc_status_t mpi_post(tc_transport_t *t, tc_xfer_t *x)
{
    tc_transport_mpi_t *m = t->impl;
    mpi_xfer_t *s = xfer_state(x);
    size_t n = (x->bytes + PIECE_BYTES - 1) / PIECE_BYTES, i;
    MPI_Request *reqs;
    int rc = MPI_SUCCESS;

    if (!mpi_reaches(t, x->peer)) {
        snprintf(t->err, sizeof(t->err), "MPI transport: no rank %d in a group of %d", x->peer,
                 t->size);
        return TC_ERR_TRANSPORT;
    }
    s->n = (int)n;
    s->heap = NULL;
    if (n > INLINE_REQS && (s->heap = malloc(n * sizeof(*s->heap))) == NULL) {
        snprintf(t->err, sizeof(t->err), "out of memory for %zu MPI requests", n);
        return TC_ERR_NOMEM;
    }
    reqs = xfer_reqs(s);
    for (i = 0; i < n && rc == MPI_SUCCESS; i++) {
        size_t off = i * PIECE_BYTES;
        int len = (int)(x->bytes - off < PIECE_BYTES ? x->bytes - off : PIECE_BYTES);
        if (x->dir == TC_XFER_SEND) {
            rc = MPI_Isend((const char *)x->buf + off, len, MPI_BYTE, x->peer, DATA_TAG, m->comm,
                           &reqs[i]);
        } else {
            rc = MPI_Irecv((char *)x->buf + off, len, MPI_BYTE, x->peer, DATA_TAG, m->comm,
                           &reqs[i]);
        }
    }
    if (rc != MPI_SUCCESS) {
        /* The pieces posted are left to MPI, as after any MPI error: the
         * engine stops using MPI. */
        free(s->heap);
        return xfer_failed(t, x, rc);
    }
    return TC_OK;
}

static tc_status_t mpi_test(tc_transport_t *t, tc_xfer_t *const *xs, int n)
{
    int i, rc, flag;

    for (i = 0; i < n; i++) {
        tc_xfer_t *x = xs[i];
        mpi_xfer_t *s;
        if (x->done) {
            continue;
        }
        s = xfer_state(x);
        flag = 0;
        rc = MPI_Testall(s->n, xfer_reqs(s), &flag, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            return xfer_failed(t, x, rc);
        }
        if (flag) {
            free(s->heap);
            s->heap = NULL;
            x->done = 1;
        }
    }
    return TC_OK;
}

/* Requests still pending stay with MPI: after a failure MPI is not used
 * again, and cancelling a send to a dead peer could itself hang. */
static void mpi_abandon(tc_transport_t *t, tc_xfer_t *x)
{
    mpi_xfer_t *s = xfer_state(x);

    (void)t;
    free(s->heap);
    s->heap = NULL;
}

static void mpi_close(tc_transport_t *t)
{
    tc_transport_mpi_t *m = t->impl;

    if (m->comm != MPI_COMM_NULL) {
        MPI_Comm_free(&m->comm);
    }
}

tc_status_t tc__transport_mpi_open(tc_transport_t *t, tc_transport_mpi_t *impl, MPI_Comm parent,
                                   const int *ranks, int n, int tag, uint32_t spin,
                                   uint32_t backoff_max_us)
{
    MPI_Group all = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
    char why[MPI_MAX_ERROR_STRING];
    const char *what;
    int rc, rank = -1, size = 0;

    tc__transport_init(t, -1, 0, spin, backoff_max_us);
    impl->comm = MPI_COMM_NULL;
    if (ranks == NULL) {
        what = "MPI_Comm_dup";
        rc = MPI_Comm_dup(parent, &impl->comm);
    } else {
        what = "MPI_Comm_group";
        rc = MPI_Comm_group(parent, &all);
        if (rc == MPI_SUCCESS) {
            what = "MPI_Group_incl";
            rc = MPI_Group_incl(all, n, ranks, &group);
        }
        if (rc == MPI_SUCCESS) {
            what = "MPI_Comm_create_group";
            rc = MPI_Comm_create_group(parent, group, tag, &impl->comm);
        }
        if (group != MPI_GROUP_NULL) {
            MPI_Group_free(&group);
        }
        if (all != MPI_GROUP_NULL) {
            MPI_Group_free(&all);
        }
    }
    if (rc != MPI_SUCCESS) {
        snprintf(t->err, sizeof(t->err), "%s failed: %s", what,
                 tc__mpi_strerror(rc, why, sizeof(why)));
        return TC_ERR_TRANSPORT;
    }
    MPI_Comm_set_errhandler(impl->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(impl->comm, &rank);
    MPI_Comm_size(impl->comm, &size);
    t->rank = rank;
    t->size = size;
    t->reaches = mpi_reaches;
    t->post = mpi_post;
    t->test = mpi_test;
    t->abandon = mpi_abandon;
    t->close = mpi_close;
    t->impl = impl;
    return TC_OK;
}
