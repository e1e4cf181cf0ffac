/*
 * timeline.h - this rank's timeline: a Chrome trace (the JSON "Trace Event
 * Format", loadable in chrome://tracing and Perfetto) of what the engine
 * negotiates and runs, written by a thread of its own.
 *
 * Recording must never slow the thread that records (the engine thread): a
 * record call copies a fixed-size record (the name truncated to
 * TC_TL_NAME_MAX bytes) into an in-memory buffer under a mutex that every
 * thread holds only for such a copy or a pointer swap, and returns. It never
 * does I/O, formats nothing and never waits for the writer. When the buffer
 * is full the event is dropped and counted; the count ends up in the file
 * and in the log. The writer thread swaps the buffer for an empty one,
 * formats the records and writes them in batches; with nothing recorded it
 * sleeps on a condition variable without a timeout (idle costs no CPU).
 *
 * Typical use, on the engine thread:
 *
 *     if (tc__tl_active()) {
 *         tc_tl_args_t a = TC_TL_ARGS_INIT;
 *         a.kind = "allreduce"; a.dtype = TC_FLOAT32; a.bytes = 4096;
 *         tc__tl_complete(tc__tl_track(name, name_len), "ALLREDUCE", 9, "collective",
 *                         t_start, tc__now_ns() - t_start, &a);
 *     }
 *
 * Every record call is a no-op when no timeline runs, so callers only test
 * tc__tl_active() to skip building arguments. Timestamps are CLOCK_MONOTONIC
 * nanoseconds (tc__now_ns()); the file has microseconds since the start.
 *
 * This is the util layer: it knows no engine and no MPI. The caller passes
 * the rank; the public tc_timeline_start/stop, which ask the engine for it,
 * are in engine/timeline_job.c.
 */
#ifndef TC_UTIL_TIMELINE_H
#define TC_UTIL_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "tcoll.h"

/* Room for a path, NUL included (Linux's PATH_MAX, which <limits.h> gives
 * only with POSIX features on). */
#define TC_TL_PATH_MAX 4096

/* Bytes of an event name kept in a record; longer names end in "...". */
#define TC_TL_NAME_MAX 128

/* Records the buffer holds by default (the writer takes the whole buffer at
 * once, so this many events may be recorded between two writer batches). */
#define TC_TL_DEFAULT_CAPACITY 8192u

/* Fixed rows ("tid"s), named in every file. Rows made by tc__tl_track get
 * ids from TC_TL_TRACK_FIRST on; once TC_TL_MAX_TRACKS names have rows, later
 * names share TC_TL_TRACK_OTHER. */
#define TC_TL_TRACK_NEGOTIATION 1 /* "negotiation" */
#define TC_TL_TRACK_COLLECTIVES 2 /* "collectives" */
#define TC_TL_TRACK_OTHER 3       /* "other tensors" */
#define TC_TL_TRACK_FIRST 16
#define TC_TL_MAX_TRACKS 4096

/*
 * Key/values shown with an event ("args"). Start from TC_TL_ARGS_INIT (every
 * field omitted) and set what applies. Strings must have static storage
 * duration (literals): the writer reads them later, on its own thread.
 */
typedef struct {
    const char *kind; /* "allreduce", "allgather", "broadcast", ...; NULL: omitted */
    const char *algo; /* algorithm, e.g. "ring"; NULL: omitted */
    int dtype;        /* tc_dtype_t, written as its name; < 0: omitted */
    int op;           /* tc_op_t, written as its name; < 0: omitted */
    int root;         /* broadcast root; < 0: omitted */
    int status;       /* tc_status_t, written as its text; < 0: omitted */
    int32_t fused;    /* tensors in a fused group; < 0: omitted */
    int64_t bytes;    /* payload bytes; < 0: omitted */
    int64_t cycle;    /* negotiation cycle; < 0: omitted */
} tc_tl_args_t;

#define TC_TL_ARGS_INIT                                                                            \
    {                                                                                              \
        NULL, NULL, -1, -1, -1, -1, -1, -1, -1                                                     \
    }

