/*
 * coordinator.c - rank 0's message table and the agreement checks.
 *
 * For each name: which ranks submitted it and with what parameters. When the
 * last rank's submission arrives, the entry moves to the ready list; taking the
 * ready list checks every rank's submission against rank 0's: the collective
 * kind, then the fields rank 0's kind descriptor lists (kind/kind.h: for
 * allreduce dtype, op, shape; for broadcast dtype, root, shape; for allgather
 * dtype, ndim, dims 1..), and the first field that differs becomes the
 * error, listing rank 0's value and up to four disagreeing ranks. Must never
 * trust a rank index, name or kind it was handed without checking it.
 */
#define _GNU_SOURCE
#include "neg/coordinator.h"
#include "neg/coord_internal.h"

#include "kind/kind.h"
#include "neg/neg.h"

#include "util/hmap.h"
#include "util/status.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tc_status_t tc__coord_create(int size, tc_coord_t **coord_p)
{
    tc_coord_t *c;

    if (size < 1 || coord_p == NULL) {
        return TC_ERR_ARG;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return TC_ERR_NOMEM;
    }
    c->size = size;
    if ((c->joins_taken = calloc((size_t)size, sizeof(*c->joins_taken))) == NULL ||
        tc__coord_sets_init(c) != 0) {
        free(c->joins_taken);
        free(c);
        return TC_ERR_NOMEM;
    }
    tc__hmap_init(&c->table);
    tc__hmap_init(&c->groups);
    *coord_p = c;
    return TC_OK;
}

static void free_table_entry(const char *key, size_t len, void *val, void *arg)
{
    (void)key;
    (void)len;
    (void)arg;
    tc__coord_entry_free(val);
}

void tc__coord_destroy(tc_coord_t *c)
{
    entry_t *e;

    if (c == NULL) {
        return;
    }
    tc__hmap_foreach(&c->table, free_table_entry, NULL);
    tc__hmap_destroy(&c->table);
    tc__coord_groups_free(c);
    while ((e = c->ready_head) != NULL) {
        c->ready_head = e->next_ready;
        tc__coord_entry_free(e);
    }
    tc__coord_sets_free(c);
    free(c->joins_taken);
    free(c);
}

int tc__coord_njoined(const tc_coord_t *c)
{
    return c->sets[0]->njoined;
}

uint64_t tc__coord_joins_taken(const tc_coord_t *c, int rank)
{
    if (rank < 0) {
        return c->joins_total;
    }
    return rank < c->size ? c->joins_taken[rank] : 0;
}

size_t tc__coord_nready(const tc_coord_t *c)
{
    return c->nready;
}

size_t tc__coord_pending(const tc_coord_t *c)
{
    return c->table.count;
}

typedef struct {
    void (*fn)(const tc_coord_pending_t *p, void *arg);
    void *arg;
    const tc_coord_t *c;
} foreach_ctx_t;

static void visit_pending(const char *key, size_t len, void *val, void *arg)
{
    const entry_t *e = val;
    const foreach_ctx_t *ctx = arg;
    const coord_set_t *s = tc__coord_set(ctx->c, e->pset);
    tc_coord_pending_t p;

    (void)key;
    (void)len;
    p.name = e->name;
    p.name_len = e->name_len;
    p.pset = e->pset;
    p.since_ns = e->since_ns;
    p.have = e->have;
    p.member = s != NULL ? s->member : NULL;
    p.kind = tc__coord_ref(e)->kind; /* as the lowest submitting rank gave it */
    ctx->fn(&p, ctx->arg);
}

void tc__coord_foreach_pending(const tc_coord_t *c,
                               void (*fn)(const tc_coord_pending_t *p, void *arg), void *arg)
{
    foreach_ctx_t ctx = {fn, arg, c};

    tc__hmap_foreach(&c->table, visit_pending, &ctx);
}

