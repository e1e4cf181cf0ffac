/*
 * engine_internal.h - what the engine thread's files share: its state
 * (engine_t: the lifecycle's reasons, MPI's communicators, control sends,
 * the loop, the engine's side of the negotiation, and the executor's state,
 * tc_exec_t, which it owns) and the functions they call across.
 *
 *   api.c        the public submission calls: argument checks, the request
 *   api_group.c  the grouped calls
 *   opts.c       the options a call was given
 *   pset_api.c   the public process set calls
 *   lifecycle.c  tc_init/tc_shutdown, the engine thread's start and end
 *   mpi_thread.c the thread that runs the engine; once tcoll initialized
 *                MPI, MPI's main thread until exit (it finalizes MPI then)
 *   loop.c       the engine loop: step, wait, the periodic checks
 *   ctrl.c       control messages on the control communicator
 *   negotiate.c  the engine's side of the negotiation: feeds the pure state
 *                machine (src/neg) and hands what it decides to the
 *                executor (src/exec)
 *   failure.c    turning an error into the job's failure (the one place),
 *                aborts, liveness probes, the hooks the executor waits with
 *   agree.c      the knobs that must agree, checked at tc_init
 *   timeline_job.c, engine_tl.c  the job-wide timeline, the negotiation's events
 *
 * Only the engine thread touches engine_t; what application threads share
 * with it is exec/state.h. Nothing outside src/engine/ includes this header.
 */
#ifndef TC_ENGINE_ENGINE_INTERNAL_H
#define TC_ENGINE_ENGINE_INTERNAL_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "exec/exec.h"
#include "neg/neg.h"
#include "util/backoff.h"
#include "util/config.h"
#include "util/hmap.h"
#include "wire/wire.h"

/* Tags on the control communicator (docs/negotiation.md, "Messages and
 * tags"): 1-6 the negotiation's (TC_NEG_TAG_*, neg.h), 7-8 the job-wide
 * timeline's (timeline_job.c), and the transfer probe's below. */
#define ENG_TAG_ABORT TC_NEG_TAG_ABORT /* BYE with a terminate record: the sender stopped */
#define ENG_TAG_XPING 9                /* an empty REQUESTS: "is your engine alive?" (failure.c) */
#define ENG_TAG_XPONG 10               /* the answer */

#define ENG_POLL_NS 1000000u /* look for aborts and deadlines at most this often */
/* The most submissions one engine step hands to the negotiation, and the
 * most other ranks' submissions rank 0 reads in one step: a flood of names
 * is taken in over several steps, with the liveness probes looked at in
 * between (a step's work stays short however many names are in flight). */
#define ENG_TAKE_MAX 4096

/* ------------------------------------------------------------------------ */
/* The engine thread's state                                                 */
/* ------------------------------------------------------------------------ */

/* How many control-message buffers the engine keeps for reuse (see ctrl.c). */
#define ENG_CTRL_SPARES 8

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

    struct {                /* lifecycle.c, failure.c: why the engine stops (the state is shared) */
        tc_status_t status; /* set before leaving RUNNING (tc__life_enter publishes it) */
        char msg[ENG_MSG_MAX];
        uint64_t shutdown_t0; /* when this rank's tc_shutdown was first seen */
    } life;

    struct {     /* lifecycle.c: MPI (the data transport is the executor's) */
        int own; /* tcoll initialized MPI: it finalizes it */
        MPI_Comm ctrl, local;
    } mpi;

    struct { /* ctrl.c: control sends in flight */
        eng_ctrl_send_t *v;
        size_t n, cap;
        /* buffers kept for the next messages (see ctrl.c) */
        eng_ctrl_buf_t *spare[ENG_CTRL_SPARES];
        size_t nspare;
        tc_wire_buf_t rbuf; /* the receive buffer */
    } ctrl;

    struct { /* loop.c */
        tc_backoff_t bo;
        uint64_t next_poll_ns; /* see ENG_POLL_NS */
    } loop;

    struct {                       /* negotiate.c */
        tc_neg_t *neg;             /* the state machine (neg.h) */
        size_t posted;             /* its sends of this step already posted */
        int shutdown_seen;         /* this rank's tc_shutdown was handed to it */
        uint64_t next_probe_ns;    /* when to look for liveness probes again */
        int took;                  /* submissions were handed over in this step */
        uint64_t joins_published;  /* rank 0: joins taken, as last told to exec/fast.c */
        tc_wire_response_t *resps; /* what it decided, for the executor */
        tc_request_t **reqs;
        size_t cap;
    } nego;

    tc_exec_t x; /* the executor and the data path (exec/exec.h) */
} engine_t;

/* ------------------------------------------------------------------------ */
/* Across files                                                              */
/* ------------------------------------------------------------------------ */

/* life.c: the lifecycle's transitions (the engine thread's; set_locked:
 * tc_init's too, mu held; 0, or -1 for a move the diagram does not have) */
