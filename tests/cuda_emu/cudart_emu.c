/*
 * cudart_emu.c - a stand-in for the CUDA runtime, for tests only: the part
 * of the runtime API that libtcoll and the GPU tests' C programs call
 * (test_gpu_kinds, tcoll-perf --device cuda), carried out on the host, so
 * that the engine's device records, their agreements, the CUDA IPC
 * exchange and the chunked staging run, multi-process, on a machine with
 * no GPU. It checks the orchestration above CUDA, never CUDA itself: a GPU
 * run (scripts/test_gpu.sh) remains the only proof that the device paths
 * work. Built as one shared library (TCOLL_CUDA_EMU=ON) that libtcoll and
 * the test program both link, so they share its state, as they would share
 * the driver's.
 *
 * Stricter than a GPU where that finds bugs:
 *  - device memory is a memfd mapped twice: the address the program sees
 *    is PROT_NONE, so host code that reads or writes device memory is
 *    killed by SIGSEGV; copies and kernels use the second, writable view;
 *  - every stream is a thread of its own that carries out its queue in
 *    order, each operation after a random pause (TC_CUDA_EMU_JITTER_US,
 *    default 20 us): work ordered by neither a stream nor an event races,
 *    and reading before a copy is done reads stale bytes;
 *  - a copy whose direction does not match its memories, that runs past
 *    an allocation or whose ends overlap fails; a kernel given memory the
 *    device cannot reach (ordinary host memory, another device's) faults
 *    when it runs, and the error is sticky (every later call returns it);
 *    an event recorded on a stream of another device fails;
 *  - closing an IPC mapping or unregistering host memory does not wait for
 *    the copies queued on it (a copy that runs later touches unmapped
 *    memory and kills the process); cudaFree does wait, as CUDA's does;
 *  - the legacy default stream does not synchronize with other streams
 *    (tcoll's and the tests' streams are non-blocking anyway);
 *  - cudaIpcOpenMemHandle maps the owner's memfd through /proc; it fails
 *    in the owner's own process, after the owner freed the memory, and
 *    with TC_CUDA_EMU_NO_IPC=1 (a sandbox that refuses CUDA IPC);
 *  - memory from a pool has no IPC handle, as on a GPU; TC_CUDA_EMU_NO_P2P=1
 *    refuses to open another device's memory (GPUs without peer access);
 *    TC_CUDA_EMU_NO_POOLS=1 makes devices without memory pools
 *    (cudaDevAttrMemoryPoolsSupported 0, cudaMemPoolCreate refused).
 * More lenient than a GPU: a pool never hands a block out again (a GPU's
 * may, in its stream's order, before the free's waits are over); the
 * per-thread default stream is the legacy one.
 * Faults on demand: TC_CUDA_EMU_FAIL_LAUNCH=k makes the k-th kernel launch
 * fail (cudaErrorLaunchOutOfResources, nothing queued), or with
 * TC_CUDA_EMU_FAIL_STICKY=1 fault when it runs (cudaErrorIllegalAddress,
 * sticky); with TC_CUDA_EMU_FAIL_RANK=r, those faults and
 * TC_CUDA_EMU_NO_IPC hold only in the process of MPI rank r. A test
 * program may also make one copy fail (emu_faults.h).
 * TC_CUDA_EMU_DEVICES (default 1) says how many devices it has. Kernels:
 * tcoll's, from emu_kernels.cpp (kernels.cu's source as C++).
 *
 * This file: the state, the memory's bookkeeping and the streams' threads.
 * The API: devices, errors and kernels (emu_device.c), memory and CUDA IPC
 * (emu_memory.c), streams, events and copies (emu_stream.c).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu_faults.h"
#include "emu_internal.h"

pthread_mutex_t emu_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t emu_done_cv = PTHREAD_COND_INITIALIZER;
alloc_t *emu_allocs;
struct CUstream_st *emu_streams; /* every stream, never freed */
struct CUstream_st *emu_legacy[64];
int emu_ndev = -1;
int emu_jitter_us = 20;
int emu_no_ipc;
int emu_no_p2p;      /* CUDA IPC only between processes on one device */
int emu_no_pools;    /* no stream-ordered memory pools (some virtual GPUs) */
int emu_fail_launch; /* the launch (from 1) that fails, 0: none */
int emu_fail_sticky; /* that launch faults when it runs instead */
int emu_launches;
const alloc_t *emu_fail_copy; /* the next copy into it fails (emu_faults.h) */
int emu_active[64];           /* primary contexts made */
uint64_t emu_next_id = 1;
cudaError_t emu_sticky = cudaSuccess; /* a kernel's illegal address */
__thread int emu_cur_dev;
__thread cudaError_t emu_last_error = cudaSuccess;

