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
 *
 * Parts (tc__tl_start_part, for a job-wide timeline): the same recording and
 * the same writer thread, but the writer encodes each record as a compact
 * binary item ("Parts" below) into a private, unlinked temporary file
 * instead of formatting it, with no header and no footer; stop keeps the
 * file. The engine gathers the ranks' parts (engine/timeline_job.c) and
 * hands their bytes to a merge (tc__tl_merge_*), which formats them with
 * the same code as a file of one rank, each rank with its own pid and its
 * times shifted to the job's origin. This file never calls MPI or the
 * engine: the rank is always given.
 */
#define _GNU_SOURCE
#include "util/timeline.h"

#include "util/backoff.h"
#include "util/hmap.h"
#include "util/log.h"
#include "util/status.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

_Static_assert(TC_TL_PATH_MAX >= PATH_MAX, "TC_TL_PATH_MAX must hold any path");

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
    uint64_t bytes;  /* bytes written to f */
} tl_out_t;

/* Everything the writer owns: set up by start before the thread exists,
 * read by stop after it was joined. */
typedef struct {
    tl_out_t out;
    char path[PATH_MAX];
    int rank;
    uint64_t t0_ns;         /* CLOCK_MONOTONIC at the start: ts 0 */
    int64_t start_unix_ns;  /* CLOCK_REALTIME at the same moment, for merging */
    tl_rec_t *mine;         /* the buffer the writer formats from */
    uint32_t tracks_written;
    int part;               /* encode items into a part (a temporary file), not JSON */
} tl_writer_t;

