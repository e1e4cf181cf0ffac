/*
 * test_pset_life.c - process sets over their life: what a set refuses,
 * rank lists that differ across ranks, removal with requests pending and
 * adding the same ranks again, adding and removing while joined, a join
 * inside a set while a disjoint set goes on, and a stall in one set that
 * must not hold up another. Creating, querying and every kind inside a
 * set: test_pset.c.
 *
 * Cases never rely on timing for a verdict: where a case must show that
 * one set went on while another waited, a global allreduce (or one in a
 * third set) orders the steps, so the waiting set cannot have completed
 * first. The only sleep keeps the stall case's next global name from
 * stalling itself. Every case removes the sets it made.
 *
 * The stall case reads TCOLL_STALL_ABORT_S: unset, the missing member
 * submits its name at the end (after the other set finished); set (the
 * mpi.test_pset_stall_abort tests, with TCOLL_STALL_WARN_S too), the
 * stalled request must fail with TC_ERR_TIMEOUT naming its process set,
 * and rank 0's log (its stderr, captured in a file) must name it too.
 */
#define _GNU_SOURCE

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "pset_common.h"

/* What a set refuses at once (TC_ERR_ARG, no request): any submission from
 * a rank outside it, a root outside it, splits that do not add up, a set
 * that does not exist or was removed. The set is every rank but 0 (rank 0,
 * which decides every set's names, is then the outsider); at np 1 it is
 * {0} and nobody is outside. Also: splits and the divisibility of
 * shape[0] go by the set's size, not the job's. */
