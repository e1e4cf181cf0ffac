/*
 * test_coll.c - the ring allreduce, ring allgatherv and binomial broadcast on
 * 1..8 "ranks" that are threads of this process, joined by an in-memory
 * transport (test_coll_ranks.h). No MPI. Checks exact values and that every
 * rank ends with identical bits.
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

typedef struct {
    int rank, n;
    int what; /* 0 allreduce, 1 allgatherv, 2 bcast */
    tc_dtype_t dtype;
    tc_op_t op;
    size_t count;
    size_t chunk; /* ring chunk in bytes */
    int root;
    void *buf;
    const void *src; /* allreduce out of place: the input; NULL in place */
    size_t *bytes, *displs;
} job_t;

static void rank_main(tc_transport_t *t, void *arg)
{
    job_t *j = arg;
    tc_scratch_t scratch = {0};

    if (j->what == 0) {
        CHECK_OK(
            tc__ring_allreduce(t, j->src, j->buf, j->count, j->dtype, j->op, j->chunk, &scratch));
    } else if (j->what == 1) {
        CHECK_OK(tc__ring_allgatherv(t, j->buf, j->bytes, j->displs));
    } else {
        CHECK_OK(tc__bcast_binomial(t, j->buf, j->count, j->root));
    }
    tc__scratch_free(&scratch);
}

static void run_all(job_t *jobs, int n)
{
    coll_run(n, rank_main, jobs, sizeof(*jobs));
}

/* Out of place (oop), the output starts as garbage and the input must come
 * out unchanged. */
static void test_allreduce_mode(int n, size_t count, tc_dtype_t dt, tc_op_t op, size_t chunk,
                                int oop)
{
    job_t jobs[MAXN];
    void *in[MAXN];
    size_t es = tc_dtype_size(dt), i;
    int r;

    for (r = 0; r < n; r++) {
        jobs[r] = (job_t){
            .rank = r, .n = n, .what = 0, .dtype = dt, .op = op, .count = count, .chunk = chunk};
        jobs[r].buf = malloc(count * es + 1);
        in[r] = oop ? malloc(count * es + 1) : jobs[r].buf;
        for (i = 0; i < count; i++) {
            coll_store(dt, in[r], i, coll_input(r, i, op));
        }
        if (oop) {
            memset(jobs[r].buf, 0xAB, count * es + 1);
            jobs[r].src = in[r];
        }
    }
    run_all(jobs, n);
    for (r = 0; r < n && oop; r++) {
        for (i = 0; i < count; i++) {
            CHECK_MSG(coll_load(dt, in[r], i) == coll_input(r, i, op),
                      "n=%d count=%zu: rank "
                      "%d's input changed at [%zu]",
                      n, count, r, i);
        }
        free(in[r]);
    }
    for (i = 0; i < count; i++) {
        coll_check_value(dt, op, n, coll_load(dt, jobs[0].buf, i), i, "allreduce", count);
    }
    for (r = 1; r < n; r++) {
        CHECK_MSG(count == 0 || memcmp(jobs[0].buf, jobs[r].buf, count * es) == 0,
                  "n=%d count=%zu: rank %d differs from rank 0", n, count, r);
    }
    for (r = 0; r < n; r++) {
        free(jobs[r].buf);
    }
}

static void test_allreduce(int n, size_t count, tc_dtype_t dt, tc_op_t op, size_t chunk)
{
    test_allreduce_mode(n, count, dt, op, chunk, 0);
    test_allreduce_mode(n, count, dt, op, chunk, 1);
}

static void test_allgatherv(int n)
{
    job_t jobs[MAXN];
    coll_gather_t g;
    int r;

    coll_gather_make(&g, n, 3);
    for (r = 0; r < n; r++) {
        jobs[r] = (job_t){.rank = r, .n = n, .what = 1, .bytes = g.bytes, .displs = g.displs};
        jobs[r].buf = coll_gather_input(&g, r);
    }
    run_all(jobs, n);
    for (r = 0; r < n; r++) {
        CHECK_MSG(memcmp(jobs[r].buf, g.want, g.total) == 0, "allgatherv n=%d rank %d wrong", n, r);
        free(jobs[r].buf);
    }
    coll_gather_free(&g);
}

