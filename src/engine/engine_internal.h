/*
 * engine_internal.h - what the engine's files share: the part of the state
 * application threads see (the submission queue, under one mutex), the
 * engine thread's own state (engine_t, one sub-structure per concern), and
 * the functions the files call across.
 *
 *   api.c        the public submission calls: argument checks, the queue
 *   lifecycle.c  tc_init/tc_shutdown, the engine thread's start and end
 *   loop.c       the engine loop: step, wait, the periodic checks
 *   ctrl.c       control messages on the control communicator
 *   negotiate.c  the engine's side of the negotiation: feeds the pure state
 *                machine (neg.h: neg.c, neg_tree.c, neg_watch.c, over rank
 *                0's message table and the response cache) and runs what
 *                it decides; the protocol is docs/negotiation.md
 *   exec.c       running what every rank agreed on, fusion
 *   failure.c    stopping after a failure, aborts, the transfer probe
 *   engine_tl.c  the engine's timeline events
 *   algo*.c      how each kind runs: algorithm records and one selector (algo.h)
 *
 * Only the engine thread touches engine_t; everything else here is said
 * with the lock or the thread that owns it. Nothing outside src/engine/
 * includes this header.
 */
#ifndef TC_ENGINE_ENGINE_INTERNAL_H
#define TC_ENGINE_ENGINE_INTERNAL_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "coll/coll.h"
#include "neg/neg.h"
#include "engine/request.h"
#include "transport/router.h"
#include "transport/transport_mpi.h"
#include "transport/transport_shm.h"
#include "util/backoff.h"
#include "util/config.h"
#include "util/hmap.h"
#include "wire/wire.h"

/* Tags on the control communicator (docs/negotiation.md, "Messages and
 * tags"): 1-6 the negotiation's (TC_NEG_TAG_*, neg.h), 7-8 the job-wide
 * timeline's (timeline_job.c), and the transfer probe's below. */
#define ENG_TAG_ABORT TC_NEG_TAG_ABORT /* BYE with a terminate record: the sender stopped */
#define ENG_TAG_XPING 9  /* an empty REQUESTS: "is your engine alive?" (failure.c) */
#define ENG_TAG_XPONG 10 /* the answer */

#define ENG_POLL_NS 1000000u /* look for aborts and deadlines at most this often */
#define ENG_MSG_MAX 1024     /* a request's or the engine's error message */
/* The most submissions one engine step hands to the negotiation, and the
 * most other ranks' submissions rank 0 reads in one step: a flood of names
 * is taken in over several steps, with the liveness probes looked at in
 * between (a step's work stays short however many names are in flight). */
#define ENG_TAKE_MAX 4096

/* ------------------------------------------------------------------------ */
/* Shared with application threads                                           */
/* ------------------------------------------------------------------------ */

/*
 * The engine's lifecycle: one state, tc__engine_shared.life.
 *
 *   NONE --tc_init--> STARTING --MPI set up--> RUNNING
 *                        |  '---set-up failed--> START_FAILED (final: MPI
 *                        |                       cannot be initialized twice)
 *                        '---no engine thread--> NONE
 *   RUNNING --a cycle carried TERMINATE-----> TERMINATING --goodbye--> STOPPED
 *   RUNNING --a failure decided here--------> FAILED ---abort sent----> STOPPED
 *   RUNNING --another rank's abort----------> ABORTED ----------------> STOPPED
 *   TERMINATING --goodbye timed out, failure, abort--> BROKEN ---------> STOPPED
 *
 * Leaving RUNNING publishes why (stop_status, stop_msg): from then on
 * submissions fail at once with it, and the engine fails what is in flight.
 * FAILED, ABORTED and BROKEN leave MPI as it is (peers may be gone, and
 * MPI_Finalize could wait for them forever); only FAILED tells the other
 * ranks (an abort). STOPPED: the engine thread has finished or is about to.
 * tc_shutdown is not a state but a request the engine reads with the
 * submissions (shutdown_requested); TERMINATING is what the ranks agreed.
 *
 * Written under mu only: by tc_init (NONE -> STARTING, and back when the
 * thread cannot start), by the engine thread for every other transition
 * (tc__life_enter, which checks each against the diagram). The engine
 * thread, the only writer once it exists, reads it without the lock
 * (eng_life() and friends); every other thread reads it under mu.
 */
