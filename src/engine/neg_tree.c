/*
 * neg_tree.c - what each rank knows of its subtree in the negotiation tree,
 * the UP messages that tell the parent, and rank 0's decisions.
 *
 * For every cached id a rank keeps three bit sets over its children (whose
 * subtree has it waiting everywhere, somewhere, or found it stale) and, for
 * small allreduces, each child's partial result. From those and its own
 * submission it derives its subtree's state, and tells its parent only what
 * changed (docs/negotiation.md, "UP"). Rank 0 turns the same state into the
 * next DOWN message. Never calls MPI or reads the clock.
 */
#define _GNU_SOURCE
#include "engine/neg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kinds.h"

#define SOME_FLUSH_NS 100000000ull /* 100 ms: see up_due */

int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_eager(const void *a, const void *b)
{
    uint32_t x = ((const tc_wire_eager_t *)a)->id, y = ((const tc_wire_eager_t *)b)->id;
    return (x > y) - (x < y);
}

idst_t *neg_idst(tc_neg_t *n, uint32_t id)
{
    if (id >= n->nids) {
        uint32_t cap = n->nids < 64 ? 64 : n->nids;
        idst_t *v;
        while (cap <= id) {
            cap *= 2;
        }
        v = realloc(n->ids, (size_t)cap * sizeof(*v));
        if (v == NULL) {
            neg_fail(n, TC_ERR_NOMEM, "out of memory tracking cached tensors");
            return NULL;
        }
        memset(v + n->nids, 0, (size_t)(cap - n->nids) * sizeof(*v));
        n->ids = v;
        n->nids = cap;
    }
    return &n->ids[id];
}

/* Something about id changed: look at it in the next UP or decision. */
void neg_mark(tc_neg_t *n, uint32_t id)
{
    idst_t *st = neg_idst(n, id);

    if (st == NULL || st->dirty) {
        return;
    }
    if (n->ndirty == n->capdirty) {
        uint32_t cap = n->capdirty < 64 ? 64 : n->capdirty * 2;
        uint32_t *v = realloc(n->dirty, (size_t)cap * sizeof(*v));
        if (v == NULL) {
            neg_fail(n, TC_ERR_NOMEM, "out of memory tracking cached tensors");
            return;
        }
        n->dirty = v;
        n->capdirty = cap;
    }
    n->dirty[n->ndirty++] = id;
    st->dirty = 1;
}

static void free_partials(tc_neg_t *n, idst_t *st)
{
    int k;

    if (st->partial != NULL) {
        for (k = 0; k < n->nchild; k++) {
            free(st->partial[k]);
        }
        free(st->partial);
        st->partial = NULL;
    }
}

/* The id ran or was dropped in the DOWN message just processed. */
void neg_id_reset(tc_neg_t *n, uint32_t id)
{
    idst_t *st = neg_idst(n, id);
    uint8_t dirty;

    if (st == NULL) {
        return;
    }
    free_partials(n, st);
    dirty = st->dirty;
    memset(st, 0, sizeof(*st));
    st->dirty = dirty; /* may still be on the dirty list: it finds nothing there */
    st->removed_at = n->ndown;
}

void neg_tree_free(tc_neg_t *n)
{
    uint32_t i;

    for (i = 0; i < n->nids; i++) {
        free_partials(n, &n->ids[i]);
    }
    free(n->ids);
    free(n->dirty);
    n->ids = NULL;
    n->dirty = NULL;
    n->nids = n->ndirty = n->capdirty = 0;
}

static int has_id(const uint32_t *ids, uint32_t count, uint32_t id)
{
    return count > 0 && bsearch(&id, ids, count, sizeof(id), cmp_u32) != NULL;
}

/* Child k's UP: what its subtree gained since its last one. An id removed by
 * a DOWN message the child had not seen when it wrote this is old news. */
