/*
 * test_coll_rs.c - the ring reduce-scatter by row blocks on 1..8 "ranks" that
 * are threads of this process (test_coll_ranks.h). No MPI. Each rank's block
 * is checked bit for bit against the reduction in the documented ring order,
 * and with integer-valued inputs against exact values and against the ring
 * allreduce; inputs must come out unchanged, nothing past a block may be
 * written, and the ranks' sendrecv calls must pair up call by call.
 */
#define _GNU_SOURCE
#include "check.h"
#include "tc_test.h"
#include "test_coll_ranks.h"
#include "coll/coll.h"
#include "reduce/reduce.h"

#include <stdlib.h>

#define MAXN COLL_MAXN

static int g_runs; /* collective runs checked, for the summary line */

/* One rank's part: a reduce-scatter, or (RS_VS_ALLREDUCE) an allreduce of
 * the same input into buf. */
typedef struct {
    int allreduce;
    tc_dtype_t dtype;
    tc_op_t op;
    size_t rows, row_elems, chunk;
    const void *src;
    void *buf;
} job_t;

static void rank_main(tc_transport_t *t, void *arg)
{
    job_t *j = arg;
    tc_scratch_t scratch = {0};

    if (j->allreduce) {
        CHECK_OK(tc__ring_allreduce(t, j->src, j->buf, j->rows * j->row_elems, j->dtype, j->op,
                                    j->chunk, &scratch));
    } else {
        CHECK_OK(tc__ring_reducescatter(t, j->src, j->buf, j->rows, j->row_elems, j->dtype, j->op,
                                        j->chunk, &scratch));
    }
    tc__scratch_free(&scratch);
}

static void run_all(job_t *jobs, int n)
{
    coll_run(n, rank_main, jobs, sizeof(*jobs));
}

static const tc_op_t all_ops[] = {TC_SUM, TC_AVG, TC_MIN, TC_MAX, TC_PROD};

#define CANARY 16 /* bytes past a reduce-scatter block that must stay as they were */

enum {
    RS_EXACT = 1,        /* integer-valued inputs: also check with coll_check_value */
    RS_VS_ALLREDUCE = 2, /* also run ring allreduce on the same inputs: same bits */
};

/* Input of rank r at element i: coll_input() when exact; otherwise fractions, so
 * that a floating-point sum depends on the order of its terms. */
static double rs_input(int r, size_t i, tc_op_t op, int exact)
{
    if (exact) {
        return coll_input(r, i, op);
    }
    if (op == TC_PROD) {
        return 1.0 + (double)((i * 5 + (size_t)r * 3) % 11) / 64;
    }
    return ((double)((i * 7 + (size_t)r * 13) % 23) - 11) / 7.0 + (double)r / 3.0;
}

/* Ring reduce-scatter of rows x row_elems elements on n ranks. Each rank's
 * block must equal, bit for bit, the reduction in the order ring_reducescatter.c
 * documents, made here with tc__reduce on whole blocks: block j is
 * ((x[j+1] op x[j+2]) op ...) op x[j], then divided by n for TC_AVG. Also:
 * inputs unchanged, nothing written past the block, sendrecv calls paired
 * and nchunks x (n-1) of them on every rank. */
