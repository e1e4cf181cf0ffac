/*
 * remote_recv.c - the receiving half of port channels and semaphores between
 * nodes (remote.c has the protocol): the proxy thread's progress hook takes
 * the headers in the order their receives were posted, posts the receives
 * of larger puts' data straight into the registered memory, and completes
 * each sender's operations in order (copy, signal, acknowledgement).
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

void tc__net_item_free(net_item_t *it)
{
    free(it->scratch);
    free(it->copy);
    free(it);
}

static void src_fail(net_src_t *s, uint32_t chan, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void src_fail(net_src_t *s, uint32_t chan, const char *fmt, ...)
{
    va_list ap;

    if (s->err == TC_OK) {
        va_start(ap, fmt);
        vsnprintf(s->err_msg, sizeof(s->err_msg), fmt, ap);
        va_end(ap);
        s->err = TC_ERR_TRANSPORT;
        s->err_chan = chan;
    }
    s->nfailed++;
}

/* Where registration id's [off, off + size) is in this process, or NULL;
 * *device_p 1 when it is CUDA device memory. */
static char *dest(tc_chan_ctx_t *ctx, uint64_t id, uint64_t off, uint64_t size, int *device_p)
{
    char *p = NULL;
    tc_mem_t *m;

    *device_p = 0;
    pthread_mutex_lock(&ctx->mu);
    for (m = ctx->mems; m != NULL; m = m->next) {
        if (m->id == id) {
            if (tc__chan_fits(off, size, m->size)) {
                p = m->base + off;
                *device_p = m->device >= 0;
            }
            break;
        }
    }
    pthread_mutex_unlock(&ctx->mu);
    return p;
}

