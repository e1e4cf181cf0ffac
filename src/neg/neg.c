/*
 * neg.c - the negotiation state machine's core: submissions, messages in, and
 * the end of a cycle, which every rank processes the same way so that every
 * rank runs the same collectives in the same order.
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

static void sub_free(sub_t *s)
{
    if (s != NULL) {
        free(s->name);
        free(s->ranks);
        free(s);
    }
}

static void free_full(const char *key, size_t len, void *val, void *arg)
{
    (void)key;
    (void)len;
    (void)arg;
    sub_free(val);
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
            sub_free(ce->pending);
            ce->pending = NULL;
        }
    }
    tc__cache_destroy(&n->cache);
    neg_exch_free(n);
    free(n->drops);
    tc__coord_destroy(n->coord);
    free(n->bye_req);
    free(n);
}

/* Stops this rank for a reason decided here. The first cause wins. */
void neg_fail(tc_neg_t *n, tc_status_t st, const char *fmt, ...)
{
    va_list ap;

    if (n->state == TC_NEG_FAILED) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(n->text, sizeof(n->text), fmt, ap);
    va_end(ap);
    n->state = TC_NEG_FAILED;
    n->status = st;
    n->failed_here = 1;
}

void tc__neg_fail(tc_neg_t *n, tc_status_t st, const char *text)
{
    neg_fail(n, st, "%s", text);
}

/* ---- submissions --------------------------------------------------------- */

int neg_eager_gathers(const tc_neg_t *n, const tc_wire_request_t *w)
{
    return n->p.deterministic && tc__order_matters((tc_dtype_t)w->dtype, (tc_op_t)w->op);
}

/* Whether a cached submission rides eagerly: a small tensor of a kind that
 * can combine eager inputs (kind/kind.h), whose record (gathered: one input per
 * rank) fits TCOLL_EAGER_BYTES. *bytes_p: the record's size. */
int neg_is_eager(const tc_neg_t *n, const tc_wire_request_t *w, size_t *bytes_p)
{
    const tc_kind_desc_t *kd = tc__kind_get(w->kind);
    size_t count = 1;
    int d;

    if (n->p.eager_bytes == 0 || kd == NULL || kd->eager_combine == NULL) {
        return 0;
    }
    if (neg_eager_gathers(n, w)) {
        count = (size_t)n->p.size; /* a slot per rank */
    }
    for (d = 0; d < w->ndim; d++) {
        if (w->shape[d] <= 0 || (uint64_t)w->shape[d] > n->p.eager_bytes) {
            return 0;
        }
        count *= (size_t)w->shape[d];
        if (count > n->p.eager_bytes) {
            return 0;
        }
    }
    *bytes_p = count * tc_dtype_size((tc_dtype_t)w->dtype);
    return *bytes_p > 0 && *bytes_p <= n->p.eager_bytes;
}

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
        sub_free(s);
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

/* ---- the end of a cycle: the same processing on every rank ---------------- */

/* Drops the cache entries of ids; this rank's submissions of those names
 * are negotiated in full next (before newer ones). */
static void drop_ids(tc_neg_t *n, const uint32_t *ids, uint32_t count)
{
    sub_t *back = NULL, **tail = &back;
    uint32_t i;
    int found;

    for (i = 0; i < count; i++) {
        sub_t *s = tc__cache_drop(&n->cache, ids[i], &found);
        neg_id_reset(n, ids[i]);
        if (s != NULL) {
            char key[TC_WIRE_KEY_MAX];
            n->ncached--;
            if (tc__hmap_put(&n->full, key, tc__wire_key(key, s->name, s->w.name_len, s->w.pset),
                             s) != 0) {
                neg_fail(n, TC_ERR_NOMEM, "out of memory tracking submissions");
                sub_free(s); /* every sub in fresh is in full: the engine fails its request */
                continue;
            }
            s->sent = 0;
            *tail = s;
            tail = &s->next;
        }
    }
    if (back != NULL) {
        *tail = n->fresh;
        if (n->fresh == NULL) {
            n->fresh_tail = tail;
        }
        n->fresh = back;
    }
}

