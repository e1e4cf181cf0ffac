/*
 * neg_part.c - the parts of a negotiation cycle (part_t): what one group of
 * ranks has waiting, its contribution to the cycle. This rank's own part (a
 * snapshot of its cached submissions), what rank 0 adds to it (the ids to
 * drop, its decisions, TERMINATE), the checks on a part that came from
 * another rank, and the merge of two groups' parts, partial results of eager
 * allreduces combined in a fixed order so that both partners of a round
 * compute the same bits (docs/negotiation.md, "The exchange"). When parts
 * are sent and merged is neg_exch.c's. Never calls MPI or reads the clock.
 */
#define _GNU_SOURCE
#include "neg/neg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kind/kind.h"
#include "reduce/reduce.h"

/* ---- parts ------------------------------------------------------------------ */

/* Empties pt for the next cycle: its partial results and rank 0's part are
 * freed, its arrays keep their room (a cycle allocates nothing for its id
 * lists once they are large enough). */
void neg_part_clear(part_t *pt)
{
    uint32_t i;

    for (i = 0; i < pt->neager; i++) {
        free((void *)pt->eager[i].data);
    }
    tc__wire_msg_free(&pt->r0);
    memset(&pt->r0, 0, sizeof(pt->r0));
    pt->nready = pt->nsome = pt->nstale = pt->neager = 0;
}

void neg_part_free(part_t *pt)
{
    neg_part_clear(pt);
    free(pt->ready);
    free(pt->some);
    free(pt->stale);
    free(pt->eager);
    memset(pt, 0, sizeof(*pt));
}

/* Room for count elements of es bytes in *v (room for *cap now). -1: out of
 * memory, *v unchanged. */
static int grow(void *v, uint32_t *cap, size_t count, size_t es)
{
    void **pv = v, *p;
    size_t c = *cap > 0 ? *cap : 16;

    if (count <= *cap) {
        return 0;
    }
    while (c < count) {
        c *= 2;
    }
    if ((p = realloc(*pv, c * es)) == NULL) {
        return -1;
    }
    *pv = p;
    *cap = (uint32_t)c;
    return 0;
}

/* A copy of src that owns its storage (through the codec). -1 after a failure. */
int neg_msg_copy(tc_neg_t *n, const tc_wire_msg_t *src, tc_wire_msg_t *dst)
{
    tc_wire_buf_t b = {0};
    char err[200];
    tc_status_t st = tc__wire_encode(src, &b);

    if (st == TC_OK) {
        st = tc__wire_decode(b.data, b.len, dst, err, sizeof(err));
    }
    tc__wire_buf_free(&b);
    if (st != TC_OK) {
        neg_fail(n, st == TC_ERR_NOMEM ? TC_ERR_NOMEM : TC_ERR_TRANSPORT,
                 "cannot keep a negotiation message (%s)",
                 st == TC_ERR_NOMEM ? "out of memory" : "internal error");
        return -1;
    }
    return 0;
}

/* The message that sends part pt (to a partner, an extra, or as a snapshot). */
void neg_part_msg(const tc_neg_t *n, const part_t *pt, uint32_t round, tc_wire_msg_t *m)
{
    memset(m, 0, sizeof(*m));
    m->type = TC_WIRE_CYCLE;
    m->seq = n->ncycles;
    m->round = round;
    m->cache_gen = n->cache.gen;
    m->nready = pt->nready;
    m->ready = pt->ready;
    m->nsome = pt->nsome;
    m->some = pt->some;
    m->nstale = pt->nstale;
    m->stale = pt->stale;
    m->neager = pt->neager;
    m->eager = pt->eager;
    if (neg_has_r0(&pt->r0)) {
        m->count = pt->r0.count;
        m->resps = pt->r0.resps;
        m->flags = pt->r0.flags & TC_WIRE_F_TERMINATE;
        m->term_status = pt->r0.term_status;
        m->term_text = pt->r0.term_text;
        m->term_text_len = pt->r0.term_text_len;
    }
}

/* Sorted, duplicate-free. */
static uint32_t sort_unique(uint32_t *v, uint32_t count)
{
    uint32_t i, k = 0;

    qsort(v, count, sizeof(*v), neg_cmp_u32);
    for (i = 0; i < count; i++) {
        if (k == 0 || v[k - 1] != v[i]) {
            v[k++] = v[i];
        }
    }
    return k;
}

/* This rank's own part, into pt: its cached submissions now. -1 after a
 * failure. */
