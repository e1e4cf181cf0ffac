/*
 * neg.c - the negotiation state machine's API (neg.h): its life, this rank's
 * submissions (first-time names to rank 0, cached ones to the next cycle),
 * the messages that come in, and the step that moves it on. The top of the
 * state machine's files (neg_internal.h lists them in calling order).
 *
 * The protocol is in docs/negotiation.md; this file must never call MPI,
 * read the clock, or touch what a submission's handle points to.
 */
#define _GNU_SOURCE
#include "neg/neg_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kind/kind.h"
#include "reduce/reduce.h"
#include "util/log.h"

/* ---- the probes' tree ---------------------------------------------------- */

int tc__neg_parent(int rank)
{
    return rank <= 0 ? -1 : rank - (rank & -rank);
}

int tc__neg_children(int rank, int size, int *children, int max)
{
    long step;
    int n = 0;

    /* rank 0 has children 1, 2, 4, ...; rank r those below its lowest bit */
    for (step = 1; rank + step < size && (rank == 0 || step < (rank & -rank)); step <<= 1) {
        if (n < max) {
            children[n] = (int)(rank + step);
        }
        n++;
    }
    return n;
}

/* ---- life ---------------------------------------------------------------- */

tc_status_t tc__neg_create(const tc_neg_params_t *p, tc_neg_t **neg_p)
{
    tc_neg_t *n;
    int k;

    if (p->size < 1 || p->rank < 0 || p->rank >= p->size) {
        return TC_ERR_ARG;
    }
    n = calloc(1, sizeof(*n));
    if (n == NULL) {
        return TC_ERR_NOMEM;
    }
    n->p = *p;
    n->parent = tc__neg_parent(p->rank);
    n->nchild = tc__neg_children(p->rank, p->size, n->child, NEG_MAX_CHILDREN);
    n->state = TC_NEG_RUNNING;
    n->fresh_tail = &n->fresh;
    n->shutdown_from = -1;
    n->spread_from = -2;
    neg_exch_init(n);
    tc__cache_init(&n->cache);
    tc__hmap_init(&n->full);
    tc__hmap_init(&n->evicted);
    tc__hmap_init(&n->expired);
    if (n->parent >= 0) {
        n->probe_nb[n->nprobe_nb++] = n->parent;
    }
    for (k = 0; k < n->nchild; k++) {
        n->probe_nb[n->nprobe_nb++] = n->child[k];
    }
    if (p->rank == 0) {
        n->bye_req_left = p->size - 1;
        if (tc__coord_create(p->size, &n->coord) != TC_OK ||
            (n->bye_req = calloc((size_t)p->size, 1)) == NULL) {
            tc__neg_destroy(n);
            return TC_ERR_NOMEM;
        }
    }
    *neg_p = n;
    return TC_OK;
}

static void free_full(const char *key, size_t len, void *val, void *arg)
{
    (void)key;
    (void)len;
    (void)arg;
    neg_sub_free(val);
}

static void free_evicted(const char *key, size_t len, void *val, void *arg)
{
    (void)key;
    (void)len;
    (void)arg;
    free(val);
}

void tc__neg_destroy(tc_neg_t *n)
{
    uint32_t i;

    if (n == NULL) {
        return;
    }
    tc__neg_clear(n);
    for (size_t j = 0; j < n->capsends; j++) {
        tc__wire_buf_free(&n->sends[j].buf);
    }
    free(n->sends);
    free(n->items);
    free(n->keep);
    tc__hmap_foreach(&n->full, free_full, NULL); /* fresh's too */
    tc__hmap_destroy(&n->full);
    tc__hmap_foreach(&n->evicted, free_evicted, NULL);
    tc__hmap_destroy(&n->evicted);
    tc__hmap_foreach(&n->expired, free_evicted, NULL);
    tc__hmap_destroy(&n->expired);
    for (i = 0; i < n->cache.nslots; i++) {
        tc_cache_entry_t *ce = n->cache.slots[i];
        if (ce != NULL) {
            neg_sub_free(ce->pending);
            ce->pending = NULL;
        }
    }
    tc__cache_destroy(&n->cache);
    neg_exch_free(n);
    free(n->drops);
    free(n->roll);
    tc__coord_destroy(n->coord);
    free(n->bye_req);
    free(n);
}

/* ---- submissions --------------------------------------------------------- */

