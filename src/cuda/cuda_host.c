/*
 * cuda_host.c - CUDA for host threads that serve a device rather than
 * stage tensors (a proxy for a GPU, channels driven from kernels): which
 * device a thread has, making one current for good, where a device sits on
 * the PCI bus (for NUMA binding), and host memory mapped into every
 * device's address space (the FIFO a kernel pushes into, semaphore lines,
 * host buffers of memory channels).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cuda/cuda.h"
#include "cuda/cuda_internal.h"

tc_status_t tc__cuda_current(int *dev_p, char *why, size_t len)
{
    const char *no = NULL;
    cudaError_t e;

    if (!tc__cuda_available(&no)) {
        snprintf(why, len, "%s", no);
        return TC_ERR_STATE;
    }
    if ((e = cudaGetDevice(dev_p)) != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_STATE, why, len, "cudaGetDevice", e);
    }
    return TC_OK;
}

tc_status_t tc__cuda_set_current(int dev, char *why, size_t len)
{
    const char *no = NULL;
    cudaError_t e;

    if (!tc__cuda_available(&no)) {
        snprintf(why, len, "%s", no);
        return TC_ERR_ARG;
    }
    if (dev < 0 || dev >= tc__cuda_device_count()) {
        snprintf(why, len, "CUDA device %d does not exist (this process sees %d)", dev,
                 tc__cuda_device_count());
        return TC_ERR_ARG;
    }
    if ((e = cudaSetDevice(dev)) != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_ARG, why, len, "cudaSetDevice", e);
    }
    return TC_OK;
}

tc_status_t tc__cuda_pci_bus_id(int dev, char *buf, size_t buflen, char *why, size_t len)
{
    cudaError_t e;
    size_t i;

    if (buflen < 16) {
        snprintf(why, len, "tc__cuda_pci_bus_id: a buffer of %zu bytes is too short", buflen);
        return TC_ERR_ARG;
    }
    if ((e = cudaDeviceGetPCIBusId(buf, (int)buflen, dev)) != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_ARG, why, len, "cudaDeviceGetPCIBusId", e);
    }
    /* CUDA writes "0000:3B:00.0"; sysfs and hwloc match lower case. */
    for (i = 0; buf[i] != '\0'; i++) {
        buf[i] = (char)tolower((unsigned char)buf[i]);
    }
    return TC_OK;
}

/* What tc__cuda_host_map mapped, by start address: mapped again (two
 * contexts, two channels on one region) it is counted, and unregistered
 * only by the last unmap, and only when tcoll registered it (memory the
 * application page-locked itself, with cudaHostAlloc or cudaHostRegister,
 * is used as it is and left so). CUDA page-locks whole pages: a range that
 * shares a page with one tcoll registered is refused as registered
 * already; it then uses that registration (its parent), which stays until
 * both are unmapped. */
typedef struct hostreg {
    void *p;
    size_t bytes;
    int dev; /* the device whose context registered it, -1: not known */
    int refs;
    int ours;               /* registered by tcoll */
    struct hostreg *parent; /* the registration of tcoll's it lies in, or NULL */
    struct hostreg *next;
} hostreg_t;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static hostreg_t *regs;

/* tcoll's own registration whose pages hold [p, p + bytes) (reg_mu held). */
static hostreg_t *holder(const void *p, size_t bytes)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)p, b = a + bytes;
    hostreg_t *r;

    for (r = regs; r != NULL; r = r->next) {
        uintptr_t lo = (uintptr_t)r->p / pg * pg,
                  hi = ((uintptr_t)r->p + r->bytes + pg - 1) / pg * pg;
        if (r->ours && a >= lo && b <= hi) {
            return r;
        }
    }
    return NULL;
}

