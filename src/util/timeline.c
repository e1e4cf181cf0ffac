/*
 * timeline.c - this rank's timeline as a Chrome trace, written by a thread
 * of its own so that the threads that record (above all the engine thread)
 * never do I/O, never format and never wait for the disk: starting and
 * stopping it, and that writer thread. The record calls and their buffers
 * are in timeline_record.c, the JSON text in timeline_json.c, parts and
 * their merge in timeline_part.c (timeline_internal.h has the map).
 *
 *   step  who                 does
 *   ----  ------------------  --------------------------------------------------
 *    1    tc__tl_start        opens the file, formats the header into the
 *                             writer's output buffer, sets active, starts the writer
 *    2    any thread          appends a record (or counts a drop); the first
 *                             record wakes an idle writer, reaching half the
 *                             buffer wakes a batching one
 *    3    writer              woken with records present, waits up to
 *                             TL_FLUSH_NS more (or until half full) so that
 *                             batches are large, then swaps buffers
 *    4    writer              names new rows ("M" events), formats the records,
 *                             writes them with one write(2) per TL_OUT_CAP bytes
 *    5    tc__tl_stop         clears active and sets stopping under tc__tl.mu:
 *                             no record is taken after that; wakes the writer
 *    6    writer              takes the last buffer, writes it, the drop report
 *                             and the closing lines, closes the file, exits
 *    7    tc__tl_stop         joins the writer, frees everything, logs counts
 *
 * Parts (tc__tl_start_part, for a job-wide timeline): the same recording and
 * the same writer thread, but the writer encodes each record as a compact
 * binary item (timeline_part.c) into a private, unlinked temporary file
 * instead of formatting it, with no header and no footer; stop keeps the
 * file until tc__tl_part_take hands it over. This file never calls MPI or
 * the engine: the rank is always given.
 */
#define _GNU_SOURCE
#include "util/timeline_internal.h"

#include "util/backoff.h"
#include "util/log.h"
#include "util/status.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

_Static_assert(TC_TL_PATH_MAX >= PATH_MAX, "TC_TL_PATH_MAX must hold any path");

/* Longest a recorded event waits in the buffer before the writer takes it. */
#define TL_FLUSH_NS 100000000ull

/* Everything the writer owns: set up by start before the thread exists,
 * read by stop after it was joined. */
typedef struct {
    tl_out_t out;
    char path[PATH_MAX];
    int rank;
    uint64_t t0_ns;        /* CLOCK_MONOTONIC at the start: ts 0 */
    int64_t start_unix_ns; /* CLOCK_REALTIME at the same moment, for merging */
    tl_rec_t *mine;        /* the buffer the writer formats from */
    uint32_t tracks_written;
    int part; /* encode items into a part (a temporary file), not JSON */
} tl_writer_t;

/* Start and stop, serialized by ctl.mu (held across the join in stop). */
static struct {
    pthread_mutex_t mu;
    int running;
    pthread_t thread;
    tl_writer_t *w;
    tc_tl_part_t *pending; /* the last part, until tc__tl_part_take */
    uint32_t test_cap;
    int test_hold;
} ctl = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ------------------------------------------------------------------------ */
/* The writer thread                                                         */
/* ------------------------------------------------------------------------ */

