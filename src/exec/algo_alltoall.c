/*
 * algo_alltoall.c - alltoall's records, in the order the selector tries
 * them, and its run (algo.h):
 *
 *   cuda ipc           device tensors only (TC_MEM_CUDA), the set on one node,
 *                      TCOLL_CUDA_IPC: each rank copies the rows every rank
 *                      sends it from that rank's input, opened through CUDA
 *                      IPC (device_node.c; device.c runs it, outside the
 *                      kind's run, after tc__alltoall_plan)
 *   cuda-aware mpi     device tensors only, where every rank's MPI takes
 *                      device memory (TCOLL_MPI_CUDA): the pairwise exchange
 *                      over MPI in device memory (device_mpi.c)
 *   cma                the global set on one node, when the largest input of
 *                      any rank is TCOLL_SHM_DIRECT_KB or more: every rank
 *                      reads its blocks from the others' inputs directly
 *                      (coll/shm_alltoall.c)
 *   shm                the global set on one node: through the slots
 *   pairwise exchange  anywhere (coll/alltoallv.c)
 *
 * The ranks first exchange how many rows each sends each (8 bytes a pair;
 * inside the node the whole matrix, which places every block in every
 * rank's buffer), then the rows; the output (tcoll's) stacks what came, in
 * rank order. Only the counts say how large the largest input is, so this
 * run asks the selector after exchanging them.
 */
#define _GNU_SOURCE
#include "exec/algo.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static tc_status_t cma_run(const tc_algo_ctx_t *x, const tc_alltoall_job_t *j)
{
    return tc__cma_alltoall(x->shm, j->send, j->out, j->matrix, j->row);
}

static tc_status_t shm_run(const tc_algo_ctx_t *x, const tc_alltoall_job_t *j)
{
    return tc__shm_alltoall(x->shm, j->send, j->out, j->matrix, j->row);
}

static tc_status_t pairwise_run(const tc_algo_ctx_t *x, const tc_alltoall_job_t *j)
{
    return tc__alltoallv(x->tp, j->send, j->sb, j->sd, j->out, j->rb, j->rd);
}

static const tc_algo_t cma_algo = {
    "cma", NULL, TC_MEM_HOST, TC_ALGO_OVER_SHM, tc__algo_kinds_cma, {.alltoall = cma_run}};
static const tc_algo_t shm_algo = {
    "shm", NULL, TC_MEM_HOST, TC_ALGO_OVER_SHM, tc__algo_kinds_shm, {.alltoall = shm_run}};
static const tc_algo_t pairwise_algo = {"pairwise exchange", NULL, TC_MEM_HOST,
                                        TC_ALGO_OVER_TP,     NULL, {.alltoall = pairwise_run}};

/* device memory only: the kind's run never picks it for host memory */
static const tc_algo_t cuda_ipc_algo = {"cuda ipc",
                                        NULL,
                                        TC_MEM_CUDA,
                                        TC_ALGO_OVER_TP,
                                        tc__device_node_applies,
                                        {.alltoall = tc__device_node_alltoall}};

static const tc_algo_t cuda_mpi_algo = {"cuda-aware mpi",
                                        NULL,
                                        TC_MEM_CUDA,
                                        TC_ALGO_OVER_TP,
                                        tc__device_mpi_applies,
                                        {.alltoall = tc__device_mpi_alltoall}};

static const tc_algo_t *const records[] = {&cuda_ipc_algo, &cuda_mpi_algo, &cma_algo, &shm_algo,
                                           &pairwise_algo};

/* How many rows every rank sends every rank: this rank's are counts[0..n),
 * what each rank sends this one goes into counts[n..2n). Inside the node
 * (shm) the whole matrix comes (n x n, matrix[p * n + q]: p to q), which
 * places every block in every rank's buffer. */
static tc_status_t alltoall_counts(const tc_algo_ctx_t *x, tc_shm_coll_t *shm, uint64_t *counts,
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

/* The ranks first exchange how many rows each sends each (8 bytes a pair),
 * then the rows; the output (tcoll's) stacks what came, in rank order. */
static tc_status_t alltoall_run(const tc_algo_ctx_t *x, tc_request_t *req,
                                const tc_wire_response_t *r, char *msg, size_t len)
{
    const int size = x->tp->size;
    size_t row = tc_dtype_size(req->dtype) * tc__algo_row_elems(req), total = 0;
    /* the counts go the way the rows will: through the segment when its
     * records may run (the same test as theirs), else over the transport */
    tc_shm_coll_t *shm = tc__algo_shm_kinds(x) ? x->shm : NULL;
    const tc_algo_t *a = NULL;
    uint64_t *counts, *matrix = NULL;
    size_t *sb, *sd, *rb, *rd;
    int64_t rows = 0;
    tc_status_t st = TC_ERR_NOMEM;

    (void)r;
    counts = malloc(2 * (size_t)size * sizeof(*counts));
    sb = malloc(4 * (size_t)size * sizeof(*sb));
    req->out_splits = malloc((size_t)size * sizeof(*req->out_splits));
    if (shm != NULL) {
        matrix = malloc((size_t)size * (size_t)size * sizeof(*matrix));
    }
    if (counts == NULL || sb == NULL || req->out_splits == NULL ||
        (shm != NULL && matrix == NULL)) {
        snprintf(msg, len, "tensor '%s': out of memory", req->name);
        goto out;
    }
    sd = sb + size;
    rb = sd + size;
    rd = rb + size;
    tc__alltoall_send_layout(req, size, row, counts, sb, sd);
    st = alltoall_counts(x, shm, counts, matrix);
    if (st != TC_OK) {
        snprintf(msg, len, "tensor '%s': alltoall failed exchanging row counts: %s", req->name,
                 st == TC_ERR_NOMEM ? "out of memory"
                 : shm != NULL      ? shm->err
                                    : x->tp->err);
        goto out;
    }
    if ((st = tc__alltoall_recv_layout(req, size, row, counts + size, 1, rb, rd, &total, &rows, msg,
                                       len)) != TC_OK) {
        goto out;
    }
    req->owned_output = tc__output_alloc(total, &req->owned_cap);
    if (req->owned_output == NULL) {
        snprintf(msg, len, "tensor '%s': cannot allocate %zu bytes for the alltoall output",
                 req->name, total);
        st = TC_ERR_NOMEM;
        goto out;
    }
    {
        /* bytes: the largest input, which only the matrix gives alike on
         * every rank; without it no size rule applies */
        tc_algo_call_t c = {
            TC_KIND_ALLTOALL, req->dtype,
            req->op,          shm != NULL ? tc__alltoall_most(matrix, size, row) : 0,
            TC_MEM_HOST,      0};
        tc_alltoall_job_t j = {req->send, req->owned_output, sb, sd, rb, rd, matrix, row, NULL};
        a = tc__algo_pick(&tc__exec_alltoall, x, &c);
        req->algo = a;
        st = a->run.alltoall(x, &j);
    }
    if (st != TC_OK) {
        tc__algo_failed(req, st, tc__algo_err(x, a), msg, len);
        goto out;
    }
    tc__request_set_output(req, req->owned_output, rows);

out:
    free(matrix);
    free(counts);
    free(sb);
    return st;
}

const tc_kind_exec_t tc__exec_alltoall = {alltoall_run, records,
                                          sizeof(records) / sizeof(records[0])};
