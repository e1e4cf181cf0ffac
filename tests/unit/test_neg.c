/*
 * test_neg.c - the negotiation state machine (engine/neg.h) without MPI.
 *
 * One tc_neg_t per simulated rank, joined by an in-memory message layer
 * written here: every send is copied into a queue per (source, destination)
 * pair that delivers in FIFO order, as MPI does; across pairs, and between
 * deliveries, steps and submissions, a seeded random schedule (or an
 * explicit one) decides what happens next. The clock is fake and moves only
 * when a test moves it. Every message is decoded when it is sent and checked
 * against the protocol (tag and type, destinations, at most one UP per DOWN),
 * and decoded again when it is delivered. A rank that fails by its own
 * decision tells every other rank, as the engine does.
 *
 * Cases: the order every rank runs things in (1-33 ranks, random submission
 * orders, the response cache after the first round); eager allreduces (exact
 * results with equal bits everywhere; eager_bytes = 0 runs them); stale cache
 * entries renegotiated in full (a mismatch fails everywhere, a shape every
 * rank changes runs and is cached again); shutdown, idle and mid-workload;
 * aborts and protocol violations; lost ranks found by the probes, and no
 * false alarm for ranks that are slow; cycles that overlap under many
 * interleavings, cache sizes and stall evictions; the tree's shape;
 * submissions the caller must not make; stalls; item cycle numbers.
 *
 * Each case runs in a child process, so that one failed check (which
 * aborts) does not hide the others; `test_neg CASE...` runs cases in place.
 * Must rely on nothing but neg.h's contract and the protocol: never on the
 * state machine's internals (timings neg.h does not promise included).
 */
#define _GNU_SOURCE
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "engine/neg.h"
#include "util/backoff.h"
#include "util/log.h"

#define SIM_MAX 64     /* ranks in one simulation */
#define NAME_LEN 48    /* longest tensor name here, with its NUL */
#define MAX_NAMES 8    /* names in one workload */
#define DATA_BYTES 32  /* eager input per submission */
#define MS 1000000ull
#define SEC 1000000000ull
/* The fake clock starts here: far from 0 and from any real clock, so that a
 * clock read behind the caller's back shows (stall tests also start at the
 * real monotonic time, as the engine would pass it). */
#define T0 (1ull << 62)

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

static int rnd_below(uint64_t *s, int n)
{
    return (int)(rnd_next(s) % (uint64_t)n);
}

