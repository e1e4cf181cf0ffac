/*
 * cuda_pipe.c - copies in flight for the chunked staging of device tensors
 * (cuda.h, "copies in flight"; the schedule is exec/stage_pipe.c).
 *
 * Per device, made on first use and kept for the process's life: two
 * streams of tcoll's own, one for copies to the host and one for copies to
 * the device (so the two directions run at once, as the bus allows), both
 * non-blocking with respect to the legacy default stream, and one event
 * per slot and direction, with blocking sync: a wait sleeps. Only the
 * engine thread uses them (it keeps the device current, as cuda_rt.c's
 * copies do).
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda/cuda.h"
#include "cuda/cuda_internal.h"

typedef struct {
    int made;
    cudaStream_t stream[2];                  /* [0] to the host, [1] to the device */
    cudaEvent_t done[2][TC_CUDA_PIPE_SLOTS]; /* the last copy of a slot, each way */
} pipe_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pipe_t *pipes; /* [device count] */

/* dev's pipe, made on first use, with dev current on this thread; slot
 * checked against its events. */
static tc_status_t get(int dev, int slot, pipe_t **p_p, char *why, size_t len)
{
    tc_cuda_ctx_t ctx;
    tc_status_t st;
    cudaError_t e = cudaSuccess;
    pipe_t *p;
    int d, s;

    if (slot < 0 || slot >= TC_CUDA_PIPE_SLOTS) {
        snprintf(why, len, "copy slot %d out of range", slot);
        return TC_ERR_ARG;
    }
    /* checks dev, makes it current */
    if ((st = tc__cuda_ctx(dev, NULL, &ctx, why, len)) != TC_OK) {
        return st;
    }
    pthread_mutex_lock(&mu);
    if (pipes == NULL &&
        (pipes = calloc((size_t)tc__cuda_device_count(), sizeof(*pipes))) == NULL) {
        pthread_mutex_unlock(&mu);
        snprintf(why, len, "out of memory");
        return TC_ERR_NOMEM;
    }
    p = &pipes[dev];
    for (d = 0; !p->made && d < 2 && e == cudaSuccess; d++) {
        e = cudaStreamCreateWithFlags(&p->stream[d], cudaStreamNonBlocking);
        for (s = 0; s < TC_CUDA_PIPE_SLOTS && e == cudaSuccess; s++) {
            e = cudaEventCreateWithFlags(&p->done[d][s],
                                         cudaEventBlockingSync | cudaEventDisableTiming);
        }
    }
    if (e != cudaSuccess) { /* what was made stays unused: the next call tries again */
        pthread_mutex_unlock(&mu);
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "making tcoll's copy streams", e);
    }
    p->made = 1;
    pthread_mutex_unlock(&mu);
    *p_p = p;
    return TC_OK;
}

tc_status_t tc__cuda_pipe_copy(int dev, int slot, int to_device, void *dst, const void *src,
                               size_t bytes, char *why, size_t len)
{
    pipe_t *p;
    cudaError_t e;
    int d = to_device != 0;
    tc_status_t st;

    if ((st = get(dev, slot, &p, why, len)) != TC_OK) {
        return st;
    }
    if (bytes > 0 &&
        (e = cudaMemcpyAsync(dst, src, bytes, d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                             p->stream[d])) != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "cudaMemcpyAsync", e);
    }
    if ((e = cudaEventRecord(p->done[d][slot], p->stream[d])) != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "cudaEventRecord", e);
    }
    return TC_OK;
}

tc_status_t tc__cuda_pipe_wait(int dev, int slot, int to_device, char *why, size_t len)
{
    pipe_t *p;
    cudaError_t e;
    tc_status_t st;

    if ((st = get(dev, slot, &p, why, len)) != TC_OK) {
        return st;
    }
    if ((e = cudaEventSynchronize(p->done[to_device != 0][slot])) != cudaSuccess) {
        return tc__cuda_failed(TC_ERR_TRANSPORT, why, len, "waiting for a staging copy", e);
    }
    return TC_OK;
}
