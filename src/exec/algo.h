/*
 * algo.h - how a collective runs once every rank agreed on it: per kind, an
 * ordered list of algorithm records and the kind's run, and one selector.
 *
 * A record is one algorithm: its name (what the timeline, tcoll-info and
 * the debug log show), the memory it handles, when it applies (size, dtype,
 * op, what the process set has: the node's segment, the hierarchical
 * allreduce, TCOLL_DETERMINISTIC), and its data movement, a function over
 * one of the job structs below that calls an algorithm of src/coll/. The
 * selector (tc__algo_select) walks the kind's list in order and takes the
 * first record that handles the data's memory and applies, so the choice is
 * made in one place, from what every rank of the set knows alike: every rank
 * takes the same record for the same call. The last record of a kind that
 * moves data applies always (the point-to-point algorithm over the set's
 * transport).
 *
 * A kind's run (tc_kind_exec_t.run) is glue: it turns the request and rank
 * 0's response into a job (byte counts, blocks, the output buffer), asks the
 * selector, runs the record, records it in req->algo, and sets the request's
 * output. It must not block on anything but the transport (or the segment's
 * waits) and must leave the request uncompleted (the executor completes it).
 *
 * Adding an algorithm (docs/architecture.md, "Add an algorithm"): its code
 * in one file under src/coll/, and one record in its kind's list (the
 * algo_<kind>.c file), placed before the records it should win over. Device
 * memory (the GPU issue) is one more TC_MEM_* bit and records that handle
 * it; the selector does not change.
 */
#ifndef TC_EXEC_ALGO_H
#define TC_EXEC_ALGO_H

#include <stddef.h>
#include <stdint.h>

#include "coll/coll.h"
#include "exec/request.h"
#include "kind/kind.h"
#include "wire/wire.h"

/* Where a tensor's data lives (tc_algo_t.memory, tc_algo_call_t.memory). */
enum {
    TC_MEM_HOST = 1u << 0, /* host memory */
    TC_MEM_CUDA = 1u << 1, /* CUDA device memory (tc_opts_t.device) */
};

/* What a record's data movement runs over: where the reason text of a
 * failed run is (tc__algo_err). */
typedef enum {
    TC_ALGO_OVER_TP,   /* the set's transport (tc_algo_ctx_t.tp) */
    TC_ALGO_OVER_SHM,  /* the node's segment (tc_algo_ctx_t.shm) */
    TC_ALGO_OVER_HIER, /* the hierarchical allreduce (tc_algo_ctx_t.hier) */
    TC_ALGO_OVER_NONE, /* nothing: the kinds that move no data */
} tc_algo_over_t;

/* What a run runs with (the engine thread's, per request). */
struct tc_exec;
typedef struct {
    tc_transport_t *tp;       /* the data transport of the request's process set: rank,
                            * size (the set's), and err after a failure */
    size_t chunk_bytes;       /* TCOLL_RING_CHUNK_KB in bytes */
    tc_scratch_t *scratch;    /* reused across runs */
    struct tc_exec *exec;     /* for the kinds that change the executor's own state (the
                            * table of process sets) */
    tc_shm_coll_t *shm;       /* the node's shared-memory collectives, where the request's
                            * process set may use them (shm.c); else NULL */
    const tc_hier_t *hier;    /* the hierarchical allreduce, where it runs (shm.c);
                            * else NULL */
    int ordered;              /* TCOLL_DETERMINISTIC: order-sensitive reductions over tp
                            * run in the documented order (coll/ordered_rs.c) */
    const int *node;          /* the set's node table for it: node[p] is the lowest member
                            * on member p's node, so all 0 on one node (NULL: none
                            * was agreed, and every rank uses one node's order) */
    size_t cuda_ipc_bytes;    /* TCOLL_CUDA_IPC: device allreduces of at least this many
                            * bytes may share device memory inside the node (0:
                            * never; device_node.c) */
    size_t stage_chunk;       /* TCOLL_CUDA_STAGE_CHUNK_KB in bytes: device allreduces and
                            * broadcasts larger than this stage in chunks of it
                            * (device_pipe.c; 0: never) */
    tc_transport_t *cuda_mpi; /* the set's transport over MPI alone, where every rank's
                               * MPI takes device memory (device_mpi.c); else NULL */
} tc_algo_ctx_t;

