/*
 * coord_ready.c - rank 0's ready list and grouped names: an entry every
 * member of its set has submitted (or expired, or failed with its set)
 * becomes ready, at the end of the list; a grouped member waits for the
 * rest of its group, which then becomes ready in member order, or fails
 * whole (docs/negotiation.md, "Groups"). Below the message table
 * (coordinator.c) and the sets (coord_sets.c); calls only the agreement
 * checks (coord_agree.c).
 */
#define _GNU_SOURCE
#include "neg/coord_internal.h"

#include <stdlib.h>
#include <string.h>

void tc__coord_entry_free(entry_t *e)
{
    int q;

    if (e == NULL) {
        return;
    }
    free(e->dim0); /* name, key, have and reqs share e's block (entry_new) */
    free(e->text);
    for (q = 0; e->gkeys != NULL && q < e->size; q++) {
        free(e->gkeys[q]);
    }
    free(e->gkeys);
    for (q = 0; e->rlists != NULL && q < e->size; q++) {
        free(e->rlists[q]);
    }
    free(e->rlists);
    free(e);
}

static void group_free(group_t *g)
{
    uint32_t i;

    for (i = 0; i < g->size; i++) {
        tc__coord_entry_free(g->members[i]);
    }
    free(g->members);
    free(g->fail_text);
    free(g->key);
    free(g);
}

static void free_group(const char *key, size_t len, void *val, void *arg)
{
    (void)key;
    (void)len;
    (void)arg;
    group_free(val);
}

void tc__coord_groups_free(tc_coord_t *c)
{
    tc__hmap_foreach(&c->groups, free_group, NULL);
    tc__hmap_destroy(&c->groups);
}

static void push_ready(tc_coord_t *c, entry_t *e)
{
    e->next_ready = NULL;
    if (c->ready_tail != NULL) {
        c->ready_tail->next_ready = e;
    } else {
        c->ready_head = e;
    }
    c->ready_tail = e;
    c->nready++;
}

static group_t *group_get(tc_coord_t *c, const tc_wire_request_t *r, uint32_t pset)
{
    char key[TC_WIRE_KEY_MAX];
    size_t klen = tc__wire_key(key, r->group_key, r->group_key_len, pset);
    group_t *g = tc__hmap_get(&c->groups, key, klen);

    if (g != NULL) {
        return g;
    }
    g = calloc(1, sizeof(*g));
    if (g == NULL || (g->key = malloc(klen)) == NULL ||
        (g->members = calloc(r->group_size, sizeof(*g->members))) == NULL ||
        tc__hmap_put(&c->groups, key, klen, g) != 0) {
        if (g != NULL) {
            free(g->members);
            free(g->key);
            free(g);
        }
        return NULL;
    }
    memcpy(g->key, key, klen);
    g->key_len = klen;
    g->pset = pset;
    g->size = r->group_size;
    return g;
}

/* Every member is in: the first disagreeing member's message (in member
 * order) fails them all; then they become ready in member order. */
static void group_complete(tc_coord_t *c, group_t *g)
{
    const char *first = NULL;
    uint32_t i;

    for (i = 0; i < g->size; i++) {
        entry_t *e = g->members[i];
        if (e->fail_status == TC_OK && e->text == NULL) {
            e->text = tc__coord_check_agreement(c, e);
        }
        if (first == NULL && e->text != NULL) {
            first = e->text;
        }
    }
    for (i = 0; i < g->size; i++) {
        entry_t *e = g->members[i];
        if (first != NULL && e->text != first) {
            free(e->text);
            e->text = strdup(first); /* NULL: fails with a generic text below */
            e->fail_status = TC_ERR_MISMATCH;
        } else if (first != NULL) {
            e->fail_status = TC_ERR_MISMATCH;
        }
        push_ready(c, e);
        g->members[i] = NULL;
    }
    tc__hmap_remove(&c->groups, g->key, g->key_len);
    group_free(g);
}

/* A member failed (it expired, or its set went): every member fails with
 * it, the ones in now, the others when they arrive. */
static void group_fail(tc_coord_t *c, group_t *g, tc_status_t st, const char *text)
{
    uint32_t i;

    if (g->fail_status == TC_OK) {
        g->fail_status = st;
        g->fail_text = text != NULL ? strdup(text) : NULL;
    }
    for (i = 0; i < g->size; i++) {
        if (g->members[i] != NULL) {
            free(g->members[i]->text);
            g->members[i]->text = g->fail_text != NULL ? strdup(g->fail_text) : NULL;
            g->members[i]->fail_status = g->fail_status;
            push_ready(c, g->members[i]);
            g->members[i] = NULL;
        }
    }
}

int tc__coord_waiting(const tc_coord_t *c, const entry_t *e)
{
    return tc__hmap_get(&c->table, e->key, e->key_len) == e;
}

void tc__coord_make_ready(tc_coord_t *c, entry_t *e)
{
    const tc_wire_request_t *r = tc__coord_ref(e);
    group_t *g;

    tc__hmap_remove(&c->table, e->key, e->key_len);
    if (r->group_size == 0 || (g = group_get(c, r, e->pset)) == NULL || g->size != r->group_size ||
        r->group_index >= g->size || g->members[r->group_index] != NULL) {
        push_ready(c, e); /* not grouped, or a group the ranks do not agree on: checked then */
        return;
    }
    if (g->fail_status != TC_OK) { /* a member failed: the rest fail with it */
        if (e->fail_status == TC_OK) {
            free(e->text);
            e->text = g->fail_text != NULL ? strdup(g->fail_text) : NULL;
            e->fail_status = g->fail_status;
        }
        push_ready(c, e);
        return;
    }
    if (e->fail_status != TC_OK) { /* expired: every member fails with it, now or later */
        push_ready(c, e);
        group_fail(c, g, e->fail_status, e->text);
        return;
    }
    g->members[r->group_index] = e;
    if (++g->nin == g->size) {
        group_complete(c, g);
    }
}

typedef struct {
    uint32_t pset;
    tc_status_t st;
    const char *text;
    tc_coord_t *c;
} group_fail_ctx_t;

static void fail_set_group(const char *key, size_t len, void *val, void *arg)
{
    group_t *g = val;
    group_fail_ctx_t *x = arg;

    (void)key;
    (void)len;
    if (g->pset == x->pset) {
        group_fail(x->c, g, x->st, x->text);
    }
}

/* Fails the members of set pset's groups that wait for the rest of their
 * group (coord_sets.c, when the set is removed): the others never come. */
void tc__coord_fail_set_groups(tc_coord_t *c, uint32_t pset, tc_status_t st, const char *text)
{
    group_fail_ctx_t x = {pset, st, text, c};

    tc__hmap_foreach(&c->groups, fail_set_group, &x);
}
