/*
 * kinds.c - the collective kinds' descriptors (see kinds.h): per kind, its
 * argument checks, how it runs over the data transport (or, for the global
 * process set on one node, through the node's shared memory) once rank 0
 * has agreed, and its row in the table.
 *
 * A run function is glue only: it turns the request and rank 0's response
 * into the byte counts an algorithm of src/coll/ takes, calls it, and sets
 * the request's output. It must not block on anything but the transport (or
 * the segment's waits) and must leave the request uncompleted (the engine
 * completes it).
 */
#define _GNU_SOURCE
#include "engine/kinds.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce/reduce.h"
#include "util/status.h"

/* The message of a failed run: the tensor, the kind, and why (the
 * algorithm's reason text). */
static tc_status_t failed_with(const tc_request_t *req, tc_status_t st, const char *why,
                               char *msg, size_t len)
{
    snprintf(msg, len, "tensor '%s': %s failed: %s", req->name, tc__kind_of(req)->name,
             st == TC_ERR_NOMEM ? "out of memory" : why);
    return st;
}

static tc_status_t run_failed(const tc_kind_ctx_t *x, const tc_request_t *req, tc_status_t st,
                              char *msg, size_t len)
{
    return failed_with(req, st, x->err, msg, len);
}

/* ---- the kinds other than allreduce inside a node (coll.h, "allgather,
 * broadcast, reducescatter and alltoall among the node's ranks") ---------- */

/* The node's shared-memory collectives where req may use them (x->shm:
 * the global process set, every rank on this node; its segment's slots
 * large enough), else NULL and the MPI algorithm runs. The same answer on
 * every rank. Records the label of the choice for the timeline. */
static tc_shm_coll_t *shm_for_kind(const tc_kind_ctx_t *x, tc_request_t *req)
{
    tc_shm_coll_t *shm = x->shm;

    if (shm == NULL || shm->seg->n != x->tp->size || !tc__shm_kinds_fit(shm)) {
        req->algo = tc__kind_of(req)->algo;
        return NULL;
    }
    req->algo = tc__kind_of(req)->algo_shm;
    return shm;
}

/* Whether a collective of bytes (a size every local rank knows alike)
 * runs direct (tc__cma_*) rather than through the slots; the label too. */
static int shm_direct(const tc_shm_coll_t *shm, tc_request_t *req, size_t bytes)
{
    int direct = tc__shm_uses_cma(shm, bytes);

    req->algo = direct ? tc__kind_of(req)->algo_cma : tc__kind_of(req)->algo_shm;
    return direct;
}

/* The reason text of a failed run over shm (NULL: over the transport). */
static const char *err_of(const tc_kind_ctx_t *x, const tc_shm_coll_t *shm)
{
    return shm != NULL ? shm->err : x->tp->err;
}

/* ---- allreduce: ring allreduce (coll/ring_allreduce.c), or through the
 * node's shared memory (coll/shm_allreduce.c: the same bits) ------------- */

/* The allreduce of buf (in place from src, or src NULL) by x's algorithm. */
static tc_status_t allreduce_any(const tc_kind_ctx_t *x, const void *src, void *buf,
                                 size_t count, tc_dtype_t dtype, tc_op_t op)
{
    if (x->hier != NULL) {
        return tc__hier_allreduce(x->hier, src, buf, count, dtype, op);
    }
    if (x->shm != NULL) {
        if (tc__shm_uses_cma(x->shm, count * tc_dtype_size(dtype))) {
            return tc__cma_allreduce(x->shm, src, buf, count, dtype, op);
        }
        return tc__shm_allreduce(x->shm, src, buf, count, dtype, op);
    }
    if (x->ordered && tc__order_matters(dtype, op)) {
        return tc__ordered_allreduce(x->tp, src, buf, count, dtype, op, x->chunk_bytes,
                                     x->scratch, x->node);
    }
    return tc__ring_allreduce(x->tp, src, buf, count, dtype, op, x->chunk_bytes, x->scratch);
}

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

