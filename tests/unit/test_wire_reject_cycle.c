/*
 * test_wire_reject_cycle.c - unit test of the control-message decoder
 * (src/wire/wire_decode.c): one hand-made message per rule it enforces on
 * responses (rtype, name, rflags, process set, a RUN's dim0, cache_ref,
 * description and value, an ERROR's status and text), on the count bound,
 * the cycle record and its id lists, the terminate record and the eager
 * record, most next to one just inside the limit that it must accept.
 * Deterministic; needs no MPI.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tc_test.h"
#include "util/status.h"
#include "wire/wire.h"
#include "wire_codec_testutil.h"
#include "wire_malformed.h"
#include "wire_testutil.h"

static void seq_round_and_gen_max(const tc_wire_msg_t *d)
{
    CHECK(d->seq == UINT64_MAX && d->round == TC_WIRE_MAX_ROUND && d->cache_gen == UINT64_MAX);
    CHECK(d->owned == NULL); /* nothing to hold */
}

static void round_is_max(const tc_wire_msg_t *d)
{
    CHECK(d->type == TC_WIRE_CYCLE && d->round == TC_WIRE_MAX_ROUND);
}

static void two_smallest_inputs(const tc_wire_msg_t *d)
{
    CHECK(d->neager == 2 && d->eager[0].id == 0 && d->eager[1].id == 1);
    CHECK(d->eager[0].len == 1 && ((const uint8_t *)d->eager[0].data)[0] == 0xAA);
    CHECK(d->eager[1].len == 1 && ((const uint8_t *)d->eager[1].data)[0] == 0x00);
}

static void largest_input_at_largest_id(const tc_wire_msg_t *d)
{
    CHECK(d->neager == 1 && d->eager[0].id == TC_WIRE_MAX_CACHE - 1);
    CHECK(d->eager[0].len == TC_WIRE_MAX_EAGER);
    CHECK(((const uint8_t *)d->eager[0].data)[0] == 0xC3);
    CHECK(((const uint8_t *)d->eager[0].data)[TC_WIRE_MAX_EAGER - 1] == 0xC3);
}

static void padded_id_and_len(const tc_wire_msg_t *d)
{
    CHECK(d->neager == 1 && d->eager[0].id == 5 && d->eager[0].len == 2);
    CHECK(memcmp(d->eager[0].data, "\x01\x02", 2) == 0);
}

static void resp_pset_7(const tc_wire_msg_t *d)
{
    const tc_wire_response_t *r = &d->resps[0];
    CHECK(r->rtype == TC_WIRE_RUN && r->pset == 7 && !r->has_desc && !r->has_value);
}

static void error_pset_max(const tc_wire_msg_t *d)
{
    const tc_wire_response_t *r = &d->resps[0];
    CHECK(r->rtype == TC_WIRE_ERROR && r->pset == TC_WIRE_MAX_PSET && r->status == TC_ERR_ARG);
}

static void desc_join_ndim0(const tc_wire_msg_t *d)
{
    const tc_wire_response_t *r = &d->resps[0];
    CHECK(r->has_desc && !r->has_value && r->pset == 0);
    CHECK(r->desc.kind == TC_KIND_JOIN && r->desc.dtype == TC_INT32 && r->desc.op == TC_SUM &&
          r->desc.ndim == 0);
}

static void desc_max_dims(const tc_wire_msg_t *d)
{
    const tc_wire_response_t *r = &d->resps[0];
    int k;
    CHECK(r->has_desc && r->desc.kind == TC_KIND_ALLGATHER && r->desc.dtype == TC_UINT16 &&
          r->desc.op == TC_PROD && r->desc.ndim == TC_MAX_DIMS);
    for (k = 0; k < TC_MAX_DIMS; k++) {
        CHECK_EQ(r->desc.shape[k], INT64_MAX);
    }
}

static void value_is_int32_min(const tc_wire_msg_t *d)
{
    CHECK(d->resps[0].has_value && !d->resps[0].has_desc && d->resps[0].value == INT32_MIN);
}

static void value_is_int32_max(const tc_wire_msg_t *d)
{
    CHECK(d->resps[0].has_value && d->resps[0].value == INT32_MAX);
}

static void value_is_minus_1(const tc_wire_msg_t *d)
{
    CHECK(d->resps[0].has_value && d->resps[0].value == -1);
}

/* rflags 7: pset 5, then ndim0 1 (dim0 {9}) and cache_ref 3, then the
 * description (allreduce float32 sum, shape {5}), then the value -2 */
static void every_rflag(const tc_wire_msg_t *d)
{
    const tc_wire_response_t *r = &d->resps[0];
    CHECK(r->pset == 5 && r->ndim0 == 1 && r->dim0[0] == 9 && r->cache_ref == 3);
    CHECK(r->has_desc && r->desc.kind == TC_KIND_ALLREDUCE && r->desc.dtype == TC_FLOAT32 &&
          r->desc.op == TC_SUM && r->desc.ndim == 1 && r->desc.shape[0] == 5);
    CHECK(r->has_value && r->value == -2);
}

