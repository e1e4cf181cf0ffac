/*
 * timeline.c - this rank's timeline as a Chrome trace, written by a thread
 * of its own so that the threads that record (above all the engine thread)
 * never do I/O, never format and never wait for the disk.
 *
 * Two buffers of fixed-size records. Recording threads append to the *fill*
 * buffer under tl.mu (a bounds check and a copy of at most TC_TL_NAME_MAX
 * name bytes); a full buffer drops the event and counts it. The writer swaps
 * the fill buffer for its own, empty one under tl.mu (two pointer moves),
 * then formats and writes the records it took without any lock. No thread
 * holds tl.mu across anything longer than a copy or a hash lookup (plus, the
 * first time a row's name is seen, one malloc and at times a rehash of at
 * most TC_TL_MAX_TRACKS entries); never across I/O or formatting.
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
 *    5    tc__tl_stop         clears active and sets stopping under tl.mu: no
 *                             record is taken after that; wakes the writer
 *    6    writer              takes the last buffer, writes it, the drop report
 *                             and the closing lines, closes the file, exits
 *    7    tc__tl_stop         joins the writer, frees everything, logs counts
 *
 * Waiting: with nothing recorded the writer sleeps on tl.cv with no timeout
 * (idle costs no CPU); recorders signal it only when it announced, under
 * tl.mu, that it waits (writer_wait), so a busy writer costs them nothing.
 *
 * Output: one JSON object {"traceEvents":[...],"displayTimeUnit":"ms",
 * "otherData":{...}}, one event per line; "pid" is the rank, "tid" the row,
 * "ts"/"dur" microseconds since the start with nanosecond digits. Names are
 * escaped for JSON; bytes that are not valid UTF-8 become \u00XX (read as
 * Latin-1), so the file is always valid UTF-8 JSON.
 */
#define _GNU_SOURCE
#include "util/timeline.h"

#include "util/backoff.h"
#include "util/hmap.h"
#include "util/log.h"
#include "util/status.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Longest a recorded event waits in the buffer before the writer takes it. */
#define TL_FLUSH_NS 100000000ull

/* The writer's output buffer: formatted events go out in writes this big. */
#define TL_OUT_CAP (256u * 1024u)

/* Room one formatting step may need without checking again (numbers, keys,
 * one escaped character). */
#define TL_OUT_STEP 128u

typedef struct {
    uint64_t ts_ns;
    uint64_t dur_ns;
    const char *cat; /* static, or NULL */
    tc_tl_args_t args;
    int32_t track;
    char ph;           /* 'B', 'E', 'X' or 'i' */
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

/* Shared by the recording threads and the writer, under tl.mu. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* the writer sleeps here */
    int active;        /* records are taken */
    int stopping;      /* the writer takes what is left and exits */
    int hold;          /* test hook: the writer takes nothing until stopping */
    int writer_wait;   /* WAIT_*: how the writer sleeps, so recorders know to signal */
    tl_rec_t *fill;    /* recorders append here */
    uint32_t nfill;
    uint32_t cap;
    uint32_t batch_min; /* a batching writer is woken at this many records */
    tc_hmap_t track_map; /* name -> (void *)(uintptr_t)tid */
    tl_track_t *tracks;  /* TC_TL_MAX_TRACKS slots; [0, ntracks) immutable once published */
    uint32_t ntracks;
    tc_tl_stats_t stats;
} tl = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .cv = PTHREAD_COND_INITIALIZER,
};

/* Mirrors tl.active so that callers can skip all work without the lock.
 * Stored relaxed by start (after tl.active is set under tl.mu) and by stop
 * (before tl.active is cleared); loaded relaxed by tc__tl_active,
 * tc__tl_track and record. Nothing is published through it: a stale 0 skips
 * one event recorded as a timeline starts, a stale 1 costs one lock to find
 * tl.active clear. The buffers are only touched under tl.mu, after checking
 * tl.active, so relaxed is enough. */