static void shuffle(uint64_t *s, int *v, int n)
{
    int i;

    for (i = n - 1; i > 0; i--) {
        int j = rnd_below(s, i + 1), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* ---- workloads: what each rank submits ------------------------------------- */

typedef struct {
    const char *name;
    int kind, dtype, op;
    int root; /* -1: the last rank */
    int ndim;
    int64_t shape[2]; /* allgather: shape[0] is rank 0's rows; rank r has r + 1 times as many */
} spec_t;

/* One submission of one rank; its address is the request handle, so every
 * item that comes out can be matched with what was submitted. */
typedef struct {
    int rank, name, inst; /* inst: the how-manyth submission of the name on the rank */
    int64_t delta;        /* added to the last dimension: a shape other ranks do not have */
    tc_wire_request_t w;
    char namebuf[NAME_LEN];
    union {
        uint8_t bytes[DATA_BYTES];
        double align;
    } data; /* element j: (rank + 1) * (j + 1) + inst, so every result is exact */
    int submitted, done;
    size_t rec; /* its item's index in the rank's log */
} plan_t;

/* ---- the simulation -------------------------------------------------------- */

typedef struct qmsg {
    struct qmsg *next;
    int tag;
    size_t len;
    uint8_t *bytes;
} qmsg_t;

typedef struct {
    qmsg_t *head, *tail;
    size_t n;
} chan_t;

/* An item as it came out, copied before tc__neg_clear. */
typedef struct {
    tc_neg_action_t action;
    void *req;
    char name[NAME_LEN];
    int status;         /* FAIL */
    char *text;         /* FAIL */
    uint32_t cache_ref; /* RUN */
    uint32_t ndim0;     /* RUN */
    int64_t dim0[SIM_MAX];
    uint8_t result[DATA_BYTES]; /* DONE */
    size_t result_len;
    uint64_t cycle;
} rec_t;

typedef struct {
    int size;
    tc_neg_params_t p;
    tc_neg_t *neg[SIM_MAX];
    chan_t *ch; /* [src * size + dst] */
    size_t inflight;
    int frozen[SIM_MAX]; /* a stuck rank: never stepped, nothing delivered to it */
    int announced[SIM_MAX]; /* its own failure was sent to every rank, as the engine does */
    uint64_t now;
    uint64_t rng;  /* 0: the deterministic schedule */
    int pdeliver;  /* random schedule: percent of actions that deliver a message */
    uint64_t jitter;   /* random schedule: now and then the clock moves by up to this */
    long shut_after;   /* random schedule: after this many actions, shut_rank shuts down */
    int shut_rank;
    rec_t *log[SIM_MAX];
    size_t nlog[SIM_MAX], caplog[SIM_MAX];
    /* what went over the wire */
    size_t ntag[8];               /* messages per tag, one per destination */
    size_t req_entries[SIM_MAX];  /* submissions each rank sent rank 0 in full */
    uint64_t up_cycle[SIM_MAX];   /* the DOWN count at a rank's last UP */
    int up_sent[SIM_MAX];
    /* the workload */
    const spec_t *specs;
    int nspecs;
    plan_t **plan[SIM_MAX]; /* each rank's submissions, in order */
    size_t nplan[SIM_MAX], capplan[SIM_MAX], next[SIM_MAX];
    int pending[SIM_MAX][MAX_NAMES];
} sim_t;

static const char *act_name(tc_neg_action_t a)
{
    return a == TC_NEG_RUN ? "RUN" : a == TC_NEG_FAIL ? "FAIL" : a == TC_NEG_DONE ? "DONE" : "?";
}

static const char *state_name(tc_neg_state_t st)
{
    return st == TC_NEG_RUNNING    ? "RUNNING"
           : st == TC_NEG_DRAINING ? "DRAINING"
           : st == TC_NEG_DONE_OK  ? "DONE_OK"
           : st == TC_NEG_FAILED   ? "FAILED"
                                   : "?";
}

static tc_neg_params_t params(int size)
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

static sim_t *sim_new(const tc_neg_params_t *p, uint64_t seed)
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

static void sim_free(sim_t *s)
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

static chan_t *chan(sim_t *s, int src, int dst)
{
    return &s->ch[(size_t)src * (size_t)s->size + (size_t)dst];
}

static void enqueue(sim_t *s, int src, int dst, int tag, const uint8_t *data, size_t len)
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

static int is_neighbour(int size, int r, int q)
{
    return q >= 0 && q < size && q != r && (tc__neg_parent(r) == q || tc__neg_parent(q) == r);
}

/* A send as neg.h and the protocol allow it; counts what went over the wire. */
static void check_send(sim_t *s, int r, const tc_neg_send_t *x)
{
    int kids[SIM_MAX], nkids = tc__neg_children(r, s->size, kids, SIM_MAX);
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
    case TC_NEG_TAG_DOWN:
        CHECK_MSG(m.type == TC_WIRE_CYCLE, "rank %d: type %d on TAG_DOWN", r, m.type);
        CHECK_MSG(x->ndst == nkids, "rank %d sends a DOWN to %d ranks, has %d children", r,
                  x->ndst, nkids);
        for (d = 0; d < x->ndst; d++) {
            CHECK_MSG(x->dst[d] == kids[d], "rank %d sends a DOWN to rank %d", r, x->dst[d]);
        }
        CHECK_EQ(m.seq + 1, tc__neg_cycles(s->neg[r]));
        break;
    case TC_NEG_TAG_UP:
        CHECK_MSG(r != 0 && x->ndst == 1 && x->dst[0] == tc__neg_parent(r),
                  "rank %d: TAG_UP not to its parent", r);
        CHECK_MSG(m.type == TC_WIRE_UP || (m.type == TC_WIRE_BYE && m.flags == 0),
                  "rank %d: type %d flags %d on TAG_UP", r, m.type, m.flags);
        if (m.type == TC_WIRE_UP) {
            uint64_t cyc = tc__neg_cycles(s->neg[r]);
            CHECK_EQ(m.seq, cyc);
            CHECK_MSG(!s->up_sent[r] || s->up_cycle[r] != cyc,
                      "rank %d sent a second UP before its next DOWN (after DOWN %llu)", r,
                      (unsigned long long)cyc);
            CHECK_GT(m.nready + m.nsome + m.nstale, 0);
            s->up_sent[r] = 1;
            s->up_cycle[r] = cyc;
        }
        break;
    case TC_NEG_TAG_PING:
        CHECK_MSG(m.type == TC_WIRE_REQUESTS && m.count == 0 && m.flags == TC_WIRE_F_SPREAD,
                  "rank %d: a ping of type %d, count %u, flags %d", r, m.type, m.count, m.flags);
        for (d = 0; d < x->ndst; d++) {
            CHECK_MSG(is_neighbour(s->size, r, x->dst[d]), "rank %d pings rank %d", r, x->dst[d]);
        }
        break;
    case TC_NEG_TAG_PONG:
        CHECK(m.type == TC_WIRE_REQUESTS && m.count == 0 && x->ndst == 1);
        break;
    default:
        break;
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
        CHECK_MSG(it->resp.text != NULL && it->resp.name != NULL, "rank %d: a FAIL item without "
                  "name or text", r);
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
    default:
        TC_CHECK_FAIL("rank %d: item action %d", r, (int)it->action);
    }
    if (it->req != NULL) {
        plan_t *pl = it->req;
        CHECK_MSG(pl->rank == r, "rank %d got rank %d's request back", r, pl->rank);
        CHECK_MSG(pl->submitted && !pl->done, "rank %d: '%s' (#%d) came out twice, or before it "
                  "was submitted", r, pl->namebuf, pl->inst);
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

static int step(sim_t *s, int r)
{
    int moved = tc__neg_step(s->neg[r], s->now);
    return collect(s, r) || moved;
}

static void deliver_head(sim_t *s, int src, int dst)
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
static void deliver_chan(sim_t *s, int src, int dst)
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
    CHECK_OK(tc__neg_submit(s->neg[pl->rank], &pl->w, pl, pl->data.bytes));
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
static void submit_next(sim_t *s, int r)
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
static void run(sim_t *s)
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

/* Writes v as element j of a buffer of dtype (float32/64, int32/64). */
static void put_elem(uint8_t *buf, int dtype, size_t j, double v)
{
    switch (dtype) {
    case TC_FLOAT32: {
        float x = (float)v;
        memcpy(buf + 4 * j, &x, 4);
        break;
    }
    case TC_FLOAT64:
        memcpy(buf + 8 * j, &v, 8);
        break;
    case TC_INT32: {
        int32_t x = (int32_t)v;
        memcpy(buf + 4 * j, &x, 4);
        break;
    }
    case TC_INT64: {
        int64_t x = (int64_t)v;
        memcpy(buf + 8 * j, &x, 8);
        break;
    }
    default:
        break;
    }
}

/* Plans rank r's next submission of workload name `name`. */
static plan_t *mkplan(sim_t *s, int r, int name, int inst, int64_t delta)
{
    const spec_t *sp = &s->specs[name];
    plan_t *pl = calloc(1, sizeof(*pl));
    size_t j, count = 1;
    int d;

    CHECK(pl != NULL);
    CHECK(name >= 0 && name < s->nspecs && name < MAX_NAMES);
    pl->rank = r;
    pl->name = name;
    pl->inst = inst;
    pl->delta = delta;
    snprintf(pl->namebuf, sizeof(pl->namebuf), "%s", sp->name);
    pl->w.name = pl->namebuf;
    pl->w.name_len = (uint32_t)strlen(pl->namebuf);
    pl->w.kind = (uint8_t)sp->kind;
    pl->w.dtype = (uint8_t)sp->dtype;
    pl->w.op = (uint8_t)sp->op;
    pl->w.root = sp->root < 0 ? s->size - 1 : sp->root;
    pl->w.ndim = (uint8_t)sp->ndim;
    for (d = 0; d < sp->ndim; d++) {
        pl->w.shape[d] = sp->shape[d];
    }
    if (sp->kind == TC_KIND_ALLGATHER) {
        pl->w.shape[0] *= r + 1;
    }
    pl->w.shape[sp->ndim - 1] += delta;
    for (d = 0; d < sp->ndim; d++) {
        count *= (size_t)pl->w.shape[d];
    }
    for (j = 0; (j + 1) * tc_dtype_size((tc_dtype_t)sp->dtype) <= DATA_BYTES && j < count; j++) {
        put_elem(pl->data.bytes, sp->dtype, j, (double)((r + 1) * (int)(j + 1) + inst));
    }
    if (s->nplan[r] == s->capplan[r]) {
        size_t cap = s->capplan[r] < 16 ? 16 : s->capplan[r] * 2;
        plan_t **v = realloc(s->plan[r], cap * sizeof(*v));
        CHECK(v != NULL);
        s->plan[r] = v;
        s->capplan[r] = cap;
    }
    s->plan[r][s->nplan[r]++] = pl;
    return pl;
}

static size_t spec_elems(const spec_t *sp)
{
    size_t count = 1;
    int d;

    for (d = 0; d < sp->ndim; d++) {
        count *= (size_t)sp->shape[d];
    }
    return count;
}

static size_t spec_bytes(const spec_t *sp)
{
    return spec_elems(sp) * tc_dtype_size((tc_dtype_t)sp->dtype);
}

/* Whether a cached submission of the spec (unchanged) rides eagerly. */
static int spec_eager(const sim_t *s, const spec_t *sp)
{
    return s->p.eager_bytes > 0 && sp->kind == TC_KIND_ALLREDUCE &&
           spec_bytes(sp) <= s->p.eager_bytes;
}

/* The exact reduction of every rank's input of instance inst (sum, average
 * of floats, min, max); returns its size in bytes. */
static size_t eager_expect(const sim_t *s, const spec_t *sp, int inst, uint8_t *out)
{
    size_t j, count = spec_elems(sp);
    int q;

    CHECK_LE(spec_bytes(sp), DATA_BYTES);
    CHECK(sp->op != TC_PROD && (sp->op != TC_AVG || sp->dtype == TC_FLOAT32 ||
                                sp->dtype == TC_FLOAT64));
    for (j = 0; j < count; j++) {
        double v = 0;
        for (q = 0; q < s->size; q++) {
            double x = (double)((q + 1) * (int)(j + 1) + inst);
            v = sp->op == TC_MAX ? (q == 0 || x > v ? x : v)
                : sp->op == TC_MIN ? (q == 0 || x < v ? x : v)
                                   : v + x;
        }
        put_elem(out, sp->dtype, j, sp->op == TC_AVG ? v / s->size : v);
    }
    return spec_bytes(sp);
}

static const rec_t *rec_of(const sim_t *s, const plan_t *pl)
{
    CHECK_MSG(pl->done, "rank %d: '%s' (#%d) never came out", pl->rank, pl->namebuf, pl->inst);
    return &s->log[pl->rank][pl->rec];
}

/* Every rank got the same items, in the same order, from the same DOWN. */
static void check_agreement(const sim_t *s)
{
    size_t i;
    int r;

    for (r = 1; r < s->size; r++) {
        CHECK_MSG(s->nlog[r] == s->nlog[0], "rank %d has %zu items, rank 0 has %zu", r,
                  s->nlog[r], s->nlog[0]);
        for (i = 0; i < s->nlog[0]; i++) {
            const rec_t *a = &s->log[0][i], *b = &s->log[r][i];
            CHECK_MSG(a->action == b->action && strcmp(a->name, b->name) == 0 &&
                          a->cycle == b->cycle,
                      "item %zu: rank 0 has %s '%s' (DOWN %llu), rank %d has %s '%s' (DOWN %llu)",
                      i, act_name(a->action), a->name, (unsigned long long)a->cycle, r,
                      act_name(b->action), b->name, (unsigned long long)b->cycle);
            if (a->action == TC_NEG_RUN) {
                CHECK_MSG(a->cache_ref == b->cache_ref && a->ndim0 == b->ndim0 &&
                              memcmp(a->dim0, b->dim0, a->ndim0 * sizeof(a->dim0[0])) == 0,
                          "item %zu '%s': rank 0 and rank %d run it differently", i, a->name, r);
            } else if (a->action == TC_NEG_FAIL) {
                CHECK_MSG(a->status == b->status && strcmp(a->text, b->text) == 0,
                          "item %zu '%s': rank 0 fails it with %d \"%s\", rank %d with %d \"%s\"",
                          i, a->name, a->status, a->text, r, b->status, b->text);
            } else {
                CHECK_MSG(a->result_len == b->result_len &&
                              memcmp(a->result, b->result, a->result_len) == 0,
                          "item %zu '%s': rank 0 and rank %d have different result bits", i,
                          a->name, r);
            }
        }
    }
}

/* Every planned submission came out, every rank runs and waits for nothing,
 * nothing is in flight. */
static void check_settled(const sim_t *s)
{
    size_t i;
    int r;

    for (r = 0; r < s->size; r++) {
        const char *text;
        tc_status_t st = tc__neg_status(s->neg[r], &text);
        CHECK_MSG(tc__neg_state(s->neg[r]) == TC_NEG_RUNNING, "rank %d is %s: %d %s", r,
                  state_name(tc__neg_state(s->neg[r])), (int)st, text);
        CHECK_EQ(s->next[r], s->nplan[r]);
        for (i = 0; i < s->nplan[r]; i++) {
            rec_of(s, s->plan[r][i]);
        }
        CHECK_MSG(!tc__neg_busy(s->neg[r]), "rank %d is busy with nothing left to do", r);
    }
    CHECK_EQ(s->inflight, 0);
}

static void check_failed(const sim_t *s, int r, tc_status_t want, int here, const char *needle)
{
    const char *text;
    tc_status_t st = tc__neg_status(s->neg[r], &text);

    CHECK_MSG(tc__neg_state(s->neg[r]) == TC_NEG_FAILED, "rank %d is %s, want FAILED", r,
              state_name(tc__neg_state(s->neg[r])));
    CHECK_MSG(st == want, "rank %d failed with %d (%s), want %d: %s", r, (int)st,
              tc_status_string(st), (int)want, text);
    CHECK_EQ(tc__neg_failed_here(s->neg[r]), here);
    CHECK_STR_CONTAINS(text, needle);
}

/* ---- 1. order agreement ------------------------------------------------------ */

static const spec_t mixed_specs[] = {
    {"grad/big", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {1000, 0}},
    {"act/rows", TC_KIND_ALLGATHER, TC_INT64, TC_SUM, 0, 2, {1, 3}},
    {"bcast/last", TC_KIND_BROADCAST, TC_UINT8, TC_SUM, -1, 1, {7, 0}},
    {"grad/small", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {2, 0}},
    {"grad/max", TC_KIND_ALLREDUCE, TC_INT32, TC_MAX, 0, 2, {5, 5}},
    {"bcast/zero", TC_KIND_BROADCAST, TC_FLOAT64, TC_SUM, 0, 1, {3, 0}},
};
#define NMIXED ((int)(sizeof(mixed_specs) / sizeof(mixed_specs[0])))

/* Each rank submits every name once per round, in its own random order, a
 * name again only after its item came out there. */
static void plan_rounds(sim_t *s, int rounds)
{
    int r, k, i, order[MAX_NAMES];

    for (r = 0; r < s->size; r++) {
        for (k = 0; k < rounds; k++) {
            for (i = 0; i < s->nspecs; i++) {
                order[i] = i;
            }
            shuffle(&s->rng, order, s->nspecs);
            for (i = 0; i < s->nspecs; i++) {
                mkplan(s, r, order[i], k, 0);
            }
        }
    }
}

/* What each instance must have become when no shape changed: the first
 * negotiated in full and cached, the others run from the cache (eagerly
 * when small enough). */
static void check_cached_rounds(const sim_t *s)
{
    uint32_t first_ref[SIM_MAX][MAX_NAMES];
    size_t i;
    int r, q;

    for (r = 0; r < s->size; r++) {
        for (i = 0; i < s->nplan[r]; i++) {
            const plan_t *pl = s->plan[r][i];
            const spec_t *sp = &s->specs[pl->name];
            const rec_t *e = rec_of(s, pl);
            if (pl->inst == 0) {
                CHECK_MSG(e->action == TC_NEG_RUN && e->cache_ref > 0, "rank %d: first '%s' is "
                          "%s with cache_ref %u", r, pl->namebuf, act_name(e->action),
                          e->cache_ref);
                first_ref[r][pl->name] = e->cache_ref;
                if (sp->kind == TC_KIND_ALLGATHER) {
                    CHECK_EQ(e->ndim0, s->size);
                    for (q = 0; q < s->size; q++) {
                        CHECK_EQ(e->dim0[q], sp->shape[0] * (q + 1));
                    }
                } else {
                    CHECK_EQ(e->ndim0, 0);
                }
            }
        }
        for (i = 0; i < s->nplan[r]; i++) {
            const plan_t *pl = s->plan[r][i];
            const spec_t *sp = &s->specs[pl->name];
            const rec_t *e = rec_of(s, pl);
            if (pl->inst == 0) {
                continue;
            }
            if (spec_eager(s, sp)) {
                uint8_t want[DATA_BYTES];
                size_t len = eager_expect(s, sp, pl->inst, want);
                CHECK_MSG(e->action == TC_NEG_DONE, "rank %d: '%s' #%d is %s, want DONE", r,
                          pl->namebuf, pl->inst, act_name(e->action));
                CHECK_EQ(e->result_len, len);
                CHECK_MSG(memcmp(e->result, want, len) == 0, "rank %d: '%s' #%d (size %d): "
                          "not the exact result", r, pl->namebuf, pl->inst, s->size);
            } else {
                CHECK_MSG(e->action == TC_NEG_RUN && e->cache_ref == first_ref[r][pl->name],
                          "rank %d: '%s' #%d is %s with cache_ref %u, want RUN from cache %u", r,
                          pl->namebuf, pl->inst, act_name(e->action), e->cache_ref,
                          first_ref[r][pl->name]);
            }
        }
    }
}

static void test_order_agreement(void)
{
    static const int sizes[] = {1, 2, 3, 4, 5, 8, 16, 33};
    size_t si;
    uint64_t seed;
    int r;

    for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        for (seed = 1; seed <= (TEST_TSAN ? 2 : sizes[si] > 8 ? 3 : 20); seed++) {
            tc_neg_params_t p = params(sizes[si]);
            sim_t *s = sim_new(&p, seed);
            s->specs = mixed_specs;
            s->nspecs = NMIXED;
            s->pdeliver = seed % 2 ? 50 : 15; /* few deliveries: many submissions per cycle */
            plan_rounds(s, 4);
            run(s);
            check_settled(s);
            check_agreement(s);
            check_cached_rounds(s);
            for (r = 1; r < s->size; r++) {
                /* only the first round went to rank 0 in full */
                CHECK_MSG(s->req_entries[r] == (size_t)NMIXED, "size %d seed %llu: rank %d sent "
                          "%zu submissions in full, want %d", s->size, (unsigned long long)seed,
                          r, s->req_entries[r], NMIXED);
            }
            sim_free(s);
        }
    }
}

/* ---- 2. eager allreduces ---------------------------------------------------- */

static const spec_t eager_specs[] = {
    {"e/sum", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {3, 0}},  /* 12 bytes */
    {"e/avg", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_AVG, 0, 1, {3, 0}},  /* 12 bytes */
    {"e/edge", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_AVG, 0, 2, {2, 2}}, /* 16: eager_bytes */
    {"e/over", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 2, {1, 5}}, /* 20: one too many */
    {"e/one", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {1, 0}},  /* 4 bytes */
    {"e/dmax", TC_KIND_ALLREDUCE, TC_FLOAT64, TC_MAX, 0, 1, {2, 0}}, /* 16 bytes */
    {"e/imin", TC_KIND_ALLREDUCE, TC_INT32, TC_MIN, 0, 1, {4, 0}},   /* 16 bytes */
    {"e/lsum", TC_KIND_ALLREDUCE, TC_INT64, TC_SUM, 0, 2, {1, 1}},   /* 8 bytes */
};
#define NEAGER ((int)(sizeof(eager_specs) / sizeof(eager_specs[0])))

static void test_eager(void)
{
    static const int sizes[] = {1, 2, 3, 4, 5, 8};
    size_t si, i;
    uint64_t seed;
    int eager_bytes, r, ndone;

    for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        for (eager_bytes = 0; eager_bytes <= 16; eager_bytes += 16) {
            for (seed = 1; seed <= 3; seed++) {
                tc_neg_params_t p = params(sizes[si]);
                sim_t *s;
                p.eager_bytes = (uint32_t)eager_bytes;
                s = sim_new(&p, seed);
                s->specs = eager_specs;
                s->nspecs = NEAGER;
                plan_rounds(s, 4);
                run(s);
                check_settled(s);
                check_agreement(s); /* DONE results: the same bits on every rank */
                check_cached_rounds(s); /* exact sums and averages; RUN when not eager */
                for (r = 0, ndone = 0; r < s->size; r++) {
                    for (i = 0; i < s->nlog[r]; i++) {
                        ndone += s->log[r][i].action == TC_NEG_DONE;
                    }
                }
                /* all but e/over: three cached rounds each, on every rank */
                CHECK_EQ(ndone, eager_bytes > 0 ? (NEAGER - 1) * 3 * s->size : 0);
                sim_free(s);
            }
        }
    }
}

/* ---- 3. stale cache entries --------------------------------------------------- */

static const spec_t stale_specs[] = {
    {"s/w", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {8, 0}},  /* not eager */
    {"s/e", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {2, 0}},  /* eager */
    {"s/other", TC_KIND_BROADCAST, TC_INT32, TC_SUM, 0, 1, {5, 0}}, /* never changes */
};

/* The coordinator's text for a one-dimensional allreduce whose shape differs. */
static void mismatch_text(char *buf, size_t len, const char *name, int size, const int64_t *dim)
{
    int pos, q, listed = 0, extra = 0;

    pos = snprintf(buf, len, "tensor '%s': allreduce shape mismatch: rank 0 has [%lld]", name,
                   (long long)dim[0]);
    for (q = 1; q < size; q++) {
        if (dim[q] == dim[0]) {
            continue;
        }
        if (listed == 4) {
            extra++;
            continue;
        }
        pos += snprintf(buf + pos, len - (size_t)pos, ", rank %d has [%lld]", q, (long long)dim[q]);
        listed++;
    }
    if (extra > 0) {
        snprintf(buf + pos, len - (size_t)pos, ", and %d more rank%s differ", extra,
                 extra > 1 ? "s" : "");
    }
}

static void stale_case(int size, int odd, uint64_t seed)
{
    /* per phase, the change to s/w's and s/e's shape on every rank:
     * 0 cache it; 1 from the cache; 2 one rank differs (s/w: `odd`, s/e: the
     * next rank) by one: a mismatch everywhere; 3 back as it was: in full,
     * cached again; 4 from the cache; 5 every rank adds 2: stale
     * everywhere, in full, cached again; 6 from the cache. */
    enum { NPHASE = 7 };
    tc_neg_params_t p = params(size);
    sim_t *s = sim_new(&p, seed);
    uint32_t ref[3] = {0, 0, 0};
    size_t before[SIM_MAX];
    int ph, r, k;

    s->specs = stale_specs;
    s->nspecs = 3;
    for (ph = 0; ph < NPHASE; ph++) {
        int64_t dim[2][SIM_MAX];
        plan_t *pl[SIM_MAX][3];
        for (r = 0; r < size; r++) {
            before[r] = s->req_entries[r];
            for (k = 0; k < 2; k++) {
                int oddk = k == 0 ? odd : (odd + 1) % size;
                int64_t delta = ph == 2 && r == oddk ? 1 : ph >= 5 ? 2 : 0;
                dim[k][r] = stale_specs[k].shape[0] + delta;
            }
        }
        for (r = 0; r < size; r++) { /* each rank in its own order */
            int order[3] = {0, 1, 2};
            shuffle(&s->rng, order, 3);
            for (k = 0; k < 3; k++) {
                int name = order[k];
                int64_t delta = name < 2 ? dim[name][r] - stale_specs[name].shape[0] : 0;
                pl[r][name] = mkplan(s, r, name, ph, delta);
            }
        }
        run(s);
        check_settled(s);
        check_agreement(s);
        for (k = 0; k < 3; k++) {
            const rec_t *e = rec_of(s, pl[0][k]);
            const char *nm = stale_specs[k].name;
            if (k < 2 && ph == 2) {
                char want[512];
                mismatch_text(want, sizeof(want), nm, size, dim[k]);
                CHECK_MSG(e->action == TC_NEG_FAIL && e->status == TC_ERR_MISMATCH,
                          "size %d odd %d phase %d: '%s' is %s (%d)", size, odd, ph, nm,
                          act_name(e->action), e->status);
                CHECK_MSG(strcmp(e->text, want) == 0, "'%s' fails with \"%s\", want \"%s\"", nm,
                          e->text, want);
                ref[k] = 0;
            } else if (k < 2 && (ph == 0 || ph == 3 || ph == 5)) {
                CHECK_MSG(e->action == TC_NEG_RUN && e->cache_ref > 0,
                          "size %d odd %d phase %d: '%s' is %s with cache_ref %u, want a RUN "
                          "negotiated in full and cached", size, odd, ph, nm,
                          act_name(e->action), e->cache_ref);
                ref[k] = e->cache_ref;
            } else if (k == 1 && ph > 0) { /* [2] or [4] floats: eager */
                uint8_t want[DATA_BYTES];
                spec_t sp = stale_specs[1];
                size_t len;
                sp.shape[0] = dim[1][0];
                CHECK(spec_eager(s, &sp));
                len = eager_expect(s, &sp, ph, want);
                CHECK_MSG(e->action == TC_NEG_DONE, "size %d odd %d phase %d: '%s' is %s, want "
                          "DONE from the cache", size, odd, ph, nm, act_name(e->action));
                CHECK_EQ(e->result_len, len);
                CHECK(memcmp(e->result, want, len) == 0);
            } else if (ph == 0) {
                CHECK(e->action == TC_NEG_RUN && e->cache_ref > 0);
                ref[k] = e->cache_ref;
            } else {
                CHECK_MSG(e->action == TC_NEG_RUN && e->cache_ref == ref[k],
                          "size %d odd %d phase %d: '%s' is %s with cache_ref %u, want %u", size,
                          odd, ph, nm, act_name(e->action), e->cache_ref, ref[k]);
            }
        }
        for (r = 1; r < size; r++) {
            /* in full: everything in phase 0, s/w and s/e in phases 2, 3 and 5 */
            size_t want = ph == 0 ? 3 : ph == 2 || ph == 3 || ph == 5 ? 2 : 0;
            CHECK_MSG(s->req_entries[r] - before[r] == want, "size %d odd %d phase %d: rank %d "
                      "sent %zu submissions in full, want %zu", size, odd, ph, r,
                      s->req_entries[r] - before[r], want);
        }
    }
    sim_free(s);
}

static void test_stale(void)
{
    int size, odd;
    uint64_t seed;

    for (size = 2; size <= 5; size++) {
        for (odd = 0; odd < size; odd++) {
            for (seed = 1; seed <= 3; seed++) {
                stale_case(size, odd, seed);
            }
        }
    }
    stale_case(8, 6, 7);
    stale_case(3, 1, 0); /* the deterministic schedule */
}

/* ---- 4. shutdown ------------------------------------------------------------- */

static void check_shut_down(const sim_t *s, int from)
{
    char want[128];
    int r;

    snprintf(want, sizeof(want), "tc_shutdown called on rank %d", from);
    for (r = 0; r < s->size; r++) {
        const char *text;
        tc_status_t st = tc__neg_status(s->neg[r], &text);
        CHECK_MSG(tc__neg_state(s->neg[r]) == TC_NEG_DONE_OK, "rank %d is %s (%s)", r,
                  state_name(tc__neg_state(s->neg[r])), text);
        CHECK_STATUS(st, TC_ERR_SHUTDOWN);
        CHECK_STR_CONTAINS(text, want);
        CHECK_EQ(tc__neg_failed_here(s->neg[r]), 0);
    }
    CHECK_EQ(s->inflight, 0);
}

static const spec_t shut_specs[] = {
    {"f/x", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {100, 0}},
    {"c/y", TC_KIND_BROADCAST, TC_INT32, TC_SUM, 0, 1, {9, 0}},
    {"c/z", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {2, 0}},
};

static void test_shutdown(void)
{
    int size, from, r;
    uint64_t seed;

    /* idle: whoever asks, every rank says goodbye and ends quiet */
    for (size = 1; size <= 8; size++) {
        for (from = 0; from < size; from++) {
            for (seed = 0; seed <= 2; seed++) {
                tc_neg_params_t p = params(size);
                sim_t *s = sim_new(&p, seed);
                s->specs = shut_specs;
                s->nspecs = 3;
                for (r = 0; r < size; r++) { /* some history first */
                    mkplan(s, r, 0, 0, 0);
                    mkplan(s, r, 1, 0, 0);
                }
                run(s);
                check_settled(s);
                tc__neg_shutdown(s->neg[from]);
                run(s);
                check_shut_down(s, from);
                for (r = 0; r < size; r++) {
                    CHECK(!tc__neg_busy(s->neg[r]));
                    CHECK_EQ(step(s, r), 0);
                }
                sim_free(s);
            }
        }
    }
    /* decisions in the DOWN that terminates come out: a first-time name in
     * the very REQUESTS that asks for shutdown, and cached names whose last
     * UP reaches rank 0 before it decides */
    for (size = 2; size <= 8; size++) {
        for (from = 1; from < size; from++) {
            tc_neg_params_t p = params(size);
            sim_t *s = sim_new(&p, 0);
            plan_t *x[SIM_MAX], *y[SIM_MAX], *z[SIM_MAX];
            uint64_t before;
            s->specs = shut_specs;
            s->nspecs = 3;
            for (r = 0; r < size; r++) {
                mkplan(s, r, 1, 0, 0);
                mkplan(s, r, 2, 0, 0);
            }
            run(s); /* c/y and c/z cached */
            for (r = 0; r < size; r++) {
                if (r != from) {
                    x[r] = mkplan(s, r, 0, 0, 0);
                    y[r] = mkplan(s, r, 1, 1, 0);
                    z[r] = mkplan(s, r, 2, 1, 0);
                }
            }
            run(s); /* every rank but `from` waits for f/x, c/y, c/z */
            for (r = 0; r < size; r++) {
                CHECK(r == from || (x[r]->submitted && !x[r]->done && !y[r]->done &&
                                    !z[r]->done));
            }
            x[from] = mkplan(s, from, 0, 0, 0);
            y[from] = mkplan(s, from, 1, 1, 0);
            z[from] = mkplan(s, from, 2, 1, 0);
            before = tc__neg_cycles(s->neg[0]);
            submit_next(s, from);
            submit_next(s, from);
            submit_next(s, from);
            tc__neg_shutdown(s->neg[from]);
            step(s, from); /* REQUESTS(f/x, SHUTDOWN), then an UP to its parent */
            /* the UP climbs to rank 0 before rank 0 decides: deliver along the path */
            for (r = from; r != 0; r = tc__neg_parent(r)) {
                deliver_chan(s, r, 0);
                deliver_chan(s, r, tc__neg_parent(r));
                step(s, tc__neg_parent(r));
            }
            run(s);
            check_shut_down(s, from);
            check_agreement(s);
            for (r = 0; r < size; r++) {
                /* one more DOWN, the one that terminates: it decided all three */
                const rec_t *ex = rec_of(s, x[r]), *ey = rec_of(s, y[r]), *ez = rec_of(s, z[r]);
                CHECK_EQ(tc__neg_cycles(s->neg[r]), before + 1);
                CHECK_MSG(ex->action == TC_NEG_RUN, "rank %d: f/x is %s", r, act_name(ex->action));
                CHECK(ey->action == TC_NEG_RUN && ey->cycle == ex->cycle && ey->cache_ref > 0);
                CHECK(ez->action == TC_NEG_DONE && ez->cycle == ex->cycle);
            }
            sim_free(s);
        }
    }
    /* in the middle of a workload, at a random moment: every rank saw the
     * same items up to the end, and every goodbye is said */
    for (size = 2; size <= 8; size++) {
        for (seed = 1; seed <= 15; seed++) {
            tc_neg_params_t p = params(size);
            sim_t *s = sim_new(&p, seed);
            s->specs = mixed_specs;
            s->nspecs = NMIXED;
            plan_rounds(s, 3);
            s->shut_rank = rnd_below(&s->rng, size);
            s->shut_after = rnd_below(&s->rng, 100 * size);
            run(s);
            if (s->shut_after >= 0) { /* the workload was over first */
                tc__neg_shutdown(s->neg[s->shut_rank]);
                run(s);
            }
            check_shut_down(s, s->shut_rank);
            check_agreement(s);
            sim_free(s);
        }
    }
    /* two ranks ask at once: one shutdown, named after one of them */
    {
        tc_neg_params_t p = params(6);
        sim_t *s = sim_new(&p, 5);
        const char *t0, *t;
        tc__neg_shutdown(s->neg[5]);
        tc__neg_shutdown(s->neg[2]);
        run(s);
        tc__neg_status(s->neg[0], &t0);
        CHECK(strstr(t0, "rank 5") != NULL || strstr(t0, "rank 2") != NULL);
        for (r = 0; r < 6; r++) {
            CHECK_EQ(tc__neg_state(s->neg[r]), TC_NEG_DONE_OK);
            CHECK_STATUS(tc__neg_status(s->neg[r], &t), TC_ERR_SHUTDOWN);
            CHECK(strcmp(t, t0) == 0);
        }
        sim_free(s);
    }
}

/* ---- 5. aborts and protocol violations ------------------------------------------- */

/* Encodes m and delivers it from src to dst under tag, ahead of nothing. */
static void inject(sim_t *s, int src, int dst, int tag, const tc_wire_msg_t *m)
{
    tc_wire_buf_t b = {0};

    CHECK_OK(tc__wire_encode(m, &b));
    CHECK_EQ(chan(s, src, dst)->n, 0);
    enqueue(s, src, dst, tag, b.data, b.len);
    tc__wire_buf_free(&b);
    deliver_head(s, src, dst);
}

/* A size-4 simulation (tree 0 -> 1, 2; 2 -> 3) that has cached "w". */
static sim_t *warm4(void)
{
    static const spec_t w[] = {{"w", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}}};
    tc_neg_params_t p = params(4);
    sim_t *s = sim_new(&p, 0);
    int r;

    s->specs = w;
    s->nspecs = 1;
    for (r = 0; r < 4; r++) {
        mkplan(s, r, 0, 0, 0);
    }
    run(s);
    check_settled(s);
    return s;
}

