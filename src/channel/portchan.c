/*
 * portchan.c - port channels: any thread encodes an operation as one
 * 128-bit trigger (tcoll_trigger.h) and pushes it into the context's proxy
 * FIFO; the proxy thread, the only one that moves port channel data, takes
 * the triggers out in push order and carries each out before the next:
 *
 *   type bit   what the proxy does (a rank on this node)
 *   ---------  ------------------------------------------------------------
 *   PUT        copies size bytes from the local memory to the peer's: a
 *              memcpy into the peer's region when it is mapped here,
 *              process_vm_writev into the peer's process otherwise; when
 *              either side is CUDA device memory, a copy on the proxy's
 *              stream (into the peer's memory mapped here: CUDA IPC or its
 *              region), or staged through host memory and
 *              process_vm_writev, waited for before the next operation
 *   SIGNAL     adds 1 to the peer's semaphore counter (semaphore.c), after
 *              the put of the same or an earlier trigger has returned
 *   FLUSH      nothing left to wait for: every earlier operation has been
 *              carried out; checks that the peer still runs (an operation
 *              into a rank that has exited did not reach anyone)
 *
 * So one channel's operations complete in push order, a signal is visible
 * only after every earlier put of its channel, and a flush (the caller
 * waits with tc_fifo_sync for its trigger's pop, which orders everything
 * the handler did before) means the earlier operations are complete at the
 * destination and their sources may be reused.
 *
 * A rank on another node: the same three bits travel as MPI messages that
 * the peer's proxy carries out in order (remote.c), and the flush's handler
 * returns once the peer has acknowledged it, so the same holds.
 *
 * Failures are never dropped: the first one on a channel is kept (rank,
 * operation, reason) with a count of the operations it failed, and the next
 * flush (or destroying the channel or the context) returns it. Once the
 * peer has exited, later operations fail without being tried.
 */
#define _GNU_SOURCE
#include "channel/channel_internal.h"
#include "util/log.h"
#include "util/status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

/* Proxy thread: writes size bytes of src into the peer's process at addr. */
static int write_peer(pid_t pid, uint64_t addr, const char *src, uint64_t size)
{
    while (size > 0) {
        struct iovec l = {(void *)src, (size_t)size};
        struct iovec r = {(void *)(uintptr_t)addr, (size_t)size};
        ssize_t n = process_vm_writev(pid, &l, 1, &r, 1, 0);

        if (n <= 0) {
            return n == 0 ? EIO : errno;
        }
        src += n;
        addr += (uint64_t)n;
        size -= (uint64_t)n;
    }
    return 0;
}

/* Proxy thread: write_peer of len bytes of src to dst_offset of the
 * channel's peer, part of the put f; 1, or 0 after recording the failure
 * (a peer that has exited is marked gone). */
static int write_peer_or_fail(tc_portchan_t *ch, const tc_trigger_fields_t *f, uint64_t dst_offset,
                              const char *src, uint64_t len)
{
    int err = write_peer(ch->remote->pid, ch->remote->base + dst_offset, src, len);

    if (err == 0) {
        return 1;
    }
    if (err == ESRCH) {
        atomic_store_explicit(&ch->peer_gone, 1, memory_order_relaxed);
    }
    tc__portchan_fail(ch, "a put of %llu bytes to rank %d (pid %d) failed: %s",
                      (unsigned long long)f->size, ch->remote->rank, (int)ch->remote->pid,
                      err == ESRCH ? "the process has exited" : strerror(err));
    return 0;
}

/* Proxy thread: a put that reads or writes CUDA device memory, on this
 * node: one copy on the proxy's stream into the peer's memory mapped here
 * (its device memory opened with CUDA IPC, or its shared region), or, into
 * its private host memory, through the staging buffer and
 * process_vm_writev. Returns when the bytes are in place. */
