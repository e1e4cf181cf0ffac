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

/* At MPI_THREAD_MULTIPLE: 1, the channels' communicator written into
 * *comm_p (an MPI_Comm; this header does not include mpi.h) and its
 * largest tag into *tag_ub_p; 0 when there is none. Only the channel layer
 * uses that communicator (point to point only), from its proxy threads. */
int tc__engine_chan_comm(void *comm_p, int *tag_ub_p);
/* A channel context starts (+1) or stops (-1) using it: while any does,
 * the engine's teardown leaves MPI initialized (a proxy may still call it). */
void tc__engine_chan_use(int delta);

/* 1 when the engine has stopped on a failure (a lost rank, an abort), with
 * its message copied into msg (len bytes; msg may be NULL); else 0. */
int tc__engine_failed(char *msg, size_t len);

/* tc_allgather and tc_allreduce for tcoll's own layers: name may (and
 * should) start with "tcoll/", the reserved space, so that it can never
 * meet an application's name. */
#include "tcoll.h"
tc_status_t tc__allgather_reserved(const char *name, const tc_tensor_t *send, tc_request_t **req_p);
tc_status_t tc__allreduce_reserved(const char *name, const tc_tensor_t *send, void *recv,
                                   tc_op_t op, tc_request_t **req_p);

#endif
