/*
 * kinds.h - one descriptor per collective kind: everything the engine and the
 * coordinator need to know about allreduce, allgather and broadcast, so that
 * no other code branches on the kind.
 *
 * A descriptor says how a submission's arguments are checked and bound to
 * the request, which fields every rank must agree on (the coordinator turns
 * the first disagreement into the TC_ERR_MISMATCH text), how the kind runs
 * over the data transport once rank 0 has agreed, what output the request
 * gets, how the timeline labels it, and whether it may be fused with others
 * of its kind or travel eagerly inside the negotiation messages. The table is
 * constant; descriptors are looked up by the kind byte (tc__kind_get) and
 * must never be looked up with a value that was not range-checked.
 *
 * Adding a kind takes three things:
 *   1. Its algorithm: one file under src/coll/ (prose, a step table, and a
 *      function over a tc_transport_t that knows only bytes and counts),
 *      declared in coll/coll.h and listed in CMakeLists.txt.
 *   2. Its parameters in the codec: an X(UPPER, lower) line at the end of
 *      TC_KIND_MAP in wire/wire.h (that gives tc_kind_t, the kind byte and
 *      both spellings of the name). Requests already carry dtype, op, root
 *      and shape; a parameter beyond those is more work: a field in
 *      tc_wire_request_t and tc_request_t, its encoding and a codec test,
 *      a TC_AGREE_MAP field (its comparison and text in coordinator.c),
 *      its copy in negotiate.c's to_wire and its comparison in
 *      tc__cache_matches.
 *   3. Its descriptor: in kinds.c, the kind's validate and run functions
 *      (and eager_combine/eager_finish/run_packed if it has them) and a
 *      UPPER_DESC row macro with
 *      params, output, agree, algo; the table is built from TC_KIND_MAP, so
 *      a kind without a row does not compile. Its public entry point
 *      (include/tcoll.h) is one line in api.c: submit_kind with its kind.
 * Nothing else changes: validation, agreement, scheduling, fusion, eager
 * inputs, the stall inspector and the timeline all read the descriptor.
 */
#ifndef TC_ENGINE_KINDS_H
#define TC_ENGINE_KINDS_H

#include <stddef.h>

#include "coll/coll.h"
#include "engine/request.h"
#include "tcoll.h"
#include "wire/wire.h"

/* Parameters a kind takes besides the tensor (tc_kind_desc_t.params). A kind
 * without TC_PARAM_OP records TC_SUM, one without TC_PARAM_ROOT records 0, so
 * the fields every kind carries on the wire compare equal. */
#define TC_PARAM_OP 0x1u   /* a reduction op */
#define TC_PARAM_ROOT 0x2u /* a root rank: must be in 0..size-1 */
#define TC_PARAM_SCALE 0x4u /* prescale and postscale factors (tc_opts_t) */
#define TC_PARAM_SPLITS 0x10u /* rows of dim 0 to each rank (alltoall; optional) */
#define TC_PARAM_NONE_TENSOR 0x8u /* takes no tensor: tcoll names each call
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
#define TC_AGREE_MAP(X)                                \
    X(DTYPE, "dtype", "")                              \
    X(OP, "op", "")                                    \
    X(ROOT, "root", "")                                \
    X(NDIM, "ndim", "")                                \
    X(SHAPE, "shape", "")                              \
    X(SHAPE_TAIL, "shape", " (dims after the first)")  \
    X(SCALE, "scaling factor", "")                     \
    X(RANKS, "rank list", "")                          \
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

