/*
 * remote.c - port channels and semaphores between ranks of different nodes:
 * the context's proxy thread carries them out over MPI, and it is the only
 * thread that calls MPI for them (so MPI must run at MPI_THREAD_MULTIPLE:
 * the engine thread calls it too; context.c checks that at setup).
 *
 * Every context of a job that spans nodes has a "net": point-to-point
 * messages on the engine's channel communicator (engine_info.h), under two
 * tags of its own (its index picks them), and its proxy runs the progress
 * hook below whenever its FIFO is empty. The messages:
 *
 *   message          tag    carries
 *   ---------------  -----  -----------------------------------------------
 *   header           CTRL   one operation of a channel (net_hdr_t): put,
 *                           signal, flush bits; a put of at most NET_INLINE
 *                           bytes rides in it, after the header
 *   data             DATA   a larger put's bytes, straight from the source
 *                           memory into the destination's (chunks of
 *                           NET_CHUNK: MPI counts are ints)
 *   semaphore        CTRL   a tc_sem_signal across nodes
 *   acknowledgement  CTRL   a flush has completed at the destination, with
 *                           the first failure seen there, if any
 *   handle           CTRL   a tc_mem_handle_send across nodes (the tag and
 *                           the handle's bytes; mailbox.c)
 *
 * Order. MPI does not let two messages of one sender, tag and communicator
 * overtake each other. The receiver keeps NET_RING header receives posted
 * (any source) and takes them in the order they were posted, so it sees one
 * sender's headers in the order they were sent; it posts a data receive for
 * a header as it sees it, so data messages match in order too. Each sender
 * has a queue at the receiver: an operation completes (its inline bytes are
 * copied, its semaphore signalled, its flush acknowledged) only after every
 * earlier one of that sender has. So, as within a node: puts complete in
 * order, a signal is seen only after every earlier put, and an
 * acknowledged flush means every earlier operation is complete at the
 * destination. The sender's flush also waits for its own sends to complete
 * (the sources may then be reused).
 *
 * A flush's handler waits for the acknowledgement on the proxy thread, and
 * keeps making progress while it does (it receives for others, so two ranks
 * flushing towards each other cannot deadlock); it gives up when the peer's
 * process is seen to exit (same machine: a pidfd) or tcoll stops on a
 * failure (a lost rank, found by the engine).
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

/* ------------------------------------------------------------------------ */
/* Set-up and teardown                                                       */
/* ------------------------------------------------------------------------ */

tc_status_t tc__net_create(tc_chan_ctx_t *ctx, char *why, size_t len)
{
    tc_chan_net_t *n;
    int tag_ub = 0, i, slots;

    n = calloc(1, sizeof(*n));
    if (n == NULL) {
        snprintf(why, len, "out of memory");
        return TC_ERR_NOMEM;
    }
    if (!tc__engine_chan_comm(&n->comm, &tag_ub)) {
        free(n);
        snprintf(why, len, "MPI does not run at MPI_THREAD_MULTIPLE");
        return TC_ERR_STATE;
    }
    slots = tag_ub / 2 > 0 ? tag_ub / 2 : 1;
    n->tag_ctrl = (int)(ctx->index % (uint32_t)slots) * 2;
    n->tag_data = n->tag_ctrl + 1;
    n->src = calloc((size_t)ctx->size, sizeof(*n->src));
    n->out_to = calloc((size_t)ctx->size, sizeof(*n->out_to));
    for (i = 0; i < NET_RING; i++) {
        n->hreq[i] = MPI_REQUEST_NULL;
        n->hbuf[i] = malloc(NET_BUF);
        if (n->hbuf[i] == NULL) {
            break;
        }
    }
    ctx->net = n;
    if (n->src == NULL || n->out_to == NULL || i < NET_RING) {
        tc__net_free(ctx);
        snprintf(why, len, "out of memory");
        return TC_ERR_NOMEM;
    }
    tc__engine_chan_use(1);
    n->counted = 1;
    return TC_OK;
}

/* Cancels a posted receive and waits for it, until a second after t0:
 * a receive already matched by a message that stops coming (its sender
 * died half-way) must not hang the proxy. 1 when done with, 0 when left to
 * MPI (its buffer must then never be freed). */
