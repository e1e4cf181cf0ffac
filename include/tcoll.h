/*
 * tcoll.h - the public API of tcoll, a library for the processes of a
 * data-parallel job to combine tensors.
 *
 * Two halves:
 *  - the engine: named tensors are submitted asynchronously from any thread,
 *    negotiated by rank 0, and combined by one background thread per process
 *    that owns every MPI call (tc_init ... tc_shutdown);
 *  - the proxy: a bounded lock-free FIFO of 128-bit triggers and a service
 *    thread that runs a handler for each (tc_fifo_*, tc_proxy_*). It needs
 *    neither MPI nor tc_init.
 *
 * Conventions: every function that can fail returns a tc_status_t (TC_OK is 0);
 * output arguments are last, named *_p, and are written only on success. When a
 * call fails, tc_last_error() gives a message for the calling thread.
 *
 * This header is C11 and also compiles as C++.
 */
#ifndef TCOLL_H
#define TCOLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TCOLL_VERSION_MAJOR 0
#define TCOLL_VERSION_MINOR 1
#define TCOLL_VERSION_PATCH 0

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

typedef enum {
    TC_OK = 0,        /* success */
    TC_ERR_ARG,       /* a caller mistake: bad argument; nothing was changed */
    TC_ERR_STATE,     /* call not valid now (before tc_init, init twice, ...) */
    TC_ERR_MISMATCH,  /* ranks submitted the same name with different parameters */
    TC_ERR_DUPLICATE, /* the name is already in flight on this rank */
    TC_ERR_SHUTDOWN,  /* tcoll was shut down (by this rank or another) */
    TC_ERR_TRANSPORT, /* MPI or another transport failed */
    TC_ERR_NOMEM,     /* out of memory */
    TC_ERR_TIMEOUT    /* a time limit passed (tc_fifo_sync) */
} tc_status_t;

/* A short, static, human-readable name for a status ("success", ...). Never NULL. */
const char *tc_status_string(tc_status_t status);

/* Message describing why the last failed tcoll call made by the calling thread
 * failed ("" if none has failed). Valid until that thread's next tcoll call. */
const char *tc_last_error(void);

/* "MAJOR.MINOR.PATCH" */
const char *tc_version(void);

/* ------------------------------------------------------------------------ */
/* Tensors                                                                   */
/* ------------------------------------------------------------------------ */

/* The numeric values are part of the ABI and of the wire format: new dtypes
 * are only ever appended. */
typedef enum {
    TC_UINT8,
    TC_INT8,
    TC_INT32,
    TC_INT64,
    TC_FLOAT16,  /* IEEE 754 binary16 */
    TC_BFLOAT16, /* bfloat16 (upper half of a binary32) */
    TC_FLOAT32,
    TC_FLOAT64,
    TC_INT16,
    TC_UINT16
} tc_dtype_t;

typedef enum { TC_SUM, TC_AVG, TC_MIN, TC_MAX, TC_PROD } tc_op_t;

#define TC_MAX_DIMS 8

/* Longest tensor name accepted, in bytes, not counting the terminating NUL. */
#define TC_MAX_NAME_LEN 1024

/* A dense, C-contiguous tensor in host memory. ndim 0 is a scalar (1 element);
 * the element count is the product of shape[0..ndim-1]. */
typedef struct {
    void *data;
    tc_dtype_t dtype;
    int ndim;
    int64_t shape[TC_MAX_DIMS];
} tc_tensor_t;

/* Size of one element of dtype in bytes, or 0 for an unknown dtype. */
size_t tc_dtype_size(tc_dtype_t dtype);

/* Short names: "float32", "sum", "allreduce". Never NULL ("?" if unknown). */
const char *tc_dtype_name(tc_dtype_t dtype);
const char *tc_op_name(tc_op_t op);

/* inout[i] = inout[i] op in[i] for i < count, with the kernel and rounding
 * tcoll's collectives use (float16 and bfloat16 combine in float32 and
 * round to nearest-even once per element; integers wrap; MIN and MAX
 * propagate NaN): MPI_Reduce_local's counterpart. TC_AVG is refused (an
 * average needs the number of contributions: sum, then divide). TC_ERR_ARG,
 * touching nothing, for an unknown dtype or op, a NULL buffer with count >
 * 0, or buffers that overlap without being the same one. No state: any
 * thread, before or after tc_init. */
