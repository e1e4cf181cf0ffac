/*
 * engine.c - the engine: tc_init/tc_shutdown, submission, and the background
 * thread that owns every MPI call.
 *
 * Application threads validate their arguments, record the name as in flight
 * and queue the request under one mutex; they never call MPI. The engine
 * thread drains the queue and negotiates over a control communicator in
 * numbered *cycles*: in each, every rank sends one CYCLE message to every
 * other rank, and a cycle is complete on a rank when it has everyone's.
 *
 *   first time a name is seen (or after its cache entry was dropped):
 *     worker REQUESTS{submissions} ---tag 1---> rank 0's message table
 *     rank 0's next CYCLE carries its decisions: RUN (with a cache id) or ERROR
 *   a cached name submitted again with the same parameters:
 *     this rank lists its id as ready in its next CYCLE; it runs in the cycle
 *     in which every rank lists it, without waiting on rank 0's decision
 *   a cached name submitted with other parameters:
 *     this rank lists its id as stale; every rank drops the entry in that
 *     cycle and negotiates its submission of the name in full again, so that
 *     rank 0 reports the disagreement (TC_ERR_MISMATCH) or files it anew
 *
 * A completed cycle is processed the same way on every rank: drop the stale
 * entries, then run rank 0's responses in order (filing the cached ones),
 * then the ids every rank listed as ready, in ascending order. So every rank
 * runs the same collectives in the same order. A rank starts a cycle when it
 * has something new to say (a new cache-path submission; rank 0: a decision
 * or a shutdown) and joins one as soon as it sees another rank's message for
 * it; with nothing pending nobody sends anything. A rank cannot start cycle
 * c+1 before it has completed c, so messages of two consecutive cycles are
 * told apart by the tag's parity. Every CYCLE also carries the sender's cache
 * generation (entries filed + dropped): a difference is a protocol error
 * rather than a silent wrong result.
 *
 * Shutdown: a rank's tc_shutdown sends REQUESTS with the SHUTDOWN flag (rank 0
 * decides directly). Rank 0's next CYCLE carries TERMINATE; after that cycle
 * (whose collectives still run) each rank fails what is left, replies BYE,
 * and rank 0 drains control messages until it has every BYE, so no message is
 * left unmatched when the communicators are freed and MPI is finalized.
 *
 * Failures: a rank that fails (MPI error, out of memory, protocol error, a
 * lost peer) sends every other rank an abort (BYE with a terminate record,
 * tag TAG_ABORT) carrying its reason, fails what it has, and leaves MPI
 * unfinalized. Every rank looks for aborts each millisecond, in its loop and
 * inside data transfers, and stops with "rank N stopped: <reason>". A rank
 * declares a peer lost when a cycle or a transfer makes no progress for
 * TCOLL_PEER_TIMEOUT_S; with work pending and no cycle for half that time it
 * starts an empty cycle to find out. Rank 0 also runs the stall inspector
 * (stall_check) once a second. See the README's "When things go wrong".
 *
 * Waiting: with nothing of its own in flight, the engine thread sleeps on a
 * condition variable (woken at once by a submission) and wakes every
 * TCOLL_IDLE_POLL_MS to look for control messages (a remote shutdown). With
 * work in flight it polls with back-off (spin, yield, sleeps growing to
 * TCOLL_BACKOFF_MAX_US). It must never block in MPI without backing off, and
 * never touch a request after completing it.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "coll/coll.h"
#include "engine/cache.h"
#include "engine/coordinator.h"
#include "engine/kinds.h"
#include "engine/request.h"
#include "reduce/reduce.h"
#include "transport/transport_mpi.h"
#include "util/backoff.h"
#include "util/config.h"
#include "util/hmap.h"
#include "util/log.h"
#include "util/status.h"
#include "util/timeline.h"
#include "wire/wire.h"

#define TAG_REQ 1
#define TAG_CYCLE 2 /* and 3: TAG_CYCLE + (cycle & 1) */
#define TAG_ABORT 4 /* BYE with a terminate record: the sender stopped after a failure */
#define TAG_PING 5  /* an empty REQUESTS: "is your engine alive?" (see probe_peer) */
#define TAG_PONG 6  /* the answer */
#define POLL_NS 1000000u /* look for aborts, stalls and deadlines at most this often */
#define MSG_MAX 1024
#define EAGER_MSG_MAX (64 * 1024) /* eager input bytes in one cycle message */
#define EAGER_MAX_RANKS 64    /* above, eager inputs cost more than they save */

enum { ST_NONE, ST_STARTING, ST_RUNNING, ST_SHUT, ST_DEAD };

/* Shared between application threads and the engine thread, under g.mu. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake;    /* the engine thread sleeps here */
    pthread_cond_t init_cv; /* tc_init waits here for init_done */
    int state;
    int init_done;
    tc_status_t init_status;
    char init_msg[MSG_MAX];
    int engine_sleeping;
    int shutdown_requested;
    int stopped; /* the engine thread has finished: submissions fail with stop_status */
    tc_status_t stop_status;
    char stop_msg[MSG_MAX];
    tc_request_t *q_head, *q_tail;
    tc_hmap_t inflight; /* name -> request, from submission until completion */
    pthread_t thread;
} g = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .init_cv = PTHREAD_COND_INITIALIZER,
};

/* Written once by the engine thread during start-up, before init_done is
 * published under g.mu; read by any thread with relaxed loads (a value is
 * either -1 or final). */
static _Atomic int g_rank = -1, g_size = -1, g_local_rank = -1, g_local_size = -1;

/* A control message in flight; the buffer may be shared by several sends. */
typedef struct {
    int refs;
    tc_wire_buf_t buf;
} ctrl_buf_t;

typedef struct {
    MPI_Request req;
    ctrl_buf_t *cb;
} ctrl_send_t;

/* Control-message buffers of sends that never completed when MPI was left
 * unfinalized after a failure (see mpi_teardown). */
static ctrl_buf_t **g_abandoned;
static size_t g_nabandoned;

/* Engine-thread state. */
typedef struct {
    const tc_config_t *cfg;
    int own_mpi;
    MPI_Comm ctrl, data, local;
    int rank, size;
    tc_transport_t tp;
    tc_transport_mpi_t tp_mpi;
    tc_scratch_t scratch;
    tc_scratch_t fusion; /* persistent buffer that fused small allreduces share */
    tc_backoff_t bo;
    tc_coord_t *coord; /* rank 0 only */
    ctrl_send_t *sends;
    size_t nsends, capsends;
    int shutdown_sent;  /* worker: our SHUTDOWN request went out */
    int shutdown_from;  /* coordinator: the first rank that asked, or -1 */
    int terminated;     /* stop the loop */
    int failed;         /* stopped by a failure (here or another rank's abort) */
    int tell_peers;     /* the failure happened here: send every rank an abort */
    uint8_t *bye_seen;  /* coordinator: [size], ranks whose BYE arrived */
    int broken;         /* skip the goodbye handshake and MPI's teardown */
    uint64_t next_poll_ns; /* see POLL_NS */
    uint64_t cycle_t0;     /* when our message for seq went out */
    uint64_t cycle_done_ns; /* when the last cycle completed */
    uint64_t ready_ns;      /* when the cycle being processed became complete */
    uint64_t shutdown_t0;  /* when this rank's tc_shutdown was first seen */
    tc_status_t term_status;
    char term_msg[MSG_MAX];

    /* The response cache and the negotiation cycles (see the file comment). */
    tc_cache_t cache;
    uint32_t *pend; /* ids whose entry holds a pending request of this rank */
    uint32_t npend, cappend;
    tc_request_t *resend;  /* dropped from the cache path: negotiate in full */
    uint64_t seq;          /* the cycle in progress, or the next one */
    int contributed;       /* our message for seq is out */
    int dirty;             /* new cache-path state since our last message */
    int ngot;              /* messages for seq received */
    uint8_t *cyc_have;     /* [size] */
    tc_wire_msg_t *cyc;    /* [size]: the messages for seq */
    uint32_t *my_ready, *my_stale; /* what our message for seq listed */
    uint32_t nmy_ready, nmy_stale;
    tc_wire_eager_t *my_eager; /* the inputs it carried */
    uint32_t nmy_eager;
    tc_scratch_t eager_buf;    /* where eager inputs are reduced */
    tc_coord_batch_t batch; /* rank 0: the coordinator's decisions in our message */
    tc_wire_response_t *my_resps; /* rank 0: every response our message carried */
    uint32_t nmy_resps;
    int term_sent;          /* rank 0: our message for seq carried TERMINATE */
    char term_text[MSG_MAX];

    /* Rank 0's stall inspector. */
    uint64_t next_stall_check, next_stall_warn;
    struct cstall *cstall; /* cached ids some ranks listed as ready, by id */
    uint32_t ncstall;
    tc_wire_response_t *timeouts; /* cached names to fail in our next message */
    uint32_t ntimeouts;
} engine_t;

/* A cached id waiting for some ranks (rank 0's stall inspector). */
typedef struct cstall {
    uint32_t id;
    uint64_t since_ns;
    uint8_t *have; /* [size] */
} cstall_t;

/* ------------------------------------------------------------------------ */
/* Control messages                                                          */
/* ------------------------------------------------------------------------ */

static void ctrl_buf_release(ctrl_buf_t *cb)
{
    if (--cb->refs == 0) {
        tc__wire_buf_free(&cb->buf);
        free(cb);
    }
}

static void engine_fail(engine_t *e, tc_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* From now on submissions fail at once with the engine's status (before any
 * request completes with it, so that a caller who sees the failure cannot
 * still queue work). */
static void publish_stop(const engine_t *e)
{
    pthread_mutex_lock(&g.mu);
    if (!g.stopped) {
        g.stopped = 1;
        g.stop_status = e->term_status;
        snprintf(g.stop_msg, sizeof(g.stop_msg), "%s", e->term_msg);
    }
    pthread_mutex_unlock(&g.mu);
}

/* Stops this rank after a failure decided here: every pending request fails
 * with st and the message, and every other rank is sent an abort saying so
 * (see send_abort, tried even when MPI itself reported the error), so that
 * nobody waits for this rank. The first cause wins. */
static void engine_fail(engine_t *e, tc_status_t st, const char *fmt, ...)
{
    va_list ap;

    if (e->failed || e->terminated) {
        e->broken = 1; /* a failure after a normal stop: still skip MPI's teardown */
        return;
    }
    va_start(ap, fmt);
    vsnprintf(e->term_msg, sizeof(e->term_msg), fmt, ap);
    va_end(ap);
    e->failed = 1;
    e->tell_peers = 1;
    e->terminated = 1;
    /* The others may never answer a goodbye, and MPI_Finalize could wait for
     * them forever: leave MPI as it is. */
    e->broken = 1;
    e->term_status = st;
    TC_ERROR("engine", "%s", e->term_msg);
    publish_stop(e);
}

/* Encodes msg once and posts a send of it to each rank in first..last but
 * skip (-1: none). */