static void test_reducescatter(int n, size_t rows, size_t row_elems, tc_dtype_t dt, tc_op_t op,
                               size_t chunk, int flags)
{
    job_t jobs[MAXN];
    unsigned char *in[MAXN], *copy[MAXN];
    const size_t es = tc_dtype_size(dt), count = rows * row_elems;
    size_t i, off, len, max_len, per_chunk, calls;
    int r, m;

    for (r = 0; r < n; r++) {
        in[r] = malloc(count * es + 1);
        copy[r] = malloc(count * es + 1);
        CHECK(in[r] != NULL && copy[r] != NULL);
        for (i = 0; i < count; i++) {
            coll_store(dt, in[r], i, rs_input(r, i, op, flags & RS_EXACT));
        }
        memcpy(copy[r], in[r], count * es);
        tc__row_block(rows, row_elems, n, r, &off, &len);
        jobs[r] = (job_t){.dtype = dt,
                          .op = op,
                          .rows = rows,
                          .row_elems = row_elems,
                          .chunk = chunk,
                          .src = in[r]};
        jobs[r].buf = malloc(len * es + CANARY);
        CHECK(jobs[r].buf != NULL);
        memset(jobs[r].buf, 0xAB, len * es + CANARY);
    }
    run_all(jobs, n);

    calls = coll_check_calls_paired(n);
    tc__row_block(rows, row_elems, n, 0, &off, &max_len);
    per_chunk = chunk / es > 0 ? chunk / es : 1;
    CHECK_EQ(calls, (max_len + per_chunk - 1) / per_chunk * (size_t)(n - 1));

    for (r = 0; r < n; r++) {
        unsigned char *got = jobs[r].buf, *ref;

        CHECK_MSG(memcmp(in[r], copy[r], count * es) == 0,
                  "reducescatter n=%d rows=%zu: rank "
                  "%d's input changed",
                  n, rows, r);
        tc__row_block(rows, row_elems, n, r, &off, &len);
        for (i = len * es; i < len * es + CANARY; i++) {
            CHECK_MSG(got[i] == 0xAB,
                      "reducescatter n=%d rows=%zu: rank %d wrote byte %zu of "
                      "a %zu-byte block",
                      n, rows, r, i, len * es);
        }
        ref = malloc(len * es + 1);
        CHECK(ref != NULL);
        memcpy(ref, in[(r + 1) % n] + off * es, len * es);
        for (m = 2; m <= n; m++) {
            tc__reduce(dt, op, ref, in[(r + m) % n] + off * es, len);
        }
        if (op == TC_AVG) {
            tc__reduce_avg_finish(dt, ref, len, n);
        }
        for (i = 0; i < len; i++) {
            CHECK_MSG(memcmp(got + i * es, ref + i * es, es) == 0,
                      "reducescatter n=%d rows=%zu "
                      "row_elems=%zu %s %s chunk=%zu: rank %d [%zu]: got %g want %g (ring order)",
                      n, rows, row_elems, tc_dtype_name(dt), tc_op_name(op), chunk, r, off + i,
                      coll_load(dt, got, i), coll_load(dt, ref, i));
            if (flags & RS_EXACT) {
                coll_check_value(dt, op, n, coll_load(dt, got, i), off + i, "reducescatter", count);
            }
        }
        free(ref);
    }

    if (flags & RS_VS_ALLREDUCE) {
        job_t ar[MAXN];
        for (r = 0; r < n; r++) {
            ar[r] = jobs[r];
            ar[r].allreduce = 1;
            ar[r].buf = malloc(count * es + 1);
            CHECK(ar[r].buf != NULL);
        }
        run_all(ar, n);
        for (r = 0; r < n; r++) {
            tc__row_block(rows, row_elems, n, r, &off, &len);
            CHECK_MSG(memcmp((char *)ar[r].buf + off * es, jobs[r].buf, len * es) == 0,
                      "n=%d rows=%zu %s %s: rank %d's reduce-scatter block differs from its "
                      "slice of the allreduce",
                      n, rows, tc_dtype_name(dt), tc_op_name(op), r);
        }
        for (r = 0; r < n; r++) {
            free(ar[r].buf);
        }
    }
    for (r = 0; r < n; r++) {
        free(jobs[r].buf);
        free(in[r]);
        free(copy[r]);
    }
}

/* Row blocks cover the rows once, in order, in whole rows, the first
 * rows % n of them one row longer. */
TC_CASE(row_blocks_cover_rows)
{
    size_t rows[] = {0, 1, 2, 7, 8, 9, 97, 1000};
    size_t elems[] = {0, 1, 3, 1024};
    size_t ri, ei;
    int n, i;

    for (ri = 0; ri < sizeof(rows) / sizeof(rows[0]); ri++) {
        for (ei = 0; ei < sizeof(elems) / sizeof(elems[0]); ei++) {
            for (n = 1; n <= 2 * MAXN + 1; n++) {
                size_t next = 0, off, len;
                for (i = 0; i < n; i++) {
                    tc__row_block(rows[ri], elems[ei], n, i, &off, &len);
                    CHECK_EQ(off, next);
                    CHECK_EQ(len, (rows[ri] / (size_t)n + ((size_t)i < rows[ri] % (size_t)n)) *
                                      elems[ei]);
                    next = off + len;
                }
                CHECK_EQ(next, rows[ri] * elems[ei]);
            }
        }
    }
}

static const tc_dtype_t rs_dtypes[] = {TC_INT8,    TC_INT32,   TC_FLOAT16, TC_BFLOAT16,
                                       TC_FLOAT32, TC_FLOAT64, TC_INT16};

/* Row counts for n ranks: none, fewer than n (blocks empty), n - 1, n,
 * n + 1 (one block longer), 2n + 3, and a prime. */
#define ROWS(n)                                                                                    \
    {                                                                                              \
        0, 1, (size_t)(n)-1, (size_t)(n), (size_t)(n) + 1, 2 * (size_t)(n) + 3, 97                 \
    }
#define NROWS 7

/* Every dtype x op (avg on floating dtypes) x row count, rows of 1 and of 3
 * elements, on 1..MAXN ranks, with chunks larger than any block. */