void neg_receive_up(tc_neg_t *n, int k, const tc_wire_msg_t *msg)
{
    const uint32_t bit = 1u << k;
    uint32_t i, j;

    if (msg->seq > n->ndown || (msg->seq == n->ndown && msg->cache_gen != n->cache.gen)) {
        neg_fail(n, TC_ERR_TRANSPORT, "protocol error: rank %d's UP message is at DOWN %llu, "
                 "cache generation %llu; this rank is at %llu, %llu", n->child[k],
                 (unsigned long long)msg->seq, (unsigned long long)msg->cache_gen,
                 (unsigned long long)n->ndown, (unsigned long long)n->cache.gen);
        return;
    }
    for (j = 0; j < msg->neager; j++) {
        if (!has_id(msg->ready, msg->nready, msg->eager[j].id)) {
            neg_fail(n, TC_ERR_TRANSPORT, "protocol error: rank %d sent an eager input for "
                     "cache id %u without listing it", n->child[k], msg->eager[j].id);
            return;
        }
    }
    for (i = 0; i < msg->nready + msg->nsome + msg->nstale; i++) {
        const int list = i < msg->nready ? 0 : i < msg->nready + msg->nsome ? 1 : 2;
        const uint32_t id = list == 0   ? msg->ready[i]
                            : list == 1 ? msg->some[i - msg->nready]
                                        : msg->stale[i - msg->nready - msg->nsome];
        const tc_cache_entry_t *ce;
        idst_t *st = neg_idst(n, id);
        size_t bytes;

        if (st == NULL) {
            return;
        }
        if (st->removed_at > msg->seq) {
            continue;
        }
        ce = tc__cache_get(&n->cache, id);
        if (ce == NULL) {
            neg_fail(n, TC_ERR_TRANSPORT, "protocol error: rank %d lists cache id %u, which "
                     "this rank does not have", n->child[k], id);
            return;
        }
        if (list == 0 && neg_is_eager(n, &ce->desc, &bytes)) {
            const tc_wire_eager_t *x = NULL;
            for (j = 0; j < msg->neager && x == NULL; j++) {
                x = msg->eager[j].id == id ? &msg->eager[j] : NULL;
            }
            if (x == NULL || x->len != bytes) {
                neg_fail(n, TC_ERR_TRANSPORT, "protocol error: rank %d's partial result of "
                         "tensor '%s' is missing or has the wrong size", n->child[k], ce->name);
                return;
            }
            if (st->partial == NULL &&
                (st->partial = calloc((size_t)n->nchild, sizeof(void *))) == NULL) {
                neg_fail(n, TC_ERR_NOMEM, "out of memory keeping eager inputs");
                return;
            }
            free(st->partial[k]);
            st->partial[k] = malloc(bytes);
            if (st->partial[k] == NULL) {
                neg_fail(n, TC_ERR_NOMEM, "out of memory keeping eager inputs");
                return;
            }
            memcpy(st->partial[k], x->data, bytes);
        }
        if (list == 0) {
            st->child_ready |= bit;
            st->child_some |= bit;
        } else if (list == 1) {
            st->child_some |= bit;
        } else {
            st->child_stale |= bit;
        }
        neg_mark(n, id);
    }
    n->got_up = 1;
}

typedef struct {
    const tc_cache_entry_t *ce;
    int all, some, stale; /* the subtree: has it waiting everywhere, somewhere; found it stale */
} view_t;

static view_t look(const tc_neg_t *n, uint32_t id)
{
    view_t v = {tc__cache_get(&n->cache, id), 0, 0, 0};
    const idst_t *st = &n->ids[id];
    int pending, own_stale;

    if (v.ce == NULL) {
        return v;
    }
    pending = v.ce->pending != NULL;
    own_stale = pending && v.ce->stale;
    v.all = pending && !own_stale && (st->child_ready & n->all_children) == n->all_children;
    v.some = pending || st->child_some != 0;
    v.stale = own_stale || st->child_stale != 0;
    return v;
}

/* This rank's input of an eager id reduced with its children's partial
 * results, in a fixed order: its own, then child 0, 1, ... (so every run
 * adds the same numbers in the same order). NULL after a failure. */
