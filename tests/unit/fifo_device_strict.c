/*
 * fifo_device_strict.c - tcoll_fifo_device.h and tcoll_channel_device.h as
 * a user's strict C11 file sees them: no feature-test macro defined before
 * the include. The "device" producers of test_fifo_device.c push through
 * here, so the header's host path (its pauses and C11 thrd_sleep included)
 * is what they run; strict_channel_calls only has to compile (the handles
 * are driven by tests/mpi/test_channel_device.c).
 */
#if defined(_GNU_SOURCE) || defined(_POSIX_C_SOURCE) || defined(_DEFAULT_SOURCE)
#error "fifo_device_strict.c must be compiled without feature-test macros"
#endif

#include "tcoll_channel_device.h"
#include "tcoll_fifo_device.h"

uint64_t strict_device_push(const tc_fifo_device_t *v, tc_trigger_t t);

uint64_t strict_device_push(const tc_fifo_device_t *v, tc_trigger_t t)
{
    return tc_fifo_device_push(v, t);
}

int strict_channel_calls(tc_sem_device_t *s, tc_memchan_device_t *m, tc_portchan_device_t *p);

int strict_channel_calls(tc_sem_device_t *s, tc_memchan_device_t *m, tc_portchan_device_t *p)
{
    int r = 0;

    tc_sem_device_signal(s);
    r |= tc_sem_device_poll(s) | tc_sem_device_wait(s, 1000);
    r |= tc_memchan_device_put(m, 0, 0, 1, 0, 1) | tc_memchan_device_get(m, 0, 0, 1, 0, 1);
    r |= tc_memchan_device_put_with_signal(m, 0, 0, 1) | tc_memchan_device_wait(m, 0);
    tc_memchan_device_signal(m);
    tc_memchan_device_flush(m);
    r |= tc_memchan_device_poll(m);
    r |= tc_portchan_device_put(p, 0, 0, 1) | tc_portchan_device_signal(p);
    r |= tc_portchan_device_put_with_signal(p, 0, 0, 1) | tc_portchan_device_flush(p);
    r |= tc_portchan_device_wait(p, 0) | tc_portchan_device_poll(p);
    return r;
}
