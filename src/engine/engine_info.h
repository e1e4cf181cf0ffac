/*
 * engine_info.h - what the layers above the engine (channels) may ask it
 * about the job, without its internals (or MPI's header). Valid once
 * tc_init has returned TC_OK; any thread.
 */
#ifndef TC_ENGINE_INFO_H
#define TC_ENGINE_INFO_H

/* The lowest rank on this rank's node (real or pretend: TCOLL_RANKS_PER_NODE),
 * so two ranks share a node when their values are equal; -1 when unknown
 * (before tc_init, or learning it failed: then treat every other rank as on
 * another node). */
int tc__engine_node_first(void);

/* 1 when MPI runs at MPI_THREAD_MULTIPLE (threads other than the engine's may
 * call MPI), else 0. */
int tc__engine_thread_multiple(void);

/* tc_allgather and tc_allreduce for tcoll's own layers: name may (and
 * should) start with "tcoll/", the reserved space, so that it can never
 * meet an application's name. */
#include "tcoll.h"
tc_status_t tc__allgather_reserved(const char *name, const tc_tensor_t *send,
                                   tc_request_t **req_p);
tc_status_t tc__allreduce_reserved(const char *name, const tc_tensor_t *send, void *recv,
                                   tc_op_t op, tc_request_t **req_p);

#endif
