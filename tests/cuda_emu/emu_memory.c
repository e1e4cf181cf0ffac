/*
 * emu_memory.c - the CUDA runtime stand-in's memory: device memory (memfds
 * mapped twice), pools, page-locked and registered host memory, pointer
 * attributes and CUDA IPC through /proc (cudart_emu.c says what the
 * stand-in is).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

/* ---- allocation ------------------------------------------------------------ */

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    cudaError_t e = emu_enter();
    alloc_t *a;

    if (e != cudaSuccess) {
        return e;
    }
    if ((a = emu_device_alloc(bytes, emu_cur_dev, A_DEVICE)) == NULL) {
        return emu_leave(cudaErrorMemoryAllocation);
    }
    *p = a->dev;
    return emu_leave(cudaSuccess);
}

cudaError_t cudaFree(void *p)
{
    cudaError_t e = emu_enter();
    alloc_t *a;

    if (e != cudaSuccess || p == NULL) {
        return e == cudaSuccess ? emu_leave(cudaSuccess) : e;
    }
    a = emu_find(p);
    if (!emu_is_device(a) || a->kind == A_IPC || a->dev != (char *)p) {
        return emu_leave(cudaErrorInvalidValue);
    }
    emu_sync_all();
    emu_unlink_alloc(a);
    emu_release_alloc(a);
    return emu_leave(cudaSuccess);
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const struct cudaMemPoolProps *props)
{
    cudaError_t e = emu_enter();
    struct CUmemPoolHandle_st *h;

    if (e != cudaSuccess) {
        return e;
    }
    if (emu_no_pools) {
        return emu_leave(cudaErrorNotSupported);
    }
    if (props->location.type != cudaMemLocationTypeDevice || props->location.id < 0 ||
        props->location.id >= emu_ndev || (h = calloc(1, sizeof(*h))) == NULL) {
        return emu_leave(cudaErrorInvalidValue);
    }
    h->device = props->location.id;
    *pool = h;
    return emu_leave(cudaSuccess);
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value)
{
    (void)pool;
    (void)attr;
    (void)value;
    return cudaSuccess;
}

cudaError_t cudaMallocFromPoolAsync(void **p, size_t bytes, cudaMemPool_t pool, cudaStream_t h)
{
    struct CUstream_st *s;
    alloc_t *a;
    cudaError_t e = emu_enter_stream(h, &s);

    if (e != cudaSuccess) {
        return e;
    }
    if (pool == NULL || pool->device != s->device) {
        return emu_leave(cudaErrorInvalidValue);
    }
    if ((a = emu_device_alloc(bytes, pool->device, A_POOL)) == NULL) {
        return emu_leave(cudaErrorMemoryAllocation);
    }
    *p = a->dev;
    return emu_leave(cudaSuccess);
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t h)
{
    struct CUstream_st *s;
    alloc_t *a;
    op_t *o;
    cudaError_t e = emu_enter_stream(h, &s);

    if (e != cudaSuccess) {
        return e;
    }
    a = emu_find(p);
    if (!emu_is_device(a) || a->kind == A_IPC || a->dev != (char *)p) {
        return emu_leave(cudaErrorInvalidValue);
    }
    if ((o = emu_new_op(OP_FREE)) == NULL) {
        return emu_leave(cudaErrorMemoryAllocation);
    }
    o->free_a = a;
    return emu_leave(emu_enqueue(s, o));
}

static cudaError_t host_alloc(void **p, size_t bytes)
{
    cudaError_t e = emu_enter();
    alloc_t *a;
    void *m = NULL;

    if (e != cudaSuccess) {
        return e;
    }
    a = calloc(1, sizeof(*a));
    if (a == NULL || posix_memalign(&m, 4096, bytes > 0 ? bytes : 1) != 0) {
        free(a);
        return emu_leave(cudaErrorMemoryAllocation);
    }
    a->dev = a->back = m;
    a->size = bytes > 0 ? bytes : 1;
    a->device = -1;
    a->kind = A_HOST;
    a->fd = -1;
    a->next = emu_allocs;
    emu_allocs = a;
    *p = m;
    return emu_leave(cudaSuccess);
}

cudaError_t cudaMallocHost(void **p, size_t bytes)
{
    return host_alloc(p, bytes);
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int flags)
{
    (void)flags;
    return host_alloc(p, bytes);
}

cudaError_t cudaFreeHost(void *p)
{
    cudaError_t e = emu_enter();
    alloc_t *a;

    if (e != cudaSuccess) {
        return e;
    }
    a = emu_find(p);
    if (a == NULL || a->kind != A_HOST || a->dev != (char *)p) {
        return emu_leave(cudaErrorInvalidValue);
    }
    emu_sync_all();
    emu_unlink_alloc(a);
    emu_release_alloc(a);
    return emu_leave(cudaSuccess);
}

cudaError_t cudaHostRegister(void *p, size_t bytes, unsigned int flags)
{
    cudaError_t e = emu_enter();
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    char *lo, *hi;
    alloc_t *a;

    (void)flags;
    if (e != cudaSuccess) {
        return e;
    }
    if (p == NULL || bytes == 0) {
        return emu_leave(cudaErrorInvalidValue);
    }
    /* CUDA page-locks whole pages: a range sharing a page with another
     * registration is registered already */
    lo = (char *)((uintptr_t)p / pg * pg);
    hi = (char *)(((uintptr_t)p + bytes + pg - 1) / pg * pg);
    for (a = emu_allocs; a != NULL; a = a->next) {
        if (lo < a->dev + a->size && a->dev < hi) {
            return emu_leave(emu_is_device(a) ? cudaErrorInvalidValue
                                              : cudaErrorHostMemoryAlreadyRegistered);
        }
    }
    if ((a = calloc(1, sizeof(*a))) == NULL) {
        return emu_leave(cudaErrorMemoryAllocation);
    }
    a->dev = a->back = lo;
    a->size = (size_t)(hi - lo);
    a->orig = p;
    a->device = -1;
    a->kind = A_REG;
    a->fd = -1;
    a->next = emu_allocs;
    emu_allocs = a;
    return emu_leave(cudaSuccess);
}

