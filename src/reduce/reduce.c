/*
 * reduce.c - the elementwise kernels every allreduce ends in: one loop per
 * dtype x op, the final division of TC_AVG, and the float16/bfloat16
 * conversions they rest on.
 *
 * Elements are read and written with memcpy, so buffers may start at any
 * byte; the loops are kept plain so that the compiler vectorizes them. Every
 * floating-point result that is NaN is replaced by the canonical quiet NaN of
 * its type (positive, only the quiet bit set), so the bits never depend on
 * which operand the hardware or the vectorizer happened to propagate.
 *
 * On x86 the same loops are also compiled for AVX2, and float16 has an F16C
 * path; one set is picked per process from CPUID.
 *
 * This file must never allocate, log, block, touch errno, change the
 * floating-point environment (rounding mode, FTZ/DAZ), or give bits that
 * depend on the CPU: every CPU-specific path is used only because it is
 * bit-identical to the portable one.
 */
#include "reduce/reduce.h"
#include "reduce/reduce_hooks.h"

#include <stdatomic.h>
#include <string.h>

/* x86 with gcc or clang: CPU-specific clones, picked at run time. */
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define TC_REDUCE_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define TC_REDUCE_X86 0
#endif

#if defined(__GNUC__) && !defined(__clang__)
/* gcc 12 at -O2 vectorizes only loops that need no runtime alias check or
 * scalar epilogue; ours need both (dst and src may alias, counts are
 * arbitrary). clang vectorizes them at -O2 already. After the includes,
 * so that system headers are compiled as their authors meant. */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#define TC_F16_QNAN 0x7e00u
#define TC_BF16_QNAN 0x7fc0u
#define TC_F32_QNAN 0x7fc00000u
#define TC_F64_QNAN UINT64_C(0x7ff8000000000000)

typedef void (*tc_kernel_t)(unsigned char *dst, const unsigned char *src, size_t count);

/* ------------------------------------------------------------------------ */
/* Bit casts                                                                 */
/* ------------------------------------------------------------------------ */

static inline float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline double f64_from_bits(uint64_t u)
{
    double f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* ------------------------------------------------------------------------ */
/* float16 / bfloat16 conversions (branch-free so that loops vectorize)      */
/* ------------------------------------------------------------------------ */

/* binary16 -> binary32, exact. A signalling NaN comes back quiet, with its
 * payload kept. */
static inline float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    uint32_t normal = ((e + 112u) << 23) | (m << 13); /* rebias 15 -> 127 */
    uint32_t special = 0x7f800000u | (m << 13) | (m != 0 ? 0x400000u : 0u);
    /* m * 2^-24: both steps are exact, whatever the rounding mode. */
    uint32_t tiny = f32_bits((float)(int32_t)m * 0x1p-24f);
    uint32_t r = e == 0 ? tiny : (e == 31 ? special : normal);
    return f32_from_bits(r | sign);
}

/* binary32 -> binary16, round to nearest, ties to even, with integer
 * arithmetic only (independent of the rounding mode and of FTZ/DAZ). NaN
 * keeps its sign and top payload bits and is made quiet; |f| >= 65520 gives
 * inf. */
static inline uint16_t f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;

    /* Normal result: rebias 127 -> 15, then round off 13 bits; a carry out of
     * the mantissa bumps the exponent, up to inf (0x7c00) past 65504. */
    uint32_t normal = (ax - (112u << 23) + 0xfffu + ((ax >> 13) & 1u)) >> 13;

    /* Subnormal result (|f| < 2^-14): the number of 2^-24 units,
     * mant * 2^(e-150) / 2^-24 = mant >> (126 - e), rounded to even. */
    uint32_t e = ax >> 23;
    uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    /* Clamp so that every shift below is defined even where this result is
     * not chosen: e <= 112 here, and a shift of 31 already gives 0. */
    uint32_t sh = 126u - (e > 112u ? 112u : e);
    sh = sh > 31u ? 31u : sh;
    uint32_t q = mant >> sh;
    uint32_t rem = mant & ((1u << sh) - 1u);
    uint32_t half = 1u << (sh - 1u);
    q += (uint32_t)(rem > half) | ((uint32_t)(rem == half) & q & 1u);

    uint32_t special = ax > 0x7f800000u ? (0x7e00u | ((ax >> 13) & 0x3ffu)) : 0x7c00u;
    uint32_t r = ax >= 0x47800000u ? special : (ax < 0x38800000u ? q : normal);
    return (uint16_t)(r | sign);
}

