/*
 * fast.c - small allreduces inside a node without the engine thread: the
 * calling thread puts its input in the node's segment, and the waiting
 * thread (or the engine thread, if no one waits) reduces every rank's input
 * itself. No negotiation message, no handoff between threads.
 *
 * Which calls: allreduces of the global process set, when every rank of the
 * job is on this node and the segment has boxes (TCOLL_SHM_FAST_BYTES,
 * TCOLL_SHM_FAST_NAMES), of a name that has run once through the engine and
 * was cached then, at most TCOLL_SHM_FAST_BYTES, not in a group; and up to
 * TCOLL_SHM_FAST_LARGE_BYTES in the segment's large boxes, for the first
 * TCOLL_SHM_FAST_LARGE_NAMES such names (a name's id picks its box when it
 * becomes fast; the id's verdict word is the same either way).
 *
 * Why every rank takes the same path for the same call: a name becomes
 * fast (gets an id, k) when the engine runs its first cached RUN, which
 * every rank runs at the same point of the agreed order; the flip happens
 * before that request completes, and a name is in flight at most once per
 * rank, so every rank's next call of the name comes after its own flip.
 * Ids are handed out in that order, so every rank gives the name the same
 * k. A name leaves the path (dead) only at a use whose verdict says so,
 * which every rank sees: from its next call on it goes through the engine
 * again on every rank.
 *
 * One use u of name k:
 *   1. submitting rank r (under the engine mutex) counts u = ++uses[k];
 *      then writes its description and prescaled input into its box
 *      (k, r, u mod 2) and stores box.seq = u (release);
 *   2. it raises the verdict word of k to (u, PENDING) if it is below (CAS);
 *   3. a thread that finds every rank's box.seq == u (acquire) compares the
 *      descriptions and CASes the verdict from (u, PENDING) to (u, OK),
 *      (u, MISMATCH), or (u, ENGINE) when they agree but the tensor no longer
 *      fits in a box (every rank then hands its request to the engine);
 *      rank 0's engine may instead CAS it to (u, ABORTED) after
 *      TCOLL_STALL_ABORT_S: exactly one verdict wins;
 *      (a thread that waits polls for TCOLL_SHM_FAST_SPIN_US before it
 *      backs off, where every local rank has a CPU of its own);
 *   4. each rank claims its own request (removes it from the in-flight
 *      table under the mutex: the engine's failure path takes requests the
 *      same way, so a request is completed once), then on OK reduces the n
 *      boxes in rank order 0, 1, ..., n-1 into its output (every rank the
 *      same inputs in the same order: the same bits), divides (avg) and
 *      postscales.
 * A box of parity b is written again (use u + 2) only after every rank has
 * finished reading use u: a rank posts u + 2 after completing u + 1, which
 * needs every rank's post of u + 1, which each made after completing u.
 *
 * While a rank's tc_join is pending its engine posts the op's identity for
 * uses the others have started (the description copied from theirs), as
 * the engine does for joined ranks, but only once rank 0's negotiation has
 * taken that join (rank 0's engine stores the count of each rank's joins it
 * took in the rank's control block, tc__fast_joins_taken): a use completed
 * with a joined rank's identity lets its other ranks go on and join in
 * turn, and those later joins must reach rank 0 after this one, which
 * decides the join's value, the rank that joined last, by the order it
 * takes the joins in. Rank 0's engine warns about (and with
 * TCOLL_STALL_ABORT_S fails) a use some ranks posted and others did not;
 * every engine with such calls in flight checks every millisecond or so
 * that the other local processes still exist, and stops with "lost rank"
 * if one is gone. These calls are matched by name, not by order: two of
 * them may complete in different orders on different ranks, which changes
 * nothing (each result depends only on its own inputs); they appear in no
 * timeline. Never touches the segment after tc__fast_stop returned.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/algo.h"
#include "exec/exec.h"
#include "exec/fast_boxes.h"
#include "kind/kind.h"
#include "neg/neg.h"
#include "reduce/reduce.h"
#include "util/backoff.h"
#include "util/log.h"
#include "util/timeline.h"
#include "util/ranks.h"

/* A use's verdict: PENDING until settled; OK (reduce), MISMATCH (the
 * ranks' calls differ), ABORTED (stalled: rank 0's TCOLL_STALL_ABORT_S), or
 * ENGINE (the calls agree but do not fit in a box: every rank hands its
 * request to the engine, which negotiates it as usual). */