/* A prescaled input goes to recv first, and the ring runs in place there. */
static tc_status_t allreduce_run(const tc_kind_ctx_t *x, tc_request_t *req,
                                 const tc_wire_response_t *r, char *msg, size_t len)
{
    const void *src = req->send;
    tc_status_t st;

    (void)r;
    if (req->prescale != 1.0) {
        tc__scale(req->dtype, req->recv, req->send, req->count, req->prescale);
        src = req->recv;
    }
    st = allreduce_any(x, src, req->recv, req->count, req->dtype, req->op);
    if (st != TC_OK) {
        return run_failed(x, req, st, msg, len);
    }
    if (req->postscale != 1.0) {
        tc__scale(req->dtype, req->recv, req->recv, req->count, req->postscale);
    }
    tc__request_set_output(req, req->recv, -1);
    return TC_OK;
}

static tc_status_t allreduce_packed(const tc_kind_ctx_t *x, void *buf, size_t count,
                                    tc_dtype_t dtype, tc_op_t op)
{
    return allreduce_any(x, NULL, buf, count, dtype, op);
}

/* Eager inputs ride prescaled, are reduced in the negotiation's exchange
 * rounds, two groups' partial results at a time in a fixed order
 * (docs/negotiation.md), then avg divides and postscale multiplies. */
static void allreduce_prepare(const tc_wire_request_t *w, void *dst, const void *src,
                              size_t count)
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

#define ALLREDUCE_DESC                                                                    \
    .params = TC_PARAM_OP | TC_PARAM_SCALE, .output = TC_OUT_RECV,                        \
    .agree = TC_AGREE_DTYPE | TC_AGREE_OP | TC_AGREE_SHAPE | TC_AGREE_SCALE,              \
    .validate = allreduce_validate, .run = allreduce_run, .algo = "ring",                 \
    .algo_shm = "shm", .algo_shm_packed = "shm, fused", .algo_cma = "cma",                \
    .algo_cma_packed = "cma, fused", .algo_hier = "hier",                                 \
    .algo_hier_packed = "hier, fused",                                                    \
    .run_packed = allreduce_packed, .algo_packed = "ring, fused",                          \
    .eager_prepare = allreduce_prepare, .eager_combine = allreduce_combine,               \
    .eager_finish = allreduce_finish, .algo_eager = "eager (inputs in the cycle messages)", \
    .groupable = 1, .without_joined = 1

/* ---- allgather: ring allgatherv (coll/ring_allgatherv.c), or inside the
 * node (coll/shm_allgather.c) ---------------------------------------------- */

static tc_status_t allgather_validate(const tc_kind_args_t *a, char *why, size_t len)
{
    if (a->tensor->ndim == 0) {
        snprintf(why, len, "allgather needs ndim >= 1 (it concatenates along dimension 0)");
        return TC_ERR_ARG;
    }
    return TC_OK;
}

/* Elements in one row of dim 0: the product of the other dims (it fits:
 * the whole tensor's size was checked at submission). */
static size_t row_elems(const tc_request_t *req)
{
    size_t row = 1;
    int d;

    for (d = 1; d < req->ndim; d++) {
        row *= (size_t)req->shape[d];
    }
    return row;
}

/* Each rank's block is its dim 0 (from rank 0's response) times the row
 * size; the output holds every block in rank order. */
