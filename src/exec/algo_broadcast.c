/*
 * algo_broadcast.c - broadcast's records, in the order the selector tries
 * them, and its run (algo.h):
 *
 *   cuda ipc       device tensors only (TC_MEM_CUDA), the set on one node,
 *                  TCOLL_CUDA_IPC: the others copy the root's device buffer
 *                  through CUDA IPC (device_node.c; device.c runs it)
 *   cuda-aware mpi device tensors only, where every rank's MPI takes device
 *                  memory (TCOLL_MPI_CUDA): the binomial tree over MPI in
 *                  device memory (device_mpi.c; device.c runs it)
 *   staged, pipelined
 *                  device tensors only, larger than TCOLL_CUDA_STAGE_CHUNK_KB:
 *                  through page-locked host memory in chunks, each by the host
 *                  record below its size picks (device_pipe.c)
 *   cma            the global set on one node, from TCOLL_SHM_DIRECT_KB up:
 *                  every rank reads the root's buffer directly
 *                  (coll/shm_bcast.c)
 *   shm            the global set on one node: through the segment's slots
 *   binomial tree  anywhere (coll/bcast.c)
 *
 * The root is a global rank, checked at submission to be in the request's
 * process set; the algorithms take its place there (for the global set, its
 * local index).
 */
#define _GNU_SOURCE
#include "exec/algo.h"

static tc_status_t cma_run(const tc_algo_ctx_t *x, const tc_broadcast_job_t *j)
{
    return tc__cma_bcast(x->shm, j->buf, j->bytes, j->root);
}

static tc_status_t shm_run(const tc_algo_ctx_t *x, const tc_broadcast_job_t *j)
{
    return tc__shm_bcast(x->shm, j->buf, j->bytes, j->root);
}

static tc_status_t tree_run(const tc_algo_ctx_t *x, const tc_broadcast_job_t *j)
{
    return tc__bcast_binomial(x->tp, j->buf, j->bytes, j->root);
}

static const tc_algo_t cma_algo = {
    "cma", NULL, TC_MEM_HOST, TC_ALGO_OVER_SHM, tc__algo_kinds_cma, {.broadcast = cma_run}};
static const tc_algo_t shm_algo = {
    "shm", NULL, TC_MEM_HOST, TC_ALGO_OVER_SHM, tc__algo_kinds_shm, {.broadcast = shm_run}};
static const tc_algo_t tree_algo = {"binomial tree", NULL, TC_MEM_HOST,
                                    TC_ALGO_OVER_TP, NULL, {.broadcast = tree_run}};

/* device memory only: the kind's run never picks it for host memory */
static const tc_algo_t cuda_ipc_algo = {"cuda ipc",
                                        NULL,
                                        TC_MEM_CUDA,
                                        TC_ALGO_OVER_TP,
                                        tc__device_node_applies,
                                        {.broadcast = tc__device_node_broadcast}};

static const tc_algo_t pipe_algo = {"staged, pipelined",
                                    NULL,
                                    TC_MEM_CUDA,
                                    TC_ALGO_OVER_TP,
                                    tc__device_pipe_applies,
                                    {.broadcast = tc__device_pipe_broadcast}};

static const tc_algo_t cuda_mpi_algo = {"cuda-aware mpi",
                                        NULL,
                                        TC_MEM_CUDA,
                                        TC_ALGO_OVER_TP,
                                        tc__device_mpi_applies,
                                        {.broadcast = tc__device_mpi_broadcast}};

static const tc_algo_t *const records[] = {&cuda_ipc_algo, &cuda_mpi_algo, &pipe_algo,
                                           &cma_algo,      &shm_algo,      &tree_algo};

static tc_status_t broadcast_run(const tc_algo_ctx_t *x, tc_request_t *req,
                                 const tc_wire_response_t *r, char *msg, size_t len)
{
    const size_t bytes = req->count * tc_dtype_size(req->dtype);
    tc_algo_call_t c = {TC_KIND_BROADCAST, req->dtype, req->op, bytes, TC_MEM_HOST, 0};
    tc_broadcast_job_t j = {req->recv, bytes, req->root_index, NULL};
    const tc_algo_t *a = tc__algo_pick(&tc__exec_broadcast, x, &c);
    tc_status_t st;

    (void)r;
    req->algo = a;
    st = a->run.broadcast(x, &j);
    if (st != TC_OK) {
        return tc__algo_failed(req, st, tc__algo_err(x, a), msg, len);
    }
    tc__request_set_output(req, req->recv, -1);
    return TC_OK;
}

const tc_kind_exec_t tc__exec_broadcast = {broadcast_run, records,
                                           sizeof(records) / sizeof(records[0])};