TC_CASE(refusals)
{
    int list[MAXR], n = tt_size > 1 ? tt_size - 1 : 1, i;
    pset_t s;
    tc_opts_t o;
    tc_request_t *req = NULL, *reqs[2];
    float x[MAXR] = {0}, y[MAXR];
    tc_tensor_t t = {x, TC_FLOAT32, 1, {1}};
    const char *gnames[2] = {"r/grp/a", "r/grp/b"};
    tc_tensor_t gt[2] = {t, t};
    void *grecv[2] = {y, y + 1};
    int64_t splits[MAXR];

    for (i = 0; i < n; i++) {
        list[i] = tt_size > 1 ? i + 1 : 0;
    }
    s = add_set(list, n);
    o = in_set(s.id);
    if (s.me < 0) { /* rank 0 at np >= 2: every kind refused */
        tc_tensor_t bt = t;
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce_ex("r/x", &t, y, TC_SUM, &o, &req));
        CHECK_STR_CONTAINS(tc_last_error(), "not in process set");
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allgather_ex("r/x", &t, &o, &req));
        CHECK_STR_CONTAINS(tc_last_error(), "not in process set");
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast_ex("r/x", &bt, s.ranks[0], &o, &req));
        CHECK_STR_CONTAINS(tc_last_error(), "not in process set");
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_reducescatter_ex("r/x", &t, TC_SUM, &o, &req));
        CHECK_STR_CONTAINS(tc_last_error(), "not in process set");
        t.shape[0] = s.n; /* divisible by the set's size: only membership is wrong */
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_alltoall_ex("r/x", &t, NULL, &o, &req));
        CHECK_STR_CONTAINS(tc_last_error(), "not in process set");
        t.shape[0] = 1;
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_barrier_ex(&o, &req));
        CHECK_STR_CONTAINS(tc_last_error(), "not in process set");
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_join_ex(&o, &req));
        CHECK_STR_CONTAINS(tc_last_error(), "not in process set");
        reqs[0] = reqs[1] = TT_SENTINEL;
        CHECK_EQ(tc_grouped_allreduce(2, gnames, gt, grecv, TC_SUM, &o, reqs), TC_ERR_ARG);
        CHECK_STR_CONTAINS(tc_last_error(), "not in process set");
        CHECK(reqs[0] == TT_SENTINEL && reqs[1] == TT_SENTINEL);
    } else {
        tc_tensor_t bt = t, out;
        const int64_t *counts;
        int nc = -1;
        if (tt_size > 1) { /* rank 0 is a global rank, but not a member */
            EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast_ex("r/x", &bt, 0, &o, &req));
            CHECK_STR_CONTAINS(tc_last_error(), "not in process set");
        }
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast_ex("r/x", &bt, -1, &o, &req));
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast_ex("r/x", &bt, tt_size, &o, &req));

        /* splits: the set's size of entries, adding up to shape[0] */
        for (i = 0; i < s.n; i++) {
            splits[i] = 1;
            x[i] = (float)(tt_rank * 10 + i);
        }
        t.shape[0] = s.n + 1;
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_alltoall_ex("r/a2a", &t, splits, &o, &req));
        t.shape[0] = s.n;
        CHECK_OK(tc_alltoall_ex("r/a2a", &t, splits, &o, &req));
        wait_ok(req, "r/a2a");
        CHECK_OK(tc_request_output(req, &out));
        CHECK_OK(tc_request_splits(req, &counts, &nc));
        CHECK_EQ(nc, s.n);
        CHECK_EQ(out.shape[0], s.n);
        for (i = 0; i < s.n; i++) {
            CHECK_EQ(counts[i], 1);
            CHECK(((const float *)out.data)[i] == (float)(s.ranks[i] * 10 + s.me));
        }
        tc_request_free(req);
        /* no splits: s.n rows, divisible by the set's size (not by the
         * job's at np >= 2) */
        CHECK_OK(tc_alltoall_ex("r/a2a-even", &t, NULL, &o, &req));
        wait_free(req, "r/a2a-even");
        if (s.n > 1) {
            t.shape[0] = s.n + 1;
            EXPECT_IMMEDIATE(TC_ERR_ARG, tc_alltoall_ex("r/a2a-even", &t, NULL, &o, &req));
            /* members that disagree: TC_ERR_MISMATCH on each of them (the
             * outsider, rank 0, decides it without taking part) */
            t.shape[0] = 1 + s.me;
            CHECK_OK(tc_allreduce_ex("r/mm", &t, y, TC_SUM, &o, &req));
            CHECK_EQ(tc_wait(req), TC_ERR_MISMATCH);
            CHECK_STR_CONTAINS(tc_request_error(req), "r/mm");
            tc_request_free(req);
            t.shape[0] = 1;
        }
    }

    /* sets that do not exist, for every rank */
    o = in_set(s.id + 1000);
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce_ex("r/x", &t, y, TC_SUM, &o, &req));
    CHECK_STR_CONTAINS(tc_last_error(), "does not exist");
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_barrier_ex(&o, &req));
    o = in_set(-1);
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce_ex("r/x", &t, y, TC_SUM, &o, &req));

    /* and after its removal */
    remove_set(&s);
    o = in_set(s.id);
    t.shape[0] = 1;
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce_ex("r/x", &t, y, TC_SUM, &o, &req));
    CHECK_STR_CONTAINS(tc_last_error(), "does not exist");
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast_ex("r/x", &t, tt_size - 1, &o, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_barrier_ex(&o, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_join_ex(&o, &req));

    /* nothing refused was counted: the global set's barriers still meet */
    CHECK_OK(tc_barrier(&req));
    wait_free(req, "barrier");
}

/* Ranks that pass different lists: TC_ERR_MISMATCH on every rank, no set,
 * *id_p untouched; the next add pairs up as usual. A list given in a
 * different order on every rank is the same list. */
