/*
 * regmem.c - registered memory: a rank's registrations (tc_mem_t), their
 * handles (192 bytes that name one to another rank), and handles opened on
 * arrival (tc_rmem_t), one at a time or all at once (tc_mem_exchange).
 *
 * Memory is host memory (in a tc_mem_alloc region or not) or, in a context
 * made with TC_CHAN_CUDA, CUDA device memory: its handle then carries the
 * allocation's CUDA IPC handle and the offset in it, and a rank of the
 * same node that opens it maps it (cudaIpcOpenMemHandle) for the proxy's
 * copies and for device handles of memory channels.
 *
 * A handle is little-endian and checked before anything in it is used:
 *
 *   offset  bytes  field
 *   ------  -----  ---------------------------------------------------------
 *        0      4  magic "TCMH"
 *        4      4  version (2)
 *        8      8  the context's key (rank 0's random number)
 *       16      4  owner rank
 *       20      4  owner pid
 *       24      4  owner's node (engine_info.h; -1 unknown)
 *       28      4  the region's memory file in the owner, -1: not tc_mem_alloc'd
 *       32      8  registration id (per context and rank)
 *       40      8  base address in the owner
 *       48      8  size in bytes
 *       56      8  base's offset in the region
 *       64      8  the region's length
 *       72      4  the CUDA device whose memory it is, -1: host memory
 *       76      4  zero
 *       80     64  device memory: its allocation's cudaIpcMemHandle_t
 *      144      8  device memory: base's offset in that allocation
 *      152     32  zero
 *      184      8  FNV-1a 64 of bytes 0..183
 *
 * Opening never trusts a handle further than its checks: a wrong magic or
 * version, a damaged checksum, another context's key, an impossible rank,
 * region or device are TC_ERR_ARG with a message that says which.
 */
#define _GNU_SOURCE
#include "channel/channel_internal.h"
#include "cuda/cuda.h"
#include "util/le.h"
#include "util/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HANDLE_MAGIC 0x484d4354u /* "TCMH" little-endian */
#define HANDLE_VERSION 2u
#define HANDLE_SUMMED 184

_Static_assert(HANDLE_SUMMED + 8 == TC_MEM_HANDLE_BYTES, "the checksum ends the handle");

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;

    for (i = 0; i < n; i++) {
        h = (h ^ p[i]) * 0x100000001b3ull;
    }
    return h;
}

/* Device memory: checks it may be registered here and fills m's device
 * fields (its IPC handle). */
static tc_status_t register_device(tc_chan_ctx_t *ctx, tc_mem_t *m, int dev)
{
    char why[256];

    if (ctx->device < 0) {
        return tc__set_error(
            TC_ERR_ARG,
            "tc_mem_register: %p is memory of CUDA device %d, and this context "
            "is for host threads: make it with TC_CHAN_CUDA (tc_chan_opts_t.flags)",
            (void *)m->base, dev);
    }
    if (dev != ctx->device) { /* its proxy copies and its kernels run on ctx->device */
        return tc__set_error(TC_ERR_ARG,
                             "tc_mem_register: %p is memory of CUDA device %d, and this context "
                             "is for device %d",
                             (void *)m->base, dev, ctx->device);
    }
    if (tc__cuda_ipc_export(dev, m->base, &m->ipc, why, sizeof(why)) != TC_OK) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_mem_register: CUDA device %d's memory at %p cannot be shared with "
                             "other processes (%s): allocate it with cudaMalloc",
                             dev, (void *)m->base, why);
    }
    m->device = dev;
    return TC_OK;
}