/* The reason for a description of the first kind out of range ("kind 7"
 * with 7 kinds): written when the case runs, so that a kind added to
 * TC_KIND_MAP needs no change here. */
static char first_bad_kind[64];

static const malformed_t malformed[] = {
    /* ---- responses (each followed by an empty cycle record, so that the count
     * bound is not what fails); rflags 0 after the name ---- */
    REJECT("unknown rtype 2", HDR(TC_WIRE_CYCLE, 0, 1), U8(2), STR("r"), U8(0), U8(0), U8(0),
           CYCLE0),
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_ERROR), STR("r"), U8(0), U8(TC_ERR_TIMEOUT),
           FILL(TC_WIRE_MAX_TEXT, 'e'), CYCLE0),
    REJECT_EACH_BUT(1, TC_ERR_TIMEOUT, "error status", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_ERROR),
                    STR("r"), U8(0), U8(EACH), STR("why"), CYCLE0),
    REJECT("error text length 2049", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_ERROR), STR("r"), U8(0),
           U8(TC_ERR_ARG), FILL(TC_WIRE_MAX_TEXT + 1, 'e'), CYCLE0),
    REJECT("error text contains a 0x00 byte", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_ERROR), STR("r"),
           U8(0), U8(TC_ERR_ARG), STR("ee\0e"), CYCLE0),
    /* an ERROR has no cache_ref: a byte for one is the cycle record's first,
     * so the record's last is left over; without it the message is valid */
    REJECT("1 trailing bytes", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_ERROR), STR("r"), U8(0),
           U8(TC_ERR_ARG), STR(""), U8(0), CYCLE0),
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_ERROR), STR("r"), U8(0), U8(TC_ERR_ARG), STR(""),
           CYCLE0),
    /* RUN: ndim0 */
    REJECT("ndim0 16777217 above 16777216", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"),
           U8(0), VAR(TC_WIRE_MAX_RANKS + 1), U8(0), CYCLE0),
    REJECT("ndim0 16777216 cannot fit", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(0),
           VAR(TC_WIRE_MAX_RANKS), U8(1), U8(0), CYCLE0),
    REJECT("dim0 value 9223372036854775808 above", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN),
           STR("r"), U8(0), VAR(3), VAR(1), VAR((uint64_t)INT64_MAX + 1), VAR(1), U8(0), CYCLE0),
    /* enough bytes for the count bound, no end */
    REJECT("truncated reading dim0 value", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"),
           U8(0), VAR(3), VAR(1), REP(8, 0x80)),
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(0), VAR(4000), COUNTING(4000),
           U8(0), CYCLE0),
    /* RUN: cache_ref 0..TC_WIRE_MAX_CACHE */
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(0), U8(0),
           VAR(TC_WIRE_MAX_CACHE), CYCLE0),
    REJECT("response 0: cache_ref 1048577 above 1048576 (byte 10)", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(0), U8(0), VAR(TC_WIRE_MAX_CACHE + 1), CYCLE0),
    REJECT("cache_ref 18446744073709551615 above", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN),
           STR("r"), U8(0), U8(0), VAR(UINT64_MAX), CYCLE0),
    /* 13 bytes after count: past the count bound */
    REJECT("response 0: truncated reading cache_ref", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN),
           STR("r"), U8(0), VAR(8), RAW("\1\2\3\4\5\6\7\10")),
    /* the v5 layout of a bare RUN (no rflags) with a v6 header: a byte short
     * of the smallest v6 response, so the count bound refuses it */
    REJECT("wire: count 1 cannot fit in the 12 bytes left", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(0), U8(0), CYCLE0),
    /* and one with a dim0 value: its ndim0 (1) is read as rflags DESC */
    REJECT("wire: response 0: truncated reading description", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(1), U8(5), U8(0), CYCLE0),

    /* ---- rflags: bit 2 PSET on both rtypes, bits 0 DESC and 1 VALUE on a
     * RUN only, the other bits on neither ---- */
    REJECT("response 0: rflags 0x08 not allowed on RUN (byte 8)", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(0x08), U8(0), U8(0), CYCLE0),
    REJECT("response 0: rflags 0xff not allowed on RUN", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN),
           STR("r"), U8(0xFF), U8(0), U8(0), CYCLE0),
    REJECT_EACH_BEYOND(0x07, "not allowed on RUN", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN),
                       STR("r"), U8(EACH), U8(1), U8(0), U8(0), CYCLE0),
    REJECT("response 0: rflags 0x01 not allowed on ERROR (byte 8)", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_ERROR), STR("r"), U8(0x01), U8(TC_ERR_ARG), STR(""), CYCLE0),
    REJECT("response 0: rflags 0x02 not allowed on ERROR", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_ERROR), STR("r"), U8(0x02), U8(TC_ERR_ARG), STR(""), CYCLE0),
    REJECT("response 0: rflags 0x03 not allowed on ERROR", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_ERROR), STR("r"), U8(0x03), U8(TC_ERR_ARG), STR(""), CYCLE0),
    REJECT("response 0: rflags 0x07 not allowed on ERROR", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_ERROR), STR("r"), U8(0x07), U8(1), U8(TC_ERR_ARG), STR(""), CYCLE0),
    REJECT("response 0: rflags 0x08 not allowed on ERROR", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_ERROR), STR("r"), U8(0x08), U8(TC_ERR_ARG), STR(""), CYCLE0),
    REJECT_EACH_BEYOND(0x04, "not allowed on ERROR", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_ERROR),
                       STR("r"), U8(EACH), U8(1), U8(TC_ERR_ARG), STR(""), CYCLE0),
    /* a name long enough for the count bound without a cycle record */
    REJECT("response 0: truncated reading rflags", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN),
           STR("abcdefghijk")),
    /* ---- a response's process set: 1..TC_WIRE_MAX_PSET, after rflags ---- */
    ACCEPT_THEN(resp_pset_7, HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(4), VAR(7),
                U8(0), U8(0), CYCLE0),
    ACCEPT_THEN(error_pset_max, HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_ERROR), STR("r"), U8(4),
                VAR(TC_WIRE_MAX_PSET), U8(TC_ERR_ARG), STR(""), CYCLE0),
    REJECT("response 0: process set 0 must be left out", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN),
           STR("r"), U8(4), U8(0), U8(0), U8(0), CYCLE0),
    REJECT("response 0: process set 0 must be left out", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_ERROR), STR("r"), U8(4), U8(0), U8(TC_ERR_ARG), STR(""), CYCLE0),
    REJECT("response 0: process set 16777217 above 16777216 (byte 9)", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(4), VAR(TC_WIRE_MAX_PSET + 1), U8(0), U8(0), CYCLE0),
    REJECT("response 0: process set 16777217 above 16777216", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_ERROR), STR("r"), U8(4), VAR(TC_WIRE_MAX_PSET + 1), U8(TC_ERR_ARG), STR(""),
           CYCLE0),
    REJECT("response 0: truncated reading process set", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN),
           STR("abcdefghij"), U8(4)),
    /* ---- a RUN's description: after cache_ref, kind dtype op ndim (each in
     * range), then ndim shape values 0..INT64_MAX ---- */
    ACCEPT_THEN(desc_join_ndim0, HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0),
                U8(0), U8(TC_KIND_JOIN), U8(TC_INT32), U8(TC_SUM), U8(0), CYCLE0),
    ACCEPT_THEN(desc_max_dims, HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0),
                U8(0), U8(TC_KIND_ALLGATHER), U8(TC_UINT16), U8(TC_PROD), U8(TC_MAX_DIMS),
                VARS(TC_MAX_DIMS, INT64_MAX), CYCLE0),
    REJECT(first_bad_kind, HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0),
           U8(TC_KIND_COUNT), U8(TC_INT32), U8(TC_SUM), U8(0), CYCLE0),
    REJECT_EACH_BUT(0, TC_KIND_COUNT - 1, "response 0: description: kind ",
                    HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0),
                    U8(EACH), U8(0), U8(0), U8(0), CYCLE0),
    REJECT("response 0: description: kind 0 dtype 10 op 0 ndim 0", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0), U8(0), U8(TC_UINT16 + 1), U8(0), U8(0),
           CYCLE0),
    REJECT_EACH_BUT(0, TC_UINT16, "response 0: description: kind 0 dtype ",
                    HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0), U8(0),
                    U8(EACH), U8(0), U8(0), CYCLE0),
    REJECT("response 0: description: kind 0 dtype 0 op 5 ndim 0", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0), U8(0), U8(0), U8(TC_PROD + 1), U8(0),
           CYCLE0),
    REJECT_EACH_BUT(0, TC_PROD, "response 0: description: kind 0 dtype 0 op ",
                    HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0), U8(0),
                    U8(0), U8(EACH), U8(0), CYCLE0),
    REJECT("response 0: description: kind 0 dtype 0 op 0 ndim 9", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0), U8(0), U8(0), U8(0), U8(TC_MAX_DIMS + 1),
           VARS(TC_MAX_DIMS + 1, 1), CYCLE0),
    REJECT_EACH_BUT(0, TC_MAX_DIMS, "response 0: description: kind 0 dtype 0 op 0 ndim ",
                    HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0), U8(0),
                    U8(0), U8(0), U8(EACH), CYCLE0),
    REJECT("response 0: description shape value 9223372036854775808 above",
           HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0), U8(0), U8(0),
           U8(0), U8(2), VAR(1), VAR((uint64_t)INT64_MAX + 1), CYCLE0),
    /* truncated: before the description, inside it, inside a shape value */
    REJECT("response 0: truncated reading description kind", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("abcdefghij"), U8(1), U8(0), U8(0)),
    REJECT("response 0: truncated reading description op", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("abcdefghij"), U8(1), U8(0), U8(0), U8(0), U8(TC_FLOAT32)),
    REJECT("response 0: truncated reading description ndim", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("abcdefghij"), U8(1), U8(0), U8(0), U8(0), U8(TC_FLOAT32), U8(0)),
    REJECT("response 0: truncated reading description shape value", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("abcdefghij"), U8(1), U8(0), U8(0), U8(0), U8(TC_FLOAT32), U8(0),
           U8(2), VAR(3), U8(0x80)),
    /* ---- a RUN's value: after the description, zigzag int32 ---- */
    ACCEPT_THEN(value_is_int32_min, HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(2),
                U8(0), U8(0), VAR(UINT32_MAX), CYCLE0),
    ACCEPT_THEN(value_is_int32_max, HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(2),
                U8(0), U8(0), VAR((uint64_t)UINT32_MAX - 1), CYCLE0),
    ACCEPT_THEN(value_is_minus_1, HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(2), U8(0),
                U8(0), RAW("\x81\x80\x80\x00"), CYCLE0), /* padded */
    REJECT("response 0: value 4294967296 above 4294967295", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(2), U8(0), U8(0), VAR((uint64_t)UINT32_MAX + 1), CYCLE0),
    REJECT("response 0: value 18446744073709551615 above", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(2), U8(0), U8(0), VAR(UINT64_MAX), CYCLE0),
    REJECT("response 0: value: varint longer than 10 bytes", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(2), U8(0), U8(0), REP(10, 0x80), U8(0), CYCLE0),
    REJECT("response 0: truncated reading value", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN),
           STR("abcdefghij"), U8(2), U8(0), U8(0), U8(0x80)),
    REJECT("response 0: truncated reading value", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN),
           STR("abcdefghij"), U8(3), U8(0), U8(0), U8(0), U8(0), U8(0), U8(0)),
    /* every bit: the set, ndim0 and dim0, cache_ref, the description, the value */
    ACCEPT_THEN(every_rflag, HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(7), VAR(5),
                U8(1), VAR(9), VAR(3), U8(TC_KIND_ALLREDUCE), U8(TC_FLOAT32), U8(TC_SUM), U8(1),
                VAR(5), VAR(3), CYCLE0),

    /* ---- the count bound counts the records after the entries: one minimal
     * response and a cycle record need 13 bytes, and a terminate record 2 more ---- */
    REJECT("count 1 cannot fit in the 12 bytes left", HDR(TC_WIRE_CYCLE, 0, 1), RAW("\0\1r\0\0\0"),
           CYCLE_IDS0),
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 1), RAW("\0\1r\0\0\0"), CYCLE_IDS0, U8(0)),
    REJECT("count 1 cannot fit in the 14 bytes left", HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 1),
           RAW("\0\1r\0\0\0"), CYCLE0, U8(TC_ERR_SHUTDOWN)),
    ACCEPT(HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 1), RAW("\0\1r\0\0\0"), CYCLE0,
           U8(TC_ERR_SHUTDOWN), U8(0)),

    /* ---- cycle record: seq and cache_gen take any uint64, round 0..64 ---- */
    REJECT("truncated reading seq", HDR(TC_WIRE_CYCLE, 0, 0)),
    REJECT("truncated reading round (byte 15)", HDR(TC_WIRE_CYCLE, 0, 0), VAR(UINT64_MAX)),
    REJECT("truncated reading cache_gen", HDR(TC_WIRE_CYCLE, 0, 0), VAR(UINT64_MAX),
           VAR(TC_WIRE_MAX_ROUND)),
    REJECT("truncated reading ready count", HDR(TC_WIRE_CYCLE, 0, 0), VAR(UINT64_MAX),
           VAR(TC_WIRE_MAX_ROUND), VAR(UINT64_MAX)),
    REJECT("truncated reading some count", HDR(TC_WIRE_CYCLE, 0, 0), VAR(UINT64_MAX),
           VAR(TC_WIRE_MAX_ROUND), VAR(UINT64_MAX), U8(0)),
    REJECT("truncated reading stale count", HDR(TC_WIRE_CYCLE, 0, 0), VAR(UINT64_MAX),
           VAR(TC_WIRE_MAX_ROUND), VAR(UINT64_MAX), U8(0), U8(0)),
    REJECT("truncated reading eager count (byte 29)", HDR(TC_WIRE_CYCLE, 0, 0), VAR(UINT64_MAX),
           VAR(TC_WIRE_MAX_ROUND), VAR(UINT64_MAX), U8(0), U8(0), U8(0)),
    ACCEPT_THEN(seq_round_and_gen_max, HDR(TC_WIRE_CYCLE, 0, 0), VAR(UINT64_MAX),
                VAR(TC_WIRE_MAX_ROUND), VAR(UINT64_MAX), U8(0), U8(0), U8(0), U8(0)),
    REJECT("1 trailing bytes after the message", HDR(TC_WIRE_CYCLE, 0, 0), VAR(UINT64_MAX),
           VAR(TC_WIRE_MAX_ROUND), VAR(UINT64_MAX), U8(0), U8(0), U8(0), U8(0), U8(0)),
    REJECT("seq: varint above 2^64-1", HDR(TC_WIRE_CYCLE, 0, 0), REP(9, 0xFF), U8(0x02),
           CYCLE_IDS0),
    REJECT("cache_gen: varint longer than 10 bytes", HDR(TC_WIRE_CYCLE, 0, 0), U8(0), U8(0),
           REP(10, 0x80), RAW("\0\0\0\0")),
    /* round: at most TC_WIRE_MAX_ROUND (padded too), reported at its own offset */
    ACCEPT_THEN(round_is_max, HDR(TC_WIRE_CYCLE, 0, 0), U8(0), VAR(TC_WIRE_MAX_ROUND),
                RAW("\0\0\0\0\0")),
    ACCEPT_THEN(round_is_max, HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 1), RAW("\0\1r\0\0\0"), U8(7),
                RAW("\xC0\x80\x00"), RAW("\0\0\0\0\0"), U8(TC_ERR_SHUTDOWN), STR("")),
    REJECT("wire: round 65 above 64 (byte 6)", HDR(TC_WIRE_CYCLE, 0, 0), U8(0),
           VAR(TC_WIRE_MAX_ROUND + 1), RAW("\0\0\0\0\0")),
    REJECT("wire: round 65 above 64 (byte 12)", HDR(TC_WIRE_CYCLE, 0, 1), RAW("\0\1r\0\0\0"), U8(0),
           VAR(TC_WIRE_MAX_ROUND + 1), RAW("\0\0\0\0\0")),
    REJECT("wire: round 128 above 64 (byte 6)", HDR(TC_WIRE_CYCLE, 0, 0), U8(0), VAR(128),
           RAW("\0\0\0\0\0")),
    REJECT("round 18446744073709551615 above 64", HDR(TC_WIRE_CYCLE, 0, 0), U8(0), VAR(UINT64_MAX),
           RAW("\0\0\0\0\0")),
    REJECT("round 4294967361 above 64", HDR(TC_WIRE_CYCLE, 0, 0), U8(0),
           VAR(((uint64_t)1 << 32) + TC_WIRE_MAX_ROUND + 1), RAW("\0\0\0\0\0")),
    REJECT("wire: truncated reading round (byte 6)", HDR(TC_WIRE_CYCLE, 0, 0), U8(0), U8(0xC0)),
    REJECT("wire: truncated reading round (byte 6)", HDR(TC_WIRE_CYCLE, 0, 0), U8(0),
           RAW("\x80\x80")),
    REJECT("round: varint longer than 10 bytes", HDR(TC_WIRE_CYCLE, 0, 0), U8(0), REP(10, 0x80),
           RAW("\0\0\0\0\0")),

    /* ---- id lists: counts. A list of TC_WIRE_MAX_CACHE ids is decoded in
     * test_wire_records.c; here only the ends of the range that fit in a
     * message of the table ---- */
    REJECT("ready count 1048577 above 1048576 (byte 8)", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0,
           VAR(TC_WIRE_MAX_CACHE + 1), U8(0)),
    REJECT("some count 1048577 above 1048576 (byte 9)", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0,
           U8(0), VAR(TC_WIRE_MAX_CACHE + 1), U8(0)),
    REJECT("stale count 18446744073709551615 above 1048576", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0,
           RAW("\0\0"), VAR(UINT64_MAX)),
    REJECT("ready count 1048576 cannot fit in the 3 bytes left", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_HEAD0, VAR(TC_WIRE_MAX_CACHE), RAW("\0\0\0")),
    /* n ids need n bytes at least: 5 in 4 bytes is refused before any id is
     * read or anything is sized by it, 4 in 4 reads them */
    REJECT("ready count 5 cannot fit in the 4 bytes left", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0,
           U8(5), RAW("\0\0\0\0")),
    REJECT("truncated reading some count", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(4),
           RAW("\0\0\0\0")),
    REJECT("truncated reading stale count", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(4),
           RAW("\0\0\0\0"), U8(0)),
    REJECT("truncated reading eager count", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(4),
           RAW("\0\0\0\0"), U8(0), U8(0)),
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(4), RAW("\0\0\0\0"), U8(0), U8(0), U8(0)),
    REJECT("some count 3 cannot fit in the 2 bytes left", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0,
           U8(0), U8(3), RAW("\0\0")),
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(0), U8(3), RAW("\0\0\0"), U8(0), U8(0)),
    REJECT("stale count 2 cannot fit in the 1 bytes left", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0,
           RAW("\0\0"), U8(2), U8(0)),
    /* what follows a list is reported as itself, not as part of the list:
     * ready {5} at bytes 8-9, some {7} at 10-11, stale {6} at 12-13 */
    REJECT("wire: some count 1048577 above 1048576 (byte 10)",
           HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0), CYCLE_HEAD0, RAW("\1\5"),
           VAR(TC_WIRE_MAX_CACHE + 1), RAW("\0\0\5\0")),
    REJECT("wire: stale count 1048577 above 1048576 (byte 12)",
           HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0), CYCLE_HEAD0, RAW("\1\5\1\7"),
           VAR(TC_WIRE_MAX_CACHE + 1), RAW("\5\0")),
    REJECT("wire: eager count 1048577 above 1048576 (byte 14)",
           HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0), CYCLE_HEAD0, RAW("\1\5\1\7\1\6"),
           VAR(TC_WIRE_MAX_CACHE + 1), RAW("\5\0")),
    REJECT("wire: terminate status 0 not in 1..8 (byte 15)",
           HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0), CYCLE_HEAD0, RAW("\1\5\1\7\1\6"), U8(0),
           RAW("\0\0")),
    REJECT("wire: terminate status 0 not in 1..8 (byte 19)",
           HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0), CYCLE_HEAD0, RAW("\1\5\1\7\1\6"), U8(1),
           EAGER(9, 2, 0xAB), RAW("\0\0")),

    /* ---- id lists: values. Ids out of order cannot be written (each next one is
     * a distance forward), so what is left to refuse is an id at or past the
     * limit: the first one directly, a later one through its distance,
     * including distances that wrap a 64-bit or 32-bit sum round to a small id
     * (one below the previous id: a list out of order) ---- */
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(1), VAR(TC_WIRE_MAX_CACHE - 1), RAW("\0\0\0")),
    REJECT("ready id 0: value 1048576 not below 1048576 (byte 9)", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_HEAD0, U8(1), VAR(TC_WIRE_MAX_CACHE), RAW("\0\0")),
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(0), U8(1), VAR(TC_WIRE_MAX_CACHE - 1),
           RAW("\0\0")),
    REJECT("some id 0: value 1048576 not below 1048576 (byte 10)", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_HEAD0, U8(0), U8(1), VAR(TC_WIRE_MAX_CACHE), RAW("\0\0")),
    REJECT("stale id 0: value 18446744073709551615 not below 1048576", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_HEAD0, RAW("\0\0"), U8(1), VAR(UINT64_MAX)),
    IDS_OK(TC_WIRE_MAX_CACHE - 2, 0),
    IDS_REFUSED(TC_WIRE_MAX_CACHE - 2, 1),
    IDS_REFUSED(TC_WIRE_MAX_CACHE - 1, 0),
    IDS_OK(0, TC_WIRE_MAX_CACHE - 2),
    IDS_REFUSED(0, TC_WIRE_MAX_CACHE - 1),
    IDS_REFUSED(0, UINT64_MAX),              /* 0 + 1 + d wraps to 0 */
    IDS_REFUSED(5, UINT64_MAX - 5),          /* wraps to 0 */
    IDS_REFUSED(5, UINT64_MAX - 4),          /* wraps to 1 */
    IDS_REFUSED(5, (uint64_t)1 << 32),       /* 6 in 32 bits */
    IDS_REFUSED(5, ((uint64_t)1 << 32) - 6), /* 0 in 32 bits */
    IDS_REFUSED(5, (uint64_t)1 << 63),
    /* the error names the distance and the id it follows */
    REJECT("ready id 2: delta 1048576 after id 11 reaches 1048576 or more (byte 11)",
           HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(3), VAR(10), VAR(0), VAR(TC_WIRE_MAX_CACHE),
           RAW("\0\0")),
    REJECT("some id 1: delta 268435455 after id 5 reaches 1048576 or more (byte 11)",
           HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(0), U8(2), VAR(5), VAR((1u << 28) - 1),
           RAW("\0\0")),
    /* truncated inside a list */
    REJECT("ready id 1: truncated reading delta", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(3),
           RAW("\0\x80\x80")),
    REJECT("some id 1: truncated reading delta (byte 11)", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0,
           U8(0), U8(2), RAW("\x05\xFF")),
    REJECT("stale id 1: truncated reading delta", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0,
           RAW("\0\0"), U8(2), RAW("\x05\xFF")),
    REJECT("ready id 0: truncated reading value (byte 9)", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0,
           U8(1), U8(0x80)),
    REJECT("ready id 1: delta: varint above 2^64-1", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(2),
           U8(0), REP(9, 0xFF), U8(0x02), RAW("\0\0")),
    REJECT("some id 0: value: varint longer than 10 bytes", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0,
           U8(0), U8(1), REP(10, 0x80), U8(0), RAW("\0\0")),

    /* ---- terminate record: after the cycle record ---- */
    REJECT("truncated reading terminate status", HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0),
           CYCLE0),
    REJECT("truncated reading terminate text", HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0), CYCLE0,
           U8(TC_ERR_SHUTDOWN)),
    ACCEPT(HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0), CYCLE0, U8(TC_ERR_SHUTDOWN), STR("x")),
    REJECT_EACH_BUT(1, TC_ERR_TIMEOUT, "terminate status",
                    HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0), CYCLE0, U8(EACH), STR("x")),
    REJECT("terminate text length 2049", HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0), CYCLE0,
           U8(TC_ERR_SHUTDOWN), FILL(TC_WIRE_MAX_TEXT + 1, 't')),
    REJECT("terminate text contains a 0x00 byte", HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0),
           CYCLE0, U8(TC_ERR_SHUTDOWN), STR("tt\0")),
    REJECT("1 trailing bytes", HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0), CYCLE0,
           U8(TC_ERR_SHUTDOWN), STR("x"), U8(0)),
    /* the v1 layout (terminate right after the entries) is now misplaced: its
     * status byte is read as seq and the text as the rest of the record */
    REJECT(NULL, HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0), U8(TC_ERR_SHUTDOWN), STR("x")),

    /* ---- REQUESTS and BYE have no cycle record: bytes for one are trailing ---- */
    REJECT("7 trailing bytes", HDR(TC_WIRE_BYE, 0, 0), CYCLE0),
    REJECT("7 trailing bytes", HDR(TC_WIRE_REQUESTS, 0, 1), REQ(0, 0, 0, 0, 0, 0, "a"), CYCLE0),
    REJECT("10 trailing bytes", HDR(TC_WIRE_REQUESTS, 0, 1), REQ(0, 0, 0, 0, 0, 0, "a"), CYCLE_IDS0,
           U8(1), EAGER(0, 1, 0x11)),
    /* nor a round after a REQUESTS' seq */
    REJECT("wire: 1 trailing bytes after the message (byte 6)",
           HDR(TC_WIRE_REQUESTS, TC_WIRE_F_SEQ, 0), U8(3), U8(2)),

    /* ---- the eager record: each message a CYCLE with no responses and an empty
     * cycle record up to the eager record, whose count is byte 11 ---- */
    /* valid: none; two at 3 bytes each (the fewest), ids 0 and 1; one of the
     * largest at the largest id; padded varints for id and len */
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(0)),
    ACCEPT_THEN(two_smallest_inputs, HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(2), EAGER(0, 1, 0xAA),
                EAGER(0, 1, 0x00)),
    ACCEPT_THEN(largest_input_at_largest_id, HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(1),
                EAGER(TC_WIRE_MAX_CACHE - 1, TC_WIRE_MAX_EAGER, 0xC3)),
    ACCEPT_THEN(padded_id_and_len, HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(1),
                RAW("\x85\x80\x00"), /* id 5, padded */
                RAW("\x82\x00"),     /* len 2, padded */
                RAW("\x01\x02")),
    /* count: at most TC_WIRE_MAX_CACHE, and 3 bytes an input at least */
    REJECT("wire: eager count 1048577 above 1048576 (byte 11)", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_IDS0, VAR(TC_WIRE_MAX_CACHE + 1), EAGER(0, 1, 0xAA)),
    REJECT("eager count 18446744073709551615 above 1048576", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0,
           VAR(UINT64_MAX)),
    REJECT("eager count: varint above 2^64-1", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, REP(9, 0xFF),
           U8(0x02)),
    REJECT("eager count 1048576 cannot fit in the 6 bytes left", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_IDS0, VAR(TC_WIRE_MAX_CACHE), EAGER(0, 1, 0xAA), EAGER(0, 1, 0xAA)),
    REJECT("eager count 1 cannot fit in the 2 bytes left (byte 12)", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_IDS0, U8(1), RAW("\0\1")),
    REJECT("eager count 2 cannot fit in the 5 bytes left", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0,
           U8(2), EAGER(0, 1, 0xAA), RAW("\0\1")),
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(2), EAGER(0, 1, 0xAA), RAW("\0\1"), U8(0xBB)),
    /* 8 bytes, enough for 2 inputs, not for 3 */
    REJECT("eager count 3 cannot fit in the 8 bytes left", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0,
           U8(3), EAGER(0, 2, 0xAA), EAGER(0, 2, 0xAA)),
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(2), EAGER(0, 2, 0xAA), EAGER(0, 2, 0xAA)),
    /* ids: the first one at or past the limit directly, a later one through
     * its distance, including distances that wrap a 64-bit or 32-bit sum */
    REJECT("wire: eager input 0: id value 1048576 reaches 1048576 or more (byte 12)",
           HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(1), EAGER(TC_WIRE_MAX_CACHE, 1, 0xAA)),
    REJECT("eager input 0: id value 18446744073709551615 reaches", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_IDS0, U8(1), EAGER(UINT64_MAX, 1, 0xAA)),
    ACCEPT(EAGER_PAIR(TC_WIRE_MAX_CACHE - 2, 0)),
    REJECT("eager input 1: id delta ", EAGER_PAIR(TC_WIRE_MAX_CACHE - 2, 1)),
    REJECT("eager input 1: id delta ", EAGER_PAIR(TC_WIRE_MAX_CACHE - 1, 0)),
    ACCEPT(EAGER_PAIR(0, TC_WIRE_MAX_CACHE - 2)),
    REJECT("eager input 1: id delta ", EAGER_PAIR(0, TC_WIRE_MAX_CACHE - 1)),
    REJECT("eager input 1: id delta ", EAGER_PAIR(0, UINT64_MAX)),        /* 0 + 1 + d wraps to 0 */
    REJECT("eager input 1: id delta ", EAGER_PAIR(5, UINT64_MAX - 5)),    /* wraps to 0 */
    REJECT("eager input 1: id delta ", EAGER_PAIR(5, UINT64_MAX - 4)),    /* wraps to 1 */
    REJECT("eager input 1: id delta ", EAGER_PAIR(5, (uint64_t)1 << 32)), /* 6 in 32 bits */
    REJECT("eager input 1: id delta ", EAGER_PAIR(5, ((uint64_t)1 << 32) - 6)), /* 0 in 32 */
    REJECT("eager input 1: id delta ", EAGER_PAIR(5, (uint64_t)1 << 63)),
    /* id 10 at byte 12, then len and 1 byte; id 11 at byte 15; 11 + 1 + the
     * last distance is the limit */
    REJECT("wire: eager input 2: id delta 1048564 reaches 1048576 or more (byte 18)",
           HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(3), EAGER(10, 1, 0xAA), EAGER(0, 1, 0xAA),
           EAGER(TC_WIRE_MAX_CACHE - 12, 1, 0xAA)),
    /* len: 1..TC_WIRE_MAX_EAGER, and no more than the bytes left */
    REJECT("wire: eager input 0: len 0 outside 1..65536 (byte 13)", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_IDS0, U8(1), RAW("\0\0\xAA")),
    REJECT("eager input 0: len 65537 outside 1..65536 (byte 13)", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_IDS0, U8(1), U8(0), VAR(TC_WIRE_MAX_EAGER + 1), RAW("\xAA")),
    REJECT("eager input 0: len 18446744073709551615 outside", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0,
           U8(1), U8(0), VAR(UINT64_MAX)),
    REJECT("eager input 0: len: varint above 2^64-1", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(1),
           U8(0), REP(9, 0xFF), U8(0x02)),
    REJECT("eager input 0: len 4 runs past the end (3 bytes left)", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_IDS0, U8(1), RAW("\0\4"), RAW("\1\2\3")),
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(1), RAW("\0\4"), RAW("\1\2\3"), U8(4)),
    REJECT("eager input 1: len 10 runs past the end (5 bytes left)", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_IDS0, U8(2), EAGER(0, 1, 0xAA), RAW("\0\x0A"), RAW("\1\2\3\4\5")),
    REJECT("eager input 0: len 65536 runs past the end (65535 bytes left)",
           HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(1), VAR(0), VAR(TC_WIRE_MAX_EAGER),
           REP(TC_WIRE_MAX_EAGER - 1, 0x5A)),
    /* the bytes of an input are raw: a terminate record's bytes inside one are
     * data, and the record is then missing */
    REJECT("wire: truncated reading terminate status", HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0),
           CYCLE_IDS0, U8(1), RAW("\0\4"), RAW("\1\2"), U8(TC_ERR_SHUTDOWN), U8(0)),
    /* truncated inside the record */
    REJECT("eager input 0: truncated reading id (byte 12)", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0,
           U8(1), RAW("\x80\x80\x80")),
    REJECT("eager input 0: truncated reading len (byte 13)", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0,
           U8(1), RAW("\x05\x80\x80")),
    REJECT("eager input 1: truncated reading id delta (byte 15)", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_IDS0, U8(2), EAGER(0, 1, 0xAA), RAW("\x80\x80\x80")),
    REJECT("eager input 0: id: varint longer than 10 bytes", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0,
           U8(1), REP(10, 0x80), U8(0), RAW("\1\xAA")),
    /* trailing bytes after the record (a zero; a second eager record), with
     * and without a terminate record */
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(1), EAGER(7, 2, 0xAA)),
    REJECT("wire: 1 trailing bytes after the message (byte 16)", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_IDS0, U8(1), EAGER(7, 2, 0xAA), U8(0)),
    REJECT("wire: 4 trailing bytes after the message (byte 16)", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_IDS0, U8(1), EAGER(7, 2, 0xAA), U8(1), EAGER(8, 1, 0xAA)),
    ACCEPT(HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0), CYCLE_IDS0, U8(1), EAGER(7, 2, 0xAA),
           U8(TC_ERR_SHUTDOWN), STR("x")),
    REJECT("1 trailing bytes after the message", HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0),
           CYCLE_IDS0, U8(1), EAGER(7, 2, 0xAA), U8(TC_ERR_SHUTDOWN), STR("x"), U8(0)),
};

/* Every row of the table: accepted ones must decode (and re-encode), the
 * others must be refused with their status and reason. */
TC_CASE(malformed)
{
    snprintf(first_bad_kind, sizeof(first_bad_kind),
             "response 0: description: kind %d dtype 2 op 0 ndim 0", TC_KIND_COUNT);
    check_malformed(malformed, sizeof(malformed) / sizeof(malformed[0]));
}

int main(int argc, char **argv)
{
    return wire_test_main(argc, argv);
}