enum { V_PENDING, V_OK, V_MISMATCH, V_ABORTED, V_ENGINE };
#define V_SEQ(v) ((v) >> 3)
#define V_STATE(v) ((int)((v)&7u))
#define V_MAKE(seq, st) (((seq) << 3) | (uint64_t)(st))

/* State shared by application threads and the engine thread. The tables
 * are written under tc__engine_shared.mu; seg, n and cap are set before
 * the engine is RUNNING and cleared after it stopped (users drained). */
static struct {
    const tc_shm_seg_t *seg; /* NULL: the path is off */
    int n, cap, nids;
    int nsmall, nlarge;     /* small and large boxes handed out */
    int *box;               /* [cap]: id -> its box (tc__shm_box) */
    tc_hmap_t names;        /* name (global set) -> id + 1, as a pointer */
    char **id_names;        /* [cap] */
    uint64_t *uses;         /* [cap]: this rank's last posted use */
    tc_request_t **pending; /* [cap]: this rank's request in flight, or NULL */
    unsigned char *dead;    /* [cap] */
    size_t npending;
    /* rank 0's stall clocks: the use each id waits for and since when */
    uint64_t *stall_use, *stall_t0, *stall_warned;
    _Atomic int users;  /* application threads inside the segment now */
    _Atomic int closed; /* set by tc__fast_stop: no one enters again */
    uint64_t next_poll_ns, next_pid_ns;
    uint64_t spin_ns; /* tc__fast_wait's spin before backing off; 0: none */
} F;

/* ---- entering the segment ------------------------------------------------- */

/* Any thread about to read or write boxes: 0 when the path has closed. */
static int enter(void)
{
    /* seq_cst on both sides: tc__fast_stop stores closed then reads users,
     * a user adds itself then reads closed, so one of them sees the other */
    atomic_fetch_add(&F.users, 1);
    if (atomic_load(&F.closed)) {
        atomic_fetch_sub(&F.users, 1);
        return 0;
    }
    return 1;
}

static void leave(void)
{
    atomic_fetch_sub(&F.users, 1);
}

/* Local rank r's box of id k, parity b. */
static tc_shm_box_t *box_of(const tc_shm_seg_t *s, int k, int r, int b)
{
    return tc__shm_box(s, F.box[k], r, b);
}

/* ---- start, stop, flip ------------------------------------------------------ */

int tc__fast_start(tc_exec_t *e)
{
    const tc_shm_seg_t *s = &e->shm.seg;
    size_t cap;
    long ncpu;

    if (s->base == NULL || s->fast_names + s->large_names == 0 || !e->shm.single_node ||
        e->cfg->allreduce_algo == TC_ALGO_RING) {
        return 0;
    }
    cap = (size_t)s->fast_names + (size_t)s->large_names;
    F.id_names = calloc(cap, sizeof(*F.id_names));
    F.uses = calloc(cap, sizeof(*F.uses));
    F.pending = calloc(cap, sizeof(*F.pending));
    F.dead = calloc(cap, 1);
    F.box = calloc(cap, sizeof(*F.box));
    F.stall_use = calloc(cap * 3, sizeof(uint64_t));
    if (F.id_names == NULL || F.uses == NULL || F.pending == NULL || F.dead == NULL ||
        F.box == NULL || F.stall_use == NULL) {
        free(F.id_names);
        free(F.uses);
        free(F.pending);
        free(F.dead);
        free(F.box);
        free(F.stall_use);
        memset(&F, 0, sizeof(F));
        return -1; /* every rank must agree: the caller turns the path off on all */
    }
    F.stall_t0 = F.stall_use + cap;
    F.stall_warned = F.stall_t0 + cap;
    tc__hmap_init(&F.names);
    F.n = s->n;
    F.cap = (int)cap;
    F.nids = 0;
    F.nsmall = 0;
    F.nlarge = 0;
    F.spin_ns = 0;
    ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu >= (long)s->n) {
        F.spin_ns = (uint64_t)e->cfg->shm_fast_spin_us * 1000u;
    }
    atomic_store(&F.closed, 0);
    F.seg = s;
    return 0;
}

