/*
 * cycle.c - the negotiation protocol: how the ranks agree on what runs, in
 * which order. Everything protocol-specific is here, so that it can be
 * replaced as one unit; the rest of the engine calls the tc__cycle_*
 * functions of engine_internal.h and gets, per completed cycle, one ordered
 * list of responses to run (tc__exec_run), the same on every rank.
 *
 * The engine thread negotiates over the control communicator in numbered
 * *cycles*: in each, every rank sends one CYCLE message to every other rank,
 * and a cycle is complete on a rank when it has everyone's.
 *
 *   first time a name is seen (or after its cache entry was dropped):
 *     worker REQUESTS{submissions} ---tag 1---> rank 0's message table
 *     rank 0's next CYCLE carries its decisions: RUN (with a cache id) or ERROR
 *   a cached name submitted again with the same parameters:
 *     this rank lists its id as ready in its next CYCLE; it runs in the cycle
 *     in which every rank lists it, without waiting on rank 0's decision
 *   a cached name submitted with other parameters:
 *     this rank lists its id as stale; every rank drops the entry in that
 *     cycle and negotiates its submission of the name in full again, so that
 *     rank 0 reports the disagreement (TC_ERR_MISMATCH) or files it anew
 *
 * A completed cycle is processed the same way on every rank: drop the stale
 * entries, then run rank 0's responses in order (filing the cached ones),
 * then the ids every rank listed as ready, in ascending order. So every rank
 * runs the same collectives in the same order. A rank starts a cycle when it
 * has something new to say (a new cache-path submission; rank 0: a decision
 * or a shutdown) and joins one as soon as it sees another rank's message for
 * it; with nothing pending nobody sends anything. A rank cannot start cycle
 * c+1 before it has completed c, so messages of two consecutive cycles are
 * told apart by the tag's parity. Every CYCLE also carries the sender's cache
 * generation (entries filed + dropped): a difference is a protocol error
 * rather than a silent wrong result.
 *
 * Shutdown: a rank's tc_shutdown sends REQUESTS with the SHUTDOWN flag (rank 0
 * decides directly). Rank 0's next CYCLE carries TERMINATE; after that cycle
 * (whose collectives still run) the engine stops (lifecycle.c: each rank fails
 * what is left, replies BYE, and rank 0 drains control messages until it has
 * every BYE, so no message is left unmatched when the communicators are
 * freed). Any message out of protocol stops the engine with TC_ERR_TRANSPORT.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "util/backoff.h"
#include "util/log.h"
#include "util/timeline.h"

/* ------------------------------------------------------------------------ */
/* State                                                                     */
/* ------------------------------------------------------------------------ */

tc_status_t tc__cycle_init(engine_t *e)
{
    eng_cycle_t *c = &e->cycle;

    c->shutdown_from = -1;
    c->done_ns = tc__now_ns();
    c->have = calloc((size_t)e->size, 1);
    c->msgs = calloc((size_t)e->size, sizeof(*c->msgs));
    if (c->have == NULL || c->msgs == NULL) {
        return TC_ERR_NOMEM;
    }
    if (e->rank == 0) {
        c->ready = calloc((size_t)e->size, sizeof(*c->ready));
        if (c->ready == NULL || tc__coord_create(e->size, &e->coord) != TC_OK) {
            return TC_ERR_NOMEM;
        }
    }
    return TC_OK;
}

/* Frees what tc__cycle_init and the cycles allocated (not the requests). */
void tc__cycle_destroy(engine_t *e)
{
    eng_cycle_t *c = &e->cycle;
    int q;

    tc__coord_batch_free(&c->batch);
    tc__coord_destroy(e->coord);
    e->coord = NULL;
    free(c->my_resps);
    for (q = 0; c->msgs != NULL && q < e->size; q++) {
        tc__wire_msg_free(&c->msgs[q]);
    }
    free(c->msgs);
    free(c->have);
    free(c->my_ready);
    free(c->my_stale);
    free(c->pend);
    free(c->ready);
    memset(c, 0, sizeof(*c));
}