tc_status_t tc_reduce_local(void *inout, const void *in, size_t count, tc_dtype_t dtype,
                            tc_op_t op);

typedef struct tc_request tc_request_t; /* opaque */

/* ------------------------------------------------------------------------ */
/* Engine lifetime                                                           */
/* ------------------------------------------------------------------------ */

/* Collective: every rank calls it. Reads the TCOLL_* environment variables
 * (and the HOROVOD_* ones with an equivalent; once per process: a later
 * tc_init keeps the values), starts the engine and returns when it is
 * ready. If MPI is not initialized, the engine thread initializes it and
 * tcoll keeps it initialized until the process exits (an atexit handler
 * finalizes it, on that thread, unless a channel context is still open); if
 * the application initialized it with MPI_THREAD_MULTIPLE, tcoll works on
 * duplicates of MPI_COMM_WORLD and leaves MPI to the application; a lower
 * thread level fails with TC_ERR_STATE. After tc_shutdown it starts tcoll
 * again, afresh: new communicators, only the global process set (ids count
 * from 1 again), empty caches, automatic names from 0, a new shared-memory
 * segment and timeline. TC_ERR_STATE: called while tcoll runs (or before
 * this rank's tc_shutdown, when the engine stopped because another rank
 * shut down), after a failed tc_init (final: MPI is finalized if tcoll
 * initialized it), or after a run that ended with a failure (a lost rank,
 * an abort, a shutdown that timed out: MPI was left as it was); the message
 * says which. Call from any one thread. */
tc_status_t tc_init(void);

/* Shuts tcoll down on every rank: pending and later requests on all ranks
 * complete with TC_ERR_SHUTDOWN and the engine stops; MPI stays initialized
 * (see tc_init), and tc_init may start tcoll again. Every rank should call
 * it; it returns on each rank without waiting for the others to call it.
 * Calling it before tc_init or a second time fails with TC_ERR_STATE. Call
 * from any one thread. */
tc_status_t tc_shutdown(void);

/* Rank and size in the job and within this node; -1 before tc_init (and
 * while a tc_init after tc_shutdown starts), the last values after
 * shutdown. Any thread. */
int tc_rank(void);
int tc_size(void);
int tc_local_rank(void);
int tc_local_size(void);

/* ------------------------------------------------------------------------ */
/* Collectives: asynchronous, named, from any thread                          */
/* ------------------------------------------------------------------------ */
/*
 * Each call validates its arguments and queues the tensor; on TC_OK *req_p is a
 * new request to complete with tc_wait/tc_test and release with
 * tc_request_free. The operation runs once every rank has submitted the same
 * name; ranks may submit in any order. The buffers must stay valid and
 * untouched until the request completes. Names are unique among the requests in
 * flight on a rank (TC_ERR_DUPLICATE otherwise) and may be reused once the
 * previous request with that name has completed.
 *
 * Immediate errors (no request is created): TC_ERR_ARG for caller mistakes,
 * TC_ERR_STATE before tc_init, TC_ERR_SHUTDOWN after shutdown,
 * TC_ERR_DUPLICATE, TC_ERR_NOMEM, TC_ERR_TRANSPORT for a device tensor on
 * a device CUDA can no longer use. Errors reported by the request:
 * TC_ERR_MISMATCH, TC_ERR_SHUTDOWN, TC_ERR_TRANSPORT, TC_ERR_NOMEM.
 */

/* Elementwise reduction of send across ranks into recv (same shape and dtype).
 * recv may equal send->data (in place). TC_AVG divides the sum by tc_size()
 * and needs a floating-point dtype. */
tc_status_t tc_allreduce(const char *name, const tc_tensor_t *send, void *recv, tc_op_t op,
                         tc_request_t **req_p);

/* Concatenation of every rank's send along dimension 0, in rank order. Ranks
 * may contribute different shape[0]; the other dims must agree. The output is
 * allocated by tcoll: read it with tc_request_output; valid until
 * tc_request_free. send->ndim must be >= 1. */
tc_status_t tc_allgather(const char *name, const tc_tensor_t *send, tc_request_t **req_p);