int neg_snapshot(tc_neg_t *n, part_t *pt)
{
    uint32_t cap = n->ncached, i;

    neg_part_clear(pt);
    n->want = 0;
    if (cap == 0) {
        return 0;
    }
    if (grow(&pt->ready, &pt->cap_ready, cap, sizeof(uint32_t)) != 0 ||
        grow(&pt->stale, &pt->cap_stale, cap, sizeof(uint32_t)) != 0 ||
        grow(&pt->eager, &pt->cap_eager, cap, sizeof(*pt->eager)) != 0) {
        goto nomem;
    }
    for (i = 0; i < n->cache.nslots && pt->nready + pt->nstale < cap; i++) {
        const tc_cache_entry_t *ce = n->cache.slots[i]; /* slots are in id order */
        size_t bytes;
        void *d;
        if (ce == NULL || ce->pending == NULL) {
            continue;
        }
        if (ce->stale) {
            pt->stale[pt->nstale++] = ce->id;
            continue;
        }
        pt->ready[pt->nready++] = ce->id;
        /* an input rides in its rank's first part only (docs/negotiation.md,
         * "Eager inputs"), but in every part of the direct exchange, whose
         * parts go straight to every rank: a rank that joins a cycle before
         * it has the name then sends its input in the next one, which
         * completes it */
        if ((!((sub_t *)ce->pending)->eager_sent || ((sub_t *)ce->pending)->promoted ||
             n->direct) &&
            neg_is_eager(n, &ce->desc, &bytes)) {
            /* the part carries a slot per rank (gathered, over rounds), or this
             * rank's input alone (the direct exchange, or a partial result) */
            const int gathers = !n->direct && neg_eager_gathers(n, &ce->desc);
            const size_t slot = gathers ? bytes / (size_t)n->p.size : bytes;
            if ((d = gathers ? calloc(1, bytes) : malloc(bytes)) == NULL) {
                goto nomem;
            }
            ((sub_t *)ce->pending)->eager_sent = 1;
            tc__kind_get(ce->desc.kind)
                ->eager_prepare(&ce->desc, gathers ? (char *)d + (size_t)n->p.rank * slot : d,
                                ((const sub_t *)ce->pending)->data,
                                slot / tc_dtype_size((tc_dtype_t)ce->desc.dtype));
            pt->eager[pt->neager++] = (tc_wire_eager_t){ce->id, (uint32_t)bytes, d};
        }
    }
    return 0;
nomem:
    neg_part_clear(pt);
    neg_fail(n, TC_ERR_NOMEM, "out of memory composing a negotiation message");
    return -1;
}

/* ---- rank 0's decisions ------------------------------------------------------ */

static void forget_evicted(tc_neg_t *n, const char *name, uint32_t len)
{
    free(tc__hmap_remove(&n->evicted, name, len));
}

/* An expired name: submissions of it that a rank sent before completing the
 * cycle that carries the expiry (cycle n->ncycles) crossed it and fail there. */
static void note_expiry(tc_neg_t *n, const tc_wire_response_t *r)
{
    char key[TC_WIRE_KEY_MAX];
    size_t klen = tc__wire_key(key, r->name, r->name_len, r->pset);
    uint64_t *at = tc__hmap_get(&n->expired, key, klen);

    if (at == NULL) {
        if ((at = malloc(sizeof(*at))) == NULL) {
            return; /* a crossing submission would then wait as a stall */
        }
        if (tc__hmap_put(&n->expired, key, klen, at) != 0) {
            free(at);
            return;
        }
    }
    *at = n->ncycles + 1;
}

/* Rank 0: the coordinator's decisions, with cache ids. Taken only when a
 * cycle starts, when every earlier cycle has filed its ids (cache.h). */
static int take_decisions(tc_neg_t *n, tc_coord_batch_t *b)
{
    uint32_t i;

    if (tc__coord_take_ready_max(n->coord, NEG_MAX_DECISIONS, b) != TC_OK) {
        neg_fail(n, TC_ERR_NOMEM, "rank 0 ran out of memory scheduling tensors");
        return -1;
    }
    for (i = 0; i < b->count; i++) {
        tc_wire_response_t *r = &b->resps[i];
        if (r->rtype == TC_WIRE_RUN && b->kinds[i] != TC_COORD_NOCACHE &&
            !tc__kind_get(b->kinds[i])->uncached) {
            r->cache_ref = tc__cache_assign(&n->cache, n->p.cache_capacity);
        }
        if (r->pset == 0) { /* only the global set's names are cached */
            forget_evicted(n, r->name, r->name_len);
        }
        if (r->rtype == TC_WIRE_ERROR && r->status == TC_ERR_TIMEOUT) {
            note_expiry(n, r);
        } else {
            char key[TC_WIRE_KEY_MAX];
            free(tc__hmap_remove(&n->expired, key,
                                 tc__wire_key(key, r->name, r->name_len, r->pset)));
        }
    }
    return 0;
}

