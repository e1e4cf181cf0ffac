/*
 * test_neg_stall.c - names some ranks wait for and others never submit: the
 * stall inspector of the negotiation state machine (neg/neg.h) on the
 * simulated ranks of neg_sim.h.
 *
 * Cases: a cached name that stalls goes back to full negotiation, and
 * stalled names fail everywhere in time (the clock starting at the real
 * monotonic time or at a fake one); a timeout that crosses a late rank's
 * submission, with the late rank last or first to submit again; a stalled
 * cache id dropped in one DOWN with stale ones.
 *
 * Any case runs alone (--case NAME); CTest runs each in a process of its
 * own. Must rely on nothing but neg.h's contract and the protocol: never on
 * the state machine's internals (timings neg.h does not promise included).
 */
#define _GNU_SOURCE
#include "check.h"
#include "neg_sim.h"
#include "tc_test.h"
#include "util/backoff.h"

/* ---- stalls ----------------------------------------------------------------------------- */

static const spec_t stall_specs[] = {
    {"st/c", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}},
    {"st/f", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}},
    {"st/b", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}},
};

/* A simulation that has cached st/c. real_origin: the fake clock starts at
 * the real monotonic time (what the engine passes), else at T0 (what a
 * simulator may pass); the state machine must not care. */
static sim_t *stall_sim(int size, uint64_t warn, uint64_t abort_ns, uint64_t seed, int real_origin)
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
        CHECK_MSG(
            e != NULL && e->action == TC_NEG_RUN,
            "%s clock origin, warm-up: rank %d's "
            "st/c, submitted by every rank at once, is %s%s%s",
            real_origin ? "real" : "fake", r, e == NULL ? "still waiting" : act_name(e->action),
            e != NULL && e->text != NULL ? ": " : "", e != NULL && e->text != NULL ? e->text : "");
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
        CHECK_MSG(tc__neg_state(s->neg[r]) == TC_NEG_RUNNING, "%s: rank %d is %s: %d (%s) %s", when,
                  r, state_name(tc__neg_state(s->neg[r])), (int)st, tc_status_string(st), text);
    }
}

/* A cached name some ranks wait for goes back to full negotiation after half
 * the first threshold (so that by the threshold the message table knows who
 * has it); the late rank's submission then runs everywhere. */
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
    CHECK_MSG(t_evict >= t0 + 2500 * MS && t_evict <= t0 + 3 * SEC + 2 * tick,
              "dropped %.2f s after it stalled, want 2.5 to 3", (double)(t_evict - t0) / 1e9);
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
    CHECK_MSG(!f[0]->done && !c[0]->done,
              "%s: a stalled name failed at once, not %.0f s "
              "after it stalled",
              origin, (double)s->p.stall_abort_ns / 1e9);
    while (!(f[0]->done && c[0]->done) && s->now < t0 + 30 * SEC) {
        s->now += tick;
        run(s);
        CHECK_MSG(s->now >= t0 + 10 * SEC || (!f[0]->done && !c[0]->done),
                  "%s: a stalled name failed %.2f s after it stalled, want 10", origin,
                  (double)(s->now - t0) / 1e9);
    }
    CHECK_MSG(f[0]->done && c[0]->done,
              "%s: stalled names never failed (first-time: %s, "
              "cached: %s)",
              origin, f[0]->done ? "failed" : "waiting", c[0]->done ? "failed" : "waiting");
    CHECK_MSG(s->now <= t0 + 11 * SEC + 2 * tick,
              "%s: the stalled names failed %.2f s after "
              "they stalled, want 10 to 11",
              origin, (double)(s->now - t0) / 1e9);
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