static tc_status_t allgather_run(const tc_kind_ctx_t *x, tc_request_t *req,
                                 const tc_wire_response_t *r, char *msg, size_t len)
{
    const int rank = x->tp->rank, size = x->tp->size;
    size_t row = tc_dtype_size(req->dtype) * row_elems(req), total = 0;
    size_t *bytes, *displs;
    tc_shm_coll_t *shm;
    int64_t rows = 0;
    tc_status_t st;
    int q;

    if (r->ndim0 != (uint32_t)size || r->dim0[rank] != req->shape[0]) {
        snprintf(msg, len, "tensor '%s': rank 0 sent an allgather plan that does not match this "
                           "rank's submission (internal error)", req->name);
        return TC_ERR_TRANSPORT;
    }
    bytes = malloc(2 * (size_t)size * sizeof(*bytes));
    if (bytes == NULL) {
        snprintf(msg, len, "tensor '%s': out of memory", req->name);
        return TC_ERR_NOMEM;
    }
    displs = bytes + size;
    for (q = 0; q < size; q++) {
        if (r->dim0[q] < 0 || (row != 0 && (uint64_t)r->dim0[q] > (SIZE_MAX - total) / row)) {
            snprintf(msg, len, "tensor '%s': allgather output does not fit in memory", req->name);
            st = TC_ERR_NOMEM;
            goto err_free_bytes;
        }
        displs[q] = total;
        bytes[q] = (size_t)r->dim0[q] * row;
        total += bytes[q];
        rows += r->dim0[q];
    }
    req->owned_output = tc__output_alloc(total, &req->owned_cap);
    if (req->owned_output == NULL) {
        snprintf(msg, len, "tensor '%s': cannot allocate %zu bytes for the allgather output",
                 req->name, total);
        st = TC_ERR_NOMEM;
        goto err_free_bytes;
    }
    if (bytes[rank] > 0) {
        memcpy((char *)req->owned_output + displs[rank], req->send, bytes[rank]);
    }
    if ((shm = shm_for_kind(x, req)) == NULL) {
        st = tc__ring_allgatherv(x->tp, req->owned_output, bytes, displs);
    } else if (shm_direct(shm, req, total)) {
        st = tc__cma_allgatherv(shm, req->owned_output, bytes, displs);
    } else {
        st = tc__shm_allgatherv(shm, req->owned_output, bytes, displs);
    }
    if (st != TC_OK) {
        failed_with(req, st, err_of(x, shm), msg, len);
        goto err_free_bytes;
    }
    free(bytes);
    req->out_splits = malloc((size_t)size * sizeof(*req->out_splits));
    if (req->out_splits != NULL) { /* without it, tc_request_splits says none: not fatal */
        memcpy(req->out_splits, r->dim0, (size_t)size * sizeof(*req->out_splits));
        req->nout_splits = size;
    }
    tc__request_set_output(req, req->owned_output, rows);
    return TC_OK;

err_free_bytes:
    free(bytes);
    return st;
}

#define ALLGATHER_DESC                                                                  \
    .params = 0, .output = TC_OUT_GATHERED,                                             \
    .agree = TC_AGREE_DTYPE | TC_AGREE_NDIM | TC_AGREE_SHAPE_TAIL,                      \
    .validate = allgather_validate, .run = allgather_run, .algo = "ring allgatherv",   \
    .algo_shm = "shm", .algo_cma = "cma",                                               \
    .run_packed = NULL, .algo_packed = NULL, .eager_prepare = NULL, .eager_combine = NULL, \
    .eager_finish = NULL,                                                               \
    .algo_eager = NULL, .groupable = 1

/* ---- broadcast: binomial tree (coll/bcast.c), or inside the node
 * (coll/shm_bcast.c) -------------------------------------------------------- */

/* The root is a global rank, checked at submission to be in the request's
 * process set (tc__pset_check); the algorithm takes its place there. */

static tc_status_t broadcast_run(const tc_kind_ctx_t *x, tc_request_t *req,
                                 const tc_wire_response_t *r, char *msg, size_t len)
{
    const size_t bytes = req->count * tc_dtype_size(req->dtype);
    tc_shm_coll_t *shm = shm_for_kind(x, req);
    tc_status_t st;

    (void)r;
    if (shm == NULL) {
        st = tc__bcast_binomial(x->tp, req->recv, bytes, req->root_index);
    } else if (shm_direct(shm, req, bytes)) { /* the global set: its index is the local one */
        st = tc__cma_bcast(shm, req->recv, bytes, req->root_index);
    } else {
        st = tc__shm_bcast(shm, req->recv, bytes, req->root_index);
    }
    if (st != TC_OK) {
        return failed_with(req, st, err_of(x, shm), msg, len);
    }
    tc__request_set_output(req, req->recv, -1);
    return TC_OK;
}

