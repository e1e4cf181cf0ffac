/*
 * lifecycle.c - tc_init and tc_shutdown, and the engine's start and end:
 * MPI, the control and node-local communicators and the data transport
 * (which makes its own), the goodbye handshake, the communicators' teardown.
 *
 * tc_init hands a new engine to the engine thread (mpi_thread.c) and waits
 * until it has set MPI up; the thread then runs the loop (loop.c) until the
 * engine stops, fails what is left, and (after a normal shutdown) makes sure
 * no control message is left unmatched before it frees the communicators and
 * closes the data transports. If tcoll initialized MPI, MPI stays
 * initialized: the same thread runs the engine of a later tc_init, and
 * finalizes MPI when the process exits. After a failure MPI is left as it
 * is (peers may be gone, and MPI_Finalize could wait for them forever), and
 * tcoll cannot start again in this process. tc_shutdown asks the engine to
 * stop and waits for its run to end, each step bounded by
 * TCOLL_SHUTDOWN_TIMEOUT_S. A tc_init after a clean tc_shutdown starts
 * afresh: new communicators, the global process set alone, empty caches,
 * counters and timeline, a new shared-memory segment; the knobs keep the
 * values read at the first tc_init. Every lifecycle transition goes through
 * tc__life_set_locked (life.c), which refuses any move the diagram
 * (exec/state.h) does not have.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "cuda/cuda.h"
#include "engine/agree.h"
#include "exec/algo.h"
#include "engine/engine_internal.h"
#include "engine/timeline_job.h"
#include "util/backoff.h"
#include "util/log.h"
#include "util/ranks.h"
#include "util/status.h"
#include "util/timeline.h"

/* Whether the last run ended broken (FAILED, ABORTED or BROKEN: MPI left as
 * it was), and so tcoll cannot start again. Written by the engine thread
 * before its run ends, read by tc_init after; under tc__engine_shared.mu. */
static int g_last_run_broken;

/* ------------------------------------------------------------------------ */
/* The engine thread: start-up, goodbye and teardown                                  */
/* ------------------------------------------------------------------------ */

static const char *thread_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    }
    return "an unknown thread level";
}

static tc_status_t comm_failed(int rc, char *msg, size_t len)
{
    char why[MPI_MAX_ERROR_STRING];

    snprintf(msg, len, "cannot create tcoll's communicators: %s",
             tc__mpi_strerror(rc, why, sizeof(why)));
    return TC_ERR_TRANSPORT;
}

/* TCOLL_RANKS_PER_NODE: splits the node's communicator *local into pretend
 * nodes of per consecutive world ranks (their intersection with the real
 * node: shared memory never spans real nodes). */
static int pretend_nodes(MPI_Comm *local, int per)
{
    MPI_Comm split;
    int world, rc;

    MPI_Comm_rank(MPI_COMM_WORLD, &world);
    rc = MPI_Comm_split(*local, world / per, world, &split);
    if (rc == MPI_SUCCESS) {
        MPI_Comm_free(local);
        *local = split;
    }
    return rc;
}

/* At MPI_THREAD_MULTIPLE: the channels' communicator (engine_info.h). */
static tc_status_t chan_comm_setup(char *msg, size_t len)
{
    eng_shared_t *sh = &tc__engine_shared;
    int rc, flag = 0, *ub = NULL;

    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &sh->chan_comm)) != MPI_SUCCESS) {
        sh->chan_comm = MPI_COMM_NULL;
        return comm_failed(rc, msg, len);
    }
    MPI_Comm_set_errhandler(sh->chan_comm, MPI_ERRORS_RETURN);
    MPI_Comm_get_attr(sh->chan_comm, MPI_TAG_UB, &ub, &flag);
    sh->chan_tag_ub = flag && ub != NULL ? *ub : 32767;
    return TC_OK;
}

/* Frees it, unless a channel context still uses it. Returns 0 when one
 * does: then MPI must stay initialized. */
static int chan_comm_free(void)
{
    eng_shared_t *sh = &tc__engine_shared;
    int users = atomic_load_explicit(&sh->chan_users, memory_order_relaxed);

    if (sh->chan_comm == MPI_COMM_NULL) {
        return 1;
    }
    if (users > 0) {
        TC_WARN("engine",
                "%d channel context%s still open at tc_shutdown: MPI is left "
                "initialized for their proxies (destroy contexts before tc_shutdown)",
                users, users == 1 ? " is" : "s are");
        return 0;
    }
    MPI_Comm_free(&sh->chan_comm);
    sh->chan_comm = MPI_COMM_NULL;
    return 1;
}

