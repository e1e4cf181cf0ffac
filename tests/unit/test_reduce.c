/*
 * test_reduce.c - unit test of the reduction kernels and the float16/bfloat16
 * conversions in src/reduce. No MPI.
 *
 * Expected values are exact: integer data that wraps, integer-valued floats
 * small enough that every sum and product is representable, and references
 * written here independently of reduce.c (a float16 rounding found by
 * searching the float16 values in double precision). Where reduce.c has a
 * CPU-specific float16 path, both paths run and must agree bit for bit. The
 * test must never depend on timing; it runs in a few seconds.
 *
 * This file: the conversions (every float16 and bfloat16 pattern, rounding
 * ties, NaN payloads), float16/bfloat16 arithmetic on random patterns, AVG's
 * finish, and every case of the program. The kernels on generated data and
 * the integer edges are in test_reduce_kernels.c, the helpers and the
 * reference for one element in reduce_testutil.c.
 */
#include "reduce/reduce.h"
#include "reduce/reduce_hooks.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "reduce_testutil.h"
#include "tc_test.h"

/* ------------------------------------------------------------------------ */
/* Independent float16 reference                                             */
/* ------------------------------------------------------------------------ */

/* Value of a non-NaN, finite float16 pattern, from the format's definition. */
static double ref_f16_value(uint16_t h)
{
    int e = (h >> 10) & 31;
    int m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return (h & 0x8000u) ? -v : v;
}

/* Nearest float16 to x (ties to even), inf past the largest finite value;
 * found by binary search over the positive finite float16 patterns, which
 * increase with their bits. x must not be NaN. */
static uint16_t ref_to_f16(double x)
{
    uint16_t sign = signbit(x) ? 0x8000u : 0u;
    double ax = fabs(x);
    unsigned lo = 0, hi = 0x7bff;

    if (ax >= 65520.0) { /* 65504 + half an ulp rounds to inf (0x7bff is odd) */
        return (uint16_t)(sign | 0x7c00u);
    }
    while (lo < hi) {
        unsigned mid = (lo + hi + 1) / 2;
        if (ref_f16_value((uint16_t)mid) <= ax) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    if (lo < 0x7bff) {
        double below = ax - ref_f16_value((uint16_t)lo);
        double above = ref_f16_value((uint16_t)(lo + 1)) - ax;
        if (above < below || (above == below && (lo & 1u))) {
            lo++;
        }
    }
    return (uint16_t)(sign | lo);
}

/* ------------------------------------------------------------------------ */
/* Conversions                                                               */
/* ------------------------------------------------------------------------ */

static void test_f16_exhaustive(void)
{
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i;
        float f = tc__f16_to_f32(h);
        uint16_t back = tc__f32_to_f16(f);

        if (f16_is_nan(h)) {
            CHECK_MSG(isnan(f), "f16 0x%04x: NaN widened to non-NaN %a", h, (double)f);
            /* Widening keeps sign and payload and makes the NaN quiet. */
            CHECK_MSG(f32_bits(f) == (((uint32_t)(h & 0x8000u) << 16) | 0x7fc00000u |
                                      ((uint32_t)(h & 0x3ffu) << 13)),
                      "f16 NaN 0x%04x widened to 0x%08x", h, f32_bits(f));
            CHECK_MSG(f16_is_nan(back), "f16 0x%04x: NaN came back as 0x%04x", h, back);
            CHECK_MSG((back & 0x8000u) == (h & 0x8000u), "f16 0x%04x: NaN lost its sign", h);
            CHECK_MSG(back & 0x200u, "f16 0x%04x: NaN came back signalling (0x%04x)", h, back);
            continue;
        }
        if ((h & 0x7c00u) == 0x7c00u) {
            CHECK_MSG(isinf(f) && (signbit(f) != 0) == ((h & 0x8000u) != 0),
                      "f16 0x%04x: want inf, got %a", h, (double)f);
        } else {
            double want = ref_f16_value(h);
            CHECK_MSG((double)f == want && (signbit(f) != 0) == ((h & 0x8000u) != 0),
                      "f16 0x%04x: widened to %a, want %a", h, (double)f, want);
        }
        CHECK_MSG(back == h, "f16 0x%04x -> %a -> 0x%04x: round trip changed bits", h, (double)f,
                  back);
    }
}