void tc__fast_stop(tc_exec_t *e)
{
    eng_shared_t *sh = &tc__engine_shared;
    int i;

    (void)e;
    if (F.seg == NULL) {
        return;
    }
    atomic_store(&F.closed, 1);
    while (atomic_load(&F.users) > 0) {
        sched_yield(); /* a user is inside for a few microseconds at most */
    }
    pthread_mutex_lock(&sh->mu); /* no claim or submission sees the tables go */
    F.seg = NULL;
    pthread_mutex_unlock(&sh->mu);
    for (i = 0; i < F.cap; i++) {
        free(F.id_names[i]);
    }
    tc__hmap_destroy(&F.names);
    free(F.id_names);
    free(F.uses);
    free(F.pending);
    free(F.dead);
    free(F.box);
    free(F.stall_use);
    memset(&F, 0, sizeof(F)); /* users and closed are 0 again for a later tc_init */
}

void tc__fast_flip(tc_exec_t *e, const tc_request_t *req, const tc_wire_response_t *r)
{
    eng_shared_t *sh = &tc__engine_shared;
    size_t bytes;
    char *name;
    int box;

    (void)e;
    if (F.seg == NULL || r->cache_ref == 0 || req->synthetic || req->kind != TC_KIND_ALLREDUCE ||
        req->pset != 0 || F.nids >= F.cap) {
        return;
    }
    /* a small box while there are any, else a large one: the same choice
     * on every rank (the count is the agreed one) */
    bytes = req->count * tc_dtype_size(req->dtype);
    if (bytes <= F.seg->fast_bytes && F.nsmall < F.seg->fast_names) {
        box = F.nsmall;
    } else if (bytes <= F.seg->large_bytes && F.nlarge < F.seg->large_names) {
        box = F.seg->fast_names + F.nlarge;
    } else {
        return;
    }
    pthread_mutex_lock(&sh->mu);
    if (tc__hmap_get(&F.names, req->name, req->name_len) == NULL &&
        (name = strdup(req->name)) != NULL &&
        tc__hmap_put(&F.names, req->name, req->name_len, (void *)(uintptr_t)(F.nids + 1)) == 0) {
        TC_DEBUG("fast", "'%s' takes the small-message path as id %d (box %d)", name, F.nids, box);
        F.box[F.nids] = box;
        F.nsmall += box < F.seg->fast_names;
        F.nlarge += box >= F.seg->fast_names;
        F.id_names[F.nids++] = name; /* the same id on every rank (file comment) */
    }
    pthread_mutex_unlock(&sh->mu);
}

/* ---- submission --------------------------------------------------------------- */

int tc__fast_take_locked(tc_request_t *req)
{
    uint64_t verdict;
    uintptr_t v;
    int k;

    if (F.seg == NULL || req->kind != TC_KIND_ALLREDUCE || req->pset != 0 ||
        req->group_key != NULL || req->cuda.on) {
        return 0;
    }
    v = (uintptr_t)tc__hmap_get(&F.names, req->name, req->name_len);
    if (v == 0 || F.dead[(k = (int)v - 1)]) {
        return 0;
    }
    verdict = atomic_load_explicit(tc__shm_verdict(F.seg, k), memory_order_acquire);
    if (V_SEQ(verdict) == F.uses[k] + 1 && V_STATE(verdict) == V_ABORTED) {
        /* the others gave this use up before this rank came: as with the
         * engine's stalls, this call is a new one, through the engine, where
         * the others' next call of the name goes too */
        F.uses[k]++;
        F.dead[k] = 1;
        return 0;
    }
    req->fast = 1;
    req->fast_id = k;
    req->fast_use = ++F.uses[k];
    req->fast_epoch = tc__pset_get(0)->njoins;
    F.pending[k] = req;
    F.npending++;
    return 1;
}

