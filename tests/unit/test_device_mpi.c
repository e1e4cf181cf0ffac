/*
 * test_device_mpi.c - the movements of the device records over a
 * CUDA-aware MPI (device_mpi.c: tc__direct_*) on 1..8 "ranks" that are
 * threads of this process (test_coll_ranks.h), with host stand-ins for the
 * memory's operations (copies, the combine, scratch): no MPI, no GPU. What
 * the device does is the combine kernel's, tested against the host's bits
 * by test_gpu_reduce on a GPU; what is tested here is everything around it:
 * the blocks each rank combines and where they land, every byte of every
 * kind's output, in place and apart, empty tensors and blocks, the scaling
 * factors passed through, and the agreements: a rank that cannot get
 * scratch or has no output makes every rank decline with nothing moved,
 * and a combine that fails on one rank fails the allreduce on every rank,
 * naming it.
 */
#define _GNU_SOURCE
#include "check.h"
#include "exec/algo.h"
#include "reduce/reduce.h"
#include "tc_test.h"
#include "test_coll_ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN COLL_MAXN

/* The stand-ins take the "device" number as the rank, so that one rank's
 * allocation or combine can be made to fail. */
static int g_fail_alloc = -1, g_fail_combine = -1;

static tc_status_t host_copy(int dev, int n, void *const *dst, const void *const *src,
                             const size_t *bytes, char *why, size_t len)
{
    int k;

    (void)dev, (void)why, (void)len;
    for (k = 0; k < n; k++) {
        memcpy(dst[k], src[k], bytes[k]);
    }
    return TC_OK;
}

/* The documented order on one node: prescale each, left to right, the
 * average's division, postscale (what the combine kernel does). */
static void combine_into(tc_dtype_t dt, tc_op_t op, int n, const void *const *x, void *dst,
                         size_t count, double pre, double post)
{
    size_t bytes = count * tc_dtype_size(dt);
    char *acc = malloc(bytes + 1), *tmp = malloc(bytes + 1);
    int k;

    CHECK(acc != NULL && tmp != NULL);
    tc__scale(dt, acc, x[0], count, pre);
    for (k = 1; k < n; k++) {
        tc__scale(dt, tmp, x[k], count, pre);
        tc__reduce(dt, op == TC_AVG ? TC_SUM : op, acc, tmp, count);
    }
    if (op == TC_AVG) {
        tc__reduce_avg_finish(dt, acc, count, n);
    }
    tc__scale(dt, dst, acc, count, post);
    free(acc);
    free(tmp);
}

static tc_status_t host_combine(int dev, tc_dtype_t dt, tc_op_t op, int n, const void *const *x,
                                void *dst, size_t count, double pre, double post, char *why,
                                size_t len)
{
    if (dev == g_fail_combine) {
        snprintf(why, len, "the kernel broke");
        return TC_ERR_TRANSPORT;
    }
    combine_into(dt, op, n, x, dst, count, pre, post);
    return TC_OK;
}

static int g_fail_ready = -1;

static tc_status_t host_ready(int dev, tc_dtype_t dt, char *why, size_t len)
{
    (void)dt;
    if (dev == g_fail_ready) {
        snprintf(why, len, "no kernel for this GPU");
        return TC_ERR_TRANSPORT;
    }
    return TC_OK;
}

static tc_status_t host_alloc(int dev, size_t bytes, void **p_p, char *why, size_t len)
{
    if (dev == g_fail_alloc) {
        snprintf(why, len, "no device memory left");
        *p_p = NULL;
        return TC_ERR_NOMEM;
    }
    *p_p = malloc(bytes);
    return *p_p != NULL ? TC_OK : TC_ERR_NOMEM;
}

static void host_free(int dev, void *p)
{
    (void)dev;
    free(p);
}

static const tc_direct_mem_t g_mem = {host_copy, host_combine, host_ready, host_alloc, host_free};

typedef struct {
    int kind, apart, root; /* root: a broadcast's */
    int noout;             /* the rank whose output could not be allocated, or -1 */
    tc_dtype_t dt;
    tc_op_t op;
    size_t count; /* elements (allreduce), rows (reducescatter), unit (the others) */
    double pre, post;
    const void *const *inputs; /* every rank's */
    struct result *res;        /* every rank's, filled by the rank */
} job_t;

