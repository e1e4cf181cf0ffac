/*
 * wire_internal.h - what the encoder (wire_encode.c) and the decoder
 * (wire_decode.c, with its checked reads in wire_read.c) of wire.h's control
 * messages agree on beyond wire.h: the choices the format leaves open, and
 * the constants both check against.
 *
 * Choices the header leaves open, made here: a BYE carries no flags at all; a
 * dim0 value, like a shape value, must be 0..INT64_MAX; seq and cache_gen take
 * any value up to 2^64-1; varints need not be minimal (a padded varint of at
 * most 10 bytes is accepted), so re-encoding a decoded message gives the
 * minimal form, which may be shorter than the input. Ids cannot arrive out of
 * order (each next one is written as a distance), so what the decoder checks is
 * that the sum never reaches TC_WIRE_MAX_CACHE; the encoder, which is handed
 * plain ids, checks the order instead. Nothing relates the ready, some and
 * stale lists (an id may be in several), an id to the cache_ref of a response,
 * nor a round to seq. The encoder refuses round and some on a type other than
 * CYCLE, and ignores its other cycle fields there.
 *
 * Must never be included from outside src/wire, nor declare anything with
 * storage: the two directions share constants, not state.
 */
#ifndef TC_WIRE_WIRE_INTERNAL_H
#define TC_WIRE_WIRE_INTERNAL_H

#include "util/status.h"
#include "wire/wire.h"

/* A request's extras byte (wire.h): bit 0, two scaling factors follow. */
#define WIRE_EXTRA_SCALES 0x1u
#define WIRE_EXTRA_GROUP 0x2u
#define WIRE_EXTRA_PSET 0x4u
#define WIRE_EXTRA_RANKS 0x8u
#define WIRE_EXTRA_CUDA 0x10u /* no payload: the tensor is in CUDA device memory */
#define WIRE_EXTRAS_ALL                                                                            \
    (WIRE_EXTRA_SCALES | WIRE_EXTRA_GROUP | WIRE_EXTRA_PSET | WIRE_EXTRA_RANKS | WIRE_EXTRA_CUDA)

/* A response's rflags byte (wire.h). */
#define WIRE_RESP_DESC 0x1u
#define WIRE_RESP_VALUE 0x2u
#define WIRE_RESP_PSET 0x4u
#define WIRE_RESP_ALL (WIRE_RESP_DESC | WIRE_RESP_VALUE | WIRE_RESP_PSET)

/* The largest status a message may carry (ERROR responses, terminate
 * records): 1..WIRE_STATUS_MAX, 0 (TC_OK) is not an error. */
#define WIRE_STATUS_MAX ((unsigned)TC_ERR_TIMEOUT)

#endif
