/*
 * test_scale.c - unit test of tc__scale (src/reduce/scale.c), the kernel of
 * the prescale and postscale options. No MPI.
 *
 * Expected values are written here from the rule in tcoll.h, not from
 * scale.c: float32 multiplies in float32 by the factor rounded to float,
 * float64 in double; float16 and bfloat16 go through float32 and round back
 * to nearest-even (checked on values whose products are exact, and on one
 * that must round); integers scale in double, truncate toward zero and
 * saturate at their range.
 */
#include "reduce/reduce.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "tc_test.h"

TC_CASE(floats)
{
    float f[4] = {1.0f, -3.0f, 0.1f, 1e30f}, g[4];
    double d[3] = {1.0, -0.5, 1e-300}, e[3];
    int i;

    tc__scale(TC_FLOAT32, g, f, 4, 0.1);
    for (i = 0; i < 4; i++) {
        CHECK(memcmp(&g[i], &(float){f[i] * (float)0.1}, 4) == 0);
    }
    tc__scale(TC_FLOAT32, g, f, 4, 1e10); /* 1e40 overflows float: inf */
    CHECK(isinf(g[3]) && g[3] > 0);
    tc__scale(TC_FLOAT32, g, f, 1, -0.0);
    CHECK(g[0] == 0.0f && signbit(g[0]));
    tc__scale(TC_FLOAT64, e, d, 3, 3.0);
    CHECK(e[0] == 3.0 && e[1] == -1.5 && e[2] == 1e-300 * 3.0);
    memcpy(e, d, sizeof(d)); /* in place */
    tc__scale(TC_FLOAT64, e, e, 3, 0.5);
    CHECK(e[0] == 0.5 && e[1] == -0.25);
}

TC_CASE(half_floats)
{
    /* float16: 1.5 (0x3E00) * 2 = 3 (0x4200); 65504 (0x7BFF, the largest)
     * * 2 = inf (0x7C00); 1 + 2^-10 (0x3C01) * 1.5 = 1.5 + 1.5 * 2^-10, a
     * tie between 0x3E00 + 1 and + 2 in units of 2^-9: even, 0x3E02 */
    uint16_t h[3] = {0x3E00, 0x7BFF, 0x3C01}, o[3];
    /* bfloat16: 1.0 (0x3F80) * 0.5 = 0x3F00; -2 (0xC000) * 3 = -6 (0xC0C0) */
    uint16_t b[2] = {0x3F80, 0xC000}, p[2];

    tc__scale(TC_FLOAT16, o, h, 1, 2.0);
    CHECK_EQ(o[0], 0x4200);
    tc__scale(TC_FLOAT16, o + 1, h + 1, 1, 2.0);
    CHECK_EQ(o[1], 0x7C00);
    tc__scale(TC_FLOAT16, o + 2, h + 2, 1, 1.5);
    CHECK_EQ(o[2], 0x3E02);
    tc__scale(TC_BFLOAT16, p, b, 1, 0.5);
    CHECK_EQ(p[0], 0x3F00);
    tc__scale(TC_BFLOAT16, p + 1, b + 1, 1, 3.0);
    CHECK_EQ(p[1], 0xC0C0);
}

TC_CASE(integers)
{
    int32_t i32[5] = {7, -7, 3, INT32_MAX, INT32_MIN}, o32[5];
    uint8_t u8[3] = {10, 200, 255}, o8[3];
    int8_t s8[3] = {-100, 100, 5}, p8[3];
    int64_t i64[3] = {INT64_MAX, INT64_MIN, 1000000007}, o64[3];
    uint16_t u16[4] = {2, 32768, UINT16_MAX, 60000}, o16[4];
    int16_t s16[4] = {-15, 15, INT16_MIN, INT16_MAX}, p16[4];

    tc__scale(TC_INT32, o32, i32, 5, 0.5); /* 3.5 -> 3, -3.5 -> -3 (toward zero) */
    CHECK(o32[0] == 3 && o32[1] == -3 && o32[2] == 1);
    CHECK(o32[3] == INT32_MAX / 2 && o32[4] == INT32_MIN / 2);
    tc__scale(TC_INT32, o32, i32, 5, 2.0); /* saturates */
    CHECK(o32[0] == 14 && o32[3] == INT32_MAX && o32[4] == INT32_MIN);
    tc__scale(TC_UINT8, o8, u8, 3, 1.5); /* 15; 300 -> 255; 382.5 -> 255 */
    CHECK(o8[0] == 15 && o8[1] == 255 && o8[2] == 255);
    tc__scale(TC_UINT8, o8, u8, 3, -1.0); /* below the range: 0 */
    CHECK(o8[0] == 0 && o8[1] == 0 && o8[2] == 0);
    tc__scale(TC_INT8, p8, s8, 3, 2.0);
    CHECK(p8[0] == INT8_MIN && p8[1] == INT8_MAX && p8[2] == 10);
    tc__scale(TC_UINT16, o16, u16, 4, 1.5); /* 3; 49152; 65535 * 1.5 and 60000 * 1.5 -> 65535 */
    CHECK(o16[0] == 3 && o16[1] == 49152 && o16[2] == UINT16_MAX && o16[3] == UINT16_MAX);
    tc__scale(TC_UINT16, o16, u16, 4, -0.5); /* below the range: 0 */
    CHECK(o16[0] == 0 && o16[1] == 0 && o16[2] == 0 && o16[3] == 0);
    tc__scale(TC_INT16, p16, s16, 4, 0.5); /* -7.5 -> -7, toward zero */
    CHECK(p16[0] == -7 && p16[1] == 7 && p16[2] == INT16_MIN / 2 && p16[3] == INT16_MAX / 2);
    tc__scale(TC_INT16, p16, s16, 4, -2.0); /* 65536 -> INT16_MAX, -65534 -> INT16_MIN */
    CHECK(p16[0] == 30 && p16[1] == -30 && p16[2] == INT16_MAX && p16[3] == INT16_MIN);
    tc__scale(TC_INT64, o64, i64, 3, 2.0);
    CHECK(o64[0] == INT64_MAX && o64[1] == INT64_MIN && o64[2] == 2000000014);
    tc__scale(TC_INT64, o64, i64, 3, 1.0); /* through double: INT64_MAX rounds to 2^63 */
    CHECK(o64[0] == INT64_MAX && o64[1] == INT64_MIN && o64[2] == 1000000007);
}

int main(int argc, char **argv)
{
    return tc_test_main(argc, argv, NULL);
}
