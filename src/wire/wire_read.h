/*
 * wire_read.h - the reader and the arena the decoder (wire_decode.c) parses
 * with, and the checked reads of wire_read.c: what a message's fields are
 * made of, each checked against the bytes left and its range.
 *
 * Nothing outside wire_decode.c and wire_read.c includes it.
 */
#ifndef TC_WIRE_WIRE_READ_H
#define TC_WIRE_WIRE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/wire_internal.h"

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

/* n objects of size bytes, aligned to align: NULL in the first pass, or on
 * overflow (a->overflow set). */
void *tc__wire_arena_take(wire_arena_t *a, size_t n, size_t size, size_t align);

/* Writes "wire: [<entry> <i>: ]<reason> (byte <offset>)" into rd's err;
 * returns TC_ERR_TRANSPORT. */
tc_status_t tc__wire_rd_fail(const wire_reader_t *rd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static inline size_t tc__wire_rd_left(const wire_reader_t *rd)
{
    return (size_t)(rd->end - rd->p);
}

/* One field each; what names it in an error. */
tc_status_t tc__wire_rd_u8(wire_reader_t *rd, const char *what, uint8_t *v_p);
tc_status_t tc__wire_rd_varint(wire_reader_t *rd, const char *what, uint64_t *v_p);
/* A varint that must be 0..max. */
tc_status_t tc__wire_rd_varint_max(wire_reader_t *rd, const char *what, uint64_t max,
                                   uint64_t *v_p);
/* len (min_len..max_len) bytes with no 0x00, copied NUL-terminated into a. */
tc_status_t tc__wire_rd_string(wire_reader_t *rd, wire_arena_t *a, const char *what,
                               uint64_t min_len, uint64_t max_len, const char **s_p,
                               uint32_t *len_p);
/* A status byte 1..WIRE_STATUS_MAX. */
tc_status_t tc__wire_rd_status(wire_reader_t *rd, const char *what, uint8_t *v_p);
/* A zigzag-encoded int32. */
tc_status_t tc__wire_rd_zigzag(wire_reader_t *rd, const char *what, int32_t *v_p);
/* A process set id given explicitly: 1..TC_WIRE_MAX_PSET. */
tc_status_t tc__wire_rd_pset(wire_reader_t *rd, uint32_t *pset_p);

/* A request's rank list, into r->nranks and r->ranks. */
tc_status_t tc__wire_rd_ranks(wire_reader_t *rd, wire_arena_t *a, tc_wire_request_t *r);
/* An id list; count_what and id_what name its fields ("ready count", "ready
 * id"). *ids_p is NULL when the list is empty. */
tc_status_t tc__wire_rd_ids(wire_reader_t *rd, wire_arena_t *a, const char *count_what,
                            const char *id_what, uint32_t *n_p, const uint32_t **ids_p);

#endif