static void *subtree_partial(tc_neg_t *n, uint32_t id, const tc_cache_entry_t *ce, size_t bytes)
{
    const sub_t *s = ce->pending;
    const idst_t *st = &n->ids[id];
    size_t count = bytes / tc_dtype_size((tc_dtype_t)ce->desc.dtype);
    void *buf = malloc(bytes);
    int k;

    if (buf == NULL) {
        neg_fail(n, TC_ERR_NOMEM, "out of memory reducing eager inputs");
        return NULL;
    }
    memcpy(buf, s->data, bytes);
    for (k = 0; k < n->nchild; k++) {
        tc__kind_get(ce->desc.kind)
            ->eager_combine((tc_dtype_t)ce->desc.dtype, (tc_op_t)ce->desc.op, buf,
                            st->partial[k], count);
    }
    return buf;
}

typedef struct {
    uint32_t *ready, *some, *stale;
    uint32_t nready, nsome, nstale;
    tc_wire_eager_t *eager;
    uint32_t neager;
    void **owned; /* the eager buffers made here (a leaf sends its input as is) */
    uint32_t nowned;
} lists_t;

static void lists_free(lists_t *l)
{
    uint32_t i;

    for (i = 0; i < l->nowned; i++) {
        free(l->owned[i]);
    }
    free(l->owned);
    free(l->ready);
    free(l->some);
    free(l->stale);
    free(l->eager);
}

static int lists_alloc(tc_neg_t *n, lists_t *l, uint32_t cap)
{
    memset(l, 0, sizeof(*l));
    l->ready = malloc(((size_t)cap + 1) * sizeof(uint32_t));
    l->some = malloc(((size_t)cap + 1) * sizeof(uint32_t));
    l->stale = malloc(((size_t)cap + 1) * sizeof(uint32_t));
    l->eager = malloc(((size_t)cap + 1) * sizeof(*l->eager));
    l->owned = malloc(((size_t)cap + 1) * sizeof(void *));
    if (l->ready == NULL || l->some == NULL || l->stale == NULL || l->eager == NULL ||
        l->owned == NULL) {
        lists_free(l);
        neg_fail(n, TC_ERR_NOMEM, "out of memory composing a negotiation message");
        return -1;
    }
    return 0;
}

static void lists_sort(lists_t *l)
{
    qsort(l->ready, l->nready, sizeof(uint32_t), cmp_u32);
    qsort(l->some, l->nsome, sizeof(uint32_t), cmp_u32);
    qsort(l->stale, l->nstale, sizeof(uint32_t), cmp_u32);
    qsort(l->eager, l->neager, sizeof(*l->eager), cmp_eager);
}

/* An UP's or DOWN's record: where this rank is, and the lists. */
static void lists_into(const tc_neg_t *n, const lists_t *l, tc_wire_msg_t *m)
{
    m->seq = n->ndown;
    m->cache_gen = n->cache.gen;
    m->nready = l->nready;
    m->ready = l->ready;
    m->nsome = l->nsome;
    m->some = l->some;
    m->nstale = l->nstale;
    m->stale = l->stale;
    m->neager = l->neager;
    m->eager = l->eager;
}

/* Adds id's eager partial (or, at rank 0, result) to l; -1 after a failure. */
static int add_eager(tc_neg_t *n, lists_t *l, uint32_t id, const tc_cache_entry_t *ce)
{
    size_t bytes;
    void *buf;

    if (!neg_is_eager(n, &ce->desc, &bytes)) {
        return 0;
    }
    if (n->nchild == 0 && n->parent >= 0) { /* a leaf's partial is its input */
        l->eager[l->neager++] = (tc_wire_eager_t){id, (uint32_t)bytes,
                                                  ((const sub_t *)ce->pending)->data};
        return 0;
    }
    if ((buf = subtree_partial(n, id, ce, bytes)) == NULL) {
        return -1;
    }
    if (n->parent < 0) { /* the root's combination is the result */
        tc__kind_get(ce->desc.kind)
            ->eager_finish((tc_dtype_t)ce->desc.dtype, (tc_op_t)ce->desc.op, buf,
                           bytes / tc_dtype_size((tc_dtype_t)ce->desc.dtype), n->p.size);
    }
    l->owned[l->nowned++] = buf;
    l->eager[l->neager++] = (tc_wire_eager_t){id, (uint32_t)bytes, buf};
    return 0;
}