/* What the selector decides on: the same on every rank of the set. */
typedef struct {
    tc_kind_t kind;
    tc_dtype_t dtype;
    tc_op_t op;
    size_t bytes;    /* what a record's size rule reads: the tensor's bytes; an allgather's
                      * output; an alltoall's largest input of any rank; a fused
                      * group's total */
    unsigned memory; /* TC_MEM_* of the data */
    int packed;      /* a fused group (allreduce) */
} tc_algo_call_t;

/* The jobs of the kinds that move data: what a record's movement takes. */
typedef struct {
    const void *src; /* NULL: in place in buf */
    void *buf;
    size_t count;
    tc_dtype_t dtype;
    tc_op_t op;
    struct tc_device_job *dev; /* device memory (a TC_MEM_CUDA record); else NULL */
} tc_allreduce_job_t;

/* What a record of device memory is given beside the job (device.c). */
struct tc_kind_exec;
typedef struct tc_device_job {
    int device; /* the CUDA device of every buffer */
    /* the kind's records (a record that runs parts of the tensor on the
     * host picks from them) */
    const struct tc_kind_exec *kind;
    double prescale, postscale; /* applied by the record itself */
    int declined;               /* set by a record that did not run (the data untouched:
                                 * the caller takes another path) */
    int agreed;                 /* with a failure: every rank of the set ended the
                                 * collective at the same step, knowing why (a status
                                 * exchange), so only the tensor fails */
    char why[256];              /* the reason of a failure */
} tc_device_job_t;

typedef struct {
    void *buf;                    /* every rank's block, this rank's filled (a device
                                   * record: filled by the record, from src) */
    const size_t *bytes, *displs; /* [set size] */
    const void *src;              /* a device record: this rank's input; else NULL */
    struct tc_device_job *dev;    /* device memory (a TC_MEM_CUDA record); else NULL */
} tc_allgather_job_t;

typedef struct {
    void *buf;
    size_t bytes;
    int root;                  /* its place in the set */
    struct tc_device_job *dev; /* device memory (a TC_MEM_CUDA record); else NULL */
} tc_broadcast_job_t;

typedef struct {
    const void *src;
    void *out; /* this rank's block of rows */
    size_t rows, row_elems;
    tc_dtype_t dtype;
    tc_op_t op;
    struct tc_device_job *dev; /* device memory (a TC_MEM_CUDA record, which applies the
                                * scaling factors itself); else NULL */
} tc_reducescatter_job_t;

typedef struct {
    const void *send;
    void *out;
    const size_t *sb, *sd, *rb, *rd; /* [set size] bytes and offsets, to and from each */
    const uint64_t *matrix;          /* inside the node: every rank's rows to every rank */
    size_t row;                      /* bytes in a row */
    struct tc_device_job *dev;       /* device memory (a TC_MEM_CUDA record); else NULL */
} tc_alltoall_job_t;

typedef struct tc_algo {
    const char *name;  /* "ring", "shm", "cma", "hier", "ordered", ... */
    const char *fused; /* its name when it runs a fused group ("ring, fused"; NULL:
                          * the kind is not fusable). Static: the timeline keeps it */
    unsigned memory;   /* TC_MEM_* it handles */
    tc_algo_over_t over;
    /* Whether it runs call c with x (NULL: always). Must read only what
     * every rank of the set has alike. */
    int (*applies)(const tc_algo_ctx_t *x, const tc_algo_call_t *c);
    union { /* the member of the record's kind (NULL: the kinds that move no data) */
        tc_status_t (*allreduce)(const tc_algo_ctx_t *x, const tc_allreduce_job_t *j);
        tc_status_t (*allgather)(const tc_algo_ctx_t *x, const tc_allgather_job_t *j);
        tc_status_t (*broadcast)(const tc_algo_ctx_t *x, const tc_broadcast_job_t *j);
        tc_status_t (*reducescatter)(const tc_algo_ctx_t *x, const tc_reducescatter_job_t *j);
        tc_status_t (*alltoall)(const tc_algo_ctx_t *x, const tc_alltoall_job_t *j);
    } run;
} tc_algo_t;