static int cancel_recv(MPI_Request *req, uint64_t t0)
{
    struct timespec ts = {0, 100000};
    int flag = 0;

    if (*req == MPI_REQUEST_NULL) {
        return 1;
    }
    MPI_Cancel(req);
    while (MPI_Test(req, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag &&
           tc__now_ns() - t0 < 1000000000ull) {
        nanosleep(&ts, NULL);
    }
    if (flag || *req == MPI_REQUEST_NULL) {
        return 1;
    }
    MPI_Request_free(req);
    return 0;
}

/* Proxy thread, last: what is still posted is cancelled; sends get a
 * second to complete, then are left to MPI (their buffers leak). */
void tc__net_close(tc_chan_ctx_t *ctx)
{
    tc_chan_net_t *n = ctx->net;
    uint64_t t0 = tc__now_ns();
    int i, r, j;

    if (n == NULL) {
        return;
    }
    for (i = 0; i < NET_RING; i++) {
        if (!cancel_recv(&n->hreq[i], t0)) {
            n->hbuf[i] = NULL; /* MPI's now: never freed */
        }
    }
    for (r = 0; r < ctx->size; r++) {
        while (n->src[r].head != NULL) {
            net_item_t *it = n->src[r].head;
            int gone = 1;
            n->src[r].head = it->next;
            for (j = 0; j < it->nreq; j++) {
                gone &= cancel_recv(&it->req[j], t0);
            }
            if (gone) {
                tc__net_item_free(it);
            } /* else its scratch buffer is MPI's now: never freed */
        }
    }
    while (n->ns > 0 && tc__now_ns() - t0 < 1000000000ull) {
        int done = tc__net_sends_test(n);
        struct timespec ts = {0, 100000};

        if (done < 0) {
            break;
        }
        if (done == 0) {
            nanosleep(&ts, NULL);
        }
    }
    if (n->ns > 0) {
        TC_WARN("chan",
                "context %u: %d sends to other nodes did not complete before the "
                "context was destroyed; left to MPI",
                ctx->index, n->ns);
        for (i = 0; i < n->ns; i++) {
            MPI_Request_free(&n->sreq[i]);
        }
        n->ns = 0; /* their buffers are MPI's now: never freed */
    }
    n->posted = 0;
}

void tc__net_free(tc_chan_ctx_t *ctx)
{
    tc_chan_net_t *n = ctx->net;
    int i;

    if (n == NULL) {
        return;
    }
    if (n->counted) {
        tc__engine_chan_use(-1);
    }
    for (i = 0; i < NET_RING; i++) {
        free(n->hbuf[i]);
    }
    for (i = 0; i < n->ns; i++) {
        free(n->sbuf[i]);
    }
    free(n->sreq);
    free(n->sbuf);
    free(n->speer);
    free(n->sidx);
    free(n->src);
    free(n->out_to);
    free(n);
    ctx->net = NULL;
}

/* Waits (making progress) until done(ch, arg) or the peer is lost. 1 when
 * done, 0 when lost (the channel's failure recorded). */
static int wait_until(tc_chan_ctx_t *ctx, tc_portchan_t *ch, int peer,
                      int (*done)(tc_chan_ctx_t *ctx, tc_portchan_t *ch, int peer))
{
    tc_backoff_t b;
    uint64_t next_check = tc__now_ns() + NET_CHECK_NS;

    tc__backoff_init(&b, 64, 200);
    while (!done(ctx, ch, peer)) {
        if (tc__net_progress(ctx)) {
            tc__backoff_reset(&b);
            continue;
        }
        if (tc__now_ns() >= next_check) {
            next_check = tc__now_ns() + NET_CHECK_NS;
            if (tc__chan_peer_gone(ctx, peer)) {
                if (ch != NULL) {
                    atomic_store_explicit(&ch->peer_gone, 1, memory_order_relaxed);
                    tc__portchan_fail(ch,
                                      "rank %d (on another node) %s: earlier operations on "
                                      "the channel to it may not have reached it",
                                      peer, tc__chan_gone_why(ctx, peer));
                }
                return 0;
            }
        }
        tc__backoff_wait(&b);
    }
    return 1;
}

static int sends_below_cap(tc_chan_ctx_t *ctx, tc_portchan_t *ch, int peer)
{
    (void)ch;
    (void)peer;
    return ctx->net->ns < NET_MAX_SENDS;
}

static int flushed(tc_chan_ctx_t *ctx, tc_portchan_t *ch, int peer)
{
    return ch->net_acked >= ch->net_seq && ctx->net->out_to[peer] == 0;
}

void tc__net_op(tc_portchan_t *ch, const tc_trigger_fields_t *f)
{
    tc_chan_ctx_t *ctx = ch->ctx;
    tc_chan_net_t *n = ctx->net;
    int peer = ch->remote->rank, rc = 0, i;
    net_hdr_t h;
    size_t inl = 0;
    const char *src;
    char why[256];

    if (n->ns >= NET_MAX_SENDS && !wait_until(ctx, ch, peer, sends_below_cap)) {
        return;
    }
    memset(&h, 0, sizeof(h));
    h.magic = NET_MAGIC;
    h.kind = NET_OP;
    h.type = (uint16_t)f->type;
    h.chan = ch->id;
    h.sem_id = ch->sem->id;
    if ((f->type & TC_TRIG_PUT) != 0) {
        if (!tc__chan_fits(f->src_offset, f->size, ch->local->size) ||
            !tc__chan_fits(f->dst_offset, f->size, ch->remote->size)) {
            tc__portchan_fail(ch,
                              "a put of %llu bytes from offset %llu to offset %llu on the "
                              "channel to rank %d is outside its memory",
                              (unsigned long long)f->size, (unsigned long long)f->src_offset,
                              (unsigned long long)f->dst_offset, peer);
            h.type = (uint16_t)(h.type & ~TC_TRIG_PUT);
        } else {
            h.mem_id = ch->remote->id;
            h.dst_off = f->dst_offset;
            h.size = f->size;
            inl = f->size <= NET_INLINE ? (size_t)f->size : 0;
        }
    }
    src = ch->local->base + f->src_offset;
    if (inl > 0 && (h.type & TC_TRIG_PUT) != 0 && ch->local->device >= 0) {
        /* device memory: the inline bytes are staged through host memory */
        char *bounce = tc__chan_bounce(ctx);
        if (bounce == NULL || tc__chan_copy(ctx, bounce, ch->local->base + f->src_offset, inl, why,
                                            sizeof(why)) != TC_OK) {
            tc__portchan_fail(ch, "staging a put of %zu bytes of device memory for rank %d: %s",
                              inl, peer, bounce == NULL ? "out of memory" : why);
            h.type = (uint16_t)(h.type & ~TC_TRIG_PUT);
            h.mem_id = h.dst_off = h.size = 0;
            inl = 0;
        }
        src = bounce;
    }
    if ((h.type & TC_TRIG_FLUSH) != 0) {
        h.seq = ++ch->net_seq;
    }
    if (h.type == 0) {
        return;
    }
    rc = tc__net_send_ctrl(n, peer, &h, src, inl);
    /* A larger put's bytes follow, from the source memory itself (device
     * memory: from a host copy of each chunk, freed when its send is done). */
    for (i = 0;
         rc == 0 && (h.type & TC_TRIG_PUT) != 0 && inl == 0 && (uint64_t)i * NET_CHUNK < h.size;
         i++) {
        uint64_t off = (uint64_t)i * NET_CHUNK;
        uint64_t len = h.size - off < NET_CHUNK ? h.size - off : NET_CHUNK;
        char *stage = NULL;
        MPI_Request req;

        if (ch->local->device >= 0 &&
            ((stage = malloc((size_t)len)) == NULL ||
             tc__chan_copy(ctx, stage, ch->local->base + f->src_offset + off, len, why,
                           sizeof(why)) != TC_OK)) {
            /* the peer waits for these bytes: send them all the same */
            tc__portchan_fail(ch, "staging a put of %llu bytes of device memory for rank %d: %s",
                              (unsigned long long)h.size, peer,
                              stage == NULL ? "out of memory" : why);
            free(stage);
            stage = calloc(1, (size_t)len);
            if (stage == NULL) {
                rc = -1;
                break;
            }
        }
        rc = MPI_Isend(stage != NULL ? stage : ch->local->base + f->src_offset + off, (int)len,
                       MPI_BYTE, peer, n->tag_data, n->comm, &req);
        if (rc == MPI_SUCCESS) {
            rc = tc__net_sends_add(n, req, stage, peer);
        } else {
            free(stage);
        }
    }
    if (rc != 0) {
        tc__net_describe(rc, why, sizeof(why));
        tc__portchan_fail(ch, "sending to rank %d (on another node) failed: %s", peer, why);
        if ((h.type & TC_TRIG_FLUSH) != 0) {
            ch->net_acked = ch->net_seq; /* no acknowledgement will come */
        }
        return;
    }
    if ((h.type & TC_TRIG_FLUSH) != 0) {
        (void)wait_until(ctx, ch, peer, flushed);
    } else {
        /* A stream of triggers keeps the FIFO from going empty, where the
         * proxy would make progress: make some here (receives, sends). */
        (void)tc__net_progress(ctx);
    }
}

void tc__net_sem_signal(tc_chan_ctx_t *ctx, int peer, uint32_t id)
{
    net_hdr_t h;
    char why[256];
    int rc;

    if (ctx->net->ns >= NET_MAX_SENDS && !wait_until(ctx, NULL, peer, sends_below_cap)) {
        return;
    }
    memset(&h, 0, sizeof(h));
    h.magic = NET_MAGIC;
    h.kind = NET_SEM;
    h.sem_id = id;
    rc = tc__net_send_ctrl(ctx->net, peer, &h, NULL, 0);
    if (rc != 0) {
        tc__net_describe(rc, why, sizeof(why));
        TC_WARN("chan", "context %u: a semaphore signal to rank %d (id %u) was not sent: %s",
                ctx->index, peer, id, why);
    }
}

void tc__net_send_handles(tc_chan_ctx_t *ctx)
{
    tc_mbox_msg_t *m, *next;
    char why[256];
    net_hdr_t h;
    int rc;

    pthread_mutex_lock(&ctx->mu);
    m = ctx->outbox;
    ctx->outbox = NULL;
    pthread_mutex_unlock(&ctx->mu);
    for (; m != NULL; m = next) {
        next = m->next;
        memset(&h, 0, sizeof(h));
        h.magic = NET_MAGIC;
        h.kind = NET_HANDLE;
        h.sem_id = m->tag;
        rc = tc__net_send_ctrl(ctx->net, m->peer, &h, m->bytes, TC_MEM_HANDLE_BYTES);
        if (rc != 0) {
            tc__net_describe(rc, why, sizeof(why));
            TC_WARN("chan", "context %u: a handle for rank %d (tag %u) was not sent: %s",
                    ctx->index, m->peer, m->tag, why);
        }
        free(m);
    }
}