typedef struct result {
    void *out; /* the rank's output (the caller frees it) */
    tc_status_t st;
    int declined;
    int agreed; /* a failure every rank knew of (only the tensor fails) */
    char why[256];
} result_t;

#define ROW_ELEMS 3

static void *input_of(const job_t *j, int r, size_t elems)
{
    void *in = malloc(elems * tc_dtype_size(j->dt) + 1);
    size_t i;

    CHECK(in != NULL);
    for (i = 0; i < elems; i++) {
        coll_store(j->dt, in, i, coll_input(r, i, j->op));
    }
    return in;
}

/* Rank s's bytes to rank d in the alltoall (unit-byte rows, some empty). */
static size_t a2a_bytes(const job_t *j, int s, int d)
{
    return (size_t)((s * 5 + d * 3) % 4) * j->count;
}

static unsigned char a2a_byte(int s, int d, size_t i)
{
    return (unsigned char)(s * 31 + d * 7 + i * 3 + 1);
}

static void rank_main(tc_transport_t *t, void *arg)
{
    job_t *j = arg;
    const int n = t->size, me = t->rank;
    size_t es = tc_dtype_size(j->dt);
    tc_device_job_t d = {me, NULL, j->pre, j->post, 0, 0, ""};
    tc_status_t st = TC_OK;

    switch (j->kind) {
    case TC_KIND_ALLREDUCE: {
        void *in = (void *)j->inputs[me], *buf = malloc(j->count * es + 1);
        tc_allreduce_job_t a = {j->apart ? in : NULL, buf, j->count, j->dt, j->op, &d};
        CHECK(buf != NULL);
        memcpy(buf, in, j->count * es); /* in place: the input; apart: overwritten */
        if (j->apart) {
            memset(buf, 0x5A, j->count * es);
        }
        st = tc__direct_allreduce(t, &g_mem, &a);
        j->res[me].out = buf;
        break;
    }
    case TC_KIND_REDUCESCATTER: {
        size_t off, elems;
        void *out;
        tc__row_block(j->count, ROW_ELEMS, n, me, &off, &elems);
        out = me == j->noout ? NULL : malloc(elems * es + 1);
        if (out == NULL) {
            snprintf(d.why, sizeof(d.why), "cannot allocate the output");
        }
        tc_reducescatter_job_t a = {j->inputs[me], out, j->count, ROW_ELEMS, j->dt, j->op, &d};
        st = tc__direct_reducescatter(t, &g_mem, &a);
        j->res[me].out = out;
        break;
    }
    case TC_KIND_ALLGATHER: {
        size_t bytes[MAXN], displs[MAXN], total = 0;
        int k;
        unsigned char *out;
        for (k = 0; k < n; k++) {
            bytes[k] = (size_t)((k * 37) % 11) * j->count;
            displs[k] = total;
            total += bytes[k];
        }
        out = me == j->noout ? NULL : malloc(total + 1);
        if (out != NULL) {
            memset(out, 0xA5, total + 1);
        }
        tc_allgather_job_t a = {out, bytes, displs, j->inputs[me], &d};
        st = tc__direct_allgather(t, &g_mem, &a);
        j->res[me].out = out;
        break;
    }
    case TC_KIND_BROADCAST: {
        unsigned char *buf = malloc(j->count + 1);
        CHECK(buf != NULL);
        memcpy(buf, me == j->root ? j->inputs[me] : "", me == j->root ? j->count : 0);
        if (me != j->root) {
            memset(buf, 0xA5, j->count);
        }
        tc_broadcast_job_t a = {buf, j->count, j->root, &d};
        st = tc__direct_broadcast(t, &g_mem, &a);
        j->res[me].out = buf;
        break;
    }
    default: { /* TC_KIND_ALLTOALL */
        size_t sb[MAXN], sd[MAXN], rb[MAXN], rd[MAXN], so = 0, ro = 0;
        unsigned char *send, *out;
        int p;
        size_t i;
        for (p = 0; p < n; p++) {
            sb[p] = a2a_bytes(j, me, p);
            sd[p] = so;
            so += sb[p];
            rb[p] = a2a_bytes(j, p, me);
            rd[p] = ro;
            ro += rb[p];
        }
        send = malloc(so + 1);
        out = me == j->noout ? NULL : malloc(ro + 1);
        CHECK(send != NULL);
        for (p = 0; p < n; p++) {
            for (i = 0; i < sb[p]; i++) {
                send[sd[p] + i] = a2a_byte(me, p, i);
            }
        }
        if (out != NULL) {
            memset(out, 0xA5, ro + 1);
        }
        tc_alltoall_job_t a = {send, out, sb, sd, rb, rd, NULL, 1, &d};
        st = tc__direct_alltoall(t, &g_mem, &a);
        free(send);
        j->res[me].out = out;
        break;
    }
    }
    j->res[me].st = st;
    j->res[me].declined = d.declined;
    j->res[me].agreed = d.agreed;
    snprintf(j->res[me].why, sizeof(j->res[me].why), "%s", d.why);
}

