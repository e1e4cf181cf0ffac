/*
 * pset_api.c - the public calls that create, remove and describe process
 * sets (tcoll.h). Creating and removing are collectives of the global set,
 * submitted and waited for like any call; what running them does is
 * exec/pset.c's. Any application thread.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "kind/kind.h"
#include "util/status.h"

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return (x > y) - (x < y);
}

/* Submits kind (a set operation of the global set) and waits for it. */
static tc_status_t run_set_op(const char *fn, tc_kind_t kind, int *ranks, int nranks, int target,
                              int *value_p)
{
    static const tc_tensor_t no_tensor = {NULL, TC_UINT8, 1, {0}};
    tc_request_t *req = NULL, *out;
    tc_status_t st;

    st = tc__request_make(fn, kind, TC_AUTO_NAME_PREFIX, &no_tensor, NULL, TC_SUM, 0, NULL, NULL,
                          &out, &req);
    if (st != TC_OK) {
        free(ranks);
        return st;
    }
    req->set_ranks = ranks;
    req->nset_ranks = nranks;
    req->root = req->root_index = target;
    if ((st = tc__queue_submit_all(fn, &req, 1)) != TC_OK) {
        return st;
    }
    st = tc_wait(req);
    if (st == TC_OK && value_p != NULL) {
        *value_p = req->value;
    }
    if (st != TC_OK) {
        char why[ENG_MSG_MAX];
        snprintf(why, sizeof(why), "%s", tc_request_error(req));
        tc_request_free(req);
        return tc__set_error(st, "%s: %s", fn, why);
    }
    tc_request_free(req);
    return st;
}

tc_status_t tc_process_set_add(const int *ranks, int nranks, int *id_p)
{
    const int size = tc_size();
    int *sorted, i;

    tc__clear_error();
    if (ranks == NULL || id_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_process_set_add: %s is NULL",
                             ranks == NULL ? "ranks" : "id_p");
    }
    if (size > 0 && (nranks < 1 || nranks > size)) {
        return tc__set_error(TC_ERR_ARG, "tc_process_set_add: nranks %d is outside 1..%d", nranks,
                             size);
    }
    for (i = 0; size > 0 && i < nranks; i++) {
        if (ranks[i] < 0 || ranks[i] >= size) {
            return tc__set_error(TC_ERR_ARG,
                                 "tc_process_set_add: ranks[%d] = %d is outside "
                                 "0..%d",
                                 i, ranks[i], size - 1);
        }
    }
    if (size <= 0) {
        return tc__set_error(TC_ERR_STATE, "tc_process_set_add: tc_init has not been called");
    }
    sorted = malloc((size_t)nranks * sizeof(*sorted));
    if (sorted == NULL) {
        return tc__set_error(TC_ERR_NOMEM, "tc_process_set_add: out of memory");
    }
    memcpy(sorted, ranks, (size_t)nranks * sizeof(*sorted));
    qsort(sorted, (size_t)nranks, sizeof(*sorted), cmp_int);
    for (i = 1; i < nranks; i++) {
        if (sorted[i] == sorted[i - 1]) {
            int twice = sorted[i];
            free(sorted);
            return tc__set_error(TC_ERR_ARG, "tc_process_set_add: rank %d is listed twice", twice);
        }
    }
    return run_set_op("tc_process_set_add", TC_KIND_PROCESS_SET_ADD, sorted, nranks, 0, id_p);
}

tc_status_t tc_process_set_remove(int id)
{
    eng_shared_t *sh = &tc__engine_shared;
    int exists;

    tc__clear_error();
    if (id == TC_GLOBAL_PROCESS_SET) {
        return tc__set_error(TC_ERR_ARG, "tc_process_set_remove: the global process set (0) "
                                         "cannot be removed");
    }
    pthread_mutex_lock(&sh->mu);
    exists = id > 0 && tc__pset_get((uint32_t)id) != NULL;
    pthread_mutex_unlock(&sh->mu);
    if (!exists && tc_size() > 0) {
        return tc__set_error(TC_ERR_ARG, "tc_process_set_remove: process set %d does not exist",
                             id);
    }
    return run_set_op("tc_process_set_remove", TC_KIND_PROCESS_SET_REMOVE, NULL, 0, id, NULL);
}

int tc_process_set_rank(int id)
{
    eng_shared_t *sh = &tc__engine_shared;
    eng_pset_t *ps;
    int r;

    pthread_mutex_lock(&sh->mu);
    ps = id >= 0 ? tc__pset_get((uint32_t)id) : NULL;
    r = ps != NULL ? ps->index : -1;
    pthread_mutex_unlock(&sh->mu);
    return r;
}

int tc_process_set_size(int id)
{
    eng_shared_t *sh = &tc__engine_shared;
    eng_pset_t *ps;
    int n;

    pthread_mutex_lock(&sh->mu);
    ps = id >= 0 ? tc__pset_get((uint32_t)id) : NULL;
    n = ps != NULL ? ps->n : -1;
    pthread_mutex_unlock(&sh->mu);
    return n;
}

tc_status_t tc_process_set_ranks(int id, int *ranks, int cap, int *count_p)
{
    eng_shared_t *sh = &tc__engine_shared;
    eng_pset_t *ps;
    int i;

    tc__clear_error();
    if (count_p == NULL || cap < 0 || (ranks == NULL && cap > 0)) {
        return tc__set_error(TC_ERR_ARG, "tc_process_set_ranks: %s",
                             count_p == NULL ? "count_p is NULL"
                             : cap < 0       ? "cap is negative"
                                             : "ranks is NULL");
    }
    pthread_mutex_lock(&sh->mu);
    ps = id >= 0 ? tc__pset_get((uint32_t)id) : NULL;
    if (ps != NULL) {
        for (i = 0; i < ps->n && i < cap; i++) {
            ranks[i] = ps->ranks[i];
        }
        *count_p = ps->n;
    }
    pthread_mutex_unlock(&sh->mu);
    if (ps == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_process_set_ranks: process set %d does not exist", id);
    }
    return TC_OK;
}