/* Copies root's buf into buf on every other rank (same shape and dtype). */
tc_status_t tc_broadcast(const char *name, tc_tensor_t *buf, int root, tc_request_t **req_p);

/*
 * Options several calls share, in one struct that grows at its end without
 * breaking callers compiled against an older header. Start from
 * TC_OPTS_INIT (it records the size the caller was compiled with), then set
 * what you need; a NULL opts means TC_OPTS_INIT. Fields a call does not use
 * must keep their TC_OPTS_INIT values (TC_ERR_ARG otherwise), so a setting
 * is never silently ignored.
 *
 * prescale, postscale (allreduce, reducescatter; 1.0: none): each rank's input is multiplied
 * by prescale before the reduction, the result by postscale after it (avg
 * divides by the number of ranks first). Every rank must pass the same
 * factors (TC_ERR_MISMATCH otherwise); they must be finite. Floating dtypes
 * scale in their own precision (float16 and bfloat16 in float32, rounded to
 * the nearest even); integer dtypes scale in double, truncate toward zero and
 * saturate at the dtype's range.
 */
typedef struct {
    size_t size; /* sizeof(tc_opts_t) where the caller was compiled: TC_OPTS_INIT sets it */
    double prescale;
    double postscale;
    int process_set;   /* every collective, barrier and join: the process set (below) it runs
                      * in; TC_GLOBAL_PROCESS_SET (0): every rank */
    int device;        /* the collectives that take a tensor: where its memory is (below);
                        * TC_DEVICE_HOST (-1): host memory */
    void *cuda_stream; /* with a device: the cudaStream_t that produces the input and
                        * consumes the output; NULL: the legacy default stream */
} tc_opts_t;

/* tc_opts_t.device: host memory, or N >= 0 for memory of CUDA device N. */
#define TC_DEVICE_HOST (-1)

#define TC_OPTS_INIT                                                                               \
    {                                                                                              \
        sizeof(tc_opts_t), 1.0, 1.0, 0, TC_DEVICE_HOST, NULL                                       \
    }

/*
 * device, cuda_stream (allreduce, allgather, broadcast, reducescatter,
 * alltoall and their grouped forms): a tensor in memory of CUDA device N
 * (cudaMalloc'd, or managed; docs/gpu.md). Every buffer of the call is then
 * on that device: the input, recv, and the output tcoll allocates (read it
 * with tc_request_output: a device pointer, valid until tc_request_free; the
 * memory is reused only after the work cuda_stream has queued by the time of
 * tc_request_free, so a kernel there may still read it: work of other
 * streams that reads it must be done before; cudaStreamPerThread is the
 * stream of the thread that names it, so such a request is freed from the
 * thread that submitted it). tcoll reads the input only
 * after the work cuda_stream had queued when the call was made, and the
 * request completes only once its result is in place: after tc_wait (or
 * tc_test saying done), the host and every stream may read it. No call makes
 * the calling thread wait for a device. A device tensor needs a CUDA build
 * and a usable device (tc_cuda_available; TC_ERR_ARG saying why otherwise),
 * and its buffers must be memory of that device, aligned to the element size
 * (TC_ERR_ARG), and cuda_stream must not be capturing a CUDA graph
 * (TC_ERR_ARG). Ranks may use different devices, but every rank must give
 * the same kind of memory for a name: host on one rank and a device on
 * another is TC_ERR_MISMATCH, like any other disagreement. Barriers, joins
 * and process set calls take no tensor: leave device at TC_DEVICE_HOST.
 * CUDA failures: a device that can take no more work (a kernel's illegal
 * address, which CUDA keeps) refuses the call at once with
 * TC_ERR_TRANSPORT saying so. A run that fails in CUDA fails the request
 * with TC_ERR_TRANSPORT naming the step, the rank and CUDA's error; where
 * every rank of the set learnt of it alike (the in-node and CUDA-aware
 * paths exchange each step's status) or where it came after the collective
 * was over (this rank's copy of the result back to its device), only that
 * tensor fails and tcoll goes on; any other failure stops tcoll on every
 * rank, as a failed collective does (docs/gpu.md).
 */

/* tc_allreduce, tc_allgather and tc_broadcast with options (see tc_opts_t).
 * opts is read during the call only. */
