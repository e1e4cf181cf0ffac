/*
 * transport.c - what every transport shares (transport.h): the blocking
 * exchange the algorithms call, over any transport's post and test, waited
 * for under the transport's wait policy (wait.h); and the small helpers
 * around transfers and closing.
 *
 * Nothing here knows an implementation; nothing here waits except through
 * the wait policy, so no wait is without back-off, interrupt or timeout.
 */
#define _GNU_SOURCE
#include "transport/transport.h"

#include <stdio.h>
#include <string.h>

void tc__transport_init(tc_transport_t *t, int rank, int size, uint32_t spin,
                        uint32_t backoff_max_us)
{
    memset(t, 0, sizeof(*t));
    t->rank = rank;
    t->size = size;
    t->sendrecv = tc__transport_sendrecv;
    tc__wait_policy_init(&t->wait, spin, backoff_max_us);
}

void tc__transport_close(tc_transport_t *t)
{
    void (*close)(tc_transport_t * t) = t->close;

    if (close != NULL) {
        t->close = NULL;
        close(t);
    }
}

void tc__xfer_send(tc_xfer_t *x, const void *buf, size_t bytes, int dst)
{
    x->dir = TC_XFER_SEND;
    x->peer = dst;
    x->buf = (void *)buf; /* only read: see tc_xfer_t */
    x->bytes = bytes;
    x->done = 0;
}

void tc__xfer_recv(tc_xfer_t *x, void *buf, size_t bytes, int src)
{
    x->dir = TC_XFER_RECV;
    x->peer = src;
    x->buf = buf;
    x->bytes = bytes;
    x->done = 0;
}

tc_status_t tc__xfer_post(tc_transport_t *t, tc_xfer_t *x)
{
    if (x->bytes == 0 || x->peer < 0) {
        x->done = 1;
        return TC_OK;
    }
    return t->post(t, x);
}

void tc__xfer_abandon(tc_transport_t *t, tc_xfer_t *x)
{
    if (!x->done && t->abandon != NULL) {
        t->abandon(t, x);
    }
}

tc_status_t tc__transport_sendrecv(tc_transport_t *t, const void *sbuf, size_t sbytes, int dst,
                                   void *rbuf, size_t rbytes, int src)
{
    tc_xfer_t xs[2]; /* [0] the receive, [1] the send */
    tc_xfer_t *const v[2] = {&xs[0], &xs[1]};
    tc_waiter_t w;
    tc_status_t st;
    int ndone, now, r;

    tc__xfer_recv(&xs[0], rbuf, rbytes, src);
    tc__xfer_send(&xs[1], sbuf, sbytes, dst);
    /* Sends first: when the partner's data is already waiting, posting the
     * receive may copy it at once (MPI: a single-copy rendezvous), and this
     * rank's own data would leave only after that copy; posted first, it
     * is copied by the partner at the same time. */
    if ((st = tc__xfer_post(t, &xs[1])) != TC_OK) {
        return st;
    }
    if ((st = tc__xfer_post(t, &xs[0])) != TC_OK) {
        tc__xfer_abandon(t, &xs[1]);
        return st;
    }
    ndone = xs[0].done + xs[1].done;
    tc__waiter_start(&w, &t->wait);
    while (ndone < 2) {
        if ((st = t->test(t, v, 2)) != TC_OK) {
            goto err_abandon;
        }
        now = xs[0].done + xs[1].done;
        if (now > ndone) { /* half of it is done: the wait starts again */
            ndone = now;
            tc__waiter_progress(&w);
            continue;
        }
        r = tc__waiter_idle(&w, t->err, sizeof(t->err));
        if (r > 0) {
            /* Name the side still waiting: a receive waits on src, a send
             * on dst. */
            r = tc__waiter_timeout(&w, !xs[0].done ? src : dst, t->err, sizeof(t->err));
        }
        if (r < 0) {
            st = TC_ERR_TRANSPORT; /* t->err says why */
            goto err_abandon;
        }
    }
    return TC_OK;

err_abandon:
    tc__xfer_abandon(t, &xs[0]);
    tc__xfer_abandon(t, &xs[1]);
    return st;
}
