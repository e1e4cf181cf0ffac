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
 * length, and a decoded message never points into the caller's buffer. This
 * file knows what a message is made of (header, entries, cycle record,
 * terminate record); the checked reads of its fields (varints, strings, the
 * rank and id lists) and the arena are wire_read.c's. The choices the header
 * leaves open are in wire_internal.h; the encoder, which makes the same
 * checks, is wire_encode.c.
 *
 * Must never: read outside [data, data + len), allocate more than a constant
 * times len, write *msg_p on failure, log (it reports through err; the caller
 * decides what to say), or know anything about MPI.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/le.h"
#include "wire/wire_internal.h"
#include "wire/wire_read.h"

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

static tc_status_t rd_request(wire_reader_t *rd, wire_arena_t *a, tc_wire_request_t *r)
{
    uint8_t kind = 0, dtype = 0, op = 0, ndim = 0, extras = 0;
    uint64_t dim = 0;
    unsigned d;
    tc_status_t st;

    memset(r, 0, sizeof(*r));
    if ((st = tc__wire_rd_u8(rd, "kind", &kind)) != TC_OK) {
        return st;
    }
    if (kind >= TC_KIND_COUNT) {
        rd->p--;
        return tc__wire_rd_fail(rd, "kind %u not in 0..%d", kind, TC_KIND_COUNT - 1);
    }
    if ((st = tc__wire_rd_u8(rd, "dtype", &dtype)) != TC_OK) {
        return st;
    }
    if (!tc__dtype_valid(dtype)) {
        rd->p--;
        return tc__wire_rd_fail(rd, "unknown dtype %u", dtype);
    }
    if ((st = tc__wire_rd_u8(rd, "op", &op)) != TC_OK) {
        return st;
    }
    if (!tc__op_valid(op)) {
        rd->p--;
        return tc__wire_rd_fail(rd, "unknown op %u", op);
    }
    if ((st = tc__wire_rd_zigzag(rd, "zigzag root", &r->root)) != TC_OK) {
        return st;
    }
    if ((st = tc__wire_rd_u8(rd, "ndim", &ndim)) != TC_OK) {
        return st;
    }
    if (ndim > TC_MAX_DIMS) {
        rd->p--;
        return tc__wire_rd_fail(rd, "ndim %u above %d", ndim, TC_MAX_DIMS);
    }
    for (d = 0; d < ndim; d++) {
        if ((st = tc__wire_rd_varint_max(rd, "shape value", INT64_MAX, &dim)) != TC_OK) {
            return st;
        }
        r->shape[d] = (int64_t)dim;
    }
    st = tc__wire_rd_string(rd, a, "name", 1, TC_MAX_NAME_LEN, &r->name, &r->name_len);
    if (st != TC_OK) {
        return st;
    }
    if ((st = tc__wire_rd_u8(rd, "extras", &extras)) != TC_OK) {
        return st;
    }
    if (extras & ~WIRE_EXTRAS_ALL) {
        rd->p--;
        return tc__wire_rd_fail(rd, "unknown extras bits 0x%02x", extras & ~WIRE_EXTRAS_ALL);
    }
    if (extras & WIRE_EXTRA_SCALES) {
        double f[2];
        int k;
        for (k = 0; k < 2; k++) {
            uint64_t bits;
            if (tc__wire_rd_left(rd) < 8) {
                return tc__wire_rd_fail(rd, "truncated reading %s",
                                        k == 0 ? "prescale" : "postscale");
            }
            bits = tc__le_get64(rd->p);
            memcpy(&f[k], &bits, sizeof(f[k]));
            if (!isfinite(f[k])) {
                return tc__wire_rd_fail(rd, "%s is not finite", k == 0 ? "prescale" : "postscale");
            }
            rd->p += 8;
        }
        if (f[0] == 1.0 && f[1] == 1.0 && !signbit(f[0]) && !signbit(f[1])) {
            return tc__wire_rd_fail(rd, "scaling factors of 1 must be left out");
        }
        r->scaled = 1;
        r->prescale = f[0];
        r->postscale = f[1];
    }
    if (extras & WIRE_EXTRA_GROUP) {
        uint64_t gs = 0, gi = 0;
        if ((st = tc__wire_rd_varint_max(rd, "group size", TC_WIRE_MAX_GROUP, &gs)) != TC_OK ||
            (st = tc__wire_rd_varint_max(rd, "group index", TC_WIRE_MAX_GROUP, &gi)) != TC_OK) {
            return st;
        }
        if (gs == 0 || gi >= gs) {
            return tc__wire_rd_fail(rd, "group member %" PRIu64 " of %" PRIu64, gi, gs);
        }
        if ((st = tc__wire_rd_string(rd, a, "group key", 1, TC_MAX_NAME_LEN, &r->group_key,
                                     &r->group_key_len)) != TC_OK) {
            return st;
        }
        r->group_size = (uint32_t)gs;
        r->group_index = (uint32_t)gi;
    }
    if (extras & WIRE_EXTRA_PSET) {
        if ((st = tc__wire_rd_pset(rd, &r->pset)) != TC_OK) {
            return st;
        }
    }
    if (extras & WIRE_EXTRA_RANKS) {
        if ((st = tc__wire_rd_ranks(rd, a, r)) != TC_OK) {
            return st;
        }
    }
    r->memory = (extras & WIRE_EXTRA_CUDA) ? TC_WIRE_MEM_CUDA : TC_WIRE_MEM_HOST;
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

    if ((st = tc__wire_rd_u8(rd, "description kind", &d->kind)) != TC_OK ||
        (st = tc__wire_rd_u8(rd, "description dtype", &d->dtype)) != TC_OK ||
        (st = tc__wire_rd_u8(rd, "description op", &d->op)) != TC_OK ||
        (st = tc__wire_rd_u8(rd, "description ndim", &d->ndim)) != TC_OK) {
        return st;
    }
    if (d->kind >= TC_KIND_COUNT || !tc__dtype_valid(d->dtype) || !tc__op_valid(d->op) ||
        d->ndim > TC_MAX_DIMS) {
        return tc__wire_rd_fail(rd, "description: kind %u dtype %u op %u ndim %u", d->kind,
                                d->dtype, d->op, d->ndim);
    }
    for (k = 0; k < d->ndim; k++) {
        if ((st = tc__wire_rd_varint_max(rd, "description shape value", INT64_MAX, &v)) != TC_OK) {
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
    if ((st = tc__wire_rd_u8(rd, "rtype", &rtype)) != TC_OK) {
        return st;
    }
    if (rtype != TC_WIRE_RUN && rtype != TC_WIRE_ERROR) {
        rd->p--;
        return tc__wire_rd_fail(rd, "unknown rtype %u", rtype);
    }
    r->rtype = rtype;
    st = tc__wire_rd_string(rd, a, "name", 1, TC_MAX_NAME_LEN, &r->name, &r->name_len);
    if (st != TC_OK) {
        return st;
    }
    if ((st = tc__wire_rd_u8(rd, "rflags", &rflags)) != TC_OK) {
        return st;
    }
    if ((rflags & ~WIRE_RESP_ALL) ||
        (rtype == TC_WIRE_ERROR && (rflags & (WIRE_RESP_DESC | WIRE_RESP_VALUE)))) {
        rd->p--;
        return tc__wire_rd_fail(rd, "rflags 0x%02x not allowed on %s", rflags,
                                rtype == TC_WIRE_RUN ? "RUN" : "ERROR");
    }
    if ((rflags & WIRE_RESP_PSET) && (st = tc__wire_rd_pset(rd, &r->pset)) != TC_OK) {
        return st;
    }
    if (rtype == TC_WIRE_ERROR) {
        if ((st = tc__wire_rd_status(rd, "error status", &r->status)) != TC_OK) {
            return st;
        }
        return tc__wire_rd_string(rd, a, "error text", 0, TC_WIRE_MAX_TEXT, &r->text, &r->text_len);
    }
    if ((st = tc__wire_rd_varint_max(rd, "ndim0", TC_WIRE_MAX_RANKS, &n)) != TC_OK) {
        return st;
    }
    if (n > tc__wire_rd_left(rd)) { /* each value takes at least one byte */
        return tc__wire_rd_fail(rd, "ndim0 %" PRIu64 " cannot fit in the %zu bytes left", n,
                                tc__wire_rd_left(rd));
    }
    dim0 = tc__wire_arena_take(a, (size_t)n, sizeof(int64_t), _Alignof(int64_t));
    for (j = 0; j < n; j++) {
        if ((st = tc__wire_rd_varint_max(rd, "dim0 value", INT64_MAX, &v)) != TC_OK) {
            return st;
        }
        if (dim0 != NULL) {
            dim0[j] = (int64_t)v;
        }
    }
    r->ndim0 = (uint32_t)n;
    r->dim0 = n > 0 ? dim0 : NULL;
    /* 0 means not cached, so the largest id needs TC_WIRE_MAX_CACHE itself */
    if ((st = tc__wire_rd_varint_max(rd, "cache_ref", TC_WIRE_MAX_CACHE, &v)) != TC_OK) {
        return st;
    }
    r->cache_ref = (uint32_t)v;
    if ((rflags & WIRE_RESP_DESC) && (st = rd_desc(rd, &r->desc)) != TC_OK) {
        return st;
    }
    r->has_desc = (rflags & WIRE_RESP_DESC) != 0;
    if ((rflags & WIRE_RESP_VALUE) && (st = tc__wire_rd_zigzag(rd, "value", &r->value)) != TC_OK) {
        return st;
    }
    r->has_value = (rflags & WIRE_RESP_VALUE) != 0;
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

    if ((st = tc__wire_rd_varint_max(rd, "eager count", TC_WIRE_MAX_CACHE, &n)) != TC_OK) {
        return st;
    }
    if (n > tc__wire_rd_left(rd) / WIRE_MIN_EAGER) {
        return tc__wire_rd_fail(rd, "eager count %" PRIu64 " cannot fit in the %zu bytes left", n,
                                tc__wire_rd_left(rd));
    }
    ents = tc__wire_arena_take(a, (size_t)n, sizeof(*ents), _Alignof(tc_wire_eager_t));
    rd->entry_what = "eager input";
    for (j = 0; j < n; j++) {
        uint8_t *data;
        rd->entry_index = (uint32_t)j;
        at = rd->p;
        if ((st = tc__wire_rd_varint(rd, j == 0 ? "id" : "id delta", &v)) != TC_OK) {
            return st;
        }
        /* the same wrap-proof check as tc__wire_rd_ids */
        if ((j == 0 && v >= TC_WIRE_MAX_CACHE) ||
            (j > 0 && v >= (uint64_t)TC_WIRE_MAX_CACHE - prev - 1)) {
            rd->p = at;
            return tc__wire_rd_fail(rd, "id %s %" PRIu64 " reaches %u or more",
                                    j == 0 ? "value" : "delta", v, TC_WIRE_MAX_CACHE);
        }
        prev = j == 0 ? (uint32_t)v : prev + 1 + (uint32_t)v;
        at = rd->p;
        if ((st = tc__wire_rd_varint(rd, "len", &len)) != TC_OK) {
            return st;
        }
        if (len == 0 || len > TC_WIRE_MAX_EAGER) {
            rd->p = at;
            return tc__wire_rd_fail(rd, "len %" PRIu64 " outside 1..%u", len, TC_WIRE_MAX_EAGER);
        }
        if (len > tc__wire_rd_left(rd)) {
            return tc__wire_rd_fail(rd, "len %" PRIu64 " runs past the end (%zu bytes left)", len,
                                    tc__wire_rd_left(rd));
        }
        data = tc__wire_arena_take(a, (size_t)len, 1, 8);
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
    if ((st = tc__wire_rd_u8(rd, "magic", &magic)) != TC_OK) {
        return st;
    }
    if (magic != TC_WIRE_MAGIC) {
        rd->p--;
        return tc__wire_rd_fail(rd, "bad magic 0x%02X, want 0x%02X", magic, TC_WIRE_MAGIC);
    }
    if ((st = tc__wire_rd_u8(rd, "version", &version)) != TC_OK) {
        return st;
    }
    if (version != TC_WIRE_VERSION) {
        rd->p--;
        return tc__wire_rd_fail(rd, "unsupported version %u, want %d", version, TC_WIRE_VERSION);
    }
    if ((st = tc__wire_rd_u8(rd, "type", &type)) != TC_OK) {
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
        min_entry = 1;                 /* unused: count must be 0 */
        break;
    default: rd->p--; return tc__wire_rd_fail(rd, "unknown message type %u", type);
    }
    if ((st = tc__wire_rd_u8(rd, "flags", &flags)) != TC_OK) {
        return st;
    }
    if (flags & ~allowed) {
        rd->p--;
        return tc__wire_rd_fail(rd, "flags 0x%02X not allowed on message type %u (allowed 0x%02X)",
                                flags, type, allowed);
    }
    if ((st = tc__wire_rd_varint_max(rd, "count", UINT32_MAX, &count)) != TC_OK) {
        return st;
    }
    if (type == TC_WIRE_BYE && count != 0) {
        return tc__wire_rd_fail(rd, "BYE with count %" PRIu64 ", want 0", count);
    }
    /* the records after the entries take their share of the bytes left too */
    min_after = type == TC_WIRE_CYCLE ? WIRE_MIN_CYCLE : 0;
    if (flags & TC_WIRE_F_SEQ) {
        min_after += 1;
    }
    if (flags & TC_WIRE_F_TERMINATE) {
        min_after += WIRE_MIN_TERMINATE;
    }
    room = tc__wire_rd_left(rd) > min_after ? tc__wire_rd_left(rd) - min_after : 0;
    if (count > room / min_entry) {
        return tc__wire_rd_fail(rd,
                                "count %" PRIu64 " cannot fit in the %zu bytes left (at least %zu "
                                "bytes an entry, plus %zu after the entries)",
                                count, tc__wire_rd_left(rd), min_entry, min_after);
    }
    m->type = type;
    m->flags = flags;
    m->count = (uint32_t)count;

    if (type == TC_WIRE_REQUESTS) {
        tc_wire_request_t scratch;
        m->reqs =
            tc__wire_arena_take(a, (size_t)count, sizeof(*m->reqs), _Alignof(tc_wire_request_t));
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
            tc__wire_arena_take(a, (size_t)count, sizeof(*m->resps), _Alignof(tc_wire_response_t));
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

    if ((flags & TC_WIRE_F_SEQ) && (st = tc__wire_rd_varint(rd, "seq", &m->seq)) != TC_OK) {
        return st;
    }
    /* REQUESTS and BYE have no cycle record: their cycle fields stay zero
     * (but seq, read above for a REQUESTS with SEQ) */
    if (type == TC_WIRE_CYCLE) {
        uint64_t round = 0;
        if ((st = tc__wire_rd_varint(rd, "seq", &m->seq)) != TC_OK) {
            return st;
        }
        if ((st = tc__wire_rd_varint_max(rd, "round", TC_WIRE_MAX_ROUND, &round)) != TC_OK) {
            return st;
        }
        m->round = (uint32_t)round;
        if ((st = tc__wire_rd_varint(rd, "cache_gen", &m->cache_gen)) != TC_OK) {
            return st;
        }
        st = tc__wire_rd_ids(rd, a, "ready count", "ready id", &m->nready, &m->ready);
        if (st != TC_OK) {
            return st;
        }
        st = tc__wire_rd_ids(rd, a, "some count", "some id", &m->nsome, &m->some);
        if (st != TC_OK) {
            return st;
        }
        st = tc__wire_rd_ids(rd, a, "stale count", "stale id", &m->nstale, &m->stale);
        if (st != TC_OK) {
            return st;
        }
        if ((st = rd_eager(rd, a, m)) != TC_OK) {
            return st;
        }
    }

    if (flags & TC_WIRE_F_TERMINATE) {
        if ((st = tc__wire_rd_status(rd, "terminate status", &m->term_status)) != TC_OK) {
            return st;
        }
        st = tc__wire_rd_string(rd, a, "terminate text", 0, TC_WIRE_MAX_TEXT, &m->term_text,
                                &m->term_text_len);
        if (st != TC_OK) {
            return st;
        }
    }
    if (rd->p != rd->end) {
        return tc__wire_rd_fail(rd, "%zu trailing bytes after the message", tc__wire_rd_left(rd));
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