static void test_f16_rounding(void)
{
    static const struct {
        float in;
        uint16_t want;
    } cases[] = {
        {1.0f, 0x3c00},
        {1.0f + 0x1p-11f, 0x3c00},            /* tie between 1 and 1+2^-10: even is 1 */
        {1.0f + 0x1p-11f + 0x1p-23f, 0x3c01}, /* just above the tie */
        {1.0f + 3 * 0x1p-11f, 0x3c02},        /* tie between 0x3c01 and 0x3c02: even */
        {1.0f + 5 * 0x1p-11f, 0x3c02},        /* tie between 0x3c02 and 0x3c03: even */
        {-1.0f - 0x1p-11f, 0xbc00},
        {2048.0f + 1.0f, 0x6800}, /* 2049: tie, down to 2048 */
        {2048.0f + 3.0f, 0x6802}, /* 2051: tie, up to 2052 */
        {65504.0f, 0x7bff},       /* largest finite */
        {65519.99f, 0x7bff},      /* below 65504 + half ulp */
        {65520.0f, 0x7c00},       /* tie at the top goes to inf */
        {-65520.0f, 0xfc00},
        {1e10f, 0x7c00},
        {-1e10f, 0xfc00},
        {FLT_MAX, 0x7c00},
        {0x1p-14f, 0x0400},            /* smallest normal */
        {0x1p-24f, 0x0001},            /* smallest subnormal */
        {1023 * 0x1p-24f, 0x03ff},     /* largest subnormal */
        {1023.5f * 0x1p-24f, 0x0400},  /* tie between 0x3ff and 0x400: even */
        {2.5f * 0x1p-24f, 0x0002},     /* tie: even is 2 */
        {3.5f * 0x1p-24f, 0x0004},     /* tie: even is 4 */
        {0x1p-25f, 0x0000},            /* tie between 0 and 1: even is 0 */
        {0x1p-25f + 0x1p-40f, 0x0001}, /* just above */
        {3 * 0x1p-25f, 0x0002},        /* 1.5 units: tie, even is 2 */
        {0x1p-26f, 0x0000},
        {-0x1p-25f, 0x8000}, /* negative rounds to -0 */
        {-0x1p-24f, 0x8001},
        {FLT_MIN, 0x0000},   /* float32 normals far below float16 */
        {0x1p-149f, 0x0000}, /* float32 subnormal */
        {-0x1p-149f, 0x8000},
        {0.0f, 0x0000},
        {-0.0f, 0x8000},
    };

    for (size_t i = 0; i < NELEMS(cases); i++) {
        uint16_t got = tc__f32_to_f16(cases[i].in);
        CHECK_MSG(got == cases[i].want, "f32 %a -> f16 0x%04x, want 0x%04x", (double)cases[i].in,
                  got, cases[i].want);
        CHECK_MSG(ref_to_f16(cases[i].in) == cases[i].want, "reference disagrees on %a",
                  (double)cases[i].in);
    }

    CHECK_EQ(tc__f32_to_f16(INFINITY), 0x7c00);
    CHECK_EQ(tc__f32_to_f16(-INFINITY), 0xfc00);
    /* NaNs whose payload sits below the bits float16 keeps must stay NaN. */
    CHECK(f16_is_nan(tc__f32_to_f16(f32_of(0x7f800001u))));
    CHECK(f16_is_nan(tc__f32_to_f16(f32_of(0xff800001u))));
    CHECK(f16_is_nan(tc__f32_to_f16(f32_of(0x7fc00000u))));
    CHECK_EQ(tc__f32_to_f16(f32_of(0xff800001u)) & 0x8000u, 0x8000u);

    /* Every float32 exponent with mantissas around the float16 rounding points
     * (the tie, one below and one above, odd and even kept bits), plus random
     * patterns, against the search reference. */
    uint64_t rng = 42;
    for (uint32_t e = 0; e < 255; e++) {
        for (uint32_t k = 0; k < 64; k++) {
            uint32_t top = (uint32_t)(hash64(e * 64u + k) & 0x3ffu) << 13;
            static const uint32_t lows[] = {0, 1, 0xfff, 0x1000, 0x1001, 0x1fff, 0x0800};
            for (size_t l = 0; l < NELEMS(lows); l++) {
                for (uint32_t s = 0; s < 2; s++) {
                    uint32_t bits = (s << 31) | (e << 23) | top | lows[l];
                    float f = f32_of(bits);
                    uint16_t got = tc__f32_to_f16(f);
                    uint16_t want = ref_to_f16(f);
                    CHECK_MSG(got == want, "f32 0x%08x (%a) -> 0x%04x, want 0x%04x", bits,
                              (double)f, got, want);
                }
            }
        }
    }
    for (int i = 0; i < 1 << 20; i++) {
        uint32_t bits = (uint32_t)splitmix64(&rng);
        float f = f32_of(bits);
        uint16_t got = tc__f32_to_f16(f);
        if (isnan(f)) {
            CHECK_MSG(f16_is_nan(got), "f32 NaN 0x%08x -> 0x%04x", bits, got);
            continue;
        }
        CHECK_MSG(got == ref_to_f16(f), "f32 0x%08x (%a) -> 0x%04x, want 0x%04x", bits, (double)f,
                  got, ref_to_f16(f));
    }
}

