/*
 * ctrl.c - control messages: the engine thread's sends and receives on the
 * control communicator.
 *
 * A message is encoded once and its buffer shared by every send of it
 * (reference-counted); sends are nonblocking and completed by
 * tc__ctrl_progress, which the loop calls every step. Receives probe first
 * and never block. Any MPI error, a malformed message or running out of
 * memory stops the engine (tc__engine_fail): nothing here retries. Must
 * never free a buffer MPI may still read: after a failure the buffers of
 * sends that never completed are kept until the process ends
 * (tc__ctrl_abandon).
 *
 * Buffers are reused (tc__wire_buf_reset says why): a finished send's buffer
 * (up to ENG_CTRL_SPARES of them) and the receive buffer are kept for the
 * next messages.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "util/log.h"

/* Control-message buffers of sends that never completed when MPI was left
 * unfinalized after a failure (see tc__ctrl_abandon). */
static eng_ctrl_buf_t **abandoned;
static size_t nabandoned;

/* Drops a reference; the last one keeps the buffer for reuse or frees it. */
static void ctrl_buf_release(engine_t *e, eng_ctrl_buf_t *cb)
{
    if (--cb->refs > 0) {
        return;
    }
    if (e->ctrl.nspare < ENG_CTRL_SPARES) {
        tc__wire_buf_reset(&cb->buf);
        e->ctrl.spare[e->ctrl.nspare++] = cb;
        return;
    }
    tc__wire_buf_free(&cb->buf);
    free(cb);
}

/* An empty buffer holding one reference: a kept one, or a new one (NULL when
 * out of memory). */
static eng_ctrl_buf_t *ctrl_buf_get(engine_t *e)
{
    eng_ctrl_buf_t *cb =
        e->ctrl.nspare > 0 ? e->ctrl.spare[--e->ctrl.nspare] : calloc(1, sizeof(*cb));

    if (cb != NULL) {
        cb->refs = 1;
    }
    return cb;
}

/* Posts a send of cb's bytes to each destination: dst[0..ndst-1], or, with
 * dst NULL, the ranks first..first+ndst-1 but skip (-1: none). Takes cb
 * (each posted send holds a reference; the caller's is released here). */
static void post(engine_t *e, eng_ctrl_buf_t *cb, const int *dst, int first, int ndst, int skip,
                 int tag)
{
    char why[MPI_MAX_ERROR_STRING];
    int i;

    if (e->ctrl.n + (size_t)ndst > e->ctrl.cap) {
        size_t cap = (e->ctrl.cap + (size_t)ndst) * 2;
        eng_ctrl_send_t *s = realloc(e->ctrl.v, cap * sizeof(*s));
        if (s == NULL) {
            tc__engine_fail(e, TC_ERR_NOMEM, "out of memory for control sends");
            ctrl_buf_release(e, cb);
            return;
        }
        e->ctrl.v = s;
        e->ctrl.cap = cap;
    }
    for (i = 0; i < ndst; i++) {
        eng_ctrl_send_t *s = &e->ctrl.v[e->ctrl.n];
        int to = dst != NULL ? dst[i] : first + i, rc;
        if (to == skip) {
            continue;
        }
        rc = MPI_Isend(cb->buf.data, (int)cb->buf.len, MPI_BYTE, to, tag, e->mpi.ctrl, &s->req);
        if (rc != MPI_SUCCESS) {
            tc__engine_fail(e, TC_ERR_TRANSPORT,
                            "MPI_Isend of a control message to rank %d failed: %s", to,
                            tc__mpi_strerror(rc, why, sizeof(why)));
            break;
        }
        s->cb = cb;
        cb->refs++;
        e->ctrl.n++;
    }
    ctrl_buf_release(e, cb);
}

/* Encodes msg once and posts a send of it to each rank in first..last but
 * skip (-1: none). */
void tc__ctrl_send(engine_t *e, const tc_wire_msg_t *msg, int first, int last, int skip, int tag)
{
    eng_ctrl_buf_t *cb;

    if (last < first) {
        return;
    }
    cb = ctrl_buf_get(e); /* its reference is held until every send is posted */
    if (cb == NULL) {
        tc__engine_fail(e, TC_ERR_NOMEM, "cannot encode a control message (out of memory)");
        return;
    }
    if (tc__wire_encode(msg, &cb->buf) != TC_OK) {
        tc__engine_fail(e, TC_ERR_NOMEM, "cannot encode a control message (out of memory)");
        ctrl_buf_release(e, cb);
        return;
    }
    post(e, cb, NULL, first, last - first + 1, skip, tag);
}