static void device_put(tc_portchan_t *ch, const tc_trigger_fields_t *f)
{
    const char *src = ch->local->base + f->src_offset;
    char why[256], *bounce;
    uint64_t off, len;

    if (ch->dst == NULL && ch->remote->device >= 0) {
        tc__portchan_fail(ch,
                          "rank %d's memory is CUDA device memory that this context cannot reach "
                          "(it was not made with TC_CHAN_CUDA on this rank)",
                          ch->remote->rank);
        return;
    }
    if (ch->dst != NULL) {
        if (tc__chan_copy(ch->ctx, ch->dst + f->dst_offset, src, f->size, why, sizeof(why)) !=
            TC_OK) {
            tc__portchan_fail(ch, "a put of %llu bytes to rank %d failed: %s",
                              (unsigned long long)f->size, ch->remote->rank, why);
        }
        return;
    }
    if ((bounce = tc__chan_bounce(ch->ctx)) == NULL) {
        tc__portchan_fail(ch, "a put of %llu bytes to rank %d: out of memory for staging",
                          (unsigned long long)f->size, ch->remote->rank);
        return;
    }
    for (off = 0; off < f->size; off += len) {
        len = f->size - off < TC_CHAN_BOUNCE ? f->size - off : TC_CHAN_BOUNCE;
        if (tc__chan_copy(ch->ctx, bounce, src + off, len, why, sizeof(why)) != TC_OK) {
            tc__portchan_fail(ch, "a put of %llu bytes to rank %d failed: %s",
                              (unsigned long long)f->size, ch->remote->rank, why);
            return;
        }
        if (!write_peer_or_fail(ch, f, f->dst_offset + off, bounce, len)) {
            return;
        }
    }
}

static void do_put(tc_portchan_t *ch, const tc_trigger_fields_t *f)
{
    if (!tc__chan_fits(f->src_offset, f->size, ch->local->size) ||
        !tc__chan_fits(f->dst_offset, f->size, ch->remote->size)) {
        tc__portchan_fail(ch,
                          "a put of %llu bytes from offset %llu to offset %llu on the "
                          "channel to rank %d is outside its memory (local %llu, remote %llu "
                          "bytes)",
                          (unsigned long long)f->size, (unsigned long long)f->src_offset,
                          (unsigned long long)f->dst_offset, ch->remote->rank,
                          (unsigned long long)ch->local->size,
                          (unsigned long long)ch->remote->size);
        return;
    }
    if (f->size == 0) {
        return;
    }
    if (ch->local->device >= 0 || ch->remote->device >= 0) {
        device_put(ch, f);
        return;
    }
    if (ch->dst != NULL) {
        memcpy(ch->dst + f->dst_offset, ch->local->base + f->src_offset, (size_t)f->size);
        return;
    }
    (void)write_peer_or_fail(ch, f, f->dst_offset, ch->local->base + f->src_offset, f->size);
}

static void carry_out(tc_portchan_t *ch, const tc_trigger_fields_t *f)
{
    tc_chan_ctx_t *ctx = ch->ctx;
    int peer = ch->remote->rank;
    /* whether the peer is still there is asked at a flush, and before a
     * put into its device memory opened through CUDA IPC: a copy into the
     * memory of a process that has exited is not defined */
    int ask = (f->type & TC_TRIG_FLUSH) != 0 ||
              ((f->type & TC_TRIG_PUT) != 0 && ch->dst != NULL && ch->remote->device >= 0);

    if (!atomic_load_explicit(&ch->peer_gone, memory_order_relaxed) && ask &&
        tc__chan_peer_gone(ctx, peer)) {
        atomic_store_explicit(&ch->peer_gone, 1, memory_order_relaxed);
        if (ch->done > 0) {
            tc__portchan_fail(ch,
                              "rank %d (pid %d) %s: earlier operations on the channel to "
                              "it reached no one",
                              peer, (int)ch->remote->pid, tc__chan_gone_why(ctx, peer));
        }
    }
    if (atomic_load_explicit(&ch->peer_gone, memory_order_relaxed)) {
        tc__portchan_fail(ch, "rank %d (pid %d) %s", peer, (int)ch->remote->pid,
                          tc__chan_gone_why(ctx, peer));
        return;
    }
    if (ch->remote_node) {
        tc__net_op(ch, f); /* over MPI */
        ch->done++;
        return;
    }
    if ((f->type & TC_TRIG_PUT) != 0) {
        do_put(ch, f);
    }
    if ((f->type & TC_TRIG_SIGNAL) != 0) {
        tc__sem_line_signal(ch->sem->out);
    }
    ch->done++;
}

