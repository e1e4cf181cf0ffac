/*
 * exec.h - the engine below its thread: what the engine thread (src/engine)
 * calls to run what every rank agreed on, over the data path this layer
 * sets up and owns.
 *
 *   state.h      what application threads and the engine thread share
 *   request.h    the request object, completion, output buffers
 *   queue.c      the submission queue and the table of names in flight
 *   pset.h       the table of process sets, and each set's data path
 *   shm.c        the node's segment, the hierarchical allreduce, the routes
 *   algo.h       how each kind runs: algorithm records, one selector
 *   exec.c       running a decided list in order, fusion, deferred completion
 *   fast.c       small allreduces inside a node without the engine thread
 *                (fast_boxes.c compares the ranks' boxes of one use)
 *   device.c     how a device tensor runs: a device record, else staged.c
 *                (through host memory); device_node.c the in-node records
 *   exec_tl.c    the timeline events of what ran
 *
 * Its state (tc_exec_t) is the engine thread's alone, apart from state.h.
 * It never fails the job itself: a run that cannot go on returns its status
 * and message, and the engine thread, the one place that turns an error
 * into a job failure, stops. While it waits for peers (a transfer, the fast
 * path watching a peer that left) it calls back into the engine thread only
 * through the hooks the engine gave it (tc_exec_hooks_t), which answer
 * liveness probes and notice other ranks' aborts.
 */
#ifndef TC_EXEC_EXEC_H
#define TC_EXEC_EXEC_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "coll/coll.h"
#include "exec/pset.h"
#include "exec/request.h"
#include "exec/state.h"
#include "transport/router.h"
#include "transport/transport_mpi.h"
#include "transport/transport_shm.h"
#include "util/config.h"
#include "wire/wire.h"

/* The engine thread's answers while this layer waits (see the file
 * comment). Set before the data path is opened; called on the engine thread
 * only. */
typedef struct {
    void *arg;
    /* Looks for other ranks' aborts and answers liveness probes; 1 when the
     * engine is stopping (an abort arrived, or it failed): the wait ends, with
     * the reason in why. */
    int (*interrupt)(void *arg, char *why, size_t len);
    /* Whether global rank peer's engine still answers: 1 yes, 0 no answer
     * within the grace time (lost), -1 the engine is stopping (why). */
    int (*peer_alive)(void *arg, int peer, char *why, size_t len);
    uint64_t timeout_ns; /* TCOLL_PEER_TIMEOUT_S: a silent peer is probed after it */
} tc_exec_hooks_t;

/* A staging buffer of device tensors (staged.c). */
typedef struct {
    tc_scratch_t mem;
    int registered; /* page-locked with CUDA (tc__cuda_host_map) */
} tc_stage_buf_t;

/* What runs collectives, the engine thread's alone. */
typedef struct tc_exec {
    const tc_config_t *cfg;
    int rank, size;
    tc_exec_hooks_t hooks;

    struct {                  /* the global set's data path (opened by the engine at start-up) */
        MPI_Comm ctrl, local; /* the engine's control and node communicators, for
                                    * the set-up collectives here (the engine owns them) */
        tc_transport_t tp;    /* over a communicator of its own */
        tc_transport_mpi_t tp_mpi;
        int *node_of;   /* [size]: the lowest rank on each rank's node (the
                                    * global set's node table, coll.h; shm.c); NULL:
                                    * unknown, one node's order everywhere */
        int cuda_aware; /* every rank's MPI takes device memory, and TCOLL_MPI_CUDA
                         * (mpi_cuda.c) */
    } mpi;

    struct { /* exec.c */
        tc_scratch_t scratch;
        tc_scratch_t fusion;     /* persistent buffer that fused small tensors share */
        uint64_t cycle;          /* the cycle whose collectives run (the timeline's) */
        uint64_t ready_ns;       /* when that cycle became complete */
        tc_request_t **deferred; /* ran, waiting for this rank's earlier requests */
        size_t ndeferred, capdeferred;
        tc_stage_buf_t stage; /* staged.c: host memory device tensors run through whole */
        int stage_said;       /* the path was logged (TC_INFO, once) */
        int ipc_said;         /* device_node.c: a refusal of CUDA IPC was logged (once) */
        tc_stage_buf_t pipe;  /* device_pipe.c: TC_STAGE_SLOTS chunks */
        int pipe_said;        /* the chunked staging was logged (TC_INFO, once) */
    } run;

    struct {                /* shm.c: the node's shared-memory segment and its collectives */
        tc_shm_seg_t seg;   /* base NULL: none (off, one local rank, or setup failed) */
        tc_shm_coll_t coll; /* what the shared-memory algorithms run with */
        int single_node;    /* every rank of the job is on this node */
        int *local_ranks;   /* [local size]: the world rank of each local rank */
        /* the hierarchical allreduce: usable on every rank or on none */
        int hier_ok;
        tc_hier_t hier;
        eng_pset_t leaders; /* the nodes' leaders and, on them, their transport
                             * (index -1 on the other ranks) */
        eng_route_t route;  /* the global set's data path inside the node */
        char hier_err[256];
    } shm;
} tc_exec_t;

