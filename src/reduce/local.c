/*
 * local.c - tc_reduce_local (tcoll.h): the collectives' reduction kernel
 * on two local buffers, as MPI_Reduce_local is MPI's. The public face of
 * tc__reduce, with the checks a user's call needs; no state, any thread,
 * before or after tc_init.
 */
#include "reduce/reduce.h"

#include <stdint.h>

tc_status_t tc_reduce_local(void *inout, const void *in, size_t count, tc_dtype_t dtype, tc_op_t op)
{
    size_t es = tc_dtype_size(dtype);
    uintptr_t a = (uintptr_t)inout, b = (uintptr_t)in;

    if (es == 0) {
        return tc__set_error(TC_ERR_ARG, "tc_reduce_local: unknown dtype %d", (int)dtype);
    }
    if ((int)op < (int)TC_SUM || (int)op > (int)TC_PROD) {
        return tc__set_error(TC_ERR_ARG, "tc_reduce_local: unknown op %d", (int)op);
    }
    if (op == TC_AVG) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_reduce_local: an average needs the number of contributions; "
                             "reduce with TC_SUM, then divide");
    }
    if (count == 0) {
        return TC_OK;
    }
    if (inout == NULL || in == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_reduce_local: %s is NULL with count %zu",
                             inout == NULL ? "inout" : "in", count);
    }
    if (count > SIZE_MAX / es || a > UINTPTR_MAX - count * es || b > UINTPTR_MAX - count * es) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_reduce_local: count %zu of %s overflows the address "
                             "space",
                             count, tc_dtype_name(dtype));
    }
    if (a != b && a < b + count * es && b < a + count * es) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_reduce_local: inout and in overlap without being the same "
                             "buffer");
    }
    tc__reduce(dtype, op, inout, in, count);
    return TC_OK;
}