/* Runs j on n ranks: res[r] is rank r's. */
static void run(job_t *j, int n, result_t *res)
{
    job_t jobs[MAXN];
    int r;

    memset(res, 0, (size_t)n * sizeof(*res));
    j->res = res;
    for (r = 0; r < n; r++) {
        jobs[r] = *j;
    }
    coll_run(n, rank_main, jobs, sizeof(jobs[0]));
}

static void free_outs(result_t *res, int n)
{
    int r;

    for (r = 0; r < n; r++) {
        free(res[r].out);
    }
}

/* Every rank ran it (TC_OK, not declined). */
static void check_ran(const job_t *j, const result_t *res, int n)
{
    int r;

    for (r = 0; r < n; r++) {
        CHECK_MSG(res[r].st == TC_OK && !res[r].declined,
                  "kind %d n=%d rank %d: status %d, declined %d (%s)", j->kind, n, r, res[r].st,
                  res[r].declined, res[r].why);
    }
}

static const tc_dtype_t g_dtypes[] = {TC_FLOAT32, TC_INT32, TC_FLOAT16, TC_BFLOAT16, TC_FLOAT64};
static const tc_op_t g_ops[] = {TC_SUM, TC_AVG, TC_PROD, TC_MIN, TC_MAX};

/* Whether op applies to dt (avg: floats only). */
static int fits(tc_dtype_t dt, tc_op_t op)
{
    return op != TC_AVG || tc__dtype_is_float((int)dt);
}

/* got, element i of a result (of count), must be the combination of every
 * rank's element i (the stand-in's bits: the block a rank combined, and
 * where it went), and for unscaled inputs the exact value. */
static void check_reduced(const job_t *j, int n, const void *got, size_t i, size_t count,
                          const char *what)
{
    const void *xs[MAXN];
    unsigned char want[8], *bufs[MAXN];
    size_t es = tc_dtype_size(j->dt);
    int r;

    for (r = 0; r < n; r++) {
        bufs[r] = malloc(es);
        CHECK(bufs[r] != NULL);
        memcpy(bufs[r], (const char *)j->inputs[r] + i * es, es);
        xs[r] = bufs[r];
    }
    combine_into(j->dt, j->op, n, xs, want, 1, j->pre, j->post);
    CHECK_MSG(memcmp(want, got, es) == 0, "%s n=%d dtype %d op %d: element %zu: %g, want %g", what,
              n, j->dt, j->op, i, coll_load(j->dt, got, 0), coll_load(j->dt, want, 0));
    if (j->pre == 1.0 && j->post == 1.0) {
        coll_check_value(j->dt, j->op, n, coll_load(j->dt, got, 0), i, what, count);
    }
    for (r = 0; r < n; r++) {
        free(bufs[r]);
    }
}

TC_CASE(allreduce_every_dtype_op_and_size)
{
    static const size_t counts[] = {0, 1, 3, 7, 64, 1001};
    void *inputs[MAXN];
    result_t res[MAXN];
    size_t c, di, oi, i;
    int n, r, apart;

    for (n = 1; n <= MAXN; n++) {
        for (di = 0; di < sizeof(g_dtypes) / sizeof(g_dtypes[0]); di++) {
            for (oi = 0; oi < sizeof(g_ops) / sizeof(g_ops[0]); oi++) {
                for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
                    job_t j = {TC_KIND_ALLREDUCE, 0,   0,   -1,   g_dtypes[di], g_ops[oi],
                               counts[c],         1.0, 1.0, NULL, NULL};
                    if (!fits(j.dt, j.op)) {
                        continue;
                    }
                    apart = (int)((n + c + oi) % 2);
                    j.apart = apart;
                    if (j.dt == TC_FLOAT32 && j.op == TC_SUM && c == 4) {
                        j.pre = 0.5; /* the factors reach the combine */
                        j.post = 3.0;
                    }
                    for (r = 0; r < n; r++) {
                        inputs[r] = input_of(&j, r, j.count);
                    }
                    j.inputs = (const void *const *)inputs;
                    run(&j, n, res);
                    check_ran(&j, res, n);
                    for (r = 0; r < n; r++) {
                        for (i = 0; i < j.count; i++) {
                            check_reduced(&j, n, (char *)res[r].out + i * tc_dtype_size(j.dt), i,
                                          j.count, "allreduce");
                        }
                        /* bitwise the same on every rank */
                        CHECK(j.count == 0 ||
                              memcmp(res[r].out, res[0].out, j.count * tc_dtype_size(j.dt)) == 0);
                    }
                    free_outs(res, n);
                    for (r = 0; r < n; r++) {
                        free(inputs[r]);
                    }
                }
            }
        }
    }
}