/* This rank's own cycle work: a cycle under way, or submissions to
 * negotiate in full again. */
int tc__cycle_busy(const engine_t *e)
{
    return e->cycle.contributed || e->cycle.resend != NULL;
}

/* A shutdown is under way: this rank asked for it, or (rank 0) some rank did. */
int tc__cycle_shutdown_seen(const engine_t *e)
{
    return e->cycle.shutdown_sent || e->cycle.shutdown_from >= 0;
}

/* Our message for the cycle is out and some ranks' are not in: since when. */
int tc__cycle_waiting(const engine_t *e, uint64_t *since_p)
{
    const eng_cycle_t *c = &e->cycle;

    if (!c->contributed || c->ngot >= e->size - 1) {
        return 0;
    }
    *since_p = c->t0;
    return 1;
}

/* Whether rank's message for the cycle under way has arrived. */
int tc__cycle_heard(const engine_t *e, int rank)
{
    return e->cycle.have[rank] != 0;
}

/* Every silent rank still answers: wait for them again from now. */
void tc__cycle_wait_again(engine_t *e)
{
    e->cycle.t0 = tc__now_ns();
}

/* Waiting, with no cycle for after_ns: a peer may have died while idle. An
 * empty cycle finds out: a live engine joins it within TCOLL_IDLE_POLL_MS, a
 * dead one never sends its message (see tc__fail_check_peers). No message is
 * sent while this rank has nothing in flight. */
void tc__cycle_probe_idle(engine_t *e, uint64_t now, uint64_t after_ns)
{
    eng_cycle_t *c = &e->cycle;

    if (!c->contributed && now - c->done_ns > after_ns) {
        if (tc__queue_inflight() > 0) {
            c->dirty = 1;
        }
        c->done_ns = now;
    }
}

/* ------------------------------------------------------------------------ */
/* Submissions                                                               */
/* ------------------------------------------------------------------------ */

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
}

/* Rank 0: enters rank's submission in the message table; a protocol
 * violation or running out of memory stops the engine. */
static void coord_add(engine_t *e, int rank, const tc_wire_request_t *w)
{
    char err[512];
    tc_status_t st = tc__coord_add(e->coord, rank, w, err, sizeof(err));

    if (st != TC_OK) {
        tc__engine_fail(e, st == TC_ERR_NOMEM ? TC_ERR_NOMEM : TC_ERR_TRANSPORT,
                        "rank 0's message table: %s", st == TC_ERR_NOMEM ? "out of memory" : err);
    }
}

/* Sends this rank's first-time submissions (and a shutdown request) to rank 0,
 * or, on rank 0, enters them in the message table. */
static void negotiate_in_full(engine_t *e, tc_request_t *head, size_t n, int local_shutdown)
{
    eng_cycle_t *c = &e->cycle;
    tc_wire_msg_t out = {0};
    tc_request_t *r;
    size_t i = 0;

    if (e->rank == 0) {
        for (r = head; r != NULL && eng_running(); r = r->next) {
            tc_wire_request_t w;
            to_wire(r, &w);
            coord_add(e, 0, &w);
        }
        if (local_shutdown && c->shutdown_from < 0) {
            c->shutdown_from = 0;
        }
        return;
    }
    if (n == 0 && (!local_shutdown || c->shutdown_sent)) {
        return;
    }
    out.type = TC_WIRE_REQUESTS;
    out.reqs = n > 0 ? calloc(n, sizeof(*out.reqs)) : NULL;
    if (n > 0 && out.reqs == NULL) {
        tc__engine_fail(e, TC_ERR_NOMEM, "out of memory sending submissions");
        return;
    }
    for (r = head; r != NULL; r = r->next) {
        to_wire(r, &out.reqs[i++]);
    }
    out.count = (uint32_t)n;
    if (local_shutdown && !c->shutdown_sent) {
        out.flags = TC_WIRE_F_SHUTDOWN;
        c->shutdown_sent = 1;
    }
    tc__ctrl_send(e, &out, 0, 0, -1, ENG_TAG_REQ);
    free(out.reqs);
}

