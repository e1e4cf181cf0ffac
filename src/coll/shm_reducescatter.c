/*
 * shm_reducescatter.c - reduce-scatter by row blocks among the ranks of
 * one node, without MPI: the contract of tc__ring_reducescatter (block j,
 * as tc__row_block cuts the rows, reduced over every rank's src, into out
 * on local rank j) and its bits, two ways.
 *
 * Reduction order, the documented one (docs/reproducibility.md): every
 * element of block j is ((x[0] op x[1]) op ...) op x[n-1], local ranks left
 * to right, the running partial always tc__reduce's dst and the next input
 * its src; TC_AVG divides the sum once by n at the end
 * (tc__reduce_avg_finish). Rank j makes its own block in exactly that
 * order, so the bits are those of every other reduce-scatter of tcoll.
 *
 * Direct (tc__cma_reducescatter: where process_vm_readv works between the
 * local ranks, tc_shm_seg_t.cma), one step g for the whole collective:
 *
 *   step  rank r                                           then stores
 *   1     writes the address of its input into its         arrived = g
 *         control block
 *   2     waits for every rank's arrived >= g
 *   3     makes block r in out, 64 KiB at a time (the      done = g
 *         result piece stays in cache): rank 0's piece
 *         (read straight into out), then for p = 1, ...,
 *         n-1 reduces rank p's in (read into a bounce
 *         buffer; its own from its input), then divides
 *         (avg)
 *   4     waits for every rank's done >= g (its input may
 *         change as soon as it returns)
 *
 * Per byte of its block a rank reads each other rank's input once across
 * processes: (n-1)/n of an input in all, and no staging copy.
 *
 * Through the slots (tc__shm_reducescatter: without process_vm_readv, or
 * for small inputs), each slot is cut into n parts of P elements (part j
 * at j x P) and step k moves elements [k x P, (k+1) x P) of every block
 * (none of a block that is shorter), one slot step each (shm_steps.h), for
 * k below ceil(largest block / P):
 *
 *   step  rank r                                           then stores
 *   1     waits until no one reads its slot for this step  -
 *   2     copies piece k of every block j != r of its      arrived = g
 *         input into part j of its slot
 *   3     waits for every rank's arrived >= g
 *   4     makes piece k of block r in out: part r of rank  done = g
 *         0's slot, op= part r of rank 1's, ..., of n-1's
 *         (its own piece from its input), then divides
 *         (avg)
 *
 * Part r of rank r's slot holds nothing (rank r reads its own input from
 * its buffer). Every rank computes the same P and step count.
 *
 * Must never write to src, nor read a rank's input or slot before its
 * arrived says it is there.
 */
#define _GNU_SOURCE
#include "coll/shm_steps.h"
#include "reduce/reduce.h"

#include <string.h>

#define BOUNCE_BYTES (64 * 1024) /* a peer's piece, read while the result piece is in L1/L2 */

/* n == 1: the block is the whole input. */
static void copy_all(const void *src, void *out, size_t rows, size_t row_elems, size_t es)
{
    size_t off, len;

    tc__row_block(rows, row_elems, 1, 0, &off, &len);
    if (len > 0) {
        memcpy(out, src, len * es);
    }
}

tc_status_t tc__cma_reducescatter(tc_shm_coll_t *c, const void *src, void *out, size_t rows,
                                  size_t row_elems, tc_dtype_t dtype, tc_op_t op)
{
    const tc_shm_seg_t *s = c->seg;
    const int n = s->n, me = s->me;
    const size_t es = tc_dtype_size(dtype), block = BOUNCE_BYTES / es;
    const char *in = src;
    char *dst = out, *bounce;
    size_t off, len, most, at, k;
    tc_status_t st;
    uint64_t g;
    int p;

    if (n == 1) {
        copy_all(src, out, rows, row_elems, es);
        return TC_OK;
    }
    tc__row_block(rows, row_elems, n, 0, &off, &most); /* block 0 is a largest one */
    if (most == 0) {
        return TC_OK; /* every block is empty, on every rank alike */
    }
    if (tc__scratch_reserve(&c->bounce, BOUNCE_BYTES) != TC_OK) {
        return TC_ERR_NOMEM; /* before the step: the other ranks fail the same way or wait */
    }
    bounce = c->bounce.data;
    if ((st = tc__shm_direct_open(c, src, NULL, &g)) != TC_OK) {
        return st;
    }
    tc__row_block(rows, row_elems, n, me, &off, &len);
    for (at = 0; at < len; at += block) {
        k = len - at < block ? len - at : block;
        for (p = 0; p < n; p++) { /* rank 0's piece straight into out, the others' via bounce */
            const char *x = in + (off + at) * es;
            if (p != me) {
                st = tc__shm_direct_read(c, p, g, p == 0 ? dst + at * es : bounce,
                                         tc__shm_direct_addr(c, p, 0) + (off + at) * es, k * es,
                                         "reducescatter");
                if (st != TC_OK) {
                    return st;
                }
                x = bounce;
            }
            if (p == 0 && me == 0) {
                memcpy(dst + at * es, x, k * es);
            } else if (p > 0) {
                tc__reduce(dtype, op, dst + at * es, x, k);
            }
        }
        if (op == TC_AVG) {
            tc__reduce_avg_finish(dtype, dst + at * es, k, n);
        }
    }
    return tc__shm_direct_close(c, g);
}

tc_status_t tc__shm_reducescatter(tc_shm_coll_t *c, const void *src, void *out, size_t rows,
                                  size_t row_elems, tc_dtype_t dtype, tc_op_t op)
{
    const tc_shm_seg_t *s = c->seg;
    const int n = s->n, me = s->me;
    const size_t es = tc_dtype_size(dtype);
    const size_t part = s->slot_bytes / (size_t)n / es; /* P; >= 1 (tc__shm_kinds_fit) */
    const char *in = src;
    char *dst = out, *mine;
    size_t off, len, most, at, k, my_off, my_len;
    tc_status_t st;
    uint64_t g;
    int j, p;

    if (n == 1) {
        copy_all(src, out, rows, row_elems, es);
        return TC_OK;
    }
    tc__row_block(rows, row_elems, n, 0, &off, &most); /* block 0 is a largest one */
    tc__row_block(rows, row_elems, n, me, &my_off, &my_len);
    for (at = 0; at < most; at += part) {
        if ((st = tc__shm_slot_open(c, &g, &mine)) != TC_OK) {
            return st;
        }
        for (j = 0; j < n; j++) { /* the pieces the others reduce */
            tc__row_block(rows, row_elems, n, j, &off, &len);
            if (j != me && at < len) {
                memcpy(mine + (size_t)j * part * es, in + (off + at) * es,
                       (len - at < part ? len - at : part) * es);
            }
        }
        if ((st = tc__shm_slot_ready(c, g)) != TC_OK) {
            return st;
        }
        if (at < my_len) {
            char *piece = dst + at * es;
            const size_t mine_at = (size_t)me * part * es;
            k = my_len - at < part ? my_len - at : part;
            for (p = 0; p < n; p++) { /* ranks left to right: this rank's from its input */
                const char *x =
                    p == me ? in + (my_off + at) * es : tc__shm_slot_of(c, p, g) + mine_at;
                if (p == 0) {
                    memcpy(piece, x, k * es);
                } else {
                    tc__reduce(dtype, op, piece, x, k);
                }
            }
            if (op == TC_AVG) {
                tc__reduce_avg_finish(dtype, piece, k, n);
            }
        }
        tc__shm_slot_close(c, g);
    }
    return TC_OK;
}