#define ENG_LIFE_MAP(X)                                 \
    X(NONE, "not initialized")                          \
    X(STARTING, "starting")                             \
    X(START_FAILED, "failed to start")                  \
    X(RUNNING, "running")                               \
    X(TERMINATING, "shutting down")                     \
    X(FAILED, "stopped by a failure on this rank")      \
    X(ABORTED, "stopped by another rank's failure")     \
    X(BROKEN, "shutdown cut short")                     \
    X(STOPPED, "stopped")

typedef enum {
#define ENG_LIFE_ENUM_(name, text) ENG_LIFE_##name,
    ENG_LIFE_MAP(ENG_LIFE_ENUM_)
#undef ENG_LIFE_ENUM_
    ENG_LIFE_COUNT
} eng_life_t;

/*
 * A process set (tcoll.h; pset.c). Set 0 is every rank. The table of sets
 * (eng_shared_t.psets, indexed by id) and the fields above `tp` are read
 * by application threads under mu and written by the engine thread under
 * mu (a set is created and removed by running the PROCESS_SET_ADD and _REMOVE
 * kinds, at the same point of the agreed order on every rank); the data
 * path below is the engine thread's alone.
 */
/* A process set's data path inside a node (shm.c): the segment's
 * point-to-point transport under a router with the set's MPI transport. */
typedef struct {
    int open;
    tc_transport_t p2p, rt;
    tc_transport_shm_t p2p_impl;
    tc_router_t rt_impl;
} eng_route_t;

struct engine;
typedef struct eng_pset {
    uint32_t id;
    int n;      /* members */
    int *ranks; /* [n]: their global ranks, ascending */
    int index;  /* this rank's place among them, or -1 */
    /* auto names (api.c, name_call) and joins, per set */
    uint64_t nbarriers; /* barriers queued since this rank's last join in the set */
    uint64_t njoins;    /* joins queued in the set: the epoch of auto names */
    uint64_t nsetops;   /* set 0: process set additions and removals queued since the
                         * last join */
    int join_pending;   /* this rank's join in the set has not completed */
    /* engine thread: the members' data path (set 0: engine_t.mpi's); open
     * (its own communicator) on members only */
    tc_transport_t tp;
    tc_transport_mpi_t tp_mpi;
    eng_route_t route; /* open: the set's collectives go through route.rt */
    int *node;         /* [n] on members: the set's node table (coll.h, the
                        * documented order); NULL elsewhere */
    struct engine *e;
} eng_pset_t;

/* Everything application threads and the engine thread share is under mu,
 * except the four ids at the end. Defined in lifecycle.c. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t wake;    /* the engine thread sleeps here */
    pthread_cond_t started; /* tc_init waits here while life is STARTING */
    eng_life_t life;
    tc_status_t init_status; /* set before life leaves STARTING */
    char init_msg[ENG_MSG_MAX];
    int engine_sleeping;
    int shutdown_requested; /* tc_shutdown was called on this rank */
    tc_status_t stop_status; /* set when life leaves RUNNING, final at STOPPED */
    char stop_msg[ENG_MSG_MAX];
    tc_request_t *q_head, *q_tail; /* submitted, not yet taken by the engine thread */
    tc_hmap_t inflight;            /* name -> request, from submission until completion */
    uint64_t next_seq;             /* the next queued request's seq (request.h) */
    eng_pset_t **psets;            /* [npsets], by id: NULL for ids removed or never made */
    uint32_t npsets;
    pthread_t thread;
    /* Written once by the engine thread during start-up, before life leaves
     * STARTING; read by any thread with relaxed loads (a value is
     * either -1 or final). */
    _Atomic int rank, size, local_rank, local_size;
    /* The lowest rank on this rank's node (-1: unknown) and whether MPI runs
     * at MPI_THREAD_MULTIPLE (engine_info.h). */
    _Atomic int node_first, thread_multiple;
    /* At MPI_THREAD_MULTIPLE: the channels' communicator (a duplicate of the
     * world, made and freed by the engine thread; MPI_COMM_NULL otherwise),
     * its largest tag, and how many channel contexts use it (their proxies
     * call MPI until they are destroyed). */
    MPI_Comm chan_comm;
    int chan_tag_ub;
    _Atomic int chan_users;
    /* The engine thread has requests deferred until this rank's earlier
     * ones complete (exec.c); a thread completing a request off the engine
     * (fast.c) wakes it then. Relaxed: a hint; the engine also looks on its
     * periodic wake-ups. */
    _Atomic int deferred;
} eng_shared_t;