TC_CASE(mismatch)
{
    int all[MAXR], rot[MAXR], one, r, id, k, len;
    char want[4 * MAXR], text[4 * MAXR + 32];
    pset_t a, b, c;

    if (tt_size < 2) {
        tt_say("mismatch: needs 2 or more ranks; skipped\n");
        return;
    }
    for (r = 0; r < tt_size; r++) {
        all[r] = r;
        rot[r] = (r + tt_rank) % tt_size;
    }
    a = add_set(all, tt_size);

    /* rank 0 lists itself only, the others every rank */
    one = 0;
    id = -3;
    CHECK_EQ(tt_rank == 0 ? tc_process_set_add(&one, 1, &id)
                          : tc_process_set_add(all, tt_size, &id),
             TC_ERR_MISMATCH);
    CHECK_EQ(id, -3);
    /* the message names the ranks and their lists (as sets: ascending) */
    CHECK_STR_CONTAINS(tc_last_error(), "rank list mismatch");
    CHECK_STR_CONTAINS(tc_last_error(), "rank 0 has [0]");
    for (r = 0, len = 0; r < tt_size; r++) {
        len += snprintf(want + len, sizeof(want) - (size_t)len, "%s%d", r ? "," : "", r);
    }
    snprintf(text, sizeof(text), "rank %d has [%s]", tt_size - 1, want);
    CHECK_STR_CONTAINS(tc_last_error(), text);

    /* as many ranks everywhere, but each rank lists itself */
    one = tt_rank;
    CHECK_EQ(tc_process_set_add(&one, 1, &id), TC_ERR_MISMATCH);
    CHECK_EQ(id, -3);
    CHECK_STR_CONTAINS(tc_last_error(), "rank list mismatch");
    snprintf(text, sizeof(text), "rank %d has [%d]", tt_rank, tt_rank);
    CHECK_STR_CONTAINS(tc_last_error(), text);

    b = add_set(rot, tt_size); /* same ranks, each rank's own order */
    CHECK_GT(b.id, a.id);
    for (k = a.id + 1; k < b.id; k++) { /* the failed adds made nothing */
        CHECK_MSG(tc_process_set_size(k) == -1,
                  "process set %d exists after the mismatched "
                  "adds (sets %d and %d were added around them)",
                  k, a.id, b.id);
    }
    set_allreduce(&b, "m/after", TC_FLOAT32, TC_SUM, 5, 0);
    c = add_set(all, 1); /* {0} */
    if (c.me >= 0) {
        set_allreduce(&c, "m/after", TC_FLOAT32, TC_SUM, 5, 0);
    }
    remove_set(&c);
    remove_set(&b);
    remove_set(&a);
}

/* Removing a set with requests pending fails them (TC_ERR_STATE), grouped
 * ones included; the same ranks, added again, get a new id and work, names
 * included; the old id refuses submissions. */
TC_CASE(remove_readd)
{
    int list[2] = {tt_size - 1, 0}, n = tt_size > 1 ? 2 : 1;
    float x[4] = {1, 2, 3, 4}, y[4];
    tc_tensor_t t = {x, TC_FLOAT32, 1, {4}};
    tc_request_t *req = NULL;
    tc_opts_t o;
    pset_t s, s2;
    tc_status_t st;
    const char *gnames[2] = {"pg/a", "pg/b"};
    tc_tensor_t gt[2] = {t, t};
    float gout[2][4];
    void *grecv[2] = {gout[0], gout[1]};
    tc_request_t *greq[2] = {NULL, NULL};
    int i;

    s = add_set(list, n);
    if (s.me >= 0) {
        set_allreduce(&s, "rr/x", TC_FLOAT32, TC_SUM, 6, 0);
    }
    remove_set(&s);
    s2 = add_set(list, n);
    CHECK_NE(s2.id, s.id);
    CHECK_GT(s2.id, s.id);
    if (s2.me >= 0) {
        set_allreduce(&s2, "rr/x", TC_FLOAT32, TC_SUM, 6, 0);
        o = in_set(s.id);
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce_ex("rr/x", &t, y, TC_SUM, &o, &req));
        CHECK_STR_CONTAINS(tc_last_error(), "does not exist");
    }
    remove_set(&s2);

    if (tt_size < 2) {
        return;
    }
    /* pending at removal: in {0, last}, rank 0 submits "p" and the last
     * rank "q", each a name the other never submits */
    s = add_set(list, 2);
    o = in_set(s.id);
    if (s.me >= 0) {
        CHECK_OK(tc_allreduce_ex(tt_rank == 0 ? "p" : "q", &t, y, TC_SUM, &o, &req));
    }
    if (tt_rank == 0) { /* and a group the other member never submits */
        CHECK_OK(tc_grouped_allreduce(2, gnames, gt, grecv, TC_SUM, &o, greq));
    }
    remove_set(&s);
    if (s.me >= 0) {
        st = tc_wait(req);
        CHECK_MSG(st == TC_ERR_STATE,
                  "rank %d: a request pending when its set was removed: "
                  "%s (%s)",
                  tt_rank, tc_status_string(st), tc_request_error(req));
        CHECK_STR_CONTAINS(tc_request_error(req), "removed");
        tc_request_free(req);
    }
    if (tt_rank == 0) {
        for (i = 0; i < 2; i++) {
            st = tc_wait(greq[i]);
            CHECK_MSG(st == TC_ERR_STATE,
                      "grouped '%s', pending when its set was removed: "
                      "%s (%s)",
                      gnames[i], tc_status_string(st), tc_request_error(greq[i]));
            tc_request_free(greq[i]);
        }
    }
    /* the same ranks again; both names now work there */
    s2 = add_set(list, 2);
    if (s2.me >= 0) {
        set_allreduce(&s2, "p", TC_FLOAT32, TC_SUM, 4, 0);
        set_allreduce(&s2, "q", TC_FLOAT32, TC_SUM, 4, 0);
    }
    remove_set(&s2);
}

