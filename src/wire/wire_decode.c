/*
 * wire_decode.c - the decoder of wire.h's control messages: bytes that came
 * from another process, turned into a tc_wire_msg_t.
 *
 * It trusts none of the bytes: it checks every length against the bytes left
 * before reading, every value against its range before storing it, and the
 * number of entries against the smallest size an entry can have before sizing
 * anything by it (and so for the ids of a list). It runs in two passes over
 * the same parse code: the first validates and adds up the storage the
 * message needs (entry arrays, NUL-terminated copies of names and texts, dim0
 * arrays, the id lists, eager inputs), the second carves exactly that from
 * one allocation and fills it. So the memory it takes is linear in the input
 * length, and a decoded message never points into the caller's buffer. The
 * choices the header leaves open are in wire_internal.h; the encoder, which
 * makes the same checks, is wire_encode.c.
 *
 * Must never: read outside [data, data + len), allocate more than a constant
 * times len, write *msg_p on failure, log (it reports through err; the caller
 * decides what to say), or know anything about MPI.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/le.h"
#include "wire/wire_internal.h"

/* The fewest bytes an entry or record can take: used to bound a count by the
 * bytes left before anything is sized by it. */
enum {
    /* kind dtype op root(1) ndim(1) name_len(1) name(1) extras */
    WIRE_MIN_REQUEST = 8,
    /* RUN: rtype name_len(1) name(1) rflags ndim0(1) cache_ref(1);
     * ERROR: rtype name_len(1) name(1) rflags status text_len(1); both 6 */
    WIRE_MIN_RESPONSE = 6,
    /* seq(1) round(1) cache_gen(1) n ready(1) n some(1) n stale(1) n eager(1) */
    WIRE_MIN_CYCLE = 7,
    /* id(1) len(1) byte */
    WIRE_MIN_EAGER = 3,
    /* status text_len(1) */
    WIRE_MIN_TERMINATE = 2,
};

#define WIRE_VARINT_MAX_BYTES 10

typedef struct {
    const uint8_t *start, *p, *end;
    const char *entry_what; /* "request", "response" or NULL (header, terminate) */
    uint32_t entry_index;
    char *err;
    size_t errlen;
} wire_reader_t;

/* Storage for a decoded message. With base == NULL (first pass) it only adds
 * up sizes; with base set (second pass) it hands out pieces of base. */
typedef struct {
    uint8_t *base;
    size_t cap; /* bytes at base */
    size_t used;
    bool overflow;
} wire_arena_t;

/* n objects of size bytes, aligned to align (a power of two). In the second
 * pass the pieces cannot run past cap even if the input changed between the
 * passes (a buffer shared with a writer): overflow is set and NULL returned. */
static void *arena_take(wire_arena_t *a, size_t n, size_t size, size_t align)
{
    size_t at = (a->used + align - 1) & ~(align - 1);

    if (at < a->used || (size != 0 && n > (SIZE_MAX - at) / size)) {
        a->overflow = true;
        return NULL;
    }
    if (a->base != NULL && at + n * size > a->cap) {
        a->overflow = true;
        return NULL;
    }
    a->used = at + n * size;
    return a->base != NULL ? a->base + at : NULL;
}

