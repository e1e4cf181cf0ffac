/*
 * shm_setup.h - making and unmapping the node's shared-memory segment
 * (shm_seg.h) over the node's local MPI communicator; shm_seg.c. Kept apart
 * from shm_seg.h so that the algorithms using the segment need no MPI.
 */
#ifndef TC_TRANSPORT_SHM_SETUP_H
#define TC_TRANSPORT_SHM_SETUP_H

#include <mpi.h>

#include "transport/shm_seg.h"

/* Makes and maps the node's segment over the local communicator (every
 * rank of local must call it, with the same parameters). TC_OK on every
 * local rank, or an error on every one, with why written (the first failing
 * rank's reason) and seg left empty. */
tc_status_t tc__shm_seg_open(MPI_Comm local, const tc_shm_params_t *p, tc_shm_seg_t *seg, char *why,
                             size_t len);

/* The parameters the knobs give (TCOLL_SHM, _SLOT_KB, _SLOTS, _FAST_BYTES,
 * _FAST_NAMES): what tc_init makes the segment with, and tcoll-info too. */
struct tc_config;
tc_shm_params_t tc__shm_params(const struct tc_config *cfg);

/* Unmaps the segment (the memory goes when the last local rank unmaps). */
void tc__shm_seg_close(tc_shm_seg_t *seg);

#endif
