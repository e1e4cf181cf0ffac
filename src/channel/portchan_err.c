/*
 * portchan_err.c - a port channel's failure: the first one's message is
 * what its next flush reports; every one is counted (also per channel id,
 * for the device flush of tcoll_channel_device.h). Called by whoever
 * carries the channel's operations out (portchan.c within a node, remote.c
 * and remote_recv.c between nodes); calls no other channel file.
 */
#define _GNU_SOURCE
#include "channel/channel_internal.h"

#include <stdarg.h>
#include <stdio.h>

void tc__portchan_fail(tc_portchan_t *ch, const char *fmt, ...)
{
    va_list ap;

    pthread_mutex_lock(&ch->mu);
    if (ch->err == TC_OK) {
        va_start(ap, fmt);
        vsnprintf(ch->err_msg, sizeof(ch->err_msg), fmt, ap);
        va_end(ap);
        ch->err = TC_ERR_TRANSPORT;
    }
    ch->failed++;
    pthread_mutex_unlock(&ch->mu);
    /* release: a device flush that waited for the pop after this reads it
     * (tcoll_channel_device.h); only the proxy thread writes it. */
    atomic_fetch_add_explicit(&ch->ctx->fails[ch->id], 1, memory_order_release);
}