static void test_bf16(void)
{
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i;
        float f = tc__bf16_to_f32(h);
        uint16_t back = tc__f32_to_bf16(f);

        CHECK_MSG(bf16_is_nan(h) ? isnan(f) : f32_bits(f) == (uint32_t)h << 16,
                  "bf16 0x%04x widened to 0x%08x", h, f32_bits(f));
        if (bf16_is_nan(h)) {
            CHECK_MSG(bf16_is_nan(back), "bf16 NaN 0x%04x came back as 0x%04x", h, back);
            CHECK_MSG((back & 0x8000u) == (h & 0x8000u), "bf16 0x%04x: NaN lost its sign", h);
        } else {
            CHECK_MSG(back == h, "bf16 0x%04x round trip gave 0x%04x", h, back);
        }
    }

    static const struct {
        uint32_t in;
        uint16_t want;
    } cases[] = {
        {0x3f800000u, 0x3f80}, {0x3f808000u, 0x3f80}, /* tie, even below */
        {0x3f818000u, 0x3f82},                        /* tie, even above */
        {0x3f808001u, 0x3f81},                        /* just above a tie */
        {0x3f807fffu, 0x3f80},                        /* just below a tie */
        {0xbf818000u, 0xbf82}, {0x7f7fffffu, 0x7f80}, /* FLT_MAX rounds to inf */
        {0x7f7f7fffu, 0x7f7f},                        /* stays the largest finite */
        {0x7f7f8000u, 0x7f80},                        /* tie at the top (0x7f7f is odd): inf */
        {0xff7fffffu, 0xff80}, {0x7f800000u, 0x7f80}, /* inf */
        {0xff800000u, 0xff80}, {0x00000001u, 0x0000}, /* float32 subnormals round like any value */
        {0x00008000u, 0x0000},                        /* tie, even is 0 */
        {0x00018000u, 0x0002}, {0x80000000u, 0x8000},
    };
    for (size_t i = 0; i < NELEMS(cases); i++) {
        uint16_t got = tc__f32_to_bf16(f32_of(cases[i].in));
        CHECK_MSG(got == cases[i].want, "f32 0x%08x -> bf16 0x%04x, want 0x%04x", cases[i].in, got,
                  cases[i].want);
    }

    /* NaNs whose payload lies only in the dropped bits: NaN, never inf. */
    static const uint32_t nans[] = {0x7f800001u, 0x7f808000u, 0x7f80ffffu,
                                    0xff800001u, 0x7fc00000u, 0xffffffffu};
    for (size_t i = 0; i < NELEMS(nans); i++) {
        uint16_t got = tc__f32_to_bf16(f32_of(nans[i]));
        CHECK_MSG(bf16_is_nan(got), "f32 NaN 0x%08x -> bf16 0x%04x (not NaN)", nans[i], got);
        CHECK_MSG((got & 0x8000u) == ((nans[i] >> 16) & 0x8000u), "bf16 NaN lost sign");
    }

    /* Random patterns against nearest-even computed in double. */
    uint64_t rng = 7;
    for (int i = 0; i < 1 << 20; i++) {
        uint32_t bits = (uint32_t)splitmix64(&rng);
        float f = f32_of(bits);
        uint16_t got = tc__f32_to_bf16(f);
        if (isnan(f)) {
            CHECK(bf16_is_nan(got));
            continue;
        }
        uint32_t lo = bits & 0xffff0000u; /* truncation toward zero */
        double dlo = fabs((double)f32_of(lo));
        double dhi = fabs((double)f32_of(lo + 0x10000u)); /* may be inf: then 2^128 */
        if ((lo & 0x7fffffffu) == 0x7f7f0000u) {
            dhi = ldexp(1.0, 128);
        }
        double ax = fabs((double)f);
        uint16_t want = (uint16_t)(lo >> 16);
        if ((lo & 0x7fffffffu) != 0x7f800000u &&
            (dhi - ax < ax - dlo || (dhi - ax == ax - dlo && (want & 1u)))) {
            want++;
        }
        CHECK_MSG(got == want, "f32 0x%08x -> bf16 0x%04x, want 0x%04x", bits, got, want);
    }
}

