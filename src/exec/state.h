/*
 * state.h - what application threads and the engine thread share: the
 * engine's lifecycle state, the submission queue and the table of names in
 * flight, the table of process sets, and the facts the engine thread
 * publishes once at start-up (rank, size, node). One mutex guards it, except
 * the ids published once, read with relaxed loads.
 *
 * Defined here, below the engine thread, because the executor and the
 * submission queue (this layer) read and complete what application threads
 * submitted; the engine thread (src/engine) makes every lifecycle
 * transition.
 */
#ifndef TC_EXEC_STATE_H
#define TC_EXEC_STATE_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "exec/request.h"
#include "util/hmap.h"

#define ENG_MSG_MAX 1024 /* a request's or the engine's error message */

/*
 * The engine's lifecycle: one state, tc__engine_shared.life.
 *
 *   NONE --tc_init--> STARTING --MPI set up--> RUNNING
 *                        |  '---set-up failed--> START_FAILED (final: MPI
 *                        |                       finalized if it is tcoll's)
 *                        '---no engine thread--> NONE
 *   RUNNING --a cycle carried TERMINATE-----> TERMINATING --goodbye--> STOPPED
 *   RUNNING --a failure decided here--------> FAILED ---abort sent----> STOPPED
 *   RUNNING --another rank's abort----------> ABORTED ----------------> STOPPED
 *   TERMINATING --goodbye timed out, failure, abort--> BROKEN ---------> STOPPED
 *   STOPPED --tc_init after tc_shutdown, if the run ended cleanly--> STARTING
 *
 * Leaving RUNNING publishes why (stop_status, stop_msg): from then on
 * submissions fail at once with it, and the engine fails what is in flight.
 * FAILED, ABORTED and BROKEN leave MPI as it is (peers may be gone, and
 * MPI_Finalize could wait for them forever); only FAILED tells the other
 * ranks (an abort). STOPPED: the engine thread has finished or is about to.
 * tc_shutdown is not a state but a request the engine reads with the
 * submissions (shutdown_requested); TERMINATING is what the ranks agreed.
 *
 * Written under mu only: by tc_init (NONE or STOPPED -> STARTING, and to
 * NONE when the thread cannot start), by the engine thread for every other transition
 * (tc__life_enter, which checks each against the diagram). The engine
 * thread, the only writer once it exists, reads it without the lock
 * (eng_life() and friends); every other thread reads it under mu.
 */
#define ENG_LIFE_MAP(X)                                                                            \
    X(NONE, "not initialized")                                                                     \
    X(STARTING, "starting")                                                                        \
    X(START_FAILED, "failed to start")                                                             \
    X(RUNNING, "running")                                                                          \
    X(TERMINATING, "shutting down")                                                                \
    X(FAILED, "stopped by a failure on this rank")                                                 \
    X(ABORTED, "stopped by another rank's failure")                                                \
    X(BROKEN, "shutdown cut short")                                                                \
    X(STOPPED, "stopped")

typedef enum {
#define ENG_LIFE_ENUM_(name, text) ENG_LIFE_##name,
    ENG_LIFE_MAP(ENG_LIFE_ENUM_)
#undef ENG_LIFE_ENUM_
        ENG_LIFE_COUNT
} eng_life_t;

struct eng_pset;

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
    int shutdown_requested;  /* tc_shutdown was called on this rank */
    tc_status_t stop_status; /* set when life leaves RUNNING, final at STOPPED */
    char stop_msg[ENG_MSG_MAX];
    tc_request_t *q_head, *q_tail; /* submitted, not yet taken by the engine thread */
    tc_hmap_t inflight;            /* name -> request, from submission until completion */
    uint64_t next_seq;             /* the next queued request's seq (request.h) */
    struct eng_pset **psets;       /* [npsets], by id: NULL for ids removed or never made
                                    * (exec/pset.h) */
    uint32_t npsets;
    /* Written once per run by the engine thread during start-up, before
     * life leaves STARTING (and back to -1 by a tc_init after tc_shutdown);
     * read by any thread with relaxed loads (a value is either -1 or the
     * run's). */
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

extern eng_shared_t tc__engine_shared; /* state.c */

/* The lifecycle: the engine thread reads it without the lock (it is the
 * only writer once it runs); every other thread under mu. */
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

#endif