/* Writes "wire: [<entry> <i>: ]<reason> (byte <offset>)" into err. */
static tc_status_t rd_fail(const wire_reader_t *rd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static tc_status_t rd_fail(const wire_reader_t *rd, const char *fmt, ...)
{
    char reason[192];
    va_list ap;

    if (rd->err == NULL || rd->errlen == 0) {
        return TC_ERR_TRANSPORT;
    }
    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    if (rd->entry_what != NULL) {
        snprintf(rd->err, rd->errlen, "wire: %s %" PRIu32 ": %s (byte %zu)", rd->entry_what,
                 rd->entry_index, reason, (size_t)(rd->p - rd->start));
    } else {
        snprintf(rd->err, rd->errlen, "wire: %s (byte %zu)", reason,
                 (size_t)(rd->p - rd->start));
    }
    return TC_ERR_TRANSPORT;
}

static size_t rd_left(const wire_reader_t *rd)
{
    return (size_t)(rd->end - rd->p);
}

static tc_status_t rd_u8(wire_reader_t *rd, const char *what, uint8_t *v_p)
{
    if (rd->p == rd->end) {
        return rd_fail(rd, "truncated reading %s", what);
    }
    *v_p = *rd->p++;
    return TC_OK;
}

static tc_status_t rd_varint(wire_reader_t *rd, const char *what, uint64_t *v_p)
{
    uint64_t v = 0;
    unsigned i;

    for (i = 0; i < WIRE_VARINT_MAX_BYTES; i++) {
        uint8_t b;
        if (rd->p + i == rd->end) {
            return rd_fail(rd, "truncated reading %s", what);
        }
        b = rd->p[i];
        if (i == WIRE_VARINT_MAX_BYTES - 1) {
            /* the 10th byte holds bit 63 only, and must end the varint */
            if (b & 0x80) {
                return rd_fail(rd, "%s: varint longer than %d bytes", what,
                               WIRE_VARINT_MAX_BYTES);
            }
            if (b > 1) {
                return rd_fail(rd, "%s: varint above 2^64-1", what);
            }
        }
        v |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            rd->p += i + 1;
            *v_p = v;
            return TC_OK;
        }
    }
    /* not reached: the 10th byte either ends the varint or fails above */
    return rd_fail(rd, "%s: bad varint", what);
}

/* A varint that must be 0..max. */
static tc_status_t rd_varint_max(wire_reader_t *rd, const char *what, uint64_t max,
                                 uint64_t *v_p)
{
    const uint8_t *at = rd->p;
    uint64_t v = 0;
    tc_status_t st = rd_varint(rd, what, &v);

    if (st != TC_OK) {
        return st;
    }
    if (v > max) {
        rd->p = at; /* report the offset of the value, not of what follows */
        return rd_fail(rd, "%s %" PRIu64 " above %" PRIu64, what, v, max);
    }
    *v_p = v;
    return TC_OK;
}

/* len bytes with no 0x00, copied NUL-terminated into the arena. min_len..max_len. */
static tc_status_t rd_string(wire_reader_t *rd, wire_arena_t *a, const char *what,
                             uint64_t min_len, uint64_t max_len, const char **s_p,
                             uint32_t *len_p)
{
    const uint8_t *at = rd->p;
    uint64_t len = 0;
    const uint8_t *nul;
    char *copy;
    tc_status_t st = rd_varint(rd, what, &len);

    if (st != TC_OK) {
        return st;
    }
    if (len < min_len || len > max_len) {
        rd->p = at;
        return rd_fail(rd, "%s length %" PRIu64 " not in %" PRIu64 "..%" PRIu64, what, len,
                       min_len, max_len);
    }
    if (len > rd_left(rd)) {
        return rd_fail(rd, "truncated reading %s: %" PRIu64 " bytes, %zu left", what, len,
                       rd_left(rd));
    }
    nul = memchr(rd->p, 0, (size_t)len);
    if (nul != NULL) {
        rd->p = nul;
        return rd_fail(rd, "%s contains a 0x00 byte", what);
    }
    copy = arena_take(a, (size_t)len + 1, 1, 1);
    if (copy != NULL) {
        memcpy(copy, rd->p, (size_t)len);
        copy[len] = '\0';
    }
    rd->p += len;
    *s_p = copy;
    *len_p = (uint32_t)len;
    return TC_OK;
}

/* A status byte 1..TC_ERR_TIMEOUT. */
static tc_status_t rd_status(wire_reader_t *rd, const char *what, uint8_t *v_p)
{
    uint8_t v = 0;
    tc_status_t st = rd_u8(rd, what, &v);

    if (st != TC_OK) {
        return st;
    }
    if (v == 0 || v > WIRE_STATUS_MAX) {
        rd->p--;
        return rd_fail(rd, "%s %u not in 1..%u", what, v, WIRE_STATUS_MAX);
    }
    *v_p = v;
    return TC_OK;
}

/* zigzag maps exactly the int32 range onto 0..2^32-1 */
static tc_status_t rd_zigzag(wire_reader_t *rd, const char *what, int32_t *v_p)
{
    uint64_t zz = 0;
    tc_status_t st = rd_varint_max(rd, what, UINT32_MAX, &zz);

    if (st == TC_OK) {
        *v_p = (zz & 1) ? -(int32_t)(zz >> 1) - 1 : (int32_t)(zz >> 1);
    }
    return st;
}

