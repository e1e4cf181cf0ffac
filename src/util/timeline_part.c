/*
 * timeline_part.c - parts of a job-wide timeline: each rank's events as
 * compact binary items (written by the writer thread of timeline.c into a
 * private temporary file), reading a kept part back, and the merge that turns
 * the ranks' parts into one trace.
 *
 * The engine gathers the ranks' parts (engine/timeline_job.c) and hands their
 * bytes to a merge (tc__tl_merge_*), which formats them with the same JSON
 * code as a file of one rank (timeline_json.c), each rank with its own pid
 * and its times shifted to the job's origin. A part's bytes came from another
 * rank: the merge checks every item's length and fields before using them,
 * and a malformed or cut part only loses the rest of that rank's section.
 *
 * Must never call MPI or the engine, touch the record buffers, or leave the
 * merged file invalid JSON.
 */
#define _GNU_SOURCE
#include "util/timeline_internal.h"
#include "util/le.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Items: the records of a part                                              */
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
    tc__le_put32(e->p + e->len, v);
    e->len += 4;
}

static void enc_u64(tl_enc_t *e, uint64_t v)
{
    tc__le_put64(e->p + e->len, v);
    e->len += 8;
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
void tc__tl_encode_row(tl_out_t *o, int tid, const char *name, size_t len)
{
    unsigned char head[9];
    tl_enc_t e = {head, 0};

    len = len > TL_ITEM_LIMIT - 5 ? TL_ITEM_LIMIT - 5 : len;
    enc_u32(&e, (uint32_t)(5 + len));
    enc_u8(&e, TL_ITEM_ROW);
    enc_u32(&e, (uint32_t)tid);
    tc__tl_out_mem(o, (const char *)head, e.len);
    tc__tl_out_mem(o, name, len);
}

/* An event's item; its time relative to t0_ns. */
void tc__tl_encode_event(tl_out_t *o, uint64_t t0_ns, const tl_rec_t *r)
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
    tc__tl_out_mem(o, (const char *)item, body + 4);
}

/* ------------------------------------------------------------------------ */
/* A kept part: reading it back                                              */
/* ------------------------------------------------------------------------ */

const tc_tl_part_info_t *tc__tl_part_info(const tc_tl_part_t *part)
{
    return &part->info;
}

tc_status_t tc__tl_part_read(tc_tl_part_t *part, uint64_t off, void *buf, size_t len, char *err,
                             size_t errlen)
{
    size_t done = 0;

    if (off > part->info.bytes || len > part->info.bytes - off) {
        tc__tl_put_err(err, errlen,
                       "reading bytes %" PRIu64 "..%" PRIu64 " of a %" PRIu64 "-byte part", off,
                       off + len, part->info.bytes);
        return TC_ERR_ARG;
    }
    while (done < len) {
        ssize_t n = pread(fileno(part->f), (char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            tc__tl_put_err(err, errlen,
                           "reading this rank's part of the job-wide timeline back from its "
                           "temporary file failed: %s",
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

/* ------------------------------------------------------------------------ */
/* Merging parts into one trace                                              */
/* ------------------------------------------------------------------------ */

struct tc_tl_merge {
    tl_out_t out;
    char path[PATH_MAX];
    int64_t origin_unix_ns;
    /* the open section */
    int open;
    int bad; /* its bytes did not decode: the rest is skipped */
    tc_tl_part_info_t info;
    uint64_t base_ns;     /* "ts" = item ts - base_ns: shifted to the origin */
    uint64_t events;      /* events of this section written */
    uint64_t fed;         /* bytes of this section decoded */
    unsigned char *carry; /* an item cut between two feeds */
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
    return q != NULL ? tc__le_get32(q) : 0;
}

static uint64_t dec_u64(tl_dec_t *d)
{
    const unsigned char *q = dec_take(d, 8);
    return q != NULL ? tc__le_get64(q) : 0;
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
        tc__tl_write_row(&m->out, m->info.rank, tid, (const char *)p + d.pos, len - d.pos);
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
    tc__tl_write_event(&m->out, m->info.rank, m->base_ns, &r);
    m->events++;
    return 0;
}

tc_status_t tc__tl_merge_open(const char *path, int64_t origin_unix_ns, tc_tl_merge_t **m_p,
                              char *err, size_t errlen)
{
    tc_tl_merge_t *m = calloc(1, sizeof(*m));

    if (m == NULL || (m->out.buf = malloc(TL_OUT_CAP)) == NULL) {
        free(m);
        tc__tl_put_err(err, errlen, "out of memory for merging the timeline");
        return TC_ERR_NOMEM;
    }
    if (snprintf(m->path, sizeof(m->path), "%s", path) >= (int)sizeof(m->path)) {
        tc__tl_put_err(err, errlen, "the timeline path \"%.256s...\" is longer than %d bytes", path,
                       PATH_MAX - 1);
        goto err_free;
    }
    m->out.f = fopen(path, "we");
    if (m->out.f == NULL) {
        tc__tl_put_err(err, errlen, "cannot open the timeline file %s: %s", path, strerror(errno));
        goto err_free;
    }
    setvbuf(m->out.f, NULL, _IONBF, 0);
    m->origin_unix_ns = origin_unix_ns;
    tc__tl_write_open(&m->out);
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
    tc__tl_write_rank_meta(&m->out, info->rank);
}

tc_status_t tc__tl_merge_feed(tc_tl_merge_t *m, const void *bytes, size_t len, char *err,
                              size_t errlen)
{
    size_t pos = 0;

    if (!m->open || m->bad) {
        tc__tl_put_err(err, errlen, "no section to feed (or its part was malformed)");
        return TC_ERR_STATE;
    }
    if (m->capcarry - m->ncarry < len) {
        size_t cap = m->capcarry * 2 > m->ncarry + len ? m->capcarry * 2 : m->ncarry + len;
        unsigned char *c = realloc(m->carry, cap);
        if (c == NULL) {
            m->bad = 1;
            tc__tl_put_err(err, errlen, "out of memory merging rank %d's part of the timeline",
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
            tc__tl_put_err(err, errlen,
                           "rank %d's part of the timeline is malformed at byte %" PRIu64
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
        tc__tl_write_drop_mark(&m->out, m->info.rank, m->info.end_ns, m->base_ns, m->info.dropped);
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
    int io_err;

    tc__tl_merge_rank_end(m, 0);
    tc__tl_write_job_footer(o, m->origin_unix_ns, m->done, m->ndone);
    tc__tl_out_flush(o);
    if (fclose(o->f) != 0 && o->err == 0) {
        o->err = errno != 0 ? errno : EIO;
    }
    io_err = o->err;
    if (io_err != 0) {
        tc__tl_put_err(err, errlen, "writing the timeline file %s failed: %s", m->path,
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
        tc__tl_put_err(err, errlen, "out of memory for saving the timeline part");
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
