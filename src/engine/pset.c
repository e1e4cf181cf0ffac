/*
 * pset.c - process sets: the table of sets every rank keeps, the public
 * calls that create, remove and describe them, the checks a submission to
 * a set gets, and what running process_set_add and _remove does.
 *
 * Creating and removing a set are collectives of the global set (kinds
 * PROCESS_SET_ADD and _REMOVE): negotiated like any name, so every rank runs
 * them at the same point of the agreed order. Rank 0's message table gives
 * the new set its id (the RUN response's value) and keeps its own view of
 * the members (coordinator.c); here every rank files the set and its
 * members open the set's data transport. Negotiation stays global: a
 * set's names are decided by rank 0 once every member submitted them
 * (docs/negotiation.md, "Process sets"); only the data moves among the
 * members alone.
 *
 * The table is shared: application threads read it under the engine's
 * mutex; the engine thread writes it under the mutex and reads it without.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "kind/kind.h"
#include "util/log.h"
#include "util/status.h"

/* The tag MPI_Comm_create_group uses on the global data transport's
 * communicator (the parent of a set's): nothing else is in flight there
 * while every member runs the same creation. */
#define PSET_CREATE_TAG 0x7C5E

eng_pset_t *tc__pset_get(uint32_t id)
{
    eng_shared_t *sh = &tc__engine_shared;

    return id < sh->npsets ? sh->psets[id] : NULL;
}

static eng_pset_t *pset_new(uint32_t id, const int *ranks, int n, int rank)
{
    eng_pset_t *ps = calloc(1, sizeof(*ps));
    int i;

    if (ps == NULL || (ps->ranks = malloc((size_t)n * sizeof(*ps->ranks))) == NULL) {
        free(ps);
        return NULL;
    }
    ps->id = id;
    ps->n = n;
    ps->index = -1;
    for (i = 0; i < n; i++) {
        ps->ranks[i] = ranks != NULL ? ranks[i] : i;
        if (ps->ranks[i] == rank) {
            ps->index = i;
        }
    }
    return ps;
}

static void pset_free(eng_pset_t *ps)
{
    if (ps != NULL) {
        tc__shm_route_close(&ps->route); /* local memory only: safe after a failure */
        free(ps->node);
        free(ps->ranks);
        free(ps);
    }
}

/* Files ps under its id (mu held). -1 when out of memory. */
static int pset_file(eng_pset_t *ps)
{
    eng_shared_t *sh = &tc__engine_shared;

    if (ps->id >= sh->npsets) {
        uint32_t cap = sh->npsets < 8 ? 8 : sh->npsets;
        eng_pset_t **v;
        while (cap <= ps->id) {
            cap *= 2;
        }
        v = realloc(sh->psets, cap * sizeof(*v));
        if (v == NULL) {
            return -1;
        }
        memset(v + sh->npsets, 0, (cap - sh->npsets) * sizeof(*v));
        sh->psets = v;
        sh->npsets = cap;
    }
    sh->psets[ps->id] = ps;
    return 0;
}

tc_status_t tc__pset_init_global(int size, int rank)
{
    eng_shared_t *sh = &tc__engine_shared;
    eng_pset_t *ps = pset_new(0, NULL, size, rank);
    int rc;

    if (ps == NULL) {
        return TC_ERR_NOMEM;
    }
    pthread_mutex_lock(&sh->mu);
    rc = pset_file(ps);
    pthread_mutex_unlock(&sh->mu);
    if (rc != 0) {
        pset_free(ps);
        return TC_ERR_NOMEM;
    }
    return TC_OK;
}