/* Writes this rank's box for use u of id k: the description of req (and,
 * when it fits, its prescaled input, or with identity the op's identity),
 * then seq with release. */
static void post(const tc_shm_seg_t *s, int k, uint64_t u, const tc_request_t *req, int identity)
{
    tc_shm_box_t *b = box_of(s, k, s->me, (int)(u & 1));
    size_t bytes = req->count * tc_dtype_size(req->dtype);
    char *data = (char *)b + TC_SHM_BOX_DATA;

    b->dtype = (int32_t)req->dtype;
    b->op = (int32_t)req->op;
    b->count = req->count;
    b->ndim = req->ndim;
    memcpy(b->shape, req->shape, sizeof(b->shape));
    b->prescale = req->prescale;
    b->postscale = req->postscale;
    b->epoch = req->fast_epoch;
    b->fits = bytes <= tc__shm_box_cap(s, F.box[k]);
    if (b->fits && identity) {
        tc__reduce_identity(req->dtype, req->op, data, req->count);
    } else if (b->fits && req->prescale != 1.0) {
        tc__scale(req->dtype, data, req->send, req->count, req->prescale);
    } else if (b->fits && bytes > 0) {
        memcpy(data, req->send, bytes);
    }
    /* release: the description and data above before any reader that loads
     * seq == u with acquire (try_verdict, finish) */
    atomic_store_explicit(&b->seq, u, memory_order_release);
}

/* Raises id k's verdict to (u, PENDING) if it is below u. */
static void open_use(const tc_shm_seg_t *s, int k, uint64_t u)
{
    _Atomic uint64_t *vp = tc__shm_verdict(s, k);
    uint64_t v = atomic_load_explicit(vp, memory_order_acquire);

    while (V_SEQ(v) < u &&
           !atomic_compare_exchange_weak_explicit(vp, &v, V_MAKE(u, V_PENDING),
                                                  memory_order_acq_rel, memory_order_acquire)) {
    }
}

void tc__fast_post(tc_request_t *req)
{
    if (!enter()) {
        return; /* stopping: the engine fails the request */
    }
    post(F.seg, req->fast_id, req->fast_use, req, 0);
    open_use(F.seg, req->fast_id, req->fast_use);
    leave();
}

/* ---- verdicts and completion ------------------------------------------------ */

/* The verdict word of use u of id k once every rank has posted it (settling
 * it if no one has), or (u, PENDING) while some rank has not. */
static uint64_t try_verdict(const tc_shm_seg_t *s, int k, uint64_t u)
{
    _Atomic uint64_t *vp = tc__shm_verdict(s, k);
    uint64_t v = atomic_load_explicit(vp, memory_order_acquire);
    const tc_shm_box_t *first = box_of(s, k, 0, (int)(u & 1));
    int r, st = V_OK;

    if (V_SEQ(v) != u || V_STATE(v) != V_PENDING) {
        return v; /* decided (or later: see decided()) */
    }
    for (r = 0; r < s->n; r++) {
        const tc_shm_box_t *b = box_of(s, k, r, (int)(u & 1));
        /* acquire: pairs with post()'s release; the box is then readable */
        if (atomic_load_explicit(&b->seq, memory_order_acquire) != u) {
            return v;
        }
        if (!tc__fast_same_call(first, b)) {
            st = V_MISMATCH;
        }
    }
    if (st == V_OK && !first->fits) {
        st = V_ENGINE; /* every rank grew the tensor past a box: legal, but not here */
    }
    if (atomic_compare_exchange_strong_explicit(vp, &v, V_MAKE(u, st), memory_order_acq_rel,
                                                memory_order_acquire)) {
        return V_MAKE(u, st);
    }
    return v; /* another thread settled it (the same, or rank 0's abort) */
}