void emu_setup(void)
{
    const char *v;

    if (emu_ndev >= 0) {
        return;
    }
    v = getenv("TC_CUDA_EMU_DEVICES");
    emu_ndev = v != NULL ? atoi(v) : 1;
    if (emu_ndev < 0 || emu_ndev > 64) {
        emu_ndev = 1;
    }
    v = getenv("TC_CUDA_EMU_NO_P2P");
    emu_no_p2p = v != NULL && strcmp(v, "1") == 0;
    v = getenv("TC_CUDA_EMU_NO_POOLS");
    emu_no_pools = v != NULL && strcmp(v, "1") == 0;
    v = getenv("TC_CUDA_EMU_JITTER_US");
    if (v != NULL) {
        emu_jitter_us = atoi(v) > 0 ? atoi(v) : 0;
    }
    /* the faults below only in the process of MPI rank TC_CUDA_EMU_FAIL_RANK,
     * when it is set */
    v = getenv("TC_CUDA_EMU_FAIL_RANK");
    if (v != NULL) {
        const char *r = getenv("OMPI_COMM_WORLD_RANK");
        if (r == NULL) {
            r = getenv("PMI_RANK");
        }
        if (r == NULL || atoi(r) != atoi(v)) {
            return;
        }
    }
    v = getenv("TC_CUDA_EMU_NO_IPC");
    emu_no_ipc = v != NULL && strcmp(v, "1") == 0;
    v = getenv("TC_CUDA_EMU_FAIL_LAUNCH");
    emu_fail_launch = v != NULL ? atoi(v) : 0;
    v = getenv("TC_CUDA_EMU_FAIL_STICKY");
    emu_fail_sticky = v != NULL && strcmp(v, "1") == 0;
}

void tc_emu_fail_copy_into(const void *p)
{
    pthread_mutex_lock(&emu_mu);
    emu_fail_copy = p != NULL ? emu_find(p) : NULL;
    pthread_mutex_unlock(&emu_mu);
}

cudaError_t emu_fail(cudaError_t e)
{
    if (e != cudaSuccess && e != cudaErrorNotReady) {
        emu_last_error = e;
    }
    return e;
}

/* Every call but the queries: the context of the current device exists. */
cudaError_t emu_enter(void)
{
    pthread_mutex_lock(&emu_mu);
    emu_setup();
    if (emu_sticky != cudaSuccess) {
        pthread_mutex_unlock(&emu_mu);
        return emu_fail(emu_sticky);
    }
    if (emu_cur_dev >= emu_ndev) {
        pthread_mutex_unlock(&emu_mu);
        return emu_fail(cudaErrorNoDevice);
    }
    emu_active[emu_cur_dev] = 1;
    return cudaSuccess;
}

cudaError_t emu_leave(cudaError_t e)
{
    pthread_mutex_unlock(&emu_mu);
    return emu_fail(e);
}

cudaError_t emu_enter_stream(cudaStream_t h, struct CUstream_st **s_p)
{
    cudaError_t e = emu_enter();

    if (e != cudaSuccess) {
        return e;
    }
    if ((*s_p = emu_stream_of(h)) == NULL) {
        return emu_leave(cudaErrorInvalidResourceHandle);
    }
    return cudaSuccess;
}

/* ---- memory ----------------------------------------------------------------- */

alloc_t *emu_find(const void *p)
{
    alloc_t *a;
    for (a = emu_allocs; a != NULL; a = a->next) {
        if ((const char *)p >= a->dev && (const char *)p < a->dev + (a->size > 0 ? a->size : 1)) {
            return a;
        }
    }
    return NULL;
}

