/*
 * identity.c - the identity element of each reduction op, per dtype: what a
 * rank that joined (tc_join) contributes to the collectives that run
 * without it, so that the others' result is as if it were not there.
 *
 * sum and avg: 0. prod: 1. min: the largest value (+inf for floating
 * dtypes, the dtype's maximum for integers); max: the smallest (-inf, the
 * dtype's minimum). float16 and bfloat16 are written as their bit patterns.
 */
#include "reduce/reduce.h"

#include <math.h>
#include <string.h>

/* One element's bytes of the identity of op in dtype; 0 if unknown. */
static size_t identity_elem(tc_dtype_t dtype, tc_op_t op, unsigned char *e)
{
    const int lo = op == TC_MAX, hi = op == TC_MIN, one = op == TC_PROD;

    switch (dtype) {
#define INT_CASE(DT, T, MINV, MAXV)                                                                \
    case DT: {                                                                                     \
        T v = hi ? (T)(MAXV) : lo ? (T)(MINV) : (T)one;                                            \
        memcpy(e, &v, sizeof(v));                                                                  \
        return sizeof(v);                                                                          \
    }
        INT_CASE(TC_UINT8, uint8_t, 0, UINT8_MAX)
        INT_CASE(TC_INT8, int8_t, INT8_MIN, INT8_MAX)
        INT_CASE(TC_INT16, int16_t, INT16_MIN, INT16_MAX)
        INT_CASE(TC_UINT16, uint16_t, 0, UINT16_MAX)
        INT_CASE(TC_INT32, int32_t, INT32_MIN, INT32_MAX)
        INT_CASE(TC_INT64, int64_t, INT64_MIN, INT64_MAX)
#undef INT_CASE
    case TC_FLOAT32: {
        float v = hi ? INFINITY : lo ? -INFINITY : (float)one;
        memcpy(e, &v, sizeof(v));
        return sizeof(v);
    }
    case TC_FLOAT64: {
        double v = hi ? INFINITY : lo ? -INFINITY : (double)one;
        memcpy(e, &v, sizeof(v));
        return sizeof(v);
    }
    case TC_FLOAT16: {
        uint16_t v = hi ? 0x7C00u : lo ? 0xFC00u : one ? 0x3C00u : 0;
        memcpy(e, &v, sizeof(v));
        return sizeof(v);
    }
    case TC_BFLOAT16: {
        uint16_t v = hi ? 0x7F80u : lo ? 0xFF80u : one ? 0x3F80u : 0;
        memcpy(e, &v, sizeof(v));
        return sizeof(v);
    }
    }
    return 0;
}

void tc__reduce_identity(tc_dtype_t dtype, tc_op_t op, void *buf, size_t count)
{
    unsigned char e[8];
    size_t es = identity_elem(dtype, op, e), i;

    if (es == 0 || count == 0) {
        return;
    }
    if (op == TC_SUM || op == TC_AVG) {
        memset(buf, 0, count * es); /* 0 is all-zero bits in every dtype */
        return;
    }
    for (i = 0; i < count; i++) {
        memcpy((unsigned char *)buf + i * es, e, es);
    }
}
