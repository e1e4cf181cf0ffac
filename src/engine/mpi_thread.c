/*
 * mpi_thread.c - the thread that runs tcoll's engine, and, once tcoll has
 * initialized MPI, MPI's main thread until the process exits.
 *
 * MPI_THREAD_FUNNELED (tcoll's level when it initializes MPI) lets only
 * the thread that called MPI_Init_thread call MPI, MPI_Finalize included,
 * and MPI can be initialized once per process. So the thread that
 * initialized MPI outlives the engine it ran: after that run it parks,
 * runs the engine of a later tc_init (tc_init after tc_shutdown), and when
 * the process exits (an atexit handler, registered once) it finalizes MPI,
 * unless MPI was finalized already or a channel context still holds it.
 * A thread that does not hold MPI (the application initialized it, or a
 * run ended in a failure and left MPI as it was) ends with its run.
 *
 * A run is a function and its argument (lifecycle.c's engine_main); this
 * file knows nothing of engines. It calls MPI only at exit, on the thread
 * that initialized it. One mutex guards its state; a run never holds it.
 *
 *   tc_init      -> tc__mpi_thread_run: the parked thread takes the run,
 *                   or a new thread is made for it
 *   the run      -> tc__mpi_thread_hold_mpi after MPI_Init_thread;
 *                   tc__mpi_thread_release_mpi once it finalized MPI, or
 *                   left it to a failure
 *   tc_shutdown  -> tc__mpi_thread_wait (joins a thread that ended), and
 *                   tc__mpi_thread_leave_behind when it gave up waiting
 *   exit()       -> at_exit: the parked thread finalizes MPI and ends
 */
#define _GNU_SOURCE
#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "util/log.h"

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a run came, a run ended, or the process exits */
    pthread_t thread;
    int alive; /* the thread exists, not joined and not left behind */
    void (*fn)(void *);
    void *arg;
    int has_run;     /* fn(arg) is handed over, not yet taken */
    int busy;        /* the thread runs fn(arg) */
    int holds_mpi;   /* it initialized MPI: it parks after its run */
    int left_behind; /* a wait gave up on it: detached, never used again */
    int exiting;     /* the process exits: finalize MPI, then end */
    int at_exit_set; /* at_exit is registered */
    pid_t pid;       /* the process that registered it (not a forked child) */
} T = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* On the thread that initialized MPI, at exit: finalizes MPI unless it is
 * finalized already or a channel context still uses it (its proxy may call
 * MPI); first frees the channels' communicator a run left to contexts that
 * are gone since. */
static void finalize_mpi(void)
{
    eng_shared_t *sh = &tc__engine_shared;
    int inited = 0, finalized = 1, users;

    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized) {
        return;
    }
    users = atomic_load_explicit(&sh->chan_users, memory_order_relaxed);
    if (users > 0) {
        TC_WARN("engine",
                "%d channel context%s still open at exit: MPI is not finalized (destroy "
                "contexts before the process exits)",
                users, users == 1 ? " is" : "s are");
        return;
    }
    if (sh->chan_comm != MPI_COMM_NULL) {
        MPI_Comm_free(&sh->chan_comm);
        sh->chan_comm = MPI_COMM_NULL;
    }
    TC_DEBUG("engine", "finalizing MPI at exit");
    MPI_Finalize();
}

static void *thread_main(void *unused)
{
    int finalize;

    (void)unused;
    pthread_mutex_lock(&T.mu);
    for (;;) {
        void (*fn)(void *);
        void *arg;
        while (!T.has_run && !T.exiting) {
            pthread_cond_wait(&T.cv, &T.mu); /* parked between runs */
        }
        if (!T.has_run) {
            break; /* the process exits */
        }
        fn = T.fn;
        arg = T.arg;
        T.has_run = 0;
        T.busy = 1;
        pthread_mutex_unlock(&T.mu);
        fn(arg);
        pthread_mutex_lock(&T.mu);
        T.busy = 0;
        pthread_cond_broadcast(&T.cv);
        if (!T.holds_mpi || T.left_behind) {
            pthread_mutex_unlock(&T.mu);
            return NULL; /* joined by tc__mpi_thread_wait, or detached */
        }
    }
    finalize = T.holds_mpi;
    T.holds_mpi = 0;
    pthread_mutex_unlock(&T.mu);
    if (finalize) {
        finalize_mpi();
    }
    return NULL;
}

