/*
 * pset_path.c - each process set's data path: its transport (over a
 * communicator its members make from the global set's), its route inside
 * the node, its node table; freeing sets; and what running process_set_add
 * and _remove does, which every rank does at the same point of the agreed
 * order (docs/negotiation.md, "Process sets"). Engine thread only; the table
 * itself is pset.c's.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "util/log.h"

/* The tag MPI_Comm_create_group uses on the global data transport's
 * communicator (the parent of a set's): nothing else is in flight there
 * while every member runs the same creation. */
#define PSET_CREATE_TAG 0x7C5E

void tc__pset_free(eng_pset_t *ps)
{
    if (ps != NULL) {
        tc__shm_route_close(&ps->route); /* local memory only: safe after a failure */
        free(ps->node);
        free(ps->ranks);
        free(ps);
    }
}

void tc__pset_free_all(tc_exec_t *e, int comms_usable)
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
        tc__pset_free(v[i]);
    }
    free(v);
}

const int *tc__pset_node_table(tc_exec_t *e, uint32_t id)
{
    eng_pset_t *ps = tc__pset_get(id);

    return id == 0 || ps == NULL ? e->mpi.node_of : ps->node;
}

tc_transport_t *tc__pset_transport(tc_exec_t *e, uint32_t id)
{
    eng_pset_t *ps = tc__pset_get(id);

    if (id == 0 || ps == NULL) {
        return e->shm.route.open ? &e->shm.route.rt : &e->mpi.tp;
    }
    return ps->route.open ? &ps->route.rt : &ps->tp;
}

tc_transport_t *tc__pset_mpi_transport(tc_exec_t *e, uint32_t id)
{
    eng_pset_t *ps = tc__pset_get(id);

    return id == 0 || ps == NULL ? &e->mpi.tp : &ps->tp;
}

/* ---- running the set operations (engine thread) ----------------------------- */

/* The set's node table (coll.h): for each member, the lowest member on its
 * node, computed alike by every member from the job's agreed table. NULL
 * when the job has none (every rank then uses one node's order) or memory
 * is short (the caller fails the set: a rank must not use another order). */
static int *set_node_table(tc_exec_t *e, const eng_pset_t *ps)
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
tc_status_t tc__pset_run_add(tc_exec_t *e, tc_request_t *req, const tc_wire_response_t *r,
                             char *msg, size_t len)
{
    eng_shared_t *sh = &tc__engine_shared;
    eng_pset_t *ps;
    int filed;

    if (r->value <= 0 || tc__pset_get((uint32_t)r->value) != NULL) {
        snprintf(msg, len, "protocol error: rank 0 numbered a new process set %d", r->value);
        return TC_ERR_TRANSPORT;
    }
    ps = tc__pset_new((uint32_t)r->value, req->set_ranks, req->nset_ranks, e->rank);
    if (ps == NULL) {
        snprintf(msg, len, "out of memory creating process set %d", r->value);
        return TC_ERR_NOMEM;
    }
    ps->x = e;
    if (ps->index >= 0) {
        /* The members' transport, over a communicator it makes from the
         * global set's. */
        if (tc__transport_mpi_open(&ps->tp, &ps->tp_mpi, e->mpi.tp_mpi.comm, ps->ranks, ps->n,
                                   PSET_CREATE_TAG, (uint32_t)e->cfg->spin,
                                   (uint32_t)e->cfg->backoff_max_us) != TC_OK) {
            snprintf(msg, len, "creating process set %d: %s", r->value, ps->tp.err);
            tc__pset_free(ps);
            return TC_ERR_TRANSPORT;
        }
        tc__exec_arm(e, &ps->tp, ps);
        tc__shm_route_open(e, &ps->route, &ps->tp, ps->ranks, ps->n, ps->index, ps->id);
        ps->node = set_node_table(e, ps);
        if (ps->node == NULL && e->mpi.node_of != NULL) {
            snprintf(msg, len, "out of memory creating process set %d", r->value);
            tc__transport_close(&ps->tp);
            tc__pset_free(ps);
            return TC_ERR_NOMEM;
        }
    }
    pthread_mutex_lock(&sh->mu);
    filed = tc__pset_file(ps);
    pthread_mutex_unlock(&sh->mu);
    if (filed != 0) {
        tc__transport_close(&ps->tp);
        tc__pset_free(ps);
        snprintf(msg, len, "out of memory filing process set %d", r->value);
        return TC_ERR_NOMEM;
    }
    TC_INFO("engine", "process set %d: %d ranks, this rank %s", r->value, ps->n,
            ps->index >= 0 ? "in it" : "not in it");
    return TC_OK;
}

/* Every rank forgets the set; its members close its transport. Rank 0
 * failed the set's pending names before this ran (coordinator.c). */
tc_status_t tc__pset_run_remove(tc_exec_t *e, tc_request_t *req, const tc_wire_response_t *r,
                                char *msg, size_t len)
{
    eng_shared_t *sh = &tc__engine_shared;
    eng_pset_t *ps = req->root > 0 ? tc__pset_get((uint32_t)req->root) : NULL;

    (void)e;
    (void)r;
    if (ps == NULL) { /* rank 0 checked it exists: every rank has it */
        snprintf(msg, len,
                 "protocol error: rank 0 removed process set %d, which this rank "
                 "does not have",
                 req->root);
        return TC_ERR_TRANSPORT;
    }
    tc__shm_route_close(&ps->route);
    tc__transport_close(&ps->tp); /* nothing on a non-member */
    pthread_mutex_lock(&sh->mu);
    sh->psets[ps->id] = NULL;
    pthread_mutex_unlock(&sh->mu);
    TC_INFO("engine", "process set %u removed", ps->id);
    tc__pset_free(ps);
    return TC_OK;
}
