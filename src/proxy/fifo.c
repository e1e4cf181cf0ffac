/*
 * fifo.c - the trigger FIFO: a bounded, lock-free queue of 128-bit triggers
 * that any number of threads push into and exactly one thread (the proxy)
 * takes out of, in position order. It must never lose, duplicate or reorder
 * a trigger, never reserve a value of the trigger (all 128 bits are payload),
 * and never spin without bound: every waiter in here spins briefly, then
 * parks on a futex.
 *
 * Layout. N = size slots (a power of two, 1..2^20) of 32 bytes each:
 *
 *     | seq (u32) | waiters (u32) | fst (u64) | snd (u64) | pad (u64) |
 *
 * plus three counters on their own cache lines: head (the next position to
 * hand to a producer), tail (the next position the consumer will pop) and
 * the consumer's doorbell (parked, bell). Positions are 64-bit and count
 * every push since create; position p lives in slot p mod N. The counters
 * and the slots share one page-aligned allocation of whole pages, which a
 * GPU can map as it is (tc_fifo_device_view; the device push, which follows
 * the protocol below without parking or ringing, is in tcoll_fifo_device.h).
 *
 * Slot protocol. A slot's seq says whose turn it is, counted in positions:
 *
 *     seq == 2p      the slot is free for position p: p's producer may write
 *     seq == 2p + 1  the slot holds the trigger at position p: the consumer
 *                    may read it once tail == p
 *
 * and moves around one lap per visit:
 *
 *   step  who                 does                                   seq afterwards
 *   ----  ------------------  -------------------------------------  --------------
 *    0    tc_fifo_create      slot i starts free for position i      2i
 *    1    producer            takes position p from head (fetch_add, 2p (waits
 *                             or CAS in try_push), waits for 2p      until so)
 *    2    producer            writes fst, snd; publishes             2p + 1
 *    3    consumer (poll)     sees 2p + 1 at tail == p, reads it     2p + 1
 *    4    consumer (pop)      tail = p + 1; frees the slot for the   2(p + N)
 *                             position one lap later
 *
 * seq is 32 bits and wraps; the protocol only compares it with the value
 * expected for a known position, and the distance between the two is bounded
 * by twice the number of positions handed out but not yet popped, far below
 * 2^31. Doubling the position (instead of Vyukov's seq == p / p + 1) keeps
 * "free for p + 1" and "holds p" apart even when N == 1.
 *
 * Because triggers are carried in plain memory next to seq and never tested
 * for a marker value, every 128-bit value, all zeros and all ones included,
 * is a trigger. Positions come from one counter, so they are unique and
 * increase in push order, and the consumer takes them in that order: the
 * triggers of one producer are handled in the order it pushed them.
 *
 * Waiting. Three kinds of thread wait here. Each spins first (TCOLL_SPIN
 * polls through tc__backoff_next, or PROXY_SPIN_NS in the proxy) and then
 * parks on a futex, announcing itself before a last check (seq_cst on both
 * sides, so one of the two always sees the other). The consumer reads its
 * doorbell ticket before it announces itself: any producer may take the
 * announcement and ring, and that ring must count (tc__fifo_park_prepare). There is deliberately no
 * sched_yield phase in between: the event waited for has a precise waker,
 * and on a loaded machine one yield can hand the core away for a whole time
 * slice (milliseconds) while a parked thread is woken, and usually run, at
 * once. On 2 cores with ~10 runnable processes, 2 producers pushing 100 k
 * triggers through a 1-slot FIFO to the proxy took 2-5 s without yields and
 * 25-38 s or more with yield phases (2-4 yields per wait). A producer or
 * tc_fifo_sync on a thread that may run on one CPU only does not spin at
 * all (tc__backoff_init, tc__cpu_single): there a spin can only keep the
 * thread it waits for (the proxy, which may share that CPU) from running.
 * With the default TCOLL_SPIN=0 no producer spins anyway. Nor does a proxy
 * on one CPU: it polls a few times, then parks (PROXY_SINGLE_POLLS).
 *
 *   waiter                   parks on            announced in       woken by
 *   -----------------------  ------------------  -----------------  -----------------------
 *   producer of p, full      slot seq, bit(p)    slot waiters (+1)  the pop of p - N
 *   tc_fifo_sync(p)          slot seq, bit(p+N)  slot waiters       the pop of p
 *                                                (+1 << 16)
 *   consumer (proxy), empty  bell                parked             a push (if parked),
 *                                                                   a stop
 *
 * bit(p) is one of 32 futex bitset bits chosen by p's lap, so a pop wakes
 * only the threads waiting for what it did (and, rarely, one 32 laps away,
 * which re-checks and sleeps again). The proxy defers producer wakes and pays
 * them in batches, since each costs it a syscall (see tc__fifo_pop_ex): every
 * N/4 pops, whenever it finds the FIFO empty, and when it stops. A deferred
 * wake cannot be lost: the consumer cannot pass the position of a parked
 * producer, so at the latest it finds the FIFO empty there.
 *
 * The price of never missing a wake-up is one seq_cst store per push and one
 * per pop (an xchg on x86); the wakes themselves (syscalls) happen only when
 * someone is parked.
 */
