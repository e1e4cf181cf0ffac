/*
 * test_a2a_plan.c - the plan an alltoall's device records run from
 * (tc__alltoall_plan: every rank's row counts exchanged over the set's
 * transport, this rank's blocks, the largest input) and the blocks a record
 * that reads every rank's input copies (tc__alltoall_blocks, which the
 * in-node CUDA IPC record uses on the device), on 1..8 "ranks" that are
 * threads of this process (test_coll_ranks.h). No MPI, no GPU: the inputs
 * are host memory every thread can read, as the IPC record's peers' inputs
 * are opened device memory. Uneven splits, empty blocks, ranks that send
 * nothing, rows of several elements, even splits (none given): every byte
 * of every output must be the one its sender put at the right place, and
 * nothing past the output may be written.
 */
#define _GNU_SOURCE
#include "check.h"
#include "exec/algo.h"
#include "tc_test.h"
#include "test_coll_ranks.h"

#include <stdlib.h>
#include <string.h>

#define MAXN COLL_MAXN
#define ROW_ELEMS 3 /* int32 elements in a row */
#define ROW (ROW_ELEMS * sizeof(int32_t))

static int g_runs;

/* Rows rank s sends rank d in each pattern (-1 for pattern 4: even, from dim 0). */
static int64_t rows_of(int pattern, int n, int s, int d)
{
    switch (pattern) {
    case 0: return (s * 5 + d * 3) % 7;                   /* uneven, some empty */
    case 1: return 0;                                     /* nothing at all */
    case 2: return s == 0 ? 0 : d + 1;                    /* rank 0 sends nothing */
    case 3: return (int64_t)((s + 1) * (d + 2)) * 37 / n; /* larger, uneven */
    default: return 2;                                    /* even: no splits given */
    }
}

/* Element k of row r of what rank s sends rank d. */
static int32_t value(int s, int d, int64_t r, int k)
{
    return (int32_t)(s * 1000003 + d * 10007 + r * 101 + k + 1);
}

typedef struct {
    int pattern, n;
    const void *const *inputs; /* every rank's input */
} job_t;

static void rank_main(tc_transport_t *t, void *arg)
{
    const job_t *j = arg;
    const int n = t->size, me = t->rank;
    int64_t splits[MAXN], total_rows = 0, want_rows = 0;
    size_t most = 0;
    tc_algo_ctx_t x;
    tc_request_t req;
    tc_alltoall_plan_t p;
    char msg[256] = "";
    int s, d, q;

    memset(&x, 0, sizeof(x));
    memset(&req, 0, sizeof(req));
    x.tp = t;
    for (d = 0; d < n; d++) {
        splits[d] = j->pattern == 4 ? 2 : rows_of(j->pattern, n, me, d);
        total_rows += splits[d];
    }
    req.name = (char *)"a2a";
    req.kind = TC_KIND_ALLTOALL;
    req.dtype = TC_INT32;
    req.ndim = 2;
    req.shape[0] = total_rows;
    req.shape[1] = ROW_ELEMS;
    req.splits = j->pattern == 4 ? NULL : splits;
    req.nsplits = j->pattern == 4 ? 0 : n;
    CHECK_OK(tc__alltoall_plan(&x, &req, &p, msg, sizeof(msg)));
    CHECK_EQ(p.row, ROW);
    /* the whole matrix, this rank's blocks both ways, the largest input */
    for (s = 0; s < n; s++) {
        size_t in = 0;
        for (d = 0; d < n; d++) {
            int64_t want = j->pattern == 4 ? 2 : rows_of(j->pattern, n, s, d);
            CHECK_MSG(p.matrix[(size_t)s * (size_t)n + (size_t)d] == (uint64_t)want,
                      "pattern %d n=%d rank %d: matrix[%d][%d] = %llu, want %lld", j->pattern, n,
                      me, s, d, (unsigned long long)p.matrix[(size_t)s * (size_t)n + (size_t)d],
                      (long long)want);
            in += (size_t)want * ROW;
        }
        most = in > most ? in : most;
    }
    CHECK_EQ(p.most, most);
    {
        size_t off = 0;
        for (d = 0; d < n; d++) {
            CHECK_EQ(p.sb[d], (size_t)splits[d] * ROW);
            CHECK_EQ(p.sd[d], off);
            off += p.sb[d];
        }
        off = 0;
        for (s = 0; s < n; s++) {
            int64_t rows = (int64_t)p.matrix[(size_t)s * (size_t)n + (size_t)me];
            CHECK_EQ(p.rb[s], (size_t)rows * ROW);
            CHECK_EQ(p.rd[s], off);
            CHECK_EQ(req.out_splits[s], rows);
            off += p.rb[s];
            want_rows += rows;
        }
        CHECK_EQ(req.nout_splits, n);
        CHECK_EQ(p.total, off);
        CHECK_EQ(p.rows, want_rows);
    }
    /* the blocks, copied as the IPC record copies them */
    {
        unsigned char *out = malloc(p.total + 16);
        void *dsts[MAXN];
        const void *srcs[MAXN];
        size_t bytes[MAXN];
        tc_alltoall_job_t aj = {j->inputs[me], out, p.sb, p.sd, p.rb, p.rd, p.matrix, p.row, NULL};
        int64_t r, at = 0;
        int k;

        CHECK(out != NULL);
        memset(out, 0xA5, p.total + 16);
        tc__alltoall_blocks(&aj, n, me, j->inputs, dsts, srcs, bytes);
        for (s = 0; s < n; s++) {
            memcpy(dsts[s], srcs[s], bytes[s]);
        }
        for (s = 0; s < n; s++) {
            for (r = 0; r < req.out_splits[s]; r++, at++) {
                for (k = 0; k < ROW_ELEMS; k++) {
                    int32_t got;
                    memcpy(&got, out + (size_t)at * ROW + (size_t)k * sizeof(got), sizeof(got));
                    CHECK_MSG(got == value(s, me, r, k),
                              "pattern %d n=%d rank %d: row %lld from rank %d, element %d: %d, "
                              "want %d",
                              j->pattern, n, me, (long long)r, s, k, got, value(s, me, r, k));
                }
            }
        }
        for (q = 0; q < 16; q++) {
            CHECK_EQ(out[p.total + (size_t)q], 0xA5);
        }
        free(out);
    }
    tc__alltoall_plan_free(&req, &p);
    CHECK(req.out_splits == NULL && req.nout_splits == 0 && p.matrix == NULL);
}

