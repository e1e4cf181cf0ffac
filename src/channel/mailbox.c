/*
 * mailbox.c - handles sent pairwise (tc_mem_handle_send / _recv): one rank
 * sends one registration's handle to one peer, under a tag, without the
 * rest of the job taking part.
 *
 * Each rank's semaphore area ends with a mailbox per sender: a bell (a
 * semaphore line) and TC_CHAN_MBOX_SLOTS slots. A sender on the same node
 * claims a free slot, writes the tag, its sending count and the handle,
 * marks the slot full (release) and rings the bell. A sender on another
 * node hands the handle to its proxy (the outbox and one of tcoll's own
 * triggers); the proxy sends it over MPI (remote.c), and the receiver's
 * proxy keeps it in the receiver's inbox and rings the same bell. The
 * receiver takes the matching handle of the lowest sending count (so equal
 * tags arrive in sending order, as MPI's messages do), or waits on the bell:
 * it reads the bell before looking, so a handle put in after the look has
 * moved it.
 *
 *   slot state  who moves it
 *   ----------  --------------------------------------------------------
 *   FREE        -> WRITING: a sender (compare-and-swap)
 *   WRITING     -> FULL: that sender, once the slot is written (release)
 *   FULL        -> READING: a receiving thread (compare-and-swap, acquire)
 *   READING     -> FREE: that thread, once it has copied the handle (or
 *                  back to FULL when the slot was refilled with another tag
 *                  between its look and its compare-and-swap)
 *
 * Threads receiving from one peer at once each get a different handle;
 * "oldest first" then holds per thread only approximately.
 */
#define _GNU_SOURCE
#include "channel/channel_internal.h"
#include "proxy/proxy_internal.h"
#include "util/backoff.h"
#include "util/status.h"

#include <stdlib.h>
#include <string.h>

void tc__mbox_free_list(tc_mbox_msg_t *m)
{
    while (m != NULL) {
        tc_mbox_msg_t *next = m->next;
        free(m);
        m = next;
    }
}

/* Appends m to the list at *head (oldest first). */
static void list_append(tc_mbox_msg_t **head, tc_mbox_msg_t *m)
{
    m->next = NULL;
    while (*head != NULL) {
        head = &(*head)->next;
    }
    *head = m;
}

/* Same node: into a free slot of the peer's mailbox for this rank. */
static tc_status_t put_slot(tc_chan_ctx_t *ctx, int peer, uint32_t tag, const tc_mem_handle_t *h)
{
    tc_mbox_t *box = &ctx->peers[peer].mbox[ctx->rank];
    uint32_t i, expect;

    for (i = 0; i < TC_CHAN_MBOX_SLOTS; i++) {
        tc_mbox_slot_t *s = &box->slot[i];

        expect = TC_MBOX_FREE;
        /* relaxed: the slot's contents are published by the release below. */
        if (atomic_compare_exchange_strong_explicit(&s->state, &expect, TC_MBOX_WRITING,
                                                    memory_order_acquire, memory_order_relaxed)) {
            s->tag = tag;
            s->seq = atomic_fetch_add_explicit(&ctx->mbox_seq[peer], 1, memory_order_relaxed);
            memcpy(s->bytes, h->bytes, TC_MEM_HANDLE_BYTES);
            /* release: the receiver's acquire CAS sees the slot written. */
            atomic_store_explicit(&s->state, TC_MBOX_FULL, memory_order_release);
            tc__sem_line_signal(&box->bell);
            return TC_OK;
        }
    }
    return tc__set_error(TC_ERR_NOMEM,
                         "tc_mem_handle_send: rank %d has not yet received the "
                         "%u handles this rank sent it before (at most %u wait)",
                         peer, TC_CHAN_MBOX_SLOTS, TC_CHAN_MBOX_SLOTS);
}

tc_status_t tc_mem_handle_send(const tc_mem_t *mem, int peer, uint32_t tag)
{
    tc_chan_ctx_t *ctx;
    tc_mem_handle_t h;
    tc_mbox_msg_t *m;

    if (mem == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_handle_send: mem is NULL");
    }
    ctx = mem->ctx;
    if (peer < 0 || peer >= ctx->size) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_handle_send: peer %d is not a rank (0..%d)", peer,
                             ctx->size - 1);
    }
    (void)tc_mem_handle(mem, &h);
    if (ctx->peers[peer].same_node) {
        return put_slot(ctx, peer, tag, &h);
    }
    if (ctx->net == NULL) {
        return tc__set_error(TC_ERR_STATE,
                             "tc_mem_handle_send: rank %d is on another node, "
                             "and this context has no messages between nodes",
                             peer);
    }
    m = malloc(sizeof(*m));
    if (m == NULL) {
        return tc__set_error(TC_ERR_NOMEM, "tc_mem_handle_send: out of memory");
    }
    m->peer = peer;
    m->tag = tag;
    memcpy(m->bytes, h.bytes, TC_MEM_HANDLE_BYTES);
    pthread_mutex_lock(&ctx->mu);
    list_append(&ctx->outbox, m);
    pthread_mutex_unlock(&ctx->mu);
    /* The proxy sends what the outbox holds (in order) when it gets here. */
    tc_fifo_push(ctx->fifo, tc__chan_own_trigger(ctx, TC_CHAN_OWN_HANDLES, 0, 0));
    return TC_OK;
}