tc_status_t tc__coord_expire(tc_coord_t *c, const char *name, uint32_t len, uint32_t pset,
                             tc_status_t st, const char *text)
{
    char key[TC_WIRE_KEY_MAX];
    entry_t *e = len <= TC_MAX_NAME_LEN
                     ? tc__hmap_get(&c->table, key, tc__wire_key(key, name, len, pset))
                     : NULL;
    char *copy;

    if (e == NULL || st == TC_OK || text == NULL) {
        return TC_ERR_ARG;
    }
    copy = strndup(text, TC_WIRE_MAX_TEXT);
    if (copy == NULL) {
        return TC_ERR_NOMEM;
    }
    free(e->text);
    e->text = copy;
    e->fail_status = st;
    if (tc__kind_get(tc__coord_ref(e)->kind)->joins) {
        tc__coord_unjoin(c, e); /* its ranks fail their joins and go on */
    }
    tc__coord_make_ready(c, e);
    return TC_OK;
}

/* One allocation per name (a flood of first-time names makes one entry
 * each): the entry, then reqs[size], have[size], the name and the key. */
static entry_t *entry_new(int size, const tc_wire_request_t *req, uint64_t now)
{
    char key[TC_WIRE_KEY_MAX];
    size_t key_len = tc__wire_key(key, req->name, req->name_len, req->pset);
    size_t head = (sizeof(entry_t) + _Alignof(tc_wire_request_t) - 1) /
                  _Alignof(tc_wire_request_t) * _Alignof(tc_wire_request_t);
    size_t reqs = (size_t)size * sizeof(tc_wire_request_t);
    char *block = calloc(1, head + reqs + (size_t)size + req->name_len + 1 + key_len);
    entry_t *e = (entry_t *)(void *)block;

    if (block == NULL) {
        return NULL;
    }
    e->reqs = (tc_wire_request_t *)(void *)(block + head);
    e->have = (uint8_t *)(block + head + reqs);
    e->name = block + head + reqs + size;
    e->key = e->name + req->name_len + 1;
    e->key_len = key_len;
    e->size = size;
    memcpy(e->name, req->name, req->name_len);
    e->name[req->name_len] = '\0';
    e->name_len = req->name_len;
    memcpy(e->key, key, e->key_len);
    e->pset = req->pset;
    e->since_ns = now;
    return e;
}

/* Keeps copies of what of req lives in the message (its group key, its rank
 * list) in e, for rank. -1 when out of memory. */
static int keep_parts(const tc_coord_t *c, entry_t *e, int rank, const tc_wire_request_t *req)
{
    if (req->group_size > 0) {
        if (e->gkeys == NULL && (e->gkeys = calloc((size_t)c->size, sizeof(*e->gkeys))) == NULL) {
            return -1;
        }
        if ((e->gkeys[rank] = strndup(req->group_key, req->group_key_len)) == NULL) {
            return -1;
        }
    }
    if (req->nranks > 0) {
        if (e->rlists == NULL &&
            (e->rlists = calloc((size_t)c->size, sizeof(*e->rlists))) == NULL) {
            return -1;
        }
        if ((e->rlists[rank] = malloc(req->nranks * sizeof(int32_t))) == NULL) {
            return -1;
        }
        memcpy(e->rlists[rank], req->ranks, req->nranks * sizeof(int32_t));
    }
    return 0;
}