tc_proxy_result_t tc__portchan_handle(tc_trigger_t t, void *arg)
{
    tc_chan_ctx_t *ctx = arg;
    tc_trigger_fields_t f;
    tc_portchan_t *ch;

    if ((t.fst & TC_CHAN_OWN_BIT) != 0 && ctx->net != NULL &&
        (uint32_t)(t.snd >> 32) == (uint32_t)ctx->key) {
        /* tcoll's own (channel_internal.h): only this layer pushes them,
         * with the context's key, so no stray trigger can pass for one. */
        switch ((t.fst >> TC_CHAN_OWN_OP_SHIFT) & 0x7fu) {
        case TC_CHAN_OWN_SEM:
            if ((uint32_t)t.fst < (uint32_t)ctx->size) {
                tc__net_sem_signal(ctx, (int)(uint32_t)t.fst, (uint32_t)t.snd);
            }
            return TC_PROXY_CONTINUE;
        case TC_CHAN_OWN_HANDLES: tc__net_send_handles(ctx); return TC_PROXY_CONTINUE;
        case TC_CHAN_OWN_CLOSE: tc__net_close(ctx); return TC_PROXY_STOP;
        }
    }
    if (tc_trigger_decode(t, &f) != 0) {
        atomic_fetch_add_explicit(&ctx->bad_triggers, 1, memory_order_relaxed);
        TC_WARN("chan",
                "context %u: a trigger that is no channel operation (0x%016llx "
                "0x%016llx) was ignored",
                ctx->index, (unsigned long long)t.fst, (unsigned long long)t.snd);
        return TC_PROXY_CONTINUE;
    }
    /* acquire: pairs with the release store of tc_portchan_create, so the
     * channel's fields are visible. */
    ch = atomic_load_explicit(&ctx->chans[f.chan], memory_order_acquire);
    if (ch == NULL) {
        atomic_fetch_add_explicit(&ctx->bad_triggers, 1, memory_order_relaxed);
        TC_WARN("chan", "context %u: a trigger for channel %u, which is not open, was ignored",
                ctx->index, f.chan);
        return TC_PROXY_CONTINUE;
    }
    carry_out(ch, &f);
    return TC_PROXY_CONTINUE;
}

tc_status_t tc_portchan_create(tc_sem_t *sem, tc_mem_t *local, tc_rmem_t *remote,
                               tc_portchan_t **ch_p)
{
    tc_chan_ctx_t *ctx;
    tc_portchan_t *ch;
    uint32_t i;

    if (sem == NULL || local == NULL || remote == NULL || ch_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_portchan_create: %s is NULL",
                             sem == NULL      ? "sem"
                             : local == NULL  ? "local"
                             : remote == NULL ? "remote"
                                              : "ch_p");
    }
    ctx = sem->ctx;
    if (local->ctx != ctx || remote->ctx != ctx) {
        return tc__set_error(TC_ERR_ARG, "tc_portchan_create: sem, local and remote belong to "
                                         "different contexts");
    }
    if (remote->rank != sem->peer) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_portchan_create: remote is rank %d's memory but "
                             "sem signals rank %d",
                             remote->rank, sem->peer);
    }
    ch = calloc(1, sizeof(*ch));
    if (ch == NULL) {
        return tc__set_error(TC_ERR_NOMEM, "tc_portchan_create: out of memory");
    }
    pthread_mutex_init(&ch->mu, NULL);
    ch->ctx = ctx;
    ch->sem = sem;
    ch->local = local;
    ch->remote = remote;
    ch->dst = tc__rmem_addr(remote);
    ch->remote_node = !ctx->peers[remote->rank].same_node;
    pthread_mutex_lock(&ctx->mu);
    for (i = 0; i < TC_CHAN_NCHANS; i++) {
        if (atomic_load_explicit(&ctx->chans[i], memory_order_relaxed) == NULL) {
            ch->id = i;
            /* release: the proxy's acquire load of the slot sees ch filled. */
            atomic_store_explicit(&ctx->chans[i], ch, memory_order_release);
            break;
        }
    }
    pthread_mutex_unlock(&ctx->mu);
    if (i == TC_CHAN_NCHANS) {
        pthread_mutex_destroy(&ch->mu);
        free(ch);
        return tc__set_error(TC_ERR_NOMEM,
                             "tc_portchan_create: all %u channel ids of the "
                             "context are taken",
                             TC_CHAN_NCHANS);
    }
    *ch_p = ch;
    return TC_OK;
}

uint32_t tc_portchan_id(const tc_portchan_t *ch)
{
    return ch != NULL ? ch->id : UINT32_MAX;
}