/* A process set id given explicitly: 1..TC_WIRE_MAX_PSET (0 is left out). */
static tc_status_t rd_pset(wire_reader_t *rd, uint32_t *pset_p)
{
    uint64_t v = 0;
    tc_status_t st = rd_varint_max(rd, "process set", TC_WIRE_MAX_PSET, &v);

    if (st != TC_OK) {
        return st;
    }
    if (v == 0) {
        return rd_fail(rd, "process set 0 must be left out");
    }
    *pset_p = (uint32_t)v;
    return TC_OK;
}

/* A rank list: n (1..TC_WIRE_MAX_RANKS), then strictly ascending ranks below
 * TC_WIRE_MAX_RANKS, each after the first as its distance from the previous
 * one minus 1. */
static tc_status_t rd_ranks(wire_reader_t *rd, wire_arena_t *a, tc_wire_request_t *r)
{
    uint64_t n = 0, v = 0, j, prev = 0;
    int32_t *ranks;
    tc_status_t st;

    if ((st = rd_varint_max(rd, "rank count", TC_WIRE_MAX_RANKS, &n)) != TC_OK) {
        return st;
    }
    if (n == 0 || n > rd_left(rd)) { /* each rank takes at least one byte */
        return rd_fail(rd, "rank count %" PRIu64 " not in 1..%zu", n, rd_left(rd));
    }
    ranks = arena_take(a, (size_t)n, sizeof(int32_t), _Alignof(int32_t));
    for (j = 0; j < n; j++) {
        if ((st = rd_varint_max(rd, "rank", TC_WIRE_MAX_RANKS, &v)) != TC_OK) {
            return st;
        }
        v = j == 0 ? v : prev + 1 + v;
        if (v >= TC_WIRE_MAX_RANKS) {
            return rd_fail(rd, "rank list entry %" PRIu64 " is %" PRIu64 ", not below %d", j, v,
                           TC_WIRE_MAX_RANKS);
        }
        if (ranks != NULL) {
            ranks[j] = (int32_t)v;
        }
        prev = v;
    }
    r->nranks = (uint32_t)n;
    r->ranks = ranks;
    return TC_OK;
}