void tc__life_enter(engine_t *e, eng_life_t to);
int tc__life_set_locked(eng_life_t to);
const char *tc__life_name(eng_life_t s);

/* api.c: a submission's checks and its request (any thread; pure) */
tc_status_t tc__request_make(const char *fn, tc_kind_t kind, const char *name, const tc_tensor_t *t,
                             void *recv, tc_op_t op, int root, const int64_t *splits,
                             const tc_opts_t *opts, tc_request_t **req_p, tc_request_t **out_p);
/* opts.c: the options a call was given (NULL: TC_OPTS_INIT), checked against
 * what kind kd takes; TC_ERR_ARG with the thread's error set otherwise */
struct tc_kind_desc;
tc_status_t tc__opts_read(const char *fn, const char *name, const struct tc_kind_desc *kd,
                          const tc_opts_t *in, tc_opts_t *out);
/* A device tensor's checks (opts.c): CUDA usable here, o->device one of
 * its devices, send (and recv, for a kind with a recv buffer) count
 * elements of es bytes of that device's memory, aligned to es (the
 * kernels read whole elements; a misaligned read would be an error that
 * ends the process's CUDA context). TC_ERR_ARG with tc_last_error's
 * message. */
tc_status_t tc__opts_check_device(const char *fn, const char *name, const struct tc_kind_desc *kd,
                                  const tc_opts_t *o, const void *send, const void *recv,
                                  size_t count, size_t es);

/* ctrl.c */
void tc__ctrl_send(engine_t *e, const tc_wire_msg_t *msg, int first, int last, int skip, int tag);
size_t tc__ctrl_progress(engine_t *e);
void tc__ctrl_send_buf(engine_t *e, tc_wire_buf_t *buf, const int *dst, int ndst, int tag);
int tc__ctrl_recv(engine_t *e, int src, int tag, tc_wire_msg_t *msg, int *src_p);
void tc__ctrl_abandon(engine_t *e);
void tc__ctrl_free(engine_t *e);

/* life.c: stops this rank after a failure decided here (the one place) */
void tc__engine_fail(engine_t *e, tc_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* failure.c */
int tc__fail_poll_abort(engine_t *e);
void tc__fail_answer_pings(engine_t *e);
void tc__fail_send_abort(engine_t *e);
/* The executor's hooks (exec.h, tc_exec_hooks_t), answered by this engine. */
void tc__fail_hooks(engine_t *e, tc_exec_hooks_t *hooks);

/* How long a probed rank has to answer a liveness probe: 2 s, or twice
 * TCOLL_IDLE_POLL_MS (an idle engine's poll interval) if that is longer. */
static inline uint64_t eng_probe_grace_ns(const tc_config_t *cfg)
{
    uint64_t grace = 2000000000ull;

    if ((uint64_t)cfg->idle_poll_ms * 2000000ull > grace) {
        grace = (uint64_t)cfg->idle_poll_ms * 2000000ull;
    }
    return grace;
}

/* negotiate.c */
tc_status_t tc__engine_neg_init(engine_t *e);
void tc__engine_neg_destroy(engine_t *e);
int tc__engine_neg_take_submissions(engine_t *e);
int tc__engine_neg_step(engine_t *e);
int tc__engine_neg_busy(const engine_t *e);
int tc__engine_neg_shutdown_seen(const engine_t *e);
void tc__engine_neg_answer_probes(engine_t *e);

/* loop.c */
void tc__loop_run(engine_t *e);

/* mpi_thread.c: the thread that runs each engine (fn(arg)). run: hands it
 * the run (the parked thread that holds MPI takes it, else a new thread is
 * made); 0 or pthread_create's error. wait: until the run has ended
 * (deadline NULL: no limit), joining a thread that ended with it; 0 or
 * ETIMEDOUT. leave_behind: after a wait timed out, the thread is detached
 * and never used again (usable then says 0). On the thread, during a run:
 * hold_mpi once it initialized MPI (it then parks after the run and
 * finalizes MPI at the process's exit), release_mpi once MPI was finalized
 * or left to a failure; holds_mpi: whether MPI is tcoll's from an earlier
 * run. */
int tc__mpi_thread_run(void (*fn)(void *), void *arg);
int tc__mpi_thread_wait(const struct timespec *deadline);
void tc__mpi_thread_leave_behind(void);
int tc__mpi_thread_usable(void);
void tc__mpi_thread_hold_mpi(void);
void tc__mpi_thread_release_mpi(void);
int tc__mpi_thread_holds_mpi(void);

/* engine_tl.c: the negotiation's timeline events (call only while
 * tc__tl_active()) */
void tc__engine_tl_submitted(int src, const tc_wire_request_t *w);
void tc__engine_tl_ready(int src, const char *name, uint32_t len);

#endif