/* Gives transport tp the engine's hooks (x->hooks): a wait that an abort
 * ends, a silent peer probed before it is declared lost. ps: the set whose
 * transport it is (its peers are numbered within the set), or NULL for the
 * global set's. */
void tc__exec_arm(tc_exec_t *x, tc_transport_t *tp, eng_pset_t *ps);

/* Frees what the executor kept (scratch, fusion buffer, the deferred list). */
void tc__exec_free(tc_exec_t *x);

/* ---- exec.c ---------------------------------------------------------------- */

/* Runs resps[i] for reqs[i], i < n, in order (reqs[i] NULL: a name this
 * rank never submitted: an ERROR for others, or a RUN this rank takes part
 * in having joined). TC_OK, or a collective failed: the job cannot go on
 * without this rank. Then the failed collective's requests and those after
 * them are not completed yet: the caller stops the engine first (so that
 * later submissions already fail), then calls tc__exec_fail_rest with the
 * same arguments and what this returned. */
tc_status_t tc__exec_run(tc_exec_t *x, const tc_wire_response_t *resps, tc_request_t **reqs,
                         uint32_t n, uint32_t *failed_p, char *msg, size_t len);
/* After a failed tc__exec_run: completes the failed collective's requests,
 * from reqs[failed] on, with (st, msg), and frees the synthetic ones after
 * them (the rest are failed with everything else in flight). */
void tc__exec_fail_rest(tc_exec_t *x, const tc_wire_response_t *resps, tc_request_t **reqs,
                        uint32_t n, uint32_t failed, tc_status_t st, const char *msg);
/* Completes the deferred requests whose earlier requests have; 1 if one did. */
int tc__exec_deferred(tc_exec_t *x);

/* ---- staged.c: device tensors through host memory ------------------------------ */

/* tc__exec_staged: algo.h. */
/* Host memory a device tensor is staged through: memory the node's ranks
 * can map (tc_mem_alloc, so the host algorithms read it with loads),
 * page-locked for the device copies (registered with CUDA; where CUDA
 * refuses, the copies go from pageable memory), kept and reused. reserve
 * gives at least bytes of it (its contents are not kept when it grows),
 * NULL when out of memory; release gives it back. */
void *tc__exec_stage_reserve(tc_stage_buf_t *b, size_t bytes);
void tc__exec_stage_release(tc_stage_buf_t *b);
/* Frees the staging buffers, whole (staged.c) and in chunks (device_pipe.c)
 * (tc__exec_free). */
void tc__exec_stage_free(tc_exec_t *x);

/* ---- mpi_cuda.c: whether the MPI takes device memory ------------------------------ */

/* What this process's MPI says: 1 when it takes device memory; why says
 * what it said ("yes (...)", "no (...)"), for tcoll-info and the logs. */
int tc__mpi_cuda_support(char *why, size_t len);
/* x->mpi.cuda_aware: TCOLL_MPI_CUDA and every rank's MPI says so.
 * Collective over every rank (the control communicator), at start-up. */
void tc__mpi_cuda_setup(tc_exec_t *x);

/* ---- shm.c: the data path inside and across nodes ------------------------------ */

/* The job's node table (x->mpi.node_of), collective over every rank;
 * before the negotiation starts. Freed with tc__node_table_free. */
void tc__node_table(tc_exec_t *x);
void tc__node_table_free(tc_exec_t *x);
/* The segment, made after the communicators (collective over the node, and
 * over every rank for the hierarchical allreduce; never fails the job:
 * without it collectives run over MPI), and unmapped at the end (broken:
 * after a failure, MPI is left as it is). */
