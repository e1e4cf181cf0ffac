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

static void ctrl_buf_release(eng_ctrl_buf_t *cb)
{
    if (--cb->refs == 0) {
        tc__wire_buf_free(&cb->buf);
        free(cb);
    }
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
            ctrl_buf_release(cb);
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
    ctrl_buf_release(cb);
}

/* Encodes msg once and posts a send of it to each rank in first..last but
 * skip (-1: none). */
void tc__ctrl_send(engine_t *e, const tc_wire_msg_t *msg, int first, int last, int skip, int tag)
{
    eng_ctrl_buf_t *cb;

    if (last < first) {
        return;
    }
    cb = calloc(1, sizeof(*cb));
    if (cb == NULL) {
        tc__engine_fail(e, TC_ERR_NOMEM, "cannot encode a control message (out of memory)");
        return;
    }
    if (tc__wire_encode(msg, &cb->buf) != TC_OK) {
        tc__engine_fail(e, TC_ERR_NOMEM, "cannot encode a control message (out of memory)");
        goto err_free_cb;
    }
    cb->refs = 1; /* held until every send is posted */
    post(e, cb, NULL, first, last - first + 1, skip, tag);
    return;

err_free_cb:
    tc__wire_buf_free(&cb->buf);
    free(cb);
}

/* Posts an encoded message to dst[0..ndst-1], taking its buffer (*buf is
 * left empty: no copy). */
void tc__ctrl_send_buf(engine_t *e, tc_wire_buf_t *buf, const int *dst, int ndst, int tag)
{
    eng_ctrl_buf_t *cb;

    if (ndst <= 0) {
        return;
    }
    cb = calloc(1, sizeof(*cb));
    if (cb == NULL) {
        tc__engine_fail(e, TC_ERR_NOMEM, "out of memory sending a control message");
        return;
    }
    cb->buf = *buf;
    memset(buf, 0, sizeof(*buf));
    cb->refs = 1;
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
            ctrl_buf_release(e->ctrl.v[i].cb);
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
    buf = malloc(count > 0 ? (size_t)count : 1);
    if (buf == NULL) {
        tc__engine_fail(e, TC_ERR_NOMEM, "out of memory receiving a %d-byte control message",
                        count);
        return -1;
    }
    rc = MPI_Recv(buf, count, MPI_BYTE, status.MPI_SOURCE, tag, e->mpi.ctrl, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        tc__engine_fail(e, TC_ERR_TRANSPORT,
                        "MPI_Recv of a control message from rank %d failed: %s", status.MPI_SOURCE,
                        tc__mpi_strerror(rc, why, sizeof(why)));
        goto err_free_buf;
    }
    if (tc__wire_decode(buf, (size_t)count, msg, err, sizeof(err)) != TC_OK) {
        tc__engine_fail(e, TC_ERR_TRANSPORT, "malformed control message from rank %d: %s",
                        status.MPI_SOURCE, err);
        goto err_free_buf;
    }
    free(buf);
    *src_p = status.MPI_SOURCE;
    return 1;

err_free_buf:
    free(buf);
    return -1;
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
