/*
 * timeline_json.c - the JSON text of a timeline: the writer's output buffer,
 * strings escaped for JSON, and each piece of a Chrome trace (events, row
 * names, the drop mark, the head and the footers of a rank's file and of a
 * merged one).
 *
 * Output: one JSON object {"traceEvents":[...],"displayTimeUnit":"ms",
 * "otherData":{...}}, one event per line; "pid" is the rank, "tid" the row,
 * "ts"/"dur" microseconds since the start with nanosecond digits. Names are
 * escaped for JSON; bytes that are not valid UTF-8 become \u00XX (read as
 * Latin-1), so the file is always valid UTF-8 JSON. The helpers the writer
 * calls per byte or per number stay static here (one file, so the compiler
 * inlines them); the other files call the tc__tl_write_* pieces.
 *
 * Also the error text both of them report (tc__tl_put_err). Only the
 * writer thread of timeline.c and a merge (timeline_part.c) call this, each on its own tl_out_t. Must never take a lock, touch the record
 * buffers, or write anywhere but o's buffer and o->f.
 */
#define _GNU_SOURCE
#include "util/timeline_internal.h"

#include "util/backoff.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Room one formatting step may need without checking again (numbers, keys,
 * one escaped character). */
#define TL_OUT_STEP 128u

static const char *const fixed_track_names[] = {
    [TC_TL_TRACK_NEGOTIATION] = "negotiation",
    [TC_TL_TRACK_COLLECTIVES] = "collectives",
    [TC_TL_TRACK_OTHER] = "other tensors",
};
#define NFIXED ((int)(sizeof(fixed_track_names) / sizeof(fixed_track_names[0])))

/* The error text of a failed timeline call, formatted into err (NULL: none
 * wanted). Here, below both of the files that report errors. */
void tc__tl_put_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

void tc__tl_out_flush(tl_out_t *o)
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
        tc__tl_out_flush(o);
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
void tc__tl_write_event(tl_out_t *o, int pid, uint64_t base_ns, const tl_rec_t *r)
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
void tc__tl_write_rank_meta(tl_out_t *o, int rank)
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

/* The head of every trace: the opening of its traceEvents. */
void tc__tl_write_open(tl_out_t *o)
{
    out_str(o, "{\"traceEvents\":[\n");
}

/* The "events dropped" mark of rank, at ts_ns - base_ns. */
void tc__tl_write_drop_mark(tl_out_t *o, int rank, uint64_t ts_ns, uint64_t base_ns,
                            uint64_t dropped)
{
    out_item(o);
    out_fmt(o, "\"name\":\"tcoll timeline: %" PRIu64 " events dropped (buffer full)\"", dropped);
    out_str(o, ",\"ph\":\"i\",\"s\":\"p\",\"ts\":");
    out_us(o, (int64_t)(ts_ns - base_ns));
    out_fmt(o, ",\"pid\":%d,\"tid\":0,\"args\":{\"dropped\":%" PRIu64 "}}", rank, dropped);
}

void tc__tl_write_footer(tl_out_t *o, int rank, uint64_t t0_ns, int64_t start_unix_ns,
                         uint64_t written, uint64_t dropped)
{
    if (dropped > 0) {
        tc__tl_write_drop_mark(o, rank, tc__now_ns(), t0_ns, dropped);
    }
    out_str(o, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"tool\":");
    out_cstr(o, "tcoll");
    out_str(o, ",\"version\":");
    out_cstr(o, tc_version());
    out_fmt(o, ",\"rank\":%d,\"start_unix_us\":%" PRId64, rank, start_unix_ns / 1000);
    out_fmt(o, ",\"events\":%" PRIu64 ",\"dropped_events\":%" PRIu64 "}\n}\n", written, dropped);
}

/* The footer of a merged file: the totals, then per rank its section's. */
void tc__tl_write_job_footer(tl_out_t *o, int64_t origin_unix_ns, const tl_merged_t *done,
                             size_t ndone)
{
    uint64_t events = 0, dropped = 0;
    size_t i;

    for (i = 0; i < ndone; i++) {
        events += done[i].events;
        dropped += done[i].dropped;
    }
    out_str(o, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"tool\":");
    out_cstr(o, "tcoll");
    out_str(o, ",\"version\":");
    out_cstr(o, tc_version());
    out_fmt(o, ",\"job\":true,\"start_unix_us\":%" PRId64, origin_unix_ns / 1000);
    out_fmt(o, ",\"events\":%" PRIu64 ",\"dropped_events\":%" PRIu64 ",\"ranks\":[", events,
            dropped);
    for (i = 0; i < ndone; i++) {
        const tl_merged_t *d = &done[i];
        out_fmt(o, "%s\n{\"rank\":%d,\"start_unix_us\":%" PRId64, i > 0 ? "," : "", d->rank,
                d->start_unix_ns / 1000);
        out_fmt(o, ",\"events\":%" PRIu64 ",\"dropped_events\":%" PRIu64 ",\"complete\":%s}",
                d->events, d->dropped, d->complete ? "true" : "false");
    }
    out_str(o, "]}\n}\n");
}

/* A row's name, as the writer and a merge give it when a row first appears. */
void tc__tl_write_row(tl_out_t *o, int rank, int tid, const char *name, size_t len)
{
    out_meta(o, rank, tid, "thread_name", "name", name, len, 0);
}

/* out_mem for the other files (the binary items of a part share the
 * writer's buffer); here the static one stays inlined. */
void tc__tl_out_mem(tl_out_t *o, const char *p, size_t n)
{
    out_mem(o, p, n);
}
