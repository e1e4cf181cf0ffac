/*
 * cache.c - the response cache (see cache.h).
 *
 * Ids index a slot array that grows by doubling; names map to entries through
 * a hash map. Freed ids are reused before fresh ones so that ids stay below
 * the capacity rank 0 allows. Must never trust an id it was handed without
 * checking it: ids come off the wire.
 */
#define _GNU_SOURCE
#include "neg/cache.h"

#include <stdlib.h>
#include <string.h>

void tc__cache_init(tc_cache_t *c)
{
    memset(c, 0, sizeof(*c));
    tc__hmap_init(&c->by_name);
}

static void entry_free(tc_cache_entry_t *e)
{
    if (e != NULL) {
        free(e->name);
        free(e->dim0);
        free(e);
    }
}

void tc__cache_destroy(tc_cache_t *c)
{
    uint32_t i;

    for (i = 0; i < c->nslots; i++) {
        entry_free(c->slots[i]);
    }
    free(c->slots);
    free(c->free_ids);
    tc__hmap_destroy(&c->by_name);
    memset(c, 0, sizeof(*c));
}

tc_cache_entry_t *tc__cache_find(const tc_cache_t *c, const char *name, uint32_t len)
{
    return tc__hmap_get(&c->by_name, name, len);
}

tc_cache_entry_t *tc__cache_get(const tc_cache_t *c, uint32_t id)
{
    return id < c->nslots ? c->slots[id] : NULL;
}

int tc__cache_matches(const tc_cache_entry_t *entry, const tc_wire_request_t *w)
{
    const tc_wire_request_t *d = &entry->desc;

    return d->kind == w->kind && d->dtype == w->dtype && d->memory == w->memory && d->op == w->op &&
           d->root == w->root && d->ndim == w->ndim &&
           memcmp(d->shape, w->shape, (size_t)d->ndim * sizeof(d->shape[0])) == 0 &&
           tc__wire_scales_equal(d, w) && tc__wire_groups_equal(d, w);
}

uint32_t tc__cache_assign(tc_cache_t *c, uint32_t capacity)
{
    uint32_t id;

    if (capacity > TC_WIRE_MAX_CACHE) {
        capacity = TC_WIRE_MAX_CACHE;
    }
    if ((uint64_t)c->count + c->reserved >= capacity) {
        return 0;
    }
    if (c->nfree > 0) {
        id = c->free_ids[--c->nfree];
    } else if (c->next_fresh < TC_WIRE_MAX_CACHE) {
        id = c->next_fresh++; /* every smaller id is in use (or was lost, see drop) */
    } else {
        return 0;
    }
    c->reserved++;
    return id + 1;
}

static tc_status_t grow_slots(tc_cache_t *c, uint32_t id)
{
    uint32_t n = c->nslots < 16 ? 16 : c->nslots;
    tc_cache_entry_t **s;

    while (n <= id) {
        n *= 2;
    }
    s = realloc(c->slots, (size_t)n * sizeof(*s));
    if (s == NULL) {
        return TC_ERR_NOMEM;
    }
    memset(s + c->nslots, 0, (size_t)(n - c->nslots) * sizeof(*s));
    c->slots = s;
    c->nslots = n;
    return TC_OK;
}

tc_status_t tc__cache_file(tc_cache_t *c, uint32_t id, const tc_wire_request_t *w,
                           const tc_wire_response_t *run)
{
    tc_cache_entry_t *e;

    if (id >= TC_WIRE_MAX_CACHE || tc__cache_get(c, id) != NULL ||
        tc__cache_find(c, w->name, w->name_len) != NULL) {
        return TC_ERR_ARG;
    }
    if (id >= c->nslots && grow_slots(c, id) != TC_OK) {
        return TC_ERR_NOMEM;
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL || (e->name = strndup(w->name, w->name_len)) == NULL) {
        goto err_free_entry;
    }
    if (run->ndim0 > 0) {
        e->dim0 = malloc((size_t)run->ndim0 * sizeof(*e->dim0));
        if (e->dim0 == NULL) {
            goto err_free_entry;
        }
        memcpy(e->dim0, run->dim0, (size_t)run->ndim0 * sizeof(*e->dim0));
        e->ndim0 = run->ndim0;
    }
    e->id = id;
    e->desc = *w;
    e->desc.name = e->name;
    if (tc__hmap_put(&c->by_name, e->name, w->name_len, e) != 0) {
        goto err_free_entry;
    }
    c->slots[id] = e;
    c->count++;
    c->gen++;
    if (c->reserved > 0) {
        c->reserved--;
    }
    if (id >= c->next_fresh) {
        c->next_fresh = id + 1; /* another rank's numbering (only rank 0 assigns) */
    }
    return TC_OK;

err_free_entry:
    entry_free(e);
    return TC_ERR_NOMEM;
}

void *tc__cache_drop(tc_cache_t *c, uint32_t id, int *found_p)
{
    tc_cache_entry_t *e = tc__cache_get(c, id);
    void *pending;

    *found_p = e != NULL;
    if (e == NULL) {
        return NULL;
    }
    if (c->nfree == c->capfree) {
        uint32_t cap = c->capfree < 16 ? 16 : c->capfree * 2;
        uint32_t *f = realloc(c->free_ids, (size_t)cap * sizeof(*f));
        if (f != NULL) {
            c->free_ids = f;
            c->capfree = cap;
        }
    }
    if (c->nfree < c->capfree) {
        c->free_ids[c->nfree++] = id;
    } /* else the id is lost to reuse: harmless, the next fresh one serves */
    pending = e->pending;
    tc__hmap_remove(&c->by_name, e->name, e->desc.name_len);
    c->slots[id] = NULL;
    c->count--;
    c->gen++;
    entry_free(e);
    return pending;
}