static _Atomic int tl_on;

/* The writer's output buffer and file. */
typedef struct {
    FILE *f;
    char *buf;
    size_t len;
    int err;         /* first errno of a failed write; later output is discarded */
    uint64_t nitems; /* array elements written, for the commas */
} tl_out_t;

/* Everything the writer owns: set up by start before the thread exists,
 * read by stop after it was joined. */
typedef struct {
    tl_out_t out;
    char path[PATH_MAX];
    int rank;
    uint64_t t0_ns;         /* CLOCK_MONOTONIC at the start: ts 0 */
    int64_t start_unix_us;  /* CLOCK_REALTIME at the same moment, for merging */
    tl_rec_t *mine;         /* the buffer the writer formats from */
    uint32_t tracks_written;
} tl_writer_t;

/* Start and stop, serialized by ctl.mu (held across the join in stop). */
static struct {
    pthread_mutex_t mu;
    int running;
    pthread_t thread;
    tl_writer_t *w;
    uint32_t test_cap;
    int test_hold;
} ctl = {.mu = PTHREAD_MUTEX_INITIALIZER};

static const char *const fixed_track_names[] = {
    [TC_TL_TRACK_NEGOTIATION] = "negotiation",
    [TC_TL_TRACK_COLLECTIVES] = "collectives",
    [TC_TL_TRACK_OTHER] = "other tensors",
};
#define NFIXED ((int)(sizeof(fixed_track_names) / sizeof(fixed_track_names[0])))

/* ------------------------------------------------------------------------ */
/* Output: buffered, escaped JSON                                            */
/* ------------------------------------------------------------------------ */

static void out_flush(tl_out_t *o)
{
    if (o->len > 0 && o->err == 0 && fwrite(o->buf, 1, o->len, o->f) != o->len) {
        o->err = errno != 0 ? errno : EIO;
    }
    o->len = 0;
}

static void out_reserve(tl_out_t *o, size_t n)
{
    if (TL_OUT_CAP - o->len < n) {
        out_flush(o);
    }
}

static void out_mem(tl_out_t *o, const char *p, size_t n)
{
    if (TL_OUT_CAP - o->len >= n) { /* the usual case: one copy */
        memcpy(o->buf + o->len, p, n);
        o->len += n;
        return;
    }
    while (n > 0) {
        size_t k = n < TL_OUT_CAP / 2 ? n : TL_OUT_CAP / 2;
        out_reserve(o, k);
        memcpy(o->buf + o->len, p, k);
        o->len += k;
        p += k;
        n -= k;
    }
}

/* A string literal, its length known at compile time. */
#define OUT_LIT(o, lit) out_mem((o), (lit), sizeof(lit) - 1)

static void out_str(tl_out_t *o, const char *s)
{
    out_mem(o, s, strlen(s));
}

/* Integers by hand: the writer formats millions of them, and printf's
 * machinery costs several times the conversion. */
