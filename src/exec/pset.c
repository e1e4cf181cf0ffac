/*
 * pset.c - the table of process sets every rank keeps and the checks a
 * submission to a set gets (each set's data path and the runs that change
 * the table are pset_path.c; the public calls engine/pset_api.c).
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

#include "exec/exec.h"
#include "kind/kind.h"
#include "util/log.h"
#include "util/status.h"

eng_pset_t *tc__pset_get(uint32_t id)
{
    eng_shared_t *sh = &tc__engine_shared;

    return id < sh->npsets ? sh->psets[id] : NULL;
}

eng_pset_t *tc__pset_new(uint32_t id, const int *ranks, int n, int rank)
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

/* Files ps under its id (mu held). -1 when out of memory. */
int tc__pset_file(eng_pset_t *ps)
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
    eng_pset_t *ps = tc__pset_new(0, NULL, size, rank);
    int rc;

    if (ps == NULL) {
        return TC_ERR_NOMEM;
    }
    pthread_mutex_lock(&sh->mu);
    rc = tc__pset_file(ps);
    pthread_mutex_unlock(&sh->mu);
    if (rc != 0) { /* no data path yet: the set's own memory only */
        free(ps->ranks);
        free(ps);
        return TC_ERR_NOMEM;
    }
    return TC_OK;
}

tc_status_t tc__pset_check(const char *fn, const char *name, uint32_t id, int has_root, int root,
                           int *size_p, int *root_index_p)
{
    eng_pset_t *ps = tc__pset_get(id);
    int rank = atomic_load_explicit(&tc__engine_shared.rank, memory_order_relaxed), i;

    if (ps == NULL) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': process set %u does not exist", fn, name,
                             id);
    }
    if (ps->index < 0) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': rank %d is not in process set %u", fn,
                             name, rank, id);
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
    return tc__set_error(TC_ERR_ARG,
                         "%s: tensor '%s': root %d is not in process set %u (a "
                         "root is a global rank)",
                         fn, name, root, id);
}
