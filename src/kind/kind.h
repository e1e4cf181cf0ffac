/*
 * kind.h - one descriptor per collective kind: its traits, everything the
 * submission path, the negotiation and the coordinator need to know about
 * allreduce, allgather, broadcast, reducescatter, alltoall, barrier, join
 * and the process set calls, so that no other code branches on the kind.
 *
 * A descriptor says how a submission's arguments are checked, which fields
 * every rank must agree on (the coordinator turns the first disagreement
 * into the TC_ERR_MISMATCH text), what output a request gets, whether the
 * kind may be cached, grouped, fused or travel eagerly inside the
 * negotiation messages, and how an eager input is prepared, combined and
 * finished. Pure: no engine state, no transport, no clock. How a kind runs
 * once every rank agreed is not here: that is the executor's algorithm
 * records (exec/algo.h), chosen by one selector. The table is constant;
 * descriptors are looked up by the kind byte (tc__kind_get), which must be
 * range-checked (tc__kind_get returns NULL otherwise).
 *
 * Adding a kind (docs/architecture.md, "Add a kind"): its parameters in the
 * codec (an X(UPPER, lower) line at the end of TC_KIND_MAP in wire/wire.h,
 * which gives tc_kind_t, the kind byte and both spellings of the name), its
 * descriptor here (kind.c: an UPPER_DESC row macro, the table is built from
 * TC_KIND_MAP, so a kind without a row does not compile), its run and
 * algorithm records in the executor (exec/algo_table.c's table, same rule), and
 * its public entry point (include/tcoll.h, one line in engine/api.c).
 */
#ifndef TC_KIND_KIND_H
#define TC_KIND_KIND_H

#include <stddef.h>

#include "tcoll.h"
#include "wire/wire.h"

/* Parameters a kind takes besides the tensor (tc_kind_desc_t.params). A kind
 * without TC_PARAM_OP records TC_SUM, one without TC_PARAM_ROOT records 0, so
 * the fields every kind carries on the wire compare equal. */
#define TC_PARAM_OP 0x1u      /* a reduction op */
#define TC_PARAM_ROOT 0x2u    /* a root rank: must be in 0..size-1 */
#define TC_PARAM_SCALE 0x4u   /* prescale and postscale factors (tc_opts_t) */
#define TC_PARAM_SPLITS 0x10u /* rows of dim 0 to each rank (alltoall; optional) */
#define TC_PARAM_NONE_TENSOR                                                                       \
    0x8u /* takes no tensor: tcoll names each call
                                   * (tc_kind_desc_t.auto_name) */

/* Names tcoll gives calls that take none (tc_barrier, tc_join) start with
 * this: reserved, refused from users. */
#define TC_AUTO_NAME_PREFIX "tcoll/"

/* Where a request's output lands (tc_kind_desc_t.output). */
typedef enum {
    TC_OUT_RECV,     /* the caller's recv buffer: same dtype and shape as the input */
    TC_OUT_IN_PLACE, /* the input buffer itself */
    TC_OUT_GATHERED, /* a buffer tcoll allocates: every rank's input stacked along
                      * dim 0 in rank order; rank 0's RUN response carries each
                      * rank's dim 0 */
    TC_OUT_NONE,     /* no tensor (barrier): the output is an empty tensor */
    TC_OUT_ALLOCATED /* a buffer tcoll allocates, shaped by the kind's run (its rows
                      * of dim 0 may differ from the input's) */
} tc_kind_output_t;

/*
 * Fields that must agree across ranks (tc_kind_desc_t.agree), in the order
 * the coordinator compares them, after the kind itself (always compared
 * first). X(NAME, field name in messages, note after it). Both shape fields
 * first compare ndim; SHAPE then compares every dim, SHAPE_TAIL dims 1.. (a
 * kind whose ranks may contribute different dim 0s).
 */
#define TC_AGREE_MAP(X)                                                                            \
    X(DTYPE, "dtype", "")                                                                          \
    X(MEMORY, "memory", "")                                                                        \
    X(OP, "op", "")                                                                                \
    X(ROOT, "root", "")                                                                            \
    X(NDIM, "ndim", "")                                                                            \
    X(SHAPE, "shape", "")                                                                          \
    X(SHAPE_TAIL, "shape", " (dims after the first)")                                              \
    X(SCALE, "scaling factor", "")                                                                 \
    X(RANKS, "rank list", "")                                                                      \
    X(TARGET, "process set", "")

