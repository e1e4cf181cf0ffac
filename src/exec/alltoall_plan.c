/*
 * alltoall_plan.c - what an alltoall's runs share about its blocks (algo.h):
 * this rank's blocks in its input and in its output from the row counts,
 * the largest input of any rank, and for its device records the plan
 * (every rank's counts exchanged over the set's transport) and the blocks
 * a record that reads every rank's input copies. Below the kind's run
 * (algo_alltoall.c) and the device records (device.c, device_node.c).
 */
#define _GNU_SOURCE
#include "exec/algo.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* This rank's rows to every rank (counts[q]) and their bytes and offsets in
 * its input (sb, sd). */
void tc__alltoall_send_layout(const tc_request_t *req, int size, size_t row, uint64_t *counts,
                              size_t *sb, size_t *sd)
{
    size_t off = 0;
    int q;

    for (q = 0; q < size; q++) {
        int64_t n = req->splits != NULL ? req->splits[q] : req->shape[0] / size;
        counts[q] = (uint64_t)n;
        sb[q] = (size_t)n * row;
        sd[q] = off;
        off += sb[q];
    }
}

/* The rows every rank sends this one (from[q * stride]) as the output's
 * blocks: bytes and offsets (rb, rd), the total bytes and rows, and the
 * output's splits in req; TC_ERR_NOMEM (msg naming the tensor) when they do
 * not fit in memory. */
tc_status_t tc__alltoall_recv_layout(tc_request_t *req, int size, size_t row, const uint64_t *from,
                                     size_t stride, size_t *rb, size_t *rd, size_t *total_p,
                                     int64_t *rows_p, char *msg, size_t len)
{
    size_t total = 0;
    int64_t rows = 0;
    int q;

    for (q = 0; q < size; q++) {
        uint64_t n = from[(size_t)q * stride];
        if (n > (uint64_t)INT64_MAX || (row != 0 && n > (SIZE_MAX - total) / row)) {
            snprintf(msg, len, "tensor '%s': alltoall output does not fit in memory", req->name);
            return TC_ERR_NOMEM;
        }
        req->out_splits[q] = (int64_t)n;
        rb[q] = (size_t)n * row;
        rd[q] = total;
        total += rb[q];
        rows += (int64_t)n;
    }
    req->nout_splits = size;
    *total_p = total;
    *rows_p = rows;
    return TC_OK;
}

/* The largest send buffer of any rank, in bytes (SIZE_MAX past a size_t):
 * whether an alltoall inside the node runs direct, alike on every rank. */
size_t tc__alltoall_most(const uint64_t *matrix, int n, size_t row)
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

tc_status_t tc__alltoall_plan(const tc_algo_ctx_t *x, tc_request_t *req, tc_alltoall_plan_t *p,
                              char *msg, size_t len)
{
    const int size = x->tp->size, rank = x->tp->rank;
    size_t *bytes, *displs;
    uint64_t *mine;
    tc_status_t st;
    int q;

    memset(p, 0, sizeof(*p));
    p->row = tc_dtype_size(req->dtype) * tc__algo_row_elems(req);
    p->matrix = malloc((size_t)size * (size_t)size * sizeof(*p->matrix));
    p->sb = malloc(6 * (size_t)size * sizeof(*p->sb));
    req->out_splits = malloc((size_t)size * sizeof(*req->out_splits));
    if (p->matrix == NULL || p->sb == NULL || req->out_splits == NULL) {
        snprintf(msg, len, "tensor '%s': out of memory", req->name);
        tc__alltoall_plan_free(req, p);
        return TC_ERR_NOMEM;
    }
    p->sd = p->sb + size;
    p->rb = p->sd + size;
    p->rd = p->rb + size;
    bytes = p->rd + size;
    displs = bytes + size;
    mine = p->matrix + (size_t)rank * (size_t)size;
    tc__alltoall_send_layout(req, size, p->row, mine, p->sb, p->sd);
    for (q = 0; q < size; q++) {
        bytes[q] = (size_t)size * sizeof(*p->matrix);
        displs[q] = (size_t)q * bytes[q];
    }
    if ((st = tc__ring_allgatherv(x->tp, p->matrix, bytes, displs)) != TC_OK) {
        snprintf(msg, len, "tensor '%s': alltoall failed exchanging row counts: %s", req->name,
                 x->tp->err);
    } else {
        st = tc__alltoall_recv_layout(req, size, p->row, p->matrix + rank, (size_t)size, p->rb,
                                      p->rd, &p->total, &p->rows, msg, len);
    }
    if (st != TC_OK) {
        tc__alltoall_plan_free(req, p);
        return st;
    }
    p->most = tc__alltoall_most(p->matrix, size, p->row);
    return TC_OK;
}

void tc__alltoall_blocks(const tc_alltoall_job_t *j, int n, int me, const void *const *inputs,
                         void **dsts, const void **srcs, size_t *bytes)
{
    int p, q;

    for (p = 0; p < n; p++) {
        const uint64_t *to = j->matrix + (size_t)p * (size_t)n;
        size_t off = 0;
        for (q = 0; q < me; q++) { /* in p's input, after its rows to the ranks before me */
            off += (size_t)to[q] * j->row;
        }
        dsts[p] = (char *)j->out + j->rd[p];
        srcs[p] = (const char *)inputs[p] + off;
        bytes[p] = j->rb[p];
    }
}

void tc__alltoall_plan_free(tc_request_t *req, tc_alltoall_plan_t *p)
{
    free(p->matrix);
    free(p->sb);
    memset(p, 0, sizeof(*p));
    if (req != NULL) {
        free(req->out_splits);
        req->out_splits = NULL;
        req->nout_splits = 0;
    }
}
