/*
 * cma_allreduce.c - allreduce among the ranks of one node by reading the
 * other ranks' buffers directly (process_vm_readv, "cross-memory attach"):
 * each byte crosses between processes once, instead of through the
 * segment's staging slots. For large buffers; where the kernel or a
 * container's policy forbids the call, the segment says so
 * (tc_shm_seg_t.cma) and the slot algorithm runs instead.
 *
 * Share r of the buffer is the ring's segment r (tc__segment(count, n, r)),
 * and local rank r reduces it. One collective is one step number g (see
 * shm_sync.h):
 *
 *   step  rank r                                           then stores
 *   1     writes its buffers' addresses into its control   arrived = g
 *         block
 *   2     waits for every rank's arrived >= g
 *   3     reduces share r into its output, block by block: reduced = g
 *         rank 0's input, then op= rank 1's, ..., n-1's
 *         (the others' read into a cache-sized bounce
 *         buffer), then divides (avg)
 *   4     waits for every rank's reduced >= g
 *   5     reads every other share p from rank p's output   done = g
 *         into its own
 *   6     waits for every rank's done >= g (its buffers
 *         may be reused as soon as it returns)
 *
 * That is the documented order (docs/reproducibility.md: local ranks left
 * to right), so the bits match every other allreduce's. In place, rank r
 * (r > 0) first keeps its own input block aside (rank 0's lands on it), and
 * overwrites only share r of its buffer before step 4, and no other rank
 * reads share r of its input; the other
 * shares it overwrites in step 5, after every rank has reduced (and read
 * its input). Per byte a rank reads its own input and, across processes,
 * (n-1)/n of the others' inputs and of their results: no staging copy.
 *
 * Memory order: the addresses are stored before arrived (release) and read
 * after it (acquire); reduced orders step 3's writes before step 5's reads,
 * done step 5's reads before any rank lets its buffers go.
 */
#define _GNU_SOURCE
#include "coll/shm_steps.h"
#include "coll/shm_sync.h"
#include "reduce/reduce.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define BOUNCE_BYTES (64 * 1024) /* a peer's block, read while the result block is in L1/L2 */

/* A failed read from local rank p in step g: the reason in c->err. A
 * process that is gone is lost. A live one whose buffer cannot be read has
 * left the collective: it failed (its wait saw an abort, or a lost rank)
 * and let its buffers go, so the real cause is elsewhere: wait for it (the
 * wait policy delivers the abort that rank sent, or names a lost rank),
 * with this read's failure as the reason only if none comes. */
static tc_status_t read_failed(tc_shm_coll_t *c, int p, uint64_t g, int err)
{
    char why[sizeof(c->err)];

    if (err == ESRCH || tc__shm_peer_dead(c->seg, p)) {
        if (!tc__shm_abort_first(c)) {
            snprintf(c->err, sizeof(c->err),
                     "lost rank %d: its process exited in a direct "
                     "shared-memory allreduce every rank agreed to run",
                     c->ranks != NULL ? c->ranks[p] : p);
        }
        return TC_ERR_TRANSPORT;
    }
    snprintf(why, sizeof(why),
             "reading the buffer of rank %d failed in a direct shared-memory "
             "allreduce: %s",
             c->ranks != NULL ? c->ranks[p] : p, strerror(err));
    /* every flag stays below g + 1 this step: only a failure ends the wait */
    if (tc__shm_wait_all(c, TC_SHM_DONE, g + 1) == TC_OK) {
        snprintf(c->err, sizeof(c->err), "%s", why);
    }
    return TC_ERR_TRANSPORT;
}