static int item_done(net_item_t *it)
{
    int j, flag;

    for (j = 0; j < it->nreq; j++) {
        if (it->req[j] != MPI_REQUEST_NULL) {
            if (MPI_Test(&it->req[j], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
                it->req[j] = MPI_REQUEST_NULL; /* failed: nothing more will come */
            } else if (!flag) {
                return 0;
            }
        }
    }
    return 1;
}

/* Completes an operation of sender r: every earlier one has completed. */
static void item_apply(tc_chan_ctx_t *ctx, int r, net_item_t *it)
{
    net_src_t *s = &ctx->net->src[r];
    char why[256];
    net_hdr_t h;
    int rc;

    if (it->to_device) {
        /* staged in host memory (inline copy, or the data received into
         * scratch): now into the device memory, before the signal */
        const char *from = it->copy != NULL ? it->copy : it->scratch;
        if (from != NULL && tc__chan_copy(ctx, it->dst, from, it->len, why, sizeof(why)) != TC_OK) {
            src_fail(s, it->chan, "rank %d: copying a put of %llu bytes into device memory: %s",
                     ctx->rank, (unsigned long long)it->len, why);
        }
    } else if (it->copy != NULL) {
        memcpy(it->dst, it->copy, (size_t)it->len);
    }
    if (it->line != NULL) {
        tc__sem_line_signal(it->line);
    }
    if (!it->ack) {
        return;
    }
    memset(&h, 0, sizeof(h));
    h.magic = NET_MAGIC;
    h.kind = NET_ACK;
    h.chan = it->chan;
    h.seq = it->seq;
    if (s->err != TC_OK && s->err_chan == it->chan) {
        h.status = (int32_t)s->err;
        h.nfailed = s->nfailed;
        s->err = TC_OK;
        s->nfailed = 0;
    }
    rc = tc__net_send_ctrl(ctx->net, r, &h, h.status != TC_OK ? s->err_msg : NULL,
                           h.status != TC_OK ? strlen(s->err_msg) + 1 : 0);
    if (rc != 0) {
        tc__net_describe(rc, why, sizeof(why));
        TC_WARN("chan", "context %u: the acknowledgement of a flush to rank %d was not sent: %s",
                ctx->index, r, why);
    }
}

static void enqueue(tc_chan_ctx_t *ctx, int r, net_item_t *it)
{
    net_src_t *s = &ctx->net->src[r];

    if (s->head == NULL && item_done(it)) {
        item_apply(ctx, r, it);
        tc__net_item_free(it);
        return;
    }
    it->next = NULL;
    if (s->tail != NULL) {
        s->tail->next = it;
    } else {
        s->head = it;
    }
    s->tail = it;
    ctx->net->queued++;
}

/* Posts the receives of a put's data (size bytes) into dst (NULL: a
 * scratch buffer, thrown away). */
static void post_data(tc_chan_ctx_t *ctx, int r, net_item_t *it, char *dst, uint64_t size)
{
    tc_chan_net_t *n = ctx->net;
    uint64_t off;
    int rc;

    if (dst == NULL) {
        it->scratch = malloc((size_t)size);
        dst = it->scratch;
    }
    for (off = 0; off < size && it->nreq < NET_MAX_CHUNKS; off += NET_CHUNK) {
        uint64_t len = size - off < NET_CHUNK ? size - off : NET_CHUNK;

        /* Without scratch memory, a receive of 0 bytes takes the message
         * (truncated: an error, which item_done treats as complete). */
        rc = MPI_Irecv(dst != NULL ? dst + off : NULL, dst != NULL ? (int)len : 0, MPI_BYTE, r,
                       n->tag_data, n->comm, &it->req[it->nreq]);
        if (rc != MPI_SUCCESS) {
            it->req[it->nreq] = MPI_REQUEST_NULL;
        }
        it->nreq++;
    }
}

static void on_op(tc_chan_ctx_t *ctx, int r, const net_hdr_t *h, const char *payload, size_t plen)
{
    net_src_t *s = &ctx->net->src[r];
    net_item_t *it = calloc(1, sizeof(*it));
    char *dst = NULL;
    int device = 0;

    if (it == NULL) {
        src_fail(s, h->chan, "rank %d: out of memory receiving an operation", ctx->rank);
        return;
    }
    it->chan = h->chan; /* a failure at completion is reported to this channel's flush */
    if ((h->type & TC_TRIG_PUT) != 0 && h->size > 0) {
        dst = dest(ctx, h->mem_id, h->dst_off, h->size, &device);
        if (dst == NULL) {
            src_fail(s, h->chan,
                     "rank %d has no registration %llu holding %llu bytes at "
                     "offset %llu (deregistered?): a put was thrown away",
                     ctx->rank, (unsigned long long)h->mem_id, (unsigned long long)h->size,
                     (unsigned long long)h->dst_off);
        }
        if (h->size <= NET_INLINE) {
            if (plen != h->size) {
                src_fail(s, h->chan, "rank %d received a put of %zu bytes announced as %llu",
                         ctx->rank, plen, (unsigned long long)h->size);
            } else if (dst != NULL && s->head == NULL && !device) {
                memcpy(dst, payload, plen); /* nothing earlier pending: now */
            } else if (dst != NULL && (it->copy = malloc(plen)) != NULL) {
                memcpy(it->copy, payload, plen);
                it->dst = dst;
                it->len = plen;
                it->to_device = device;
            } else if (dst != NULL) {
                src_fail(s, h->chan, "rank %d: out of memory receiving a put", ctx->rank);
            }
        } else if (device) {
            /* into host memory (scratch), copied to the device at completion */
            it->dst = dst;
            it->len = h->size;
            it->to_device = 1;
            post_data(ctx, r, it, NULL, h->size);
            if (it->scratch == NULL) {
                src_fail(s, h->chan, "rank %d: out of memory receiving a put for device memory",
                         ctx->rank);
            }
        } else {
            post_data(ctx, r, it, dst, h->size);
        }
    }
    if ((h->type & TC_TRIG_SIGNAL) != 0) {
        if (h->sem_id < ctx->sem_ids) {
            it->line = &ctx->area[(size_t)r * ctx->sem_ids + h->sem_id];
        } else {
            src_fail(s, h->chan, "rank %d: a signal for semaphore id %u (of %u)", ctx->rank,
                     h->sem_id, ctx->sem_ids);
        }
    }
    if ((h->type & TC_TRIG_FLUSH) != 0) {
        it->ack = 1;
        it->chan = h->chan;
        it->seq = h->seq;
    }
    enqueue(ctx, r, it);
}

static void on_ack(tc_chan_ctx_t *ctx, int r, const net_hdr_t *h, const char *payload, size_t plen)
{
    tc_portchan_t *ch = h->chan < TC_CHAN_NCHANS
                            ? atomic_load_explicit(&ctx->chans[h->chan], memory_order_acquire)
                            : NULL;

    if (ch == NULL || ch->remote->rank != r) {
        TC_WARN("chan",
                "context %u: an acknowledgement from rank %d for channel %u, which is "
                "not open to it, was ignored",
                ctx->index, r, h->chan);
        return;
    }
    if (h->status != TC_OK) {
        tc__portchan_fail(ch, "at rank %d: %.*s (%u operations failed there)", r,
                          (int)(plen > 0 ? strnlen(payload, plen) : 0), payload, h->nfailed);
    }
    if (h->seq > ch->net_acked) {
        ch->net_acked = h->seq;
    }
}

static void on_header(tc_chan_ctx_t *ctx, int r, const char *buf, int count)
{
    net_hdr_t h;
    size_t plen;

    if (count < (int)sizeof(h)) {
        TC_WARN("chan", "context %u: a message of %d bytes from rank %d is no header: ignored",
                ctx->index, count, r);
        return;
    }
    memcpy(&h, buf, sizeof(h));
    plen = (size_t)count - sizeof(h);
    if (h.magic != NET_MAGIC) {
        TC_WARN("chan", "context %u: a message from rank %d is no channel header: ignored",
                ctx->index, r);
        return;
    }
    switch (h.kind) {
    case NET_OP: on_op(ctx, r, &h, buf + sizeof(h), plen); break;
    case NET_SEM: {
        net_item_t *it = calloc(1, sizeof(*it));
        if (it != NULL && h.sem_id < ctx->sem_ids) {
            it->line = &ctx->area[(size_t)r * ctx->sem_ids + h.sem_id];
            enqueue(ctx, r, it);
        } else {
            free(it);
            TC_WARN("chan", "context %u: a semaphore signal from rank %d (id %u) was lost",
                    ctx->index, r, h.sem_id);
        }
        break;
    }
    case NET_ACK: on_ack(ctx, r, &h, buf + sizeof(h), plen); break;
    case NET_HANDLE:
        if (plen == TC_MEM_HANDLE_BYTES) {
            tc__mbox_deliver(ctx, r, h.sem_id, (const unsigned char *)buf + sizeof(h));
        } else {
            TC_WARN("chan", "context %u: a handle of %zu bytes from rank %d: ignored", ctx->index,
                    plen, r);
        }
        break;
    default:
        TC_WARN("chan", "context %u: a message of kind %u from rank %d: ignored", ctx->index,
                h.kind, r);
    }
}

static int post_header(tc_chan_net_t *n, int i)
{
    return MPI_Irecv(n->hbuf[i], (int)NET_BUF, MPI_BYTE, MPI_ANY_SOURCE, n->tag_ctrl, n->comm,
                     &n->hreq[i]);
}

int tc__net_progress(void *arg)
{
    tc_chan_ctx_t *ctx = arg;
    tc_chan_net_t *n = ctx->net;
    int did = 0, flag, i, r;
    MPI_Status st;

    if (!n->posted) {
        for (i = 0; i < NET_RING; i++) {
            if (post_header(n, i) != MPI_SUCCESS) {
                n->hreq[i] = MPI_REQUEST_NULL;
            }
        }
        n->posted = 1;
    }
    /* Headers, in the order their receives were posted. */
    while (n->hreq[n->hnext] != MPI_REQUEST_NULL &&
           MPI_Test(&n->hreq[n->hnext], &flag, &st) == MPI_SUCCESS && flag) {
        int count = 0;

        MPI_Get_count(&st, MPI_BYTE, &count);
        on_header(ctx, st.MPI_SOURCE, n->hbuf[n->hnext], count);
        if (post_header(n, n->hnext) != MPI_SUCCESS) {
            n->hreq[n->hnext] = MPI_REQUEST_NULL;
        }
        n->hnext = (n->hnext + 1) % NET_RING;
        did = 1;
    }
    /* Each sender's operations, in order. */
    for (r = 0; n->queued > 0 && r < ctx->size; r++) {
        net_src_t *s = &n->src[r];

        while (s->head != NULL && item_done(s->head)) {
            net_item_t *it = s->head;
            s->head = it->next;
            if (s->head == NULL) {
                s->tail = NULL;
            }
            n->queued--;
            item_apply(ctx, r, it);
            tc__net_item_free(it);
            did = 1;
        }
    }
    /* Sends. */
    if (tc__net_sends_test(n) > 0) {
        did = 1;
    }
    return did;
}
