/*
 * test_timeline.c - the engine's timelines under MPI: what TCOLL_TIMELINE
 * and tc_timeline_start/stop write must be valid JSON, complete, and show
 * every tensor this rank ran.
 *
 * Arguments: a directory and a mode. The program runs in
 * <dir>/<prefix>np<size>/ (one per mode and rank count, so that the CTests
 * may run in parallel) under the TCOLL_TIMELINE the CTest sets (checked):
 *
 *   mode     prefix   TCOLL_TIMELINE  period 2's path
 *   rank     -        tl.%r.json      api.%r.json   (the default)
 *   job      job-     tl.json         api.%r.json
 *   job-api  jobapi-  tl.%r.json      api.json
 *
 * A path without %r (with 2+ ranks) is one job-wide file: after the period
 * its file must not exist yet, a second start with such a path must fail
 * (TC_ERR_STATE, one per run), and after tc_shutdown rank 0 reads it and
 * checks every rank's events as below, each rank in its own process row
 * (pid, "rank N"), with otherData listing every rank as complete; no rank
 * may have left a file of its own for it (tl.rankN.json: the fallback).
 * With one rank such a path is simply that rank's file.
 *
 * Before tc_init, tc_timeline_start must fail with TC_ERR_STATE (no rank
 * yet; TC_ERR_ARG for a NULL path) and tc_timeline_stop with TC_ERR_STATE.
 * Right after tc_init, tc_timeline_start must fail with TC_ERR_STATE: the
 * TCOLL_TIMELINE timeline already runs (documented: it starts at tc_init).
 *
 * Period 1, the TCOLL_TIMELINE timeline started by tc_init: round 0 submits
 * two groups of small allreduces that are new (rank 0 schedules them
 * together: fused), a 1 MiB allreduce (a plain ring), an allgather, a
 * broadcast and, with 2+ ranks, a name whose shape differs on the last rank
 * (TC_ERR_MISMATCH everywhere); rounds 1..3 submit the same names again
 * (cached: the small ones ride eagerly in the cycle messages). Every result
 * is checked. Then tc_timeline_start must fail with TC_ERR_STATE (one runs),
 * tc_timeline_stop stops it (the file is final), a second stop is
 * TC_ERR_STATE, and tc_timeline_start must fail for NULL, "" (TC_ERR_ARG)
 * and a path in a directory that does not exist (TC_ERR_ARG, the message
 * naming the path with %r replaced).
 *
 * Period 2, tc_timeline_start("<dir>/np<size>/api.%r.json"): a second start
 * is TC_ERR_STATE; two allreduces run twice; tc_timeline_stop.
 *
 * After tc_shutdown each rank reads its own files (rank 0 also the job-wide
 * ones) through the strict parser of json_check.h (and checks that the
 * parser rejects each file cut short) and checks, per rank:
 *  - the trace structure (pid == rank on every event, ts and dur >= 0: all
 *    this rank's work in a period was submitted after the timeline started,
 *    otherData with the rank, the version, no drops and the event count);
 *  - every event's row is named (thread_name), rows and names are unique;
 *  - each name submitted in the period has a row holding, per submission,
 *    NEGOTIATE, optionally QUEUE, then its collective, in that order and
 *    back to back in time, with exactly the expected args (kind, algo known
 *    for the kind: its MPI algorithm, or shm or cma inside the node; dtype,
 *    op or root, bytes, fused count for a fused one, cycle, status
 *    "success" or the mismatch's status text), besides marks "rank N
 *    ready" / "rank N submitted" for other ranks N;
 *  - rows of names not submitted in the period hold marks only;
 *  - the collectives row holds, per fused group, MEMCPY_IN_FUSION_BUFFER,
 *    MEMCPY_OUT_FUSION_BUFFER and "fused(N) first, ...", nested in time,
 *    with the group's bytes and count, matching exactly the N tensors whose
 *    collective says "ring, fused" (or "shm, fused" and the like inside a
 *    node) with the same start and duration;
 *  - with 2+ ranks: period 1 has an eager (or, inside a node, a "shm,
 *    fast" one: src/engine/fast.c), a fused and a plain ring (or shm, cma,
 *    hier) allreduce and a mark for another rank; period 2 a plain one.
 */
#define _GNU_SOURCE
#include "mpi_common.h"

#include <limits.h>
#include <stdarg.h>
#include <unistd.h>

#include "json_check.h"

#define NROUNDS 4
#define MAX_TASKS 32
#define MAX_SUBS 32
#define BIG_COUNT (1 << 18) /* float32: 1 MiB */
#define MAX_RANKS 16

typedef struct {
    char name[64];
    tt_kind_t kind;
    tc_dtype_t dt;
    tc_op_t op;
    int root;
    int ndim;
    int64_t shape[2]; /* this rank's */
    int ag_rows;      /* shape[0] is ag_rows(rank) on each rank */
    int64_t d0_last;  /* > 0: shape[0] on the last rank (the others: 10) */
    int mismatch;     /* every rank must get TC_ERR_MISMATCH */
    uint64_t salt;
    void *send, *recv;
    tc_request_t *req;
} task_t;

/* What this rank submitted under one name in one period. */
typedef struct {
    char name[64];
    tt_kind_t kind;
    tc_dtype_t dt;
    tc_op_t op;
    int root;
    int64_t bytes[MAX_RANKS]; /* each rank's input */
    int nsub;
    int nmismatch;
} sub_t;

/* A collective event that says "ring, fused", to match with its group. */
typedef struct {
    double ts, dur;
    int fused;
    int64_t bytes;
    char name[64];
    int matched;
} member_t;

typedef struct {
    int events, rows, marks, groups;
    int eager, fused, ring, failed, bcast, gather;
} stats_t;

static int g_rank, g_size;
/* The rank whose events are being checked: this one in its own files, each
 * rank in turn in a job-wide file (on rank 0). */
static int g_checked;
static char g_dir[PATH_MAX];
static sub_t g_subs[2][MAX_SUBS];
static int g_nsubs[2];
static task_t g_tasks[MAX_TASKS];
static int g_ntasks;

static const char *const kind_name[] = {"allreduce", "allgather", "broadcast"};
static const char *const kind_upper[] = {"ALLREDUCE", "ALLGATHER", "BROADCAST"};

#define ALGO_RING "ring"
#define ALGO_FUSED "ring, fused"