#define _GNU_SOURCE
#include "util/futex.h"

#include "proxy/fifo_internal.h"
#include "util/backoff.h"
#include "util/config.h"
#include "util/log.h"
#include "util/status.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The allocation unit of a FIFO: a page, so a GPU may map it whole. */
static size_t fifo_page_size(void)
{
    long page = sysconf(_SC_PAGESIZE);

    return page >= TC_CACHE_LINE && (page & (page - 1)) == 0 ? (size_t)page : 4096u;
}

tc_status_t tc_fifo_create(uint32_t size, tc_fifo_t **fifo_p)
{
    tc_fifo_t *f;
    size_t bytes, page;
    uint64_t i;

    if (fifo_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_fifo_create: fifo_p is NULL");
    }
    if (size == 0 || size > TC_FIFO_MAX_SIZE || (size & (size - 1)) != 0) {
        return tc__set_error(TC_ERR_ARG, "tc_fifo_create: size %u is not a power of two in 1..%u",
                             size, TC_FIFO_MAX_SIZE);
    }
    /* The struct (a whole number of cache lines, by its alignas), then the
     * slots, rounded up to whole pages: see struct tc_fifo. */
    page = fifo_page_size();
    bytes = sizeof(*f) + (size_t)size * sizeof(tc__fifo_slot_t);
    bytes = (bytes + page - 1) / page * page;
    f = aligned_alloc(page, bytes);
    if (f == NULL) {
        goto err;
    }
    memset(f, 0, bytes);
    f->slots = (tc__fifo_slot_t *)(void *)((char *)f + sizeof(*f));
    f->map_bytes = bytes;
    f->size = size;
    f->mask = (uint64_t)size - 1;
    f->room_mask = f->size >= 4 ? f->size / 4 - 1 : 0;
    f->room_owed = 0;
    f->room_from = 0;
    f->shift = 0;
    while ((1ull << f->shift) < f->size) {
        f->shift++;
    }
    for (i = 0; i < f->size; i++) {
        /* relaxed: the FIFO is not shared yet; whoever receives the pointer
         * receives it through some synchronization of its own. */
        atomic_store_explicit(&f->slots[i].seq, tc__fifo_seq_free(i), memory_order_relaxed);
        atomic_store_explicit(&f->slots[i].waiters, 0, memory_order_relaxed);
    }
    atomic_store_explicit(&f->head, 0, memory_order_relaxed);
    atomic_store_explicit(&f->tail, 0, memory_order_relaxed);
    atomic_store_explicit(&f->parked, 0, memory_order_relaxed);
    atomic_store_explicit(&f->bell, 0, memory_order_relaxed);
    atomic_store_explicit(&f->device, 0, memory_order_relaxed);
    *fifo_p = f;
    return TC_OK;

err:
    TC_ERROR("proxy", "tc_fifo_create: cannot allocate a FIFO of %u slots", size);
    return tc__set_error(TC_ERR_NOMEM,
                         "tc_fifo_create: cannot allocate a FIFO of %u slots (%zu bytes)", size,
                         bytes);
}

void tc_fifo_destroy(tc_fifo_t *fifo)
{
    if (fifo == NULL) {
        return;
    }
    free(fifo); /* the slots too: one allocation */
}

void tc__fifo_wake_slot(tc_fifo_t *f, tc__fifo_slot_t *s, uint64_t pos)
{
    tc__futex_wake(&s->seq, INT_MAX, tc__fifo_bit(f, pos));
}

