/*
 * stall.c - rank 0's stall inspector: tensors some ranks have submitted and
 * others not, for too long.
 *
 * Two sources: names waiting in rank 0's message table (first-time
 * submissions, with the ranks that have them and since when), and cached
 * names some ranks but not all list as ready (tc__stall_note_ready keeps
 * that view after every cycle). Once a second, tc__stall_check warns about
 * those waiting TCOLL_STALL_WARN_S or more, with the ranks that have and
 * have not submitted them, and fails those waiting TCOLL_STALL_ABORT_S with
 * TC_ERR_TIMEOUT on every rank that submitted them: a first-time name
 * through the message table, a cached one through rank 0's next cycle
 * message (the timeouts list, which the protocol sends and then frees).
 * The inspector only observes: running out of memory makes it miss a turn,
 * never fails the engine.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "util/backoff.h"
#include "util/log.h"

#define STALL_LISTED 20 /* tensors named in one warning */

/* Writes the ranks q with want == (flags[q] != 0) as "0-3,5" into buf;
 * skip (-1: none) is left out. Returns how many were listed. */
int tc__ranks_format(const uint8_t *flags, int size, int want, int skip, char *buf, size_t len)
{
    size_t pos = 0;
    int q = 0, n = 0;

    buf[0] = '\0';
    while (q < size) {
        int r;
        if (q == skip || (flags[q] != 0) != want) {
            q++;
            continue;
        }
        for (r = q; r + 1 < size && r + 1 != skip && (flags[r + 1] != 0) == want; r++) {
        }
        if (pos < len) {
            pos += (size_t)snprintf(buf + pos, len - pos, r == q ? "%s%d" : "%s%d-%d",
                                    n > 0 ? "," : "", q, r);
        }
        n += r - q + 1;
        q = r + 1;
    }
    return n;
}

static void cstall_free(eng_cstall_t *v, uint32_t n)
{
    uint32_t i;

    for (i = 0; v != NULL && i < n; i++) {
        free(v[i].have);
    }
    free(v);
}

static int cmp_cstall(const void *a, const void *b)
{
    uint32_t x = ((const eng_cstall_t *)a)->id, y = ((const eng_cstall_t *)b)->id;
    return (x > y) - (x < y);
}

/* After a cycle (rank 0): which cached ids some ranks, but not all, have
 * listed as ready (ready[q]: rank q's list), and since when; ran and failed
 * are the ids that cycle ran or failed. Every rank lists all its waiting ids
 * in every message, so one cycle's lists are the whole picture. */
void tc__stall_note_ready(engine_t *e, const eng_ids_t *ready, const uint32_t *ran,
                          uint32_t nran, const uint32_t *failed, uint32_t nfailed)
{
    uint32_t *ids, nids = 0, i, k, total = 0;
    eng_cstall_t *v;
    uint64_t now = tc__now_ns();
    int q;

    for (q = 0; q < e->size; q++) {
        total += ready[q].n;
    }
    if (total == 0) {
        cstall_free(e->stall.cached, e->stall.ncached);
        e->stall.cached = NULL;
        e->stall.ncached = 0;
        return;
    }
    ids = malloc((size_t)total * sizeof(*ids));
    v = calloc(total, sizeof(*v));
    if (ids == NULL || v == NULL) {
        free(ids);
        free(v);
        return; /* the inspector misses one cycle; nothing else depends on it */
    }
    for (q = 0; q < e->size; q++) {
        if (ready[q].n > 0) {
            memcpy(ids + nids, ready[q].ids, (size_t)ready[q].n * sizeof(*ids));
            nids += ready[q].n;
        }
    }
    qsort(ids, nids, sizeof(*ids), eng_cmp_u32);
    for (i = 0, k = 0; i < nids; i++) {
        eng_cstall_t key, *old;
        if ((i > 0 && ids[i] == ids[i - 1]) || eng_ids_contain(ran, nran, ids[i]) ||
            eng_ids_contain(failed, nfailed, ids[i]) || tc__cache_get(&e->cache, ids[i]) == NULL) {
            continue;
        }
        v[k].id = ids[i];
        v[k].have = malloc((size_t)e->size);
        if (v[k].have == NULL) {
            continue;
        }
        for (q = 0; q < e->size; q++) {
            v[k].have[q] = (uint8_t)eng_ids_has(ready[q].ids, ready[q].n, ids[i]);
        }
        key.id = ids[i];
        old = e->stall.ncached > 0
                  ? bsearch(&key, e->stall.cached, e->stall.ncached, sizeof(key), cmp_cstall)
                  : NULL;
        v[k].since_ns = old != NULL ? old->since_ns : now;
        k++;
    }
    free(ids);
    cstall_free(e->stall.cached, e->stall.ncached);
    e->stall.cached = v;
    e->stall.ncached = k;
}

