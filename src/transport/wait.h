/*
 * wait.h - the one wait, interrupt and timeout policy of every transport
 * and every shared-memory algorithm: poll, back off (util/backoff.h: spin,
 * yield, park), and about every millisecond of waiting ask whether the wait
 * must end (an abort from another rank) and whether the peer waited for has
 * been silent past the timeout (a lost peer, probed before it is declared
 * lost). A transport says how to poll; this file says how to wait.
 *
 * Usage, in the loop of a wait that polls something:
 *
 *     tc_waiter_t w;
 *     tc__waiter_start(&w, policy);
 *     while (!poll()) {
 *         int r = tc__waiter_idle(&w, why, len);
 *         if (r < 0) return give_up;              // interrupted: why says why
 *         if (r > 0 && tc__waiter_timeout(&w, peer, why, len) < 0) return give_up;
 *     }
 *
 * Never blocks without backing off; touches nothing but the policy's hooks.
 */
#ifndef TC_TRANSPORT_WAIT_H
#define TC_TRANSPORT_WAIT_H

#include <stddef.h>
#include <stdint.h>

#include "util/backoff.h"

typedef struct tc_wait_policy {
    tc_backoff_t proto; /* back-off settings for waits */
    /* A wait that sees no progress for timeout_ns gives up and names the
     * peer it was waiting for (a lost peer). 0: never. */
    uint64_t timeout_ns;
    /* Called about every millisecond of waiting; a nonzero return ends the
     * wait with the text it wrote into why (the engine looks for another
     * rank's abort here). NULL: none. */
    int (*interrupt)(void *arg, char *why, size_t len);
    /* Asked, at a timeout, whether the silent peer (a rank of the waiting
     * group) still answers: 1 yes (the wait goes on), 0 no (it is lost; why
     * may get every job-wide rank that did not answer, as "2-3"), -1 the wait
     * must end with why. NULL: a timeout always means lost. */
    int (*peer_alive)(void *arg, int peer, char *why, size_t len);
    /* The job-wide rank of the group's peer, for messages. NULL: the same. */
    int (*rank_of)(void *arg, int peer);
    void *arg; /* for the three */
} tc_wait_policy_t;

/* One wait in progress under a policy. */
typedef struct {
    const tc_wait_policy_t *p;
    tc_backoff_t bo;
    uint64_t start;      /* when the wait (or its last progress) began; 0 before the first idle */
    uint64_t next_check; /* when the hooks are next asked */
} tc_waiter_t;

/* A policy that backs off with spin polls then sleeps up to backoff_max_us,
 * never times out and has no hooks. */
void tc__wait_policy_init(tc_wait_policy_t *p, uint32_t spin, uint32_t backoff_max_us);

void tc__waiter_start(tc_waiter_t *w, const tc_wait_policy_t *p);

/* The poll made progress (some of the wait is done): the back-off and the
 * timeout start again. */
void tc__waiter_progress(tc_waiter_t *w);

/* The poll found nothing: backs off one step. Returns 0 (poll again), -1
 * (the interrupt hook ended the wait: why written), or 1 (silent for the
 * policy's timeout: the caller names the peer it waits for and calls
 * tc__waiter_timeout). */
int tc__waiter_idle(tc_waiter_t *w, char *why, size_t len);

/* At a timeout, waiting for peer: probes it (the policy's peer_alive).
 * Returns 0 when it still answers (the timeout starts again: poll on) or
 * -1 with why written: the peer is lost, or the probe ended the wait. */
int tc__waiter_timeout(tc_waiter_t *w, int peer, char *why, size_t len);

#endif