static int pend_add(engine_t *e, uint32_t id)
{
    eng_cycle_t *c = &e->cycle;

    if (c->npend == c->cappend) {
        uint32_t cap = c->cappend < 64 ? 64 : c->cappend * 2;
        uint32_t *p = realloc(c->pend, (size_t)cap * sizeof(*p));
        if (p == NULL) {
            return -1;
        }
        c->pend = p;
        c->cappend = cap;
    }
    c->pend[c->npend++] = id;
    return 0;
}

/* Takes new submissions: a cached name waits for its id to be ready on every
 * rank (or, with other parameters, marks the entry stale); anything else, and
 * what the last cycle dropped from the cache, is negotiated in full. */
int tc__cycle_take_submissions(engine_t *e)
{
    eng_cycle_t *c = &e->cycle;
    tc_request_t *head, *r, *next, *full = NULL, **tail = &full;
    int local_shutdown;
    size_t nnew = tc__queue_take(&head, &local_shutdown), nfull = 0;

    if (local_shutdown && e->life.shutdown_t0 == 0) {
        e->life.shutdown_t0 = tc__now_ns();
    }
    for (r = c->resend; r != NULL; r = next) { /* dropped entries first: they are older */
        next = r->next;
        *tail = r;
        tail = &r->next;
        nfull++;
    }
    c->resend = NULL;
    for (r = head; r != NULL; r = next) {
        tc_cache_entry_t *ce = tc__cache_find(&e->cache, r->name, r->name_len);
        next = r->next;
        r->next = NULL;
        if (ce != NULL && ce->pending == NULL && pend_add(e, ce->id) == 0) {
            tc_wire_request_t w;
            to_wire(r, &w);
            ce->pending = r;
            ce->stale = !tc__cache_matches(ce, &w);
            c->dirty = 1;
            continue;
        }
        if (ce != NULL && ce->pending == NULL) {
            tc__engine_fail(e, TC_ERR_NOMEM, "out of memory tracking cached submissions");
        } else if (ce != NULL) {
            tc__engine_fail(e, TC_ERR_TRANSPORT, "tensor '%s' is pending twice (internal error)",
                            r->name);
        }
        *tail = r;
        tail = &r->next;
        nfull++;
    }
    negotiate_in_full(e, full, nfull, local_shutdown);
    return nnew > 0 || nfull > 0;
}

/* Rank 0: reads the workers' REQUESTS into the message table. */
int tc__cycle_receive_requests(engine_t *e)
{
    eng_cycle_t *c = &e->cycle;
    int progress = 0, src, got;
    tc_wire_msg_t msg;

    while (eng_running() &&
           (got = tc__ctrl_recv(e, MPI_ANY_SOURCE, ENG_TAG_REQ, &msg, &src)) == 1) {
        uint32_t i;
        progress = 1;
        if (msg.type == TC_WIRE_BYE) {
            /* Expected once our TERMINATE is out (that rank may complete the
             * cycle before we do); otherwise it stopped after a local failure. */
            e->life.bye_seen[src] = 1;
            if (!c->term_sent) {
                tc__engine_fail(e, TC_ERR_TRANSPORT, "rank %d stopped after a failure", src);
            }
        } else if (msg.type != TC_WIRE_REQUESTS) {
            tc__engine_fail(e, TC_ERR_TRANSPORT,
                            "unexpected control message type %d from rank %d", msg.type, src);
        }
        for (i = 0; i < msg.count && eng_running(); i++) {
            if (tc__tl_active()) {
                tc__engine_tl_submitted(src, &msg.reqs[i]);
            }
            coord_add(e, src, &msg.reqs[i]);
        }
        if ((msg.flags & TC_WIRE_F_SHUTDOWN) && c->shutdown_from < 0) {
            c->shutdown_from = src;
        }
        tc__wire_msg_free(&msg);
    }
    return progress;
}

/* ------------------------------------------------------------------------ */
/* Cycles                                                                    */
/* ------------------------------------------------------------------------ */