/* Whether an UP is due: something ran out of turn below (every rank of the
 * subtree has an id, or one found it stale), or ids that only some ranks
 * have waited SOME_FLUSH_NS (they matter only to rank 0's stall inspector,
 * so they ride along with the next UP or go on their own that late). */
static int up_due(tc_neg_t *n, uint64_t now)
{
    int some = 0;
    uint32_t i;

    for (i = 0; i < n->ndirty; i++) {
        const idst_t *st = &n->ids[n->dirty[i]];
        view_t v = look(n, n->dirty[i]);
        if (v.ce == NULL) {
            continue;
        }
        if ((v.stale && !st->sent_stale) || (v.all && !st->sent_ready)) {
            return 1;
        }
        some |= v.some && !st->sent_some;
    }
    if (!some) {
        n->some_since = 0;
        return 0;
    }
    if (n->some_since == 0) {
        n->some_since = now;
    }
    return now - n->some_since >= SOME_FLUSH_NS;
}

/* A non-root rank with something new about its subtree and no UP waiting
 * for its DOWN tells its parent. */
int neg_send_up(tc_neg_t *n, uint64_t now)
{
    tc_wire_msg_t up = {.type = TC_WIRE_UP};
    lists_t l;
    uint32_t i;

    if (!n->up_credit || n->ndirty == 0 || !up_due(n, now)) {
        return 0;
    }
    if (lists_alloc(n, &l, n->ndirty) != 0) {
        return 1;
    }
    for (i = 0; i < n->ndirty; i++) {
        uint32_t id = n->dirty[i];
        idst_t *st = &n->ids[id];
        view_t v = look(n, id);
        st->dirty = 0;
        if (v.ce == NULL) {
            continue;
        }
        if (v.stale && !st->sent_stale) {
            l.stale[l.nstale++] = id;
            st->sent_stale = 1;
        }
        if (v.all && !st->sent_ready) {
            l.ready[l.nready++] = id;
            st->sent_ready = st->sent_some = 1;
            if (add_eager(n, &l, id, v.ce) != 0) {
                break;
            }
        } else if (v.some && !st->sent_some) {
            l.some[l.nsome++] = id;
            st->sent_some = 1;
        }
    }
    n->ndirty = 0;
    n->some_since = 0;
    if (n->state == TC_NEG_RUNNING && l.nready + l.nsome + l.nstale > 0) {
        lists_sort(&l);
        lists_into(n, &l, &up);
        neg_send_to(n, &up, TC_NEG_TAG_UP, n->parent);
        n->up_credit = 0;
    }
    lists_free(&l);
    return 1;
}

static void forget_evicted(tc_neg_t *n, const char *name, uint32_t len)
{
    free(tc__hmap_remove(&n->evicted, name, len));
}

/* An expired name: submissions of it that a rank sent before processing
 * this DOWN (n->ndown + 1 processed) crossed it and fail there. */
static void note_expiry(tc_neg_t *n, const tc_wire_response_t *r)
{
    uint64_t *at = tc__hmap_get(&n->expired, r->name, r->name_len);

    if (at == NULL) {
        if ((at = malloc(sizeof(*at))) == NULL) {
            return; /* a crossing submission would then wait as a stall */
        }
        if (tc__hmap_put(&n->expired, r->name, r->name_len, at) != 0) {
            free(at);
            return;
        }
    }
    *at = n->ndown + 1;
}