tc_status_t tc_mem_register(tc_chan_ctx_t *ctx, void *ptr, size_t size, tc_mem_t **mem_p)
{
    tc_mem_t *m;
    char why[256];
    tc_status_t st;
    int dev = -1;

    if (ctx == NULL || ptr == NULL || mem_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_register: %s is NULL",
                             ctx == NULL   ? "ctx"
                             : ptr == NULL ? "ptr"
                                           : "mem_p");
    }
    if ((uint64_t)(uintptr_t)ptr > UINT64_MAX - size) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_register: %zu bytes at %p wrap around", size, ptr);
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return tc__set_error(TC_ERR_NOMEM, "tc_mem_register: out of memory");
    }
    m->ctx = ctx;
    m->base = ptr;
    m->size = size;
    m->device = -1;
    if (!tc__shmem_find(ptr, size, &m->fd, &m->region_off, &m->region_len)) {
        m->fd = -1;
        if ((st = tc__cuda_ptr_device(ptr, size, &dev, why, sizeof(why))) != TC_OK) {
            free(m);
            return tc__set_error(st, "tc_mem_register: %s", why);
        }
        if (dev >= 0 && (st = register_device(ctx, m, dev)) != TC_OK) {
            free(m);
            return st;
        }
    }
    pthread_mutex_lock(&ctx->mu);
    m->id = ctx->next_mem_id++;
    m->next = ctx->mems;
    ctx->mems = m;
    pthread_mutex_unlock(&ctx->mu);
    *mem_p = m;
    return TC_OK;
}

void tc_mem_deregister(tc_mem_t *mem)
{
    tc_mem_t **pp;

    if (mem == NULL) {
        return;
    }
    pthread_mutex_lock(&mem->ctx->mu);
    for (pp = &mem->ctx->mems; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == mem) {
            *pp = mem->next;
            break;
        }
    }
    pthread_mutex_unlock(&mem->ctx->mu);
    tc__chan_device_forget_mem(mem);
    free(mem);
}

tc_status_t tc_mem_handle(const tc_mem_t *mem, tc_mem_handle_t *handle_p)
{
    const tc_chan_ctx_t *ctx;
    unsigned char *b;

    if (mem == NULL || handle_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_handle: %s is NULL",
                             mem == NULL ? "mem" : "handle_p");
    }
    ctx = mem->ctx;
    b = handle_p->bytes;
    memset(b, 0, TC_MEM_HANDLE_BYTES);
    tc__le_put32(b + 0, HANDLE_MAGIC);
    tc__le_put32(b + 4, HANDLE_VERSION);
    tc__le_put64(b + 8, ctx->key);
    tc__le_put32(b + 16, (uint32_t)ctx->rank);
    tc__le_put32(b + 20, (uint32_t)ctx->peers[ctx->rank].pid);
    tc__le_put32(b + 24, (uint32_t)ctx->peers[ctx->rank].node_first);
    tc__le_put32(b + 28, (uint32_t)mem->fd);
    tc__le_put64(b + 32, mem->id);
    tc__le_put64(b + 40, (uint64_t)(uintptr_t)mem->base);
    tc__le_put64(b + 48, mem->size);
    tc__le_put64(b + 56, mem->region_off);
    tc__le_put64(b + 64, mem->region_len);
    tc__le_put32(b + 72, (uint32_t)mem->device);
    if (mem->device >= 0) {
        memcpy(b + 80, mem->ipc.handle, sizeof(mem->ipc.handle));
        tc__le_put64(b + 144, mem->ipc.offset);
    }
    tc__le_put64(b + HANDLE_SUMMED, fnv1a(b, HANDLE_SUMMED));
    return TC_OK;
}

