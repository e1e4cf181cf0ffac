/*
 * cuda.h - CUDA for the rest of tcoll: whether it is there, checks of device
 * pointers and streams, and the copies and allocations the executor stages
 * device tensors with.
 *
 * Built one of two ways (TCOLL_CUDA in CMakeLists.txt): cuda_rt.c against
 * the CUDA runtime linked statically into libtcoll, so that the library
 * loads, and every host path works, on a machine with no GPU and no driver;
 * or cuda_none.c, where every call says the build has no CUDA. Either way
 * nothing is asked of CUDA until a caller needs it (the first device
 * tensor, tc_cuda_available, tcoll-info): a host-only job never creates a
 * GPU context. No MPI, no engine state.
 *
 * Ordering (docs/gpu.md): a submission marks its stream (an event recorded
 * by the submitting thread, so the engine's reads come after the work the
 * stream had queued then); the engine thread copies on tcoll's own stream
 * for the device (made once, non-blocking with respect to the legacy
 * default stream), waiting on the mark, and sleeps on a blocking-sync event
 * until its copies are done, so a request completes only once its result
 * is in place and any stream or the host may read it after tc_wait.
 */
#ifndef TC_CUDA_CUDA_H
#define TC_CUDA_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "tcoll.h"

/* 1 in a build with CUDA. */
int tc__cuda_built(void);

/* Whether device tensors can be used in this process: decided on the first
 * call (thread-safe), then cached. On 0, *why_p (when why_p is not NULL)
 * says why: "this tcoll was built without CUDA", "no CUDA driver: ...",
 * "no CUDA device". */
int tc__cuda_available(const char **why_p);

/* The number of CUDA devices (0 when not available). */
int tc__cuda_device_count(void);

/* One line for tcoll-info and the logs: the devices, the driver's and the
 * runtime's versions, or why CUDA is not available. */
void tc__cuda_describe(char *buf, size_t len);

/* TC_OK when [ptr, ptr + bytes) lies in one allocation of device memory
 * (or managed memory) of device dev; otherwise TC_ERR_ARG with the reason
 * in why ("host memory", "memory of CUDA device 1", "runs 64 bytes past
 * its allocation"). bytes 0 checks nothing. */
tc_status_t tc__cuda_check_ptr(int dev, const void *ptr, size_t bytes, char *why, size_t len);

/* What a stream had queued when a tensor was submitted: an event of device
 * dev recorded on stream (NULL: the legacy default stream), from a pool.
 * Any thread. TC_ERR_ARG (why) when the stream cannot be used on dev. */
typedef struct tc_cuda_mark tc_cuda_mark_t;
tc_status_t tc__cuda_mark(int dev, void *stream, tc_cuda_mark_t **mark_p, char *why, size_t len);
/* Back to the pool. Any thread; NULL is ignored. */
void tc__cuda_mark_release(tc_cuda_mark_t *mark);
/* Whether what mark's stream had queued is done, without waiting: *done_p
 * 1 or 0 (NULL mark: 1). TC_ERR_TRANSPORT (why) when CUDA reports an error
 * of that work. */
tc_status_t tc__cuda_mark_query(const tc_cuda_mark_t *mark, int *done_p, char *why, size_t len);

/* Copies bytes between host memory and device dev's memory on tcoll's
 * stream for dev, first waiting for after (NULL: nothing), and returns once
 * the copy is complete (sleeping, not spinning). The engine thread.
 * TC_ERR_TRANSPORT with the reason in why. */
tc_status_t tc__cuda_to_host(int dev, void *dst, const void *src, size_t bytes,
                             const tc_cuda_mark_t *after, char *why, size_t len);
tc_status_t tc__cuda_to_device(int dev, void *dst, const void *src, size_t bytes, char *why,
                               size_t len);

/* Device memory for the outputs and scratch tcoll allocates (allgather,
 * reducescatter, alltoall; the CUDA-aware MPI record): from a pool of dev's,
 * usable at once by any stream, a peer process or MPI (never a block whose
 * free has not run yet), freed from any thread without a device-wide
 * synchronization. TC_ERR_NOMEM (why). */
tc_status_t tc__cuda_alloc(int dev, size_t bytes, void **p_p, char *why, size_t len);
void tc__cuda_free(int dev, void *p);
/* The same, the memory given back only after what `after` marks (a
 * stream's work that may still read it). */
void tc__cuda_free_after(int dev, void *p, const tc_cuda_mark_t *after);

/* Page-locked host memory, which device copies reach at full speed; NULL
 * when it cannot be had (the caller then stages through ordinary memory). */
void *tc__cuda_host_alloc(size_t bytes);
void tc__cuda_host_free(void *p);

/* ---- copies in flight: the chunked staging (cuda_pipe.c) ----------------- */

/* A copy of bytes between host memory and dev's memory (to_device: host to
 * device, else device to host), queued on one of tcoll's two copy streams
 * for dev (one each way, so both directions run at once), and marked as the
 * last copy of slot (0..TC_CUDA_PIPE_SLOTS-1) that way; returns without
 * waiting. tc__cuda_pipe_wait sleeps until the last copy queued for slot
 * that way is done (at once when none was). The engine thread, which keeps
 * dev current. TC_ERR_TRANSPORT (why) when CUDA fails. */
#define TC_CUDA_PIPE_SLOTS 4
tc_status_t tc__cuda_pipe_copy(int dev, int slot, int to_device, void *dst, const void *src,
                               size_t bytes, char *why, size_t len);
tc_status_t tc__cuda_pipe_wait(int dev, int slot, int to_device, char *why, size_t len);

/* ---- the in-node device path (cuda_path.c) -------------------------------- */

/* Where a buffer of device memory is, for the other processes of the node:
 * its allocation's CUDA IPC handle and the buffer's offset in it. */
