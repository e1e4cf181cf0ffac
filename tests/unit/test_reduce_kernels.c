/*
 * test_reduce_kernels.c - the reduction kernels of src/reduce on generated
 * data (every dtype x op, counts 0 to 2^20 + 3, aligned, misaligned and in
 * place, NaNs, infinities and signed zeros, nothing written outside dst,
 * src untouched) and on hand-written integer edges (wraparound, unsigned
 * compares, products that overflow int), and calls with an unknown dtype or
 * op that must change nothing. Part of test_reduce, whose cases (in
 * test_reduce.c) call these; no MPI.
 */
#include "reduce/reduce.h"
#include "reduce/reduce_hooks.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "reduce_testutil.h"

/* ------------------------------------------------------------------------ */
/* Kernels on generated data                                                 */
/* ------------------------------------------------------------------------ */

static uint64_t nan_bits(tc_dtype_t dt, int which)
{
    /* Non-canonical NaNs: negative quiet with a payload, positive signalling. */
    switch (dt) {
    case TC_FLOAT16: return which ? 0x7c01u : 0xfe01u;
    case TC_BFLOAT16: return which ? 0x7f81u : 0xffc1u;
    case TC_FLOAT32: return which ? 0x7f800001u : 0xffc00123u;
    default: return which ? UINT64_C(0x7ff0000000000001) : UINT64_C(0xfff8000000000123);
    }
}

/* Largest magnitude of generated float data such that every sum (or
 * product) of two values is an integer the dtype holds exactly. */
static int64_t float_range(tc_dtype_t dt, tc_op_t op)
{
    int prod = op == TC_PROD;
    switch (dt) {
    case TC_FLOAT16: return prod ? 45 : 1000;      /* results within 2^11 */
    case TC_BFLOAT16: return prod ? 15 : 120;      /* results within 2^8 */
    case TC_FLOAT32: return prod ? 4000 : 1 << 22; /* results within 2^24 */
    default: return prod ? INT64_C(1) << 26 : INT64_C(1) << 50;
    }
}

/* Element i of operand `which` (0: dst, 1: src) for a dtype x op test. */
static uint64_t gen(tc_dtype_t dt, tc_op_t op, int which, size_t i)
{
    uint64_t h =
        hash64(((uint64_t)i << 8) ^ ((uint64_t)dt << 4) ^ ((uint64_t)op << 1) ^ (uint64_t)which);

    if (!is_float(dt)) {
        return h & dtype_mask(dt); /* full range: negatives and wraparound */
    }
    switch (i % 61) {
    case 5: return which == 0 ? nan_bits(dt, 0) : float_enc(dt, 3.0);
    case 9: return which == 1 ? nan_bits(dt, 1) : float_enc(dt, -2.0);
    case 13: return nan_bits(dt, which);
    case 17: return float_enc(dt, which ? -INFINITY : INFINITY); /* SUM: NaN */
    case 21: return float_enc(dt, which ? 0.0 : INFINITY);       /* PROD: NaN */
    case 25: return float_enc(dt, which ? -0.0 : 0.0);
    case 29: return float_enc(dt, which ? 0.0 : -0.0);
    case 33: return float_enc(dt, -0.0);
    case 37: return float_enc(dt, which ? 5.0 : -INFINITY);
    default: break;
    }
    int64_t r = float_range(dt, op);
    int64_t v = (int64_t)(h % (uint64_t)(2 * r + 1)) - r;
    return float_enc(dt, (double)v);
}

#define GUARD 16
#define GUARD_BYTE 0xa5

/* Runs tc__reduce on generated data at the given byte offsets and checks
 * every element, that src is untouched and that nothing outside dst moved.
 * in_place: dst and src are the same buffer. */
