/*
 * neg_sim.c - the simulated ranks of neg_sim.h: the message layer, the
 * protocol checks on every message and item, and the schedule. The
 * workloads and the checks of what they became are in neg_sim_plan.c.
 *
 * Knows nothing of any one test case; must never look inside a tc_neg_t
 * (only neg.h's functions), nor read the real clock.
 */
#define _GNU_SOURCE
#include "neg_sim.h"

#include "check.h"
#include "util/log.h"
#include "util/status.h"

/* ---- random numbers (xorshift64*) ------------------------------------------ */

static uint64_t rnd_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

int rnd_below(uint64_t *s, int n)
{
    return (int)(rnd_next(s) % (uint64_t)n);
}

void shuffle(uint64_t *s, int *v, int n)
{
    int i;

    for (i = n - 1; i > 0; i--) {
        int j = rnd_below(s, i + 1), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* ---- the simulation -------------------------------------------------------- */

const char *act_name(tc_neg_action_t a)
{
    return a == TC_NEG_RUN ? "RUN" : a == TC_NEG_FAIL ? "FAIL" : a == TC_NEG_DONE ? "DONE" : "?";
}

const char *state_name(tc_neg_state_t st)
{
    return st == TC_NEG_RUNNING    ? "RUNNING"
           : st == TC_NEG_DRAINING ? "DRAINING"
           : st == TC_NEG_DONE_OK  ? "DONE_OK"
           : st == TC_NEG_FAILED   ? "FAILED"
                                   : "?";
}

tc_neg_params_t params(int size)
{
    tc_neg_params_t p;

    memset(&p, 0, sizeof(p));
    p.size = size;
    p.cache_capacity = 64;
    p.eager_bytes = 16;
    p.peer_timeout_ns = 100000 * SEC; /* far away unless a test brings it near */
    p.probe_grace_ns = 10 * SEC;
    return p;
}

sim_t *sim_new(const tc_neg_params_t *p, uint64_t seed)
{
    sim_t *s = calloc(1, sizeof(*s));
    int r;

    CHECK(s != NULL);
    CHECK(p->size >= 1 && p->size <= SIM_MAX);
    CHECK(p->eager_bytes <= DATA_BYTES);
    s->size = p->size;
    s->p = *p;
    s->ch = calloc((size_t)p->size * (size_t)p->size, sizeof(*s->ch));
    CHECK(s->ch != NULL);
    s->now = T0;
    s->rng = seed == 0 ? 0 : (seed * 0x9E3779B97F4A7C15ull) | 1;
    s->pdeliver = 50;
    s->shut_after = -1;
    for (r = 0; r < s->size; r++) {
        tc_neg_params_t q = *p;
        q.rank = r;
        CHECK_OK(tc__neg_create(&q, &s->neg[r]));
    }
    return s;
}

void sim_free(sim_t *s)
{
    size_t i;
    int r;

    for (r = 0; r < s->size; r++) {
        tc__neg_destroy(s->neg[r]);
        for (i = 0; i < s->nlog[r]; i++) {
            free(s->log[r][i].text);
        }
        free(s->log[r]);
        for (i = 0; i < s->nplan[r]; i++) {
            free(s->plan[r][i]);
        }
        free(s->plan[r]);
    }
    for (i = 0; i < (size_t)s->size * (size_t)s->size; i++) {
        while (s->ch[i].head != NULL) {
            qmsg_t *m = s->ch[i].head;
            s->ch[i].head = m->next;
            free(m->bytes);
            free(m);
        }
    }
    free(s->ch);
    free(s);
}

chan_t *chan(sim_t *s, int src, int dst)
{
    return &s->ch[(size_t)src * (size_t)s->size + (size_t)dst];
}

void enqueue(sim_t *s, int src, int dst, int tag, const uint8_t *data, size_t len)
{
    chan_t *c = chan(s, src, dst);
    qmsg_t *m = calloc(1, sizeof(*m));

    CHECK(m != NULL);
    m->bytes = malloc(len > 0 ? len : 1);
    CHECK(m->bytes != NULL);
    memcpy(m->bytes, data, len);
    m->len = len;
    m->tag = tag;
    if (c->tail != NULL) {
        c->tail->next = m;
    } else {
        c->head = m;
    }
    c->tail = m;
    c->n++;
    s->inflight++;
}

static void must_decode(const void *data, size_t len, tc_wire_msg_t *m)
{
    char err[256];
    tc_status_t st;

    memset(m, 0, sizeof(*m));
    st = tc__wire_decode(data, len, m, err, sizeof(err));
    CHECK_MSG(st == TC_OK, "a control message does not decode: %s", err);
}

int is_neighbour(int size, int r, int q)
{
    return q >= 0 && q < size && q != r && (tc__neg_parent(r) == q || tc__neg_parent(q) == r);
}

/* The largest power of 2 not above size: the ranks of the exchange rounds;
 * rank core + i is an extra rank hosted by rank i. The direct exchange (3
 * ranks) has no extra rank: every rank is core. */
int core_size(int size)
{
    int core = 1;

    if (size == 3) {
        return 3;
    }
    while (core <= size / 2) {
        core *= 2;
    }
    return core;
}

/* The direct exchange (3 ranks, docs/negotiation.md): each cycle's part to
 * both other ranks at once, round 0, one per cycle, in cycle order. */
static void check_direct_send(sim_t *s, int r, const tc_neg_send_t *x, const tc_wire_msg_t *m)
{
    const uint64_t cyc = tc__neg_cycles(s->neg[r]);

    CHECK_MSG(m->type == TC_WIRE_CYCLE, "rank %d: type %d on TAG_CYCLE", r, m->type);
    CHECK_MSG(x->ndst == s->size - 1 && x->dst[0] != x->dst[1] && m->round == 0,
              "rank %d: a direct part to %d ranks, round %u", r, x->ndst, m->round);
    CHECK_MSG(m->seq <= cyc, "rank %d sends a part of cycle %llu at cycle %llu", r,
              (unsigned long long)m->seq, (unsigned long long)cyc);
    CHECK_MSG(m->seq * 64 + 1 > s->last_part[r], "rank %d sends a second part for cycle %llu", r,
              (unsigned long long)m->seq);
    s->last_part[r] = m->seq * 64 + 1;
}

/* A part of an exchange round, a result for an extra rank, or an extra's
 * snapshot: each to the one rank the protocol names; a core rank's parts
 * go out in strictly increasing (cycle, round) order, one per round. */
static void check_cycle_send(sim_t *s, int r, const tc_neg_send_t *x, const tc_wire_msg_t *m)
{
    const int core = core_size(s->size), dst = x->dst[0];
    const uint64_t cyc = tc__neg_cycles(s->neg[r]);

    if (s->size == 3) {
        check_direct_send(s, r, x, m);
        return;
    }
    CHECK_MSG(x->ndst == 1, "rank %d sends a CYCLE message to %d ranks", r, x->ndst);
    if (m->type == TC_WIRE_BYE) {
        CHECK_MSG(r >= core && dst == r - core && m->flags == 0,
                  "rank %d: a BYE to rank %d on TAG_CYCLE", r, dst);
        return;
    }
    CHECK_MSG(m->type == TC_WIRE_CYCLE, "rank %d: type %d on TAG_CYCLE", r, m->type);
    CHECK_MSG(m->seq <= cyc, "rank %d sends a part of cycle %llu at cycle %llu", r,
              (unsigned long long)m->seq, (unsigned long long)cyc);
    if (r >= core) { /* a snapshot: round 1 asks for a cycle */
        CHECK_MSG(dst == r - core && m->round <= 1 && m->count == 0 && m->flags == 0,
                  "rank %d: a snapshot to rank %d, round %u", r, dst, m->round);
        return;
    }
    if (dst >= core) { /* a cycle's result for the extra rank */
        CHECK_MSG(dst == r + core && m->round == 0 && m->seq < cyc,
                  "rank %d: the result of cycle %llu to rank %d", r, (unsigned long long)m->seq,
                  dst);
        return;
    }
    CHECK_MSG(m->round < 32 && (1 << m->round) < core && dst == (r ^ (1 << m->round)),
              "rank %d sends its round %u part to rank %d", r, m->round, dst);
    CHECK_MSG(m->seq * 64 + m->round + 1 > s->last_part[r],
              "rank %d sends a second part for cycle %llu round %u", r, (unsigned long long)m->seq,
              m->round);
    s->last_part[r] = m->seq * 64 + m->round + 1;
}

/* A send as neg.h and the protocol allow it; counts what went over the wire. */
static void check_send(sim_t *s, int r, const tc_neg_send_t *x)
{
    tc_wire_msg_t m;
    int d;

    CHECK_MSG(x->ndst >= 1 && x->ndst <= TC_NEG_MAX_DST, "rank %d: a send to %d ranks", r, x->ndst);
    for (d = 0; d < x->ndst; d++) {
        CHECK_MSG(x->dst[d] >= 0 && x->dst[d] < s->size && x->dst[d] != r,
                  "rank %d sends to rank %d", r, x->dst[d]);
    }
    CHECK_MSG(x->tag >= TC_NEG_TAG_REQ && x->tag <= TC_NEG_TAG_PONG,
              "rank %d sends on tag %d (aborts are the engine's to send)", r, x->tag);
    must_decode(x->buf.data, x->buf.len, &m);
    s->ntag[x->tag] += (size_t)x->ndst;
    switch (x->tag) {
    case TC_NEG_TAG_REQ:
        CHECK_MSG(r != 0 && x->ndst == 1 && x->dst[0] == 0, "rank %d: TAG_REQ not to rank 0", r);
        CHECK_MSG(m.type == TC_WIRE_REQUESTS || (m.type == TC_WIRE_BYE && m.flags == 0),
                  "rank %d: type %d flags %d on TAG_REQ", r, m.type, m.flags);
        if (m.type == TC_WIRE_REQUESTS) {
            CHECK_EQ(m.flags & TC_WIRE_F_SPREAD, 0);
            s->req_entries[r] += m.count;
        }
        break;
    case TC_NEG_TAG_CYCLE: check_cycle_send(s, r, x, &m); break;
    case TC_NEG_TAG_PING:
        /* SPREAD: a probe of the tree neighbours; none: the roll call that
         * names every lost rank, to anyone */
        CHECK_MSG(m.type == TC_WIRE_REQUESTS && m.count == 0 &&
                      (m.flags == TC_WIRE_F_SPREAD || m.flags == 0),
                  "rank %d: a ping of type %d, count %u, flags %d", r, m.type, m.count, m.flags);
        for (d = 0; d < x->ndst && m.flags != 0; d++) {
            CHECK_MSG(is_neighbour(s->size, r, x->dst[d]), "rank %d pings rank %d", r, x->dst[d]);
        }
        break;
    case TC_NEG_TAG_PONG: CHECK(m.type == TC_WIRE_REQUESTS && m.count == 0 && x->ndst == 1); break;
    default: break;
    }
    tc__wire_msg_free(&m);
}

static void record(sim_t *s, int r, const tc_neg_item_t *it)
{
    rec_t *e;

    if (s->nlog[r] == s->caplog[r]) {
        size_t cap = s->caplog[r] < 16 ? 16 : s->caplog[r] * 2;
        rec_t *v = realloc(s->log[r], cap * sizeof(*v));
        CHECK(v != NULL);
        s->log[r] = v;
        s->caplog[r] = cap;
    }
    e = &s->log[r][s->nlog[r]++];
    memset(e, 0, sizeof(*e));
    e->action = it->action;
    e->req = it->req;
    e->cycle = it->cycle;
    if (it->resp.name != NULL) {
        CHECK_LT(it->resp.name_len, NAME_LEN);
        CHECK_EQ(strlen(it->resp.name), it->resp.name_len); /* NUL-terminated, no NUL inside */
        memcpy(e->name, it->resp.name, it->resp.name_len);
    }
    switch (it->action) {
    case TC_NEG_RUN:
        CHECK_EQ(it->resp.rtype, TC_WIRE_RUN);
        CHECK_MSG(it->resp.name != NULL, "rank %d: a RUN item without a name", r);
        CHECK_LE(it->resp.ndim0, SIM_MAX);
        e->cache_ref = it->resp.cache_ref;
        e->ndim0 = it->resp.ndim0;
        if (e->ndim0 > 0) {
            memcpy(e->dim0, it->resp.dim0, e->ndim0 * sizeof(e->dim0[0]));
        }
        break;
    case TC_NEG_FAIL:
        CHECK_EQ(it->resp.rtype, TC_WIRE_ERROR);
        CHECK_MSG(it->resp.text != NULL && it->resp.name != NULL,
                  "rank %d: a FAIL item without "
                  "name or text",
                  r);
        e->status = it->resp.status;
        e->text = strdup(it->resp.text);
        CHECK(e->text != NULL);
        break;
    case TC_NEG_DONE:
        CHECK_MSG(it->result != NULL && it->result_len > 0 && it->result_len <= sizeof(e->result),
                  "rank %d: a DONE item with %zu result bytes", r, it->result_len);
        memcpy(e->result, it->result, it->result_len);
        e->result_len = it->result_len;
        break;
    default: TC_CHECK_FAIL("rank %d: item action %d", r, (int)it->action);
    }
    if (it->req != NULL) {
        plan_t *pl = it->req;
        CHECK_MSG(pl->rank == r, "rank %d got rank %d's request back", r, pl->rank);
        CHECK_MSG(pl->submitted && !pl->done,
                  "rank %d: '%s' (#%d) came out twice, or before it "
                  "was submitted",
                  r, pl->namebuf, pl->inst);
        pl->done = 1;
        pl->rec = s->nlog[r] - 1;
        s->pending[r][pl->name] = 0;
        if (e->name[0] == '\0') {
            memcpy(e->name, pl->namebuf, sizeof(e->name));
        }
        CHECK_MSG(strcmp(e->name, pl->namebuf) == 0, "rank %d: item '%s' for request '%s'", r,
                  e->name, pl->namebuf);
    } else {
        CHECK_MSG(it->action == TC_NEG_FAIL, "rank %d: a %s item without a request", r,
                  act_name(it->action));
    }
}

/* What the engine does when its rank fails by its own decision
 * (tc__neg_failed_here): an abort to every other rank, saying why. */
static void announce_failure(sim_t *s, int r)
{
    tc_wire_msg_t ab = {.type = TC_WIRE_BYE, .flags = TC_WIRE_F_TERMINATE};
    tc_wire_buf_t b = {0};
    const char *text;
    int q;

    ab.term_status = (uint8_t)tc__neg_status(s->neg[r], &text);
    ab.term_text = text;
    ab.term_text_len = (uint32_t)strlen(text);
    if (ab.term_text_len > TC_WIRE_MAX_TEXT) {
        ab.term_text_len = TC_WIRE_MAX_TEXT;
    }
    CHECK_OK(tc__wire_encode(&ab, &b));
    for (q = 0; q < s->size; q++) {
        if (q != r) {
            enqueue(s, r, q, TC_NEG_TAG_ABORT, b.data, b.len);
        }
    }
    tc__wire_buf_free(&b);
    s->announced[r] = 1;
}

/* Takes a rank's outputs: sends into the queues, items into its log.
 * Returns whether there were any. */
static int collect(sim_t *s, int r)
{
    size_t ns, ni, i;
    tc_neg_send_t *sends = tc__neg_sends(s->neg[r], &ns);
    tc_neg_item_t *items = tc__neg_items(s->neg[r], &ni);
    int d;

    for (i = 0; i < ns; i++) {
        check_send(s, r, &sends[i]);
        for (d = 0; d < sends[i].ndst; d++) {
            enqueue(s, r, sends[i].dst[d], sends[i].tag, sends[i].buf.data, sends[i].buf.len);
        }
    }
    for (i = 0; i < ni; i++) {
        record(s, r, &items[i]);
    }
    tc__neg_clear(s->neg[r]);
    if (!s->announced[r] && tc__neg_failed_here(s->neg[r])) {
        announce_failure(s, r);
    }
    return ns > 0 || ni > 0;
}

int step(sim_t *s, int r)
{
    int moved = tc__neg_step(s->neg[r], s->now);
    return collect(s, r) || moved;
}

void deliver_head(sim_t *s, int src, int dst)
{
    chan_t *c = chan(s, src, dst);
    qmsg_t *m = c->head;
    tc_wire_msg_t msg;

    CHECK(m != NULL);
    c->head = m->next;
    if (c->head == NULL) {
        c->tail = NULL;
    }
    c->n--;
    s->inflight--;
    must_decode(m->bytes, m->len, &msg);
    tc__neg_receive(s->neg[dst], src, m->tag, &msg, s->now);
    tc__wire_msg_free(&msg);
    free(m->bytes);
    free(m);
    collect(s, dst);
}

/* Delivers everything queued from src to dst. */
void deliver_chan(sim_t *s, int src, int dst)
{
    while (chan(s, src, dst)->n > 0) {
        deliver_head(s, src, dst);
    }
}

static int deliverable(const sim_t *s)
{
    size_t c, nch = (size_t)s->size * (size_t)s->size;
    int n = 0;

    for (c = 0; c < nch; c++) {
        n += s->ch[c].n > 0 && !s->frozen[c % (size_t)s->size];
    }
    return n;
}

/* Delivers the oldest message of one channel: a random one, or the first. */
static int deliver_one(sim_t *s, int random)
{
    size_t c, nch = (size_t)s->size * (size_t)s->size;
    int n = deliverable(s), pick;

    if (n == 0) {
        return 0;
    }
    pick = random ? rnd_below(&s->rng, n) : 0;
    for (c = 0; c < nch; c++) {
        if (s->ch[c].n > 0 && !s->frozen[c % (size_t)s->size] && pick-- == 0) {
            deliver_head(s, (int)(c / (size_t)s->size), (int)(c % (size_t)s->size));
            return 1;
        }
    }
    return 0;
}

static void submit(sim_t *s, plan_t *pl)
{
    CHECK_MSG(!s->pending[pl->rank][pl->name], "rank %d: '%s' is still pending", pl->rank,
              pl->namebuf);
    CHECK_OK(tc__neg_submit(s->neg[pl->rank], &pl->w, pl, pl->data.bytes, NULL));
    pl->submitted = 1;
    s->pending[pl->rank][pl->name] = 1;
}

static int can_submit(const sim_t *s, int r)
{
    return !s->frozen[r] && s->next[r] < s->nplan[r] &&
           !s->pending[r][s->plan[r][s->next[r]]->name] &&
           tc__neg_state(s->neg[r]) == TC_NEG_RUNNING;
}

/* Submits rank r's next planned submission. */
void submit_next(sim_t *s, int r)
{
    CHECK_LT(s->next[r], s->nplan[r]);
    submit(s, s->plan[r][s->next[r]++]);
}

static int submit_one(sim_t *s, int random)
{
    int r, n = 0, pick;

    for (r = 0; r < s->size; r++) {
        n += can_submit(s, r);
    }
    if (n == 0) {
        return 0;
    }
    pick = random ? rnd_below(&s->rng, n) : 0;
    for (r = 0; r < s->size; r++) {
        if (can_submit(s, r) && pick-- == 0) {
            submit_next(s, r);
            return 1;
        }
    }
    return 0;
}

/* Steps every live rank once (in a random order when random); whether any moved. */
static int step_all(sim_t *s, int random)
{
    int order[SIM_MAX], r, moved = 0;

    for (r = 0; r < s->size; r++) {
        order[r] = r;
    }
    if (random) {
        shuffle(&s->rng, order, s->size);
    }
    for (r = 0; r < s->size; r++) {
        if (!s->frozen[order[r]]) {
            moved |= step(s, order[r]);
        }
    }
    return moved;
}

/* Runs the schedule at the current time until it settles: every planned
 * submission that may be made is made, every message to a live rank is
 * delivered, and a step of every live rank changes nothing. Random
 * (deliveries, steps and submissions interleaved as s->rng says) or, with
 * s->rng == 0, deterministic: deliveries in channel order, then
 * submissions, then steps in rank order. */
void run(sim_t *s)
{
    const int random = s->rng != 0;
    long iter = 0;

    for (;;) {
        CHECK_MSG(++iter < 20000000, "the simulation does not settle");
        if (random) {
            int a = rnd_below(&s->rng, 100);
            if (s->shut_after >= 0 && s->shut_after-- == 0) {
                tc__neg_shutdown(s->neg[s->shut_rank]);
            }
            if (s->jitter > 0 && rnd_below(&s->rng, 50) == 0) {
                s->now += rnd_next(&s->rng) % s->jitter;
            }
            if (a < s->pdeliver) {
                if (deliver_one(s, 1)) {
                    continue;
                }
            } else if (a < s->pdeliver + (100 - s->pdeliver) / 2) {
                int r = rnd_below(&s->rng, s->size);
                if (!s->frozen[r]) {
                    step(s, r);
                }
                continue;
            } else if (submit_one(s, 1)) {
                continue;
            }
            if (deliverable(s) > 0 || submit_one(s, 1)) {
                continue;
            }
        } else if (deliver_one(s, 0) || submit_one(s, 0)) {
            continue;
        }
        if (!step_all(s, random) && deliverable(s) == 0 && submit_one(s, random) == 0) {
            return;
        }
    }
}

void sim_quiet_log(void)
{
    if (getenv("TCOLL_LOG_LEVEL") == NULL) { /* the stall tests warn on purpose */
        atomic_store(&tc__log_level, TC_LOG_ERROR);
    }
}