/* An allreduce run alone: the ring (or, for float sums with
 * TCOLL_DETERMINISTIC, the ordered reduce-scatter), or inside a node through the segment
 * (shm), reading the other ranks' buffers (cma), or across nodes (hier);
 * or one of those fused. */
static int algo_single(const char *a)
{
    return strcmp(a, ALGO_RING) == 0 || strcmp(a, "ordered") == 0 || strcmp(a, "shm") == 0 ||
           strcmp(a, "cma") == 0 || strcmp(a, "hier") == 0;
}

static int algo_fused(const char *a)
{
    return strcmp(a, ALGO_FUSED) == 0 || strcmp(a, "ordered, fused") == 0 ||
           strcmp(a, "shm, fused") == 0 ||
           strcmp(a, "cma, fused") == 0 || strcmp(a, "hier, fused") == 0;
}

/* A kind other than allreduce: its MPI algorithm, or inside the node. */
static int algo_kind(const char *a, const char *mpi)
{
    return strcmp(a, mpi) == 0 || strcmp(a, "shm") == 0 || strcmp(a, "cma") == 0;
}

#define ALGO_EAGER "eager (inputs in the cycle messages)"
#define ALGO_FAST "shm, fast" /* a cached small one inside a node: src/engine/fast.c */
#define ALGO_NONE "none (failed in negotiation)"
#define ALGO_GATHER "ring allgatherv"
#define ALGO_TREE "binomial tree"

/* ------------------------------------------------------------------------ */
/* Submitting and checking collectives                                       */
/* ------------------------------------------------------------------------ */

static int64_t ag_rows(int r);

/* t's input bytes on rank r. */
static int64_t task_bytes(const task_t *t, int r)
{
    int64_t shape[2] = {t->shape[0], t->shape[1]};

    if (t->ag_rows) {
        shape[0] = ag_rows(r);
    } else if (t->d0_last > 0) {
        shape[0] = r == g_size - 1 ? t->d0_last : 10;
    }
    return tt_count(t->ndim, shape) * (int64_t)tt_dtype_bytes(t->dt);
}

/* s's input bytes on the rank being checked. */
static int64_t sub_bytes(const sub_t *s)
{
    return s->bytes[g_checked];
}

static void note_sub(int period, const task_t *t)
{
    int64_t bytes = tt_count(t->ndim, t->shape) * (int64_t)tt_dtype_bytes(t->dt);
    sub_t *s = NULL;

    for (int i = 0; i < g_nsubs[period]; i++) {
        if (strcmp(g_subs[period][i].name, t->name) == 0) {
            s = &g_subs[period][i];
        }
    }
    if (s == NULL) {
        CHECK(g_nsubs[period] < MAX_SUBS);
        s = &g_subs[period][g_nsubs[period]++];
        memset(s, 0, sizeof *s);
        snprintf(s->name, sizeof s->name, "%s", t->name);
        s->kind = t->kind;
        s->dt = t->dt;
        s->op = t->op;
        s->root = t->root;
        for (int r = 0; r < g_size; r++) {
            s->bytes[r] = task_bytes(t, r);
        }
    }
    CHECK(s->kind == t->kind && s->dt == t->dt && s->bytes[g_rank] == bytes);
    s->nsub++;
    s->nmismatch += t->mismatch;
}