static void ctrl_send(engine_t *e, const tc_wire_msg_t *msg, int first, int last, int skip,
                      int tag)
{
    const int ndst = last - first + 1;
    ctrl_buf_t *cb;
    char why[MPI_MAX_ERROR_STRING];
    int i;

    if (ndst <= 0) {
        return;
    }
    cb = calloc(1, sizeof(*cb));
    if (cb == NULL || tc__wire_encode(msg, &cb->buf) != TC_OK) {
        free(cb);
        engine_fail(e, TC_ERR_NOMEM, "cannot encode a control message (out of memory)");
        return;
    }
    if (e->nsends + (size_t)ndst > e->capsends) {
        size_t cap = (e->capsends + (size_t)ndst) * 2;
        ctrl_send_t *s = realloc(e->sends, cap * sizeof(*s));
        if (s == NULL) {
            tc__wire_buf_free(&cb->buf);
            free(cb);
            engine_fail(e, TC_ERR_NOMEM, "out of memory for control sends");
            return;
        }
        e->sends = s;
        e->capsends = cap;
    }
    cb->refs = 1; /* held until every send is posted */
    for (i = 0; i < ndst; i++) {
        ctrl_send_t *s = &e->sends[e->nsends];
        int rc;
        if (first + i == skip) {
            continue;
        }
        rc = MPI_Isend(cb->buf.data, (int)cb->buf.len, MPI_BYTE, first + i, tag, e->ctrl,
                           &s->req);
        if (rc != MPI_SUCCESS) {
            engine_fail(e, TC_ERR_TRANSPORT, "MPI_Isend of a control message to rank %d failed: %s",
                        first + i, tc__mpi_strerror(rc, why, sizeof(why)));
            break;
        }
        s->cb = cb;
        cb->refs++;
        e->nsends++;
    }
    ctrl_buf_release(cb);
}

/* Completes finished control sends; returns how many are still in flight. */
static size_t ctrl_progress(engine_t *e)
{
    size_t i = 0;
    char why[MPI_MAX_ERROR_STRING];

    while (i < e->nsends) {
        int flag = 0;
        int rc = MPI_Test(&e->sends[i].req, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            engine_fail(e, TC_ERR_TRANSPORT, "a control send failed: %s",
                        tc__mpi_strerror(rc, why, sizeof(why)));
            return e->nsends;
        }
        if (flag) {
            ctrl_buf_release(e->sends[i].cb);
            e->sends[i] = e->sends[--e->nsends];
        } else {
            i++;
        }
    }
    return e->nsends;
}

/* Receives one control message from src (or any) with tag, if one is there.
 * Returns 1 and fills msg/src_p when it got one, 0 when none, -1 on failure. */
static int ctrl_recv(engine_t *e, int src, int tag, tc_wire_msg_t *msg, int *src_p)
{
    MPI_Status status;
    int flag = 0, count = 0, rc;
    char why[MPI_MAX_ERROR_STRING];
    char err[256];
    uint8_t *buf;

    rc = MPI_Iprobe(src, tag, e->ctrl, &flag, &status);
    if (rc != MPI_SUCCESS) {
        engine_fail(e, TC_ERR_TRANSPORT, "MPI_Iprobe failed: %s",
                    tc__mpi_strerror(rc, why, sizeof(why)));
        return -1;
    }
    if (!flag) {
        return 0;
    }
    MPI_Get_count(&status, MPI_BYTE, &count);
    buf = malloc(count > 0 ? (size_t)count : 1);
    if (buf == NULL) {
        engine_fail(e, TC_ERR_NOMEM, "out of memory receiving a %d-byte control message", count);
        return -1;
    }
    rc = MPI_Recv(buf, count, MPI_BYTE, status.MPI_SOURCE, tag, e->ctrl, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        free(buf);
        engine_fail(e, TC_ERR_TRANSPORT, "MPI_Recv of a control message from rank %d failed: %s",
                    status.MPI_SOURCE, tc__mpi_strerror(rc, why, sizeof(why)));
        return -1;
    }
    if (tc__wire_decode(buf, (size_t)count, msg, err, sizeof(err)) != TC_OK) {
        free(buf);
        engine_fail(e, TC_ERR_TRANSPORT, "malformed control message from rank %d: %s",
                    status.MPI_SOURCE, err);
        return -1;
    }
    free(buf);
    *src_p = status.MPI_SOURCE;
    return 1;
}

/* Looks for another rank's abort. Returns 1 (and stops this rank with that
 * rank's reason) when one arrived. */
static int poll_abort(engine_t *e)
{
    tc_wire_msg_t msg;
    int src, got;

    if (e->failed) {
        return 1;
    }
    got = ctrl_recv(e, MPI_ANY_SOURCE, TAG_ABORT, &msg, &src);
    if (got <= 0) {
        return got < 0;
    }
    if (!e->terminated) {
        e->failed = 1;
        e->terminated = 1;
        e->term_status = msg.type == TC_WIRE_BYE && (msg.flags & TC_WIRE_F_TERMINATE)
                             ? (tc_status_t)msg.term_status
                             : TC_ERR_TRANSPORT;
        snprintf(e->term_msg, sizeof(e->term_msg), "rank %d stopped: %.*s", src,
                 (int)msg.term_text_len, msg.term_text != NULL ? msg.term_text : "");
        TC_ERROR("engine", "%s", e->term_msg);
        publish_stop(e);
    }
    e->failed = 1;
    e->broken = 1;
    tc__wire_msg_free(&msg);
    return 1;
}

/* Answers other ranks' liveness probes: a live engine, even one waiting
 * inside a transfer, says so. */
static void answer_pings(engine_t *e)
{
    tc_wire_msg_t msg, pong = {0};
    int src;

    pong.type = TC_WIRE_REQUESTS;
    while (!e->failed && ctrl_recv(e, MPI_ANY_SOURCE, TAG_PING, &msg, &src) == 1) {
        tc__wire_msg_free(&msg);
        ctrl_send(e, &pong, src, src, -1, TAG_PONG);
    }
}

/* The data transport calls this while it waits: an abort from another rank
 * ends the wait with that rank's reason. */
static int transport_interrupt(void *arg, char *why, size_t len)
{
    engine_t *e = arg;

    if (!poll_abort(e)) {
        answer_pings(e);
        ctrl_progress(e);
        return 0;
    }
    snprintf(why, len, "%s", e->term_msg);
    return 1;
}

/* Before a rank is declared lost: does its engine still answer? A rank
 * waiting for a third, dead one looks silent but is not lost. Returns 1
 * (alive), 0 (no answer within the grace time), -1 (an abort arrived, or
 * this rank failed). The grace covers an idle engine's poll interval. */
static int probe_peer(engine_t *e, int peer)
{
    tc_wire_msg_t ping = {0}, msg;
    tc_backoff_t bo;
    uint64_t grace = 2000000000ull, deadline;
    int src;

    if ((uint64_t)e->cfg->idle_poll_ms * 2000000ull > grace) {
        grace = (uint64_t)e->cfg->idle_poll_ms * 2000000ull;
    }
    deadline = tc__now_ns() + grace;
    ping.type = TC_WIRE_REQUESTS;
    ctrl_send(e, &ping, peer, peer, -1, TAG_PING);
    tc__backoff_init(&bo, 0, 1000);
    while (tc__now_ns() < deadline) {
        if (poll_abort(e) || e->failed) {
            return -1;
        }
        answer_pings(e);
        ctrl_progress(e);
        if (ctrl_recv(e, peer, TAG_PONG, &msg, &src) == 1) {
            tc__wire_msg_free(&msg);
            return 1;
        }
        tc__backoff_wait(&bo);
    }
    return 0;
}

static int transport_peer_alive(void *arg, int peer, char *why, size_t len)
{
    engine_t *e = arg;
    int alive = probe_peer(e, peer);

    if (alive < 0) {
        snprintf(why, len, "%s", e->term_msg);
    }
    return alive;
}

/* Tells every other rank why this rank stopped, so that none of them waits
 * for it until a timeout. Best effort: the sends get a bounded time. */
static void send_abort(engine_t *e)
{
    tc_wire_msg_t out = {0};
    tc_backoff_t bo;
    uint64_t deadline = tc__now_ns() + 2000000000ull;

    out.type = TC_WIRE_BYE;
    out.flags = TC_WIRE_F_TERMINATE;
    out.term_status = (uint8_t)e->term_status;
    out.term_text = e->term_msg;
    out.term_text_len = (uint32_t)strnlen(e->term_msg, TC_WIRE_MAX_TEXT);
    ctrl_send(e, &out, 0, e->size - 1, e->rank, TAG_ABORT);
    tc__backoff_init(&bo, 0, 1000);
    while (ctrl_progress(e) > 0 && tc__now_ns() < deadline) {
        tc__backoff_wait(&bo);
    }
}

/* ------------------------------------------------------------------------ */
/* Running what rank 0 decided                                               */
/* ------------------------------------------------------------------------ */

/* ---- timeline (only while one runs: tc__tl_active) ---- */

/* A tensor's row: its negotiation (submission to the cycle that made it
 * ready everywhere), then what ran, from t0 to t1. */
static void tl_tensor(const engine_t *e, const tc_request_t *req, const char *algo, uint64_t t0,
                      uint64_t t1, int fused, tc_status_t st)
{
    tc_tl_args_t a = TC_TL_ARGS_INIT;
    int track = tc__tl_track(req->name, req->name_len);
    const tc_kind_desc_t *kd = tc__kind_of(req);

    if (track < 0) {
        return;
    }
    a.kind = kd->name;
    a.dtype = req->dtype;
    a.bytes = (int64_t)(req->count * tc_dtype_size(req->dtype));
    a.cycle = (int64_t)e->seq;
    if (kd->params & TC_PARAM_OP) {
        a.op = req->op;
    }
    if (kd->params & TC_PARAM_ROOT) {
        a.root = req->root;
    }
    if (e->ready_ns > req->submit_ns) {
        tc__tl_complete(track, "NEGOTIATE", 9, "negotiation", req->submit_ns,
                        e->ready_ns - req->submit_ns, &a);
    }
    if (t0 > e->ready_ns) {
        tc__tl_complete(track, "QUEUE", 5, "negotiation", e->ready_ns, t0 - e->ready_ns, NULL);
    }
    a.algo = algo;
    a.status = st;
    a.fused = fused > 1 ? fused : -1;
    tc__tl_complete(track, kd->upper, strlen(kd->upper), "collective", t0, t1 > t0 ? t1 - t0 : 0,
                    &a);
}

/* Removes req from the in-flight table (so the name can be reused at once) and
 * completes it. */
static void finish(tc_request_t *req, tc_status_t st, const char *msg)
{
    pthread_mutex_lock(&g.mu);
    tc__hmap_remove(&g.inflight, req->name, req->name_len);
    pthread_mutex_unlock(&g.mu);
    tc__request_complete(req, st, msg);
}

static tc_status_t run(engine_t *e, tc_request_t *req, const tc_wire_response_t *r, char *msg,
                       size_t msglen)
{
    tc_kind_ctx_t x = {&e->tp, (size_t)e->cfg->ring_chunk_kb * 1024, &e->scratch};

    return tc__kind_of(req)->run(&x, req, r, msg, msglen);
}

/* Whether the response for req may join a fusion group: a small tensor of a
 * kind that can run packed. */
static int fusable(const engine_t *e, const tc_request_t *req, const tc_wire_response_t *r)
{
    return r->rtype == TC_WIRE_RUN && tc__kind_of(req)->run_packed != NULL && req->count > 0 &&
           req->count * tc_dtype_size(req->dtype) <= (size_t)e->cfg->fusion_threshold_kb * 1024;
}

/* Runs reqs[0..n-1] (small tensors of one fusable kind, dtype and op) as
 * one collective over a persistent fusion buffer: pack, run, unpack. */
