/*
 * test_join_order.c - the join's value, "the rank that joined last", for
 * every order in which the ranks can join: at np 2, 3 and 4, every
 * permutation p of the ranks (of a process set's members) joins in that
 * order, and every rank must get p's last rank back.
 *
 * The order is forced by the data, not by time: the rank at position k of
 * p runs steps 0..k, each an allreduce or two, then joins. Step k's
 * allreduces are submitted by the ranks at positions k and up only, so on
 * the rank at position k they complete only once every rank before it in p
 * has joined: its join comes after theirs on every clock that matters (the
 * allreduce's completion depends on their joins). No sleep, no timing.
 *
 * Each step's allreduces use names that are cached (every rank ran them
 * twice before, so that they ride the negotiation messages or, inside a
 * node, the small-message path of src/exec/fast.c, which completes without
 * rank 0 hearing of it) or uncached (a first-time name), small (a few
 * elements) or large (past the small-message path and the eager inputs).
 * The small cached case is the one where a joined rank's contribution can
 * reach the others before its join reaches rank 0: the join's value must
 * still be the rank whose join came last.
 *
 * Sums are of small integers in float32: exact, checked bit for bit.
 */
#define _POSIX_C_SOURCE 200809L

#include "mpi_common.h"

#define MAX_NP 4

/* How a step's allreduces are named and sized. */
typedef struct {
    const char *label;
    int cached;    /* names every rank ran twice before the permutation */
    int64_t count; /* float32 elements per allreduce */
} order_mode_t;

static const order_mode_t g_modes[] = {
    {"small-cached", 1, 4},
    {"small-uncached", 0, 4},
    {"large-cached", 1, 9000},
    {"large-uncached", 0, 9000},
};
#define NMODES ((int)(sizeof(g_modes) / sizeof(g_modes[0])))

/* A process set to join in: its id (0: every rank) and members, ascending. */
typedef struct {
    uint32_t id;
    int n;
    int ranks[MAX_NP];
} set_t;

static int set_pos(const set_t *s, int rank)
{
    for (int i = 0; i < s->n; i++) {
        if (s->ranks[i] == rank) {
            return i;
        }
    }
    return -1;
}

/* The k-th permutation of 0..n-1 in lexicographic order (k < n!). */
static void nth_perm(int n, int k, int *out)
{
    int left[MAX_NP], nleft = n, fact = 1;

    for (int i = 0; i < n; i++) {
        left[i] = i;
        fact *= i + 1;
    }
    for (int i = 0; i < n; i++) {
        fact /= n - i;
        int j = k / fact;
        k %= fact;
        out[i] = left[j];
        for (int m = j; m < nleft - 1; m++) {
            left[m] = left[m + 1];
        }
        nleft--;
    }
}

/* Allreduce of step `step` (allreduce a or b) among the ranks in `active`
 * (flags by global rank): every element i is the sum of (r + 1) * (i + 1)
 * over them. */
static void step_allreduce(const set_t *s, const char *name, int64_t count, const int *active)
{
    float *in = tt_xmalloc(sizeof(float) * (size_t)count);
    float *out = tt_xmalloc(sizeof(float) * (size_t)count);
    tc_tensor_t t = {in, TC_FLOAT32, 1, {count}};
    tc_opts_t o = TC_OPTS_INIT;
    tc_request_t *req = NULL;
    int factor = 0;

    for (int r = 0; r < tt_size; r++) {
        factor += active[r] ? r + 1 : 0;
    }
    for (int64_t i = 0; i < count; i++) {
        in[i] = (float)((tt_rank + 1) * (i % 97 + 1));
    }
    o.process_set = s->id;
    CHECK_OK(tc_allreduce_ex(name, &t, out, TC_SUM, &o, &req));
    tc_status_t st = tc_wait(req);
    CHECK_MSG(st == TC_OK, "rank %d: '%s': %s (%s)", tt_rank, name, tc_status_string(st),
              tc_request_error(req));
    tc_request_free(req);
    for (int64_t i = 0; i < count; i++) {
        float want = (float)(factor * (i % 97 + 1));
        CHECK_MSG(tt_f32_bits(out[i]) == tt_f32_bits(want),
                  "rank %d: '%s'[%lld] = %g, want %g (active ranks' sum)", tt_rank, name,
                  (long long)i, (double)out[i], (double)want);
    }
    free(in);
    free(out);
}

