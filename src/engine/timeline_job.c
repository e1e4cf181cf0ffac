/*
 * timeline_job.c - the engine's side of the timeline: the public
 * tc_timeline_start/stop (the writer in util/timeline.c knows no engine;
 * this file asks the engine for the rank and hands it down), and the
 * job-wide timeline: one file with every rank's events.
 *
 * A path with "%r", or any path in a job of one rank, gives each rank its
 * own file, written as it goes. A path without "%r" on more than one rank
 * gives one file for the whole job: each rank records its *part* (util
 * encodes it into a private temporary file), and when the engine thread
 * ends, after its last event and before tcoll's communicators are freed,
 * tc__tl_job_finish sends every part to rank 0, which writes one trace with
 * a process row per rank (pid = rank, "rank N"). Only bytes travel, over
 * MPI on the control communicator: the ranks need not share a file system.
 *
 *   step  who        does
 *   ----  ---------  ---------------------------------------------------------
 *    1    every rank stops its timeline (after the engine's last event); no
 *                    job-wide timeline starts on this rank after that
 *    2    worker     HEAD -> rank 0: whether it has a part, and its size,
 *                    start time, counts and path. Every worker sends one,
 *                    part or not: rank 0 cannot know otherwise.
 *    3    worker     DATA -> rank 0: its part, in chunks of TL_JOB_CHUNK bytes
 *    4    rank 0     receives every HEAD; if any rank has a part, opens the
 *                    file (its own part's path, else the lowest such rank's)
 *                    and, rank by rank in order, writes its own part or the
 *                    DATA it receives from that rank
 *
 * The whole exchange must end within TCOLL_SHUTDOWN_TIMEOUT_S. Past it, or
 * on an MPI error, the requests still pending are left as they are (their
 * buffers kept), the engine skips MPI's teardown and tc_shutdown reports
 * the error. Rank 0's file is valid JSON all the same, with what arrived
 * (otherData says which ranks are incomplete); a worker that could not send
 * its part writes it to a file of its own (tc__tl_rank_path: "x.json" ->
 * "x.rank3.json"). A rank whose engine stopped after a failure (MPI may be
 * unusable, peers may be gone) takes no part at all: it writes its part to
 * that file of its own, with a warning.
 *
 * Cost when no rank records a job-wide timeline: one small message per
 * worker at shutdown.
 */
#define _GNU_SOURCE
#include "engine/timeline_job.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/transport_mpi.h"
#include "util/backoff.h"
#include "util/le.h"
#include "util/log.h"
#include "util/status.h"
#include "util/timeline.h"

/* Tags on the control communicator; engine.c's own are 1..6. */
#define TAG_TL_HEAD 7
#define TAG_TL_DATA 8

#define TL_JOB_CHUNK ((size_t)4 << 20)
#define HEAD_VERSION 1u
/* u32 version, u32 has_part, u64 bytes, i64 start, u64 end, events, dropped,
 * u32 path length; then the path */
#define HEAD_FIXED 52u
#define HEAD_MAX (HEAD_FIXED + TC_TL_PATH_MAX)

/* closed: the engine has finished the job-wide timeline on this rank, so
 * none may start any more. Under mu, held across a part's start so that
 * tc__tl_job_finish either sees it running or refuses it. */
static struct {
    pthread_mutex_t mu;
    int closed;
} job = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Buffers of sends and receives left pending after a failed exchange: MPI
 * may still touch them, so they are kept (reachable, not leaked). */
static void **g_abandoned;
static size_t g_nabandoned;

static void abandon(void *p)
{
    void **keep;

    if (p == NULL) {
        return;
    }
    keep = realloc(g_abandoned, (g_nabandoned + 1) * sizeof(*keep));
    if (keep != NULL) {
        g_abandoned = keep;
        g_abandoned[g_nabandoned++] = p;
    }
}