static tc_status_t rd_request(wire_reader_t *rd, wire_arena_t *a, tc_wire_request_t *r)
{
    uint8_t kind = 0, dtype = 0, op = 0, ndim = 0, extras = 0;
    uint64_t dim = 0;
    unsigned d;
    tc_status_t st;

    memset(r, 0, sizeof(*r));
    if ((st = rd_u8(rd, "kind", &kind)) != TC_OK) {
        return st;
    }
    if (kind >= TC_KIND_COUNT) {
        rd->p--;
        return rd_fail(rd, "kind %u not in 0..%d", kind, TC_KIND_COUNT - 1);
    }
    if ((st = rd_u8(rd, "dtype", &dtype)) != TC_OK) {
        return st;
    }
    if (!tc__dtype_valid(dtype)) {
        rd->p--;
        return rd_fail(rd, "unknown dtype %u", dtype);
    }
    if ((st = rd_u8(rd, "op", &op)) != TC_OK) {
        return st;
    }
    if (!tc__op_valid(op)) {
        rd->p--;
        return rd_fail(rd, "unknown op %u", op);
    }
    if ((st = rd_zigzag(rd, "zigzag root", &r->root)) != TC_OK) {
        return st;
    }
    if ((st = rd_u8(rd, "ndim", &ndim)) != TC_OK) {
        return st;
    }
    if (ndim > TC_MAX_DIMS) {
        rd->p--;
        return rd_fail(rd, "ndim %u above %d", ndim, TC_MAX_DIMS);
    }
    for (d = 0; d < ndim; d++) {
        if ((st = rd_varint_max(rd, "shape value", INT64_MAX, &dim)) != TC_OK) {
            return st;
        }
        r->shape[d] = (int64_t)dim;
    }
    if ((st = rd_string(rd, a, "name", 1, TC_MAX_NAME_LEN, &r->name, &r->name_len)) != TC_OK) {
        return st;
    }
    if ((st = rd_u8(rd, "extras", &extras)) != TC_OK) {
        return st;
    }
    if (extras & ~WIRE_EXTRAS_ALL) {
        rd->p--;
        return rd_fail(rd, "unknown extras bits 0x%02x", extras & ~WIRE_EXTRAS_ALL);
    }
    if (extras & WIRE_EXTRA_SCALES) {
        double f[2];
        int k;
        for (k = 0; k < 2; k++) {
            uint64_t bits;
            if (rd_left(rd) < 8) {
                return rd_fail(rd, "truncated reading %s", k == 0 ? "prescale" : "postscale");
            }
            bits = tc__le_get64(rd->p);
            memcpy(&f[k], &bits, sizeof(f[k]));
            if (!isfinite(f[k])) {
                return rd_fail(rd, "%s is not finite", k == 0 ? "prescale" : "postscale");
            }
            rd->p += 8;
        }
        if (f[0] == 1.0 && f[1] == 1.0 && !signbit(f[0]) && !signbit(f[1])) {
            return rd_fail(rd, "scaling factors of 1 must be left out");
        }
        r->scaled = 1;
        r->prescale = f[0];
        r->postscale = f[1];
    }
    if (extras & WIRE_EXTRA_GROUP) {
        uint64_t gs = 0, gi = 0;
        if ((st = rd_varint_max(rd, "group size", TC_WIRE_MAX_GROUP, &gs)) != TC_OK ||
            (st = rd_varint_max(rd, "group index", TC_WIRE_MAX_GROUP, &gi)) != TC_OK) {
            return st;
        }
        if (gs == 0 || gi >= gs) {
            return rd_fail(rd, "group member %" PRIu64 " of %" PRIu64, gi, gs);
        }
        if ((st = rd_string(rd, a, "group key", 1, TC_MAX_NAME_LEN, &r->group_key,
                            &r->group_key_len)) != TC_OK) {
            return st;
        }
        r->group_size = (uint32_t)gs;
        r->group_index = (uint32_t)gi;
    }
    if (extras & WIRE_EXTRA_PSET) {
        if ((st = rd_pset(rd, &r->pset)) != TC_OK) {
            return st;
        }
    }
    if (extras & WIRE_EXTRA_RANKS) {
        if ((st = rd_ranks(rd, a, r)) != TC_OK) {
            return st;
        }
    }
    r->kind = kind;
    r->dtype = dtype;
    r->op = op;
    r->ndim = ndim;
    return TC_OK;
}

/* A RUN response's description of its tensor: kind dtype op ndim shape. */
static tc_status_t rd_desc(wire_reader_t *rd, tc_wire_desc_t *d)
{
    uint64_t v = 0;
    unsigned k;
    tc_status_t st;

    if ((st = rd_u8(rd, "description kind", &d->kind)) != TC_OK ||
        (st = rd_u8(rd, "description dtype", &d->dtype)) != TC_OK ||
        (st = rd_u8(rd, "description op", &d->op)) != TC_OK ||
        (st = rd_u8(rd, "description ndim", &d->ndim)) != TC_OK) {
        return st;
    }
    if (d->kind >= TC_KIND_COUNT || !tc__dtype_valid(d->dtype) || !tc__op_valid(d->op) ||
        d->ndim > TC_MAX_DIMS) {
        return rd_fail(rd, "description: kind %u dtype %u op %u ndim %u", d->kind, d->dtype,
                       d->op, d->ndim);
    }
    for (k = 0; k < d->ndim; k++) {
        if ((st = rd_varint_max(rd, "description shape value", INT64_MAX, &v)) != TC_OK) {
            return st;
        }
        d->shape[k] = (int64_t)v;
    }
    return TC_OK;
}