size_t emu_pages(size_t bytes)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (bytes + pg - 1) / pg * pg;
}

/* Maps fd's first mapped bytes twice: *dev_p not accessible, *back_p read
 * and write. */
int emu_map_twice(int fd, size_t mapped, char **dev_p, char **back_p)
{
    void *d = mmap(NULL, mapped, PROT_NONE, MAP_SHARED, fd, 0);
    void *b;

    if (d == MAP_FAILED) {
        return -1;
    }
    b = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (b == MAP_FAILED) {
        munmap(d, mapped);
        return -1;
    }
    *dev_p = d;
    *back_p = b;
    return 0;
}

alloc_t *emu_device_alloc(size_t bytes, int device, int kind)
{
    alloc_t *a = calloc(1, sizeof(*a));
    struct stat st;

    if (a == NULL) {
        return NULL;
    }
    a->size = bytes;
    a->mapped = emu_pages(bytes > 0 ? bytes : 1);
    a->device = device;
    a->kind = kind;
    a->fd = memfd_create("tcoll-cuda-emu", MFD_CLOEXEC);
    if (a->fd < 0 || ftruncate(a->fd, (off_t)a->mapped) != 0 || fstat(a->fd, &st) != 0 ||
        emu_map_twice(a->fd, a->mapped, &a->dev, &a->back) != 0) {
        if (a->fd >= 0) {
            close(a->fd);
        }
        free(a);
        return NULL;
    }
    a->ino = (uint64_t)st.st_ino;
    a->id = emu_next_id++;
    a->pid = getpid();
    a->next = emu_allocs;
    emu_allocs = a;
    return a;
}

void emu_unlink_alloc(alloc_t *a)
{
    alloc_t **pp;
    for (pp = &emu_allocs; *pp != NULL && *pp != a; pp = &(*pp)->next) {
    }
    if (*pp == a) {
        *pp = a->next;
    }
}

void emu_release_alloc(alloc_t *a)
{
    if (emu_fail_copy == a) {
        emu_fail_copy = NULL;
    }
    if (a->kind == A_DEVICE || a->kind == A_POOL || a->kind == A_IPC) {
        munmap(a->dev, a->mapped);
        munmap(a->back, a->mapped);
    }
    if (a->fd >= 0 && (a->kind == A_DEVICE || a->kind == A_POOL)) {
        close(a->fd);
    }
    if (a->kind == A_HOST) {
        free(a->dev);
    }
    free(a);
}

int emu_is_device(const alloc_t *a)
{
    return a != NULL && (a->kind == A_DEVICE || a->kind == A_POOL || a->kind == A_IPC);
}

/* The writable address of [p, p + bytes), and what it is (*a_p: NULL for
 * memory CUDA does not know); cudaErrorInvalidValue when it runs past its
 * allocation. */
cudaError_t emu_translate(const void *p, size_t bytes, void **out, alloc_t **a_p)
{
    alloc_t *a = emu_find(p);

    *a_p = a;
    if (a == NULL) {
        *out = (void *)p;
        return cudaSuccess;
    }
    if (bytes > a->size || (size_t)((const char *)p - a->dev) > a->size - bytes) {
        return cudaErrorInvalidValue;
    }
    *out = a->back + ((const char *)p - a->dev);
    return cudaSuccess;
}

/* ---- streams -------------------------------------------------------------- */

static void *worker(void *arg);

struct CUstream_st *emu_new_stream(int device)
{
    struct CUstream_st *s = calloc(1, sizeof(*s));

    if (s == NULL) {
        return NULL;
    }
    s->magic = STREAM_MAGIC;
    s->device = device;
    s->rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(uintptr_t)s + (uint64_t)getpid();
    pthread_cond_init(&s->cv, NULL);
    s->all_next = emu_streams;
    emu_streams = s;
    return s;
}

/* The stream a handle names (0, cudaStreamLegacy, cudaStreamPerThread: the
 * current device's legacy stream); NULL for a handle that is not one. */
struct CUstream_st *emu_stream_of(cudaStream_t h)
{
    struct CUstream_st *s;
    uintptr_t v = (uintptr_t)h;