static void check_quiet_after_failure(sim_t *s, int r)
{
    size_t before = s->nlog[r];

    CHECK_EQ(step(s, r), 0);
    CHECK_EQ(s->nlog[r], before);
}

static void test_aborts(void)
{
    const char *text;
    sim_t *s;
    int r;

    /* another rank's abort: FAILED with its text; not decided here */
    {
        const char *why = "tensor 'x' stalled";
        tc_wire_msg_t ab = {.type = TC_WIRE_BYE, .flags = TC_WIRE_F_TERMINATE,
                            .term_status = TC_ERR_TIMEOUT, .term_text = why,
                            .term_text_len = (uint32_t)strlen(why)};
        s = warm4();
        inject(s, 3, 1, TC_NEG_TAG_ABORT, &ab);
        check_failed(s, 1, TC_ERR_TIMEOUT, 0, "rank 3 stopped: tensor 'x' stalled");
        tc__neg_status(s->neg[1], &text);
        CHECK(strcmp(text, "rank 3 stopped: tensor 'x' stalled") == 0);
        check_quiet_after_failure(s, 1);
        /* what comes after is ignored: a later abort does not change the cause */
        ab.term_status = TC_ERR_NOMEM;
        inject(s, 2, 1, TC_NEG_TAG_ABORT, &ab);
        check_failed(s, 1, TC_ERR_TIMEOUT, 0, "rank 3 stopped");
        /* rank 0 too, and the others carry on */
        ab.term_status = TC_ERR_TRANSPORT;
        ab.term_text = "lost rank 1";
        ab.term_text_len = 11;
        inject(s, 2, 0, TC_NEG_TAG_ABORT, &ab);
        check_failed(s, 0, TC_ERR_TRANSPORT, 0, "rank 2 stopped: lost rank 1");
        CHECK_EQ(tc__neg_state(s->neg[2]), TC_NEG_RUNNING);
        CHECK_EQ(tc__neg_state(s->neg[3]), TC_NEG_RUNNING);
        sim_free(s);
    }
    /* protocol violations, each on a fresh simulation: FAILED here */
    for (r = 0; r < 9; r++) {
        tc_wire_msg_t m = {0};
        tc_wire_response_t ghost = {.rtype = TC_WIRE_RUN, .name = "ghost", .name_len = 5};
        uint32_t id0 = 0;
        s = warm4();
        switch (r) {
        case 0: /* a DOWN with the wrong seq */
            m.type = TC_WIRE_CYCLE;
            m.seq = 7;
            m.cache_gen = 1;
            inject(s, 0, 1, TC_NEG_TAG_DOWN, &m);
            check_failed(s, 1, TC_ERR_TRANSPORT, 1, "protocol error");
            check_failed(s, 1, TC_ERR_TRANSPORT, 1, "DOWN message 7");
            break;
        case 1: /* a DOWN with the wrong cache generation */
            m.type = TC_WIRE_CYCLE;
            m.seq = tc__neg_cycles(s->neg[2]);
            m.cache_gen = 99;
            inject(s, 0, 2, TC_NEG_TAG_DOWN, &m);
            check_failed(s, 2, TC_ERR_TRANSPORT, 1, "protocol error");
            break;
        case 2: /* a DOWN from a rank that is not the parent */
            m.type = TC_WIRE_CYCLE;
            m.seq = tc__neg_cycles(s->neg[3]);
            m.cache_gen = 1;
            inject(s, 1, 3, TC_NEG_TAG_DOWN, &m);
            check_failed(s, 3, TC_ERR_TRANSPORT, 1, "unexpected message");
            break;
        case 3: /* an UP from a rank that is not a child */
            m.type = TC_WIRE_UP;
            m.seq = tc__neg_cycles(s->neg[2]);
            m.cache_gen = 1;
            m.nready = 1;
            m.ready = &id0;
            inject(s, 1, 2, TC_NEG_TAG_UP, &m);
            check_failed(s, 2, TC_ERR_TRANSPORT, 1, "unexpected message");
            break;
        case 4: /* REQUESTS to a rank other than 0 */
            m.type = TC_WIRE_REQUESTS;
            inject(s, 3, 2, TC_NEG_TAG_REQ, &m);
            check_failed(s, 2, TC_ERR_TRANSPORT, 1, "unexpected message");
            break;
        case 5: /* a RUN for a name this rank never submitted */
            m.type = TC_WIRE_CYCLE;
            m.seq = tc__neg_cycles(s->neg[1]);
            m.cache_gen = 1;
            m.count = 1;
            m.resps = &ghost;
            inject(s, 0, 1, TC_NEG_TAG_DOWN, &m);
            check_failed(s, 1, TC_ERR_TRANSPORT, 1, "'ghost'");
            break;
        case 6: /* a cached id runs that is not waiting here */
            m.type = TC_WIRE_CYCLE;
            m.seq = tc__neg_cycles(s->neg[1]);
            m.cache_gen = 1;
            m.nready = 1;
            m.ready = &id0;
            inject(s, 0, 1, TC_NEG_TAG_DOWN, &m);
            check_failed(s, 1, TC_ERR_TRANSPORT, 1, "protocol error");
            break;
        case 7: /* an UP from a child that is ahead of rank 0 */
            m.type = TC_WIRE_UP;
            m.seq = tc__neg_cycles(s->neg[0]) + 3;
            m.cache_gen = 1;
            m.nready = 1;
            m.ready = &id0;
            inject(s, 1, 0, TC_NEG_TAG_UP, &m);
            check_failed(s, 0, TC_ERR_TRANSPORT, 1, "protocol error");
            break;
        case 8: /* a failure found outside */
            tc__neg_fail(s->neg[3], TC_ERR_NOMEM, "a transfer failed");
            check_failed(s, 3, TC_ERR_NOMEM, 1, "a transfer failed");
            tc__neg_status(s->neg[3], &text);
            CHECK(strcmp(text, "a transfer failed") == 0);
            break;
        default:
            break;
        }
        sim_free(s);
    }
    /* a failed rank stays quiet: no items, no sends, no answers to pings */
    {
        tc_wire_msg_t ping = {.type = TC_WIRE_REQUESTS, .flags = TC_WIRE_F_SPREAD};
        size_t pongs;
        s = warm4();
        tc__neg_fail(s->neg[2], TC_ERR_TRANSPORT, "gone");
        pongs = s->ntag[TC_NEG_TAG_PONG];
        inject(s, 0, 2, TC_NEG_TAG_PING, &ping);
        CHECK_EQ(s->ntag[TC_NEG_TAG_PONG], pongs);
        check_quiet_after_failure(s, 2);
        sim_free(s);
    }
}

