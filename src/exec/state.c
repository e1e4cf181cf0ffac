/*
 * state.c - the one instance of what application threads and the engine
 * thread share (state.h), with its state before tc_init.
 */
#define _GNU_SOURCE
#include "exec/state.h"

eng_shared_t tc__engine_shared = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .started = PTHREAD_COND_INITIALIZER,
    .life = ENG_LIFE_NONE,
    .rank = -1,
    .size = -1,
    .local_rank = -1,
    .local_size = -1,
    .node_first = -1,
    .chan_comm = MPI_COMM_NULL,
};
