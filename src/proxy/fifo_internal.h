/*
 * fifo_internal.h - the trigger FIFO's layout and the consumer's fast path,
 * shared by fifo.c (the public tc_fifo_* calls) and proxy.c (the service
 * thread, which inlines poll/pop and parks through the doorbell below).
 *
 * The slot protocol and the reason for every memory order are explained at
 * the top of fifo.c; the comments here only name which side does what.
 * Nothing in this header may block or allocate.
 */
#ifndef TC_PROXY_FIFO_INTERNAL_H
#define TC_PROXY_FIFO_INTERNAL_H

#include "tcoll.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#define TC_FIFO_MAX_SIZE (1u << 20)
#define TC_CACHE_LINE 64

/* One trigger's place: 32 bytes, so two slots share a cache line and none straddles one. */
typedef struct {
    _Atomic uint32_t seq;     /* 2*pos: free for position pos; 2*pos+1: holds trigger pos */
    _Atomic uint32_t waiters; /* threads parked on seq: producers (low 16 bits), syncs (high) */
    uint64_t fst, snd;        /* the trigger; plain memory, ordered by seq */
    uint64_t pad;
} tc__fifo_slot_t;

_Static_assert(sizeof(tc__fifo_slot_t) == 32, "a slot is 32 bytes");

/*
 * One allocation of whole pages holds this struct and, right after it, the
 * slots (map_bytes in all), so that a GPU can map the head counter and the
 * slots with one registration that shares no page with anything else
 * (tc_fifo_device_view, tcoll_fifo_device.h).
 */
struct tc_fifo {
    /* Read-only after create; shared by every thread without traffic. */
    alignas(TC_CACHE_LINE) tc__fifo_slot_t *slots; /* in the same pages, after this struct */
    uint64_t size;                                 /* slots, a power of two */
    uint64_t mask;                                 /* size - 1 */
    uint64_t room_mask; /* batch - 1: the proxy wakes producers every batch pops */
    uint32_t shift;     /* log2(size): pos >> shift is the lap */
    size_t map_bytes;   /* bytes of the allocation that starts at this struct */

    /* Producers' ticket counter: the next position to hand out. */
    alignas(TC_CACHE_LINE) _Atomic uint64_t head;

    /* Consumer's counter: positions below it have been popped. Written only by
     * the consumer; read by tc_fifo_sync callers. */
    alignas(TC_CACHE_LINE) _Atomic uint64_t tail;
    /* Consumer only: parked producers are owed wakes for the slots freed by
     * the pops of positions room_from .. tail - 1 (room_owed != 0). */
    int room_owed;
    uint64_t room_from;

    /* The consumer's doorbell (an eventcount): parked is 1 while the consumer
     * is about to sleep or sleeping on bell; a waker bumps bell and wakes it. */
    alignas(TC_CACHE_LINE) _Atomic uint32_t parked;
    _Atomic uint32_t bell;
    /* 1 once tc_fifo_device_view handed out a view: producers that cannot
     * ring the bell may push, so the consumer parks with a time limit. */
    _Atomic uint32_t device;
};

/* Slot waiters: a producer counts 1, a tc_fifo_sync caller 1 << 16. */
#define TC_FIFO_WAITER_PRODUCER 1u
#define TC_FIFO_WAITER_SYNC (1u << 16)

/* The futex bitset bit of position pos: one of 32, chosen by its lap. The pop
 * of pos wakes bit(pos + N): the producer of pos + N and the syncs on pos, and
 * not the threads parked on the same slot for other laps (except, rarely,
 * ones 32 laps apart, which re-check and sleep again). */
static inline uint32_t tc__fifo_bit(const tc_fifo_t *f, uint64_t pos)
{
    return 1u << ((pos >> f->shift) & 31u);
}

static inline uint32_t tc__fifo_seq_free(uint64_t pos)
{
    return (uint32_t)(pos * 2u);
}

static inline uint32_t tc__fifo_seq_full(uint64_t pos)
{
    return (uint32_t)(pos * 2u + 1u);
}

void tc__fifo_wake_slot(tc_fifo_t *f, tc__fifo_slot_t *s, uint64_t pos);
void tc__fifo_pay_owed(tc_fifo_t *f);

/* Consumer only: pays the producer wakes still owed, now. */
static inline void tc__fifo_flush(tc_fifo_t *f)
{
    if (f->room_owed) {
        tc__fifo_pay_owed(f);
    }
}

/* Consumer only: positions popped so far. */
static inline uint64_t tc__fifo_tail(tc_fifo_t *f)
{
    /* relaxed: the consumer reads back its own writes. */
    return atomic_load_explicit(&f->tail, memory_order_relaxed);
}

/* Consumer only: 1 and *trigger_p set if the trigger at tail is published. */
static inline int tc__fifo_poll(tc_fifo_t *f, tc_trigger_t *trigger_p)
{
    uint64_t tail = tc__fifo_tail(f);
    tc__fifo_slot_t *s = &f->slots[tail & f->mask];

    /* acquire: pairs with the producer's publishing store of seq (release part
     * of its seq_cst store), so fst/snd below read what that producer wrote. */
    if (atomic_load_explicit(&s->seq, memory_order_acquire) != tc__fifo_seq_full(tail)) {
        tc__fifo_flush(f); /* out of work: no deferred wake may wait longer */
        return 0;
    }
    trigger_p->fst = s->fst;
    trigger_p->snd = s->snd;
    return 1;
}

