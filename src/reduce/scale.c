/*
 * scale.c - multiplying a buffer by a factor, as the prescale and postscale
 * options define it (tcoll.h, tc_opts_t): floating dtypes in their own
 * precision (float16 and bfloat16 through float32, rounded back to the
 * nearest even), integer dtypes in double, truncated toward zero and
 * saturated at the dtype's range (never the undefined behaviour of an
 * out-of-range conversion).
 *
 * Deterministic like the reduce kernels: the same inputs and factor give the
 * same bits on every rank and every call.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "reduce/reduce.h"

/* x truncated toward zero and clamped to [lo, hi] (both exact in double
 * for every integer dtype but int64, whose hi rounds up to 2^63: handled). */
static double clamp_trunc(double x, double lo, double hi)
{
    x = trunc(x);
    return x < lo ? lo : x > hi ? hi : x;
}

#define SCALE_INT(T, LO, HI)                                                                       \
    do {                                                                                           \
        for (i = 0; i < count; i++) {                                                              \
            T v;                                                                                   \
            memcpy(&v, (const char *)src + i * sizeof(T), sizeof(T));                              \
            v = (T)clamp_trunc((double)v * factor, (double)(LO), (double)(HI));                    \
            memcpy((char *)dst + i * sizeof(T), &v, sizeof(T));                                    \
        }                                                                                          \
    } while (0)

void tc__scale(tc_dtype_t dtype, void *dst, const void *src, size_t count, double factor)
{
    const float ff = (float)factor;
    size_t i;

    switch (dtype) {
    case TC_FLOAT32:
        for (i = 0; i < count; i++) {
            float v;
            memcpy(&v, (const char *)src + i * 4, 4);
            v *= ff;
            memcpy((char *)dst + i * 4, &v, 4);
        }
        return;
    case TC_FLOAT64:
        for (i = 0; i < count; i++) {
            double v;
            memcpy(&v, (const char *)src + i * 8, 8);
            v *= factor;
            memcpy((char *)dst + i * 8, &v, 8);
        }
        return;
    case TC_FLOAT16:
    case TC_BFLOAT16:
        for (i = 0; i < count; i++) {
            uint16_t h;
            memcpy(&h, (const char *)src + i * 2, 2);
            h = dtype == TC_FLOAT16 ? tc__f32_to_f16(tc__f16_to_f32(h) * ff)
                                    : tc__f32_to_bf16(tc__bf16_to_f32(h) * ff);
            memcpy((char *)dst + i * 2, &h, 2);
        }
        return;
    case TC_UINT8: SCALE_INT(uint8_t, 0, UINT8_MAX); return;
    case TC_INT8: SCALE_INT(int8_t, INT8_MIN, INT8_MAX); return;
    case TC_UINT16: SCALE_INT(uint16_t, 0, UINT16_MAX); return;
    case TC_INT16: SCALE_INT(int16_t, INT16_MIN, INT16_MAX); return;
    case TC_INT32: SCALE_INT(int32_t, INT32_MIN, INT32_MAX); return;
    case TC_INT64:
        for (i = 0; i < count; i++) {
            int64_t v;
            double x;
            memcpy(&v, (const char *)src + i * 8, 8);
            x = trunc((double)v * factor);
            /* 2^63 is the first double above INT64_MAX */
            v = x >= 9223372036854775808.0   ? INT64_MAX
                : x < -9223372036854775808.0 ? INT64_MIN
                                             : (int64_t)x;
            memcpy((char *)dst + i * 8, &v, 8);
        }
        return;
    }
}
