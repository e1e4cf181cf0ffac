/*
 * test_neg_order.c - the order in which every rank runs things: the
 * negotiation state machine (neg/neg.h) on the simulated ranks of
 * neg_sim.h.
 *
 * Cases: the tree's shape; order agreement (1-33 ranks, random submission
 * orders, the response cache after the first round); cycles that overlap
 * under many interleavings and cache sizes, and with stall evictions.
 *
 * Any case runs alone (--case NAME); CTest runs each in a process of its
 * own. Must rely on nothing but neg.h's contract and the protocol: never on
 * the state machine's internals.
 */
#include "check.h"
#include "neg_sim.h"
#include "tc_test.h"

/* ---- the tree ----------------------------------------------------------------------- */

TC_CASE(tree)
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
            CHECK_MSG(n == nparented[r],
                      "size %d: rank %d lists %d children, %d ranks name it "
                      "their parent",
                      size, r, n, nparented[r]);
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

/* ---- order agreement --------------------------------------------------------- */

TC_CASE(order_agreement)
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
                CHECK_MSG(s->req_entries[r] == (size_t)NMIXED,
                          "size %d seed %llu: rank %d sent "
                          "%zu submissions in full, want %d",
                          s->size, (unsigned long long)seed, r, s->req_entries[r], NMIXED);
            }
            sim_free(s);
        }
    }
}

/* ---- cycles that overlap ----------------------------------------------------------- */

static const spec_t overlap_specs[] = {
    {"o/a", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}},
    {"o/b", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {64, 0}},
    {"o/c", TC_KIND_ALLGATHER, TC_FLOAT32, TC_SUM, 0, 2, {2, 3}},
    {"o/e", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_AVG, 0, 1, {2, 0}},
    {"o/f", TC_KIND_BROADCAST, TC_UINT8, TC_SUM, -1, 1, {33, 0}},
};
#define NOVERLAP ((int)(sizeof(overlap_specs) / sizeof(overlap_specs[0])))

/* By hand, size 4 (rounds: 0-1 and 2-3, then 0-2 and 1-3): a rank that
 * finished a cycle starts the next while its partner is still in the first,
 * and the partner takes the early part when it gets there. */
static void overlap_by_hand(uint64_t seed)
{
    tc_neg_params_t p = params(4);
    sim_t *s = sim_new(&p, 0);
    uint64_t d0;
    size_t items0;
    int r, k;

    s->specs = overlap_specs;
    s->nspecs = NOVERLAP;
    for (r = 0; r < 4; r++) {
        for (k = 0; k < NOVERLAP; k++) {
            mkplan(s, r, k, 0, 0);
        }
    }
    run(s); /* all cached */
    check_settled(s);
    for (r = 0; r < 4; r++) { /* the next round, each rank in its own order */
        static const int order[4][NOVERLAP] = {
            {1, 0, 4, 2, 3}, {0, 3, 1, 4, 2}, {3, 1, 4, 2, 0}, {0, 2, 1, 3, 4}};
        for (k = 0; k < NOVERLAP; k++) {
            mkplan(s, r, order[r][k], 1, 0);
        }
    }
    d0 = tc__neg_cycles(s->neg[0]);
    items0 = s->nlog[0];
    for (r = 0; r < 4; r++) {
        CHECK_EQ(tc__neg_cycles(s->neg[r]), d0);
        CHECK_EQ(step(s, r), 0); /* idle: nothing to say */
    }
    submit_next(s, 1); /* o/a */
    step(s, 1);        /* starts cycle d0: its round-0 part to rank 0 */
    CHECK_EQ(chan(s, 1, 0)->n, 1);
    deliver_chan(s, 1, 0);
    step(s, 0); /* joins: its round-0 part to rank 1, merges, round 1 to rank 2 */
    CHECK_EQ(chan(s, 0, 1)->n, 1);
    CHECK_EQ(chan(s, 0, 2)->n, 1);
    deliver_chan(s, 0, 1);
    step(s, 1); /* round 1 to rank 3 */
    CHECK_EQ(chan(s, 1, 3)->n, 1);
    deliver_chan(s, 0, 2);
    step(s, 2); /* joins at round 0 (to rank 3), keeps rank 0's round-1 part */
    CHECK_EQ(chan(s, 2, 3)->n, 1);
    deliver_chan(s, 1, 3);
    step(s, 3); /* joins: round 0 to rank 2, keeps rank 1's round-1 part */
    CHECK_EQ(chan(s, 3, 2)->n, 1);
    deliver_chan(s, 2, 3);
    step(s, 3); /* merges round 0, sends round 1 to rank 1, merges the kept one: done */
    CHECK_EQ(tc__neg_cycles(s->neg[3]), d0 + 1);
    CHECK_EQ(tc__neg_cycles(s->neg[2]), d0);
    CHECK_EQ(s->nlog[3], items0); /* o/a is not everywhere yet: nothing ran */
    submit_next(s, 3);            /* o/c: news, so rank 3 starts cycle d0 + 1 at once */
    step(s, 3);
    CHECK_EQ(chan(s, 3, 2)->n, 2); /* its parts of cycles d0 and d0 + 1 */
    deliver_chan(s, 3, 2);
    step(s, 2); /* finishes d0, then takes part in d0 + 1 */
    CHECK_EQ(tc__neg_cycles(s->neg[2]), d0 + 1);
    CHECK_EQ(chan(s, 2, 3)->n, 1); /* its round-0 part of d0 + 1 */
    CHECK_EQ(chan(s, 2, 0)->n, 2); /* its round-1 parts of d0 and (rank 3's came) d0 + 1 */
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
                          "size %d seed %llu: '%s' #%d, with rank %d's shape changed, is %s", size,
                          (unsigned long long)seed, pl->namebuf, inst, odd[k][inst],
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
                    CHECK_MSG(e->action == TC_NEG_DONE,
                              "size %d seed %llu: cached '%s' #%d is "
                              "%s",
                              size, (unsigned long long)seed, pl->namebuf, inst,
                              act_name(e->action));
                    CHECK(memcmp(e->result, want, e->result_len) == 0);
                } else {
                    CHECK_MSG(e->action == TC_NEG_RUN && e->cache_ref == cached[k],
                              "size %d seed %llu: cached '%s' #%d is %s with cache_ref %u, want "
                              "%u",
                              size, (unsigned long long)seed, pl->namebuf, inst,
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

TC_CASE(overlap)
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
                overlap_chaos(size, seed, caps[c], seed % 3 == 0 ? 5 : seed % 3 == 1 ? 30 : 70, 0);
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
TC_CASE(overlap_stalls)
{
    uint64_t seed;
    int size;

    for (size = 2; size <= 8; size++) {
        for (seed = 1; seed <= (TEST_TSAN ? 3 : 20); seed++) {
            overlap_chaos(size, seed, seed % 4 == 0 ? 2 : 64, seed % 2 ? 10 : 50, 1);
        }
    }
}

int main(int argc, char **argv)
{
    sim_quiet_log();
    return tc_test_main(argc, argv, NULL);
}