/* ---- 6. lost peers ---------------------------------------------------------------- */

static const spec_t lost_specs[] = {
    {"warm", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}},
    {"x", TC_KIND_ALLGATHER, TC_FLOAT32, TC_SUM, 0, 1, {4, 0}},
};

static tc_neg_params_t lost_params(int size)
{
    tc_neg_params_t p = params(size);
    p.peer_timeout_ns = 10 * SEC;
    p.probe_grace_ns = 1 * SEC;
    return p;
}

static int any_failed(const sim_t *s)
{
    int r;

    for (r = 0; r < s->size; r++) {
        if (tc__neg_state(s->neg[r]) == TC_NEG_FAILED) {
            return 1;
        }
    }
    return 0;
}

/* Rank `dead` stops; `workers` (a bit set) then submit a first-time name.
 * A neighbour of the dead rank must find it lost within half the peer
 * timeout and a few grace periods, and nobody may blame a live rank. */
static void lost_case(int size, int dead, unsigned workers, uint64_t seed)
{
    const uint64_t tick = 100 * MS;
    tc_neg_params_t p = lost_params(size);
    sim_t *s = sim_new(&p, seed);
    uint64_t t_sub, limit;
    char want[64];
    int r, nfailed = 0;

    s->specs = lost_specs;
    s->nspecs = 2;
    for (r = 0; r < size; r++) {
        mkplan(s, r, 0, 0, 0);
    }
    run(s);
    check_settled(s);
    s->now += tick;
    s->frozen[dead] = 1;
    for (r = 0; r < size; r++) {
        if (workers & (1u << r)) {
            CHECK_NE(r, dead);
            mkplan(s, r, 1, 0, 0);
        }
    }
    t_sub = s->now;
    run(s);
    limit = t_sub + p.peer_timeout_ns / 2 + 3 * p.probe_grace_ns + 2 * tick;
    while (!any_failed(s) && s->now < t_sub + 100 * SEC) {
        s->now += tick;
        run(s);
    }
    CHECK_MSG(any_failed(s), "size %d: nobody noticed that rank %d is gone", size, dead);
    CHECK_MSG(s->now <= limit, "size %d: rank %d found lost %.1f s after the submission, want "
              "at most %.1f s", size, dead, (double)(s->now - t_sub) / 1e9,
              (double)(limit - t_sub) / 1e9);
    snprintf(want, sizeof(want), "lost rank %d:", dead);
    for (r = 0; r < size; r++) {
        if (r != dead && tc__neg_state(s->neg[r]) == TC_NEG_FAILED) {
            const char *text;
            CHECK_STATUS(tc__neg_status(s->neg[r], &text), TC_ERR_TRANSPORT);
            CHECK_STR_CONTAINS(text, want);
            if (tc__neg_failed_here(s->neg[r])) { /* the others heard it from that rank */
                CHECK_MSG(is_neighbour(size, r, dead), "rank %d blames rank %d, not a "
                          "neighbour", r, dead);
                nfailed++;
            }
        }
    }
    CHECK_GE(nfailed, 1);
    /* more time changes nothing for the others: no false alarm about a live rank */
    for (r = 0; r < 30; r++) {
        s->now += tick;
        run(s);
    }
    for (r = 0; r < size; r++) {
        const char *text;
        if (r != dead && tc__neg_state(s->neg[r]) == TC_NEG_FAILED) {
            tc__neg_status(s->neg[r], &text);
            CHECK_STR_CONTAINS(text, want);
        }
    }
    sim_free(s);
}