    if (v <= 2) {
        if (emu_legacy[emu_cur_dev] == NULL) {
            emu_legacy[emu_cur_dev] = emu_new_stream(emu_cur_dev);
        }
        return emu_legacy[emu_cur_dev];
    }
    for (s = emu_streams; s != NULL && s != (struct CUstream_st *)h; s = s->all_next) {
    }
    return s != NULL && s->magic == STREAM_MAGIC && !s->dead ? s : NULL;
}

cudaError_t emu_enqueue(struct CUstream_st *s, op_t *o)
{
    if (!s->started) {
        if (pthread_create(&s->th, NULL, worker, s) != 0) {
            free(o);
            return cudaErrorMemoryAllocation;
        }
        pthread_detach(s->th);
        s->started = 1;
    }
    o->seq = ++s->queued;
    if (s->tail != NULL) {
        s->tail->next = o;
    } else {
        s->head = o;
    }
    s->tail = o;
    pthread_cond_signal(&s->cv);
    return cudaSuccess;
}

static void pause_a_little(struct CUstream_st *s)
{
    uint64_t r;
    if (emu_jitter_us <= 0) {
        return;
    }
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    r = s->rng % (uint64_t)(emu_jitter_us + 1);
    if (r > 0) {
        usleep((useconds_t)r);
    }
}

static void *worker(void *arg)
{
    struct CUstream_st *s = arg;
    op_t *o;

    pthread_mutex_lock(&emu_mu);
    for (;;) {
        while (s->head == NULL) {
            pthread_cond_wait(&s->cv, &emu_mu);
        }
        o = s->head;
        s->head = o->next;
        if (s->head == NULL) {
            s->tail = NULL;
        }
        pthread_mutex_unlock(&emu_mu);
        pause_a_little(s);
        switch (o->type) {
        case OP_COPY: memmove(o->dst, o->src, o->bytes); break;
        case OP_SET: memset(o->dst, o->value, o->bytes); break;
        case OP_KERNEL:
            if (o->fault) {
                pthread_mutex_lock(&emu_mu);
                emu_sticky = cudaErrorIllegalAddress;
                pthread_mutex_unlock(&emu_mu);
                break;
            }
            tc_emu_kernel_run(o->kernel, o->grid, o->block, o->kop, o->kn, o->kx, o->dst, o->bytes,
                              o->pre, o->post);
            break;
        case OP_HOSTFN: o->fn(o->arg); break;
        case OP_WAIT:
            pthread_mutex_lock(&emu_mu);
            while (o->ws->done < o->wseq) {
                pthread_cond_wait(&emu_done_cv, &emu_mu);
            }
            pthread_mutex_unlock(&emu_mu);
            break;
        default: break;
        }
        pthread_mutex_lock(&emu_mu);
        if (o->type == OP_FREE) {
            emu_unlink_alloc(o->free_a);
            emu_release_alloc(o->free_a);
        }
        if (o->type == OP_RECORD) {
            if (o->ev->s == s && o->ev->seq == o->seq) {
                clock_gettime(CLOCK_MONOTONIC, &o->ev->at);
            }
            if (--o->ev->pending == 0 && o->ev->destroyed) {
                free(o->ev);
            }
        }
        s->done = o->seq;
        pthread_cond_broadcast(&emu_done_cv);
        free(o);
    }
    return NULL;
}

/* Waits (emu_mu held) until every stream has done what was queued on it when
 * called: cudaFree's and cudaFreeHost's implicit synchronization. */
void emu_sync_all(void)
{
    struct CUstream_st *s;
    for (s = emu_streams; s != NULL; s = s->all_next) {
        uint64_t want = s->queued;
        while (s->done < want) {
            pthread_cond_wait(&emu_done_cv, &emu_mu);
        }
    }
}

void emu_sync_stream(struct CUstream_st *s)
{
    uint64_t want = s->queued;
    while (s->done < want) {
        pthread_cond_wait(&emu_done_cv, &emu_mu);
    }
}

op_t *emu_new_op(int type)
{
    op_t *o = calloc(1, sizeof(*o));
    if (o != NULL) {
        o->type = type;
    }
    return o;
}
