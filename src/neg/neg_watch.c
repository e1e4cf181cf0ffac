/*
 * neg_watch.c - what the negotiation does about time: rank 0's stall
 * inspector, and the liveness probes that find a lost rank anywhere in the
 * tree (docs/negotiation.md, "Stalls" and "Lost ranks"). Reads the time only
 * as its callers pass it; never calls MPI.
 */
#define _GNU_SOURCE
#include "neg/neg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/ranks.h"

#define STALL_LISTED 20             /* tensors named in one warning */
#define STALL_CHECK_NS 250000000ull /* how often rank 0 looks */

/* ---- stalls (rank 0) ------------------------------------------------------ */

/* A cached id some ranks have waiting and others not, for half the first
 * stall threshold: it goes back to full negotiation on every rank, where the
 * message table knows exactly who submitted it and the warnings and the
 * abort below apply to it, with its clock started when it first stalled (so
 * by the threshold every rank's submission is back in the table). */
static void evict(tc_neg_t *n, uint32_t id, uint64_t since)
{
    const tc_cache_entry_t *ce = tc__cache_get(&n->cache, id);
    uint64_t *box;

    if (ce == NULL) {
        return;
    }
    if (n->ndrops == n->capdrops) {
        uint32_t cap = n->capdrops < 16 ? 16 : n->capdrops * 2;
        uint32_t *v = realloc(n->drops, (size_t)cap * sizeof(*v));
        if (v == NULL) {
            return; /* tried again at the next check */
        }
        n->drops = v;
        n->capdrops = cap;
    }
    box = tc__hmap_get(&n->evicted, ce->name, ce->desc.name_len);
    if (box == NULL) {
        if ((box = malloc(sizeof(*box))) == NULL) {
            return;
        }
        if (tc__hmap_put(&n->evicted, ce->name, ce->desc.name_len, box) != 0) {
            free(box);
            return;
        }
        *box = since;
    }
    TC_DEBUG("stall", "cached tensor '%s' waits for some ranks: negotiating it in full", ce->name);
    n->drops[n->ndrops++] = id;
    n->ids[id].since_ns = 0;
}

typedef struct {
    tc_neg_t *n;
    uint64_t now;
    int warn_now;
    size_t nwarned;
    char **expire; /* names to fail, after the walk (it must not change the table) */
    char **texts;
    uint32_t *psets;
    size_t nexpire, capexpire;
} stall_walk_t;

static void queue_expire(stall_walk_t *w, const char *name, uint32_t pset, const char *text)
{
    if (w->nexpire == w->capexpire) {
        size_t cap = w->capexpire < 8 ? 8 : w->capexpire * 2;
        char **a = realloc(w->expire, cap * sizeof(*a));
        char **b = a != NULL ? realloc(w->texts, cap * sizeof(*b)) : NULL;
        uint32_t *c = b != NULL ? realloc(w->psets, cap * sizeof(*c)) : NULL;
        if (a != NULL) {
            w->expire = a;
        }
        if (b != NULL) {
            w->texts = b;
        }
        if (c == NULL) {
            return;
        }
        w->psets = c;
        w->capexpire = cap;
    }
    w->psets[w->nexpire] = pset;
    w->expire[w->nexpire] = strdup(name);
    w->texts[w->nexpire] = strdup(text);
    if (w->expire[w->nexpire] == NULL || w->texts[w->nexpire] == NULL) {
        free(w->expire[w->nexpire]);
        free(w->texts[w->nexpire]);
        return;
    }
    w->nexpire++;
}

/* The members of p's set that have not submitted it, as "1,3-4". */
static int format_missing(const tc_coord_pending_t *p, int size, char *buf, size_t len)
{
    uint8_t *lack = calloc((size_t)size, 1);
    int q, n;

    if (lack == NULL) {
        snprintf(buf, len, "?");
        return 0;
    }
    for (q = 0; q < size; q++) {
        lack[q] = (p->member == NULL || p->member[q]) && !p->have[q];
    }
    n = tc__format_ranks(lack, size, 1, buf, len);
    free(lack);
    return n;
}