static inline float bf16_to_f32(uint16_t h)
{
    return f32_from_bits((uint32_t)h << 16);
}

/* Round to nearest even on the upper 16 bits; NaN is made quiet (so that
 * dropping payload bits cannot turn it into inf). */
static inline uint16_t f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    uint32_t nan = (x >> 16) | 0x40u;
    return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

float tc__f16_to_f32(uint16_t h)
{
    return f16_to_f32(h);
}

uint16_t tc__f32_to_f16(float f)
{
    return f32_to_f16(f);
}

float tc__bf16_to_f32(uint16_t h)
{
    return bf16_to_f32(h);
}

uint16_t tc__f32_to_bf16(float f)
{
    return f32_to_bf16(f);
}

/* ------------------------------------------------------------------------ */
/* Scalar operations                                                         */
/* ------------------------------------------------------------------------ */

/* Integers: sums and products in the unsigned type (adding 0u first keeps
 * narrow types from being promoted to signed int), so they wrap. */
/* One line per two-operand helper, as a table: */
/* clang-format off */
static inline uint8_t add_u8(uint8_t a, uint8_t b) { return (uint8_t)(a + 0u + b); }
static inline uint8_t mul_u8(uint8_t a, uint8_t b) { return (uint8_t)((a + 0u) * b); }
static inline uint8_t min_u8(uint8_t a, uint8_t b) { return a < b ? a : b; }
static inline uint8_t max_u8(uint8_t a, uint8_t b) { return a > b ? a : b; }
static inline int8_t min_i8(int8_t a, int8_t b) { return a < b ? a : b; }
static inline int8_t max_i8(int8_t a, int8_t b) { return a > b ? a : b; }
static inline uint16_t add_u16(uint16_t a, uint16_t b) { return (uint16_t)(a + 0u + b); }
static inline uint16_t mul_u16(uint16_t a, uint16_t b) { return (uint16_t)((a + 0u) * b); }
static inline uint16_t min_u16(uint16_t a, uint16_t b) { return a < b ? a : b; }
static inline uint16_t max_u16(uint16_t a, uint16_t b) { return a > b ? a : b; }
static inline int16_t min_i16(int16_t a, int16_t b) { return a < b ? a : b; }
static inline int16_t max_i16(int16_t a, int16_t b) { return a > b ? a : b; }
static inline uint32_t add_u32(uint32_t a, uint32_t b) { return (uint32_t)(a + 0u + b); }
static inline uint32_t mul_u32(uint32_t a, uint32_t b) { return (uint32_t)((a + 0u) * b); }
static inline int32_t min_i32(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t max_i32(int32_t a, int32_t b) { return a > b ? a : b; }
static inline uint64_t add_u64(uint64_t a, uint64_t b) { return a + b; }
static inline uint64_t mul_u64(uint64_t a, uint64_t b) { return a * b; }
static inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }
/* clang-format on */

static inline float canon_f32(float r)
{
    return r == r ? r : f32_from_bits(TC_F32_QNAN);
}

static inline double canon_f64(double r)
{
    return r == r ? r : f64_from_bits(TC_F64_QNAN);
}

static inline float add_f32(float a, float b)
{
    return canon_f32(a + b);
}
static inline float mul_f32(float a, float b)
{
    return canon_f32(a * b);
}
static inline double add_f64(double a, double b)
{
    return canon_f64(a + b);
}
static inline double mul_f64(double a, double b)
{
    return canon_f64(a * b);
}

/* MIN/MAX on the bit patterns: NaN in either input gives the canonical NaN;
 * between -0 and +0, MIN picks -0 and MAX +0 whatever the order, so that both
 * ops are commutative bit for bit. */