typedef enum {
#define TC_AGREE_INDEX_(name, text, note) TC_AGREE_INDEX_##name,
    TC_AGREE_MAP(TC_AGREE_INDEX_)
#undef TC_AGREE_INDEX_
        TC_AGREE_NFIELDS
} tc_agree_index_t;

enum {
#define TC_AGREE_BIT_(name, text, note) TC_AGREE_##name = 1u << TC_AGREE_INDEX_##name,
    TC_AGREE_MAP(TC_AGREE_BIT_)
#undef TC_AGREE_BIT_
};

/* A submission's arguments, for a kind's validate function. The common
 * checks have passed: name, tensor, dtype, ndim in 0..TC_MAX_DIMS, no
 * negative dim, a byte size that fits, data set if count > 0. */
typedef struct {
    const tc_tensor_t *tensor;
    size_t count; /* elements */
    const void *recv;
    tc_op_t op;
    int root;
    const int64_t *splits; /* TC_PARAM_SPLITS: NULL, or size entries */
    int size;              /* the job's size, or -1 before tc_init (then size checks wait) */
} tc_kind_args_t;

typedef struct tc_kind_desc {
    tc_kind_t kind;
    const char *name;  /* "allreduce": messages, the timeline's kind argument */
    const char *upper; /* "ALLREDUCE": the timeline's event for the collective */
    unsigned params;   /* TC_PARAM_* */
    tc_kind_output_t output;
    unsigned agree; /* TC_AGREE_*: the fields every rank must give the same */

    /* Kind-specific argument checks, after the common ones (NULL: none).
     * TC_OK, or TC_ERR_ARG with a reason in why ("unknown op 9"). Pure. */
    tc_status_t (*validate)(const tc_kind_args_t *a, char *why, size_t len);

    /* Consecutive small requests of this kind with one dtype and op may run
     * as one collective over their inputs packed into one buffer (fusion:
     * the executor packs the inputs times their prescale, runs the packed
     * buffer in place, and unpacks times each postscale): an elementwise
     * kind whose output is its recv buffer. */
    int fusable;

    /* Eager inputs (NULL: never eager): a small cached tensor of this kind
     * rides in the negotiation messages and is combined in each exchange
     * round (docs/negotiation.md, "The exchange"): prepare copies this rank's
     * input src into dst as it rides (prescaled: w is the submission);
     * combine folds src into dst (count elements), always in the same order;
     * finish turns the combination of all n ranks' inputs into the result, on
     * every rank at the end of the cycle that runs it. Pure. */
    void (*eager_prepare)(const tc_wire_request_t *w, void *dst, const void *src, size_t count);
    void (*eager_combine)(tc_dtype_t dtype, tc_op_t op, void *dst, const void *src, size_t count);
    void (*eager_finish)(const tc_wire_request_t *w, void *buf, size_t count, int n);

    /* Never given a cache id: every call negotiates in full (a kind whose
     * names are used once, like the barrier's). */
    int uncached;
    /* Completes on this rank only once every request this rank submitted
     * before it has completed (the executor), whatever the order they run in. */
    int after_earlier;
    /* May be submitted in a group (tc_grouped_*): negotiated and run as a
     * unit with the group's other members. */
    int groupable;
    /* TC_PARAM_NONE_TENSOR: the name of the k-th call in join epoch j on a
     * rank is auto_name + "j.k" (a join: auto_name + "j"; engine/api.c). */
    const char *auto_name;
    /* Runs while some ranks have joined (tc_join), without them: they
     * contribute the op's identity (the coordinator, the executor); a kind
     * without it fails on every rank when a rank it needs has joined. */
    int without_joined;
    /* The kind is tc_join: its submission marks its rank joined. */
    int joins;
    /* Changes the table of process sets (process_set_add, _remove): every
     * rank calls it, counted apart from barriers in its auto names. */
    int set_op;
    /* Its RUN response carries an int32 that rank 0 decided (has_value):
     * the output is that value, a 0-dim int32 (join: the last rank to
     * join; process_set_add: the new set's id). */
    int valued;
} tc_kind_desc_t;

/* The descriptor of kind (a tc_kind_t), or NULL when it is out of range. */
const tc_kind_desc_t *tc__kind_get(int kind);

#endif
