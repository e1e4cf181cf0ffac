/*
 * context.c - a channel context: what every rank knows of the others (their
 * process, node and semaphore area), the proxy thread that carries out port
 * channel triggers, and the tables of what was made from it.
 *
 * Making one is collective and goes through tcoll's own collectives (the
 * engine thread owns MPI): one allgather of a fixed record per rank, then
 * one allreduce of "could map every peer on my node", so a context exists on
 * every rank or on none. Contexts are counted per process (index), which is
 * the same on every rank because every rank makes them in the same order;
 * the collectives are named after it.
 */
#define _GNU_SOURCE
#include "util/futex.h"

#include "channel/channel_internal.h"
#include "engine/engine_info.h"
#include "proxy/proxy_internal.h"
#include "util/log.h"
#include "util/status.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CTX_MAGIC 0x58544354u /* "TCTX" */

/* One rank's part of the context's allgather (host byte order: the ranks
 * that read each other's records share a machine or, across nodes, only
 * read pid and node, which travel as they are). */
typedef struct {
    uint32_t magic;
    uint32_t sem_ids;
    int32_t pid;
    int32_t node_first;
    int32_t area_fd;
    int32_t multiple; /* MPI runs at MPI_THREAD_MULTIPLE here */
    uint64_t area_len;
    uint64_t key;
    uint64_t host; /* this machine and pid namespace (0: unknown) */
} ctx_record_t;

static _Atomic uint32_t ctx_count;

static int pidfd_open_or_none(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    return -1;
#endif
}

/* Which machine and pid namespace this process runs in, so that two ranks
 * that see the same value can watch each other's pids (pretend nodes of
 * one machine, too): a hash of the kernel's boot id and the pid namespace's
 * inode. 0 when either is unknown. */
static uint64_t host_id(void)
{
    char boot[64] = "";
    uint64_t h = 1469598103934665603ull;
    struct stat ns;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    size_t i, n = 0;

    if (f != NULL) {
        n = fread(boot, 1, sizeof(boot) - 1, f);
        fclose(f);
    }
    if (n == 0 || stat("/proc/self/ns/pid", &ns) != 0) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        h = (h ^ (unsigned char)boot[i]) * 1099511628211ull;
    }
    h ^= (uint64_t)ns.st_ino * 1099511628211ull ^ (uint64_t)ns.st_dev;
    return h != 0 ? h : 1;
}

static void peers_free(tc_chan_ctx_t *ctx)
{
    int r;

    if (ctx->peers == NULL) {
        return;
    }
    for (r = 0; r < ctx->size; r++) {
        if (ctx->peers[r].pidfd >= 0) {
            close(ctx->peers[r].pidfd);
        }
        if (r != ctx->rank) {
            tc__shmem_unmap(ctx->peers[r].area, ctx->peers[r].area_len);
        }
    }
    free(ctx->peers);
    ctx->peers = NULL;
}

/* Fills ctx->peers from every rank's record; maps the semaphore areas of the
 * ranks on this node. Returns 1, or 0 with why written. */
static int peers_setup(tc_chan_ctx_t *ctx, const ctx_record_t *recs, char *why, size_t len)
{
    int r, me = ctx->rank;

    ctx->peers = calloc((unsigned)ctx->size, sizeof(*ctx->peers));
    if (ctx->peers == NULL) {
        snprintf(why, len, "out of memory");
        return 0;
    }
    for (r = 0; r < ctx->size; r++) {
        ctx->peers[r].pidfd = -1;
    }
    for (r = 0; r < ctx->size; r++) {
        tc_chan_peer_t *p = &ctx->peers[r];
        void *addr = NULL;

        p->pid = recs[r].pid;
        p->node_first = recs[r].node_first;
        p->same_node =
            r == me || (recs[me].node_first >= 0 && p->node_first == recs[me].node_first);
        p->same_host = p->same_node || (recs[me].host != 0 && recs[r].host == recs[me].host);
        if (r == me) {
            p->area = ctx->area;
            p->area_len = ctx->area_len;
            p->mbox = ctx->mbox;
            continue;
        }
        if (p->same_host) {
            p->pidfd = pidfd_open_or_none(p->pid);
        }
        if (!p->same_node) {
            continue;
        }
        if (tc__shmem_map_peer(p->pid, recs[r].area_fd, recs[r].area_len, 0, &addr, why, len) !=
            TC_OK) {
            return 0;
        }
        p->area = addr;
        p->area_len = recs[r].area_len;
        p->mbox = tc__chan_mboxes(ctx, addr);
    }
    return 1;
}