static void out_u64(tl_out_t *o, uint64_t v)
{
    char tmp[20];
    size_t n = 0;

    do {
        tmp[sizeof(tmp) - 1 - n++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0);
    out_mem(o, tmp + sizeof(tmp) - n, n);
}

static void out_i64(tl_out_t *o, int64_t v)
{
    if (v < 0) {
        OUT_LIT(o, "-");
        out_u64(o, (uint64_t)0 - (uint64_t)v);
    } else {
        out_u64(o, (uint64_t)v);
    }
}

/* Rare pieces only (header, footer; at most TL_OUT_STEP bytes). */
static void out_fmt(tl_out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_fmt(tl_out_t *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    out_reserve(o, TL_OUT_STEP);
    va_start(ap, fmt);
    n = vsnprintf(o->buf + o->len, TL_OUT_STEP, fmt, ap);
    va_end(ap);
    if (n > 0) {
        o->len += (size_t)n < TL_OUT_STEP ? (size_t)n : TL_OUT_STEP - 1;
    }
}

/* Length of the valid UTF-8 sequence at p (2..4), or 0 if p[0] does not
 * start one: overlong forms, surrogates, values above U+10FFFF and cut
 * sequences are invalid. Only called for p[0] >= 0x80. */
static size_t utf8_seq(const unsigned char *p, size_t avail)
{
    unsigned lo = 0x80, hi = 0xBF;
    size_t n, i;

    if (p[0] >= 0xC2 && p[0] <= 0xDF) {
        n = 2;
    } else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        n = 3;
        lo = p[0] == 0xE0 ? 0xA0 : lo; /* no overlong 3-byte forms */
        hi = p[0] == 0xED ? 0x9F : hi; /* no surrogates */
    } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        n = 4;
        lo = p[0] == 0xF0 ? 0x90 : lo; /* no overlong 4-byte forms */
        hi = p[0] == 0xF4 ? 0x8F : hi; /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    if (avail < n || p[1] < lo || p[1] > hi) {
        return 0;
    }
    for (i = 2; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) {
            return 0;
        }
    }
    return n;
}

/* Writes the 6 bytes "\u00XX" for the byte c at d. */
static void out_u00(char *d, unsigned c)
{
    static const char hex[] = "0123456789abcdef";
    memcpy(d, "\\u00", 4);
    d[4] = hex[(c >> 4) & 0xF];
    d[5] = hex[c & 0xF];
}

/* A JSON string of any bytes: quotes, backslashes and control characters
 * escaped, valid UTF-8 copied, every other byte written as \u00XX. */
static void out_json_str(tl_out_t *o, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    out_reserve(o, TL_OUT_STEP);
    o->buf[o->len++] = '"';
    while (i < len) {
        unsigned c = p[i];
        size_t n;
        char *d;

        /* a run of bytes that need nothing: one copy */
        for (n = i; n < len && p[n] >= 0x20 && p[n] < 0x7F && p[n] != '"' && p[n] != '\\'; n++) {
        }
        if (n > i) {
            out_mem(o, s + i, n - i);
            i = n;
            continue;
        }
        out_reserve(o, TL_OUT_STEP);
        d = o->buf + o->len;
        if (c >= 0x80) {
            n = utf8_seq(p + i, len - i);
            if (n > 0) {
                memcpy(d, p + i, n);
                o->len += n;
                i += n;
            } else {
                out_u00(d, c);
                o->len += 6;
                i++;
            }
            continue;
        }
        i++;
        if (c == '"' || c == '\\') {
            d[0] = '\\';
            d[1] = (char)c;
            o->len += 2;
        } else if (c >= 0x20 && c != 0x7F) {
            d[0] = (char)c;
            o->len += 1;
        } else if (c == '\n') {
            memcpy(d, "\\n", 2);
            o->len += 2;
        } else if (c == '\t') {
            memcpy(d, "\\t", 2);
            o->len += 2;
        } else if (c == '\r') {
            memcpy(d, "\\r", 2);
            o->len += 2;
        } else {
            out_u00(d, c);
            o->len += 6;
        }
    }
    out_reserve(o, TL_OUT_STEP);
    o->buf[o->len++] = '"';
}

static void out_cstr(tl_out_t *o, const char *s)
{
    out_json_str(o, s, strlen(s));
}

/* Signed nanoseconds as microseconds with three decimals, exactly. */
static void out_us(tl_out_t *o, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    char frac[4];

    if (ns < 0) {
        OUT_LIT(o, "-");
    }
    out_u64(o, a / 1000u);
    frac[0] = '.';
    frac[1] = (char)('0' + a / 100u % 10u);
    frac[2] = (char)('0' + a / 10u % 10u);
    frac[3] = (char)('0' + a % 10u);
    out_mem(o, frac, 4);
}

/* Starts the next element of traceEvents. */
static void out_item(tl_out_t *o)
{
    if (o->nitems++ > 0) {
        OUT_LIT(o, ",\n{");
    } else {
        OUT_LIT(o, "{");
    }
}

