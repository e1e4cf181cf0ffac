/*
 * test_pset.c - process sets (tc_process_set_*, tc_opts_t.process_set):
 * creating them collectively, what each rank learns about them, every kind
 * of collective run inside a set, and names that are per set. Refusals,
 * mismatches, removal, joins and stalls: test_pset_life.c.
 *
 * Expected results are computed here from the set's members (global ranks)
 * and small integer inputs, so every float result is exact and compared
 * bit for bit. Sets number their members by ascending global rank, so the
 * sets below leave gaps ({0,2}, {1,3}) to make set ranks differ from
 * global ones. Every case removes the sets it made, so any one case can
 * run alone, and none relies on timing for a verdict.
 */
#define _GNU_SOURCE

#include "pset_common.h"

/* ---- every kind inside a set ------------------------------------------------ */

/* Three mid-sized float32 sums in flight at once (fused where the library
 * fuses), completed in reverse. */
static void set_allreduce_fused(const pset_t *s)
{
    ar_t a[3] = {{"k/fuse/a", TC_FLOAT32, TC_SUM, 6000, 0, NULL, NULL, NULL},
                 {"k/fuse/b", TC_FLOAT32, TC_SUM, 6001, 0, NULL, NULL, NULL},
                 {"k/fuse/c", TC_FLOAT32, TC_SUM, 17, 1, NULL, NULL, NULL}};
    int k;

    for (k = 0; k < 3; k++) {
        ar_submit(s, &a[k]);
    }
    for (k = 2; k >= 0; k--) {
        ar_check(s, &a[k]);
    }
}

/* Rows member j (set rank) contributes to the allgather: 1 to 3, uneven. */
static int64_t gather_rows(const pset_t *s, int j)
{
    return 1 + (s->ranks[j] + 2 * j) % 3;
}

/* Rows of cols int32 elements. */
static void set_allgather(const pset_t *s, const char *name, int64_t cols)
{
    const int64_t mine = gather_rows(s, s->me);
    int32_t *send = tt_xmalloc((size_t)(mine * cols) * sizeof(int32_t));
    tc_opts_t o = in_set(s->id);
    tc_tensor_t t = {send, TC_INT32, 2, {mine, cols}}, out;
    tc_request_t *req = NULL;
    const int64_t *splits;
    const int32_t *got;
    int64_t i, at = 0;
    int j, n = -1;

    for (i = 0; i < mine * cols; i++) {
        send[i] = (int32_t)(tt_rank * 100000 + i);
    }
    CHECK_OK(tc_allgather_ex(name, &t, &o, &req));
    wait_ok(req, name);
    CHECK_OK(tc_request_output(req, &out));
    CHECK_OK(tc_request_splits(req, &splits, &n));
    CHECK_EQ(n, s->n); /* one count per member, in set-rank order */
    CHECK_EQ(out.dtype, TC_INT32);
    CHECK_EQ(out.ndim, 2);
    CHECK_EQ(out.shape[1], cols);
    got = out.data;
    for (j = 0; j < s->n; j++) {
        CHECK_EQ(splits[j], gather_rows(s, j));
        for (i = 0; i < gather_rows(s, j) * cols; i++, at++) {
            CHECK_MSG(got[at] == s->ranks[j] * 100000 + i,
                      "'%s' in process set %d: element %lld of member %d (rank %d) is %d, "
                      "want %lld",
                      name, s->id, (long long)i, j, s->ranks[j], (int)got[at],
                      (long long)(s->ranks[j] * 100000 + i));
        }
    }
    CHECK_EQ(out.shape[0] * cols, at);
    tc_request_free(req);
    free(send);
}

/* count float64 elements from the set's last member: a global rank that
 * is not the lowest one whenever the set has two or more. */
static void set_broadcast(const pset_t *s, const char *name, int64_t count)
{
    const int root = s->ranks[s->n - 1];
    double *buf = tt_xmalloc((size_t)count * sizeof(double));
    tc_opts_t o = in_set(s->id);
    tc_tensor_t t = {buf, TC_FLOAT64, 1, {count}};
    tc_request_t *req = NULL;
    int64_t i;

    for (i = 0; i < count; i++) {
        buf[i] = tt_rank == root ? (double)val(name, root, i, 0) : -99.0;
    }
    CHECK_OK(tc_broadcast_ex(name, &t, root, &o, &req));
    wait_free(req, name);
    for (i = 0; i < count; i++) {
        CHECK_MSG(buf[i] == (double)val(name, root, i, 0),
                  "'%s' from rank %d in process set %d: element %lld is %g", name, root, s->id,
                  (long long)i, buf[i]);
    }
    free(buf);
}

