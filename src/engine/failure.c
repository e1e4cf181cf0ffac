/*
 * failure.c - what the engine does when something goes wrong: stopping
 * after a failure, telling the other ranks (aborts), hearing theirs, and
 * deciding that a silent rank is lost.
 *
 * A rank that fails (MPI error, out of memory, protocol error, a lost peer)
 * sends every other rank an abort (BYE with a terminate record, tag
 * ENG_TAG_ABORT) carrying its reason, fails what it has, and leaves MPI
 * unfinalized. Every rank looks for aborts each millisecond, in its loop and
 * inside data transfers (the transport's interrupt hook), and stops with
 * "rank N stopped: <reason>". Inside a transfer that makes no progress for
 * TCOLL_PEER_TIMEOUT_S the peer is probed (an XPING on the control
 * communicator, which a live engine answers even while it waits inside a
 * transfer of its own) before it is declared lost; the negotiation finds
 * lost ranks by itself (docs/negotiation.md, "Lost ranks"), and its probes
 * are answered inside transfers too. The first cause wins; nothing here may
 * block without a bound.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "util/log.h"
#include "util/ranks.h"

/* Looks for another rank's abort. Returns 1 when one arrived (RUNNING ->
 * ABORTED, with that rank's reason; during the shutdown TERMINATING ->
 * BROKEN) or this rank has already failed. */
int tc__fail_poll_abort(engine_t *e)
{
    tc_wire_msg_t msg;
    int src, got;

    if (eng_broken()) {
        return 1;
    }
    got = tc__ctrl_recv(e, MPI_ANY_SOURCE, ENG_TAG_ABORT, &msg, &src);
    if (got <= 0) {
        return got < 0;
    }
    if (eng_running()) {
        e->life.status = msg.type == TC_WIRE_BYE && (msg.flags & TC_WIRE_F_TERMINATE)
                             ? (tc_status_t)msg.term_status
                             : TC_ERR_TRANSPORT;
        snprintf(e->life.msg, sizeof(e->life.msg), "rank %d stopped: %.*s", src,
                 (int)msg.term_text_len, msg.term_text != NULL ? msg.term_text : "");
        TC_ERROR("engine", "%s", e->life.msg);
        tc__life_enter(e, ENG_LIFE_ABORTED);
    } else {
        tc__life_enter(e, ENG_LIFE_BROKEN);
    }
    tc__wire_msg_free(&msg);
    return 1;
}

/* Answers other ranks' liveness probes: a live engine, even one waiting
 * inside a transfer, says so. */
void tc__fail_answer_pings(engine_t *e)
{
    tc_wire_msg_t msg, pong = {0};
    int src;

    pong.type = TC_WIRE_REQUESTS;
    while (!eng_broken() && tc__ctrl_recv(e, MPI_ANY_SOURCE, ENG_TAG_XPING, &msg, &src) == 1) {
        tc__wire_msg_free(&msg);
        tc__ctrl_send(e, &pong, src, src, -1, ENG_TAG_XPONG);
    }
}

/* The executor calls this while it waits (a transfer, the fast path): an
 * abort from another rank ends the wait with that rank's reason; probes are
 * answered meanwhile. */
static int exec_interrupt(void *arg, char *why, size_t len)
{
    engine_t *e = arg;

    if (!tc__fail_poll_abort(e)) {
        tc__fail_answer_pings(e);
        tc__engine_neg_answer_probes(e);
        tc__ctrl_progress(e);
        return 0;
    }
    snprintf(why, len, "%s", e->life.msg);
    return 1;
}

/* Before a rank is declared lost: does its engine still answer? A rank
 * waiting for a third, dead one looks silent but is not lost. Every other
 * rank is asked at the same time, so that a loss names every lost rank (a
 * host that went down takes all of its ranks with it). Returns 1 (peer
 * alive), 0 (no answer within the grace time: why gets the ranks that did
 * not answer, as "2-3"), -1 (an abort arrived, or this rank failed). The
 * grace covers an idle engine's poll interval. */
static int probe_peer(engine_t *e, int peer, char *why, size_t len)
{
    tc_wire_msg_t ping = {0}, msg;
    tc_backoff_t bo;
    uint64_t deadline = tc__now_ns() + eng_probe_grace_ns(e->cfg);
    uint8_t *answered = calloc((size_t)e->size, 1);
    int src, waiting = e->size - 1, alive = 0;

    if (answered == NULL) {
        snprintf(why, len, "%d", peer); /* the peer alone, then */
    } else {
        answered[e->rank] = 1;
    }
    while (tc__ctrl_recv(e, MPI_ANY_SOURCE, ENG_TAG_XPONG, &msg, &src) == 1) {
        tc__wire_msg_free(&msg); /* late answers to an earlier probe */
    }
    ping.type = TC_WIRE_REQUESTS;
    if (answered != NULL) {
        tc__ctrl_send(e, &ping, 0, e->size - 1, e->rank, ENG_TAG_XPING);
    } else {
        tc__ctrl_send(e, &ping, peer, peer, -1, ENG_TAG_XPING);
    }
    tc__backoff_init(&bo, 0, 1000);
    while (tc__now_ns() < deadline && waiting > 0) {
        if (tc__fail_poll_abort(e) || eng_broken()) {
            snprintf(why, len, "%s", e->life.msg);
            free(answered);
            return -1;
        }
        tc__fail_answer_pings(e);
        tc__ctrl_progress(e);
        while (tc__ctrl_recv(e, MPI_ANY_SOURCE, ENG_TAG_XPONG, &msg, &src) == 1) {
            tc__wire_msg_free(&msg);
            alive |= src == peer;
            if (answered != NULL && src >= 0 && src < e->size && !answered[src]) {
                answered[src] = 1;
                waiting--;
            }
        }
        if (alive) {
            break; /* the others' answers are taken by a later probe */
        }
        tc__backoff_wait(&bo);
    }
    if (!alive && answered != NULL) {
        tc__format_ranks(answered, e->size, 0, why, len);
    }
    free(answered);
    return alive;
}

/* peer: a global rank (the executor maps a set's ranks). */
static int exec_peer_alive(void *arg, int peer, char *why, size_t len)
{
    engine_t *e = arg;

    if (peer < 0 || peer >= e->size) {
        snprintf(why, len, "%d", peer);
        return 0;
    }
    return probe_peer(e, peer, why, len);
}

void tc__fail_hooks(engine_t *e, tc_exec_hooks_t *hooks)
{
    hooks->arg = e;
    hooks->interrupt = exec_interrupt;
    hooks->peer_alive = exec_peer_alive;
    hooks->timeout_ns = (uint64_t)e->cfg->peer_timeout_s * 1000000000ull;
}

/* Tells every other rank why this rank stopped, so that none of them waits
 * for it until a timeout. Best effort: the sends get a bounded time. */
void tc__fail_send_abort(engine_t *e)
{
    tc_wire_msg_t out = {0};
    tc_backoff_t bo;
    uint64_t deadline = tc__now_ns() + 2000000000ull;

    out.type = TC_WIRE_BYE;
    out.flags = TC_WIRE_F_TERMINATE;
    out.term_status = (uint8_t)e->life.status;
    out.term_text = e->life.msg;
    out.term_text_len = (uint32_t)strnlen(e->life.msg, TC_WIRE_MAX_TEXT);
    tc__ctrl_send(e, &out, 0, e->size - 1, e->rank, ENG_TAG_ABORT);
    tc__backoff_init(&bo, 0, 1000);
    while (tc__ctrl_progress(e) > 0 && tc__now_ns() < deadline) {
        tc__backoff_wait(&bo);
    }
}
