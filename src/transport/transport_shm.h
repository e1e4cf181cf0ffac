/*
 * transport_shm.h - a transport (transport.h) between the ranks of one node,
 * through the mailboxes of the node's shared-memory segment (shm_seg.h); the
 * engine puts it under a router (router.h) with the MPI transport, so that
 * the MPI-style algorithms (ring, pairwise, trees) send to a rank of the same
 * node through shared memory and to the others through MPI.
 *
 * Every ordered pair of local ranks has one mailbox: a ring of
 * TC_SHM_P2P_CELLS cells that only the first rank fills and only the second
 * empties. A message either travels in the cells, cut into pieces of a
 * cell's size (eager), or, from direct_from bytes up where process_vm_readv
 * works, as one cell holding its address, from which the receiver reads it
 * straight out of the sender's memory (direct: one copy instead of two);
 * the sender's buffer is free once that cell is emptied.
 *
 * The mailboxes belong to the segment, not to one transport: the engine's
 * transports (the global set's and each process set's) share them, which is
 * safe because the engine thread runs one collective at a time, in the same
 * order on every rank, and every transfer of a collective completes before
 * the next begins. Each cell carries its transport's id, so a message of
 * one transport arriving at another is an error with a reason, not data.
 */
#ifndef TC_TRANSPORT_SHM_H
#define TC_TRANSPORT_SHM_H

#include "transport/shm_seg.h"
#include "transport/transport.h"

typedef struct {
    const tc_shm_seg_t *seg;
    uint32_t id;         /* this transport's id, in every cell it sends */
    size_t direct_from;  /* messages of at least this many bytes go direct */
    int *local;          /* [size]: the local rank of each group rank, or -1 */
    tc_xfer_t **sendq;   /* [size]: posted sends to each peer, in order */
    tc_xfer_t **recvq;   /* [size]: posted receives from each peer */
    int broken;          /* a transfer was abandoned: the streams are out of step */
    uint64_t idle_since; /* when test last found nothing to do (0: it did something) */
    uint64_t gone_since; /* when test first found a peer with transfers gone (0: never) */
    uint64_t next_check; /* when to look for gone processes again */
} tc_transport_shm_t;

/*
 * Opens t over seg for a group of size ranks in which this rank is rank:
 * local[p] is the local rank (of seg) of group rank p, or -1 for a rank on
 * another node (not reached); local[rank] must be seg->me. id tells this
 * transport's messages from others' (the process set's id). Messages of at
 * least direct_from bytes go direct where seg->cma (SIZE_MAX: never). The
 * segment must have mailboxes (cell_bytes > 0) and outlive t. No MPI and no
 * collective call: every rank of the group opens its own. TC_OK, or
 * TC_ERR_ARG / TC_ERR_NOMEM with the reason in t->err and t not open.
 * Engine thread (in the unit tests, each rank's thread) only.
 */
tc_status_t tc__transport_shm_open(tc_transport_t *t, tc_transport_shm_t *impl,
                                   const tc_shm_seg_t *seg, int rank, int size, const int *local,
                                   uint32_t id, size_t direct_from, uint32_t spin,
                                   uint32_t backoff_max_us);

#endif