/* Whether rank 0 has something to announce: a decision or the end. */
static int coord_has_news(const engine_t *e)
{
    return e->rank == 0 && (e->cycle.shutdown_from >= 0 || e->stall.ntimeouts > 0 ||
                            (e->coord != NULL && tc__coord_nready(e->coord) > 0));
}

/* Sends this rank's message for cycle seq to every other rank. */
static void contribute(engine_t *e)
{
    eng_cycle_t *c = &e->cycle;
    tc_wire_msg_t out = {0};
    uint32_t i, nr = 0, ns = 0;

    c->my_ready = malloc(((size_t)c->npend + 1) * sizeof(uint32_t));
    c->my_stale = malloc(((size_t)c->npend + 1) * sizeof(uint32_t));
    if (c->my_ready == NULL || c->my_stale == NULL) {
        tc__engine_fail(e, TC_ERR_NOMEM, "out of memory starting a negotiation cycle");
        return;
    }
    for (i = 0; i < c->npend; i++) {
        const tc_cache_entry_t *ce = tc__cache_get(&e->cache, c->pend[i]);
        if (ce->stale) {
            c->my_stale[ns++] = ce->id;
        } else {
            c->my_ready[nr++] = ce->id;
        }
    }
    qsort(c->my_ready, nr, sizeof(uint32_t), eng_cmp_u32);
    qsort(c->my_stale, ns, sizeof(uint32_t), eng_cmp_u32);
    c->nmy_ready = nr;
    c->nmy_stale = ns;
    tc__eager_attach(e, &e->cache, c->my_ready, c->nmy_ready);
    out.type = TC_WIRE_CYCLE;
    out.seq = c->seq;
    out.cache_gen = e->cache.gen;
    out.nready = nr;
    out.ready = c->my_ready;
    out.nstale = ns;
    out.stale = c->my_stale;
    out.neager = e->eager.nmine;
    out.eager = e->eager.mine;
    if (e->rank == 0) {
        if (tc__coord_take_ready(e->coord, &c->batch) != TC_OK ||
            (c->my_resps = malloc(((size_t)c->batch.count + e->stall.ntimeouts + 1) *
                                  sizeof(*c->my_resps))) == NULL) {
            tc__engine_fail(e, TC_ERR_NOMEM, "rank 0 ran out of memory scheduling tensors");
            return;
        }
        for (i = 0; i < c->batch.count; i++) {
            tc_wire_response_t *r = &c->batch.resps[i];
            if (r->rtype == TC_WIRE_RUN) {
                r->cache_ref = tc__cache_assign(&e->cache, (uint32_t)e->cfg->cache_capacity);
            }
            c->my_resps[i] = *r;
        }
        /* the stall inspector's verdicts on cached names go out with them */
        if (e->stall.ntimeouts > 0) {
            memcpy(c->my_resps + c->batch.count, e->stall.timeouts,
                   e->stall.ntimeouts * sizeof(*e->stall.timeouts));
        }
        c->nmy_resps = c->batch.count + e->stall.ntimeouts;
        out.count = c->nmy_resps;
        out.resps = c->my_resps;
        if (c->shutdown_from >= 0) {
            c->term_sent = 1;
            out.term_status = TC_ERR_SHUTDOWN;
            snprintf(c->term_text, sizeof(c->term_text),
                     "tcoll was shut down (tc_shutdown called on rank %d)", c->shutdown_from);
        }
        if (c->term_sent) {
            out.flags = TC_WIRE_F_TERMINATE;
            out.term_text = c->term_text;
            out.term_text_len = (uint32_t)strnlen(c->term_text, TC_WIRE_MAX_TEXT);
        }
    }
    tc__ctrl_send(e, &out, 0, e->size - 1, e->rank, ENG_TAG_CYCLE + (int)(c->seq & 1));
    c->contributed = 1;
    c->dirty = 0;
    c->t0 = tc__now_ns();
}

/* Receives the other ranks' messages for cycle seq that are there. Returns
 * how many arrived, or -1 after a failure. */