/*
 * Starts writing this rank's timeline to path, where each "%r" becomes rank
 * (the file is "pid" rank, so several ranks' files merge into one view).
 * The file is created or truncated. TC_ERR_STATE if a timeline is already
 * running; TC_ERR_ARG if path is NULL, empty, too long, or the file cannot
 * be opened (the message names the path and the system's reason);
 * TC_ERR_NOMEM. On failure nothing runs and err (when not NULL) says why;
 * the failure is also logged. Any thread; serialized with tc__tl_stop.
 */
tc_status_t tc__tl_start(const char *path, int rank, char *err, size_t errlen);

/*
 * Stops recording, lets the writer write what was recorded and the closing
 * lines, closes the file (valid JSON from then on) and logs the number of
 * events written and dropped. TC_ERR_STATE if no timeline runs (so a second
 * call is harmless); TC_ERR_TRANSPORT if writing the file failed (the error
 * is logged with the path and the system's reason). Any thread but the
 * writer; blocks until the file is closed.
 */
tc_status_t tc__tl_stop(void);

/* The same; on failure err (when not NULL) says why. */
tc_status_t tc__tl_stop_err(char *err, size_t errlen);

/* 1 while a timeline runs. One relaxed load: a stale answer only means one
 * event is skipped, or one record call finds nothing running and returns. */
int tc__tl_active(void);

/*
 * The row for name (a tensor name, say): the same id for the same bytes for
 * as long as this timeline runs; the writer names the row in the file before
 * its first event. A hash lookup under the buffer mutex (plus one copy of the
 * name the first time). -1 when no timeline runs; record calls ignore
 * negative tracks. Ids do not survive a stop: look them up per event.
 */
int tc__tl_track(const char *name, size_t name_len);

/*
 * Record calls: any thread, never block on I/O, no-ops when no timeline runs
 * or track < 0. name (name_len bytes, any bytes: the writer escapes them) is
 * copied; cat and args' strings must be static; args may be NULL. ts_ns and
 * dur_ns are CLOCK_MONOTONIC nanoseconds (tc__now_ns()).
 *
 *   begin / end  "B" / "E": a slice on a row. Ends match the latest open
 *                begin on the same row, so record both from one thread, in
 *                order. end's name may be NULL (then it has none).
 *   complete     "X": a slice with its duration, recorded once it is over.
 *                Prefer it: a dropped event cannot leave a slice open.
 *   instant      "i": a mark on a row ("rank 3 submitted").
 */
void tc__tl_begin(int track, const char *name, size_t name_len, const char *cat, uint64_t ts_ns,
                  const tc_tl_args_t *args);
void tc__tl_end(int track, const char *name, size_t name_len, const char *cat, uint64_t ts_ns,
                const tc_tl_args_t *args);
void tc__tl_complete(int track, const char *name, size_t name_len, const char *cat, uint64_t ts_ns,
                     uint64_t dur_ns, const tc_tl_args_t *args);
void tc__tl_instant(int track, const char *name, size_t name_len, const char *cat, uint64_t ts_ns,
                    const tc_tl_args_t *args);

/*
 * Parts: one rank's share of a job-wide timeline (the engine's
 * engine/timeline_job.c gathers them over MPI; this layer knows no MPI).
 *
 * tc__tl_start_part records like tc__tl_start, but the writer encodes the
 * records (a compact binary form, not JSON) into a private temporary file
 * (created in $TMPDIR or /tmp and unlinked at once), and path is only
 * remembered: it is where the merged file should go, and its folder must
 * exist and be writable now (TC_ERR_ARG otherwise). TC_ERR_STATE while a
 * timeline runs or while an earlier part waits to be taken: one part per
 * run. tc__tl_stop ends the recording and keeps the part until
 * tc__tl_part_take hands it over (NULL when there is none).
 *
 * The part is read back in any pieces with tc__tl_part_read, and becomes
 * JSON through a merge: tc__tl_merge_open(path, origin) writes the head of
 * one trace; per rank, tc__tl_merge_rank(info) opens that rank's section
 * (its process row "rank N", pid N, and its fixed rows), tc__tl_merge_feed
 * takes its part's bytes in order, cut anywhere, and
 * tc__tl_merge_rank_end(complete) closes it; tc__tl_merge_close writes the
 * footer (otherData: the totals and, per rank, its start, its event count,
 * its drops and whether its whole part arrived) and closes the file. Times
 * are shifted so that "ts" counts from origin_unix_ns (CLOCK_REALTIME,
 * normally the earliest start among the ranks): ranks on one node line up
 * exactly, ranks on different nodes as well as their clocks agree. The file
 * is valid JSON whatever was fed: a malformed or cut part only loses the
 * rest of that rank's section (and says so in otherData).
 */