/* Initializes MPI if the application has not, creates tcoll's
 * communicators, the data transport and the negotiation's tables. On
 * failure writes why into msg and undoes all of it (MPI is finalized again
 * if it was initialized here). */
static tc_status_t mpi_setup(engine_t *e, char *msg, size_t len)
{
    int inited = 0, finalized = 0, provided = 0, rc, lrank = 0, lsize = 1;
    char why[MPI_MAX_ERROR_STRING];
    tc_status_t st;

    MPI_Finalized(&finalized);
    if (finalized) {
        snprintf(msg, len, "MPI has already been finalized in this process");
        return TC_ERR_STATE;
    }
    MPI_Initialized(&inited);
    if (inited && tc__mpi_thread_holds_mpi()) {
        /* tcoll initialized MPI, on this thread, for an earlier run */
        MPI_Query_thread(&provided);
        e->mpi.own = 1;
    } else if (inited) {
        MPI_Query_thread(&provided);
        if (provided < MPI_THREAD_MULTIPLE) {
            snprintf(msg, len,
                     "MPI was initialized with %s, but tcoll needs MPI_THREAD_MULTIPLE when the "
                     "application initializes MPI (its engine thread calls MPI alongside the "
                     "application's threads): call MPI_Init_thread with MPI_THREAD_MULTIPLE, or "
                     "let tc_init initialize MPI",
                     thread_level_name(provided));
            return TC_ERR_STATE;
        }
    } else {
        /* Only this thread calls MPI, unless channel proxies are to call it
         * too (TCOLL_MPI_THREAD=multiple). */
        int want = e->cfg->mpi_thread ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED;
        rc = MPI_Init_thread(NULL, NULL, want, &provided);
        if (rc != MPI_SUCCESS) {
            snprintf(msg, len, "MPI_Init_thread failed: %s",
                     tc__mpi_strerror(rc, why, sizeof(why)));
            return TC_ERR_TRANSPORT;
        }
        e->mpi.own = 1;
        tc__mpi_thread_hold_mpi(); /* this thread is MPI's main thread from now on */
        if (provided < want) {
            TC_WARN("engine", "MPI provides only %s; tcoll asked for %s%s",
                    thread_level_name(provided), thread_level_name(want),
                    want == MPI_THREAD_MULTIPLE ? " (TCOLL_MPI_THREAD=multiple): channels "
                                                  "between nodes will be refused"
                                                : "");
        }
    }
    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &e->mpi.ctrl)) != MPI_SUCCESS) {
        st = comm_failed(rc, msg, len);
        goto err_finalize;
    }
    /* The data transport makes its own communicator (a duplicate). */
    if ((st = tc__transport_mpi_open(&e->x.mpi.tp, &e->x.mpi.tp_mpi, MPI_COMM_WORLD, NULL, 0, 0,
                                     (uint32_t)e->cfg->spin, (uint32_t)e->cfg->backoff_max_us)) !=
        TC_OK) {
        snprintf(msg, len, "cannot create tcoll's communicators: %s", e->x.mpi.tp.err);
        goto err_free_ctrl;
    }
    if ((rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                                  &e->mpi.local)) != MPI_SUCCESS) {
        st = comm_failed(rc, msg, len);
        goto err_close_data;
    }
    if (e->cfg->ranks_per_node > 0 &&
        (rc = pretend_nodes(&e->mpi.local, e->cfg->ranks_per_node)) != MPI_SUCCESS) {
        st = comm_failed(rc, msg, len);
        goto err_free_local;
    }
    /* (a channels' communicator left by an earlier run, to contexts that
     * were still open at its tc_shutdown, is theirs and stays in use) */
    if (provided >= MPI_THREAD_MULTIPLE && tc__engine_shared.chan_comm == MPI_COMM_NULL &&
        (st = chan_comm_setup(msg, len)) != TC_OK) {
        goto err_free_local;
    }
    MPI_Comm_set_errhandler(e->mpi.ctrl, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(e->mpi.local, MPI_ERRORS_RETURN);
    /* Knobs that must be the same on every rank (one collective, agree.c). */
    if ((st = tc__knobs_agree(e->mpi.ctrl, e->cfg, msg, len)) != TC_OK) {
        goto err_free_local;
    }
    MPI_Comm_rank(e->mpi.ctrl, &e->rank);
    MPI_Comm_size(e->mpi.ctrl, &e->size);
    MPI_Comm_rank(e->mpi.local, &lrank);
    MPI_Comm_size(e->mpi.local, &lsize);
    /* the executor: its waits call back through the engine's hooks */
    e->x.cfg = e->cfg;
    e->x.rank = e->rank;
    e->x.size = e->size;
    e->x.mpi.ctrl = e->mpi.ctrl;
    e->x.mpi.local = e->mpi.local;
    tc__fail_hooks(e, &e->x.hooks);
    tc__exec_arm(&e->x, &e->x.mpi.tp, NULL);
    tc__node_table(&e->x); /* before the negotiation, whose eager path uses it */
    tc__mpi_cuda_setup(&e->x);
    if (tc__engine_neg_init(e) != TC_OK || tc__pset_init_global(e->size, e->rank) != TC_OK) {
        snprintf(msg, len, "out of memory creating the message table");
        st = TC_ERR_NOMEM;
        goto err_free_tables;
    }
    atomic_store_explicit(&tc__engine_shared.rank, e->rank, memory_order_relaxed);
    atomic_store_explicit(&tc__engine_shared.size, e->size, memory_order_relaxed);
    atomic_store_explicit(&tc__engine_shared.local_rank, lrank, memory_order_relaxed);
    atomic_store_explicit(&tc__engine_shared.local_size, lsize, memory_order_relaxed);
    atomic_store_explicit(&tc__engine_shared.node_first,
                          e->x.mpi.node_of != NULL ? e->x.mpi.node_of[e->rank] : -1,
                          memory_order_relaxed);
    atomic_store_explicit(&tc__engine_shared.thread_multiple, provided >= MPI_THREAD_MULTIPLE,
                          memory_order_relaxed);
    atomic_store_explicit(&tc__log_rank, e->rank, memory_order_relaxed);
    TC_INFO("engine", "rank %d of %d (local %d of %d), MPI %s", e->rank, e->size, lrank, lsize,
            e->mpi.own ? "initialized by tcoll" : "initialized by the application");
    tc__shm_setup(&e->x, lrank, lsize); /* never fails: without it, MPI */
    if (e->rank == 0) {                 /* what the selector picks for it (exec/algo.h) */
        tc_algo_ctx_t x = {&e->x.mpi.tp,
                           0,
                           NULL,
                           &e->x,
                           tc__shm_for(&e->x, 0),
                           tc__hier_for(&e->x, 0),
                           e->cfg->deterministic,
                           e->x.mpi.node_of,
                           0,
                           0,
                           NULL};
        char what[256];
        tc__algo_describe(&x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, what, sizeof(what));
        TC_INFO("shm", "allreduce of the global set (float32 sum): %s", what);
    }
    return TC_OK;

err_free_tables: /* then the last communicator */
    tc__pset_free_all(&e->x, 1);
    tc__engine_neg_destroy(e);
    tc__node_table_free(&e->x);
err_free_local:
    chan_comm_free();
    MPI_Comm_free(&e->mpi.local);
err_close_data:
    tc__transport_close(&e->x.mpi.tp);
err_free_ctrl:
    MPI_Comm_free(&e->mpi.ctrl);
err_finalize: /* a failed tc_init is final: MPI goes too if it is tcoll's (and no
               * channel context of an earlier run still holds it) */
    if (e->mpi.own &&
        atomic_load_explicit(&tc__engine_shared.chan_users, memory_order_relaxed) == 0) {
        if (tc__engine_shared.chan_comm != MPI_COMM_NULL) {
            MPI_Comm_free(&tc__engine_shared.chan_comm);
            tc__engine_shared.chan_comm = MPI_COMM_NULL;
        }
        MPI_Finalize();
        e->mpi.own = 0;
    }
    tc__mpi_thread_release_mpi();
    return st;
}