/* An item's response, copied so that it outlives msg. */
static int keep_resp(tc_neg_t *n, tc_neg_item_t *it, const tc_wire_response_t *r)
{
    it->resp = *r;
    it->resp.name = neg_keep(n, r->name, r->name_len + 1);
    if (it->resp.name == NULL) {
        return -1;
    }
    ((char *)it->resp.name)[r->name_len] = '\0';
    if (r->ndim0 > 0 &&
        (it->resp.dim0 = neg_keep(n, r->dim0, r->ndim0 * sizeof(*r->dim0))) == NULL) {
        return -1;
    }
    if (r->rtype == TC_WIRE_ERROR) {
        char *t = neg_keep(n, r->text != NULL ? r->text : "", r->text_len + 1);
        if (t == NULL) {
            return -1;
        }
        t[r->text_len] = '\0';
        it->resp.text = t;
    }
    return 0;
}

static void run_responses(tc_neg_t *n, const tc_wire_msg_t *msg)
{
    uint32_t i;

    for (i = 0; i < msg->count && n->state != TC_NEG_FAILED; i++) {
        const tc_wire_response_t *r = &msg->resps[i];
        char key[TC_WIRE_KEY_MAX];
        size_t klen = tc__wire_key(key, r->name, r->name_len, r->pset);
        sub_t *s = tc__hmap_get(&n->full, key, klen);
        tc_neg_item_t *it;

        if (s != NULL && s->sent) {
            tc__hmap_remove(&n->full, key, klen);
        } else {
            s = NULL; /* not sent yet: rank 0 decided without it (it expired) */
        }

        if (s == NULL && r->rtype == TC_WIRE_RUN && r->pset == 0 &&
            (!r->has_desc || r->cache_ref > 0)) {
            /* only a rank that joined (tc_join) runs what it did not submit,
             * from the description rank 0 sends for it, never cached; in
             * another set, a rank that is not a member has nothing to run
             * (the executor tells the two apart) */
            neg_fail(n, TC_ERR_TRANSPORT, "protocol error: rank 0 scheduled tensor '%.*s', "
                     "which this rank has not submitted", (int)r->name_len, r->name);
            return;
        }
        if (r->rtype == TC_WIRE_RUN && r->cache_ref > 0) {
            tc_status_t st = tc__cache_file(&n->cache, r->cache_ref - 1, &s->w, r);
            if (st != TC_OK) {
                neg_fail(n, st == TC_ERR_NOMEM ? TC_ERR_NOMEM : TC_ERR_TRANSPORT,
                         st == TC_ERR_NOMEM ? "out of memory filing tensor '%s'"
                                            : "protocol error: cannot file tensor '%s' under "
                                              "cache id %u", s->name, r->cache_ref - 1);
                sub_free(s);
                return;
            }
        }
        it = neg_add_item(n, r->rtype == TC_WIRE_RUN ? TC_NEG_RUN : TC_NEG_FAIL,
                      s != NULL ? s->req : NULL);
        sub_free(s);
        if (it == NULL || keep_resp(n, it, r) != 0) {
            return;
        }
    }
}

static void run_cached(tc_neg_t *n, const tc_wire_msg_t *msg)
{
    uint32_t i;

    for (i = 0; i < msg->nready && n->state != TC_NEG_FAILED; i++) {
        uint32_t id = msg->ready[i];
        tc_cache_entry_t *ce = tc__cache_get(&n->cache, id);
        const tc_wire_eager_t *x;
        tc_neg_item_t *it;
        sub_t *s;
        size_t bytes;
        int eager;

        if (neg_has_id(msg->stale, msg->nstale, id)) {
            continue; /* dropped: it goes back to full negotiation */
        }
        if (ce == NULL || ce->pending == NULL || ce->stale) {
            neg_fail(n, TC_ERR_TRANSPORT, "protocol error: cache id %u runs, but is not "
                     "waiting on this rank", id);
            return;
        }
        s = ce->pending;
        eager = neg_is_eager(n, &s->w, &bytes);
        x = eager ? neg_find_eager(msg->eager, msg->neager, id) : NULL;
        if (eager && x == NULL && !s->promoted && !(msg->flags & TC_WIRE_F_TERMINATE)) {
            /* a small allreduce whose inputs did not all come: every rank
             * sends its input in the next cycle, which completes it (the
             * last cycle runs it as a collective instead) */
            s->promoted = 1;
            n->want = 1;
            continue;
        }
        ce->pending = NULL;
        n->ncached--;
        neg_id_reset(n, id);
        if (x != NULL) { /* every rank's input came with the cycle (gathered: one slot
                          * per rank, combined here in the documented order) */
            const size_t len = neg_eager_gathers(n, &s->w) ? x->len / (size_t)n->p.size : x->len;
            it = neg_add_item(n, TC_NEG_DONE, s->req);
            if (it != NULL && s->out != NULL) {
                it->result = s->out;
            } else if (it != NULL) {
                it->result = neg_keep(n, NULL, len);
            }
            if (it != NULL && it->result != NULL) { /* the job-wide partial: finish it */
                tc_dtype_t dt = (tc_dtype_t)ce->desc.dtype;
                if (len == x->len) {
                    memcpy((void *)it->result, x->data, len);
                } else if (neg_eager_fold(n, &s->w, x->data, (void *)it->result, len) != 0) {
                    sub_free(s);
                    return; /* failed (out of memory) */
                }
                it->result_len = len;
                tc__kind_get(ce->desc.kind)
                    ->eager_finish(&ce->desc, (void *)it->result, len / tc_dtype_size(dt),
                                   n->p.size);
            }
        } else {
            it = neg_add_item(n, TC_NEG_RUN, s->req);
            if (it != NULL) {
                tc_wire_response_t r = {.rtype = TC_WIRE_RUN, .name = ce->name,
                                        .name_len = ce->desc.name_len, .ndim0 = ce->ndim0,
                                        .dim0 = ce->dim0, .cache_ref = id + 1};
                keep_resp(n, it, &r);
            }
        }
        sub_free(s);
    }
}

