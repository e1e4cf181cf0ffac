/*
 * test_neg_cache.c - the response cache and what rides on it: the
 * negotiation state machine (neg/neg.h) on the simulated ranks of
 * neg_sim.h.
 *
 * Cases: eager allreduces (exact results with equal bits everywhere;
 * eager_bytes = 0 runs them); stale cache entries renegotiated in full (a
 * mismatch fails everywhere, a shape every rank changes runs and is cached
 * again); submissions the caller must not make, bad parameters; item cycle
 * numbers.
 *
 * Any case runs alone (--case NAME); CTest runs each in a process of its
 * own. Must rely on nothing but neg.h's contract and the protocol: never on
 * the state machine's internals.
 */
#include "check.h"
#include "neg_sim.h"
#include "tc_test.h"

/* ---- eager allreduces ------------------------------------------------------- */

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

/* The items every rank completed with an eager result. */
static int count_done(const sim_t *s)
{
    size_t i;
    int r, ndone = 0;

    for (r = 0; r < s->size; r++) {
        for (i = 0; i < s->nlog[r]; i++) {
            ndone += s->log[r][i].action == TC_NEG_DONE;
        }
    }
    return ndone;
}

TC_CASE(eager)
{
    static const int sizes[] = {1, 2, 3, 4, 5, 8};
    size_t si;
    uint64_t seed;
    int eager_bytes;

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
                check_agreement(s);     /* DONE results: the same bits on every rank */
                check_cached_rounds(s); /* exact sums and averages; RUN when not eager */
                /* all but e/over: three cached rounds each, on every rank, however
                 * long an input waited for the others' */
                CHECK_EQ(count_done(s), eager_bytes > 0 ? (NEAGER - 1) * 3 * s->size : 0);
                sim_free(s);
            }
        }
    }
}

/* Deterministic: float sums and averages ride gathered (a slot per rank,
 * combined at the end), so only while size x bytes fits; the others as
 * partial sums. Every rank gets the exact results with the same bits, on
 * sizes with and without extra ranks. */
TC_CASE(eager_gathered)
{
    static const int sizes[] = {1, 2, 3, 4, 5, 8};
    size_t si;
    uint64_t seed;
    int k, neager;

    for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        for (seed = 1; seed <= 3; seed++) {
            tc_neg_params_t p = params(sizes[si]);
            sim_t *s;
            p.eager_bytes = 32;
            p.deterministic = 1;
            s = sim_new(&p, seed);
            s->specs = eager_specs;
            s->nspecs = NEAGER;
            plan_rounds(s, 4);
            run(s);
            check_settled(s);
            check_agreement(s);
            check_cached_rounds(s);
            for (k = 0, neager = 0; k < NEAGER; k++) {
                neager += spec_eager(s, &eager_specs[k]);
            }
            CHECK_EQ(count_done(s), neager * 3 * s->size);
            /* 12 B x 3 > 32 (the direct exchange's parts carry 12 B) */
            CHECK(sizes[si] < 3 || (sizes[si] == 3) == spec_eager(s, &eager_specs[0]));
            CHECK(spec_eager(s, &eager_specs[4])); /* 4 B x 8 fits */
            CHECK(spec_eager(s, &eager_specs[6])); /* int min: partial */
            sim_free(s);
        }
    }
}

/* A kind whose names are used once (the barrier's) never takes a cache
 * slot: with room for one name, the allreduce gets it, however many barrier
 * rounds run first, and every barrier round negotiates in full. */
TC_CASE(uncached_kind)
{
    static const spec_t specs[] = {
        {"b", TC_KIND_BARRIER, TC_UINT8, TC_SUM, 0, 1, {0, 0}},
        {"a", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}},
    };
    tc_neg_params_t p = params(3);
    sim_t *s;
    size_t i;
    int r, k, cached_a = 0;

    p.cache_capacity = 1;
    s = sim_new(&p, 5);
    s->specs = specs;
    s->nspecs = 2;
    for (r = 0; r < 3; r++) {
        for (k = 0; k < 4; k++) {
            mkplan(s, r, 0, k, 0);
        }
        for (k = 0; k < 3; k++) {
            mkplan(s, r, 1, k, 0);
        }
    }
    run(s);
    check_settled(s);
    check_agreement(s);
    for (r = 0; r < 3; r++) {
        for (i = 0; i < s->nlog[r]; i++) {
            const rec_t *e = &s->log[r][i];
            if (e->name[0] == 'b') {
                CHECK_EQ(e->action, TC_NEG_RUN);
                CHECK_EQ(e->cache_ref, 0); /* negotiated in full, never filed */
            } else {
                cached_a += e->action == TC_NEG_DONE || e->cache_ref != 0;
            }
        }
    }
    CHECK_EQ(cached_a, 3 * 3); /* filed at once, then cached on every rank */
    sim_free(s);
}

