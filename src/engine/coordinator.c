/*
 * coordinator.c - rank 0's message table and the agreement checks.
 *
 * For each name: which ranks submitted it and with what parameters. When the
 * last rank's submission arrives, the entry moves to the ready list; taking the
 * ready list checks every rank's submission against rank 0's: the collective
 * kind, then the fields rank 0's kind descriptor lists (engine/kinds.h: for
 * allreduce dtype, op, shape; for broadcast dtype, root, shape; for allgather
 * dtype, ndim, dims 1..), and the first field that differs becomes the
 * error, listing rank 0's value and up to four disagreeing ranks. Must never
 * trust a rank index, name or kind it was handed without checking it.
 */
#define _GNU_SOURCE
#include "engine/coordinator.h"
#include "engine/coord_internal.h"

#include "engine/kinds.h"
#include "engine/neg.h"

#include "util/backoff.h"
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
    c->joined = calloc((size_t)size, 1);
    if (c->joined == NULL) {
        free(c);
        return TC_ERR_NOMEM;
    }
    tc__hmap_init(&c->table);
    tc__hmap_init(&c->groups);
    *coord_p = c;
    return TC_OK;
}

static void entry_free(entry_t *e)
{
    int q;

    if (e == NULL) {
        return;
    }
    free(e->name);
    free(e->have);
    free(e->reqs);
    free(e->dim0);
    free(e->text);
    for (q = 0; e->gkeys != NULL && q < e->size; q++) {
        free(e->gkeys[q]);
    }
    free(e->gkeys);
    free(e);
}