void tc__fifo_pay_owed(tc_fifo_t *f)
{
    uint64_t q, tail = tc__fifo_tail(f);
    tc__fifo_slot_t *s;

    for (q = f->room_from; q < tail; q++) {
        s = &f->slots[q & f->mask];
        /* relaxed: the pop of q made the seq_cst load that paired with the
         * waiters; this later load sees that count or a newer one, and a
         * waiter that has left since needs no wake. */
        if (atomic_load_explicit(&s->waiters, memory_order_relaxed) != 0) {
            tc__fifo_wake_slot(f, s, q + f->size);
        }
    }
    f->room_owed = 0;
}

void tc__fifo_ring(tc_fifo_t *f)
{
    /* release: pairs with the acquire load of bell in tc__fifo_park_prepare
     * and tc__fifo_park: what the ringer published before ringing (a trigger,
     * a stop request) is visible to a consumer that sees the new bell. */
    atomic_fetch_add_explicit(&f->bell, 1, memory_order_release);
    tc__futex_wake(&f->bell, 1, TC_FUTEX_BITSET_ALL);
}

void tc__fifo_park(tc_fifo_t *f, uint32_t ticket)
{
    /* acquire: as in tc__fifo_park_prepare. Every reason to wake rings the
     * bell, so waiting for it to move is enough; the futex re-checks bell
     * against ticket atomically with going to sleep, so a ring between this
     * load and the sleep is not lost. */
    while (atomic_load_explicit(&f->bell, memory_order_acquire) == ticket) {
        (void)tc__futex_wait(&f->bell, ticket, TC_FUTEX_BITSET_ALL, NULL);
    }
    tc__fifo_park_cancel(f);
}

int tc__fifo_park_timed(tc_fifo_t *f, uint32_t ticket, uint64_t timeout_ns)
{
    struct timespec ts = tc__timespec_from_ns(tc__now_ns() + timeout_ns);
    int rung = 0;

    for (;;) {
        /* acquire: as in tc__fifo_park. The futex compares bell with ticket
         * as it goes to sleep, so a ring after this load is not lost; the
         * deadline is absolute (CLOCK_MONOTONIC), so spurious wakes do not
         * extend it. */
        if (atomic_load_explicit(&f->bell, memory_order_acquire) != ticket) {
            rung = 1;
            break;
        }
        if (tc__futex_wait(&f->bell, ticket, TC_FUTEX_BITSET_ALL, &ts) != 0 && errno == ETIMEDOUT) {
            /* acquire: as above; a ring that raced with the timeout counts. */
            rung = atomic_load_explicit(&f->bell, memory_order_acquire) != ticket;
            break;
        }
    }
    tc__fifo_park_cancel(f);
    return rung;
}

/* tc_fifo_sync's park: sleeps on the slot of pos until that slot's seq
 * changes or deadline_ns (CLOCK_MONOTONIC, UINT64_MAX = none) passes, unless
 * pos turns out popped after announcing itself. The pop of pos wakes
 * bit(pos + N). */
static void fifo_park_sync(tc_fifo_t *f, uint64_t pos, uint64_t deadline_ns)
{
    tc__fifo_slot_t *s = &f->slots[pos & f->mask];
    struct timespec ts;
    uint32_t seq;

    /* seq_cst (both): the waiter's half of the Dekker pair with the pop's
     * seq_cst store of seq + seq_cst load of waiters. Either the pop sees our
     * count and wakes us, or we see its new seq here (or a later one) and do
     * not sleep; and if seq changes after this load, the futex compare
     * refuses to sleep. */
    atomic_fetch_add_explicit(&s->waiters, TC_FIFO_WAITER_SYNC, memory_order_seq_cst);
    seq = atomic_load_explicit(&s->seq, memory_order_seq_cst);
    /* acquire: pairs with the pop's release store of tail, which comes before
     * its store of seq; once the load above saw that seq (or a later one,
     * stored by a producer that acquired it), this sees the new tail. */
    if (atomic_load_explicit(&f->tail, memory_order_acquire) <= pos) {
        if (deadline_ns == UINT64_MAX) {
            (void)tc__futex_wait(&s->seq, seq, tc__fifo_bit(f, pos + f->size), NULL);
        } else {
            ts = tc__timespec_from_ns(deadline_ns);
            (void)tc__futex_wait(&s->seq, seq, tc__fifo_bit(f, pos + f->size), &ts);
        }
    }
    /* relaxed: a pop that still sees our count only makes one needless wake. */
    atomic_fetch_sub_explicit(&s->waiters, TC_FIFO_WAITER_SYNC, memory_order_relaxed);
}