/* A kind's run: see the file comment. On failure returns the status and
 * writes a message naming the tensor into msg. */
typedef tc_status_t (*tc_kind_run_t)(const tc_algo_ctx_t *x, tc_request_t *req,
                                     const tc_wire_response_t *r, char *msg, size_t len);

typedef struct tc_kind_exec {
    tc_kind_run_t run;
    const tc_algo_t *const *algos; /* the kind's records, in the order they are tried */
    size_t nalgos;
} tc_kind_exec_t;

/* The run and records of kind (a tc_kind_t), or NULL when out of range. */
const tc_kind_exec_t *tc__kind_exec(int kind);

/* The selector (algo.c): the first of k's records that handles c's memory
 * and applies; NULL only for a memory no record handles (or k NULL). A
 * kind's run asks it for its own kind; everyone else by kind, through
 * tc__algo_select (algo_table.c). */
const tc_algo_t *tc__algo_pick(const tc_kind_exec_t *k, const tc_algo_ctx_t *x,
                               const tc_algo_call_t *c);
const tc_algo_t *tc__algo_select(const tc_algo_ctx_t *x, const tc_algo_call_t *c);

/* What the selector picks for kind over every size of host memory, into
 * buf: "ring", or "shm, cma from 1 MiB" (each record that takes over from a
 * size on, with the exact size). For logs and tcoll-info. */
void tc__algo_describe(const tc_algo_ctx_t *x, tc_kind_t kind, tc_dtype_t dtype, tc_op_t op,
                       char *buf, size_t len);

/* The reason text of a failed run of record a (what it runs over). */
const char *tc__algo_err(const tc_algo_ctx_t *x, const tc_algo_t *a);

/* What ran, as tc_request_algorithm and the timeline name it: the record's
 * name (fused: its fused name), and for "cma" whose last collective read
 * peers' buffers, every one with loads (shm->loads, shm->readvs), "cma,
 * mapped" (", fused").
 * "none" for NULL. */
const char *tc__algo_label(const tc_algo_t *a, int fused, const tc_shm_coll_t *shm);

/* The timeline's label of a small allreduce completed by the negotiation
 * (its inputs rode in the cycle messages). */
#define TC_ALGO_EAGER_NAME "eager (inputs in the cycle messages)"
/* ... and of one completed through the node's segment without the engine
 * (exec/fast.c). */
#define TC_ALGO_FAST_NAME "shm, fast"

/* For the runs (algo_*.c): the message of a failed run, "tensor 'w':
 * allreduce failed: <why>" (out of memory for TC_ERR_NOMEM); returns st. */
tc_status_t tc__algo_failed(const tc_request_t *req, tc_status_t st, const char *why, char *msg,
                            size_t len);
/* The elements of one row of dim 0 (the product of the other dims). */
size_t tc__algo_row_elems(const tc_request_t *req);
/* Whether the kinds other than allreduce may run through x's segment: the
 * global set, every rank on this node, slots large enough. */
int tc__algo_shm_kinds(const tc_algo_ctx_t *x);
/* The applies rules records share: those kinds through the segment, direct
 * from TCOLL_SHM_DIRECT_KB of c->bytes up (kinds_cma) or through the slots
 * (kinds_shm); an order-sensitive op under TCOLL_DETERMINISTIC (ordered). */