static void test_lost_peers(void)
{
    uint64_t seed;

    for (seed = 0; seed <= 3; seed++) {
        lost_case(4, 2, 1u << 1, seed);            /* inner node; work across the tree */
        lost_case(4, 2, 1u << 3, seed);            /* inner node; work below it */
        lost_case(4, 3, 1u << 1, seed);            /* a leaf, three hops from the work */
        lost_case(4, 1, 1u << 3, seed);            /* a leaf of rank 0 */
        lost_case(4, 0, 1u << 3, seed);            /* the root */
        lost_case(8, 5, 1u << 3, seed);            /* a leaf of an inner node */
        lost_case(8, 4, 1u << 7, seed);            /* an inner node, work two levels down */
        lost_case(8, 6, (1u << 1) | (1u << 2) | (1u << 7), seed);
        lost_case(2, 1, 1u << 0, seed);            /* only rank 0 waits */
    }
    /* everyone alive, one rank slow to submit and one slow to answer (its
     * answers take up to half the grace period): no alarm for ten peer
     * timeouts, then the name runs everywhere */
    for (seed = 0; seed <= 2; seed++) {
        tc_neg_params_t p = lost_params(5);
        sim_t *s = sim_new(&p, seed);
        plan_t *late;
        int t, r;
        s->specs = lost_specs;
        s->nspecs = 2;
        for (r = 0; r < 4; r++) {
            mkplan(s, r, 1, 0, 0);
        }
        for (t = 0; t < 1000; t++) {
            s->now += 100 * MS;
            s->frozen[2] = t % 5 != 0;
            run(s);
            CHECK_MSG(!any_failed(s), "seed %llu: a false alarm at %.1f s",
                      (unsigned long long)seed, (double)(s->now - T0) / 1e9);
        }
        CHECK_GT(s->ntag[TC_NEG_TAG_PING], 0);
        CHECK_GT(s->ntag[TC_NEG_TAG_PONG], 0);
        s->frozen[2] = 0;
        late = mkplan(s, 4, 1, 0, 0);
        run(s);
        check_settled(s);
        check_agreement(s);
        CHECK_EQ(rec_of(s, late)->action, TC_NEG_RUN);
        sim_free(s);
    }
}

/* ---- 7. cycles that overlap -------------------------------------------------------- */

static const spec_t overlap_specs[] = {
    {"o/a", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}},
    {"o/b", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}},
    {"o/c", TC_KIND_ALLGATHER, TC_FLOAT32, TC_SUM, 0, 2, {2, 3}},
    {"o/e", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_AVG, 0, 1, {2, 0}},
    {"o/f", TC_KIND_BROADCAST, TC_UINT8, TC_SUM, -1, 1, {33, 0}},
};
#define NOVERLAP ((int)(sizeof(overlap_specs) / sizeof(overlap_specs[0])))

/* By hand, size 5 (tree 0 -> 1, 2, 4; 2 -> 3): UPs and DOWNs cross, and
 * submissions arrive while both are in flight. */
