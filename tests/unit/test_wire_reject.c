/*
 * test_wire_reject.c - unit test of the control-message decoder (src/wire/wire_decode.c):
 * one hand-made message per rule it enforces on the header (magic, version,
 * type, flags, count, varints) and on requests (kind, dtype, op, root, ndim,
 * shape, name, the extras: scaling factors, group, process set, rank list, device memory),
 * most next to one just inside the limit that it must accept. Responses, the
 * cycle, terminate and eager records are test_wire_reject_cycle.c.
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

static void root_is_int32_min(const tc_wire_msg_t *d)
{
    CHECK_EQ(d->reqs[0].root, INT32_MIN);
}

static void root_is_int32_max(const tc_wire_msg_t *d)
{
    CHECK_EQ(d->reqs[0].root, INT32_MAX);
}

static void member_1_of_3(const tc_wire_msg_t *d)
{
    const tc_wire_request_t *r = &d->reqs[0];
    CHECK(r->group_size == 3 && r->group_index == 1 && r->group_key_len == 3 &&
          memcmp(r->group_key, "key", 3) == 0 && !r->scaled);
}

static void scales_are_2_and_half(const tc_wire_msg_t *d)
{
    CHECK(d->reqs[0].scaled && d->reqs[0].prescale == 2.0 && d->reqs[0].postscale == 0.5);
}

static void pset_is_1(const tc_wire_msg_t *d)
{
    CHECK(d->reqs[0].pset == 1 && d->reqs[0].nranks == 0 && d->reqs[0].ranks == NULL);
}

static void on_cuda(const tc_wire_msg_t *d)
{
    CHECK(d->reqs[0].memory == TC_WIRE_MEM_CUDA && d->reqs[0].pset == 0 && !d->reqs[0].scaled);
}

static void on_cuda_pset_1(const tc_wire_msg_t *d)
{
    CHECK(d->reqs[0].memory == TC_WIRE_MEM_CUDA && d->reqs[0].pset == 1);
}

static void pset_is_max(const tc_wire_msg_t *d)
{
    CHECK_EQ(d->reqs[0].pset, TC_WIRE_MAX_PSET);
}

static void rank_0(const tc_wire_msg_t *d)
{
    CHECK(d->reqs[0].pset == 0 && d->reqs[0].nranks == 1 && d->reqs[0].ranks[0] == 0);
}

static void ranks_0_1_7(const tc_wire_msg_t *d)
{
    const tc_wire_request_t *r = &d->reqs[0];
    CHECK(r->nranks == 3 && r->ranks[0] == 0 && r->ranks[1] == 1 && r->ranks[2] == 7);
}

static void rank_max(const tc_wire_msg_t *d)
{
    CHECK(d->reqs[0].nranks == 1 && d->reqs[0].ranks[0] == TC_WIRE_MAX_RANKS - 1);
}

static void ranks_at_the_ends(const tc_wire_msg_t *d)
{
    const tc_wire_request_t *r = &d->reqs[0];
    CHECK(r->nranks == 2 && r->ranks[0] == 0 && r->ranks[1] == TC_WIRE_MAX_RANKS - 1);
}

static void ranks_0_half_max(const tc_wire_msg_t *d)
{
    const tc_wire_request_t *r = &d->reqs[0];
    CHECK(r->nranks == 3 && r->ranks[0] == 0 && r->ranks[1] == TC_WIRE_MAX_RANKS / 2 + 1 &&
          r->ranks[2] == TC_WIRE_MAX_RANKS - 1);
}

static void pset_9_rank_4_fields(const tc_wire_request_t *r)
{
    CHECK(r->pset == 9 && r->nranks == 1 && r->ranks[0] == 4);
}

static void pset_9_rank_4(const tc_wire_msg_t *d)
{
    pset_9_rank_4_fields(&d->reqs[0]);
    CHECK(!d->reqs[0].scaled && d->reqs[0].group_size == 0);
}

static void every_extra(const tc_wire_msg_t *d)
{
    const tc_wire_request_t *r = &d->reqs[0];
    scales_are_2_and_half(d);
    CHECK(r->group_size == 3 && r->group_index == 1 && r->group_key_len == 3);
    pset_9_rank_4_fields(r);
}

/* The dtype byte is the tc_dtype_t value; the table below spells it out. */
_Static_assert(TC_INT16 == 8 && TC_UINT16 == 9, "dtype values on the wire changed");

