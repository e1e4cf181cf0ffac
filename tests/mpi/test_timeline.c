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
 * ones) back and checks every event of theirs: test_timeline_files.c says
 * what each file must hold (the tensors submitted in the period, each with
 * its negotiation and collective and their exact args, the fused groups).
 * This file then checks, per rank:
 *  - with 2+ ranks: period 1 has an eager (or, inside a node, a "shm,
 *    fast" one: src/exec/fast.c), a fused and a plain ring (or shm, cma,
 *    hier) allreduce and a mark for another rank; period 2 a plain one.
 */
#define _GNU_SOURCE
#include "timeline_common.h"

#include <limits.h>
#include <stdarg.h>
#include <unistd.h>

#define MAX_TASKS 32
#define BIG_COUNT (1 << 18) /* float32: 1 MiB */

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

int g_rank, g_size;
sub_t g_subs[2][MAX_SUBS];
int g_nsubs[2];
static char g_dir[PATH_MAX];
static task_t g_tasks[MAX_TASKS];
static int g_ntasks;

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
                              "%s: element %lld (rank %d's %lld) is wrong", t->name, (long long)pos,
                              r, (long long)k);
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

/* printf into a PATH_MAX buffer; fails the test if it does not fit. */
__attribute__((format(printf, 2, 3))) static const char *fmt_path(char *buf, const char *fmt, ...)
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
                  "once",
                  path, r, st->eager, st->fused, st->ring);
        /* rank 0 hears every submission of a new name, and every rank its
         * exchange partners' parts, which say what their ranks have waiting
         * (docs/negotiation.md) */
        CHECK_MSG(st->marks > 0, "%s: no 'rank N ready/submitted' mark of rank %d for another rank",
                  path, r);
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
    g_rank = tc_rank();
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
    add_task("tl/gather.i64", TT_ALLGATHER, TC_INT64, TC_SUM, 0, 2, ag_rows(g_rank), 3)->ag_rows =
        1;
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
        CHECK_MSG(g_rank != 0 || access(path1, F_OK) != 0, "%s exists before tc_shutdown", path1);
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
    CHECK_OK(tc_timeline_start(
        dir_path(buf, strcmp(mode, "job-api") == 0 ? "api.json" : "api.%r.json")));
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
        CHECK_MSG(g_rank != 0 || access(path2, F_OK) != 0, "%s exists before tc_shutdown", path2);
        CHECK_STATUS(tc_timeline_start(dir_path(buf, "api3.json")), TC_ERR_STATE);
        CHECK_STR_CONTAINS(tc_last_error(), "already recorded");
    }

    tt_final_barrier();
    CHECK_OK(tc_shutdown());
    for (int i = 0; i < 5; i++) {
        static const char *const refused[] = {"early", "other", "api2", "tl.rank", "api.rank"};
        fmt_path(want, "%s/%s%s%d.json", g_dir, refused[i], i < 3 ? "." : "", g_rank);
        CHECK_MSG(access(want, F_OK) != 0,
                  "%s exists: a refused tc_timeline_start created it, "
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
               s1[0].eager, s1[0].ring, s1[0].failed, s1[0].marks, path2, s2[0].events, s2[0].rows,
               tt_now() - t0);
    }
    return 0;
}