static task_t *add_task(const char *name, tt_kind_t kind, tc_dtype_t dt, tc_op_t op, int root,
                        int ndim, int64_t d0, int64_t d1)
{
    task_t *t;

    CHECK(g_ntasks < MAX_TASKS);
    t = &g_tasks[g_ntasks++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->kind = kind;
    t->dt = dt;
    t->op = op;
    t->root = root;
    t->ndim = ndim;
    t->shape[0] = d0;
    t->shape[1] = d1;
    return t;
}

static int64_t bc_value(const task_t *t, int r, int64_t i)
{
    return tt_value(t->dt, TC_MAX, r == t->root ? t->salt : ~t->salt, r, i);
}

static int64_t ag_rows(int r)
{
    return r + 1;
}

static void submit(task_t *t, int period, int round)
{
    int64_t n = tt_count(t->ndim, t->shape);
    size_t bytes = (size_t)n * tt_dtype_bytes(t->dt);
    tt_params_t p;

    t->salt = tt_key(tt_hash_str(t->name), (uint64_t)round, 0x7153);
    t->send = tt_xmalloc(bytes);
    t->recv = NULL;
    switch (t->kind) {
    case TT_ALLREDUCE:
        tt_fill(t->dt, t->op, t->salt, g_rank, t->send, n);
        t->recv = tt_xmalloc(bytes);
        memset(t->recv, 0xa5, bytes);
        break;
    case TT_BROADCAST:
        for (int64_t i = 0; i < n; i++) {
            tt_store(t->dt, t->send, i, bc_value(t, g_rank, i));
        }
        break;
    case TT_ALLGATHER:
        for (int64_t k = 0; k < n; k++) {
            tt_store(t->dt, t->send, k, tt_value(t->dt, TC_MAX, t->salt, g_rank, k));
        }
        break;
    }
    p = tt_params(t->kind, t->dt, t->op, t->root, t->ndim, t->shape[0], t->shape[1], 0);
    t->req = tt_submit(t->name, &p, t->send, t->recv);
    note_sub(period, t);
}

static void complete(task_t *t)
{
    tc_status_t st = tc_wait(t->req);
    int64_t n = tt_count(t->ndim, t->shape);
    size_t es = tt_dtype_bytes(t->dt);

    if (t->mismatch) {
        CHECK_MSG(st == TC_ERR_MISMATCH, "%s: got %s, want a mismatch (%s)", t->name,
                  tc_status_string(st), tc_request_error(t->req));
        CHECK_STR_CONTAINS(tc_request_error(t->req), "shape mismatch");
    } else {
        CHECK_MSG(st == TC_OK, "%s: %s: %s", t->name, tc_status_string(st),
                  tc_request_error(t->req));
        switch (t->kind) {
        case TT_ALLREDUCE:
            tt_check_allreduce(t->name, t->dt, t->op, t->salt, g_size, t->recv, n);
            break;
        case TT_BROADCAST:
            for (int64_t i = 0; i < n; i++) {
                unsigned char want[8];
                tt_store(t->dt, want, 0, bc_value(t, t->root, i));
                CHECK_MSG(memcmp((char *)t->send + (size_t)i * es, want, es) == 0,
                          "%s: element %lld differs from the root's", t->name, (long long)i);
            }
            break;
        case TT_ALLGATHER: {
            tc_tensor_t out;
            int64_t pos = 0;
            CHECK_OK(tc_request_output(t->req, &out));
            CHECK_EQ(out.ndim, 2);
            CHECK_EQ(out.shape[1], t->shape[1]);
            for (int r = 0; r < g_size; r++) {
                for (int64_t k = 0; k < ag_rows(r) * t->shape[1]; k++, pos++) {
                    unsigned char want[8];
                    tt_store(t->dt, want, 0, tt_value(t->dt, TC_MAX, t->salt, r, k));
                    CHECK_MSG(memcmp((char *)out.data + (size_t)pos * es, want, es) == 0,
                              "%s: element %lld (rank %d's %lld) is wrong", t->name,
                              (long long)pos, r, (long long)k);
                }
            }
            CHECK_EQ(out.shape[0], pos / t->shape[1]);
            break;
        }
        }
    }
    tc_request_free(t->req);
    t->req = NULL;
    free(t->send);
    free(t->recv);
    t->send = t->recv = NULL;
}

/* Submits every task in order, then completes them in reverse order. */
static void run_round(int period, int round, int first, int last)
{
    for (int i = first; i < last; i++) {
        submit(&g_tasks[i], period, round);
    }
    for (int i = last - 1; i >= first; i--) {
        complete(&g_tasks[i]);
    }
}

/* ------------------------------------------------------------------------ */
/* Reading the files back                                                    */
/* ------------------------------------------------------------------------ */

static int is_str(const jval_t *v, const char *s)
{
    return jstr_is(v, s, strlen(s));
}

static char ph_of(const jval_t *e)
{
    return jget(e, "ph")->str[0];
}

static const char *name_of(const jval_t *e)
{
    const jval_t *n = jget(e, "name");
    return n != NULL ? n->str : "";
}

/* The string member key of args (must be there). */
static const char *arg_str(const char *path, const jval_t *e, const char *key)
{
    const jval_t *v = jget(jget(e, "args"), key);
    CHECK_MSG(v != NULL && v->type == J_STR, "%s: event '%s' at ts %.3f: no string arg '%s'",
              path, name_of(e), num_of(e, "ts"), key);
    return v->str;
}

/* The integer member key of args (must be there). */
static int64_t arg_int(const char *path, const jval_t *e, const char *key)
{
    const jval_t *v = jget(jget(e, "args"), key);
    CHECK_MSG(v != NULL && v->type == J_NUM && v->num == (double)(int64_t)v->num,
              "%s: event '%s' at ts %.3f: no integer arg '%s'", path, name_of(e),
              num_of(e, "ts"), key);
    return (int64_t)v->num;
}

static size_t nargs(const jval_t *e)
{
    const jval_t *a = jget(e, "args");
    return a != NULL && a->type == J_OBJ ? a->n : 0;
}

/* "rank N ready" / "rank N submitted" for another rank N: 1; 0 if the name
 * is not of that form (fails if it is, with a bad N). */
static int is_mark(const char *path, const jval_t *e)
{
    char word[16], tail;
    int n;

    if (ph_of(e) != 'i' ||
        sscanf(name_of(e), "rank %d %15s%c", &n, word, &tail) != 2 ||
        (strcmp(word, "ready") != 0 && strcmp(word, "submitted") != 0)) {
        return 0;
    }
    CHECK_MSG(n >= 0 && n < g_size && n != g_checked, "%s: rank %d's mark '%s' names a bad rank",
              path, g_checked, name_of(e));
    CHECK_MSG(is_str(jget(e, "cat"), "negotiation"), "%s: mark '%s' without cat negotiation",
              path, name_of(e));
    CHECK_MSG(is_str(jget(e, "s"), "t"), "%s: mark '%s' is not thread-scoped", path,
              name_of(e));
    /* "submitted" only reaches rank 0 (the others' requests) */
    CHECK_MSG(strcmp(word, "ready") == 0 || g_checked == 0, "%s: '%s' on rank %d", path,
              name_of(e), g_checked);
    return 1;
}

static const sub_t *find_sub(int period, const char *name)
{
    for (int i = 0; i < g_nsubs[period]; i++) {
        if (strcmp(g_subs[period][i].name, name) == 0) {
            return &g_subs[period][i];
        }
    }
    return NULL;
}

/* The args NEGOTIATE and the collective share: kind, dtype, bytes, cycle,
 * op (allreduce) or root (broadcast). Returns how many keys that is. */
static size_t check_common_args(const char *path, const jval_t *e, const sub_t *s)
{
    size_t n = 4;

    CHECK_MSG(strcmp(arg_str(path, e, "kind"), kind_name[s->kind]) == 0,
              "%s: %s '%s': kind '%s', want '%s'", path, s->name, name_of(e),
              arg_str(path, e, "kind"), kind_name[s->kind]);
    CHECK_MSG(strcmp(arg_str(path, e, "dtype"), tt_dtype_str(s->dt)) == 0,
              "%s: %s '%s': dtype '%s', want '%s'", path, s->name, name_of(e),
              arg_str(path, e, "dtype"), tt_dtype_str(s->dt));
    CHECK_MSG(arg_int(path, e, "bytes") == sub_bytes(s), "%s: rank %d: %s '%s': bytes %lld, want %lld",
              path, g_checked, s->name, name_of(e), (long long)arg_int(path, e, "bytes"),
              (long long)sub_bytes(s));
    CHECK_MSG(arg_int(path, e, "cycle") >= 0, "%s: %s: negative cycle", path, s->name);
    if (s->kind == TT_ALLREDUCE) {
        CHECK_MSG(strcmp(arg_str(path, e, "op"), tt_op_str(s->op)) == 0,
                  "%s: %s '%s': op '%s', want '%s'", path, s->name, name_of(e),
                  arg_str(path, e, "op"), tt_op_str(s->op));
        n++;
    } else {
        CHECK_MSG(jget(jget(e, "args"), "op") == NULL, "%s: %s: an op on a %s", path, s->name,
                  kind_name[s->kind]);
    }
    if (s->kind == TT_BROADCAST) {
        CHECK_MSG(arg_int(path, e, "root") == s->root, "%s: %s: root %lld, want %d", path,
                  s->name, (long long)arg_int(path, e, "root"), s->root);
        n++;
    } else {
        CHECK_MSG(jget(jget(e, "args"), "root") == NULL, "%s: %s: a root on a %s", path,
                  s->name, kind_name[s->kind]);
    }
    return n;
}

/* The collective event of s: exact args; counts the algorithm. */
static void check_collective(const char *path, const jval_t *e, const sub_t *s, stats_t *st,
                             member_t *members, int *nmembers, int *mismatches)
{
    size_t n = check_common_args(path, e, s);
    const char *algo = arg_str(path, e, "algo");
    const char *status = arg_str(path, e, "status");
    int failed = strcmp(status, tc_status_string(TC_ERR_MISMATCH)) == 0;

    n += 2;
    CHECK_MSG(is_str(jget(e, "cat"), "collective"), "%s: %s: collective without cat", path,
              s->name);
    CHECK_MSG(failed || strcmp(status, "success") == 0, "%s: %s: status '%s'", path, s->name,
              status);
    *mismatches += failed;
    if (failed) {
        CHECK_MSG(strcmp(algo, ALGO_NONE) == 0, "%s: %s failed with algo '%s'", path, s->name,
                  algo);
        st->failed++;
    } else if (s->kind == TT_ALLGATHER) {
        CHECK_MSG(algo_kind(algo, ALGO_GATHER), "%s: %s: allgather algo '%s'", path, s->name,
                  algo);
        st->gather++;
    } else if (s->kind == TT_BROADCAST) {
        CHECK_MSG(algo_kind(algo, ALGO_TREE), "%s: %s: broadcast algo '%s'", path, s->name,
                  algo);
        st->bcast++;
    } else if (algo_single(algo)) {
        st->ring++;
    } else if (strcmp(algo, ALGO_EAGER) == 0 || strcmp(algo, ALGO_FAST) == 0) {
        st->eager++;
    } else if (algo_fused(algo)) {
        member_t *m;
        CHECK(*nmembers < 4 * MAX_SUBS * NROUNDS);
        m = &members[(*nmembers)++];
        m->ts = num_of(e, "ts");
        m->dur = num_of(e, "dur");
        m->fused = (int)arg_int(path, e, "fused");
        m->bytes = sub_bytes(s);
        m->matched = 0;
        snprintf(m->name, sizeof m->name, "%s", s->name);
        CHECK_MSG(m->fused >= 2, "%s: %s: fused count %d", path, s->name, m->fused);
        n++;
        st->fused++;
    } else {
        TC_CHECK_FAIL("%s: %s: unknown allreduce algo '%s'", path, s->name, algo);
    }
    if (!algo_fused(algo)) {
        CHECK_MSG(jget(jget(e, "args"), "fused") == NULL, "%s: %s: a fused count with '%s'",
                  path, s->name, algo);
    }
    CHECK_MSG(nargs(e) == n, "%s: %s: collective has %zu args, want %zu", path, s->name,
              nargs(e), n);
}

#define EPS_US 0.002 /* the file has nanosecond digits; sums of doubles round */

/* The row of s: per submission NEGOTIATE, [QUEUE], collective, in order and
 * back to back; marks for other ranks anywhere; nothing else. */
static void check_tensor_row(const char *path, const trace_t *t, const sub_t *s, stats_t *st,
                             member_t *members, int *nmembers)
{
    int tid = find_row(t, s->name, strlen(s->name));
    int state = 0, nneg = 0, ncoll = 0, mismatches = 0;
    double end = 0;

    CHECK_MSG(tid >= 0, "%s: no row for '%s' (submitted %d times)", path, s->name, s->nsub);
    for (size_t i = 0; i < t->events->n; i++) {
        const jval_t *e = &t->events->items[i];
        const char *nm = name_of(e);

        if (ph_of(e) == 'M' || num_of(e, "tid") != tid) {
            continue;
        }
        if (is_mark(path, e)) {
            st->marks++;
            continue;
        }
        CHECK_MSG(ph_of(e) == 'X', "%s: %s: unexpected '%c' event '%s'", path, s->name,
                  ph_of(e), nm);
        if (strcmp(nm, "NEGOTIATE") == 0) {
            CHECK_MSG(state == 0, "%s: %s: NEGOTIATE #%d follows an unfinished one", path,
                      s->name, nneg + 1);
            CHECK(is_str(jget(e, "cat"), "negotiation"));
            CHECK_MSG(nargs(e) == check_common_args(path, e, s), "%s: %s: NEGOTIATE has %zu args",
                      path, s->name, nargs(e));
            end = num_of(e, "ts") + num_of(e, "dur");
            nneg++;
            state = 1;
        } else if (strcmp(nm, "QUEUE") == 0) {
            CHECK_MSG(state == 1, "%s: %s: QUEUE not right after NEGOTIATE", path, s->name);
            CHECK(is_str(jget(e, "cat"), "negotiation"));
            CHECK_MSG(jget(e, "args") == NULL, "%s: %s: QUEUE with args", path, s->name);
            CHECK_MSG(num_of(e, "ts") >= end - EPS_US && num_of(e, "ts") <= end + EPS_US,
                      "%s: %s: QUEUE starts at %.3f, NEGOTIATE ended at %.3f", path, s->name,
                      num_of(e, "ts"), end);
            end = num_of(e, "ts") + num_of(e, "dur");
            state = 2;
        } else if (strcmp(nm, kind_upper[s->kind]) == 0) {
            CHECK_MSG(state != 0, "%s: %s: %s #%d without a NEGOTIATE before it", path, s->name,
                      nm, ncoll + 1);
            CHECK_MSG(num_of(e, "ts") >= end - EPS_US && num_of(e, "ts") <= end + EPS_US,
                      "%s: %s: %s starts at %.3f, not where the negotiation/queue ended "
                      "(%.3f)",
                      path, s->name, nm, num_of(e, "ts"), end);
            check_collective(path, e, s, st, members, nmembers, &mismatches);
            ncoll++;
            state = 0;
        } else {
            TC_CHECK_FAIL("%s: %s: unexpected event '%s' on its row", path, s->name, nm);
        }
    }
    CHECK_MSG(state == 0, "%s: %s: the row ends in a negotiation", path, s->name);
    CHECK_MSG(ncoll == s->nsub && nneg == s->nsub,
              "%s: %s: %d NEGOTIATE and %d %s events, want %d of each", path, s->name, nneg,
              ncoll, kind_upper[s->kind], s->nsub);
    CHECK_MSG(mismatches == s->nmismatch, "%s: %s: %d mismatches in the file, want %d", path,
              s->name, mismatches, s->nmismatch);
}

/* The collectives row: per group MEMCPY_IN, MEMCPY_OUT, "fused(N) ...",
 * each matching N member events. */
static void check_collectives_row(const char *path, const trace_t *t, int tid, stats_t *st,
                                  member_t *members, int nmembers)
{
    const jval_t *in = NULL, *out = NULL;

    for (size_t i = 0; i < t->events->n; i++) {
        const jval_t *e = &t->events->items[i];
        const char *nm = name_of(e);
        char first[TC_MAX_NAME_LEN + 1];
        int n, pos = -1, matched = 0;
        int64_t bytes = 0;
        double ts, dur;

        if (ph_of(e) == 'M' || num_of(e, "tid") != tid) {
            continue;
        }
        CHECK_MSG(ph_of(e) == 'X', "%s: collectives row: '%c' event '%s'", path, ph_of(e), nm);
        ts = num_of(e, "ts");
        dur = num_of(e, "dur");
        if (strcmp(nm, "MEMCPY_IN_FUSION_BUFFER") == 0) {
            CHECK_MSG(in == NULL && out == NULL, "%s: MEMCPY_IN out of order", path);
            in = e;
            continue;
        }
        if (strcmp(nm, "MEMCPY_OUT_FUSION_BUFFER") == 0) {
            CHECK_MSG(in != NULL && out == NULL, "%s: MEMCPY_OUT without a MEMCPY_IN", path);
            out = e;
            continue;
        }
        if (sscanf(nm, "fused(%d) %n", &n, &pos) != 1 || pos < 0 || strlen(nm) < (size_t)pos + 5 ||
            strcmp(nm + strlen(nm) - 5, ", ...") != 0) {
            TC_CHECK_FAIL("%s: collectives row: unexpected event '%s'", path, nm);
        }
        snprintf(first, sizeof first, "%.*s", (int)(strlen(nm) - (size_t)pos - 5), nm + pos);
        CHECK_MSG(in != NULL && out != NULL, "%s: '%s' without MEMCPY_IN and _OUT before it",
                  path, nm);
        CHECK_MSG(n >= 2, "%s: '%s': a group of %d", path, nm, n);
        CHECK(is_str(jget(e, "cat"), "collective"));
        CHECK(strcmp(arg_str(path, e, "kind"), "allreduce") == 0);
        CHECK(algo_fused(arg_str(path, e, "algo")));
        CHECK(strcmp(arg_str(path, e, "status"), "success") == 0);
        CHECK_EQ(arg_int(path, e, "fused"), n);
        CHECK(arg_int(path, e, "cycle") >= 0);
        CHECK_EQ(nargs(e), 6);
        /* the copies: inside the group's span, in before out, same size */
        CHECK(is_str(jget(in, "cat"), "fusion") && is_str(jget(out, "cat"), "fusion"));
        CHECK_EQ(nargs(in), 2);
        CHECK_EQ(nargs(out), 2);
        CHECK_EQ(arg_int(path, in, "fused"), n);
        CHECK_EQ(arg_int(path, out, "fused"), n);
        CHECK_EQ(arg_int(path, in, "bytes"), arg_int(path, e, "bytes"));
        CHECK_EQ(arg_int(path, out, "bytes"), arg_int(path, e, "bytes"));
        CHECK_MSG(num_of(in, "ts") >= ts &&
                      num_of(in, "ts") + num_of(in, "dur") <= num_of(out, "ts") + EPS_US &&
                      num_of(out, "ts") + num_of(out, "dur") <= ts + dur + EPS_US,
                  "%s: '%s' [%.3f, +%.3f]: the copies [%.3f, +%.3f] and [%.3f, +%.3f] are not "
                  "inside, in order",
                  path, nm, ts, dur, num_of(in, "ts"), num_of(in, "dur"), num_of(out, "ts"),
                  num_of(out, "dur"));
        /* the members: same span, same count; bytes add up; first among them */
        int first_seen = 0;
        for (int k = 0; k < nmembers; k++) {
            member_t *m = &members[k];
            if (m->ts == ts && m->dur == dur) {
                CHECK_MSG(!m->matched, "%s: %s is in two groups", path, m->name);
                CHECK_EQ(m->fused, n);
                m->matched = 1;
                matched++;
                bytes += m->bytes;
                first_seen |= strcmp(m->name, first) == 0;
            }
        }
        CHECK_MSG(matched == n, "%s: '%s': %d tensors say they were in it", path, nm, matched);
        CHECK_MSG(bytes == arg_int(path, e, "bytes"), "%s: '%s': %lld bytes, members have %lld",
                  path, nm, (long long)arg_int(path, e, "bytes"), (long long)bytes);
        CHECK_MSG(first_seen, "%s: '%s' names '%s', not one of its tensors", path, nm, first);
        st->groups++;
        in = out = NULL;
    }
    CHECK_MSG(in == NULL && out == NULL, "%s: a fusion copy without its group", path);
    for (int k = 0; k < nmembers; k++) {
        CHECK_MSG(members[k].matched, "%s: %s says fused but no group on the collectives row "
                                      "matches it", path, members[k].name);
    }
}

/* The validator must reject the file cut short anywhere. */
static void check_cut_rejected(const char *path)
{
    size_t len;
    char *text = read_all(path, &len);
    char err[200];
    jval_t v;

    CHECK_MSG(len > 2 && memcmp(text + len - 2, "}\n", 2) == 0, "%s does not end in \"}\\n\"",
              path);
    for (size_t k = 0; k <= 8; k++) {
        size_t keep = k < 8 ? len * k / 8 : len - 2; /* the last: all but the closing brace */
        CHECK_MSG(jparse(text, keep, &v, err, sizeof err) != 0,
                  "%s cut to %zu of %zu bytes still parses", path, keep, len);
    }
    CHECK_MSG(jparse(text, len, &v, err, sizeof err) == 0, "%s: %s", path, err);
    jfree(&v);
    free(text);
}

/* The events of rank g_checked in period: t is that rank's own file, or its
 * pid's view of a job-wide file. */
static void check_trace(const char *path, const trace_t *tp, int period, stats_t *st)
{
    static member_t members[4 * MAX_SUBS * NROUNDS];
    int nmembers = 0, tids[4096 + 16], ntids = 0;
    int fixed[3];
    trace_t t = *tp;
    const jval_t *counts;
    char pname[32];
    int nonmeta = 0;

    memset(st, 0, sizeof *st);

    /* otherData (a job-wide file: its entry for the rank); the process and
     * fixed rows */
    CHECK(is_str(jget(t.other, "tool"), "tcoll"));
    CHECK(is_str(jget(t.other, "version"), tc_version()));
    counts = jget(t.other, "job") != NULL ? job_rank_info(&t, g_checked) : t.other;
    CHECK_MSG(counts != NULL, "%s: otherData has nothing on rank %d", path, g_checked);
    CHECK_MSG(num_of(counts, "dropped_events") == 0, "%s: rank %d: %g events dropped", path,
              g_checked, num_of(counts, "dropped_events"));
    snprintf(pname, sizeof pname, "rank %d", g_checked);
    fixed[0] = find_row(&t, "negotiation", 11);
    fixed[1] = find_row(&t, "collectives", 11);
    fixed[2] = find_row(&t, "other tensors", 13);
    CHECK_MSG(fixed[0] >= 0 && fixed[1] >= 0 && fixed[2] >= 0, "%s: a fixed row is missing",
              path);
    int have_pname = 0;
    for (size_t i = 0; i < t.events->n; i++) {
        const jval_t *e = &t.events->items[i];
        if (ph_of(e) != 'M') {
            nonmeta++;
            CHECK_MSG(num_of(e, "ts") >= 0,
                      "%s: event '%s' (row %g) at ts %.3f: before the timeline started", path,
                      name_of(e), num_of(e, "tid"), num_of(e, "ts"));
            if (ph_of(e) == 'X') {
                CHECK(num_of(e, "dur") >= 0);
            }
            continue;
        }
        if (is_str(jget(e, "name"), "process_name")) {
            CHECK(is_str(jget(jget(e, "args"), "name"), pname));
            have_pname++;
        } else if (is_str(jget(e, "name"), "thread_name")) {
            int tid = (int)num_of(e, "tid");
            const jval_t *rn = jget(jget(e, "args"), "name");
            CHECK(rn != NULL && rn->type == J_STR);
            for (int k = 0; k < ntids; k++) {
                CHECK_MSG(tids[k] != tid, "%s: row %d is named twice", path, tid);
            }
            CHECK((size_t)ntids < sizeof tids / sizeof tids[0]);
            tids[ntids++] = tid;
            (void)find_row(&t, rn->str, rn->len); /* fails if the name has two rows */
        }
    }
    CHECK_EQ(have_pname, 1);
    CHECK_MSG(num_of(counts, "events") == nonmeta,
              "%s: rank %d: otherData says %g events, the file has %d", path, g_checked,
              num_of(counts, "events"), nonmeta);
    /* every event is on a named row */
    for (size_t i = 0; i < t.events->n; i++) {
        const jval_t *e = &t.events->items[i];
        int tid = (int)num_of(e, "tid"), k;
        if (ph_of(e) == 'M') {
            continue;
        }
        for (k = 0; k < ntids && tids[k] != tid; k++) {
        }
        CHECK_MSG(k < ntids, "%s: event '%s' on row %d, which has no name", path, name_of(e),
                  tid);
    }

    /* the tensors this rank submitted in the period */
    for (int i = 0; i < g_nsubs[period]; i++) {
        check_tensor_row(path, &t, &g_subs[period][i], st, members, &nmembers);
    }
    /* the other rows: marks only (another rank's report on a name this rank
     * ran in another period, or not yet) */
    for (size_t i = 0; i < t.events->n; i++) {
        const jval_t *e = &t.events->items[i];
        const jval_t *rn = jget(jget(e, "args"), "name");
        int tid;
        if (ph_of(e) != 'M' || !is_str(jget(e, "name"), "thread_name")) {
            continue;
        }
        tid = (int)num_of(e, "tid");
        if (tid == fixed[0] || tid == fixed[1] || tid == fixed[2]) {
            continue;
        }
        st->rows++;
        if (find_sub(period, rn->str) != NULL) {
            continue;
        }
        for (size_t j = 0; j < t.events->n; j++) {
            const jval_t *f = &t.events->items[j];
            if (ph_of(f) != 'M' && num_of(f, "tid") == tid) {
                CHECK_MSG(is_mark(path, f), "%s: '%s' on the row of '%s', not submitted by "
                                            "this rank in this period",
                          path, name_of(f), rn->str);
                st->marks++;
            }
        }
    }
    check_collectives_row(path, &t, fixed[1], st, members, nmembers);
    /* nothing on the negotiation and other-tensors rows */
    for (size_t i = 0; i < t.events->n; i++) {
        const jval_t *e = &t.events->items[i];
        if (ph_of(e) != 'M' && (num_of(e, "tid") == fixed[0] || num_of(e, "tid") == fixed[2])) {
            TC_CHECK_FAIL("%s: unexpected event '%s' on row %g", path, name_of(e),
                          num_of(e, "tid"));
        }
    }
    st->events = nonmeta;
}

/* This rank's own file. */
static void check_file(const char *path, int period, stats_t *st)
{
    trace_t t;

    g_checked = g_rank;
    load_trace(path, g_rank, &t);
    check_trace(path, &t, period, st);
    free_trace(&t);
    check_cut_rejected(path);
}

/* The job-wide file (rank 0, after its tc_shutdown wrote it): one process
 * row per rank, each rank's events checked as in a file of its own, every
 * rank's part complete. */
static void check_job_file(const char *path, int period, stats_t *st)
{
    const jval_t *ranks;
    trace_t t, v;

    load_job_trace(path, g_size, &t);
    ranks = jget(t.other, "ranks");
    CHECK_MSG(ranks->n == (size_t)g_size, "%s: otherData lists %zu ranks, want %d", path,
              ranks->n, g_size);
    for (int r = 0; r < g_size; r++) {
        const jval_t *info = job_rank_info(&t, r);
        CHECK_MSG(info != NULL && jget(info, "complete")->b, "%s: rank %d's part is %s", path, r,
                  info == NULL ? "missing" : "incomplete");
        g_checked = r;
        trace_view_pid(&t, r, &v);
        check_trace(path, &v, period, &st[r]);
        free_trace_view(&v);
    }
    g_checked = g_rank;
    {
        int total = 0;
        for (int r = 0; r < g_size; r++) {
            total += st[r].events;
        }
        CHECK_MSG(num_of(t.other, "events") == total, "%s: otherData says %g events, the ranks "
                                                      "have %d", path,
                  num_of(t.other, "events"), total);
    }
    free_trace(&t);
    check_cut_rejected(path);
}

/* ------------------------------------------------------------------------ */

/* printf into a PATH_MAX buffer; fails the test if it does not fit. */
__attribute__((format(printf, 2, 3))) static const char *fmt_path(char *buf, const char *fmt,
                                                                  ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, PATH_MAX, fmt, ap);
    va_end(ap);
    CHECK_MSG(n >= 0 && n < PATH_MAX, "a path longer than PATH_MAX");
    return buf;
}

