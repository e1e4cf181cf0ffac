/*
 * neg_exch.c - the exchange rounds of a negotiation cycle: when a cycle
 * starts, the extra ranks of a size that is not a power of two (their
 * snapshots to their hosts, the result back), each round's part sent to the
 * partner and the partner's merged in a fixed order, and the end of the
 * cycle handed to neg_cycle.c (docs/negotiation.md, "The exchange"). What a
 * part holds and how two are merged is neg_part.c's. Never calls MPI or
 * reads the clock.
 */
#define _GNU_SOURCE
#include "neg/neg_internal.h"

#include <stdlib.h>
#include <string.h>

static void msg_clear(tc_wire_msg_t *m)
{
    tc__wire_msg_free(m);
    memset(m, 0, sizeof(*m));
}

/* ---- the cycle ------------------------------------------------------------- */

void neg_exch_init(tc_neg_t *n)
{
    int core = 1;

    n->nrounds = 0;
    while (core <= n->p.size / 2) {
        core *= 2;
        n->nrounds++;
    }
    n->extra = n->p.rank < core && n->p.rank + core < n->p.size ? n->p.rank + core : -1;
    n->host = n->p.rank >= core ? n->p.rank - core : -1;
    if (n->p.size == NEG_DIRECT_SIZE) { /* one round, every rank to every other */
        n->direct = 1;
        n->nrounds = 1;
        n->extra = n->host = -1;
    }
}

/* The slots of early parts in use: one per round, or (direct) one per rank. */
static int nslots(const tc_neg_t *n)
{
    return n->direct ? n->p.size : n->nrounds;
}

void neg_exch_free(tc_neg_t *n)
{
    int k, j;

    neg_part_free(&n->part);
    neg_part_free(&n->spare);
    free(n->tmp);
    n->tmp = NULL;
    n->cap_tmp = 0;
    for (k = 0; k < 2; k++) {
        for (j = 0; j < NEG_MAX_ROUNDS; j++) {
            tc__wire_msg_free(&n->slot[k][j]);
        }
    }
    tc__wire_msg_free(&n->xsnap);
    free(n->ids);
    n->ids = NULL;
    n->nids = 0;
}

/* Whether a core rank that takes part in no cycle starts the next one. */
static int wants_cycle(const tc_neg_t *n)
{
    int k;

    if (n->want || n->extra_want) {
        return 1;
    }
    for (k = 0; k < nslots(n); k++) {
        if (n->slot[0][k].type != 0) {
            return 1; /* a partner has started it */
        }
    }
    return n->p.rank == 0 && (tc__coord_nready(n->coord) > 0 || n->ndrops > 0 ||
                              (tc__coord_njoined(n->coord) > 0 && n->cache.count > 0) ||
                              (n->shutdown_from >= 0 && !n->term_sent));
}

static void enter_cycle(tc_neg_t *n)
{
    if (neg_snapshot(n, &n->part) != 0) {
        return;
    }
    if (n->p.rank == 0 && neg_rank0_part(n, &n->part) != 0) {
        neg_part_clear(&n->part);
        return;
    }
    n->in_cycle = 1;
    n->extra_want = 0;
    n->round = n->extra >= 0 ? -1 : 0;
    n->round_sent = 0;
    n->got = 0;
}

/* The last round merged: the extra gets the result, and every rank
 * processes it alike. */
static void finish_cycle(tc_neg_t *n, uint64_t now)
{
    tc_wire_msg_t g;
    int j;

    neg_part_msg(n, &n->part, 0, &g);
    if (n->extra >= 0) {
        neg_send_to(n, &g, TC_NEG_TAG_CYCLE, n->extra);
    }
    n->in_cycle = 0;
    neg_run_cycle(n, &g, now);
    neg_part_clear(&n->part);
    for (j = 0; j < nslots(n); j++) { /* no slot past these is ever filled */
        tc__wire_msg_free(&n->slot[0][j]);
        n->slot[0][j] = n->slot[1][j];
        if (n->slot[1][j].type != 0) {
            memset(&n->slot[1][j], 0, sizeof(n->slot[1][j]));
        }
    }
}

/* The direct exchange's one round: this rank's part to every other rank,
 * then every other rank's part merged as it comes (a gathered merge is the
 * same in any order: docs/negotiation.md, "The exchange"). */