/* ---- stale cache entries ------------------------------------------------------ */

static const spec_t stale_specs[] = {
    {"s/w", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {8, 0}},   /* not eager */
    {"s/e", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {2, 0}},   /* eager */
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
                          "negotiated in full and cached",
                          size, odd, ph, nm, act_name(e->action), e->cache_ref);
                ref[k] = e->cache_ref;
            } else if (k == 1 && ph > 0) { /* [2] or [4] floats: eager */
                uint8_t want[DATA_BYTES];
                spec_t sp = stale_specs[1];
                size_t len;
                sp.shape[0] = dim[1][0];
                CHECK(spec_eager(s, &sp));
                len = eager_expect(s, &sp, ph, want);
                CHECK_MSG(e->action == TC_NEG_DONE,
                          "size %d odd %d phase %d: '%s' is %s, want "
                          "DONE from the cache",
                          size, odd, ph, nm, act_name(e->action));
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
            CHECK_MSG(s->req_entries[r] - before[r] == want,
                      "size %d odd %d phase %d: rank %d "
                      "sent %zu submissions in full, want %zu",
                      size, odd, ph, r, s->req_entries[r] - before[r], want);
        }
    }
    sim_free(s);
}

TC_CASE(stale)
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

/* ---- submissions the caller must not make, bad parameters -------------------------------- */

TC_CASE(submit_errors)
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
            CHECK_STATUS(tc__neg_submit(s->neg[1], &a->w, a, a->data.bytes, NULL), TC_ERR_ARG);
        }
        step(s, 1);
        CHECK_STATUS(tc__neg_submit(s->neg[1], &a->w, a, a->data.bytes, NULL), TC_ERR_ARG);
        if (k == 2) { /* cached, with other parameters */
            tc_wire_request_t w = a->w;
            w.shape[0]++;
            CHECK_STATUS(tc__neg_submit(s->neg[1], &w, a, a->data.bytes, NULL), TC_ERR_ARG);
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
    CHECK_STATUS(tc__neg_submit(s->neg[1], &a->w, a, a->data.bytes, NULL), TC_ERR_ARG);
    sim_free(s);
}

/* ---- item cycles ---------------------------------------------------------------------- */

/* neg.h: an item's cycle is "the cycle that decided it (0, 1, ...)", and
 * tc__neg_cycles counts the cycles completed: an item of cycle c comes out
 * when c + 1 are complete. Cycles that run nothing may come between (a rank
 * starts one when it has news, not knowing whether the others have it). */
TC_CASE(item_cycles)
{
    static const spec_t one[] = {{"k", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}}};
    tc_neg_params_t p = params(3);
    sim_t *s = sim_new(&p, 0);
    uint64_t last = 0;
    int r, k;

    s->specs = one;
    s->nspecs = 1;
    for (k = 0; k < 3; k++) {
        for (r = 0; r < 3; r++) {
            mkplan(s, r, 0, k, 0);
        }
        run(s);
        for (r = 0; r < 3; r++) {
            uint64_t c = s->log[r][k].cycle;
            CHECK_EQ(s->nlog[r], k + 1);
            CHECK_EQ(tc__neg_cycles(s->neg[r]), tc__neg_cycles(s->neg[0]));
            CHECK_MSG(c < tc__neg_cycles(s->neg[r]) && (k == 0 || c > last),
                      "rank %d: item %d of cycle %llu, after %llu cycles (the last item's: %llu)",
                      r, k, (unsigned long long)c, (unsigned long long)tc__neg_cycles(s->neg[r]),
                      (unsigned long long)last);
        }
        CHECK(k > 0 || s->log[0][0].cycle == 0); /* the first cycle decides the first name */
        last = s->log[0][k].cycle;
    }
    check_settled(s);
    sim_free(s);
}

int main(int argc, char **argv)
{
    sim_quiet_log();
    return tc_test_main(argc, argv, NULL);
}
