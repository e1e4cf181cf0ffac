/*
 * coord_sets.c - rank 0's view of process sets and joins: which ranks each
 * set has and which of them joined, when a name is complete (every member
 * submitted it or joined), and what completing the names that change the
 * table of sets does.
 *
 * Set 0 is every rank and always exists. process_set_add, once every rank
 * submitted the same rank list, gets the next id (its RUN's value) and the
 * set exists from then on here, before any rank can learn the id, so no
 * member's submission to it can arrive first. process_set_remove marks the
 * set removing: its waiting names fail (TC_ERR_STATE), later submissions
 * to it fail at once; the names that were ready before it still run, and
 * the set goes when the removal's response is taken. A join marks its rank
 * joined in its set: what only joined members lack is complete then
 * (docs/negotiation.md, "Join").
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neg/coord_internal.h"
#include "kind/kind.h"
#include "neg/neg.h"
#include "util/ranks.h"

static void set_free(coord_set_t *s)
{
    if (s != NULL) {
        free(s->member);
        free(s->joined);
        free(s);
    }
}

/* Files a set of the ranks rank list (NULL: every rank) under id. */
static coord_set_t *set_new(tc_coord_t *c, uint32_t id, const int32_t *ranks, uint32_t n)
{
    coord_set_t *s = calloc(1, sizeof(*s));
    uint32_t i;

    if (s == NULL || (s->member = calloc((size_t)c->size, 1)) == NULL ||
        (s->joined = calloc((size_t)c->size, 1)) == NULL) {
        set_free(s);
        return NULL;
    }
    if (id >= c->nsets) {
        uint32_t cap = c->nsets < 8 ? 8 : c->nsets;
        coord_set_t **v;
        while (cap <= id) {
            cap *= 2;
        }
        if ((v = realloc(c->sets, cap * sizeof(*v))) == NULL) {
            set_free(s);
            return NULL;
        }
        memset(v + c->nsets, 0, (cap - c->nsets) * sizeof(*v));
        c->sets = v;
        c->nsets = cap;
    }
    s->id = id;
    s->n = ranks != NULL ? (int)n : c->size;
    for (i = 0; i < (uint32_t)s->n; i++) {
        s->member[ranks != NULL ? ranks[i] : (int32_t)i] = 1;
    }
    c->sets[id] = s;
    return s;
}

int tc__coord_sets_init(tc_coord_t *c)
{
    return set_new(c, 0, NULL, 0) != NULL ? 0 : -1;
}

void tc__coord_sets_free(tc_coord_t *c)
{
    uint32_t i;

    for (i = 0; i < c->nsets; i++) {
        set_free(c->sets[i]);
    }
    free(c->sets);
    c->sets = NULL;
    c->nsets = 0;
}

coord_set_t *tc__coord_set(const tc_coord_t *c, uint32_t id)
{
    return id < c->nsets ? c->sets[id] : NULL;
}

void tc__coord_set_drop(tc_coord_t *c, uint32_t id)
{
    if (id > 0 && id < c->nsets) {
        set_free(c->sets[id]);
        c->sets[id] = NULL;
    }
}

int tc__coord_complete(const tc_coord_t *c, const entry_t *e)
{
    const coord_set_t *s = tc__coord_set(c, e->pset);
    int q;

    if (e->nsub == s->n) { /* only members submit (checked on arrival) */
        return 1;
    }
    if (s->njoined == 0) {
        return 0;
    }
    for (q = 0; q < c->size; q++) {
        if (s->member[q] && !e->have[q] && !s->joined[q]) {
            return 0;
        }
    }
    return 1;
}

void tc__coord_unjoin(tc_coord_t *c, const entry_t *e)
{
    coord_set_t *s = tc__coord_set(c, e->pset);
    int q;

    for (q = 0; s != NULL && q < c->size; q++) {
        if (e->have[q] && s->joined[q]) {
            s->joined[q] = 0;
            s->njoined--;
        }
    }
}

static void collect_entry(const char *key, size_t len, void *val, void *arg)
{
    entry_t ***pp = arg;

    (void)key;
    (void)len;
    *(*pp)++ = val;
}

/* The entries waiting in the table, in its order (malloc'd; NULL when out
 * of memory); *n_p how many. */
static entry_t **waiting(const tc_coord_t *c, size_t *n_p)
{
    entry_t **all = malloc((c->table.count > 0 ? c->table.count : 1) * sizeof(*all)), **end;

    if (all != NULL) {
        end = all;
        tc__hmap_foreach(&c->table, collect_entry, &end);
        *n_p = (size_t)(end - all);
    }
    return all;
}