tc_status_t tc__neg_submit(tc_neg_t *n, const tc_wire_request_t *w, void *req, const void *data,
                           void *out)
{
    /* only the global set's names are cached (tcoll.h, process sets) */
    tc_cache_entry_t *ce = w->pset == 0 ? tc__cache_find(&n->cache, w->name, w->name_len) : NULL;
    char key[TC_WIRE_KEY_MAX];
    size_t klen = tc__wire_key(key, w->name, w->name_len, w->pset);
    sub_t *s;

    if ((ce != NULL && ce->pending != NULL) || tc__hmap_get(&n->full, key, klen)) {
        return TC_ERR_ARG;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL || (s->name = strndup(w->name, w->name_len)) == NULL) {
        free(s);
        return TC_ERR_NOMEM;
    }
    if (w->nranks > 0) { /* the rank list is the caller's: keep a copy */
        if ((s->ranks = malloc(w->nranks * sizeof(*s->ranks))) == NULL) {
            free(s->name);
            free(s);
            return TC_ERR_NOMEM;
        }
        memcpy(s->ranks, w->ranks, w->nranks * sizeof(*s->ranks));
    }
    s->w = *w;
    s->w.name = s->name;
    s->w.ranks = s->ranks;
    s->req = req;
    s->data = data;
    s->out = out;
    if (ce != NULL) {
        /* cached: it runs once every rank has it waiting (docs/negotiation.md) */
        ce->pending = s;
        ce->stale = !tc__cache_matches(ce, w);
        n->ncached++;
        n->want = 1;
        return TC_OK;
    }
    if (tc__hmap_put(&n->full, key, klen, s) != 0) {
        neg_sub_free(s);
        return TC_ERR_NOMEM;
    }
    *n->fresh_tail = s;
    n->fresh_tail = &s->next;
    return TC_OK;
}

void tc__neg_shutdown(tc_neg_t *n)
{
    n->shutdown_local = 1;
}

/* Rank 0 enters rank's submission in its message table. */
static void coord_add(tc_neg_t *n, int rank, const tc_wire_request_t *w, uint64_t now)
{
    char err[512];
    uint64_t *since;
    tc_status_t st = tc__coord_add_at(n->coord, rank, w, now, err, sizeof(err));

    if (st != TC_OK) {
        neg_fail(n, st == TC_ERR_NOMEM ? TC_ERR_NOMEM : TC_ERR_TRANSPORT,
                 "rank 0's message table: %s", st == TC_ERR_NOMEM ? "out of memory" : err);
        return;
    }
    since = w->pset == 0 ? tc__hmap_get(&n->evicted, w->name, w->name_len) : NULL;
    if (since != NULL) {
        tc__coord_backdate(n->coord, w->name, w->name_len, *since);
    }
}

/* Sends this rank's first-time submissions (and a shutdown request) to rank
 * 0, or, at rank 0, enters them in the message table. */
static int send_fresh(tc_neg_t *n, uint64_t now)
{
    tc_wire_msg_t out = {0};
    uint32_t count = 0, i = 0;
    sub_t *s, *next;
    int ask_shutdown = n->shutdown_local && !n->shutdown_sent;

    for (s = n->fresh; s != NULL; s = s->next) {
        count++;
    }
    if (count == 0 && !ask_shutdown) {
        return 0;
    }
    if (n->parent >= 0) {
        out.type = TC_WIRE_REQUESTS;
        out.flags = TC_WIRE_F_SEQ | (ask_shutdown ? TC_WIRE_F_SHUTDOWN : 0);
        out.seq = n->ncycles;
        out.count = count;
        out.reqs = count > 0 ? malloc(count * sizeof(*out.reqs)) : NULL;
        if (count > 0 && out.reqs == NULL) {
            neg_fail(n, TC_ERR_NOMEM, "out of memory sending submissions");
            return 1;
        }
        for (s = n->fresh; s != NULL; s = s->next) {
            out.reqs[i++] = s->w;
        }
        neg_send_to(n, &out, TC_NEG_TAG_REQ, 0);
        free(out.reqs);
    } else if (ask_shutdown && n->shutdown_from < 0) {
        n->shutdown_from = 0;
    }
    n->shutdown_sent |= ask_shutdown;
    for (s = n->fresh; s != NULL && n->state == TC_NEG_RUNNING; s = next) {
        next = s->next;
        s->next = NULL;
        s->sent = 1;
        n->fresh = next;
        if (n->parent < 0) {
            coord_add(n, 0, &s->w, now);
        }
    }
    if (n->fresh == NULL) {
        n->fresh_tail = &n->fresh;
    }
    return 1;
}

/* ---- messages in --------------------------------------------------------- */