/* The decided state of use u given verdict word v: V_OK, V_MISMATCH or
 * V_ABORTED, or -1 while it is pending. A verdict past u means u went
 * well: a rank opens use u + 1 only after its use u succeeded (a failed use
 * kills the name on every rank, so no use follows it). */
static int decided(uint64_t v, uint64_t u)
{
    if (V_SEQ(v) > u) {
        return V_OK;
    }
    return V_SEQ(v) == u && V_STATE(v) != V_PENDING ? V_STATE(v) : -1;
}

/* The text of a failed use: which ranks gave what, or who was missing. */
static void failure_text(const tc_shm_seg_t *s, int k, uint64_t u, int state,
                         const tc_request_t *req, char *msg, size_t len)
{
    if (state == V_ABORTED) { /* rank 0 wrote why before the verdict (acquired) */
        size_t nlen;
        const char *note = tc__shm_verdict_note(s, k, &nlen);
        snprintf(msg, len, "%.*s", (int)strnlen(note, nlen), note);
        return;
    }
    tc__fast_mismatch_text(s, F.box[k], (int)(u & 1), req->name, msg, len);
}

/* Takes req for this thread to complete if it is still this rank's request
 * in flight for its id: the same removal from the in-flight table that the
 * engine's failure path makes, so exactly one of them completes it. On a
 * failed verdict the id is dead from now on; on V_ENGINE req is queued for
 * the engine instead (still in flight; returns 0). Engine mutex held. */
static int claim_locked(tc_request_t *req, int state)
{
    eng_shared_t *sh = &tc__engine_shared;
    char key[TC_WIRE_KEY_MAX];
    int k = req->fast_id;
    size_t klen = tc__wire_key(key, req->name, req->name_len, req->pset);

    if (F.seg == NULL || F.pending[k] != req || tc__hmap_get(&sh->inflight, key, klen) != req) {
        return 0;
    }
    F.pending[k] = NULL;
    F.npending--;
    F.dead[k] |= (unsigned char)(state != V_OK);
    if (state == V_ENGINE) {
        /* still in flight: queued for the engine like any submission */
        req->fast = 0;
        tc__queue_append_locked(req);
        if (sh->engine_sleeping) {
            pthread_cond_signal(&sh->wake);
        }
        return 0; /* the engine completes it */
    }
    tc__hmap_remove(&sh->inflight, key, klen);
    if (sh->engine_sleeping && atomic_load_explicit(&sh->deferred, memory_order_relaxed)) {
        pthread_cond_signal(&sh->wake); /* a barrier may wait for this request */
    }
    return 1;
}

static int claim(tc_request_t *req, int state)
{
    eng_shared_t *sh = &tc__engine_shared;
    int mine;

    pthread_mutex_lock(&sh->mu);
    mine = claim_locked(req, state);
    pthread_mutex_unlock(&sh->mu);
    return mine;
}

/* Completes req, claimed by this thread, by its use's decided state:
 * reduces the ranks' inputs in rank order on V_OK. */
static void complete_claimed(tc_request_t *req, int state)
{
    const tc_shm_seg_t *s = F.seg;
    const int k = req->fast_id, b = (int)(req->fast_use & 1);
    const uint64_t t0 = tc__tl_active() ? tc__now_ns() : 0;
    char msg[ENG_MSG_MAX];
    int r;

    if (state != V_OK) {
        tc_status_t st = state == V_ABORTED ? TC_ERR_TIMEOUT : TC_ERR_MISMATCH;
        failure_text(s, k, req->fast_use, state, req, msg, sizeof(msg));
        if (t0 != 0) {
            tc__exec_tl_fast(req, t0, t0, st);
        }
        tc__request_complete(req, st, msg);
        return;
    }
    if (req->count > 0) {
        memcpy(req->recv, (char *)box_of(s, k, 0, b) + TC_SHM_BOX_DATA,
               req->count * tc_dtype_size(req->dtype));
        for (r = 1; r < s->n; r++) {
            tc__reduce(req->dtype, req->op, req->recv, (char *)box_of(s, k, r, b) + TC_SHM_BOX_DATA,
                       req->count);
        }
        if (req->op == TC_AVG) {
            tc__reduce_avg_finish(req->dtype, req->recv, req->count, s->n);
        }
        if (req->postscale != 1.0) {
            tc__scale(req->dtype, req->recv, req->recv, req->count, req->postscale);
        }
    }
    tc__request_set_output(req, req->recv, -1);
    req->label = TC_ALGO_FAST_NAME;
    if (t0 != 0) {
        tc__exec_tl_fast(req, t0, tc__now_ns(), TC_OK);
    }
    tc__request_complete(req, TC_OK, NULL);
}