int tc__algo_kinds_cma(const tc_algo_ctx_t *x, const tc_algo_call_t *c);
int tc__algo_kinds_shm(const tc_algo_ctx_t *x, const tc_algo_call_t *c);
int tc__algo_ordered(const tc_algo_ctx_t *x, const tc_algo_call_t *c);
/* Whether every rank of x's set is on one node (its node table says so,
 * or it has none). */
int tc__algo_one_node(const tc_algo_ctx_t *x);

/* A device tensor (req->cuda.on) run through its kind's run over host
 * staging buffers (staged.c): copies in after the submission's mark, runs
 * run (the kind's), copies the result to the device. The contract of a
 * kind's run. */
tc_status_t tc__exec_staged(tc_kind_run_t run, const tc_algo_ctx_t *x, tc_request_t *req,
                            const tc_wire_response_t *r, char *msg, size_t len);

/* Sleeps until what req's submission stream had queued is done (its mark),
 * backing off, and answering the engine's hooks meanwhile as a transport's
 * wait does (x->tp's policy): a rank whose GPU is busy stays alive to its
 * peers, and another rank's abort ends the wait (TC_ERR_TRANSPORT, why).
 * TC_ERR_TRANSPORT (why) too when the stream's work failed. The mark is
 * released either way (req->cuda.mark NULL after it) (device_wait.c). */
tc_status_t tc__exec_wait_mark(const tc_algo_ctx_t *x, tc_request_t *req, char *why, size_t len);

/* A device tensor's run (device.c): the first record of its kind that
 * handles device memory and applies (the in-node allreduce,
 * device_node.c), else staged through host memory. */
tc_status_t tc__exec_device(tc_kind_run_t run, const tc_algo_ctx_t *x, tc_request_t *req,
                            const tc_wire_response_t *r, char *msg, size_t len);

/* The in-node device records (device_node.c): every rank of the set on
 * this node, each rank's device buffers opened by the others through CUDA
 * IPC. Allreduce: each rank combines its block of every rank's input with
 * the combine kernel in the documented order, then copies the others'
 * blocks. Apply from x->cuda_ipc_bytes up (device.c: not while ranks have
 * joined). */
int tc__device_node_applies(const tc_algo_ctx_t *x, const tc_algo_call_t *c);
tc_status_t tc__device_node_allreduce(const tc_algo_ctx_t *x, const tc_allreduce_job_t *j);
/* The in-node device broadcast: the others copy the root's buffer, opened
 * through CUDA IPC, into theirs (the same rule). */
tc_status_t tc__device_node_broadcast(const tc_algo_ctx_t *x, const tc_broadcast_job_t *j);
/* The in-node device allgather: each rank copies every rank's input,
 * opened through CUDA IPC, to its place in its own output (the same rule,
 * on the output's bytes). */
tc_status_t tc__device_node_allgather(const tc_algo_ctx_t *x, const tc_allgather_job_t *j);
/* The in-node device reducescatter: each rank combines its block of every
 * rank's input, opened through CUDA IPC, into its output with the combine
 * kernel (the same rule). */
tc_status_t tc__device_node_reducescatter(const tc_algo_ctx_t *x, const tc_reducescatter_job_t *j);
/* The in-node device alltoall: each rank copies the rows every rank sends
 * it from that rank's input, opened through CUDA IPC, to their place in its
 * own output (the same rule, on the largest input of any rank; j->matrix is
 * the whole matrix of rows, tc__alltoall_plan). A rank whose output could
 * not be allocated (NULL: d->why says why) still takes part: every rank
 * declines, and it is staged. The same holds for allgather's and
 * reducescatter's outputs. */
tc_status_t tc__device_node_alltoall(const tc_algo_ctx_t *x, const tc_alltoall_job_t *j);

/* The device records over a CUDA-aware MPI (device_mpi.c): where
 * x->cuda_mpi is set, a set of 2+ ranks; the reducing kinds where the set
 * has at most TC_CUDA_MAX_COMBINE ranks and rank order is the documented
 * order (or the combination is exact in any order, or TCOLL_DETERMINISTIC
 * is off). Each rank moves device memory over x->cuda_mpi; allreduce and
 * reducescatter combine each rank's block with the combine kernel. A rank
 * that cannot take part (its output not allocated, no scratch) makes every
 * rank decline alike. */