/* Rank 0 adds to its snapshot what only it says: the ids to drop (stalled),
 * the first-time names decided, and TERMINATE. -1 after a failure. */
int neg_rank0_part(tc_neg_t *n, part_t *pt)
{
    tc_wire_msg_t m = {.type = TC_WIRE_CYCLE};
    tc_coord_batch_t batch = {0};
    int terminate = n->shutdown_from >= 0 && !n->term_sent, rc = 0;
    uint32_t joined;
    char term[128];

    /* some ranks joined (tc_join): they will not submit the cached names the
     * others wait for, so every cached name goes back to rank 0, which runs
     * it without them (docs/negotiation.md, "Join") */
    joined = tc__coord_njoined(n->coord) > 0 ? n->cache.count : 0;
    if (n->ndrops > 0 || joined > 0) {
        uint32_t i, k = pt->nstale;
        if (grow(&pt->stale, &pt->cap_stale, (size_t)pt->nstale + n->ndrops + joined,
                 sizeof(uint32_t)) != 0) {
            neg_fail(n, TC_ERR_NOMEM, "out of memory composing a negotiation message");
            return -1;
        }
        for (i = 0; i < n->ndrops; i++) { /* a cycle since the eviction may have dropped it */
            if (tc__cache_get(&n->cache, n->drops[i]) != NULL) {
                pt->stale[k++] = n->drops[i];
            }
        }
        for (i = 0; joined > 0 && i < n->cache.nslots; i++) {
            if (n->cache.slots[i] != NULL) {
                pt->stale[k++] = i;
            }
        }
        pt->nstale = sort_unique(pt->stale, k);
        n->ndrops = 0;
    }
    if (take_decisions(n, &batch) != 0) {
        return -1;
    }
    if (tc__coord_nready(n->coord) > 0) {
        terminate = 0; /* after every decision: the next cycle's part says it */
    }
    if (batch.count > 0 || terminate) {
        m.count = batch.count;
        m.resps = batch.resps;
        if (terminate) {
            int len = snprintf(term, sizeof(term),
                               "tcoll was shut down (tc_shutdown called on "
                               "rank %d)",
                               n->shutdown_from);
            n->term_sent = 1;
            m.flags = TC_WIRE_F_TERMINATE;
            m.term_status = TC_ERR_SHUTDOWN;
            m.term_text = term;
            m.term_text_len = (uint32_t)len;
        }
        rc = neg_msg_copy(n, &m, &pt->r0);
    }
    tc__coord_batch_free(&batch);
    return rc;
}

/* ---- merging two groups' parts --------------------------------------------- */

/* Checks a part that came from rank src: the cycle's cache generation, ids
 * this rank has filed, eager partials only of the right size for eager ids
 * among its ready ones. */
int neg_check_part(tc_neg_t *n, int src, const tc_wire_msg_t *m)
{
    uint32_t i;

    if (m->cache_gen != n->cache.gen) {
        neg_fail(n, TC_ERR_TRANSPORT,
                 "protocol error: rank %d's part of cycle %llu has cache "
                 "generation %llu, this rank %llu",
                 src, (unsigned long long)m->seq, (unsigned long long)m->cache_gen,
                 (unsigned long long)n->cache.gen);
        return -1;
    }
    for (i = 0; i < m->nready + m->nsome + m->nstale; i++) {
        uint32_t id = i < m->nready              ? m->ready[i]
                      : i < m->nready + m->nsome ? m->some[i - m->nready]
                                                 : m->stale[i - m->nready - m->nsome];
        if (tc__cache_get(&n->cache, id) == NULL) {
            neg_fail(n, TC_ERR_TRANSPORT,
                     "protocol error: rank %d lists cache id %u, which "
                     "this rank does not have",
                     src, id);
            return -1;
        }
    }
    for (i = 0; i < m->neager; i++) {
        const tc_cache_entry_t *ce = tc__cache_get(&n->cache, m->eager[i].id);
        size_t bytes;
        if (ce == NULL || !neg_has_id(m->ready, m->nready, m->eager[i].id) ||
            !neg_is_eager(n, &ce->desc, &bytes) || m->eager[i].len != bytes) {
            neg_fail(n, TC_ERR_TRANSPORT,
                     "protocol error: rank %d sent a partial result for "
                     "cache id %u, which is not a ready small allreduce of %u bytes",
                     src, m->eager[i].id, m->eager[i].len);
            return -1;
        }
    }
    return 0;
}