static void test_bcast(int n, int root, size_t bytes)
{
    job_t jobs[MAXN];
    size_t i;
    int r;

    for (r = 0; r < n; r++) {
        jobs[r] = (job_t){.rank = r, .n = n, .what = 2, .count = bytes, .root = root};
        jobs[r].buf = malloc(bytes + 1);
        for (i = 0; i < bytes; i++) {
            ((unsigned char *)jobs[r].buf)[i] = (unsigned char)(r == root ? i * 13 + 1 : 0xEE);
        }
    }
    run_all(jobs, n);
    for (r = 0; r < n; r++) {
        for (i = 0; i < bytes; i++) {
            CHECK_MSG(((unsigned char *)jobs[r].buf)[i] == (unsigned char)(i * 13 + 1),
                      "bcast n=%d root=%d rank %d byte %zu", n, root, r, i);
        }
        free(jobs[r].buf);
    }
}

static const tc_dtype_t all_dtypes[] = {TC_INT32,   TC_FLOAT32,  TC_FLOAT64,
                                        TC_FLOAT16, TC_BFLOAT16, TC_INT16};
static const tc_op_t all_ops[] = {TC_SUM, TC_AVG, TC_MIN, TC_MAX, TC_PROD};

/* Element counts for n ranks: 0, 1, n-1, n+1, and primes. */
#define COUNTS(n)                                                                                  \
    {                                                                                              \
        0, 1, (size_t)(n)-1, (size_t)(n) + 1, 97, 7919                                             \
    }
#define NCOUNTS 6

/* Every dtype x op (avg on floating dtypes) x count on 1..MAXN ranks, with
 * chunks larger than any of them. */
TC_CASE(allreduce_every_dtype_op_count)
{
    int n;
    size_t d, o, c;

    for (n = 1; n <= MAXN; n++) {
        size_t counts[NCOUNTS] = COUNTS(n);
        for (c = 0; c < NCOUNTS; c++) {
            for (d = 0; d < sizeof(all_dtypes) / sizeof(all_dtypes[0]); d++) {
                for (o = 0; o < sizeof(all_ops) / sizeof(all_ops[0]); o++) {
                    if (all_ops[o] == TC_AVG &&
                        (all_dtypes[d] == TC_INT32 || all_dtypes[d] == TC_INT16)) {
                        continue;
                    }
                    test_allreduce(n, counts[c], all_dtypes[d], all_ops[o], (size_t)1 << 20);
                    g_runs++;
                }
            }
        }
    }
}

/* Chunks of one element, of an odd byte count, and of less than one element. */
TC_CASE(allreduce_small_chunks)
{
    int n;
    size_t c;

    for (n = 1; n <= MAXN; n++) {
        size_t counts[NCOUNTS] = COUNTS(n);
        for (c = 0; c < NCOUNTS; c++) {
            test_allreduce(n, counts[c], TC_FLOAT32, TC_SUM, 4);
            test_allreduce(n, counts[c], TC_FLOAT16, TC_AVG, 11);
            test_allreduce(n, counts[c], TC_INT32, TC_PROD, 3); /* less than one element */
            g_runs += 3;
        }
    }
}

/* 300001 elements: chunks of a few KiB, and one chunk per segment. */
TC_CASE(allreduce_large)
{
    int n;

    for (n = 1; n <= MAXN; n++) {
        test_allreduce(n, 300001, TC_FLOAT32, TC_SUM, 4096);
        test_allreduce(n, 300001, TC_FLOAT64, TC_MAX, (size_t)1 << 20);
        g_runs += 2;
    }
}

/* Blocks of different sizes, some empty, on 1..MAXN ranks. */
TC_CASE(allgatherv_uneven_blocks)
{
    int n;

    for (n = 1; n <= MAXN; n++) {
        test_allgatherv(n);
    }
}

/* From every root: 0, 1 and 4099 bytes on 1..MAXN ranks. */
TC_CASE(bcast_every_root)
{
    int n, root;

    for (n = 1; n <= MAXN; n++) {
        for (root = 0; root < n; root++) {
            test_bcast(n, root, 0);
            test_bcast(n, root, 1);
            test_bcast(n, root, 4099);
        }
        g_runs += 3 * n;
    }
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    printf("test_coll: %d collective runs ok\n", g_runs);
    return 0;
}
