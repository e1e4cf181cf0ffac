/*
 * memchan.c - memory channels: the calling thread copies straight into (put)
 * or out of (get) a peer's memory that tcoll allocated in a shared region
 * and this process has mapped, then signals the peer's semaphore.
 *
 * Memory of a CUDA device (opened with CUDA IPC) is only reached through
 * the channel's device handle (device.c), from kernels: the host calls
 * refuse it.
 *
 * A put is a memcpy into the mapping: complete when it returns. The signal
 * after it is a seq_cst read-modify-write (semaphore.c), whose release half
 * orders the copy's stores before it, so a peer whose wait sees the signal
 * (acquire) sees the data. Nothing here waits, locks or calls the kernel
 * except a wake when the peer is parked.
 */
#define _GNU_SOURCE
#include "channel/channel_internal.h"
#include "util/status.h"

#include <stdlib.h>
#include <string.h>

tc_status_t tc_memchan_create(tc_sem_t *sem, tc_mem_t *local, tc_rmem_t *remote,
                              tc_memchan_t **ch_p)
{
    tc_memchan_t *ch;
    char *dst;

    if (sem == NULL || local == NULL || remote == NULL || ch_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_memchan_create: %s is NULL",
                             sem == NULL      ? "sem"
                             : local == NULL  ? "local"
                             : remote == NULL ? "remote"
                                              : "ch_p");
    }
    if (local->ctx != sem->ctx || remote->ctx != sem->ctx) {
        return tc__set_error(TC_ERR_ARG, "tc_memchan_create: sem, local and remote belong to "
                                         "different contexts");
    }
    if (remote->rank != sem->peer) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_memchan_create: remote is rank %d's memory but sem "
                             "signals rank %d",
                             remote->rank, sem->peer);
    }
    dst = tc__rmem_addr(remote);
    if (dst == NULL && remote->device >= 0 && sem->ctx->peers[remote->rank].same_node) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_memchan_create: rank %d's memory is CUDA device memory, which "
                             "only a context made with TC_CHAN_CUDA maps",
                             remote->rank);
    }
    if (dst == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_memchan_create: rank %d's memory %s", remote->rank,
                             sem->ctx->peers[remote->rank].same_node
                                 ? "was not allocated with tc_mem_alloc (a memory channel "
                                   "needs it mapped; a port channel does not)"
                                 : "is on another node (use a port channel)");
    }
    ch = calloc(1, sizeof(*ch));
    if (ch == NULL) {
        return tc__set_error(TC_ERR_NOMEM, "tc_memchan_create: out of memory");
    }
    ch->sem = sem;
    ch->local = local;
    ch->remote = remote;
    ch->dst = dst;
    *ch_p = ch;
    return TC_OK;
}

void tc_memchan_destroy(tc_memchan_t *ch)
{
    free(ch);
}

static tc_status_t check(const char *who, const tc_memchan_t *ch, uint64_t local_off,
                         uint64_t remote_off, uint64_t size)
{
    if (ch == NULL) {
        return tc__set_error(TC_ERR_ARG, "%s: ch is NULL", who);
    }
    if (ch->local->device >= 0 || ch->remote->device >= 0) {
        return tc__set_error(TC_ERR_ARG,
                             "%s: the channel's %s memory is CUDA device memory, which a host "
                             "thread does not copy: use the channel from a kernel "
                             "(tc_memchan_device_handle) or a port channel",
                             who, ch->local->device >= 0 ? "local" : "remote");
    }
    if (!tc__chan_fits(local_off, size, ch->local->size)) {
        return tc__set_error(TC_ERR_ARG,
                             "%s: %llu bytes at offset %llu are outside the local "
                             "memory (%llu bytes)",
                             who, (unsigned long long)size, (unsigned long long)local_off,
                             (unsigned long long)ch->local->size);
    }
    if (!tc__chan_fits(remote_off, size, ch->remote->size)) {
        return tc__set_error(TC_ERR_ARG,
                             "%s: %llu bytes at offset %llu are outside rank %d's "
                             "memory (%llu bytes)",
                             who, (unsigned long long)size, (unsigned long long)remote_off,
                             ch->remote->rank, (unsigned long long)ch->remote->size);
    }
    return TC_OK;
}

tc_status_t tc_memchan_put(tc_memchan_t *ch, uint64_t dst_offset, uint64_t src_offset,
                           uint64_t size)
{
    tc_status_t st = check("tc_memchan_put", ch, src_offset, dst_offset, size);

    if (st == TC_OK && size > 0) {
        memcpy(ch->dst + dst_offset, ch->local->base + src_offset, (size_t)size);
    }
    return st;
}

tc_status_t tc_memchan_get(tc_memchan_t *ch, uint64_t dst_offset, uint64_t src_offset,
                           uint64_t size)
{
    tc_status_t st = check("tc_memchan_get", ch, dst_offset, src_offset, size);

    if (st == TC_OK && size > 0) {
        memcpy(ch->local->base + dst_offset, ch->dst + src_offset, (size_t)size);
    }
    return st;
}

tc_status_t tc_memchan_signal(tc_memchan_t *ch)
{
    if (ch == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_memchan_signal: ch is NULL");
    }
    tc__sem_line_signal(ch->sem->out);
    return TC_OK;
}

tc_status_t tc_memchan_put_with_signal(tc_memchan_t *ch, uint64_t dst_offset, uint64_t src_offset,
                                       uint64_t size)
{
    tc_status_t st = tc_memchan_put(ch, dst_offset, src_offset, size);

    if (st == TC_OK) {
        tc__sem_line_signal(ch->sem->out);
    }
    return st;
}

tc_status_t tc_memchan_wait(tc_memchan_t *ch, int64_t timeout_ns)
{
    if (ch == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_memchan_wait: ch is NULL");
    }
    return tc_sem_wait(ch->sem, timeout_ns);
}

int tc_memchan_poll(tc_memchan_t *ch)
{
    return ch != NULL ? tc_sem_poll(ch->sem) : 0;
}

tc_status_t tc_memchan_flush(tc_memchan_t *ch)
{
    if (ch == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_memchan_flush: ch is NULL");
    }
    /* seq_cst fence: this thread's copies are ordered before whatever it
     * does next, plain stores to other memory included. */
    atomic_thread_fence(memory_order_seq_cst);
    return TC_OK;
}
