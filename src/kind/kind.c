/*
 * kind.c - the collective kinds' descriptors (kind.h): per kind, its
 * argument checks, its eager input's prepare, combine and finish, and its
 * row in the table. Pure: how a kind runs is the executor's (exec/algo.h).
 */
#define _GNU_SOURCE
#include "kind/kind.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "reduce/reduce.h"
#include "util/status.h"

/* ---- allreduce ------------------------------------------------------------ */

static tc_status_t allreduce_validate(const tc_kind_args_t *a, char *why, size_t len)
{
    if (!tc__op_valid((int)a->op)) {
        snprintf(why, len, "unknown op %d", (int)a->op);
        return TC_ERR_ARG;
    }
    if (a->op == TC_AVG && !tc__dtype_is_float((int)a->tensor->dtype)) {
        snprintf(why, len, "avg needs a floating-point dtype, not %s",
                 tc_dtype_name(a->tensor->dtype));
        return TC_ERR_ARG;
    }
    return TC_OK;
}

/* Eager inputs ride prescaled, are reduced in the negotiation's exchange
 * rounds, two groups' partial results at a time in a fixed order
 * (docs/negotiation.md), then avg divides and postscale multiplies. */
static void allreduce_prepare(const tc_wire_request_t *w, void *dst, const void *src, size_t count)
{
    if (w->scaled && w->prescale != 1.0) {
        tc__scale((tc_dtype_t)w->dtype, dst, src, count, w->prescale);
    } else {
        memcpy(dst, src, count * tc_dtype_size((tc_dtype_t)w->dtype));
    }
}

static void allreduce_combine(tc_dtype_t dtype, tc_op_t op, void *dst, const void *src,
                              size_t count)
{
    tc__reduce(dtype, op, dst, src, count);
}

static void allreduce_finish(const tc_wire_request_t *w, void *buf, size_t count, int n)
{
    if (w->op == TC_AVG) {
        tc__reduce_avg_finish((tc_dtype_t)w->dtype, buf, count, n);
    }
    if (w->scaled && w->postscale != 1.0) {
        tc__scale((tc_dtype_t)w->dtype, buf, buf, count, w->postscale);
    }
}

#define ALLREDUCE_DESC                                                                             \
    .params = TC_PARAM_OP | TC_PARAM_SCALE, .output = TC_OUT_RECV,                                 \
    .agree = TC_AGREE_DTYPE | TC_AGREE_MEMORY | TC_AGREE_OP | TC_AGREE_SHAPE | TC_AGREE_SCALE,     \
    .validate = allreduce_validate, .fusable = 1, .eager_prepare = allreduce_prepare,              \
    .eager_combine = allreduce_combine, .eager_finish = allreduce_finish, .groupable = 1,          \
    .without_joined = 1

/* ---- allgather ------------------------------------------------------------ */

static tc_status_t allgather_validate(const tc_kind_args_t *a, char *why, size_t len)
{
    if (a->tensor->ndim == 0) {
        snprintf(why, len, "allgather needs ndim >= 1 (it concatenates along dimension 0)");
        return TC_ERR_ARG;
    }
    return TC_OK;
}

#define ALLGATHER_DESC                                                                             \
    .params = 0, .output = TC_OUT_GATHERED,                                                        \
    .agree = TC_AGREE_DTYPE | TC_AGREE_MEMORY | TC_AGREE_NDIM | TC_AGREE_SHAPE_TAIL,               \
    .validate = allgather_validate, .groupable = 1

/* ---- broadcast: the root is a global rank, checked at submission to be in
 * the request's process set ------------------------------------------------ */

#define BROADCAST_DESC                                                                             \
    .params = TC_PARAM_ROOT, .output = TC_OUT_IN_PLACE,                                            \
    .agree = TC_AGREE_DTYPE | TC_AGREE_MEMORY | TC_AGREE_ROOT | TC_AGREE_SHAPE, .validate = NULL

/* ---- reducescatter -------------------------------------------------------- */

static tc_status_t reducescatter_validate(const tc_kind_args_t *a, char *why, size_t len)
{
    if (a->tensor->ndim == 0) {
        snprintf(why, len, "reducescatter needs ndim >= 1 (it splits dimension 0 across ranks)");
        return TC_ERR_ARG;
    }
    return allreduce_validate(a, why, len);
}

#define REDUCESCATTER_DESC                                                                         \
    .params = TC_PARAM_OP | TC_PARAM_SCALE, .output = TC_OUT_ALLOCATED,                            \
    .agree = TC_AGREE_DTYPE | TC_AGREE_MEMORY | TC_AGREE_OP | TC_AGREE_SHAPE | TC_AGREE_SCALE,     \
    .validate = reducescatter_validate, .groupable = 1, .without_joined = 1

