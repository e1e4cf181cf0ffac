/*
 * pset_common.c - the process set tests' shared helpers (pset_common.h).
 */
#define _GNU_SOURCE

#include "pset_common.h"

void wait_ok(tc_request_t *req, const char *what)
{
    tc_status_t st = tc_wait(req);
    CHECK_MSG(st == TC_OK, "rank %d: '%s': %s (%s)", tt_rank, what, tc_status_string(st),
              tc_request_error(req));
}

void wait_free(tc_request_t *req, const char *what)
{
    wait_ok(req, what);
    tc_request_free(req);
}

tc_opts_t in_set(int id)
{
    tc_opts_t o = TC_OPTS_INIT;
    o.process_set = id;
    return o;
}

/* A small integer input (|v| <= 20, or <= 10^6 with wide), the same
 * formula on every rank, so every rank can compute every other's. */
int64_t val(const char *name, int grank, int64_t i, int wide)
{
    uint64_t h = tt_key(tt_hash_str(name), (uint64_t)grank, (uint64_t)i);
    return wide ? (int64_t)(h % 2000001) - 1000000 : (int64_t)(h % 41) - 20;
}

/* An allreduce of the global set that checks every rank passed v: the max
 * of (v, -v) is (largest, -smallest). Also orders steps across ranks. */
void check_same(const char *what, int v)
{
    int32_t in[2] = {v, -v}, out[2] = {0, 0};
    tc_tensor_t t = {in, TC_INT32, 1, {2}};
    tc_request_t *req = NULL;

    CHECK_OK(tc_allreduce("pset/same", &t, out, TC_MAX, &req));
    wait_free(req, "pset/same");
    CHECK_MSG(out[0] == v && -out[1] == v, "%s: rank %d has %d, the ranks have %d to %d", what,
              tt_rank, v, -out[1], out[0]);
}

/* Every rank has reached this point (a global allreduce, waited). */
void global_sync(const char *name)
{
    int32_t one = 1, sum = 0;
    tc_tensor_t t = {&one, TC_INT32, 0, {0}};
    tc_request_t *req = NULL;

    CHECK_OK(tc_allreduce(name, &t, &sum, TC_SUM, &req));
    wait_free(req, name);
    CHECK_EQ(sum, tt_size);
}

/* Creates the set of list[0..n-1] (the same list on every rank, in any
 * order) and checks what this rank learns about it: an id > 0, its size,
 * its ranks ascending, this rank's place or -1. Nothing orders the ranks
 * afterwards: a member may submit to the set while others are still
 * returning from the call. */
pset_t add_set_nosync(const int *list, int n)
{
    pset_t s;
    int count = -1, k = 0, r, i;
    char member[MAXR] = {0};

    CHECK(tt_size <= MAXR && n >= 1 && n <= tt_size);
    memset(&s, 0, sizeof(s));
    s.id = -7;
    CHECK_OK(tc_process_set_add(list, n, &s.id));
    CHECK_GT(s.id, 0);
    s.n = n;
    s.me = -1;
    for (i = 0; i < n; i++) {
        member[list[i]] = 1;
    }
    CHECK_EQ(tc_process_set_size(s.id), n);
    CHECK_OK(tc_process_set_ranks(s.id, s.ranks, MAXR, &count));
    CHECK_EQ(count, n);
    for (r = 0; r < tt_size; r++) {
        if (!member[r]) {
            continue;
        }
        CHECK_MSG(s.ranks[k] == r, "process set %d: ranks[%d] is %d, want %d", s.id, k, s.ranks[k],
                  r);
        if (r == tt_rank) {
            s.me = k;
        }
        k++;
    }
    CHECK_EQ(tc_process_set_rank(s.id), s.me);
    return s;
}

/* add_set_nosync, and the id is the same on every rank. */
pset_t add_set(const int *list, int n)
{
    pset_t s = add_set_nosync(list, n);

    check_same("the new process set's id", s.id);
    return s;
}

/* Removes s (collective) and checks that it is gone on this rank. */
void remove_set(const pset_t *s)
{
    int count = -1;

    CHECK_OK(tc_process_set_remove(s->id));
    CHECK_EQ(tc_process_set_size(s->id), -1);
    CHECK_EQ(tc_process_set_rank(s->id), -1);
    CHECK_EQ(tc_process_set_ranks(s->id, NULL, 0, &count), TC_ERR_ARG);
    CHECK_EQ(count, -1);
}

/* The ranks r with r % 2 == parity into out; returns how many. */
int parity_list(int parity, int *out)
{
    int n = 0, r;

    for (r = parity; r < tt_size; r += 2) {
        out[n++] = r;
    }
    return n;
}

void ar_submit(const pset_t *s, ar_t *a)
{
    size_t es = tt_dtype_bytes(a->dt);
    tc_opts_t o = in_set(s->id);
    tc_tensor_t t = {NULL, a->dt, 1, {a->count}};
    int64_t i;

    a->send = tt_xmalloc((size_t)a->count * es);
    a->recv = a->in_place ? a->send : tt_xmalloc((size_t)a->count * es);
    for (i = 0; i < a->count; i++) {
        tt_store(a->dt, a->send, i, val(a->name, tt_rank, i, a->op == TC_MAX));
    }
    t.data = a->send;
    a->req = NULL;
    CHECK_OK(tc_allreduce_ex(a->name, &t, a->recv, a->op, &o, &a->req));
}

void ar_check(const pset_t *s, ar_t *a)
{
    size_t es = tt_dtype_bytes(a->dt);
    int wide = a->op == TC_MAX;
    int64_t i;
    int j;

    wait_free(a->req, a->name);
    for (i = 0; i < a->count; i++) {
        double acc = 0;
        unsigned char want[8];
        for (j = 0; j < s->n; j++) {
            double v = (double)val(a->name, s->ranks[j], i, wide);
            acc = a->op == TC_MAX ? (j == 0 || v > acc ? v : acc) : acc + v;
        }
        if (a->op == TC_AVG) {
            CHECK_EQ(a->dt, TC_FLOAT64);
            acc = acc / (double)s->n; /* the set's size, not the job's */
        }
        tt_store_real(a->dt, want, 0, acc);
        if (memcmp(a->recv + (size_t)i * es, want, es) != 0) {
            TC_CHECK_FAIL("'%s' (%s %s) in process set %d of %d ranks: element %lld is %.17g, "
                          "want %.17g",
                          a->name, tt_dtype_str(a->dt), tt_op_str(a->op), s->id, s->n, (long long)i,
                          tt_load(a->dt, a->recv, i), acc);
        }
    }
    if (!a->in_place) {
        free(a->recv);
    }
    free(a->send);
}

void set_allreduce(const pset_t *s, const char *name, tc_dtype_t dt, tc_op_t op, int64_t count,
                   int in_place)
{
    ar_t a = {name, dt, op, count, in_place, NULL, NULL, NULL};

    ar_submit(s, &a);
    ar_check(s, &a);
}