#define BROADCAST_DESC                                                                  \
    .params = TC_PARAM_ROOT, .output = TC_OUT_IN_PLACE,                                 \
    .agree = TC_AGREE_DTYPE | TC_AGREE_ROOT | TC_AGREE_SHAPE,                           \
    .validate = NULL, .run = broadcast_run, .algo = "binomial tree",                    \
    .algo_shm = "shm", .algo_cma = "cma",                                               \
    .run_packed = NULL, .algo_packed = NULL, .eager_prepare = NULL, .eager_combine = NULL, \
    .eager_finish = NULL,                                                               \
    .algo_eager = NULL

/* ---- reducescatter: ring reduce-scatter (coll/ring_reducescatter.c), or
 * inside the node (coll/shm_reducescatter.c: the same bits) --------------- */

static tc_status_t reducescatter_validate(const tc_kind_args_t *a, char *why, size_t len)
{
    if (a->tensor->ndim == 0) {
        snprintf(why, len, "reducescatter needs ndim >= 1 (it splits dimension 0 across ranks)");
        return TC_ERR_ARG;
    }
    return allreduce_validate(a, why, len);
}

/* Rows of block i when rows are cut into n blocks (tc__row_block's rule). */
static size_t block_rows(size_t rows, int n, int i)
{
    return rows / (size_t)n + ((size_t)i < rows % (size_t)n);
}

/* Rank r keeps block r of dim 0 (coll.h, tc__row_block), in a buffer tcoll
 * allocates; a prescaled input is a scaled copy first. */
static tc_status_t reducescatter_run(const tc_kind_ctx_t *x, tc_request_t *req,
                                     const tc_wire_response_t *r, char *msg, size_t len)
{
    const int rank = x->tp->rank, size = x->tp->size;
    const size_t es = tc_dtype_size(req->dtype);
    size_t rows = (size_t)req->shape[0], row = row_elems(req), off, elems;
    void *scaled = NULL;
    const void *src = req->send;
    tc_shm_coll_t *shm = shm_for_kind(x, req);
    tc_status_t st;

    (void)r;
    tc__row_block(rows, row, size, rank, &off, &elems);
    req->owned_output = tc__output_alloc(elems * es, &req->owned_cap);
    if (req->owned_output == NULL) {
        snprintf(msg, len, "tensor '%s': cannot allocate %zu bytes for the reducescatter output",
                 req->name, elems * es);
        return TC_ERR_NOMEM;
    }
    if (req->prescale != 1.0 && req->count > 0) {
        if ((scaled = malloc(req->count * es)) == NULL) {
            snprintf(msg, len, "tensor '%s': out of memory for the prescaled input", req->name);
            return TC_ERR_NOMEM;
        }
        tc__scale(req->dtype, scaled, req->send, req->count, req->prescale);
        src = scaled;
    }
    if (shm == NULL && x->ordered && tc__order_matters(req->dtype, req->op)) {
        req->algo = "ordered reduce-scatter";
        st = tc__ordered_reducescatter(x->tp, src, req->owned_output, rows, row, req->dtype,
                                       req->op, x->chunk_bytes, x->scratch, x->node);
    } else if (shm == NULL) {
        st = tc__ring_reducescatter(x->tp, src, req->owned_output, rows, row, req->dtype,
                                    req->op, x->chunk_bytes, x->scratch);
    } else if (shm_direct(shm, req, req->count * es)) {
        st = tc__cma_reducescatter(shm, src, req->owned_output, rows, row, req->dtype, req->op);
    } else {
        st = tc__shm_reducescatter(shm, src, req->owned_output, rows, row, req->dtype, req->op);
    }
    free(scaled);
    if (st != TC_OK) {
        return failed_with(req, st, err_of(x, shm), msg, len);
    }
    if (req->postscale != 1.0) {
        tc__scale(req->dtype, req->owned_output, req->owned_output, elems, req->postscale);
    }
    tc__request_set_output(req, req->owned_output, (int64_t)block_rows(rows, size, rank));
    return TC_OK;
}

