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
#include <stdio.h>

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

tc_status_t tc__cuda_host_map(void *p, size_t bytes, void **dev_p, char *why, size_t len)
{
    const char *no = NULL;
    cudaError_t e;

    if (!tc__cuda_available(&no)) {
        snprintf(why, len, "%s", no);
        return TC_ERR_STATE;
    }
    e = cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
    if (e != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "cudaHostRegister", e);
    }
    if ((e = cudaHostGetDevicePointer(dev_p, p, 0)) != cudaSuccess) {
        (void)cudaHostUnregister(p);
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "cudaHostGetDevicePointer", e);
    }
    return TC_OK;
}

void tc__cuda_host_unmap(void *p)
{
    if (p != NULL && cudaHostUnregister(p) != cudaSuccess) {
        (void)cudaGetLastError();
    }
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
