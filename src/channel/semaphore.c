/*
 * semaphore.c - semaphores between two ranks of a node: each side owns a
 * 64-bit counter (a line of its context's semaphore area) that the other
 * side's signals add to, and counts what its own waits have consumed
 * (expected). wait(n-th) returns once the counter reaches n.
 *
 *   signal (any thread, either process)      wait (the owner)
 *   -------------------------------------    --------------------------------
 *   value += 1           (seq_cst RMW)       expected + 1 <= value ? done
 *   waiters != 0 ?       (seq_cst load)      spin spin_ns, polling value
 *                                            (yielding on one CPU, below)
 *     seq += 1, wake seq (shared futex)      waiters += 1   (seq_cst RMW)
 *                                            s = seq; value ok ? done
 *                                            futex_wait(seq, s), re-check
 *
 * The two seq_cst pairs form a Dekker pattern: either the signal sees the
 * waiter's count and moves seq (so its futex_wait returns at once or is
 * woken), or the waiter's load of value after counting itself sees the
 * signal. A parked waiter wakes at least every TC_CHAN_PEER_CHECK_NS to
 * see whether the peer's process still exists, so a wait on a dead peer
 * ends with TC_ERR_TRANSPORT instead of hanging. A line that a device
 * handle may signal (marked by device.c: a GPU's atomic cannot wake a
 * futex) is waited on with parks of 50 us doubling to 1 ms instead.
 *
 * A peer on another node: the counter is the same line of this rank's
 * area, which this rank's proxy signals when the peer's message comes
 * (remote.c); this rank's signals are tcoll's own triggers in the proxy's
 * FIFO, sent in push order after the port channel operations before them.
 */
#define _GNU_SOURCE
#include "util/futex.h"

#include "channel/channel_internal.h"
#include "proxy/proxy_internal.h"
#include "util/backoff.h"
#include "util/status.h"

#include <sched.h>
#include <stdlib.h>

#define SEM_DEVICE_PARK_MIN_NS 50000u
#define SEM_DEVICE_PARK_MAX_NS 1000000u

void tc__sem_line_signal(tc_sem_line_t *line)
{
    /* seq_cst: the release half publishes the signaller's earlier stores to
     * the waiter's acquire load of value; seq_cst against the waiter's
     * waiters increment (the Dekker pair above). */
    atomic_fetch_add_explicit(&line->value, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&line->waiters, memory_order_seq_cst) != 0) {
        /* relaxed: seq carries no data, it only makes futex_wait(s) fail. */
        atomic_fetch_add_explicit(&line->seq, 1, memory_order_relaxed);
        tc__futex_wake_shared(&line->seq, INT_MAX);
    }
}

static int reached(tc_sem_line_t *line, uint64_t target)
{
    /* acquire: pairs with the signal's RMW, so what the peer stored before
     * signalling is visible after the wait. */
    return atomic_load_explicit(&line->value, memory_order_acquire) >= target;
}

tc_status_t tc__sem_line_wait(tc_chan_ctx_t *ctx, int peer, tc_sem_line_t *line, uint64_t target,
                              int64_t timeout_ns, const char *who)
{
    uint64_t t0 = tc__now_ns(), now, deadline, wake;
    struct timespec ts;
    uint64_t park_ns = 0;
    uint32_t s;
    int single;

    if (reached(line, target)) {
        return TC_OK;
    }
    if (!ctx->peers[peer].same_node && ctx->proxy != NULL) {
        /* The signal comes through this rank's proxy: keep it polling. */
        tc__proxy_kick(ctx->proxy, TC_CHAN_KICK_NS);
    }
    deadline = timeout_ns < 0 ? UINT64_MAX : t0 + (uint64_t)timeout_ns;
    /* Spin briefly: a signal that comes within spin_ns costs no syscall.
     * A thread that may run on one CPU only (tc__cpu_single) polls with
     * sched_yield instead, for the same time: the thread its wait needs may
     * share that CPU (a port channel's answer comes only after this rank's
     * proxy has carried out its trigger), and a yield hands it the CPU,
     * yet returns at once when no thread waits for it, so a signal from
     * another CPU is still seen within a microsecond or so. Parking at once
     * would make every wait pay a wake-up instead (~30 us on 2 KVM vCPUs:
     * a memory channel ping-pong went 0.5 -> 32 us one way). Measured with
     * 2 ranks bound to a core each (tcoll-chan-bench, one way): port
     * channel 41 -> 27 us (the idle proxy yields too: -> 1.3 us, proxy.c),
     * memory channel 0.49 -> 0.22 us. */
    single = ctx->spin_ns > 0 && tc__cpu_single(t0);
    while ((now = tc__now_ns()) - t0 < (uint64_t)ctx->spin_ns && now < deadline) {
        if (single) {
            sched_yield();
        } else {
            for (int i = 0; i < 64; i++) {
                tc__cpu_relax();
            }
        }
        if (reached(line, target)) {
            return TC_OK;
        }
    }
    for (;;) {
        if (reached(line, target)) {
            return TC_OK;
        }
        now = tc__now_ns();
        if (now >= deadline) {
            return tc__set_error(TC_ERR_TIMEOUT, "%s: no signal from rank %d within %lld ns", who,
                                 peer, (long long)timeout_ns);
        }
        if (tc__chan_peer_gone(ctx, peer)) {
            if (reached(line, target)) {
                return TC_OK;
            }
            return tc__set_error(TC_ERR_TRANSPORT,
                                 "%s: rank %d (pid %d) %s without "
                                 "signalling",
                                 who, peer, (int)ctx->peers[peer].pid,
                                 tc__chan_gone_why(ctx, peer));
        }
        wake = now + TC_CHAN_PEER_CHECK_NS < deadline ? now + TC_CHAN_PEER_CHECK_NS : deadline;
        /* relaxed: a mark set after this load is seen at the next round. */
        if (atomic_load_explicit(&line->device, memory_order_relaxed) != 0) {
            /* A device may signal this line, and it cannot wake a futex:
             * park for 50 us, doubling up to 1 ms (as an idle device proxy). */
            park_ns = park_ns == 0                            ? SEM_DEVICE_PARK_MIN_NS
                      : park_ns * 2u < SEM_DEVICE_PARK_MAX_NS ? park_ns * 2u
                                                              : SEM_DEVICE_PARK_MAX_NS;
            wake = now + park_ns < wake ? now + park_ns : wake;
        }
        /* seq_cst: the waiter's half of the Dekker pair (see the top). */
        atomic_fetch_add_explicit(&line->waiters, 1, memory_order_seq_cst);
        s = atomic_load_explicit(&line->seq, memory_order_seq_cst);
        if (!reached(line, target)) {
            ts = tc__timespec_from_ns(wake);
            (void)tc__futex_wait_shared(&line->seq, s, &ts);
        }
        atomic_fetch_sub_explicit(&line->waiters, 1, memory_order_relaxed);
    }
}

