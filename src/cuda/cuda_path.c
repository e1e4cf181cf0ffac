/*
 * cuda_path.c - the pieces of the in-node device path (docs/gpu.md, "Data
 * paths"): device memory shared between the processes of a node (CUDA IPC
 * handles, opened for one collective and closed after it), the combine
 * kernels (kernels.cu, loaded from the fatbin the build embeds, on first
 * use), and copies between device buffers. Each call queues its work on
 * tcoll's stream for the device and sleeps until it is done. The engine
 * thread.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda.h"
#include "cuda/cuda_internal.h"
#include "util/log.h"

#define NUM_DTYPES ((int)TC_UINT16 + 1) /* tc_dtype_t: 0 .. TC_UINT16 */

/* ---- the kernels ------------------------------------------------------------ */

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static cudaLibrary_t lib;
static cudaKernel_t kernels[NUM_DTYPES];
static char lib_why[256]; /* why they could not be loaded */
static int lib_ok;

static void load(void)
{
    static const struct {
        tc_dtype_t dt;
        const char *name;
    } names[] = {{TC_UINT8, "tc_combine_u8"},    {TC_INT8, "tc_combine_i8"},
                 {TC_UINT16, "tc_combine_u16"},  {TC_INT16, "tc_combine_i16"},
                 {TC_INT32, "tc_combine_i32"},   {TC_INT64, "tc_combine_i64"},
                 {TC_FLOAT16, "tc_combine_f16"}, {TC_BFLOAT16, "tc_combine_bf16"},
                 {TC_FLOAT32, "tc_combine_f32"}, {TC_FLOAT64, "tc_combine_f64"}};
    cudaError_t e = cudaLibraryLoadData(&lib, tc__cuda_kernels_image, NULL, NULL, 0, NULL, NULL, 0);
    size_t i;

    if (e != cudaSuccess) {
        tc__cuda_failed(TC_ERR_TRANSPORT, lib_why, sizeof(lib_why),
                        "loading tcoll's kernels (cudaLibraryLoadData)", e);
        return;
    }
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if ((e = cudaLibraryGetKernel(&kernels[names[i].dt], lib, names[i].name)) != cudaSuccess) {
            tc__cuda_failed(TC_ERR_TRANSPORT, lib_why, sizeof(lib_why), names[i].name, e);
            return;
        }
    }
    lib_ok = 1;
    TC_DEBUG("cuda", "tcoll's kernels loaded (%zu bytes of fatbin)", tc__cuda_kernels_image_len);
}

tc_status_t tc__cuda_combine_ready(int dev, tc_dtype_t dtype, char *why, size_t len)
{
    struct cudaFuncAttributes attr;
    tc_cuda_ctx_t c;
    cudaError_t e;
    int old = -1;
    tc_status_t st;

    if ((unsigned)dtype >= (unsigned)NUM_DTYPES) {
        snprintf(why, len, "combine: dtype %d", (int)dtype);
        return TC_ERR_ARG;
    }
    if ((st = tc__cuda_ctx(dev, &old, &c, why, len)) != TC_OK) {
        tc__cuda_restore(dev, old);
        return st;
    }
    pthread_once(&lib_once, load);
    if (!lib_ok) {
        tc__cuda_restore(dev, old);
        snprintf(why, len, "%s", lib_why);
        return TC_ERR_TRANSPORT;
    }
    /* loads the kernel into dev's context: an image this GPU cannot run
     * (no machine code for it, PTX its driver cannot compile) fails here */
    e = cudaFuncGetAttributes(&attr, (const void *)kernels[dtype]);
    tc__cuda_restore(dev, old);
    if (e != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "tcoll's combine kernel on this GPU", e);
    }
    return TC_OK;
}

/* The inputs of one launch, by value: kernels.cu's struct tc_cuda_inputs. */
typedef struct {
    const void *x[TC_CUDA_MAX_COMBINE];
} inputs_t;

tc_status_t tc__cuda_combine(int dev, tc_dtype_t dtype, tc_op_t op, int n, const void *const *x,
                             void *dst, size_t count, double prescale, double postscale, char *why,
                             size_t len)
{
    tc_cuda_ctx_t c;
    inputs_t in;
    int op_i = (int)op, k, threads = 256;
    size_t want = (count + 255) / 256;
    dim3 grid = {(unsigned)(want < 4096 ? want : 4096), 1, 1}, block = {(unsigned)threads, 1, 1};
    void *args[7];
    cudaError_t e;
    tc_status_t st;

    if (n < 1 || n > TC_CUDA_MAX_COMBINE || (unsigned)dtype >= (unsigned)NUM_DTYPES) {
        snprintf(why, len, "combine: %d inputs of dtype %d", n, (int)dtype);
        return TC_ERR_ARG;
    }
    if (count == 0) {
        return TC_OK;
    }
    if ((st = tc__cuda_ctx(dev, NULL, &c, why, len)) != TC_OK) {
        return st;
    }
    pthread_once(&lib_once, load);
    if (!lib_ok) {
        snprintf(why, len, "%s", lib_why);
        return TC_ERR_TRANSPORT;
    }
    memset(&in, 0, sizeof(in));
    for (k = 0; k < n; k++) {
        in.x[k] = x[k];
    }
    args[0] = &op_i;
    args[1] = &n;
    args[2] = &in;
    args[3] = &dst;
    args[4] = &count;
    args[5] = &prescale;
    args[6] = &postscale;
    e = cudaLaunchKernel((const void *)kernels[dtype], grid, block, args, 0, c.stream);
    if (e != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "launching the combine kernel", e);
    }
    return tc__cuda_finish(&c, why, len);
}