tc_status_t tc_allreduce_ex(const char *name, const tc_tensor_t *send, void *recv, tc_op_t op,
                            const tc_opts_t *opts, tc_request_t **req_p);
tc_status_t tc_allgather_ex(const char *name, const tc_tensor_t *send, const tc_opts_t *opts,
                            tc_request_t **req_p);
tc_status_t tc_broadcast_ex(const char *name, tc_tensor_t *buf, int root, const tc_opts_t *opts,
                            tc_request_t **req_p);

/* Reduces send across ranks (op; TC_AVG needs a floating dtype), then rank r
 * keeps block r of dimension 0: rows are split as evenly as possible, the
 * first (rows mod n) ranks getting one more row. Every rank passes the same
 * shape (ndim >= 1). The output is allocated by tcoll: read it with
 * tc_request_output (shape[0] is this rank's rows); valid until
 * tc_request_free. tc_reducescatter_ex takes prescale and postscale. */
tc_status_t tc_reducescatter(const char *name, const tc_tensor_t *send, tc_op_t op,
                             tc_request_t **req_p);
tc_status_t tc_reducescatter_ex(const char *name, const tc_tensor_t *send, tc_op_t op,
                                const tc_opts_t *opts, tc_request_t **req_p);

/* Rank r sends splits[j] rows of send's dimension 0 to rank j, in order
 * (rows splits[0] first to rank 0, and so on); splits has tc_size() entries,
 * each >= 0, adding up to shape[0]. splits NULL: shape[0] / tc_size() rows to
 * every rank (shape[0] must be divisible). The dtype and the dims after the
 * first must agree across ranks. The output, allocated by tcoll, stacks the
 * rows received from each rank in rank order (tc_request_output); how many
 * came from each rank: tc_request_splits. splits is read during the call
 * only. */
tc_status_t tc_alltoall(const char *name, const tc_tensor_t *send, const int64_t *splits,
                        tc_request_t **req_p);
tc_status_t tc_alltoall_ex(const char *name, const tc_tensor_t *send, const int64_t *splits,
                           const tc_opts_t *opts, tc_request_t **req_p);

/*
 * Grouped calls: count tensors submitted as one unit (1..65536 members,
 * names[i], sends[i], recvs[i] for the i-th; op and opts for all). The
 * members are negotiated and run together (small ones fused where they
 * can be), or, when any member disagrees across ranks, every member fails
 * on every rank with that member's TC_ERR_MISMATCH message. Every rank
 * must group the same names in the same order (a name grouped differently
 * is a "group mismatch"). Each member gets its own request in reqs[i],
 * completed like a single call's. A bad member refuses the whole group at
 * once, and nothing is queued (reqs is written only on success). Grouped
 * names are not cached: each group is negotiated by rank 0.
 */
tc_status_t tc_grouped_allreduce(int count, const char *const names[], const tc_tensor_t sends[],
                                 void *const recvs[], tc_op_t op, const tc_opts_t *opts,
                                 tc_request_t *reqs[]);
tc_status_t tc_grouped_allgather(int count, const char *const names[], const tc_tensor_t sends[],
                                 const tc_opts_t *opts, tc_request_t *reqs[]);
tc_status_t tc_grouped_reducescatter(int count, const char *const names[],
                                     const tc_tensor_t sends[], tc_op_t op, const tc_opts_t *opts,
                                     tc_request_t *reqs[]);

/* Completes on every rank once every rank has called it (its k-th call on
 * each rank meets the others' k-th), and on this rank only after every
 * request this rank submitted before it has completed. No tensor, no name
 * (tcoll names it; names starting with "tcoll/" are reserved: other calls
 * refuse them with TC_ERR_ARG). The output is an empty tensor.
 * tc_barrier_ex takes options: process_set (the barrier is then among the
 * set's members, and waits only for this rank's earlier requests of that
 * set). */
tc_status_t tc_barrier(tc_request_t **req_p);
tc_status_t tc_barrier_ex(const tc_opts_t *opts, tc_request_t **req_p);