/* The reason for the first kind out of range ("request 0: kind 7 not in
 * 0..6" with 7 kinds): written when the case runs, so that a kind added to
 * TC_KIND_MAP needs no change here. */
static char first_bad_kind[64];

static const malformed_t malformed[] = {
    /* ---- header ---- */
    REJECT("truncated reading magic", END),
    ACCEPT(HDR(TC_WIRE_BYE, 0, 0)),
    REJECT("magic", U8(0x7D), U8(TC_WIRE_VERSION), U8(TC_WIRE_BYE), U8(0), U8(0)),
    REJECT("magic", U8(0x00), U8(TC_WIRE_VERSION), U8(TC_WIRE_BYE), U8(0), U8(0)),
    REJECT("version", U8(TC_WIRE_MAGIC), U8(0), U8(TC_WIRE_BYE), U8(0), U8(0)),
    /* the old formats: a v1 to v5 message is refused, not misread */
    REJECT("unsupported version 1, want 6", U8(TC_WIRE_MAGIC), U8(1), U8(TC_WIRE_BYE), U8(0),
           U8(0)),
    REJECT("unsupported version 2, want 6", U8(TC_WIRE_MAGIC), U8(2), U8(TC_WIRE_BYE), U8(0),
           U8(0)),
    REJECT("unsupported version 3, want 6 (byte 1)", U8(TC_WIRE_MAGIC), U8(3), U8(TC_WIRE_BYE),
           U8(0), U8(0)),
    /* a v3 UP: seq 1, cache_gen 2, empty ready, some and stale lists, no eager inputs */
    REJECT("unsupported version 3, want 6", U8(TC_WIRE_MAGIC), U8(3), U8(4), U8(0), U8(0),
           RAW("\1\2\0\0\0\0")),
    REJECT("unsupported version 4, want 6", U8(TC_WIRE_MAGIC), U8(4), U8(TC_WIRE_BYE), U8(0),
           U8(0)),
    REJECT("unsupported version 5, want 6", U8(TC_WIRE_MAGIC), U8(5), U8(TC_WIRE_BYE), U8(0),
           U8(0)),
    /* a v5 CYCLE with one RUN (no rflags byte) and an empty cycle record */
    REJECT("unsupported version 5, want 6 (byte 1)", U8(TC_WIRE_MAGIC), U8(5), U8(TC_WIRE_CYCLE),
           U8(0), U8(1), RAW("\0\1r\0\0"), CYCLE0),
    REJECT("version", U8(TC_WIRE_MAGIC), U8(7), U8(TC_WIRE_BYE), U8(0), U8(0)),
    REJECT_EACH_BUT(TC_WIRE_REQUESTS, TC_WIRE_BYE, "unknown message type", HDR(EACH, 0, 0)),
    /* type 4 was UP until version 3: now unknown like any other, whatever follows */
    REJECT("wire: unknown message type 4 (byte 2)", HDR(4, 0, 0)),
    REJECT("wire: unknown message type 4 (byte 2)", HDR(4, 0, 0), RAW("\1\2\0\0\0\0")),
    REJECT("wire: unknown message type 4 (byte 2)", HDR(4, 0, 0), CYCLE0),

    /* ---- flags that do not fit the type; BYE takes only TERMINATE (an abort) ---- */
    ACCEPT(HDR(TC_WIRE_REQUESTS, 0, 0)),
    ACCEPT(HDR(TC_WIRE_REQUESTS, TC_WIRE_F_SHUTDOWN, 0)),
    ACCEPT(HDR(TC_WIRE_REQUESTS, TC_WIRE_F_SPREAD, 0)),
    ACCEPT(HDR(TC_WIRE_REQUESTS, TC_WIRE_F_SHUTDOWN | TC_WIRE_F_SPREAD, 0)),
    ACCEPT(HDR(TC_WIRE_REQUESTS, TC_WIRE_F_SEQ, 0), U8(0)),
    REJECT("truncated reading seq", HDR(TC_WIRE_REQUESTS, TC_WIRE_F_SEQ, 0)),
    REJECT_EACH_BEYOND(TC_WIRE_F_SHUTDOWN | TC_WIRE_F_SPREAD | TC_WIRE_F_SEQ, "flags",
                       HDR(TC_WIRE_REQUESTS, EACH, 0)),
    ACCEPT(HDR(TC_WIRE_BYE, 0, 0)),
    ACCEPT(HDR(TC_WIRE_BYE, TC_WIRE_F_TERMINATE, 0), U8(TC_ERR_TRANSPORT), STR("rank 3 lost")),
    REJECT_EACH_BEYOND(TC_WIRE_F_TERMINATE, "flags", HDR(TC_WIRE_BYE, EACH, 0)),
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 0), CYCLE0),
    ACCEPT(HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0), CYCLE0, U8(TC_ERR_SHUTDOWN), STR("")),
    REJECT_EACH_BEYOND(TC_WIRE_F_TERMINATE, "flags", HDR(TC_WIRE_CYCLE, EACH, 0), CYCLE0),

    /* ---- counts ---- */
    REJECT("BYE with count 1", HDR(TC_WIRE_BYE, 0, 1), REQ(0, 0, 0, 0, 0, 0, "a")),
    REJECT("count 4294967296 above 4294967295", HDR(TC_WIRE_REQUESTS, 0, (uint64_t)UINT32_MAX + 1)),
    REJECT("count", HDR(TC_WIRE_REQUESTS, 0, UINT64_MAX)),
    REJECT("cannot fit", HDR(TC_WIRE_REQUESTS, 0, UINT32_MAX), REQ(0, 0, 0, 0, 0, 0, "a")),
    REJECT("cannot fit", HDR(TC_WIRE_CYCLE, 0, UINT32_MAX)),
    REJECT("request 1: truncated reading kind", HDR(TC_WIRE_REQUESTS, 0, 2),
           REQ(0, 0, 0, 0, 0, 0, "abcdefghij")),
    /* 8 bytes per request at least: 14 cannot hold 2 */
    REJECT("cannot fit", HDR(TC_WIRE_REQUESTS, 0, 2), REQ(0, 0, 0, 0, 0, 0, "abcdefg")),

    /* ---- varints (the count of a BYE) ---- */
    REJECT("varint longer than 10 bytes", HEAD(TC_WIRE_BYE, 0), REP(10, 0x80), U8(0x00)),
    REJECT("varint above 2^64-1", HEAD(TC_WIRE_BYE, 0), REP(9, 0xFF), U8(0x02)),
    REJECT("truncated reading count", HEAD(TC_WIRE_BYE, 0), REP(9, 0xFF)),
    /* padded (non-minimal) varints up to 10 bytes are accepted */
    ACCEPT(HEAD(TC_WIRE_BYE, 0), REP(9, 0x80), U8(0x00)),
    ACCEPT(HDR(TC_WIRE_REQUESTS, 0, 1), U8(0), U8(0), U8(0), RAW("\x80\x00"), /* root 0, padded */
           U8(0), RAW("\x81\x00"), U8('z'), U8(0)), /* name length 1, padded */

    /* ---- request fields ---- */
    ACCEPT(HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ(TC_KIND_BROADCAST, TC_FLOAT64, TC_PROD, 0, TC_MAX_DIMS, INT64_MAX, "ok")),
    REJECT(first_bad_kind, HDR(TC_WIRE_REQUESTS, 0, 1), REQ(TC_KIND_COUNT, 0, 0, 0, 0, 0, "k")),
    REJECT_EACH_BUT(0, TC_KIND_COUNT - 1, "request 0: kind ", HDR(TC_WIRE_REQUESTS, 0, 1),
                    REQ(EACH, 0, 0, 0, 0, 0, "k")),
    REJECT("kind 255", HDR(TC_WIRE_REQUESTS, 0, 1), REQ(255, 0, 0, 0, 0, 0, "k")),
    /* dtype bytes 8 and 9 are int16 and uint16; 10 is the first unknown one */
    ACCEPT(HDR(TC_WIRE_REQUESTS, 0, 1), REQ(TC_KIND_ALLREDUCE, 8, TC_MIN, 0, 1, 3, "i16")),
    ACCEPT(HDR(TC_WIRE_REQUESTS, 0, 1), REQ(TC_KIND_ALLREDUCE, 9, TC_PROD, 0, 1, 3, "u16")),
    REJECT("unknown dtype 10", HDR(TC_WIRE_REQUESTS, 0, 1), REQ(0, 10, 0, 0, 0, 0, "k")),
    REJECT("unknown op 5", HDR(TC_WIRE_REQUESTS, 0, 1), REQ(0, 0, TC_PROD + 1, 0, 0, 0, "k")),
    REJECT("ndim 9", HDR(TC_WIRE_REQUESTS, 0, 1), REQ(0, 0, 0, 0, TC_MAX_DIMS + 1, 1, "k")),
    REJECT("shape value 9223372036854775808 above", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ(0, 0, 0, 0, 1, (uint64_t)INT64_MAX + 1, "k")),
    REJECT("shape value", HDR(TC_WIRE_REQUESTS, 0, 1), REQ(0, 0, 0, 0, 1, UINT64_MAX, "k")),
    /* root: zigzag 2^32-1 is INT32_MIN, 2^32-2 INT32_MAX, 2^32 is out of range */
    ACCEPT_THEN(root_is_int32_min, HDR(TC_WIRE_REQUESTS, 0, 1),
                REQ(0, 0, 0, UINT32_MAX, 0, 0, "k")),
    ACCEPT_THEN(root_is_int32_max, HDR(TC_WIRE_REQUESTS, 0, 1),
                REQ(0, 0, 0, (uint64_t)UINT32_MAX - 1, 0, 0, "k")),
    REJECT("root", HDR(TC_WIRE_REQUESTS, 0, 1), REQ(0, 0, 0, (uint64_t)UINT32_MAX + 1, 0, 0, "k")),
    REJECT("root", HDR(TC_WIRE_REQUESTS, 0, 1), REQ(0, 0, 0, UINT64_MAX, 0, 0, "k")),

    /* ---- scaling factors: extras bit 0, then two little-endian binary64 ---- */
    ACCEPT_THEN(scales_are_2_and_half, HDR(TC_WIRE_REQUESTS, 0, 1),
                REQ_NOX(0, TC_FLOAT32, 0, 0, 0, 0, "s"), U8(1), RAW(F64_2), RAW(F64_HALF)),
    ACCEPT(HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, TC_FLOAT32, 0, 0, 0, 0, "s"), U8(1), RAW(F64_1),
           RAW(F64_NEG1)),
    ACCEPT(HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, TC_FLOAT32, 0, 0, 0, 0, "s"), U8(1),
           RAW(F64_NEG0), RAW(F64_1)),
    REJECT("request 0: scaling factors of 1 must be left out", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(1), RAW(F64_1), RAW(F64_1)),
    REJECT("request 0: prescale is not finite", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(1), RAW(F64_INF), RAW(F64_1)),
    REJECT("request 0: postscale is not finite", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(1), RAW(F64_1), RAW(F64_NAN)),
    REJECT("truncated reading prescale", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(1), RAW("\0\0\0")),
    REJECT("truncated reading postscale", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(1), RAW(F64_2), RAW("\0\0\0\0\0\0\0")),
    REJECT("request 0: unknown extras bits 0x20", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(0x20)),
    /* ---- groups: extras bit 1, then size, index and the group's key ---- */
    ACCEPT_THEN(member_1_of_3, HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(2),
                U8(3), U8(1), STR("key")),
    ACCEPT(HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(3), RAW(F64_2),
           RAW(F64_2), VAR(TC_WIRE_MAX_GROUP), VAR(TC_WIRE_MAX_GROUP - 1), STR("k")),
    REJECT("request 0: group member 3 of 3", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(2), U8(3), U8(3), STR("k")),
    REJECT("request 0: group member 0 of 0", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(2), U8(0), U8(0), STR("k")),
    REJECT("group size 65537 above 65536", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(2), VAR(TC_WIRE_MAX_GROUP + 1), U8(0), STR("k")),
    REJECT("group key length 0", HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(2),
           U8(2), U8(0), U8(0), U8(0)),
    REJECT("truncated reading group key", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(2), U8(2), U8(0), U8(5), RAW("ab")),
    REJECT("unknown extras bits 0x80", HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"),
           U8(0x81), RAW(F64_2), RAW(F64_2)),
    /* ---- process sets: extras bit 2, then the set, 1..TC_WIRE_MAX_PSET
     * (after the factors and the group, when they are there) ---- */
    ACCEPT_THEN(pset_is_1, HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(4),
                VAR(1)),
    ACCEPT_THEN(pset_is_1, HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(4),
                RAW("\x81\x80\x00")), /* padded */
    ACCEPT_THEN(pset_is_max, HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(4),
                VAR(TC_WIRE_MAX_PSET)),
    REJECT("request 0: process set 0 must be left out", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(4), U8(0)),
    REJECT("request 0: process set 0 must be left out", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(4), RAW("\x80\x80\x00")),
    REJECT("request 0: process set 16777217 above 16777216 (byte 13)", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(4), VAR(TC_WIRE_MAX_PSET + 1)),
    REJECT("process set 18446744073709551615 above 16777216", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(4), VAR(UINT64_MAX)),
    REJECT("request 0: truncated reading process set", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(4)),
    REJECT("request 0: truncated reading process set", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(4), RAW("\x80\x80")),
    /* ---- device memory: extras bit 4, nothing after it ---- */
    ACCEPT_THEN(on_cuda, HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(0x10)),
    ACCEPT_THEN(on_cuda_pset_1, HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"),
                U8(0x14), VAR(1)),
    /* bit 5 up is unknown, beside the known bits or alone */
    REJECT("request 0: unknown extras bits 0x20 (byte 12)", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(0x3C), VAR(1), VAR(1), VAR(0)),
    REJECT("unknown extras bits 0xe0", HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"),
           U8(0xFF)),
    REJECT_EACH_BEYOND(0x1F, "unknown extras bits", HDR(TC_WIRE_REQUESTS, 0, 1),
                       REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(EACH), RAW(F64_2), RAW(F64_2), VAR(2),
                       VAR(1), STR("k"), VAR(1), VAR(1), VAR(0)),
    /* ---- rank lists: extras bit 3, then the count, 1..TC_WIRE_MAX_RANKS, and
     * the ranks: the first as is, then each distance less one; each rank below
     * TC_WIRE_MAX_RANKS ---- */
    ACCEPT_THEN(rank_0, HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8), VAR(1),
                VAR(0)),
    ACCEPT_THEN(ranks_0_1_7, HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8),
                VAR(3), VAR(0), VAR(0), VAR(5)),
    ACCEPT_THEN(rank_max, HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8),
                VAR(1), VAR(TC_WIRE_MAX_RANKS - 1)),
    ACCEPT_THEN(ranks_at_the_ends, HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"),
                U8(8), VAR(2), VAR(0), VAR(TC_WIRE_MAX_RANKS - 2)),
    /* 0, then 0 + 1 + 2^23, then that + 1 + 2^23 - 3 = 2^24 - 1 */
    ACCEPT_THEN(ranks_0_half_max, HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"),
                U8(8), VAR(3), VAR(0), VAR(TC_WIRE_MAX_RANKS / 2), VAR(TC_WIRE_MAX_RANKS / 2 - 3)),
    /* the count: not 0, no more than the bytes left (each rank takes one at
     * least), no more than TC_WIRE_MAX_RANKS */
    REJECT("request 0: rank count 0 not in 1..0", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8), U8(0)),
    REJECT("request 0: rank count 0 not in 1..1", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8), U8(0), U8(0)),
    REJECT("request 0: rank count 4 not in 1..3", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8), VAR(4), VAR(0), VAR(0), VAR(0)),
    REJECT("request 0: rank count 16777216 not in 1..2", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8), VAR(TC_WIRE_MAX_RANKS), VAR(0), VAR(0)),
    REJECT("request 0: rank count 16777217 above 16777216", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8), VAR(TC_WIRE_MAX_RANKS + 1), VAR(0)),
    REJECT("rank count 18446744073709551615 above 16777216", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8), VAR(UINT64_MAX)),
    REJECT("request 0: truncated reading rank count", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8)),
    /* a rank at or past the limit: the first one directly, a later one
     * through its distance, or through distances that each fit */
    REJECT("request 0: rank list entry 0 is 16777216, not below 16777216",
           HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8), VAR(1),
           VAR(TC_WIRE_MAX_RANKS)),
    REJECT("request 0: rank 16777217 above 16777216", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8), VAR(1), VAR(TC_WIRE_MAX_RANKS + 1)),
    REJECT("request 0: rank list entry 1 is 16777216, not below 16777216",
           HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8), VAR(2),
           VAR(TC_WIRE_MAX_RANKS - 1), VAR(0)),
    REJECT("request 0: rank list entry 1 is 16777216, not below 16777216",
           HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8), VAR(2), VAR(0),
           VAR(TC_WIRE_MAX_RANKS - 1)),
    REJECT("request 0: rank list entry 2 is 16777216, not below 16777216",
           HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8), VAR(3), VAR(0),
           VAR(TC_WIRE_MAX_RANKS / 2), VAR(TC_WIRE_MAX_RANKS / 2 - 2)),
    REJECT("request 0: rank list entry 3 is 33554430, not below 16777216",
           HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8), VAR(4),
           VAR(TC_WIRE_MAX_RANKS - 4), VAR(0), VAR(0), VAR(TC_WIRE_MAX_RANKS - 1)),
    REJECT("rank 18446744073709551615 above 16777216", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8), VAR(2), VAR(0), VAR(UINT64_MAX)),
    REJECT("request 0: rank: varint above 2^64-1", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8), VAR(1), REP(9, 0xFF), U8(0x02)),
    REJECT("request 0: truncated reading rank", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8), VAR(2), VAR(0), U8(0x80)),
    /* the order: the factors, the group, the set, the list */
    ACCEPT_THEN(pset_9_rank_4, HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"),
                U8(0x0C), VAR(9), VAR(1), VAR(4)),
    ACCEPT_THEN(every_extra, HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(0x0F),
                RAW(F64_2), RAW(F64_HALF), U8(3), U8(1), STR("key"), VAR(9), VAR(1), VAR(4)),
    /* a list before its set: the count is read as the set, the rank as the
     * count, which then cannot fit */
    REJECT("request 0: rank count 4 not in 1..1", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(0x0C), VAR(1), VAR(4), VAR(9)),
    /* a name one byte longer so that the count bound is not what fails */
    REJECT("request 0: truncated reading extras", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "ss")),

    /* ---- names ---- */
    /* one more byte so that the count bound is not what fails */
    REJECT("name length 0 not in 1..1024", HDR(TC_WIRE_REQUESTS, 0, 1), REQ(0, 0, 0, 0, 0, 0, ""),
           U8(0)),
    ACCEPT(HDR(TC_WIRE_REQUESTS, 0, 1), RAW("\0\0\0\0\0"), FILL(TC_MAX_NAME_LEN, 0xFF), U8(0)),
    REJECT("name length 1025", HDR(TC_WIRE_REQUESTS, 0, 1), RAW("\0\0\0\0\0"),
           FILL(TC_MAX_NAME_LEN + 1, 'a')),
    /* a 0x00 byte first, in the middle, last */
    REJECT("name contains a 0x00 byte", HDR(TC_WIRE_REQUESTS, 0, 1), RAW("\0\0\0\0\0"),
           STR("\0aaaa")),
    REJECT("name contains a 0x00 byte", HDR(TC_WIRE_REQUESTS, 0, 1), RAW("\0\0\0\0\0"),
           STR("aa\0aa")),
    REJECT("name contains a 0x00 byte", HDR(TC_WIRE_REQUESTS, 0, 1), RAW("\0\0\0\0\0"),
           STR("aaaa\0")),
    REJECT("truncated reading name", HDR(TC_WIRE_REQUESTS, 0, 1), RAW("\0\0\0\0\0"), VAR(10),
           RAW("abcde")),
};

/* Every row of the table: accepted ones must decode (and re-encode), the
 * others must be refused with their status and reason. */
TC_CASE(malformed)
{
    snprintf(first_bad_kind, sizeof(first_bad_kind), "request 0: kind %d not in 0..%d",
             TC_KIND_COUNT, TC_KIND_COUNT - 1);
    check_malformed(malformed, sizeof(malformed) / sizeof(malformed[0]));
}

int main(int argc, char **argv)
{
    return wire_test_main(argc, argv);
}
