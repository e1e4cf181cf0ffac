/*
 * shm_steps.c - the slot steps and direct steps that the node's
 * allgather, broadcast, reducescatter and alltoall are made of
 * (shm_steps.h says what each call does and what it pairs with). Knows no
 * collective: only step numbers, slots, addresses and flags. Must never
 * let a rank overwrite a slot another rank may still read, or return from
 * a direct step while another rank may still read its buffers.
 */
#define _GNU_SOURCE
#include "coll/shm_steps.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "transport/wait.h"

/* A step failed with st, c->err saying why. A rank that failed first told
 * every rank its reason (an abort, which the wait policy's interrupt hook
 * delivers) and may have exited since, and a process that exited looks
 * lost from here: an abort that has come names the real cause, so it wins
 * over c->err. The hook is asked once more here, since a wait that saw a
 * peer's process gone ends before it asks. */
static tc_status_t real_cause(tc_shm_coll_t *c, tc_status_t st)
{
    const tc_wait_policy_t *w = c->wait;
    char why[sizeof(c->err)];

    if (st == TC_ERR_TRANSPORT && w->interrupt != NULL && w->interrupt(w->arg, why, sizeof(why))) {
        snprintf(c->err, sizeof(c->err), "%s", why);
    }
    return st;
}

/* tc__shm_wait_all, with the real cause of a failure (real_cause). */
static tc_status_t wait_all(tc_shm_coll_t *c, tc_shm_flag_id_t which, uint64_t g)
{
    return real_cause(c, tc__shm_wait_all(c, which, g));
}

tc_status_t tc__shm_slot_open(tc_shm_coll_t *c, uint64_t *g_p, char **slot_p)
{
    const tc_shm_seg_t *s = c->seg;
    const uint64_t g = ++c->seq, nslots = (uint64_t)s->nslots;
    tc_status_t st;

    /* the last readers of this slot were in step g - nslots: each stored
     * done >= that step after its last read (release); the wait loads the
     * flags with acquire, so their reads happen before this rank's writes */
    if (g > nslots && (st = wait_all(c, TC_SHM_DONE, g - nslots)) != TC_OK) {
        return st;
    }
    *g_p = g;
    *slot_p = tc__shm_slot(s, s->me, (int)(g % nslots));
    return TC_OK;
}

tc_status_t tc__shm_slot_ready(tc_shm_coll_t *c, uint64_t g)
{
    /* release: the slot's contents before arrived = g; the peers' wait
     * loads it with acquire before they copy from the slot */
    tc__shm_publish(c->seg, TC_SHM_ARRIVED, g);
    return wait_all(c, TC_SHM_ARRIVED, g);
}

void tc__shm_slot_close(tc_shm_coll_t *c, uint64_t g)
{
    /* release: this rank's reads of the slots before done = g; pairs with
     * the acquire wait of tc__shm_slot_open nslots steps later */
    tc__shm_publish(c->seg, TC_SHM_DONE, g);
}

const char *tc__shm_slot_of(const tc_shm_coll_t *c, int p, uint64_t g)
{
    return tc__shm_slot(c->seg, p, (int)(g % (uint64_t)c->seg->nslots));
}

tc_status_t tc__shm_direct_open(tc_shm_coll_t *c, const void *in, const void *out, uint64_t *g_p)
{
    const tc_shm_seg_t *s = c->seg;
    tc_shm_ctl_t *mine = tc__shm_ctl(s, s->me);
    const uint64_t g = ++c->seq;
    tc_status_t st;

    /* plain stores: no rank reads them before it has loaded arrived >= g
     * (acquire), which is stored after them (release); no rank still
     * reads the previous step's: this rank passed that step's done wait */
    mine->in_addr = (uint64_t)(uintptr_t)in;
    mine->out_addr = (uint64_t)(uintptr_t)out;
    (void)tc__shmem_ref(in, 1, &mine->in_ref);
    (void)tc__shmem_ref(out, 1, &mine->out_ref);
    c->loads = c->readvs = 0;
    tc__shm_publish(s, TC_SHM_ARRIVED, g);
    if ((st = wait_all(c, TC_SHM_ARRIVED, g)) != TC_OK) {
        return st;
    }
    *g_p = g;
    return TC_OK;
}

uint64_t tc__shm_direct_addr(const tc_shm_coll_t *c, int p, int out)
{
    const tc_shm_ctl_t *ctl = tc__shm_ctl(c->seg, p);

    return out ? ctl->out_addr : ctl->in_addr;
}

/* A failed read from local rank p in step g: the reason in c->err. A
 * process that is gone is lost (unless an abort names another cause:
 * tc__shm_abort_first). A live one whose buffer cannot be read has
 * left the collective: it failed (its wait saw an abort, or a lost rank)
 * and let its buffers go, so the real cause is elsewhere: wait for it (the
 * wait policy delivers the abort that rank sent, or names a lost rank),
 * with this read's failure as the reason only if none comes. The same
 * rule as cma_allreduce.c's. */
static tc_status_t read_failed(tc_shm_coll_t *c, int p, uint64_t g, int err, const char *what)
{
    const int rank = c->ranks != NULL ? c->ranks[p] : p;
    char why[sizeof(c->err)];

    if (err == ESRCH || tc__shm_peer_dead(c->seg, p)) {
        /* it may have failed first (for a lost third rank) and exited:
         * its abort, which can arrive a little after the exit, wins */
        if (!tc__shm_abort_first(c)) {
            snprintf(c->err, sizeof(c->err),
                     "lost rank %d: its process exited in a direct "
                     "shared-memory %s every rank agreed to run",
                     rank, what);
        }
        return TC_ERR_TRANSPORT;
    }
    snprintf(why, sizeof(why),
             "reading the buffer of rank %d failed in a direct shared-memory "
             "%s: %s",
             rank, what, strerror(err));
    /* every done flag stays below g + 1 during step g: only a failure
     * ends this wait */
    if (wait_all(c, TC_SHM_DONE, g + 1) == TC_OK) {
        snprintf(c->err, sizeof(c->err), "%s", why);
    }
    return TC_ERR_TRANSPORT;
}

const char *tc__shm_direct_map(tc_shm_coll_t *c, int p, uint64_t from, size_t bytes)
{
    const tc_shm_ctl_t *ctl = tc__shm_ctl(c->seg, p);
    const int n = c->seg->n;
    const char *q = tc__peer_map(&c->maps, n, p, (pid_t)ctl->pid, &ctl->in_ref, from, bytes);

    return q != NULL ? q
                     : tc__peer_map(&c->maps, n, p, (pid_t)ctl->pid, &ctl->out_ref, from, bytes);
}

tc_status_t tc__shm_direct_read(tc_shm_coll_t *c, int p, uint64_t g, void *to, uint64_t from,
                                size_t bytes, const char *what)
{
    const char *q;

    if (bytes == 0) {
        return TC_OK;
    }
    if ((q = tc__shm_direct_map(c, p, from, bytes)) != NULL) {
        c->loads++;
        memcpy(to, q, bytes);
        return TC_OK;
    }
    c->readvs++;
    if (tc__shm_peer_read(c->seg, p, to, from, bytes) == 0) {
        return TC_OK;
    }
    return read_failed(c, p, g, errno, what);
}

tc_status_t tc__shm_direct_close(tc_shm_coll_t *c, uint64_t g)
{
    /* release: this rank's reads of the others' buffers before done = g;
     * the wait's acquire loads order every rank's reads before this rank
     * returns and lets its buffers go */
    tc__shm_publish(c->seg, TC_SHM_DONE, g);
    return wait_all(c, TC_SHM_DONE, g);
}
