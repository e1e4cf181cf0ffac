/*
 * fast_boxes.h - what the small-message path (fast.c) reads from the ranks'
 * boxes of one use: whether they describe the same call, and, when they do
 * not, the mismatch in the coordinator's words.
 */
#ifndef TC_EXEC_FAST_BOXES_H
#define TC_EXEC_FAST_BOXES_H

#include <stddef.h>

#include "transport/shm_seg.h"

/* Whether boxes a and b describe the same call (dtype, op, count, shape,
 * scaling factors). */
int tc__fast_same_call(const tc_shm_box_t *a, const tc_shm_box_t *b);

/* Into msg: "tensor 'NAME': allreduce FIELD mismatch: rank 0 has X, rank r
 * has Y, ..." for the first field in which a local rank's box `box` (parity
 * b) differs from rank 0's, naming every rank that differs there. */
void tc__fast_mismatch_text(const tc_shm_seg_t *s, int box, int b, const char *name, char *msg,
                            size_t len);

#endif