int tc__fast_progress(tc_request_t *req)
{
    uint64_t v;
    int st;

    if (atomic_load_explicit(&req->done, memory_order_acquire)) {
        return 1;
    }
    if (!enter()) {
        return 0; /* stopping: the engine fails it */
    }
    v = try_verdict(F.seg, req->fast_id, req->fast_use);
    st = decided(v, req->fast_use);
    if (st >= 0 && claim(req, st)) {
        complete_claimed(req, st);
    }
    leave();
    return atomic_load_explicit(&req->done, memory_order_acquire);
}

void tc__fast_wait(tc_request_t *req)
{
    tc_backoff_t bo;

    /* The other ranks post within microseconds when each has a CPU: poll
     * for that long before the backoff's first yield, a system call that
     * alone costs about as much as the whole call here (4 B at np=2 under
     * KVM: 2.2 us yielding at once, 1.3 us with this spin). */
    if (F.spin_ns != 0) {
        uint64_t end = tc__now_ns() + F.spin_ns;
        unsigned polls = 0;
        while (!tc__fast_progress(req)) {
            if ((++polls & 15u) == 0 && tc__now_ns() > end) {
                break;
            }
        }
    }
    tc__backoff_init(&bo, (uint32_t)tc__config()->spin, (uint32_t)tc__config()->backoff_max_us);
    while (!tc__fast_progress(req)) {
        tc__backoff_wait(&bo); /* spin, yield, then sleeps up to a park: ~0 CPU when long */
    }
}

/* ---- the engine's part ------------------------------------------------------ */

/* Completes this rank's requests whose use is decided (no one may be
 * waiting for them: a barrier behind them must not wait forever). */
static void complete_decided(void)
{
    eng_shared_t *sh = &tc__engine_shared;
    tc_request_t *mine[64];
    int states[64];
    int k, n = 0, st;

    pthread_mutex_lock(&sh->mu);
    for (k = 0; k < F.nids && n < 64; k++) {
        tc_request_t *req = F.pending[k];
        uint64_t v;
        if (req == NULL) {
            continue;
        }
        v = try_verdict(F.seg, k, req->fast_use);
        st = decided(v, req->fast_use);
        if (st >= 0 && claim_locked(req, st)) {
            states[n] = st;
            mine[n++] = req;
        }
    }
    pthread_mutex_unlock(&sh->mu);
    for (k = 0; k < n; k++) {
        complete_claimed(mine[k], states[k]);
    }
}

/* While this rank's tc_join is pending: the op's identity for every use the
 * others started before they joined too (posted in the same join epoch:
 * a use posted after the join completed on its poster is this rank's to
 * make, once its own join completes), described as its poster did. */