/* Producer holding position pos: waits (spin, then park) until its slot is free. */
static void fifo_wait_room(tc_fifo_t *f, tc__fifo_slot_t *s, uint64_t pos)
{
    const tc_config_t *cfg = tc__config();
    uint32_t want = tc__fifo_seq_free(pos), seq;
    tc_backoff_t b;

    tc__backoff_init(&b, (uint32_t)cfg->spin, (uint32_t)cfg->backoff_max_us);
    /* acquire: pairs with the pop's store of seq (release part of seq_cst):
     * the consumer's reads of the previous trigger in this slot happen before
     * our writes of the next one. */
    while (atomic_load_explicit(&s->seq, memory_order_acquire) != want) {
        if (b.iter < b.spin) {
            (void)tc__backoff_next(&b); /* spin */
            continue;
        }
        /* Spun long enough: park on the slot until the pop of pos - N wakes
         * bit(pos). seq_cst (increment and seq load): our half of the Dekker
         * pair with the pop's seq_cst store of seq + load of waiters: either
         * the pop counts us (and wakes us, or owes us a wake), or we see the
         * free slot here and do not sleep; and if seq changes after this
         * load, the futex compare refuses to sleep. */
        atomic_fetch_add_explicit(&s->waiters, TC_FIFO_WAITER_PRODUCER, memory_order_seq_cst);
        seq = atomic_load_explicit(&s->seq, memory_order_seq_cst);
        if (seq != want) {
            (void)tc__futex_wait(&s->seq, seq, tc__fifo_bit(f, pos), NULL);
        }
        /* relaxed: a pop that still counts us only makes one needless wake. */
        atomic_fetch_sub_explicit(&s->waiters, TC_FIFO_WAITER_PRODUCER, memory_order_relaxed);
    }
}

/* Producer owning free slot s for position pos: writes and publishes the trigger. */
static inline void fifo_publish(tc_fifo_t *f, tc__fifo_slot_t *s, uint64_t pos,
                                tc_trigger_t trigger)
{
    s->fst = trigger.fst;
    s->snd = trigger.snd;
    /* seq_cst: the release part pairs with the consumer's acquire load in
     * poll (it reads fst/snd only after seeing this); seq_cst with the load
     * of parked below against the consumer's seq_cst store of parked + load
     * of seq in tc__fifo_park_prepare/tc__fifo_ready (a Dekker pair): either
     * we see parked == 1 and ring, or the consumer sees this trigger. */
    atomic_store_explicit(&s->seq, tc__fifo_seq_full(pos), memory_order_seq_cst);
    if (atomic_load_explicit(&f->parked, memory_order_seq_cst) != 0 &&
        /* acquire: picks the one producer that rings, and pairs with the
         * release part of the consumer's store of parked, so our ring comes
         * after the ticket it took before that store (tc__fifo_park_prepare)
         * and wakes it. The ring itself orders the data (release on bell). */
        atomic_exchange_explicit(&f->parked, 0, memory_order_acquire) != 0) {
        tc__fifo_ring(f);
    }
}

uint64_t tc_fifo_push(tc_fifo_t *fifo, tc_trigger_t trigger)
{
    tc__fifo_slot_t *s;
    uint64_t pos;

    if (fifo == NULL) {
        tc__set_error(TC_ERR_ARG, "tc_fifo_push: fifo is NULL");
        return UINT64_MAX;
    }
    /* relaxed: head only hands out unique numbers (the RMW guarantees that);
     * who may write the slot is decided by seq, which carries the ordering. */
    pos = atomic_fetch_add_explicit(&fifo->head, 1, memory_order_relaxed);
    s = &fifo->slots[pos & fifo->mask];
    /* acquire: as in fifo_wait_room (the fast case of the same wait). */
    if (atomic_load_explicit(&s->seq, memory_order_acquire) != tc__fifo_seq_free(pos)) {
        fifo_wait_room(fifo, s, pos);
    }
    fifo_publish(fifo, s, pos, trigger);
    return pos;
}