/* Posts an encoded message to dst[0..ndst-1], taking its buffer: no copy.
 * *buf is left empty, holding a kept buffer's memory when there is one, for
 * the caller to encode its next message into. */
void tc__ctrl_send_buf(engine_t *e, tc_wire_buf_t *buf, const int *dst, int ndst, int tag)
{
    eng_ctrl_buf_t *cb;
    tc_wire_buf_t spare;

    if (ndst <= 0) {
        return;
    }
    cb = ctrl_buf_get(e);
    if (cb == NULL) {
        tc__engine_fail(e, TC_ERR_NOMEM, "out of memory sending a control message");
        return;
    }
    spare = cb->buf; /* empty */
    cb->buf = *buf;
    *buf = spare;
    post(e, cb, dst, 0, ndst, -1, tag);
}

/* Completes finished control sends; returns how many are still in flight. */
size_t tc__ctrl_progress(engine_t *e)
{
    size_t i = 0;
    char why[MPI_MAX_ERROR_STRING];

    while (i < e->ctrl.n) {
        int flag = 0;
        int rc = MPI_Test(&e->ctrl.v[i].req, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            tc__engine_fail(e, TC_ERR_TRANSPORT, "a control send failed: %s",
                            tc__mpi_strerror(rc, why, sizeof(why)));
            return e->ctrl.n;
        }
        if (flag) {
            ctrl_buf_release(e, e->ctrl.v[i].cb);
            e->ctrl.v[i] = e->ctrl.v[--e->ctrl.n];
        } else {
            i++;
        }
    }
    return e->ctrl.n;
}

/* Receives one control message from src (or any) with tag, if one is there.
 * Returns 1 and fills msg/src_p when it got one, 0 when none, -1 on failure. */
int tc__ctrl_recv(engine_t *e, int src, int tag, tc_wire_msg_t *msg, int *src_p)
{
    MPI_Status status;
    int flag = 0, count = 0, rc;
    char why[MPI_MAX_ERROR_STRING];
    char err[256];
    uint8_t *buf;

    rc = MPI_Iprobe(src, tag, e->mpi.ctrl, &flag, &status);
    if (rc != MPI_SUCCESS) {
        tc__engine_fail(e, TC_ERR_TRANSPORT, "MPI_Iprobe failed: %s",
                        tc__mpi_strerror(rc, why, sizeof(why)));
        return -1;
    }
    if (!flag) {
        return 0;
    }
    MPI_Get_count(&status, MPI_BYTE, &count);
    if (count < 0) {
        count = 0;
    }
    /* len stays 0: the buffer only lends its memory */
    if (tc__wire_buf_reserve(&e->ctrl.rbuf, (size_t)count + 1) != TC_OK) {
        tc__engine_fail(e, TC_ERR_NOMEM, "out of memory receiving a %d-byte control message",
                        count);
        return -1;
    }
    buf = e->ctrl.rbuf.data;
    rc = MPI_Recv(buf, count, MPI_BYTE, status.MPI_SOURCE, tag, e->mpi.ctrl, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        tc__engine_fail(e, TC_ERR_TRANSPORT,
                        "MPI_Recv of a control message from rank %d failed: %s", status.MPI_SOURCE,
                        tc__mpi_strerror(rc, why, sizeof(why)));
        return -1;
    }
    if (tc__wire_decode(buf, (size_t)count, msg, err, sizeof(err)) != TC_OK) {
        tc__engine_fail(e, TC_ERR_TRANSPORT, "malformed control message from rank %d: %s",
                        status.MPI_SOURCE, err);
        return -1;
    }
    tc__wire_buf_reset(&e->ctrl.rbuf); /* a rare big one is not kept */
    *src_p = status.MPI_SOURCE;
    return 1;
}

/* After a failure MPI is left as it is, and sends that never completed may
 * still be read by it: their buffers are kept (reachable, not leaked). */
void tc__ctrl_abandon(engine_t *e)
{
    size_t i;

    for (i = 0; i < e->ctrl.n; i++) {
        eng_ctrl_buf_t **keep = realloc(abandoned, (nabandoned + 1) * sizeof(*keep));
        if (keep != NULL) {
            abandoned = keep;
            abandoned[nabandoned++] = e->ctrl.v[i].cb;
        }
    }
    e->ctrl.n = 0;
}

/* Frees the kept buffers (not the sends in flight: see tc__ctrl_abandon). */
void tc__ctrl_free(engine_t *e)
{
    while (e->ctrl.nspare > 0) {
        eng_ctrl_buf_t *cb = e->ctrl.spare[--e->ctrl.nspare];
        tc__wire_buf_free(&cb->buf);
        free(cb);
    }
    tc__wire_buf_free(&e->ctrl.rbuf);
}