/* 2n + 1 rows: never divisible by a set of 2 or more; the first
 * (rows mod n) set ranks keep one row more. */
static void set_reducescatter(const pset_t *s, const char *name, int64_t cols)
{
    const int64_t rows = 2 * s->n + 1;
    const int64_t base = rows / s->n, extra = rows % s->n;
    const int64_t nmine = base + (s->me < extra),
                  first = s->me * base + (s->me < extra ? s->me : extra);
    float *send = tt_xmalloc((size_t)(rows * cols) * sizeof(float));
    tc_opts_t o = in_set(s->id);
    tc_tensor_t t = {send, TC_FLOAT32, 2, {rows, cols}}, out;
    tc_request_t *req = NULL;
    const float *got;
    int64_t i;
    int j;

    for (i = 0; i < rows * cols; i++) {
        send[i] = (float)val(name, tt_rank, i, 0);
    }
    CHECK_OK(tc_reducescatter_ex(name, &t, TC_SUM, &o, &req));
    wait_ok(req, name);
    CHECK_OK(tc_request_output(req, &out));
    CHECK_EQ(out.ndim, 2);
    CHECK_EQ(out.shape[0], nmine);
    CHECK_EQ(out.shape[1], cols);
    got = out.data;
    for (i = 0; i < nmine * cols; i++) {
        float want = 0;
        for (j = 0; j < s->n; j++) {
            want += (float)val(name, s->ranks[j], first * cols + i, 0);
        }
        CHECK_MSG(got[i] == want,
                  "'%s' in process set %d, set rank %d: element %lld of its "
                  "block is %g, want %g",
                  name, s->id, s->me, (long long)i, (double)got[i], (double)want);
    }
    tc_request_free(req);
    free(send);
}

/* Rows set rank q sends set rank j: uneven, with zeros. */
static int64_t a2a_rows(int q, int j)
{
    return (q + 2 * j) % 3;
}

static int32_t a2a_value(int from_rank, int to_index, int64_t i, int64_t c)
{
    return (int32_t)(from_rank * 10000 + to_index * 100 + i * 2 + c);
}

/* splits has the set's size entries, indexed by set rank. */
static void set_alltoall(const pset_t *s)
{
    const int64_t cols = 2;
    int64_t *splits = tt_xmalloc((size_t)s->n * sizeof(int64_t)), total = 0, i, c, at = 0;
    int32_t *send;
    const int32_t *got;
    const int64_t *counts;
    tc_opts_t o = in_set(s->id);
    tc_tensor_t t, out;
    tc_request_t *req = NULL;
    int j, q, n = -1;

    for (j = 0; j < s->n; j++) {
        splits[j] = a2a_rows(s->me, j);
        total += splits[j];
    }
    send = tt_xmalloc((size_t)(total * cols) * sizeof(int32_t));
    for (j = 0; j < s->n; j++) {
        for (i = 0; i < splits[j]; i++) {
            for (c = 0; c < cols; c++, at++) {
                send[at] = a2a_value(tt_rank, j, i, c);
            }
        }
    }
    t = (tc_tensor_t){send, TC_INT32, 2, {total, cols}};
    CHECK_OK(tc_alltoall_ex("k/alltoall", &t, splits, &o, &req));
    wait_ok(req, "k/alltoall");
    CHECK_OK(tc_request_output(req, &out));
    CHECK_OK(tc_request_splits(req, &counts, &n));
    CHECK_EQ(n, s->n);
    CHECK_EQ(out.ndim, 2);
    CHECK_EQ(out.shape[1], cols);
    got = out.data;
    at = 0;
    for (q = 0; q < s->n; q++) {
        CHECK_EQ(counts[q], a2a_rows(q, s->me));
        for (i = 0; i < counts[q]; i++) {
            for (c = 0; c < cols; c++, at++) {
                CHECK_MSG(got[at] == a2a_value(s->ranks[q], s->me, i, c),
                          "alltoall in process set %d: row %lld from set rank %d (rank %d), "
                          "element %lld is %d, want %d",
                          s->id, (long long)i, q, s->ranks[q], (long long)c, (int)got[at],
                          (int)a2a_value(s->ranks[q], s->me, i, c));
            }
        }
    }
    CHECK_EQ(out.shape[0] * cols, at);
    tc_request_free(req);
    free(send);
    free(splits);
}