/* ------------------------------------------------------------------------ */
/* float16 / bfloat16 arithmetic on random bit patterns                      */
/* ------------------------------------------------------------------------ */

#define RANDOM_PAIRS (1 << 16)

/* Random half patterns; one in eight from a set of special values. */
static uint16_t random_half(uint64_t *rng, int bf16)
{
    static const uint16_t f16_specials[] = {0x0000, 0x8000, 0x0001, 0x83ff, 0x0400, 0x7bff,
                                            0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0x3c00};
    static const uint16_t bf16_specials[] = {0x0000, 0x8000, 0x0001, 0x807f, 0x0080, 0x7f7f,
                                             0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0x3f80};
    uint64_t r = splitmix64(rng);
    if ((r & 7) == 0) {
        return bf16 ? bf16_specials[(r >> 8) % NELEMS(bf16_specials)]
                    : f16_specials[(r >> 8) % NELEMS(f16_specials)];
    }
    return (uint16_t)(r >> 16);
}

/* What one float16 element of `op` must give: the correctly rounded result
 * (sum and product of two float16 are exact in double). */
static uint16_t ref_f16_op(tc_op_t op, uint16_t a, uint16_t b)
{
    double da = tc__f16_to_f32(a), db = tc__f16_to_f32(b), r;

    if (isnan(da) || isnan(db)) {
        return F16_QNAN;
    }
    switch (op) {
    case TC_SUM:
    case TC_AVG: r = da + db; break;
    case TC_PROD: r = da * db; break;
    default: return (uint16_t)ref_op(TC_FLOAT16, op, a, b);
    }
    return isnan(r) ? F16_QNAN : ref_to_f16(r);
}