/* Checks a handle's bytes; fills r (not mapped yet). */
static tc_status_t decode(tc_chan_ctx_t *ctx, const unsigned char *b, tc_rmem_t *r)
{
    uint32_t magic = tc__le_get32(b), version = tc__le_get32(b + 4);
    int32_t fd;

    if (magic != HANDLE_MAGIC) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_mem_open: not a tcoll memory handle (magic "
                             "0x%08x, expected 0x%08x)",
                             magic, HANDLE_MAGIC);
    }
    if (version != HANDLE_VERSION) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_open: handle version %u, this tcoll reads %u",
                             version, HANDLE_VERSION);
    }
    if (tc__le_get64(b + HANDLE_SUMMED) != fnv1a(b, HANDLE_SUMMED)) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_open: the handle is damaged (checksum)");
    }
    if (tc__le_get64(b + 8) != ctx->key) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_open: the handle belongs to another channel "
                                         "context or job");
    }
    memset(r, 0, sizeof(*r));
    r->ctx = ctx;
    r->rank = (int)tc__le_get32(b + 16);
    if (r->rank < 0 || r->rank >= ctx->size) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_open: the handle names rank %d of %d", r->rank,
                             ctx->size);
    }
    r->pid = (pid_t)tc__le_get32(b + 20);
    if (r->pid != ctx->peers[r->rank].pid) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_mem_open: the handle's rank %d runs as pid %d, "
                             "not %d",
                             r->rank, (int)ctx->peers[r->rank].pid, (int)r->pid);
    }
    fd = (int32_t)tc__le_get32(b + 28);
    r->fd = fd;
    r->id = tc__le_get64(b + 32);
    r->base = tc__le_get64(b + 40);
    r->size = tc__le_get64(b + 48);
    r->region_off = tc__le_get64(b + 56);
    r->region_len = tc__le_get64(b + 64);
    r->device = (int32_t)tc__le_get32(b + 72);
    if (r->device < -1 || (r->device >= 0 && fd >= 0)) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_open: the handle names CUDA device %d%s",
                             r->device, r->device >= 0 ? " and a shared host region" : "");
    }
    if (r->device >= 0) {
        memcpy(r->ipc.handle, b + 80, sizeof(r->ipc.handle));
        r->ipc.offset = tc__le_get64(b + 144);
    }
    if (fd >= 0 && !tc__chan_fits(r->region_off, r->size, r->region_len)) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_mem_open: the handle's memory (%llu bytes at "
                             "%llu) is outside its region of %llu bytes",
                             (unsigned long long)r->size, (unsigned long long)r->region_off,
                             (unsigned long long)r->region_len);
    }
    return TC_OK;
}

/* Maps what can be mapped: this rank's own memory is used as it is; memory
 * in a region of a rank on this node is mapped. */
static tc_status_t attach(tc_rmem_t *r)
{
    tc_chan_ctx_t *ctx = r->ctx;
    char why[256];
    void *addr;

    if (r->rank == ctx->rank) {
        r->local = (char *)(uintptr_t)r->base;
        return TC_OK;
    }
    if (!ctx->peers[r->rank].same_node) {
        return TC_OK;
    }
    if (r->device >= 0) {
        /* Opened on this context's device; a host context cannot: its
         * puts towards the memory then fail (portchan.c), said clearly. */
        if (ctx->device >= 0 && tc__cuda_ipc_open(ctx->device, &r->ipc, 1, &addr, &r->ipc_maps, why,
                                                  sizeof(why)) != TC_OK) {
            return tc__set_error(TC_ERR_TRANSPORT, "tc_mem_open: rank %d's device memory: %s",
                                 r->rank, why);
        }
        r->dev_mapped = ctx->device >= 0 ? addr : NULL;
        return TC_OK;
    }
    if (r->fd < 0) {
        return TC_OK;
    }
    if (tc__shmem_map_peer(r->pid, r->fd, r->region_len, 0, &addr, why, sizeof(why)) != TC_OK) {
        return tc__set_error(TC_ERR_TRANSPORT, "tc_mem_open: rank %d's memory: %s", r->rank, why);
    }
    r->mapped = addr;
    return TC_OK;
}

tc_status_t tc_mem_open(tc_chan_ctx_t *ctx, const void *bytes, size_t len, tc_rmem_t **rmem_p)
{
    tc_rmem_t *r;
    tc_status_t st;

    if (ctx == NULL || bytes == NULL || rmem_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_open: %s is NULL",
                             ctx == NULL     ? "ctx"
                             : bytes == NULL ? "bytes"
                                             : "rmem_p");
    }
    if (len != TC_MEM_HANDLE_BYTES) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_open: a handle has %d bytes, not %zu",
                             TC_MEM_HANDLE_BYTES, len);
    }
    /* decoded into its final place: the IPC maps keep a pointer to r->ipc */
    r = malloc(sizeof(*r));
    if (r == NULL) {
        return tc__set_error(TC_ERR_NOMEM, "tc_mem_open: out of memory");
    }
    if ((st = decode(ctx, bytes, r)) != TC_OK || (st = attach(r)) != TC_OK) {
        free(r);
        return st;
    }
    *rmem_p = r;
    return TC_OK;
}

