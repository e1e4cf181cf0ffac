/*
 * wire_read.c - the checked reads the decoder (wire_decode.c) builds
 * messages from: bytes, varints, strings, statuses, zigzag values, process
 * set ids, and the delta-coded ascending lists (ranks, cache ids); and the
 * arena that sizes (first pass) or hands out (second pass) the storage of a
 * decoded message.
 *
 * Every read checks the bytes left before it reads and the value's range
 * before it stores it; on failure it writes the reason, with the entry and
 * the byte offset, into the reader's err and returns TC_ERR_TRANSPORT.
 *
 * Must never: read outside [start, end), set an output argument on failure,
 * log, or know what a message is made of (that is wire_decode.c's).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "wire/wire_read.h"

#define WIRE_VARINT_MAX_BYTES 10

/* n objects of size bytes, aligned to align (a power of two). In the second
 * pass the pieces cannot run past cap even if the input changed between the
 * passes (a buffer shared with a writer): overflow is set and NULL returned. */
void *tc__wire_arena_take(wire_arena_t *a, size_t n, size_t size, size_t align)
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
tc_status_t tc__wire_rd_fail(const wire_reader_t *rd, const char *fmt, ...)
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
        snprintf(rd->err, rd->errlen, "wire: %s (byte %zu)", reason, (size_t)(rd->p - rd->start));
    }
    return TC_ERR_TRANSPORT;
}

tc_status_t tc__wire_rd_u8(wire_reader_t *rd, const char *what, uint8_t *v_p)
{
    if (rd->p == rd->end) {
        return tc__wire_rd_fail(rd, "truncated reading %s", what);
    }
    *v_p = *rd->p++;
    return TC_OK;
}