tc_status_t tc__cma_allreduce(tc_shm_coll_t *c, const void *src, void *buf, size_t count,
                              tc_dtype_t dtype, tc_op_t op)
{
    const tc_shm_seg_t *s = c->seg;
    const size_t es = tc_dtype_size(dtype), block = BOUNCE_BYTES / es;
    const int n = s->n, me = s->me;
    const char *in = src != NULL ? src : buf;
    char *out = buf;
    tc_shm_ctl_t *mine = tc__shm_ctl(s, me);
    char *bounce, *saved;
    const char **peer_in;
    size_t off, len, at;
    uint64_t g;
    tc_status_t st;
    int p;

    if (n == 1 || count == 0) {
        if (in != out && count > 0) {
            memcpy(out, in, count * es);
        }
        return TC_OK;
    }
    if (tc__scratch_reserve(&c->bounce, 2 * BOUNCE_BYTES + (size_t)n * sizeof(*peer_in)) != TC_OK) {
        return TC_ERR_NOMEM; /* before the step: the other ranks fail the same way or wait */
    }
    bounce = c->bounce.data;
    saved = bounce + BOUNCE_BYTES;
    peer_in = (const char **)(void *)(bounce + 2 * BOUNCE_BYTES);
    g = ++c->seq;
    mine->in_addr = (uint64_t)(uintptr_t)in;
    mine->out_addr = (uint64_t)(uintptr_t)out;
    (void)tc__shmem_ref(in, count * es, &mine->in_ref);
    (void)tc__shmem_ref(out, count * es, &mine->out_ref);
    c->loads = c->readvs = 0;
    tc__shm_publish(s, TC_SHM_ARRIVED, g);
    if ((st = tc__shm_wait_all(c, TC_SHM_ARRIVED, g)) != TC_OK) {
        return st;
    }
    tc__segment(count, n, me, &off, &len);
    for (p = 0; p < n; p++) { /* the peers' inputs where they are mapped here, else NULL */
        peer_in[p] =
            p == me || len == 0
                ? NULL
                : tc__shm_direct_map(c, p, tc__shm_ctl(s, p)->in_addr + off * es, len * es);
    }
    for (at = off; at < off + len; at += block) {
        size_t k = off + len - at < block ? off + len - at : block;
        const char *own = in + at * es;
        if (in == out && me != 0) { /* in place: rank 0's input lands on this one's */
            memcpy(saved, own, k * es);
            own = saved;
        }
        for (p = 0; p < n; p++) {
            const char *x = own;
            if (p != me && peer_in[p] != NULL) { /* mapped: read where it lies */
                c->loads++;
                x = peer_in[p] + (at - off) * es;
            } else if (p != me) {
                c->readvs++;
                /* rank 0's input straight into the output, the others' into the bounce */
                if (tc__shm_peer_read(s, p, p == 0 ? out + at * es : bounce,
                                      tc__shm_ctl(s, p)->in_addr + at * es, k * es) != 0) {
                    return read_failed(c, p, g, errno);
                }
                x = p == 0 ? out + at * es : bounce;
            }
            if (p == 0) {
                if (x != out + at * es) {
                    memcpy(out + at * es, x, k * es);
                }
            } else {
                tc__reduce(dtype, op, out + at * es, x, k);
            }
        }
        if (op == TC_AVG) {
            tc__reduce_avg_finish(dtype, out + at * es, k, n);
        }
    }
    tc__shm_publish(s, TC_SHM_REDUCED, g);
    if ((st = tc__shm_wait_all(c, TC_SHM_REDUCED, g)) != TC_OK) {
        return st;
    }
    for (p = 0; p < n; p++) {
        const char *q;
        uint64_t from;
        if (p == me) {
            continue;
        }
        tc__segment(count, n, p, &off, &len);
        from = tc__shm_ctl(s, p)->out_addr + off * es;
        if (len > 0 && (q = tc__shm_direct_map(c, p, from, len * es)) != NULL) {
            c->loads++;
            memcpy(out + off * es, q, len * es);
        } else if (len > 0) {
            c->readvs++;
            if (tc__shm_peer_read(s, p, out + off * es, from, len * es) != 0) {
                return read_failed(c, p, g, errno);
            }
        }
    }
    tc__shm_publish(s, TC_SHM_DONE, g);
    return tc__shm_wait_all(c, TC_SHM_DONE, g);
}