static tc_status_t run_fused(engine_t *e, tc_request_t **reqs, uint32_t n, size_t total,
                             char *msg, size_t msglen)
{
    const tc_kind_desc_t *kd = tc__kind_of(reqs[0]);
    tc_kind_ctx_t x = {&e->tp, (size_t)e->cfg->ring_chunk_kb * 1024, &e->scratch};
    uint64_t t0;
    size_t es = tc_dtype_size(reqs[0]->dtype), off = 0;
    char *buf;
    tc_status_t st;
    uint32_t k;

    st = tc__scratch_reserve(&e->fusion, total);
    if (st != TC_OK) {
        snprintf(msg, msglen, "out of memory for a %zu-byte fusion buffer", total);
        return st;
    }
    TC_DEBUG("engine", "fused %u tensors (%s, %zu bytes), first '%s'", n, kd->name, total,
             reqs[0]->name);
    buf = e->fusion.data;
    t0 = tc__tl_active() ? tc__now_ns() : 0;
    for (k = 0; k < n; k++) {
        memcpy(buf + off, reqs[k]->send, reqs[k]->count * es);
        off += reqs[k]->count * es;
    }
    if (t0 != 0) {
        tc_tl_args_t a = TC_TL_ARGS_INIT;
        a.bytes = (int64_t)total;
        a.fused = (int32_t)n;
        tc__tl_complete(TC_TL_TRACK_COLLECTIVES, "MEMCPY_IN_FUSION_BUFFER", 23, "fusion", t0,
                        tc__now_ns() - t0, &a);
    }
    st = kd->run_packed(&x, buf, total / es, reqs[0]->dtype, reqs[0]->op);
    if (st != TC_OK) {
        snprintf(msg, msglen, "fused %s of %u tensors ('%s', ...) failed: %s", kd->name, n,
                 reqs[0]->name, st == TC_ERR_NOMEM ? "out of memory" : e->tp.err);
        return st;
    }
    t0 = tc__tl_active() ? tc__now_ns() : 0;
    for (k = 0, off = 0; k < n; k++) {
        tc_request_t *req = reqs[k];
        memcpy(req->recv, buf + off, req->count * es);
        off += req->count * es;
        tc__request_set_output(req, req->recv, -1);
    }
    if (t0 != 0) {
        tc_tl_args_t a = TC_TL_ARGS_INIT;
        a.bytes = (int64_t)total;
        a.fused = (int32_t)n;
        tc__tl_complete(TC_TL_TRACK_COLLECTIVES, "MEMCPY_OUT_FUSION_BUFFER", 24, "fusion", t0,
                        tc__now_ns() - t0, &a);
    }
    return TC_OK;
}

/* Runs resps[i] for reqs[i], in order. Consecutive small allreduces of the
 * same dtype and op are fused: the grouping depends only on what every rank
 * agreed on (order, dtype, op, count) and on knobs that must be equal on every
 * rank, so all ranks form the same groups. */