static void test_half_random(void)
{
    uint16_t *a = malloc(RANDOM_PAIRS * 2 + 2), *b = malloc(RANDOM_PAIRS * 2 + 2);
    unsigned char *d1 = malloc(RANDOM_PAIRS * 2 + 1), *d2 = malloc(RANDOM_PAIRS * 2 + 1);
    unsigned char *s = malloc(RANDOM_PAIRS * 2 + 1);
    uint64_t rng = 2024;

    CHECK(a && b && d1 && d2 && s);
    for (int bf = 0; bf < 2; bf++) {
        tc_dtype_t dt = bf ? TC_BFLOAT16 : TC_FLOAT16;
        for (size_t o = 0; o < NELEMS(all_ops); o++) {
            tc_op_t op = all_ops[o];
            for (size_t i = 0; i < RANDOM_PAIRS; i++) {
                a[i] = random_half(&rng, bf);
                b[i] = random_half(&rng, bf);
            }
            memcpy(d1 + 1, a, RANDOM_PAIRS * 2);
            memcpy(d2, a, RANDOM_PAIRS * 2);
            memcpy(s + 1, b, RANDOM_PAIRS * 2);

            tc__reduce(dt, op, d1 + 1, s + 1, RANDOM_PAIRS); /* default path, unaligned */
            int prev = tc__reduce_force_portable(1);
            tc__reduce(dt, op, d2, s + 1, RANDOM_PAIRS); /* portable path */
            tc__reduce_force_portable(prev);

            for (size_t i = 0; i < RANDOM_PAIRS; i++) {
                uint16_t g1, g2, want;
                memcpy(&g1, d1 + 1 + 2 * i, 2);
                memcpy(&g2, d2 + 2 * i, 2);
                if (bf) {
                    /* Defined as: widen, combine in float32, round once. */
                    float fa = tc__bf16_to_f32(a[i]), fb = tc__bf16_to_f32(b[i]), fr;
                    if (op == TC_SUM || op == TC_AVG || op == TC_PROD) {
                        fr = op == TC_PROD ? fa * fb : fa + fb;
                        want = isnan(fr) ? BF16_QNAN : tc__f32_to_bf16(fr);
                    } else {
                        want = (uint16_t)ref_op(dt, op, a[i], b[i]);
                    }
                } else {
                    want = ref_f16_op(op, a[i], b[i]);
                    if (op == TC_SUM) {
                        /* The spec's own wording: round(f32(a) + f32(b)). */
                        float fr = tc__f16_to_f32(a[i]) + tc__f16_to_f32(b[i]);
                        CHECK(want == (isnan(fr) ? F16_QNAN : tc__f32_to_f16(fr)));
                    }
                }
                CHECK_MSG(g1 == want && g2 == want,
                          "%s %s 0x%04x, 0x%04x: got 0x%04x (%s kernels) and 0x%04x "
                          "(portable), want 0x%04x",
                          tc_dtype_name(dt), tc_op_name(op), a[i], b[i], g1, tc__reduce_path(), g2,
                          want);
            }
        }
    }
    free(a);
    free(b);
    free(d1);
    free(d2);
    free(s);
}

/* ------------------------------------------------------------------------ */
/* AVG finish                                                                */
/* ------------------------------------------------------------------------ */