static void set_barrier(const pset_t *s)
{
    tc_opts_t o = in_set(s->id);
    tc_request_t *req = NULL;

    CHECK_OK(tc_barrier_ex(&o, &req));
    wait_free(req, "barrier");
}

/* Three float32 sums of 1, 5 and 300 elements as one group. */
static void set_grouped(const pset_t *s)
{
    static const char *const names[3] = {"k/grp/a", "k/grp/b", "k/grp/c"};
    static const int64_t counts[3] = {1, 5, 300};
    float in[3][300], out[3][300];
    tc_tensor_t t[3];
    void *recv[3];
    tc_request_t *reqs[3] = {NULL, NULL, NULL};
    tc_opts_t o = in_set(s->id);
    int g, j;
    int64_t i;

    for (g = 0; g < 3; g++) {
        for (i = 0; i < counts[g]; i++) {
            in[g][i] = (float)val(names[g], tt_rank, i, 0);
        }
        t[g] = (tc_tensor_t){in[g], TC_FLOAT32, 1, {counts[g]}};
        recv[g] = out[g];
    }
    CHECK_OK(tc_grouped_allreduce(3, names, t, recv, TC_SUM, &o, reqs));
    for (g = 2; g >= 0; g--) {
        wait_free(reqs[g], names[g]);
        for (i = 0; i < counts[g]; i++) {
            float want = 0;
            for (j = 0; j < s->n; j++) {
                want += (float)val(names[g], s->ranks[j], i, 0);
            }
            CHECK_MSG(out[g][i] == want,
                      "grouped '%s' in process set %d: element %lld is %g, "
                      "want %g",
                      names[g], s->id, (long long)i, (double)out[g][i], (double)want);
        }
    }
}

/* Every kind, by the members of s; the names are the same in every set.
 * Small tensors, and large ones that take the ring and tree paths over
 * the set's own ranks. */
static void run_kinds(const pset_t *s)
{
    CHECK(s->me >= 0);
    set_allreduce(s, "k/sum-f32", TC_FLOAT32, TC_SUM, 13, 0);
    set_allreduce(s, "k/sum-f32-in-place", TC_FLOAT32, TC_SUM, 1000, 1);
    set_allreduce(s, "k/avg-f64", TC_FLOAT64, TC_AVG, 9, 0);
    set_allreduce(s, "k/max-i32", TC_INT32, TC_MAX, 11, 0);
    set_allreduce(s, "k/sum-f32-large", TC_FLOAT32, TC_SUM, 65539, 0);
    set_allreduce(s, "k/avg-f64-large", TC_FLOAT64, TC_AVG, 40009, 1);
    set_allreduce_fused(s);
    set_allgather(s, "k/allgather", 3);
    set_allgather(s, "k/allgather-large", 4099);
    set_broadcast(s, "k/broadcast", 7);
    set_broadcast(s, "k/broadcast-large", 100003);
    set_reducescatter(s, "k/reducescatter", 2);
    set_reducescatter(s, "k/reducescatter-large", 3001);
    set_alltoall(s);
    set_barrier(s);
    set_grouped(s);
}

/* ---- the cases -------------------------------------------------------------- */

/* Sets of the even ranks, the odd ranks and every rank (listed in reverse);
 * what the queries say on members and others; and the calls refused at
 * once, which create nothing and must not throw the ranks' calls out of
 * step. */
