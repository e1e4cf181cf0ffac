/*
 * stage_pipe.h - a device tensor staged through host memory in chunks, so
 * that its copies overlap the host collective (docs/gpu.md, "Data paths").
 *
 * The tensor's bytes are cut into chunks; chunk i goes through host slot
 * i % TC_STAGE_SLOTS: copied in from the device (while the host runs the
 * chunks before it), handed to the chunk function (a host collective over
 * the slot, in place), and copied back to the device (while the host runs
 * the chunks after it). The copies are queued, not waited for, except where
 * a slot is needed: before the host reads a slot its copy in is done, and
 * before a slot takes a new chunk the copy back of its last one is done.
 * Copies in run TC_STAGE_AHEAD chunks ahead of the host.
 *
 * No CUDA here: the copies go through a copier (device_pipe.c gives one
 * over tcoll's copy streams; the unit test one that copies late), so the
 * schedule is tested on any machine. No MPI, no engine state.
 */
#ifndef TC_EXEC_STAGE_PIPE_H
#define TC_EXEC_STAGE_PIPE_H

#include <stddef.h>

#include "tcoll.h"

#define TC_STAGE_SLOTS 4 /* host buffers of one chunk each */
#define TC_STAGE_AHEAD 2 /* copies in queued ahead of the chunk the host runs */

/* Copies between the device and the host slots. copy queues one (to_device:
 * slot -> device, else device -> slot) and returns without waiting; wait
 * returns once every copy queued for slot in that direction is done. Both
 * return TC_OK or a status with the reason in why. */
typedef struct {
    void *ctx;
    tc_status_t (*copy)(void *ctx, int slot, int to_device, void *dst, const void *src,
                        size_t bytes, char *why, size_t len);
    tc_status_t (*wait)(void *ctx, int slot, int to_device, char *why, size_t len);
} tc_stage_copier_t;

/* What the host does with one chunk: the slot holds bytes of the tensor
 * from byte off on (copied in, when the run has a source); it leaves the
 * chunk's result there (copied back, when the run has a destination).
 * TC_OK, or a status with the reason in why. */
typedef tc_status_t (*tc_stage_chunk_fn)(void *arg, void *slot, size_t off, size_t bytes, char *why,
                                         size_t len);

typedef struct {
    const void *src; /* device bytes read into the slots (NULL: none, the chunk
                      * function fills them: a broadcast's receiver) */
    void *dst;       /* device bytes the slots' results go to (NULL: none: a
                      * broadcast's root); may be src (in place) */
    size_t bytes;
    size_t chunk;                /* > 0: the slots' size */
    void *slots[TC_STAGE_SLOTS]; /* host memory of chunk bytes each */
} tc_stage_run_t;

/* Runs every chunk of r through fn in order, overlapping the copies as
 * above. Returns once every copy it queued is done, on success and on
 * failure alike (the slots may be reused then; a wait that fails is tried
 * once more, and where that fails too the copier is broken: CUDA's errors
 * there are the device's). On failure, the first failing status with its
 * reason in why; the chunks after it are not run. */
tc_status_t tc__stage_pipeline(const tc_stage_copier_t *cp, const tc_stage_run_t *r,
                               tc_stage_chunk_fn fn, void *arg, char *why, size_t len);

/* The number of chunks of bytes (0 for 0 bytes). */
size_t tc__stage_chunks(size_t bytes, size_t chunk);

#endif