static void join_contribute(void)
{
    eng_shared_t *sh = &tc__engine_shared;
    const tc_shm_seg_t *s = F.seg;
    uint64_t epoch;
    int k, r;

    pthread_mutex_lock(&sh->mu);
    if (sh->npsets == 0 || sh->psets[0] == NULL || !sh->psets[0]->join_pending) {
        pthread_mutex_unlock(&sh->mu);
        return;
    }
    epoch = sh->psets[0]->njoins - 1; /* before this rank's pending join */
    /* acquire: pairs with rank 0's release in tc__fast_joins_taken; not
     * before rank 0 has taken this join (file comment) */
    if (atomic_load_explicit(&tc__shm_ctl(s, s->me)->joins_taken, memory_order_acquire) <
        sh->psets[0]->njoins) {
        pthread_mutex_unlock(&sh->mu);
        return;
    }
    for (k = 0; k < F.nids; k++) {
        uint64_t v = atomic_load_explicit(tc__shm_verdict(s, k), memory_order_acquire);
        uint64_t u = F.uses[k] + 1;
        tc_request_t like;
        if (F.dead[k] || V_SEQ(v) != u || V_STATE(v) != V_PENDING) {
            continue;
        }
        for (r = 0; r < s->n; r++) {
            const tc_shm_box_t *b = box_of(s, k, r, (int)(u & 1));
            if (r != s->me && atomic_load_explicit(&b->seq, memory_order_acquire) == u &&
                b->epoch == epoch) {
                memset(&like, 0, sizeof(like));
                like.dtype = (tc_dtype_t)b->dtype;
                like.op = (tc_op_t)b->op;
                like.count = (size_t)b->count;
                like.ndim = b->ndim;
                memcpy(like.shape, b->shape, sizeof(like.shape));
                like.prescale = b->prescale;
                like.postscale = b->postscale;
                like.fast_epoch = epoch;
                post(s, k, u, &like, 1);
                F.uses[k] = u;
                break;
            }
        }
    }
    pthread_mutex_unlock(&sh->mu);
}

void tc__fast_joins_taken(tc_exec_t *e, int rank, uint64_t joins)
{
    const tc_shm_seg_t *s = F.seg;

    (void)e;
    if (s == NULL || rank < 0 || rank >= s->n) {
        return; /* no small-message path: every rank is on this node when there is one */
    }
    /* release: rank 0's table took those joins before (join_contribute) */
    atomic_store_explicit(&tc__shm_ctl(s, rank)->joins_taken, joins, memory_order_release);
}

/* The ranks whose box for use u of id k is (posted) or is not, as "0,2-3";
 * returns how many. */
static int rank_list(const tc_shm_seg_t *s, int k, uint64_t u, int posted, char *out, size_t len)
{
    uint8_t has[4096];
    int r, n = s->n < 4096 ? s->n : 4096;

    for (r = 0; r < n; r++) {
        has[r] =
            atomic_load_explicit(&box_of(s, k, r, (int)(u & 1))->seq, memory_order_acquire) == u;
    }
    return tc__format_ranks(has, n, posted, out, len);
}

/* Rank 0: uses some ranks posted and others not, warned about every
 * TCOLL_STALL_WARN_S and failed after TCOLL_STALL_ABORT_S (the verdict
 * CAS, after the explanation is in the verdict's note: if every rank posted
 * meanwhile, the use runs instead), worded as the engine's stall inspector
 * words them (neg_watch.c). */