#define REDUCESCATTER_DESC                                                              \
    .params = TC_PARAM_OP | TC_PARAM_SCALE, .output = TC_OUT_ALLOCATED,                 \
    .agree = TC_AGREE_DTYPE | TC_AGREE_OP | TC_AGREE_SHAPE | TC_AGREE_SCALE,            \
    .validate = reducescatter_validate, .run = reducescatter_run,                       \
    .algo = "ring reduce-scatter", .algo_shm = "shm", .algo_cma = "cma",               \
    .run_packed = NULL, .algo_packed = NULL,                                            \
    .eager_prepare = NULL, .eager_combine = NULL, .eager_finish = NULL, .algo_eager = NULL, \
    .groupable = 1, .without_joined = 1

/* ---- alltoall: pairwise exchange (coll/alltoallv.c), or inside the node
 * (coll/shm_alltoall.c) ------------------------------------------------------ */

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
            snprintf(why, len, "dimension 0 (%lld) is not divisible by the %d ranks (pass splits "
                     "for uneven rows)", (long long)a->tensor->shape[0], a->size);
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
                 (long long)a->tensor->shape[0], q < a->size ? "more than " : "",
                 (long long)sum, a->size);
        return TC_ERR_ARG;
    }
    return TC_OK;
}

/* How many rows every rank sends every rank: this rank's are counts[0..n),
 * what each rank sends this one goes into counts[n..2n). Inside the node
 * (shm) the whole matrix comes (n x n, matrix[p * n + q]: p to q), which
 * places every block in every rank's buffer. */
static tc_status_t alltoall_counts(const tc_kind_ctx_t *x, tc_shm_coll_t *shm, uint64_t *counts,
                                   uint64_t *matrix)
{
    const int size = x->tp->size, rank = x->tp->rank;
    tc_status_t st;
    int q;

    if (shm == NULL) {
        return tc__alltoall_counts(x->tp, counts, counts + size);
    }
    st = tc__shm_alltoall_counts(shm, counts, matrix);
    for (q = 0; st == TC_OK && q < size; q++) {
        counts[size + q] = matrix[(size_t)q * (size_t)size + (size_t)rank];
    }
    return st;
}

/* The largest send buffer of any rank, in bytes (SIZE_MAX past a size_t):
 * whether an alltoall inside the node runs direct, alike on every rank. */
static size_t alltoall_most(const uint64_t *matrix, int n, size_t row)
{
    size_t most = 0;
    int p, q;

    for (p = 0; p < n; p++) {
        uint64_t rows = 0;
        for (q = 0; q < n; q++) {
            uint64_t c = matrix[(size_t)p * (size_t)n + (size_t)q];
            rows = c > UINT64_MAX - rows ? UINT64_MAX : rows + c;
        }
        if (row != 0 && rows > SIZE_MAX / row) {
            return SIZE_MAX;
        }
        most = rows * row > most ? (size_t)rows * row : most;
    }
    return most;
}

/* The ranks first exchange how many rows each sends each (8 bytes a pair),
 * then the rows; the output (tcoll's) stacks what came, in rank order. */