int tc_fifo_try_push(tc_fifo_t *fifo, tc_trigger_t trigger, uint64_t *pos_p)
{
    tc__fifo_slot_t *s;
    uint64_t pos;
    int32_t diff;

    if (fifo == NULL) {
        tc__set_error(TC_ERR_ARG, "tc_fifo_try_push: fifo is NULL");
        return 0;
    }
    /* relaxed: a stale head only makes the CAS below fail and retry. */
    pos = atomic_load_explicit(&fifo->head, memory_order_relaxed);
    for (;;) {
        s = &fifo->slots[pos & fifo->mask];
        /* acquire: as in fifo_wait_room; if we win the CAS, the consumer's
         * reads of this slot's previous trigger happen before our writes. */
        diff =
            (int32_t)(atomic_load_explicit(&s->seq, memory_order_acquire) - tc__fifo_seq_free(pos));
        if (diff == 0) {
            /* relaxed: as in tc_fifo_push; the seq we just saw cannot move
             * away from "free for pos" unless someone owns pos, and that
             * requires head to have passed pos, which fails this CAS. */
            if (atomic_compare_exchange_weak_explicit(&fifo->head, &pos, pos + 1,
                                                      memory_order_relaxed, memory_order_relaxed)) {
                break;
            }
        } else if (diff < 0) {
            return 0; /* position pos - N is not popped yet: full */
        } else {
            /* Someone took pos already; try the current head. relaxed: as above. */
            pos = atomic_load_explicit(&fifo->head, memory_order_relaxed);
        }
    }
    fifo_publish(fifo, s, pos, trigger);
    if (pos_p != NULL) {
        *pos_p = pos;
    }
    return 1;
}

int tc_fifo_poll(tc_fifo_t *fifo, tc_trigger_t *trigger_p)
{
    if (fifo == NULL || trigger_p == NULL) {
        tc__set_error(TC_ERR_ARG, "tc_fifo_poll: %s is NULL", fifo == NULL ? "fifo" : "trigger_p");
        return 0;
    }
    return tc__fifo_poll(fifo, trigger_p);
}

void tc_fifo_pop(tc_fifo_t *fifo)
{
    uint64_t tail;

    if (fifo == NULL) {
        tc__set_error(TC_ERR_ARG, "tc_fifo_pop: fifo is NULL");
        return;
    }
    tail = tc__fifo_tail(fifo);
    /* acquire: as in tc__fifo_poll; this only guards against a pop with no
     * trigger ready, which would free a slot a producer is still writing. */
    if (atomic_load_explicit(&fifo->slots[tail & fifo->mask].seq, memory_order_acquire) !=
        tc__fifo_seq_full(tail)) {
        tc__set_error(TC_ERR_STATE, "tc_fifo_pop: no trigger ready at position %llu",
                      (unsigned long long)tail);
        TC_WARN("proxy", "tc_fifo_pop without a ready trigger at position %llu; ignored",
                (unsigned long long)tail);
        return;
    }
    /* batch 0: a caller of the public API may stop polling now, so every
     * wake is paid at once. */
    tc__fifo_pop_ex(fifo, 0);
}

tc_status_t tc_fifo_sync(tc_fifo_t *fifo, uint64_t pos, int64_t timeout_ns)
{
    const tc_config_t *cfg;
    uint64_t deadline, head, now;
    tc_backoff_t b;

    if (fifo == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_fifo_sync: fifo is NULL");
    }
    /* relaxed: a push that returned pos to anyone did its fetch_add before
     * that, so by coherence this load sees a head above pos. */
    head = atomic_load_explicit(&fifo->head, memory_order_relaxed);
    if (pos >= head) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_fifo_sync: position %llu was never pushed (next position is %llu)",
                             (unsigned long long)pos, (unsigned long long)head);
    }
    cfg = tc__config();
    tc__backoff_init(&b, (uint32_t)cfg->spin, (uint32_t)cfg->backoff_max_us);
    deadline = timeout_ns < 0 ? UINT64_MAX : tc__now_ns() + (uint64_t)timeout_ns;
    for (;;) {
        /* acquire: pairs with the release store of tail in pop; the proxy
         * runs the handler before it pops, so the handler's effects are
         * visible to our caller once this returns. */
        if (atomic_load_explicit(&fifo->tail, memory_order_acquire) > pos) {
            return TC_OK;
        }
        now = deadline == UINT64_MAX ? 0 : tc__now_ns();
        if (now >= deadline) {
            return tc__set_error(
                TC_ERR_TIMEOUT,
                "tc_fifo_sync: trigger at position %llu not handled within %lld ns "
                "(%llu popped so far)",
                (unsigned long long)pos, (long long)timeout_ns,
                (unsigned long long)atomic_load_explicit(&fifo->tail, memory_order_relaxed));
        }
        if (b.iter < b.spin) {
            (void)tc__backoff_next(&b); /* spin */
        } else {
            fifo_park_sync(fifo, pos, deadline);
        }
    }
}