/* Rank 0: the coordinator's decisions for the next DOWN, with cache ids. */
static int take_decisions(tc_neg_t *n, tc_coord_batch_t *b)
{
    uint32_t i;

    if (tc__coord_take_ready(n->coord, b) != TC_OK) {
        neg_fail(n, TC_ERR_NOMEM, "rank 0 ran out of memory scheduling tensors");
        return -1;
    }
    for (i = 0; i < b->count; i++) {
        tc_wire_response_t *r = &b->resps[i];
        if (r->rtype == TC_WIRE_RUN) {
            r->cache_ref = tc__cache_assign(&n->cache, n->p.cache_capacity);
        }
        forget_evicted(n, r->name, r->name_len);
        if (r->rtype == TC_WIRE_ERROR && r->status == TC_ERR_TIMEOUT) {
            note_expiry(n, r);
        } else {
            free(tc__hmap_remove(&n->expired, r->name, r->name_len));
        }
    }
    return 0;
}

/* Rank 0: turns what changed into the next DOWN message, when there is
 * anything to say (an UP always gets one: it gives the sender its turn
 * again), and processes it like every other rank. */
int neg_decide(tc_neg_t *n, uint64_t now)
{
    tc_wire_msg_t down = {.type = TC_WIRE_CYCLE};
    tc_coord_batch_t batch = {0};
    char term[128];
    lists_t l;
    uint32_t i, k;
    int terminate = n->shutdown_from >= 0 && !n->term_sent;

    if (lists_alloc(n, &l, n->ndirty + n->ndrops) != 0) {
        return 1;
    }
    for (i = 0; i < n->ndirty; i++) {
        uint32_t id = n->dirty[i];
        idst_t *st = &n->ids[id];
        view_t v = look(n, id);
        st->dirty = 0;
        if (v.ce == NULL) {
            continue;
        }
        if (v.stale) {
            if (!st->sent_stale) {
                l.stale[l.nstale++] = id;
                st->sent_stale = 1;
            }
        } else if (v.all) {
            l.ready[l.nready++] = id;
        }
        st->since_ns = v.some && !v.all ? (st->since_ns != 0 ? st->since_ns : now) : 0;
    }
    n->ndirty = 0;
    qsort(l.stale, l.nstale, sizeof(uint32_t), cmp_u32);
    for (i = 0; i < n->ndrops; i++) { /* stalled ids the inspector gave up on */
        if (!has_id(l.stale, l.nstale, n->drops[i])) {
            l.stale[l.nstale++] = n->drops[i];
            qsort(l.stale, l.nstale, sizeof(uint32_t), cmp_u32);
        }
    }
    n->ndrops = 0;
    if (!n->got_up && l.nready == 0 && l.nstale == 0 && tc__coord_nready(n->coord) == 0 &&
        !terminate) {
        lists_free(&l);
        return 0;
    }
    lists_sort(&l);
    for (i = 0, k = 0; i < l.nready; i++) { /* a dropped id does not run */
        if (!has_id(l.stale, l.nstale, l.ready[i])) {
            l.ready[k++] = l.ready[i];
        }
    }
    l.nready = k;
    for (i = 0; i < l.nready && n->state == TC_NEG_RUNNING; i++) {
        add_eager(n, &l, l.ready[i], tc__cache_get(&n->cache, l.ready[i]));
    }
    if (n->state != TC_NEG_RUNNING || take_decisions(n, &batch) != 0) {
        lists_free(&l);
        return 1;
    }
    lists_into(n, &l, &down);
    down.count = batch.count;
    down.resps = batch.resps;
    if (terminate) {
        int len = snprintf(term, sizeof(term), "tcoll was shut down (tc_shutdown called on "
                           "rank %d)", n->shutdown_from);
        n->term_sent = 1;
        down.flags = TC_WIRE_F_TERMINATE;
        down.term_status = TC_ERR_SHUTDOWN;
        down.term_text = term;
        down.term_text_len = (uint32_t)len;
    }
    n->got_up = 0;
    neg_process_down(n, &down, now);
    tc__coord_batch_free(&batch);
    lists_free(&l);
    return 1;
}