static tc_status_t alltoall_run(const tc_kind_ctx_t *x, tc_request_t *req,
                                const tc_wire_response_t *r, char *msg, size_t len)
{
    const int size = x->tp->size;
    size_t row = tc_dtype_size(req->dtype) * row_elems(req), total = 0, off = 0;
    tc_shm_coll_t *shm = shm_for_kind(x, req);
    uint64_t *counts, *matrix = NULL;
    size_t *sb, *sd, *rb, *rd;
    int64_t rows = 0;
    tc_status_t st = TC_ERR_NOMEM;
    int q;

    (void)r;
    counts = malloc(2 * (size_t)size * sizeof(*counts));
    sb = malloc(4 * (size_t)size * sizeof(*sb));
    req->out_splits = malloc((size_t)size * sizeof(*req->out_splits));
    if (shm != NULL) {
        matrix = malloc((size_t)size * (size_t)size * sizeof(*matrix));
    }
    if (counts == NULL || sb == NULL || req->out_splits == NULL || (shm != NULL && matrix == NULL)) {
        snprintf(msg, len, "tensor '%s': out of memory", req->name);
        goto out;
    }
    sd = sb + size;
    rb = sd + size;
    rd = rb + size;
    for (q = 0; q < size; q++) {
        int64_t n = req->splits != NULL ? req->splits[q] : req->shape[0] / size;
        counts[q] = (uint64_t)n;
        sb[q] = (size_t)n * row;
        sd[q] = off;
        off += sb[q];
    }
    st = alltoall_counts(x, shm, counts, matrix);
    if (st != TC_OK) {
        snprintf(msg, len, "tensor '%s': alltoall failed exchanging row counts: %s", req->name,
                 st == TC_ERR_NOMEM ? "out of memory" : err_of(x, shm));
        goto out;
    }
    for (q = 0; q < size; q++) {
        uint64_t n = counts[size + q];
        if (n > (uint64_t)INT64_MAX || (row != 0 && n > (SIZE_MAX - total) / row)) {
            snprintf(msg, len, "tensor '%s': alltoall output does not fit in memory", req->name);
            st = TC_ERR_NOMEM;
            goto out;
        }
        req->out_splits[q] = (int64_t)n;
        rb[q] = (size_t)n * row;
        rd[q] = total;
        total += rb[q];
        rows += (int64_t)n;
    }
    req->nout_splits = size;
    req->owned_output = tc__output_alloc(total, &req->owned_cap);
    if (req->owned_output == NULL) {
        snprintf(msg, len, "tensor '%s': cannot allocate %zu bytes for the alltoall output",
                 req->name, total);
        st = TC_ERR_NOMEM;
        goto out;
    }
    if (shm == NULL) {
        st = tc__alltoallv(x->tp, req->send, sb, sd, req->owned_output, rb, rd);
    } else if (shm_direct(shm, req, alltoall_most(matrix, size, row))) {
        st = tc__cma_alltoall(shm, req->send, req->owned_output, matrix, row);
    } else {
        st = tc__shm_alltoall(shm, req->send, req->owned_output, matrix, row);
    }
    if (st != TC_OK) {
        failed_with(req, st, err_of(x, shm), msg, len);
        goto out;
    }
    tc__request_set_output(req, req->owned_output, rows);

out:
    free(matrix);
    free(counts);
    free(sb);
    return st;
}

#define ALLTOALL_DESC                                                                   \
    .params = TC_PARAM_SPLITS, .output = TC_OUT_ALLOCATED,                              \
    .agree = TC_AGREE_DTYPE | TC_AGREE_NDIM | TC_AGREE_SHAPE_TAIL,                      \
    .validate = alltoall_validate, .run = alltoall_run, .algo = "pairwise exchange",   \
    .algo_shm = "shm", .algo_cma = "cma",                                               \
    .run_packed = NULL, .algo_packed = NULL, .eager_prepare = NULL, .eager_combine = NULL, \
    .eager_finish = NULL, .algo_eager = NULL

/* ---- barrier: nothing to move ------------------------------------------------ */

/* Every rank submitted it (that is what running it means): nothing is left
 * to do but wait for this rank's earlier requests (after_earlier). */
static tc_status_t barrier_run(const tc_kind_ctx_t *x, tc_request_t *req,
                               const tc_wire_response_t *r, char *msg, size_t len)
{
    (void)x;
    (void)r;
    (void)msg;
    (void)len;
    tc__request_set_output(req, NULL, -1);
    return TC_OK;
}

