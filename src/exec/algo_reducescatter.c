/*
 * algo_reducescatter.c - reducescatter's records, in the order the
 * selector tries them, and its run (algo.h):
 *
 *   cuda ipc                device tensors only (TC_MEM_CUDA), the set on
 *                           one node, TCOLL_CUDA_IPC: each rank combines its
 *                           block of every rank's input, opened through CUDA
 *                           IPC, with the combine kernel (device_node.c;
 *                           device.c runs it, outside the kind's run)
 *   cuda-aware mpi          device tensors only, where every rank's MPI
 *                           takes device memory (TCOLL_MPI_CUDA) and rank
 *                           order is the documented order: each rank's rows
 *                           combined on the device from every rank's, over
 *                           MPI in device memory (device_mpi.c)
 *   cma                     the global set on one node, from
 *                           TCOLL_SHM_DIRECT_KB up: every rank reads its
 *                           block of the others' inputs directly
 *                           (coll/shm_reducescatter.c)
 *   shm                     the global set on one node: through the slots
 *   ordered reduce-scatter  TCOLL_DETERMINISTIC and an order-sensitive op:
 *                           each block's owner combines the contributions in
 *                           the documented order (coll/ordered_rs.c)
 *   ring reduce-scatter     anywhere (coll/ring_reducescatter.c)
 *
 * Rank r keeps block r of dim 0 (coll.h, tc__row_block), in a buffer tcoll
 * allocates; a prescaled input is a scaled copy first.
 */
#define _GNU_SOURCE
#include "exec/algo.h"

#include <stdio.h>
#include <stdlib.h>

#include "reduce/reduce.h"

static tc_status_t cma_run(const tc_algo_ctx_t *x, const tc_reducescatter_job_t *j)
{
    return tc__cma_reducescatter(x->shm, j->src, j->out, j->rows, j->row_elems, j->dtype, j->op);
}

static tc_status_t shm_run(const tc_algo_ctx_t *x, const tc_reducescatter_job_t *j)
{
    return tc__shm_reducescatter(x->shm, j->src, j->out, j->rows, j->row_elems, j->dtype, j->op);
}

static tc_status_t ordered_run(const tc_algo_ctx_t *x, const tc_reducescatter_job_t *j)
{
    return tc__ordered_reducescatter(x->tp, j->src, j->out, j->rows, j->row_elems, j->dtype, j->op,
                                     x->chunk_bytes, x->scratch, x->node);
}

static tc_status_t ring_run(const tc_algo_ctx_t *x, const tc_reducescatter_job_t *j)
{
    return tc__ring_reducescatter(x->tp, j->src, j->out, j->rows, j->row_elems, j->dtype, j->op,
                                  x->chunk_bytes, x->scratch);
}

static const tc_algo_t cma_algo = {
    "cma", NULL, TC_MEM_HOST, TC_ALGO_OVER_SHM, tc__algo_kinds_cma, {.reducescatter = cma_run}};
static const tc_algo_t shm_algo = {
    "shm", NULL, TC_MEM_HOST, TC_ALGO_OVER_SHM, tc__algo_kinds_shm, {.reducescatter = shm_run}};
static const tc_algo_t ordered_algo = {
    "ordered reduce-scatter",      NULL, TC_MEM_HOST, TC_ALGO_OVER_TP, tc__algo_ordered,
    {.reducescatter = ordered_run}};
static const tc_algo_t ring_algo = {"ring reduce-scatter", NULL, TC_MEM_HOST,
                                    TC_ALGO_OVER_TP,       NULL, {.reducescatter = ring_run}};

/* device memory only: the kind's run never picks it for host memory */
static const tc_algo_t cuda_ipc_algo = {"cuda ipc",
                                        NULL,
                                        TC_MEM_CUDA,
                                        TC_ALGO_OVER_TP,
                                        tc__device_node_applies,
                                        {.reducescatter = tc__device_node_reducescatter}};

static const tc_algo_t cuda_mpi_algo = {"cuda-aware mpi",
                                        NULL,
                                        TC_MEM_CUDA,
                                        TC_ALGO_OVER_TP,
                                        tc__device_mpi_reduce_applies,
                                        {.reducescatter = tc__device_mpi_reducescatter}};

static const tc_algo_t *const records[] = {&cuda_ipc_algo, &cuda_mpi_algo, &cma_algo,
                                           &shm_algo,      &ordered_algo,  &ring_algo};

void tc__reducescatter_block(const tc_algo_ctx_t *x, const tc_request_t *req, size_t *off_p,
                             size_t *elems_p, int64_t *rows_p)
{
    size_t rows = (size_t)req->shape[0];
    int n = x->tp->size, i = x->tp->rank;

    tc__row_block(rows, tc__algo_row_elems(req), n, i, off_p, elems_p);
    /* block i's rows (tc__row_block's rule) */
    *rows_p = (int64_t)(rows / (size_t)n + ((size_t)i < rows % (size_t)n));
}

static tc_status_t reducescatter_run(const tc_algo_ctx_t *x, tc_request_t *req,
                                     const tc_wire_response_t *r, char *msg, size_t len)
{
    const size_t es = tc_dtype_size(req->dtype);
    size_t rows = (size_t)req->shape[0], row = tc__algo_row_elems(req), off, elems;
    int64_t mine;
    tc_algo_call_t c = {TC_KIND_REDUCESCATTER, req->dtype,  req->op,
                        req->count * es,       TC_MEM_HOST, 0};
    const tc_algo_t *a = tc__algo_pick(&tc__exec_reducescatter, x, &c);
    void *scaled = NULL;
    tc_status_t st;

    (void)r;
    tc__reducescatter_block(x, req, &off, &elems, &mine);
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
    }
    {
        tc_reducescatter_job_t j = {scaled != NULL ? scaled : req->send,
                                    req->owned_output,
                                    rows,
                                    row,
                                    req->dtype,
                                    req->op,
                                    NULL};
        req->algo = a;
        st = a->run.reducescatter(x, &j);
    }
    free(scaled);
    if (st != TC_OK) {
        return tc__algo_failed(req, st, tc__algo_err(x, a), msg, len);
    }
    if (req->postscale != 1.0) {
        tc__scale(req->dtype, req->owned_output, req->owned_output, elems, req->postscale);
    }
    tc__request_set_output(req, req->owned_output, mine);
    return TC_OK;
}

const tc_kind_exec_t tc__exec_reducescatter = {reducescatter_run, records,
                                               sizeof(records) / sizeof(records[0])};