void tc__mbox_deliver(tc_chan_ctx_t *ctx, int peer, uint32_t tag, const unsigned char *bytes)
{
    tc_mbox_msg_t *m = malloc(sizeof(*m));

    if (m != NULL) {
        m->peer = peer;
        m->tag = tag;
        memcpy(m->bytes, bytes, TC_MEM_HANDLE_BYTES);
        pthread_mutex_lock(&ctx->mu);
        list_append(&ctx->inbox, m);
        pthread_mutex_unlock(&ctx->mu);
    }
    /* Rung even when the handle is lost (out of memory): a waiter looks,
     * finds nothing and waits on; nothing else is owed. */
    tc__sem_line_signal(&ctx->mbox[peer].bell);
}

/* Takes the oldest handle with tag from peer into bytes: 1, or 0 if none. */
static int take(tc_chan_ctx_t *ctx, int peer, uint32_t tag, unsigned char *bytes)
{
    tc_mbox_t *box = &ctx->mbox[peer];
    tc_mbox_msg_t **pp, *m;
    uint32_t i, expect;
    int best;

    if (!ctx->peers[peer].same_node) {
        pthread_mutex_lock(&ctx->mu);
        for (pp = &ctx->inbox; *pp != NULL; pp = &(*pp)->next) {
            if ((*pp)->peer == peer && (*pp)->tag == tag) {
                m = *pp;
                *pp = m->next;
                pthread_mutex_unlock(&ctx->mu);
                memcpy(bytes, m->bytes, TC_MEM_HANDLE_BYTES);
                free(m);
                return 1;
            }
        }
        pthread_mutex_unlock(&ctx->mu);
        return 0;
    }
    for (;;) {
        best = -1;
        for (i = 0; i < TC_CHAN_MBOX_SLOTS; i++) {
            tc_mbox_slot_t *s = &box->slot[i];
            /* acquire: a full slot's tag and seq are the sender's. */
            if (atomic_load_explicit(&s->state, memory_order_acquire) == TC_MBOX_FULL &&
                s->tag == tag && (best < 0 || s->seq < box->slot[best].seq)) {
                best = (int)i;
            }
        }
        if (best < 0) {
            return 0;
        }
        expect = TC_MBOX_FULL;
        if (atomic_compare_exchange_strong_explicit(&box->slot[best].state, &expect,
                                                    TC_MBOX_READING, memory_order_acquire,
                                                    memory_order_relaxed)) {
            if (box->slot[best].tag != tag) {
                /* Taken, freed and filled again since we looked (another
                 * receiving thread): not ours; put it back, look again. */
                atomic_store_explicit(&box->slot[best].state, TC_MBOX_FULL, memory_order_release);
                continue;
            }
            memcpy(bytes, box->slot[best].bytes, TC_MEM_HANDLE_BYTES);
            /* release: the copy is done before a sender may write again. */
            atomic_store_explicit(&box->slot[best].state, TC_MBOX_FREE, memory_order_release);
            return 1;
        }
        /* Another thread took it: look again. */
    }
}

tc_status_t tc_mem_handle_recv(tc_chan_ctx_t *ctx, int peer, uint32_t tag, int64_t timeout_ns,
                               tc_rmem_t **rmem_p)
{
    unsigned char bytes[TC_MEM_HANDLE_BYTES];
    uint64_t t0 = tc__now_ns(), bell, elapsed;
    tc_rmem_t *r = NULL;
    tc_status_t st;

    if (ctx == NULL || rmem_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_handle_recv: %s is NULL",
                             ctx == NULL ? "ctx" : "rmem_p");
    }
    if (peer < 0 || peer >= ctx->size) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_handle_recv: peer %d is not a rank (0..%d)", peer,
                             ctx->size - 1);
    }
    if (!ctx->peers[peer].same_node && ctx->proxy != NULL) {
        tc__proxy_kick(ctx->proxy, TC_CHAN_KICK_NS); /* it comes through the proxy */
    }
    for (;;) {
        /* acquire: read before looking, so a handle put in later moves it. */
        bell = atomic_load_explicit(&ctx->mbox[peer].bell.value, memory_order_acquire);
        if (take(ctx, peer, tag, bytes)) {
            break;
        }
        elapsed = tc__now_ns() - t0;
        if (timeout_ns >= 0 && elapsed >= (uint64_t)timeout_ns) {
            return tc__set_error(TC_ERR_TIMEOUT,
                                 "tc_mem_handle_recv: no handle with tag %u from "
                                 "rank %d within %lld ns",
                                 tag, peer, (long long)timeout_ns);
        }
        st = tc__sem_line_wait(ctx, peer, &ctx->mbox[peer].bell, bell + 1,
                               timeout_ns < 0 ? -1 : timeout_ns - (int64_t)elapsed,
                               "tc_mem_handle_recv");
        if (st == TC_ERR_TIMEOUT) {
            return tc__set_error(TC_ERR_TIMEOUT,
                                 "tc_mem_handle_recv: no handle with tag %u "
                                 "from rank %d within %lld ns",
                                 tag, peer, (long long)timeout_ns);
        }
        if (st != TC_OK) {
            return st; /* the peer is lost: said by the wait */
        }
    }
    if ((st = tc_mem_open(ctx, bytes, sizeof(bytes), &r)) != TC_OK) {
        return st; /* tc_mem_open said why */
    }
    if (r->rank != peer) {
        int owner = r->rank;
        tc_mem_close(r);
        return tc__set_error(TC_ERR_ARG,
                             "tc_mem_handle_recv: the handle from rank %d names "
                             "rank %d's memory",
                             peer, owner);
    }
    *rmem_p = r;
    return TC_OK;
}