static int cycle_receive(engine_t *e)
{
    eng_cycle_t *c = &e->cycle;
    tc_wire_msg_t msg;
    int src, got = 0, n = 0;

    while (c->ngot < e->size - 1 &&
           (got = tc__ctrl_recv(e, MPI_ANY_SOURCE, ENG_TAG_CYCLE + (int)(c->seq & 1), &msg,
                                &src)) == 1) {
        const char *bad = NULL;
        if (msg.type != TC_WIRE_CYCLE) {
            bad = "not a cycle message";
        } else if (msg.seq != c->seq) {
            bad = "for another cycle";
        } else if (src != 0 && (msg.count > 0 || (msg.flags & TC_WIRE_F_TERMINATE))) {
            bad = "with decisions only rank 0 makes";
        } else if (c->have[src]) {
            bad = "twice for one cycle";
        }
        if (bad != NULL) {
            tc__engine_fail(e, TC_ERR_TRANSPORT,
                            "protocol error: a control message from rank %d %s (cycle %llu)", src,
                            bad, (unsigned long long)c->seq);
            tc__wire_msg_free(&msg);
            return -1;
        }
        if (tc__tl_active()) {
            tc__engine_tl_ready(&e->cache, src, msg.ready, msg.nready);
        }
        c->msgs[src] = msg;
        c->have[src] = 1;
        c->ngot++;
        n++;
    }
    return got < 0 ? -1 : n;
}

/* Finds this rank's request for each response: NULL for an ERROR about a
 * name this rank never submitted (a stalled tensor rank 0 gave up on). A
 * request that an ERROR fails leaves the cache path and the resend list; the
 * names RUN responses cache are filed. Returns 0, or -1 after a failure. */
static int resolve_responses(engine_t *e, const tc_wire_response_t *resps, uint32_t n,
                             tc_request_t **reqs)
{
    uint32_t i;

    pthread_mutex_lock(&tc__engine_shared.mu);
    for (i = 0; i < n; i++) {
        reqs[i] = tc__hmap_get(&tc__engine_shared.inflight, resps[i].name, resps[i].name_len);
        if (reqs[i] == NULL && resps[i].rtype == TC_WIRE_RUN) {
            break;
        }
    }
    pthread_mutex_unlock(&tc__engine_shared.mu);
    if (i < n) {
        tc__engine_fail(e, TC_ERR_TRANSPORT,
                        "rank 0 scheduled tensor '%.*s', which this rank has not submitted "
                        "(protocol error)", (int)resps[i].name_len, resps[i].name);
        return -1;
    }
    for (i = 0; i < n; i++) {
        tc_wire_request_t w;
        tc_status_t st;
        if (resps[i].rtype == TC_WIRE_ERROR && reqs[i] != NULL) {
            tc_cache_entry_t *ce = tc__cache_find(&e->cache, resps[i].name, resps[i].name_len);
            tc_request_t **pp;
            if (ce != NULL && ce->pending == reqs[i]) {
                ce->pending = NULL;
            }
            for (pp = &e->cycle.resend; *pp != NULL; pp = &(*pp)->next) {
                if (*pp == reqs[i]) {
                    *pp = reqs[i]->next;
                    break;
                }
            }
            continue;
        }
        if (resps[i].rtype != TC_WIRE_RUN || resps[i].cache_ref == 0) {
            continue;
        }
        to_wire(reqs[i], &w);
        st = tc__cache_file(&e->cache, resps[i].cache_ref - 1, &w, &resps[i]);
        if (st != TC_OK) {
            tc__engine_fail(e, st, st == TC_ERR_NOMEM ? "out of memory filing tensor '%s'"
                                                      : "cannot file tensor '%s' under cache id "
                                                        "%u (protocol error)",
                            reqs[i]->name, resps[i].cache_ref - 1);
            return -1;
        }
    }
    return 0;
}

/* Drops every entry a rank found stale; this rank's pending submissions of
 * those names are negotiated in full next. */