/* Rank s's input for a pattern: its rows to rank 0, then to rank 1, ... */
static void *make_input(int pattern, int n, int s)
{
    size_t rows = 0, at = 0;
    int32_t *in;
    int d, k;
    int64_t r;

    for (d = 0; d < n; d++) {
        rows += (size_t)(pattern == 4 ? 2 : rows_of(pattern, n, s, d));
    }
    in = malloc(rows * ROW + 1);
    CHECK(in != NULL);
    for (d = 0; d < n; d++) {
        int64_t nr = pattern == 4 ? 2 : rows_of(pattern, n, s, d);
        for (r = 0; r < nr; r++, at++) {
            for (k = 0; k < ROW_ELEMS; k++) {
                in[at * ROW_ELEMS + (size_t)k] = value(s, d, r, k);
            }
        }
    }
    return in;
}

TC_CASE(plan_and_blocks)
{
    int pattern, n, r;

    for (pattern = 0; pattern <= 4; pattern++) {
        for (n = 1; n <= MAXN; n++) {
            void *inputs[MAXN];
            job_t jobs[MAXN];
            for (r = 0; r < n; r++) {
                inputs[r] = make_input(pattern, n, r);
            }
            for (r = 0; r < n; r++) {
                jobs[r].pattern = pattern;
                jobs[r].n = n;
                jobs[r].inputs = (const void *const *)inputs;
            }
            coll_run(n, rank_main, jobs, sizeof(jobs[0]));
            for (r = 0; r < n; r++) {
                free(inputs[r]);
            }
            g_runs++;
        }
    }
}

/* A transport that fails: the plan says so, naming the tensor, and leaves
 * nothing allocated. */
static void failing_main(tc_transport_t *t, void *arg)
{
    tc_algo_ctx_t x;
    tc_request_t req;
    tc_alltoall_plan_t p;
    char msg[256] = "";
    coll_fake_t impl;
    tc_transport_t lone;

    (void)arg;
    /* rank 1 of 2 on a network of its own that reaches no one */
    coll_fake_open(&lone, &impl, 1, 2, 1, 0u, 0);
    memset(&x, 0, sizeof(x));
    memset(&req, 0, sizeof(req));
    x.tp = &lone;
    req.name = (char *)"lonely";
    req.kind = TC_KIND_ALLTOALL;
    req.dtype = TC_FLOAT32;
    req.ndim = 1;
    req.shape[0] = 4;
    CHECK(tc__alltoall_plan(&x, &req, &p, msg, sizeof(msg)) != TC_OK);
    CHECK_MSG(strstr(msg, "tensor 'lonely'") != NULL && strstr(msg, "row counts") != NULL, "%s",
              msg);
    CHECK(req.out_splits == NULL && p.matrix == NULL && p.sb == NULL);
    lone.close(&lone);
    (void)t;
}

TC_CASE(transport_fails)
{
    coll_run(1, failing_main, NULL, 0);
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    printf("test_a2a_plan: %d sets of ranks ok\n", g_runs);
    return 0;
}