/* tc__cuda_host_map in dev's context, current (reg_mu not held). */
static tc_status_t host_map_here(int dev, void *p, size_t bytes, void **dev_p, char *why,
                                 size_t len)
{
    hostreg_t *r, *parent = NULL;
    cudaError_t e;
    int ours = 1;

    pthread_mutex_lock(&reg_mu);
    for (r = regs; r != NULL && r->p != p; r = r->next) {
    }
    if (r == NULL) {
        e = cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
        if (e == cudaErrorHostMemoryAlreadyRegistered) {
            (void)cudaGetLastError(); /* page-locked already: use it as it is */
            ours = 0;
            parent = holder(p, bytes);
        } else if (e != cudaSuccess) {
            pthread_mutex_unlock(&reg_mu);
            return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "cudaHostRegister", e);
        }
    }
    if ((e = cudaHostGetDevicePointer(dev_p, p, 0)) != cudaSuccess) {
        if (r == NULL && ours) {
            (void)cudaHostUnregister(p);
        }
        pthread_mutex_unlock(&reg_mu);
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "cudaHostGetDevicePointer", e);
    }
    if (r == NULL && !ours && bytes > 1) {
        /* registered by someone else, or in part: the whole range must be,
         * in one piece, or the device would fault past the first pages */
        void *last = NULL;
        if (cudaHostGetDevicePointer(&last, (char *)p + bytes - 1, 0) != cudaSuccess ||
            (char *)last != (char *)*dev_p + bytes - 1) {
            (void)cudaGetLastError();
            pthread_mutex_unlock(&reg_mu);
            snprintf(why, len,
                     "%zu bytes at %p are page-locked only in part (a page of them belongs to "
                     "another registration, CUDA's or tcoll's): use memory of its own pages, "
                     "e.g. from tc_mem_alloc",
                     bytes, p);
            return TC_ERR_TRANSPORT;
        }
    }
    if (r == NULL) {
        if ((r = calloc(1, sizeof(*r))) == NULL) {
            if (ours) {
                (void)cudaHostUnregister(p);
            }
            pthread_mutex_unlock(&reg_mu);
            snprintf(why, len, "out of memory");
            return TC_ERR_NOMEM;
        }
        r->p = p;
        r->bytes = bytes;
        r->dev = dev;
        r->ours = ours;
        r->parent = parent;
        if (parent != NULL) {
            parent->refs++; /* it stays while this range uses it */
        }
        r->next = regs;
        regs = r;
    }
    r->refs++;
    pthread_mutex_unlock(&reg_mu);
    return TC_OK;
}

tc_status_t tc__cuda_host_map(int dev, void *p, size_t bytes, void **dev_p, char *why, size_t len)
{
    const char *no = NULL;
    int old = -1;
    cudaError_t e;
    tc_status_t st;

    if (!tc__cuda_available(&no)) {
        snprintf(why, len, "%s", no);
        return TC_ERR_STATE;
    }
    if ((e = tc__cuda_enter(&dev, &old)) != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_ARG, why, len, "cudaSetDevice", e);
    }
    st = host_map_here(dev, p, bytes, dev_p, why, len);
    tc__cuda_restore(dev, old);
    return st;
}

/* Unregisters r's memory in the context of the device that registered it. */
static void unregister(const hostreg_t *r)
{
    int dev = r->dev, old = -1;

    if (tc__cuda_enter(&dev, &old) != cudaSuccess) {
        (void)cudaGetLastError(); /* in the current one, then */
    }
    if (cudaHostUnregister(r->p) != cudaSuccess) {
        (void)cudaGetLastError();
    }
    tc__cuda_restore(dev, old);
}

void tc__cuda_host_unmap(void *p)
{
    hostreg_t **pp, *r;

    if (p == NULL) {
        return;
    }
    pthread_mutex_lock(&reg_mu);
    for (pp = &regs; *pp != NULL && (*pp)->p != p; pp = &(*pp)->next) {
    }
    r = *pp;
    while (r != NULL && --r->refs == 0) {
        hostreg_t *parent = r->parent;
        *pp = r->next;
        if (r->ours) {
            unregister(r);
        }
        free(r);
        /* the parent's count for this range */
        for (pp = &regs; *pp != NULL && *pp != parent; pp = &(*pp)->next) {
        }
        r = *pp;
    }
    pthread_mutex_unlock(&reg_mu);
}