static void out_meta(tl_out_t *o, int rank, int tid, const char *what, const char *key,
                     const char *sval, size_t slen, long long ival)
{
    out_item(o);
    out_str(o, "\"name\":");
    out_cstr(o, what);
    out_fmt(o, ",\"ph\":\"M\",\"ts\":0,\"pid\":%d,\"tid\":%d,\"args\":{\"%s\":", rank, tid, key);
    if (sval != NULL) {
        out_json_str(o, sval, slen);
    } else {
        out_fmt(o, "%lld", ival);
    }
    out_str(o, "}}");
}

/* Writes ,"key": with the separator the args object needs so far. */
static void out_key(tl_out_t *o, int *first, const char *key)
{
    if (!*first) {
        OUT_LIT(o, ",");
    }
    *first = 0;
    OUT_LIT(o, "\"");
    out_str(o, key);
    OUT_LIT(o, "\":");
}

static void out_args(tl_out_t *o, const tc_tl_args_t *a)
{
    int first = 1;

    OUT_LIT(o, ",\"args\":{");
    if (a->kind != NULL) {
        out_key(o, &first, "kind");
        out_cstr(o, a->kind);
    }
    if (a->algo != NULL) {
        out_key(o, &first, "algo");
        out_cstr(o, a->algo);
    }
    if (a->dtype >= 0) {
        out_key(o, &first, "dtype");
        out_cstr(o, tc_dtype_name((tc_dtype_t)a->dtype));
    }
    if (a->op >= 0) {
        out_key(o, &first, "op");
        out_cstr(o, tc_op_name((tc_op_t)a->op));
    }
    if (a->root >= 0) {
        out_key(o, &first, "root");
        out_i64(o, a->root);
    }
    if (a->bytes >= 0) {
        out_key(o, &first, "bytes");
        out_i64(o, a->bytes);
    }
    if (a->fused >= 0) {
        out_key(o, &first, "fused");
        out_i64(o, a->fused);
    }
    if (a->cycle >= 0) {
        out_key(o, &first, "cycle");
        out_i64(o, a->cycle);
    }
    if (a->status >= 0) {
        out_key(o, &first, "status");
        out_cstr(o, tc_status_string((tc_status_t)a->status));
    }
    OUT_LIT(o, "}");
}

/* A name cut at TC_TL_NAME_MAX loses a trailing partial UTF-8 sequence
 * (rather than showing it as \u00XX bytes) and ends in "...". */
static size_t trim_cut_utf8(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t k = len, back;

    for (back = 0; back < 3 && k > 0; back++) {
        unsigned c = p[--k];
        if ((c & 0xC0) != 0x80) {
            size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
            return need > len - k ? k : len;
        }
    }
    return len;
}

static void write_event(tl_writer_t *w, const tl_rec_t *r)
{
    tl_out_t *o = &w->out;
    const char *sep = "{";

    /* out_item() by hand: the first key needs no comma of its own */
    if (o->nitems++ > 0) {
        OUT_LIT(o, ",\n");
    }
    if (r->has_name) {
        size_t len = r->truncated ? trim_cut_utf8(r->name, r->name_len) : r->name_len;

        OUT_LIT(o, "{\"name\":");
        if (r->truncated) {
            char cut[TC_TL_NAME_MAX + 3];
            memcpy(cut, r->name, len);
            memcpy(cut + len, "...", 3);
            out_json_str(o, cut, len + 3);
        } else {
            out_json_str(o, r->name, len);
        }
        sep = ",";
    }
    if (r->cat != NULL) {
        out_str(o, sep);
        OUT_LIT(o, "\"cat\":");
        out_cstr(o, r->cat);
        sep = ",";
    }
    out_str(o, sep);
    OUT_LIT(o, "\"ph\":\"");
    out_mem(o, &r->ph, 1);
    OUT_LIT(o, "\",\"ts\":");
    out_us(o, (int64_t)(r->ts_ns - w->t0_ns));
    if (r->ph == 'X') {
        OUT_LIT(o, ",\"dur\":");
        out_us(o, (int64_t)r->dur_ns);
    }
    OUT_LIT(o, ",\"pid\":");
    out_i64(o, w->rank);
    OUT_LIT(o, ",\"tid\":");
    out_i64(o, r->track);
    if (r->ph == 'i') {
        OUT_LIT(o, ",\"s\":\"t\"");
    }
    if (r->has_args) {
        out_args(o, &r->args);
    }
    OUT_LIT(o, "}");
}