/* A stopped part-mode timeline, waiting to be merged (see timeline.h). */
struct tc_tl_part {
    FILE *f; /* an unlinked temporary file holding info.bytes bytes of items */
    tc_tl_part_info_t info;
};

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
    if (o->len > 0 && o->err == 0) {
        if (fwrite(o->buf, 1, o->len, o->f) != o->len) {
            o->err = errno != 0 ? errno : EIO;
        } else {
            o->bytes += o->len;
        }
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

/* r as one JSON event of process pid; its "ts" is r->ts_ns - base_ns
 * (modulo 2^64, read as signed). */
static void write_event(tl_out_t *o, int pid, uint64_t base_ns, const tl_rec_t *r)
{
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
    out_us(o, (int64_t)(r->ts_ns - base_ns));
    if (r->ph == 'X') {
        OUT_LIT(o, ",\"dur\":");
        out_us(o, (int64_t)r->dur_ns);
    }
    OUT_LIT(o, ",\"pid\":");
    out_i64(o, pid);
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

/* The process row of rank ("rank N") and its fixed rows. */
static void write_rank_meta(tl_out_t *o, int rank)
{
    char pname[32];
    int t;

    snprintf(pname, sizeof(pname), "rank %d", rank);
    out_meta(o, rank, 0, "process_name", "name", pname, strlen(pname), 0);
    out_meta(o, rank, 0, "process_sort_index", "sort_index", NULL, 0, rank);
    for (t = 1; t < NFIXED; t++) {
        out_meta(o, rank, t, "thread_name", "name", fixed_track_names[t],
                 strlen(fixed_track_names[t]), 0);
        out_meta(o, rank, t, "thread_sort_index", "sort_index", NULL, 0, t - NFIXED);
    }
}

static void write_header(tl_writer_t *w)
{
    out_str(&w->out, "{\"traceEvents\":[\n");
    write_rank_meta(&w->out, w->rank);
}

/* The "events dropped" mark of rank, at ts_ns - base_ns. */
static void write_drop_mark(tl_out_t *o, int rank, uint64_t ts_ns, uint64_t base_ns,
                            uint64_t dropped)
{
    out_item(o);
    out_fmt(o, "\"name\":\"tcoll timeline: %" PRIu64 " events dropped (buffer full)\"",
            dropped);
    out_str(o, ",\"ph\":\"i\",\"s\":\"p\",\"ts\":");
    out_us(o, (int64_t)(ts_ns - base_ns));
    out_fmt(o, ",\"pid\":%d,\"tid\":0,\"args\":{\"dropped\":%" PRIu64 "}}", rank, dropped);
}

static void write_footer(tl_writer_t *w, uint64_t written, uint64_t dropped)
{
    tl_out_t *o = &w->out;

    if (dropped > 0) {
        write_drop_mark(o, w->rank, tc__now_ns(), w->t0_ns, dropped);
    }
    out_str(o, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"tool\":");
    out_cstr(o, "tcoll");
    out_str(o, ",\"version\":");
    out_cstr(o, tc_version());
    out_fmt(o, ",\"rank\":%d,\"start_unix_us\":%" PRId64, w->rank, w->start_unix_ns / 1000);
    out_fmt(o, ",\"events\":%" PRIu64 ",\"dropped_events\":%" PRIu64 "}\n}\n", written, dropped);
}

/* ------------------------------------------------------------------------ */
/* Parts: records encoded for a merge elsewhere                              */
/* ------------------------------------------------------------------------ */

/*
 * A part is a sequence of items, each a little-endian u32 length (of what
 * follows) and a type byte:
 *
 *   'T' row      i32 tid, then the row's name (the rest of the item)
 *   'E' event    u8 ph, u8 flags (1 name, 2 truncated name, 4 args, 8 cat),
 *                i32 row, u64 ts (ns after the part's start, modulo 2^64),
 *                u64 dur, [cat], [u8 length + name], [args: kind, algo,
 *                i32 dtype, op, root, status, fused, i64 bytes, cycle]
 *
 * cat, kind and algo are "str8": a length byte (255: NULL) and at most 254
 * bytes. A row's item comes before the first event on it, as in the file.
 */
#define TL_ITEM_ROW 'T'
#define TL_ITEM_EVENT 'E'
#define TL_EV_NAME 1u
#define TL_EV_TRUNCATED 2u
#define TL_EV_ARGS 4u
#define TL_EV_CAT 8u
#define TL_STR8_NULL 255u
#define TL_STR8_MAX 254u
/* The largest event item: the length, 23 fixed bytes (type, ph, flags,
 * row, ts, dur), cat (255), name (1 + TC_TL_NAME_MAX), kind and algo (255
 * each), 5 i32 and 2 i64. */
#define TL_EVENT_ITEM_MAX (4u + 23u + 255u + 1u + TC_TL_NAME_MAX + 2u * 255u + 20u + 16u)
/* No item is longer than this (a row's name included). */
#define TL_ITEM_LIMIT (1u << 20)

typedef struct {
    unsigned char *p;
    size_t len;
} tl_enc_t;

static void enc_bytes(tl_enc_t *e, const void *s, size_t n)
{
    memcpy(e->p + e->len, s, n);
    e->len += n;
}

static void enc_u8(tl_enc_t *e, unsigned v)
{
    e->p[e->len++] = (unsigned char)v;
}

static void enc_u32(tl_enc_t *e, uint32_t v)
{
    int i;

    for (i = 0; i < 4; i++) {
        e->p[e->len++] = (unsigned char)(v >> (8 * i));
    }
}

static void enc_u64(tl_enc_t *e, uint64_t v)
{
    int i;

    for (i = 0; i < 8; i++) {
        e->p[e->len++] = (unsigned char)(v >> (8 * i));
    }
}

static void enc_str8(tl_enc_t *e, const char *s)
{
    size_t n;

    if (s == NULL) {
        enc_u8(e, TL_STR8_NULL);
        return;
    }
    n = strlen(s);
    n = n > TL_STR8_MAX ? TL_STR8_MAX : n;
    enc_u8(e, (unsigned)n);
    enc_bytes(e, s, n);
}

/* A row's item: its id and name. */
static void encode_row(tl_out_t *o, int tid, const char *name, size_t len)
{
    unsigned char head[9];
    tl_enc_t e = {head, 0};

    len = len > TL_ITEM_LIMIT - 5 ? TL_ITEM_LIMIT - 5 : len;
    enc_u32(&e, (uint32_t)(5 + len));
    enc_u8(&e, TL_ITEM_ROW);
    enc_u32(&e, (uint32_t)tid);
    out_mem(o, (const char *)head, e.len);
    out_mem(o, name, len);
}

/* An event's item; its time relative to t0_ns. */
static void encode_event(tl_out_t *o, uint64_t t0_ns, const tl_rec_t *r)
{
    unsigned char item[TL_EVENT_ITEM_MAX];
    tl_enc_t e = {item, 4};
    unsigned flags = (r->has_name ? TL_EV_NAME : 0u) | (r->truncated ? TL_EV_TRUNCATED : 0u) |
                     (r->has_args ? TL_EV_ARGS : 0u) | (r->cat != NULL ? TL_EV_CAT : 0u);
    size_t body;

    enc_u8(&e, TL_ITEM_EVENT);
    enc_u8(&e, (unsigned char)r->ph);
    enc_u8(&e, flags);
    enc_u32(&e, (uint32_t)r->track);
    enc_u64(&e, r->ts_ns - t0_ns);
    enc_u64(&e, r->dur_ns);
    if (r->cat != NULL) {
        enc_str8(&e, r->cat);
    }
    if (r->has_name) {
        enc_u8(&e, r->name_len);
        enc_bytes(&e, r->name, r->name_len);
    }
    if (r->has_args) {
        const tc_tl_args_t *a = &r->args;
        enc_str8(&e, a->kind);
        enc_str8(&e, a->algo);
        enc_u32(&e, (uint32_t)a->dtype);
        enc_u32(&e, (uint32_t)a->op);
        enc_u32(&e, (uint32_t)a->root);
        enc_u32(&e, (uint32_t)a->status);
        enc_u32(&e, (uint32_t)a->fused);
        enc_u64(&e, (uint64_t)a->bytes);
        enc_u64(&e, (uint64_t)a->cycle);
    }
    body = e.len - 4;
    e.len = 0;
    enc_u32(&e, (uint32_t)body);
    out_mem(o, (const char *)item, body + 4);
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
            if (w->part) {
                encode_row(&w->out, TC_TL_TRACK_FIRST + (int)i, tl.tracks[i].name,
                           tl.tracks[i].len);
            } else {
                out_meta(&w->out, w->rank, TC_TL_TRACK_FIRST + (int)i, "thread_name", "name",
                         tl.tracks[i].name, tl.tracks[i].len, 0);
            }
        }
        w->tracks_written = ntracks;
        for (i = 0; i < n; i++) {
            if (w->part) {
                encode_event(&w->out, w->t0_ns, &w->mine[i]);
            } else {
                write_event(&w->out, w->rank, w->t0_ns, &w->mine[i]);
            }
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
    if (!w->part) { /* a part's file stays open: tl_stop hands it on */
        write_footer(w, written, dropped);
        out_flush(&w->out);
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
        snprintf(msg, len, "TMPDIR (%.256s...) is too long for this rank's part of the job-wide "
                           "timeline", dir);
        return NULL;
    }
    fd = mkostemp(tmpl, O_CLOEXEC);
    if (fd < 0) {
        snprintf(msg, len, "cannot create a temporary file in %s for this rank's part of the "
                           "job-wide timeline: %s", dir, strerror(errno));
        return NULL;
    }
    (void)unlink(tmpl);
    f = fdopen(fd, "w+");
    if (f == NULL) {
        snprintf(msg, len, "cannot open the temporary file for this rank's part of the job-wide "
                           "timeline: %s", strerror(errno));
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
        put_err(err, errlen, "the timeline path is %s", path == NULL ? "NULL" : "empty");
        return TC_ERR_ARG;
    }
    pthread_mutex_lock(&ctl.mu);
    if (ctl.running) {
        put_err(err, errlen, "a timeline is already being written (to %s)", ctl.w->path);
        st = TC_ERR_STATE;
        goto err_unlock;
    }
    if (part && ctl.pending != NULL) {
        put_err(err, errlen, "this rank already recorded its part of the job-wide timeline %s, "
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
        snprintf(msg, sizeof(msg), "the timeline path \"%.256s...\" is longer than %d bytes",
                 path, PATH_MAX - 1);
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
        write_header(w); /* into the buffer: the writer's first batch writes it */
    }

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
    if (part) {
        TC_INFO("timeline", "recording this rank's part of the job-wide timeline %s (buffer of "
                            "%u events); rank 0 writes the file at tc_shutdown", w->path, cap);
    } else {
        TC_INFO("timeline", "writing the timeline to %s (buffer of %u events)", w->path, cap);
    }
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
static tc_status_t keep_part(tl_writer_t *w, const tc_tl_stats_t *stats, char *err,
                             size_t errlen)
{
    tc_tl_part_t *p;

    if (w->out.err != 0) {
        TC_ERROR("timeline", "writing this rank's part of the job-wide timeline %s to a "
                             "temporary file failed: %s; the part is lost",
                 w->path, strerror(w->out.err));
        put_err(err, errlen, "writing this rank's part of the job-wide timeline %s to a "
                             "temporary file failed: %s", w->path, strerror(w->out.err));
        fclose(w->out.f);
        return TC_ERR_TRANSPORT;
    }
    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        TC_ERROR("timeline", "out of memory keeping this rank's part of the job-wide timeline "
                             "%s; the part is lost", w->path);
        put_err(err, errlen, "out of memory keeping this rank's part of the timeline");
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
    if (w->part) {
        st = keep_part(w, &stats, err, errlen);
    } else if (w->out.err != 0) {
        TC_ERROR("timeline", "writing the timeline file %s failed: %s; the file is incomplete",
                 w->path, strerror(w->out.err));
        put_err(err, errlen, "writing the timeline file %s failed: %s", w->path,
                strerror(w->out.err));
        st = TC_ERR_TRANSPORT;
    }
    if (st != TC_OK) {
        /* logged above */
    } else if (stats.dropped > 0) {
        TC_WARN("timeline",
                "timeline %s%s: %" PRIu64 " events written, %" PRIu64 " dropped because the "
                "buffer of %u events was full",
                w->path, w->part ? " (this rank's part)" : "", stats.written, stats.dropped,
                cap);
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

/* ------------------------------------------------------------------------ */
/* Parts: taking, reading, merging                                           */
/* ------------------------------------------------------------------------ */

tc_tl_part_t *tc__tl_part_take(void)
{
    tc_tl_part_t *p;

    pthread_mutex_lock(&ctl.mu);
    p = ctl.pending;
    ctl.pending = NULL;
    pthread_mutex_unlock(&ctl.mu);
    return p;
}

const tc_tl_part_info_t *tc__tl_part_info(const tc_tl_part_t *part)
{
    return &part->info;
}

tc_status_t tc__tl_part_read(tc_tl_part_t *part, uint64_t off, void *buf, size_t len, char *err,
                             size_t errlen)
{
    size_t done = 0;

    if (off > part->info.bytes || len > part->info.bytes - off) {
        put_err(err, errlen, "reading bytes %" PRIu64 "..%" PRIu64 " of a %" PRIu64 "-byte part",
                off, off + len, part->info.bytes);
        return TC_ERR_ARG;
    }
    while (done < len) {
        ssize_t n = pread(fileno(part->f), (char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            put_err(err, errlen, "reading this rank's part of the job-wide timeline back from "
                                 "its temporary file failed: %s",
                    n < 0 ? strerror(errno) : "the file is shorter than written");
            return TC_ERR_TRANSPORT;
        }
        done += (size_t)n;
    }
    return TC_OK;
}

void tc__tl_part_free(tc_tl_part_t *part)
{
    if (part != NULL) {
        fclose(part->f);
        free(part);
    }
}

int tc__tl_rank_path(const char *path, int rank, char *out, size_t outlen)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash != NULL ? slash + 1 : path;
    size_t len = strlen(path), stem = len;
    int n;

    if (strlen(base) > 5 && strcmp(path + len - 5, ".json") == 0) {
        stem = len - 5;
    }
    n = snprintf(out, outlen, "%.*s.rank%d%s", (int)stem, path, rank, path + stem);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* One rank's section, written; for the footer. */
typedef struct {
    int rank;
    int complete;
    int64_t start_unix_ns;
    uint64_t events, dropped;
} tl_merged_t;

struct tc_tl_merge {
    tl_out_t out;
    char path[PATH_MAX];
    int64_t origin_unix_ns;
    /* the open section */
    int open;
    int bad;                 /* its bytes did not decode: the rest is skipped */
    tc_tl_part_info_t info;
    uint64_t base_ns;        /* "ts" = item ts - base_ns: shifted to the origin */
    uint64_t events;         /* events of this section written */
    uint64_t fed;            /* bytes of this section decoded */
    unsigned char *carry;    /* an item cut between two feeds */
    size_t ncarry, capcarry;
    char cat[256], kind[256], algo[256];
    /* the sections written */
    tl_merged_t *done;
    size_t ndone, capdone;
};

typedef struct {
    const unsigned char *p;
    size_t len, pos;
    int bad;
} tl_dec_t;

static const unsigned char *dec_take(tl_dec_t *d, size_t n)
{
    const unsigned char *q;

    if (d->bad || d->len - d->pos < n) {
        d->bad = 1;
        return NULL;
    }
    q = d->p + d->pos;
    d->pos += n;
    return q;
}

static unsigned dec_u8(tl_dec_t *d)
{
    const unsigned char *q = dec_take(d, 1);
    return q != NULL ? q[0] : 0u;
}

static uint32_t dec_u32(tl_dec_t *d)
{
    const unsigned char *q = dec_take(d, 4);
    uint32_t v = 0;
    int i;

    for (i = 0; q != NULL && i < 4; i++) {
        v |= (uint32_t)q[i] << (8 * i);
    }
    return v;
}

static uint64_t dec_u64(tl_dec_t *d)
{
    const unsigned char *q = dec_take(d, 8);
    uint64_t v = 0;
    int i;

    for (i = 0; q != NULL && i < 8; i++) {
        v |= (uint64_t)q[i] << (8 * i);
    }
    return v;
}

/* A str8 into buf (256 bytes, NUL-terminated); NULL for the NULL string. */
static const char *dec_str8(tl_dec_t *d, char *buf)
{
    unsigned n = dec_u8(d);
    const unsigned char *q;

    if (n == TL_STR8_NULL) {
        return NULL;
    }
    q = dec_take(d, n);
    if (q == NULL) {
        return NULL;
    }
    memcpy(buf, q, n);
    buf[n] = '\0';
    return buf;
}

/* Writes the item p[0, len) of the open section; -1 if it is malformed. */
static int merge_item(tc_tl_merge_t *m, const unsigned char *p, size_t len)
{
    tl_dec_t d = {p, len, 0, 0};
    unsigned type = dec_u8(&d);
    tl_rec_t r;
    unsigned flags;

    if (type == TL_ITEM_ROW) {
        int32_t tid = (int32_t)dec_u32(&d);
        if (d.bad || tid < 0) {
            return -1;
        }
        out_meta(&m->out, m->info.rank, tid, "thread_name", "name", (const char *)p + d.pos,
                 len - d.pos, 0);
        return 0;
    }
    if (type != TL_ITEM_EVENT) {
        return -1;
    }
    memset(&r, 0, sizeof(r));
    r.ph = (char)dec_u8(&d);
    flags = dec_u8(&d);
    r.track = (int32_t)dec_u32(&d);
    r.ts_ns = dec_u64(&d);
    r.dur_ns = dec_u64(&d);
    if (flags & TL_EV_CAT) {
        r.cat = dec_str8(&d, m->cat);
        if (r.cat == NULL) {
            return -1;
        }
    }
    if (flags & TL_EV_NAME) {
        const unsigned char *q;
        r.has_name = 1;
        r.truncated = (flags & TL_EV_TRUNCATED) != 0;
        r.name_len = dec_u8(&d);
        if (r.name_len > TC_TL_NAME_MAX || (q = dec_take(&d, r.name_len)) == NULL) {
            return -1;
        }
        memcpy(r.name, q, r.name_len);
    }
    if (flags & TL_EV_ARGS) {
        tc_tl_args_t *a = &r.args;
        r.has_args = 1;
        a->kind = dec_str8(&d, m->kind);
        a->algo = dec_str8(&d, m->algo);
        a->dtype = (int)(int32_t)dec_u32(&d);
        a->op = (int)(int32_t)dec_u32(&d);
        a->root = (int)(int32_t)dec_u32(&d);
        a->status = (int)(int32_t)dec_u32(&d);
        a->fused = (int32_t)dec_u32(&d);
        a->bytes = (int64_t)dec_u64(&d);
        a->cycle = (int64_t)dec_u64(&d);
    }
    if (d.bad || d.pos != len || r.track < 0 || strchr("BEXi", r.ph) == NULL || r.ph == '\0') {
        return -1;
    }
    write_event(&m->out, m->info.rank, m->base_ns, &r);
    m->events++;
    return 0;
}

tc_status_t tc__tl_merge_open(const char *path, int64_t origin_unix_ns, tc_tl_merge_t **m_p,
                              char *err, size_t errlen)
{
    tc_tl_merge_t *m = calloc(1, sizeof(*m));

    if (m == NULL || (m->out.buf = malloc(TL_OUT_CAP)) == NULL) {
        free(m);
        put_err(err, errlen, "out of memory for merging the timeline");
        return TC_ERR_NOMEM;
    }
    if (snprintf(m->path, sizeof(m->path), "%s", path) >= (int)sizeof(m->path)) {
        put_err(err, errlen, "the timeline path \"%.256s...\" is longer than %d bytes", path,
                PATH_MAX - 1);
        goto err_free;
    }
    m->out.f = fopen(path, "we");
    if (m->out.f == NULL) {
        put_err(err, errlen, "cannot open the timeline file %s: %s", path, strerror(errno));
        goto err_free;
    }
    setvbuf(m->out.f, NULL, _IONBF, 0);
    m->origin_unix_ns = origin_unix_ns;
    out_str(&m->out, "{\"traceEvents\":[\n");
    *m_p = m;
    return TC_OK;

err_free:
    free(m->out.buf);
    free(m);
    return TC_ERR_ARG;
}

void tc__tl_merge_rank(tc_tl_merge_t *m, const tc_tl_part_info_t *info)
{
    if (m->open) {
        tc__tl_merge_rank_end(m, 0);
    }
    m->open = 1;
    m->bad = 0;
    m->info = *info;
    /* ts - base = ts + (start - origin), modulo 2^64 */
    m->base_ns = (uint64_t)m->origin_unix_ns - (uint64_t)info->start_unix_ns;
    m->events = 0;
    m->fed = 0;
    m->ncarry = 0;
    write_rank_meta(&m->out, info->rank);
}

tc_status_t tc__tl_merge_feed(tc_tl_merge_t *m, const void *bytes, size_t len, char *err,
                              size_t errlen)
{
    size_t pos = 0;

    if (!m->open || m->bad) {
        put_err(err, errlen, "no section to feed (or its part was malformed)");
        return TC_ERR_STATE;
    }
    if (m->capcarry - m->ncarry < len) {
        size_t cap = m->capcarry * 2 > m->ncarry + len ? m->capcarry * 2 : m->ncarry + len;
        unsigned char *c = realloc(m->carry, cap);
        if (c == NULL) {
            m->bad = 1;
            put_err(err, errlen, "out of memory merging rank %d's part of the timeline",
                    m->info.rank);
            return TC_ERR_NOMEM;
        }
        m->carry = c;
        m->capcarry = cap;
    }
    memcpy(m->carry + m->ncarry, bytes, len);
    m->ncarry += len;
    while (m->ncarry - pos >= 4) {
        tl_dec_t d = {m->carry + pos, 4, 0, 0};
        uint32_t ilen = dec_u32(&d);
        if (ilen == 0 || ilen > TL_ITEM_LIMIT) {
            m->bad = 1;
        } else if (m->ncarry - pos - 4 < ilen) {
            break; /* cut: the rest comes with the next feed */
        } else if (merge_item(m, m->carry + pos + 4, ilen) != 0) {
            m->bad = 1;
        }
        if (m->bad) {
            put_err(err, errlen, "rank %d's part of the timeline is malformed at byte %" PRIu64
                                 " (an item of %u bytes)",
                    m->info.rank, m->fed + pos, ilen);
            return TC_ERR_TRANSPORT;
        }
        pos += 4 + ilen;
    }
    memmove(m->carry, m->carry + pos, m->ncarry - pos);
    m->ncarry -= pos;
    m->fed += pos;
    return TC_OK;
}

int tc__tl_merge_rank_end(tc_tl_merge_t *m, int complete)
{
    tl_merged_t *rec;

    if (!m->open) {
        return 0;
    }
    m->open = 0;
    complete = complete && !m->bad && m->ncarry == 0;
    if (m->info.dropped > 0) {
        write_drop_mark(&m->out, m->info.rank, m->info.end_ns, m->base_ns, m->info.dropped);
    }
    if (m->ndone == m->capdone) {
        size_t cap = m->capdone * 2 + 8;
        tl_merged_t *d = realloc(m->done, cap * sizeof(*d));
        if (d == NULL) {
            return complete; /* the footer will miss this rank; the file stays valid */
        }
        m->done = d;
        m->capdone = cap;
    }
    rec = &m->done[m->ndone++];
    rec->rank = m->info.rank;
    rec->complete = complete;
    rec->start_unix_ns = m->info.start_unix_ns;
    rec->events = m->events;
    rec->dropped = m->info.dropped;
    return complete;
}

tc_status_t tc__tl_merge_close(tc_tl_merge_t *m, char *err, size_t errlen)
{
    tl_out_t *o = &m->out;
    uint64_t events = 0, dropped = 0;
    size_t i;
    int io_err;

    tc__tl_merge_rank_end(m, 0);
    for (i = 0; i < m->ndone; i++) {
        events += m->done[i].events;
        dropped += m->done[i].dropped;
    }
    out_str(o, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"tool\":");
    out_cstr(o, "tcoll");
    out_str(o, ",\"version\":");
    out_cstr(o, tc_version());
    out_fmt(o, ",\"job\":true,\"start_unix_us\":%" PRId64, m->origin_unix_ns / 1000);
    out_fmt(o, ",\"events\":%" PRIu64 ",\"dropped_events\":%" PRIu64 ",\"ranks\":[", events,
            dropped);
    for (i = 0; i < m->ndone; i++) {
        const tl_merged_t *d = &m->done[i];
        out_fmt(o, "%s\n{\"rank\":%d,\"start_unix_us\":%" PRId64, i > 0 ? "," : "", d->rank,
                d->start_unix_ns / 1000);
        out_fmt(o, ",\"events\":%" PRIu64 ",\"dropped_events\":%" PRIu64 ",\"complete\":%s}",
                d->events, d->dropped, d->complete ? "true" : "false");
    }
    out_str(o, "]}\n}\n");
    out_flush(o);
    if (fclose(o->f) != 0 && o->err == 0) {
        o->err = errno != 0 ? errno : EIO;
    }
    io_err = o->err;
    if (io_err != 0) {
        put_err(err, errlen, "writing the timeline file %s failed: %s", m->path,
                strerror(io_err));
    }
    free(m->carry);
    free(m->done);
    free(o->buf);
    free(m);
    return io_err != 0 ? TC_ERR_TRANSPORT : TC_OK;
}

tc_status_t tc__tl_part_save(tc_tl_part_t *part, const char *path, char *err, size_t errlen)
{
    enum { CHUNK = 1 << 20 };
    const tc_tl_part_info_t *info = &part->info;
    tc_tl_merge_t *m;
    char *buf = malloc(CHUNK);
    uint64_t off = 0;
    tc_status_t st;

    if (buf == NULL) {
        put_err(err, errlen, "out of memory for saving the timeline part");
        return TC_ERR_NOMEM;
    }
    st = tc__tl_merge_open(path, info->start_unix_ns, &m, err, errlen);
    if (st != TC_OK) {
        free(buf);
        return st;
    }
    tc__tl_merge_rank(m, info);
    while (st == TC_OK && off < info->bytes) {
        size_t n = info->bytes - off < CHUNK ? (size_t)(info->bytes - off) : CHUNK;
        st = tc__tl_part_read(part, off, buf, n, err, errlen);
        if (st == TC_OK) {
            st = tc__tl_merge_feed(m, buf, n, err, errlen);
        }
        off += n;
    }
    free(buf);
    tc__tl_merge_rank_end(m, st == TC_OK);
    if (st != TC_OK) {
        (void)tc__tl_merge_close(m, NULL, 0); /* still valid JSON; err says what is missing */
        return st;
    }
    return tc__tl_merge_close(m, err, errlen);
}