static void *writer_main(void *arg)
{
    tl_writer_t *w = arg;
    uint64_t done = 0, written, dropped;
    uint32_t n, ntracks, i;
    int last;

    pthread_mutex_lock(&tc__tl.mu);
    for (;;) {
        tc__tl.stats.written += done;
        while (!tc__tl.stopping && (tc__tl.nfill == 0 || tc__tl.hold)) {
            tc__tl.writer_wait = WAIT_IDLE;
            pthread_cond_wait(&tc__tl.cv, &tc__tl.mu);
            tc__tl.stats.wakeups++;
        }
        if (!tc__tl.stopping && tc__tl.nfill < tc__tl.batch_min) {
            struct timespec deadline = tc__deadline_after_ns(TL_FLUSH_NS);
            while (!tc__tl.stopping && tc__tl.nfill < tc__tl.batch_min) {
                int rc;
                tc__tl.writer_wait = WAIT_BATCH;
                rc = pthread_cond_timedwait(&tc__tl.cv, &tc__tl.mu, &deadline);
                tc__tl.stats.wakeups++;
                if (rc == ETIMEDOUT) {
                    break;
                }
            }
        }
        tc__tl.writer_wait = WAIT_NONE;
        {
            tl_rec_t *full = tc__tl.fill;
            tc__tl.fill = w->mine;
            w->mine = full;
        }
        n = tc__tl.nfill;
        tc__tl.nfill = 0;
        tc__tl.stats.batches += n > 0;
        ntracks = tc__tl.ntracks;
        last = tc__tl.stopping;
        pthread_mutex_unlock(&tc__tl.mu);

        /* Rows named before their first event; tc__tl.tracks[0, ntracks) is
         * immutable once published under tc__tl.mu, which we just held. */
        for (i = w->tracks_written; i < ntracks; i++) {
            if (w->part) {
                tc__tl_encode_row(&w->out, TC_TL_TRACK_FIRST + (int)i, tc__tl.tracks[i].name,
                                  tc__tl.tracks[i].len);
            } else {
                tc__tl_write_row(&w->out, w->rank, TC_TL_TRACK_FIRST + (int)i,
                                 tc__tl.tracks[i].name, tc__tl.tracks[i].len);
            }
        }
        w->tracks_written = ntracks;
        for (i = 0; i < n; i++) {
            if (w->part) {
                tc__tl_encode_event(&w->out, w->t0_ns, &w->mine[i]);
            } else {
                tc__tl_write_event(&w->out, w->rank, w->t0_ns, &w->mine[i]);
            }
        }
        done = n;
        tc__tl_out_flush(&w->out);
        if (last) {
            break;
        }
        pthread_mutex_lock(&tc__tl.mu);
    }
    pthread_mutex_lock(&tc__tl.mu);
    tc__tl.stats.written += done;
    written = tc__tl.stats.written;
    dropped = tc__tl.stats.dropped;
    pthread_mutex_unlock(&tc__tl.mu);
    if (!w->part) { /* a part's file stays open: tl_stop hands it on */
        tc__tl_write_footer(&w->out, w->rank, w->t0_ns, w->start_unix_ns, written, dropped);
        tc__tl_out_flush(&w->out);
        if (fclose(w->out.f) != 0 && w->out.err == 0) {
            w->out.err = errno != 0 ? errno : EIO;
        }
        w->out.f = NULL;
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Start and stop                                                            */
/* ------------------------------------------------------------------------ */

/* path with each "%r" replaced by rank; -1 if the result does not fit. */
static int expand_path(const char *path, int rank, char *out, size_t outlen)
{
    size_t len = 0;

    while (*path != '\0') {
        if (path[0] == '%' && path[1] == 'r') {
            int n = snprintf(out + len, outlen - len, "%d", rank);
            if (n < 0 || (size_t)n >= outlen - len) {
                return -1;
            }
            len += (size_t)n;
            path += 2;
            continue;
        }
        if (len + 1 >= outlen) {
            return -1;
        }
        out[len++] = *path++;
    }
    out[len] = '\0';
    return 0;
}

/* Touches every page of p (calloc may hand out pages not yet mapped). */
static void prefault(void *p, size_t len)
{
    volatile char *c = p;
    size_t i;

    for (i = 0; i < len; i += 4096) {
        c[i] = 0;
    }
}

static void free_writer(tl_writer_t *w)
{
    if (w != NULL) {
        free(w->out.buf);
        free(w->mine);
        free(w);
    }
}

/* A private temporary file for a part: created in $TMPDIR (or /tmp) and
 * unlinked at once, so nothing is left behind whatever happens. NULL with
 * msg on failure. */
static FILE *open_part_file(char *msg, size_t len)
{
    const char *dir = getenv("TMPDIR");
    char tmpl[PATH_MAX];
    FILE *f;
    int fd, n;

    if (dir == NULL || dir[0] == '\0') {
        dir = "/tmp";
    }
    n = snprintf(tmpl, sizeof(tmpl), "%s/tcoll-timeline-XXXXXX", dir);
    if (n < 0 || (size_t)n >= sizeof(tmpl)) {
        snprintf(msg, len,
                 "TMPDIR (%.256s...) is too long for this rank's part of the job-wide "
                 "timeline",
                 dir);
        return NULL;
    }
    fd = mkostemp(tmpl, O_CLOEXEC);
    if (fd < 0) {
        snprintf(msg, len,
                 "cannot create a temporary file in %s for this rank's part of the "
                 "job-wide timeline: %s",
                 dir, strerror(errno));
        return NULL;
    }
    (void)unlink(tmpl);
    f = fdopen(fd, "w+");
    if (f == NULL) {
        snprintf(msg, len,
                 "cannot open the temporary file for this rank's part of the job-wide "
                 "timeline: %s",
                 strerror(errno));
        close(fd);
    }
    return f;
}

/* Whether the file at path could be created later: its folder exists and
 * is writable. -1 with msg if not. */
static int check_dir(const char *path, char *msg, size_t len)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');

    if (slash == NULL) {
        snprintf(dir, sizeof(dir), ".");
    } else if (slash == path) {
        snprintf(dir, sizeof(dir), "/");
    } else {
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    }
    if (access(dir, W_OK | X_OK) != 0) {
        snprintf(msg, len, "cannot create the timeline file %s (in its folder: %s)", path,
                 strerror(errno));
        return -1;
    }
    return 0;
}

/* The one start: a file (part 0) or a part (part 1). */
static tc_status_t tl_start(const char *path, int rank, int part, char *err, size_t errlen)
{
    char msg[PATH_MAX + 256];
    tl_writer_t *w;
    tl_rec_t *fill;
    tl_track_t *tracks;
    struct timespec now;
    uint32_t cap;
    tc_status_t st;
    int rc;

    if (path == NULL || path[0] == '\0') {
        tc__tl_put_err(err, errlen, "the timeline path is %s", path == NULL ? "NULL" : "empty");
        return TC_ERR_ARG;
    }
    pthread_mutex_lock(&ctl.mu);
    if (ctl.running) {
        tc__tl_put_err(err, errlen, "a timeline is already being written (to %s)", ctl.w->path);
        st = TC_ERR_STATE;
        goto err_unlock;
    }
    if (part && ctl.pending != NULL) {
        tc__tl_put_err(err, errlen,
                       "this rank already recorded its part of the job-wide timeline %s, "
                       "which is written at tc_shutdown; one per run (a path with %%r "
                       "writes a file per rank at once)",
                       ctl.pending->info.path);
        st = TC_ERR_STATE;
        goto err_unlock;
    }
    cap = ctl.test_cap != 0 ? ctl.test_cap : TC_TL_DEFAULT_CAPACITY;
    w = calloc(1, sizeof(*w));
    fill = calloc(cap, sizeof(*fill));
    tracks = calloc(TC_TL_MAX_TRACKS, sizeof(*tracks));
    if (w == NULL || fill == NULL || tracks == NULL ||
        (w->mine = calloc(cap, sizeof(*w->mine))) == NULL ||
        (w->out.buf = malloc(TL_OUT_CAP)) == NULL) {
        snprintf(msg, sizeof(msg), "out of memory for a timeline buffer of %u events", cap);
        st = TC_ERR_NOMEM;
        goto err_free;
    }
    /* Fault the buffers in now, so that the first records do not. */
    prefault(fill, (size_t)cap * sizeof(*fill));
    prefault(w->mine, (size_t)cap * sizeof(*w->mine));
    if (expand_path(path, rank, w->path, sizeof(w->path)) != 0) {
        snprintf(msg, sizeof(msg), "the timeline path \"%.256s...\" is longer than %d bytes", path,
                 PATH_MAX - 1);
        st = TC_ERR_ARG;
        goto err_free;
    }
    w->part = part;
    if (part) {
        if (check_dir(w->path, msg, sizeof(msg)) != 0) {
            st = TC_ERR_ARG;
            goto err_free;
        }
        w->out.f = open_part_file(msg, sizeof(msg));
    } else {
        w->out.f = fopen(w->path, "we");
        if (w->out.f == NULL) {
            snprintf(msg, sizeof(msg), "cannot open the timeline file %s: %s", w->path,
                     strerror(errno));
        }
    }
    if (w->out.f == NULL) {
        st = TC_ERR_ARG;
        goto err_free;
    }
    /* The writer hands whole batches to fwrite; stdio need not copy them. */
    setvbuf(w->out.f, NULL, _IONBF, 0);
    w->rank = rank;
    w->t0_ns = tc__now_ns();
    clock_gettime(CLOCK_REALTIME, &now);
    w->start_unix_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    if (!part) {
        /* into the buffer: the writer's first batch writes it */
        tc__tl_write_open(&w->out);
        tc__tl_write_rank_meta(&w->out, w->rank);
    }

    pthread_mutex_lock(&tc__tl.mu);
    tc__tl.fill = fill;
    tc__tl.nfill = 0;
    tc__tl.cap = cap;
    tc__tl.batch_min = cap / 2 > 0 ? cap / 2 : 1;
    tc__tl.hold = ctl.test_hold;
    tc__tl.stopping = 0;
    tc__tl.writer_wait = WAIT_NONE;
    tc__hmap_init(&tc__tl.track_map);
    tc__tl.tracks = tracks;
    tc__tl.ntracks = 0;
    memset(&tc__tl.stats, 0, sizeof(tc__tl.stats));
    tc__tl.active = 1;
    pthread_mutex_unlock(&tc__tl.mu);

    rc = pthread_create(&ctl.thread, NULL, writer_main, w);
    if (rc != 0) {
        pthread_mutex_lock(&tc__tl.mu);
        tc__tl.active = 0;
        tc__tl.fill = NULL;
        tc__tl.tracks = NULL;
        pthread_mutex_unlock(&tc__tl.mu);
        fclose(w->out.f);
        snprintf(msg, sizeof(msg), "cannot start the timeline writer thread: %s", strerror(rc));
        st = TC_ERR_NOMEM;
        goto err_free;
    }
    ctl.w = w;
    ctl.running = 1;
    /* Relaxed: a hint for callers (see tc__tl_on); tc__tl.active is the truth. */
    atomic_store_explicit(&tc__tl_on, 1, memory_order_relaxed);
    pthread_mutex_unlock(&ctl.mu);
    if (part) {
        TC_INFO("timeline",
                "recording this rank's part of the job-wide timeline %s (buffer of "
                "%u events); rank 0 writes the file at tc_shutdown",
                w->path, cap);
    } else {
        TC_INFO("timeline", "writing the timeline to %s (buffer of %u events)", w->path, cap);
    }
    return TC_OK;

err_free:
    free(tracks);
    free(fill);
    free_writer(w);
    TC_WARN("timeline", "%s", msg);
    tc__tl_put_err(err, errlen, "%s", msg);
err_unlock:
    pthread_mutex_unlock(&ctl.mu);
    return st;
}

tc_status_t tc__tl_start(const char *path, int rank, char *err, size_t errlen)
{
    return tl_start(path, rank, 0, err, errlen);
}

tc_status_t tc__tl_start_part(const char *path, int rank, char *err, size_t errlen)
{
    return tl_start(path, rank, 1, err, errlen);
}

/* After the writer of a part has exited: the part, kept for the merge, or
 * an error in err. */
static tc_status_t keep_part(tl_writer_t *w, const tc_tl_stats_t *stats, char *err, size_t errlen)
{
    tc_tl_part_t *p;

    if (w->out.err != 0) {
        TC_ERROR("timeline",
                 "writing this rank's part of the job-wide timeline %s to a "
                 "temporary file failed: %s; the part is lost",
                 w->path, strerror(w->out.err));
        tc__tl_put_err(err, errlen,
                       "writing this rank's part of the job-wide timeline %s to a "
                       "temporary file failed: %s",
                       w->path, strerror(w->out.err));
        fclose(w->out.f);
        return TC_ERR_TRANSPORT;
    }
    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        TC_ERROR("timeline",
                 "out of memory keeping this rank's part of the job-wide timeline "
                 "%s; the part is lost",
                 w->path);
        tc__tl_put_err(err, errlen, "out of memory keeping this rank's part of the timeline");
        fclose(w->out.f);
        return TC_ERR_NOMEM;
    }
    p->f = w->out.f;
    p->info.rank = w->rank;
    p->info.start_unix_ns = w->start_unix_ns;
    p->info.end_ns = tc__now_ns() - w->t0_ns;
    p->info.events = stats->written;
    p->info.dropped = stats->dropped;
    p->info.bytes = w->out.bytes;
    snprintf(p->info.path, sizeof(p->info.path), "%s", w->path);
    ctl.pending = p;
    return TC_OK;
}