TC_CASE(create_query)
{
    int evens[MAXR] = {0}, odds[MAXR] = {0}, rev[MAXR], all[MAXR + 1], buf[MAXR + 1];
    int ne = parity_list(0, evens), no = parity_list(1, odds), r, id, count, unknown;
    int bad_lo = -1, bad_hi = tt_size;
    pset_t e, o = {0}, f, g;

    for (r = 0; r < tt_size; r++) {
        rev[r] = tt_size - 1 - r;
        all[r] = r;
    }
    all[tt_size] = 0; /* one entry more than the job has ranks */
    e = add_set(evens, ne);
    if (no > 0) {
        o = add_set(odds, no);
    }
    f = add_set(rev, tt_size);
    CHECK_NE(e.id, f.id);
    CHECK(no == 0 || (o.id != e.id && o.id != f.id));
    CHECK_EQ(e.me, tt_rank % 2 == 0 ? tt_rank / 2 : -1);
    if (no > 0) {
        CHECK_EQ(o.me, tt_rank % 2 == 1 ? tt_rank / 2 : -1);
    }
    CHECK_EQ(f.me, tt_rank); /* reverse order given, ascending kept */

    /* the global set */
    CHECK_EQ(tc_process_set_size(TC_GLOBAL_PROCESS_SET), tt_size);
    CHECK_EQ(tc_process_set_rank(TC_GLOBAL_PROCESS_SET), tt_rank);
    CHECK_OK(tc_process_set_ranks(TC_GLOBAL_PROCESS_SET, buf, MAXR, &count));
    CHECK_EQ(count, tt_size);
    for (r = 0; r < tt_size; r++) {
        CHECK_EQ(buf[r], r);
    }

    /* ranks: only cap entries written, the count in full */
    buf[0] = buf[1] = -5;
    CHECK_OK(tc_process_set_ranks(f.id, buf, 1, &count));
    CHECK_EQ(count, tt_size);
    CHECK_EQ(buf[0], 0);
    CHECK_EQ(buf[1], -5);
    count = -1;
    CHECK_OK(tc_process_set_ranks(e.id, NULL, 0, &count));
    CHECK_EQ(count, ne);
    count = -1;
    CHECK_EQ(tc_process_set_ranks(f.id, NULL, 1, &count), TC_ERR_ARG);
    CHECK_LAST_ERROR_SET();
    CHECK_EQ(tc_process_set_ranks(f.id, buf, -1, &count), TC_ERR_ARG);
    CHECK_EQ(tc_process_set_ranks(f.id, buf, MAXR, NULL), TC_ERR_ARG);
    CHECK_EQ(count, -1);

    /* sets that do not exist */
    unknown = (e.id > f.id ? e.id : f.id) + (o.id > 0 ? o.id : 0) + 1000;
    CHECK_EQ(tc_process_set_size(unknown), -1);
    CHECK_EQ(tc_process_set_rank(unknown), -1);
    CHECK_EQ(tc_process_set_ranks(unknown, buf, MAXR, &count), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "does not exist");
    CHECK_EQ(tc_process_set_size(-1), -1);
    CHECK_EQ(tc_process_set_rank(-1), -1);
    CHECK_EQ(tc_process_set_ranks(-1, buf, MAXR, &count), TC_ERR_ARG);
    CHECK_EQ(count, -1);

    /* bad lists: refused at once, *id_p untouched */
    id = -3;
    CHECK_EQ(tc_process_set_add(NULL, 1, &id), TC_ERR_ARG);
    CHECK_LAST_ERROR_SET();
    CHECK_EQ(tc_process_set_add(evens, ne, NULL), TC_ERR_ARG);
    CHECK_LAST_ERROR_SET();
    CHECK_EQ(tc_process_set_add(evens, 0, &id), TC_ERR_ARG);
    CHECK_LAST_ERROR_SET();
    CHECK_EQ(tc_process_set_add(evens, -1, &id), TC_ERR_ARG);
    CHECK_EQ(tc_process_set_add(all, tt_size + 1, &id), TC_ERR_ARG);
    CHECK_LAST_ERROR_SET();
    CHECK_EQ(tc_process_set_add(&bad_lo, 1, &id), TC_ERR_ARG);
    CHECK_LAST_ERROR_SET();
    CHECK_EQ(tc_process_set_add(&bad_hi, 1, &id), TC_ERR_ARG);
    CHECK_LAST_ERROR_SET();
    if (tt_size >= 2) {
        const int dup[2] = {1, 1};
        CHECK_EQ(tc_process_set_add(dup, 2, &id), TC_ERR_ARG);
        CHECK_STR_CONTAINS(tc_last_error(), "rank 1 is listed twice");
    }
    CHECK_EQ(id, -3);

    /* removals refused at once; the sets stay */
    CHECK_EQ(tc_process_set_remove(TC_GLOBAL_PROCESS_SET), TC_ERR_ARG);
    CHECK_LAST_ERROR_SET();
    CHECK_EQ(tc_process_set_remove(unknown), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "does not exist");
    CHECK_EQ(tc_process_set_remove(-1), TC_ERR_ARG);
    CHECK_EQ(tc_process_set_size(TC_GLOBAL_PROCESS_SET), tt_size);
    CHECK_EQ(tc_process_set_size(e.id), ne);
    CHECK_EQ(tc_process_set_size(f.id), tt_size);

    /* only rank 0 is refused once more: had a refused call been counted,
     * the next add would pair rank 0's k-th call with the others' k+1-th */
    if (tt_rank == 0) {
        CHECK_EQ(tc_process_set_add(&bad_hi, 1, &id), TC_ERR_ARG);
        CHECK_EQ(tc_process_set_remove(unknown), TC_ERR_ARG);
    }
    g = add_set(all, tt_size); /* the same ranks as f: a set of its own */
    CHECK(g.id != e.id && g.id != f.id && g.id != o.id);
    remove_set(&g);

    remove_set(&f);
    if (no > 0) {
        remove_set(&o);
    }
    remove_set(&e);
    /* removing twice: it no longer exists */
    CHECK_EQ(tc_process_set_remove(e.id), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "does not exist");
    tt_say("create_query: sets of %d, %d and %d ranks\n", ne, no, tt_size);
}