static void drop_stale(engine_t *e, const uint32_t *ids, uint32_t n)
{
    uint32_t i;
    int found;

    for (i = 0; i < n; i++) {
        tc_request_t *r = tc__cache_drop(&e->cache, ids[i], &found);
        if (found) {
            TC_DEBUG("engine", "cache id %u dropped: a rank changed its parameters", ids[i]);
        }
        if (r != NULL) {
            r->next = e->cycle.resend;
            e->cycle.resend = r;
        }
    }
}

/* Whether every rank's cache is at this rank's generation; a difference
 * stops the engine (a protocol error). */
static int generations_agree(engine_t *e)
{
    int q;

    for (q = 0; q < e->size; q++) {
        if (q != e->rank && e->cycle.msgs[q].cache_gen != e->cache.gen) {
            tc__engine_fail(e, TC_ERR_TRANSPORT,
                            "protocol error: rank %d's response cache is at generation %llu, "
                            "this rank's at %llu", q,
                            (unsigned long long)e->cycle.msgs[q].cache_gen,
                            (unsigned long long)e->cache.gen);
            return 0;
        }
    }
    return 1;
}

/* Runs a complete cycle: drops the stale entries, then runs rank 0's
 * responses (nresps of resps) and the cached ids every rank listed as
 * ready, in ascending order; see the file comment. */
static void run_cycle(engine_t *e, const tc_wire_response_t *resps, uint32_t nresps)
{
    eng_cycle_t *c = &e->cycle;
    tc_wire_response_t *all;
    tc_request_t **reqs;
    uint32_t *failed_ids, *ran;
    uint32_t i, n = nresps, nfailed = 0, nran = 0, k;
    int q;

    drop_stale(e, c->my_stale, c->nmy_stale);
    for (q = 0; q < e->size; q++) {
        if (q != e->rank) {
            drop_stale(e, c->msgs[q].stale, c->msgs[q].nstale);
        }
    }
    all = malloc(((size_t)nresps + c->nmy_ready + 1) * sizeof(*all));
    reqs = malloc(((size_t)nresps + c->nmy_ready + 1) * sizeof(*reqs));
    failed_ids = malloc(((size_t)nresps + 1) * sizeof(*failed_ids));
    ran = malloc(((size_t)c->nmy_ready + 1) * sizeof(*ran));
    if (all == NULL || reqs == NULL || failed_ids == NULL || ran == NULL) {
        tc__engine_fail(e, TC_ERR_NOMEM, "out of memory running a negotiation cycle");
        goto free_lists;
    }
    if (nresps > 0) {
        memcpy(all, resps, (size_t)nresps * sizeof(*all));
        if (resolve_responses(e, all, nresps, reqs) != 0) {
            goto free_lists;
        }
    }
    /* A cached name rank 0 failed (a stall) does not run in this cycle, on
     * any rank, even if every rank listed it. */
    for (i = 0; i < nresps; i++) {
        const tc_cache_entry_t *ce;
        if (all[i].rtype == TC_WIRE_ERROR &&
            (ce = tc__cache_find(&e->cache, all[i].name, all[i].name_len)) != NULL) {
            failed_ids[nfailed++] = ce->id;
        }
    }
    for (i = 0; i < c->nmy_ready; i++) {
        uint32_t id = c->my_ready[i];
        tc_cache_entry_t *ce;
        for (q = 0; q < e->size; q++) {
            if (q != e->rank && !eng_ids_has(c->msgs[q].ready, c->msgs[q].nready, id)) {
                break;
            }
        }
        if (q < e->size || eng_ids_contain(failed_ids, nfailed, id)) {
            continue; /* not everyone has it yet, or it failed */
        }
        ce = tc__cache_get(&e->cache, id);
        if (ce == NULL || ce->pending == NULL) {
            tc__engine_fail(e, TC_ERR_TRANSPORT, "cache id %u is ready but not pending on this "
                            "rank (internal error)", id);
            goto free_lists;
        }
        ran[nran++] = id;
        if (tc__eager_reduce(e, id, ce->pending, c->msgs)) {
            ce->pending = NULL;
            continue;
        }
        if (!eng_running()) { /* the eager inputs broke the protocol */
            goto free_lists;
        }
        all[n] = (tc_wire_response_t){.rtype = TC_WIRE_RUN, .name = ce->name,
                                      .name_len = ce->desc.name_len, .ndim0 = ce->ndim0,
                                      .dim0 = ce->dim0, .cache_ref = id + 1};
        reqs[n++] = ce->pending;
        ce->pending = NULL;
    }
    for (i = 0, k = 0; i < c->npend; i++) { /* keep the ids still waiting */
        const tc_cache_entry_t *ce = tc__cache_get(&e->cache, c->pend[i]);
        if (ce != NULL && ce->pending != NULL) {
            c->pend[k++] = c->pend[i];
        }
    }
    c->npend = k;
    if (e->rank == 0) {
        for (q = 0; q < e->size; q++) {
            c->ready[q] = q == 0 ? (eng_ids_t){c->my_ready, c->nmy_ready}
                                 : (eng_ids_t){c->msgs[q].ready, c->msgs[q].nready};
        }
        tc__stall_note_ready(e, c->ready, ran, nran, failed_ids, nfailed);
    }
    tc__exec_run(e, all, reqs, n);

free_lists:
    free(all);
    free(reqs);
    free(failed_ids);
    free(ran);
}

