/*
 * emu_stream.c - the CUDA runtime stand-in's streams, events and copies (each
 * checked when queued, carried out by the stream's thread; cudart_emu.c
 * says what the stand-in is).
 */
#define _GNU_SOURCE
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

/* ---- streams and events ------------------------------------------------------ */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *h, unsigned int flags)
{
    cudaError_t e = emu_enter();
    struct CUstream_st *s;

    (void)flags;
    if (e != cudaSuccess) {
        return e;
    }
    if ((s = emu_new_stream(emu_cur_dev)) == NULL) {
        return emu_leave(cudaErrorMemoryAllocation);
    }
    *h = s;
    return emu_leave(cudaSuccess);
}

cudaError_t cudaStreamCreate(cudaStream_t *h)
{
    return cudaStreamCreateWithFlags(h, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t h)
{
    cudaError_t e = emu_enter();
    struct CUstream_st *s;

    if (e != cudaSuccess) {
        return e;
    }
    if ((uintptr_t)h <= 2 || (s = emu_stream_of(h)) == NULL) {
        return emu_leave(cudaErrorInvalidResourceHandle);
    }
    s->dead = 1; /* its queue still runs; the handle is no longer taken */
    return emu_leave(cudaSuccess);
}

cudaError_t cudaStreamSynchronize(cudaStream_t h)
{
    struct CUstream_st *s;
    cudaError_t e = emu_enter_stream(h, &s);

    if (e != cudaSuccess) {
        return e;
    }
    emu_sync_stream(s);
    return emu_leave(emu_sticky);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t h, enum cudaStreamCaptureStatus *status)
{
    struct CUstream_st *s;
    cudaError_t e = emu_enter_stream(h, &s);

    if (e != cudaSuccess) {
        return e;
    }
    *status = cudaStreamCaptureStatusNone;
    return emu_leave(cudaSuccess);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev, unsigned int flags)
{
    cudaError_t e = emu_enter();
    struct CUevent_st *v;

    if (e != cudaSuccess) {
        return e;
    }
    if ((v = calloc(1, sizeof(*v))) == NULL) {
        return emu_leave(cudaErrorMemoryAllocation);
    }
    v->magic = EVENT_MAGIC;
    v->device = emu_cur_dev;
    v->flags = flags;
    *ev = v;
    return emu_leave(cudaSuccess);
}

cudaError_t cudaEventCreate(cudaEvent_t *ev)
{
    return cudaEventCreateWithFlags(ev, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t ev)
{
    if (ev == NULL || ev->magic != EVENT_MAGIC) {
        return emu_fail(cudaErrorInvalidResourceHandle);
    }
    /* a queued record still names it: freed once that is done (a queued
     * wait copied what it waits for) */
    pthread_mutex_lock(&emu_mu);
    ev->magic = 0;
    ev->destroyed = 1;
    if (ev->pending == 0) {
        free(ev);
    }
    pthread_mutex_unlock(&emu_mu);
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t h)
{
    struct CUstream_st *s;
    op_t *o;
    cudaError_t e = emu_enter_stream(h, &s);

    if (e != cudaSuccess) {
        return e;
    }
    if (ev == NULL || ev->magic != EVENT_MAGIC) {
        return emu_leave(cudaErrorInvalidResourceHandle);
    }
    if (s->device != ev->device) {
        return emu_leave(cudaErrorInvalidResourceHandle); /* as CUDA: not across devices */
    }
    if ((o = emu_new_op(OP_RECORD)) == NULL) {
        return emu_leave(cudaErrorMemoryAllocation);
    }
    o->ev = ev;
    e = emu_enqueue(s, o);
    if (e == cudaSuccess) {
        ev->pending++;
        ev->s = s;
        ev->seq = s->queued;
    }
    return emu_leave(e);
}

int emu_event_done(const struct CUevent_st *ev)
{
    return ev->s == NULL || ev->s->done >= ev->seq;
}

cudaError_t cudaEventQuery(cudaEvent_t ev)
{
    int done;

    pthread_mutex_lock(&emu_mu);
    if (ev == NULL || ev->magic != EVENT_MAGIC) {
        pthread_mutex_unlock(&emu_mu);
        return emu_fail(cudaErrorInvalidResourceHandle);
    }
    done = emu_event_done(ev);
    pthread_mutex_unlock(&emu_mu);
    return done ? (emu_sticky != cudaSuccess ? emu_fail(emu_sticky) : cudaSuccess)
                : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t ev)
{
    pthread_mutex_lock(&emu_mu);
    if (ev == NULL || ev->magic != EVENT_MAGIC) {
        pthread_mutex_unlock(&emu_mu);
        return emu_fail(cudaErrorInvalidResourceHandle);
    }
    while (!emu_event_done(ev)) {
        pthread_cond_wait(&emu_done_cv, &emu_mu);
    }
    pthread_mutex_unlock(&emu_mu);
    return emu_fail(emu_sticky);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    double d;

    pthread_mutex_lock(&emu_mu);
    if (a == NULL || b == NULL || a->magic != EVENT_MAGIC || b->magic != EVENT_MAGIC ||
        (a->flags & cudaEventDisableTiming) || (b->flags & cudaEventDisableTiming) ||
        a->s == NULL || b->s == NULL) {
        pthread_mutex_unlock(&emu_mu);
        return emu_fail(cudaErrorInvalidResourceHandle);
    }
    if (!emu_event_done(a) || !emu_event_done(b)) {
        pthread_mutex_unlock(&emu_mu);
        return cudaErrorNotReady;
    }
    d = (double)(b->at.tv_sec - a->at.tv_sec) * 1e3 + (double)(b->at.tv_nsec - a->at.tv_nsec) / 1e6;
    pthread_mutex_unlock(&emu_mu);
    *ms = (float)d;
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t h, cudaEvent_t ev, unsigned int flags)
{
    struct CUstream_st *s;
    op_t *o;
    cudaError_t e = emu_enter_stream(h, &s);

    (void)flags;
    if (e != cudaSuccess) {
        return e;
    }
    if (ev == NULL || ev->magic != EVENT_MAGIC) {
        return emu_leave(cudaErrorInvalidResourceHandle);
    }
    if (ev->s == NULL) {
        return emu_leave(cudaSuccess); /* never recorded: nothing to wait for */
    }
    if ((o = emu_new_op(OP_WAIT)) == NULL) {
        return emu_leave(cudaErrorMemoryAllocation);
    }
    o->ws = ev->s;
    o->wseq = ev->seq;
    return emu_leave(emu_enqueue(s, o));
}

cudaError_t cudaLaunchHostFunc(cudaStream_t h, cudaHostFn_t fn, void *arg)
{
    struct CUstream_st *s;
    op_t *o;
    cudaError_t e = emu_enter_stream(h, &s);

    if (e != cudaSuccess) {
        return e;
    }
    if ((o = emu_new_op(OP_HOSTFN)) == NULL) {
        return emu_leave(cudaErrorMemoryAllocation);
    }
    o->fn = fn;
    o->arg = arg;
    return emu_leave(emu_enqueue(s, o));
}

/* ---- copies ------------------------------------------------------------------ */

static cudaError_t queue_copy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                              struct CUstream_st *s)
{
    alloc_t *da, *sa;
    void *d, *r;
    op_t *o;

    if (bytes == 0) {
        return cudaSuccess;
    }
    if (emu_translate(dst, bytes, &d, &da) != cudaSuccess ||
        emu_translate(src, bytes, &r, &sa) != cudaSuccess) {
        return cudaErrorInvalidValue;
    }
    if (da != NULL && da == emu_fail_copy) { /* a fault asked for (emu_faults.h) */
        emu_fail_copy = NULL;
        return cudaErrorInvalidValue;
    }
    switch (kind) {
    case cudaMemcpyHostToDevice:
        if (!emu_is_device(da) || emu_is_device(sa)) {
            return cudaErrorInvalidValue;
        }
        break;
    case cudaMemcpyDeviceToHost:
        if (emu_is_device(da) || !emu_is_device(sa)) {
            return cudaErrorInvalidValue;
        }
        break;
    case cudaMemcpyDeviceToDevice:
        if (!emu_is_device(da) || !emu_is_device(sa)) {
            return cudaErrorInvalidValue;
        }
        break;
    case cudaMemcpyHostToHost:
        if (emu_is_device(da) || emu_is_device(sa)) {
            return cudaErrorInvalidValue;
        }
        break;
    case cudaMemcpyDefault: break;
    default: return cudaErrorInvalidValue;
    }
    if ((char *)d < (char *)r + bytes && (char *)r < (char *)d + bytes && d != r) {
        return cudaErrorInvalidValue; /* overlapping ends */
    }
    if ((o = emu_new_op(OP_COPY)) == NULL) {
        return cudaErrorMemoryAllocation;
    }
    o->dst = d;
    o->src = r;
    o->bytes = bytes;
    return emu_enqueue(s, o);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t h)
{
    struct CUstream_st *s;
    cudaError_t e = emu_enter_stream(h, &s);

    if (e != cudaSuccess) {
        return e;
    }
    return emu_leave(queue_copy(dst, src, bytes, kind, s));
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    cudaError_t e = emu_enter();
    struct CUstream_st *s;

    if (e != cudaSuccess) {
        return e;
    }
    s = emu_stream_of(NULL);
    if ((e = queue_copy(dst, src, bytes, kind, s)) == cudaSuccess) {
        emu_sync_stream(s);
    }
    return emu_leave(e);
}

static cudaError_t queue_set(void *dst, int value, size_t bytes, struct CUstream_st *s)
{
    alloc_t *a;
    void *d;
    op_t *o;

    if (bytes == 0) {
        return cudaSuccess;
    }
    if (emu_translate(dst, bytes, &d, &a) != cudaSuccess || !emu_is_device(a)) {
        return cudaErrorInvalidValue;
    }
    if ((o = emu_new_op(OP_SET)) == NULL) {
        return cudaErrorMemoryAllocation;
    }
    o->dst = d;
    o->value = value;
    o->bytes = bytes;
    return emu_enqueue(s, o);
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t h)
{
    struct CUstream_st *s;
    cudaError_t e = emu_enter_stream(h, &s);

    if (e != cudaSuccess) {
        return e;
    }
    return emu_leave(queue_set(dst, value, bytes, s));
}

cudaError_t cudaMemset(void *dst, int value, size_t bytes)
{
    cudaError_t e = emu_enter();
    struct CUstream_st *s;

    if (e != cudaSuccess) {
        return e;
    }
    s = emu_stream_of(NULL);
    if ((e = queue_set(dst, value, bytes, s)) == cudaSuccess) {
        emu_sync_stream(s);
    }
    return emu_leave(e);
}