tc_status_t tc__coord_add_at(tc_coord_t *c, int rank, const tc_wire_request_t *req, uint64_t now,
                             char *err, size_t errlen)
{
    char key[TC_WIRE_KEY_MAX];
    coord_set_t *s;
    entry_t *e;
    int created = 0;

    if (rank < 0 || rank >= c->size) {
        snprintf(err, errlen, "submission from rank %d outside 0..%d", rank, c->size - 1);
        return TC_ERR_ARG;
    }
    if (req->name == NULL || req->name_len == 0 || req->name_len > TC_MAX_NAME_LEN) {
        snprintf(err, errlen, "submission from rank %d has no valid name", rank);
        return TC_ERR_ARG;
    }
    if (tc__kind_get(req->kind) == NULL) {
        snprintf(err, errlen, "submission from rank %d has unknown kind %u", rank,
                 (unsigned)req->kind);
        return TC_ERR_ARG;
    }
    s = tc__coord_set(c, req->pset);
    if (s != NULL && s->removing) {
        s = NULL; /* fails at once, below */
    }
    if (s != NULL && !s->member[rank]) {
        snprintf(err, errlen,
                 "rank %d submitted tensor '%.*s' to process set %u, which it is "
                 "not in",
                 rank, (int)req->name_len, req->name, req->pset);
        return TC_ERR_ARG;
    }
    e = tc__hmap_get(&c->table, key, tc__wire_key(key, req->name, req->name_len, req->pset));
    if (e != NULL && e->have[rank]) {
        snprintf(err, errlen, "rank %d submitted tensor '%s' twice", rank, e->name);
        return TC_ERR_ARG;
    }
    /* a join first runs what only joined members lack (before its own entry
     * exists: it completes with its own submissions); out of memory is
     * fatal to the caller, so a half-done mark is never seen */
    if (s != NULL && tc__kind_get(req->kind)->joins && !s->joined[rank]) {
        if (tc__coord_mark_joined(c, s, rank) != 0) {
            return TC_ERR_NOMEM;
        }
        e = tc__hmap_get(&c->table, key, tc__wire_key(key, req->name, req->name_len, req->pset));
    }
    if (e == NULL) {
        e = entry_new(c->size, req, now);
        if (e == NULL) {
            return TC_ERR_NOMEM;
        }
        if (tc__hmap_put(&c->table, e->key, e->key_len, e) != 0) {
            tc__coord_entry_free(e);
            return TC_ERR_NOMEM;
        }
        created = 1;
    }
    if (keep_parts(c, e, rank, req) != 0) {
        if (created) {
            tc__hmap_remove(&c->table, e->key, e->key_len);
            tc__coord_entry_free(e);
        }
        return TC_ERR_NOMEM;
    }
    e->have[rank] = 1;
    e->reqs[rank] = *req;
    e->reqs[rank].name = e->name;
    if (req->group_size > 0) {
        e->reqs[rank].group_key = e->gkeys[rank];
    }
    if (req->nranks > 0) {
        e->reqs[rank].ranks = e->rlists[rank];
    }
    e->nsub++;
    if (req->pset == 0 && tc__kind_get(req->kind)->joins) {
        c->joins_taken[rank]++; /* taken: what it completes comes after it */
        c->joins_total++;
    }
    if (s == NULL) { /* a set that does not exist (any more): it fails at once */
        e->fail_status = TC_ERR_STATE;
        if (asprintf(&e->text,
                     "tensor '%s': process set %u does not exist (it was removed, "
                     "or never made)",
                     e->name, e->pset) < 0) {
            e->text = NULL;
        }
        tc__coord_make_ready(c, e);
    } else if (tc__coord_complete(c, e)) {
        tc__coord_complete_entry(c, e, rank);
    }
    return TC_OK;
}

/* Whether ready entries a and b (a right before b) are members of one group. */
static int same_group(const entry_t *a, const entry_t *b)
{
    const tc_wire_request_t *x = tc__coord_ref(a), *y = tc__coord_ref(b);

    return x->group_size > 0 && y->group_size > 0 && a->pset == b->pset &&
           x->group_key_len == y->group_key_len &&
           memcmp(x->group_key, y->group_key, x->group_key_len) == 0;
}

tc_status_t tc__coord_take_ready(tc_coord_t *c, tc_coord_batch_t *batch_p)
{
    return tc__coord_take_ready_max(c, SIZE_MAX, batch_p);
}