static void watch_stalls(tc_exec_t *e, uint64_t now)
{
    const tc_shm_seg_t *s = F.seg;
    const uint64_t warn = (uint64_t)e->cfg->stall_warn_s * 1000000000ull;
    const uint64_t abort_ns = (uint64_t)e->cfg->stall_abort_s * 1000000000ull;
    char have[256], miss[256];
    int k, nhave, nmiss;

    for (k = 0; k < F.nids; k++) {
        uint64_t v = atomic_load_explicit(tc__shm_verdict(s, k), memory_order_acquire), u, t;
        if (F.dead[k] || V_STATE(v) != V_PENDING || V_SEQ(v) == 0) {
            continue;
        }
        u = V_SEQ(v);
        v = try_verdict(s, k, u);
        if (V_STATE(v) != V_PENDING) {
            continue;
        }
        if (F.stall_use[k] != u) {
            F.stall_use[k] = u;
            F.stall_t0[k] = now;
            F.stall_warned[k] = 0;
            continue;
        }
        t = now - F.stall_t0[k];
        if ((abort_ns == 0 || t < abort_ns) && (warn == 0 || t < warn * (F.stall_warned[k] + 1))) {
            continue; /* nothing due yet: no need to list the ranks */
        }
        nhave = rank_list(s, k, u, 1, have, sizeof(have));
        nmiss = rank_list(s, k, u, 0, miss, sizeof(miss));
        if (abort_ns > 0 && t >= abort_ns) {
            uint64_t want = V_MAKE(u, V_PENDING);
            size_t len;
            char *note = tc__shm_verdict_note(s, k, &len);
            if (snprintf(note, len,
                         "tensor '%s' (allreduce) stalled for %llu s: submitted by "
                         "rank%s %s, not by rank%s %s (TCOLL_STALL_ABORT_S=%llu)",
                         F.id_names[k], (unsigned long long)(t / 1000000000ull),
                         nhave > 1 ? "s" : "", have, nmiss > 1 ? "s" : "", miss,
                         (unsigned long long)(abort_ns / 1000000000ull)) < 0) {
                note[0] = '\0'; /* cut to the note's size otherwise */
            }
            /* release (acq_rel): the note before the verdict that points at it */
            if (atomic_compare_exchange_strong_explicit(tc__shm_verdict(s, k), &want,
                                                        V_MAKE(u, V_ABORTED), memory_order_acq_rel,
                                                        memory_order_acquire)) {
                TC_WARN("stall", "%s: failing it with TC_ERR_TIMEOUT", note);
            }
            continue;
        }
        if (warn > 0 && t >= warn * (F.stall_warned[k] + 1)) {
            if (F.stall_warned[k]++ == 0) {
                TC_WARN("stall",
                        "tensors submitted by some ranks but not all for %llu s or "
                        "more (TCOLL_STALL_WARN_S); repeated every %llu s while it lasts:",
                        (unsigned long long)(warn / 1000000000ull),
                        (unsigned long long)(warn / 1000000000ull));
            }
            TC_WARN("stall",
                    "  '%s' (allreduce): waiting %llu s; submitted by rank%s %s; "
                    "missing rank%s %s",
                    F.id_names[k], (unsigned long long)(t / 1000000000ull), nhave > 1 ? "s" : "",
                    have, nmiss > 1 ? "s" : "", miss);
        }
    }
}

tc_status_t tc__fast_poll(tc_exec_t *e, char *msg, size_t len)
{
    const tc_shm_seg_t *s = F.seg;
    uint64_t now;
    int r;

    if (s == NULL) {
        return TC_OK;
    }
    now = tc__now_ns();
    if (now < F.next_poll_ns) {
        return TC_OK;
    }
    F.next_poll_ns = now + 200000u;
    complete_decided();
    join_contribute();
    if (e->rank == 0) {
        watch_stalls(e, now);
    }
    if (F.npending > 0 && now >= F.next_pid_ns) { /* racy read: a hint is enough */
        F.next_pid_ns = now + 10000000u;
        for (r = 0; r < s->n; r++) {
            if (tc__shm_peer_dead(s, r)) {
                /* A rank that failed first (another rank lost, say) sends
                 * its abort and exits: give that abort 200 ms to arrive,
                 * as the shared-memory collectives do (tc__shm_abort_first),
                 * so this rank reports the cause, not the rank that left. */
                uint64_t end = now + 200000000u;
                tc_backoff_t bo;

                tc__backoff_init(&bo, 0, 1000);
                do {
                    if (e->hooks.interrupt != NULL && e->hooks.interrupt(e->hooks.arg, msg, len)) {
                        return TC_OK; /* it failed first and said why: that stops this rank */
                    }
                    tc__backoff_wait(&bo);
                } while (tc__now_ns() < end);
                snprintf(msg, len,
                         "lost rank %d: its process (pid %d) exited while this rank "
                         "waited for its small allreduces",
                         r, (int)tc__shm_ctl(s, r)->pid);
                return TC_ERR_TRANSPORT;
            }
        }
    }
    return TC_OK;
}

size_t tc__fast_inflight_locked(void)
{
    return F.npending;
}