static void group_free(group_t *g)
{
    uint32_t i;

    for (i = 0; i < g->size; i++) {
        entry_free(g->members[i]);
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

static void free_table_entry(const char *key, size_t len, void *val, void *arg)
{
    (void)key;
    (void)len;
    (void)arg;
    entry_free(val);
}

void tc__coord_destroy(tc_coord_t *c)
{
    entry_t *e;

    if (c == NULL) {
        return;
    }
    tc__hmap_foreach(&c->table, free_table_entry, NULL);
    tc__hmap_destroy(&c->table);
    tc__hmap_foreach(&c->groups, free_group, NULL);
    tc__hmap_destroy(&c->groups);
    while ((e = c->ready_head) != NULL) {
        c->ready_head = e->next_ready;
        entry_free(e);
    }
    free(c->joined);
    free(c);
}

int tc__coord_njoined(const tc_coord_t *c)
{
    return c->njoined;
}

size_t tc__coord_nready(const tc_coord_t *c)
{
    return c->nready;
}

size_t tc__coord_pending(const tc_coord_t *c)
{
    return c->table.count;
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

/* The group info of e as the lowest rank that submitted it gave it. */
static const tc_wire_request_t *group_ref(const entry_t *e)
{
    int q;

    for (q = 0; q < e->size; q++) {
        if (e->have[q]) {
            return &e->reqs[q];
        }
    }
    return &e->reqs[0];
}

static group_t *group_get(tc_coord_t *c, const tc_wire_request_t *r)
{
    group_t *g = tc__hmap_get(&c->groups, r->group_key, r->group_key_len);

    if (g != NULL) {
        return g;
    }
    g = calloc(1, sizeof(*g));
    if (g == NULL || (g->key = strndup(r->group_key, r->group_key_len)) == NULL ||
        (g->members = calloc(r->group_size, sizeof(*g->members))) == NULL ||
        tc__hmap_put(&c->groups, g->key, r->group_key_len, g) != 0) {
        if (g != NULL) {
            free(g->members);
            free(g->key);
            free(g);
        }
        return NULL;
    }
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
    tc__hmap_remove(&c->groups, g->key, strlen(g->key));
    group_free(g);
}

/* Moves a waiting entry from the table to the end of the ready list; a
 * group's member waits for the rest of its group first. */
static void make_ready(tc_coord_t *c, entry_t *e)
{
    const tc_wire_request_t *r = group_ref(e);
    group_t *g;

    tc__hmap_remove(&c->table, e->name, e->name_len);
    if (r->group_size == 0 || (g = group_get(c, r)) == NULL || g->size != r->group_size ||
        r->group_index >= g->size || g->members[r->group_index] != NULL) {
        push_ready(c, e); /* not grouped, or a group the ranks do not agree on: checked then */
        return;
    }
    if (g->fail_status != TC_OK) { /* a member expired: the rest fail with it */
        if (e->fail_status == TC_OK) {
            free(e->text);
            e->text = g->fail_text != NULL ? strdup(g->fail_text) : NULL;
            e->fail_status = g->fail_status;
        }
        push_ready(c, e);
        return;
    }
    if (e->fail_status != TC_OK) { /* expired: every member fails with it, now or later */
        uint32_t i;
        g->fail_status = e->fail_status;
        g->fail_text = e->text != NULL ? strdup(e->text) : NULL;
        push_ready(c, e);
        for (i = 0; i < g->size; i++) {
            if (g->members[i] != NULL) {
                free(g->members[i]->text);
                g->members[i]->text = g->fail_text != NULL ? strdup(g->fail_text) : NULL;
                g->members[i]->fail_status = g->fail_status;
                push_ready(c, g->members[i]);
                g->members[i] = NULL;
            }
        }
        return;
    }
    g->members[r->group_index] = e;
    if (++g->nin == g->size) {
        group_complete(c, g);
    }
}

/* The ranks that submitted join entry e are no longer joined: it completed
 * (every rank joined) or rank 0 gave up on it. */
static void unjoin(tc_coord_t *c, const entry_t *e)
{
    int q;

    for (q = 0; q < c->size; q++) {
        if (e->have[q] && c->joined[q]) {
            c->joined[q] = 0;
            c->njoined--;
        }
    }
}

/* Whether every rank has submitted e or joined (tc_join): then it runs,
 * the joined ranks taking part without a submission where its kind can. */
static int complete(const tc_coord_t *c, const entry_t *e)
{
    int q;

    if (e->nsub == c->size) {
        return 1;
    }
    if (c->njoined == 0) {
        return 0;
    }
    for (q = 0; q < c->size; q++) {
        if (!e->have[q] && !c->joined[q]) {
            return 0;
        }
    }
    return 1;
}

static void collect_entry(const char *key, size_t len, void *val, void *arg)
{
    entry_t ***pp = arg;

    (void)key;
    (void)len;
    *(*pp)++ = val;
}

/* rank joined: every waiting name that only joined ranks lack is ready.
 * -1 when out of memory (the table is unchanged then). */
static int mark_joined(tc_coord_t *c, int rank)
{
    entry_t **all, **end;
    size_t i, n = c->table.count;

    all = malloc((n > 0 ? n : 1) * sizeof(*all));
    if (all == NULL) {
        return -1;
    }
    c->joined[rank] = 1;
    c->njoined++;
    end = all;
    tc__hmap_foreach(&c->table, collect_entry, &end);
    for (i = 0; i < n; i++) { /* the table's order: rank 0 decides it for every rank */
        if (!tc__kind_get(all[i]->reqs[tc__coord_first(all[i])].kind)->joins &&
            complete(c, all[i])) { /* a join completes with its own submissions */
            all[i]->last = rank;
            make_ready(c, all[i]);
        }
    }
    free(all);
    return 0;
}

typedef struct {
    void (*fn)(const tc_coord_pending_t *p, void *arg);
    void *arg;
    int size;
} foreach_ctx_t;

static void visit_pending(const char *key, size_t len, void *val, void *arg)
{
    const entry_t *e = val;
    const foreach_ctx_t *ctx = arg;
    tc_coord_pending_t p;
    int q;

    (void)key;
    (void)len;
    p.name = e->name;
    p.name_len = e->name_len;
    p.since_ns = e->since_ns;
    p.have = e->have;
    p.kind = 0;
    for (q = 0; q < ctx->size; q++) { /* the kind as the lowest submitting rank gave it */
        if (e->have[q]) {
            p.kind = e->reqs[q].kind;
            break;
        }
    }
    ctx->fn(&p, ctx->arg);
}

void tc__coord_foreach_pending(const tc_coord_t *c, void (*fn)(const tc_coord_pending_t *p, void *arg),
                               void *arg)
{
    foreach_ctx_t ctx = {fn, arg, c->size};

    tc__hmap_foreach(&c->table, visit_pending, &ctx);
}

tc_status_t tc__coord_expire(tc_coord_t *c, const char *name, uint32_t len, tc_status_t st,
                             const char *text)
{
    entry_t *e = tc__hmap_get(&c->table, name, len);
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
    if (tc__kind_get(e->reqs[tc__coord_first(e)].kind)->joins) {
        unjoin(c, e); /* its ranks fail their joins and go on */
    }
    make_ready(c, e);
    return TC_OK;
}

static entry_t *entry_new(int size, const char *name, uint32_t len, uint64_t now)
{
    entry_t *e = calloc(1, sizeof(*e));

    if (e == NULL) {
        return NULL;
    }
    e->name = malloc((size_t)len + 1);
    e->have = calloc((size_t)size, 1);
    e->reqs = calloc((size_t)size, sizeof(*e->reqs));
    if (e->name == NULL || e->have == NULL || e->reqs == NULL) {
        entry_free(e);
        return NULL;
    }
    memcpy(e->name, name, len);
    e->name[len] = '\0';
    e->name_len = len;
    e->since_ns = now;
    e->size = size;
    return e;
}

tc_status_t tc__coord_add(tc_coord_t *c, int rank, const tc_wire_request_t *req, char *err,
                          size_t errlen)
{
    return tc__coord_add_at(c, rank, req, tc__now_ns(), err, errlen);
}

tc_status_t tc__coord_add_at(tc_coord_t *c, int rank, const tc_wire_request_t *req, uint64_t now,
                             char *err, size_t errlen)
{
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
    e = tc__hmap_get(&c->table, req->name, req->name_len);
    if (e != NULL && e->have[rank]) {
        snprintf(err, errlen, "rank %d submitted tensor '%s' twice", rank, e->name);
        return TC_ERR_ARG;
    }
    /* a join first runs what only joined ranks lack (before its own entry
     * exists: it completes with its own submissions); out of memory is
     * fatal to the caller, so a half-done mark is never seen */
    if (tc__kind_get(req->kind)->joins && !c->joined[rank]) {
        if (mark_joined(c, rank) != 0) {
            return TC_ERR_NOMEM;
        }
        e = tc__hmap_get(&c->table, req->name, req->name_len); /* it may have run */
    }
    if (e == NULL) {
        e = entry_new(c->size, req->name, req->name_len, now);
        if (e == NULL) {
            return TC_ERR_NOMEM;
        }
        if (tc__hmap_put(&c->table, e->name, e->name_len, e) != 0) {
            entry_free(e);
            return TC_ERR_NOMEM;
        }
        created = 1;
    }
    if (req->group_size > 0) { /* the key lives in the message: keep a copy */
        char *key = strndup(req->group_key, req->group_key_len);
        if (e->gkeys == NULL) {
            e->gkeys = calloc((size_t)c->size, sizeof(*e->gkeys));
        }
        if (key == NULL || e->gkeys == NULL) {
            free(key);
            if (created) {
                tc__hmap_remove(&c->table, e->name, e->name_len);
                entry_free(e);
            }
            return TC_ERR_NOMEM;
        }
        e->gkeys[rank] = key;
    }
    e->have[rank] = 1;
    e->reqs[rank] = *req;
    e->reqs[rank].name = e->name;
    if (req->group_size > 0) {
        e->reqs[rank].group_key = e->gkeys[rank];
    }
    e->nsub++;
    if (complete(c, e)) {
        e->last = rank;
        if (tc__kind_get(req->kind)->joins) {
            unjoin(c, e); /* every rank joined: the next step runs as usual */
        }
        make_ready(c, e);
    }
    return TC_OK;
}

/* Why e, which some joined ranks did not submit, cannot run: a malloc'd
 * message naming them, or NULL when out of memory. */
static char *joined_text(const tc_coord_t *c, const entry_t *e, const tc_kind_desc_t *kd)
{
    char ranks[256], *text;
    int n = tc__neg_format_ranks(e->have, c->size, 0, ranks, sizeof(ranks));

    if (asprintf(&text, "tensor '%s': %s cannot run while rank%s %s %s joined (tc_join): "
                 "only allreduce, reducescatter and barrier run without joined ranks",
                 e->name, kd->name, n > 1 ? "s" : "", ranks, n > 1 ? "have" : "has") < 0) {
        return NULL;
    }
    return text;
}

tc_status_t tc__coord_take_ready(tc_coord_t *c, tc_coord_batch_t *batch_p)
{
    tc_coord_batch_t b = {0};
    const tc_kind_desc_t *kd;
    entry_t *e, *first;
    uint32_t i = 0;
    int q;

    if (c->nready == 0) {
        *batch_p = b;
        return TC_OK;
    }
    b.resps = calloc(c->nready, sizeof(*b.resps));
    b.kinds = calloc(c->nready, 1);
    if (b.resps == NULL || b.kinds == NULL) {
        free(b.resps);
        free(b.kinds);
        return TC_ERR_NOMEM;
    }
    for (e = c->ready_head; e != NULL; e = e->next_ready) {
        tc_wire_response_t *r = &b.resps[i];
        const tc_wire_request_t *ref = group_ref(e);
        /* grouped names run as a unit through rank 0 every time: not cached */
        b.kinds[i++] = ref->group_size > 0 ? TC_COORD_NOCACHE : ref->kind;
        r->name = e->name;
        r->name_len = e->name_len;
        if (e->fail_status != TC_OK) {
            r->rtype = TC_WIRE_ERROR;
            r->status = (uint8_t)e->fail_status;
            r->text = e->text != NULL ? e->text : "failed with its group (out of memory for "
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
        if (e->nsub < c->size || c->njoined > 0) {
            /* runs without joined ranks, or they drop the cache: not cached */
            b.kinds[i - 1] = TC_COORD_NOCACHE;
        }
        if (e->nsub < c->size && !kd->without_joined) {
            e->text = joined_text(c, e, kd);
            r->rtype = TC_WIRE_ERROR;
            r->status = TC_ERR_STATE;
            r->text = e->text != NULL ? e->text : "some ranks have joined (tc_join)";
            r->text_len = (uint32_t)strlen(r->text);
            continue;
        }
        r->rtype = TC_WIRE_RUN;
        if (e->nsub < c->size) { /* the joined ranks run it from this description */
            r->has_desc = 1;
            r->desc.kind = ref->kind;
            r->desc.dtype = ref->dtype;
            r->desc.op = ref->op;
            r->desc.ndim = ref->ndim;
            memcpy(r->desc.shape, ref->shape, sizeof(r->desc.shape));
        }
        if (kd->joins) {
            r->has_value = 1;
            r->value = e->last;
        }
        if (kd->output == TC_OUT_GATHERED) { /* the plan: rows per rank */
            e->dim0 = malloc((size_t)c->size * sizeof(*e->dim0));
            if (e->dim0 == NULL) {
                /* cannot describe the run: fail the tensor everywhere instead */
                r->rtype = TC_WIRE_ERROR;
                r->status = TC_ERR_NOMEM;
                r->text = "out of memory on rank 0 while scheduling the allgather";
                r->text_len = (uint32_t)strlen(r->text);
                continue;
            }
            for (q = 0; q < c->size; q++) {
                e->dim0[q] = e->reqs[q].shape[0];
            }
            r->ndim0 = (uint32_t)c->size;
            r->dim0 = e->dim0;
        }
    }
    first = c->ready_head;
    c->ready_head = c->ready_tail = NULL;
    b.count = i;
    b.entries = first;
    c->nready = 0;
    *batch_p = b;
    return TC_OK;
}

void tc__coord_batch_free(tc_coord_batch_t *b)
{
    entry_t *e = b->entries;

    while (e != NULL) {
        entry_t *next = e->next_ready;
        entry_free(e);
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
