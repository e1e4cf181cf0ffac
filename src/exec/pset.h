/*
 * pset.h - process sets below the engine thread (pset.c): the table of
 * sets, the checks a submission to a set gets, each set's data path, and the
 * runs of process_set_add and _remove.
 *
 * Set 0 is every rank. The table (eng_shared_t.psets, indexed by id) and
 * the fields of a set above `tp` are read by application threads under mu
 * and written by the engine thread under mu (a set is created and removed
 * by running the PROCESS_SET_ADD and _REMOVE kinds, at the same point of
 * the agreed order on every rank); the data path below is the engine
 * thread's alone.
 */
#ifndef TC_EXEC_PSET_H
#define TC_EXEC_PSET_H

#include <stddef.h>
#include <stdint.h>

#include "exec/request.h"
#include "transport/router.h"
#include "transport/transport_mpi.h"
#include "transport/transport_shm.h"
#include "wire/wire.h"

/* A process set's data path inside a node (shm.c): the segment's
 * point-to-point transport under a router with the set's MPI transport. */
typedef struct {
    int open;
    tc_transport_t p2p, rt;
    tc_transport_shm_t p2p_impl;
    tc_router_t rt_impl;
} eng_route_t;

struct tc_exec;
typedef struct eng_pset {
    uint32_t id;
    int n;      /* members */
    int *ranks; /* [n]: their global ranks, ascending */
    int index;  /* this rank's place among them, or -1 */
    /* auto names (queue.c) and joins, per set */
    uint64_t nbarriers; /* barriers queued since this rank's last join in the set */
    uint64_t njoins;    /* joins queued in the set: the epoch of auto names */
    uint64_t nsetops;   /* set 0: process set additions and removals queued since the
                         * last join */
    int join_pending;   /* this rank's join in the set has not completed */
    /* engine thread: the members' data path (set 0: tc_exec_t.mpi's); open
     * (its own communicator) on members only */
    tc_transport_t tp;
    tc_transport_mpi_t tp_mpi;
    eng_route_t route; /* open: the set's collectives go through route.rt */
    int *node;         /* [n] on members: the set's node table (coll.h, the
                        * documented order); NULL elsewhere */
    struct tc_exec *x; /* whose hooks its transport's waits call */
} eng_pset_t;

/* pset.c: the set with id, or NULL (mu held, or the engine thread). */
eng_pset_t *tc__pset_get(uint32_t id);
/* A set of n ranks (NULL: 0..n-1) as seen by rank; NULL when out of memory.
 * Files ps under its id (mu held); -1 when out of memory. */
eng_pset_t *tc__pset_new(uint32_t id, const int *ranks, int n, int rank);
int tc__pset_file(eng_pset_t *ps);
/* The global set, made before the engine runs and freed after it stopped
 * (its data path is tc_exec_t.mpi's). */
tc_status_t tc__pset_init_global(int size, int rank);
/* pset_path.c: frees ps (its route's local memory too; its transport is
 * closed by the caller); every set (comms_usable 0 after a failure: MPI is
 * left as it is). */
void tc__pset_free(eng_pset_t *ps);
void tc__pset_free_all(struct tc_exec *x, int comms_usable);
/* The transport set id's collectives run over, and the set's node table
 * (coll.h; NULL: one node's order). */
tc_transport_t *tc__pset_transport(struct tc_exec *x, uint32_t id);
/* Set id's transport over MPI alone (every peer over MPI, also those of
 * this node): under its router, when the set has one. Used between the
 * router's collectives only (nothing is posted on either then). */
tc_transport_t *tc__pset_mpi_transport(struct tc_exec *x, uint32_t id);
const int *tc__pset_node_table(struct tc_exec *x, uint32_t id);
/* A submission to set id (mu held): the set exists and this rank is in it,
 * and with has_root (TC_PARAM_ROOT kinds), root is a member; *size_p is the
 * set's size, *root_index_p root's place in it. TC_ERR_ARG with the error
 * set. */
tc_status_t tc__pset_check(const char *fn, const char *name, uint32_t id, int has_root, int root,
                           int *size_p, int *root_index_p);
/* The runs of process_set_add and _remove (algo_control.c), which every rank
 * makes at the same point of the agreed order. */
tc_status_t tc__pset_run_add(struct tc_exec *x, tc_request_t *req, const tc_wire_response_t *r,
                             char *msg, size_t len);
tc_status_t tc__pset_run_remove(struct tc_exec *x, tc_request_t *req, const tc_wire_response_t *r,
                                char *msg, size_t len);

#endif
