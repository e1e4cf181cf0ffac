/*
 * shm_sync.h - what the shared-memory algorithms (shm_allreduce.c,
 * cma_allreduce.c) share: each local rank's three progress flags in the
 * segment (transport/shm_seg.h) and the wait for every other rank's.
 *
 * A flag only grows: it holds the number of the last step (a chunk, or a
 * whole collective) for which this rank has done what the flag announces.
 * Every rank runs the same collectives in the same order, so the numbers
 * agree (tc_shm_coll_t.seq counts them). Engine thread only.
 */
#ifndef TC_COLL_SHM_SYNC_H
#define TC_COLL_SHM_SYNC_H

#include "coll/coll.h"

typedef enum {
    TC_SHM_ARRIVED, /* this rank's input (or its buffers' addresses) is there */
    TC_SHM_REDUCED, /* this rank's share of the result is there */
    TC_SHM_DONE     /* this rank has finished reading the others' data */
} tc_shm_flag_id_t;

/* Stores g in this rank's flag `which` (release). */
void tc__shm_publish(const tc_shm_seg_t *s, tc_shm_flag_id_t which, uint64_t g);

/* Waits until every other local rank's flag `which` is at least g
 * (acquire). TC_OK, or TC_ERR_TRANSPORT with c->err: the wait policy's
 * interrupt (an abort) or timeout (a lost peer), or a peer whose process
 * has exited. */
tc_status_t tc__shm_wait_all(tc_shm_coll_t *c, tc_shm_flag_id_t which, uint64_t g);

/* A local peer's process is gone: did it fail first and tell the others?
 * Asks the wait policy's interrupt hook (an abort from another rank) for up
 * to 200 ms: 1 with that reason in c->err, else 0 (the peer is lost). */
int tc__shm_abort_first(tc_shm_coll_t *c);

/* The same wait for local rank r's flag alone. */
tc_status_t tc__shm_wait_rank(tc_shm_coll_t *c, tc_shm_flag_id_t which, int r, uint64_t g);

#endif