static void write_header(tl_writer_t *w)
{
    tl_out_t *o = &w->out;
    char pname[32];
    int t;

    out_str(o, "{\"traceEvents\":[\n");
    snprintf(pname, sizeof(pname), "rank %d", w->rank);
    out_meta(o, w->rank, 0, "process_name", "name", pname, strlen(pname), 0);
    out_meta(o, w->rank, 0, "process_sort_index", "sort_index", NULL, 0, w->rank);
    for (t = 1; t < NFIXED; t++) {
        out_meta(o, w->rank, t, "thread_name", "name", fixed_track_names[t],
                 strlen(fixed_track_names[t]), 0);
        out_meta(o, w->rank, t, "thread_sort_index", "sort_index", NULL, 0, t - NFIXED);
    }
}

static void write_footer(tl_writer_t *w, uint64_t written, uint64_t dropped)
{
    tl_out_t *o = &w->out;

    if (dropped > 0) {
        out_item(o);
        out_fmt(o, "\"name\":\"tcoll timeline: %" PRIu64 " events dropped (buffer full)\"",
                dropped);
        out_str(o, ",\"ph\":\"i\",\"s\":\"p\",\"ts\":");
        out_us(o, (int64_t)(tc__now_ns() - w->t0_ns));
        out_fmt(o, ",\"pid\":%d,\"tid\":0,\"args\":{\"dropped\":%" PRIu64 "}}", w->rank,
                dropped);
    }
    out_str(o, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"tool\":");
    out_cstr(o, "tcoll");
    out_str(o, ",\"version\":");
    out_cstr(o, tc_version());
    out_fmt(o, ",\"rank\":%d,\"start_unix_us\":%" PRId64, w->rank, w->start_unix_us);
    out_fmt(o, ",\"events\":%" PRIu64 ",\"dropped_events\":%" PRIu64 "}\n}\n", written, dropped);
}

/* ------------------------------------------------------------------------ */
/* The writer thread                                                         */
/* ------------------------------------------------------------------------ */

