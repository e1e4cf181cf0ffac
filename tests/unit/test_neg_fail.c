/*
 * test_neg_fail.c - how the negotiation ends: the state machine
 * (neg/neg.h) on the simulated ranks of neg_sim.h.
 *
 * Cases: shutdown, idle and mid-workload; aborts and protocol violations;
 * lost ranks found by the probes, and no false alarm for ranks that are
 * slow.
 *
 * Any case runs alone (--case NAME); CTest runs each in a process of its
 * own. Must rely on nothing but neg.h's contract and the protocol: never on
 * the state machine's internals (timings neg.h does not promise included).
 */
#include "check.h"
#include "neg_sim.h"
#include "tc_test.h"

/* ---- shutdown ---------------------------------------------------------------- */

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

TC_CASE(shutdown)
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
    /* decisions in the cycle that terminates come out: a first-time name in
     * the very REQUESTS that asks for shutdown, and cached names that the
     * same rank submitted last */
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
                CHECK(r == from || (x[r]->submitted && !x[r]->done && !y[r]->done && !z[r]->done));
            }
            x[from] = mkplan(s, from, 0, 0, 0);
            y[from] = mkplan(s, from, 1, 1, 0);
            z[from] = mkplan(s, from, 2, 1, 0);
            before = tc__neg_cycles(s->neg[0]);
            submit_next(s, from);
            submit_next(s, from);
            submit_next(s, from);
            tc__neg_shutdown(s->neg[from]);
            step(s, from); /* REQUESTS(f/x, SHUTDOWN); it starts a cycle, or an extra
                            * rank sends its host a snapshot with news */
            /* rank 0 hears of it, and the host has the snapshot, before they take
             * part in the cycle */
            deliver_chan(s, from, 0);
            if (from >= core_size(size)) {
                deliver_chan(s, from, from - core_size(size));
            }
            run(s);
            check_shut_down(s, from);
            check_agreement(s);
            for (r = 0; r < size; r++) {
                /* one more cycle, the one that terminates: it decided all three */
                const rec_t *ex = rec_of(s, x[r]), *ey = rec_of(s, y[r]), *ez = rec_of(s, z[r]);
                CHECK_EQ(tc__neg_cycles(s->neg[r]), before + 1);
                CHECK_MSG(ex->action == TC_NEG_RUN, "rank %d: f/x is %s", r, act_name(ex->action));
                CHECK(ey->action == TC_NEG_RUN && ey->cycle == ex->cycle && ey->cache_ref > 0);
                /* c/z is small: done with the cycle if every rank's input came
                 * with it, else run as a collective */
                CHECK((ez->action == TC_NEG_DONE || ez->action == TC_NEG_RUN) &&
                      ez->cycle == ex->cycle);
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

/* ---- aborts and protocol violations ---------------------------------------------- */

/* Rank r failed with `want`, by its own decision (here) or not, saying needle. */
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

/* size ranks that have run "w" once: it is cached under id 0 (generation 1). */
static sim_t *warm(int size)
{
    static const spec_t w[] = {{"w", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}}};
    tc_neg_params_t p = params(size);
    sim_t *s = sim_new(&p, 0);
    int r;

    s->specs = w;
    s->nspecs = 1;
    for (r = 0; r < size; r++) {
        mkplan(s, r, 0, 0, 0);
    }
    run(s);
    check_settled(s);
    return s;
}

static sim_t *warm4(void)
{
    return warm(4);
}

static void check_quiet_after_failure(sim_t *s, int r)
{
    size_t before = s->nlog[r];

    CHECK_EQ(step(s, r), 0);
    CHECK_EQ(s->nlog[r], before);
}