/* Every rank, at the end of every cycle, with the job-wide part g: rank 0's
 * stall clocks, then drop, run the decisions, run the cached ids. */
void neg_run_cycle(tc_neg_t *n, const tc_wire_msg_t *g, uint64_t now)
{
    uint32_t i;

    if (g->seq != n->ncycles || g->cache_gen != n->cache.gen) {
        neg_fail(n, TC_ERR_TRANSPORT, "protocol error: cycle %llu with cache generation %llu, "
                 "this rank expects cycle %llu at generation %llu",
                 (unsigned long long)g->seq, (unsigned long long)g->cache_gen,
                 (unsigned long long)n->ncycles, (unsigned long long)n->cache.gen);
        return;
    }
    n->last_progress_ns = now;
    for (i = 0; n->p.rank == 0 && i < g->nsome; i++) { /* some ranks have it, not all */
        idst_t *st = neg_idst(n, g->some[i]);
        if (st != NULL && st->since_ns == 0) {
            st->since_ns = now;
        }
    }
    n->ncycles++;
    drop_ids(n, g->stale, g->nstale);
    run_responses(n, g);
    run_cached(n, g);
    if ((g->flags & TC_WIRE_F_TERMINATE) && n->state == TC_NEG_RUNNING) {
        tc_wire_msg_t bye = {.type = TC_WIRE_BYE};
        n->state = TC_NEG_DRAINING;
        n->status = (tc_status_t)g->term_status;
        snprintf(n->text, sizeof(n->text), "%.*s", (int)g->term_text_len,
                 g->term_text != NULL ? g->term_text : "");
        if (n->p.rank != 0) {
            neg_send_to(n, &bye, TC_NEG_TAG_REQ, 0);
        }
        if (n->host >= 0) {
            neg_send_to(n, &bye, TC_NEG_TAG_CYCLE, n->host);
        }
    }
}

/* ---- messages in --------------------------------------------------------- */

/* Rank 0: whether rank src's submission of w was sent before src learned
 * that the name had expired (it fails there: docs/negotiation.md, "Stalls"). */
static int crossed_expiry(const tc_neg_t *n, const tc_wire_msg_t *msg, const tc_wire_request_t *w)
{
    char key[TC_WIRE_KEY_MAX];
    const uint64_t *at = tc__hmap_get(&n->expired, key,
                                      tc__wire_key(key, w->name, w->name_len, w->pset));

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
        neg_fail(n, TC_ERR_TRANSPORT, "protocol error: message type %d from rank %d as a "
                 "request", msg->type, src);
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
                        ? (tc_status_t)msg->term_status : TC_ERR_TRANSPORT;
        snprintf(n->text, sizeof(n->text), "rank %d stopped: %.*s", src,
                 (int)msg->term_text_len, msg->term_text != NULL ? msg->term_text : "");
        return;
    case TC_NEG_TAG_PING:
        neg_receive_ping(n, src, msg);
        return;
    case TC_NEG_TAG_PONG:
        neg_receive_pong(n, src);
        return;
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
    default:
        break;
    }
    neg_fail(n, TC_ERR_TRANSPORT, "protocol error: unexpected message (type %d, tag %d) from "
             "rank %d", msg->type, tag, src);
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
    if (n->state == TC_NEG_DRAINING && n->bye_req_left <= 0 &&
        (n->extra < 0 || n->bye_extra)) {
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