static void overlap_by_hand(uint64_t seed)
{
    tc_neg_params_t p = params(5);
    sim_t *s = sim_new(&p, 0);
    uint64_t d0;
    size_t items0, ups, u2;
    int r, k;

    s->specs = overlap_specs;
    s->nspecs = NOVERLAP;
    for (r = 0; r < 5; r++) {
        for (k = 0; k < NOVERLAP; k++) {
            mkplan(s, r, k, 0, 0);
        }
    }
    run(s); /* all cached */
    check_settled(s);
    for (r = 0; r < 5; r++) { /* the next round, each rank in its own order */
        static const int order[5][NOVERLAP] = {
            {0, 1, 2, 3, 4}, {0, 3, 1, 4, 2}, {3, 0, 4, 2, 1}, {0, 1, 3, 2, 4}, {4, 3, 0, 1, 2}};
        for (k = 0; k < NOVERLAP; k++) {
            mkplan(s, r, order[r][k], 1, 0);
        }
    }
    d0 = tc__neg_cycles(s->neg[0]);
    items0 = s->nlog[0];
    ups = s->ntag[TC_NEG_TAG_UP];
    submit_next(s, 3); /* o/a */
    submit_next(s, 1); /* o/a */
    step(s, 3);        /* UP 3 -> 2 */
    step(s, 1);        /* UP 1 -> 0 */
    CHECK_EQ(s->ntag[TC_NEG_TAG_UP], ups + 2);
    deliver_chan(s, 3, 2);
    step(s, 2); /* "some of my subtree has o/a": may go now, or wait for something due */
    u2 = s->ntag[TC_NEG_TAG_UP];
    CHECK(u2 == ups + 2 || u2 == ups + 3);
    submit_next(s, 0); /* o/a */
    submit_next(s, 0); /* o/b */
    step(s, 0); /* nothing has reached rank 0: no DOWN */
    CHECK_EQ(tc__neg_cycles(s->neg[0]), d0);
    deliver_chan(s, 1, 0);
    step(s, 0); /* a DOWN answers rank 1 and runs nothing */
    CHECK_EQ(tc__neg_cycles(s->neg[0]), d0 + 1);
    submit_next(s, 2); /* o/e */
    submit_next(s, 4); /* o/f */
    submit_next(s, 1); /* o/e */
    submit_next(s, 3); /* o/b */
    for (r = 1; r < 5; r++) {
        step(s, r); /* only rank 4 has an UP due and may send it */
    }
    CHECK_EQ(s->ntag[TC_NEG_TAG_UP], u2 + 1);
    deliver_chan(s, 2, 0);
    deliver_chan(s, 4, 0);
    step(s, 0); /* one DOWN answers both, while the first is still on its way */
    CHECK_EQ(tc__neg_cycles(s->neg[0]), d0 + 2);
    CHECK_EQ(chan(s, 0, 2)->n, 2);
    CHECK_EQ(s->nlog[0], items0);
    submit_next(s, 0); /* o/c */
    submit_next(s, 4); /* o/e */
    submit_next(s, 2); /* o/a: its whole subtree has it now */
    step(s, 2);
    step(s, 4);
    /* rank 4 waits for a DOWN; rank 2 too if it sent "some" before */
    CHECK_EQ(s->ntag[TC_NEG_TAG_UP], u2 + 1 + (u2 == ups + 2));
    /* and now everything else, in a random order */
    s->rng = (seed * 0x9E3779B97F4A7C15ull) | 1;
    run(s);
    check_settled(s);
    check_agreement(s);
    check_cached_rounds(s);
    sim_free(s);
}

/* Random submissions, deliveries and steps, with shape changes (a
 * mismatch, every rank failing that instance) and caches of every size. */
static void overlap_chaos(int size, uint64_t seed, uint32_t capacity, int pdeliver, int stalls)
{
    enum { ROUNDS = 6 };
    tc_neg_params_t p = params(size);
    sim_t *s;
    int odd[MAX_NAMES][ROUNDS]; /* the rank that submits another shape, or -1 */
    uint32_t cached[MAX_NAMES] = {0};
    int r, k, inst, i, q, order[MAX_NAMES];

    p.cache_capacity = capacity;
    if (stalls) { /* cached names that wait go back to full negotiation at random times */
        p.stall_warn_ns = 1 * SEC;
    }
    s = sim_new(&p, seed);
    s->specs = overlap_specs;
    s->nspecs = NOVERLAP;
    s->pdeliver = pdeliver;
    s->jitter = stalls ? 3 * SEC : 0;
    for (k = 0; k < NOVERLAP; k++) {
        for (inst = 0; inst < ROUNDS; inst++) {
            odd[k][inst] = rnd_below(&s->rng, 5) == 0 ? rnd_below(&s->rng, size) : -1;
        }
    }
    for (r = 0; r < size; r++) {
        for (inst = 0; inst < ROUNDS; inst++) {
            for (i = 0; i < NOVERLAP; i++) {
                order[i] = i;
            }
            shuffle(&s->rng, order, NOVERLAP);
            for (i = 0; i < NOVERLAP; i++) {
                mkplan(s, r, order[i], inst, odd[order[i]][inst] == r ? 1 : 0);
            }
        }
    }
    run(s);
    check_settled(s);
    check_agreement(s);
    /* what each instance became, in the order rank 0 saw them */
    for (inst = 0; inst < ROUNDS; inst++) {
        for (k = 0; k < NOVERLAP; k++) {
            const plan_t *pl = NULL;
            const rec_t *e;
            size_t j;
            for (j = 0; j < s->nplan[0] && pl == NULL; j++) {
                if (s->plan[0][j]->name == k && s->plan[0][j]->inst == inst) {
                    pl = s->plan[0][j];
                }
            }
            CHECK(pl != NULL);
            e = rec_of(s, pl);
            if (odd[k][inst] >= 0) {
                char needle[32];
                snprintf(needle, sizeof(needle), "rank %d has",
                         odd[k][inst] == 0 ? 1 : odd[k][inst]);
                CHECK_MSG(e->action == TC_NEG_FAIL && e->status == TC_ERR_MISMATCH,
                          "size %d seed %llu: '%s' #%d, with rank %d's shape changed, is %s",
                          size, (unsigned long long)seed, pl->namebuf, inst, odd[k][inst],
                          act_name(e->action));
                CHECK_STR_CONTAINS(e->text, "mismatch");
                CHECK_STR_CONTAINS(e->text, needle);
                cached[k] = 0;
            } else if (stalls) { /* from the cache, or evicted and negotiated in full */
                CHECK_MSG(e->action == TC_NEG_RUN ||
                              (e->action == TC_NEG_DONE && spec_eager(s, &overlap_specs[k])),
                          "size %d seed %llu (stalls): '%s' #%d is %s", size,
                          (unsigned long long)seed, pl->namebuf, inst, act_name(e->action));
                if (e->action == TC_NEG_DONE) {
                    uint8_t want[DATA_BYTES];
                    eager_expect(s, &overlap_specs[k], inst, want);
                    CHECK(memcmp(e->result, want, e->result_len) == 0);
                }
            } else if (cached[k] != 0) {
                if (spec_eager(s, &overlap_specs[k])) {
                    uint8_t want[DATA_BYTES];
                    eager_expect(s, &overlap_specs[k], inst, want);
                    CHECK_MSG(e->action == TC_NEG_DONE, "size %d seed %llu: cached '%s' #%d is "
                              "%s", size, (unsigned long long)seed, pl->namebuf, inst,
                              act_name(e->action));
                    CHECK(memcmp(e->result, want, e->result_len) == 0);
                } else {
                    CHECK_MSG(e->action == TC_NEG_RUN && e->cache_ref == cached[k],
                              "size %d seed %llu: cached '%s' #%d is %s with cache_ref %u, want "
                              "%u", size, (unsigned long long)seed, pl->namebuf, inst,
                              act_name(e->action), e->cache_ref, cached[k]);
                }
            } else {
                CHECK_MSG(e->action == TC_NEG_RUN, "size %d seed %llu: '%s' #%d is %s", size,
                          (unsigned long long)seed, pl->namebuf, inst, act_name(e->action));
                if (capacity == 0) {
                    CHECK_EQ(e->cache_ref, 0);
                }
                cached[k] = e->cache_ref;
                if (overlap_specs[k].kind == TC_KIND_ALLGATHER) {
                    CHECK_EQ(e->ndim0, size);
                    for (q = 0; q < size; q++) {
                        CHECK_EQ(e->dim0[q], 2 * (q + 1));
                    }
                }
            }
        }
    }
    sim_free(s);
}

static void test_overlap(void)
{
    static const uint32_t caps[] = {64, 3, 1, 0};
    uint64_t seed;
    size_t c;
    int size;

    for (seed = 1; seed <= 10; seed++) {
        overlap_by_hand(seed);
    }
    for (size = 2; size <= 8; size++) {
        for (seed = 1; seed <= (TEST_TSAN ? 3 : 30); seed++) {
            for (c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
                overlap_chaos(size, seed, caps[c], seed % 3 == 0 ? 5 : seed % 3 == 1 ? 30 : 70,
                              0);
            }
        }
    }
    for (seed = 1; seed <= 4; seed++) {
        overlap_chaos(13, seed, 64, 20, 0);
        overlap_chaos(16, seed, 3, 40, 0);
        overlap_chaos(33, seed, 64, 10, 0);
    }
    overlap_chaos(64, 1, 64, 30, 0);
}

/* The same with a stall inspector that gives up on waiting cached names
 * after one second, and a clock that jumps by up to three. */
static void test_overlap_stalls(void)
{
    uint64_t seed;
    int size;

    for (size = 2; size <= 8; size++) {
        for (seed = 1; seed <= (TEST_TSAN ? 3 : 20); seed++) {
            overlap_chaos(size, seed, seed % 4 == 0 ? 2 : 64, seed % 2 ? 10 : 50, 1);
        }
    }
}

/* ---- 8. the tree -------------------------------------------------------------------- */