tc_status_t tc__wire_rd_varint(wire_reader_t *rd, const char *what, uint64_t *v_p)
{
    uint64_t v = 0;
    unsigned i;

    for (i = 0; i < WIRE_VARINT_MAX_BYTES; i++) {
        uint8_t b;
        if (rd->p + i == rd->end) {
            return tc__wire_rd_fail(rd, "truncated reading %s", what);
        }
        b = rd->p[i];
        if (i == WIRE_VARINT_MAX_BYTES - 1) {
            /* the 10th byte holds bit 63 only, and must end the varint */
            if (b & 0x80) {
                return tc__wire_rd_fail(rd, "%s: varint longer than %d bytes", what,
                                        WIRE_VARINT_MAX_BYTES);
            }
            if (b > 1) {
                return tc__wire_rd_fail(rd, "%s: varint above 2^64-1", what);
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
    return tc__wire_rd_fail(rd, "%s: bad varint", what);
}

/* A varint that must be 0..max. */
tc_status_t tc__wire_rd_varint_max(wire_reader_t *rd, const char *what, uint64_t max, uint64_t *v_p)
{
    const uint8_t *at = rd->p;
    uint64_t v = 0;
    tc_status_t st = tc__wire_rd_varint(rd, what, &v);

    if (st != TC_OK) {
        return st;
    }
    if (v > max) {
        rd->p = at; /* report the offset of the value, not of what follows */
        return tc__wire_rd_fail(rd, "%s %" PRIu64 " above %" PRIu64, what, v, max);
    }
    *v_p = v;
    return TC_OK;
}

/* len bytes with no 0x00, copied NUL-terminated into the arena. min_len..max_len. */
tc_status_t tc__wire_rd_string(wire_reader_t *rd, wire_arena_t *a, const char *what,
                               uint64_t min_len, uint64_t max_len, const char **s_p,
                               uint32_t *len_p)
{
    const uint8_t *at = rd->p;
    uint64_t len = 0;
    const uint8_t *nul;
    char *copy;
    tc_status_t st = tc__wire_rd_varint(rd, what, &len);

    if (st != TC_OK) {
        return st;
    }
    if (len < min_len || len > max_len) {
        rd->p = at;
        return tc__wire_rd_fail(rd, "%s length %" PRIu64 " not in %" PRIu64 "..%" PRIu64, what, len,
                                min_len, max_len);
    }
    if (len > tc__wire_rd_left(rd)) {
        return tc__wire_rd_fail(rd, "truncated reading %s: %" PRIu64 " bytes, %zu left", what, len,
                                tc__wire_rd_left(rd));
    }
    nul = memchr(rd->p, 0, (size_t)len);
    if (nul != NULL) {
        rd->p = nul;
        return tc__wire_rd_fail(rd, "%s contains a 0x00 byte", what);
    }
    copy = tc__wire_arena_take(a, (size_t)len + 1, 1, 1);
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
tc_status_t tc__wire_rd_status(wire_reader_t *rd, const char *what, uint8_t *v_p)
{
    uint8_t v = 0;
    tc_status_t st = tc__wire_rd_u8(rd, what, &v);

    if (st != TC_OK) {
        return st;
    }
    if (v == 0 || v > WIRE_STATUS_MAX) {
        rd->p--;
        return tc__wire_rd_fail(rd, "%s %u not in 1..%u", what, v, WIRE_STATUS_MAX);
    }
    *v_p = v;
    return TC_OK;
}

/* zigzag maps exactly the int32 range onto 0..2^32-1 */
tc_status_t tc__wire_rd_zigzag(wire_reader_t *rd, const char *what, int32_t *v_p)
{
    uint64_t zz = 0;
    tc_status_t st = tc__wire_rd_varint_max(rd, what, UINT32_MAX, &zz);

    if (st == TC_OK) {
        *v_p = (zz & 1) ? -(int32_t)(zz >> 1) - 1 : (int32_t)(zz >> 1);
    }
    return st;
}

/* A process set id given explicitly: 1..TC_WIRE_MAX_PSET (0 is left out). */
tc_status_t tc__wire_rd_pset(wire_reader_t *rd, uint32_t *pset_p)
{
    uint64_t v = 0;
    tc_status_t st = tc__wire_rd_varint_max(rd, "process set", TC_WIRE_MAX_PSET, &v);

    if (st != TC_OK) {
        return st;
    }
    if (v == 0) {
        return tc__wire_rd_fail(rd, "process set 0 must be left out");
    }
    *pset_p = (uint32_t)v;
    return TC_OK;
}

/* A rank list: n (1..TC_WIRE_MAX_RANKS), then strictly ascending ranks below
 * TC_WIRE_MAX_RANKS, each after the first as its distance from the previous
 * one minus 1. */
tc_status_t tc__wire_rd_ranks(wire_reader_t *rd, wire_arena_t *a, tc_wire_request_t *r)
{
    uint64_t n = 0, v = 0, j, prev = 0;
    int32_t *ranks;
    tc_status_t st;

    if ((st = tc__wire_rd_varint_max(rd, "rank count", TC_WIRE_MAX_RANKS, &n)) != TC_OK) {
        return st;
    }
    if (n == 0 || n > tc__wire_rd_left(rd)) { /* each rank takes at least one byte */
        return tc__wire_rd_fail(rd, "rank count %" PRIu64 " not in 1..%zu", n,
                                tc__wire_rd_left(rd));
    }
    ranks = tc__wire_arena_take(a, (size_t)n, sizeof(int32_t), _Alignof(int32_t));
    for (j = 0; j < n; j++) {
        if ((st = tc__wire_rd_varint_max(rd, "rank", TC_WIRE_MAX_RANKS, &v)) != TC_OK) {
            return st;
        }
        v = j == 0 ? v : prev + 1 + v;
        if (v >= TC_WIRE_MAX_RANKS) {
            return tc__wire_rd_fail(rd, "rank list entry %" PRIu64 " is %" PRIu64 ", not below %d",
                                    j, v, TC_WIRE_MAX_RANKS);
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

/* An id list: n, then n strictly ascending ids below TC_WIRE_MAX_CACHE, each
 * after the first written as its distance from the previous one minus 1.
 * count_what and id_what name the fields ("ready count", "ready id"); an id's
 * error names its index the way an entry's does, so the hot loop formats
 * nothing. *ids_p is NULL when n is 0. */
tc_status_t tc__wire_rd_ids(wire_reader_t *rd, wire_arena_t *a, const char *count_what,
                            const char *id_what, uint32_t *n_p, const uint32_t **ids_p)
{
    const uint8_t *at;
    uint64_t n = 0, v = 0, j;
    uint32_t prev = 0, *ids;
    tc_status_t st;

    if ((st = tc__wire_rd_varint_max(rd, count_what, TC_WIRE_MAX_CACHE, &n)) != TC_OK) {
        return st;
    }
    if (n > tc__wire_rd_left(rd)) { /* each id takes at least one byte */
        return tc__wire_rd_fail(rd, "%s %" PRIu64 " cannot fit in the %zu bytes left", count_what,
                                n, tc__wire_rd_left(rd));
    }
    ids = tc__wire_arena_take(a, (size_t)n, sizeof(uint32_t), _Alignof(uint32_t));
    rd->entry_what = id_what;
    for (j = 0; j < n; j++) {
        rd->entry_index = (uint32_t)j;
        at = rd->p;
        if ((st = tc__wire_rd_varint(rd, j == 0 ? "value" : "delta", &v)) != TC_OK) {
            return st;
        }
        /* prev < TC_WIRE_MAX_CACHE, so the room above it cannot wrap; comparing
         * v with that room, not prev + 1 + v with the limit, keeps a delta near
         * 2^64 from wrapping round to a small, valid-looking id */
        if (j == 0 && v >= TC_WIRE_MAX_CACHE) {
            rd->p = at; /* report the offset of the value, not of what follows */
            return tc__wire_rd_fail(rd, "value %" PRIu64 " not below %u", v, TC_WIRE_MAX_CACHE);
        }
        if (j > 0 && v >= (uint64_t)TC_WIRE_MAX_CACHE - prev - 1) {
            rd->p = at;
            return tc__wire_rd_fail(rd, "delta %" PRIu64 " after id %" PRIu32 " reaches %u or more",
                                    v, prev, TC_WIRE_MAX_CACHE);
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