extern eng_shared_t tc__engine_shared;

/* ------------------------------------------------------------------------ */
/* The engine thread's state                                                 */
/* ------------------------------------------------------------------------ */

/* A control message in flight; the buffer may be shared by several sends. */
typedef struct {
    int refs;
    tc_wire_buf_t buf;
} eng_ctrl_buf_t;

typedef struct {
    MPI_Request req;
    eng_ctrl_buf_t *cb;
} eng_ctrl_send_t;

typedef struct engine {
    const tc_config_t *cfg;
    int rank, size;

    struct { /* lifecycle.c, failure.c: why the engine stops (the state is shared) */
        tc_status_t status; /* set before leaving RUNNING (tc__life_enter publishes it) */
        char msg[ENG_MSG_MAX];
        uint64_t shutdown_t0; /* when this rank's tc_shutdown was first seen */
    } life;

    struct { /* lifecycle.c: MPI and the data transport */
        int own; /* tcoll initialized MPI: it finalizes it */
        MPI_Comm ctrl, local;
        tc_transport_t tp;         /* the global set's data path, over a */
        tc_transport_mpi_t tp_mpi; /* communicator of its own */
        int *node_of;              /* [size]: the lowest rank on each rank's node (the
                                    * global set's node table, coll.h; shm.c); NULL:
                                    * unknown, one node's order everywhere */
    } mpi;

    struct { /* ctrl.c: control sends in flight */
        eng_ctrl_send_t *v;
        size_t n, cap;
    } ctrl;

    struct { /* loop.c */
        tc_backoff_t bo;
        uint64_t next_poll_ns; /* see ENG_POLL_NS */
    } loop;

    struct { /* exec.c */
        tc_scratch_t scratch;
        tc_scratch_t fusion; /* persistent buffer that fused small tensors share */
        uint64_t cycle;      /* the cycle whose collectives run (the timeline's) */
        uint64_t ready_ns;   /* when that cycle became complete */
        tc_request_t **deferred; /* ran, waiting for this rank's earlier requests */
        size_t ndeferred, capdeferred;
    } exec;

    struct { /* shm.c: the node's shared-memory segment and its collectives */
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

    struct { /* negotiate.c */
        tc_neg_t *neg;             /* the state machine (neg.h) */
        size_t posted;             /* its sends of this step already posted */
        int shutdown_seen;         /* this rank's tc_shutdown was handed to it */
        uint64_t next_probe_ns;    /* when to look for liveness probes again */
        int took;                  /* submissions were handed over in this step */
        tc_wire_response_t *resps; /* what it decided, for the executor */
        tc_request_t **reqs;
        size_t cap;
    } nego;
} engine_t;

/* ------------------------------------------------------------------------ */
/* Across files                                                              */
/* ------------------------------------------------------------------------ */

/* The lifecycle (engine thread; see the diagram above). */
static inline eng_life_t eng_life(void)
{
    return tc__engine_shared.life;
}

/* Negotiating and running collectives: not stopping or stopped. */
static inline int eng_running(void)
{
    return eng_life() == ENG_LIFE_RUNNING;
}

/* Stopped by a failure (here, another rank's, or during the shutdown): MPI
 * may be unusable, so the goodbye and MPI's teardown are skipped. */
static inline int eng_broken(void)
{
    eng_life_t s = eng_life();
    return s == ENG_LIFE_FAILED || s == ENG_LIFE_ABORTED || s == ENG_LIFE_BROKEN;
}

/* lifecycle.c */
void tc__life_enter(engine_t *e, eng_life_t to);
const char *tc__life_name(eng_life_t s);

/* api.c: the queue (engine thread) */
size_t tc__queue_take(size_t max, tc_request_t **head_p, int *shutdown_p);
void tc__queue_finish(tc_request_t *req, tc_status_t st, const char *msg);
size_t tc__queue_inflight(void);
/* The smallest seq in flight in process set pset, UINT64_MAX if none. */
uint64_t tc__queue_oldest_seq(uint32_t pset);
tc_status_t tc__queue_submit_all(const char *fn, tc_request_t **reqs, int n); /* all or none */
void tc__queue_append_locked(tc_request_t *req); /* to the queue's tail; mu held */
void tc__queue_fail_all(tc_status_t st, const char *msg);
/* api.c: a submission's checks and its request (any thread; pure) */
tc_status_t tc__request_make(const char *fn, tc_kind_t kind, const char *name,
                             const tc_tensor_t *t, void *recv, tc_op_t op, int root,
                             const int64_t *splits, const tc_opts_t *opts, tc_request_t **req_p,
                             tc_request_t **out_p);
/* opts.c: the options a call was given (NULL: TC_OPTS_INIT), checked against
 * what kind kd takes; TC_ERR_ARG with the thread's error set otherwise */
struct tc_kind_desc;
tc_status_t tc__opts_read(const char *fn, const char *name, const struct tc_kind_desc *kd,
                          const tc_opts_t *in, tc_opts_t *out);

/* ctrl.c */
void tc__ctrl_send(engine_t *e, const tc_wire_msg_t *msg, int first, int last, int skip,
                   int tag);
size_t tc__ctrl_progress(engine_t *e);
void tc__ctrl_send_buf(engine_t *e, tc_wire_buf_t *buf, const int *dst, int ndst, int tag);
int tc__ctrl_recv(engine_t *e, int src, int tag, tc_wire_msg_t *msg, int *src_p);
void tc__ctrl_abandon(engine_t *e);

/* failure.c */
void tc__engine_fail(engine_t *e, tc_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int tc__fail_poll_abort(engine_t *e);
void tc__fail_answer_pings(engine_t *e);
void tc__fail_send_abort(engine_t *e);
void tc__fail_hook_transport(engine_t *e);
void tc__fail_hook_set_transport(engine_t *e, eng_pset_t *ps);

/* shm.c: the segment, made after the communicators (collective over the
 * node; never fails the job: without it collectives run over MPI) and
 * unmapped at the end. tc__shm_for: the shared-memory state collectives of
 * process set pset may use, or NULL. */
void tc__shm_setup(engine_t *e, int local_rank, int local_size);
/* The job's node table (e->mpi.node_of), after the local communicator and
 * before the negotiation starts; collective over every rank. Freed with
 * tc__node_table_free. */
void tc__node_table(engine_t *e);
void tc__node_table_free(engine_t *e);
void tc__shm_teardown(engine_t *e);
tc_shm_coll_t *tc__shm_for(engine_t *e, uint32_t pset);
const tc_hier_t *tc__hier_for(engine_t *e, uint32_t pset);
/* Opens r for the group of n ranks (global ranks `ranks`, NULL: 0..n-1) in
 * which this rank is `me`, over mpi (open, its hooks set) and the segment's
 * mailboxes, when the group has another rank on this node and the segment
 * has mailboxes; else leaves r closed. Never fails: without it, MPI. */
void tc__shm_route_open(engine_t *e, eng_route_t *r, tc_transport_t *mpi, const int *ranks,
                        int n, int me, uint32_t id);
void tc__shm_route_close(eng_route_t *r);

/* fast.c: small allreduces inside a node without the engine thread (see the
 * file comment). start/stop/flip/poll: the engine thread (stop drains the
 * application threads out of the segment); take_locked: submit_locked (mu
 * held): 1 when req goes this way (then not queued); post: the submitting
 * thread after the mutex; progress/wait: tc_test/tc_wait; inflight_locked:
 * such requests in flight (mu held). */
void tc__fast_start(engine_t *e);
void tc__fast_stop(engine_t *e);
void tc__fast_flip(engine_t *e, const tc_request_t *req, const tc_wire_response_t *r);
void tc__fast_poll(engine_t *e);
int tc__fast_take_locked(tc_request_t *req);
void tc__fast_post(tc_request_t *req);
int tc__fast_progress(tc_request_t *req);
void tc__fast_wait(tc_request_t *req);
size_t tc__fast_inflight_locked(void);
void tc__engine_tl_fast(const tc_request_t *req, uint64_t t0, uint64_t t1, tc_status_t st);

/* negotiate.c */
uint64_t tc__probe_grace_ns(const tc_config_t *cfg);
tc_status_t tc__nego_init(engine_t *e);
void tc__nego_destroy(engine_t *e);
int tc__nego_take_submissions(engine_t *e);
int tc__nego_step(engine_t *e);
int tc__nego_busy(const engine_t *e);
int tc__nego_shutdown_seen(const engine_t *e);
void tc__nego_answer_probes(engine_t *e);
void tc__nego_goodbye(engine_t *e);

/* pset.c: the table of process sets. get: the set with id, or NULL (mu
 * held, or the engine thread); the global set is made before the engine
 * runs and freed after it stopped (its data path is engine_t.mpi's). */
eng_pset_t *tc__pset_get(uint32_t id);
tc_status_t tc__pset_init_global(int size, int rank);
void tc__pset_free_all(engine_t *e, int comms_usable);
tc_transport_t *tc__pset_transport(engine_t *e, uint32_t id);
/* The node table of set id's members (coll.h; NULL: one node's order). */
const int *tc__pset_node_table(engine_t *e, uint32_t id);
/* A submission to set id (mu held): the set exists and this rank is in it,
 * and with has_root (TC_PARAM_ROOT kinds), root is a member; *size_p is the
 * set's size, *root_index_p root's place in it. TC_ERR_ARG with the error
 * set. */
tc_status_t tc__pset_check(const char *fn, const char *name, uint32_t id, int has_root,
                           int root, int *size_p, int *root_index_p);

/* pset.c: the runs of process_set_add and _remove (algo_control.c), which
 * every rank makes at the same point of the agreed order. */
tc_status_t tc__pset_run_add(struct engine *e, tc_request_t *req, const tc_wire_response_t *r,
                             char *msg, size_t len);
tc_status_t tc__pset_run_remove(struct engine *e, tc_request_t *req,
                                const tc_wire_response_t *r, char *msg, size_t len);

/* exec.c */
void tc__exec_run(engine_t *e, const tc_wire_response_t *resps, tc_request_t **reqs, uint32_t n);
int tc__exec_deferred(engine_t *e);

/* loop.c */
void tc__loop_run(engine_t *e);

/* engine_tl.c (call only while tc__tl_active()) */
void tc__engine_tl_tensor(const engine_t *e, const tc_request_t *req, const char *algo,
                          uint64_t t0, uint64_t t1, int fused, tc_status_t st);
void tc__engine_tl_fused(const engine_t *e, tc_request_t *const *reqs, uint32_t n,
                         const char *algo, size_t bytes, uint64_t t0, uint64_t t1,
                         tc_status_t st);
void tc__engine_tl_copy(const char *what, size_t bytes, uint32_t n, uint64_t t0);
void tc__engine_tl_submitted(int src, const tc_wire_request_t *w);
void tc__engine_tl_ready(int src, const char *name, uint32_t len);

#endif
