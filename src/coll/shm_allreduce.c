/*
 * shm_allreduce.c - allreduce among the ranks of one node through the
 * node's shared-memory segment (transport/shm_seg.h), without MPI.
 *
 * The buffer goes through in chunks of one staging slot (TCOLL_SHM_SLOT_KB).
 * Chunk g of the segment's life (g counts every chunk every collective has
 * run, the same on every rank) uses slot g mod nslots of every rank. Each
 * chunk is cut into n shares, and local rank r reduces share r:
 *
 *   step  rank r                                        then stores
 *   1     waits until every rank's done >= g - nslots   -
 *         (nobody still reads slot g mod nslots)
 *   2     copies the shares of its input chunk that     arrived = g
 *         the others reduce into its slot
 *   3     waits for every rank's arrived >= g
 *   4     reduces share r (its own input from its       reduced = g
 *         buffer, the others' from their slots) into
 *         share r of its own slot, 4 KiB at a time (the
 *         result block stays in L1 through every input)
 *   5     waits for every rank's reduced >= g
 *   6     copies every share from its reducer's slot    done = g
 *         into its output
 *
 * Share r of rank r's slot holds no input (rank r reads its own from its
 * buffer), so the result can go there; share p != r of it is read only by
 * rank p. Per byte a rank copies (n-1)/n in and 1 out and reduces 1/n of
 * the chunk from n inputs. With nslots >= 2 a rank that is ahead fills its
 * next slot while the others finish the chunk before.
 *
 * Memory order: each flag is stored with release after the stores (and
 * loads) it announces, and loaded with acquire before the data it guards is
 * read or overwritten: arrived pairs step 2's copy with step 4's reads,
 * reduced pairs step 4's result with step 6's reads, and done pairs step 6's
 * reads (and step 4's) with step 2's overwrite of the slot nslots chunks
 * later.
 *
 * Reduction order: the documented one (docs/reproducibility.md): every
 * element is ((in_0 op in_1) op in_2) ... op in_n-1, local ranks left to
 * right, whatever chunk or share it falls in, so this gives the bits of
 * every other allreduce of tcoll, and every rank gets the same bits (each
 * element is reduced once, by one rank, then copied).
 *
 * Waiting uses the data transport's policy (transport/wait.h): back-off,
 * the engine's abort check, the lost-peer timeout and probe; a local peer
 * whose process is gone is reported at once. Must never read a slot before
 * its owner's flag says the data is there, or overwrite one before every
 * reader's flag says it is done.
 */
#define _GNU_SOURCE
#include "coll/coll.h"
#include "reduce/reduce.h"
#include "transport/shm_seg.h"
#include "coll/shm_sync.h"

#include <stdio.h>
#include <string.h>

#define BLOCK_BYTES                                                                                \
    4096 /* reduced through L1: the result block stays there for every rank's input */

/* Local rank p's input for chunk elements from `at` (offset in the chunk):
 * this rank's own straight from its buffer, the others' from their slots. */
static const char *input_of(const tc_shm_seg_t *s, int slot, int p, const char *in, size_t cs,
                            size_t at, size_t es)
{
    return p == s->me ? in + (cs + at) * es : tc__shm_slot(s, p, slot) + at * es;
}

/* Reduces elements [a, b) of the buffer (chunk starting at element cs, in
 * slot `slot`) into the same place of this rank's slot, in the documented
 * order (file comment), block by block, then divides for avg. */
static void reduce_share(const tc_shm_seg_t *s, int slot, const char *in, size_t cs, size_t a,
                         size_t b, tc_dtype_t dtype, tc_op_t op)
{
    const size_t es = tc_dtype_size(dtype), block = BLOCK_BYTES / es > 0 ? BLOCK_BYTES / es : 1;
    const int n = s->n;
    char *mine = tc__shm_slot(s, s->me, slot);
    size_t at;
    int p;

    for (at = a - cs; at < b - cs; at += block) {
        size_t k = b - cs - at < block ? b - cs - at : block;
        memcpy(mine + at * es, input_of(s, slot, 0, in, cs, at, es), k * es);
        for (p = 1; p < n; p++) {
            tc__reduce(dtype, op, mine + at * es, input_of(s, slot, p, in, cs, at, es), k);
        }
        if (op == TC_AVG) {
            tc__reduce_avg_finish(dtype, mine + at * es, k, n);
        }
    }
}

tc_status_t tc__shm_allreduce(tc_shm_coll_t *c, const void *src, void *buf, size_t count,
                              tc_dtype_t dtype, tc_op_t op)
{
    const tc_shm_seg_t *s = c->seg;
    const size_t es = tc_dtype_size(dtype);
    const int n = s->n, me = s->me;
    const char *in = src != NULL ? src : buf;
    char *out = buf;
    size_t chunk = s->slot_bytes / es, cs;
    tc_status_t st;

    if (n == 1 || count == 0) {
        if (in != out && count > 0) {
            memcpy(out, in, count * es);
        }
        return TC_OK;
    }
    for (cs = 0; cs < count; cs += chunk) {
        const uint64_t g = ++c->seq;
        const int slot = (int)(g % (uint64_t)s->nslots);
        size_t len = count - cs < chunk ? count - cs : chunk, soff, slen;
        char *mine = tc__shm_slot(s, me, slot);
        int p;

        if (g > (uint64_t)s->nslots &&
            (st = tc__shm_wait_all(c, TC_SHM_DONE, g - (uint64_t)s->nslots)) != TC_OK) {
            return st;
        }
        for (p = 0; p < n; p++) { /* the shares the others reduce */
            if (p != me) {
                tc__segment(len, n, p, &soff, &slen);
                memcpy(mine + soff * es, in + (cs + soff) * es, slen * es);
            }
        }
        tc__shm_publish(s, TC_SHM_ARRIVED, g);
        if ((st = tc__shm_wait_all(c, TC_SHM_ARRIVED, g)) != TC_OK) {
            return st;
        }
        tc__segment(len, n, me, &soff, &slen);
        reduce_share(s, slot, in, cs, cs + soff, cs + soff + slen, dtype, op);
        tc__shm_publish(s, TC_SHM_REDUCED, g);
        if ((st = tc__shm_wait_all(c, TC_SHM_REDUCED, g)) != TC_OK) {
            return st;
        }
        for (p = 0; p < n; p++) { /* every share, this rank's too, from its reducer */
            tc__segment(len, n, p, &soff, &slen);
            memcpy(out + (cs + soff) * es, tc__shm_slot(s, p, slot) + soff * es, slen * es);
        }
        tc__shm_publish(s, TC_SHM_DONE, g);
    }
    return TC_OK;
}