void tc_mem_close(tc_rmem_t *rmem)
{
    if (rmem != NULL) {
        tc__chan_device_forget_rmem(rmem);
        tc__shmem_unmap(rmem->mapped, rmem->region_len);
        if (rmem->ipc_maps != NULL) {
            tc__cuda_ipc_close(rmem->ctx->device, rmem->ipc_maps);
        }
        free(rmem);
    }
}

char *tc__rmem_addr(const tc_rmem_t *r)
{
    if (r->local != NULL) {
        return r->local;
    }
    if (r->dev_mapped != NULL) {
        return r->dev_mapped;
    }
    return r->mapped != NULL ? r->mapped + r->region_off : NULL;
}

int tc_rmem_rank(const tc_rmem_t *rmem)
{
    return rmem != NULL ? rmem->rank : -1;
}

uint64_t tc_rmem_size(const tc_rmem_t *rmem)
{
    return rmem != NULL ? rmem->size : 0;
}

tc_status_t tc_mem_exchange(tc_chan_ctx_t *ctx, const char *name, const tc_mem_t *mem,
                            tc_rmem_t *rmems[])
{
    static _Atomic uint64_t unnamed;
    tc_mem_handle_t h;
    unsigned char *all = NULL;
    tc_rmem_t **opened;
    char auto_name[64], why[512], open_why[512] = "";
    int r, ok = 1, every = 0, n;
    tc_status_t st;

    if (ctx == NULL || mem == NULL || rmems == NULL || mem->ctx != ctx) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_exchange: %s",
                             ctx == NULL     ? "ctx is NULL"
                             : mem == NULL   ? "mem is NULL"
                             : rmems == NULL ? "rmems is NULL"
                                             : "mem was registered with another context");
    }
    if (name == NULL) {
        snprintf(auto_name, sizeof(auto_name), "tcoll/chan/%u/mem/%llu", ctx->index,
                 (unsigned long long)atomic_fetch_add(&unnamed, 1));
        name = auto_name;
    }
    n = ctx->size;
    opened = calloc((size_t)n, sizeof(*opened));
    if (opened == NULL) {
        return tc__set_error(TC_ERR_NOMEM, "tc_mem_exchange: out of memory");
    }
    tc_mem_handle(mem, &h);
    st = tc__chan_gather(name, h.bytes, TC_MEM_HANDLE_BYTES, (void **)&all, why, sizeof(why));
    if (st != TC_OK) {
        free(opened);
        return tc__set_error(st, "tc_mem_exchange: %s", why);
    }
    for (r = 0; r < n && ok; r++) {
        ok = tc_mem_open(ctx, all + (size_t)r * TC_MEM_HANDLE_BYTES, TC_MEM_HANDLE_BYTES,
                         &opened[r]) == TC_OK;
        if (!ok) { /* kept: the agreement below is a call of its own */
            snprintf(open_why, sizeof(open_why), "%s", tc_last_error() ? tc_last_error() : "");
        }
    }
    free(all);
    /* Every rank opened every handle, or none keeps any. */
    snprintf(auto_name, sizeof(auto_name), "%.40s/opened", name);
    st = tc__chan_all_ok(auto_name, ok, &every, why, sizeof(why));
    if (st != TC_OK || !every) {
        for (r = 0; r < n; r++) {
            tc_mem_close(opened[r]);
        }
        free(opened);
        return st != TC_OK ? tc__set_error(st, "tc_mem_exchange: %s", why)
               : ok        ? tc__set_error(TC_ERR_TRANSPORT, "tc_mem_exchange: another rank "
                                                                    "could not open a handle")
                           : tc__set_error(TC_ERR_TRANSPORT, "tc_mem_exchange: %s", open_why);
    }
    memcpy(rmems, opened, (size_t)n * sizeof(*opened));
    free(opened);
    return TC_OK;
}