static void check_kernel(tc_dtype_t dt, tc_op_t op, size_t count, size_t doff, size_t soff,
                         int in_place)
{
    size_t sz = tc_dtype_size(dt), bytes = count * sz;
    unsigned char *dbuf = malloc(bytes + 2 * GUARD);
    unsigned char *sbuf = malloc(bytes + 2 * GUARD);
    unsigned char *dst = dbuf + GUARD - 8 + doff; /* malloc is 16-aligned: offset doff */
    unsigned char *src = in_place ? dst : sbuf + GUARD - 8 + soff;

    uint64_t *av = malloc((count + 1) * sizeof(*av));
    uint64_t *bv = malloc((count + 1) * sizeof(*bv));

    CHECK(dbuf != NULL && sbuf != NULL && av != NULL && bv != NULL);
    memset(dbuf, GUARD_BYTE, bytes + 2 * GUARD);
    memset(sbuf, GUARD_BYTE, bytes + 2 * GUARD);
    for (size_t i = 0; i < count; i++) {
        av[i] = gen(dt, op, 0, i);
        bv[i] = in_place ? av[i] : gen(dt, op, 1, i);
        put_bits(dt, dst, i, av[i]);
        if (!in_place) {
            put_bits(dt, src, i, bv[i]);
        }
    }

    tc__reduce(dt, op, dst, src, count);

    for (size_t i = 0; i < count; i++) {
        uint64_t a = av[i], b = bv[i];
        uint64_t want = ref_op(dt, op, a, b);
        uint64_t got = get_bits(dt, dst, i);
        CHECK_MSG(got == want,
                  "%s %s count=%zu dst+%zu src+%zu%s [%zu]: 0x%llx op 0x%llx = 0x%llx, want "
                  "0x%llx (%s kernels)",
                  tc_dtype_name(dt), tc_op_name(op), count, doff, soff, in_place ? " in place" : "",
                  i, (unsigned long long)a, (unsigned long long)b, (unsigned long long)got,
                  (unsigned long long)want, tc__reduce_path());
        if (!in_place) {
            CHECK_MSG(get_bits(dt, src, i) == b, "%s %s: src[%zu] modified", tc_dtype_name(dt),
                      tc_op_name(op), i);
        }
    }
    for (unsigned char *p = dbuf; p < dst; p++) {
        CHECK_MSG(*p == GUARD_BYTE, "%s %s: wrote before dst", tc_dtype_name(dt), tc_op_name(op));
    }
    for (unsigned char *p = dst + bytes; p < dbuf + bytes + 2 * GUARD; p++) {
        CHECK_MSG(*p == GUARD_BYTE, "%s %s count=%zu: wrote past dst", tc_dtype_name(dt),
                  tc_op_name(op), count);
    }
    free(av);
    free(bv);
    free(dbuf);
    free(sbuf);
}

