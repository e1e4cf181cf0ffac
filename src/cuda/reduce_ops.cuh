/*
 * reduce_ops.cuh - the elementwise reduction of device tensors, with the
 * host's semantics bit for bit (src/reduce: reduce.c, scale.c), for the
 * in-node device paths (docs/gpu.md, "Data paths"). CUDA C++, header only,
 * and plain C++ where nvcc is not the compiler (a few intrinsics are then
 * given their IEEE meaning below), so that a unit test checks the logic on
 * the CPU against the host code (tests/unit/test_reduce_ops.cpp) and a GPU
 * test the kernels (tests/gpu/test_gpu_reduce.cu, reduce_kernels.cuh).
 *
 * combine_one<O> gives one element of the combination of n inputs in the
 * documented order of one node (docs/reproducibility.md):
 *     r = pre(x[0]);  r = r op pre(x[k]) for k = 1 .. n-1;
 *     avg (n > 1): r = r / n;  r = post(r)
 * where pre and post multiply by prescale and postscale as tc__scale does,
 * and only when the factor is not 1 (as the host path). Each operation
 * rounds to the dtype as the host kernels do: float16 and bfloat16 are
 * widened to float32, combined, and narrowed with round-to-nearest-even
 * after every operation; integer sums and products wrap; a NaN result of a
 * floating sum, product, min, max or average is the canonical quiet NaN.
 * The arithmetic uses the _rn intrinsics, which the compiler never fuses
 * into an FMA; NaN operands of a scaling keep their payload (made quiet) as
 * on x86, where a GPU multiply would give its own NaN.
 */
#ifndef TC_CUDA_REDUCE_OPS_CUH
#define TC_CUDA_REDUCE_OPS_CUH

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tcoll.h"

#ifdef __CUDACC__
#define TC_D __device__ __forceinline__
#else /* plain C++: the intrinsics with their IEEE meaning */
#define TC_D inline
static inline float __uint_as_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}
static inline uint32_t __float_as_uint(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}
static inline double __longlong_as_double(long long u)
{
    double f;
    memcpy(&f, &u, sizeof(f));
    return f;
}
static inline long long __double_as_longlong(double f)
{
    long long u;
    memcpy(&u, &f, sizeof(u));
    return u;
}
static inline float __fadd_rn(float a, float b)
{
    return a + b;
}
static inline float __fmul_rn(float a, float b)
{
    return a * b;
}
static inline float __fdiv_rn(float a, float b)
{
    return a / b;
}
static inline double __dadd_rn(double a, double b)
{
    return a + b;
}
static inline double __dmul_rn(double a, double b)
{
    return a * b;
}
static inline double __ddiv_rn(double a, double b)
{
    return a / b;
}
#endif

namespace tc_cuda {

/* ---- bit-exact conversions (reduce.c's) ----------------------------------- */

TC_D float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    uint32_t normal = ((e + 112u) << 23) | (m << 13);
    uint32_t special = 0x7f800000u | (m << 13) | (m != 0 ? 0x400000u : 0u);
    uint32_t tiny = __float_as_uint(__fmul_rn((float)(int32_t)m, 0x1p-24f));
    uint32_t r = e == 0 ? tiny : (e == 31 ? special : normal);
    return __uint_as_float(r | sign);
}

