/*
 * fifo_device.c - the view of a FIFO for producers outside the process's own
 * threads (a CUDA kernel; tcoll_fifo_device.h has the push and the protocol).
 * It hands out the addresses of the head counter and the slots, and switches
 * the FIFO to device mode, in which its consumer never parks without a time
 * limit. It must never change the layout the view describes: the checks
 * below tie tc_fifo_device_slot_t to the FIFO's own slot type.
 */
#include "proxy/fifo_internal.h"
#include "tcoll_fifo_device.h"
#include "util/status.h"

#include <stddef.h>

/* The device sees the slots through tc_fifo_device_slot_t (plain integers);
 * the FIFO uses tc__fifo_slot_t (C11 atomics). Same bytes, same places. */
_Static_assert(sizeof(tc_fifo_device_slot_t) == sizeof(tc__fifo_slot_t), "slot size");
_Static_assert(offsetof(tc_fifo_device_slot_t, seq) == offsetof(tc__fifo_slot_t, seq), "seq");
_Static_assert(offsetof(tc_fifo_device_slot_t, waiters) == offsetof(tc__fifo_slot_t, waiters),
               "waiters");
_Static_assert(offsetof(tc_fifo_device_slot_t, fst) == offsetof(tc__fifo_slot_t, fst), "fst");
_Static_assert(offsetof(tc_fifo_device_slot_t, snd) == offsetof(tc__fifo_slot_t, snd), "snd");
/* tc_fifo_device_sync finds the tail at a fixed place in the pages. */
_Static_assert(offsetof(struct tc_fifo, tail) == TC_FIFO_DEVICE_TAIL_OFFSET, "tail offset");
_Static_assert(offsetof(struct tc_fifo, head) < TC_FIFO_DEVICE_TAIL_OFFSET, "head first");
_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t) &&
                   _Alignof(_Atomic uint32_t) == _Alignof(uint32_t),
               "an atomic u32 is a plain u32 in memory");
_Static_assert(sizeof(_Atomic uint64_t) == sizeof(uint64_t) &&
                   _Alignof(_Atomic uint64_t) == _Alignof(uint64_t),
               "an atomic u64 is a plain u64 in memory");

tc_status_t tc_fifo_device_view(tc_fifo_t *fifo, tc_fifo_device_t *view_p)
{
    tc_fifo_device_t v;

    if (fifo == NULL || view_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_fifo_device_view: %s is NULL",
                             fifo == NULL ? "fifo" : "view_p");
    }
    v.slots = (tc_fifo_device_slot_t *)(void *)fifo->slots;
    v.head = (uint64_t *)(void *)&fifo->head;
    v.size = fifo->size;
    v.mask = fifo->mask;
    v.map_base = fifo;
    v.map_bytes = fifo->map_bytes;
    v.slots_bytes = (size_t)fifo->size * sizeof(tc__fifo_slot_t);

    /* relaxed, then the ring: the ring's release increment of bell publishes
     * the flag to a consumer whose ticket (acquire) counts the ring; one
     * whose ticket predates it is parked without a time limit (or about to
     * be), and the ring wakes it, so it parks again knowing the mode. Only
     * after this returns can a device producer exist, so none pushes into a
     * FIFO whose consumer may sleep for good. */
    if (atomic_exchange_explicit(&fifo->device, 1, memory_order_relaxed) == 0) {
        tc__fifo_ring(fifo);
    }
    *view_p = v;
    return TC_OK;
}
