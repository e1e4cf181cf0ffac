/*
 * life.c - the engine's lifecycle (exec/state.h has the diagram): every
 * transition goes through tc__life_set_locked, which refuses any move the
 * diagram does not have; and the one place that turns an error into the
 * job's failure on this rank (tc__engine_fail). The bottom of the engine's
 * files: it calls nothing of theirs.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>

#include "engine/engine_internal.h"
#include "util/log.h"

static const char *const life_names[] = {
#define LIFE_NAME(name, text) [ENG_LIFE_##name] = text,
    ENG_LIFE_MAP(LIFE_NAME)
#undef LIFE_NAME
};

#define TO(name) (1u << ENG_LIFE_##name)

/* The diagram's transitions: the states each state may move to. */
static const unsigned life_moves[ENG_LIFE_COUNT] = {
    [ENG_LIFE_NONE] = TO(STARTING),
    [ENG_LIFE_STARTING] = TO(RUNNING) | TO(START_FAILED) | TO(NONE),
    [ENG_LIFE_START_FAILED] = 0,
    [ENG_LIFE_RUNNING] = TO(TERMINATING) | TO(FAILED) | TO(ABORTED),
    [ENG_LIFE_TERMINATING] = TO(BROKEN) | TO(STOPPED),
    [ENG_LIFE_FAILED] = TO(STOPPED),
    [ENG_LIFE_ABORTED] = TO(STOPPED),
    [ENG_LIFE_BROKEN] = TO(STOPPED),
    [ENG_LIFE_STOPPED] = TO(STARTING),
};

const char *tc__life_name(eng_life_t s)
{
    return (unsigned)s < ENG_LIFE_COUNT ? life_names[s] : "?";
}

/* Moves the state to `to` (mu held). A move the diagram does not have is an
 * internal error: it is logged and the state stays. Returns 0 or -1. */
int tc__life_set_locked(eng_life_t to)
{
    eng_shared_t *sh = &tc__engine_shared;

    if (!(life_moves[sh->life] & (1u << to))) {
        TC_ERROR("engine", "internal error: lifecycle %s -> %s", tc__life_name(sh->life),
                 tc__life_name(to));
        return -1;
    }
    TC_DEBUG("engine", "%s -> %s", tc__life_name(sh->life), tc__life_name(to));
    sh->life = to;
    return 0;
}

/* The engine thread's transitions. Leaving RUNNING, and every move after
 * it, publishes e->life.status and msg: submissions fail with them from now
 * on, and tc_shutdown reports the last. */
void tc__life_enter(engine_t *e, eng_life_t to)
{
    eng_shared_t *sh = &tc__engine_shared;

    pthread_mutex_lock(&sh->mu);
    if (tc__life_set_locked(to) == 0 && to != ENG_LIFE_RUNNING && to != ENG_LIFE_START_FAILED) {
        sh->stop_status = e->life.status;
        snprintf(sh->stop_msg, sizeof(sh->stop_msg), "%s", e->life.msg);
    }
    pthread_mutex_unlock(&sh->mu);
}

/* ---- failing ------------------------------------------------------------- */

/* Stops this rank after a failure decided here (RUNNING -> FAILED): every
 * pending request fails with st and the message, and every other rank is
 * sent an abort saying so (tc__fail_send_abort, tried even when MPI itself
 * reported the error), so that nobody waits for this rank. The first cause
 * wins: a failure while the engine already stops only cuts a shutdown
 * short (TERMINATING -> BROKEN). */
void tc__engine_fail(engine_t *e, tc_status_t st, const char *fmt, ...)
{
    va_list ap;

    if (!eng_running()) {
        if (eng_life() == ENG_LIFE_TERMINATING) {
            tc__life_enter(e, ENG_LIFE_BROKEN);
        }
        return;
    }
    va_start(ap, fmt);
    vsnprintf(e->life.msg, sizeof(e->life.msg), fmt, ap);
    va_end(ap);
    e->life.status = st;
    TC_ERROR("engine", "%s", e->life.msg);
    tc__life_enter(e, ENG_LIFE_FAILED);
}