static void step_name(char *buf, size_t cap, const order_mode_t *m, const set_t *s, int perm,
                      int step, char ab)
{
    if (m->cached) {
        snprintf(buf, cap, "order/%s/set%u/step%d/%c", m->label, s->id, step, ab);
    } else {
        snprintf(buf, cap, "order/%s/set%u/perm%d/step%d/%c", m->label, s->id, perm, step, ab);
    }
}

/* One permutation in one mode: the members join in the order perm (of
 * member positions); every member must get the last one's global rank. */
static void run_order(const set_t *s, const order_mode_t *m, int pi, const int *perm)
{
    int me = set_pos(s, tt_rank), mypos = -1, all[MAX_NP] = {0};
    char name[128];
    tc_opts_t o = TC_OPTS_INIT;
    tc_request_t *j = NULL;
    int last = -1, want = s->ranks[perm[s->n - 1]];

    if (me < 0) {
        return;
    }
    for (int i = 0; i < s->n; i++) {
        all[s->ranks[i]] = 1;
        if (perm[i] == me) {
            mypos = i;
        }
    }
    if (m->cached) { /* twice: filed in the cache, then run as a cached name */
        for (int rep = 0; rep < 2; rep++) {
            for (int step = 0; step < s->n; step++) {
                step_name(name, sizeof(name), m, s, pi, step, 'a');
                step_allreduce(s, name, m->count, all);
                step_name(name, sizeof(name), m, s, pi, step, 'b');
                step_allreduce(s, name, m->count, all);
            }
        }
    }
    for (int step = 0; step <= mypos; step++) {
        int active[MAX_NP] = {0};
        for (int i = step; i < s->n; i++) {
            active[s->ranks[perm[i]]] = 1;
        }
        step_name(name, sizeof(name), m, s, pi, step, 'a');
        step_allreduce(s, name, m->count, active);
        step_name(name, sizeof(name), m, s, pi, step, 'b');
        step_allreduce(s, name, m->count, active);
    }
    o.process_set = s->id;
    CHECK_OK(tc_join_ex(&o, &j));
    CHECK_OK(tc_wait(j));
    CHECK_OK(tc_request_last_joined(j, &last));
    tc_request_free(j);
    CHECK_MSG(last == want,
              "set %u, %s, order %d: rank %d joined at position %d of %d; the join says rank %d "
              "joined last, want rank %d",
              s->id, m->label, pi, tt_rank, mypos, s->n, last, want);
}

static void every_order(const set_t *s)
{
    int nperm = 1, perm[MAX_NP];

    CHECK(s->n >= 1 && s->n <= MAX_NP);
    for (int i = 2; i <= s->n; i++) {
        nperm *= i;
    }
    for (int mi = 0; mi < NMODES; mi++) {
        for (int k = 0; k < nperm; k++) {
            nth_perm(s->n, k, perm);
            run_order(s, &g_modes[mi], k, perm);
        }
    }
    tt_say("  set %u (%d member%s): %d orders x %d modes\n", s->id, s->n, s->n == 1 ? "" : "s",
           nperm, NMODES);
}

/* The global set: every order of the job's ranks. */
TC_CASE(global_every_order)
{
    set_t s = {0, tt_size, {0}};

    if (tt_size > MAX_NP) {
        tt_say("  more than %d ranks: skipped\n", MAX_NP);
        return;
    }
    for (int r = 0; r < tt_size; r++) {
        s.ranks[r] = r;
    }
    every_order(&s);
}

/* A process set of every rank but rank 0 (every rank at np 1 and 2): the
 * set's own joins, with rank 0 outside it where there is one. */
TC_CASE(process_set_every_order)
{
    set_t s = {0, 0, {0}};
    int ranks[MAX_NP], n = 0;
    tc_request_t *bar = NULL;

    if (tt_size > MAX_NP) {
        tt_say("  more than %d ranks: skipped\n", MAX_NP);
        return;
    }
    for (int r = tt_size > 2 ? 1 : 0; r < tt_size; r++) {
        ranks[n++] = r;
    }
    int id = 0;
    CHECK_OK(tc_process_set_add(ranks, n, &id));
    s.id = (uint32_t)id;
    s.n = n;
    memcpy(s.ranks, ranks, sizeof(int) * (size_t)n);
    every_order(&s);
    CHECK_OK(tc_barrier(&bar)); /* every member is past its last join */
    CHECK_OK(tc_wait(bar));
    tc_request_free(bar);
    CHECK_OK(tc_process_set_remove(s.id));
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