TC_CASE(aborts)
{
    const char *text;
    sim_t *s;
    int r;

    /* another rank's abort: FAILED with its text; not decided here */
    {
        const char *why = "tensor 'x' stalled";
        tc_wire_msg_t ab = {.type = TC_WIRE_BYE,
                            .flags = TC_WIRE_F_TERMINATE,
                            .term_status = TC_ERR_TIMEOUT,
                            .term_text = why,
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
    for (r = 0; r < 11; r++) {
        tc_wire_msg_t m = {.type = TC_WIRE_CYCLE, .cache_gen = 1};
        tc_wire_response_t ghost = {.rtype = TC_WIRE_RUN, .name = "ghost", .name_len = 5};
        uint32_t id0 = 0, id999 = 999;
        const float four = 4.0f;
        const tc_wire_eager_t partial = {0, sizeof(four), &four};
        s = r < 9 ? warm4() : warm(5); /* 5: rank 4 is an extra, hosted by rank 0 */
        m.seq = tc__neg_cycles(s->neg[0]);
        switch (r) {
        case 0: /* a part of a cycle far ahead */
            m.seq += 7;
            inject(s, 0, 1, TC_NEG_TAG_CYCLE, &m);
            check_failed(s, 1, TC_ERR_TRANSPORT, 1, "protocol error");
            check_failed(s, 1, TC_ERR_TRANSPORT, 1, "round 0; this rank is at cycle");
            break;
        case 1: /* a part with the wrong cache generation */
            m.cache_gen = 99;
            inject(s, 0, 1, TC_NEG_TAG_CYCLE, &m);
            check_failed(s, 1, TC_ERR_TRANSPORT, 1, "cache generation 99");
            break;
        case 2: /* a part from a rank that is not the round's partner */
            inject(s, 1, 3, TC_NEG_TAG_CYCLE, &m);
            check_failed(s, 3, TC_ERR_TRANSPORT, 1, "protocol error");
            break;
        case 3: /* two parts for one round */
            inject(s, 0, 1, TC_NEG_TAG_CYCLE, &m);
            CHECK_EQ(tc__neg_state(s->neg[1]), TC_NEG_RUNNING);
            inject(s, 0, 1, TC_NEG_TAG_CYCLE, &m);
            check_failed(s, 1, TC_ERR_TRANSPORT, 1, "twice");
            break;
        case 4: /* REQUESTS to a rank other than 0 */
            m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS};
            inject(s, 3, 2, TC_NEG_TAG_REQ, &m);
            check_failed(s, 2, TC_ERR_TRANSPORT, 1, "unexpected message");
            break;
        case 5: /* a RUN for a name this rank never submitted */
            m.count = 1;
            m.resps = &ghost;
            inject(s, 0, 1, TC_NEG_TAG_CYCLE, &m);
            m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE,
                                .cache_gen = 1,
                                .round = 1,
                                .seq = tc__neg_cycles(s->neg[1])};
            inject(s, 3, 1, TC_NEG_TAG_CYCLE, &m);
            check_failed(s, 1, TC_ERR_TRANSPORT, 1, "'ghost'");
            break;
        case 6: /* rank 0's decisions from two sides */
            m.count = 1;
            m.resps = &ghost;
            inject(s, 1, 0, TC_NEG_TAG_CYCLE, &m);
            check_failed(s, 0, TC_ERR_TRANSPORT, 1, "rank 0's decisions");
            break;
        case 7: /* an id this rank has not filed */
            m.nready = 1;
            m.ready = &id999;
            inject(s, 2, 3, TC_NEG_TAG_CYCLE, &m);
            check_failed(s, 3, TC_ERR_TRANSPORT, 1, "cache id 999");
            break;
        case 8: /* a partial result for a tensor too large to ride eagerly */
            m.nready = 1;
            m.ready = &id0;
            m.neager = 1;
            m.eager = &partial;
            inject(s, 2, 3, TC_NEG_TAG_CYCLE, &m);
            check_failed(s, 3, TC_ERR_TRANSPORT, 1, "not a ready small allreduce");
            break;
        case 9: /* a result for an extra rank that runs what it does not have */
            m.nready = 1;
            m.ready = &id0;
            inject(s, 0, 4, TC_NEG_TAG_CYCLE, &m);
            check_failed(s, 4, TC_ERR_TRANSPORT, 1, "protocol error");
            break;
        case 10: /* an extra's snapshot with a round above 1 */
            m.seq = tc__neg_cycles(s->neg[0]);
            m.round = 2;
            inject(s, 4, 0, TC_NEG_TAG_CYCLE, &m);
            check_failed(s, 0, TC_ERR_TRANSPORT, 1, "snapshot");
            break;
        default: break;
        }
        sim_free(s);
    }
    s = warm4(); /* a failure found outside */
    tc__neg_fail(s->neg[3], TC_ERR_NOMEM, "a transfer failed");
    check_failed(s, 3, TC_ERR_NOMEM, 1, "a transfer failed");
    tc__neg_status(s->neg[3], &text);
    CHECK(strcmp(text, "a transfer failed") == 0);
    sim_free(s);
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

/* ---- lost peers ------------------------------------------------------------------- */

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

/* A simulation of size ranks with the lost-peer timings and tensors. */
static sim_t *lost_sim(int size, uint64_t seed)
{
    tc_neg_params_t p = lost_params(size);
    sim_t *s = sim_new(&p, seed);

    s->specs = lost_specs;
    s->nspecs = 2;
    return s;
}

/* Rank `late` submits the name the others are waiting with: it must run on
 * every rank, in one order. Frees s. */
static void late_name_runs(sim_t *s, int late)
{
    plan_t *pl = mkplan(s, late, 1, 0, 0);

    run(s);
    check_settled(s);
    check_agreement(s);
    CHECK_EQ(rec_of(s, pl)->action, TC_NEG_RUN);
    sim_free(s);
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

/* Ranks dead..dead+ndead-1 stop (a host that went down); `workers` (a bit
 * set) then submit a first-time name. A neighbour of a dead rank must find
 * them lost within the peer timeout and a few grace periods, the roll call
 * must name every one of them, and nobody may blame a live rank. */
static void lost_case_n(int size, int dead, int ndead, unsigned workers, uint64_t seed)
{
    const uint64_t tick = 100 * MS;
    sim_t *s = lost_sim(size, seed);
    const tc_neg_params_t p = s->p;
    uint64_t t_sub, limit;
    char want[64];
    int r, d, nfailed = 0;

    for (r = 0; r < size; r++) {
        mkplan(s, r, 0, 0, 0);
    }
    run(s);
    check_settled(s);
    s->now += tick;
    for (d = dead; d < dead + ndead; d++) {
        s->frozen[d] = 1;
    }
    for (r = 0; r < size; r++) {
        if (workers & (1u << r)) {
            CHECK(r < dead || r >= dead + ndead);
            mkplan(s, r, 1, 0, 0);
        }
    }
    t_sub = s->now;
    run(s);
    limit = t_sub + p.peer_timeout_ns + 3 * p.probe_grace_ns + 2 * tick;
    while (!any_failed(s) && s->now < t_sub + 100 * SEC) {
        s->now += tick;
        run(s);
    }
    CHECK_MSG(any_failed(s), "size %d: nobody noticed that rank %d is gone", size, dead);
    CHECK_MSG(s->now <= limit,
              "size %d: rank %d found lost %.1f s after the submission, want "
              "at most %.1f s",
              size, dead, (double)(s->now - t_sub) / 1e9, (double)(limit - t_sub) / 1e9);
    CHECK_MSG(s->now >= t_sub + p.peer_timeout_ns,
              "size %d: rank %d found lost %.1f s after the submission, before the peer "
              "timeout",
              size, dead, (double)(s->now - t_sub) / 1e9);
    if (ndead == 1) {
        snprintf(want, sizeof(want), "lost rank %d:", dead);
    } else {
        snprintf(want, sizeof(want), "lost ranks %d-%d:", dead, dead + ndead - 1);
    }
    for (r = 0; r < size; r++) {
        if ((r < dead || r >= dead + ndead) && tc__neg_state(s->neg[r]) == TC_NEG_FAILED) {
            const char *text;
            int near = 0;
            CHECK_STATUS(tc__neg_status(s->neg[r], &text), TC_ERR_TRANSPORT);
            CHECK_STR_CONTAINS(text, want);
            for (d = dead; d < dead + ndead; d++) {
                near |= is_neighbour(size, r, d);
            }
            if (tc__neg_failed_here(s->neg[r])) { /* the others heard it from that rank */
                CHECK_MSG(near, "rank %d blames rank %d, not a neighbour", r, dead);
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
        if ((r < dead || r >= dead + ndead) && tc__neg_state(s->neg[r]) == TC_NEG_FAILED) {
            tc__neg_status(s->neg[r], &text);
            CHECK_STR_CONTAINS(text, want);
        }
    }
    sim_free(s);
}

static void lost_case(int size, int dead, unsigned workers, uint64_t seed)
{
    lost_case_n(size, dead, 1, workers, seed);
}

TC_CASE(lost_peers)
{
    uint64_t seed;

    for (seed = 0; seed <= 3; seed++) {
        lost_case(4, 2, 1u << 1, seed); /* inner node; work across the tree */
        lost_case(4, 2, 1u << 3, seed); /* inner node; work below it */
        lost_case(4, 3, 1u << 1, seed); /* a leaf, three hops from the work */
        lost_case(4, 1, 1u << 3, seed); /* a leaf of rank 0 */
        lost_case(4, 0, 1u << 3, seed); /* the root */
        lost_case(8, 5, 1u << 3, seed); /* a leaf of an inner node */
        lost_case(8, 4, 1u << 7, seed); /* an inner node, work two levels down */
        lost_case(8, 6, (1u << 1) | (1u << 2) | (1u << 7), seed);
        lost_case(2, 1, 1u << 0, seed); /* only rank 0 waits */
        /* a host of two ranks, or four: each failure names all of them */
        lost_case_n(8, 4, 2, 1u << 0, seed);
        lost_case_n(8, 6, 2, (1u << 1) | (1u << 5), seed);
        lost_case_n(8, 0, 2, 1u << 3, seed);
        lost_case_n(8, 4, 4, 1u << 2, seed);
    }
    /* a rank cut off for 0.9 of the peer timeout, then back (a link that was
     * down): never lost, and the name runs everywhere */
    for (seed = 0; seed <= 2; seed++) {
        sim_t *s = lost_sim(4, seed);
        int t, r;
        for (r = 0; r < 4; r++) {
            mkplan(s, r, 0, 0, 0);
        }
        run(s);
        s->frozen[3] = 1;
        for (r = 0; r < 3; r++) {
            mkplan(s, r, 1, 0, 0);
        }
        for (t = 0; t < 90; t++) { /* 9 s of a 10 s timeout */
            s->now += 100 * MS;
            run(s);
            CHECK_MSG(!any_failed(s), "seed %llu: rank 3 lost after %.1f s cut off",
                      (unsigned long long)seed, (double)(t + 1) / 10);
        }
        CHECK_GT(s->ntag[TC_NEG_TAG_PING], 0);
        s->frozen[3] = 0;
        late_name_runs(s, 3);
    }
    /* everyone alive, one rank slow to submit and one slow to answer (its
     * answers take up to half the grace period): no alarm for ten peer
     * timeouts, then the name runs everywhere */
    for (seed = 0; seed <= 2; seed++) {
        sim_t *s = lost_sim(5, seed);
        int t, r;
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
        late_name_runs(s, 4);
    }
}

int main(int argc, char **argv)
{
    sim_quiet_log();
    return tc_test_main(argc, argv, NULL);
}