int tc__device_mpi_applies(const tc_algo_ctx_t *x, const tc_algo_call_t *c);
int tc__device_mpi_reduce_applies(const tc_algo_ctx_t *x, const tc_algo_call_t *c);
tc_status_t tc__device_mpi_allreduce(const tc_algo_ctx_t *x, const tc_allreduce_job_t *j);
tc_status_t tc__device_mpi_reducescatter(const tc_algo_ctx_t *x, const tc_reducescatter_job_t *j);
tc_status_t tc__device_mpi_allgather(const tc_algo_ctx_t *x, const tc_allgather_job_t *j);
tc_status_t tc__device_mpi_broadcast(const tc_algo_ctx_t *x, const tc_broadcast_job_t *j);
tc_status_t tc__device_mpi_alltoall(const tc_algo_ctx_t *x, const tc_alltoall_job_t *j);

/* What those records do with the memory they move: n copies, the combine
 * kernel and whether it runs here, scratch (cuda.h's contracts:
 * tc__cuda_copy_many, tc__cuda_combine, tc__cuda_combine_ready,
 * tc__cuda_alloc, tc__cuda_free; free takes NULL). tc__direct_cuda is
 * CUDA's; a test passes host stand-ins. */
typedef struct {
    tc_status_t (*copy)(int dev, int n, void *const *dst, const void *const *src,
                        const size_t *bytes, char *why, size_t len);
    tc_status_t (*combine)(int dev, tc_dtype_t dtype, tc_op_t op, int n, const void *const *x,
                           void *dst, size_t count, double prescale, double postscale, char *why,
                           size_t len);
    tc_status_t (*ready)(int dev, tc_dtype_t dtype, char *why, size_t len);
    tc_status_t (*alloc)(int dev, size_t bytes, void **p_p, char *why, size_t len);
    void (*free)(int dev, void *p);
} tc_direct_mem_t;
extern const tc_direct_mem_t tc__direct_cuda;

/* The records' movements over transport tp, with mem (j->dev is not NULL;
 * its device, scaling factors, declined and why are used as the records'
 * are). Collective over tp. */
tc_status_t tc__direct_allreduce(tc_transport_t *tp, const tc_direct_mem_t *mem,
                                 const tc_allreduce_job_t *j);
tc_status_t tc__direct_reducescatter(tc_transport_t *tp, const tc_direct_mem_t *mem,
                                     const tc_reducescatter_job_t *j);
tc_status_t tc__direct_allgather(tc_transport_t *tp, const tc_direct_mem_t *mem,
                                 const tc_allgather_job_t *j);
tc_status_t tc__direct_broadcast(tc_transport_t *tp, const tc_direct_mem_t *mem,
                                 const tc_broadcast_job_t *j);
tc_status_t tc__direct_alltoall(tc_transport_t *tp, const tc_direct_mem_t *mem,
                                const tc_alltoall_job_t *j);
/* Every rank of tp says whether it is ok: *bad_p the first that is not, or
 * -1. A status exchange (a ring allgather of 4 bytes a rank); any size. */
tc_status_t tc__direct_agree(tc_transport_t *tp, int ok, int *bad_p);

/* What the kinds' runs and device.c share about an output tcoll allocates:
 * an allgather's blocks from rank 0's plan r (bytes and displs, [set size]
 * each; the total bytes and rows), TC_OK or a status with msg naming the
 * tensor; a reducescatter's block of this rank (its first element, its
 * elements, its rows). */
tc_status_t tc__allgather_layout(const tc_algo_ctx_t *x, const tc_request_t *req,
                                 const tc_wire_response_t *r, size_t *bytes, size_t *displs,
                                 size_t *total_p, int64_t *rows_p, char *msg, size_t len);