static const char *dir_path(char *buf, const char *name)
{
    return fmt_path(buf, "%s/%s", g_dir, name);
}

/* What rank r's events of period 1 and of period 2 must include (from its
 * own file, or its part of a job-wide one). */
static void check_stats1(const char *path, const stats_t *st, int r)
{
    if (g_size > 1) {
        CHECK_MSG(st->eager > 0 && st->fused > 0 && st->ring > 0,
                  "%s: rank %d's allreduces: %d eager, %d fused, %d ring; want each at least "
                  "once", path, r, st->eager, st->fused, st->ring);
        /* rank 0 hears every submission of a new name, and every rank its
         * exchange partners' parts, which say what their ranks have waiting
         * (docs/negotiation.md) */
        CHECK_MSG(st->marks > 0,
                  "%s: no 'rank N ready/submitted' mark of rank %d for another rank", path, r);
        CHECK_EQ(st->failed, 1);
    }
    CHECK_EQ(st->gather, NROUNDS);
    CHECK_EQ(st->bcast, NROUNDS);
}

static void check_stats2(const char *path, const stats_t *st, int r)
{
    if (g_size > 1) {
        CHECK_MSG(st->ring > 0, "%s: no plain ring allreduce on rank %d", path, r);
    }
    CHECK_EQ(st->eager + st->fused + st->ring, 4);
}

