/*
 * negotiate.c - the engine's side of the negotiation: it feeds the pure
 * state machine (neg.h) this rank's submissions, the control messages that
 * arrive and the time, posts the messages it asks for, and runs what it
 * decides, in its order. The protocol itself is in docs/negotiation.md and
 * src/neg; nothing protocol-specific belongs here.
 *
 * Order matters in two places: the messages of a step (an extra rank's
 * result above all) are posted before its collectives run, since those wait
 * for every rank, including the ones that still need those messages; and
 * the executor gets one cycle's list at a time (see run_items).
 * Must never touch a request after completing it.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/algo.h"
#include "engine/engine_internal.h"
#include "kind/kind.h"
#include "util/log.h"
#include "util/timeline.h"
#include "util/ranks.h"

/* How long a probed engine has to answer (the negotiation's probes and the
 * transfer probe alike): an idle engine looks for messages every
 * TCOLL_IDLE_POLL_MS, so twice that, and at least 2 s. */
tc_status_t tc__engine_neg_init(engine_t *e)
{
    tc_neg_params_t p = {0};

    p.rank = e->rank;
    p.size = e->size;
    p.cache_capacity = (uint32_t)e->cfg->cache_capacity;
    p.eager_bytes = (uint32_t)e->cfg->eager_bytes;
    p.deterministic = e->cfg->deterministic;
    p.node = e->x.mpi.node_of;
    p.stall_warn_ns = (uint64_t)e->cfg->stall_warn_s * 1000000000ull;
    p.stall_abort_ns = (uint64_t)e->cfg->stall_abort_s * 1000000000ull;
    p.peer_timeout_ns = (uint64_t)e->cfg->peer_timeout_s * 1000000000ull;
    p.probe_grace_ns = eng_probe_grace_ns(e->cfg);
    return tc__neg_create(&p, &e->nego.neg);
}

void tc__engine_neg_destroy(engine_t *e)
{
    tc__neg_destroy(e->nego.neg);
    free(e->nego.resps);
    free(e->nego.reqs);
    memset(&e->nego, 0, sizeof(e->nego));
}

int tc__engine_neg_busy(const engine_t *e)
{
    return e->nego.neg != NULL && tc__neg_busy(e->nego.neg);
}

int tc__engine_neg_shutdown_seen(const engine_t *e)
{
    return e->nego.shutdown_seen;
}

/* Posts the sends the state machine asked for since the last call. */
static void post_sends(engine_t *e)
{
    size_t n, i;
    tc_neg_send_t *s = tc__neg_sends(e->nego.neg, &n);

    for (i = e->nego.posted; i < n && !eng_broken(); i++) {
        tc__ctrl_send_buf(e, &s[i].buf, s[i].dst, s[i].ndst, s[i].tag);
    }
    e->nego.posted = n;
}

/* After the state machine stopped this rank: the engine stops too. */
static void check_state(engine_t *e)
{
    const char *text;
    tc_status_t st = tc__neg_status(e->nego.neg, &text);

    if (tc__neg_state(e->nego.neg) == TC_NEG_FAILED && eng_running()) {
        tc__engine_fail(e, st, "%s", text);
    }
}

static void to_wire(const tc_request_t *req, tc_wire_request_t *w)
{
    memset(w, 0, sizeof(*w));
    w->name = req->name;
    w->name_len = req->name_len;
    w->kind = (uint8_t)req->kind;
    w->dtype = (uint8_t)req->dtype;
    w->op = (uint8_t)req->op;
    w->root = req->root;
    w->ndim = (uint8_t)req->ndim;
    memcpy(w->shape, req->shape, sizeof(w->shape));
    w->scaled = req->prescale != 1.0 || req->postscale != 1.0;
    w->prescale = req->prescale;
    w->postscale = req->postscale;
    w->group_size = req->group_size;
    w->group_index = req->group_index;
    w->group_key = req->group_key;
    w->group_key_len = req->group_key_len;
    w->pset = req->pset;
    w->nranks = (uint32_t)req->nset_ranks;
    w->ranks = req->set_ranks;
    w->memory = req->cuda.on ? TC_WIRE_MEM_CUDA : TC_WIRE_MEM_HOST;
}