TC_CASE(reducescatter_rows)
{
    static const size_t rows[] = {0, 1, 5, 17};
    void *inputs[MAXN];
    result_t res[MAXN];
    size_t c, i, off, elems;
    int n, r;

    for (n = 1; n <= MAXN; n++) {
        for (c = 0; c < sizeof(rows) / sizeof(rows[0]); c++) {
            job_t j = {TC_KIND_REDUCESCATTER,
                       0,
                       0,
                       -1,
                       n % 2 ? TC_FLOAT32 : TC_BFLOAT16,
                       n % 3 ? TC_SUM : TC_AVG,
                       rows[c],
                       1.0,
                       1.0,
                       NULL,
                       NULL};
            for (r = 0; r < n; r++) {
                inputs[r] = input_of(&j, r, j.count * ROW_ELEMS);
            }
            j.inputs = (const void *const *)inputs;
            run(&j, n, res);
            check_ran(&j, res, n);
            for (r = 0; r < n; r++) {
                tc__row_block(j.count, ROW_ELEMS, n, r, &off, &elems);
                for (i = 0; i < elems; i++) {
                    /* element off + i of the whole, at i of rank r's output */
                    check_reduced(&j, n, (char *)res[r].out + i * tc_dtype_size(j.dt), off + i,
                                  j.count * ROW_ELEMS, "reducescatter");
                }
            }
            free_outs(res, n);
            for (r = 0; r < n; r++) {
                free(inputs[r]);
            }
        }
    }
}

/* Inputs whose sum depends on the order (a large value first, then small
 * ones that round differently depending on what they meet): every element
 * must have exactly the bits of rank order, reducescatter's too. */
TC_CASE(combined_in_rank_order)
{
    static const tc_dtype_t dts[] = {TC_FLOAT32, TC_FLOAT16, TC_BFLOAT16, TC_FLOAT64};
    void *inputs[MAXN];
    result_t res[MAXN];
    size_t di, i, off, elems;
    int n, r, kind;

    for (n = 3; n <= MAXN; n++) {
        for (di = 0; di < sizeof(dts) / sizeof(dts[0]); di++) {
            for (kind = 0; kind < 2; kind++) {
                job_t j = {kind ? TC_KIND_REDUCESCATTER : TC_KIND_ALLREDUCE,
                           0,
                           0,
                           -1,
                           dts[di],
                           TC_SUM,
                           kind ? 7 : 61,
                           1.0,
                           1.0,
                           NULL,
                           NULL};
                size_t total = kind ? j.count * ROW_ELEMS : j.count, es = tc_dtype_size(j.dt);
                unsigned char want[8];
                for (r = 0; r < n; r++) {
                    inputs[r] = malloc(total * es + 1);
                    CHECK(inputs[r] != NULL);
                    for (i = 0; i < total; i++) {
                        double big = j.dt == TC_FLOAT64 ? 1e17 : j.dt == TC_FLOAT32 ? 1e8 : 300;
                        coll_store(j.dt, inputs[r], i,
                                   r == (int)(i % (size_t)n) ? big : 1.0 + 0.37 * r + 0.011 * i);
                    }
                }
                j.inputs = (const void *const *)inputs;
                run(&j, n, res);
                check_ran(&j, res, n);
                for (r = 0; r < n; r++) {
                    if (kind) {
                        tc__row_block(j.count, ROW_ELEMS, n, r, &off, &elems);
                    } else {
                        off = 0;
                        elems = total;
                    }
                    for (i = 0; i < elems; i++) {
                        const void *xs[MAXN];
                        int k;
                        for (k = 0; k < n; k++) {
                            xs[k] = (const char *)inputs[k] + (off + i) * es;
                        }
                        combine_into(j.dt, TC_SUM, n, xs, want, 1, 1.0, 1.0);
                        CHECK_MSG(memcmp(want, (const char *)res[r].out + i * es, es) == 0,
                                  "kind %d n=%d dtype %d rank %d element %zu: %.17g, want %.17g",
                                  j.kind, n, j.dt, r, off + i,
                                  coll_load(j.dt, (const char *)res[r].out + i * es, 0),
                                  coll_load(j.dt, want, 0));
                    }
                }
                free_outs(res, n);
                for (r = 0; r < n; r++) {
                    free(inputs[r]);
                }
            }
        }
    }
}