int main(int argc, char **argv)
{
    char path1[PATH_MAX], path2[PATH_MAX], buf[PATH_MAX], want[PATH_MAX];
    const char *env, *mode = argc == 3 ? argv[2] : "rank";
    static stats_t s1[MAX_RANKS], s2[MAX_RANKS];
    int nsmall, job1, job2;
    double t0 = tt_now();

    CHECK_MSG(argc == 2 || argc == 3, "usage: %s <dir> [rank|job|job-api] (see the file comment)",
              argv[0]);
    job1 = strcmp(mode, "job") == 0;     /* period 1 goes to one job-wide file */
    job2 = strcmp(mode, "job-api") == 0; /* period 2 does */
    CHECK_MSG(job1 || job2 || strcmp(mode, "rank") == 0, "unknown mode '%s'", mode);
    /* before tc_init: no rank to name the file and mark the events by */
    CHECK_STATUS(tc_timeline_start("tl.%r.json"), TC_ERR_STATE);
    CHECK_STR_CONTAINS(tc_last_error(), "not initialized");
    CHECK_STATUS(tc_timeline_start(NULL), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "tc_timeline_start: path is NULL");
    CHECK_STATUS(tc_timeline_stop(), TC_ERR_STATE);
    CHECK_STR_CONTAINS(tc_last_error(), "no timeline is running");
    CHECK_OK(tc_init());
    g_rank = g_checked = tc_rank();
    g_size = tc_size();
    CHECK(g_size <= MAX_RANKS);
    fmt_path(g_dir, "%s/%snp%d", argv[1], job1 ? "job-" : job2 ? "jobapi-" : "", g_size);
    env = getenv("TCOLL_TIMELINE");
    dir_path(want, job1 ? "tl.json" : "tl.%r.json");
    CHECK_MSG(env != NULL && strcmp(env, want) == 0, "TCOLL_TIMELINE is '%s', want '%s'",
              env ? env : "(unset)", want);
    /* one rank: a path without %r is a file of its own, written at once */
    job1 = job1 && g_size > 1;
    job2 = job2 && g_size > 1;
    if (strcmp(mode, "job") == 0) {
        dir_path(path1, "tl.json");
    } else {
        fmt_path(path1, "%s/tl.%d.json", g_dir, g_rank);
    }
    if (strcmp(mode, "job-api") == 0) {
        dir_path(path2, "api.json");
    } else {
        fmt_path(path2, "%s/api.%d.json", g_dir, g_rank);
    }
    for (int i = 0; i < 6; i++) { /* a previous run's */
        static const char *const stale[] = {"api", "api2", "other", "early", "tl.rank", "api.rank"};
        unlink(fmt_path(buf, "%s/%s%s%d.json", g_dir, stale[i], i < 4 ? "." : "", g_rank));
    }
    if (g_rank == 0) { /* not tl.json with one rank: TCOLL_TIMELINE's file, open */
        static const char *const stale[] = {"api.json", "tl2.json", "api3.json", "tl.json"};
        for (int i = 0; i < 3 + job1; i++) {
            unlink(dir_path(buf, stale[i]));
        }
    }

    /* TCOLL_TIMELINE's timeline runs from tc_init on: no other may start */
    {
        tc_status_t st = tc_timeline_start(dir_path(buf, "early.%r.json"));
        CHECK_MSG(st == TC_ERR_STATE,
                  "tc_timeline_start right after tc_init: %s (%s), want TC_ERR_STATE: the "
                  "TCOLL_TIMELINE timeline was not running yet when tc_init returned",
                  tc_status_string(st), tc_last_error());
        CHECK_STR_CONTAINS(tc_last_error(), "already");
    }

    /* ---- period 1: the TCOLL_TIMELINE timeline ---- */
    for (int i = 0; i < 8; i++) { /* 1..250 float32 elements: fusable and eager */
        static const int64_t n[8] = {1, 7, 33, 100, 250, 64, 3, 17};
        snprintf(buf, sizeof buf, "tl/small.f32.sum.%d", i);
        add_task(buf, TT_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, n[i], 0);
    }
    add_task("tl/big.f32.sum", TT_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, BIG_COUNT, 0);
    for (int i = 0; i < 6; i++) {
        snprintf(buf, sizeof buf, "tl/small.i32.max.%d", i);
        add_task(buf, TT_ALLREDUCE, TC_INT32, TC_MAX, 0, 2, 2 + i, 5);
    }
    add_task("tl/gather.i64", TT_ALLGATHER, TC_INT64, TC_SUM, 0, 2, ag_rows(g_rank), 3)->ag_rows = 1;
    add_task("tl/bcast.f64", TT_BROADCAST, TC_FLOAT64, TC_SUM, g_size - 1, 1, 100, 0);
    nsmall = g_ntasks;
    if (g_size > 1) {
        task_t *t = add_task("tl/mismatch", TT_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1,
                             g_rank == g_size - 1 ? 11 : 10, 0);
        t->mismatch = 1;
        t->d0_last = 11;
    }
    run_round(0, 0, 0, g_ntasks);
    for (int round = 1; round < NROUNDS; round++) {
        run_round(0, round, 0, nsmall);
    }

    /* one runs (TCOLL_TIMELINE's): no second */
    CHECK_STATUS(tc_timeline_start(dir_path(buf, "other.%r.json")), TC_ERR_STATE);
    CHECK_STR_CONTAINS(tc_last_error(), "already");
    CHECK_OK(tc_timeline_stop()); /* path1 is final from here, or waits for tc_shutdown */
    CHECK_STATUS(tc_timeline_stop(), TC_ERR_STATE);
    CHECK_LAST_ERROR_SET();
    if (job1) {
        /* the part waits for tc_shutdown, and there is one per run */
        CHECK_MSG(g_rank != 0 || access(path1, F_OK) != 0, "%s exists before tc_shutdown",
                  path1);
        CHECK_STATUS(tc_timeline_start(dir_path(buf, "tl2.json")), TC_ERR_STATE);
        CHECK_STR_CONTAINS(tc_last_error(), "already recorded");
    }
    CHECK_STATUS(tc_timeline_start(NULL), TC_ERR_ARG);
    CHECK_LAST_ERROR_SET();
    CHECK_STATUS(tc_timeline_start(""), TC_ERR_ARG);
    CHECK_LAST_ERROR_SET();
    CHECK_STATUS(tc_timeline_start(dir_path(buf, "no-such-dir/api.%r.json")), TC_ERR_ARG);
    fmt_path(want, "%s/no-such-dir/api.%d.json", g_dir, g_rank);
    CHECK_STR_CONTAINS(tc_last_error(), want);
    if (!job1) { /* a job-wide path checks its folder at once too */
        CHECK_STATUS(tc_timeline_start(dir_path(buf, "no-such-dir/api.json")), TC_ERR_ARG);
        CHECK_STR_CONTAINS(tc_last_error(), dir_path(want, "no-such-dir/api.json"));
    }
    CHECK_STATUS(tc_timeline_stop(), TC_ERR_STATE); /* the failed starts started nothing */

    /* ---- period 2: tc_timeline_start ---- */
    CHECK_OK(tc_timeline_start(dir_path(buf, strcmp(mode, "job-api") == 0 ? "api.json"
                                                                            : "api.%r.json")));
    CHECK_EQ(tc_last_error()[0], '\0');
    CHECK_STATUS(tc_timeline_start(dir_path(buf, "api2.%r.json")), TC_ERR_STATE);
    CHECK_STR_CONTAINS(tc_last_error(), "already");
    g_ntasks = 0;
    add_task("api/ar.f64.sum", TT_ALLREDUCE, TC_FLOAT64, TC_SUM, 0, 1, 1000, 0);
    add_task("api/ar.i64.max.big", TT_ALLREDUCE, TC_INT64, TC_MAX, 0, 2, 1000, 100);
    run_round(1, 0, 0, g_ntasks);
    run_round(1, 1, 0, g_ntasks);
    CHECK_OK(tc_timeline_stop());
    CHECK_STATUS(tc_timeline_stop(), TC_ERR_STATE);
    if (job2) {
        CHECK_MSG(g_rank != 0 || access(path2, F_OK) != 0, "%s exists before tc_shutdown",
                  path2);
        CHECK_STATUS(tc_timeline_start(dir_path(buf, "api3.json")), TC_ERR_STATE);
        CHECK_STR_CONTAINS(tc_last_error(), "already recorded");
    }

    tt_final_barrier();
    CHECK_OK(tc_shutdown());
    for (int i = 0; i < 5; i++) {
        static const char *const refused[] = {"early", "other", "api2", "tl.rank", "api.rank"};
        fmt_path(want, "%s/%s%s%d.json", g_dir, refused[i], i < 3 ? "." : "", g_rank);
        CHECK_MSG(access(want, F_OK) != 0, "%s exists: a refused tc_timeline_start created it, "
                                           "or this rank could not hand its part to rank 0",
                  want);
    }
    for (int i = 0; g_rank == 0 && i < 2; i++) {
        static const char *const refused[] = {"tl2.json", "api3.json"};
        CHECK_MSG(access(dir_path(want, refused[i]), F_OK) != 0,
                  "a refused tc_timeline_start created %s", want);
    }

    /* ---- the files: this rank's own; rank 0 the job-wide one ---- */
    if (job1) {
        if (g_rank == 0) {
            check_job_file(path1, 0, s1);
        }
    } else {
        check_file(path1, 0, &s1[g_rank]);
    }
    if (job2) {
        if (g_rank == 0) {
            check_job_file(path2, 1, s2);
        }
    } else {
        check_file(path2, 1, &s2[g_rank]);
    }
    for (int r = 0; r < g_size; r++) { /* the ranks whose events this rank read */
        if (job1 ? g_rank == 0 : r == g_rank) {
            check_stats1(path1, &s1[r], r);
        }
        if (job2 ? g_rank == 0 : r == g_rank) {
            check_stats2(path2, &s2[r], r);
        }
    }

    if (g_rank == 0) {
        printf("test_timeline_mpi (%s): np %d, rank 0: %s: %d events, %d rows, %d fused "
               "groups (%d tensors), %d eager, %d ring, %d failed, %d marks; %s: %d events, "
               "%d rows; %.2f s\n",
               mode, g_size, path1, s1[0].events, s1[0].rows, s1[0].groups, s1[0].fused,
               s1[0].eager, s1[0].ring, s1[0].failed, s1[0].marks, path2, s2[0].events,
               s2[0].rows, tt_now() - t0);
    }
    return 0;
}