/* Rank 0: whether rank src's submission of w was sent before src learned
 * that the name had expired (it fails there: docs/negotiation.md, "Stalls"). */
static int crossed_expiry(const tc_neg_t *n, const tc_wire_msg_t *msg, const tc_wire_request_t *w)
{
    char key[TC_WIRE_KEY_MAX];
    const uint64_t *at =
        tc__hmap_get(&n->expired, key, tc__wire_key(key, w->name, w->name_len, w->pset));

    return at != NULL && (msg->flags & TC_WIRE_F_SEQ) && msg->seq < *at;
}

static void receive_req(tc_neg_t *n, int src, const tc_wire_msg_t *msg, uint64_t now)
{
    uint32_t i;

    if (msg->type == TC_WIRE_BYE) {
        /* a rank may finish the cycle that terminates before rank 0 does */
        if (n->state == TC_NEG_RUNNING && !n->term_sent) {
            neg_fail(n, TC_ERR_TRANSPORT, "rank %d stopped after a failure", src);
        } else if (!n->bye_req[src]) {
            n->bye_req[src] = 1;
            n->bye_req_left--;
        }
        return;
    }
    if (msg->type != TC_WIRE_REQUESTS) {
        neg_fail(n, TC_ERR_TRANSPORT,
                 "protocol error: message type %d from rank %d as a "
                 "request",
                 msg->type, src);
        return;
    }
    if (n->state != TC_NEG_RUNNING) {
        return; /* submissions after the end: their ranks fail them themselves */
    }
    for (i = 0; i < msg->count && n->state == TC_NEG_RUNNING; i++) {
        if (!crossed_expiry(n, msg, &msg->reqs[i])) {
            coord_add(n, src, &msg->reqs[i], now);
        }
    }
    if ((msg->flags & TC_WIRE_F_SHUTDOWN) && n->shutdown_from < 0) {
        n->shutdown_from = src;
    }
}

void tc__neg_receive(tc_neg_t *n, int src, int tag, tc_wire_msg_t *msg, uint64_t now)
{
    if (n->state == TC_NEG_FAILED || src < 0 || src >= n->p.size || src == n->p.rank) {
        return;
    }
    switch (tag) {
    case TC_NEG_TAG_ABORT:
        n->state = TC_NEG_FAILED;
        n->failed_here = 0;
        n->status = msg->type == TC_WIRE_BYE && (msg->flags & TC_WIRE_F_TERMINATE)
                        ? (tc_status_t)msg->term_status
                        : TC_ERR_TRANSPORT;
        snprintf(n->text, sizeof(n->text), "rank %d stopped: %.*s", src, (int)msg->term_text_len,
                 msg->term_text != NULL ? msg->term_text : "");
        return;
    case TC_NEG_TAG_PING: neg_receive_ping(n, src, msg); return;
    case TC_NEG_TAG_PONG: neg_receive_pong(n, src); return;
    case TC_NEG_TAG_REQ:
        if (n->p.rank != 0) {
            break;
        }
        receive_req(n, src, msg, now);
        return;
    case TC_NEG_TAG_CYCLE:
        if (msg->type == TC_WIRE_BYE && src == n->extra && msg->flags == 0) {
            n->bye_extra = 1;
            return;
        }
        if (msg->type != TC_WIRE_CYCLE) {
            break;
        }
        neg_receive_cycle(n, src, msg, now);
        return;
    default: break;
    }
    neg_fail(n, TC_ERR_TRANSPORT,
             "protocol error: unexpected message (type %d, tag %d) from "
             "rank %d",
             msg->type, tag, src);
}

/* ---- the step ------------------------------------------------------------ */

int tc__neg_step(tc_neg_t *n, uint64_t now)
{
    int progress = 0;

    if (n->last_progress_ns == 0) {
        n->last_progress_ns = now;
    }
    if (n->state == TC_NEG_RUNNING) {
        progress |= send_fresh(n, now);
    }
    if (n->state == TC_NEG_RUNNING) {
        progress |= neg_exch_step(n, now);
    }
    if (n->state == TC_NEG_DRAINING && n->bye_req_left <= 0 && (n->extra < 0 || n->bye_extra)) {
        n->state = TC_NEG_DONE_OK;
        progress = 1;
    }
    if (n->state == TC_NEG_RUNNING && n->p.rank == 0) {
        neg_stall_check(n, now);
    }
    if (n->state == TC_NEG_RUNNING || n->state == TC_NEG_DRAINING) {
        neg_probe_step(n, now);
    }
    return progress;
}
