/*
 * emu_device.c - the CUDA runtime stand-in's devices, errors, the driver entry
 * points tcoll asks for, and kernels: tcoll's (emu_kernels.cpp), checked
 * and queued like any stream work (cudart_emu.c says what the stand-in is).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

/* ---- devices and errors --------------------------------------------------- */

cudaError_t cudaGetDeviceCount(int *count)
{
    pthread_mutex_lock(&emu_mu);
    emu_setup();
    *count = emu_ndev;
    pthread_mutex_unlock(&emu_mu);
    return emu_ndev > 0 ? cudaSuccess : emu_fail(cudaErrorNoDevice);
}

cudaError_t cudaSetDevice(int device)
{
    pthread_mutex_lock(&emu_mu);
    emu_setup();
    if (device < 0 || device >= emu_ndev) {
        pthread_mutex_unlock(&emu_mu);
        return emu_fail(cudaErrorInvalidDevice);
    }
    emu_cur_dev = device;
    emu_active[device] = 1;
    pthread_mutex_unlock(&emu_mu);
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    *device = emu_cur_dev;
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = emu_last_error;
    emu_last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    return emu_last_error;
}

const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    case cudaErrorSymbolNotFound: return "cudaErrorSymbolNotFound";
    case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorHostMemoryAlreadyRegistered: return "cudaErrorHostMemoryAlreadyRegistered";
    case cudaErrorHostMemoryNotRegistered: return "cudaErrorHostMemoryNotRegistered";
    case cudaErrorMapBufferObjectFailed: return "cudaErrorMapBufferObjectFailed";
    case cudaErrorDeviceUninitialized: return "cudaErrorDeviceUninitialized";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case cudaErrorPeerAccessUnsupported: return "cudaErrorPeerAccessUnsupported";
    default: return "cudaErrorUnknown";
    }
}

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument (CUDA stand-in)";
    case cudaErrorIllegalAddress:
        return "an illegal memory access was encountered (CUDA stand-in: a kernel was given "
               "memory the device cannot reach)";
    case cudaErrorNotSupported: return "operation not supported (CUDA stand-in)";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle (CUDA stand-in)";
    default: return cudaGetErrorName(e);
    }
}

cudaError_t cudaDriverGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int device)
{
    pthread_mutex_lock(&emu_mu);
    emu_setup();
    pthread_mutex_unlock(&emu_mu);
    if (device < 0 || device >= emu_ndev) {
        return emu_fail(cudaErrorInvalidDevice);
    }
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "CUDA stand-in %d (host memory, for tests)", device);
    p->major = 9;
    p->minor = 0;
    p->totalGlobalMem = (size_t)16 << 30;
    p->multiProcessorCount = 1;
    p->maxThreadsPerBlock = 1024;
    p->unifiedAddressing = 1;
    p->canMapHostMemory = 1;
    p->pciBusID = 0xe0 + device;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    pthread_mutex_lock(&emu_mu);
    emu_setup();
    pthread_mutex_unlock(&emu_mu);
    if (device < 0 || device >= emu_ndev) {
        return emu_fail(cudaErrorInvalidDevice);
    }
    switch (attr) {
    case cudaDevAttrUnifiedAddressing:
    case cudaDevAttrCanMapHostMemory:
    case cudaDevAttrCanUseHostPointerForRegisteredMem: *value = 1; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrMemoryPoolsSupported: *value = !emu_no_pools; break;
    default: *value = 0; break;
    }
    return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *can, int device, int peer)
{
    pthread_mutex_lock(&emu_mu);
    emu_setup();
    pthread_mutex_unlock(&emu_mu);
    if (device < 0 || device >= emu_ndev || peer < 0 || peer >= emu_ndev) {
        return emu_fail(cudaErrorInvalidDevice);
    }
    *can = device != peer && !emu_no_p2p;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *buf, int len, int device)
{
    pthread_mutex_lock(&emu_mu);
    emu_setup();
    pthread_mutex_unlock(&emu_mu);
    if (device < 0 || device >= emu_ndev || len < 13) {
        return emu_fail(cudaErrorInvalidValue);
    }
    snprintf(buf, (size_t)len, "0000:%02X:00.0", 0xe0 + device);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    cudaError_t e = emu_enter();
    if (e != cudaSuccess) {
        return e;
    }
    emu_sync_all();
    return emu_leave(cudaSuccess);
}

/* ---- the driver entry points tcoll asks for --------------------------------- */

static CUresult emu_address_range(CUdeviceptr *base, size_t *size, CUdeviceptr ptr)
{
    alloc_t *a;
    CUresult r = CUDA_ERROR_NOT_FOUND;

    pthread_mutex_lock(&emu_mu);
    a = emu_find((const void *)(uintptr_t)ptr);
    if (emu_is_device(a)) {
        if (base != NULL) {
            *base = (CUdeviceptr)(uintptr_t)a->dev;
        }
        if (size != NULL) {
            *size = a->size;
        }
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&emu_mu);
    return r;
}