typedef struct {
    unsigned char handle[64]; /* a cudaIpcMemHandle_t */
    uint64_t offset;
} tc_cuda_ipc_t;

/* The handle of [ptr, ...), device memory of dev (from cudaMalloc: memory
 * of a stream-ordered pool has none). TC_ERR_ARG (why) when it has none. */
tc_status_t tc__cuda_ipc_export(int dev, const void *ptr, tc_cuda_ipc_t *h, char *why, size_t len);

/* Opens the m handles h[0..m) of other processes on dev (each allocation
 * once, however many of them it holds): ptrs[k] is h[k]'s buffer here.
 * Close them with tc__cuda_ipc_close before the owners may free them; h
 * must stay in place until then. TC_ERR_TRANSPORT (why) when one cannot
 * be opened (nothing stays open). Both leave the calling thread's current
 * device as it was. */
typedef struct tc_cuda_ipc_maps tc_cuda_ipc_maps_t;
tc_status_t tc__cuda_ipc_open(int dev, const tc_cuda_ipc_t *h, int m, void **ptrs,
                              tc_cuda_ipc_maps_t **maps_p, char *why, size_t len);
void tc__cuda_ipc_close(int dev, tc_cuda_ipc_maps_t *maps);

/* dst[i] = the combination of x[0..n)[i], i < count, in the documented
 * order, with prescale, the average's division by n and postscale
 * (reduce_ops.cuh: the host's bits), on dev, then waits for it. All
 * pointers are device memory dev can reach; dst may be one of the inputs.
 * n is 1..TC_CUDA_MAX_COMBINE. */
#define TC_CUDA_MAX_COMBINE 64
tc_status_t tc__cuda_combine(int dev, tc_dtype_t dtype, tc_op_t op, int n, const void *const *x,
                             void *dst, size_t count, double prescale, double postscale, char *why,
                             size_t len);

/* Whether the combine kernel of dtype runs on dev (loaded into its
 * context now, where it was not): TC_OK, or TC_ERR_TRANSPORT (why) where
 * this GPU cannot run tcoll's kernels. The calling thread's device is left
 * as it was. */
tc_status_t tc__cuda_combine_ready(int dev, tc_dtype_t dtype, char *why, size_t len);

/* n copies of bytes[k] from src[k] to dst[k] (device memory dev can reach),
 * on dev, then waits for them all. */
tc_status_t tc__cuda_copy_many(int dev, int n, void *const *dst, const void *const *src,
                               const size_t *bytes, char *why, size_t len);

/* ---- host threads that serve a device (cuda_host.c) ----------------------- */

/* The calling thread's current device (cudaGetDevice). TC_ERR_STATE (why)
 * when CUDA is not available. */
tc_status_t tc__cuda_current(int *dev_p, char *why, size_t len);
/* Makes dev current on the calling thread for good (a proxy thread).
 * TC_ERR_ARG (why) when dev is not a usable device. */
tc_status_t tc__cuda_set_current(int dev, char *why, size_t len);
/* dev's PCI address as hwloc and sysfs write it ("0000:3b:00.0"). */
tc_status_t tc__cuda_pci_bus_id(int dev, char *buf, size_t buflen, char *why, size_t len);
/* Page-locks [p, p + bytes) of host memory (any mapping: anonymous, a
 * shared memory file) and maps it for every device (cudaHostRegister,
 * portable and mapped); *dev_p is its address in device code. The work is
 * done in device dev's context (made current for the call, the thread's
 * own device given back after: no context is started on a device the
 * process does not use), or the calling thread's current device's where
 * dev is -1; the unmap uses the same device. Undo with
 * tc__cuda_host_unmap(p) before the memory is unmapped. Counted per p:
 * mapped twice, it stays mapped until the second unmap. Memory the
 * application page-locked itself is used as it is, and never unregistered
 * here. TC_ERR_TRANSPORT (why) when CUDA refuses; TC_ERR_ARG when dev is
 * not a usable device. */
tc_status_t tc__cuda_host_map(int dev, void *p, size_t bytes, void **dev_p, char *why, size_t len);
void tc__cuda_host_unmap(void *p);
/* 1 when dev's atomics on mapped host memory are atomic against the CPU's
 * (cudaDevAttrHostNativeAtomicSupported), else 0. */
int tc__cuda_host_native_atomics(int dev);
/* The device whose memory (device or managed) [p, p + bytes) is, when it
 * lies in one such allocation: TC_OK and *dev_p; host memory (or no CUDA
 * here): TC_OK and *dev_p = -1; device memory that runs past its
 * allocation: TC_ERR_ARG (why). Asks CUDA only in a process where a
 * device's context is active already (so a host-only job makes none). */
tc_status_t tc__cuda_ptr_device(const void *p, size_t bytes, int *dev_p, char *why, size_t len);

/* A stream of a host thread's own on dev for copies between any memories
 * (cudaMemcpyDefault), with an event to sleep on. Made on the thread that
 * uses it; copy queues, finish sleeps until everything queued is done. */
typedef struct tc_cuda_copier tc_cuda_copier_t;
tc_status_t tc__cuda_copier_create(int dev, tc_cuda_copier_t **c_p, char *why, size_t len);
tc_status_t tc__cuda_copier_copy(tc_cuda_copier_t *c, void *dst, const void *src, size_t bytes,
                                 char *why, size_t len);
tc_status_t tc__cuda_copier_finish(tc_cuda_copier_t *c, char *why, size_t len);
void tc__cuda_copier_destroy(tc_cuda_copier_t *c);

/* Waits for tcoll's streams and frees the pooled events (tc_shutdown). The
 * streams and memory pools stay: device memory still held by requests
 * stays valid until they are freed. */
void tc__cuda_release(void);

#endif