/* Hands what application threads queued to the state machine. */
int tc__engine_neg_take_submissions(engine_t *e)
{
    tc_request_t *head, *r, *next;
    int local_shutdown;
    size_t n = tc__queue_take(ENG_TAKE_MAX, &head, &local_shutdown);

    for (r = head; r != NULL && eng_running(); r = next) {
        tc_wire_request_t w;
        tc_status_t st;
        next = r->next;
        r->next = NULL;
        to_wire(r, &w);
        st = tc__neg_submit(e->nego.neg, &w, r, r->send, r->recv);
        if (st != TC_OK) {
            tc__engine_fail(e, st,
                            st == TC_ERR_NOMEM ? "out of memory negotiating tensor '%s'"
                                               : "tensor '%s' is pending twice (internal error)",
                            r->name);
        }
    }
    if (local_shutdown && !e->nego.shutdown_seen) {
        e->nego.shutdown_seen = 1;
        e->life.shutdown_t0 = tc__now_ns();
        tc__neg_shutdown(e->nego.neg);
    }
    e->nego.took = n > 0;
    return n > 0 || local_shutdown;
}

/* Hands the state machine the control messages of tag that are there; for
 * the cycle tag, up to the first that completes a cycle, whose collectives
 * (an eager result above all) then run before the next probe of MPI. */
static int receive_tag(engine_t *e, int tag, uint64_t now)
{
    tc_wire_msg_t msg;
    int src, got = 0;
    size_t nitems, nreqs = 0;

    while (!eng_broken() && nreqs < ENG_TAKE_MAX &&
           tc__ctrl_recv(e, MPI_ANY_SOURCE, tag, &msg, &src) == 1) {
        uint32_t i;
        for (i = 0; tag == TC_NEG_TAG_REQ && i < msg.count && tc__tl_active(); i++) {
            tc__engine_tl_submitted(src, &msg.reqs[i]);
        }
        for (i = 0; tag == TC_NEG_TAG_CYCLE && i < msg.nready && tc__tl_active(); i++) {
            uint32_t len;
            const char *name = tc__neg_cached_name(e->nego.neg, msg.ready[i], &len);
            if (name != NULL) {
                tc__engine_tl_ready(src, name, len);
            }
        }
        nreqs += tag == TC_NEG_TAG_REQ ? msg.count : 0;
        tc__neg_receive(e->nego.neg, src, tag, &msg, now);
        tc__wire_msg_free(&msg);
        got = 1;
        tc__neg_items(e->nego.neg, &nitems);
        if (tag == TC_NEG_TAG_CYCLE && nitems > 0) {
            break; /* a cycle completed: run it first, read on in the next step */
        }
    }
    return got;
}

/* Liveness probes (over a tree of the ranks): answered even inside a transfer
 * (failure.c calls this from the transport's wait). */
void tc__engine_neg_answer_probes(engine_t *e)
{
    uint64_t now = tc__now_ns();

    if (e->nego.neg == NULL) {
        return;
    }
    receive_tag(e, TC_NEG_TAG_PING, now);
    receive_tag(e, TC_NEG_TAG_PONG, now);
    post_sends(e);
}

/* Completes an eager allreduce whose result came with the decision. */
static void finish_eager(engine_t *e, const tc_neg_item_t *it)
{
    tc_request_t *req = it->req;

    if (it->result != req->recv) {
        memcpy(req->recv, it->result, it->result_len);
    }
    tc__request_set_output(req, req->recv, -1);
    req->label = TC_ALGO_EAGER_NAME;
    if (tc__tl_active()) {
        tc__exec_tl_tensor(&e->x, req, TC_ALGO_EAGER_NAME, e->x.run.ready_ns, tc__now_ns(), 1,
                           TC_OK);
    }
    tc__queue_finish(req, TC_OK, NULL);
}

/* Hands reqs[0..k) with their responses to the executor. A collective that
 * fails stops the engine (first, so that later submissions already fail),
 * then its requests complete with the failure. */
static void run_list(engine_t *e, uint32_t k)
{
    char msg[ENG_MSG_MAX];
    uint32_t failed;
    tc_status_t st;

    if (k == 0 || !eng_running()) {
        return;
    }
    st = tc__exec_run(&e->x, e->nego.resps, e->nego.reqs, k, &failed, msg, sizeof(msg));
    if (st != TC_OK) {
        tc__engine_fail(e, st, "%s; tcoll stops on this rank", msg);
        tc__exec_fail_rest(&e->x, e->nego.resps, e->nego.reqs, k, failed, st, msg);
    }
}