static void *writer_main(void *arg)
{
    tl_writer_t *w = arg;
    uint64_t done = 0, written, dropped;
    uint32_t n, ntracks, i;
    int last;

    pthread_mutex_lock(&tl.mu);
    for (;;) {
        tl.stats.written += done;
        while (!tl.stopping && (tl.nfill == 0 || tl.hold)) {
            tl.writer_wait = WAIT_IDLE;
            pthread_cond_wait(&tl.cv, &tl.mu);
            tl.stats.wakeups++;
        }
        if (!tl.stopping && tl.nfill < tl.batch_min) {
            struct timespec deadline = tc__deadline_after_ns(TL_FLUSH_NS);
            while (!tl.stopping && tl.nfill < tl.batch_min) {
                int rc;
                tl.writer_wait = WAIT_BATCH;
                rc = pthread_cond_timedwait(&tl.cv, &tl.mu, &deadline);
                tl.stats.wakeups++;
                if (rc == ETIMEDOUT) {
                    break;
                }
            }
        }
        tl.writer_wait = WAIT_NONE;
        {
            tl_rec_t *full = tl.fill;
            tl.fill = w->mine;
            w->mine = full;
        }
        n = tl.nfill;
        tl.nfill = 0;
        tl.stats.batches += n > 0;
        ntracks = tl.ntracks;
        last = tl.stopping;
        pthread_mutex_unlock(&tl.mu);

        /* Rows named before their first event; tl.tracks[0, ntracks) is
         * immutable once published under tl.mu, which we just held. */
        for (i = w->tracks_written; i < ntracks; i++) {
            out_meta(&w->out, w->rank, TC_TL_TRACK_FIRST + (int)i, "thread_name", "name",
                     tl.tracks[i].name, tl.tracks[i].len, 0);
        }
        w->tracks_written = ntracks;
        for (i = 0; i < n; i++) {
            write_event(w, &w->mine[i]);
        }
        done = n;
        out_flush(&w->out);
        if (last) {
            break;
        }
        pthread_mutex_lock(&tl.mu);
    }
    pthread_mutex_lock(&tl.mu);
    tl.stats.written += done;
    written = tl.stats.written;
    dropped = tl.stats.dropped;
    pthread_mutex_unlock(&tl.mu);
    write_footer(w, written, dropped);
    out_flush(&w->out);
    if (fclose(w->out.f) != 0 && w->out.err == 0) {
        w->out.err = errno != 0 ? errno : EIO;
    }
    w->out.f = NULL;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Start and stop                                                            */
/* ------------------------------------------------------------------------ */

static void put_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void put_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

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

tc_status_t tc__tl_start(const char *path, int rank, char *err, size_t errlen)
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
        put_err(err, errlen, "the timeline path is %s", path == NULL ? "NULL" : "empty");
        return TC_ERR_ARG;
    }
    pthread_mutex_lock(&ctl.mu);
    if (ctl.running) {
        put_err(err, errlen, "a timeline is already being written (to %s)", ctl.w->path);
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
        snprintf(msg, sizeof(msg), "the timeline path \"%.256s...\" is longer than %d bytes",
                 path, PATH_MAX - 1);
        st = TC_ERR_ARG;
        goto err_free;
    }
    w->out.f = fopen(w->path, "we");
    if (w->out.f == NULL) {
        snprintf(msg, sizeof(msg), "cannot open the timeline file %s: %s", w->path,
                 strerror(errno));
        st = TC_ERR_ARG;
        goto err_free;
    }
    /* The writer hands whole batches to fwrite; stdio need not copy them. */
    setvbuf(w->out.f, NULL, _IONBF, 0);
    w->rank = rank;
    w->t0_ns = tc__now_ns();
    clock_gettime(CLOCK_REALTIME, &now);
    w->start_unix_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
    write_header(w); /* into the buffer: the writer's first batch writes it */

    pthread_mutex_lock(&tl.mu);
    tl.fill = fill;
    tl.nfill = 0;
    tl.cap = cap;
    tl.batch_min = cap / 2 > 0 ? cap / 2 : 1;
    tl.hold = ctl.test_hold;
    tl.stopping = 0;
    tl.writer_wait = WAIT_NONE;
    tc__hmap_init(&tl.track_map);
    tl.tracks = tracks;
    tl.ntracks = 0;
    memset(&tl.stats, 0, sizeof(tl.stats));
    tl.active = 1;
    pthread_mutex_unlock(&tl.mu);

    rc = pthread_create(&ctl.thread, NULL, writer_main, w);
    if (rc != 0) {
        pthread_mutex_lock(&tl.mu);
        tl.active = 0;
        tl.fill = NULL;
        tl.tracks = NULL;
        pthread_mutex_unlock(&tl.mu);
        fclose(w->out.f);
        snprintf(msg, sizeof(msg), "cannot start the timeline writer thread: %s", strerror(rc));
        st = TC_ERR_NOMEM;
        goto err_free;
    }
    ctl.w = w;
    ctl.running = 1;
    /* Relaxed: a hint for callers (see tl_on); tl.active is the truth. */
    atomic_store_explicit(&tl_on, 1, memory_order_relaxed);
    pthread_mutex_unlock(&ctl.mu);
    TC_INFO("timeline", "writing the timeline to %s (buffer of %u events)", w->path, cap);
    return TC_OK;

