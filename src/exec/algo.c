/*
 * algo.c - the selector (tc__algo_pick: the first of a kind's records that
 * handles the data's memory and applies) and the helpers the kinds' runs
 * share. Below the kinds' files (algo_<kind>.c), which call it; the table
 * of kinds is algo_table.c.
 */
#define _GNU_SOURCE
#include "exec/algo.h"

#include <stdio.h>

#include "util/status.h"

const tc_algo_t *tc__algo_pick(const tc_kind_exec_t *k, const tc_algo_ctx_t *x,
                               const tc_algo_call_t *c)
{
    size_t i;

    for (i = 0; k != NULL && i < k->nalgos; i++) {
        const tc_algo_t *a = k->algos[i];
        if ((a->memory & c->memory) == c->memory && (a->applies == NULL || a->applies(x, c))) {
            return a;
        }
    }
    return NULL;
}

const char *tc__algo_err(const tc_algo_ctx_t *x, const tc_algo_t *a)
{
    switch (a != NULL ? a->over : TC_ALGO_OVER_NONE) {
    case TC_ALGO_OVER_SHM: return x->shm->err;
    case TC_ALGO_OVER_HIER: return x->hier->err;
    case TC_ALGO_OVER_TP: return x->tp->err;
    case TC_ALGO_OVER_NONE: break;
    }
    return x->tp != NULL ? x->tp->err : "failed";
}

tc_status_t tc__algo_failed(const tc_request_t *req, tc_status_t st, const char *why, char *msg,
                            size_t len)
{
    snprintf(msg, len, "tensor '%s': %s failed: %s", req->name, tc__kind_of(req)->name,
             st == TC_ERR_NOMEM ? "out of memory" : why);
    return st;
}

size_t tc__algo_row_elems(const tc_request_t *req)
{
    size_t row = 1;
    int d;

    for (d = 1; d < req->ndim; d++) {
        row *= (size_t)req->shape[d]; /* the whole tensor's size was checked at submission */
    }
    return row;
}

int tc__algo_shm_kinds(const tc_algo_ctx_t *x)
{
    return x->shm != NULL && x->shm->seg->n == x->tp->size && tc__shm_kinds_fit(x->shm);
}

int tc__algo_kinds_cma(const tc_algo_ctx_t *x, const tc_algo_call_t *c)
{
    return tc__algo_shm_kinds(x) && tc__shm_uses_cma(x->shm, c->bytes);
}

int tc__algo_kinds_shm(const tc_algo_ctx_t *x, const tc_algo_call_t *c)
{
    (void)c;
    return tc__algo_shm_kinds(x);
}

int tc__algo_one_node(const tc_algo_ctx_t *x)
{
    int i;

    if (x->node == NULL) {
        return 1;
    }
    for (i = 0; i < x->tp->size; i++) {
        if (x->node[i] != 0) {
            return 0;
        }
    }
    return 1;
}

int tc__algo_ordered(const tc_algo_ctx_t *x, const tc_algo_call_t *c)
{
    return x->ordered && tc__order_matters(c->dtype, c->op);
}