/* The one stop; err gets the reason on failure. */
static tc_status_t tl_stop(char *err, size_t errlen)
{
    tl_writer_t *w;
    tc_tl_stats_t stats;
    tl_rec_t *fill;
    tl_track_t *tracks;
    uint32_t ntracks, cap, i;
    tc_status_t st = TC_OK;

    pthread_mutex_lock(&ctl.mu);
    if (!ctl.running) {
        pthread_mutex_unlock(&ctl.mu);
        tc__tl_put_err(err, errlen, "no timeline is running");
        return TC_ERR_STATE;
    }
    w = ctl.w;
    atomic_store_explicit(&tc__tl_on, 0, memory_order_relaxed);
    /* After this, under tc__tl.mu, no record call touches the buffers. */
    pthread_mutex_lock(&tc__tl.mu);
    tc__tl.active = 0;
    tc__tl.stopping = 1;
    pthread_cond_signal(&tc__tl.cv);
    pthread_mutex_unlock(&tc__tl.mu);
    pthread_join(ctl.thread, NULL);

    pthread_mutex_lock(&tc__tl.mu);
    fill = tc__tl.fill;
    tracks = tc__tl.tracks;
    ntracks = tc__tl.ntracks;
    tc__hmap_destroy(&tc__tl.track_map); /* its values are ids, not pointers */
    tc__tl.fill = NULL;
    tc__tl.tracks = NULL;
    tc__tl.ntracks = 0;
    tc__tl.stopping = 0;
    stats = tc__tl.stats;
    cap = tc__tl.cap;
    pthread_mutex_unlock(&tc__tl.mu);

    for (i = 0; i < ntracks; i++) {
        free(tracks[i].name);
    }
    free(tracks);
    free(fill);
    if (w->part) {
        st = keep_part(w, &stats, err, errlen);
    } else if (w->out.err != 0) {
        TC_ERROR("timeline", "writing the timeline file %s failed: %s; the file is incomplete",
                 w->path, strerror(w->out.err));
        tc__tl_put_err(err, errlen, "writing the timeline file %s failed: %s", w->path,
                       strerror(w->out.err));
        st = TC_ERR_TRANSPORT;
    }
    if (st != TC_OK) {
        /* logged above */
    } else if (stats.dropped > 0) {
        TC_WARN("timeline",
                "timeline %s%s: %" PRIu64 " events written, %" PRIu64 " dropped because the "
                "buffer of %u events was full",
                w->path, w->part ? " (this rank's part)" : "", stats.written, stats.dropped, cap);
    } else {
        TC_INFO("timeline", "timeline %s%s: %" PRIu64 " events written", w->path,
                w->part ? " (this rank's part)" : "", stats.written);
    }
    free_writer(w);
    ctl.w = NULL;
    ctl.running = 0;
    pthread_mutex_unlock(&ctl.mu);
    return st;
}

tc_status_t tc__tl_stop(void)
{
    return tl_stop(NULL, 0);
}

tc_status_t tc__tl_stop_err(char *err, size_t errlen)
{
    return tl_stop(err, errlen);
}

void tc__tl_test_config(uint32_t capacity, int hold_writer)
{
    pthread_mutex_lock(&ctl.mu);
    ctl.test_cap = capacity;
    ctl.test_hold = hold_writer;
    pthread_mutex_unlock(&ctl.mu);
}

/* The part the last stop kept (see keep_part), handed over once. */
tc_tl_part_t *tc__tl_part_take(void)
{
    tc_tl_part_t *p;

    pthread_mutex_lock(&ctl.mu);
    p = ctl.pending;
    ctl.pending = NULL;
    pthread_mutex_unlock(&ctl.mu);
    return p;
}