void tc__reducescatter_block(const tc_algo_ctx_t *x, const tc_request_t *req, size_t *off_p,
                             size_t *elems_p, int64_t *rows_p);
/* An alltoall's blocks (alltoall_plan.c): this rank's rows to every rank
 * (counts[q]) with their bytes and offsets in its input (sb, sd); the rows
 * every rank sends this one (from[q * stride]) as the output's blocks (rb,
 * rd), the total bytes and rows and the output's splits in req (req's
 * out_splits allocated by the caller), TC_ERR_NOMEM with msg when they do
 * not fit in memory; the largest input of any rank in bytes from the whole
 * matrix (SIZE_MAX past a size_t). */
void tc__alltoall_send_layout(const tc_request_t *req, int size, size_t row, uint64_t *counts,
                              size_t *sb, size_t *sd);
tc_status_t tc__alltoall_recv_layout(tc_request_t *req, int size, size_t row, const uint64_t *from,
                                     size_t stride, size_t *rb, size_t *rd, size_t *total_p,
                                     int64_t *rows_p, char *msg, size_t len);
size_t tc__alltoall_most(const uint64_t *matrix, int n, size_t row);
/* An alltoall's plan for its device records (device.c): every rank's rows
 * to every rank (matrix, n x n, matrix[p * n + q]: p to q; exchanged over
 * the set's transport, 8 bytes a pair, collective), this rank's blocks in
 * its input (sb, sd) and in its output (rb, rd), the output's total bytes
 * and rows (its splits set in req), and the largest input of any rank in
 * bytes (most: alike on every rank). tc__alltoall_plan returns TC_OK or a
 * status with msg naming the tensor (nothing left allocated then);
 * tc__alltoall_plan_free frees it, and req's splits unless req is NULL. */
typedef struct {
    uint64_t *matrix;
    size_t *sb, *sd, *rb, *rd;
    size_t row, total, most;
    int64_t rows;
} tc_alltoall_plan_t;
tc_status_t tc__alltoall_plan(const tc_algo_ctx_t *x, tc_request_t *req, tc_alltoall_plan_t *p,
                              char *msg, size_t len);
void tc__alltoall_plan_free(tc_request_t *req, tc_alltoall_plan_t *p);
/* Where the rows every rank p sends rank me go, for a record that reads
 * every rank's input (inputs[p], as this rank sees it) given the whole
 * matrix (j->matrix, j->row; j->out and j->rd this rank's output): block p
 * is bytes[p] bytes from srcs[p] to dsts[p]. */
void tc__alltoall_blocks(const tc_alltoall_job_t *j, int n, int me, const void *const *inputs,
                         void **dsts, const void **srcs, size_t *bytes);
/* An allgather's output set: data with rows rows, and the ranks' dim 0s as
 * its splits (tc_request_splits). */
void tc__allgather_output(tc_request_t *req, const tc_wire_response_t *r, int size, void *data,
                          int64_t rows);

/* The chunked staging records (device_pipe.c): a device tensor larger than
 * x->stage_chunk goes through page-locked host memory in chunks of it,
 * each chunk run by the host record the selector picks for its size, the
 * copies of the other chunks overlapping it (stage_pipe.h). */
int tc__device_pipe_applies(const tc_algo_ctx_t *x, const tc_algo_call_t *c);
tc_status_t tc__device_pipe_allreduce(const tc_algo_ctx_t *x, const tc_allreduce_job_t *j);
tc_status_t tc__device_pipe_broadcast(const tc_algo_ctx_t *x, const tc_broadcast_job_t *j);

/* The records and runs of each kind (algo_<kind>.c), for the table in algo.c. */
extern const tc_kind_exec_t tc__exec_allreduce, tc__exec_allgather, tc__exec_broadcast,
    tc__exec_reducescatter, tc__exec_alltoall, tc__exec_barrier, tc__exec_join,
    tc__exec_process_set_add, tc__exec_process_set_remove;

#endif