tc_status_t tc_sem_create(tc_chan_ctx_t *ctx, int peer, uint32_t id, tc_sem_t **sem_p)
{
    tc_sem_t *s;
    size_t slot;

    if (ctx == NULL || sem_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_sem_create: %s is NULL",
                             ctx == NULL ? "ctx" : "sem_p");
    }
    if (peer < 0 || peer >= ctx->size || peer == ctx->rank) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_sem_create: peer %d is not another rank (0..%d, "
                             "this is %d)",
                             peer, ctx->size - 1, ctx->rank);
    }
    if (id >= ctx->sem_ids) {
        return tc__set_error(TC_ERR_ARG, "tc_sem_create: id %u is not below sem_ids (%u)", id,
                             ctx->sem_ids);
    }
    if (!ctx->peers[peer].same_node && ctx->net == NULL) {
        return tc__set_error(TC_ERR_STATE,
                             "tc_sem_create: rank %d is on another node, and "
                             "this context has no messages between nodes",
                             peer);
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return tc__set_error(TC_ERR_NOMEM, "tc_sem_create: out of memory");
    }
    slot = (size_t)peer * ctx->sem_ids + id;
    pthread_mutex_lock(&ctx->mu);
    if (ctx->sem_taken[slot]) {
        pthread_mutex_unlock(&ctx->mu);
        free(s);
        return tc__set_error(TC_ERR_ARG,
                             "tc_sem_create: semaphore (peer %d, id %u) exists "
                             "already",
                             peer, id);
    }
    ctx->sem_taken[slot] = 1;
    /* The counter lives as long as the context and signals sent before this
     * semaphore was made count: waits go on from where the last semaphore
     * on (peer, id) stopped (0 the first time). */
    s->expected = ctx->sem_consumed[slot];
    pthread_mutex_unlock(&ctx->mu);
    s->ctx = ctx;
    s->peer = peer;
    s->id = id;
    s->in = &ctx->area[slot];
    /* Another node: NULL, and signals travel through the proxy (remote.c). */
    s->out = ctx->peers[peer].same_node
                 ? &ctx->peers[peer].area[(size_t)ctx->rank * ctx->sem_ids + id]
                 : NULL;
    *sem_p = s;
    return TC_OK;
}

void tc_sem_destroy(tc_sem_t *sem)
{
    if (sem == NULL) {
        return;
    }
    pthread_mutex_lock(&sem->ctx->mu);
    sem->ctx->sem_taken[(size_t)sem->peer * sem->ctx->sem_ids + sem->id] = 0;
    sem->ctx->sem_consumed[(size_t)sem->peer * sem->ctx->sem_ids + sem->id] = sem->expected;
    pthread_mutex_unlock(&sem->ctx->mu);
    free(sem);
}

tc_status_t tc_sem_signal(tc_sem_t *sem)
{
    if (sem == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_sem_signal: sem is NULL");
    }
    if (sem->out == NULL) {
        /* Another node: one of tcoll's own triggers, which the proxy sends
         * after everything pushed before it (remote.c). */
        tc_fifo_push(sem->ctx->fifo,
                     tc__chan_own_trigger(sem->ctx, TC_CHAN_OWN_SEM, (uint32_t)sem->peer, sem->id));
        return TC_OK;
    }
    tc__sem_line_signal(sem->out);
    return TC_OK;
}

tc_status_t tc_sem_wait(tc_sem_t *sem, int64_t timeout_ns)
{
    tc_status_t st;

    if (sem == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_sem_wait: sem is NULL");
    }
    st = tc__sem_line_wait(sem->ctx, sem->peer, sem->in, sem->expected + 1, timeout_ns,
                           "tc_sem_wait");
    if (st == TC_OK) {
        sem->expected++;
    }
    return st;
}

int tc_sem_poll(tc_sem_t *sem)
{
    if (sem == NULL || !reached(sem->in, sem->expected + 1)) {
        return 0;
    }
    sem->expected++;
    return 1;
}
