/*
 * loop.c - the engine thread's loop: take submissions, move the negotiation
 * on (negotiate.c), complete control sends, look around now and then
 * (aborts, the shutdown's time limit), and wait.
 *
 * Waiting: with nothing of its own in flight and nothing the negotiation
 * waits for, the engine thread sleeps on a condition variable (woken at once
 * by a submission) and wakes every TCOLL_IDLE_POLL_MS to look for control
 * messages (a remote shutdown, a partner's part of a cycle). With work in
 * flight it polls with back-off (spin, yield, sleeps growing to
 * TCOLL_BACKOFF_MAX_US).
 * It must never block in MPI without backing off.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "engine/engine_internal.h"
#include "util/backoff.h"

/* Every ENG_POLL_NS: another rank's abort, the transfer probe's pings, a
 * shutdown past its time limit. (Lost peers and stalls are the negotiation's:
 * neg_watch.c, driven by tc__engine_neg_step.) */
static void periodic(engine_t *e)
{
    uint64_t now = tc__now_ns();

    if (now < e->loop.next_poll_ns) {
        return;
    }
    e->loop.next_poll_ns = now + ENG_POLL_NS;
    if (tc__fail_poll_abort(e)) {
        return;
    }
    tc__fail_answer_pings(e);
    if (e->life.shutdown_t0 != 0 && eng_running() &&
        now - e->life.shutdown_t0 > (uint64_t)e->cfg->shutdown_timeout_s * 1000000000ull) {
        tc__engine_fail(e, TC_ERR_TIMEOUT,
                        "the shutdown handshake with rank 0 did not finish within %d s "
                        "(TCOLL_SHUTDOWN_TIMEOUT_S)",
                        e->cfg->shutdown_timeout_s);
        return;
    }
}

static int engine_step(engine_t *e)
{
    int progress = tc__engine_neg_take_submissions(e);

    if (eng_running()) {
        progress |= tc__engine_neg_step(e);
    }
    if (eng_running() && e->x.run.ndeferred > 0) {
        progress |= tc__exec_deferred(&e->x);
    }
    if (eng_running()) {
        char msg[ENG_MSG_MAX];
        tc_status_t st = tc__fast_poll(&e->x, msg, sizeof(msg));
        if (st != TC_OK) {
            tc__engine_fail(e, st, "%s", msg);
        }
    }
    if (eng_running()) {
        periodic(e);
    }
    return progress;
}

/* Sleeps until there is something to do: see the file comment. Something to
 * do is a queued submission or a shutdown request the loop has not seen yet;
 * while this rank has requests in flight, or waits for rank 0 to end a
 * shutdown it asked for, it polls with back-off instead of the idle sleep. */
static void engine_wait(engine_t *e, int shutdown_seen)
{
    eng_shared_t *sh = &tc__engine_shared;
    int busy = tc__engine_neg_busy(e);
    uint32_t ns;
    struct timespec ts;

    pthread_mutex_lock(&sh->mu);
    if (sh->q_head != NULL || (sh->shutdown_requested && !shutdown_seen)) {
        pthread_mutex_unlock(&sh->mu);
        return;
    }
    /* the small-message path's requests need no engine step: only its polls,
     * which the periodic wake-ups make (fast.c) */
    if (sh->inflight.count == tc__fast_inflight_locked() && !shutdown_seen && !busy) {
        pthread_mutex_unlock(&sh->mu);
        /* Keep polling through the spin and yield phases first: a training
         * loop submits its next tensor within microseconds, and waking a
         * sleeping thread costs more than that. */
        if (tc__backoff_next(&e->loop.bo) == 0) {
            return;
        }
        pthread_mutex_lock(&sh->mu);
        if (sh->q_head != NULL || sh->shutdown_requested) {
            pthread_mutex_unlock(&sh->mu);
            tc__backoff_reset(&e->loop.bo);
            return;
        }
        ts = tc__deadline_after_ns((uint64_t)e->cfg->idle_poll_ms * 1000000ull);
        sh->engine_sleeping = 1;
        pthread_cond_timedwait(&sh->wake, &sh->mu, &ts);
        sh->engine_sleeping = 0;
        if (sh->q_head != NULL || sh->shutdown_requested) {
            tc__backoff_reset(&e->loop.bo); /* woken by work: poll hard again */
        } /* else a periodic look for control messages: stay in the sleep phase */
        pthread_mutex_unlock(&sh->mu);
        return;
    }
    pthread_mutex_unlock(&sh->mu);
    ns = tc__backoff_next(&e->loop.bo);
    if (ns == 0) {
        return;
    }
    pthread_mutex_lock(&sh->mu);
    if (sh->q_head == NULL && (!sh->shutdown_requested || shutdown_seen)) {
        ts = tc__deadline_after_ns(ns);
        sh->engine_sleeping = 1;
        pthread_cond_timedwait(&sh->wake, &sh->mu, &ts);
        sh->engine_sleeping = 0;
    }
    pthread_mutex_unlock(&sh->mu);
}

void tc__loop_run(engine_t *e)
{
    while (eng_running()) {
        int progress = engine_step(e);

        tc__ctrl_progress(e);
        if (!eng_running()) {
            break;
        }
        if (progress) {
            tc__backoff_reset(&e->loop.bo);
        } else {
            engine_wait(e, tc__engine_neg_shutdown_seen(e));
        }
    }
}