static int advance_direct(tc_neg_t *n, uint64_t now)
{
    const uint32_t all = ((1u << n->p.size) - 1u) & ~(1u << n->p.rank);
    int progress = 0, q;

    if (!n->round_sent) {
        tc_wire_msg_t m;
        tc_neg_send_t *s;
        neg_part_msg(n, &n->part, 0, &m);
        if ((s = neg_send(n, &m, TC_NEG_TAG_CYCLE)) == NULL) {
            return 1;
        }
        for (q = 0; q < n->p.size; q++) {
            if (q != n->p.rank) {
                s->dst[s->ndst++] = q;
            }
        }
        n->round_sent = 1;
        progress = 1;
    }
    for (q = 0; q < n->p.size && n->state == TC_NEG_RUNNING; q++) {
        if (q != n->p.rank && !(n->got & (1u << q)) && n->slot[0][q].type != 0) {
            neg_merge(n, &n->slot[0][q], q);
            msg_clear(&n->slot[0][q]);
            n->got |= 1u << q;
            progress = 1;
        }
    }
    if (n->got == all && n->state == TC_NEG_RUNNING) {
        n->round = n->nrounds;
        finish_cycle(n, now);
        return 1;
    }
    return progress;
}

/* Takes the cycle as far as what has arrived allows: the extra's snapshot,
 * then each round (send this group's part, merge the partner's). */
static int advance(tc_neg_t *n, uint64_t now)
{
    int progress = 0;

    if (n->direct) {
        return n->in_cycle && n->state == TC_NEG_RUNNING ? advance_direct(n, now) : 0;
    }
    while (n->in_cycle && n->state == TC_NEG_RUNNING) {
        int partner;
        if (n->round < 0) {
            if (n->xsnap.type != TC_WIRE_CYCLE || n->xsnap.seq != n->ncycles) {
                return progress;
            }
            neg_merge(n, &n->xsnap, n->extra);
            msg_clear(&n->xsnap);
            n->round = 0;
            n->round_sent = 0;
            progress = 1;
            continue;
        }
        if (n->round == n->nrounds) {
            finish_cycle(n, now);
            return 1;
        }
        partner = n->p.rank ^ (1 << n->round);
        if (!n->round_sent) {
            tc_wire_msg_t m;
            neg_part_msg(n, &n->part, (uint32_t)n->round, &m);
            neg_send_to(n, &m, TC_NEG_TAG_CYCLE, partner);
            n->round_sent = 1;
            progress = 1;
        }
        if (n->slot[0][n->round].type == 0) {
            return progress;
        }
        neg_merge(n, &n->slot[0][n->round], partner);
        msg_clear(&n->slot[0][n->round]);
        n->round++;
        n->round_sent = 0;
        progress = 1;
    }
    return progress;
}

/* An extra rank's snapshot to its host; news: it asks for a cycle. */
static void send_snapshot(tc_neg_t *n, int news)
{
    tc_wire_msg_t m;

    if (neg_snapshot(n, &n->spare) != 0) { /* an extra never merges: the spare is free */
        return;
    }
    neg_part_msg(n, &n->spare, news ? 1 : 0, &m);
    neg_send_to(n, &m, TC_NEG_TAG_CYCLE, n->host);
    neg_part_clear(&n->spare);
    n->pushed = news;
}

/* A host: its extra's snapshot. Only the latest one for the coming cycle is
 * used; news that came too late for a cycle asks for the next one. */
static void receive_snapshot(tc_neg_t *n, tc_wire_msg_t *m, uint64_t now)
{
    const int news = m->round != 0;

    if (m->round > 1 || m->seq > n->ncycles || neg_has_r0(m)) {
        neg_fail(n, TC_ERR_TRANSPORT,
                 "protocol error: rank %d's snapshot for cycle %llu "
                 "(round %u) at cycle %llu",
                 n->extra, (unsigned long long)m->seq, m->round, (unsigned long long)n->ncycles);
        return;
    }
    if (m->seq < n->ncycles || (n->in_cycle && n->round >= 0)) {
        n->extra_want |= news; /* the next snapshot has it */
        return;
    }
    msg_clear(&n->xsnap);
    n->xsnap = *m; /* moved: the caller frees the emptied message */
    memset(m, 0, sizeof(*m));
    n->extra_want |= news && !n->in_cycle;
    advance(n, now);
}

/* The direct exchange: rank src's part of cycle m->seq, merged at once
 * when this rank is in that cycle and has sent its own, else kept in src's
 * slot until it gets there. */