/* ---- alltoall ------------------------------------------------------------- */

static tc_status_t alltoall_validate(const tc_kind_args_t *a, char *why, size_t len)
{
    int64_t sum = 0;
    int q;

    if (a->tensor->ndim == 0) {
        snprintf(why, len, "alltoall needs ndim >= 1 (it sends rows of dimension 0)");
        return TC_ERR_ARG;
    }
    if (a->size <= 0) {
        return TC_OK; /* before tc_init: the submission fails with TC_ERR_STATE */
    }
    if (a->splits == NULL) {
        if (a->tensor->shape[0] % a->size != 0) {
            snprintf(why, len,
                     "dimension 0 (%lld) is not divisible by the %d ranks (pass splits "
                     "for uneven rows)",
                     (long long)a->tensor->shape[0], a->size);
            return TC_ERR_ARG;
        }
        return TC_OK;
    }
    for (q = 0; q < a->size; q++) {
        if (a->splits[q] < 0) {
            snprintf(why, len, "splits[%d] is negative (%lld)", q, (long long)a->splits[q]);
            return TC_ERR_ARG;
        }
        if (a->splits[q] > a->tensor->shape[0] - sum) {
            break;
        }
        sum += a->splits[q];
    }
    if (q < a->size || sum != a->tensor->shape[0]) {
        snprintf(why, len, "splits do not add up to dimension 0 (%lld): %s%lld over %d ranks",
                 (long long)a->tensor->shape[0], q < a->size ? "more than " : "", (long long)sum,
                 a->size);
        return TC_ERR_ARG;
    }
    return TC_OK;
}

#define ALLTOALL_DESC                                                                              \
    .params = TC_PARAM_SPLITS, .output = TC_OUT_ALLOCATED,                                         \
    .agree = TC_AGREE_DTYPE | TC_AGREE_MEMORY | TC_AGREE_NDIM | TC_AGREE_SHAPE_TAIL,               \
    .validate = alltoall_validate

/* ---- the kinds without a tensor --------------------------------------------- */

/* The barrier completes on a rank only once its earlier requests have. */
#define BARRIER_DESC                                                                               \
    .params = TC_PARAM_NONE_TENSOR, .output = TC_OUT_NONE, .agree = 0, .validate = NULL,           \
    .uncached = 1, .after_earlier = 1, .auto_name = "tcoll/barrier/", .without_joined = 1

/* Rank 0's response says which rank joined last. */
#define JOIN_DESC                                                                                  \
    .params = TC_PARAM_NONE_TENSOR, .output = TC_OUT_NONE, .agree = 0, .validate = NULL,           \
    .uncached = 1, .after_earlier = 1, .auto_name = "tcoll/join/", .joins = 1, .valued = 1

/* Every rank changes its table of sets at the same point of the order; the
 * addition's value is the new set's id. */
#define PROCESS_SET_ADD_DESC                                                                       \
    .params = TC_PARAM_NONE_TENSOR, .output = TC_OUT_NONE, .agree = TC_AGREE_RANKS,                \
    .validate = NULL, .uncached = 1, .auto_name = "tcoll/pset/", .set_op = 1, .valued = 1

#define PROCESS_SET_REMOVE_DESC                                                                    \
    .params = TC_PARAM_NONE_TENSOR, .output = TC_OUT_NONE, .agree = TC_AGREE_TARGET,               \
    .validate = NULL, .uncached = 1, .auto_name = "tcoll/pset/", .set_op = 1

/* ---- the table ------------------------------------------------------------ */

/* One row per entry of TC_KIND_MAP (wire/wire.h), which gives the kind's
 * number and both spellings of its name; the rest is its UPPER_DESC. */
static const tc_kind_desc_t kinds[] = {
#define KIND_ROW(UP, low)                                                                          \
    [TC_KIND_##UP] = {.kind = TC_KIND_##UP, .name = #low, .upper = #UP, UP##_DESC},
    TC_KIND_MAP(KIND_ROW)
#undef KIND_ROW
};
_Static_assert(sizeof(kinds) / sizeof(kinds[0]) == TC_KIND_COUNT,
               "a kind of TC_KIND_MAP has no descriptor");

const tc_kind_desc_t *tc__kind_get(int kind)
{
    if (kind < 0 || kind >= TC_KIND_COUNT) {
        return NULL;
    }
    return &kinds[kind];
}