TC_D uint16_t f32_to_f16(float f)
{
    uint32_t x = __float_as_uint(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    uint32_t normal = (ax - (112u << 23) + 0xfffu + ((ax >> 13) & 1u)) >> 13;
    uint32_t e = ax >> 23;
    uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
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

TC_D float bf16_to_f32(uint16_t h)
{
    return __uint_as_float((uint32_t)h << 16);
}

TC_D uint16_t f32_to_bf16(float f)
{
    uint32_t x = __float_as_uint(f);
    uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    uint32_t nan = (x >> 16) | 0x40u;
    return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/* ---- the two-operand operations ------------------------------------------- */

TC_D float canon(float r)
{
    return r == r ? r : __uint_as_float(0x7fc00000u);
}

TC_D double canon(double r)
{
    return r == r ? r : __longlong_as_double(0x7ff8000000000000ll);
}

TC_D uint32_t min_bits(uint32_t ua, uint32_t ub)
{
    float a = __uint_as_float(ua), b = __uint_as_float(ub);
    uint32_t r = a < b ? ua : ub;
    r = a == b ? (ua | ub) : r;
    return (a != a || b != b) ? 0x7fc00000u : r;
}

TC_D uint32_t max_bits(uint32_t ua, uint32_t ub)
{
    float a = __uint_as_float(ua), b = __uint_as_float(ub);
    uint32_t r = a > b ? ua : ub;
    r = a == b ? (ua & ub) : r;
    return (a != a || b != b) ? 0x7fc00000u : r;
}

TC_D uint64_t min_bits(uint64_t ua, uint64_t ub)
{
    double a = __longlong_as_double((long long)ua), b = __longlong_as_double((long long)ub);
    uint64_t r = a < b ? ua : ub;
    r = a == b ? (ua | ub) : r;
    return (a != a || b != b) ? 0x7ff8000000000000ull : r;
}

TC_D uint64_t max_bits(uint64_t ua, uint64_t ub)
{
    double a = __longlong_as_double((long long)ua), b = __longlong_as_double((long long)ub);
    uint64_t r = a > b ? ua : ub;
    r = a == b ? (ua & ub) : r;
    return (a != a || b != b) ? 0x7ff8000000000000ull : r;
}

/* ---- each dtype: its storage type S, op, average and scaling --------------- */

/* Integers of type T: sums and products in the unsigned type U (wrapping);
 * scaling in double, truncated toward zero, saturated at [LO, HI]. */
template <typename T, typename U> struct ints {
    typedef T S;
    static TC_D T apply(tc_op_t op, T a, T b)
    {
        switch (op) {
        case TC_MIN: return a < b ? a : b;
        case TC_MAX: return a > b ? a : b;
        case TC_PROD: return (T)(U)((U)a * (U)b);
        default: return (T)(U)((U)a + (U)b);
        }
    }
    static TC_D T avg(T v, int n)
    {
        return v; /* integers are not averaged (refused at submission) */
    }
    static TC_D T clamp(double x, double lo, double hi)
    {
        return (T)(x < lo ? lo : x > hi ? hi : x);
    }
    static TC_D T scale(T v, double f);
};

template <> TC_D uint8_t ints<uint8_t, uint32_t>::scale(uint8_t v, double f)
{
    return clamp(trunc(__dmul_rn((double)v, f)), 0.0, 255.0);
}
template <> TC_D int8_t ints<int8_t, uint32_t>::scale(int8_t v, double f)
{
    return clamp(trunc(__dmul_rn((double)v, f)), -128.0, 127.0);
}
template <> TC_D uint16_t ints<uint16_t, uint32_t>::scale(uint16_t v, double f)
{
    return clamp(trunc(__dmul_rn((double)v, f)), 0.0, 65535.0);
}
template <> TC_D int16_t ints<int16_t, uint32_t>::scale(int16_t v, double f)
{
    return clamp(trunc(__dmul_rn((double)v, f)), -32768.0, 32767.0);
}
template <> TC_D int32_t ints<int32_t, uint32_t>::scale(int32_t v, double f)
{
    return clamp(trunc(__dmul_rn((double)v, f)), -2147483648.0, 2147483647.0);
}
template <> TC_D int64_t ints<int64_t, uint64_t>::scale(int64_t v, double f)
{
    double x = trunc(__dmul_rn((double)v, f)); /* 2^63: the first double above INT64_MAX */
    return x >= 9223372036854775808.0 ? INT64_MAX
           : x < -9223372036854775808.0 ? INT64_MIN
                                        : (int64_t)x;
}

struct f32_ops {
    typedef float S;
    static TC_D float apply(tc_op_t op, float a, float b)
    {
        switch (op) {
        case TC_MIN: return __uint_as_float(min_bits(__float_as_uint(a), __float_as_uint(b)));
        case TC_MAX: return __uint_as_float(max_bits(__float_as_uint(a), __float_as_uint(b)));
        case TC_PROD: return canon(__fmul_rn(a, b));
        default: return canon(__fadd_rn(a, b));
        }
    }
    static TC_D float avg(float v, int n)
    {
        return canon(__fdiv_rn(v, (float)n));
    }
    static TC_D float scale(float v, double f)
    {
        return v != v ? __uint_as_float(__float_as_uint(v) | 0x400000u) : __fmul_rn(v, (float)f);
    }
};

struct f64_ops {
    typedef double S;
    static TC_D double apply(tc_op_t op, double a, double b)
    {
        uint64_t ua = (uint64_t)__double_as_longlong(a), ub = (uint64_t)__double_as_longlong(b);
        switch (op) {
        case TC_MIN: return __longlong_as_double((long long)min_bits(ua, ub));
        case TC_MAX: return __longlong_as_double((long long)max_bits(ua, ub));
        case TC_PROD: return canon(__dmul_rn(a, b));
        default: return canon(__dadd_rn(a, b));
        }
    }
    static TC_D double avg(double v, int n)
    {
        return canon(__ddiv_rn(v, (double)n));
    }
    static TC_D double scale(double v, double f)
    {
        return v != v ? __longlong_as_double(__double_as_longlong(v) | 0x8000000000000ll)
                      : __dmul_rn(v, f);
    }
};

/* float16 (BF false) and bfloat16 (BF true): through float32. */
template <bool BF> struct half_ops {
    typedef uint16_t S;
    static TC_D float wide(uint16_t h)
    {
        return BF ? bf16_to_f32(h) : f16_to_f32(h);
    }
    static TC_D uint16_t narrow(float f)
    {
        return BF ? f32_to_bf16(f) : f32_to_f16(f);
    }
    static TC_D uint16_t apply(tc_op_t op, uint16_t a, uint16_t b)
    {
        return narrow(f32_ops::apply(op, wide(a), wide(b)));
    }
    static TC_D uint16_t avg(uint16_t v, int n)
    {
        return narrow(f32_ops::avg(wide(v), n));
    }
    static TC_D uint16_t scale(uint16_t v, double f)
    {
        return narrow(f32_ops::scale(wide(v), f));
    }
};

/* Element i of the combination of x[0..n) (see the file comment). */
template <typename O>
TC_D typename O::S combine_one(tc_op_t op, int n, const void *const *x, size_t i, double pre,
                               double post)
{
    typedef typename O::S S;
    S r = ((const S *)x[0])[i];

    if (pre != 1.0) {
        r = O::scale(r, pre);
    }
    for (int k = 1; k < n; k++) {
        S v = ((const S *)x[k])[i];
        if (pre != 1.0) {
            v = O::scale(v, pre);
        }
        r = O::apply(op, r, v);
    }
    if (op == TC_AVG && n > 1) { /* as tc__reduce_avg_finish: no division by 1 */
        r = O::avg(r, n);
    }
    if (post != 1.0) {
        r = O::scale(r, post);
    }
    return r;
}

/* Calls f.template run<O>() with O the operations of dtype (host code); 0
 * for a dtype it does not know, else f's result. */
template <typename F> inline int with_ops(tc_dtype_t dtype, F &f)
{
    switch (dtype) {
    case TC_UINT8: return f.template run<ints<uint8_t, uint32_t>>();
    case TC_INT8: return f.template run<ints<int8_t, uint32_t>>();
    case TC_UINT16: return f.template run<ints<uint16_t, uint32_t>>();
    case TC_INT16: return f.template run<ints<int16_t, uint32_t>>();
    case TC_INT32: return f.template run<ints<int32_t, uint32_t>>();
    case TC_INT64: return f.template run<ints<int64_t, uint64_t>>();
    case TC_FLOAT16: return f.template run<half_ops<false>>();
    case TC_BFLOAT16: return f.template run<half_ops<true>>();
    case TC_FLOAT32: return f.template run<f32_ops>();
    case TC_FLOAT64: return f.template run<f64_ops>();
    }
    return 0;
}

} // namespace tc_cuda

#endif