static inline uint32_t min_f32_bits(uint32_t ua, uint32_t ub)
{
    float a = f32_from_bits(ua), b = f32_from_bits(ub);
    uint32_t r = a < b ? ua : ub;
    r = a == b ? (ua | ub) : r;
    return ((a != a) | (b != b)) ? TC_F32_QNAN : r;
}

static inline uint32_t max_f32_bits(uint32_t ua, uint32_t ub)
{
    float a = f32_from_bits(ua), b = f32_from_bits(ub);
    uint32_t r = a > b ? ua : ub;
    r = a == b ? (ua & ub) : r;
    return ((a != a) | (b != b)) ? TC_F32_QNAN : r;
}

static inline uint64_t min_f64_bits(uint64_t ua, uint64_t ub)
{
    double a = f64_from_bits(ua), b = f64_from_bits(ub);
    uint64_t r = a < b ? ua : ub;
    r = a == b ? (ua | ub) : r;
    return ((a != a) | (b != b)) ? TC_F64_QNAN : r;
}

static inline uint64_t max_f64_bits(uint64_t ua, uint64_t ub)
{
    double a = f64_from_bits(ua), b = f64_from_bits(ub);
    uint64_t r = a > b ? ua : ub;
    r = a == b ? (ua & ub) : r;
    return ((a != a) | (b != b)) ? TC_F64_QNAN : r;
}

/* float16 and bfloat16: widen, combine in float32 (canonical NaN), narrow.
 * A NaN result narrows to the canonical NaN of the narrow type. */
#define TC_DEFINE_HALF_OPS(P, TO32, FROM32)                                                        \
    static inline uint16_t add_##P(uint16_t a, uint16_t b)                                         \
    {                                                                                              \
        return FROM32(add_f32(TO32(a), TO32(b)));                                                  \
    }                                                                                              \
    static inline uint16_t mul_##P(uint16_t a, uint16_t b)                                         \
    {                                                                                              \
        return FROM32(mul_f32(TO32(a), TO32(b)));                                                  \
    }                                                                                              \
    static inline uint16_t min_##P(uint16_t a, uint16_t b)                                         \
    {                                                                                              \
        return FROM32(f32_from_bits(min_f32_bits(f32_bits(TO32(a)), f32_bits(TO32(b)))));          \
    }                                                                                              \
    static inline uint16_t max_##P(uint16_t a, uint16_t b)                                         \
    {                                                                                              \
        return FROM32(f32_from_bits(max_f32_bits(f32_bits(TO32(a)), f32_bits(TO32(b)))));          \
    }

TC_DEFINE_HALF_OPS(f16, f16_to_f32, f32_to_f16)
TC_DEFINE_HALF_OPS(bf16, bf16_to_f32, f32_to_bf16)

/* ------------------------------------------------------------------------ */
/* Kernels                                                                   */
/* ------------------------------------------------------------------------ */

/* static void NAME(dst, src, count): dst[i] = OP(dst[i], src[i]) on elements
 * of type T, loaded and stored with memcpy (any alignment). On x86 each loop
 * is compiled twice, for the baseline ISA and for AVX2 (NAME##_avx2): the
 * same C, so the same IEEE operations and the same bits, only wider. No
 * expression multiplies and then adds, so nothing can be fused into an FMA. */
#define TC_KERNEL_BODY(NAME, T, OP, ATTR)                                                          \
    ATTR static void NAME(unsigned char *dst, const unsigned char *src, size_t count)              \
    {                                                                                              \
        for (size_t i = 0; i < count; i++) {                                                       \
            T a, b, r;                                                                             \
            memcpy(&a, dst + i * sizeof(T), sizeof(T));                                            \
            memcpy(&b, src + i * sizeof(T), sizeof(T));                                            \
            r = OP(a, b);                                                                          \
            memcpy(dst + i * sizeof(T), &r, sizeof(T));                                            \
        }                                                                                          \
    }