/* a AND b, a OR b of two ascending lists, into out (room for na + nb). */
static uint32_t ids_and(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb,
                        uint32_t *out)
{
    uint32_t i = 0, j = 0, k = 0;

    while (i < na && j < nb) {
        if (a[i] == b[j]) {
            out[k++] = a[i];
            i++;
            j++;
        } else if (a[i] < b[j]) {
            i++;
        } else {
            j++;
        }
    }
    return k;
}

static uint32_t ids_or(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb,
                       uint32_t *out)
{
    uint32_t i = 0, j = 0, k = 0;

    while (i < na || j < nb) {
        if (j == nb || (i < na && a[i] < b[j])) {
            out[k++] = a[i++];
        } else if (i == na || b[j] < a[i]) {
            out[k++] = b[j++];
        } else {
            out[k++] = a[i];
            i++;
            j++;
        }
    }
    return k;
}

/* Whether rank q is in the group whose part rank src sent: its extra's
 * snapshot (src is this rank's extra) holds src alone; a partner's part of
 * round k every core rank sharing src's bits above k-1, with their extras. */
static int in_group(const tc_neg_t *n, int src, int round, int q)
{
    const int core = 1 << n->nrounds;

    if (src == n->extra || n->direct) { /* the direct exchange: each part is its rank's */
        return q == src;
    }
    return ((q < core ? q : q - core) >> round) == (src >> round);
}

/* Gathered eager records (neg_eager_gathers): the slots of the other
 * group's ranks, from b into a. */
static void gather_slots(const tc_neg_t *n, int src, int round, void *a, const void *b, size_t len)
{
    const size_t slot = len / (size_t)n->p.size;
    int q;

    for (q = 0; q < n->p.size; q++) {
        if (in_group(n, src, round, q)) {
            memcpy((char *)a + (size_t)q * slot, (const char *)b + (size_t)q * slot, slot);
        }
    }
}

int neg_eager_fold(tc_neg_t *n, const tc_wire_request_t *w, const void *record, void *out,
                   size_t len)
{
    const int size = n->p.size;
    const tc_dtype_t dt = (tc_dtype_t)w->dtype;
    char **x = malloc((size_t)size * sizeof(*x));
    char *copy = malloc((size_t)size * len + 1); /* the combining overwrites its inputs */
    int q;

    if (x == NULL || copy == NULL) {
        free(x);
        free(copy);
        neg_fail(n, TC_ERR_NOMEM, "out of memory combining an eager allreduce");
        return -1;
    }
    memcpy(copy, record, (size_t)size * len);
    for (q = 0; q < size; q++) {
        x[q] = copy + (size_t)q * len;
    }
    tc__combine_ordered(dt, w->op == TC_AVG ? TC_SUM : (tc_op_t)w->op, n->p.node, size, -1, x, out,
                        len / tc_dtype_size(dt));
    free(x);
    free(copy);
    return 0;
}

/* The group's part merged with another group's (m, from rank src). The
 * partial result of an eager id is the lower group's combined with the
 * higher group's, in that order, so both partners of a round compute the
 * same bits (docs/negotiation.md); a gathered one (neg_eager_gathers) takes
 * the other group's slots. -1 after a failure. */