/* Runs the items in order: eager results complete at once; the rest go to
 * the executor as one list per cycle (the same on every rank, so fusion
 * groups agree). */
static void run_items(engine_t *e)
{
    size_t n, i;
    uint32_t k = 0;
    uint64_t list_cycle = 0;
    tc_neg_item_t *items = tc__neg_items(e->nego.neg, &n);

    if (n == 0) {
        return;
    }
    if (n > e->nego.cap) {
        tc_wire_response_t *r = realloc(e->nego.resps, n * sizeof(*r));
        tc_request_t **q = r != NULL ? realloc(e->nego.reqs, n * sizeof(*q)) : NULL;
        if (r != NULL) {
            e->nego.resps = r;
        }
        if (q == NULL) {
            tc__engine_fail(e, TC_ERR_NOMEM, "out of memory running %zu collectives", n);
            return;
        }
        e->nego.reqs = q;
        e->nego.cap = n;
    }
    for (i = 0; i < n && eng_running(); i++) {
        if (k > 0 && items[i].cycle != list_cycle) {
            /* one cycle's list at a time: how many cycles one step completes
             * differs between ranks, the fusion groups must not */
            e->x.run.cycle = list_cycle;
            run_list(e, k);
            k = 0;
        }
        e->x.run.cycle = list_cycle = items[i].cycle;
        if (items[i].action == TC_NEG_DONE) {
            finish_eager(e, &items[i]);
            continue;
        }
        e->nego.resps[k] = items[i].resp;
        if (items[i].action == TC_NEG_FAIL) {
            e->nego.resps[k].rtype = TC_WIRE_ERROR;
        }
        e->nego.reqs[k++] = items[i].req;
    }
    run_list(e, k);
}

/* Rank 0: tells the small-message path which joins the negotiation took
 * (exec/fast.c: a joined rank contributes there only after that), when
 * there are new ones. */
static void publish_joins(engine_t *e)
{
    uint64_t total = tc__neg_joins_taken(e->nego.neg, -1);
    int r;

    if (total == e->nego.joins_published) {
        return;
    }
    e->nego.joins_published = total;
    for (r = 0; r < e->size; r++) {
        tc__fast_joins_taken(&e->x, r, tc__neg_joins_taken(e->nego.neg, r));
    }
}

/* One negotiation step: messages in, the state machine's step, its messages
 * out, then what it decided. Returns whether anything happened.
 * New submissions are stepped on first, so that the part they start goes
 * out before this rank merges the parts waiting for it: the partners wait
 * for that part, not for this rank's merge. Liveness probes are looked for
 * at most every ENG_POLL_NS: they have seconds to be answered, and every
 * probe of an empty tag costs a turn of MPI's progress engine on the path
 * of every cycle. */
int tc__engine_neg_step(engine_t *e)
{
    tc_neg_t *neg = e->nego.neg;
    uint64_t now = tc__now_ns();
    int progress = 0;
    size_t nitems;

    if (e->nego.took) {
        e->nego.took = 0;
        progress |= tc__neg_step(neg, now);
        post_sends(e);
    }
    if (e->rank == 0) {
        progress |= receive_tag(e, TC_NEG_TAG_REQ, now);
    }
    progress |= receive_tag(e, TC_NEG_TAG_CYCLE, now);
    if (now >= e->nego.next_probe_ns) {
        e->nego.next_probe_ns = now + ENG_POLL_NS;
        progress |= receive_tag(e, TC_NEG_TAG_PING, now);
        progress |= receive_tag(e, TC_NEG_TAG_PONG, now);
    }
    progress |= tc__neg_step(neg, now);
    post_sends(e);
    if (e->rank == 0) {
        publish_joins(e);
    }
    tc__neg_items(neg, &nitems);
    e->x.run.ready_ns = now; /* what runs now was decided by what arrived now */
    run_items(e);
    tc__neg_clear(neg);
    e->nego.posted = 0;
    check_state(e);
    if ((tc__neg_state(neg) == TC_NEG_DRAINING || tc__neg_state(neg) == TC_NEG_DONE_OK) &&
        eng_running()) { /* TERMINATE processed, maybe every goodbye too */
        const char *text;
        e->life.status = tc__neg_status(neg, &text);
        snprintf(e->life.msg, sizeof(e->life.msg), "%s", text);
        tc__life_enter(e, ENG_LIFE_TERMINATING);
    }
    return progress || nitems > 0;
}