void tc__shm_setup(tc_exec_t *x, int local_rank, int local_size);
void tc__shm_teardown(tc_exec_t *x, int broken);
/* The shared-memory state collectives of process set pset may use, or NULL. */
tc_shm_coll_t *tc__shm_for(tc_exec_t *x, uint32_t pset);
const tc_hier_t *tc__hier_for(tc_exec_t *x, uint32_t pset);
/* Opens r for the group of n ranks (global ranks `ranks`, NULL: 0..n-1) in
 * which this rank is `me`, over mpi (open, its hooks set) and the segment's
 * mailboxes, when the group has another rank on this node and the segment
 * has mailboxes; else leaves r closed. Never fails: without it, MPI. */
void tc__shm_route_open(tc_exec_t *x, eng_route_t *r, tc_transport_t *mpi, const int *ranks, int n,
                        int me, uint32_t id);
void tc__shm_route_close(eng_route_t *r);

/* ---- fast.c: small allreduces inside a node without the engine thread ---------- */

/* start/stop/flip/poll: the engine thread (start: shm.c, which turns the
 * path off on every rank when one could not start it; stop drains the application
 * threads out of the segment); take_locked: the submission (mu held): 1 when
 * req goes this way (then not queued); post: the submitting thread after the
 * mutex; progress/wait: tc_test/tc_wait; inflight_locked: such requests in
 * flight (mu held). poll: TC_OK, or a local peer's process is gone (the job
 * cannot go on: message in msg). */
int tc__fast_start(tc_exec_t *x); /* 0, or -1 out of memory (tc__shm_setup) */
void tc__fast_stop(tc_exec_t *x);
void tc__fast_flip(tc_exec_t *x, const tc_request_t *req, const tc_wire_response_t *r);
tc_status_t tc__fast_poll(tc_exec_t *x, char *msg, size_t len);
int tc__fast_take_locked(tc_request_t *req);
void tc__fast_post(tc_request_t *req);
int tc__fast_progress(tc_request_t *req);
void tc__fast_wait(tc_request_t *req);
size_t tc__fast_inflight_locked(void);
/* Rank 0's engine: rank's joins of the global set that its negotiation has
 * taken so far (tc__neg_joins_taken); a joined rank adds its identity to
 * the small-message path's uses only once its join is counted. */
void tc__fast_joins_taken(tc_exec_t *x, int rank, uint64_t joins);

/* ---- queue.c: the submission queue and the names in flight ----------------------- */

/* Checks req against the engine's state and the set it names, gives a call
 * without a tensor its name, records it as in flight and queues it (or
 * hands it to the fast path); mu held. TC_OK, or the error (the thread's
 * error set): then nothing changed. */
tc_status_t tc__queue_submit_locked(const char *fn, tc_request_t *req);
/* The same, taking mu, waking the engine, posting a fast one; on failure
 * req is freed. */
tc_status_t tc__queue_submit(const char *fn, tc_request_t *req);
/* reqs[0..n-1] together, all or none (on a failure every request is freed). */
tc_status_t tc__queue_submit_all(const char *fn, tc_request_t **reqs, int n);
void tc__queue_append_locked(tc_request_t *req); /* to the queue's tail; mu held */
/* The engine thread: the oldest max requests queued, and whether
 * tc_shutdown was called once the queue is empty. */
size_t tc__queue_take(size_t max, tc_request_t **head_p, int *shutdown_p);
/* Completes req, which leaves the names in flight. */
void tc__queue_finish(tc_request_t *req, tc_status_t st, const char *msg);
size_t tc__queue_inflight(void);
/* The smallest seq in flight in process set pset, UINT64_MAX if none. */
uint64_t tc__queue_oldest_seq(uint32_t pset);
/* Fails every request in flight (the engine stopped). */
void tc__queue_fail_all(tc_status_t st, const char *msg);

/* ---- exec_tl.c: the timeline events of what ran (call only while tc__tl_active()) */

void tc__exec_tl_tensor(const tc_exec_t *x, const tc_request_t *req, const char *algo, uint64_t t0,
                        uint64_t t1, int fused, tc_status_t st);
void tc__exec_tl_fused(const tc_exec_t *x, tc_request_t *const *reqs, uint32_t n, const char *algo,
                       size_t bytes, uint64_t t0, uint64_t t1, tc_status_t st);
void tc__exec_tl_copy(const char *what, size_t bytes, uint32_t n, uint64_t t0);
void tc__exec_tl_fast(const tc_request_t *req, uint64_t t0, uint64_t t1, tc_status_t st);

#endif