/* What a kind's run function runs with (the engine thread's). */
struct engine;
typedef struct {
    tc_transport_t *tp;    /* the data transport of the request's process set: rank,
                            * size (the set's), and err after a failure */
    size_t chunk_bytes;    /* TCOLL_RING_CHUNK_KB in bytes */
    tc_scratch_t *scratch; /* reused across runs */
    struct engine *eng;    /* for the kinds that change the engine's own state */
    tc_shm_coll_t *shm;    /* the node's shared-memory collectives, where the request's
                            * process set may use them (engine/shm.c); else NULL */
    const tc_hier_t *hier; /* the hierarchical allreduce, where it runs (engine/shm.c);
                            * else NULL */
    int ordered;           /* TCOLL_DETERMINISTIC: order-sensitive reductions over tp
                            * run in the documented order (coll/ordered_rs.c) */
    const int *node;       /* the set's node table for it (NULL: one node) */
    const char *err;       /* the reason text of a failed run: tp->err, or shm->err */
} tc_kind_ctx_t;

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

    /* Runs req as rank 0 agreed (r: its RUN response) and sets req's output
     * (tc__request_set_output). On failure returns the status and writes a
     * message naming the tensor into msg. */
    tc_status_t (*run)(const tc_kind_ctx_t *x, tc_request_t *req, const tc_wire_response_t *r,
                       char *msg, size_t len);
    const char *algo; /* the timeline's algorithm label for run */
    const char *algo_shm; /* ... when it runs through shared memory (x->shm set); NULL:
                           * it never does (x->shm stays NULL). A run that picks its
                           * algorithm from what only it learns (an alltoall's counts)
                           * records the label it picked in req->algo */

    /* Fusion (NULL: never fused): runs count elements packed into buf, in
     * place, for a group of consecutive small requests of this kind with one
     * dtype and op. The engine packs their inputs (send, times its prescale)
     * and unpacks the result into each request's recv (times its
     * postscale). */
    tc_status_t (*run_packed)(const tc_kind_ctx_t *x, void *buf, size_t count, tc_dtype_t dtype,
                              tc_op_t op);
    const char *algo_packed;
    const char *algo_shm_packed; /* ... when it runs packed through shared memory */
    const char *algo_cma, *algo_cma_packed; /* ... when it runs direct (tc__shm_uses_cma) */
    const char *algo_hier, *algo_hier_packed; /* ... when it runs hierarchically */

    /* Eager inputs (NULL: never eager): a small cached tensor of this kind
     * rides in the negotiation messages and is combined in each exchange
     * round (docs/negotiation.md, "The exchange"): prepare copies this rank's
     * input src into dst as it rides (prescaled: w is the submission);
     * combine folds src into dst (count elements), always in the same order;
     * finish turns the combination of all n ranks' inputs into the result, on
     * every rank at the end of the cycle that runs it. Pure. */
    void (*eager_prepare)(const tc_wire_request_t *w, void *dst, const void *src, size_t count);
    void (*eager_combine)(tc_dtype_t dtype, tc_op_t op, void *dst, const void *src,
                          size_t count);
    void (*eager_finish)(const tc_wire_request_t *w, void *buf, size_t count, int n);
    const char *algo_eager; /* the timeline's label for a result that came that way */

    /* Never given a cache id: every call negotiates in full (a kind whose
     * names are used once, like the barrier's). */
    int uncached;
    /* Completes on this rank only once every request this rank submitted
     * before it has completed (exec.c), whatever the order they run in. */
    int after_earlier;
    /* May be submitted in a group (tc_grouped_*): negotiated and run as a
     * unit with the group's other members. */
    int groupable;
    /* TC_PARAM_NONE_TENSOR: the name of the k-th call in join epoch j on a
     * rank is auto_name + "j.k" (a join: auto_name + "j"; api.c). */
    const char *auto_name;
    /* Runs while some ranks have joined (tc_join), without them: they
     * contribute the op's identity (coordinator.c, exec.c); a kind without
     * it fails on every rank when a rank it needs has joined. */
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

/* pset.c: the runs of process_set_add and _remove, which every rank makes at
 * the same point of the agreed order. */
tc_status_t tc__pset_run_add(struct engine *e, tc_request_t *req, const tc_wire_response_t *r,
                             char *msg, size_t len);
tc_status_t tc__pset_run_remove(struct engine *e, tc_request_t *req,
                                const tc_wire_response_t *r, char *msg, size_t len);

/* The descriptor of kind (a tc_kind_t), or NULL when it is out of range. */
const tc_kind_desc_t *tc__kind_get(int kind);

/* The descriptor of a request's kind (checked at submission). */
static inline const tc_kind_desc_t *tc__kind_of(const tc_request_t *req)
{
    return tc__kind_get((int)req->kind);
}

#endif
