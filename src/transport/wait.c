/*
 * wait.c - the shared wait policy (wait.h): back-off between polls, the
 * interrupt hook and the lost-peer timeout about once a millisecond.
 */
#define _GNU_SOURCE
#include "transport/wait.h"

#include <stdio.h>
#include <string.h>

#define CHECK_NS 1000000u /* how often the hooks are asked */

void tc__wait_policy_init(tc_wait_policy_t *p, uint32_t spin, uint32_t backoff_max_us)
{
    tc__backoff_init(&p->proto, spin, backoff_max_us);
    p->timeout_ns = 0;
    p->interrupt = NULL;
    p->peer_alive = NULL;
    p->rank_of = NULL;
    p->arg = NULL;
}

void tc__waiter_start(tc_waiter_t *w, const tc_wait_policy_t *p)
{
    w->p = p;
    w->bo = p->proto;
    w->start = 0;
    w->next_check = 0;
}

void tc__waiter_progress(tc_waiter_t *w)
{
    tc__backoff_reset(&w->bo);
    w->start = 0;
}

int tc__waiter_idle(tc_waiter_t *w, char *why, size_t len)
{
    uint64_t now;

    tc__backoff_wait(&w->bo);
    now = tc__now_ns();
    if (w->start == 0) {
        w->start = now;
        w->next_check = now + CHECK_NS;
    }
    if (now < w->next_check) {
        return 0;
    }
    w->next_check = now + CHECK_NS;
    if (w->p->interrupt != NULL && w->p->interrupt(w->p->arg, why, len)) {
        return -1;
    }
    return w->p->timeout_ns != 0 && now - w->start >= w->p->timeout_ns ? 1 : 0;
}

int tc__waiter_timeout(tc_waiter_t *w, int peer, char *why, size_t len)
{
    const tc_wait_policy_t *p = w->p;

    /* That peer may itself be waiting for a dead rank: if its engine still
     * answers, keep waiting (it will report the real loss). The probe may
     * name every rank that did not answer (a whole host, say). */
    char lost[160] = "";
    int peer_g = p->rank_of != NULL ? p->rank_of(p->arg, peer) : peer;

    if (p->peer_alive != NULL) {
        int alive;
        why[0] = '\0';
        alive = p->peer_alive(p->arg, peer, why, len);
        if (alive < 0) {
            return -1;
        }
        if (alive) {
            w->start = tc__now_ns();
            return 0;
        }
        snprintf(lost, sizeof(lost), "%s", why);
    }
    if (lost[0] != '\0' && strpbrk(lost, ",-") != NULL) {
        snprintf(why, len,
                 "lost ranks %s: no data from rank %d for %llu s in a collective every rank "
                 "agreed to run and no answer to a probe (the processes died, their host or its "
                 "link is down, or their engine threads are stuck)",
                 lost, peer_g, (unsigned long long)(p->timeout_ns / 1000000000u));
        return -1;
    }
    snprintf(why, len,
             "lost rank %d: no data from it for %llu s in a collective every rank agreed to "
             "run%s (the process died, its host or its link is down, or its engine thread is "
             "stuck)",
             peer_g, (unsigned long long)(p->timeout_ns / 1000000000u),
             p->peer_alive != NULL ? " and no answer to a probe" : "");
    return -1;
}