tc_status_t tc__cuda_copy_many(int dev, int n, void *const *dst, const void *const *src,
                               const size_t *bytes, char *why, size_t len)
{
    tc_cuda_ctx_t c;
    cudaError_t e;
    tc_status_t st = tc__cuda_ctx(dev, NULL, &c, why, len);
    int k;

    if (st != TC_OK) {
        return st;
    }
    for (k = 0; k < n; k++) {
        if (bytes[k] > 0 && (e = cudaMemcpyAsync(dst[k], src[k], bytes[k], cudaMemcpyDefault,
                                                 c.stream)) != cudaSuccess) {
            (void)cudaStreamSynchronize(c.stream); /* the copies queued before it end first */
            return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "cudaMemcpyAsync (device)", e);
        }
    }
    return tc__cuda_finish(&c, why, len);
}

/* ---- CUDA IPC ------------------------------------------------------------------ */

struct tc_cuda_ipc_maps {
    int n;
    void **base;              /* [n] what cudaIpcOpenMemHandle gave */
    const unsigned char **hd; /* [n] the handle each came from */
};

tc_status_t tc__cuda_ipc_export(int dev, const void *ptr, tc_cuda_ipc_t *h, char *why, size_t len)
{
    tc_cuda_ctx_t c;
    cudaIpcMemHandle_t mh;
    void *base = NULL;
    size_t size = 0;
    int old = -1;
    cudaError_t e;
    tc_status_t st = tc__cuda_ctx(dev, &old, &c, why, len);

    if (st != TC_OK) {
        tc__cuda_restore(dev, old);
        return st;
    }
    if (!tc__cuda_alloc_range(ptr, &base, &size)) {
        tc__cuda_restore(dev, old);
        snprintf(why, len, "the driver does not say which allocation %p is in", ptr);
        return TC_ERR_ARG;
    }
    e = cudaIpcGetMemHandle(&mh, base);
    tc__cuda_restore(dev, old);
    if (e != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_ARG, why, len, "cudaIpcGetMemHandle", e);
    }
    memset(h, 0, sizeof(*h));
    memcpy(h->handle, &mh, sizeof(mh) < sizeof(h->handle) ? sizeof(mh) : sizeof(h->handle));
    h->offset = (uint64_t)((uintptr_t)ptr - (uintptr_t)base);
    return TC_OK;
}

void tc__cuda_ipc_close(int dev, tc_cuda_ipc_maps_t *maps)
{
    tc_cuda_ctx_t c;
    char why[256];
    int k, old = -1;

    if (maps == NULL) {
        return;
    }
    if (maps->n > 0 && tc__cuda_ctx(dev, &old, &c, why, sizeof(why)) == TC_OK) {
        for (k = 0; k < maps->n; k++) {
            cudaError_t e = cudaIpcCloseMemHandle(maps->base[k]);
            if (e != cudaSuccess) {
                TC_WARN("cuda", "cudaIpcCloseMemHandle: %s", cudaGetErrorString(e));
                (void)cudaGetLastError();
            }
        }
    }
    tc__cuda_restore(dev, old);
    free(maps->base);
    free(maps->hd);
    free(maps);
}

tc_status_t tc__cuda_ipc_open(int dev, const tc_cuda_ipc_t *h, int m, void **ptrs,
                              tc_cuda_ipc_maps_t **maps_p, char *why, size_t len)
{
    tc_cuda_ipc_maps_t *maps = calloc(1, sizeof(*maps));
    tc_cuda_ctx_t c;
    tc_status_t st;
    int k, j, old = -1;

    *maps_p = NULL;
    if (maps == NULL || (maps->base = calloc((size_t)m + 1, sizeof(void *))) == NULL ||
        (maps->hd = calloc((size_t)m + 1, sizeof(*maps->hd))) == NULL) {
        tc__cuda_ipc_close(dev, maps);
        snprintf(why, len, "out of memory");
        return TC_ERR_NOMEM;
    }
    if ((st = tc__cuda_ctx(dev, &old, &c, why, len)) != TC_OK) {
        tc__cuda_restore(dev, old);
        tc__cuda_ipc_close(dev, maps);
        return st;
    }
    for (k = 0; k < m; k++) {
        void *base = NULL;
        for (j = 0; j < maps->n; j++) { /* an allocation already open */
            if (memcmp(maps->hd[j], h[k].handle, sizeof(h[k].handle)) == 0) {
                base = maps->base[j];
                break;
            }
        }
        if (base == NULL) {
            cudaIpcMemHandle_t mh;
            cudaError_t e;
            memcpy(&mh, h[k].handle, sizeof(mh));
            e = cudaIpcOpenMemHandle(&base, mh, cudaIpcMemLazyEnablePeerAccess);
            if (e != cudaSuccess) {
                tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "cudaIpcOpenMemHandle", e);
                tc__cuda_restore(dev, old);
                tc__cuda_ipc_close(dev, maps);
                return TC_ERR_TRANSPORT;
            }
            maps->base[maps->n] = base;
            maps->hd[maps->n] = h[k].handle;
            maps->n++;
        }
        ptrs[k] = (char *)base + h[k].offset;
    }
    tc__cuda_restore(dev, old);
    *maps_p = maps;
    return TC_OK;
}