/* After TERMINATE: goodbyes with rank 0 (and an extra rank's host), so that no
 * control message is left unmatched when the communicators are freed
 * (docs/negotiation.md, "Shutdown"). Bounded by TCOLL_SHUTDOWN_TIMEOUT_S:
 * past it, MPI is left as it is and the shutdown reports TC_ERR_TIMEOUT. */
static void goodbye(engine_t *e)
{
    tc_backoff_t bo;
    uint64_t deadline = tc__now_ns() + (uint64_t)e->cfg->shutdown_timeout_s * 1000000000ull;
    uint8_t *missing;
    char ranks[256];

    tc__backoff_init(&bo, (uint32_t)e->cfg->spin, (uint32_t)e->cfg->backoff_max_us);
    while (!eng_broken() &&
           (tc__neg_state(e->nego.neg) == TC_NEG_DRAINING || tc__ctrl_progress(e) > 0)) {
        int progress = tc__engine_neg_step(e);
        if (tc__fail_poll_abort(e)) {
            return;
        }
        if (tc__neg_state(e->nego.neg) == TC_NEG_FAILED) {
            tc__life_enter(e, ENG_LIFE_BROKEN);
            return;
        }
        if (tc__now_ns() > deadline) {
            break;
        }
        if (progress) {
            tc__backoff_reset(&bo);
        } else {
            tc__backoff_wait(&bo);
        }
    }
    if (eng_broken() || tc__neg_state(e->nego.neg) != TC_NEG_DRAINING) {
        return;
    }
    missing = calloc((size_t)e->size, 1);
    ranks[0] = '\0';
    if (missing != NULL && tc__neg_missing_byes(e->nego.neg, missing) > 0) {
        tc__format_ranks(missing, e->size, 1, ranks, sizeof(ranks));
    }
    free(missing);
    e->life.status = TC_ERR_TIMEOUT;
    snprintf(e->life.msg, sizeof(e->life.msg),
             "the shutdown handshake did not finish within %d s (TCOLL_SHUTDOWN_TIMEOUT_S)%s%s; "
             "MPI was left as it is",
             e->cfg->shutdown_timeout_s, ranks[0] != '\0' ? ": no goodbye from rank " : "", ranks);
    TC_ERROR("engine", "%s", e->life.msg);
    tc__life_enter(e, ENG_LIFE_BROKEN);
}

