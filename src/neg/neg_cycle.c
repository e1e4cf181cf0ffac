/*
 * neg_cycle.c - the end of a negotiation cycle, which every rank processes
 * the same way with the same job-wide part (docs/negotiation.md, "Cycles"):
 * drop the stale ids, run rank 0's decisions in order, run the ready ids,
 * restart the stall clocks. Called by the exchange (neg_exch.c) when the
 * last round's part is in; calls the parts (neg_part.c: the eager fold),
 * the ids and the outputs below it.
 */
#define _GNU_SOURCE
#include "neg/neg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kind/kind.h"
#include "util/log.h"

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
                neg_sub_free(s); /* every sub in fresh is in full: the engine fails its request */
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
            neg_fail(n, TC_ERR_TRANSPORT,
                     "protocol error: rank 0 scheduled tensor '%.*s', "
                     "which this rank has not submitted",
                     (int)r->name_len, r->name);
            return;
        }
        if (r->rtype == TC_WIRE_RUN && r->cache_ref > 0) {
            tc_status_t st = tc__cache_file(&n->cache, r->cache_ref - 1, &s->w, r);
            if (st != TC_OK) {
                neg_fail(n, st == TC_ERR_NOMEM ? TC_ERR_NOMEM : TC_ERR_TRANSPORT,
                         st == TC_ERR_NOMEM ? "out of memory filing tensor '%s'"
                                            : "protocol error: cannot file tensor '%s' under "
                                              "cache id %u",
                         s->name, r->cache_ref - 1);
                neg_sub_free(s);
                return;
            }
        }
        it = neg_add_item(n, r->rtype == TC_WIRE_RUN ? TC_NEG_RUN : TC_NEG_FAIL,
                          s != NULL ? s->req : NULL);
        neg_sub_free(s);
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
            neg_fail(n, TC_ERR_TRANSPORT,
                     "protocol error: cache id %u runs, but is not "
                     "waiting on this rank",
                     id);
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
                    neg_sub_free(s);
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
                tc_wire_response_t r = {.rtype = TC_WIRE_RUN,
                                        .name = ce->name,
                                        .name_len = ce->desc.name_len,
                                        .ndim0 = ce->ndim0,
                                        .dim0 = ce->dim0,
                                        .cache_ref = id + 1};
                keep_resp(n, it, &r);
            }
        }
        neg_sub_free(s);
    }
}

/* Every rank, at the end of every cycle, with the job-wide part g: rank 0's
 * stall clocks, then drop, run the decisions, run the cached ids. */
void neg_run_cycle(tc_neg_t *n, const tc_wire_msg_t *g, uint64_t now)
{
    uint32_t i;

    if (g->seq != n->ncycles || g->cache_gen != n->cache.gen) {
        neg_fail(n, TC_ERR_TRANSPORT,
                 "protocol error: cycle %llu with cache generation %llu, "
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