static tc_status_t opts_check(const tc_chan_opts_t *opts, tc_chan_opts_t *o)
{
    tc_chan_opts_t d = TC_CHAN_OPTS_INIT;

    if (opts != NULL) {
        if (opts->size < sizeof(size_t) || opts->size > sizeof(tc_chan_opts_t)) {
            return tc__set_error(TC_ERR_ARG,
                                 "tc_chan_ctx_create: opts->size is %zu: initialize "
                                 "the options with TC_CHAN_OPTS_INIT",
                                 opts->size);
        }
        memcpy(&d, opts, opts->size);
    }
    if (d.fifo_size == 0) {
        d.fifo_size = 512;
    }
    if (d.fifo_size > (1u << 20) || (d.fifo_size & (d.fifo_size - 1)) != 0) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_chan_ctx_create: fifo_size %u is not a power of "
                             "two in 1..%u",
                             d.fifo_size, 1u << 20);
    }
    if (d.sem_ids == 0) {
        d.sem_ids = TC_CHAN_DEFAULT_SEM_IDS;
    }
    if (d.sem_ids > TC_CHAN_MAX_SEM_IDS) {
        return tc__set_error(TC_ERR_ARG, "tc_chan_ctx_create: sem_ids %u is above %u", d.sem_ids,
                             TC_CHAN_MAX_SEM_IDS);
    }
    if (d.spin_ns < 0) {
        d.spin_ns = TC_CHAN_DEFAULT_SPIN_NS;
    }
    if ((d.flags & ~TC_CHAN_CUDA) != 0) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_chan_ctx_create: flags 0x%x has bits that are not "
                             "TC_CHAN_CUDA",
                             d.flags);
    }
    if ((d.flags & TC_CHAN_CUDA) != 0 && d.device < TC_PROXY_CURRENT_DEVICE) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_chan_ctx_create: device %d is neither a CUDA device nor "
                             "TC_PROXY_CURRENT_DEVICE (-1)",
                             (int)d.device);
    }
    *o = d;
    return TC_OK;
}

static void ctx_free(tc_chan_ctx_t *ctx)
{
    tc__net_free(ctx);
    tc__chan_device_teardown(ctx);
    peers_free(ctx);
    if (ctx->area != NULL) {
        tc_mem_free(ctx->area);
    }
    free(ctx->sem_taken);
    free(ctx->sem_consumed);
    free(ctx->mbox_seq);
    tc__mbox_free_list(ctx->outbox);
    tc__mbox_free_list(ctx->inbox);
    pthread_mutex_destroy(&ctx->mu);
    free(ctx);
}

static int spans_nodes(const tc_chan_ctx_t *ctx)
{
    int r;

    for (r = 0; r < ctx->size; r++) {
        if (!ctx->peers[r].same_node) {
            return 1;
        }
    }
    return 0;
}

/* A job of several nodes needs MPI_THREAD_MULTIPLE on every rank: the
 * proxies call MPI beside the engine thread (remote.c). */
static tc_status_t nodes_check(const tc_chan_ctx_t *ctx, const ctx_record_t *recs, char *why,
                               size_t len)
{
    int r, several = 0, low = -1;

    for (r = 0; r < ctx->size; r++) {
        several |= recs[r].node_first < 0 || recs[r].node_first != recs[0].node_first;
        if (!recs[r].multiple && low < 0) {
            low = r;
        }
    }
    if (several && low >= 0) {
        snprintf(why, len,
                 "the job spans several nodes, and port channels and semaphores "
                 "between nodes are carried out by the context's proxy thread over MPI beside "
                 "the engine thread, which needs MPI_THREAD_MULTIPLE, but rank %d runs MPI at a "
                 "lower level: set TCOLL_MPI_THREAD=multiple (or, when the application "
                 "initializes MPI, ask MPI_Init_thread for MPI_THREAD_MULTIPLE)",
                 low);
        return TC_ERR_STATE;
    }
    return TC_OK;
}