void tc__pset_free_all(engine_t *e, int comms_usable)
{
    eng_shared_t *sh = &tc__engine_shared;
    eng_pset_t **v;
    uint32_t i, n;

    (void)e;
    pthread_mutex_lock(&sh->mu);
    v = sh->psets;
    n = sh->npsets;
    sh->psets = NULL;
    sh->npsets = 0;
    pthread_mutex_unlock(&sh->mu);
    for (i = 0; i < n; i++) {
        if (v[i] != NULL && comms_usable) {
            tc__transport_close(&v[i]->tp); /* nothing on a non-member */
        }
        pset_free(v[i]);
    }
    free(v);
}

const int *tc__pset_node_table(engine_t *e, uint32_t id)
{
    eng_pset_t *ps = tc__pset_get(id);

    return id == 0 || ps == NULL ? e->mpi.node_of : ps->node;
}

tc_transport_t *tc__pset_transport(engine_t *e, uint32_t id)
{
    eng_pset_t *ps = tc__pset_get(id);

    if (id == 0 || ps == NULL) {
        return e->shm.route.open ? &e->shm.route.rt : &e->mpi.tp;
    }
    return ps->route.open ? &ps->route.rt : &ps->tp;
}

tc_status_t tc__pset_check(const char *fn, const char *name, uint32_t id, int has_root,
                           int root, int *size_p, int *root_index_p)
{
    eng_pset_t *ps = tc__pset_get(id);
    int rank = atomic_load_explicit(&tc__engine_shared.rank, memory_order_relaxed), i;

    if (ps == NULL) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': process set %u does not exist", fn,
                             name, id);
    }
    if (ps->index < 0) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': rank %d is not in process set %u",
                             fn, name, rank, id);
    }
    *size_p = ps->n;
    if (!has_root) {
        return TC_OK;
    }
    for (i = 0; i < ps->n; i++) {
        if (ps->ranks[i] == root) {
            *root_index_p = i;
            return TC_OK;
        }
    }
    if (id == 0) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': root %d is outside 0..%d", fn, name,
                             root, ps->n - 1);
    }
    return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': root %d is not in process set %u (a "
                         "root is a global rank)", fn, name, root, id);
}

/* ---- the public calls ------------------------------------------------------ */

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return (x > y) - (x < y);
}

/* Submits kind (a set operation of the global set) and waits for it. */
static tc_status_t run_set_op(const char *fn, tc_kind_t kind, int *ranks, int nranks,
                              int target, int *value_p)
{
    static const tc_tensor_t no_tensor = {NULL, TC_UINT8, 1, {0}};
    tc_request_t *req = NULL, *out;
    tc_status_t st;

    st = tc__request_make(fn, kind, TC_AUTO_NAME_PREFIX, &no_tensor, NULL, TC_SUM, 0, NULL,
                          NULL, &out, &req);
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
        return tc__set_error(TC_ERR_ARG, "tc_process_set_add: nranks %d is outside 1..%d",
                             nranks, size);
    }
    for (i = 0; size > 0 && i < nranks; i++) {
        if (ranks[i] < 0 || ranks[i] >= size) {
            return tc__set_error(TC_ERR_ARG, "tc_process_set_add: ranks[%d] = %d is outside "
                                 "0..%d", i, ranks[i], size - 1);
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
            return tc__set_error(TC_ERR_ARG, "tc_process_set_add: rank %d is listed twice",
                                 twice);
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
                                             : cap < 0 ? "cap is negative" : "ranks is NULL");
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
        return tc__set_error(TC_ERR_ARG, "tc_process_set_ranks: process set %d does not exist",
                             id);
    }
    return TC_OK;
}

/* ---- running the set operations (engine thread) ----------------------------- */

/* The set's node table (coll.h): for each member, the lowest member on its
 * node, computed alike by every member from the job's agreed table. NULL
 * when the job has none (every rank then uses one node's order) or memory
 * is short (the caller fails the set: a rank must not use another order). */