TC_CASE(reducescatter_every_dtype_op_rows)
{
    size_t elems[] = {1, 3};
    size_t d, o, c, e;
    int n;

    for (n = 1; n <= MAXN; n++) {
        size_t rows[NROWS] = ROWS(n);
        for (c = 0; c < NROWS; c++) {
            for (e = 0; e < 2; e++) {
                for (d = 0; d < sizeof(rs_dtypes) / sizeof(rs_dtypes[0]); d++) {
                    for (o = 0; o < sizeof(all_ops) / sizeof(all_ops[0]); o++) {
                        if (all_ops[o] == TC_AVG &&
                            (rs_dtypes[d] == TC_INT8 || rs_dtypes[d] == TC_INT16 ||
                             rs_dtypes[d] == TC_INT32)) {
                            continue;
                        }
                        test_reducescatter(n, rows[c], elems[e], rs_dtypes[d], all_ops[o],
                                           (size_t)1 << 20, RS_EXACT);
                        g_runs++;
                    }
                }
            }
        }
    }
}

/* Chunks of one element, of a few elements that do not make a row, of an odd
 * byte count, and of less than one element: many chunks per block. */
TC_CASE(reducescatter_small_chunks)
{
    size_t c;
    int n;

    for (n = 1; n <= MAXN; n++) {
        size_t rows[NROWS] = ROWS(n);
        for (c = 0; c < NROWS; c++) {
            test_reducescatter(n, rows[c], 5, TC_FLOAT32, TC_SUM, 4, RS_EXACT);
            test_reducescatter(n, rows[c], 5, TC_FLOAT16, TC_AVG, 11, RS_EXACT);
            test_reducescatter(n, rows[c], 5, TC_INT32, TC_PROD, 3, RS_EXACT);
            test_reducescatter(n, rows[c], 5, TC_INT8, TC_MAX, 1, RS_EXACT);
            test_reducescatter(n, rows[c], 5, TC_FLOAT64, TC_MIN, 24, RS_EXACT);
            g_runs += 5;
        }
    }
}

/* 3001 rows of 37 elements and 300001 rows of one: chunks of a few KiB (tens
 * to hundreds of chunks per block), and one chunk per block. */
TC_CASE(reducescatter_large)
{
    int n;

    for (n = 1; n <= MAXN; n++) {
        test_reducescatter(n, 3001, 37, TC_FLOAT32, TC_SUM, 4096, RS_EXACT);
        test_reducescatter(n, 3001, 37, TC_INT8, TC_SUM, 1000, RS_EXACT);
        test_reducescatter(n, 300001, 1, TC_FLOAT64, TC_MAX, (size_t)1 << 20, RS_EXACT);
        test_reducescatter(n, 300001, 1, TC_BFLOAT16, TC_AVG, 4096, RS_EXACT);
        g_runs += 4;
    }
}

/* Fractional inputs, where a float sum depends on the order of its terms:
 * the bits are those of the documented ring order, whatever the chunk. */
TC_CASE(reducescatter_order_is_fixed)
{
    const tc_dtype_t dts[] = {TC_FLOAT16, TC_BFLOAT16, TC_FLOAT32, TC_FLOAT64};
    const tc_op_t ops[] = {TC_SUM, TC_AVG, TC_PROD};
    const size_t chunks[] = {(size_t)1 << 20, 8, 6};
    size_t d, o, c;
    int n;

    for (n = 1; n <= MAXN; n++) {
        for (d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
            for (o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
                for (c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
                    test_reducescatter(n, (size_t)n + 1, 3, dts[d], ops[o], chunks[c], 0);
                    test_reducescatter(n, 97, 3, dts[d], ops[o], chunks[c], 0);
                    g_runs += 2;
                }
            }
        }
    }
}

/* Integer-valued inputs: each rank's block is, bit for bit, its slice of a
 * ring allreduce of the same inputs (TC_AVG included: the same sum, divided
 * by the same tc__reduce_avg_finish). */
TC_CASE(reducescatter_matches_allreduce)
{
    const tc_dtype_t dts[] = {TC_INT32, TC_FLOAT16, TC_FLOAT32, TC_FLOAT64};
    size_t d, o;
    int n;

    for (n = 1; n <= MAXN; n++) {
        for (d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
            for (o = 0; o < sizeof(all_ops) / sizeof(all_ops[0]); o++) {
                if (all_ops[o] == TC_AVG && dts[d] == TC_INT32) {
                    continue;
                }
                test_reducescatter(n, 2 * (size_t)n + 3, 3, dts[d], all_ops[o], 40,
                                   RS_EXACT | RS_VS_ALLREDUCE);
                g_runs += 2;
            }
        }
    }
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    printf("test_coll_rs: %d collective runs ok\n", g_runs);
    return 0;
}