static CUresult emu_ctx_state(CUdevice dev, unsigned int *flags, int *is_active)
{
    pthread_mutex_lock(&emu_mu);
    emu_setup();
    if (dev < 0 || dev >= emu_ndev) {
        pthread_mutex_unlock(&emu_mu);
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *flags = 0;
    *is_active = emu_active[dev];
    pthread_mutex_unlock(&emu_mu);
    return CUDA_SUCCESS;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int version,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *status)
{
    (void)version;
    (void)flags;
    *fn = NULL;
    if (strcmp(symbol, "cuMemGetAddressRange") == 0) {
        *fn = (void *)emu_address_range;
    } else if (strcmp(symbol, "cuDevicePrimaryCtxGetState") == 0) {
        *fn = (void *)emu_ctx_state;
    }
    if (status != NULL) {
        *status = *fn != NULL ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
    }
    return cudaSuccess;
}

/* ---- kernels ------------------------------------------------------------------ */

static struct CUlib_st {
    int dummy;
} the_lib;

/* A kernel handle is the address of its slot here. */
static char kernel_slots[TC_EMU_MAX_INPUTS];

static int kernel_index(const void *func)
{
    const char *f = func;
    return f >= kernel_slots && f < kernel_slots + sizeof(kernel_slots) ? (int)(f - kernel_slots)
                                                                        : -1;
}

cudaError_t cudaLibraryLoadData(cudaLibrary_t *lib, const void *code, enum cudaJitOption *jo,
                                void **jv, unsigned int nj, enum cudaLibraryOption *lo, void **lv,
                                unsigned int nl)
{
    (void)jo;
    (void)jv;
    (void)nj;
    (void)lo;
    (void)lv;
    (void)nl;
    if (code == NULL) {
        return emu_fail(cudaErrorInvalidValue);
    }
    *lib = &the_lib;
    return cudaSuccess;
}

cudaError_t cudaLibraryGetKernel(cudaKernel_t *k, cudaLibrary_t lib, const char *name)
{
    int i = tc_emu_kernel_find(name);

    if (lib != &the_lib || i < 0) {
        return emu_fail(cudaErrorSymbolNotFound);
    }
    *k = (cudaKernel_t)(void *)(kernel_slots + i);
    return cudaSuccess;
}

cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
    if (kernel_index(func) < 0) {
        return emu_fail(cudaErrorInvalidDeviceFunction);
    }
    memset(attr, 0, sizeof(*attr));
    attr->maxThreadsPerBlock = 1024;
    attr->ptxVersion = 75;
    attr->binaryVersion = 90;
    return cudaSuccess;
}

/* *out: the writable address of [p, p + bytes), when it is memory device
 * dev's kernels can reach: its own memory, memory opened from a peer
 * process (of any device: CUDA IPC enables peer access), or page-locked
 * host memory. */
static int reachable(const void *p, size_t bytes, int dev, void **out)
{
    alloc_t *a;

    if (bytes == 0) {
        *out = (void *)p;
        return 1;
    }
    if (emu_translate(p, bytes, out, &a) != cudaSuccess || a == NULL) {
        return 0;
    }
    /* memory opened through CUDA IPC is opened with peer access */
    return !emu_is_device(a) || a->device == dev || (a->kind == A_IPC && !emu_no_p2p);
}

cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem,
                             cudaStream_t h)
{
    struct CUstream_st *s;
    int k = kernel_index(func), j, failing;
    size_t count, bytes;
    op_t *o;
    cudaError_t e = emu_enter_stream(h, &s);

    if (e != cudaSuccess) {
        return e;
    }
    if (k < 0) {
        return emu_leave(cudaErrorInvalidDeviceFunction);
    }
    if (s->device != emu_cur_dev) {
        return emu_leave(cudaErrorInvalidResourceHandle);
    }
    if (grid.x == 0 || block.x == 0 || block.x > 1024 || grid.y != 1 || grid.z != 1 ||
        block.y != 1 || block.z != 1 || shmem != 0) {
        return emu_leave(cudaErrorInvalidConfiguration);
    }
    failing = emu_fail_launch > 0 && ++emu_launches == emu_fail_launch; /* a fault asked for */
    if (failing && !emu_fail_sticky) {
        return emu_leave(cudaErrorLaunchOutOfResources);
    }
    if ((o = emu_new_op(OP_KERNEL)) == NULL) {
        return emu_leave(cudaErrorMemoryAllocation);
    }
    o->kernel = k;
    o->grid = grid.x;
    o->block = block.x;
    o->kop = *(int *)args[0];
    o->kn = *(int *)args[1];
    count = *(size_t *)args[4];
    o->pre = *(double *)args[5];
    o->post = *(double *)args[6];
    bytes = count * tc_emu_kernel_elsize(k);
    o->bytes = count;
    if (o->kn < 1 || o->kn > TC_EMU_MAX_INPUTS) {
        free(o);
        return emu_leave(cudaErrorInvalidValue);
    }
    /* memory the device cannot reach faults when the kernel runs, as on a
     * GPU: the launch succeeds, the error is sticky from then on */
    for (j = 0; j < o->kn; j++) {
        const void *x = ((const void *const *)args[2])[j];
        void *t = NULL;
        o->fault |= !reachable(x, bytes, s->device, &t);
        o->kx[j] = t;
    }
    o->fault |= !reachable(*(void **)args[3], bytes, s->device, &o->dst);
    o->fault |= failing;
    return emu_leave(emu_enqueue(s, o));
}