int tc__coord_mark_joined(tc_coord_t *c, coord_set_t *s, int rank)
{
    size_t i, n = 0;
    entry_t **all = waiting(c, &n);

    if (all == NULL) {
        return -1;
    }
    s->joined[rank] = 1;
    s->njoined++;
    for (i = 0; i < n; i++) { /* the table's order: rank 0 decides it for every rank */
        entry_t *e = all[i];
        if (e->pset == s->id && !tc__kind_get(tc__coord_ref(e)->kind)->joins &&
            tc__coord_complete(c, e)) { /* a join completes with its own submissions */
            tc__coord_complete_entry(c, e, rank);
        }
    }
    free(all);
    return 0;
}

/* A removal is decided: set id's waiting names fail, in the table and in
 * groups (their other members cannot come any more). */
static void fail_removed(tc_coord_t *c, coord_set_t *s)
{
    size_t i, n = 0;
    entry_t **all = waiting(c, &n);
    char text[160];

    s->removing = 1;
    snprintf(text, sizeof(text),
             "process set %u was removed (tc_process_set_remove) before "
             "every member submitted it",
             s->id);
    for (i = 0; all != NULL && i < n; i++) {
        entry_t *e = all[i];
        if (e->pset == s->id && e->fail_status == TC_OK) {
            free(e->text);
            if (asprintf(&e->text, "tensor '%s': %s", e->name, text) < 0) {
                e->text = NULL;
            }
            e->fail_status = TC_ERR_STATE;
            tc__coord_make_ready(c, e);
        }
    }
    free(all); /* out of memory: they stay, and fail at their stall timeout */
    tc__coord_fail_set_groups(c, s->id, TC_ERR_STATE, text);
}

void tc__coord_complete_entry(tc_coord_t *c, entry_t *e, int rank)
{
    const tc_wire_request_t *ref = tc__coord_ref(e);
    const tc_kind_desc_t *kd = tc__kind_get(ref->kind);

    e->last = rank;
    if (kd->joins) { /* every member joined: the next step runs as usual */
        tc__coord_unjoin(c, e);
        e->value = rank;
    }
    if (kd->set_op && e->fail_status == TC_OK &&
        (e->text = tc__coord_check_agreement(c, e)) != NULL) {
        e->fail_status = TC_ERR_MISMATCH; /* the ranks disagree: nothing changes */
    } else if (kd->set_op && e->fail_status == TC_OK && ref->kind == TC_KIND_PROCESS_SET_ADD) {
        if (set_new(c, c->last_set + 1, ref->ranks, ref->nranks) != NULL) {
            e->value = (int32_t)++c->last_set;
        } else {
            e->fail_status = TC_ERR_NOMEM;
            e->text = strdup("out of memory on rank 0 creating the process set");
        }
    } else if (kd->set_op && e->fail_status == TC_OK) { /* process_set_remove: root is the set */
        coord_set_t *s = ref->root > 0 ? tc__coord_set(c, (uint32_t)ref->root) : NULL;
        if (s == NULL || s->removing) {
            e->fail_status = TC_ERR_ARG;
            if (asprintf(&e->text, "process set %d does not exist", ref->root) < 0) {
                e->text = NULL;
            }
        } else {
            fail_removed(c, s);
        }
    }
    tc__coord_make_ready(c, e);
}

char *tc__coord_joined_text(const tc_coord_t *c, const entry_t *e)
{
    const coord_set_t *s = tc__coord_set(c, e->pset);
    const tc_kind_desc_t *kd = tc__kind_get(tc__coord_ref(e)->kind);
    uint8_t *lack = calloc((size_t)c->size, 1);
    char ranks[256], where[48] = "", *text;
    int q, n;

    if (lack == NULL) {
        return NULL;
    }
    for (q = 0; q < c->size; q++) {
        lack[q] = s->member[q] && !e->have[q];
    }
    n = tc__format_ranks(lack, c->size, 1, ranks, sizeof(ranks));
    free(lack);
    if (e->pset != 0) {
        snprintf(where, sizeof(where), " process set %u", e->pset);
    }
    if (asprintf(&text,
                 "tensor '%s': %s cannot run while rank%s %s %s joined%s (tc_join): "
                 "only allreduce, reducescatter and barrier run without joined ranks",
                 e->name, kd->name, n > 1 ? "s" : "", ranks, n > 1 ? "have" : "has", where) < 0) {
        return NULL;
    }
    return text;
}