static tc_status_t rd_response(wire_reader_t *rd, wire_arena_t *a, tc_wire_response_t *r)
{
    uint8_t rtype = 0, rflags = 0;
    uint64_t n = 0, v = 0, j;
    int64_t *dim0;
    tc_status_t st;

    memset(r, 0, sizeof(*r));
    if ((st = rd_u8(rd, "rtype", &rtype)) != TC_OK) {
        return st;
    }
    if (rtype != TC_WIRE_RUN && rtype != TC_WIRE_ERROR) {
        rd->p--;
        return rd_fail(rd, "unknown rtype %u", rtype);
    }
    r->rtype = rtype;
    if ((st = rd_string(rd, a, "name", 1, TC_MAX_NAME_LEN, &r->name, &r->name_len)) != TC_OK) {
        return st;
    }
    if ((st = rd_u8(rd, "rflags", &rflags)) != TC_OK) {
        return st;
    }
    if ((rflags & ~WIRE_RESP_ALL) ||
        (rtype == TC_WIRE_ERROR && (rflags & (WIRE_RESP_DESC | WIRE_RESP_VALUE)))) {
        rd->p--;
        return rd_fail(rd, "rflags 0x%02x not allowed on %s", rflags,
                       rtype == TC_WIRE_RUN ? "RUN" : "ERROR");
    }
    if ((rflags & WIRE_RESP_PSET) && (st = rd_pset(rd, &r->pset)) != TC_OK) {
        return st;
    }
    if (rtype == TC_WIRE_ERROR) {
        if ((st = rd_status(rd, "error status", &r->status)) != TC_OK) {
            return st;
        }
        return rd_string(rd, a, "error text", 0, TC_WIRE_MAX_TEXT, &r->text, &r->text_len);
    }
    if ((st = rd_varint_max(rd, "ndim0", TC_WIRE_MAX_RANKS, &n)) != TC_OK) {
        return st;
    }
    if (n > rd_left(rd)) { /* each value takes at least one byte */
        return rd_fail(rd, "ndim0 %" PRIu64 " cannot fit in the %zu bytes left", n,
                       rd_left(rd));
    }
    dim0 = arena_take(a, (size_t)n, sizeof(int64_t), _Alignof(int64_t));
    for (j = 0; j < n; j++) {
        if ((st = rd_varint_max(rd, "dim0 value", INT64_MAX, &v)) != TC_OK) {
            return st;
        }
        if (dim0 != NULL) {
            dim0[j] = (int64_t)v;
        }
    }
    r->ndim0 = (uint32_t)n;
    r->dim0 = n > 0 ? dim0 : NULL;
    /* 0 means not cached, so the largest id needs TC_WIRE_MAX_CACHE itself */
    if ((st = rd_varint_max(rd, "cache_ref", TC_WIRE_MAX_CACHE, &v)) != TC_OK) {
        return st;
    }
    r->cache_ref = (uint32_t)v;
    if ((rflags & WIRE_RESP_DESC) && (st = rd_desc(rd, &r->desc)) != TC_OK) {
        return st;
    }
    r->has_desc = (rflags & WIRE_RESP_DESC) != 0;
    if ((rflags & WIRE_RESP_VALUE) && (st = rd_zigzag(rd, "value", &r->value)) != TC_OK) {
        return st;
    }
    r->has_value = (rflags & WIRE_RESP_VALUE) != 0;
    return TC_OK;
}

/* An id list: n, then n strictly ascending ids below TC_WIRE_MAX_CACHE, each
 * after the first written as its distance from the previous one minus 1.
 * count_what and id_what name the fields ("ready count", "ready id"); an id's
 * error names its index the way an entry's does, so the hot loop formats
 * nothing. *ids_p is NULL when n is 0. */
