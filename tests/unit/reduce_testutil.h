/*
 * reduce_testutil.h - what the reduction kernel tests (test_reduce.c: the
 * float16/bfloat16 conversions and arithmetic, AVG's finish and the cases;
 * test_reduce_kernels.c: every dtype x op kernel and hand-written edges)
 * share: the dtypes and ops, bit access to buffers and floats, a seeded
 * generator, the expected result of one element written from each dtype's
 * definition, independently of src/reduce, and the kernel checks the cases
 * call. The reference aborts on test data it cannot represent exactly
 * (check.h).
 */
#ifndef TC_TEST_REDUCE_TESTUTIL_H
#define TC_TEST_REDUCE_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "tcoll.h"

#define F16_QNAN 0x7e00u
#define BF16_QNAN 0x7fc0u
#define F32_QNAN 0x7fc00000u
#define F64_QNAN UINT64_C(0x7ff8000000000000)

static const tc_dtype_t all_dtypes[] = {TC_UINT8,    TC_INT8,    TC_INT32,   TC_INT64, TC_FLOAT16,
                                        TC_BFLOAT16, TC_FLOAT32, TC_FLOAT64, TC_INT16, TC_UINT16};
static const tc_op_t all_ops[] = {TC_SUM, TC_AVG, TC_MIN, TC_MAX, TC_PROD};

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* splitmix64: the next value of the generator at *state; one value of x. */
uint64_t splitmix64(uint64_t *state);
uint64_t hash64(uint64_t x);

/* A float's bits and the float of some bits. */
uint32_t f32_bits(float f);
float f32_of(uint32_t u);
uint64_t f64_bits(double f);
double f64_of(uint64_t u);
int f16_is_nan(uint16_t h);
int bf16_is_nan(uint16_t h);

/* Element i of a buffer of dtype, as raw bits (little or big endian alike),
 * and the other way round. */
uint64_t get_bits(tc_dtype_t dt, const unsigned char *p, size_t i);
void put_bits(tc_dtype_t dt, unsigned char *p, size_t i, uint64_t bits);
/* The dtype's bits set; bits of a signed element of sz bytes as an int64. */
uint64_t dtype_mask(tc_dtype_t dt);
int64_t sign_extend(uint64_t bits, size_t sz);
int is_float(tc_dtype_t dt);
int is_unsigned(tc_dtype_t dt);

/* A float dtype's canonical quiet NaN; v (exact in the dtype) encoded in it;
 * an element of it decoded. */
uint64_t canonical_nan(tc_dtype_t dt);
uint64_t float_enc(tc_dtype_t dt, double v);
double float_dec(tc_dtype_t dt, uint64_t bits);

/* The expected result of one element, computed from the dtype's definition. */
uint64_t ref_op(tc_dtype_t dt, tc_op_t op, uint64_t a, uint64_t b);

/* The checks of test_reduce_kernels.c, which test_reduce.c's cases call (it
 * names every case, so that they run in one order): every dtype x op kernel
 * on generated data; hand-written integer edges, one element each,
 * unaligned; an unknown dtype or op changes nothing. */
void test_kernels(void);
void test_int_edges(void);
void test_invalid(void);
void test_reduce_local(void);

#endif