/* Rank r's allgather or broadcast input: bytes bytes of a pattern of r. */
static void *bytes_of(int r, size_t bytes)
{
    unsigned char *p = malloc(bytes + 1);
    size_t i;

    CHECK(p != NULL);
    for (i = 0; i < bytes; i++) {
        p[i] = (unsigned char)(r * 53 + i * 7 + 3);
    }
    return p;
}

TC_CASE(allgather_broadcast_alltoall)
{
    static const size_t units[] = {1, 4, 100};
    void *inputs[MAXN];
    result_t res[MAXN];
    size_t u, i;
    int n, r, k;

    for (n = 1; n <= MAXN; n++) {
        for (u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
            /* allgather: block k ((k * 37) % 11 units, some empty) at its place */
            job_t j = {TC_KIND_ALLGATHER, 0,   0,   -1,   TC_INT8, TC_SUM,
                       units[u],          1.0, 1.0, NULL, NULL};
            for (r = 0; r < n; r++) {
                inputs[r] = bytes_of(r, (size_t)((r * 37) % 11) * j.count);
            }
            j.inputs = (const void *const *)inputs;
            run(&j, n, res);
            check_ran(&j, res, n);
            for (r = 0; r < n; r++) {
                const unsigned char *out = res[r].out;
                size_t at = 0;
                for (k = 0; k < n; k++) {
                    size_t b = (size_t)((k * 37) % 11) * j.count;
                    CHECK_MSG(memcmp(out + at, inputs[k], b) == 0,
                              "allgather n=%d unit %zu: rank %d's block %d", n, j.count, r, k);
                    at += b;
                }
                CHECK_EQ(out[at], 0xA5); /* nothing past the output */
            }
            free_outs(res, n);
            for (r = 0; r < n; r++) {
                free(inputs[r]);
            }
            /* broadcast from every root */
            for (k = 0; k < n; k++) {
                job_t b = {TC_KIND_BROADCAST, 0,   k,   -1,   TC_INT8, TC_SUM,
                           13 * units[u],     1.0, 1.0, NULL, NULL};
                for (r = 0; r < n; r++) {
                    inputs[r] = bytes_of(r, b.count);
                }
                b.inputs = (const void *const *)inputs;
                run(&b, n, res);
                check_ran(&b, res, n);
                for (r = 0; r < n; r++) {
                    CHECK_MSG(memcmp(res[r].out, inputs[k], b.count) == 0,
                              "broadcast n=%d root %d: rank %d", n, k, r);
                }
                free_outs(res, n);
                for (r = 0; r < n; r++) {
                    free(inputs[r]);
                }
            }
            /* alltoall: every block from its sender, in sender order */
            {
                job_t a = {TC_KIND_ALLTOALL, 0,   0,   -1,   TC_INT8, TC_SUM,
                           units[u],         1.0, 1.0, NULL, NULL};
                run(&a, n, res);
                check_ran(&a, res, n);
                for (r = 0; r < n; r++) {
                    const unsigned char *out = res[r].out;
                    size_t at = 0;
                    for (k = 0; k < n; k++) {
                        for (i = 0; i < a2a_bytes(&a, k, r); i++, at++) {
                            CHECK_MSG(out[at] == a2a_byte(k, r, i),
                                      "alltoall n=%d unit %zu: rank %d, byte %zu from rank %d", n,
                                      a.count, r, i, k);
                        }
                    }
                    CHECK_EQ(out[at], 0xA5);
                }
                free_outs(res, n);
            }
        }
    }
}

