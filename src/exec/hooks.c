/*
 * hooks.c - the engine thread's hooks on this layer's waits: every data
 * transport this layer opens (the global set's, a process set's, the nodes'
 * leaders') waits under a policy whose interrupt and lost-peer probe are
 * the engine's (tc_exec_hooks_t, exec.h). A set's transport numbers its
 * peers within the set; the engine's probe asks the global rank. Also what
 * the executor frees at the end.
 */
#define _GNU_SOURCE
#include "exec/exec.h"

#include <stdlib.h>

static int global_interrupt(void *arg, char *why, size_t len)
{
    const tc_exec_t *x = arg;

    return x->hooks.interrupt(x->hooks.arg, why, len);
}

static int global_peer_alive(void *arg, int peer, char *why, size_t len)
{
    const tc_exec_t *x = arg;

    return x->hooks.peer_alive(x->hooks.arg, peer, why, len);
}

static int set_interrupt(void *arg, char *why, size_t len)
{
    const eng_pset_t *ps = arg;

    return global_interrupt(ps->x, why, len);
}

static int set_peer_alive(void *arg, int peer, char *why, size_t len)
{
    const eng_pset_t *ps = arg;

    return peer >= 0 && peer < ps->n ? global_peer_alive(ps->x, ps->ranks[peer], why, len) : 0;
}

static int set_rank_of(void *arg, int peer)
{
    const eng_pset_t *ps = arg;

    return peer >= 0 && peer < ps->n ? ps->ranks[peer] : peer;
}

void tc__exec_arm(tc_exec_t *x, tc_transport_t *tp, eng_pset_t *ps)
{
    if (x->hooks.interrupt == NULL) {
        return; /* no engine (a test of this layer): the policy's defaults */
    }
    tp->wait.timeout_ns = x->hooks.timeout_ns;
    if (ps == NULL) {
        tp->wait.interrupt = global_interrupt;
        tp->wait.peer_alive = global_peer_alive;
        tp->wait.arg = x;
    } else {
        ps->x = x;
        tp->wait.interrupt = set_interrupt;
        tp->wait.peer_alive = set_peer_alive;
        tp->wait.rank_of = set_rank_of;
        tp->wait.arg = ps;
    }
}

void tc__exec_free(tc_exec_t *x)
{
    tc__scratch_free(&x->run.scratch);
    tc__scratch_free(&x->run.fusion);
    tc__exec_stage_free(x);
    free(x->run.deferred);
    x->run.deferred = NULL;
    x->run.ndeferred = x->run.capdeferred = 0;
}