/*
 * Join, for uneven data: a rank with no more batches calls tc_join, and its
 * request completes on every rank once every rank has called it (the k-th
 * join on each rank meets the others' k-th). Until then the other ranks'
 * allreduces and reducescatters run without the joined ranks, which
 * contribute zeros for TC_SUM and TC_AVG (avg still divides by the number
 * of ranks) and the op's identity for TC_MIN, TC_MAX and TC_PROD (+inf,
 * -inf and 1 for floats; the dtype's largest, smallest and 1 for integers),
 * never scaled. Barriers complete without the joined ranks. An allgather,
 * broadcast or alltoall that needs a joined rank fails on every rank that
 * submitted it with TC_ERR_STATE and a message naming the joined ranks.
 * While its join is pending a rank cannot submit anything to that process
 * set (TC_ERR_STATE); tc_join_ex takes process_set: the join, and what runs
 * without the joined ranks, is then among the set's members.
 * The output is a 0-dim int32 tensor: the rank that joined last, the same
 * on every rank (also tc_request_last_joined), a global rank also in a
 * process set. "Last" is the order in which rank 0's negotiation takes the
 * joins, which keeps every order the ranks' own calls impose: a join that
 * some rank's completed collective waited for (its allreduce ran without
 * the joined rank) always counts as earlier than that rank's later join.
 * Joins that nothing orders (several ranks joining at about the same time)
 * count in the order their messages reach rank 0 (Horovod: the order in
 * which its coordinator reads them in one cycle). Like a barrier, a join
 * completes on this rank only after every request this rank submitted
 * before it has completed. Names starting with "tcoll/" are tcoll's.
 */
tc_status_t tc_join(tc_request_t **req_p);
tc_status_t tc_join_ex(const tc_opts_t *opts, tc_request_t **req_p);

/* After a successful join: the rank that joined last. TC_ERR_STATE while
 * pending; the request's status if it failed; TC_ERR_ARG for other kinds. */
tc_status_t tc_request_last_joined(const tc_request_t *req, int *rank_p);

/*
 * Process sets: subsets of the ranks that run collectives among themselves
 * (tc_opts_t.process_set). Set 0, TC_GLOBAL_PROCESS_SET, is every rank and
 * always exists. Names are per set: the same name may be in flight in two
 * sets at once. A set's collectives run once every member has submitted
 * them; sets never wait for each other's names, and a name stalled in one
 * set delays and fails nothing in another (stall reports name the set).
 * Within a set, ranks are numbered by their place in the sorted rank list
 * (tc_process_set_rank); a broadcast's root is a global rank, which must be
 * a member. A rank outside the set that submits to it gets TC_ERR_ARG, and
 * so does a submission to a set that does not exist (or was removed).
 * Names in a set other than 0 are never cached: each call is negotiated by
 * rank 0 in full.
 *
 * tc_process_set_add creates a set of ranks[0..nranks-1] (any order, no
 * duplicates, each in 0..size-1). It is collective over every rank: each
 * calls it with the same list (TC_ERR_MISMATCH on every rank otherwise,
 * naming the ranks and their lists), and the k-th call on each rank meets
 * the others' k-th. It blocks until the set exists everywhere and writes
 * its id (> 0, the same on every rank) into *id_p. tc_process_set_remove
 * removes a set, also collectively (every rank, the same id); requests of
 * the set still pending fail with TC_ERR_STATE; the same ranks can be added
 * again (under a new id). Neither may be called while this rank's join in
 * the global set is pending, nor from several threads at once.
 */
#define TC_GLOBAL_PROCESS_SET 0
tc_status_t tc_process_set_add(const int *ranks, int nranks, int *id_p);
tc_status_t tc_process_set_remove(int id);
/* This rank's place in set id (0..size-1), or -1 when it is not a member or
 * the set does not exist. */
int tc_process_set_rank(int id);
/* The number of ranks in set id, or -1 when it does not exist. */
int tc_process_set_size(int id);
/* Writes set id's ranks, ascending, into ranks[0..cap-1] and their number
 * into *count_p (only the first cap are written). TC_ERR_ARG when the set
 * does not exist or an argument is NULL (ranks may be NULL with cap 0). */
tc_status_t tc_process_set_ranks(int id, int *ranks, int cap, int *count_p);

