/*
 * shm_sync.c - the flags of the node's shared-memory segment (shm_sync.h):
 * publishing this rank's progress and waiting for every other local rank's,
 * under the data transport's wait policy, reporting a local peer whose
 * process is gone at once.
 */
#define _GNU_SOURCE
#include "coll/shm_sync.h"

#include <stdio.h>

#include "transport/wait.h"

static _Atomic uint64_t *flag(const tc_shm_seg_t *s, int r, tc_shm_flag_id_t which)
{
    tc_shm_ctl_t *c = tc__shm_ctl(s, r);
    return which == TC_SHM_ARRIVED   ? &c->arrived.v
           : which == TC_SHM_REDUCED ? &c->reduced.v
                                     : &c->done.v;
}

void tc__shm_publish(const tc_shm_seg_t *s, tc_shm_flag_id_t which, uint64_t g)
{
    /* release: this rank's writes (and reads) of shared data before it
     * happen before whatever a peer does after loading g with acquire in
     * tc__shm_wait_all (the algorithms' file comments say what each flag
     * announces) */
    atomic_store_explicit(flag(s, s->me, which), g, memory_order_release);
}

int tc__shm_abort_first(tc_shm_coll_t *c)
{
    const tc_wait_policy_t *w = c->wait;
    uint64_t end = tc__now_ns() + 200000000u;
    tc_backoff_t bo;

    if (w->interrupt == NULL) {
        return 0;
    }
    tc__backoff_init(&bo, 0, 1000);
    do {
        if (w->interrupt(w->arg, c->err, sizeof(c->err))) {
            return 1;
        }
        tc__backoff_wait(&bo);
    } while (tc__now_ns() < end);
    return 0;
}

/* Waits until the flag `which` of local ranks lo..hi-1 (this rank's
 * skipped) is at least g. */
static tc_status_t wait_range(tc_shm_coll_t *c, tc_shm_flag_id_t which, int lo, int hi, uint64_t g)
{
    static const char *const what[] = {"its input", "its share", "it to finish reading"};
    const tc_shm_seg_t *s = c->seg;
    tc_waiter_t w;
    uint64_t next_pid_check = 0;
    int p = lo, r;

    tc__waiter_start(&w, c->wait);
    for (;;) {
        /* acquire: pairs with the peer's release in tc__shm_publish() */
        while (p < hi &&
               (p == s->me || atomic_load_explicit(flag(s, p, which), memory_order_acquire) >= g)) {
            p++;
            tc__waiter_progress(&w);
        }
        if (p == hi) {
            return TC_OK;
        }
        r = tc__waiter_idle(&w, c->err, sizeof(c->err));
        if (r < 0) {
            return TC_ERR_TRANSPORT;
        }
        if (w.start != 0 && tc__now_ns() >= next_pid_check) {
            next_pid_check = tc__now_ns() + 1000000u;
            if (tc__shm_peer_dead(s, p)) {
                if (tc__shm_abort_first(c)) {
                    return TC_ERR_TRANSPORT; /* it failed first, then exited: its reason */
                }
                snprintf(c->err, sizeof(c->err),
                         "lost rank %d: its process (pid %d) exited in a shared-memory "
                         "collective every rank agreed to run, waiting for %s",
                         c->ranks != NULL ? c->ranks[p] : p, (int)tc__shm_ctl(s, p)->pid,
                         what[which]);
                return TC_ERR_TRANSPORT;
            }
        }
        if (r > 0 && tc__waiter_timeout(&w, c->ranks != NULL ? c->ranks[p] : p, c->err,
                                        sizeof(c->err)) < 0) {
            return TC_ERR_TRANSPORT;
        }
    }
}

tc_status_t tc__shm_wait_all(tc_shm_coll_t *c, tc_shm_flag_id_t which, uint64_t g)
{
    return wait_range(c, which, 0, c->seg->n, g);
}

tc_status_t tc__shm_wait_rank(tc_shm_coll_t *c, tc_shm_flag_id_t which, int r, uint64_t g)
{
    return wait_range(c, which, r, r + 1, g);
}
