/*
 * emu_internal.h - between the files of the CUDA runtime stand-in
 * (cudart_emu.c says what it is): its memory, streams and events, and the
 * lock over them.
 */
#ifndef TC_CUDA_EMU_INTERNAL_H
#define TC_CUDA_EMU_INTERNAL_H

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "emu.h"

enum { A_DEVICE, A_POOL, A_IPC, A_HOST, A_REG };

typedef struct alloc {
    struct alloc *next;
    char *dev;     /* what the program sees (PROT_NONE for device memory) */
    char *back;    /* the same bytes, writable: copies and kernels */
    size_t size;   /* asked for */
    size_t mapped; /* whole pages */
    void *orig;    /* A_REG: the address registered (dev: its first page) */
    int device;    /* -1: host memory */
    int kind;
    int fd;    /* the memfd (A_DEVICE, A_POOL) */
    int refs;  /* opens (A_IPC) */
    pid_t pid; /* A_IPC: the owner and its allocation */
    uint64_t id;
    uint64_t ino;
} alloc_t;

typedef struct {
    uint32_t magic;
    int32_t pid;
    int32_t fd;
    int32_t device;
    uint64_t id;
    uint64_t ino;
    uint64_t size;
} ipc_handle_t;

enum { OP_COPY, OP_SET, OP_KERNEL, OP_HOSTFN, OP_WAIT, OP_FREE, OP_RECORD };

struct CUstream_st;

typedef struct op {
    struct op *next;
    int type;
    uint64_t seq;
    void *dst;
    const void *src;
    size_t bytes;
    int value;
    int kernel;
    int fault; /* OP_KERNEL: given memory its device cannot reach */
    unsigned grid, block;
    int kop, kn;
    const void *kx[TC_EMU_MAX_INPUTS];
    double pre, post;
    cudaHostFn_t fn;
    void *arg;
    struct CUstream_st *ws; /* OP_WAIT: until ws has done wseq */
    uint64_t wseq;
    alloc_t *free_a;       /* OP_FREE */
    struct CUevent_st *ev; /* OP_RECORD */
} op_t;

#define STREAM_MAGIC 0x5354524dU
#define EVENT_MAGIC 0x45564e54U

struct CUstream_st {
    uint32_t magic;
    int device;
    int started, dead;
    pthread_t th;
    pthread_cond_t cv;
    op_t *head, *tail;
    uint64_t queued, done;
    uint64_t rng;
    struct CUstream_st *all_next;
};

struct CUevent_st {
    uint32_t magic;
    int device;
    unsigned flags;
    struct CUstream_st *s; /* recorded on (NULL: never) */
    uint64_t seq;
    struct timespec at; /* when the recorded work was done */
    int pending;        /* records queued, not yet done */
    int destroyed;      /* freed when the last of them is done */
};

struct CUmemPoolHandle_st {
    int device;
};

/* The stand-in's state, under emu_mu (but the thread's own device and
 * error). */
extern pthread_mutex_t emu_mu;
extern pthread_cond_t emu_done_cv;
extern alloc_t *emu_allocs;
extern struct CUstream_st *emu_streams; /* every stream, never freed */
extern struct CUstream_st *emu_legacy[64];
extern int emu_ndev;
extern int emu_jitter_us;
extern int emu_no_ipc;
extern int emu_no_p2p;
extern int emu_no_pools;
extern int emu_fail_launch;
extern int emu_fail_sticky;
extern int emu_launches;
extern const alloc_t *emu_fail_copy;
extern int emu_active[64]; /* primary contexts made */
extern uint64_t emu_next_id;
extern cudaError_t emu_sticky; /* a kernel's illegal address */
extern __thread int emu_cur_dev;
extern __thread cudaError_t emu_last_error;

/* Reads TC_CUDA_EMU_* once (emu_mu held). */
void emu_setup(void);
/* e as the call's result, kept as the thread's last error unless success or
 * cudaErrorNotReady. */
cudaError_t emu_fail(cudaError_t e);
/* A call that needs the current device's context: takes emu_mu (released
 * by emu_leave, which returns e through emu_fail), or returns the sticky
 * error or cudaErrorNoDevice without it. */
cudaError_t emu_enter(void);
cudaError_t emu_leave(cudaError_t e);
/* emu_enter for a call on stream h: *s_p its stream, emu_mu held; or
 * cudaErrorInvalidResourceHandle (a handle no stream has), emu_mu not. */
cudaError_t emu_enter_stream(cudaStream_t h, struct CUstream_st **s_p);

/* ---- memory (cudart_emu.c; emu_mu held) ---- */
/* The allocation holding p, or NULL (memory CUDA does not know). */
alloc_t *emu_find(const void *p);
size_t emu_pages(size_t bytes);
/* Maps fd's first mapped bytes twice: *dev_p not accessible, *back_p read
 * and write. 0, or -1. */
int emu_map_twice(int fd, size_t mapped, char **dev_p, char **back_p);
/* A memfd of bytes for device's memory (kind A_DEVICE or A_POOL), filed. */
alloc_t *emu_device_alloc(size_t bytes, int device, int kind);
void emu_unlink_alloc(alloc_t *a);
void emu_release_alloc(alloc_t *a);
int emu_is_device(const alloc_t *a);
/* The writable address of [p, p + bytes), and what it is (*a_p: NULL for
 * memory CUDA does not know); cudaErrorInvalidValue when it runs past its
 * allocation. */
cudaError_t emu_translate(const void *p, size_t bytes, void **out, alloc_t **a_p);

/* ---- streams (cudart_emu.c; emu_mu held) ---- */
struct CUstream_st *emu_new_stream(int device);
/* The stream a handle names (0, cudaStreamLegacy, cudaStreamPerThread: the
 * current device's legacy stream); NULL for a handle that is not one. */
struct CUstream_st *emu_stream_of(cudaStream_t h);
/* Files o at the end of s's queue (its thread started on first use). */
cudaError_t emu_enqueue(struct CUstream_st *s, op_t *o);
/* Waits until every stream (emu_sync_all) or s has done what was queued
 * when called: cudaFree's implicit synchronization, cudaStreamSynchronize. */
void emu_sync_all(void);
void emu_sync_stream(struct CUstream_st *s);
op_t *emu_new_op(int type);
/* Whether what ev marks is done (never recorded: done). */
int emu_event_done(const struct CUevent_st *ev);

#endif