void test_kernels(void)
{
    static const size_t counts[] = {0, 1, 7, 1000, (1u << 20) + 3};
    static const size_t offs[][2] = {{0, 0}, {1, 1}, {1, 0}, {0, 1}};

    for (size_t d = 0; d < NELEMS(all_dtypes); d++) {
        for (size_t o = 0; o < NELEMS(all_ops); o++) {
            for (size_t c = 0; c < NELEMS(counts); c++) {
                /* All offset pairs for small counts; for the large one only
                 * dst+1, src+0 (mutually misaligned: no common peel). */
                for (size_t k = counts[c] > 1000 ? 2 : 0; k < NELEMS(offs); k++) {
                    check_kernel(all_dtypes[d], all_ops[o], counts[c], offs[k][0], offs[k][1], 0);
                    if (counts[c] > 1000) {
                        break;
                    }
                }
            }
            check_kernel(all_dtypes[d], all_ops[o], 1000, 0, 0, 1);
            check_kernel(all_dtypes[d], all_ops[o], 1001, 1, 1, 1);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Hand-written edge cases                                                   */
/* ------------------------------------------------------------------------ */

struct int_case {
    tc_dtype_t dt;
    tc_op_t op;
    int64_t a, b, want;
};

void test_int_edges(void)
{
    static const struct int_case cases[] = {
        {TC_UINT8, TC_SUM, 255, 1, 0},
        {TC_UINT8, TC_SUM, 200, 100, 44},
        {TC_UINT8, TC_PROD, 16, 16, 0},
        {TC_UINT8, TC_PROD, 200, 2, 144},
        {TC_UINT8, TC_MIN, 0, 255, 0},
        {TC_UINT8, TC_MAX, 128, 127, 128}, /* unsigned compare */
        {TC_INT8, TC_SUM, 127, 1, -128},
        {TC_INT8, TC_AVG, -128, -1, 127},
        {TC_INT8, TC_PROD, -128, -1, -128},
        {TC_INT8, TC_PROD, 16, 16, 0},
        {TC_INT8, TC_PROD, -7, 9, -63},
        {TC_INT8, TC_PROD, 100, 3, 44},
        {TC_INT8, TC_MIN, -128, 127, -128},
        {TC_INT8, TC_MAX, -1, 0, 0},
        {TC_INT8, TC_MAX, -5, -3, -3},
        {TC_UINT16, TC_SUM, 65535, 1, 0},
        {TC_UINT16, TC_SUM, 40000, 30000, 4464},
        {TC_UINT16, TC_AVG, 65535, 65535, 65534}, /* avg reduces as sum */
        {TC_UINT16, TC_PROD, 256, 256, 0},
        {TC_UINT16, TC_PROD, 65535, 65535, 1}, /* 4294836225 would overflow int */
        {TC_UINT16, TC_PROD, 300, 300, 24464},
        {TC_UINT16, TC_PROD, 40000, 2, 14464},
        {TC_UINT16, TC_MIN, 0, 65535, 0},
        {TC_UINT16, TC_MAX, 0, 65535, 65535},
        {TC_UINT16, TC_MAX, 32768, 32767, 32768}, /* unsigned compare */
        {TC_UINT16, TC_MIN, 32768, 32767, 32767},
        {TC_INT16, TC_SUM, INT16_MAX, 1, INT16_MIN},
        {TC_INT16, TC_SUM, INT16_MIN, -1, INT16_MAX},
        {TC_INT16, TC_SUM, INT16_MIN, INT16_MIN, 0},
        {TC_INT16, TC_SUM, -5, 3, -2},
        {TC_INT16, TC_AVG, INT16_MAX, INT16_MAX, -2},
        {TC_INT16, TC_PROD, INT16_MIN, -1, INT16_MIN},
        {TC_INT16, TC_PROD, INT16_MIN, INT16_MIN, 0},
        {TC_INT16, TC_PROD, INT16_MAX, INT16_MAX, 1},
        {TC_INT16, TC_PROD, 256, 256, 0},
        {TC_INT16, TC_PROD, 181, 181, 32761},
        {TC_INT16, TC_PROD, 182, 182, -32412},
        {TC_INT16, TC_PROD, -7, 9, -63},
        {TC_INT16, TC_MIN, INT16_MIN, INT16_MAX, INT16_MIN},
        {TC_INT16, TC_MAX, INT16_MIN, INT16_MAX, INT16_MAX},
        {TC_INT16, TC_MAX, -1, 0, 0},
        {TC_INT16, TC_MIN, -5, -3, -5},
        {TC_INT16, TC_MAX, -5, -3, -3},
        {TC_INT32, TC_SUM, INT32_MAX, 1, INT32_MIN},
        {TC_INT32, TC_SUM, INT32_MIN, -1, INT32_MAX},
        {TC_INT32, TC_SUM, -5, 3, -2},
        {TC_INT32, TC_PROD, INT32_MIN, -1, INT32_MIN},
        {TC_INT32, TC_PROD, 65536, 65536, 0},
        {TC_INT32, TC_PROD, 46341, 46341, -2147479015},
        {TC_INT32, TC_PROD, -3, 7, -21},
        {TC_INT32, TC_MIN, INT32_MIN, INT32_MAX, INT32_MIN},
        {TC_INT32, TC_MAX, -2, -7, -2},
        {TC_INT64, TC_SUM, INT64_MAX, 1, INT64_MIN},
        {TC_INT64, TC_SUM, INT64_MIN, -1, INT64_MAX},
        {TC_INT64, TC_PROD, INT64_MIN, -1, INT64_MIN},
        {TC_INT64, TC_PROD, INT64_C(1) << 32, INT64_C(1) << 32, 0},
        {TC_INT64, TC_PROD, INT64_C(3037000500), INT64_C(3037000500),
         INT64_C(-9223372036709301616)},
        {TC_INT64, TC_PROD, -6, 7, -42},
        {TC_INT64, TC_MIN, INT64_MIN, INT64_MAX, INT64_MIN},
        {TC_INT64, TC_MAX, INT64_MIN, -1, -1},
    };
    unsigned char a[9], b[9];

    for (size_t i = 0; i < NELEMS(cases); i++) {
        const struct int_case *c = &cases[i];
        size_t sz = tc_dtype_size(c->dt);
        /* Unaligned on purpose: one byte into the arrays. */
        put_bits(c->dt, a + 1, 0, (uint64_t)c->a & dtype_mask(c->dt));
        put_bits(c->dt, b + 1, 0, (uint64_t)c->b & dtype_mask(c->dt));
        tc__reduce(c->dt, c->op, a + 1, b + 1, 1);
        uint64_t got = get_bits(c->dt, a + 1, 0);
        int64_t sgot = is_unsigned(c->dt) ? (int64_t)got : sign_extend(got, sz);
        CHECK_MSG(sgot == c->want, "%s: %lld %s %lld = %lld, want %lld", tc_dtype_name(c->dt),
                  (long long)c->a, tc_op_name(c->op), (long long)c->b, (long long)sgot,
                  (long long)c->want);
    }
}

void test_invalid(void)
{
    unsigned char dst[16], src[16], copy[16];

    for (int i = 0; i < 16; i++) {
        dst[i] = (unsigned char)(i + 1);
        src[i] = (unsigned char)(3 * i + 7);
    }
    memcpy(copy, dst, sizeof(dst));
    tc__reduce((tc_dtype_t)99, TC_SUM, dst, src, 4);
    tc__reduce((tc_dtype_t)-1, TC_SUM, dst, src, 4);
    tc__reduce((tc_dtype_t)(TC_UINT16 + 1), TC_SUM, dst, src, 4); /* first unknown */
    tc__reduce(TC_FLOAT32, (tc_op_t)99, dst, src, 4);
    tc__reduce(TC_FLOAT32, (tc_op_t)-1, dst, src, 4);
    tc__reduce(TC_FLOAT32, TC_SUM, dst, src, 0);
    tc__reduce_avg_finish((tc_dtype_t)99, dst, 4, 3);
    tc__reduce_avg_finish((tc_dtype_t)(TC_UINT16 + 1), dst, 4, 3);
    CHECK(memcmp(dst, copy, sizeof(dst)) == 0);
}

/* tc_reduce_local, the public face of the kernels: the bits of tc__reduce
 * for every dtype and op it takes, and every refusal with a message and
 * nothing touched. */
void test_reduce_local(void)
{
    enum { N = 37 };
    uint64_t state = 7;
    unsigned char a[N * 8], b[N * 8], want[N * 8], keep[N * 8];

    for (size_t d = 0; d < NELEMS(all_dtypes); d++) {
        for (size_t o = 0; o < NELEMS(all_ops); o++) {
            tc_dtype_t dt = all_dtypes[d];
            tc_op_t op = all_ops[o];
            for (size_t i = 0; i < sizeof(a); i++) {
                a[i] = (unsigned char)splitmix64(&state);
                b[i] = (unsigned char)splitmix64(&state);
            }
            memcpy(want, a, sizeof(a));
            if (op == TC_AVG) {
                CHECK_EQ(tc_reduce_local(a, b, N, dt, op), TC_ERR_ARG);
                CHECK(strstr(tc_last_error(), "TC_SUM") != NULL);
                CHECK(memcmp(a, want, sizeof(a)) == 0);
                continue;
            }
            tc__reduce(dt, op, want, b, N);
            CHECK_EQ(tc_reduce_local(a, b, N, dt, op), TC_OK);
            CHECK_MSG(memcmp(a, want, sizeof(a)) == 0,
                      "tc_reduce_local %s %s differs from "
                      "the collectives' kernel",
                      tc_dtype_name(dt), tc_op_name(op));
            /* the same buffer on both sides: x op x */
            memcpy(want, a, sizeof(a));
            tc__reduce(dt, op, want, want, N);
            CHECK_EQ(tc_reduce_local(a, a, N, dt, op), TC_OK);
            CHECK(memcmp(a, want, sizeof(a)) == 0);
        }
    }
    memcpy(keep, a, sizeof(a));
    CHECK_EQ(tc_reduce_local(a, b, N, (tc_dtype_t)99, TC_SUM), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "dtype") != NULL);
    CHECK_EQ(tc_reduce_local(a, b, N, TC_FLOAT32, (tc_op_t)99), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "op") != NULL);
    CHECK_EQ(tc_reduce_local(NULL, b, N, TC_FLOAT32, TC_SUM), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "inout is NULL") != NULL);
    CHECK_EQ(tc_reduce_local(a, NULL, N, TC_FLOAT32, TC_SUM), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "in is NULL") != NULL);
    CHECK_EQ(tc_reduce_local(a, a + 4, N, TC_FLOAT32, TC_SUM), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "overlap") != NULL);
    CHECK_EQ(tc_reduce_local(a + 4, a, N, TC_FLOAT32, TC_SUM), TC_ERR_ARG);
    CHECK_EQ(tc_reduce_local(a, b, SIZE_MAX / 2, TC_FLOAT32, TC_SUM), TC_ERR_ARG);
    CHECK(memcmp(a, keep, sizeof(a)) == 0);
    CHECK_EQ(tc_reduce_local(NULL, NULL, 0, TC_FLOAT32, TC_SUM), TC_OK);
    /* buffers side by side do not overlap */
    CHECK_EQ(tc_reduce_local(a, a + 4 * 4, 4, TC_FLOAT32, TC_SUM), TC_OK);
}