static void visit_stalled(const tc_coord_pending_t *p, void *arg)
{
    stall_walk_t *w = arg;
    tc_neg_t *n = w->n;
    const uint64_t warn_ns = n->p.stall_warn_ns, abort_ns = n->p.stall_abort_ns;
    uint64_t age = w->now > p->since_ns ? w->now - p->since_ns : 0;
    char have[128], missing[128], text[600], where[40] = "";
    int nhave, nmiss;

    if (!(abort_ns > 0 && age >= abort_ns) && !(w->warn_now && age >= warn_ns)) {
        return; /* young: most of a flood of names in flight; nothing to format */
    }
    nhave = tc__format_ranks(p->have, n->p.size, 1, have, sizeof(have));
    nmiss = format_missing(p, n->p.size, missing, sizeof(missing));
    if (p->pset != 0) {
        snprintf(where, sizeof(where), " in process set %u", p->pset);
    }
    if (abort_ns > 0 && age >= abort_ns) {
        snprintf(text, sizeof(text),
                 "tensor '%s' (%s)%s stalled for %llu s: submitted by rank%s %s, not by rank%s "
                 "%s (TCOLL_STALL_ABORT_S=%llu)",
                 p->name, tc__kind_name(p->kind), where, (unsigned long long)(age / 1000000000ull),
                 nhave > 1 ? "s" : "", have, nmiss > 1 ? "s" : "", missing,
                 (unsigned long long)(abort_ns / 1000000000ull));
        TC_WARN("stall", "%s: failing it with TC_ERR_TIMEOUT", text);
        queue_expire(w, p->name, p->pset, text);
        return;
    }
    if (w->warn_now && age >= warn_ns) {
        if (w->nwarned == 0) {
            TC_WARN("stall",
                    "tensors submitted by some ranks but not all for %llu s or more "
                    "(TCOLL_STALL_WARN_S); repeated every %llu s while it lasts:",
                    (unsigned long long)(warn_ns / 1000000000ull),
                    (unsigned long long)(warn_ns / 1000000000ull));
        }
        if (w->nwarned < STALL_LISTED) {
            TC_WARN("stall",
                    "  '%s' (%s)%s: waiting %llu s; submitted by rank%s %s; missing "
                    "rank%s %s",
                    p->name, tc__kind_name(p->kind), where,
                    (unsigned long long)(age / 1000000000ull), nhave > 1 ? "s" : "", have,
                    nmiss > 1 ? "s" : "", missing);
        }
        w->nwarned++;
    }
}

/* Rank 0, four times a second: see docs/negotiation.md, "Stalls". */
void neg_stall_check(tc_neg_t *n, uint64_t now)
{
    const uint64_t warn_ns = n->p.stall_warn_ns, abort_ns = n->p.stall_abort_ns;
    uint64_t first = warn_ns == 0                          ? abort_ns
                     : abort_ns == 0 || warn_ns < abort_ns ? warn_ns
                                                           : abort_ns;
    stall_walk_t w = {n, now, warn_ns > 0 && now >= n->next_stall_warn, 0, NULL, NULL, NULL, 0, 0};
    uint32_t id;
    size_t i;

    if (first == 0 || now < n->next_stall_check) {
        return;
    }
    n->next_stall_check = now + STALL_CHECK_NS;
    for (id = 0; id < n->nids; id++) {
        uint64_t since = n->ids[id].since_ns;
        if (since != 0 && now - since >= first / 2) {
            evict(n, id, since);
        }
    }
    tc__coord_foreach_pending(n->coord, visit_stalled, &w);
    for (i = 0; i < w.nexpire; i++) {
        if (tc__coord_expire(n->coord, w.expire[i], (uint32_t)strlen(w.expire[i]), w.psets[i],
                             TC_ERR_TIMEOUT, w.texts[i]) == TC_ERR_NOMEM) {
            TC_WARN("stall", "out of memory failing tensor '%s'", w.expire[i]);
        }
        free(w.expire[i]);
        free(w.texts[i]);
    }
    free(w.expire);
    free(w.texts);
    free(w.psets);
    if (w.nwarned > STALL_LISTED) {
        TC_WARN("stall", "  and %zu more", w.nwarned - STALL_LISTED);
    }
    if (w.nwarned > 0) {
        n->next_stall_warn = now + warn_ns;
    }
}

/* ---- lost ranks ------------------------------------------------------------ */

void neg_receive_ping(tc_neg_t *n, int src, const tc_wire_msg_t *msg)
{
    tc_wire_msg_t pong = {.type = TC_WIRE_REQUESTS};

    neg_send_to(n, &pong, TC_NEG_TAG_PONG, src);
    if (msg->flags & TC_WIRE_F_SPREAD) {
        n->spread_from = src;
    }
}

void neg_receive_pong(tc_neg_t *n, int src)
{
    int i;

    for (i = 0; i < n->nprobe_nb; i++) {
        if (n->probe_nb[i] == src) {
            n->probe_deadline[i] = 0;
        }
    }
    if (n->roll != NULL && src >= 0 && src < n->p.size) {
        n->roll[src] = 1;
    }
}

/* Neighbours were silent for the whole timeout: asks every other rank at
 * once, so that the failure names every lost rank (a host that went down
 * takes all of its ranks with it), not only the neighbours that found out.
 * roll[q]: 0 not answered yet, 1 answered, 2 a silent neighbour (not waited
 * for: it had its time). */