/* Every rank declined, said why where it was the one, and moved nothing. */
static void check_declined(const job_t *j, const result_t *res, int n)
{
    int r;

    for (r = 0; r < n; r++) {
        CHECK_MSG(res[r].st == TC_OK && res[r].declined,
                  "kind %d n=%d rank %d: status %d, declined %d", j->kind, n, r, res[r].st,
                  res[r].declined);
    }
}

TC_CASE(a_rank_that_cannot_makes_every_rank_decline)
{
    void *inputs[MAXN];
    result_t res[MAXN];
    int n, r, bad, kind;
    size_t i;

    for (n = 2; n <= MAXN; n++) {
        bad = n - 1 - n % 2; /* a different rank each time */
        /* no scratch for the combine on one rank */
        for (kind = 0; kind < 2; kind++) {
            job_t j = {kind ? TC_KIND_REDUCESCATTER : TC_KIND_ALLREDUCE,
                       1,
                       0,
                       -1,
                       TC_FLOAT32,
                       TC_SUM,
                       (size_t)(5 * n),
                       1.0,
                       1.0,
                       NULL,
                       NULL};
            size_t elems = kind ? j.count * ROW_ELEMS : j.count;
            for (r = 0; r < n; r++) {
                inputs[r] = input_of(&j, r, elems);
            }
            j.inputs = (const void *const *)inputs;
            g_fail_alloc = bad;
            run(&j, n, res);
            g_fail_alloc = -1;
            check_declined(&j, res, n);
            free_outs(res, n);
            g_fail_ready = (bad + 1) % n; /* a GPU without the kernel: the same */
            run(&j, n, res);
            g_fail_ready = -1;
            check_declined(&j, res, n);
            if (!kind) { /* the allreduce's output untouched (apart: the filler) */
                for (r = 0; r < n; r++) {
                    for (i = 0; i < j.count * sizeof(float); i++) {
                        CHECK_EQ(((unsigned char *)res[r].out)[i], 0x5A);
                    }
                }
            }
            free_outs(res, n);
            for (r = 0; r < n; r++) {
                free(inputs[r]);
            }
        }
        /* no output on one rank: reducescatter, allgather, alltoall */
        for (kind = 0; kind < 3; kind++) {
            static const int kinds[3] = {TC_KIND_REDUCESCATTER, TC_KIND_ALLGATHER,
                                         TC_KIND_ALLTOALL};
            job_t j = {kinds[kind], 0, 0, bad, TC_FLOAT32, TC_SUM, 4, 1.0, 1.0, NULL, NULL};
            size_t elems = kind == 0 ? j.count * ROW_ELEMS : (size_t)11 * j.count;
            for (r = 0; r < n; r++) {
                inputs[r] = input_of(&j, r, elems);
            }
            j.inputs = (const void *const *)inputs;
            run(&j, n, res);
            check_declined(&j, res, n);
            CHECK(strstr(res[bad].why, "allocate") != NULL || kind > 0);
            free_outs(res, n);
            for (r = 0; r < n; r++) {
                free(inputs[r]);
            }
        }
    }
}

TC_CASE(a_failed_combine_fails_every_rank)
{
    void *inputs[MAXN];
    result_t res[MAXN];
    char want[64];
    int n, r, bad;

    for (n = 2; n <= MAXN; n++) {
        job_t j = {TC_KIND_ALLREDUCE, 0, 0, -1, TC_FLOAT32, TC_SUM, 100, 1.0, 1.0, NULL, NULL};
        bad = n / 2;
        for (r = 0; r < n; r++) {
            inputs[r] = input_of(&j, r, j.count);
        }
        j.inputs = (const void *const *)inputs;
        g_fail_combine = bad;
        run(&j, n, res);
        g_fail_combine = -1;
        snprintf(want, sizeof(want), "failed on rank %d of the set", bad);
        for (r = 0; r < n; r++) {
            CHECK_MSG(res[r].st == TC_ERR_TRANSPORT && !res[r].declined && res[r].agreed &&
                          strstr(res[r].why, want) != NULL,
                      "n=%d rank %d: status %d, agreed %d, why '%s'", n, r, res[r].st,
                      res[r].agreed, res[r].why);
        }
        CHECK(strstr(res[bad].why, "the kernel broke") != NULL);
        free_outs(res, n);
        for (r = 0; r < n; r++) {
            free(inputs[r]);
        }
    }
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    return 0;
}