/* While this rank's join in the global set is pending it may neither add
 * nor remove a set: refused at once (TC_ERR_STATE), *id_p untouched, and
 * not counted, so the next add pairs up. Rank 1 joins only once rank 0 has
 * been refused: rank 0 tells it through set {0, 1}, where its join does
 * not apply. */
TC_CASE(set_ops_while_joined)
{
    int pl[2] = {0, 1}, ql[1] = {0}, id = -3, last = -1;
    float x = 1, y = 0;
    tc_tensor_t t = {&x, TC_FLOAT32, 0, {0}};
    tc_request_t *j = NULL, *req = NULL;
    tc_opts_t o;
    pset_t p, q, r;

    if (tt_size < 2) {
        tt_say("set_ops_while_joined: needs 2 or more ranks; skipped\n");
        return;
    }
    p = add_set(pl, 2);
    q = add_set(ql, 1);
    o = in_set(p.id);
    if (tt_rank == 0) {
        CHECK_OK(tc_join(&j));
        CHECK_EQ(tc_process_set_add(ql, 1, &id), TC_ERR_STATE);
        CHECK_LAST_ERROR_SET();
        CHECK_EQ(id, -3);
        CHECK_EQ(tc_process_set_remove(q.id), TC_ERR_STATE);
        CHECK_EQ(tc_process_set_size(q.id), 1);
        CHECK_OK(tc_allreduce_ex("w/refused", &t, &y, TC_SUM, &o, &req));
        wait_free(req, "w/refused");
    } else if (tt_rank == 1) {
        CHECK_OK(tc_allreduce_ex("w/refused", &t, &y, TC_SUM, &o, &req));
        wait_free(req, "w/refused");
        CHECK_OK(tc_join(&j));
    } else {
        CHECK_OK(tc_join(&j));
    }
    CHECK(p.me < 0 || y == 2.0f);
    wait_ok(j, "join");
    CHECK_OK(tc_request_last_joined(j, &last));
    tc_request_free(j);
    /* rank 1 joined after rank 0, whatever the others did */
    CHECK_MSG(last > 0 && last < tt_size, "rank %d: rank %d joined last", tt_rank, last);
    check_same("the rank that joined last", last);
    r = add_set(ql, 1); /* the refused calls were not counted */
    CHECK(r.id != p.id && r.id != q.id);
    remove_set(&r);
    remove_set(&q);
    remove_set(&p);
}

/* ---- join within a set ------------------------------------------------------ */

#define JOIN_BASE 2  /* steps both members run */
#define JOIN_EXTRA 2 /* steps only the last member runs */

#define JOIN_RS_ROWS 5 /* rows of the reducescatter: 3 and 2 for a set of 2 */
#define JOIN_RS_COLS 2

/* One step in s: a float32 sum, a float64 avg and a float32 reducescatter.
 * Members past their last step have joined: they contribute zeros, and avg
 * still divides by the set's size; the rows are still split over every
 * member of the set. */
