/*
 * neg_io.c - the bottom of the negotiation state machine: failing (the
 * first cause wins), a submission's record, the outputs (encoded messages
 * to send, the items to run and the storage they point into, all kept until
 * tc__neg_clear) and the questions the engine asks it. Calls no other neg
 * file (cache.c and coordinator.c only for what it reports). Never calls
 * MPI.
 */
#define _GNU_SOURCE
#include "neg/neg_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/status.h"

/* ---- failing, and a submission's record ----------------------------------- */

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

void neg_sub_free(sub_t *s)
{
    if (s != NULL) {
        free(s->name);
        free(s->ranks);
        free(s);
    }
}

/* ---- outputs ------------------------------------------------------------- */

/* Encodes msg into a new send with no destination yet; NULL after a failure. */
tc_neg_send_t *neg_send(tc_neg_t *n, const tc_wire_msg_t *msg, int tag)
{
    tc_neg_send_t *s;
    tc_wire_buf_t buf;
    tc_status_t st;

    if (n->nsends == n->capsends) {
        size_t cap = n->capsends < 8 ? 8 : n->capsends * 2;
        tc_neg_send_t *v = realloc(n->sends, cap * sizeof(*v));
        if (v == NULL) {
            neg_fail(n, TC_ERR_NOMEM, "out of memory queueing a control message");
            return NULL;
        }
        memset(v + n->capsends, 0, (cap - n->capsends) * sizeof(*v));
        n->sends = v;
        n->capsends = cap;
    }
    s = &n->sends[n->nsends];
    buf = s->buf; /* an earlier message's memory, kept for reuse */
    memset(s, 0, sizeof(*s));
    s->buf = buf;
    s->buf.len = 0;
    if ((st = tc__wire_encode(msg, &s->buf)) != TC_OK) {
        tc__wire_buf_free(&s->buf);
        if (st == TC_ERR_NOMEM) {
            neg_fail(n, st, "cannot encode a control message (out of memory)");
        } else {
            neg_fail(n, TC_ERR_TRANSPORT,
                     "cannot encode a control message (internal error): "
                     "%s",
                     tc_last_error());
        }
        return NULL;
    }
    s->tag = tag;
    n->nsends++;
    return s;
}

void neg_send_to(tc_neg_t *n, const tc_wire_msg_t *msg, int tag, int dst)
{
    tc_neg_send_t *s = neg_send(n, msg, tag);

    if (s != NULL) {
        s->dst[s->ndst++] = dst;
    }
}

/* A copy of src (NULL: uninitialized memory) that lives until tc__neg_clear;
 * NULL after a failure. */
void *neg_keep(tc_neg_t *n, const void *src, size_t len)
{
    void *p;

    if (n->nkeep == n->capkeep) {
        size_t cap = n->capkeep < 16 ? 16 : n->capkeep * 2;
        void **v = realloc(n->keep, cap * sizeof(*v));
        if (v == NULL) {
            neg_fail(n, TC_ERR_NOMEM, "out of memory keeping a negotiation result");
            return NULL;
        }
        n->keep = v;
        n->capkeep = cap;
    }
    p = malloc(len > 0 ? len : 1);
    if (p == NULL) {
        neg_fail(n, TC_ERR_NOMEM, "out of memory keeping a negotiation result");
        return NULL;
    }
    if (len > 0 && src != NULL) {
        memcpy(p, src, len);
    }
    n->keep[n->nkeep++] = p;
    return p;
}

tc_neg_item_t *neg_add_item(tc_neg_t *n, tc_neg_action_t action, void *req)
{
    tc_neg_item_t *it;

    if (n->nitems == n->capitems) {
        size_t cap = n->capitems < 16 ? 16 : n->capitems * 2;
        tc_neg_item_t *v = realloc(n->items, cap * sizeof(*v));
        if (v == NULL) {
            neg_fail(n, TC_ERR_NOMEM, "out of memory listing collectives to run");
            return NULL;
        }
        n->items = v;
        n->capitems = cap;
    }
    it = &n->items[n->nitems++];
    memset(it, 0, sizeof(*it));
    it->action = action;
    it->req = req;
    it->cycle = n->ncycles - 1; /* items come out at the end of a cycle */
    return it;
}

tc_neg_send_t *tc__neg_sends(tc_neg_t *n, size_t *count_p)
{
    *count_p = n->nsends;
    return n->sends;
}

tc_neg_item_t *tc__neg_items(tc_neg_t *n, size_t *count_p)
{
    *count_p = n->nitems;
    return n->items;
}

void tc__neg_clear(tc_neg_t *n)
{
    size_t i;

    for (i = 0; i < n->nsends; i++) { /* the memory is kept for the next sends */
        tc__wire_buf_reset(&n->sends[i].buf);
    }
    for (i = 0; i < n->nkeep; i++) {
        free(n->keep[i]);
    }
    n->nsends = n->nitems = n->nkeep = 0;
}

/* ---- what the engine asks ------------------------------------------------- */

/* Whether this rank has anything pending: submissions, a cycle, or (rank 0)
 * names in its message table. */
int neg_has_work(const tc_neg_t *n)
{
    return n->ncached > 0 || n->full.count > 0 || n->fresh != NULL || n->in_cycle ||
           (n->coord != NULL &&
            (tc__coord_pending(n->coord) > 0 || tc__coord_nready(n->coord) > 0));
}

tc_neg_state_t tc__neg_state(const tc_neg_t *n)
{
    return n->state;
}

tc_status_t tc__neg_status(const tc_neg_t *n, const char **text_p)
{
    *text_p = n->text;
    return n->status;
}

int tc__neg_failed_here(const tc_neg_t *n)
{
    return n->state == TC_NEG_FAILED && n->failed_here;
}

int tc__neg_busy(const tc_neg_t *n)
{
    return n->state == TC_NEG_DRAINING || neg_has_work(n);
}

int tc__neg_missing_byes(const tc_neg_t *n, uint8_t *flags)
{
    int q, count = 0;

    memset(flags, 0, (size_t)n->p.size);
    for (q = 1; n->bye_req != NULL && q < n->p.size; q++) {
        flags[q] = !n->bye_req[q];
    }
    if (n->extra >= 0) {
        flags[n->extra] |= !n->bye_extra;
    }
    for (q = 0; q < n->p.size; q++) {
        count += flags[q];
    }
    return count;
}

const char *tc__neg_cached_name(const tc_neg_t *n, uint32_t id, uint32_t *len_p)
{
    const tc_cache_entry_t *ce = tc__cache_get(&n->cache, id);

    if (ce == NULL) {
        return NULL;
    }
    *len_p = ce->desc.name_len;
    return ce->name;
}

uint64_t tc__neg_cycles(const tc_neg_t *n)
{
    return n->ncycles;
}

uint64_t tc__neg_joins_taken(const tc_neg_t *n, int rank)
{
    return n->coord != NULL ? tc__coord_joins_taken(n->coord, rank) : 0;
}