/* Forgets the cycle just processed and moves on to the next. */
static void end_cycle(engine_t *e)
{
    eng_cycle_t *c = &e->cycle;
    int q;

    for (q = 0; q < e->size; q++) {
        tc__wire_msg_free(&c->msgs[q]);
        c->have[q] = 0;
    }
    tc__coord_batch_free(&c->batch);
    memset(&c->batch, 0, sizeof(c->batch));
    free(c->my_resps);
    c->my_resps = NULL;
    c->nmy_resps = 0;
    if (e->rank == 0) {
        tc__stall_timeouts_free(e); /* they went out in this cycle */
    }
    free(c->my_ready);
    free(c->my_stale);
    c->my_ready = c->my_stale = NULL;
    c->nmy_ready = c->nmy_stale = 0;
    tc__eager_clear(e);
    c->term_sent = 0;
    c->ngot = 0;
    c->contributed = 0;
    c->seq++;
    c->done_ns = tc__now_ns();
}

/* Processes a cycle every rank has sent its message for; see the file
 * comment. After a TERMINATE, its collectives still run, then the engine
 * stops. */
static void complete_cycle(engine_t *e)
{
    eng_cycle_t *c = &e->cycle;
    const tc_wire_msg_t *zero = e->rank == 0 ? NULL : &c->msgs[0];
    const tc_wire_response_t *resps = zero != NULL ? zero->resps : c->my_resps;
    uint32_t nresps = zero != NULL ? zero->count : c->nmy_resps;
    int terminate = zero != NULL ? (zero->flags & TC_WIRE_F_TERMINATE) != 0 : c->term_sent;

    e->exec.cycle = c->seq;
    e->exec.ready_ns = tc__now_ns();
    if (generations_agree(e)) {
        run_cycle(e, resps, nresps);
    }
    if (terminate && eng_running()) {
        e->life.status = zero != NULL ? (tc_status_t)zero->term_status : TC_ERR_SHUTDOWN;
        snprintf(e->life.msg, sizeof(e->life.msg), "%.*s",
                 zero != NULL ? (int)zero->term_text_len : (int)strlen(c->term_text),
                 zero != NULL ? zero->term_text : c->term_text);
        tc__life_enter(e, ENG_LIFE_TERMINATING);
    }
    end_cycle(e);
}

/* Moves the cycles on: receive, join or start, complete. */
int tc__cycle_step(engine_t *e)
{
    eng_cycle_t *c = &e->cycle;
    int progress = 0, got;

    while (eng_running()) {
        got = cycle_receive(e);
        if (got < 0) {
            return 1;
        }
        progress |= got > 0;
        if (!c->contributed && (c->ngot > 0 || c->dirty || coord_has_news(e))) {
            contribute(e);
            progress = 1;
        }
        if (!eng_running() || !c->contributed || c->ngot < e->size - 1) {
            break;
        }
        complete_cycle(e);
        progress = 1;
    }
    return progress;
}