TC_CASE(stalls)
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
 * the late rank's REQUESTS is on its way to rank 0 while the DOWN that fails
 * the name (for the ranks that had submitted it) is on its way to the late
 * rank. Either resolution is consistent: the late rank's submission fails
 * too (a FAIL item for its request, and rank 0 forgets it), or it stays
 * pending (a FAIL item without a request, docs/negotiation.md: "fails ... on
 * every rank that submitted it") and pairs with the next submissions of the
 * others. Either way no rank may see a protocol error, the name submitted
 * again runs on every rank, whoever comes first, and nothing is left
 * waiting. The late rank is an extra rank (5 ranks: rank 4, hosted by rank
 * 0), so the others' cycles go on while it is frozen and the DOWN waits in
 * its host's channel to it. */
#define CROSS_N 5
#define CROSS_LATE 4
static void stall_expiry_crossing(int late_first)
{
    const uint64_t tick = 250 * MS;
    sim_t *s = stall_sim(CROSS_N, 0, 10 * SEC, 0, 1);
    const char *when = late_first ? "retry, late rank first" : "retry, late rank last";
    plan_t *f[CROSS_N], *again[CROSS_N];
    uint64_t t0;
    int r, kept;

    s->frozen[CROSS_LATE] = 1;
    for (r = 0; r < CROSS_N; r++) {
        f[r] = r == CROSS_LATE ? NULL : mkplan(s, r, 1, 0, 0);
    }
    run(s);
    t0 = s->now;
    while (!f[0]->done && s->now < t0 + 30 * SEC) {
        s->now += tick;
        run(s);
    }
    for (r = 0; r < CROSS_N; r++) {
        CHECK(r == CROSS_LATE || f[r]->done);
    }
    CHECK_EQ(rec_of(s, f[0])->status, TC_ERR_TIMEOUT);
    CHECK_EQ(chan(s, 0, CROSS_LATE)->n, 1); /* the DOWN that fails st/f, not delivered yet */
    s->frozen[CROSS_LATE] = 0;
    f[CROSS_LATE] = mkplan(s, CROSS_LATE, 1, 0, 0);
    submit_next(s, CROSS_LATE);
    step(s, CROSS_LATE); /* its REQUESTS leaves before the DOWN arrives */
    CHECK_EQ(chan(s, CROSS_LATE, 0)->n, 1);
    deliver_chan(s, 0, CROSS_LATE);
    CHECK_GE(s->nlog[CROSS_LATE], 2); /* st/c's warm-up and st/f's FAIL item */
    CHECK_EQ(s->log[CROSS_LATE][s->nlog[CROSS_LATE] - 1].action, TC_NEG_FAIL);
    CHECK_EQ(s->log[CROSS_LATE][s->nlog[CROSS_LATE] - 1].status, TC_ERR_TIMEOUT);
    kept = !f[CROSS_LATE]->done; /* else it failed with the late rank's request */
    run(s);
    check_running(s, "after the crossing");
    for (r = 0; r < CROSS_N; r++) {
        again[r] = r != CROSS_LATE ? mkplan(s, r, 1, 1, 0)
                   : kept          ? f[CROSS_LATE]
                                   : mkplan(s, CROSS_LATE, 1, 1, 0);
    }
    if (late_first && !kept) {
        submit_next(s, CROSS_LATE);
        step(s, CROSS_LATE);
        deliver_chan(s, CROSS_LATE, 0);
        step(s, 0);
    }
    run(s);
    check_running(s, when);
    check_agreement(s);
    for (r = 0; r < CROSS_N; r++) {
        CHECK_MSG(rec_of(s, again[r])->action == TC_NEG_RUN, "%s: rank %d's st/f is %s", when, r,
                  act_name(rec_of(s, again[r])->action));
    }
    for (r = 0; r < CROSS_N; r++) {
        CHECK_MSG(!tc__neg_busy(s->neg[r]),
                  "%s: rank %d is still busy with nothing submitted "
                  "(the late rank's crossed submission %s)",
                  when, r, kept ? "was kept" : "failed there");
    }
    check_settled(s);
    sim_free(s);
}

TC_CASE(stall_expiry_crossing_late_last)
{
    stall_expiry_crossing(0);
}

TC_CASE(stall_expiry_crossing_late_first)
{
    stall_expiry_crossing(1);
}

/* Rank 0 drops, in one DOWN, a cached id the stall inspector gave up on and
 * ids children found stale, noticed out of id order: ranks 1 and 2 each
 * submit a cached name with another shape, rank 0 waits for st/b. */
TC_CASE(stall_evict_with_stale)
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

int main(int argc, char **argv)
{
    sim_quiet_log();
    return tc_test_main(argc, argv, NULL);
}
