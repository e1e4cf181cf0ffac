/*
 * test_ordered.c - the allreduce and reduce-scatter in the documented order
 * (coll/ordered_rs.c) on 1..8 "ranks" that are threads of this process
 * (test_coll_ranks.h). No MPI.
 *
 * Inputs are non-integer floats, so the bits depend on the order of the
 * additions. Every result must have, bit for bit, the bits of a reference
 * written here from the documented order alone (each node's ranks left to
 * right, then the nodes in the order of their lowest rank, with the
 * two-operand kernel), whatever the chunk size, the offset of the data in a
 * larger buffer (as fusion places it), in place or not, and for every
 * layout of ranks on nodes: one node, halves, interleaved, every rank
 * alone. The ranks' sendrecv calls must pair up call by call, and inputs of
 * an out-of-place call must come out unchanged.
 */
#define _GNU_SOURCE
#include "check.h"
#include "tc_test.h"
#include "test_coll_ranks.h"
#include "coll/coll.h"
#include "reduce/reduce.h"

#include <stdlib.h>

#define MAXN COLL_MAXN

enum { LAY_ONE, LAY_HALVES, LAY_ALTERNATE, LAY_ALONE, NLAYS };

static int g_runs;

typedef struct {
    int rs; /* reduce-scatter (else allreduce) */
    tc_dtype_t dtype;
    tc_op_t op;
    size_t count, chunk; /* allreduce: elements; reduce-scatter: rows of 3 */
    const void *src;     /* NULL: in place */
    void *buf;
    const int *node;
} job_t;

static void rank_main(tc_transport_t *t, void *arg)
{
    job_t *j = arg;
    tc_scratch_t scratch = {0};

    if (j->rs) {
        CHECK_OK(tc__ordered_reducescatter(t, j->src, j->buf, j->count, 3, j->dtype, j->op,
                                           j->chunk, &scratch, j->node));
    } else {
        CHECK_OK(tc__ordered_allreduce(t, j->src, j->buf, j->count, j->dtype, j->op, j->chunk,
                                       &scratch, j->node));
    }
    tc__scratch_free(&scratch);
}

/* The node table of a layout: the lowest rank on p's node. */
static void layout(int lay, int n, int *node)
{
    int p;

    for (p = 0; p < n; p++) {
        switch (lay) {
        case LAY_ONE: node[p] = 0; break;
        case LAY_HALVES: node[p] = p < (n + 1) / 2 ? 0 : (n + 1) / 2; break;
        case LAY_ALTERNATE: node[p] = p % 2; break;
        default: node[p] = p;
        }
    }
}

/* Element i of rank r's input: a non-integer in [-4, 4). */
static double value(int r, size_t i)
{
    uint64_t h =
        (uint64_t)(r + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)(i + 7) * 0xbf58476d1ce4e5b9ull;

    h ^= h >> 31;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 29;
    return (double)(h >> 11) / 9007199254740992.0 * 8.0 - 4.0;
}

/* The documented order, written out: into ref (count elements of dt). */
static void reference(tc_dtype_t dt, tc_op_t op, int n, const int *node, char *const *in, void *ref,
                      size_t count)
{
    const size_t bytes = count * tc_dtype_size(dt);
    const tc_op_t sum = op == TC_AVG ? TC_SUM : op;
    char *part = malloc(bytes + 1);
    int first = 1, lead, q;

    CHECK(part != NULL);
    for (lead = 0; lead < n; lead++) {
        int started = 0;
        for (q = 0; q < n; q++) {
            if (node[q] != lead) {
                continue;
            }
            if (!started) {
                memcpy(part, in[q], bytes);
                started = 1;
            } else {
                tc__reduce(dt, sum, part, in[q], count);
            }
        }
        if (!started) {
            continue;
        }
        if (first) {
            memcpy(ref, part, bytes);
            first = 0;
        } else {
            tc__reduce(dt, sum, ref, part, count);
        }
    }
    if (op == TC_AVG) {
        tc__reduce_avg_finish(dt, ref, count, n);
    }
    free(part);
}