static tc_status_t rd_ids(wire_reader_t *rd, wire_arena_t *a, const char *count_what,
                          const char *id_what, uint32_t *n_p, const uint32_t **ids_p)
{
    const uint8_t *at;
    uint64_t n = 0, v = 0, j;
    uint32_t prev = 0, *ids;
    tc_status_t st;

    if ((st = rd_varint_max(rd, count_what, TC_WIRE_MAX_CACHE, &n)) != TC_OK) {
        return st;
    }
    if (n > rd_left(rd)) { /* each id takes at least one byte */
        return rd_fail(rd, "%s %" PRIu64 " cannot fit in the %zu bytes left", count_what, n,
                       rd_left(rd));
    }
    ids = arena_take(a, (size_t)n, sizeof(uint32_t), _Alignof(uint32_t));
    rd->entry_what = id_what;
    for (j = 0; j < n; j++) {
        rd->entry_index = (uint32_t)j;
        at = rd->p;
        if ((st = rd_varint(rd, j == 0 ? "value" : "delta", &v)) != TC_OK) {
            return st;
        }
        /* prev < TC_WIRE_MAX_CACHE, so the room above it cannot wrap; comparing
         * v with that room, not prev + 1 + v with the limit, keeps a delta near
         * 2^64 from wrapping round to a small, valid-looking id */
        if (j == 0 && v >= TC_WIRE_MAX_CACHE) {
            rd->p = at; /* report the offset of the value, not of what follows */
            return rd_fail(rd, "value %" PRIu64 " not below %u", v, TC_WIRE_MAX_CACHE);
        }
        if (j > 0 && v >= (uint64_t)TC_WIRE_MAX_CACHE - prev - 1) {
            rd->p = at;
            return rd_fail(rd, "delta %" PRIu64 " after id %" PRIu32 " reaches %u or more", v,
                           prev, TC_WIRE_MAX_CACHE);
        }
        prev = j == 0 ? (uint32_t)v : prev + 1 + (uint32_t)v;
        if (ids != NULL) {
            ids[j] = prev;
        }
    }
    rd->entry_what = NULL;
    *n_p = (uint32_t)n;
    *ids_p = n > 0 ? ids : NULL;
    return TC_OK;
}

/* The eager record: like an id list, each id followed by len and len bytes,
 * copied into the arena (8-aligned, so kernels may read them as any dtype). */
static tc_status_t rd_eager(wire_reader_t *rd, wire_arena_t *a, tc_wire_msg_t *m)
{
    const uint8_t *at;
    uint64_t n = 0, v = 0, len = 0, j;
    uint32_t prev = 0;
    tc_wire_eager_t *ents;
    tc_status_t st;

    if ((st = rd_varint_max(rd, "eager count", TC_WIRE_MAX_CACHE, &n)) != TC_OK) {
        return st;
    }
    if (n > rd_left(rd) / WIRE_MIN_EAGER) {
        return rd_fail(rd, "eager count %" PRIu64 " cannot fit in the %zu bytes left", n,
                       rd_left(rd));
    }
    ents = arena_take(a, (size_t)n, sizeof(*ents), _Alignof(tc_wire_eager_t));
    rd->entry_what = "eager input";
    for (j = 0; j < n; j++) {
        uint8_t *data;
        rd->entry_index = (uint32_t)j;
        at = rd->p;
        if ((st = rd_varint(rd, j == 0 ? "id" : "id delta", &v)) != TC_OK) {
            return st;
        }
        /* the same wrap-proof check as rd_ids */
        if ((j == 0 && v >= TC_WIRE_MAX_CACHE) ||
            (j > 0 && v >= (uint64_t)TC_WIRE_MAX_CACHE - prev - 1)) {
            rd->p = at;
            return rd_fail(rd, "id %s %" PRIu64 " reaches %u or more", j == 0 ? "value" : "delta",
                           v, TC_WIRE_MAX_CACHE);
        }
        prev = j == 0 ? (uint32_t)v : prev + 1 + (uint32_t)v;
        at = rd->p;
        if ((st = rd_varint(rd, "len", &len)) != TC_OK) {
            return st;
        }
        if (len == 0 || len > TC_WIRE_MAX_EAGER) {
            rd->p = at;
            return rd_fail(rd, "len %" PRIu64 " outside 1..%u", len, TC_WIRE_MAX_EAGER);
        }
        if (len > rd_left(rd)) {
            return rd_fail(rd, "len %" PRIu64 " runs past the end (%zu bytes left)", len,
                           rd_left(rd));
        }
        data = arena_take(a, (size_t)len, 1, 8);
        if (data != NULL) {
            memcpy(data, rd->p, (size_t)len);
        }
        if (ents != NULL) {
            ents[j] = (tc_wire_eager_t){prev, (uint32_t)len, data};
        }
        rd->p += len;
    }
    rd->entry_what = NULL;
    m->neager = (uint32_t)n;
    m->eager = n > 0 ? ents : NULL;
    return TC_OK;
}

