/*
 * algo_allgather.c - allgather's records, in the order the selector tries
 * them, and its run (algo.h):
 *
 *   cuda ipc         device tensors only (TC_MEM_CUDA), the set on one node,
 *                    TCOLL_CUDA_IPC: each rank copies every rank's input,
 *                    opened through CUDA IPC (device_node.c; device.c runs
 *                    it, outside the kind's run)
 *   cuda-aware mpi   device tensors only, where every rank's MPI takes
 *                    device memory (TCOLL_MPI_CUDA): the ring over MPI in
 *                    device memory (device_mpi.c; device.c runs it)
 *   cma              the global set on one node, from TCOLL_SHM_DIRECT_KB of
 *                    output up: every rank reads the others' blocks directly
 *                    (coll/shm_allgather.c)
 *   shm              the global set on one node: through the segment's slots
 *   ring allgatherv  anywhere (coll/ring_allgatherv.c)
 */
#define _GNU_SOURCE
#include "exec/algo.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tc_status_t cma_run(const tc_algo_ctx_t *x, const tc_allgather_job_t *j)
{
    return tc__cma_allgatherv(x->shm, j->buf, j->bytes, j->displs);
}

static tc_status_t shm_run(const tc_algo_ctx_t *x, const tc_allgather_job_t *j)
{
    return tc__shm_allgatherv(x->shm, j->buf, j->bytes, j->displs);
}

static tc_status_t ring_run(const tc_algo_ctx_t *x, const tc_allgather_job_t *j)
{
    return tc__ring_allgatherv(x->tp, j->buf, j->bytes, j->displs);
}

static const tc_algo_t cma_algo = {
    "cma", NULL, TC_MEM_HOST, TC_ALGO_OVER_SHM, tc__algo_kinds_cma, {.allgather = cma_run}};
static const tc_algo_t shm_algo = {
    "shm", NULL, TC_MEM_HOST, TC_ALGO_OVER_SHM, tc__algo_kinds_shm, {.allgather = shm_run}};
static const tc_algo_t ring_algo = {"ring allgatherv", NULL, TC_MEM_HOST,
                                    TC_ALGO_OVER_TP,   NULL, {.allgather = ring_run}};

/* device memory only: the kind's run never picks it for host memory */
static const tc_algo_t cuda_ipc_algo = {"cuda ipc",
                                        NULL,
                                        TC_MEM_CUDA,
                                        TC_ALGO_OVER_TP,
                                        tc__device_node_applies,
                                        {.allgather = tc__device_node_allgather}};

static const tc_algo_t cuda_mpi_algo = {"cuda-aware mpi",
                                        NULL,
                                        TC_MEM_CUDA,
                                        TC_ALGO_OVER_TP,
                                        tc__device_mpi_applies,
                                        {.allgather = tc__device_mpi_allgather}};

static const tc_algo_t *const records[] = {&cuda_ipc_algo, &cuda_mpi_algo, &cma_algo, &shm_algo,
                                           &ring_algo};

tc_status_t tc__allgather_layout(const tc_algo_ctx_t *x, const tc_request_t *req,
                                 const tc_wire_response_t *r, size_t *bytes, size_t *displs,
                                 size_t *total_p, int64_t *rows_p, char *msg, size_t len)
{
    const int size = x->tp->size;
    size_t row = tc_dtype_size(req->dtype) * tc__algo_row_elems(req), total = 0;
    int64_t rows = 0;
    int q;

    if (r->ndim0 != (uint32_t)size || r->dim0[x->tp->rank] != req->shape[0]) {
        snprintf(msg, len,
                 "tensor '%s': rank 0 sent an allgather plan that does not match this "
                 "rank's submission (internal error)",
                 req->name);
        return TC_ERR_TRANSPORT;
    }
    for (q = 0; q < size; q++) {
        if (r->dim0[q] < 0 || (row != 0 && (uint64_t)r->dim0[q] > (SIZE_MAX - total) / row)) {
            snprintf(msg, len, "tensor '%s': allgather output does not fit in memory", req->name);
            return TC_ERR_NOMEM;
        }
        displs[q] = total;
        bytes[q] = (size_t)r->dim0[q] * row;
        total += bytes[q];
        rows += r->dim0[q];
    }
    *total_p = total;
    *rows_p = rows;
    return TC_OK;
}

void tc__allgather_output(tc_request_t *req, const tc_wire_response_t *r, int size, void *data,
                          int64_t rows)
{
    req->out_splits = malloc((size_t)size * sizeof(*req->out_splits));
    if (req->out_splits != NULL) { /* without it, tc_request_splits says none: not fatal */
        memcpy(req->out_splits, r->dim0, (size_t)size * sizeof(*req->out_splits));
        req->nout_splits = size;
    }
    tc__request_set_output(req, data, rows);
}

/* Each rank's block is its dim 0 (from rank 0's response) times the row
 * size; the output holds every block in rank order. */
static tc_status_t allgather_run(const tc_algo_ctx_t *x, tc_request_t *req,
                                 const tc_wire_response_t *r, char *msg, size_t len)
{
    const int rank = x->tp->rank, size = x->tp->size;
    size_t *bytes, *displs, total = 0;
    const tc_algo_t *a;
    int64_t rows = 0;
    tc_status_t st;

    bytes = malloc(2 * (size_t)size * sizeof(*bytes));
    if (bytes == NULL) {
        snprintf(msg, len, "tensor '%s': out of memory", req->name);
        return TC_ERR_NOMEM;
    }
    displs = bytes + size;
    st = tc__allgather_layout(x, req, r, bytes, displs, &total, &rows, msg, len);
    if (st != TC_OK) {
        goto err_free_bytes;
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
    {
        tc_algo_call_t c = {TC_KIND_ALLGATHER, req->dtype, req->op, total, TC_MEM_HOST, 0};
        tc_allgather_job_t j = {req->owned_output, bytes, displs, NULL, NULL};
        a = tc__algo_pick(&tc__exec_allgather, x, &c);
        req->algo = a;
        st = a->run.allgather(x, &j);
    }
    if (st != TC_OK) {
        tc__algo_failed(req, st, tc__algo_err(x, a), msg, len);
        goto err_free_bytes;
    }
    free(bytes);
    tc__allgather_output(req, r, size, req->owned_output, rows);
    return TC_OK;

err_free_bytes:
    free(bytes);
    return st;
}

const tc_kind_exec_t tc__exec_allgather = {allgather_run, records,
                                           sizeof(records) / sizeof(records[0])};
