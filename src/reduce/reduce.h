/*
 * reduce.h - elementwise reduction kernels, one per dtype x op.
 *
 * Integer arithmetic wraps (two's complement) and never invokes undefined
 * behaviour. float16 and bfloat16 are converted to float32, combined, and
 * rounded back to nearest-even after every operation. MIN/MAX propagate NaN
 * (if either input is NaN the result is NaN). The kernels are deterministic:
 * the same inputs give the same bits on every machine and every call.
 */
#ifndef TC_REDUCE_REDUCE_H
#define TC_REDUCE_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "tcoll.h"
#include "util/status.h"

/* dst[i] = dst[i] (op) src[i] for i < count. TC_AVG reduces like TC_SUM (the
 * division happens once, in tc__reduce_avg_finish). dst and src may be
 * unaligned but must not overlap unless equal. Invalid dtype/op: no-op. */
void tc__reduce(tc_dtype_t dtype, tc_op_t op, void *dst, const void *src, size_t count);

/* buf[i] = buf[i] / n for floating dtypes (float16/bfloat16 via float32 with
 * one rounding); integer dtypes are left unchanged. */
void tc__reduce_avg_finish(tc_dtype_t dtype, void *buf, size_t count, int n);

/* dst[i] = src[i] * factor (dst may equal src): floating dtypes in their own
 * precision (float16/bfloat16 via float32, one rounding to nearest-even),
 * integer dtypes in double, truncated toward zero and saturated at the
 * dtype's range. factor must be finite. Invalid dtype: no-op. */
void tc__scale(tc_dtype_t dtype, void *dst, const void *src, size_t count, double factor);

/* buf[0..count) = the identity of op in dtype (identity.c): 0 for sum and
 * avg, 1 for prod, the largest value for min (+inf for floating dtypes),
 * the smallest for max. Invalid dtype: no-op. */
void tc__reduce_identity(tc_dtype_t dtype, tc_op_t op, void *buf, size_t count);

/* Whether op on dtype can give different bits in different orders of the
 * combinations (floating-point sums, averages and products): with
 * TCOLL_DETERMINISTIC those run in the documented order (tc__combine_ordered).
 * Integer ops wrap, and min and max pick: exact in any order. */
static inline int tc__order_matters(tc_dtype_t dtype, tc_op_t op)
{
    return tc__dtype_is_float((int)dtype) && (op == TC_SUM || op == TC_AVG || op == TC_PROD);
}

/* ordered.c: combines m elements of n inputs x[] (one per group rank) into dst in the
 * documented order, with node table node (NULL: one node) and the two-operand
 * kernel (op: TC_SUM for an average; the caller divides). The inputs are
 * the caller's scratch, overwritten, except x[self] (self -1: none), which
 * is only read and may be dst itself; no other input may overlap dst. */
void tc__combine_ordered(tc_dtype_t dtype, tc_op_t op, const int *node, int n, int self,
                         char *const *x, char *dst, size_t m);

/* Conversions with round-to-nearest-even; NaN stays NaN, overflow gives inf. */
float tc__f16_to_f32(uint16_t h);
uint16_t tc__f32_to_f16(float f);
float tc__bf16_to_f32(uint16_t h);
uint16_t tc__f32_to_bf16(float f);

#endif