static void start_roll_call(tc_neg_t *n, uint64_t now, const uint8_t *silent)
{
    tc_wire_msg_t ping = {.type = TC_WIRE_REQUESTS};
    tc_neg_send_t *s = NULL;
    int q, i;

    if ((n->roll = calloc((size_t)n->p.size, 1)) == NULL) {
        neg_fail(n, TC_ERR_NOMEM, "out of memory naming lost ranks");
        return;
    }
    n->roll[n->p.rank] = 1;
    for (i = 0; i < n->nprobe_nb; i++) {
        if (silent[i]) {
            n->roll[n->probe_nb[i]] = 2;
        }
    }
    n->roll_deadline = now + n->p.probe_grace_ns;
    for (q = 0; q < n->p.size; q++) {
        if (n->roll[q] != 0) {
            continue;
        }
        if ((s == NULL || s->ndst == TC_NEG_MAX_DST) &&
            (s = neg_send(n, &ping, TC_NEG_TAG_PING)) == NULL) {
            return; /* neg_send failed this rank */
        }
        s->dst[s->ndst++] = q;
    }
}

/* The roll call's verdict, once every rank asked answered or the grace time
 * is over. A silent neighbour that answered after all (its link came back)
 * is not lost; if every rank did, the wait goes on. */
static void end_roll_call(tc_neg_t *n, uint64_t now)
{
    char ranks[256];
    int q, waiting = 0, nlost = 0;

    for (q = 0; q < n->p.size; q++) {
        waiting += n->roll[q] == 0;
    }
    if (waiting > 0 && now < n->roll_deadline) {
        return;
    }
    for (q = 0; q < n->p.size; q++) {
        n->roll[q] = n->roll[q] != 1;
        nlost += n->roll[q];
    }
    if (nlost == 0) {
        free(n->roll);
        n->roll = NULL;
        n->last_progress_ns = now;
        n->last_probe_ns = 0;
        return;
    }
    tc__format_ranks(n->roll, n->p.size, 1, ranks, sizeof(ranks));
    neg_fail(n, TC_ERR_TRANSPORT,
             "lost rank%s %s: no answer to a liveness probe, after %.1f s without progress "
             "(the process died, its host or its link is down, or its engine thread is stuck; "
             "TCOLL_PEER_TIMEOUT_S); tcoll stops on this rank",
             nlost > 1 ? "s" : "", ranks, (double)(now - n->last_progress_ns) / 1e9);
    free(n->roll);
    n->roll = NULL;
}

/* A rank that has waited half of TCOLL_PEER_TIMEOUT_S without progress, or
 * that a neighbour asked, asks its tree neighbours whether they are alive;
 * each passes the question on, so it reaches every rank in O(log n) hops.
 * A neighbour has the other half of the timeout (at least the grace time) to
 * answer: a rank is lost only after the whole timeout without a word, so a
 * link that is down for less comes back in time. Then the roll call. */
void neg_probe_step(tc_neg_t *n, uint64_t now)
{
    const uint64_t half = n->p.peer_timeout_ns / 2;
    const uint64_t answer = half > n->p.probe_grace_ns ? half : n->p.probe_grace_ns;
    tc_neg_send_t *s = NULL;
    uint8_t silent[NEG_MAX_CHILDREN + 1] = {0};
    int i, nsilent = 0;

    if (n->roll != NULL) {
        end_roll_call(n, now);
        return;
    }
    for (i = 0; i < n->nprobe_nb; i++) {
        if (n->probe_deadline[i] != 0 && now > n->probe_deadline[i]) {
            silent[i] = 1;
            nsilent++;
            n->probe_deadline[i] = 0;
        }
    }
    if (nsilent > 0) {
        start_roll_call(n, now, silent);
        if (n->roll != NULL) {
            end_roll_call(n, now); /* nobody else to ask: one rank, or two */
        }
        return;
    }
    if (n->spread_from == -2 && !(neg_has_work(n) && now - n->last_progress_ns >= half)) {
        return;
    }
    if (n->last_probe_ns != 0 && now - n->last_probe_ns < half) {
        n->spread_from = -2; /* our neighbourhood was asked a moment ago */
        return;
    }
    for (i = 0; i < n->nprobe_nb; i++) {
        tc_wire_msg_t ping = {.type = TC_WIRE_REQUESTS, .flags = TC_WIRE_F_SPREAD};
        if (n->probe_nb[i] == n->spread_from || n->probe_deadline[i] != 0) {
            continue;
        }
        if (s == NULL && (s = neg_send(n, &ping, TC_NEG_TAG_PING)) == NULL) {
            return;
        }
        s->dst[s->ndst++] = n->probe_nb[i];
        n->probe_deadline[i] = now + answer;
    }
    n->last_probe_ns = now;
    n->spread_from = -2;
}