#define BARRIER_DESC                                                                    \
    .params = TC_PARAM_NONE_TENSOR, .output = TC_OUT_NONE, .agree = 0,                  \
    .validate = NULL, .run = barrier_run, .algo = "negotiation (every rank reached it)", \
    .run_packed = NULL, .algo_packed = NULL, .eager_prepare = NULL, .eager_combine = NULL, \
    .eager_finish = NULL, .algo_eager = NULL, .uncached = 1, .after_earlier = 1,          \
    .auto_name = "tcoll/barrier/", .without_joined = 1

/* ---- join: nothing to move ------------------------------------------------- */

/* The output of a valued kind: rank 0's value, a 0-dim int32. */
static tc_status_t set_value(tc_request_t *req, const tc_wire_response_t *r, char *msg,
                             size_t len)
{
    if (!r->has_value) {
        snprintf(msg, len, "protocol error: rank 0 completed '%s' without its value", req->name);
        return TC_ERR_TRANSPORT;
    }
    req->value = r->value;
    req->dtype = TC_INT32;
    req->ndim = 0;
    tc__request_set_output(req, &req->value, -1);
    return TC_OK;
}

/* Every rank joined (that is what running it means); rank 0's response says
 * which joined last. */
static tc_status_t join_run(const tc_kind_ctx_t *x, tc_request_t *req,
                            const tc_wire_response_t *r, char *msg, size_t len)
{
    (void)x;
    return set_value(req, r, msg, len);
}

#define JOIN_DESC                                                                       \
    .params = TC_PARAM_NONE_TENSOR, .output = TC_OUT_NONE, .agree = 0,                  \
    .validate = NULL, .run = join_run, .algo = "negotiation (every rank joined)",       \
    .run_packed = NULL, .algo_packed = NULL, .eager_prepare = NULL, .eager_combine = NULL, \
    .eager_finish = NULL, .algo_eager = NULL, .uncached = 1, .after_earlier = 1,         \
    .auto_name = "tcoll/join/", .joins = 1, .valued = 1

/* ---- process sets: every rank changes its table of sets ------------------- */

static tc_status_t pset_add_run(const tc_kind_ctx_t *x, tc_request_t *req,
                                const tc_wire_response_t *r, char *msg, size_t len)
{
    tc_status_t st = set_value(req, r, msg, len); /* the new set's id */

    return st != TC_OK ? st : tc__pset_run_add(x->eng, req, r, msg, len);
}

static tc_status_t pset_remove_run(const tc_kind_ctx_t *x, tc_request_t *req,
                                   const tc_wire_response_t *r, char *msg, size_t len)
{
    tc__request_set_output(req, NULL, -1);
    return tc__pset_run_remove(x->eng, req, r, msg, len);
}

#define PROCESS_SET_ADD_DESC                                                                   \
    .params = TC_PARAM_NONE_TENSOR, .output = TC_OUT_NONE, .agree = TC_AGREE_RANKS,     \
    .validate = NULL, .run = pset_add_run, .algo = "process set creation",              \
    .run_packed = NULL, .algo_packed = NULL, .eager_prepare = NULL, .eager_combine = NULL, \
    .eager_finish = NULL, .algo_eager = NULL, .uncached = 1,                             \
    .auto_name = "tcoll/pset/", .set_op = 1, .valued = 1

#define PROCESS_SET_REMOVE_DESC                                                                \
    .params = TC_PARAM_NONE_TENSOR, .output = TC_OUT_NONE, .agree = TC_AGREE_TARGET,    \
    .validate = NULL, .run = pset_remove_run, .algo = "process set removal",            \
    .run_packed = NULL, .algo_packed = NULL, .eager_prepare = NULL, .eager_combine = NULL, \
    .eager_finish = NULL, .algo_eager = NULL, .uncached = 1,                             \
    .auto_name = "tcoll/pset/", .set_op = 1

/* ---- the table ------------------------------------------------------------ */

/* One row per entry of TC_KIND_MAP (wire/wire.h), which gives the kind's
 * number and both spellings of its name; the rest is its UPPER_DESC. */
static const tc_kind_desc_t kinds[] = {
#define KIND_ROW(UP, low) \
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