static void mpi_teardown(engine_t *e)
{
    if (eng_broken()) {
        /* MPI may be unusable, and peers may be gone: leave it as it is
         * rather than hang in it (the data transports stay open: closing
         * one frees its communicator). */
        TC_WARN("engine", "skipping MPI teardown after a failure");
        tc__ctrl_abandon(e);
        tc__pset_free_all(&e->x, 0);
        tc__shm_teardown(&e->x, 1);
        tc__mpi_thread_release_mpi(); /* never finalized by tcoll, nor used again */
        return;
    }
    tc__shm_teardown(&e->x, 0);
    tc__pset_free_all(&e->x, 1);
    MPI_Comm_free(&e->mpi.ctrl);
    tc__transport_close(&e->x.mpi.tp);
    MPI_Comm_free(&e->mpi.local);
    /* MPI itself stays: if it is tcoll's, this thread finalizes it at exit
     * (mpi_thread.c), and runs the engine of a later tc_init meanwhile */
    chan_comm_free();
}

static void engine_free(engine_t *e)
{
    tc__engine_neg_destroy(e);
    tc__node_table_free(&e->x); /* after the negotiation, which reads it */
    tc__exec_free(&e->x);
    tc__ctrl_free(e);
    free(e->ctrl.v);
    free(e);
}