static void execute(engine_t *e, const tc_wire_response_t *resps, tc_request_t **reqs, uint32_t n)
{
    char msg[MSG_MAX];
    uint32_t i, j, k;
    uint64_t t0;

    for (i = 0; i < n && !e->broken; i = j) {
        const tc_wire_response_t *r = &resps[i];
        size_t total = 0;
        tc_status_t st;

        j = i + 1;
        msg[0] = '\0';
        if (r->rtype == TC_WIRE_ERROR) {
            if (reqs[i] != NULL) { /* NULL: a stalled name this rank never submitted */
                if (tc__tl_active()) {
                    uint64_t now = tc__now_ns();
                    tl_tensor(e, reqs[i], "none (failed in negotiation)", now, now, 1,
                              (tc_status_t)r->status);
                }
                snprintf(msg, sizeof(msg), "%.*s", (int)r->text_len, r->text);
                finish(reqs[i], (tc_status_t)r->status, msg);
            }
            continue;
        }
        if (fusable(e, reqs[i], r)) {
            size_t es = tc_dtype_size(reqs[i]->dtype);
            size_t cap = (size_t)e->cfg->fusion_buffer_kb * 1024;
            total = reqs[i]->count * es;
            while (j < n && fusable(e, reqs[j], &resps[j]) && reqs[j]->kind == reqs[i]->kind &&
                   reqs[j]->dtype == reqs[i]->dtype && reqs[j]->op == reqs[i]->op &&
                   total + reqs[j]->count * es <= cap) {
                total += reqs[j]->count * es;
                j++;
            }
        }
        t0 = tc__tl_active() ? tc__now_ns() : 0;
        if (j - i >= 2) {
            st = run_fused(e, &reqs[i], j - i, total, msg, sizeof(msg));
        } else {
            st = run(e, reqs[i], r, msg, sizeof(msg));
        }
        if (t0 != 0) {
            uint64_t t1 = tc__now_ns();
            const tc_kind_desc_t *kd = tc__kind_of(reqs[i]);
            const char *algo = j - i >= 2 ? kd->algo_packed : kd->algo;
            for (k = i; k < j; k++) {
                tl_tensor(e, reqs[k], algo, t0, t1, (int)(j - i), st);
            }
            if (j - i >= 2) {
                char label[TC_TL_NAME_MAX];
                int len = snprintf(label, sizeof(label), "fused(%u) %s, ...", j - i,
                                   reqs[i]->name);
                tc_tl_args_t a = TC_TL_ARGS_INIT;
                a.kind = kd->name;
                a.algo = algo;
                a.bytes = (int64_t)total;
                a.fused = (int32_t)(j - i);
                a.cycle = (int64_t)e->seq;
                a.status = st;
                tc__tl_complete(TC_TL_TRACK_COLLECTIVES, label,
                                len < (int)sizeof(label) ? (size_t)len : sizeof(label) - 1,
                                "collective", t0, t1 - t0, &a);
            }
        }
        if (st != TC_OK) {
            /* The ring cannot go on without this rank: stop the engine
             * (first, so that later submissions already fail). */
            engine_fail(e, st, "%s; tcoll stops on this rank", msg);
        }
        for (k = i; k < j; k++) {
            finish(reqs[k], st, msg);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Negotiation                                                               */
/* ------------------------------------------------------------------------ */

static void to_wire(const tc_request_t *req, tc_wire_request_t *w)
{
    memset(w, 0, sizeof(*w));
    w->name = req->name;
    w->name_len = req->name_len;
    w->kind = (uint8_t)req->kind;
    w->dtype = (uint8_t)req->dtype;
    w->op = (uint8_t)req->op;
    w->root = req->root;
    w->ndim = (uint8_t)req->ndim;
    memcpy(w->shape, req->shape, sizeof(w->shape));
}

/* Takes what application threads queued. Returns the number of requests. */
static size_t drain(tc_request_t **head_p, int *shutdown_p)
{
    size_t n = 0;
    tc_request_t *r;

    pthread_mutex_lock(&g.mu);
    *head_p = g.q_head;
    g.q_head = g.q_tail = NULL;
    *shutdown_p = g.shutdown_requested;
    pthread_mutex_unlock(&g.mu);
    for (r = *head_p; r != NULL; r = r->next) {
        n++;
    }
    return n;
}

/* Rank 0: enters rank's submission in the message table; a protocol
 * violation or running out of memory stops the engine. */
static void coord_add(engine_t *e, int rank, const tc_wire_request_t *w)
{
    char err[512];
    tc_status_t st = tc__coord_add(e->coord, rank, w, err, sizeof(err));

    if (st != TC_OK) {
        engine_fail(e, st == TC_ERR_NOMEM ? TC_ERR_NOMEM : TC_ERR_TRANSPORT,
                    "rank 0's message table: %s", st == TC_ERR_NOMEM ? "out of memory" : err);
    }
}

/* Sends this rank's first-time submissions (and a shutdown request) to rank 0,
 * or, on rank 0, enters them in the message table. */
static void negotiate_in_full(engine_t *e, tc_request_t *head, size_t n, int local_shutdown)
{
    tc_wire_msg_t out = {0};
    tc_request_t *r;
    size_t i = 0;

    if (e->rank == 0) {
        for (r = head; r != NULL && !e->terminated; r = r->next) {
            tc_wire_request_t w;
            to_wire(r, &w);
            coord_add(e, 0, &w);
        }
        if (local_shutdown && e->shutdown_from < 0) {
            e->shutdown_from = 0;
        }
        return;
    }
    if (n == 0 && (!local_shutdown || e->shutdown_sent)) {
        return;
    }
    out.type = TC_WIRE_REQUESTS;
    out.reqs = n > 0 ? calloc(n, sizeof(*out.reqs)) : NULL;
    if (n > 0 && out.reqs == NULL) {
        engine_fail(e, TC_ERR_NOMEM, "out of memory sending submissions");
        return;
    }
    for (r = head; r != NULL; r = r->next) {
        to_wire(r, &out.reqs[i++]);
    }
    out.count = (uint32_t)n;
    if (local_shutdown && !e->shutdown_sent) {
        out.flags = TC_WIRE_F_SHUTDOWN;
        e->shutdown_sent = 1;
    }
    ctrl_send(e, &out, 0, 0, -1, TAG_REQ);
    free(out.reqs);
}

static int pend_add(engine_t *e, uint32_t id)
{
    if (e->npend == e->cappend) {
        uint32_t cap = e->cappend < 64 ? 64 : e->cappend * 2;
        uint32_t *p = realloc(e->pend, (size_t)cap * sizeof(*p));
        if (p == NULL) {
            return -1;
        }
        e->pend = p;
        e->cappend = cap;
    }
    e->pend[e->npend++] = id;
    return 0;
}

/* Takes new submissions: a cached name waits for its id to be ready on every
 * rank (or, with other parameters, marks the entry stale); anything else, and
 * what the last cycle dropped from the cache, is negotiated in full. */
static int take_submissions(engine_t *e)
{
    tc_request_t *head, *r, *next, *full = NULL, **tail = &full;
    int local_shutdown;
    size_t nnew = drain(&head, &local_shutdown), nfull = 0;

    if (local_shutdown && e->shutdown_t0 == 0) {
        e->shutdown_t0 = tc__now_ns();
    }
    for (r = e->resend; r != NULL; r = next) { /* dropped entries first: they are older */
        next = r->next;
        *tail = r;
        tail = &r->next;
        nfull++;
    }
    e->resend = NULL;
    for (r = head; r != NULL; r = next) {
        tc_cache_entry_t *ce = tc__cache_find(&e->cache, r->name, r->name_len);
        next = r->next;
        r->next = NULL;
        if (ce != NULL && ce->pending == NULL && pend_add(e, ce->id) == 0) {
            tc_wire_request_t w;
            to_wire(r, &w);
            ce->pending = r;
            ce->stale = !tc__cache_matches(ce, &w);
            e->dirty = 1;
            continue;
        }
        if (ce != NULL && ce->pending == NULL) {
            engine_fail(e, TC_ERR_NOMEM, "out of memory tracking cached submissions");
        } else if (ce != NULL) {
            engine_fail(e, TC_ERR_TRANSPORT, "tensor '%s' is pending twice (internal error)",
                        r->name);
        }
        *tail = r;
        tail = &r->next;
        nfull++;
    }
    negotiate_in_full(e, full, nfull, local_shutdown);
    return nnew > 0 || nfull > 0;
}

/* Rank 0: reads the workers' REQUESTS into the message table. */
static int coord_receive(engine_t *e)
{
    int progress = 0, src, got;
    tc_wire_msg_t msg;

    while (!e->terminated && (got = ctrl_recv(e, MPI_ANY_SOURCE, TAG_REQ, &msg, &src)) == 1) {
        uint32_t i;
        progress = 1;
        if (msg.type == TC_WIRE_BYE) {
            /* Expected once our TERMINATE is out (that rank may complete the
             * cycle before we do); otherwise it stopped after a local failure. */
            e->bye_seen[src] = 1;
            if (!e->term_sent) {
                engine_fail(e, TC_ERR_TRANSPORT, "rank %d stopped after a failure", src);
            }
        } else if (msg.type != TC_WIRE_REQUESTS) {
            engine_fail(e, TC_ERR_TRANSPORT, "unexpected control message type %d from rank %d",
                        msg.type, src);
        }
        for (i = 0; i < msg.count && !e->failed; i++) {
            if (tc__tl_active()) {
                char label[32];
                int len = snprintf(label, sizeof(label), "rank %d submitted", src);
                tc__tl_instant(tc__tl_track(msg.reqs[i].name, msg.reqs[i].name_len), label,
                               (size_t)len, "negotiation", tc__now_ns(), NULL);
            }
            coord_add(e, src, &msg.reqs[i]);
        }
        if ((msg.flags & TC_WIRE_F_SHUTDOWN) && e->shutdown_from < 0) {
            e->shutdown_from = src;
        }
        tc__wire_msg_free(&msg);
    }
    return progress;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int has_id(const uint32_t *ids, uint32_t n, uint32_t id)
{
    return n > 0 && bsearch(&id, ids, n, sizeof(id), cmp_u32) != NULL;
}

/* Whether rank 0 has something to announce: a decision or the end. */
static int coord_has_news(const engine_t *e)
{
    return e->rank == 0 && (e->shutdown_from >= 0 || e->ntimeouts > 0 ||
                            (e->coord != NULL && tc__coord_nready(e->coord) > 0));
}

/* Picks the ready ids whose inputs ride in our cycle message: small tensors
 * of a kind that can combine eager inputs, up to EAGER_MSG_MAX bytes in all. */
static void attach_eager(engine_t *e)
{
    size_t total = 0, limit = (size_t)e->cfg->eager_bytes;
    uint32_t i;

    e->nmy_eager = 0;
    if (limit == 0 || e->nmy_ready == 0 || e->size > EAGER_MAX_RANKS) {
        return;
    }
    e->my_eager = malloc((size_t)e->nmy_ready * sizeof(*e->my_eager));
    if (e->my_eager == NULL) {
        return; /* they go the normal way */
    }
    for (i = 0; i < e->nmy_ready; i++) {
        const tc_cache_entry_t *ce = tc__cache_get(&e->cache, e->my_ready[i]);
        const tc_request_t *req = ce->pending;
        size_t bytes = req->count * tc_dtype_size(req->dtype);
        if (tc__kind_of(req)->eager == NULL || bytes == 0 || bytes > limit ||
            total + bytes > EAGER_MSG_MAX) {
            continue;
        }
        e->my_eager[e->nmy_eager++] = (tc_wire_eager_t){ce->id, (uint32_t)bytes, req->send};
        total += bytes;
    }
}

static int cmp_eager(const void *a, const void *b)
{
    uint32_t x = ((const tc_wire_eager_t *)a)->id, y = ((const tc_wire_eager_t *)b)->id;
    return (x > y) - (x < y);
}

static const tc_wire_eager_t *find_eager(const tc_wire_eager_t *ents, uint32_t n, uint32_t id)
{
    tc_wire_eager_t key = {id, 0, NULL};
    return n > 0 ? bsearch(&key, ents, n, sizeof(key), cmp_eager) : NULL;
}

/* If every rank sent its input for id inside its cycle message, combines
 * them here (the kind's eager function: the same bits on every rank) and
 * completes req: returns 1. Returns 0 when the id must run as a collective. */
static int reduce_eager(engine_t *e, uint32_t id, tc_request_t *req)
{
    const tc_wire_eager_t *x[EAGER_MAX_RANKS];
    const void *inputs[EAGER_MAX_RANKS];
    size_t bytes = req->count * tc_dtype_size(req->dtype);
    int q;

    if (e->size > EAGER_MAX_RANKS) {
        return 0;
    }
    for (q = 0; q < e->size; q++) {
        x[q] = q == e->rank ? find_eager(e->my_eager, e->nmy_eager, id)
                            : find_eager(e->cyc[q].eager, e->cyc[q].neager, id);
        if (x[q] == NULL) {
            return 0;
        }
        if (x[q]->len != bytes) {
            engine_fail(e, TC_ERR_TRANSPORT, "protocol error: rank %d sent %u bytes of "
                        "tensor '%s', this rank has %zu", q, x[q]->len, req->name, bytes);
            return 0;
        }
        inputs[q] = x[q]->data;
    }
    if (tc__kind_of(req)->eager(req, inputs, e->size, &e->eager_buf) != TC_OK) {
        return 0;
    }
    if (tc__tl_active()) {
        tl_tensor(e, req, "eager (inputs in the cycle messages)", e->ready_ns, tc__now_ns(), 1,
                  TC_OK);
    }
    finish(req, TC_OK, NULL);
    return 1;
}

/* Sends this rank's message for cycle seq to every other rank. */
static void contribute(engine_t *e)
{
    tc_wire_msg_t out = {0};
    uint32_t i, nr = 0, ns = 0;

    e->my_ready = malloc(((size_t)e->npend + 1) * sizeof(uint32_t));
    e->my_stale = malloc(((size_t)e->npend + 1) * sizeof(uint32_t));
    if (e->my_ready == NULL || e->my_stale == NULL) {
        engine_fail(e, TC_ERR_NOMEM, "out of memory starting a negotiation cycle");
        return;
    }
    for (i = 0; i < e->npend; i++) {
        const tc_cache_entry_t *ce = tc__cache_get(&e->cache, e->pend[i]);
        if (ce->stale) {
            e->my_stale[ns++] = ce->id;
        } else {
            e->my_ready[nr++] = ce->id;
        }
    }
    qsort(e->my_ready, nr, sizeof(uint32_t), cmp_u32);
    qsort(e->my_stale, ns, sizeof(uint32_t), cmp_u32);
    e->nmy_ready = nr;
    e->nmy_stale = ns;
    attach_eager(e);
    out.type = TC_WIRE_CYCLE;
    out.seq = e->seq;
    out.cache_gen = e->cache.gen;
    out.nready = nr;
    out.ready = e->my_ready;
    out.nstale = ns;
    out.stale = e->my_stale;
    out.neager = e->nmy_eager;
    out.eager = e->my_eager;
    if (e->rank == 0) {
        if (tc__coord_take_ready(e->coord, &e->batch) != TC_OK ||
            (e->my_resps = malloc(((size_t)e->batch.count + e->ntimeouts + 1) *
                                  sizeof(*e->my_resps))) == NULL) {
            engine_fail(e, TC_ERR_NOMEM, "rank 0 ran out of memory scheduling tensors");
            return;
        }
        for (i = 0; i < e->batch.count; i++) {
            tc_wire_response_t *r = &e->batch.resps[i];
            if (r->rtype == TC_WIRE_RUN) {
                r->cache_ref = tc__cache_assign(&e->cache, (uint32_t)e->cfg->cache_capacity);
            }
            e->my_resps[i] = *r;
        }
        /* the stall inspector's verdicts on cached names go out with them */
        if (e->ntimeouts > 0) {
            memcpy(e->my_resps + e->batch.count, e->timeouts,
                   e->ntimeouts * sizeof(*e->timeouts));
        }
        e->nmy_resps = e->batch.count + e->ntimeouts;
        out.count = e->nmy_resps;
        out.resps = e->my_resps;
        if (e->shutdown_from >= 0) {
            e->term_sent = 1;
            out.term_status = TC_ERR_SHUTDOWN;
            snprintf(e->term_text, sizeof(e->term_text),
                     "tcoll was shut down (tc_shutdown called on rank %d)", e->shutdown_from);
        }
        if (e->term_sent) {
            out.flags = TC_WIRE_F_TERMINATE;
            out.term_text = e->term_text;
            out.term_text_len = (uint32_t)strnlen(e->term_text, TC_WIRE_MAX_TEXT);
        }
    }
    ctrl_send(e, &out, 0, e->size - 1, e->rank, TAG_CYCLE + (int)(e->seq & 1));
    e->contributed = 1;
    e->dirty = 0;
    e->cycle_t0 = tc__now_ns();
}

/* Timeline: a mark on each tensor's row as a rank says it has it. */
static void tl_ready_marks(const engine_t *e, int src, const tc_wire_msg_t *msg)
{
    char label[32];
    int len = snprintf(label, sizeof(label), "rank %d ready", src);
    uint64_t now = tc__now_ns();
    uint32_t i;

    for (i = 0; i < msg->nready; i++) {
        const tc_cache_entry_t *ce = tc__cache_get(&e->cache, msg->ready[i]);
        if (ce != NULL) {
            tc__tl_instant(tc__tl_track(ce->name, ce->desc.name_len), label, (size_t)len,
                           "negotiation", now, NULL);
        }
    }
}

/* Receives the other ranks' messages for cycle seq that are there. Returns
 * how many arrived, or -1 after a failure. */
static int cycle_receive(engine_t *e)
{
    tc_wire_msg_t msg;
    int src, got = 0, n = 0;

    while (e->ngot < e->size - 1 &&
           (got = ctrl_recv(e, MPI_ANY_SOURCE, TAG_CYCLE + (int)(e->seq & 1), &msg, &src)) == 1) {
        const char *bad = NULL;
        if (msg.type != TC_WIRE_CYCLE) {
            bad = "not a cycle message";
        } else if (msg.seq != e->seq) {
            bad = "for another cycle";
        } else if (src != 0 && (msg.count > 0 || (msg.flags & TC_WIRE_F_TERMINATE))) {
            bad = "with decisions only rank 0 makes";
        } else if (e->cyc_have[src]) {
            bad = "twice for one cycle";
        }
        if (bad != NULL) {
            engine_fail(e, TC_ERR_TRANSPORT,
                        "protocol error: a control message from rank %d %s (cycle %llu)", src, bad,
                        (unsigned long long)e->seq);
            tc__wire_msg_free(&msg);
            return -1;
        }
        if (tc__tl_active()) {
            tl_ready_marks(e, src, &msg);
        }
        e->cyc[src] = msg;
        e->cyc_have[src] = 1;
        e->ngot++;
        n++;
    }
    return got < 0 ? -1 : n;
}

/* Finds this rank's request for each response: NULL for an ERROR about a
 * name this rank never submitted (a stalled tensor rank 0 gave up on). A
 * request that an ERROR fails leaves the cache path and the resend list; the
 * names RUN responses cache are filed. Returns 0, or -1 after a failure. */
static int resolve_responses(engine_t *e, const tc_wire_response_t *resps, uint32_t n,
                             tc_request_t **reqs)
{
    uint32_t i;

    pthread_mutex_lock(&g.mu);
    for (i = 0; i < n; i++) {
        reqs[i] = tc__hmap_get(&g.inflight, resps[i].name, resps[i].name_len);
        if (reqs[i] == NULL && resps[i].rtype == TC_WIRE_RUN) {
            break;
        }
    }
    pthread_mutex_unlock(&g.mu);
    if (i < n) {
        engine_fail(e, TC_ERR_TRANSPORT,
                    "rank 0 scheduled tensor '%.*s', which this rank has not submitted "
                    "(protocol error)", (int)resps[i].name_len, resps[i].name);
        return -1;
    }
    for (i = 0; i < n; i++) {
        tc_wire_request_t w;
        tc_status_t st;
        if (resps[i].rtype == TC_WIRE_ERROR && reqs[i] != NULL) {
            tc_cache_entry_t *ce = tc__cache_find(&e->cache, resps[i].name, resps[i].name_len);
            tc_request_t **pp;
            if (ce != NULL && ce->pending == reqs[i]) {
                ce->pending = NULL;
            }
            for (pp = &e->resend; *pp != NULL; pp = &(*pp)->next) {
                if (*pp == reqs[i]) {
                    *pp = reqs[i]->next;
                    break;
                }
            }
            continue;
        }
        if (resps[i].rtype != TC_WIRE_RUN || resps[i].cache_ref == 0) {
            continue;
        }
        to_wire(reqs[i], &w);
        st = tc__cache_file(&e->cache, resps[i].cache_ref - 1, &w, &resps[i]);
        if (st != TC_OK) {
            engine_fail(e, st, st == TC_ERR_NOMEM ? "out of memory filing tensor '%s'"
                                                     : "cannot file tensor '%s' under cache id "
                                                       "%u (protocol error)",
                        reqs[i]->name, resps[i].cache_ref - 1);
            return -1;
        }
    }
    return 0;
}

/* Drops every entry a rank found stale; this rank's pending submissions of
 * those names are negotiated in full next. */
static void drop_stale(engine_t *e, const uint32_t *ids, uint32_t n)
{
    uint32_t i;
    int found;

    for (i = 0; i < n; i++) {
        tc_request_t *r = tc__cache_drop(&e->cache, ids[i], &found);
        if (found) {
            TC_DEBUG("engine", "cache id %u dropped: a rank changed its parameters", ids[i]);
        }
        if (r != NULL) {
            r->next = e->resend;
            e->resend = r;
        }
    }
}

static void cstall_update(engine_t *e, const uint32_t *ran, uint32_t nran,
                          const uint32_t *failed, uint32_t nfailed);

static int id_in(const uint32_t *ids, uint32_t n, uint32_t id)
{
    uint32_t i;

    for (i = 0; i < n; i++) {
        if (ids[i] == id) {
            return 1;
        }
    }
    return 0;
}

static void free_timeouts(engine_t *e)
{
    uint32_t i;

    for (i = 0; i < e->ntimeouts; i++) {
        free((char *)e->timeouts[i].name);
        free((char *)e->timeouts[i].text);
    }
    free(e->timeouts);
    e->timeouts = NULL;
    e->ntimeouts = 0;
}

/* Processes a cycle every rank has sent its message for; see the file
 * comment. */
static void complete_cycle(engine_t *e)
{
    e->ready_ns = tc__now_ns();
    const tc_wire_msg_t *zero = e->rank == 0 ? NULL : &e->cyc[0];
    const tc_wire_response_t *resps = zero != NULL ? zero->resps : e->my_resps;
    uint32_t nresps = zero != NULL ? zero->count : e->nmy_resps;
    int terminate = zero != NULL ? (zero->flags & TC_WIRE_F_TERMINATE) != 0 : e->term_sent;
    tc_wire_response_t *all = NULL;
    tc_request_t **reqs = NULL;
    uint32_t *failed_ids = NULL, *ran = NULL;
    uint32_t i, n = nresps, nfailed = 0, nran = 0;
    int q, run = 1;

    for (q = 0; q < e->size && run; q++) {
        if (q != e->rank && e->cyc[q].cache_gen != e->cache.gen) {
            engine_fail(e, TC_ERR_TRANSPORT,
                        "protocol error: rank %d's response cache is at generation %llu, this "
                        "rank's at %llu", q, (unsigned long long)e->cyc[q].cache_gen,
                        (unsigned long long)e->cache.gen);
            run = 0;
        }
    }
    if (run) {
        drop_stale(e, e->my_stale, e->nmy_stale);
        for (q = 0; q < e->size; q++) {
            if (q != e->rank) {
                drop_stale(e, e->cyc[q].stale, e->cyc[q].nstale);
            }
        }
        all = malloc(((size_t)nresps + e->nmy_ready + 1) * sizeof(*all));
        reqs = malloc(((size_t)nresps + e->nmy_ready + 1) * sizeof(*reqs));
        failed_ids = malloc(((size_t)nresps + 1) * sizeof(*failed_ids));
        ran = malloc(((size_t)e->nmy_ready + 1) * sizeof(*ran));
        if (all == NULL || reqs == NULL || failed_ids == NULL || ran == NULL) {
            engine_fail(e, TC_ERR_NOMEM, "out of memory running a negotiation cycle");
            run = 0;
        }
    }
    if (run && nresps > 0) {
        memcpy(all, resps, (size_t)nresps * sizeof(*all));
        run = resolve_responses(e, all, nresps, reqs) == 0;
    }
    /* A cached name rank 0 failed (a stall) does not run in this cycle, on
     * any rank, even if every rank listed it. */
    for (i = 0; run && i < nresps; i++) {
        const tc_cache_entry_t *ce;
        if (all[i].rtype == TC_WIRE_ERROR &&
            (ce = tc__cache_find(&e->cache, all[i].name, all[i].name_len)) != NULL) {
            failed_ids[nfailed++] = ce->id;
        }
    }
    for (i = 0; run && i < e->nmy_ready; i++) {
        uint32_t id = e->my_ready[i];
        tc_cache_entry_t *ce;
        for (q = 0; q < e->size; q++) {
            if (q != e->rank && !has_id(e->cyc[q].ready, e->cyc[q].nready, id)) {
                break;
            }
        }
        if (q < e->size || id_in(failed_ids, nfailed, id)) {
            continue; /* not everyone has it yet, or it failed */
        }
        ce = tc__cache_get(&e->cache, id);
        if (ce == NULL || ce->pending == NULL) {
            engine_fail(e, TC_ERR_TRANSPORT, "cache id %u is ready but not pending on this "
                                                "rank (internal error)", id);
            run = 0;
            break;
        }
        ran[nran++] = id;
        if (reduce_eager(e, id, ce->pending)) {
            ce->pending = NULL;
            continue;
        }
        if (e->failed) {
            run = 0;
            break;
        }
        all[n] = (tc_wire_response_t){.rtype = TC_WIRE_RUN, .name = ce->name,
                                      .name_len = ce->desc.name_len, .ndim0 = ce->ndim0,
                                      .dim0 = ce->dim0, .cache_ref = id + 1};
        reqs[n++] = ce->pending;
        ce->pending = NULL;
    }
    if (run) {
        uint32_t k = 0;
        for (i = 0; i < e->npend; i++) { /* keep the ids still waiting */
            const tc_cache_entry_t *ce = tc__cache_get(&e->cache, e->pend[i]);
            if (ce != NULL && ce->pending != NULL) {
                e->pend[k++] = e->pend[i];
            }
        }
        e->npend = k;
        if (e->rank == 0) {
            cstall_update(e, ran, nran, failed_ids, nfailed);
        }
        execute(e, all, reqs, n);
    }
    free(all);
    free(reqs);
    free(failed_ids);
    free(ran);

    if (terminate && !e->terminated) {
        e->terminated = 1;
        e->term_status = zero != NULL ? (tc_status_t)zero->term_status : TC_ERR_SHUTDOWN;
        snprintf(e->term_msg, sizeof(e->term_msg), "%.*s",
                 zero != NULL ? (int)zero->term_text_len : (int)strlen(e->term_text),
                 zero != NULL ? zero->term_text : e->term_text);
    }
    for (q = 0; q < e->size; q++) {
        tc__wire_msg_free(&e->cyc[q]);
        e->cyc_have[q] = 0;
    }
    tc__coord_batch_free(&e->batch);
    memset(&e->batch, 0, sizeof(e->batch));
    free(e->my_resps);
    e->my_resps = NULL;
    e->nmy_resps = 0;
    if (e->rank == 0) {
        free_timeouts(e); /* they went out in this cycle */
    }
    free(e->my_ready);
    free(e->my_stale);
    free(e->my_eager);
    e->my_ready = e->my_stale = NULL;
    e->my_eager = NULL;
    e->nmy_ready = e->nmy_stale = e->nmy_eager = 0;
    e->term_sent = 0;
    e->ngot = 0;
    e->contributed = 0;
    e->seq++;
    e->cycle_done_ns = tc__now_ns();
}

/* Writes the ranks q with want == (flags[q] != 0) as "0-3,5" into buf;
 * skip (-1: none) is left out. Returns how many were listed. */
static int format_ranks(const uint8_t *flags, int size, int want, int skip, char *buf, size_t len)
{
    size_t pos = 0;
    int q = 0, n = 0;

    buf[0] = '\0';
    while (q < size) {
        int r;
        if (q == skip || (flags[q] != 0) != want) {
            q++;
            continue;
        }
        for (r = q; r + 1 < size && r + 1 != skip && (flags[r + 1] != 0) == want; r++) {
        }
        if (pos < len) {
            pos += (size_t)snprintf(buf + pos, len - pos, r == q ? "%s%d" : "%s%d-%d",
                                    n > 0 ? "," : "", q, r);
        }
        n += r - q + 1;
        q = r + 1;
    }
    return n;
}

/* ------------------------------------------------------------------------ */
/* Rank 0's stall inspector                                                  */
/* ------------------------------------------------------------------------ */

static void cstall_free(cstall_t *v, uint32_t n)
{
    uint32_t i;

    for (i = 0; v != NULL && i < n; i++) {
        free(v[i].have);
    }
    free(v);
}

static int cmp_cstall(const void *a, const void *b)
{
    uint32_t x = ((const cstall_t *)a)->id, y = ((const cstall_t *)b)->id;
    return (x > y) - (x < y);
}

/* After a cycle (rank 0): which cached ids some ranks, but not all, have
 * listed as ready, and since when. Every rank lists all its waiting ids in
 * every message, so this cycle's lists are the whole picture. */
static void cstall_update(engine_t *e, const uint32_t *ran, uint32_t nran,
                          const uint32_t *failed, uint32_t nfailed)
{
    uint32_t *ids, nids = 0, i, k, total = e->nmy_ready;
    cstall_t *v;
    uint64_t now = tc__now_ns();
    int q;

    for (q = 1; q < e->size; q++) {
        total += e->cyc[q].nready;
    }
    if (total == 0) {
        cstall_free(e->cstall, e->ncstall);
        e->cstall = NULL;
        e->ncstall = 0;
        return;
    }
    ids = malloc((size_t)total * sizeof(*ids));
    v = calloc(total, sizeof(*v));
    if (ids == NULL || v == NULL) {
        free(ids);
        free(v);
        return; /* the inspector misses one cycle; nothing else depends on it */
    }
    if (e->nmy_ready > 0) {
        memcpy(ids, e->my_ready, (size_t)e->nmy_ready * sizeof(*ids));
    }
    nids = e->nmy_ready;
    for (q = 1; q < e->size; q++) {
        if (e->cyc[q].nready > 0) {
            memcpy(ids + nids, e->cyc[q].ready, (size_t)e->cyc[q].nready * sizeof(*ids));
            nids += e->cyc[q].nready;
        }
    }
    qsort(ids, nids, sizeof(*ids), cmp_u32);
    for (i = 0, k = 0; i < nids; i++) {
        cstall_t key, *old;
        if ((i > 0 && ids[i] == ids[i - 1]) || id_in(ran, nran, ids[i]) ||
            id_in(failed, nfailed, ids[i]) || tc__cache_get(&e->cache, ids[i]) == NULL) {
            continue;
        }
        v[k].id = ids[i];
        v[k].have = malloc((size_t)e->size);
        if (v[k].have == NULL) {
            continue;
        }
        v[k].have[0] = (uint8_t)has_id(e->my_ready, e->nmy_ready, ids[i]);
        for (q = 1; q < e->size; q++) {
            v[k].have[q] = (uint8_t)has_id(e->cyc[q].ready, e->cyc[q].nready, ids[i]);
        }
        key.id = ids[i];
        old = e->ncstall > 0 ? bsearch(&key, e->cstall, e->ncstall, sizeof(key), cmp_cstall)
                             : NULL;
        v[k].since_ns = old != NULL ? old->since_ns : now;
        k++;
    }
    free(ids);
    cstall_free(e->cstall, e->ncstall);
    e->cstall = v;
    e->ncstall = k;
}

typedef struct {
    char *name;
    uint8_t kind;
    uint64_t since_ns;
    uint8_t *have;
    int cached;
} stalled_t;

typedef struct {
    stalled_t *v;
    size_t n, cap;
    int size;
} stalled_list_t;

static void stalled_add(stalled_list_t *l, const char *name, uint32_t len, uint8_t kind,
                        uint64_t since, const uint8_t *have, int cached)
{
    stalled_t *x;

    if (l->n == l->cap) {
        size_t cap = l->cap < 16 ? 16 : l->cap * 2;
        stalled_t *v = realloc(l->v, cap * sizeof(*v));
        if (v == NULL) {
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    x = &l->v[l->n];
    x->name = strndup(name, len);
    x->have = malloc((size_t)l->size);
    if (x->name == NULL || x->have == NULL) {
        free(x->name);
        free(x->have);
        return;
    }
    memcpy(x->have, have, (size_t)l->size);
    x->kind = kind;
    x->since_ns = since;
    x->cached = cached;
    l->n++;
}

static void stalled_visit(const tc_coord_pending_t *p, void *arg)
{
    stalled_add(arg, p->name, p->name_len, p->kind, p->since_ns, p->have, 0);
}

static int timeout_queued(const engine_t *e, const char *name)
{
    uint32_t i;

    for (i = 0; i < e->ntimeouts; i++) {
        if (strcmp(e->timeouts[i].name, name) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Fails a stalled cached name on every rank that waits for it, in rank 0's
 * next cycle message. */
static void timeout_cached(engine_t *e, const char *name, const char *text)
{
    tc_wire_response_t *t;

    if (timeout_queued(e, name)) {
        return;
    }
    t = realloc(e->timeouts, ((size_t)e->ntimeouts + 1) * sizeof(*t));
    if (t == NULL) {
        return;
    }
    e->timeouts = t;
    t = &e->timeouts[e->ntimeouts];
    memset(t, 0, sizeof(*t));
    t->rtype = TC_WIRE_ERROR;
    t->status = TC_ERR_TIMEOUT;
    t->name = strdup(name);
    t->text = strndup(text, TC_WIRE_MAX_TEXT);
    if (t->name == NULL || t->text == NULL) {
        free((char *)t->name);
        free((char *)t->text);
        return;
    }
    t->name_len = (uint32_t)strlen(t->name);
    t->text_len = (uint32_t)strlen(t->text);
    e->ntimeouts++;
}

#define STALL_LISTED 20 /* tensors named in one warning */

/* Rank 0, once a second: warns about tensors some ranks have submitted and
 * others not for TCOLL_STALL_WARN_S (again every TCOLL_STALL_WARN_S while it
 * lasts), and fails them after TCOLL_STALL_ABORT_S. */
static void stall_check(engine_t *e, uint64_t now)
{
    const uint64_t warn_ns = (uint64_t)e->cfg->stall_warn_s * 1000000000ull;
    const uint64_t abort_ns = (uint64_t)e->cfg->stall_abort_s * 1000000000ull;
    stalled_list_t l = {NULL, 0, 0, e->size};
    char have[128], missing[128], text[512];
    int warn_now = warn_ns > 0 && now >= e->next_stall_warn;
    size_t i, nwarned = 0;

    if ((!warn_now && abort_ns == 0) || now < e->next_stall_check) {
        return;
    }
    e->next_stall_check = now + 1000000000ull;
    tc__coord_foreach_pending(e->coord, stalled_visit, &l);
    for (i = 0; i < e->ncstall; i++) {
        const tc_cache_entry_t *ce = tc__cache_get(&e->cache, e->cstall[i].id);
        if (ce != NULL) {
            stalled_add(&l, ce->name, ce->desc.name_len, ce->desc.kind, e->cstall[i].since_ns,
                        e->cstall[i].have, 1);
        }
    }
    for (i = 0; i < l.n; i++) {
        stalled_t *x = &l.v[i];
        uint64_t age = now > x->since_ns ? now - x->since_ns : 0;
        int nhave = format_ranks(x->have, e->size, 1, -1, have, sizeof(have));
        int nmiss = format_ranks(x->have, e->size, 0, -1, missing, sizeof(missing));
        if (x->cached && timeout_queued(e, x->name)) {
            continue; /* failing already, in our next cycle message */
        }
        if (abort_ns > 0 && age >= abort_ns) {
            snprintf(text, sizeof(text),
                     "tensor '%s' (%s) stalled for %llu s: submitted by rank%s %s, not by rank%s "
                     "%s (TCOLL_STALL_ABORT_S=%d)",
                     x->name, tc__kind_name(x->kind), (unsigned long long)(age / 1000000000ull),
                     nhave > 1 ? "s" : "", have, nmiss > 1 ? "s" : "",
                     missing, e->cfg->stall_abort_s);
            TC_WARN("stall", "%s: failing it with TC_ERR_TIMEOUT", text);
            if (x->cached) {
                timeout_cached(e, x->name, text);
            } else if (tc__coord_expire(e->coord, x->name, (uint32_t)strlen(x->name),
                                        TC_ERR_TIMEOUT, text) == TC_ERR_NOMEM) {
                TC_WARN("stall", "out of memory failing tensor '%s'", x->name);
            }
            continue;
        }
        if (warn_now && age >= warn_ns) {
            if (nwarned == 0) {
                TC_WARN("stall", "tensors submitted by some ranks but not all for %d s or more "
                                 "(TCOLL_STALL_WARN_S); repeated every %d s while it lasts:",
                        e->cfg->stall_warn_s, e->cfg->stall_warn_s);
            }
            if (nwarned < STALL_LISTED) {
                TC_WARN("stall", "  '%s' (%s): waiting %llu s; submitted by rank%s %s; missing "
                                 "rank%s %s", x->name, tc__kind_name(x->kind),
                        (unsigned long long)(age / 1000000000ull),
                        nhave > 1 ? "s" : "", have, nmiss > 1 ? "s" : "", missing);
            }
            nwarned++;
        }
    }
    if (nwarned > STALL_LISTED) {
        TC_WARN("stall", "  and %zu more", nwarned - STALL_LISTED);
    }
    if (nwarned > 0) {
        e->next_stall_warn = now + warn_ns;
    }
    for (i = 0; i < l.n; i++) {
        free(l.v[i].name);
        free(l.v[i].have);
    }
    free(l.v);
}

/* Moves the cycles on: receive, join or start, complete. */
static int cycle_step(engine_t *e)
{
    int progress = 0, got;

    while (!e->terminated) {
        got = cycle_receive(e);
        if (got < 0) {
            return 1;
        }
        progress |= got > 0;
        if (!e->contributed && (e->ngot > 0 || e->dirty || coord_has_news(e))) {
            contribute(e);
            progress = 1;
        }
        if (e->terminated || !e->contributed || e->ngot < e->size - 1) {
            break;
        }
        complete_cycle(e);
        progress = 1;
    }
    return progress;
}

static void stall_check(engine_t *e, uint64_t now);

/* Every POLL_NS: another rank's abort, a lost peer, a shutdown past its time
 * limit, stalled tensors (rank 0). */
static void periodic(engine_t *e)
{
    const uint64_t peer_ns = (uint64_t)e->cfg->peer_timeout_s * 1000000000ull;
    uint64_t now = tc__now_ns();
    char ranks[256];

    if (now < e->next_poll_ns) {
        return;
    }
    e->next_poll_ns = now + POLL_NS;
    if (poll_abort(e)) {
        return;
    }
    answer_pings(e);
    if (e->contributed && e->ngot < e->size - 1 && now - e->cycle_t0 > peer_ns) {
        /* Silent ranks whose engines still answer are busy (waiting for a
         * dead third rank, say), not lost: only the others are. */
        uint8_t *lost = calloc((size_t)e->size, 1);
        int q, n = 0;
        if (lost == NULL) {
            engine_fail(e, TC_ERR_NOMEM, "out of memory checking silent ranks");
            return;
        }
        for (q = 0; q < e->size; q++) {
            int alive = q == e->rank || e->cyc_have[q] ? 1 : probe_peer(e, q);
            if (alive < 0) {
                free(lost);
                return;
            }
            lost[q] = alive == 0;
            n += alive == 0;
        }
        if (n > 0) {
            format_ranks(lost, e->size, 1, -1, ranks, sizeof(ranks));
            engine_fail(e, TC_ERR_TRANSPORT,
                        "lost rank%s %s: no negotiation message from %s for %d s and no answer "
                        "to a probe (the process died, or its engine thread is stuck; "
                        "TCOLL_PEER_TIMEOUT_S); tcoll stops on this rank",
                        n > 1 ? "s" : "", ranks, n > 1 ? "them" : "it", e->cfg->peer_timeout_s);
        } else {
            e->cycle_t0 = tc__now_ns(); /* all alive: wait again */
        }
        free(lost);
        return;
    }
    if (!e->contributed && now - e->cycle_done_ns > peer_ns / 2) {
        /* Waiting, with no cycle for a while: a peer may have died while
         * idle. An empty cycle finds out: a live engine joins it within
         * TCOLL_IDLE_POLL_MS, a dead one trips the check above. No message
         * is sent while nothing is pending. */
        pthread_mutex_lock(&g.mu);
        if (g.inflight.count > 0) {
            e->dirty = 1;
        }
        pthread_mutex_unlock(&g.mu);
        e->cycle_done_ns = now;
    }
    if (e->shutdown_t0 != 0 && !e->terminated &&
        now - e->shutdown_t0 > (uint64_t)e->cfg->shutdown_timeout_s * 1000000000ull) {
        engine_fail(e, TC_ERR_TIMEOUT,
                    "the shutdown handshake with rank 0 did not finish within %d s "
                    "(TCOLL_SHUTDOWN_TIMEOUT_S)", e->cfg->shutdown_timeout_s);
        return;
    }
    if (e->rank == 0) {
        stall_check(e, now);
    }
}

static int engine_step(engine_t *e)
{
    int progress = take_submissions(e);

    if (e->rank == 0) {
        progress |= coord_receive(e);
    }
    if (!e->terminated) {
        progress |= cycle_step(e);
    }
    if (!e->terminated) {
        periodic(e);
    }
    return progress;
}

/* Sleeps until there is something to do: see the file comment. Something to
 * do is a queued submission or a shutdown request the loop has not seen yet;
 * while this rank has requests in flight, or waits for rank 0 to end a
 * shutdown it asked for, it polls with back-off instead of the idle sleep. */
static void engine_wait(engine_t *e, int shutdown_seen)
{
    int busy = e->contributed || e->resend != NULL;

    uint32_t ns;
    struct timespec ts;

    pthread_mutex_lock(&g.mu);
    if (g.q_head != NULL || (g.shutdown_requested && !shutdown_seen)) {
        pthread_mutex_unlock(&g.mu);
        return;
    }
    if (g.inflight.count == 0 && !shutdown_seen && !busy) {
        pthread_mutex_unlock(&g.mu);
        /* Keep polling through the spin and yield phases first: a training
         * loop submits its next tensor within microseconds, and waking a
         * sleeping thread costs more than that. */
        if (tc__backoff_next(&e->bo) == 0) {
            return;
        }
        pthread_mutex_lock(&g.mu);
        if (g.q_head != NULL || g.shutdown_requested) {
            pthread_mutex_unlock(&g.mu);
            tc__backoff_reset(&e->bo);
            return;
        }
        ts = tc__deadline_after_ns((uint64_t)e->cfg->idle_poll_ms * 1000000ull);
        g.engine_sleeping = 1;
        pthread_cond_timedwait(&g.wake, &g.mu, &ts);
        g.engine_sleeping = 0;
        if (g.q_head != NULL || g.shutdown_requested) {
            tc__backoff_reset(&e->bo); /* woken by work: poll hard again */
        } /* else a periodic look for control messages: stay in the sleep phase */
        pthread_mutex_unlock(&g.mu);
        return;
    }
    pthread_mutex_unlock(&g.mu);
    ns = tc__backoff_next(&e->bo);
    if (ns == 0) {
        return;
    }
    pthread_mutex_lock(&g.mu);
    if (g.q_head == NULL && (!g.shutdown_requested || shutdown_seen)) {
        ts = tc__deadline_after_ns(ns);
        g.engine_sleeping = 1;
        pthread_cond_timedwait(&g.wake, &g.mu, &ts);
        g.engine_sleeping = 0;
    }
    pthread_mutex_unlock(&g.mu);
}

static void engine_loop(engine_t *e)
{
    while (!e->terminated) {
        int progress = engine_step(e);

        ctrl_progress(e);
        if (e->terminated) {
            break;
        }
        if (progress) {
            tc__backoff_reset(&e->bo);
        } else {
            engine_wait(e, e->shutdown_sent || e->shutdown_from >= 0);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Start-up and teardown                                                     */
/* ------------------------------------------------------------------------ */

static const char *thread_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE:
        return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
        return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
        return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
        return "MPI_THREAD_MULTIPLE";
    }
    return "an unknown thread level";
}

static tc_status_t mpi_setup(engine_t *e, char *msg, size_t len)
{
    int inited = 0, finalized = 0, provided = 0, rc, lrank = 0, lsize = 1;
    char why[MPI_MAX_ERROR_STRING];

    MPI_Finalized(&finalized);
    if (finalized) {
        snprintf(msg, len, "MPI has already been finalized in this process");
        return TC_ERR_STATE;
    }
    MPI_Initialized(&inited);
    if (inited) {
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
        /* Only this thread will ever call MPI: FUNNELED is what we need. */
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) {
            snprintf(msg, len, "MPI_Init_thread failed: %s", tc__mpi_strerror(rc, why, sizeof(why)));
            return TC_ERR_TRANSPORT;
        }
        e->own_mpi = 1;
        if (provided < MPI_THREAD_FUNNELED) {
            TC_WARN("engine", "MPI provides only %s; tcoll needs MPI_THREAD_FUNNELED",
                    thread_level_name(provided));
        }
    }
    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &e->ctrl)) != MPI_SUCCESS ||
        (rc = MPI_Comm_dup(MPI_COMM_WORLD, &e->data)) != MPI_SUCCESS ||
        (rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                                  &e->local)) != MPI_SUCCESS) {
        snprintf(msg, len, "cannot create tcoll's communicators: %s",
                 tc__mpi_strerror(rc, why, sizeof(why)));
        return TC_ERR_TRANSPORT;
    }
    MPI_Comm_set_errhandler(e->ctrl, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(e->data, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(e->local, MPI_ERRORS_RETURN);
    MPI_Comm_rank(e->ctrl, &e->rank);
    MPI_Comm_size(e->ctrl, &e->size);
    MPI_Comm_rank(e->local, &lrank);
    MPI_Comm_size(e->local, &lsize);
    tc__transport_mpi_init(&e->tp, &e->tp_mpi, e->data, (uint32_t)e->cfg->spin,
                           (uint32_t)e->cfg->backoff_max_us);
    e->tp_mpi.timeout_ns = (uint64_t)e->cfg->peer_timeout_s * 1000000000ull;
    e->tp_mpi.interrupt = transport_interrupt;
    e->tp_mpi.peer_alive = transport_peer_alive;
    e->tp_mpi.interrupt_arg = e;
    if ((e->cyc_have = calloc((size_t)e->size, 1)) == NULL ||
        (e->cyc = calloc((size_t)e->size, sizeof(*e->cyc))) == NULL ||
        (e->rank == 0 && (tc__coord_create(e->size, &e->coord) != TC_OK ||
                          (e->bye_seen = calloc((size_t)e->size, 1)) == NULL))) {
        snprintf(msg, len, "out of memory creating the message table");
        return TC_ERR_NOMEM;
    }
    atomic_store_explicit(&g_rank, e->rank, memory_order_relaxed);
    atomic_store_explicit(&g_size, e->size, memory_order_relaxed);
    atomic_store_explicit(&g_local_rank, lrank, memory_order_relaxed);
    atomic_store_explicit(&g_local_size, lsize, memory_order_relaxed);
    atomic_store_explicit(&tc__log_rank, e->rank, memory_order_relaxed);
    TC_INFO("engine", "rank %d of %d (local %d of %d), MPI %s by tcoll", e->rank, e->size, lrank,
            lsize, e->own_mpi ? "initialized" : "initialized by the application");
    return TC_OK;
}

static void collect(const char *key, size_t len, void *val, void *arg)
{
    tc_request_t ***pp = arg;
    (void)key;
    (void)len;
    *(*pp)++ = val;
}

/* Fails every request still in flight and makes later submissions fail. */
static void fail_everything(engine_t *e)
{
    tc_request_t **all, **end;
    size_t n, i;

    pthread_mutex_lock(&g.mu);
    g.stopped = 1;
    g.stop_status = e->term_status;
    snprintf(g.stop_msg, sizeof(g.stop_msg), "%s", e->term_msg);
    n = g.inflight.count;
    all = calloc(n > 0 ? n : 1, sizeof(*all));
    end = all;
    if (all != NULL) {
        tc__hmap_foreach(&g.inflight, collect, &end);
    }
    tc__hmap_destroy(&g.inflight);
    g.q_head = g.q_tail = NULL;
    pthread_mutex_unlock(&g.mu);
    if (all == NULL) {
        TC_ERROR("engine", "out of memory: %zu pending requests cannot be completed", n);
        return;
    }
    for (i = 0; i < n; i++) {
        tc__request_complete(all[i], e->term_status, e->term_msg);
    }
    free(all);
}

/* Makes sure no control message is left unmatched (see the file comment):
 * after the cycle that carried TERMINATE, a worker sends BYE and rank 0 reads
 * requests until it has every BYE; both then wait for their sends to
 * complete. Bounded by TCOLL_SHUTDOWN_TIMEOUT_S: past it, MPI is left as it
 * is and the shutdown reports TC_ERR_TIMEOUT. */
static void goodbye(engine_t *e)
{
    tc_backoff_t bo;
    tc_wire_msg_t msg;
    uint64_t deadline = tc__now_ns() + (uint64_t)e->cfg->shutdown_timeout_s * 1000000000ull;
    char ranks[256];
    int src, got, q, remaining = 0;

    tc__backoff_init(&bo, (uint32_t)e->cfg->spin, (uint32_t)e->cfg->backoff_max_us);
    if (e->rank != 0) {
        tc_wire_msg_t bye = {0};
        bye.type = TC_WIRE_BYE;
        ctrl_send(e, &bye, 0, 0, -1, TAG_REQ);
    } else {
        for (q = 1; q < e->size; q++) {
            remaining += !e->bye_seen[q];
        }
    }
    while (!e->broken && (remaining > 0 || ctrl_progress(e) > 0)) {
        int progress = 0;
        while (e->rank == 0 && remaining > 0 &&
               (got = ctrl_recv(e, MPI_ANY_SOURCE, TAG_REQ, &msg, &src)) == 1) {
            progress = 1;
            if (msg.type == TC_WIRE_BYE && !e->bye_seen[src]) {
                e->bye_seen[src] = 1;
                remaining--;
            }
            tc__wire_msg_free(&msg);
        }
        if (poll_abort(e)) {
            break;
        }
        if (tc__now_ns() > deadline) {
            e->bye_seen[0] = 1;
            format_ranks(e->bye_seen, e->size, 0, e->rank, ranks, sizeof(ranks));
            e->broken = 1;
            e->term_status = TC_ERR_TIMEOUT;
            snprintf(e->term_msg, sizeof(e->term_msg),
                     "the shutdown handshake did not finish within %d s "
                     "(TCOLL_SHUTDOWN_TIMEOUT_S)%s%s; MPI was left as it is",
                     e->cfg->shutdown_timeout_s, remaining > 0 ? ": no goodbye from rank " : "",
                     remaining > 0 ? ranks : "");
            TC_ERROR("engine", "%s", e->term_msg);
            break;
        }
        if (progress) {
            tc__backoff_reset(&bo);
        } else {
            tc__backoff_wait(&bo);
        }
    }
}

static void mpi_teardown(engine_t *e)
{
    size_t i;

    if (e->broken) {
        /* MPI may be unusable, and peers may be gone: leave it as it is
         * rather than hang in it. Sends that never completed may still be
         * read by MPI, so their buffers are kept (reachable, not leaked). */
        TC_WARN("engine", "skipping MPI teardown after a failure");
        for (i = 0; i < e->nsends; i++) {
            ctrl_buf_t **keep = realloc(g_abandoned, (g_nabandoned + 1) * sizeof(*keep));
            if (keep != NULL) {
                g_abandoned = keep;
                g_abandoned[g_nabandoned++] = e->sends[i].cb;
            }
        }
        e->nsends = 0;
        return;
    }
    MPI_Comm_free(&e->ctrl);
    MPI_Comm_free(&e->data);
    MPI_Comm_free(&e->local);
    if (e->own_mpi) {
        MPI_Finalize();
    }
}

static void engine_free(engine_t *e)
{
    int q;

    tc__coord_batch_free(&e->batch);
    tc__coord_destroy(e->coord);
    free(e->my_resps);
    free_timeouts(e);
    cstall_free(e->cstall, e->ncstall);
    tc__cache_destroy(&e->cache);
    for (q = 0; e->cyc != NULL && q < e->size; q++) {
        tc__wire_msg_free(&e->cyc[q]);
    }
    free(e->cyc);
    free(e->cyc_have);
    free(e->my_ready);
    free(e->my_stale);
    free(e->my_eager);
    free(e->pend);
    tc__scratch_free(&e->eager_buf);
    tc__scratch_free(&e->scratch);
    tc__scratch_free(&e->fusion);
    free(e->sends);
    free(e->bye_seen);
    free(e);
}

static void *engine_main(void *arg)
{
    engine_t *e = arg;
    char msg[MSG_MAX] = "";
    tc_status_t st;

    /* Back-off sleeps are a few microseconds; Linux's default 50 us timer
     * slack would stretch each of them to 50 us or more. */
    (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
    st = mpi_setup(e, msg, sizeof(msg));
    if (st == TC_OK && e->cfg->timeline[0] != '\0') {
        /* before tc_init returns: the timeline covers every submission, and
         * a tc_timeline_start right after tc_init finds it running */
        char err[512];
        if (tc__tl_start(e->cfg->timeline, e->rank, err, sizeof(err)) != TC_OK) {
            TC_WARN("timeline", "TCOLL_TIMELINE=%s: %s; no timeline", e->cfg->timeline, err);
        }
    }
    pthread_mutex_lock(&g.mu);
    g.init_status = st;
    snprintf(g.init_msg, sizeof(g.init_msg), "%s", msg);
    g.init_done = 1;
    pthread_cond_broadcast(&g.init_cv);
    pthread_mutex_unlock(&g.mu);
    if (st != TC_OK) {
        if (e->own_mpi) {
            MPI_Finalize();
        }
        engine_free(e);
        return NULL;
    }

    e->shutdown_from = -1;
    e->cycle_done_ns = tc__now_ns();
    engine_loop(e);
    fail_everything(e);
    if (e->tell_peers) {
        send_abort(e);
    }
    if (!e->broken) {
        goodbye(e);
    }
    mpi_teardown(e);
    /* What tc_shutdown reports: the goodbye may have run out of time. */
    pthread_mutex_lock(&g.mu);
    g.stop_status = e->term_status;
    snprintf(g.stop_msg, sizeof(g.stop_msg), "%s", e->term_msg);
    pthread_mutex_unlock(&g.mu);
    TC_INFO("engine", "engine thread exits: %s", e->term_msg);
    engine_free(e);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Public API                                                                */
/* ------------------------------------------------------------------------ */

tc_status_t tc_init(void)
{
    engine_t *e;
    tc_status_t st;
    int rc;

    tc__clear_error();
    pthread_mutex_lock(&g.mu);
    if (g.state != ST_NONE) {
        int state = g.state;
        pthread_mutex_unlock(&g.mu);
        if (state == ST_STARTING || state == ST_RUNNING) {
            return tc__set_error(TC_ERR_STATE, "tc_init: tcoll is already initialized");
        }
        return tc__set_error(TC_ERR_STATE, "tc_init: tcoll was shut down (or failed to start) and "
                                           "cannot be initialized again in this process");
    }
    g.state = ST_STARTING;
    g.init_done = 0;
    pthread_mutex_unlock(&g.mu);

    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        pthread_mutex_lock(&g.mu);
        g.state = ST_NONE;
        pthread_mutex_unlock(&g.mu);
        return tc__set_error(TC_ERR_NOMEM, "tc_init: out of memory");
    }
    e->cfg = tc__config();
    tc__backoff_init(&e->bo, (uint32_t)e->cfg->spin, (uint32_t)e->cfg->backoff_max_us);
    tc__cache_init(&e->cache);
    tc__hmap_init(&g.inflight);
    rc = pthread_create(&g.thread, NULL, engine_main, e);
    if (rc != 0) {
        free(e);
        pthread_mutex_lock(&g.mu);
        g.state = ST_NONE;
        pthread_mutex_unlock(&g.mu);
        return tc__set_error(TC_ERR_NOMEM, "tc_init: cannot start the engine thread: %s",
                             strerror(rc));
    }
    pthread_mutex_lock(&g.mu);
    while (!g.init_done) {
        pthread_cond_wait(&g.init_cv, &g.mu);
    }
    st = g.init_status;
    g.state = st == TC_OK ? ST_RUNNING : ST_DEAD;
    pthread_mutex_unlock(&g.mu);
    if (st != TC_OK) {
        pthread_join(g.thread, NULL);
        return tc__set_error(st, "tc_init: %s", g.init_msg);
    }
    return TC_OK;
}

tc_status_t tc_shutdown(void)
{
    struct timespec deadline;
    tc_status_t st;
    int rc, limit_s;

    tc__clear_error();
    pthread_mutex_lock(&g.mu);
    if (g.state != ST_RUNNING) {
        int state = g.state;
        pthread_mutex_unlock(&g.mu);
        return tc__set_error(TC_ERR_STATE, state == ST_SHUT ? "tc_shutdown: already shut down"
                                                            : "tc_shutdown: tcoll is not initialized");
    }
    g.state = ST_SHUT;
    g.shutdown_requested = 1;
    pthread_cond_signal(&g.wake);
    pthread_mutex_unlock(&g.mu);

    /* The engine bounds the handshake and its goodbye by the timeout each;
     * this bounds anything else (MPI_Finalize waiting for a stuck peer). */
    limit_s = 2 * tc__config()->shutdown_timeout_s + 10;
    deadline = tc__deadline_after_ns((uint64_t)limit_s * 1000000000ull);
    rc = pthread_timedjoin_np(g.thread, NULL, &deadline);
    if (rc != 0) {
        pthread_detach(g.thread);
        return tc__set_error(TC_ERR_TIMEOUT,
                             "tc_shutdown: the engine thread did not stop within %d s (stuck in "
                             "MPI?); it was left running and MPI as it is", limit_s);
    }
    tc__output_pool_drain();
    if (tc__tl_active()) {
        (void)tc__tl_stop(); /* after the engine's last event */
    }

    pthread_mutex_lock(&g.mu);
    st = g.stop_status;
    pthread_mutex_unlock(&g.mu);
    if (st == TC_ERR_SHUTDOWN) {
        return TC_OK;
    }
    if (st == TC_ERR_TIMEOUT) {
        return tc__set_error(st, "tc_shutdown: %s", g.stop_msg);
    }
    return tc__set_error(st, "tc_shutdown: tcoll had stopped after an error: %s", g.stop_msg);
}

int tc_rank(void)
{
    return atomic_load_explicit(&g_rank, memory_order_relaxed);
}

int tc_size(void)
{
    return atomic_load_explicit(&g_size, memory_order_relaxed);
}

int tc_local_rank(void)
{
    return atomic_load_explicit(&g_local_rank, memory_order_relaxed);
}

int tc_local_size(void)
{
    return atomic_load_explicit(&g_local_size, memory_order_relaxed);
}

/* Validates a submission and builds its request; nothing is shared yet. */
static tc_status_t make_request(const char *fn, tc_kind_t kind, const char *name,
                                const tc_tensor_t *t, void *recv, tc_op_t op, int root,
                                tc_request_t **req_p, tc_request_t **out_p)
{
    const tc_kind_desc_t *kd = tc__kind_get(kind);
    tc_request_t *req;
    size_t len, es, count = 1;
    int d, has_zero = 0;

    if (req_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "%s: req_p is NULL", fn);
    }
    if (name == NULL) {
        return tc__set_error(TC_ERR_ARG, "%s: name is NULL", fn);
    }
    len = strnlen(name, TC_MAX_NAME_LEN + 1);
    if (len == 0) {
        return tc__set_error(TC_ERR_ARG, "%s: name is empty", fn);
    }
    if (len > TC_MAX_NAME_LEN) {
        return tc__set_error(TC_ERR_ARG, "%s: name is longer than %d bytes", fn, TC_MAX_NAME_LEN);
    }
    if (t == NULL) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': tensor is NULL", fn, name);
    }
    if (!tc__dtype_valid((int)t->dtype)) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': unknown dtype %d", fn, name, (int)t->dtype);
    }
    if (t->ndim < 0 || t->ndim > TC_MAX_DIMS) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': ndim %d is outside 0..%d", fn, name,
                             t->ndim, TC_MAX_DIMS);
    }
    es = tc_dtype_size(t->dtype);
    for (d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0) {
            return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': dimension %d is negative (%lld)", fn,
                                 name, d, (long long)t->shape[d]);
        }
        if (t->shape[d] == 0) {
            has_zero = 1;
        } else if ((uint64_t)t->shape[d] > (SIZE_MAX / es) / count) {
            /* even with a zero dimension elsewhere, reject shapes whose
             * nonzero dims overflow: other ranks' sizes derive from them */
            return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': too many elements", fn, name);
        } else {
            count *= (size_t)t->shape[d];
        }
    }
    if (has_zero) {
        count = 0;
    }
    if (t->data == NULL && count > 0) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': data is NULL", fn, name);
    }
    if (kd->validate != NULL) {
        tc_kind_args_t a = {t, count, recv, op, root};
        char why[256];
        if (kd->validate(&a, why, sizeof(why)) != TC_OK) {
            return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': %s", fn, name, why);
        }
    }
    if (kd->output == TC_OUT_RECV && recv == NULL && count > 0) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': recv is NULL", fn, name);
    }
    req = calloc(1, sizeof(*req));
    if (req == NULL || (req->name = strdup(name)) == NULL) {
        free(req);
        return tc__set_error(TC_ERR_NOMEM, "%s: out of memory", fn);
    }
    req->name_len = (uint32_t)len;
    req->kind = kind;
    req->dtype = t->dtype;
    req->op = kd->params & TC_PARAM_OP ? op : TC_SUM;
    req->root = kd->params & TC_PARAM_ROOT ? root : 0;
    req->ndim = t->ndim;
    memcpy(req->shape, t->shape, (size_t)t->ndim * sizeof(t->shape[0]));
    req->count = count;
    req->send = t->data;
    req->recv = kd->output == TC_OUT_RECV ? recv : kd->output == TC_OUT_IN_PLACE ? t->data : NULL;
    *out_p = req;
    return TC_OK;
}