static void test_tree(void)
{
    int size, r, j;

    CHECK_EQ(tc__neg_parent(0), -1);
    for (size = 1; size <= 64; size++) {
        int nparented[SIM_MAX] = {0}, maxdepth = 0, log2ceil = 0;
        while ((1 << log2ceil) < size) {
            log2ceil++;
        }
        for (r = 1; r < size; r++) {
            int par = tc__neg_parent(r);
            CHECK_MSG(par >= 0 && par < r, "size %d: rank %d has parent %d", size, r, par);
            nparented[par]++;
        }
        for (r = 0; r < size; r++) {
            int kids[SIM_MAX + 1], n, depth = 0, q, low = r & -r;
            kids[SIM_MAX] = -7;
            n = tc__neg_children(r, size, kids, SIM_MAX);
            CHECK_EQ(kids[SIM_MAX], -7);
            CHECK_MSG(n == nparented[r], "size %d: rank %d lists %d children, %d ranks name it "
                      "their parent", size, r, n, nparented[r]);
            CHECK_LE(n + 1, TC_NEG_MAX_DST);
            for (j = 0; j < n; j++) {
                CHECK_EQ(kids[j], r + (1 << j)); /* r + 2^j, ascending */
                CHECK_EQ(tc__neg_parent(kids[j]), r);
                CHECK(r == 0 || (1 << j) < low);
            }
            for (q = r; q != 0; q = tc__neg_parent(q)) {
                depth++;
                CHECK_LE(depth, size);
            }
            maxdepth = depth > maxdepth ? depth : maxdepth;
        }
        CHECK_MSG(maxdepth <= log2ceil, "size %d: depth %d > ceil(log2 size) %d", size, maxdepth,
                  log2ceil);
    }
    /* fewer slots than children: the count, and nothing written past max */
    {
        int kids[4] = {-1, -1, -1, -1};
        CHECK_EQ(tc__neg_children(0, 64, kids, 2), 6);
        CHECK(kids[0] == 1 && kids[1] == 2 && kids[2] == -1);
        CHECK_EQ(tc__neg_children(16, 64, kids, 4), 4);
        CHECK(kids[0] == 17 && kids[1] == 18 && kids[2] == 20 && kids[3] == 24);
        CHECK_EQ(tc__neg_children(16, 19, kids, 4), 2);
        CHECK_EQ(tc__neg_children(63, 64, kids, 4), 0);
        CHECK_EQ(tc__neg_children(0, 1, kids, 4), 0);
    }
}

/* ---- 9. stalls -------------------------------------------------------------------------- */

static const spec_t stall_specs[] = {
    {"st/c", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}},
    {"st/f", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}},
    {"st/b", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}},
};

/* A simulation that has cached st/c. real_origin: the fake clock starts at
 * the real monotonic time (what the engine passes), else at T0 (what a
 * simulator may pass); the state machine must not care. */
static sim_t *stall_sim(int size, uint64_t warn, uint64_t abort_ns, uint64_t seed,
                        int real_origin)
{
    tc_neg_params_t p = params(size);
    sim_t *s;
    int r;

    p.stall_warn_ns = warn;
    p.stall_abort_ns = abort_ns;
    s = sim_new(&p, seed);
    if (real_origin) {
        s->now = tc__now_ns();
    }
    s->specs = stall_specs;
    s->nspecs = 3;
    for (r = 0; r < size; r++) {
        mkplan(s, r, 0, 0, 0);
    }
    run(s);
    for (r = 0; r < size; r++) { /* every rank submitted it at the same instant */
        const rec_t *e = s->plan[r][0]->done ? rec_of(s, s->plan[r][0]) : NULL;
        CHECK_MSG(e != NULL && e->action == TC_NEG_RUN, "%s clock origin, warm-up: rank %d's "
                  "st/c, submitted by every rank at once, is %s%s%s",
                  real_origin ? "real" : "fake", r, e == NULL ? "still waiting" :
                  act_name(e->action), e != NULL && e->text != NULL ? ": " : "",
                  e != NULL && e->text != NULL ? e->text : "");
    }
    check_settled(s);
    return s;
}

static void check_running(const sim_t *s, const char *when)
{
    int r;

    for (r = 0; r < s->size; r++) {
        const char *text;
        tc_status_t st = tc__neg_status(s->neg[r], &text);
        CHECK_MSG(tc__neg_state(s->neg[r]) == TC_NEG_RUNNING, "%s: rank %d is %s: %d (%s) %s",
                  when, r, state_name(tc__neg_state(s->neg[r])), (int)st, tc_status_string(st),
                  text);
    }
}

/* A cached name some ranks wait for goes back to full negotiation after the
 * first threshold; the late rank's submission then runs everywhere. */
static void stall_evict_case(uint64_t seed, int real_origin)
{
    const uint64_t tick = 250 * MS;
    sim_t *s = stall_sim(4, 5 * SEC, 0, seed, real_origin);
    plan_t *pl[4];
    uint64_t t0, t_evict = 0;
    int r;

    for (r = 0; r < 3; r++) {
        pl[r] = mkplan(s, r, 0, 1, 0);
    }
    run(s);
    t0 = s->now;
    while (t_evict == 0 && s->now < t0 + 20 * SEC) {
        s->now += tick;
        run(s);
        if (s->req_entries[1] > 1) {
            t_evict = s->now;
        }
    }
    CHECK_MSG(t_evict != 0, "a stalled cached name was never dropped");
    CHECK_MSG(t_evict >= t0 + 5 * SEC && t_evict <= t0 + 6 * SEC + 2 * tick,
              "dropped %.2f s after it stalled, want 5 to 6", (double)(t_evict - t0) / 1e9);
    CHECK_EQ(s->req_entries[2], 2);
    for (r = 0; r < 3; r++) {
        CHECK(!pl[r]->done);
    }
    check_running(s, "after the drop");
    pl[3] = mkplan(s, 3, 0, 1, 0);
    run(s);
    check_settled(s);
    check_agreement(s);
    for (r = 0; r < 4; r++) {
        const rec_t *e = rec_of(s, pl[r]);
        CHECK(e->action == TC_NEG_RUN && e->cache_ref > 0);
    }
    sim_free(s);
}

/* A first-time name and a cached one that only ranks 0 and 1 submit fail
 * everywhere with TC_ERR_TIMEOUT stall_abort_ns after they stalled (the
 * cached one counted from when it first stalled, not from when it came back
 * to full negotiation); afterwards both can be submitted again and run. */
static void stall_abort_case(uint64_t seed, int real_origin)
{
    const uint64_t tick = 250 * MS;
    sim_t *s = stall_sim(4, 2 * SEC, 10 * SEC, seed, real_origin);
    const char *origin = real_origin ? "real clock origin" : "fake clock origin";
    plan_t *f[2], *c[2];
    uint64_t t0;
    size_t i;
    int r, nf;

    for (r = 0; r < 2; r++) {
        f[r] = mkplan(s, r, 1, 0, 0);
        c[r] = mkplan(s, r, 0, 1, 0);
    }
    run(s);
    t0 = s->now;
    CHECK_MSG(!f[0]->done && !c[0]->done, "%s: a stalled name failed at once, not %.0f s "
              "after it stalled", origin, (double)s->p.stall_abort_ns / 1e9);
    while (!(f[0]->done && c[0]->done) && s->now < t0 + 30 * SEC) {
        s->now += tick;
        run(s);
        CHECK_MSG(s->now >= t0 + 10 * SEC || (!f[0]->done && !c[0]->done),
                  "%s: a stalled name failed %.2f s after it stalled, want 10", origin,
                  (double)(s->now - t0) / 1e9);
    }
    CHECK_MSG(f[0]->done && c[0]->done, "%s: stalled names never failed (first-time: %s, "
              "cached: %s)", origin, f[0]->done ? "failed" : "waiting",
              c[0]->done ? "failed" : "waiting");
    CHECK_MSG(s->now <= t0 + 11 * SEC + 2 * tick, "%s: the stalled names failed %.2f s after "
              "they stalled, want 10 to 11", origin, (double)(s->now - t0) / 1e9);
    check_running(s, origin);
    check_agreement(s);
    for (r = 0; r < 4; r++) {
        for (i = 0, nf = 0; i < s->nlog[r]; i++) {
            const rec_t *e = &s->log[r][i];
            if (e->action != TC_NEG_FAIL) {
                continue;
            }
            nf++;
            CHECK_EQ(e->status, TC_ERR_TIMEOUT);
            CHECK_STR_CONTAINS(e->text, "stalled for");
            CHECK_STR_CONTAINS(e->text, "submitted by ranks 0-1, not by ranks 2-3");
            CHECK(r < 2 ? e->req != NULL : e->req == NULL);
        }
        CHECK_EQ(nf, 2);
    }
    for (r = 0; r < 4; r++) {
        mkplan(s, r, 1, 1, 0);
        mkplan(s, r, 0, 2, 0);
    }
    run(s);
    check_settled(s);
    check_agreement(s);
    for (r = 0; r < 4; r++) {
        CHECK_EQ(s->log[r][s->nlog[r] - 1].action, TC_NEG_RUN);
        CHECK_EQ(s->log[r][s->nlog[r] - 2].action, TC_NEG_RUN);
    }
    sim_free(s);
}

static void test_stalls(void)
{
    uint64_t seed;
    int real_origin;

    for (real_origin = 1; real_origin >= 0; real_origin--) {
        for (seed = 0; seed <= 2; seed++) {
            stall_evict_case(seed, real_origin);
            stall_abort_case(seed, real_origin);
        }
    }
}

/* The timeout of a first-time name crosses a late rank's submission of it:
 * rank 2's REQUESTS is on its way to rank 0 while the DOWN that fails the
 * name (for ranks 0 and 1, who had submitted it) is on its way to rank 2.
 * Either resolution is consistent: rank 2's submission fails too (a FAIL
 * item for its request, and rank 0 forgets it), or it stays pending (a FAIL
 * item without a request, docs/negotiation.md: "fails ... on every rank that
 * submitted it") and pairs with the next submissions of the others. Either
 * way no rank may see a protocol error, the name submitted again runs on
 * every rank, whoever comes first, and nothing is left waiting. */