static void engine_main(void *arg)
{
    eng_shared_t *sh = &tc__engine_shared;
    engine_t *e = arg;
    char msg[ENG_MSG_MAX] = "";
    tc_status_t st;

    /* Back-off sleeps are a few microseconds; Linux's default 50 us timer
     * slack would stretch each of them to 50 us or more. */
    (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
    st = mpi_setup(e, msg, sizeof(msg));
    if (st == TC_OK && e->cfg->timeline[0] != '\0') {
        /* before tc_init returns: the timeline covers every submission, and
         * a tc_timeline_start right after tc_init finds it running */
        char err[512];
        if (tc__tl_job_start(e->cfg->timeline, e->rank, e->size, err, sizeof(err)) != TC_OK) {
            TC_WARN("timeline", "TCOLL_TIMELINE=%s: %s; no timeline", e->cfg->timeline, err);
        }
    }
    pthread_mutex_lock(&sh->mu);
    sh->init_status = st;
    snprintf(sh->init_msg, sizeof(sh->init_msg), "%s", msg);
    tc__life_set_locked(st == TC_OK ? ENG_LIFE_RUNNING : ENG_LIFE_START_FAILED);
    pthread_cond_broadcast(&sh->started);
    pthread_mutex_unlock(&sh->mu);
    if (st != TC_OK) {
        engine_free(e);
        return;
    }
    tc__loop_run(e);        /* until the engine leaves RUNNING */
    e->x.run.ndeferred = 0; /* deferred requests are in flight: failed with the rest */
    tc__queue_fail_all(e->life.status, e->life.msg);
    if (eng_life() == ENG_LIFE_FAILED) {
        tc__fail_send_abort(e);
    }
    if (!eng_broken()) {
        goodbye(e);
    }
    /* After the engine's last event, before the communicators go: rank 0
     * gathers a job-wide timeline (timeline_job.c). */
    st = tc__tl_job_finish(e->mpi.ctrl, e->rank, e->size, !eng_broken(), e->cfg, msg, sizeof(msg));
    if (st != TC_OK && !eng_broken()) {
        e->life.status = st; /* requests of the exchange are still pending */
        snprintf(e->life.msg, sizeof(e->life.msg), "%s", msg);
        tc__life_enter(e, ENG_LIFE_BROKEN);
    }
    mpi_teardown(e);
    pthread_mutex_lock(&sh->mu);
    g_last_run_broken = eng_broken();
    pthread_mutex_unlock(&sh->mu);
    tc__life_enter(e, ENG_LIFE_STOPPED); /* what tc_shutdown reports: the goodbye may
                                          * have run out of time */
    TC_INFO("engine", "engine stopped: %s", e->life.msg);
    engine_free(e);
}

/* ------------------------------------------------------------------------ */
/* Public API                                                                */
/* ------------------------------------------------------------------------ */

static engine_t *engine_new(void)
{
    engine_t *e = calloc(1, sizeof(*e));

    if (e == NULL) {
        return NULL;
    }
    e->cfg = tc__config();
    tc__backoff_init(&e->loop.bo, (uint32_t)e->cfg->spin, (uint32_t)e->cfg->backoff_max_us);
    return e;
}

/* tc_init when tcoll has run before in this process (mu held): TC_OK after
 * a clean tc_shutdown, with what the last run left reset (the engine's own
 * state is new with each engine; the process sets, the queue and the table
 * of names in flight were emptied when it stopped), else TC_ERR_STATE with
 * the error set. The life stays as it is either way. */
static tc_status_t restart_locked(void)
{
    eng_shared_t *sh = &tc__engine_shared;

    if (sh->life == ENG_LIFE_START_FAILED) {
        return tc__set_error(TC_ERR_STATE,
                             "tc_init: an earlier tc_init failed in this process (%s); tcoll "
                             "cannot start again",
                             sh->init_msg);
    }
    if (!sh->shutdown_requested) {
        return tc__set_error(TC_ERR_STATE, sh->life == ENG_LIFE_STOPPED
                                               ? "tc_init: tcoll is already initialized (its "
                                                 "engine has stopped: call tc_shutdown first)"
                                               : "tc_init: tcoll is already initialized");
    }
    if (sh->life != ENG_LIFE_STOPPED || !tc__mpi_thread_usable()) {
        return tc__set_error(TC_ERR_STATE,
                             "tc_init: the engine thread of tcoll's previous run did not stop "
                             "(tc_shutdown gave up waiting for it); tcoll cannot start again in "
                             "this process");
    }
    if (g_last_run_broken) {
        return tc__set_error(TC_ERR_STATE,
                             "tc_init: tcoll's previous run in this process ended after a failure "
                             "(%s), which left MPI as it was; tcoll cannot start again",
                             sh->stop_msg);
    }
    sh->shutdown_requested = 0;
    sh->init_status = TC_OK;
    sh->init_msg[0] = '\0';
    sh->stop_status = TC_OK;
    sh->stop_msg[0] = '\0';
    sh->engine_sleeping = 0;
    sh->q_head = sh->q_tail = NULL;
    atomic_store_explicit(&sh->deferred, 0, memory_order_relaxed);
    atomic_store_explicit(&sh->rank, -1, memory_order_relaxed);
    atomic_store_explicit(&sh->size, -1, memory_order_relaxed);
    atomic_store_explicit(&sh->local_rank, -1, memory_order_relaxed);
    atomic_store_explicit(&sh->local_size, -1, memory_order_relaxed);
    atomic_store_explicit(&sh->node_first, -1, memory_order_relaxed);
    atomic_store_explicit(&sh->thread_multiple, 0, memory_order_relaxed);
    return TC_OK;
}

tc_status_t tc_init(void)
{
    eng_shared_t *sh = &tc__engine_shared;
    engine_t *e;
    tc_status_t st;
    int rc;

    tc__clear_error();
    pthread_mutex_lock(&sh->mu);
    if (sh->life != ENG_LIFE_NONE && (st = restart_locked()) != TC_OK) {
        pthread_mutex_unlock(&sh->mu);
        return st;
    }
    tc__life_set_locked(ENG_LIFE_STARTING);
    pthread_mutex_unlock(&sh->mu);

    e = engine_new();
    if (e == NULL) {
        st = tc__set_error(TC_ERR_NOMEM, "tc_init: out of memory");
        goto err_unstart;
    }
    tc__hmap_init(&sh->inflight);
    tc__tl_job_reopen(); /* a job-wide timeline per run */
    rc = tc__mpi_thread_run(engine_main, e);
    if (rc != 0) {
        st = tc__set_error(TC_ERR_NOMEM, "tc_init: cannot start the engine thread: %s",
                           strerror(rc));
        goto err_free_engine;
    }
    pthread_mutex_lock(&sh->mu);
    while (sh->life == ENG_LIFE_STARTING) {
        pthread_cond_wait(&sh->started, &sh->mu);
    }
    st = sh->init_status;
    pthread_mutex_unlock(&sh->mu);
    if (st != TC_OK) {
        (void)tc__mpi_thread_wait(NULL);
        return tc__set_error(st, "tc_init: %s", sh->init_msg);
    }
    return TC_OK;

err_free_engine:
    engine_free(e);
err_unstart: /* not started: as if never initialized (a run before ended cleanly) */
    pthread_mutex_lock(&sh->mu);
    tc__life_set_locked(ENG_LIFE_NONE);
    pthread_mutex_unlock(&sh->mu);
    return st;
}

tc_status_t tc_shutdown(void)
{
    eng_shared_t *sh = &tc__engine_shared;
    struct timespec deadline;
    tc_status_t st;
    int rc, limit_s;

    tc__clear_error();
    pthread_mutex_lock(&sh->mu);
    if (sh->shutdown_requested || sh->life == ENG_LIFE_NONE || sh->life == ENG_LIFE_STARTING ||
        sh->life == ENG_LIFE_START_FAILED) {
        int again = sh->shutdown_requested;
        pthread_mutex_unlock(&sh->mu);
        return tc__set_error(TC_ERR_STATE, again ? "tc_shutdown: already shut down"
                                                 : "tc_shutdown: tcoll is not initialized");
    }
    sh->shutdown_requested = 1;
    pthread_cond_signal(&sh->wake);
    pthread_mutex_unlock(&sh->mu);

    /* The engine bounds the handshake, its goodbye and the gathering of a
     * job-wide timeline by the timeout each; this bounds anything else
     * (an MPI call waiting for a stuck peer). */
    limit_s = 3 * tc__config()->shutdown_timeout_s + 10;
    deadline = tc__deadline_after_ns((uint64_t)limit_s * 1000000000ull);
    rc = tc__mpi_thread_wait(&deadline);
    if (rc != 0) {
        tc__mpi_thread_leave_behind();
        return tc__set_error(TC_ERR_TIMEOUT,
                             "tc_shutdown: the engine thread did not stop within %d s (stuck in "
                             "MPI?); it was left running and MPI as it is, and tcoll cannot "
                             "start again in this process",
                             limit_s);
    }
    tc__output_pool_drain();
    tc__cuda_release();
    if (tc__tl_active()) {
        (void)tc__tl_stop(); /* after the engine's last event */
    }

    pthread_mutex_lock(&sh->mu);
    st = sh->stop_status;
    pthread_mutex_unlock(&sh->mu);
    if (st == TC_ERR_SHUTDOWN) {
        return TC_OK;
    }
    if (st == TC_ERR_TIMEOUT) {
        return tc__set_error(st, "tc_shutdown: %s", sh->stop_msg);
    }
    return tc__set_error(st, "tc_shutdown: tcoll had stopped after an error: %s", sh->stop_msg);
}