/* Everything after the options: the area, the exchange, the proxy. */
static tc_status_t ctx_setup(tc_chan_ctx_t *ctx, const tc_chan_opts_t *o, char *why, size_t len)
{
    ctx_record_t mine, *recs = NULL;
    char name[64], agree_why[256];
    uint64_t key = 0;
    tc_status_t st;
    int fd = -1, ok, all = 0, r;
    uint64_t off, rlen;

    ctx->area_len = (uint64_t)ctx->size * o->sem_ids * sizeof(tc_sem_line_t) +
                    (uint64_t)ctx->size * sizeof(tc_mbox_t);
    ctx->sem_taken = calloc((size_t)ctx->size * o->sem_ids, 1);
    ctx->sem_consumed = calloc((size_t)ctx->size * o->sem_ids, sizeof(uint64_t));
    ctx->mbox_seq = calloc((size_t)ctx->size, sizeof(*ctx->mbox_seq));
    if (ctx->sem_taken == NULL || ctx->sem_consumed == NULL || ctx->mbox_seq == NULL ||
        tc_mem_alloc((size_t)ctx->area_len, (void **)&ctx->area) != TC_OK) {
        snprintf(why, len, "no memory for %llu bytes of semaphores",
                 (unsigned long long)ctx->area_len);
        ctx->area = NULL;
        return TC_ERR_NOMEM;
    }
    ctx->mbox = tc__chan_mboxes(ctx, ctx->area);
    (void)tc__shmem_find(ctx->area, 1, &fd, &off, &rlen);
    if (getrandom(&key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
        key = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)ctx;
    }
    memset(&mine, 0, sizeof(mine));
    mine.magic = CTX_MAGIC;
    mine.sem_ids = o->sem_ids;
    mine.pid = (int32_t)getpid();
    mine.node_first = tc__engine_node_first();
    mine.area_fd = fd;
    mine.area_len = rlen;
    mine.key = key;
    mine.multiple = tc__engine_thread_multiple();
    mine.host = host_id();
    snprintf(name, sizeof(name), "tcoll/chan/%u/ranks", ctx->index);
    st = tc__chan_gather(name, &mine, sizeof(mine), (void **)&recs, why, len);
    if (st != TC_OK) {
        return st;
    }
    for (r = 0; r < ctx->size; r++) {
        if (recs[r].magic != CTX_MAGIC || recs[r].sem_ids != o->sem_ids) {
            snprintf(why, len, "sem_ids differ between ranks: rank %d has %u, rank %d has %u", r,
                     recs[r].sem_ids, ctx->rank, o->sem_ids);
            free(recs);
            return TC_ERR_ARG;
        }
    }
    ctx->key = recs[0].key;
    if ((st = nodes_check(ctx, recs, why, len)) != TC_OK) {
        free(recs); /* every rank read the same records: all fail alike */
        return st;
    }
    ok = peers_setup(ctx, recs, why, len);
    free(recs);
    if (ok && spans_nodes(ctx) && tc__net_create(ctx, why, len) != TC_OK) {
        ok = 0;
    }
    if (ok && !tc__chan_device_setup(
                  ctx, (o->flags & TC_CHAN_CUDA) != 0 ? o->device : TC_CHAN_NO_DEVICE, why, len)) {
        ok = 0;
    }
    snprintf(name, sizeof(name), "tcoll/chan/%u/mapped", ctx->index);
    st = tc__chan_all_ok(name, ok, &all, agree_why, sizeof(agree_why));
    if (st != TC_OK) {
        snprintf(why, len, "%s", agree_why);
        return st;
    }
    if (!all) {
        if (ok) {
            snprintf(why, len,
                     "another rank could not map the semaphores of its node or "
                     "set up its messages to other nodes (its tc_last_error says why)");
        }
        return TC_ERR_TRANSPORT;
    }
    st = ctx->device >= 0
             ? tc_proxy_create_device(ctx->device, tc__portchan_handle, ctx, NULL, NULL,
                                      o->fifo_size, &ctx->proxy)
             : tc_proxy_create(tc__portchan_handle, ctx, NULL, NULL, o->fifo_size, &ctx->proxy);
    if (st == TC_OK && ctx->net != NULL) {
        st = tc__proxy_set_progress(ctx->proxy, tc__net_progress, ctx);
    }
    if (st == TC_OK && (st = tc_proxy_start(ctx->proxy, 1)) != TC_OK) {
        tc_proxy_destroy(ctx->proxy);
        ctx->proxy = NULL;
    }
    if (st != TC_OK) {
        snprintf(why, len, "starting the proxy: %s", tc_last_error());
        return st;
    }
    ctx->fifo = tc_proxy_fifo(ctx->proxy);
    return TC_OK;
}