cudaError_t cudaHostUnregister(void *p)
{
    cudaError_t e = emu_enter();
    alloc_t *a;

    if (e != cudaSuccess) {
        return e;
    }
    a = emu_find(p);
    if (a == NULL || a->kind != A_REG || a->orig != p) {
        return emu_leave(cudaErrorHostMemoryNotRegistered);
    }
    emu_unlink_alloc(a);
    emu_release_alloc(a);
    return emu_leave(cudaSuccess);
}

cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned int flags)
{
    cudaError_t e = emu_enter();
    alloc_t *a;

    if (e != cudaSuccess) {
        return e;
    }
    a = emu_find(h);
    if (flags != 0 || a == NULL || (a->kind != A_HOST && a->kind != A_REG)) {
        return emu_leave(cudaErrorInvalidValue);
    }
    *d = h;
    return emu_leave(cudaSuccess);
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *at, const void *p)
{
    alloc_t *a;

    pthread_mutex_lock(&emu_mu);
    emu_setup();
    a = emu_find(p);
    memset(at, 0, sizeof(*at));
    at->device = -2;
    if (a == NULL) {
        at->type = cudaMemoryTypeUnregistered;
    } else if (emu_is_device(a)) {
        at->type = cudaMemoryTypeDevice;
        at->device = a->device;
        at->devicePointer = (void *)p;
    } else {
        at->type = cudaMemoryTypeHost;
        at->device = emu_cur_dev;
        at->devicePointer = (void *)p;
        at->hostPointer = (void *)p;
    }
    pthread_mutex_unlock(&emu_mu);
    return cudaSuccess;
}

/* ---- CUDA IPC --------------------------------------------------------------- */

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *p)
{
    cudaError_t e = emu_enter();
    ipc_handle_t h;
    alloc_t *a;

    if (e != cudaSuccess) {
        return e;
    }
    a = emu_find(p);
    if (a == NULL || a->kind != A_DEVICE || a->dev != (char *)p) {
        return emu_leave(cudaErrorInvalidValue); /* pool memory has none, as on a GPU */
    }
    memset(&h, 0, sizeof(h));
    h.magic = 0x49504348U;
    h.pid = (int32_t)getpid();
    h.fd = a->fd;
    h.device = a->device;
    h.id = a->id;
    h.ino = a->ino;
    h.size = a->size;
    memset(handle, 0, sizeof(*handle));
    memcpy(handle, &h, sizeof(h));
    return emu_leave(cudaSuccess);
}

cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t handle, unsigned int flags)
{
    cudaError_t e = emu_enter();
    ipc_handle_t h;
    alloc_t *a;
    struct stat st;
    char path[64];
    int fd;

    (void)flags;
    if (e != cudaSuccess) {
        return e;
    }
    memcpy(&h, &handle, sizeof(h));
    if (h.magic != 0x49504348U) {
        return emu_leave(cudaErrorInvalidValue);
    }
    if (emu_no_ipc) {
        return emu_leave(cudaErrorNotSupported);
    }
    if (emu_no_p2p && h.device != emu_cur_dev) {
        return emu_leave(cudaErrorPeerAccessUnsupported);
    }
    if (h.pid == (int32_t)getpid()) {
        return emu_leave(cudaErrorDeviceUninitialized); /* CUDA: not in the owner's process */
    }
    for (a = emu_allocs; a != NULL; a = a->next) {
        if (a->kind == A_IPC && a->pid == h.pid && a->id == h.id) {
            a->refs++;
            *p = a->dev;
            return emu_leave(cudaSuccess);
        }
    }
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)h.pid, (int)h.fd);
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return emu_leave(cudaErrorInvalidValue); /* the owner is gone or freed it */
    }
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_ino != h.ino ||
        (a = calloc(1, sizeof(*a))) == NULL) {
        close(fd);
        return emu_leave(cudaErrorInvalidValue);
    }
    a->size = h.size;
    a->mapped = emu_pages(h.size > 0 ? h.size : 1);
    if (emu_map_twice(fd, a->mapped, &a->dev, &a->back) != 0) {
        close(fd);
        free(a);
        return emu_leave(cudaErrorMapBufferObjectFailed);
    }
    close(fd);
    a->fd = -1;
    a->kind = A_IPC;
    a->device = h.device;
    a->pid = h.pid;
    a->id = h.id;
    a->refs = 1;
    a->next = emu_allocs;
    emu_allocs = a;
    *p = a->dev;
    return emu_leave(cudaSuccess);
}

cudaError_t cudaIpcCloseMemHandle(void *p)
{
    cudaError_t e = emu_enter();
    alloc_t *a;

    if (e != cudaSuccess) {
        return e;
    }
    a = emu_find(p);
    if (a == NULL || a->kind != A_IPC || a->dev != (char *)p) {
        return emu_leave(cudaErrorInvalidValue);
    }
    if (--a->refs == 0) {
        emu_unlink_alloc(a);
        emu_release_alloc(a);
    }
    return emu_leave(cudaSuccess);
}