/* CUDA. tc_cuda_built: 1 when this tcoll was built with CUDA (TCOLL_CUDA).
 * tc_cuda_available: 1 when device tensors can be used in this process (a
 * CUDA build, a driver and at least one device); found on the first call,
 * which loads the driver, then cached. tc_cuda_info: one line saying which
 * devices, driver and runtime were found, or why CUDA is not available;
 * static, never NULL. Any thread, before or after tc_init. */
int tc_cuda_built(void);
int tc_cuda_available(void);
const char *tc_cuda_info(void);

/* Blocks until req completes; returns the operation's status. */
tc_status_t tc_wait(tc_request_t *req);

/* Never blocks. Sets *done_p to 1 if req has completed (and then returns the
 * operation's status), to 0 otherwise (and returns TC_OK). */
tc_status_t tc_test(tc_request_t *req, int *done_p);

/* Why the request failed: "" while pending or when it succeeded. */
const char *tc_request_error(const tc_request_t *req);

/* Which algorithm carried out a completed, successful request: the name
 * tcoll's selector gave it, as the timeline and TCOLL_LOG_LEVEL=debug show
 * it ("cma", "shm", "ring", "hier", "ordered", "binomial tree", "pairwise
 * exchange", "cuda ipc", ...), ending in ", fused" when the tensor went
 * through the fusion buffer with others, "shm, fast" for the
 * small-message path, or "eager (inputs in the cycle messages)" for a tiny
 * allreduce whose inputs travelled with the negotiation; for a barrier, a join or a process set change, the
 * step that completed it ("negotiation (every rank reached it)", ...).
 * NULL while pending and after a failure. The string is static (it
 * outlives the request). For benchmarks and diagnostics: the names may
 * grow between versions. */
const char *tc_request_algorithm(const tc_request_t *req);

/* The result of a completed, successful request: for allgather the tensor
 * tcoll allocated; for allreduce the recv buffer; for broadcast the buffer.
 * TC_ERR_STATE if not complete yet; the request's status if it failed. */
tc_status_t tc_request_output(const tc_request_t *req, tc_tensor_t *out_p);

/* After a successful alltoall or allgather: how many rows of dimension 0
 * came from each rank (*count_p = the number of ranks; the array lives until
 * tc_request_free). TC_ERR_STATE while pending; the request's status if it
 * failed; TC_ERR_ARG for other kinds. */
tc_status_t tc_request_splits(const tc_request_t *req, const int64_t **splits_p, int *count_p);

/* Waits for req if it has not completed, then releases it and any output. NULL is ignored. */
void tc_request_free(tc_request_t *req);

/* ------------------------------------------------------------------------ */
/* Proxy: trigger FIFO and service thread (no MPI, no tc_init needed)         */
/* ------------------------------------------------------------------------ */

typedef struct {
    uint64_t fst, snd;
} tc_trigger_t;
typedef enum { TC_PROXY_CONTINUE = 0, TC_PROXY_STOP = 1 } tc_proxy_result_t;
typedef tc_proxy_result_t (*tc_proxy_handler_t)(tc_trigger_t trigger, void *arg);
typedef void (*tc_proxy_init_t)(void *arg); /* runs on the proxy thread first */
typedef struct tc_fifo tc_fifo_t;           /* opaque */
typedef struct tc_proxy tc_proxy_t;         /* opaque */

/* A FIFO of size slots (a power of two, 1..2^20). */
tc_status_t tc_fifo_create(uint32_t size, tc_fifo_t **fifo_p);
void tc_fifo_destroy(tc_fifo_t *fifo);
/* Any thread. Waits (with back-off) while full; returns the trigger's position. */
uint64_t tc_fifo_push(tc_fifo_t *fifo, tc_trigger_t trigger);
/* Any thread. Never waits: 1 if pushed (*pos_p set when pos_p != NULL), 0 if full. */
int tc_fifo_try_push(tc_fifo_t *fifo, tc_trigger_t trigger, uint64_t *pos_p);
/* Consumer only: 1 and *trigger_p set if the next trigger is ready, else 0. */
int tc_fifo_poll(tc_fifo_t *fifo, tc_trigger_t *trigger_p);
/* Consumer only: done with the trigger last returned by tc_fifo_poll. */
void tc_fifo_pop(tc_fifo_t *fifo);
/* Until the trigger at pos has been popped; timeout_ns < 0 waits forever. */
tc_status_t tc_fifo_sync(tc_fifo_t *fifo, uint64_t pos, int64_t timeout_ns);