/* One stalled name, as the check lists them. */
typedef struct {
    char *name;
    uint8_t kind;
    uint64_t since_ns;
    uint8_t *have;
    int cached;
} stalled_t;

typedef struct {
    stalled_t *v;
    size_t n, cap;
    int size;
} stalled_list_t;

static void stalled_add(stalled_list_t *l, const char *name, uint32_t len, uint8_t kind,
                        uint64_t since, const uint8_t *have, int cached)
{
    stalled_t *x;

    if (l->n == l->cap) {
        size_t cap = l->cap < 16 ? 16 : l->cap * 2;
        stalled_t *v = realloc(l->v, cap * sizeof(*v));
        if (v == NULL) {
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    x = &l->v[l->n];
    x->name = strndup(name, len);
    x->have = malloc((size_t)l->size);
    if (x->name == NULL || x->have == NULL) {
        free(x->name);
        free(x->have);
        return;
    }
    memcpy(x->have, have, (size_t)l->size);
    x->kind = kind;
    x->since_ns = since;
    x->cached = cached;
    l->n++;
}

static void stalled_visit(const tc_coord_pending_t *p, void *arg)
{
    stalled_add(arg, p->name, p->name_len, p->kind, p->since_ns, p->have, 0);
}

static int timeout_queued(const engine_t *e, const char *name)
{
    uint32_t i;

    for (i = 0; i < e->stall.ntimeouts; i++) {
        if (strcmp(e->stall.timeouts[i].name, name) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Fails a stalled cached name on every rank that waits for it, in rank 0's
 * next cycle message. */
static void timeout_cached(engine_t *e, const char *name, const char *text)
{
    tc_wire_response_t *t;

    if (timeout_queued(e, name)) {
        return;
    }
    t = realloc(e->stall.timeouts, ((size_t)e->stall.ntimeouts + 1) * sizeof(*t));
    if (t == NULL) {
        return;
    }
    e->stall.timeouts = t;
    t = &e->stall.timeouts[e->stall.ntimeouts];
    memset(t, 0, sizeof(*t));
    t->rtype = TC_WIRE_ERROR;
    t->status = TC_ERR_TIMEOUT;
    t->name = strdup(name);
    t->text = strndup(text, TC_WIRE_MAX_TEXT);
    if (t->name == NULL || t->text == NULL) {
        free((char *)t->name);
        free((char *)t->text);
        return;
    }
    t->name_len = (uint32_t)strlen(t->name);
    t->text_len = (uint32_t)strlen(t->text);
    e->stall.ntimeouts++;
}

/* Rank 0, once a second: warns about tensors some ranks have submitted and
 * others not for TCOLL_STALL_WARN_S (again every TCOLL_STALL_WARN_S while it
 * lasts), and fails them after TCOLL_STALL_ABORT_S. */
void tc__stall_check(engine_t *e, uint64_t now)
{
    const uint64_t warn_ns = (uint64_t)e->cfg->stall_warn_s * 1000000000ull;
    const uint64_t abort_ns = (uint64_t)e->cfg->stall_abort_s * 1000000000ull;
    stalled_list_t l = {NULL, 0, 0, e->size};
    char have[128], missing[128], text[512];
    int warn_now = warn_ns > 0 && now >= e->stall.next_warn;
    size_t i, nwarned = 0;

    if ((!warn_now && abort_ns == 0) || now < e->stall.next_check) {
        return;
    }
    e->stall.next_check = now + 1000000000ull;
    tc__coord_foreach_pending(e->coord, stalled_visit, &l);
    for (i = 0; i < e->stall.ncached; i++) {
        const tc_cache_entry_t *ce = tc__cache_get(&e->cache, e->stall.cached[i].id);
        if (ce != NULL) {
            stalled_add(&l, ce->name, ce->desc.name_len, ce->desc.kind, e->stall.cached[i].since_ns,
                        e->stall.cached[i].have, 1);
        }
    }
    for (i = 0; i < l.n; i++) {
        stalled_t *x = &l.v[i];
        uint64_t age = now > x->since_ns ? now - x->since_ns : 0;
        int nhave = tc__ranks_format(x->have, e->size, 1, -1, have, sizeof(have));
        int nmiss = tc__ranks_format(x->have, e->size, 0, -1, missing, sizeof(missing));
        if (x->cached && timeout_queued(e, x->name)) {
            continue; /* failing already, in our next cycle message */
        }
        if (abort_ns > 0 && age >= abort_ns) {
            snprintf(text, sizeof(text),
                     "tensor '%s' (%s) stalled for %llu s: submitted by rank%s %s, not by rank%s "
                     "%s (TCOLL_STALL_ABORT_S=%d)",
                     x->name, tc__kind_name(x->kind), (unsigned long long)(age / 1000000000ull),
                     nhave > 1 ? "s" : "", have, nmiss > 1 ? "s" : "",
                     missing, e->cfg->stall_abort_s);
            TC_WARN("stall", "%s: failing it with TC_ERR_TIMEOUT", text);
            if (x->cached) {
                timeout_cached(e, x->name, text);
            } else if (tc__coord_expire(e->coord, x->name, (uint32_t)strlen(x->name),
                                        TC_ERR_TIMEOUT, text) == TC_ERR_NOMEM) {
                TC_WARN("stall", "out of memory failing tensor '%s'", x->name);
            }
            continue;
        }
        if (warn_now && age >= warn_ns) {
            if (nwarned == 0) {
                TC_WARN("stall", "tensors submitted by some ranks but not all for %d s or more "
                                 "(TCOLL_STALL_WARN_S); repeated every %d s while it lasts:",
                        e->cfg->stall_warn_s, e->cfg->stall_warn_s);
            }
            if (nwarned < STALL_LISTED) {
                TC_WARN("stall", "  '%s' (%s): waiting %llu s; submitted by rank%s %s; missing "
                                 "rank%s %s", x->name, tc__kind_name(x->kind),
                        (unsigned long long)(age / 1000000000ull),
                        nhave > 1 ? "s" : "", have, nmiss > 1 ? "s" : "", missing);
            }
            nwarned++;
        }
    }
    if (nwarned > STALL_LISTED) {
        TC_WARN("stall", "  and %zu more", nwarned - STALL_LISTED);
    }
    if (nwarned > 0) {
        e->stall.next_warn = now + warn_ns;
    }
    for (i = 0; i < l.n; i++) {
        free(l.v[i].name);
        free(l.v[i].have);
    }
    free(l.v);
}

/* The cached names failed in the cycle message that just went out. */
void tc__stall_timeouts_free(engine_t *e)
{
    uint32_t i;

    for (i = 0; i < e->stall.ntimeouts; i++) {
        free((char *)e->stall.timeouts[i].name);
        free((char *)e->stall.timeouts[i].text);
    }
    free(e->stall.timeouts);
    e->stall.timeouts = NULL;
    e->stall.ntimeouts = 0;
}

void tc__stall_destroy(engine_t *e)
{
    tc__stall_timeouts_free(e);
    cstall_free(e->stall.cached, e->stall.ncached);
    e->stall.cached = NULL;
    e->stall.ncached = 0;
}