tc_status_t tc_portchan_trigger(const tc_portchan_t *ch, uint32_t type, uint64_t dst_offset,
                                uint64_t src_offset, uint64_t size, tc_trigger_t *trigger_p)
{
    if (ch == NULL || trigger_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_portchan_trigger: %s is NULL",
                             ch == NULL ? "ch" : "trigger_p");
    }
    if (type == 0 || type > TC_TRIG_TYPE_MASK) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_portchan_trigger: type %u is not a combination of "
                             "TC_TRIG_PUT, TC_TRIG_SIGNAL and TC_TRIG_FLUSH",
                             type);
    }
    if ((type & TC_TRIG_PUT) == 0) {
        dst_offset = src_offset = size = 0;
    } else if (size > TC_TRIG_MAX_SIZE || src_offset > TC_TRIG_MAX_OFFSET ||
               dst_offset > TC_TRIG_MAX_OFFSET) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_portchan_trigger: a put of %llu bytes from offset "
                             "%llu to %llu does not fit a trigger (size below 2^32, offsets "
                             "below 2^40)",
                             (unsigned long long)size, (unsigned long long)src_offset,
                             (unsigned long long)dst_offset);
    } else if (!tc__chan_fits(src_offset, size, ch->local->size) ||
               !tc__chan_fits(dst_offset, size, ch->remote->size)) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_portchan: %llu bytes from offset %llu to offset "
                             "%llu are outside the memories (local %llu, rank %d's %llu bytes)",
                             (unsigned long long)size, (unsigned long long)src_offset,
                             (unsigned long long)dst_offset, (unsigned long long)ch->local->size,
                             ch->remote->rank, (unsigned long long)ch->remote->size);
    }
    /* Cannot fail: every field was checked above. */
    (void)tc_trigger_encode(type, ch->id, dst_offset, src_offset, size, trigger_p);
    return TC_OK;
}

static tc_status_t push(tc_portchan_t *ch, uint32_t type, uint64_t dst_offset, uint64_t src_offset,
                        uint64_t size, uint64_t *pos_p)
{
    tc_trigger_t t;
    tc_status_t st = tc_portchan_trigger(ch, type, dst_offset, src_offset, size, &t);
    uint64_t pos;

    if (st != TC_OK) {
        return st;
    }
    pos = tc_fifo_push(ch->ctx->fifo, t);
    if (pos_p != NULL) {
        *pos_p = pos;
    }
    return TC_OK;
}

tc_status_t tc_portchan_put(tc_portchan_t *ch, uint64_t dst_offset, uint64_t src_offset,
                            uint64_t size)
{
    return push(ch, TC_TRIG_PUT, dst_offset, src_offset, size, NULL);
}

tc_status_t tc_portchan_signal(tc_portchan_t *ch)
{
    return push(ch, TC_TRIG_SIGNAL, 0, 0, 0, NULL);
}

tc_status_t tc_portchan_put_with_signal(tc_portchan_t *ch, uint64_t dst_offset, uint64_t src_offset,
                                        uint64_t size)
{
    return push(ch, TC_TRIG_PUT | TC_TRIG_SIGNAL, dst_offset, src_offset, size, NULL);
}

tc_status_t tc_portchan_flush(tc_portchan_t *ch, int64_t timeout_ns)
{
    uint64_t pos = 0;
    tc_status_t st = push(ch, TC_TRIG_FLUSH, 0, 0, 0, &pos);

    if (st != TC_OK) {
        return st;
    }
    /* tc_fifo_sync: the handler of the flush (and so of everything pushed
     * before it) has returned, and what it wrote is visible here. */
    st = tc_fifo_sync(ch->ctx->fifo, pos, timeout_ns);
    if (st != TC_OK) {
        return tc__set_error(st,
                             "tc_portchan_flush: the channel to rank %d is not flushed "
                             "within %lld ns",
                             ch->remote->rank, (long long)timeout_ns);
    }
    pthread_mutex_lock(&ch->mu);
    st = ch->err;
    if (st != TC_OK) {
        tc__set_error(st, "tc_portchan_flush: %s (%llu operations failed)", ch->err_msg,
                      (unsigned long long)ch->failed);
        ch->err = TC_OK;
        ch->failed = 0;
    }
    pthread_mutex_unlock(&ch->mu);
    return st;
}

tc_status_t tc_portchan_wait(tc_portchan_t *ch, int64_t timeout_ns)
{
    if (ch == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_portchan_wait: ch is NULL");
    }
    return tc_sem_wait(ch->sem, timeout_ns);
}

int tc_portchan_poll(tc_portchan_t *ch)
{
    return ch != NULL ? tc_sem_poll(ch->sem) : 0;
}

tc_status_t tc_portchan_destroy(tc_portchan_t *ch)
{
    tc_chan_ctx_t *ctx;
    tc_status_t st;

    if (ch == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_portchan_destroy: ch is NULL");
    }
    ctx = ch->ctx;
    st = tc_portchan_flush(ch, -1);
    pthread_mutex_lock(&ctx->mu);
    atomic_store_explicit(&ctx->chans[ch->id], NULL, memory_order_relaxed);
    pthread_mutex_unlock(&ctx->mu);
    pthread_mutex_destroy(&ch->mu);
    free(ch);
    return st;
}