err_free:
    free(tracks);
    free(fill);
    free_writer(w);
    TC_WARN("timeline", "%s", msg);
    put_err(err, errlen, "%s", msg);
err_unlock:
    pthread_mutex_unlock(&ctl.mu);
    return st;
}

/* The one stop; err gets the reason on failure. */
static tc_status_t tl_stop(char *err, size_t errlen)
{
    tl_writer_t *w;
    tc_tl_stats_t stats;
    tl_rec_t *fill;
    tl_track_t *tracks;
    uint32_t ntracks, cap, i;
    int io_err;

    pthread_mutex_lock(&ctl.mu);
    if (!ctl.running) {
        pthread_mutex_unlock(&ctl.mu);
        put_err(err, errlen, "no timeline is running");
        return TC_ERR_STATE;
    }
    w = ctl.w;
    atomic_store_explicit(&tl_on, 0, memory_order_relaxed);
    /* After this, under tl.mu, no record call touches the buffers. */
    pthread_mutex_lock(&tl.mu);
    tl.active = 0;
    tl.stopping = 1;
    pthread_cond_signal(&tl.cv);
    pthread_mutex_unlock(&tl.mu);
    pthread_join(ctl.thread, NULL);

    pthread_mutex_lock(&tl.mu);
    fill = tl.fill;
    tracks = tl.tracks;
    ntracks = tl.ntracks;
    tc__hmap_destroy(&tl.track_map); /* its values are ids, not pointers */
    tl.fill = NULL;
    tl.tracks = NULL;
    tl.ntracks = 0;
    tl.stopping = 0;
    stats = tl.stats;
    cap = tl.cap;
    pthread_mutex_unlock(&tl.mu);

    for (i = 0; i < ntracks; i++) {
        free(tracks[i].name);
    }
    free(tracks);
    free(fill);
    io_err = w->out.err;
    if (io_err != 0) {
        TC_ERROR("timeline", "writing the timeline file %s failed: %s; the file is incomplete",
                 w->path, strerror(io_err));
        put_err(err, errlen, "writing the timeline file %s failed: %s", w->path,
                strerror(io_err));
    } else if (stats.dropped > 0) {
        TC_WARN("timeline",
                "timeline %s: %" PRIu64 " events written, %" PRIu64 " dropped because the "
                "buffer of %u events was full",
                w->path, stats.written, stats.dropped, cap);
    } else {
        TC_INFO("timeline", "timeline %s: %" PRIu64 " events written", w->path, stats.written);
    }
    free_writer(w);
    ctl.w = NULL;
    ctl.running = 0;
    pthread_mutex_unlock(&ctl.mu);
    return io_err != 0 ? TC_ERR_TRANSPORT : TC_OK;
}

tc_status_t tc__tl_stop(void)
{
    return tl_stop(NULL, 0);
}

tc_status_t tc__tl_stop_err(char *err, size_t errlen)
{
    return tl_stop(err, errlen);
}

int tc__tl_active(void)
{
    return atomic_load_explicit(&tl_on, memory_order_relaxed);
}

void tc__tl_stats(tc_tl_stats_t *stats_p)
{
    pthread_mutex_lock(&tl.mu);
    *stats_p = tl.stats;
    pthread_mutex_unlock(&tl.mu);
}

void tc__tl_test_config(uint32_t capacity, int hold_writer)
{
    pthread_mutex_lock(&ctl.mu);
    ctl.test_cap = capacity;
    ctl.test_hold = hold_writer;
    pthread_mutex_unlock(&ctl.mu);
}

/* ------------------------------------------------------------------------ */
/* Recording                                                                 */
/* ------------------------------------------------------------------------ */