/*
 * Consumer only, after a successful tc__fifo_poll: hands the slot to the
 * position one lap later and wakes whoever parked waiting for that. Syncs are
 * woken at once. Producers too when batch is 0 (tc_fifo_pop: its caller may
 * stop polling at any time). With batch 1 (the proxy) a producer's wake is
 * owed and paid every room_mask + 1 pops, when the consumer finds the FIFO
 * empty (tc__fifo_poll), or when it stops (tc__fifo_flush): each wake costs
 * the consumer a syscall, and with a wake per pop 4 producers on 2 cores
 * moved a third of the triggers. The batch is a quarter of the FIFO, so the
 * FIFO is still three quarters full when they wake.
 */
static inline void tc__fifo_pop_ex(tc_fifo_t *f, int batch)
{
    uint64_t tail = tc__fifo_tail(f);
    tc__fifo_slot_t *s = &f->slots[tail & f->mask];
    uint32_t w;

    /* release: pairs with the acquire load of tail in tc_fifo_sync; it is
     * stored before seq so a sync waiter that sees the new seq (acquire) also
     * sees the new tail and does not go back to sleep. */
    atomic_store_explicit(&f->tail, tail + 1, memory_order_release);
    /* seq_cst: the release part pairs with the producers' acquire loads of seq
     * (our reads of fst/snd happen before their next write); seq_cst with the
     * waiters load below against the waiters increment + seq_cst load of seq
     * of a parking thread (a Dekker pair): either we see its count and wake
     * it, or it sees the new seq and does not sleep. */
    atomic_store_explicit(&s->seq, tc__fifo_seq_free(tail + f->size), memory_order_seq_cst);
    w = atomic_load_explicit(&s->waiters, memory_order_seq_cst);
    if (w != 0) {
        if (!batch || w >= TC_FIFO_WAITER_SYNC) {
            tc__fifo_wake_slot(f, s, tail + f->size);
        } else if (!f->room_owed) {
            f->room_owed = 1;
            f->room_from = tail;
        }
    }
    if (f->room_owed && ((tail + 1) & f->room_mask) == 0) {
        tc__fifo_pay_owed(f);
    }
}

static inline void tc__fifo_pop(tc_fifo_t *f)
{
    tc__fifo_pop_ex(f, 1);
}

/*
 * Consumer parking, in three steps:
 *   ticket = tc__fifo_park_prepare(f);
 *   if (tc__fifo_ready(f) || <other reason to wake, e.g. a stop request>)
 *       tc__fifo_park_cancel(f);
 *   else
 *       tc__fifo_park(f, ticket);
 * Another reason to wake must be published before tc__fifo_ring() is called.
 */
static inline uint32_t tc__fifo_park_prepare(tc_fifo_t *f)
{
    uint32_t ticket;

    /* The ticket comes first. A producer that sees parked == 1 takes it
     * (exchange) and rings, whichever slot it filled; the ring must then move
     * the bell past our ticket. Announcing first would let a producer of a
     * later position ring between the announcement and the ticket: its ring
     * would be counted in the ticket and wake nobody, while the producer of
     * the position we wait for, finding parked == 0, would not ring either
     * (a lost wake-up: seen as a proxy asleep on a full FIFO).
     * acquire: pairs with the release increment in tc__fifo_ring, so if the
     * ticket already counts a ring, what the ringer published is visible. */
    ticket = atomic_load_explicit(&f->bell, memory_order_acquire);
    /* seq_cst: pairs with the seq_cst publishing store + seq_cst load of
     * parked in push (a Dekker pair): either the producer sees parked == 1 and
     * rings, or our seq_cst load of seq in tc__fifo_ready sees its trigger.
     * Its release part also orders the ticket load before the ring of a
     * producer whose exchange (acquire) takes this 1. */
    atomic_store_explicit(&f->parked, 1, memory_order_seq_cst);
    return ticket;
}

/* Consumer only: the seq_cst half of the Dekker pair above. */
static inline int tc__fifo_ready(tc_fifo_t *f)
{
    uint64_t tail = tc__fifo_tail(f);
    tc__fifo_slot_t *s = &f->slots[tail & f->mask];

    return atomic_load_explicit(&s->seq, memory_order_seq_cst) == tc__fifo_seq_full(tail);
}

static inline void tc__fifo_park_cancel(tc_fifo_t *f)
{
    /* relaxed: a producer that still sees 1 only rings once more (a spurious wake). */
    atomic_store_explicit(&f->parked, 0, memory_order_relaxed);
}

/* Sleeps until the bell moves past ticket (returns at once if it already has). */
void tc__fifo_park(tc_fifo_t *f, uint32_t ticket);

/* As tc__fifo_park, but for timeout_ns at most. Returns 1 if the bell moved
 * past ticket, 0 if the time ran out first. */
int tc__fifo_park_timed(tc_fifo_t *f, uint32_t ticket, uint64_t timeout_ns);

/* Consumer: 1 if device producers (which never ring) may push, see
 * tc_fifo_device_view. */
static inline int tc__fifo_device_mode(tc_fifo_t *f)
{
    /* relaxed: tc_fifo_device_view stores 1, then rings the bell (release);
     * a consumer that parks reads this after taking its ticket (acquire on
     * bell), so either it sees the 1 or its ticket predates that ring and the
     * ring wakes it, after which it looks again. */
    return atomic_load_explicit(&f->device, memory_order_relaxed) != 0;
}

/* Wakes the consumer if it is parked or about to park. Any thread. */
void tc__fifo_ring(tc_fifo_t *f);

#endif