static void put_err(char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void put_err(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || len == 0) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

/* A job-wide timeline: a path without "%r" in a job of several ranks. */
static int is_job_path(const char *path, int size)
{
    return size > 1 && strstr(path, "%r") == NULL;
}

tc_status_t tc__tl_job_start(const char *path, int rank, int size, char *err, size_t errlen)
{
    tc_status_t st;

    if (path == NULL || !is_job_path(path, size)) {
        return tc__tl_start(path, rank, err, errlen);
    }
    pthread_mutex_lock(&job.mu);
    if (job.closed) {
        put_err(err, errlen,
                "tcoll has shut down on this rank: a job-wide timeline (%s, a "
                "path without %%r) can no longer be gathered",
                path);
        st = TC_ERR_STATE;
    } else {
        st = tc__tl_start_part(path, rank, err, errlen);
    }
    pthread_mutex_unlock(&job.mu);
    return st;
}

void tc__tl_job_reopen(void)
{
    pthread_mutex_lock(&job.mu);
    job.closed = 0;
    pthread_mutex_unlock(&job.mu);
}

/* ------------------------------------------------------------------------ */
/* The exchange                                                              */
/* ------------------------------------------------------------------------ */

/* HEAD for info (NULL: no part) into buf (HEAD_MAX bytes); its length. */
static size_t head_encode(const tc_tl_part_info_t *info, unsigned char *buf)
{
    size_t plen = info != NULL ? strlen(info->path) : 0;

    tc__le_put32(buf, HEAD_VERSION);
    tc__le_put32(buf + 4, info != NULL);
    tc__le_put64(buf + 8, info != NULL ? info->bytes : 0);
    tc__le_put64(buf + 16, info != NULL ? (uint64_t)info->start_unix_ns : 0);
    tc__le_put64(buf + 24, info != NULL ? info->end_ns : 0);
    tc__le_put64(buf + 32, info != NULL ? info->events : 0);
    tc__le_put64(buf + 40, info != NULL ? info->dropped : 0);
    tc__le_put32(buf + 48, (uint32_t)plen);
    memcpy(buf + HEAD_FIXED, info != NULL ? info->path : "", plen);
    return HEAD_FIXED + plen;
}

/* 1 and info filled when HEAD says rank has a part, 0 when it has none,
 * -1 when it is malformed. */
static int head_decode(const unsigned char *buf, size_t len, int rank, tc_tl_part_info_t *info)
{
    uint32_t plen;

    if (len < HEAD_FIXED || tc__le_get32(buf) != HEAD_VERSION) {
        return -1;
    }
    plen = tc__le_get32(buf + 48);
    if (plen >= TC_TL_PATH_MAX || len != HEAD_FIXED + plen) {
        return -1;
    }
    if (tc__le_get32(buf + 4) == 0) {
        return 0;
    }
    memset(info, 0, sizeof(*info));
    info->rank = rank;
    info->bytes = tc__le_get64(buf + 8);
    info->start_unix_ns = (int64_t)tc__le_get64(buf + 16);
    info->end_ns = tc__le_get64(buf + 24);
    info->events = tc__le_get64(buf + 32);
    info->dropped = tc__le_get64(buf + 40);
    memcpy(info->path, buf + HEAD_FIXED, plen);
    info->path[plen] = '\0';
    return 1;
}

/* Waits for n requests under back-off until deadline_ns (CLOCK_MONOTONIC).
 * MPI_SUCCESS, an MPI error code, or -1 at the deadline. */
static int wait_until(int n, MPI_Request *reqs, MPI_Status *sts, uint64_t deadline_ns,
                      const tc_config_t *cfg)
{
    tc_backoff_t bo;

    tc__backoff_init(&bo, (uint32_t)cfg->spin, (uint32_t)cfg->backoff_max_us);
    for (;;) {
        int done = 0;
        int rc = MPI_Testall(n, reqs, &done, sts != NULL ? sts : MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        if (done) {
            return MPI_SUCCESS;
        }
        if (tc__now_ns() > deadline_ns) {
            return -1;
        }
        tc__backoff_wait(&bo);
    }
}

/* why for a failed wait: rc from wait_until. */
static tc_status_t wait_failed(int rc, const char *what, const tc_config_t *cfg, char *why,
                               size_t len)
{
    char text[MPI_MAX_ERROR_STRING];

    if (rc == -1) {
        put_err(why, len,
                "gathering the job-wide timeline: %s within %d s "
                "(TCOLL_SHUTDOWN_TIMEOUT_S); MPI was left as it is",
                what, cfg->shutdown_timeout_s);
        return TC_ERR_TIMEOUT;
    }
    put_err(why, len, "gathering the job-wide timeline: %s: %s; MPI was left as it is", what,
            tc__mpi_strerror(rc, text, sizeof(text)));
    return TC_ERR_TRANSPORT;
}

/* A worker: HEAD, then its part, to rank 0. */
static tc_status_t send_part(MPI_Comm comm, tc_tl_part_t *part, uint64_t deadline_ns,
                             const tc_config_t *cfg, char *why, size_t len)
{
    const tc_tl_part_info_t *info = part != NULL ? tc__tl_part_info(part) : NULL;
    unsigned char *head = malloc(HEAD_MAX);
    char *chunk = NULL;
    MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    char err[TC_ERRMSG_MAX];
    uint64_t off = 0;
    int rc, read_failed = 0;

    if (head == NULL || (info != NULL && (chunk = malloc(TL_JOB_CHUNK)) == NULL)) {
        free(head);
        /* Rank 0 waits for our HEAD until its deadline and reports it. */
        put_err(why, len, "gathering the job-wide timeline: out of memory");
        return TC_ERR_NOMEM;
    }
    rc = MPI_Isend(head, (int)head_encode(info, head), MPI_BYTE, 0, TAG_TL_HEAD, comm, &reqs[0]);
    while (rc == MPI_SUCCESS && info != NULL && off < info->bytes) {
        size_t n = info->bytes - off < TL_JOB_CHUNK ? (size_t)(info->bytes - off) : TL_JOB_CHUNK;
        if (!read_failed && tc__tl_part_read(part, off, chunk, n, err, sizeof(err)) != TC_OK) {
            /* Rank 0 expects info->bytes: send zeros, which it rejects as
             * malformed (the rank's section ends there, marked incomplete). */
            TC_ERROR("timeline", "%s", err);
            read_failed = 1;
        }
        if (read_failed) {
            memset(chunk, 0, n);
        }
        rc = MPI_Isend(chunk, (int)n, MPI_BYTE, 0, TAG_TL_DATA, comm, &reqs[1]);
        if (rc == MPI_SUCCESS) {
            rc = wait_until(2, reqs, NULL, deadline_ns, cfg);
        }
        off += n;
    }
    if (rc == MPI_SUCCESS) {
        rc = wait_until(2, reqs, NULL, deadline_ns, cfg);
    }
    if (rc != MPI_SUCCESS) {
        abandon(head);
        abandon(chunk);
        return wait_failed(rc,
                           info != NULL ? "rank 0 did not take this rank's part"
                                        : "rank 0 did not take this rank's report",
                           cfg, why, len);
    }
    free(head);
    free(chunk);
    return TC_OK;
}

/* Rank 0's end of one rank's DATA (or its own part, from the file), fed
 * to m (NULL: received and dropped). TC_OK when every byte arrived. */
static tc_status_t take_part(MPI_Comm comm, int rank, tc_tl_part_t *mine,
                             const tc_tl_part_info_t *info, tc_tl_merge_t *m, char *chunk,
                             uint64_t deadline_ns, const tc_config_t *cfg, char *why, size_t len)
{
    char err[TC_ERRMSG_MAX], what[64];
    uint64_t off = 0;
    int feed = m != NULL;

    while (off < info->bytes) {
        size_t n = info->bytes - off < TL_JOB_CHUNK ? (size_t)(info->bytes - off) : TL_JOB_CHUNK;
        if (rank == 0) {
            if (tc__tl_part_read(mine, off, chunk, n, err, sizeof(err)) != TC_OK) {
                TC_ERROR("timeline", "%s", err);
                return TC_OK; /* nothing on the wire to drain: the section ends here */
            }
        } else {
            MPI_Request req = MPI_REQUEST_NULL;
            int rc = MPI_Irecv(chunk, (int)n, MPI_BYTE, rank, TAG_TL_DATA, comm, &req);
            if (rc == MPI_SUCCESS) {
                rc = wait_until(1, &req, NULL, deadline_ns, cfg);
            }
            if (rc != MPI_SUCCESS) {
                snprintf(what, sizeof(what), "rank %d's part did not arrive", rank);
                return wait_failed(rc, what, cfg, why, len);
            }
        }
        if (feed && tc__tl_merge_feed(m, chunk, n, err, sizeof(err)) != TC_OK) {
            TC_ERROR("timeline", "%s; the rest of its events are left out", err);
            feed = 0; /* keep receiving: the rank waits for its sends */
        }
        off += n;
    }
    return TC_OK;
}

/* Rank 0: every HEAD, then every part, into one file. */
static tc_status_t gather_parts(MPI_Comm comm, int size, tc_tl_part_t *mine, uint64_t deadline_ns,
                                const tc_config_t *cfg, char *why, size_t len)
{
    unsigned char *heads = malloc((size_t)size * HEAD_MAX);
    MPI_Request *reqs = malloc((size_t)size * sizeof(*reqs));
    MPI_Status *sts = malloc((size_t)size * sizeof(*sts));
    tc_tl_part_info_t *infos = calloc((size_t)size, sizeof(*infos));
    char *has = calloc((size_t)size, 1);
    char *chunk = malloc(TL_JOB_CHUNK);
    char err[TC_ERRMSG_MAX], what[256];
    const char *path = NULL;
    tc_tl_merge_t *m = NULL;
    tc_status_t st = TC_OK;
    int64_t origin = INT64_MAX;
    uint64_t events = 0;
    int r, rc = MPI_SUCCESS, nparts = 0, nincomplete = 0;

    if (heads == NULL || reqs == NULL || sts == NULL || infos == NULL || has == NULL ||
        chunk == NULL) {
        put_err(why, len, "gathering the job-wide timeline: out of memory");
        st = TC_ERR_NOMEM; /* the workers time out and keep their parts */
        goto out;
    }

    /* Step 4a: every worker's HEAD. */
    reqs[0] = MPI_REQUEST_NULL;
    for (r = 1; r < size && rc == MPI_SUCCESS; r++) {
        rc = MPI_Irecv(heads + (size_t)r * HEAD_MAX, (int)HEAD_MAX, MPI_BYTE, r, TAG_TL_HEAD, comm,
                       &reqs[r]);
    }
    for (; r < size; r++) {
        reqs[r] = MPI_REQUEST_NULL;
    }
    if (rc == MPI_SUCCESS) {
        rc = wait_until(size, reqs, sts, deadline_ns, cfg);
    }
    if (rc != MPI_SUCCESS) {
        /* Name the silent ranks; the file gets this rank's part alone. */
        size_t used = (size_t)snprintf(what, sizeof(what), "no report from rank");
        for (r = 1; r < size; r++) {
            int flag = 1;
            if (reqs[r] != MPI_REQUEST_NULL) {
                MPI_Test(&reqs[r], &flag, MPI_STATUS_IGNORE);
            }
            if (!flag && used < sizeof(what) - 16) {
                used += (size_t)snprintf(what + used, sizeof(what) - used, "%s %d",
                                         used > 19 ? "," : "", r);
            }
        }
        abandon(heads);
        heads = NULL;
        st = wait_failed(rc, what, cfg, why, len);
    }
    if (mine != NULL) {
        infos[0] = *tc__tl_part_info(mine);
        has[0] = 1;
    }
    for (r = 1; heads != NULL && r < size; r++) {
        int count = 0, got;
        MPI_Get_count(&sts[r], MPI_BYTE, &count);
        got = head_decode(heads + (size_t)r * HEAD_MAX, (size_t)count, r, &infos[r]);
        if (got < 0) {
            TC_ERROR("timeline",
                     "rank %d's report on its part of the job-wide timeline is "
                     "malformed; its part is left out",
                     r);
        }
        has[r] = got > 0;
    }
    for (r = 0; r < size; r++) {
        if (has[r]) {
            nparts++;
            path = path != NULL ? path : infos[r].path;
            origin = infos[r].start_unix_ns < origin ? infos[r].start_unix_ns : origin;
        }
    }
    if (nparts == 0) {
        goto out;
    }

    /* Step 4b: the parts, rank by rank, into the file. */
    for (r = 0; r < size; r++) {
        if (has[r] && strcmp(infos[r].path, path) != 0) {
            TC_WARN("timeline",
                    "rank %d recorded its part of the job-wide timeline for %s; "
                    "it goes to %s with the others",
                    r, infos[r].path, path);
        }
    }
    if (tc__tl_merge_open(path, origin, &m, err, sizeof(err)) != TC_OK) {
        TC_ERROR("timeline", "%s: no job-wide timeline (the parts are received and dropped)", err);
        m = NULL;
    }
    for (r = 0; r < size && (r == 0 || st == TC_OK); r++) {
        tc_status_t got;
        if (!has[r]) {
            continue;
        }
        if (m != NULL) {
            tc__tl_merge_rank(m, &infos[r]);
        }
        got = take_part(comm, r, mine, &infos[r], m, chunk, deadline_ns, cfg, why, len);
        if (got != TC_OK) {
            st = got;
            abandon(chunk); /* a receive into it is still pending */
            chunk = NULL;
        }
        if (m != NULL && !tc__tl_merge_rank_end(m, got == TC_OK)) {
            nincomplete++;
        }
        events += got == TC_OK ? infos[r].events : 0;
    }
    if (m != NULL) {
        if (tc__tl_merge_close(m, err, sizeof(err)) != TC_OK) {
            TC_ERROR("timeline", "%s; the file is incomplete", err);
        } else if (nincomplete > 0 || st != TC_OK) {
            TC_WARN("timeline",
                    "job-wide timeline %s: written, but the parts of some of the %d "
                    "ranks that recorded one are incomplete or missing (see its "
                    "otherData)",
                    path, nparts);
        } else {
            TC_INFO("timeline", "job-wide timeline %s: %" PRIu64 " events of %d ranks", path,
                    events, nparts);
        }
    }
out:
    free(heads);
    free(reqs);
    free(sts);
    free(infos);
    free(has);
    free(chunk);
    return st;
}

/* This rank's part alone, in its own file, because reason. */
static void save_alone(tc_tl_part_t *part, int rank, const char *reason)
{
    const tc_tl_part_info_t *info = tc__tl_part_info(part);
    char path[TC_TL_PATH_MAX], err[TC_ERRMSG_MAX];

    if (tc__tl_rank_path(info->path, rank, path, sizeof(path)) != 0) {
        TC_ERROR("timeline",
                 "%s: this rank's part of the job-wide timeline %s is lost (the "
                 "path for its own file is too long)",
                 reason, info->path);
        return;
    }
    if (tc__tl_part_save(part, path, err, sizeof(err)) != TC_OK) {
        TC_ERROR("timeline",
                 "%s: this rank's part of the job-wide timeline %s could not be "
                 "saved either: %s",
                 reason, info->path, err);
        return;
    }
    TC_WARN("timeline", "%s: this rank's part of the job-wide timeline %s is in %s instead", reason,
            info->path, path);
}

tc_status_t tc__tl_job_finish(MPI_Comm comm, int rank, int size, int usable, const tc_config_t *cfg,
                              char *why, size_t len)
{
    tc_tl_part_t *part;
    tc_status_t st = TC_OK;

    pthread_mutex_lock(&job.mu);
    job.closed = 1;
    pthread_mutex_unlock(&job.mu);
    /* After the engine's last event: a rank's own file is final, a part is
     * kept for what follows. */
    (void)tc__tl_stop();
    part = tc__tl_part_take();
    if (size > 1 && usable) {
        uint64_t deadline_ns = tc__now_ns() + (uint64_t)cfg->shutdown_timeout_s * 1000000000ull;
        if (rank == 0) {
            st = gather_parts(comm, size, part, deadline_ns, cfg, why, len);
        } else {
            st = send_part(comm, part, deadline_ns, cfg, why, len);
            if (st != TC_OK && part != NULL) {
                save_alone(part, rank, "rank 0 did not take it");
            }
        }
        if (st != TC_OK) {
            TC_ERROR("timeline", "%s", why);
        }
    } else if (part != NULL) {
        save_alone(part, rank,
                   "tcoll stopped after a failure, so the ranks' parts cannot be "
                   "gathered");
    }
    tc__tl_part_free(part);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Public API                                                                */
/* ------------------------------------------------------------------------ */

tc_status_t tc_timeline_start(const char *path)
{
    char err[TC_ERRMSG_MAX];
    tc_status_t st;
    int rank;

    tc__clear_error();
    if (path == NULL || path[0] == '\0') {
        return tc__set_error(TC_ERR_ARG, "tc_timeline_start: path is %s",
                             path == NULL ? "NULL" : "empty");
    }
    rank = tc_rank();
    if (rank < 0) {
        return tc__set_error(TC_ERR_STATE, "tc_timeline_start: tcoll is not initialized "
                                           "(the file is named and marked by the rank)");
    }
    st = tc__tl_job_start(path, rank, tc_size(), err, sizeof(err));
    if (st != TC_OK) {
        return tc__set_error(st, "tc_timeline_start: %s", err);
    }
    return TC_OK;
}

tc_status_t tc_timeline_stop(void)
{
    char err[TC_ERRMSG_MAX];
    tc_status_t st;

    tc__clear_error();
    st = tc__tl_stop_err(err, sizeof(err));
    if (st != TC_OK) {
        return tc__set_error(st, "tc_timeline_stop: %s", err);
    }
    return TC_OK;
}