static void stall_expiry_crossing(int late_first)
{
    const uint64_t tick = 250 * MS;
    sim_t *s = stall_sim(3, 0, 10 * SEC, 0, 1);
    const char *when = late_first ? "retry, late rank first" : "retry, late rank last";
    plan_t *f[3], *again[3];
    uint64_t t0;
    int r, kept;

    s->frozen[2] = 1;
    f[0] = mkplan(s, 0, 1, 0, 0);
    f[1] = mkplan(s, 1, 1, 0, 0);
    run(s);
    t0 = s->now;
    while (!f[0]->done && s->now < t0 + 30 * SEC) {
        s->now += tick;
        run(s);
    }
    CHECK(f[0]->done && f[1]->done);
    CHECK_EQ(rec_of(s, f[0])->status, TC_ERR_TIMEOUT);
    CHECK_EQ(chan(s, 0, 2)->n, 1); /* the DOWN that fails st/f, not delivered yet */
    s->frozen[2] = 0;
    f[2] = mkplan(s, 2, 1, 0, 0);
    submit_next(s, 2);
    step(s, 2); /* its REQUESTS leaves before the DOWN arrives */
    CHECK_EQ(chan(s, 2, 0)->n, 1);
    deliver_chan(s, 0, 2);
    CHECK_GE(s->nlog[2], 2); /* st/c's warm-up and st/f's FAIL item */
    CHECK_EQ(s->log[2][s->nlog[2] - 1].action, TC_NEG_FAIL);
    CHECK_EQ(s->log[2][s->nlog[2] - 1].status, TC_ERR_TIMEOUT);
    kept = !f[2]->done; /* else it failed with rank 2's request */
    run(s);
    check_running(s, "after the crossing");
    again[0] = mkplan(s, 0, 1, 1, 0);
    again[1] = mkplan(s, 1, 1, 1, 0);
    again[2] = kept ? f[2] : mkplan(s, 2, 1, 1, 0);
    if (late_first && !kept) {
        submit_next(s, 2);
        step(s, 2);
        deliver_chan(s, 2, 0);
        step(s, 0);
    }
    run(s);
    check_running(s, when);
    check_agreement(s);
    for (r = 0; r < 3; r++) {
        CHECK_MSG(rec_of(s, again[r])->action == TC_NEG_RUN, "%s: rank %d's st/f is %s", when,
                  r, act_name(rec_of(s, again[r])->action));
    }
    for (r = 0; r < 3; r++) {
        CHECK_MSG(!tc__neg_busy(s->neg[r]), "%s: rank %d is still busy with nothing submitted "
                  "(rank 2's crossed submission %s)", when, r,
                  kept ? "was kept" : "failed on rank 2");
    }
    check_settled(s);
    sim_free(s);
}

static void test_stall_expiry_crossing_late_last(void)
{
    stall_expiry_crossing(0);
}

static void test_stall_expiry_crossing_late_first(void)
{
    stall_expiry_crossing(1);
}

/* Rank 0 drops, in one DOWN, a cached id the stall inspector gave up on and
 * ids children found stale, noticed out of id order: ranks 1 and 2 each
 * submit a cached name with another shape, rank 0 waits for st/b. */
static void test_stall_evict_with_stale(void)
{
    tc_neg_params_t p = params(3);
    sim_t *s;
    plan_t *b0, *b1, *c2, *c0, *c1, *b2;
    int r;

    p.stall_warn_ns = 5 * SEC;
    s = sim_new(&p, 0);
    s->specs = stall_specs;
    s->nspecs = 3;
    for (r = 0; r < 3; r++) { /* st/c gets cache id 0 */
        mkplan(s, r, 0, 0, 0);
    }
    run(s);
    for (r = 0; r < 3; r++) { /* st/b gets cache id 1 */
        mkplan(s, r, 2, 0, 0);
    }
    run(s);
    check_settled(s);
    CHECK_EQ(s->log[0][0].cache_ref, 1);
    CHECK_EQ(s->log[0][1].cache_ref, 2);
    b0 = mkplan(s, 0, 2, 1, 0); /* rank 0 waits for st/b */
    run(s);
    b1 = mkplan(s, 1, 2, 1, 1); /* st/b, [65]: stale */
    submit_next(s, 1);
    step(s, 1);
    c2 = mkplan(s, 2, 0, 1, 1); /* st/c, [65]: stale */
    submit_next(s, 2);
    step(s, 2);
    s->now += 6 * SEC;
    step(s, 0);            /* the inspector gives up on id 1 */
    deliver_chan(s, 1, 0); /* id 1 stale */
    deliver_chan(s, 2, 0); /* id 0 stale */
    step(s, 0);            /* one DOWN drops ids 0 and 1 */
    check_running(s, "rank 0 drops a stalled id and stale ones at once");
    c0 = mkplan(s, 0, 0, 1, 0);
    c1 = mkplan(s, 1, 0, 1, 0);
    b2 = mkplan(s, 2, 2, 1, 0);
    run(s);
    check_settled(s);
    check_agreement(s);
    CHECK(rec_of(s, b0)->action == TC_NEG_FAIL && rec_of(s, b0)->status == TC_ERR_MISMATCH);
    CHECK_STR_CONTAINS(rec_of(s, b1)->text, "rank 1 has [65]");
    CHECK_STR_CONTAINS(rec_of(s, b2)->text, "rank 1 has [65]");
    CHECK_STR_CONTAINS(rec_of(s, c2)->text, "rank 2 has [65]");
    CHECK_STR_CONTAINS(rec_of(s, c0)->text, "rank 2 has [65]");
    CHECK_EQ(rec_of(s, c1)->status, TC_ERR_MISMATCH);
    sim_free(s);
}

/* ---- 10. submissions the caller must not make, bad parameters ---------------------------- */

static void test_submit_errors(void)
{
    static const spec_t one[] = {{"dup", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}}};
    tc_neg_params_t p = params(2);
    tc_neg_t *n = NULL;
    sim_t *s;
    plan_t *a, *b;
    int k;

    p.size = 0;
    CHECK_STATUS(tc__neg_create(&p, &n), TC_ERR_ARG);
    p.size = 2;
    p.rank = 2;
    CHECK_STATUS(tc__neg_create(&p, &n), TC_ERR_ARG);
    p.rank = -1;
    CHECK_STATUS(tc__neg_create(&p, &n), TC_ERR_ARG);
    CHECK(n == NULL);
    tc__neg_destroy(NULL);

    /* a name already pending here: TC_ERR_ARG, first-time (once it went to
     * rank 0, and before: checked last) and cached alike; nothing changes */
    p = params(2);
    s = sim_new(&p, 0);
    s->specs = one;
    s->nspecs = 1;
    for (k = 0; k < 3; k++) {
        a = mkplan(s, 1, 0, k, 0);
        submit_next(s, 1);
        if (k > 0) { /* cached */
            CHECK_STATUS(tc__neg_submit(s->neg[1], &a->w, a, a->data.bytes), TC_ERR_ARG);
        }
        step(s, 1);
        CHECK_STATUS(tc__neg_submit(s->neg[1], &a->w, a, a->data.bytes), TC_ERR_ARG);
        if (k == 2) { /* cached, with other parameters */
            tc_wire_request_t w = a->w;
            w.shape[0]++;
            CHECK_STATUS(tc__neg_submit(s->neg[1], &w, a, a->data.bytes), TC_ERR_ARG);
        }
        b = mkplan(s, 0, 0, k, 0);
        run(s);
        CHECK(a->done && b->done);
        CHECK_EQ(rec_of(s, a)->action, TC_NEG_RUN);
        CHECK_EQ(rec_of(s, a)->cache_ref, 1);
    }
    check_settled(s);
    check_agreement(s);
    /* first-time, submitted and not yet stepped */
    a = mkplan(s, 1, 0, 3, 0);
    a->namebuf[0] = 'D'; /* "Dup": a name rank 1 never had */
    submit_next(s, 1);
    CHECK_STATUS(tc__neg_submit(s->neg[1], &a->w, a, a->data.bytes), TC_ERR_ARG);
    sim_free(s);
}

/* ---- 11. item cycles ------------------------------------------------------------------ */

/* neg.h: an item's cycle is "the DOWN message that decided it (0, 1, ...)",
 * and tc__neg_cycles counts the DOWN messages processed: after the first
 * DOWN, 1 processed, and its items are of DOWN 0. */
static void test_item_cycles(void)
{
    static const spec_t one[] = {{"k", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}}};
    tc_neg_params_t p = params(3);
    sim_t *s = sim_new(&p, 0);
    int r, k;

    s->specs = one;
    s->nspecs = 1;
    for (k = 0; k < 3; k++) {
        for (r = 0; r < 3; r++) {
            mkplan(s, r, 0, k, 0);
        }
        run(s);
        for (r = 0; r < 3; r++) {
            CHECK_EQ(tc__neg_cycles(s->neg[r]), k + 1);
            CHECK_EQ(s->nlog[r], k + 1);
            CHECK_MSG(s->log[r][k].cycle == (uint64_t)k, "rank %d: the item of DOWN %d says "
                      "cycle %llu", r, k, (unsigned long long)s->log[r][k].cycle);
        }
    }
    check_settled(s);
    sim_free(s);
}

typedef struct {
    const char *name;
    void (*fn)(void);
} test_case_t;

static const test_case_t cases[] = {
    {"tree", test_tree},
    {"order_agreement", test_order_agreement},
    {"eager", test_eager},
    {"stale", test_stale},
    {"shutdown", test_shutdown},
    {"aborts", test_aborts},
    {"lost_peers", test_lost_peers},
    {"overlap", test_overlap},
    {"overlap_stalls", test_overlap_stalls},
    {"submit_errors", test_submit_errors},
    {"stalls", test_stalls},
    {"stall_expiry_crossing_late_last", test_stall_expiry_crossing_late_last},
    {"stall_expiry_crossing_late_first", test_stall_expiry_crossing_late_first},
    {"stall_evict_with_stale", test_stall_evict_with_stale},
    {"item_cycles", test_item_cycles},
};

/* Each case runs in a child process, so that one failure (which aborts)
 * does not hide the others; with arguments, the named cases run here. */
int main(int argc, char **argv)
{
    const size_t ncases = sizeof(cases) / sizeof(cases[0]);
    size_t i;
    int a, failed = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (getenv("TCOLL_LOG_LEVEL") == NULL) { /* the stall tests warn on purpose */
        atomic_store(&tc__log_level, TC_LOG_ERROR);
    }
    if (argc > 1) {
        for (a = 1; a < argc; a++) {
            for (i = 0; i < ncases && strcmp(cases[i].name, argv[a]) != 0; i++) {
            }
            CHECK_MSG(i < ncases, "no case named %s", argv[a]);
            cases[i].fn();
            printf("test_neg: %s ok\n", cases[i].name);
        }
        return 0;
    }
    for (i = 0; i < ncases; i++) {
        int wst = 0;
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            cases[i].fn();
            exit(0); /* not _exit: LeakSanitizer checks at exit (stdout is empty at fork) */
        }
        CHECK_EQ(waitpid(pid, &wst, 0), pid);
        if (WIFEXITED(wst) && WEXITSTATUS(wst) == 0) {
            printf("test_neg: %s ok\n", cases[i].name);
        } else {
            printf("test_neg: %s FAILED\n", cases[i].name);
            failed++;
        }
    }
    if (failed > 0) {
        printf("test_neg: %d of %zu cases failed\n", failed, ncases);
        return 1;
    }
    printf("test_neg: ok\n");
    return 0;
}