/* One run on n ranks: every rank's result against the reference. pad
 * elements before the data place it at an offset, as fusion would. */
static void run(int rs, tc_dtype_t dt, tc_op_t op, int n, int lay, size_t count, size_t chunk,
                int in_place, size_t pad)
{
    const size_t es = tc_dtype_size(dt), elems = rs ? count * 3 : count;
    job_t jobs[MAXN];
    char *in[MAXN], *out[MAXN], *ref;
    int node[MAXN], r;
    size_t i;

    layout(lay, n, node);
    ref = malloc(elems * es + 1);
    CHECK(ref != NULL);
    for (r = 0; r < n; r++) {
        char *keep = malloc((pad + elems) * es + 1);
        in[r] = malloc(elems * es + 1);
        CHECK(keep != NULL && in[r] != NULL);
        for (i = 0; i < elems; i++) {
            coll_store(dt, in[r], i, value(r, i));
        }
        memcpy(keep + pad * es, in[r], elems * es);
        out[r] = keep;
        jobs[r] = (job_t){rs, dt, op, count, chunk, NULL, keep + pad * es, node};
        if (!in_place) {
            jobs[r].src = in[r];
            memset(jobs[r].buf, 0xA5, elems * es);
        }
    }
    reference(dt, op, n, node, in, ref, elems);
    coll_run(n, rank_main, jobs, sizeof(*jobs));
    coll_check_calls_paired(n);
    for (r = 0; r < n; r++) {
        size_t off = 0, len = elems;
        if (rs) {
            tc__row_block(count, 3, n, r, &off, &len);
        }
        CHECK_MSG(memcmp((char *)jobs[r].buf, ref + off * es, len * es) == 0,
                  "%s dtype %d op %d n=%d layout %d count %zu chunk %zu%s: rank %d differs from "
                  "the documented order",
                  rs ? "reducescatter" : "allreduce", (int)dt, (int)op, n, lay, count, chunk,
                  in_place ? " in place" : "", r);
        for (i = 0; !in_place && i < elems; i++) { /* the input unchanged */
            unsigned char want[8];
            coll_store(dt, want, 0, value(r, i));
            CHECK(memcmp(in[r] + i * es, want, es) == 0);
        }
        free(out[r]);
        free(in[r]);
    }
    free(ref);
    g_runs++;
}

/* Float sums (whose bits depend on the order) on every layout and group
 * size, several chunk sizes, at an offset and not, in place and not. */
TC_CASE(allreduce_in_the_documented_order)
{
    static const tc_dtype_t dts[] = {TC_FLOAT32, TC_FLOAT16, TC_BFLOAT16, TC_FLOAT64};
    size_t d;
    int n, lay;

    for (n = 1; n <= MAXN; n++) {
        for (lay = 0; lay < NLAYS; lay++) {
            for (d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
                run(0, dts[d], TC_SUM, n, lay, 1001, 12, 0, 0);
                run(0, dts[d], TC_SUM, n, lay, 1001, 4096, 1, 3);
                run(0, dts[d], TC_AVG, n, lay, 333, 1 << 20, 0, 5);
            }
            run(0, TC_FLOAT32, TC_PROD, n, lay, (size_t)n, 4, 1, 0);
            run(0, TC_FLOAT32, TC_SUM, n, lay, 0, 64, 0, 0);
        }
    }
}

TC_CASE(reducescatter_in_the_documented_order)
{
    static const tc_dtype_t dts[] = {TC_FLOAT32, TC_FLOAT16, TC_BFLOAT16};
    size_t d;
    int n, lay;

    for (n = 1; n <= MAXN; n++) {
        for (lay = 0; lay < NLAYS; lay++) {
            for (d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
                run(1, dts[d], TC_SUM, n, lay, 77, 12, 0, 0);
                run(1, dts[d], TC_AVG, n, lay, 77, 1 << 16, 0, 2);
            }
            run(1, TC_FLOAT32, TC_SUM, n, lay, (size_t)n - 1, 8, 0, 0); /* an empty block */
        }
    }
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    printf("test_ordered: %d collective runs ok\n", g_runs);
    return 0;
}
