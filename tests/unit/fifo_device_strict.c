/*
 * fifo_device_strict.c - tcoll_fifo_device.h as a user's strict C11 file
 * sees it: no feature-test macro defined before the include. The "device"
 * producers of test_fifo_device.c push through here, so the header's host
 * path (its pauses and C11 thrd_sleep included) is what they run.
 */
#if defined(_GNU_SOURCE) || defined(_POSIX_C_SOURCE) || defined(_DEFAULT_SOURCE)
#error "fifo_device_strict.c must be compiled without feature-test macros"
#endif

#include "tcoll_fifo_device.h"

uint64_t strict_device_push(const tc_fifo_device_t *v, tc_trigger_t t);

uint64_t strict_device_push(const tc_fifo_device_t *v, tc_trigger_t t)
{
    return tc_fifo_device_push(v, t);
}