/* Queues req for the engine thread, or fails it at once. */
static tc_status_t submit(const char *fn, tc_request_t *req, tc_request_t **req_p)
{
    tc_status_t st = TC_OK;

    pthread_mutex_lock(&g.mu);
    if (g.state == ST_NONE || g.state == ST_STARTING) {
        st = tc__set_error(TC_ERR_STATE, "%s: tc_init has not been called", fn);
    } else if (g.state == ST_SHUT) {
        st = tc__set_error(TC_ERR_SHUTDOWN, "%s: tc_shutdown was called on this rank", fn);
    } else if (g.state == ST_DEAD) {
        st = tc__set_error(TC_ERR_STATE, "%s: tc_init failed", fn);
    } else if (g.stopped) {
        st = tc__set_error(g.stop_status, "%s: %s", fn, g.stop_msg);
    } else if ((tc__kind_of(req)->params & TC_PARAM_ROOT) &&
               (req->root < 0 || req->root >= atomic_load_explicit(&g_size, memory_order_relaxed))) {
        st = tc__set_error(TC_ERR_ARG, "%s: tensor '%s': root %d is outside 0..%d", fn, req->name,
                           req->root, atomic_load_explicit(&g_size, memory_order_relaxed) - 1);
    } else if (tc__hmap_get(&g.inflight, req->name, req->name_len) != NULL) {
        st = tc__set_error(TC_ERR_DUPLICATE,
                           "%s: tensor '%s' is already in flight on rank %d; wait for it before "
                           "submitting the name again", fn, req->name,
                           atomic_load_explicit(&g_rank, memory_order_relaxed));
    } else if (tc__hmap_put(&g.inflight, req->name, req->name_len, req) != 0) {
        st = tc__set_error(TC_ERR_NOMEM, "%s: out of memory", fn);
    } else {
        req->submit_ns = tc__now_ns();
        req->next = NULL;
        if (g.q_tail != NULL) {
            g.q_tail->next = req;
        } else {
            g.q_head = req;
        }
        g.q_tail = req;
        if (g.engine_sleeping) {
            pthread_cond_signal(&g.wake);
        }
    }
    pthread_mutex_unlock(&g.mu);
    if (st != TC_OK) {
        tc__request_destroy(req);
        return st;
    }
    *req_p = req;
    return TC_OK;
}

/* The submission path of every collective: checks, then queues. */
static tc_status_t submit_kind(const char *fn, tc_kind_t kind, const char *name,
                               const tc_tensor_t *t, void *recv, tc_op_t op, int root,
                               tc_request_t **req_p)
{
    tc_request_t *req = NULL;
    tc_status_t st;

    tc__clear_error();
    st = make_request(fn, kind, name, t, recv, op, root, req_p, &req);
    return st != TC_OK ? st : submit(fn, req, req_p);
}

tc_status_t tc_allreduce(const char *name, const tc_tensor_t *send, void *recv, tc_op_t op,
                         tc_request_t **req_p)
{
    return submit_kind("tc_allreduce", TC_KIND_ALLREDUCE, name, send, recv, op, 0, req_p);
}

tc_status_t tc_allgather(const char *name, const tc_tensor_t *send, tc_request_t **req_p)
{
    return submit_kind("tc_allgather", TC_KIND_ALLGATHER, name, send, NULL, TC_SUM, 0, req_p);
}

tc_status_t tc_broadcast(const char *name, tc_tensor_t *buf, int root, tc_request_t **req_p)
{
    return submit_kind("tc_broadcast", TC_KIND_BROADCAST, name, buf, NULL, TC_SUM, root, req_p);
}
