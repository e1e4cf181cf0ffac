/*
 * neg_sim_plan.c - the workloads of neg_sim.h's simulated ranks and the
 * checks of what they became: planned submissions with inputs whose every
 * reduction is exact, which of them ride eagerly and their exact results,
 * the item each submission came out as, agreement across ranks, a settled
 * simulation, and a workload of every kind repeated in rounds.
 *
 * Knows nothing of any one test case; must never look inside a tc_neg_t
 * (only neg.h's functions), nor read the real clock.
 */
#define _GNU_SOURCE
#include "neg_sim.h"

#include "check.h"
#include "util/status.h"

/* Writes v as element j of a buffer of dtype (float32/64, int32/64). */
static void put_elem(uint8_t *buf, int dtype, size_t j, double v)
{
    switch (dtype) {
    case TC_FLOAT32: {
        float x = (float)v;
        memcpy(buf + 4 * j, &x, 4);
        break;
    }
    case TC_FLOAT64: memcpy(buf + 8 * j, &v, 8); break;
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
    default: break;
    }
}

/* Plans rank r's next submission of workload name `name`. */
plan_t *mkplan(sim_t *s, int r, int name, int inst, int64_t delta)
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
int spec_eager(const sim_t *s, const spec_t *sp)
{
    /* deterministic: float sums, averages and products ride gathered, a
     * slot per rank, except in the direct exchange (3 ranks), where each
     * part carries its own rank's input alone */
    const int gathered = s->p.deterministic && tc__dtype_is_float(sp->dtype) &&
                         (sp->op == TC_SUM || sp->op == TC_AVG || sp->op == TC_PROD) &&
                         s->size != 3;

    return s->p.eager_bytes > 0 && sp->kind == TC_KIND_ALLREDUCE &&
           spec_bytes(sp) * (gathered ? (size_t)s->size : 1) <= s->p.eager_bytes;
}

/* The exact reduction of every rank's input of instance inst (sum, average
 * of floats, min, max); returns its size in bytes. */
size_t eager_expect(const sim_t *s, const spec_t *sp, int inst, uint8_t *out)
{
    size_t j, count = spec_elems(sp);
    int q;

    CHECK_LE(spec_bytes(sp), DATA_BYTES);
    CHECK(sp->op != TC_PROD &&
          (sp->op != TC_AVG || sp->dtype == TC_FLOAT32 || sp->dtype == TC_FLOAT64));
    for (j = 0; j < count; j++) {
        double v = 0;
        for (q = 0; q < s->size; q++) {
            double x = (double)((q + 1) * (int)(j + 1) + inst);
            v = sp->op == TC_MAX   ? (q == 0 || x > v ? x : v)
                : sp->op == TC_MIN ? (q == 0 || x < v ? x : v)
                                   : v + x;
        }
        put_elem(out, sp->dtype, j, sp->op == TC_AVG ? v / s->size : v);
    }
    return spec_bytes(sp);
}

const rec_t *rec_of(const sim_t *s, const plan_t *pl)
{
    CHECK_MSG(pl->done, "rank %d: '%s' (#%d) never came out", pl->rank, pl->namebuf, pl->inst);
    return &s->log[pl->rank][pl->rec];
}

/* Every rank got the same items, in the same order, from the same cycle. */
void check_agreement(const sim_t *s)
{
    size_t i;
    int r;

    for (r = 1; r < s->size; r++) {
        CHECK_MSG(s->nlog[r] == s->nlog[0], "rank %d has %zu items, rank 0 has %zu", r, s->nlog[r],
                  s->nlog[0]);
        for (i = 0; i < s->nlog[0]; i++) {
            const rec_t *a = &s->log[0][i], *b = &s->log[r][i];
            CHECK_MSG(a->action == b->action && strcmp(a->name, b->name) == 0 &&
                          a->cycle == b->cycle,
                      "item %zu: rank 0 has %s '%s' (cycle %llu), rank %d has %s '%s' (cycle %llu)",
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
void check_settled(const sim_t *s)
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

/* ---- a workload every round of which is the same ----------------------------- */

const spec_t mixed_specs[] = {
    {"grad/big", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {1000, 0}},
    {"act/rows", TC_KIND_ALLGATHER, TC_INT64, TC_SUM, 0, 2, {1, 3}},
    {"bcast/last", TC_KIND_BROADCAST, TC_UINT8, TC_SUM, -1, 1, {7, 0}},
    {"grad/small", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, {2, 0}},
    {"grad/max", TC_KIND_ALLREDUCE, TC_INT32, TC_MAX, 0, 2, {5, 5}},
    {"bcast/zero", TC_KIND_BROADCAST, TC_FLOAT64, TC_SUM, 0, 1, {3, 0}},
};

/* Each rank submits every name once per round, in its own random order, a
 * name again only after its item came out there. */
void plan_rounds(sim_t *s, int rounds)
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
void check_cached_rounds(const sim_t *s)
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
                CHECK_MSG(e->action == TC_NEG_RUN && e->cache_ref > 0,
                          "rank %d: first '%s' is "
                          "%s with cache_ref %u",
                          r, pl->namebuf, act_name(e->action), e->cache_ref);
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
                CHECK_MSG(memcmp(e->result, want, len) == 0,
                          "rank %d: '%s' #%d (size %d): "
                          "not the exact result",
                          r, pl->namebuf, pl->inst, s->size);
            } else {
                CHECK_MSG(e->action == TC_NEG_RUN && e->cache_ref == first_ref[r][pl->name],
                          "rank %d: '%s' #%d is %s with cache_ref %u, want RUN from cache %u", r,
                          pl->namebuf, pl->inst, act_name(e->action), e->cache_ref,
                          first_ref[r][pl->name]);
            }
        }
    }
}