int tc__tl_track(const char *name, size_t name_len)
{
    void *v;
    char *copy;
    int id;

    if (!atomic_load_explicit(&tl_on, memory_order_relaxed)) {
        return -1;
    }
    if (name == NULL) {
        name = "";
        name_len = 0;
    }
    pthread_mutex_lock(&tl.mu);
    if (!tl.active) {
        id = -1;
    } else if ((v = tc__hmap_get(&tl.track_map, name, name_len)) != NULL) {
        id = (int)(uintptr_t)v;
    } else if (tl.ntracks == TC_TL_MAX_TRACKS || (copy = malloc(name_len + 1)) == NULL) {
        id = TC_TL_TRACK_OTHER;
    } else {
        memcpy(copy, name, name_len);
        copy[name_len] = '\0';
        id = TC_TL_TRACK_FIRST + (int)tl.ntracks;
        if (tc__hmap_put(&tl.track_map, name, name_len, (void *)(uintptr_t)id) != 0) {
            free(copy);
            id = TC_TL_TRACK_OTHER;
        } else {
            /* Published by the count under tl.mu; never changed afterwards. */
            tl.tracks[tl.ntracks].name = copy;
            tl.tracks[tl.ntracks].len = name_len;
            tl.ntracks++;
        }
    }
    pthread_mutex_unlock(&tl.mu);
    return id;
}

static void record(char ph, int track, const char *name, size_t name_len, const char *cat,
                   uint64_t ts_ns, uint64_t dur_ns, const tc_tl_args_t *args)
{
    tl_rec_t *r;

    if (track < 0 || !atomic_load_explicit(&tl_on, memory_order_relaxed)) {
        return;
    }
    pthread_mutex_lock(&tl.mu);
    if (!tl.active) {
        goto out;
    }
    if (tl.nfill == tl.cap) {
        tl.stats.dropped++;
        goto out;
    }
    r = &tl.fill[tl.nfill++];
    tl.stats.recorded++;
    r->ts_ns = ts_ns;
    r->dur_ns = dur_ns;
    r->cat = cat;
    r->track = track;
    r->ph = ph;
    r->has_args = args != NULL;
    if (args != NULL) {
        r->args = *args;
    }
    r->has_name = name != NULL;
    r->truncated = name_len > TC_TL_NAME_MAX;
    r->name_len = (uint32_t)(name_len > TC_TL_NAME_MAX ? TC_TL_NAME_MAX : name_len);
    if (name != NULL) {
        memcpy(r->name, name, r->name_len);
    }
    /* Wake the writer only if it sleeps and has a reason to get up: an idle
     * one for the first record, a batching one once half the buffer is used. */
    if (!tl.hold && (tl.writer_wait == WAIT_IDLE ||
                     (tl.writer_wait == WAIT_BATCH && tl.nfill >= tl.batch_min))) {
        tl.writer_wait = WAIT_NONE;
        pthread_cond_signal(&tl.cv);
    }
out:
    pthread_mutex_unlock(&tl.mu);
}

void tc__tl_begin(int track, const char *name, size_t name_len, const char *cat, uint64_t ts_ns,
                  const tc_tl_args_t *args)
{
    record('B', track, name != NULL ? name : "", name != NULL ? name_len : 0, cat, ts_ns, 0,
           args);
}

void tc__tl_end(int track, const char *name, size_t name_len, const char *cat, uint64_t ts_ns,
                const tc_tl_args_t *args)
{
    record('E', track, name, name != NULL ? name_len : 0, cat, ts_ns, 0, args);
}

void tc__tl_complete(int track, const char *name, size_t name_len, const char *cat,
                     uint64_t ts_ns, uint64_t dur_ns, const tc_tl_args_t *args)
{
    record('X', track, name != NULL ? name : "", name != NULL ? name_len : 0, cat, ts_ns, dur_ns,
           args);
}

void tc__tl_instant(int track, const char *name, size_t name_len, const char *cat,
                    uint64_t ts_ns, const tc_tl_args_t *args)
{
    record('i', track, name != NULL ? name : "", name != NULL ? name_len : 0, cat, ts_ns, 0,
           args);
}