typedef struct tc_tl_part tc_tl_part_t;
typedef struct tc_tl_merge tc_tl_merge_t;

typedef struct {
    int rank;
    int64_t start_unix_ns;     /* CLOCK_REALTIME when recording started */
    uint64_t end_ns;           /* when it stopped, in ns after the start */
    uint64_t events;           /* events in the part */
    uint64_t dropped;          /* events dropped because the buffer was full */
    uint64_t bytes;            /* the part's size */
    char path[TC_TL_PATH_MAX]; /* where the merged file should go */
} tc_tl_part_info_t;

tc_status_t tc__tl_start_part(const char *path, int rank, char *err, size_t errlen);
tc_tl_part_t *tc__tl_part_take(void);
const tc_tl_part_info_t *tc__tl_part_info(const tc_tl_part_t *part);
/* len bytes at off (within info.bytes) into buf; TC_ERR_TRANSPORT on I/O errors. */
tc_status_t tc__tl_part_read(tc_tl_part_t *part, uint64_t off, void *buf, size_t len, char *err,
                             size_t errlen);
void tc__tl_part_free(tc_tl_part_t *part);

/* The part alone as one trace at path (a merge of one rank). */
tc_status_t tc__tl_part_save(tc_tl_part_t *part, const char *path, char *err, size_t errlen);

/* The file of rank alone for the job-wide path: "x.json" -> "x.rank3.json",
 * "x" -> "x.rank3". -1 if it does not fit in outlen. */
int tc__tl_rank_path(const char *path, int rank, char *out, size_t outlen);

/* TC_ERR_ARG: path cannot be opened (err names it and the reason). */
tc_status_t tc__tl_merge_open(const char *path, int64_t origin_unix_ns, tc_tl_merge_t **m_p,
                              char *err, size_t errlen);
void tc__tl_merge_rank(tc_tl_merge_t *m, const tc_tl_part_info_t *info);
/* TC_ERR_TRANSPORT: the bytes are malformed (the rest of the section is
 * skipped); TC_ERR_NOMEM. */
tc_status_t tc__tl_merge_feed(tc_tl_merge_t *m, const void *bytes, size_t len, char *err,
                              size_t errlen);
/* Returns whether the section is complete: complete given, and every byte
 * fed formed whole, well-formed items. */
int tc__tl_merge_rank_end(tc_tl_merge_t *m, int complete);
/* Frees m whatever happens; TC_ERR_TRANSPORT if writing the file failed. */
tc_status_t tc__tl_merge_close(tc_tl_merge_t *m, char *err, size_t errlen);

/* Counters of the running timeline, or of the last one after it stopped. */
typedef struct {
    uint64_t recorded; /* events taken into the buffer */
    uint64_t dropped;  /* events refused because the buffer was full */
    uint64_t written;  /* events the writer has formatted (metadata not counted) */
    uint64_t batches;  /* buffers the writer has taken */
    uint64_t wakeups;  /* times the writer returned from a wait */
} tc_tl_stats_t;

void tc__tl_stats(tc_tl_stats_t *stats_p);

/* Test hook: the next tc__tl_start uses a buffer of capacity records (0: the
 * default) and, if hold_writer, its writer takes nothing from the buffer
 * until tc__tl_stop, so a test can fill the buffer deterministically. */
void tc__tl_test_config(uint32_t capacity, int hold_writer);

#endif
