/*
 * timeline_internal.h - what the files of the timeline share; the rest of
 * tcoll sees only util/timeline.h.
 *
 *   file                 holds
 *   -------------------  ------------------------------------------------------
 *   timeline_record.c    the record calls and the two buffers they fill (tc__tl)
 *   timeline.c           start and stop, and the writer thread that drains the
 *                        buffers into a file or a part
 *   timeline_json.c      the output buffer and the JSON text of a trace
 *   timeline_part.c      parts: their binary items, reading them back, merging
 *                        them into one trace
 *
 * Here: the record the recorders copy and the writer formats, the buffers and
 * their lock, the writer's output buffer, a kept part, and the functions one of
 * those files offers the others. Must never be included outside
 * src/util/timeline*.c.
 */
#ifndef TC_UTIL_TIMELINE_INTERNAL_H
#define TC_UTIL_TIMELINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/hmap.h"
#include "util/timeline.h"

/* The writer's output buffer: formatted events go out in writes this big. */
#define TL_OUT_CAP (256u * 1024u)

typedef struct {
    uint64_t ts_ns;
    uint64_t dur_ns;
    const char *cat; /* static, or NULL */
    tc_tl_args_t args;
    int32_t track;
    char ph; /* 'B', 'E', 'X' or 'i' */
    uint8_t has_args;
    uint8_t has_name;
    uint8_t truncated; /* the name was longer than TC_TL_NAME_MAX */
    uint32_t name_len;
    char name[TC_TL_NAME_MAX];
} tl_rec_t;

typedef struct {
    char *name;
    size_t len;
} tl_track_t;

enum { WAIT_NONE, WAIT_IDLE, WAIT_BATCH };

/* The buffers: shared by the recording threads and the writer, under
 * tc__tl.mu. Defined in timeline_record.c. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* the writer sleeps here */
    int active;        /* records are taken */
    int stopping;      /* the writer takes what is left and exits */
    int hold;          /* test hook: the writer takes nothing until stopping */
    int writer_wait;   /* WAIT_*: how the writer sleeps, so recorders know to signal */
    tl_rec_t *fill;    /* recorders append here */
    uint32_t nfill;
    uint32_t cap;
    uint32_t batch_min;  /* a batching writer is woken at this many records */
    tc_hmap_t track_map; /* name -> (void *)(uintptr_t)tid */
    tl_track_t *tracks;  /* TC_TL_MAX_TRACKS slots; [0, ntracks) immutable once published */
    uint32_t ntracks;
    tc_tl_stats_t stats;
} tl_state_t;

extern tl_state_t tc__tl;

/* Mirrors tc__tl.active so that callers can skip all work without the lock.
 * Stored relaxed by start (after tc__tl.active is set under tc__tl.mu) and by
 * stop (before tc__tl.active is cleared); loaded relaxed by tc__tl_active,
 * tc__tl_track and record. Nothing is published through it: a stale 0 skips
 * one event recorded as a timeline starts, a stale 1 costs one lock to find
 * tc__tl.active clear. The buffers are only touched under tc__tl.mu, after
 * checking tc__tl.active, so relaxed is enough. Defined in timeline_record.c. */
extern _Atomic int tc__tl_on;

/* The writer's output buffer and file. */
typedef struct {
    FILE *f;
    char *buf;
    size_t len;
    int err;         /* first errno of a failed write; later output is discarded */
    uint64_t nitems; /* array elements written, for the commas */
    uint64_t bytes;  /* bytes written to f */
} tl_out_t;

/* A stopped part-mode timeline, waiting to be merged (see timeline.h). */
struct tc_tl_part {
    FILE *f; /* an unlinked temporary file holding info.bytes bytes of items */
    tc_tl_part_info_t info;
};

/* One rank's section, written; for the footer. */
typedef struct {
    int rank;
    int complete;
    int64_t start_unix_ns;
    uint64_t events, dropped;
} tl_merged_t;

/* timeline_json.c: the JSON text of a trace, into o's buffer (flushed to o->f
 * as it fills; a failed write sets o->err and discards the rest). */
void tc__tl_out_flush(tl_out_t *o);
void tc__tl_out_mem(tl_out_t *o, const char *p, size_t n); /* n bytes as they are */
void tc__tl_write_open(tl_out_t *o);                       /* {"traceEvents":[ */
/* The process row of rank ("rank N") and its fixed rows. */
void tc__tl_write_rank_meta(tl_out_t *o, int rank);
/* The name of row tid of rank: len bytes at name, any bytes. */
void tc__tl_write_row(tl_out_t *o, int rank, int tid, const char *name, size_t len);
/* r as one event of process pid; its "ts" is r->ts_ns - base_ns (modulo 2^64,
 * read as signed). */
void tc__tl_write_event(tl_out_t *o, int pid, uint64_t base_ns, const tl_rec_t *r);
/* The "events dropped" mark of rank, at ts_ns - base_ns. */
void tc__tl_write_drop_mark(tl_out_t *o, int rank, uint64_t ts_ns, uint64_t base_ns,
                            uint64_t dropped);
/* The end of one rank's file (a drop mark now if it dropped events, the
 * closing lines and otherData). */
void tc__tl_write_footer(tl_out_t *o, int rank, uint64_t t0_ns, int64_t start_unix_ns,
                         uint64_t written, uint64_t dropped);
/* The end of a merged file: the totals and, per rank, its section. */
void tc__tl_write_job_footer(tl_out_t *o, int64_t origin_unix_ns, const tl_merged_t *done,
                             size_t ndone);

/* timeline_part.c: a row's and an event's item of a part, into o. */
void tc__tl_encode_row(tl_out_t *o, int tid, const char *name, size_t len);
void tc__tl_encode_event(tl_out_t *o, uint64_t t0_ns, const tl_rec_t *r);

/* timeline_json.c: vsnprintf into err when err is not NULL. */
void tc__tl_put_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