static void test_avg_finish(void)
{
    /* float32 and float64: sums of 4 ranks, exact quarters. */
    static const double sums[] = {10, -6, 1, 0, 7, -0.0, 1e6, 3};
    static const double quarters[] = {2.5, -1.5, 0.25, 0, 1.75, -0.0, 250000, 0.75};
    unsigned char buf[8 * NELEMS(sums) + 1];

    for (int dd = 0; dd < 4; dd++) {
        tc_dtype_t dt = (tc_dtype_t[]){TC_FLOAT32, TC_FLOAT64, TC_FLOAT16, TC_BFLOAT16}[dd];
        for (size_t i = 0; i < NELEMS(sums); i++) {
            put_bits(dt, buf + 1, i, float_enc(dt, sums[i]));
        }
        tc__reduce_avg_finish(dt, buf + 1, NELEMS(sums), 4);
        for (size_t i = 0; i < NELEMS(sums); i++) {
            uint64_t got = get_bits(dt, buf + 1, i);
            if (dt == TC_BFLOAT16 && i == 6) {
                continue; /* 1e6 is not a bfloat16 */
            }
            CHECK_MSG(got == float_enc(dt, quarters[i]), "%s avg %g/4: got 0x%llx",
                      tc_dtype_name(dt), sums[i], (unsigned long long)got);
        }
    }

    /* NaN becomes the canonical NaN; n = 1 and n <= 0 change nothing. */
    float f[3] = {f32_of(0xffc00123u), 9.0f, 1.0f};
    tc__reduce_avg_finish(TC_FLOAT32, f, 3, 3);
    CHECK_EQ(f32_bits(f[0]), F32_QNAN);
    CHECK(f[1] == 3.0f && f[2] == 1.0f / 3.0f);
    tc__reduce_avg_finish(TC_FLOAT32, f, 3, 1);
    tc__reduce_avg_finish(TC_FLOAT32, f, 3, 0);
    tc__reduce_avg_finish(TC_FLOAT32, f, 3, -2);
    CHECK(f[1] == 3.0f && f[2] == 1.0f / 3.0f);
    tc__reduce_avg_finish(TC_FLOAT32, f + 1, 1, 3); /* a single element */
    CHECK(f[1] == 1.0f);
    double d[2] = {f64_of(UINT64_C(0x7ff0000000000001)), 1.0};
    tc__reduce_avg_finish(TC_FLOAT64, d, 2, 3);
    CHECK(f64_bits(d[0]) == F64_QNAN && d[1] == 1.0 / 3.0);

    /* float16 / bfloat16, every pattern: widen, divide in float32, round once. */
    uint16_t *h = malloc(65536 * 2 + 2), *h2 = malloc(65536 * 2);
    CHECK(h && h2);
    for (int bf = 0; bf < 2; bf++) {
        tc_dtype_t dt = bf ? TC_BFLOAT16 : TC_FLOAT16;
        for (int n = 3; n <= 7; n += 4) {
            for (uint32_t i = 0; i < 65536; i++) {
                h[i] = (uint16_t)i;
                h2[i] = (uint16_t)i;
            }
            tc__reduce_avg_finish(dt, h, 65536, n);
            int prev = tc__reduce_force_portable(1);
            tc__reduce_avg_finish(dt, h2, 65536, n);
            tc__reduce_force_portable(prev);
            for (uint32_t i = 0; i < 65536; i++) {
                float q =
                    (bf ? tc__bf16_to_f32((uint16_t)i) : tc__f16_to_f32((uint16_t)i)) / (float)n;
                uint16_t want = isnan(q) ? (bf ? BF16_QNAN : F16_QNAN)
                                         : (bf ? tc__f32_to_bf16(q) : tc__f32_to_f16(q));
                CHECK_MSG(h[i] == want && h2[i] == want,
                          "%s avg 0x%04x/%d: got 0x%04x / 0x%04x (portable), want 0x%04x",
                          tc_dtype_name(dt), i, n, h[i], h2[i], want);
                if (!bf && !isnan(q)) {
                    /* Division of two float16 through float32 is correctly rounded. */
                    CHECK(want == ref_to_f16((double)tc__f16_to_f32((uint16_t)i) / n));
                }
            }
        }
    }
    CHECK_EQ(tc__f32_to_f16(1.0f / 3.0f), 0x3555);
    free(h);
    free(h2);

    /* Integers are left alone. */
    for (size_t dd = 0; dd < NELEMS(all_dtypes); dd++) {
        unsigned char ib[32], copy[32];
        if (is_float(all_dtypes[dd])) {
            continue;
        }
        for (int i = 0; i < 32; i++) {
            ib[i] = (unsigned char)(i * 29 + 3);
        }
        memcpy(copy, ib, sizeof(ib));
        tc__reduce_avg_finish(all_dtypes[dd], ib, 32 / tc_dtype_size(all_dtypes[dd]), 4);
        CHECK_MSG(memcmp(ib, copy, sizeof(ib)) == 0, "avg finish changed %s",
                  tc_dtype_name(all_dtypes[dd]));
    }
}

/* ------------------------------------------------------------------------ */
/* Cases                                                                     */
/* ------------------------------------------------------------------------ */

TC_CASE(f16_every_value)
{
    test_f16_exhaustive();
}

TC_CASE(f16_rounding)
{
    test_f16_rounding();
}

TC_CASE(bf16)
{
    test_bf16();
}

TC_CASE(int_edges)
{
    test_int_edges();
}

TC_CASE(invalid)
{
    test_invalid();
}

TC_CASE(reduce_local)
{
    test_reduce_local();
}

TC_CASE(half_random)
{
    test_half_random(); /* compares with the portable kernels itself */
}

TC_CASE(avg_finish)
{
    test_avg_finish(); /* likewise */
}

TC_CASE(kernels)
{
    test_kernels();
}

/* Where the build has faster kernels: the integer edges and every kernel
 * again on the portable ones. */
TC_CASE(portable_kernels)
{
    if (strcmp(tc__reduce_path(), "portable") != 0) {
        tc__reduce_force_portable(1);
        CHECK(strcmp(tc__reduce_path(), "portable") == 0);
        test_int_edges();
        test_kernels();
        tc__reduce_force_portable(0);
    }
}

int main(int argc, char **argv)
{
    const char *path = tc__reduce_path();
    int fast = strcmp(path, "portable") != 0;

    tc_test_main(argc, argv, NULL);
    printf("test_reduce: all checks passed (kernels: %s%s)\n", path, fast ? " and portable" : "");
    return 0;
}