static void join_step(const pset_t *s, int step, int nsteps_short, int short_rank)
{
    char sum_name[32], avg_name[32], rs_name[32];
    float fin[5], fout[5], rin[JOIN_RS_ROWS * JOIN_RS_COLS];
    double din[3], dout[3];
    tc_tensor_t ft = {fin, TC_FLOAT32, 1, {5}}, dt = {din, TC_FLOAT64, 1, {3}};
    tc_tensor_t rt = {rin, TC_FLOAT32, 2, {JOIN_RS_ROWS, JOIN_RS_COLS}}, rout;
    tc_request_t *r1 = NULL, *r2 = NULL, *r3 = NULL;
    tc_opts_t o = in_set(s->id);
    int64_t base = JOIN_RS_ROWS / s->n, extra = JOIN_RS_ROWS % s->n, first, nrows;
    int i, j;

    snprintf(sum_name, sizeof(sum_name), "j/sum/%d", step);
    snprintf(avg_name, sizeof(avg_name), "j/avg/%d", step);
    snprintf(rs_name, sizeof(rs_name), "j/rs/%d", step);
    for (i = 0; i < 5; i++) {
        fin[i] = (float)val(sum_name, tt_rank, i, 0);
    }
    for (i = 0; i < 3; i++) {
        din[i] = (double)val(avg_name, tt_rank, i, 0);
    }
    for (i = 0; i < JOIN_RS_ROWS * JOIN_RS_COLS; i++) {
        rin[i] = (float)val(rs_name, tt_rank, i, 0);
    }
    CHECK_OK(tc_allreduce_ex("j/sum", &ft, fout, TC_SUM, &o, &r1));
    CHECK_OK(tc_allreduce_ex("j/avg", &dt, dout, TC_AVG, &o, &r2));
    CHECK_OK(tc_reducescatter_ex("j/rs", &rt, TC_SUM, &o, &r3));
    wait_free(r1, "j/sum");
    wait_free(r2, "j/avg");
    wait_ok(r3, "j/rs");
    CHECK_OK(tc_request_output(r3, &rout));
    nrows = base + (s->me < extra);
    first = s->me * base + (s->me < extra ? s->me : extra);
    CHECK_EQ(rout.shape[0], nrows);
    for (i = 0; i < nrows * JOIN_RS_COLS; i++) {
        float want = 0, got = ((const float *)rout.data)[i];
        for (j = 0; j < s->n; j++) {
            if (s->ranks[j] != short_rank || step < nsteps_short) {
                want += (float)val(rs_name, s->ranks[j], first * JOIN_RS_COLS + i, 0);
            }
        }
        CHECK_MSG(got == want,
                  "join step %d in process set %d: reducescatter element %d of "
                  "set rank %d's block is %g, want %g",
                  step, s->id, i, s->me, (double)got, (double)want);
    }
    tc_request_free(r3);
    for (i = 0; i < 5; i++) {
        float want = 0;
        for (j = 0; j < s->n; j++) {
            if (s->ranks[j] != short_rank || step < nsteps_short) {
                want += (float)val(sum_name, s->ranks[j], i, 0);
            }
        }
        CHECK_MSG(fout[i] == want,
                  "join step %d in process set %d: sum element %d is %g, "
                  "want %g",
                  step, s->id, i, (double)fout[i], (double)want);
    }
    for (i = 0; i < 3; i++) {
        double want = 0;
        for (j = 0; j < s->n; j++) {
            if (s->ranks[j] != short_rank || step < nsteps_short) {
                want += (double)val(avg_name, s->ranks[j], i, 0);
            }
        }
        want /= (double)s->n;
        CHECK_MSG(dout[i] == want,
                  "join step %d in process set %d: avg element %d is %.17g, "
                  "want %.17g",
                  step, s->id, i, dout[i], want);
    }
}

/* Waits for a join of s and returns the rank that joined last (the output
 * tensor and tc_request_last_joined agree). */
static int finish_join(tc_request_t *j)
{
    tc_tensor_t out;
    int32_t v = -1;
    int last = -2;

    wait_ok(j, "join");
    CHECK_OK(tc_request_output(j, &out));
    CHECK_EQ(out.dtype, TC_INT32);
    CHECK_EQ(out.ndim, 0);
    memcpy(&v, out.data, sizeof(v));
    CHECK_OK(tc_request_last_joined(j, &last));
    CHECK_EQ(last, v);
    tc_request_free(j);
    return last;
}

/*
 * S is the last two ranks ({0} at np 1). Its lower member runs JOIN_BASE
 * steps and joins (after which it is refused in S, TC_ERR_STATE, but not
 * in the global set); the higher one JOIN_BASE + JOIN_EXTRA, with the
 * joined member's zeros, then an allgather that fails for want of the
 * joined member, then joins: the join says the higher (a global rank, not
 * its set rank 1) joined last. After it both run a step as usual. T, the
 * ranks below S (np >= 3), runs a stream of its own meanwhile: a global
 * allreduce that the higher member of S submits before its extra steps,
 * and T after its stream, shows that T finished while S's join was still
 * pending.
 */