tc_status_t tc__coord_take_ready_max(tc_coord_t *c, size_t max, tc_coord_batch_t *batch_p)
{
    tc_coord_batch_t b = {0};
    const tc_kind_desc_t *kd;
    const coord_set_t *set;
    entry_t *e, *first, *last = NULL, *stop;
    uint32_t i = 0;
    size_t count = 0;
    int q, k, missing;

    if (c->nready == 0) {
        *batch_p = b;
        return TC_OK;
    }
    /* the entries taken: ready_head up to (not including) stop */
    for (stop = c->ready_head; stop != NULL; last = stop, stop = stop->next_ready) {
        if (count > 0 && count >= max && !same_group(last, stop)) {
            break;
        }
        count++;
    }
    b.resps = calloc(count, sizeof(*b.resps));
    b.kinds = calloc(count, 1);
    if (b.resps == NULL || b.kinds == NULL) {
        free(b.resps);
        free(b.kinds);
        return TC_ERR_NOMEM;
    }
    for (e = c->ready_head; e != stop; e = e->next_ready) {
        tc_wire_response_t *r = &b.resps[i];
        const tc_wire_request_t *ref = tc__coord_ref(e);
        /* grouped names run as a unit through rank 0 every time: not cached */
        b.kinds[i++] = ref->group_size > 0 ? TC_COORD_NOCACHE : ref->kind;
        r->name = e->name;
        r->name_len = e->name_len;
        r->pset = e->pset;
        if (e->fail_status != TC_OK) {
            r->rtype = TC_WIRE_ERROR;
            r->status = (uint8_t)e->fail_status;
            r->text = e->text != NULL ? e->text
                                      : "failed with its group (out of memory for "
                                        "the message)";
            r->text_len = (uint32_t)strlen(r->text);
            continue;
        }
        e->text = tc__coord_check_agreement(c, e);
        if (e->text != NULL) {
            r->rtype = TC_WIRE_ERROR;
            r->status = TC_ERR_MISMATCH;
            r->text = e->text;
            r->text_len = (uint32_t)strlen(e->text);
            continue;
        }
        kd = tc__kind_get(ref->kind);
        set = tc__coord_set(c, e->pset);
        if (set == NULL) { /* cannot be: a ready name's set goes only after it is taken */
            r->rtype = TC_WIRE_ERROR;
            r->status = TC_ERR_STATE;
            r->text = "its process set no longer exists";
            r->text_len = (uint32_t)strlen(r->text);
            continue;
        }
        missing = e->nsub < set->n;
        if (missing || e->pset != 0 || c->sets[0]->njoined > 0) {
            /* runs without joined ranks, or they drop the cache, or the name
             * is another set's: not cached */
            b.kinds[i - 1] = TC_COORD_NOCACHE;
        }
        if (missing && !kd->without_joined) {
            e->text = tc__coord_joined_text(c, e);
            r->rtype = TC_WIRE_ERROR;
            r->status = TC_ERR_STATE;
            r->text = e->text != NULL ? e->text : "some ranks have joined (tc_join)";
            r->text_len = (uint32_t)strlen(r->text);
            continue;
        }
        r->rtype = TC_WIRE_RUN;
        if (ref->kind == TC_KIND_PROCESS_SET_REMOVE) { /* what ran before it saw the set */
            tc__coord_set_drop(c, (uint32_t)ref->root);
        }
        if (missing) { /* the joined ranks run it from this description */
            r->has_desc = 1;
            r->desc.kind = ref->kind;
            r->desc.dtype = ref->dtype;
            r->desc.op = ref->op;
            r->desc.ndim = ref->ndim;
            memcpy(r->desc.shape, ref->shape, sizeof(r->desc.shape));
        }
        if (kd->valued) {
            r->has_value = 1;
            r->value = e->value;
        }
        if (kd->output == TC_OUT_GATHERED) { /* the plan: rows per rank */
            e->dim0 = malloc((size_t)set->n * sizeof(*e->dim0));
            if (e->dim0 == NULL) {
                /* cannot describe the run: fail the tensor everywhere instead */
                r->rtype = TC_WIRE_ERROR;
                r->status = TC_ERR_NOMEM;
                r->text = "out of memory on rank 0 while scheduling the allgather";
                r->text_len = (uint32_t)strlen(r->text);
                continue;
            }
            for (q = 0, k = 0; q < c->size; q++) { /* in the set's order */
                if (set->member[q]) {
                    e->dim0[k++] = e->reqs[q].shape[0];
                }
            }
            r->ndim0 = (uint32_t)set->n;
            r->dim0 = e->dim0;
        }
    }
    first = c->ready_head;
    last->next_ready = NULL;
    c->ready_head = stop;
    if (stop == NULL) {
        c->ready_tail = NULL;
    }
    b.count = i;
    b.entries = first;
    c->nready -= count;
    *batch_p = b;
    return TC_OK;
}

void tc__coord_batch_free(tc_coord_batch_t *b)
{
    entry_t *e = b->entries;

    while (e != NULL) {
        entry_t *next = e->next_ready;
        tc__coord_entry_free(e);
        e = next;
    }
    free(b->resps);
    free(b->kinds);
    memset(b, 0, sizeof(*b));
}

void tc__coord_backdate(tc_coord_t *c, const char *name, uint32_t len, uint64_t since_ns)
{
    entry_t *e = tc__hmap_get(&c->table, name, len);

    if (e != NULL && since_ns < e->since_ns) {
        e->since_ns = since_ns;
    }
}