static void receive_direct(tc_neg_t *n, int src, tc_wire_msg_t *m, uint64_t now)
{
    int next;

    if (m->round != 0 || (m->seq != n->ncycles && !(m->seq == n->ncycles + 1 && n->in_cycle))) {
        neg_fail(n, TC_ERR_TRANSPORT,
                 "protocol error: rank %d sent its part of cycle %llu, round %u; this rank is "
                 "at cycle %llu",
                 src, (unsigned long long)m->seq, m->round, (unsigned long long)n->ncycles);
        return;
    }
    next = m->seq != n->ncycles;
    if (!next && !n->in_cycle) {
        enter_cycle(n); /* another rank started the cycle */
        advance(n, now);
    }
    if (n->slot[next][src].type != 0 || (!next && (n->got & (1u << src)))) {
        neg_fail(n, TC_ERR_TRANSPORT, "protocol error: rank %d sent its part of cycle %llu twice",
                 src, (unsigned long long)m->seq);
        return;
    }
    n->slot[next][src] = *m; /* moved: the caller frees the emptied message */
    memset(m, 0, sizeof(*m));
    if (!next) {
        advance(n, now);
    }
}

/* A core rank: a partner's part for round m->round of cycle m->seq. */
static void receive_part(tc_neg_t *n, int src, tc_wire_msg_t *m, uint64_t now)
{
    const uint32_t k = m->round;
    int next;

    if (n->direct) {
        receive_direct(n, src, m, now);
        return;
    }
    if (k >= (uint32_t)n->nrounds || src != (n->p.rank ^ (1 << k)) ||
        (m->seq != n->ncycles && !(m->seq == n->ncycles + 1 && n->in_cycle))) {
        neg_fail(n, TC_ERR_TRANSPORT,
                 "protocol error: rank %d sent its part of cycle %llu, "
                 "round %u; this rank is at cycle %llu",
                 src, (unsigned long long)m->seq, k, (unsigned long long)n->ncycles);
        return;
    }
    next = m->seq != n->ncycles;
    if (!next && !n->in_cycle) {
        enter_cycle(n); /* a partner started the cycle */
        advance(n, now);
    }
    if (!next && n->in_cycle && n->round == (int)k && n->round_sent) {
        if (neg_merge(n, m, src) == 0) { /* the usual case: nothing kept */
            n->round++;
            n->round_sent = 0;
            advance(n, now);
        }
        return;
    }
    if ((!next && n->round > (int)k) || n->slot[next][k].type != 0) {
        neg_fail(n, TC_ERR_TRANSPORT,
                 "protocol error: rank %d sent its part of cycle %llu, "
                 "round %u twice",
                 src, (unsigned long long)m->seq, k);
        return;
    }
    n->slot[next][k] = *m; /* moved: the caller frees the emptied message */
    memset(m, 0, sizeof(*m));
    if (!next) {
        advance(n, now);
    }
}

void neg_receive_cycle(tc_neg_t *n, int src, tc_wire_msg_t *m, uint64_t now)
{
    n->last_progress_ns = now;
    if (n->state != TC_NEG_RUNNING) {
        return; /* after TERMINATE: an extra's late snapshot */
    }
    if (src == n->extra) {
        receive_snapshot(n, m, now);
    } else if (src == n->host) {
        if (m->seq != n->ncycles || m->round != 0) {
            neg_fail(n, TC_ERR_TRANSPORT,
                     "protocol error: the result of cycle %llu from rank "
                     "%d; this rank is at cycle %llu",
                     (unsigned long long)m->seq, src, (unsigned long long)n->ncycles);
            return;
        }
        if (neg_check_part(n, src, m) == 0) {
            neg_run_cycle(n, m, now);
        }
        if (n->state == TC_NEG_RUNNING) {
            send_snapshot(n, n->want);
        }
    } else if (n->host < 0) {
        receive_part(n, src, m, now);
    } else {
        neg_fail(n, TC_ERR_TRANSPORT,
                 "protocol error: rank %d sent a negotiation part to "
                 "extra rank %d",
                 src, n->p.rank);
    }
}

int neg_exch_step(tc_neg_t *n, uint64_t now)
{
    int progress = 0, guard;

    if (n->state != TC_NEG_RUNNING) {
        return 0;
    }
    if (n->host >= 0) { /* an extra rank: snapshots to the host */
        if (!n->snap0_sent || (n->want && !n->pushed)) {
            send_snapshot(n, n->want);
            n->snap0_sent = 1;
            return 1;
        }
        return 0;
    }
    progress |= advance(n, now);
    for (guard = 0; guard < 4 && !n->in_cycle && n->state == TC_NEG_RUNNING && wants_cycle(n);
         guard++) {
        enter_cycle(n);
        advance(n, now);
        progress = 1;
    }
    return progress;
}