#if TC_REDUCE_X86
#define TC_AVX2 __attribute__((target("avx2")))
#define TC_DEFINE_KERNEL(NAME, T, OP)                                                              \
    TC_KERNEL_BODY(NAME, T, OP, )                                                                  \
    TC_KERNEL_BODY(NAME##_avx2, T, OP, TC_AVX2)
#else
#define TC_DEFINE_KERNEL(NAME, T, OP) TC_KERNEL_BODY(NAME, T, OP, )
#endif

TC_DEFINE_KERNEL(k_sum_u8, uint8_t, add_u8)
TC_DEFINE_KERNEL(k_prod_u8, uint8_t, mul_u8)
TC_DEFINE_KERNEL(k_min_u8, uint8_t, min_u8)
TC_DEFINE_KERNEL(k_max_u8, uint8_t, max_u8)
TC_DEFINE_KERNEL(k_min_i8, int8_t, min_i8)
TC_DEFINE_KERNEL(k_max_i8, int8_t, max_i8)
TC_DEFINE_KERNEL(k_sum_u16, uint16_t, add_u16)
TC_DEFINE_KERNEL(k_prod_u16, uint16_t, mul_u16)
TC_DEFINE_KERNEL(k_min_u16, uint16_t, min_u16)
TC_DEFINE_KERNEL(k_max_u16, uint16_t, max_u16)
TC_DEFINE_KERNEL(k_min_i16, int16_t, min_i16)
TC_DEFINE_KERNEL(k_max_i16, int16_t, max_i16)
TC_DEFINE_KERNEL(k_sum_i32, uint32_t, add_u32)
TC_DEFINE_KERNEL(k_prod_i32, uint32_t, mul_u32)
TC_DEFINE_KERNEL(k_min_i32, int32_t, min_i32)
TC_DEFINE_KERNEL(k_max_i32, int32_t, max_i32)
TC_DEFINE_KERNEL(k_sum_i64, uint64_t, add_u64)
TC_DEFINE_KERNEL(k_prod_i64, uint64_t, mul_u64)
TC_DEFINE_KERNEL(k_min_i64, int64_t, min_i64)
TC_DEFINE_KERNEL(k_max_i64, int64_t, max_i64)
TC_DEFINE_KERNEL(k_sum_f16, uint16_t, add_f16)
TC_DEFINE_KERNEL(k_prod_f16, uint16_t, mul_f16)
TC_DEFINE_KERNEL(k_min_f16, uint16_t, min_f16)
TC_DEFINE_KERNEL(k_max_f16, uint16_t, max_f16)
TC_DEFINE_KERNEL(k_sum_bf16, uint16_t, add_bf16)
TC_DEFINE_KERNEL(k_prod_bf16, uint16_t, mul_bf16)
TC_DEFINE_KERNEL(k_min_bf16, uint16_t, min_bf16)
TC_DEFINE_KERNEL(k_max_bf16, uint16_t, max_bf16)
TC_DEFINE_KERNEL(k_sum_f32, float, add_f32)
TC_DEFINE_KERNEL(k_prod_f32, float, mul_f32)
TC_DEFINE_KERNEL(k_min_f32, uint32_t, min_f32_bits)
TC_DEFINE_KERNEL(k_max_f32, uint32_t, max_f32_bits)
TC_DEFINE_KERNEL(k_sum_f64, double, add_f64)
TC_DEFINE_KERNEL(k_prod_f64, double, mul_f64)
TC_DEFINE_KERNEL(k_min_f64, uint64_t, min_f64_bits)
TC_DEFINE_KERNEL(k_max_f64, uint64_t, max_f64_bits)

/* buf[i] = EXPR for v = buf[i] (the AVG division), for the same ISAs. */
#define TC_AVG_BODY(NAME, T, EXPR, ATTR)                                                           \
    ATTR static void NAME(unsigned char *buf, size_t count, float nf, double nd)                   \
    {                                                                                              \
        for (size_t i = 0; i < count; i++) {                                                       \
            T v;                                                                                   \
            memcpy(&v, buf + i * sizeof(T), sizeof(T));                                            \
            v = EXPR;                                                                              \
            memcpy(buf + i * sizeof(T), &v, sizeof(T));                                            \
        }                                                                                          \
    }

#if TC_REDUCE_X86
#define TC_DEFINE_AVG(NAME, T, EXPR)                                                               \
    TC_AVG_BODY(NAME, T, EXPR, )                                                                   \
    TC_AVG_BODY(NAME##_avx2, T, EXPR, TC_AVX2)
#else
#define TC_DEFINE_AVG(NAME, T, EXPR) TC_AVG_BODY(NAME, T, EXPR, )
#endif

TC_DEFINE_AVG(avg_f16, uint16_t, f32_to_f16(canon_f32(f16_to_f32(v) / nf)))
TC_DEFINE_AVG(avg_bf16, uint16_t, f32_to_bf16(canon_f32(bf16_to_f32(v) / nf)))
TC_DEFINE_AVG(avg_f32, float, canon_f32(v / nf))
TC_DEFINE_AVG(avg_f64, double, canon_f64(v / nd))

/* ------------------------------------------------------------------------ */
/* x86 F16C float16 kernels                                                  */
/* ------------------------------------------------------------------------ */
/*
 * vcvtph2ps is exact; vcvtps2ph with an immediate rounding of nearest-even
 * ignores MXCSR and rounds exactly like f32_to_f16 for every non-NaN input,
 * and NaNs are canonicalized before it, exactly as in the portable path. The
 * float32 ops below are the vector forms of the scalar ones above. Selects
 * are and/andnot/or rather than blendv, which some compilers lower to scalar
 * code when only AVX (not AVX2) is enabled.
 */
#if TC_REDUCE_X86

#define TC_F16C __attribute__((target("avx,f16c")))

TC_F16C static inline __m256 v_select(__m256 mask, __m256 yes, __m256 no)
{
    return _mm256_or_ps(_mm256_and_ps(mask, yes), _mm256_andnot_ps(mask, no));
}

TC_F16C static inline __m256 v_qnan(void)
{
    return _mm256_castsi256_ps(_mm256_set1_epi32((int)TC_F32_QNAN));
}

TC_F16C static inline __m256 v_canon(__m256 r)
{
    return v_select(_mm256_cmp_ps(r, r, _CMP_UNORD_Q), v_qnan(), r);
}

TC_F16C static inline __m256 v_add(__m256 a, __m256 b)
{
    return v_canon(_mm256_add_ps(a, b));
}

TC_F16C static inline __m256 v_mul(__m256 a, __m256 b)
{
    return v_canon(_mm256_mul_ps(a, b));
}

TC_F16C static inline __m256 v_min(__m256 a, __m256 b)
{
    __m256 r = v_select(_mm256_cmp_ps(a, b, _CMP_LT_OQ), a, b);
    r = v_select(_mm256_cmp_ps(a, b, _CMP_EQ_OQ), _mm256_or_ps(a, b), r);
    return v_select(_mm256_cmp_ps(a, b, _CMP_UNORD_Q), v_qnan(), r);
}

TC_F16C static inline __m256 v_max(__m256 a, __m256 b)
{
    __m256 r = v_select(_mm256_cmp_ps(a, b, _CMP_GT_OQ), a, b);
    r = v_select(_mm256_cmp_ps(a, b, _CMP_EQ_OQ), _mm256_and_ps(a, b), r);
    return v_select(_mm256_cmp_ps(a, b, _CMP_UNORD_Q), v_qnan(), r);
}

TC_F16C static inline __m256 v_load_f16(const unsigned char *p)
{
    __m256 v = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
    /* An empty asm hides that v was widened from float16: otherwise clang
     * narrows the compares of MIN/MAX back to float16, which it can only
     * do one element at a time (about 20x slower). */
    __asm__("" : "+x"(v));
    return v;
}

TC_F16C static inline void v_store_f16(unsigned char *p, __m256 v)
{
    _mm_storeu_si128((__m128i *)(void *)p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

/* 16 elements per step (two independent chains), then 8, then the scalar
 * op for the last few. Each step loads both operands before it stores, so
 * dst == src is fine. */
#define TC_DEFINE_F16C_KERNEL(NAME, VOP, SOP)                                                      \
    TC_F16C static void NAME(unsigned char *dst, const unsigned char *src, size_t count)           \
    {                                                                                              \
        size_t i = 0;                                                                              \
        for (; i + 16 <= count; i += 16) {                                                         \
            __m256 r0 = VOP(v_load_f16(dst + 2 * i), v_load_f16(src + 2 * i));                     \
            __m256 r1 = VOP(v_load_f16(dst + 2 * i + 16), v_load_f16(src + 2 * i + 16));           \
            v_store_f16(dst + 2 * i, r0);                                                          \
            v_store_f16(dst + 2 * i + 16, r1);                                                     \
        }                                                                                          \
        for (; i + 8 <= count; i += 8) {                                                           \
            v_store_f16(dst + 2 * i, VOP(v_load_f16(dst + 2 * i), v_load_f16(src + 2 * i)));       \
        }                                                                                          \
        for (; i < count; i++) {                                                                   \
            uint16_t a, b, r;                                                                      \
            memcpy(&a, dst + 2 * i, 2);                                                            \
            memcpy(&b, src + 2 * i, 2);                                                            \
            r = SOP(a, b);                                                                         \
            memcpy(dst + 2 * i, &r, 2);                                                            \
        }                                                                                          \
    }

TC_DEFINE_F16C_KERNEL(k_sum_f16_f16c, v_add, add_f16)
TC_DEFINE_F16C_KERNEL(k_prod_f16_f16c, v_mul, mul_f16)
TC_DEFINE_F16C_KERNEL(k_min_f16_f16c, v_min, min_f16)
TC_DEFINE_F16C_KERNEL(k_max_f16_f16c, v_max, max_f16)

TC_F16C static void avg_f16_f16c(unsigned char *buf, size_t count, float nf, double nd)
{
    __m256 vn = _mm256_set1_ps(nf);
    size_t i = 0;

    for (; i + 8 <= count; i += 8) {
        v_store_f16(buf + 2 * i, v_canon(_mm256_div_ps(v_load_f16(buf + 2 * i), vn)));
    }
    avg_f16(buf + 2 * i, count - i, nf, nd);
}

#endif /* TC_REDUCE_X86 */

/* ------------------------------------------------------------------------ */
/* Tables and dispatch                                                       */
/* ------------------------------------------------------------------------ */

typedef void (*tc_avg_t)(unsigned char *buf, size_t count, float nf, double nd);

#define TC_NUM_DTYPES ((int)TC_UINT16 + 1)
#define TC_NUM_OPS ((int)TC_PROD + 1)

/* One path's kernels: [dtype][op] (TC_AVG reduces as TC_SUM), and the AVG
 * divisions of the floating dtypes. */
typedef struct {
    const char *name;
    tc_kernel_t reduce[TC_NUM_DTYPES][TC_NUM_OPS];
    tc_avg_t avg[TC_NUM_DTYPES];
} tc_kernel_set_t;

/* The table of one path, from the kernels whose names end in S (F16 for the
 * float16 row). */
#define TC_ROW(P, S)                                                                               \
    {                                                                                              \
        k_sum_##P##S, k_sum_##P##S, k_min_##P##S, k_max_##P##S, k_prod_##P##S                      \
    }
#define TC_KERNEL_SET(NAME, S, F16)                                                                \
    {                                                                                              \
        .name = NAME,                                                                              \
        .reduce = {[TC_UINT8] = TC_ROW(u8, S),                                                     \
                   [TC_INT8] = {k_sum_u8##S, k_sum_u8##S, k_min_i8##S, k_max_i8##S, k_prod_u8##S}, \
                   [TC_INT32] = TC_ROW(i32, S),                                                    \
                   [TC_INT64] = TC_ROW(i64, S),                                                    \
                   [TC_FLOAT16] = TC_ROW(f16, F16),                                                \
                   [TC_BFLOAT16] = TC_ROW(bf16, S),                                                \
                   [TC_FLOAT32] = TC_ROW(f32, S),                                                  \
                   [TC_FLOAT64] = TC_ROW(f64, S),                                                  \
                   [TC_INT16] = {k_sum_u16##S, k_sum_u16##S, k_min_i16##S, k_max_i16##S,           \
                                 k_prod_u16##S},                                                   \
                   [TC_UINT16] = TC_ROW(u16, S)},                                                  \
        .avg = {[TC_FLOAT16] = avg_f16##F16,                                                       \
                [TC_BFLOAT16] = avg_bf16##S,                                                       \
                [TC_FLOAT32] = avg_f32##S,                                                         \
                [TC_FLOAT64] = avg_f64##S},                                                        \
    }

_Static_assert(TC_SUM == 0 && TC_AVG == 1 && TC_MIN == 2 && TC_MAX == 3 && TC_PROD == 4,
               "TC_ROW lists the ops in enum order");

static const tc_kernel_set_t portable_set = TC_KERNEL_SET("portable", , );

#if TC_REDUCE_X86
static const tc_kernel_set_t avx2_set = TC_KERNEL_SET("avx2", _avx2, _avx2);
static const tc_kernel_set_t avx2_f16c_set = TC_KERNEL_SET("avx2+f16c", _avx2, _f16c);
static const tc_kernel_set_t f16c_set = TC_KERNEL_SET("f16c", , _f16c);

/* CPUID leaf 1 ECX: 27 OSXSAVE, 28 AVX, 29 F16C; leaf 7 EBX: 5 AVX2. */
static const tc_kernel_set_t *cpu_probe_set(void)
{
    unsigned int eax, ebx, ecx, edx, ecx1, xcr0_lo, xcr0_hi;
    int f16c, avx2;

    if (!__get_cpuid(1, &eax, &ebx, &ecx1, &edx) || (ecx1 & (3u << 27)) != (3u << 27)) {
        return &portable_set; /* no AVX, or the OS does not enable it */
    }
    /* The OS must save the SSE and AVX register state (XCR0 bits 1 and 2). */
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0u));
    (void)xcr0_hi;
    if ((xcr0_lo & 6u) != 6u) {
        return &portable_set;
    }
    f16c = (ecx1 >> 29) & 1u;
    avx2 = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && ((ebx >> 5) & 1u);
    if (avx2) {
        return f16c ? &avx2_f16c_set : &avx2_set;
    }
    return f16c ? &f16c_set : &portable_set;
}
#else
static const tc_kernel_set_t *cpu_probe_set(void)
{
    return &portable_set;
}
#endif

/* The set for this CPU, probed once. Relaxed: every thread that probes finds
 * the same answer and the sets are constant, so a race only repeats the
 * probe. */
static _Atomic(const tc_kernel_set_t *) cpu_set;

/* Set only by the test hook; relaxed for the same reason: it picks between
 * paths that give the same bits, and orders nothing else. */
static atomic_int force_portable;

static const tc_kernel_set_t *kernel_set(void)
{
    const tc_kernel_set_t *set;

    if (atomic_load_explicit(&force_portable, memory_order_relaxed)) {
        return &portable_set;
    }
    set = atomic_load_explicit(&cpu_set, memory_order_relaxed);
    if (set == NULL) {
        set = cpu_probe_set();
        atomic_store_explicit(&cpu_set, set, memory_order_relaxed);
    }
    return set;
}

int tc__reduce_force_portable(int force)
{
    return atomic_exchange_explicit(&force_portable, force != 0, memory_order_relaxed);
}

const char *tc__reduce_path(void)
{
    return kernel_set()->name;
}

void tc__reduce(tc_dtype_t dtype, tc_op_t op, void *dst, const void *src, size_t count)
{
    if ((unsigned)dtype >= (unsigned)TC_NUM_DTYPES || (unsigned)op >= (unsigned)TC_NUM_OPS ||
        count == 0) {
        return;
    }
    kernel_set()->reduce[dtype][op]((unsigned char *)dst, (const unsigned char *)src, count);
}

void tc__reduce_avg_finish(tc_dtype_t dtype, void *buf, size_t count, int n)
{
    tc_avg_t avg;

    /* Dividing by 1 changes nothing but NaN payloads, which the reduction
     * already made canonical; n <= 0 is a caller bug we refuse to act on. */
    if ((unsigned)dtype >= (unsigned)TC_NUM_DTYPES || n <= 1 || count == 0) {
        return;
    }
    avg = kernel_set()->avg[dtype];
    if (avg != NULL) { /* NULL for the integers: they are left as they are */
        avg((unsigned char *)buf, count, (float)n, (double)n);
    }
}