/* At the process's exit: the parked thread that holds MPI finalizes it.
 * A thread still running an engine (no tc_shutdown) is left alone, and so
 * is MPI, as after a failure. */
static void at_exit(void)
{
    pthread_mutex_lock(&T.mu);
    if (T.pid != getpid() || !T.alive || T.busy || T.has_run || !T.holds_mpi) {
        pthread_mutex_unlock(&T.mu);
        return;
    }
    T.exiting = 1;
    pthread_cond_broadcast(&T.cv);
    pthread_mutex_unlock(&T.mu);
    pthread_join(T.thread, NULL);
    pthread_mutex_lock(&T.mu);
    T.alive = 0;
    pthread_mutex_unlock(&T.mu);
}

int tc__mpi_thread_run(void (*fn)(void *), void *arg)
{
    int rc = 0;

    pthread_mutex_lock(&T.mu);
    T.fn = fn;
    T.arg = arg;
    T.has_run = 1;
    if (T.alive) {
        pthread_cond_broadcast(&T.cv); /* parked: it holds MPI */
    } else if ((rc = pthread_create(&T.thread, NULL, thread_main, NULL)) == 0) {
        (void)pthread_setname_np(T.thread, "tcoll-engine"); /* top -H, perf, gdb */
        T.alive = 1;
    } else {
        T.has_run = 0;
    }
    pthread_mutex_unlock(&T.mu);
    return rc;
}

int tc__mpi_thread_wait(const struct timespec *deadline)
{
    int join;

    pthread_mutex_lock(&T.mu);
    while (T.busy || T.has_run) {
        int rc = deadline != NULL ? pthread_cond_timedwait(&T.cv, &T.mu, deadline)
                                  : pthread_cond_wait(&T.cv, &T.mu);
        if (rc == ETIMEDOUT) {
            pthread_mutex_unlock(&T.mu);
            return ETIMEDOUT;
        }
    }
    join = T.alive && !T.holds_mpi;
    pthread_mutex_unlock(&T.mu);
    if (join) {
        pthread_join(T.thread, NULL); /* it returns right after its run */
        pthread_mutex_lock(&T.mu);
        T.alive = 0;
        pthread_mutex_unlock(&T.mu);
    }
    return 0;
}

void tc__mpi_thread_leave_behind(void)
{
    pthread_mutex_lock(&T.mu);
    if (T.alive) {
        T.left_behind = 1;
        T.alive = 0;
        pthread_detach(T.thread);
    }
    pthread_mutex_unlock(&T.mu);
}

int tc__mpi_thread_usable(void)
{
    int usable;

    pthread_mutex_lock(&T.mu);
    usable = !T.left_behind;
    pthread_mutex_unlock(&T.mu);
    return usable;
}

void tc__mpi_thread_hold_mpi(void)
{
    pthread_mutex_lock(&T.mu);
    T.holds_mpi = 1;
    if (!T.at_exit_set) {
        T.at_exit_set = 1;
        T.pid = getpid();
        if (atexit(at_exit) != 0) {
            TC_WARN("engine", "cannot register MPI's finalization at exit: MPI will not be "
                              "finalized");
        }
    }
    pthread_mutex_unlock(&T.mu);
}

void tc__mpi_thread_release_mpi(void)
{
    pthread_mutex_lock(&T.mu);
    T.holds_mpi = 0;
    pthread_mutex_unlock(&T.mu);
}

int tc__mpi_thread_holds_mpi(void)
{
    int holds;

    pthread_mutex_lock(&T.mu);
    holds = T.holds_mpi;
    pthread_mutex_unlock(&T.mu);
    return holds;
}