/* Every kind inside the set of this rank's parity (the two parity sets run
 * at the same time, with the same names; sets of one rank at np 1 to 3),
 * then inside the set of every rank, right after creating the sets. */
TC_CASE(kinds)
{
    int evens[MAXR] = {0}, odds[MAXR] = {0}, rev[MAXR];
    int ne = parity_list(0, evens), no = parity_list(1, odds), r;
    pset_t e, o = {0}, f;

    for (r = 0; r < tt_size; r++) {
        rev[r] = tt_size - 1 - r;
    }
    /* no global step between creating the sets and using them: a member
     * that returns first submits to a set others may still be filing */
    e = add_set_nosync(evens, ne);
    if (no > 0) {
        o = add_set_nosync(odds, no);
    }
    f = add_set_nosync(rev, tt_size);
    run_kinds(tt_rank % 2 == 0 ? &e : &o);
    run_kinds(&f);
    check_same("the evens' set id", e.id);
    check_same("the full set's id", f.id);
    remove_set(&f);
    if (no > 0) {
        remove_set(&o);
    }
    remove_set(&e);
}

/* The same name in flight at once in the global set, in this rank's parity
 * set and in the set of every rank: no TC_ERR_DUPLICATE, and each gets its
 * own set's sum. Submitted in a different order on odd and even ranks. */
TC_CASE(names_per_set)
{
    int evens[MAXR] = {0}, odds[MAXR] = {0}, all[MAXR];
    int ne = parity_list(0, evens), no = parity_list(1, odds), r, k, round;
    pset_t e, o = {0}, f, *mine;
    int64_t in[3][3], out[3][3];
    tc_request_t *req[3] = {NULL, NULL, NULL};
    static const int64_t scale[3] = {1, 100, 10000};
    int ids[3];

    for (r = 0; r < tt_size; r++) {
        all[r] = r;
    }
    e = add_set(evens, ne);
    if (no > 0) {
        o = add_set(odds, no);
    }
    f = add_set(all, tt_size);
    mine = tt_rank % 2 == 0 ? &e : &o;
    ids[0] = TC_GLOBAL_PROCESS_SET;
    ids[1] = mine->id;
    ids[2] = f.id;
    /* several rounds: from the second on, the global set's 'g' is a cached
     * name, the other sets' never are */
    for (round = 0; round < 4; round++) {
        for (k = 0; k < 3; k++) {
            int s = tt_rank % 2 == 0 ? k : 2 - k;
            tc_opts_t opt = in_set(ids[s]);
            tc_tensor_t t = {in[s], TC_INT64, 1, {3}};
            for (r = 0; r < 3; r++) {
                in[s][r] = scale[s] * (tt_rank + 1) + r + round;
            }
            CHECK_OK(tc_allreduce_ex("g", &t, out[s], TC_SUM, &opt, &req[s]));
        }
        for (k = 0; k < 3; k++) {
            const pset_t *s = k == 1 ? mine : &f; /* the global set's members are f's */
            wait_free(req[k], "g");
            for (r = 0; r < 3; r++) {
                int64_t want = 0;
                int j;
                for (j = 0; j < s->n; j++) {
                    want += scale[k] * (s->ranks[j] + 1) + r + round;
                }
                CHECK_MSG(out[k][r] == want,
                          "round %d: 'g' in process set %d: element %d is "
                          "%lld, want %lld",
                          round, ids[k], r, (long long)out[k][r], (long long)want);
            }
        }
    }
    remove_set(&f);
    if (no > 0) {
        remove_set(&o);
    }
    remove_set(&e);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
