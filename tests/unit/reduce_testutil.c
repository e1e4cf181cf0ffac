/*
 * reduce_testutil.c - the reduction kernel tests' shared helpers and their
 * reference for one element (reduce_testutil.h). Written from the formats'
 * definitions: must never call the kernels it is the reference for
 * (tc__reduce); the conversions it uses are tested on their own
 * (test_reduce.c: cases f16_every_value, f16_rounding and bf16).
 */
#include "reduce_testutil.h"

#include <math.h>
#include <string.h>

#include "check.h"
#include "reduce/reduce.h"

uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

uint64_t hash64(uint64_t x)
{
    return splitmix64(&x);
}

uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

float f32_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

uint64_t f64_bits(double f)
{
    uint64_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

double f64_of(uint64_t u)
{
    double f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

int f16_is_nan(uint16_t h)
{
    return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
}

int bf16_is_nan(uint16_t h)
{
    return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0;
}

/* Element i of a buffer of dtype, as raw bits (little or big endian alike). */
uint64_t get_bits(tc_dtype_t dt, const unsigned char *p, size_t i)
{
    size_t sz = tc_dtype_size(dt);
    uint8_t v8;
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;

    switch (sz) {
    case 1: memcpy(&v8, p + i, 1); return v8;
    case 2: memcpy(&v16, p + 2 * i, 2); return v16;
    case 4: memcpy(&v32, p + 4 * i, 4); return v32;
    default: memcpy(&v64, p + 8 * i, 8); return v64;
    }
}

void put_bits(tc_dtype_t dt, unsigned char *p, size_t i, uint64_t bits)
{
    size_t sz = tc_dtype_size(dt);
    uint8_t v8 = (uint8_t)bits;
    uint16_t v16 = (uint16_t)bits;
    uint32_t v32 = (uint32_t)bits;

    switch (sz) {
    case 1: memcpy(p + i, &v8, 1); break;
    case 2: memcpy(p + 2 * i, &v16, 2); break;
    case 4: memcpy(p + 4 * i, &v32, 4); break;
    default: memcpy(p + 8 * i, &bits, 8); break;
    }
}

uint64_t dtype_mask(tc_dtype_t dt)
{
    size_t sz = tc_dtype_size(dt);
    return sz == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * sz)) - 1;
}

int64_t sign_extend(uint64_t bits, size_t sz)
{
    unsigned shift = (unsigned)(64 - 8 * sz);
    /* Two's complement reinterpretation, done without implementation-defined
     * shifts of negative numbers. */
    uint64_t v = bits << shift;
    int64_t r;
    if (v >> 63) {
        r = -(int64_t)((~v >> shift) & (UINT64_MAX >> shift)) - 1;
    } else {
        r = (int64_t)(v >> shift);
    }
    return r;
}

int is_float(tc_dtype_t dt)
{
    return dt == TC_FLOAT16 || dt == TC_BFLOAT16 || dt == TC_FLOAT32 || dt == TC_FLOAT64;
}

int is_unsigned(tc_dtype_t dt)
{
    return dt == TC_UINT8 || dt == TC_UINT16;
}

uint64_t canonical_nan(tc_dtype_t dt)
{
    switch (dt) {
    case TC_FLOAT16: return F16_QNAN;
    case TC_BFLOAT16: return BF16_QNAN;
    case TC_FLOAT32: return F32_QNAN;
    default: return F64_QNAN;
    }
}

uint64_t float_enc(tc_dtype_t dt, double v)
{
    switch (dt) {
    case TC_FLOAT16: return tc__f32_to_f16((float)v);
    case TC_BFLOAT16: return tc__f32_to_bf16((float)v);
    case TC_FLOAT32: return f32_bits((float)v);
    default: return f64_bits(v);
    }
}

double float_dec(tc_dtype_t dt, uint64_t bits)
{
    switch (dt) {
    case TC_FLOAT16: return tc__f16_to_f32((uint16_t)bits);
    case TC_BFLOAT16: return tc__bf16_to_f32((uint16_t)bits);
    case TC_FLOAT32: return f32_of((uint32_t)bits);
    default: return f64_of(bits);
    }
}

/* The expected result of one element, computed from the dtype's definition. */
uint64_t ref_op(tc_dtype_t dt, tc_op_t op, uint64_t a, uint64_t b)
{
    size_t sz = tc_dtype_size(dt);
    uint64_t mask = dtype_mask(dt);

    if (!is_float(dt)) {
        if (dt == TC_INT64) {
            int64_t sa = sign_extend(a, 8), sb = sign_extend(b, 8);
            switch (op) {
            case TC_SUM:
            case TC_AVG: return a + b; /* mod 2^64 by definition */
            case TC_PROD: return a * b;
            case TC_MIN: return sa < sb ? a : b;
            default: return sa > sb ? a : b;
            }
        }
        /* Narrower: the exact result fits int64; keep its low bits. */
        int64_t sa = is_unsigned(dt) ? (int64_t)a : sign_extend(a, sz);
        int64_t sb = is_unsigned(dt) ? (int64_t)b : sign_extend(b, sz);
        int64_t r;
        switch (op) {
        case TC_SUM:
        case TC_AVG: r = sa + sb; break;
        case TC_PROD: r = sa * sb; break;
        case TC_MIN: r = sa < sb ? sa : sb; break;
        default: r = sa > sb ? sa : sb; break;
        }
        return (uint64_t)r & mask;
    }

    double da = float_dec(dt, a), db = float_dec(dt, b), r;
    if (isnan(da) || isnan(db)) {
        return canonical_nan(dt);
    }
    switch (op) {
    case TC_SUM:
    case TC_AVG: r = da + db; break;
    case TC_PROD: r = da * db; break;
    case TC_MIN:
        if (da == db && da == 0) {
            return float_enc(dt, (signbit(da) || signbit(db)) ? -0.0 : 0.0);
        }
        return da < db ? a : b;
    default:
        if (da == db && da == 0) {
            return float_enc(dt, (signbit(da) && signbit(db)) ? -0.0 : 0.0);
        }
        return da > db ? a : b;
    }
    if (isnan(r)) {
        return canonical_nan(dt);
    }
    uint64_t bits = float_enc(dt, r);
    CHECK_MSG(float_dec(dt, bits) == r, "test data bug: %a not exact in %s", r, tc_dtype_name(dt));
    return bits;
}