static int *set_node_table(engine_t *e, const eng_pset_t *ps)
{
    int *node, i, j;

    if (e->mpi.node_of == NULL || (node = malloc((size_t)ps->n * sizeof(int))) == NULL) {
        return NULL;
    }
    for (i = 0; i < ps->n; i++) {
        for (j = 0; e->mpi.node_of[ps->ranks[j]] != e->mpi.node_of[ps->ranks[i]]; j++) {
        }
        node[i] = j;
    }
    return node;
}

/* Every rank files the set rank 0 numbered (the response's value); its
 * members open its data transport, among themselves only. */
tc_status_t tc__pset_run_add(engine_t *e, tc_request_t *req, const tc_wire_response_t *r,
                             char *msg, size_t len)
{
    eng_shared_t *sh = &tc__engine_shared;
    eng_pset_t *ps;
    int filed;

    if (r->value <= 0 || tc__pset_get((uint32_t)r->value) != NULL) {
        snprintf(msg, len, "protocol error: rank 0 numbered a new process set %d", r->value);
        return TC_ERR_TRANSPORT;
    }
    ps = pset_new((uint32_t)r->value, req->set_ranks, req->nset_ranks, e->rank);
    if (ps == NULL) {
        snprintf(msg, len, "out of memory creating process set %d", r->value);
        return TC_ERR_NOMEM;
    }
    ps->e = e;
    if (ps->index >= 0) {
        /* The members' transport, over a communicator it makes from the
         * global set's. */
        if (tc__transport_mpi_open(&ps->tp, &ps->tp_mpi, e->mpi.tp_mpi.comm, ps->ranks, ps->n,
                                   PSET_CREATE_TAG, (uint32_t)e->cfg->spin,
                                   (uint32_t)e->cfg->backoff_max_us) != TC_OK) {
            snprintf(msg, len, "creating process set %d: %s", r->value, ps->tp.err);
            pset_free(ps);
            return TC_ERR_TRANSPORT;
        }
        tc__fail_hook_set_transport(e, ps);
        tc__shm_route_open(e, &ps->route, &ps->tp, ps->ranks, ps->n, ps->index, ps->id);
        ps->node = set_node_table(e, ps);
        if (ps->node == NULL && e->mpi.node_of != NULL) {
            snprintf(msg, len, "out of memory creating process set %d", r->value);
            tc__transport_close(&ps->tp);
            pset_free(ps);
            return TC_ERR_NOMEM;
        }
    }
    pthread_mutex_lock(&sh->mu);
    filed = pset_file(ps);
    pthread_mutex_unlock(&sh->mu);
    if (filed != 0) {
        tc__transport_close(&ps->tp);
        pset_free(ps);
        snprintf(msg, len, "out of memory filing process set %d", r->value);
        return TC_ERR_NOMEM;
    }
    TC_INFO("engine", "process set %d: %d ranks, this rank %s", r->value, ps->n,
            ps->index >= 0 ? "in it" : "not in it");
    return TC_OK;
}

/* Every rank forgets the set; its members close its transport. Rank 0
 * failed the set's pending names before this ran (coordinator.c). */
tc_status_t tc__pset_run_remove(engine_t *e, tc_request_t *req, const tc_wire_response_t *r,
                                char *msg, size_t len)
{
    eng_shared_t *sh = &tc__engine_shared;
    eng_pset_t *ps = req->root > 0 ? tc__pset_get((uint32_t)req->root) : NULL;

    (void)e;
    (void)r;
    if (ps == NULL) { /* rank 0 checked it exists: every rank has it */
        snprintf(msg, len, "protocol error: rank 0 removed process set %d, which this rank "
                 "does not have", req->root);
        return TC_ERR_TRANSPORT;
    }
    tc__shm_route_close(&ps->route);
    tc__transport_close(&ps->tp); /* nothing on a non-member */
    pthread_mutex_lock(&sh->mu);
    sh->psets[ps->id] = NULL;
    pthread_mutex_unlock(&sh->mu);
    TC_INFO("engine", "process set %u removed", ps->id);
    pset_free(ps);
    return TC_OK;
}