int neg_merge(tc_neg_t *n, tc_wire_msg_t *m, int src)
{
    part_t *mine = &n->part, *out = &n->spare, swap;
    const int other_low = src < n->p.rank;
    uint32_t cap = mine->nready + mine->nsome + m->nready + m->nsome + 1, i, *t1, *t2;
    uint32_t n1, n2;

    if (neg_check_part(n, src, m) != 0) {
        return -1;
    }
    if (neg_has_r0(m) && (src == n->extra || (src >> m->round) != 0)) {
        neg_fail(n, TC_ERR_TRANSPORT,
                 "protocol error: rank %d's part of cycle %llu carries rank "
                 "0's decisions, but its group does not hold rank 0",
                 src, (unsigned long long)m->seq);
        return -1;
    }
    if (neg_has_r0(&mine->r0) && neg_has_r0(m)) {
        neg_fail(n, TC_ERR_TRANSPORT,
                 "protocol error: rank %d's part of cycle %llu holds rank "
                 "0's decisions, and so does this rank's",
                 src, (unsigned long long)m->seq);
        return -1;
    }
    neg_part_clear(out);
    if (grow(&out->ready, &out->cap_ready, cap, sizeof(uint32_t)) != 0 ||
        grow(&out->some, &out->cap_some, cap, sizeof(uint32_t)) != 0 ||
        grow(&out->stale, &out->cap_stale, (size_t)mine->nstale + m->nstale + 1,
             sizeof(uint32_t)) != 0 ||
        grow(&out->eager, &out->cap_eager, (size_t)mine->neager + 1, sizeof(*out->eager)) != 0 ||
        grow(&n->tmp, &n->cap_tmp, 2 * (size_t)cap, sizeof(uint32_t)) != 0) {
        goto nomem;
    }
    t1 = n->tmp;
    t2 = n->tmp + cap;
    out->nready = ids_and(mine->ready, mine->nready, m->ready, m->nready, out->ready);
    n1 = ids_or(mine->ready, mine->nready, mine->some, mine->nsome, t1);
    n2 = ids_or(m->ready, m->nready, m->some, m->nsome, t2);
    n1 = ids_or(t1, n1, t2, n2, out->some); /* waiting somewhere ... */
    for (i = 0, n2 = 0; i < n1; i++) {      /* ... but not everywhere */
        if (!neg_has_id(out->ready, out->nready, out->some[i])) {
            out->some[n2++] = out->some[i];
        }
    }
    out->nsome = n2;
    out->nstale = ids_or(mine->stale, mine->nstale, m->stale, m->nstale, out->stale);
    for (i = 0; i < mine->neager; i++) {
        tc_wire_eager_t *a = &mine->eager[i];
        const tc_wire_eager_t *b = neg_find_eager(m->eager, m->neager, a->id);
        const tc_cache_entry_t *ce = tc__cache_get(&n->cache, a->id);
        const tc_kind_desc_t *kd = tc__kind_get(ce->desc.kind);
        const tc_dtype_t dt = (tc_dtype_t)ce->desc.dtype;
        uint32_t len = a->len;
        void *acc;
        if (b == NULL || !neg_has_id(out->ready, out->nready, a->id)) {
            continue; /* not every rank of the other group has it, or sent its input */
        }
        if (n->direct) {            /* each part carries its rank's input: into its slot */
            if (a->len == b->len) { /* the first merge: this rank's own into its slot */
                len = (uint32_t)((size_t)n->p.size * b->len);
                if ((acc = calloc(1, len)) == NULL) {
                    goto nomem;
                }
                memcpy((char *)acc + (size_t)n->p.rank * b->len, a->data, b->len);
                free((void *)a->data);
            } else {
                acc = (void *)a->data;
            }
            memcpy((char *)acc + (size_t)src * b->len, b->data, b->len);
        } else if (neg_eager_gathers(n, &ce->desc)) {
            acc = (void *)a->data;
            gather_slots(n, src, m->round, acc, b->data, a->len);
        } else if (other_low) {
            if ((acc = malloc(a->len)) == NULL) {
                goto nomem;
            }
            memcpy(acc, b->data, a->len);
            kd->eager_combine(dt, (tc_op_t)ce->desc.op, acc, a->data, a->len / tc_dtype_size(dt));
            free((void *)a->data);
        } else {
            acc = (void *)a->data;
            kd->eager_combine(dt, (tc_op_t)ce->desc.op, acc, b->data, a->len / tc_dtype_size(dt));
        }
        a->data = NULL; /* moved */
        out->eager[out->neager++] = (tc_wire_eager_t){a->id, len, acc};
    }
    if (neg_has_r0(&mine->r0)) {
        out->r0 = mine->r0;
        memset(&mine->r0, 0, sizeof(mine->r0));
    } else if (neg_has_r0(m)) {
        /* moved, not copied: rank 0's decisions are most of a flood's bytes;
         * r0 reads only their fields (count, resps, the terminate record) */
        out->r0 = *m;
        memset(m, 0, sizeof(*m));
    }
    swap = *mine; /* the merged part becomes the group's; the old one, emptied, the spare */
    *mine = *out;
    *out = swap;
    neg_part_clear(out);
    return 0;
nomem:
    neg_fail(n, TC_ERR_NOMEM, "out of memory merging negotiation parts");
    neg_part_clear(out);
    return -1;
}
