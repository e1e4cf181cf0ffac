/*
 * peers.c - what every channel file asks of a context's peers: whether a
 * peer's process is gone (and how to say so), and the context's own
 * collectives, which go through tcoll's (the engine thread owns MPI). The
 * bottom of the channel files: it calls none of them.
 */
#define _GNU_SOURCE
#include "channel/channel_internal.h"
#include "engine/engine_info.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs a submitted collective to its end (st: the submission's status); on
 * failure copies its message and frees it. */
static tc_status_t finish(tc_status_t st, tc_request_t *req, char *why, size_t len)
{
    if (st != TC_OK) {
        snprintf(why, len, "%s", tc_last_error());
        return st;
    }
    st = tc_wait(req);
    if (st != TC_OK) {
        snprintf(why, len, "%s", tc_request_error(req));
        tc_request_free(req);
    }
    return st;
}

tc_status_t tc__chan_gather(const char *name, const void *mine, size_t len, void **out_p, char *why,
                            size_t why_len)
{
    tc_tensor_t t = {(void *)mine, TC_UINT8, 1, {(int64_t)len}};
    tc_request_t *req = NULL;
    tc_tensor_t out;
    tc_status_t st;
    void *copy;

    st = tc__allgather_reserved(name, &t, &req);
    st = finish(st, req, why, why_len);
    if (st != TC_OK) {
        return st;
    }
    st = tc_request_output(req, &out);
    if (st == TC_OK && (copy = malloc((size_t)out.shape[0])) != NULL) {
        memcpy(copy, out.data, (size_t)out.shape[0]);
        *out_p = copy;
    } else if (st == TC_OK) {
        snprintf(why, why_len, "out of memory");
        st = TC_ERR_NOMEM;
    } else {
        snprintf(why, why_len, "%s", tc_last_error());
    }
    tc_request_free(req);
    return st;
}

tc_status_t tc__chan_all_ok(const char *name, int ok, int *all_p, char *why, size_t why_len)
{
    int32_t v = ok != 0;
    tc_tensor_t t = {&v, TC_INT32, 1, {1}};
    tc_request_t *req = NULL;
    tc_status_t st;

    st = tc__allreduce_reserved(name, &t, &v, TC_MIN, &req);
    st = finish(st, req, why, why_len);
    if (st == TC_OK) {
        tc_request_free(req);
        *all_p = v != 0;
    }
    return st;
}

static int pid_exited(const tc_chan_peer_t *p)
{
    struct pollfd pfd;

    if (p->pidfd >= 0) {
        pfd.fd = p->pidfd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        /* A pidfd polls readable once its process has exited. */
        return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN) != 0;
    }
    return p->same_host && kill(p->pid, 0) != 0 && errno == ESRCH;
}

int tc__chan_peer_gone(const tc_chan_ctx_t *ctx, int r)
{
    const tc_chan_peer_t *p = &ctx->peers[r];

    if (r == ctx->rank) {
        return 0;
    }
    if (p->same_host) {
        return pid_exited(p);
    }
    /* Another machine: the engine finds lost ranks (TCOLL_PEER_TIMEOUT_S). */
    return tc__engine_failed(NULL, 0);
}

const char *tc__chan_gone_why(const tc_chan_ctx_t *ctx, int r)
{
    return ctx->peers[r].same_host ? "has exited"
                                   : "is out of reach: tcoll has stopped on a failure";
}