/* One pass over the whole input; see the file comment. */
static tc_status_t rd_message(wire_reader_t *rd, wire_arena_t *a, tc_wire_msg_t *m)
{
    uint8_t magic = 0, version = 0, type = 0, flags = 0, allowed;
    uint64_t count = 0;
    size_t min_entry, min_after, room;
    uint32_t i;
    tc_status_t st;

    memset(m, 0, sizeof(*m));
    if ((st = rd_u8(rd, "magic", &magic)) != TC_OK) {
        return st;
    }
    if (magic != TC_WIRE_MAGIC) {
        rd->p--;
        return rd_fail(rd, "bad magic 0x%02X, want 0x%02X", magic, TC_WIRE_MAGIC);
    }
    if ((st = rd_u8(rd, "version", &version)) != TC_OK) {
        return st;
    }
    if (version != TC_WIRE_VERSION) {
        rd->p--;
        return rd_fail(rd, "unsupported version %u, want %d", version, TC_WIRE_VERSION);
    }
    if ((st = rd_u8(rd, "type", &type)) != TC_OK) {
        return st;
    }
    switch (type) {
    case TC_WIRE_REQUESTS:
        allowed = TC_WIRE_F_SHUTDOWN | TC_WIRE_F_SPREAD | TC_WIRE_F_SEQ;
        min_entry = WIRE_MIN_REQUEST;
        break;
    case TC_WIRE_CYCLE:
        allowed = TC_WIRE_F_TERMINATE;
        min_entry = WIRE_MIN_RESPONSE;
        break;
    case TC_WIRE_BYE:
        allowed = TC_WIRE_F_TERMINATE; /* an abort: why the sender stopped */
        min_entry = 1; /* unused: count must be 0 */
        break;
    default:
        rd->p--;
        return rd_fail(rd, "unknown message type %u", type);
    }
    if ((st = rd_u8(rd, "flags", &flags)) != TC_OK) {
        return st;
    }
    if (flags & ~allowed) {
        rd->p--;
        return rd_fail(rd, "flags 0x%02X not allowed on message type %u (allowed 0x%02X)", flags,
                       type, allowed);
    }
    if ((st = rd_varint_max(rd, "count", UINT32_MAX, &count)) != TC_OK) {
        return st;
    }
    if (type == TC_WIRE_BYE && count != 0) {
        return rd_fail(rd, "BYE with count %" PRIu64 ", want 0", count);
    }
    /* the records after the entries take their share of the bytes left too */
    min_after = type == TC_WIRE_CYCLE ? WIRE_MIN_CYCLE : 0;
    if (flags & TC_WIRE_F_SEQ) {
        min_after += 1;
    }
    if (flags & TC_WIRE_F_TERMINATE) {
        min_after += WIRE_MIN_TERMINATE;
    }
    room = rd_left(rd) > min_after ? rd_left(rd) - min_after : 0;
    if (count > room / min_entry) {
        return rd_fail(rd,
                       "count %" PRIu64 " cannot fit in the %zu bytes left (at least %zu "
                       "bytes an entry, plus %zu after the entries)",
                       count, rd_left(rd), min_entry, min_after);
    }
    m->type = type;
    m->flags = flags;
    m->count = (uint32_t)count;

    if (type == TC_WIRE_REQUESTS) {
        tc_wire_request_t scratch;
        m->reqs = arena_take(a, (size_t)count, sizeof(*m->reqs), _Alignof(tc_wire_request_t));
        rd->entry_what = "request";
        for (i = 0; i < m->count; i++) {
            rd->entry_index = i;
            st = rd_request(rd, a, m->reqs != NULL ? &m->reqs[i] : &scratch);
            if (st != TC_OK) {
                return st;
            }
        }
    } else if (type == TC_WIRE_CYCLE) {
        tc_wire_response_t scratch;
        m->resps =
            arena_take(a, (size_t)count, sizeof(*m->resps), _Alignof(tc_wire_response_t));
        rd->entry_what = "response";
        for (i = 0; i < m->count; i++) {
            rd->entry_index = i;
            st = rd_response(rd, a, m->resps != NULL ? &m->resps[i] : &scratch);
            if (st != TC_OK) {
                return st;
            }
        }
    }
    rd->entry_what = NULL;
    if (m->count == 0) {
        m->reqs = NULL;
        m->resps = NULL;
    }

    if ((flags & TC_WIRE_F_SEQ) && (st = rd_varint(rd, "seq", &m->seq)) != TC_OK) {
        return st;
    }
    /* REQUESTS and BYE have no cycle record: their cycle fields stay zero
     * (but seq, read above for a REQUESTS with SEQ) */
    if (type == TC_WIRE_CYCLE) {
        uint64_t round = 0;
        if ((st = rd_varint(rd, "seq", &m->seq)) != TC_OK) {
            return st;
        }
        if ((st = rd_varint_max(rd, "round", TC_WIRE_MAX_ROUND, &round)) != TC_OK) {
            return st;
        }
        m->round = (uint32_t)round;
        if ((st = rd_varint(rd, "cache_gen", &m->cache_gen)) != TC_OK) {
            return st;
        }
        st = rd_ids(rd, a, "ready count", "ready id", &m->nready, &m->ready);
        if (st != TC_OK) {
            return st;
        }
        st = rd_ids(rd, a, "some count", "some id", &m->nsome, &m->some);
        if (st != TC_OK) {
            return st;
        }
        st = rd_ids(rd, a, "stale count", "stale id", &m->nstale, &m->stale);
        if (st != TC_OK) {
            return st;
        }
        if ((st = rd_eager(rd, a, m)) != TC_OK) {
            return st;
        }
    }

    if (flags & TC_WIRE_F_TERMINATE) {
        if ((st = rd_status(rd, "terminate status", &m->term_status)) != TC_OK) {
            return st;
        }
        st = rd_string(rd, a, "terminate text", 0, TC_WIRE_MAX_TEXT, &m->term_text,
                       &m->term_text_len);
        if (st != TC_OK) {
            return st;
        }
    }
    if (rd->p != rd->end) {
        return rd_fail(rd, "%zu trailing bytes after the message", rd_left(rd));
    }
    return TC_OK;
}

