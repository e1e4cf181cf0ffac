/*
 * shm_steps.h - the two shapes of step that the node's collectives other
 * than allreduce are made of (shm_allgather.c, shm_bcast.c,
 * shm_reducescatter.c, shm_alltoall.c), on top of the flags of shm_sync.h.
 *
 * A slot step moves at most one staging slot per rank through the
 * segment, under the slot rule of shm_allreduce.c: step g uses slot
 * g mod nslots, a rank overwrites its slot only once every rank has
 * finished reading what it held nslots steps before (done), and every rank
 * that reads slots in step g stores done = g after its last read.
 *
 *   tc__shm_slot_open    g = ++seq; waits for every done >= g - nslots;
 *                        gives this rank's slot for g
 *   (the caller fills its slot)
 *   tc__shm_slot_ready   arrived = g; waits for every arrived >= g
 *   (the caller copies from the others' slots)
 *   tc__shm_slot_close   done = g (no wait: the next writer waits for it)
 *
 * A direct step reads the other ranks' own buffers with process_vm_readv
 * (where the segment says it works: tc_shm_seg_t.cma), or with loads where
 * they lie in the owner's tc_mem_alloc regions (mapped here once and kept:
 * transport/peer_map.h), one step per collective, as cma_allreduce.c does:
 *
 *   tc__shm_direct_open   g = ++seq; this rank's buffer addresses into its
 *                         control block, then arrived = g; waits for every
 *                         arrived >= g
 *   tc__shm_direct_read   reads from another rank's buffer; a failed read
 *                         names the real cause (see shm_steps.c)
 *   tc__shm_direct_close  done = g; waits for every done >= g, so no rank
 *                         lets its buffers go while another still reads them
 *
 * A failed step says why in c->err: a lost peer, an abort, a read that
 * failed. A peer whose process is gone may have failed first and exited,
 * so an abort that has come from any rank (the wait policy's interrupt
 * hook, asked once more) is preferred as the reason over the process
 * being gone.
 *
 * Memory order: the flags' (shm_sync.h): arrived is stored with release
 * after the slot's data or the addresses it announces and loaded with
 * acquire before they are read; done is stored with release after a rank's
 * last read and loaded with acquire before a slot is overwritten or a
 * buffer let go. Engine thread only; after an error the segment must not
 * be used again (the engine stops).
 */
#ifndef TC_COLL_SHM_STEPS_H
#define TC_COLL_SHM_STEPS_H

#include "coll/shm_sync.h"

/* Starts slot step *g_p; this rank's slot for it in *slot_p. TC_OK, or
 * TC_ERR_TRANSPORT with c->err. */
tc_status_t tc__shm_slot_open(tc_shm_coll_t *c, uint64_t *g_p, char **slot_p);

/* This rank's slot for step g holds what it gives: says so, and waits
 * until every rank's does. */
tc_status_t tc__shm_slot_ready(tc_shm_coll_t *c, uint64_t g);

/* This rank has read everything it reads from the slots of step g. */
void tc__shm_slot_close(tc_shm_coll_t *c, uint64_t g);

/* Local rank p's slot for step g. */
const char *tc__shm_slot_of(const tc_shm_coll_t *c, int p, uint64_t g);

/* Starts direct step *g_p with this rank's input and output addresses
 * (either may be NULL where no one reads it), and waits until every rank
 * has published its own. */
tc_status_t tc__shm_direct_open(tc_shm_coll_t *c, const void *in, const void *out, uint64_t *g_p);

/* Local rank p's input (out == 0) or output (out == 1) address in the
 * current direct step. */
uint64_t tc__shm_direct_addr(const tc_shm_coll_t *c, int p, int out);

/* Where [from, from + bytes) of local rank p's buffers of the current
 * direct step is mapped here (it lies in one of p's tc_mem_alloc regions,
 * transport/peer_map.h), or NULL: read it with tc__shm_direct_read. */
const char *tc__shm_direct_map(tc_shm_coll_t *c, int p, uint64_t from, size_t bytes);

/* Reads bytes at address from in local rank p's process into to, in
 * direct step g of the collective named by what ("allgather"): with loads
 * where it is mapped here (tc__shm_direct_map), else process_vm_readv.
 * TC_OK, or TC_ERR_TRANSPORT with c->err naming the lost rank, the abort,
 * or, when neither comes, why the read failed. */
tc_status_t tc__shm_direct_read(tc_shm_coll_t *c, int p, uint64_t g, void *to, uint64_t from,
                                size_t bytes, const char *what);

/* Ends direct step g: this rank has read all it reads; waits until every
 * rank has, so its buffers may be reused once it returns. */
tc_status_t tc__shm_direct_close(tc_shm_coll_t *c, uint64_t g);

#endif