TC_CASE(join_in_set)
{
    int slist[2], tlist[MAXR], nt = tt_size > 2 ? tt_size - 2 : 0, r, k;
    int ns = tt_size > 1 ? 2 : 1;
    pset_t s, t = {0};
    tc_request_t *j = NULL, *req = NULL;
    int short_rank, long_rank, last;
    float x = 1, y;
    tc_tensor_t xt = {&x, TC_FLOAT32, 0, {0}};
    tc_opts_t o;

    slist[0] = tt_size > 1 ? tt_size - 2 : 0;
    slist[1] = tt_size - 1;
    for (r = 0; r < nt; r++) {
        tlist[r] = r;
    }
    s = add_set(slist, ns);
    if (nt > 0) {
        t = add_set(tlist, nt);
    }
    short_rank = slist[0];
    long_rank = slist[ns - 1];
    o = in_set(s.id);

    if (tt_rank == short_rank && short_rank != long_rank) {
        for (k = 0; k < JOIN_BASE; k++) {
            join_step(&s, k, JOIN_BASE, short_rank);
        }
        CHECK_OK(tc_join_ex(&o, &j));
        /* joined in s: nothing more there until the join completes */
        EXPECT_IMMEDIATE(TC_ERR_STATE, tc_allreduce_ex("j/sum", &xt, &y, TC_SUM, &o, &req));
        global_sync("j/sync");
        last = finish_join(j);
    } else if (tt_rank == long_rank) {
        for (k = 0; k < JOIN_BASE; k++) {
            join_step(&s, k, JOIN_BASE, short_rank);
        }
        global_sync("j/sync"); /* the other member has joined by now */
        for (; k < JOIN_BASE + JOIN_EXTRA; k++) {
            join_step(&s, k, short_rank == long_rank ? JOIN_BASE + JOIN_EXTRA : JOIN_BASE,
                      short_rank);
        }
        if (short_rank != long_rank) { /* an allgather needs the joined member */
            tc_tensor_t gt = {&x, TC_FLOAT32, 1, {1}};
            char want[64];
            tc_status_t st;
            CHECK_OK(tc_allgather_ex("j/gather", &gt, &o, &req));
            st = tc_wait(req);
            CHECK_MSG(st == TC_ERR_STATE,
                      "an allgather in process set %d with a member "
                      "joined: %s (%s)",
                      s.id, tc_status_string(st), tc_request_error(req));
            snprintf(want, sizeof(want), "rank %d has joined process set %d", short_rank, s.id);
            CHECK_STR_CONTAINS(tc_request_error(req), want);
            tc_request_free(req);
        }
        CHECK_OK(tc_join_ex(&o, &j));
        last = finish_join(j);
    } else { /* in T */
        for (k = 0; k < 8; k++) {
            char name[32];
            snprintf(name, sizeof(name), "t/%d", k);
            set_allreduce(&t, name, TC_FLOAT32, TC_SUM, 7, 0);
        }
        global_sync("j/sync");
        last = long_rank;
    }
    CHECK_MSG(last == long_rank,
              "rank %d: the join in process set %d says rank %d joined last, "
              "want rank %d",
              tt_rank, s.id, last, long_rank);
    if (s.me >= 0) { /* the next step: everyone in again */
        join_step(&s, JOIN_BASE + JOIN_EXTRA, JOIN_BASE + JOIN_EXTRA + 1, short_rank);
    }
    if (nt > 0) {
        remove_set(&t);
    }
    remove_set(&s);
}

/* ---- a stall in one set, another set busy ----------------------------------- */

static char g_log[256];
static int g_saved_stderr = -1;

/* On a failed check (abort), copy the captured log, the check's message
 * included, to the real stderr first. Async-signal-safe calls only. */