tc_status_t tc_proxy_create(tc_proxy_handler_t handler, void *handler_arg, tc_proxy_init_t init,
                            void *init_arg, uint32_t fifo_size, tc_proxy_t **proxy_p);
tc_status_t tc_proxy_start(tc_proxy_t *proxy, int blocking);
tc_status_t tc_proxy_stop(tc_proxy_t *proxy);
void tc_proxy_destroy(tc_proxy_t *proxy);
tc_fifo_t *tc_proxy_fifo(tc_proxy_t *proxy);

/* A proxy for a GPU (the seed's default constructor): device is a CUDA
 * device, or TC_PROXY_CURRENT_DEVICE for the calling thread's current one.
 * As tc_proxy_create, and: its FIFO is page-locked and mapped for the
 * device, in that device's context, whichever device the calling thread
 * has (tc_proxy_fifo_device in tcoll_fifo_device.h gives a kernel's view
 * of it); its thread, first thing, makes the device current and binds
 * itself to the CPUs of the device's NUMA node (to TCOLL_PROXY_CPUS instead
 * when that is set), then runs init when it is not NULL. TC_ERR_STATE: no
 * CUDA here (the message says why: no driver, no device, a build without
 * CUDA); TC_ERR_ARG: no such device, or as tc_proxy_create; TC_ERR_TRANSPORT:
 * CUDA could not map the FIFO. Nothing is made on failure. */
#define TC_PROXY_CURRENT_DEVICE (-1)
tc_status_t tc_proxy_create_device(int device, tc_proxy_handler_t handler, void *handler_arg,
                                   tc_proxy_init_t init, void *init_arg, uint32_t fifo_size,
                                   tc_proxy_t **proxy_p);
/* The device of a proxy made by tc_proxy_create_device; -1 otherwise. */
int tc_proxy_device(const tc_proxy_t *proxy);

/* ------------------------------------------------------------------------ */
/* Timeline: a Chrome trace of this rank's negotiations and collectives       */
/* ------------------------------------------------------------------------ */
/*
 * The file is a Chrome trace (JSON Trace Event Format: {"traceEvents":[...]})
 * that chrome://tracing and Perfetto load: a process row per rank ("pid" is
 * the rank), and in it one row per tensor name plus the rows "negotiation"
 * and "collectives"; "ts" is microseconds since the timeline started.
 * Events are buffered in memory and written by a thread of the timeline's
 * own; the engine never waits for the file. If the buffer fills, events are
 * dropped and the file says how many.
 *
 * A path with "%r" (it becomes the rank, e.g. "/tmp/tl.%r.json") gives each
 * rank a file of its own, valid JSON once the timeline is stopped
 * (tc_timeline_stop or tc_shutdown). A path without "%r" gives the job one
 * file: each rank records its part (in a temporary file), and at tc_shutdown
 * rank 0 gathers every rank's part over MPI and writes it, every rank in its
 * own process row; with one rank it is written like a file of its own. See
 * the README ("Timeline"). TCOLL_TIMELINE=path starts one at tc_init.
 */

/* Local (not collective): starts recording this rank's timeline for path
 * (above); a file of this rank's own is created or truncated at once.
 * TC_ERR_ARG if path is NULL or empty, or the file cannot be created (the
 * message names the path and the reason); TC_ERR_STATE before tc_init,
 * while a timeline runs (TCOLL_TIMELINE's included) and, for a path without
 * "%r", once this rank has recorded its part of a job-wide file (one per
 * run) or has shut down. Any thread, after tc_init. */
tc_status_t tc_timeline_start(const char *path);

/* Local (not collective): stops the timeline; a file of this rank's own is
 * written and closed when it returns, this rank's part of a job-wide file
 * waits for tc_shutdown. TC_ERR_STATE if none runs; TC_ERR_TRANSPORT if
 * writing failed (disk full, ...). tc_shutdown stops a running timeline
 * itself. Any thread. */
tc_status_t tc_timeline_stop(void);

#ifdef __cplusplus
}
#endif

#endif /* TCOLL_H */
