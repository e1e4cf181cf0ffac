/*
 * algo_allreduce.c - allreduce's records, in the order the selector tries
 * them, and its run (algo.h):
 *
 *   cuda ipc device tensors only (TC_MEM_CUDA), the set on one node,
 *            TCOLL_CUDA_IPC: every rank's device memory through CUDA IPC,
 *            the combine kernel in the documented order (device_node.c;
 *            device.c runs it, outside the kind's run)
 *   cuda-aware mpi
 *            device tensors only, where every rank's MPI takes device
 *            memory (TCOLL_MPI_CUDA) and rank order is the documented order
 *            (or the op is exact in any order): each rank's block combined
 *            on the device from every rank's, then allgathered, all over
 *            MPI in device memory (device_mpi.c; device.c runs it)
 *   staged, pipelined
 *            device tensors only, larger than TCOLL_CUDA_STAGE_CHUNK_KB:
 *            through page-locked host memory in chunks, each chunk by the
 *            host record below that its size picks, the copies overlapping
 *            the chunks' collectives (device_pipe.c; device.c runs it)
 *   hier     several nodes, each node's segment usable by every rank:
 *            inside each node, then among the nodes' leaders, then back
 *            (coll/hier_allreduce.c)
 *   cma      the global set on one node, from TCOLL_SHM_DIRECT_KB up: every
 *            rank reads the others' buffers directly (coll/cma_allreduce.c)
 *   shm      the global set on one node: through the segment's slots
 *            (coll/shm_allreduce.c)
 *   ordered  TCOLL_DETERMINISTIC and an order-sensitive op (float sums,
 *            averages, products): the owner of each block combines every
 *            rank's contribution in the documented order (coll/ordered_rs.c)
 *   ring     anywhere (coll/ring_allreduce.c)
 *
 * Every record but ring leaves the result with the bits of the documented
 * order (docs/reproducibility.md). A fused group (exec.c) runs the same
 * records in place over the fusion buffer.
 */
#define _GNU_SOURCE
#include "exec/algo.h"

#include "reduce/reduce.h"

static int hier_applies(const tc_algo_ctx_t *x, const tc_algo_call_t *c)
{
    (void)c;
    return x->hier != NULL;
}

static int cma_applies(const tc_algo_ctx_t *x, const tc_algo_call_t *c)
{
    return x->shm != NULL && tc__shm_uses_cma(x->shm, c->bytes);
}

static int shm_applies(const tc_algo_ctx_t *x, const tc_algo_call_t *c)
{
    (void)c;
    return x->shm != NULL;
}

static tc_status_t hier_run(const tc_algo_ctx_t *x, const tc_allreduce_job_t *j)
{
    return tc__hier_allreduce(x->hier, j->src, j->buf, j->count, j->dtype, j->op);
}

static tc_status_t cma_run(const tc_algo_ctx_t *x, const tc_allreduce_job_t *j)
{
    return tc__cma_allreduce(x->shm, j->src, j->buf, j->count, j->dtype, j->op);
}

static tc_status_t shm_run(const tc_algo_ctx_t *x, const tc_allreduce_job_t *j)
{
    return tc__shm_allreduce(x->shm, j->src, j->buf, j->count, j->dtype, j->op);
}

static tc_status_t ordered_run(const tc_algo_ctx_t *x, const tc_allreduce_job_t *j)
{
    return tc__ordered_allreduce(x->tp, j->src, j->buf, j->count, j->dtype, j->op, x->chunk_bytes,
                                 x->scratch, x->node);
}

static tc_status_t ring_run(const tc_algo_ctx_t *x, const tc_allreduce_job_t *j)
{
    return tc__ring_allreduce(x->tp, j->src, j->buf, j->count, j->dtype, j->op, x->chunk_bytes,
                              x->scratch);
}

static const tc_algo_t hier_algo = {
    "hier", "hier, fused", TC_MEM_HOST, TC_ALGO_OVER_HIER, hier_applies, {.allreduce = hier_run}};
static const tc_algo_t cma_algo = {
    "cma", "cma, fused", TC_MEM_HOST, TC_ALGO_OVER_SHM, cma_applies, {.allreduce = cma_run}};
static const tc_algo_t shm_algo = {
    "shm", "shm, fused", TC_MEM_HOST, TC_ALGO_OVER_SHM, shm_applies, {.allreduce = shm_run}};
static const tc_algo_t ordered_algo = {"ordered",        "ordered, fused",
                                       TC_MEM_HOST,      TC_ALGO_OVER_TP,
                                       tc__algo_ordered, {.allreduce = ordered_run}};
static const tc_algo_t ring_algo = {"ring",          "ring, fused", TC_MEM_HOST,
                                    TC_ALGO_OVER_TP, NULL,          {.allreduce = ring_run}};

/* device memory only: the kinds' runs never pick it for host memory */
static const tc_algo_t cuda_ipc_algo = {"cuda ipc",
                                        NULL,
                                        TC_MEM_CUDA,
                                        TC_ALGO_OVER_TP,
                                        tc__device_node_applies,
                                        {.allreduce = tc__device_node_allreduce}};

static const tc_algo_t pipe_algo = {"staged, pipelined",
                                    NULL,
                                    TC_MEM_CUDA,
                                    TC_ALGO_OVER_TP,
                                    tc__device_pipe_applies,
                                    {.allreduce = tc__device_pipe_allreduce}};

static const tc_algo_t cuda_mpi_algo = {"cuda-aware mpi",
                                        NULL,
                                        TC_MEM_CUDA,
                                        TC_ALGO_OVER_TP,
                                        tc__device_mpi_reduce_applies,
                                        {.allreduce = tc__device_mpi_allreduce}};

static const tc_algo_t *const records[] = {&cuda_ipc_algo, &cuda_mpi_algo, &pipe_algo,
                                           &hier_algo,     &cma_algo,      &shm_algo,
                                           &ordered_algo,  &ring_algo};

/* A prescaled input goes to recv first, and the algorithm runs in place there. */
static tc_status_t allreduce_run(const tc_algo_ctx_t *x, tc_request_t *req,
                                 const tc_wire_response_t *r, char *msg, size_t len)
{
    tc_allreduce_job_t j = {req->send, req->recv, req->count, req->dtype, req->op, NULL};
    tc_algo_call_t c = {TC_KIND_ALLREDUCE, req->dtype,
                        req->op,           req->count * tc_dtype_size(req->dtype),
                        TC_MEM_HOST,       0};
    const tc_algo_t *a = tc__algo_pick(&tc__exec_allreduce, x, &c);
    tc_status_t st;

    (void)r;
    if (req->prescale != 1.0) {
        tc__scale(req->dtype, req->recv, req->send, req->count, req->prescale);
        j.src = req->recv;
    }
    req->algo = a;
    st = a->run.allreduce(x, &j);
    if (st != TC_OK) {
        return tc__algo_failed(req, st, tc__algo_err(x, a), msg, len);
    }
    if (req->postscale != 1.0) {
        tc__scale(req->dtype, req->recv, req->recv, req->count, req->postscale);
    }
    tc__request_set_output(req, req->recv, -1);
    return TC_OK;
}

const tc_kind_exec_t tc__exec_allreduce = {allreduce_run, records,
                                           sizeof(records) / sizeof(records[0])};