int tc__cuda_host_native_atomics(int dev)
{
    int v = 0;

    if (cudaDeviceGetAttribute(&v, cudaDevAttrHostNativeAtomicSupported, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return v != 0;
}

tc_status_t tc__cuda_ptr_device(const void *p, size_t bytes, int *dev_p, char *why, size_t len)
{
    struct cudaPointerAttributes a;
    void *base = NULL;
    size_t size = 0;

    *dev_p = -1;
    /* No active context: p cannot be device memory (cudaMalloc makes the
     * device's primary context), and asking would make one here. */
    if (!tc__cuda_available(NULL) || !tc__cuda_any_context()) {
        return TC_OK;
    }
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError(); /* memory CUDA does not know: host memory */
        return TC_OK;
    }
    if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged) {
        return TC_OK;
    }
    if (a.type == cudaMemoryTypeDevice && bytes > 0 &&
        tc__cuda_mapped_range(p, bytes, &base, &size) &&
        (bytes > size || (uintptr_t)p - (uintptr_t)base > size - bytes)) {
        snprintf(why, len,
                 "%zu bytes of CUDA device %d's memory at %p run %zu bytes past the end "
                 "of its allocation",
                 bytes, a.device, p, (size_t)((uintptr_t)p - (uintptr_t)base) + bytes - size);
        return TC_ERR_ARG;
    }
    *dev_p = a.device;
    return TC_OK;
}

struct tc_cuda_copier {
    int dev;
    cudaStream_t stream;
    cudaEvent_t done; /* blocking sync: finish sleeps */
};

tc_status_t tc__cuda_copier_create(int dev, tc_cuda_copier_t **c_p, char *why, size_t len)
{
    tc_cuda_copier_t *c;
    cudaError_t e;
    tc_status_t st;

    *c_p = NULL;
    if ((st = tc__cuda_set_current(dev, why, len)) != TC_OK) {
        return st;
    }
    if ((c = calloc(1, sizeof(*c))) == NULL) {
        snprintf(why, len, "out of memory");
        return TC_ERR_NOMEM;
    }
    c->dev = dev;
    if ((e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        free(c);
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "cudaStreamCreateWithFlags", e);
    }
    e = cudaEventCreateWithFlags(&c->done, cudaEventBlockingSync | cudaEventDisableTiming);
    if (e != cudaSuccess) {
        (void)cudaStreamDestroy(c->stream);
        free(c);
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "cudaEventCreateWithFlags", e);
    }
    *c_p = c;
    return TC_OK;
}

tc_status_t tc__cuda_copier_copy(tc_cuda_copier_t *c, void *dst, const void *src, size_t bytes,
                                 char *why, size_t len)
{
    cudaError_t e;

    if (bytes == 0) {
        return TC_OK;
    }
    if ((e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, c->stream)) != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "cudaMemcpyAsync", e);
    }
    return TC_OK;
}

tc_status_t tc__cuda_copier_finish(tc_cuda_copier_t *c, char *why, size_t len)
{
    cudaError_t e;

    if ((e = cudaEventRecord(c->done, c->stream)) != cudaSuccess ||
        (e = cudaEventSynchronize(c->done)) != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "waiting for the copies", e);
    }
    return TC_OK;
}

void tc__cuda_copier_destroy(tc_cuda_copier_t *c)
{
    if (c != NULL) {
        (void)cudaStreamSynchronize(c->stream);
        (void)cudaEventDestroy(c->done);
        (void)cudaStreamDestroy(c->stream);
        (void)cudaGetLastError();
        free(c);
    }
}