static void replay_log_on_abort(int sig)
{
    char buf[4096];
    ssize_t n;
    int fd = open(g_log, O_RDONLY);

    if (fd >= 0 && g_saved_stderr >= 0) {
        while ((n = read(fd, buf, sizeof(buf))) > 0) {
            if (write(g_saved_stderr, buf, (size_t)n) < 0) {
                break;
            }
        }
        close(fd);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Before tc_init, when the stall knobs are set: rank 0's stderr goes to a
 * file, so that the stall case can read what rank 0 logged. */
static void before_init(void)
{
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    int fd;

    if (r == NULL) {
        r = getenv("PMI_RANK");
    }
    if (getenv("TCOLL_STALL_ABORT_S") == NULL || r == NULL || atoi(r) != 0) {
        return;
    }
    tt_own_log_path(g_log, sizeof(g_log), "tcoll-test-pset");
    fd = open(g_log, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND, 0600);
    CHECK(fd >= 0);
    fflush(stderr);
    g_saved_stderr = dup(2);
    CHECK(g_saved_stderr >= 0);
    CHECK(dup2(fd, 2) == 2);
    close(fd);
    signal(SIGABRT, replay_log_on_abort);
}

static char *read_log(void)
{
    FILE *f = fopen(g_log, "r");
    char *text;
    long n;

    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    text = tt_xmalloc((size_t)n + 1);
    CHECK_EQ((long)fread(text, 1, (size_t)n, f), n);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* After tc_shutdown: rank 0's captured log back on its stderr. */
static void after_shutdown(void)
{
    if (g_saved_stderr >= 0) {
        char *log = read_log();
        fflush(stderr);
        dup2(g_saved_stderr, 2);
        fputs(log, stderr);
        free(log);
        unlink(g_log);
    }
}

static tc_request_t *submit_stalled(const pset_t *b, float *in, float *out)
{
    tc_opts_t o = in_set(b->id);
    tc_tensor_t t = {in, TC_FLOAT32, 1, {3}};
    tc_request_t *req = NULL;
    int i;

    for (i = 0; i < 3; i++) {
        in[i] = (float)(tt_rank * 10 + i);
    }
    CHECK_OK(tc_allreduce_ex("b/stall", &t, out, TC_SUM, &o, &req));
    return req;
}

/*
 * Set B: one member (the "submitter", the last rank) submits "b/stall",
 * the other ("missing") does not. Set A meanwhile runs a stream of
 * allreduces, all of which must complete, and every rank creates, uses
 * and removes a third set. At np >= 3 A and B are disjoint
 * (A the ranks below the last two, B the last two); at np 2 A is {0} and B
 * is {0, 1}, so the missing member is A's.
 *
 * Without TCOLL_STALL_ABORT_S: a global allreduce after A's stream comes
 * before the missing member submits, so A finished while B's name waited;
 * then B completes with both members' sum.
 *
 * With it: the submitter's request fails with TC_ERR_TIMEOUT naming the
 * process set, rank 0's log names it too; the others wait out the timeout
 * before their next global name (a name one rank submits ABORT_S before
 * another would time out as well); then B runs "b/stall" with both.
 */
TC_CASE(stall)
{
    const char *abort_env = getenv("TCOLL_STALL_ABORT_S");
    const int abort_s = abort_env != NULL ? atoi(abort_env) : 0;
    int alist[MAXR], blist[2], every[MAXR], na, r, k;
    int submitter = tt_size - 1, missing = tt_size - 2;
    pset_t a, b, c;
    float in[3], out[3];
    tc_request_t *stalled = NULL;
    double t0;
    char want[96];

    if (tt_size < 2) {
        tt_say("stall: needs 2 or more ranks; skipped\n");
        return;
    }
    if (tt_size == 2) {
        alist[0] = 0;
        na = 1;
    } else {
        for (na = 0; na < tt_size - 2; na++) {
            alist[na] = na;
        }
    }
    blist[0] = missing;
    blist[1] = submitter;
    for (r = 0; r < tt_size; r++) {
        every[r] = r;
    }
    a = add_set(alist, na);
    b = add_set(blist, 2);

    if (tt_rank == submitter) {
        stalled = submit_stalled(&b, in, out);
    }
    global_sync("st/sync-1"); /* B's name is in flight from here on */
    t0 = tt_now();
    if (a.me >= 0) {
        for (k = 0; k < 20; k++) {
            char name[32];
            snprintf(name, sizeof(name), "a/%d", k);
            set_allreduce(&a, name, k % 2 ? TC_FLOAT32 : TC_INT32, k % 2 ? TC_SUM : TC_MAX, 1 + k,
                          0);
        }
    }
    /* sets come and go while B's name waits (collectives of the global set:
     * the stalled member takes part too), and work */
    c = add_set(every, tt_size);
    set_allreduce(&c, "c/x", TC_FLOAT32, TC_SUM, 3, 0);
    remove_set(&c);
    if (abort_s > 0) {
        if (tt_rank == submitter) {
            tc_status_t st = tc_wait(stalled);
            CHECK_MSG(st == TC_ERR_TIMEOUT, "the stalled 'b/stall': %s (%s), want a timeout",
                      tc_status_string(st), tc_request_error(stalled));
            snprintf(want, sizeof(want), "'b/stall' (allreduce) in process set %d stalled", b.id);
            CHECK_STR_CONTAINS(tc_request_error(stalled), want);
            snprintf(want, sizeof(want), "not by rank %d", missing);
            CHECK_STR_CONTAINS(tc_request_error(stalled), want);
            tc_request_free(stalled);
        } else {
            double until = t0 + abort_s + 1;
            while (tt_now() < until) {
                tt_sleep_ms(50);
            }
        }
    } else if (tt_rank == submitter) {
        int done = -1;
        CHECK_OK(tc_test(stalled, &done));
        CHECK_MSG(done == 0, "'b/stall' completed before its other member submitted it");
    }
    global_sync("st/sync-2"); /* A's stream is done on every member of A */

    if (abort_s > 0) {
        if (tt_rank == 0) {
            char *log = read_log(), *line;
            snprintf(want, sizeof(want), "'b/stall' (allreduce) in process set %d stalled", b.id);
            line = strstr(log, want);
            CHECK_MSG(line != NULL,
                      "rank 0's log does not name the process set of the "
                      "stalled name:\n%s",
                      log);
            CHECK_MSG(strstr(line, "failing it with TC_ERR_TIMEOUT") != NULL,
                      "rank 0's log does not say it failed 'b/stall':\n%s", log);
            free(log);
        }
        if (b.me >= 0) { /* the name is free again, for both members */
            stalled = submit_stalled(&b, in, out);
        }
    } else if (tt_rank == missing) {
        stalled = submit_stalled(&b, in, out);
    }
    if (b.me >= 0) {
        wait_free(stalled, "b/stall");
        for (r = 0; r < 3; r++) {
            CHECK_EQ(out[r], (float)(missing * 10 + submitter * 10 + 2 * r));
        }
    }
    remove_set(&b);
    remove_set(&a);
    tt_say("stall: %s\n", abort_s > 0 ? "timed out in its set" : "waited, then completed");
}

/* A barrier and a join wait only for this rank's earlier requests of their
 * own set: rank 0 has "p" pending in set {0,1} (rank 1 submits it only
 * after a global step that needs rank 0), then a barrier and a join in set
 * {0}. Were they held back by "p", rank 0 would never reach the global
 * step, and the test would time out. */
TC_CASE(barrier_not_held_by_other_set)
{
    const int both[2] = {0, 1}, first[1] = {0};
    pset_t b, a;
    float x = 1.0f, y = 0.0f;
    tc_tensor_t t = {&x, TC_FLOAT32, 0, {0}};
    tc_request_t *p = NULL, *req = NULL;
    tc_opts_t ob, oa;
    int last = -1;

    if (tt_size < 2) {
        tt_say("barrier_not_held_by_other_set: needs 2 ranks, skipped\n");
        return;
    }
    b = add_set(both, 2);
    a = add_set(first, 1);
    ob = in_set(b.id);
    oa = in_set(a.id);
    if (tt_rank == 0) {
        CHECK_OK(tc_allreduce_ex("p", &t, &y, TC_SUM, &ob, &p));
        CHECK_OK(tc_barrier_ex(&oa, &req));
        wait_free(req, "barrier in {0}");
        CHECK_OK(tc_join_ex(&oa, &req));
        CHECK_OK(tc_wait(req));
        CHECK_OK(tc_request_last_joined(req, &last));
        CHECK_EQ(last, 0);
        tc_request_free(req);
        int done = 0;
        CHECK_OK(tc_test(p, &done));
        CHECK_EQ(done, 0); /* still waiting for rank 1 */
    }
    global_sync("bnh/sync");
    if (tt_rank == 1) {
        CHECK_OK(tc_allreduce_ex("p", &t, &y, TC_SUM, &ob, &p));
    }
    if (tt_rank <= 1) {
        wait_free(p, "p in {0,1}");
        CHECK_EQ(y, 2.0f);
    }
    remove_set(&a);
    remove_set(&b);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(
        argc, argv, &(tt_program_t){.before_init = before_init, .after_shutdown = after_shutdown});
}