tc_status_t tc__wire_decode(const void *data, size_t len, tc_wire_msg_t *msg_p, char *err,
                            size_t errlen)
{
    wire_reader_t rd;
    wire_arena_t arena = {NULL, 0, 0, false};
    tc_wire_msg_t msg;
    size_t size;
    tc_status_t st;

    if (err != NULL && errlen > 0) {
        err[0] = '\0';
    }
    if (data == NULL) {
        if (len > 0) {
            if (err != NULL && errlen > 0) {
                snprintf(err, errlen, "wire: NULL data with length %zu", len);
            }
            return TC_ERR_TRANSPORT;
        }
        data = ""; /* no arithmetic on a null pointer, even + 0 */
    }

    /* pass 1: validate and size */
    rd = (wire_reader_t){data, data, (const uint8_t *)data + len, NULL, 0, err, errlen};
    st = rd_message(&rd, &arena, &msg);
    if (st != TC_OK) {
        goto err;
    }
    if (arena.overflow) {
        st = TC_ERR_NOMEM;
        if (err != NULL && errlen > 0) {
            snprintf(err, errlen, "wire: decoded size of a %zu-byte message overflows", len);
        }
        goto err;
    }

    /* pass 2: the same parse, filling one allocation of exactly that size */
    size = arena.used;
    arena = (wire_arena_t){NULL, size, 0, false};
    if (size > 0) {
        arena.base = malloc(size);
        if (arena.base == NULL) {
            st = TC_ERR_NOMEM;
            if (err != NULL && errlen > 0) {
                snprintf(err, errlen, "wire: out of memory decoding %zu bytes (%zu needed)", len,
                         size);
            }
            goto err;
        }
    }
    rd = (wire_reader_t){data, data, (const uint8_t *)data + len, NULL, 0, err, errlen};
    st = rd_message(&rd, &arena, &msg);
    if (st != TC_OK) {
        goto err_free_arena; /* only if the bytes changed under us since pass 1 */
    }
    if (arena.used != size || arena.overflow) {
        st = TC_ERR_TRANSPORT;
        if (err != NULL && errlen > 0) {
            snprintf(err, errlen, "wire: the input changed while it was decoded (%zu vs %zu bytes)",
                     arena.used, size);
        }
        goto err_free_arena;
    }
    msg.owned = arena.base;
    *msg_p = msg;
    return TC_OK;

err_free_arena:
    free(arena.base);
err:
    return st;
}

void tc__wire_msg_free(tc_wire_msg_t *msg)
{
    if (msg == NULL) {
        return;
    }
    free(msg->owned);
    memset(msg, 0, sizeof(*msg));
}