tc_status_t tc_chan_ctx_create(const tc_chan_opts_t *opts, tc_chan_ctx_t **ctx_p)
{
    tc_chan_opts_t o = TC_CHAN_OPTS_INIT;
    tc_chan_ctx_t *ctx;
    char why[512] = "";
    tc_status_t st;

    if (ctx_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_chan_ctx_create: ctx_p is NULL");
    }
    if ((st = opts_check(opts, &o)) != TC_OK) {
        return st;
    }
    if (tc_rank() < 0 || tc_size() < 1) {
        return tc__set_error(TC_ERR_STATE, "tc_chan_ctx_create: tcoll is not running (call "
                                           "tc_init first)");
    }
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return tc__set_error(TC_ERR_NOMEM, "tc_chan_ctx_create: out of memory");
    }
    pthread_mutex_init(&ctx->mu, NULL);
    ctx->rank = tc_rank();
    ctx->size = tc_size();
    ctx->device = -1; /* until device.c says otherwise */
    ctx->sem_ids = o.sem_ids;
    ctx->spin_ns = o.spin_ns;
    ctx->index = atomic_fetch_add_explicit(&ctx_count, 1, memory_order_relaxed);
    st = ctx_setup(ctx, &o, why, sizeof(why));
    if (st != TC_OK) {
        ctx_free(ctx);
        return tc__set_error(st, "tc_chan_ctx_create: %s", why);
    }
    TC_INFO("chan", "context %u: %d ranks, %u semaphore ids per peer, proxy FIFO of %u%s",
            ctx->index, ctx->size, ctx->sem_ids, o.fifo_size,
            ctx->net != NULL ? "; to other nodes over MPI from the proxy thread" : "");
    if (ctx->device >= 0) {
        TC_INFO("chan", "context %u: for GPU kernels of CUDA device %d", ctx->index, ctx->device);
    }
    *ctx_p = ctx;
    return TC_OK;
}

tc_proxy_t *tc_chan_ctx_proxy(tc_chan_ctx_t *ctx)
{
    return ctx != NULL ? ctx->proxy : NULL;
}

/* A context across nodes ends together: each rank flushes its channels to
 * other nodes, then waits (its proxy still receiving) until every rank has,
 * so no proxy stops while a peer still needs its acknowledgements; then the
 * proxy's last trigger cancels its MPI requests and stops it. TC_OK, or the
 * first failure (a flush's, or the wait's: a rank that never came). */
static tc_status_t net_goodbye(tc_chan_ctx_t *ctx)
{
    tc_status_t st = TC_OK, fst;
    char name[64], why[512];
    int all = 0;
    uint32_t i;

    for (i = 0; i < TC_CHAN_NCHANS; i++) {
        tc_portchan_t *ch = atomic_load_explicit(&ctx->chans[i], memory_order_relaxed);
        if (ch != NULL && ch->remote_node && (fst = tc_portchan_flush(ch, -1)) != TC_OK &&
            st == TC_OK) {
            st = tc__set_error(fst, "tc_chan_ctx_destroy: %s", tc_last_error());
        }
    }
    snprintf(name, sizeof(name), "tcoll/chan/%u/goodbye", ctx->index);
    fst = tc__chan_all_ok(name, 1, &all, why, sizeof(why));
    if (fst != TC_OK && st == TC_OK) {
        st = tc__set_error(fst,
                           "tc_chan_ctx_destroy: not every rank destroyed the context "
                           "(it spans nodes, so destroying it is collective): %s",
                           why);
    }
    tc_fifo_push(ctx->fifo, tc__chan_own_trigger(ctx, TC_CHAN_OWN_CLOSE, 0, 0));
    return st;
}

tc_status_t tc_chan_ctx_destroy(tc_chan_ctx_t *ctx)
{
    tc_status_t st = TC_OK;
    uint32_t i;

    if (ctx == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_chan_ctx_destroy: ctx is NULL");
    }
    if (ctx->net != NULL) {
        st = net_goodbye(ctx);
    }
    /* Carries out every trigger pushed so far (tc_proxy_stop drains). */
    tc_proxy_destroy(ctx->proxy);
    for (i = 0; i < TC_CHAN_NCHANS; i++) {
        tc_portchan_t *ch = atomic_load_explicit(&ctx->chans[i], memory_order_relaxed);
        if (ch != NULL) {
            if (ch->err != TC_OK && st == TC_OK) {
                st = tc__set_error(ch->err, "tc_chan_ctx_destroy: %s", ch->err_msg);
            }
            free(ch);
        }
    }
    while (ctx->mems != NULL) {
        tc_mem_t *m = ctx->mems;
        ctx->mems = m->next;
        free(m);
    }
    ctx_free(ctx);
    return st;
}
