/*
 * coordinator.h - rank 0's message table: which ranks have submitted which
 * names, and the decision of what every rank runs.
 *
 * Pure bookkeeping: no MPI, no threads (the engine thread owns it), so it is
 * unit-tested on its own. A name is ready when every rank has submitted it
 * (or joined, see tc__coord_njoined);
 * ready names leave the table in the order they became ready, each as a RUN
 * response or, when the submissions disagree, an ERROR response whose text
 * names the tensor, the field, and the ranks with their values.
 */
#ifndef TC_NEG_COORDINATOR_H
#define TC_NEG_COORDINATOR_H

#include <stddef.h>

#include "wire/wire.h"

typedef struct tc_coord tc_coord_t;

#define TC_COORD_NOCACHE 0xFFu

typedef struct {
    tc_wire_response_t *resps;
    uint8_t *kinds; /* [count]: the kind of each response's name (rank 0's submission),
                     * or TC_COORD_NOCACHE: a grouped name, never cached */
    uint32_t count;
    void *entries; /* internal: storage the responses point into */
} tc_coord_batch_t;

tc_status_t tc__coord_create(int size, tc_coord_t **coord_p);
void tc__coord_destroy(tc_coord_t *c);

/* Records that rank submitted req; now is the time (the caller's clock) at
 * which a name's first submission starts its stall clock. TC_OK,
 * TC_ERR_NOMEM, or TC_ERR_ARG (with a reason in err) for a protocol
 * violation: rank out of range, or the same rank submitting a name it
 * already has pending. The table is unchanged on error. */
tc_status_t tc__coord_add_at(tc_coord_t *c, int rank, const tc_wire_request_t *req, uint64_t now,
                             char *err, size_t errlen);

/* Moves every ready name into *batch_p (zeroed first), in readiness order. */
tc_status_t tc__coord_take_ready(tc_coord_t *c, tc_coord_batch_t *batch_p);
/* The same for the first max ready names (at least one), and past max the
 * rest of a group whose first members it took: a group runs as a unit. The
 * names left stay ready, in order, for the next take. */
tc_status_t tc__coord_take_ready_max(tc_coord_t *c, size_t max, tc_coord_batch_t *batch_p);
void tc__coord_batch_free(tc_coord_batch_t *b);

/* Names every rank has submitted, not yet taken. */
size_t tc__coord_nready(const tc_coord_t *c);

/* Ranks whose join (tc_join) is in the table: while there are any, names
 * that only they lack run without them (allreduce, reducescatter, barrier:
 * the RUN response carries the tensor's description, has_desc, for them)
 * or fail with TC_ERR_STATE (the other kinds), and nothing is cached. A
 * join completes when every rank has joined; its RUN carries the rank
 * whose join came last (has_value). */
int tc__coord_njoined(const tc_coord_t *c);

/* Joins of the global set the table has taken from rank so far (rank -1:
 * from every rank together). A join counts from the moment it is in the
 * table: whatever completes because rank joined comes after it, so a later
 * join of another rank is taken after it and counts as joining later. The
 * engine publishes these counts to the small-message path (exec/fast.c),
 * whose joined ranks contribute only once their join is counted here. */
uint64_t tc__coord_joins_taken(const tc_coord_t *c, int rank);

/* Names submitted by some but not all ranks. */
size_t tc__coord_pending(const tc_coord_t *c);

/* One name still waiting for some ranks (the stall inspector's view). */
typedef struct {
    const char *name; /* NUL-terminated */
    uint32_t name_len;
    uint32_t pset;         /* its process set */
    uint8_t kind;          /* as the lowest rank that submitted it gave it */
    uint64_t since_ns;     /* when the first submission arrived (the caller's clock) */
    const uint8_t *have;   /* [size]: 1 for each rank that submitted it */
    const uint8_t *member; /* [size]: 1 for each rank of its process set */
} tc_coord_pending_t;

/* Calls fn for every waiting name; fn must not change the table. */
void tc__coord_foreach_pending(const tc_coord_t *c,
                               void (*fn)(const tc_coord_pending_t *p, void *arg), void *arg);

/* Gives up on a waiting name: it leaves the table and becomes an ERROR
 * response with status st and text (copied, at most TC_WIRE_MAX_TEXT bytes)
 * in the next batch. TC_ERR_ARG if the name is not waiting. */
tc_status_t tc__coord_expire(tc_coord_t *c, const char *name, uint32_t len, uint32_t pset,
                             tc_status_t st, const char *text);

/* A waiting name has waited since since_ns already (a cached name that
 * stalled and came back to be negotiated in full): its stall clock starts
 * then, if that is earlier. Unknown names are ignored. */
void tc__coord_backdate(tc_coord_t *c, const char *name, uint32_t len, uint64_t since_ns);

#endif
