/*
 * dtype.c - tcoll's dtypes as tcoll-perf handles them: float16 and bfloat16
 * converted by hand (round to nearest even, as tcoll does), integer values
 * written into and compared with elements of any dtype, and the MPI datatype
 * and operation a user would pass for each (16-bit floats as MPI_UINT16_T
 * with user-defined operations that combine in float32). It uses only the
 * public header: it must never borrow the library's own conversions, or a
 * shared mistake would go unseen.
 */
#include "perf.h"

#include <math.h>
#include <string.h>

static uint16_t f32_to_f16(float f)
{
    uint32_t x, ax, sign, m, r, rem, half;
    int shift;
    memcpy(&x, &f, sizeof x);
    sign = (x >> 16) & 0x8000u;
    ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) {
        return (uint16_t)(sign | 0x7e00u); /* NaN stays NaN */
    }
    if (ax >= 0x47800000u) {
        return (uint16_t)(sign | 0x7c00u); /* >= 2^16 or inf */
    }
    if (ax >= 0x38800000u) { /* a normal binary16: keep 10 of 23 mantissa bits */
        m = ax & 0x7fffffu;
        r = ((((ax >> 23) - 127u + 15u)) << 10) | (m >> 13);
        rem = m & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) {
            r++; /* a carry into the exponent is right, up to inf */
        }
        return (uint16_t)(sign | r);
    }
    if (ax <= 0x33000000u) {
        return (uint16_t)sign; /* at most 2^-25: rounds to zero */
    }
    /* A subnormal binary16: count units of 2^-24. */
    m = (ax & 0x7fffffu) | 0x800000u;
    shift = 126 - (int)(ax >> 23); /* 14..24 */
    r = m >> shift;
    rem = m & ((1u << shift) - 1u);
    half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) {
        r++;
    }
    return (uint16_t)(sign | r);
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
    float f;
    if (e == 0) {
        f = (float)m * 0x1p-24f;
        return sign ? -f : f;
    }
    x = sign | (e == 31 ? 0x7f800000u : (e + 112u) << 23) | (m << 13);
    memcpy(&f, &x, sizeof f);
    return f;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t)((x >> 16) | 0x40u);
    }
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static float bf16_to_f32(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

int perf_dt_is_float(tc_dtype_t dt)
{
    return dt == TC_FLOAT16 || dt == TC_BFLOAT16 || dt == TC_FLOAT32 || dt == TC_FLOAT64;
}

/* Largest integer magnitude up to which every integer is exact. */
int64_t perf_dt_exact_limit(tc_dtype_t dt)
{
    switch (dt) {
    case TC_FLOAT16: return 2048;
    case TC_BFLOAT16: return 256;
    case TC_FLOAT32: return (int64_t)1 << 24;
    case TC_FLOAT64: return (int64_t)1 << 53;
    default: return INT64_MAX;
    }
}

/* Element i of buf := the integer v (truncated for integer dtypes). */
void perf_put_int(tc_dtype_t dt, void *buf, size_t i, int64_t v)
{
    uint64_t u = (uint64_t)v;
    switch (dt) {
    case TC_UINT8:
    case TC_INT8: ((uint8_t *)buf)[i] = (uint8_t)u; break;
    case TC_UINT16:
    case TC_INT16: ((uint16_t *)buf)[i] = (uint16_t)u; break;
    case TC_INT32: ((uint32_t *)buf)[i] = (uint32_t)u; break;
    case TC_INT64: ((uint64_t *)buf)[i] = u; break;
    case TC_FLOAT16: ((uint16_t *)buf)[i] = f32_to_f16((float)v); break;
    case TC_BFLOAT16: ((uint16_t *)buf)[i] = f32_to_bf16((float)v); break;
    case TC_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case TC_FLOAT64: ((double *)buf)[i] = (double)v; break;
    }
}

/* An integer element's bits (zero-extended) as the value its dtype means. */
static double int_meaning(tc_dtype_t dt, uint64_t bits)
{
    switch (dt) {
    case TC_INT8: return (double)(bits >= 0x80u ? (int64_t)bits - 0x100 : (int64_t)bits);
    case TC_INT16: return (double)(bits >= 0x8000u ? (int64_t)bits - 0x10000 : (int64_t)bits);
    case TC_INT32:
        return (double)(bits >= 0x80000000u ? (int64_t)bits - 0x100000000 : (int64_t)bits);
    case TC_INT64: {
        int64_t v;
        memcpy(&v, &bits, sizeof v);
        return (double)v;
    }
    default: return (double)bits;
    }
}

/* Whether element i of buf is v: integers bit for bit after truncation to
 * their width, floating types by value. *got_p and *want_p: both as numbers,
 * for a message. */
int perf_elem_is(tc_dtype_t dt, const void *buf, size_t i, int64_t v, double *got_p, double *want_p)
{
    uint64_t u = (uint64_t)v, g = 0;
    double d = 0;
    switch (dt) {
    case TC_UINT8:
    case TC_INT8:
        g = ((const uint8_t *)buf)[i];
        u &= 0xffu;
        break;
    case TC_UINT16:
    case TC_INT16:
        g = ((const uint16_t *)buf)[i];
        u &= 0xffffu;
        break;
    case TC_INT32:
        g = ((const uint32_t *)buf)[i];
        u &= 0xffffffffu;
        break;
    case TC_INT64: g = ((const uint64_t *)buf)[i]; break;
    case TC_FLOAT16: d = f16_to_f32(((const uint16_t *)buf)[i]); break;
    case TC_BFLOAT16: d = bf16_to_f32(((const uint16_t *)buf)[i]); break;
    case TC_FLOAT32: d = ((const float *)buf)[i]; break;
    case TC_FLOAT64: d = ((const double *)buf)[i]; break;
    }
    if (!perf_dt_is_float(dt)) {
        *got_p = int_meaning(dt, g);
        *want_p = int_meaning(dt, u);
        return g == u;
    }
    *got_p = d;
    *want_p = (double)v;
    return d == (double)v;
}

/* The MPI datatype for a tcoll dtype; 16-bit floats travel as MPI_UINT16_T
 * and reduce with the user-defined operations below. */
MPI_Datatype perf_mpi_dtype(tc_dtype_t dt)
{
    switch (dt) {
    case TC_UINT8: return MPI_UINT8_T;
    case TC_INT8: return MPI_INT8_T;
    case TC_UINT16: return MPI_UINT16_T;
    case TC_INT16: return MPI_INT16_T;
    case TC_INT32: return MPI_INT32_T;
    case TC_INT64: return MPI_INT64_T;
    case TC_FLOAT16:
    case TC_BFLOAT16: return MPI_UINT16_T;
    case TC_FLOAT32: return MPI_FLOAT;
    case TC_FLOAT64: return MPI_DOUBLE;
    }
    return MPI_DATATYPE_NULL;
}

/* float16/bfloat16 reductions for MPI: combine in float32, round to nearest
 * even after each operation (as tcoll does); min/max propagate NaN. */
#define PERF_HALF_OP(NAME, TO, FROM, EXPR)                                                         \
    static void NAME(void *in, void *inout, int *len, MPI_Datatype *dt)                            \
    {                                                                                              \
        const uint16_t *a = in;                                                                    \
        uint16_t *b = inout;                                                                       \
        (void)dt;                                                                                  \
        for (int i = 0; i < *len; i++) {                                                           \
            float x = TO(a[i]), y = TO(b[i]);                                                      \
            b[i] = FROM(EXPR);                                                                     \
        }                                                                                          \
    }
PERF_HALF_OP(f16_sum, f16_to_f32, f32_to_f16, x + y)
PERF_HALF_OP(f16_prod, f16_to_f32, f32_to_f16, x *y)
PERF_HALF_OP(f16_min, f16_to_f32, f32_to_f16, (isnan(x) || x < y) ? x : y)
PERF_HALF_OP(f16_max, f16_to_f32, f32_to_f16, (isnan(x) || x > y) ? x : y)
PERF_HALF_OP(bf16_sum, bf16_to_f32, f32_to_bf16, x + y)
PERF_HALF_OP(bf16_prod, bf16_to_f32, f32_to_bf16, x *y)
PERF_HALF_OP(bf16_min, bf16_to_f32, f32_to_bf16, (isnan(x) || x < y) ? x : y)
PERF_HALF_OP(bf16_max, bf16_to_f32, f32_to_bf16, (isnan(x) || x > y) ? x : y)

/* The MPI operation for (dtype, op); avg is a sum followed by mpi_avg_finish.
 * *created_p says whether the caller must MPI_Op_free it. */
MPI_Op perf_mpi_op(tc_dtype_t dt, tc_op_t op, int *created_p)
{
    MPI_User_function *fn = NULL;
    MPI_Op mop;
    *created_p = 0;
    if (dt != TC_FLOAT16 && dt != TC_BFLOAT16) {
        switch (op) {
        case TC_SUM:
        case TC_AVG: return MPI_SUM;
        case TC_MIN: return MPI_MIN;
        case TC_MAX: return MPI_MAX;
        case TC_PROD: return MPI_PROD;
        }
        return MPI_OP_NULL;
    }
    switch (op) {
    case TC_SUM:
    case TC_AVG: fn = dt == TC_FLOAT16 ? f16_sum : bf16_sum; break;
    case TC_MIN: fn = dt == TC_FLOAT16 ? f16_min : bf16_min; break;
    case TC_MAX: fn = dt == TC_FLOAT16 ? f16_max : bf16_max; break;
    case TC_PROD: fn = dt == TC_FLOAT16 ? f16_prod : bf16_prod; break;
    }
    MPI_Op_create(fn, 1, &mop);
    *created_p = 1;
    return mop;
}

/* MPI has no average: divide the sum by n, as a user of MPI would have to. */
void perf_mpi_avg_finish(tc_dtype_t dt, void *buf, size_t count)
{
    float nf = (float)perf_size;
    size_t i;
    switch (dt) {
    case TC_FLOAT32:
        for (i = 0; i < count; i++) {
            ((float *)buf)[i] /= nf;
        }
        break;
    case TC_FLOAT64:
        for (i = 0; i < count; i++) {
            ((double *)buf)[i] /= (double)perf_size;
        }
        break;
    case TC_FLOAT16:
        for (i = 0; i < count; i++) {
            uint16_t *p = (uint16_t *)buf + i;
            *p = f32_to_f16(f16_to_f32(*p) / nf);
        }
        break;
    case TC_BFLOAT16:
        for (i = 0; i < count; i++) {
            uint16_t *p = (uint16_t *)buf + i;
            *p = f32_to_bf16(bf16_to_f32(*p) / nf);
        }
        break;
    default: break; /* integers: avg is refused when options are parsed */
    }
}
