/*
 * test_wire_encode.c - unit test of the control-message encoder
 * (src/wire/wire_encode.c): it refuses (TC_ERR_ARG, with a reason, the buffer
 * unchanged) every message the decoder would refuse, field by field, and
 * ignores what a message type or rtype does not carry.
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
#include "wire_testutil.h"

TC_CASE(encode_rejects)
{
    static char long_name[TC_MAX_NAME_LEN + 1];
    static char long_text[TC_WIRE_MAX_TEXT + 1];
    static const int64_t neg[] = {1, -1};
    tc_wire_request_t r[2];
    tc_wire_response_t s[2];
    tc_wire_msg_t m;
    tc_wire_buf_t buf = {0};
    int i;

    memset(long_name, 'n', sizeof(long_name));
    memset(long_text, 't', sizeof(long_text));
    CHECK_STATUS(tc__wire_encode(NULL, &buf), TC_ERR_ARG);
    CHECK_STATUS(tc__wire_encode(&(tc_wire_msg_t){.type = TC_WIRE_BYE}, NULL), TC_ERR_ARG);
    CHECK(buf.data == NULL && buf.len == 0);

    m = (tc_wire_msg_t){.type = 0};
    EXPECT_ENCODE_REJECT(&m, "unknown message type 0");
    m.type = 4; /* UP until version 3 */
    EXPECT_ENCODE_REJECT(&m, "unknown message type 4");
    m.type = 5;
    EXPECT_ENCODE_REJECT(&m, "unknown message type 5");
    m = (tc_wire_msg_t){.type = TC_WIRE_BYE, .flags = TC_WIRE_F_SHUTDOWN};
    EXPECT_ENCODE_REJECT(&m, "flags");
    m = (tc_wire_msg_t){.type = TC_WIRE_BYE, .count = 1, .reqs = r};
    EXPECT_ENCODE_REJECT(&m, "BYE with count 1");
    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .flags = TC_WIRE_F_TERMINATE};
    EXPECT_ENCODE_REJECT(&m, "flags");
    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .flags = 0x80};
    EXPECT_ENCODE_REJECT(&m, "flags");
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .flags = TC_WIRE_F_SHUTDOWN};
    EXPECT_ENCODE_REJECT(&m, "flags");
    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .count = 1};
    EXPECT_ENCODE_REJECT(&m, "NULL entries");
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = 1};
    EXPECT_ENCODE_REJECT(&m, "NULL entries");

    /* round and some are CYCLE's alone: refused on REQUESTS and BYE, like a
     * flag that does not fit (whereas their other cycle fields are ignored) */
    {
        static const uint32_t ids[] = {3, 9};
        tc_wire_request_t ok_req = {.name = "q", .name_len = 1};
        int t;
        for (t = 0; t < 3; t++) {
            uint8_t type = t == 0 ? TC_WIRE_BYE : TC_WIRE_REQUESTS;
            char needle[96];
            m = (tc_wire_msg_t){.type = type, .round = 1};
            if (t == 1) {
                m.count = 1;
                m.reqs = &ok_req;
            } else if (t == 2) {
                m.flags = TC_WIRE_F_SEQ;
                m.seq = 5;
            }
            snprintf(needle, sizeof(needle), "round 1 not allowed on message type %u (CYCLE only)",
                     type);
            EXPECT_ENCODE_REJECT(&m, needle);
            m.round = TC_WIRE_MAX_ROUND;
            EXPECT_ENCODE_REJECT(&m, "round 64 not allowed");
            m.round = 0;
            m.nsome = 2;
            m.some = ids;
            snprintf(needle, sizeof(needle),
                     "some list (nsome 2) not allowed on message type %u (CYCLE only)", type);
            EXPECT_ENCODE_REJECT(&m, needle);
            m.some = NULL; /* a count without its array, or beyond the limit, all the same */
            EXPECT_ENCODE_REJECT(&m, "some list (nsome 2) not allowed");
            m.nsome = UINT32_MAX;
            EXPECT_ENCODE_REJECT(&m, "some list (nsome 4294967295) not allowed");
            /* an array without a count is no list: ignored, like the other
             * cycle fields there */
            m.nsome = 0;
            m.some = ids;
            roundtrip(&m);
        }
        /* the same fields are fine on a CYCLE, round up to its limit */
        m = (tc_wire_msg_t){
            .type = TC_WIRE_CYCLE, .round = TC_WIRE_MAX_ROUND, .nsome = 2, .some = ids};
        roundtrip(&m);
        m.round = TC_WIRE_MAX_ROUND + 1;
        EXPECT_ENCODE_REJECT(&m, "round 65 above 64");
        m.round = 128;
        EXPECT_ENCODE_REJECT(&m, "round 128 above 64");
        m.round = UINT32_MAX;
        EXPECT_ENCODE_REJECT(&m, "round 4294967295 above 64");
    }

    /* requests: the bad one is the second, after a valid first */
    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .count = 2, .reqs = r};
    for (i = 0; i < 12; i++) {
        static char first_bad_kind[48]; /* "kind 7 not in 0..6" with 7 kinds */
        static const char *const needles[] = {first_bad_kind,
                                              "unknown dtype 10",
                                              "unknown op 5",
                                              "ndim 9",
                                              "shape[1] = -1",
                                              "name length 0",
                                              "name length 1025",
                                              "name is NULL",
                                              "name contains a 0x00",
                                              "shape[0] = -9223372036854775808",
                                              "kind 255",
                                              "unknown op 255"};
        memset(r, 0, sizeof(r));
        r[0].name = r[1].name = "ok";
        r[0].name_len = r[1].name_len = 2;
        switch (i) {
        case 0: r[1].kind = TC_KIND_COUNT; break;
        case 1: r[1].dtype = TC_UINT16 + 1; break;
        case 2: r[1].op = TC_PROD + 1; break;
        case 3: r[1].ndim = TC_MAX_DIMS + 1; break;
        case 4:
            r[1].ndim = 2;
            r[1].shape[0] = 5;
            r[1].shape[1] = -1;
            break;
        case 5: r[1].name_len = 0; break;
        case 6:
            r[1].name = long_name;
            r[1].name_len = TC_MAX_NAME_LEN + 1;
            break;
        case 7: r[1].name = NULL; break;
        case 8:
            r[1].name = "a\0b";
            r[1].name_len = 3;
            break;
        case 9:
            r[1].ndim = 1;
            r[1].shape[0] = INT64_MIN;
            break;
        case 10: r[1].kind = 255; break;
        default: r[1].op = 255; break;
        }
        snprintf(first_bad_kind, sizeof(first_bad_kind), "kind %d not in 0..%d", TC_KIND_COUNT,
                 TC_KIND_COUNT - 1);
        EXPECT_ENCODE_REJECT(&m, needles[i]);
        CHECK_STR_CONTAINS(tc_last_error(), "request 1: ");
    }

    /* responses */
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = 2, .resps = s};
    for (i = 0; i < 13; i++) {
        static const char *const needles[] = {"unknown rtype 2",
                                              "error status 0",
                                              "error status 9",
                                              "error text length 2049",
                                              "error text is NULL",
                                              "error text contains a 0x00",
                                              "ndim0 16777217",
                                              "dim0 is NULL",
                                              "dim0[1] = -1",
                                              "name length 0",
                                              "name contains a 0x00",
                                              "cache_ref 1048577 above 1048576",
                                              "cache_ref 4294967295 above 1048576"};
        memset(s, 0, sizeof(s));
        s[0].name = s[1].name = "ok";
        s[0].name_len = s[1].name_len = 2;
        switch (i) {
        case 0: s[1].rtype = 2; break;
        case 1:
            s[1].rtype = TC_WIRE_ERROR;
            s[1].status = 0;
            break;
        case 2:
            s[1].rtype = TC_WIRE_ERROR;
            s[1].status = TC_ERR_TIMEOUT + 1;
            break;
        case 3:
            s[1].rtype = TC_WIRE_ERROR;
            s[1].status = 1;
            s[1].text = long_text;
            s[1].text_len = TC_WIRE_MAX_TEXT + 1;
            break;
        case 4:
            s[1].rtype = TC_WIRE_ERROR;
            s[1].status = 1;
            s[1].text_len = 4;
            break;
        case 5:
            s[1].rtype = TC_WIRE_ERROR;
            s[1].status = 1;
            s[1].text = "x\0";
            s[1].text_len = 2;
            break;
        case 6:
            s[1].ndim0 = TC_WIRE_MAX_RANKS + 1;
            s[1].dim0 = neg;
            break;
        case 7: s[1].ndim0 = 2; break;
        case 8:
            s[1].ndim0 = 2;
            s[1].dim0 = neg;
            break;
        case 9: s[1].name_len = 0; break;
        case 10:
            s[1].name = "\0";
            s[1].name_len = 1;
            break;
        case 11: s[1].cache_ref = TC_WIRE_MAX_CACHE + 1; break;
        default: s[1].cache_ref = UINT32_MAX; break;
        }
        EXPECT_ENCODE_REJECT(&m, needles[i]);
        CHECK_STR_CONTAINS(tc_last_error(), "response 1: ");
    }

    /* cycle record: each id list must have a count the format allows, an
     * array when the count is not 0, and ids strictly ascending below the
     * limit (the decoder could not tell an unsorted list from a sorted one) */
    {
        static const uint32_t unsorted[] = {1, 7, 3}, dup[] = {1, 7, 7},
                              at_max[] = {TC_WIRE_MAX_CACHE},
                              last_max[] = {0, 5, TC_WIRE_MAX_CACHE}, u32max[] = {3, UINT32_MAX},
                              ok[] = {2, 4, TC_WIRE_MAX_CACHE - 1};
        static const struct {
            uint32_t n;
            const uint32_t *ids;
            const char *needle; /* with "<list>" for "ready"/"some"/"stale" */
        } cases[] = {
            {TC_WIRE_MAX_CACHE + 1, ok, "n%s 1048577 above 1048576"},
            {UINT32_MAX, ok, "n%s 4294967295 above 1048576"},
            {2, NULL, "%s is NULL with n%s 2"},
            {3, unsorted, "%s[2] = 3 not above %s[1] = 7 (ids must be strictly ascending)"},
            {3, dup, "%s[2] = 7 not above %s[1] = 7"},
            {1, at_max, "%s[0] = 1048576 not below 1048576"},
            {3, last_max, "%s[2] = 1048576 not below 1048576"},
            {2, u32max, "%s[1] = 4294967295 not below 1048576"},
        };
        size_t c;
        int list;
        char needle[160];

        memset(s, 0, sizeof(s));
        s[0].name = "ok";
        s[0].name_len = 2;
        for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
            for (list = 0; list < 3; list++) {
                const char *what = list == 0 ? "ready" : list == 1 ? "some" : "stale";
                /* a valid response before, the other lists valid and non-empty */
                m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE,
                                    .count = 1,
                                    .resps = s,
                                    .seq = 1,
                                    .round = 3,
                                    .nready = 3,
                                    .ready = ok,
                                    .nsome = 3,
                                    .some = ok,
                                    .nstale = 3,
                                    .stale = ok};
                if (list == 0) {
                    m.nready = cases[c].n;
                    m.ready = cases[c].ids;
                } else if (list == 1) {
                    m.nsome = cases[c].n;
                    m.some = cases[c].ids;
                } else {
                    m.nstale = cases[c].n;
                    m.stale = cases[c].ids;
                }
                snprintf(needle, sizeof(needle), cases[c].needle, what, what);
                EXPECT_ENCODE_REJECT(&m, needle);
            }
        }
        /* the same lists are fine where there is no cycle record */
        m = (tc_wire_msg_t){.type = TC_WIRE_BYE, .nready = 3, .ready = unsorted, .nstale = 2};
        roundtrip(&m);
    }

    /* eager record: a count the format allows, an array when the count is not
     * 0, ids strictly ascending below the limit, len 1..TC_WIRE_MAX_EAGER and
     * data for it; the bad input is the last, after valid ones */
    {
        static uint8_t big[TC_WIRE_MAX_EAGER + 1];
        static const tc_wire_eager_t ok[] = {
            {2, 1, "a"}, {4, 3, "bcd"}, {TC_WIRE_MAX_CACHE - 1, 2, "ef"}};
        static const struct {
            uint32_t id, len;
            int null_data;
            const char *needle;
        } cases[] = {
            {4, 1, 0, "eager input 2: id 4 not above the previous id 4 (ids must be strictly"},
            {3, 1, 0, "eager input 2: id 3 not above the previous id 4"},
            {0, 1, 0, "eager input 2: id 0 not above the previous id 4"},
            {TC_WIRE_MAX_CACHE, 1, 0, "eager input 2: id 1048576 not below 1048576"},
            {UINT32_MAX, 1, 0, "eager input 2: id 4294967295 not below 1048576"},
            {9, 0, 0, "eager input 2: len 0 outside 1..65536"},
            {9, TC_WIRE_MAX_EAGER + 1, 0, "eager input 2: len 65537 outside 1..65536"},
            {9, UINT32_MAX, 0, "eager input 2: len 4294967295 outside 1..65536"},
            {9, 4, 1, "eager input 2: data is NULL with len 4"},
            {9, 1, 1, "eager input 2: data is NULL with len 1"},
        };
        tc_wire_eager_t e[3];
        size_t c;

        memset(s, 0, sizeof(s));
        s[0].name = "ok";
        s[0].name_len = 2;
        for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
            e[0] = ok[0];
            e[1] = ok[1];
            e[2] = (tc_wire_eager_t){cases[c].id, cases[c].len, cases[c].null_data ? NULL : big};
            /* a valid response and id lists before, a terminate record after */
            m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE,
                                .flags = TC_WIRE_F_TERMINATE,
                                .count = 1,
                                .resps = s,
                                .seq = 1,
                                .nready = 1,
                                .ready = &ok[2].id,
                                .neager = 3,
                                .eager = e,
                                .term_status = TC_ERR_SHUTDOWN};
            EXPECT_ENCODE_REJECT(&m, cases[c].needle);
            /* the same input first, alone, is refused too unless the fault
             * is only the order */
            m.neager = 1;
            m.eager = &e[2];
            if (cases[c].id < TC_WIRE_MAX_CACHE && cases[c].len >= 1 &&
                cases[c].len <= TC_WIRE_MAX_EAGER && !cases[c].null_data) {
                roundtrip(&m);
            } else {
                EXPECT_ENCODE_REJECT(&m, "eager input 0: ");
            }
        }
        m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .neager = 2};
        EXPECT_ENCODE_REJECT(&m, "eager is NULL with neager 2");
        m.neager = TC_WIRE_MAX_CACHE + 1;
        m.eager = ok;
        EXPECT_ENCODE_REJECT(&m, "neager 1048577 above 1048576");
        m.neager = UINT32_MAX;
        EXPECT_ENCODE_REJECT(&m, "neager 4294967295 above 1048576");
        m.eager = NULL;
        EXPECT_ENCODE_REJECT(&m, "neager 4294967295 above 1048576");
        /* the limits themselves are fine */
        e[0] = (tc_wire_eager_t){0, TC_WIRE_MAX_EAGER, big};
        e[1] = (tc_wire_eager_t){TC_WIRE_MAX_CACHE - 1, 1, big};
        m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .neager = 2, .eager = e};
        roundtrip(&m);
        m.neager = 0; /* and a count of 0 needs no array */
        m.eager = NULL;
        roundtrip(&m);
        /* the same inputs are ignored where there is no cycle record */
        m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .neager = 3, .eager = e};
        e[2] = (tc_wire_eager_t){0, 0, NULL};
        roundtrip(&m);
    }

    /* terminate record */
    memset(s, 0, sizeof(s));
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .flags = TC_WIRE_F_TERMINATE};
    EXPECT_ENCODE_REJECT(&m, "terminate status 0");
    m.term_status = TC_ERR_TIMEOUT + 1;
    EXPECT_ENCODE_REJECT(&m, "terminate status 9");
    m.term_status = TC_ERR_SHUTDOWN;
    m.term_text = long_text;
    m.term_text_len = TC_WIRE_MAX_TEXT + 1;
    EXPECT_ENCODE_REJECT(&m, "terminate text length 2049");
    m.term_text = "a\0";
    m.term_text_len = 2;
    EXPECT_ENCODE_REJECT(&m, "terminate text contains a 0x00");
    m.term_text = NULL;
    m.term_text_len = 1;
    EXPECT_ENCODE_REJECT(&m, "terminate text is NULL");
    m.term_text_len = 0;
    roundtrip(&m);
    /* without the flag, the terminate fields are ignored */
    m.flags = 0;
    m.term_status = 0;
    m.term_text_len = 99999;
    roundtrip(&m);
}

/* The encoder refuses what version 6's decoder would: a request's process
 * set above its limit, a rank list out of order or range, or a count
 * without its array; a response's process set above its limit; a RUN's
 * description with a bad kind, dtype, op or ndim, or a negative shape value.
 * The bad entry is the second, after a valid first. What it ignores (a
 * description without has_desc, one on an ERROR) it writes nothing for. */
TC_CASE(encode_rejects_v6)
{
    static const int32_t ok_ranks[] = {0, 3, TC_WIRE_MAX_RANKS - 1}, dup[] = {1, 3, 3},
                         down[] = {5, 2}, neg[] = {-1}, neg_later[] = {0, INT32_MIN},
                         at_max[] = {TC_WIRE_MAX_RANKS}, i32max[] = {0, INT32_MAX},
                         last_max[] = {4, TC_WIRE_MAX_RANKS};
    static const struct {
        uint32_t pset, nranks;
        const int32_t *ranks;
        const char *needle;
    } req_cases[] = {
        {TC_WIRE_MAX_PSET + 1, 0, NULL, "process set 16777217 above 16777216"},
        {UINT32_MAX, 3, ok_ranks, "process set 4294967295 above 16777216"},
        {0, 3, dup, "rank list entry 2 (3) out of order or range"},
        {0, 2, down, "rank list entry 1 (2) out of order or range"},
        {0, 1, neg, "rank list entry 0 (-1) out of order or range"},
        {0, 2, neg_later, "rank list entry 1 (-2147483648) out of order or range"},
        {0, 1, at_max, "rank list entry 0 (16777216) out of order or range"},
        {0, 2, i32max, "rank list entry 1 (2147483647) out of order or range"},
        {5, 2, last_max, "rank list entry 1 (16777216) out of order or range"},
        {0, 2, NULL, "a rank list of 2"},
        {0, TC_WIRE_MAX_RANKS + 1, ok_ranks, "a rank list of 16777217"},
        {0, UINT32_MAX, NULL, "a rank list of 4294967295"},
    };
    static const struct {
        uint8_t rtype;
        uint32_t pset;
        tc_wire_desc_t desc;
        const char *needle;
    } resp_cases[] = {
        {TC_WIRE_RUN, TC_WIRE_MAX_PSET + 1, {0}, "process set 16777217 above 16777216"},
        {TC_WIRE_ERROR, TC_WIRE_MAX_PSET + 1, {0}, "process set 16777217 above 16777216"},
        {TC_WIRE_RUN, UINT32_MAX, {0}, "process set 4294967295 above 16777216"},
        {TC_WIRE_RUN, 0, {.kind = TC_KIND_COUNT}, NULL}, /* the first kind out of range */
        {TC_WIRE_RUN, 1, {.kind = 255, .dtype = TC_INT32}, "description: kind 255 dtype 2"},
        {TC_WIRE_RUN, 0, {.dtype = TC_UINT16 + 1}, "description: kind 0 dtype 10 op 0"},
        {TC_WIRE_RUN, 0, {.op = TC_PROD + 1}, "description: kind 0 dtype 0 op 5 ndim 0"},
        {TC_WIRE_RUN, 0, {.ndim = TC_MAX_DIMS + 1}, "description: kind 0 dtype 0 op 0 ndim 9"},
        {TC_WIRE_RUN, 0, {.ndim = 255}, "ndim 255"},
        {TC_WIRE_RUN, 0, {.ndim = 2, .shape = {1, -1}}, "description: shape[1] is negative"},
        {TC_WIRE_RUN, 0, {.ndim = 1, .shape = {INT64_MIN}}, "description: shape[0] is negative"},
        {TC_WIRE_RUN,
         0,
         {.ndim = TC_MAX_DIMS, .shape = {0, 0, 0, 0, 0, 0, 0, -5}},
         "description: shape[7] is negative"},
    };
    tc_wire_request_t r[2];
    tc_wire_response_t s[2];
    tc_wire_msg_t m;
    size_t c;

    for (c = 0; c < sizeof(req_cases) / sizeof(req_cases[0]); c++) {
        r[0] = mk("ok", TC_KIND_JOIN, TC_INT32, TC_SUM, 0, 0, 0, 0);
        r[0].pset = 3;
        r[0].nranks = 3;
        r[0].ranks = ok_ranks;
        r[1] = mk("ok2", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 4, 0);
        r[1].pset = req_cases[c].pset;
        r[1].nranks = req_cases[c].nranks;
        r[1].ranks = req_cases[c].ranks;
        m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .count = 2, .reqs = r};
        EXPECT_ENCODE_REJECT(&m, req_cases[c].needle);
        CHECK_STR_CONTAINS(tc_last_error(), "request 1: ");
    }
    for (c = 0; c < sizeof(resp_cases) / sizeof(resp_cases[0]); c++) {
        memset(s, 0, sizeof(s));
        s[0] = (tc_wire_response_t){.rtype = TC_WIRE_RUN,
                                    .name = "ok",
                                    .name_len = 2,
                                    .pset = TC_WIRE_MAX_PSET,
                                    .has_desc = 1,
                                    .desc = {.kind = TC_KIND_JOIN, .dtype = TC_INT32},
                                    .has_value = 1,
                                    .value = INT32_MIN};
        s[1] = (tc_wire_response_t){.rtype = resp_cases[c].rtype,
                                    .name = "bad",
                                    .name_len = 3,
                                    .pset = resp_cases[c].pset,
                                    .status = TC_ERR_MISMATCH,
                                    .has_desc = 1,
                                    .desc = resp_cases[c].desc,
                                    .has_value = 1,
                                    .value = -1};
        m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = 2, .resps = s};
        if (resp_cases[c].needle != NULL) {
            EXPECT_ENCODE_REJECT(&m, resp_cases[c].needle);
        } else {
            char needle[64];
            snprintf(needle, sizeof(needle), "description: kind %d dtype 0 op 0 ndim 0",
                     TC_KIND_COUNT);
            EXPECT_ENCODE_REJECT(&m, needle);
        }
        CHECK_STR_CONTAINS(tc_last_error(), "response 1: ");
        if (resp_cases[c].pset <= TC_WIRE_MAX_PSET) {
            /* a bad description is only written with has_desc on a RUN */
            s[1].has_desc = 0;
            roundtrip(&m);
            s[1].has_desc = 1;
            s[1].rtype = TC_WIRE_ERROR;
            roundtrip(&m);
        }
    }
    /* the limits themselves are fine */
    {
        static const int32_t one_max[] = {TC_WIRE_MAX_RANKS - 1};
        r[0] = mk("lim", TC_KIND_JOIN, TC_INT32, TC_SUM, 0, 0, 0, 0);
        r[0].pset = TC_WIRE_MAX_PSET;
        r[0].nranks = 1;
        r[0].ranks = one_max;
        m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .count = 1, .reqs = r};
        roundtrip(&m);
        s[0] = (tc_wire_response_t){
            .rtype = TC_WIRE_RUN,
            .name = "lim",
            .name_len = 3,
            .pset = TC_WIRE_MAX_PSET,
            .has_desc = 1,
            .desc = {.kind = TC_KIND_COUNT - 1,
                     .dtype = TC_UINT16,
                     .op = TC_PROD,
                     .ndim = TC_MAX_DIMS,
                     .shape = {INT64_MAX, 0, INT64_MAX, 0, 1, 2, 3, INT64_MAX}}};
        m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = 1, .resps = s};
        roundtrip(&m);
    }
}

/* A buffer reset for the next message keeps its memory up to
 * TC_WIRE_BUF_KEEP_BYTES, frees a bigger one, and encodes again from the
 * start either way. */
TC_CASE(buf_reuse)
{
    tc_wire_buf_t buf = {0};
    const tc_wire_msg_t bye = {.type = TC_WIRE_BYE};
    uint8_t *kept;
    size_t len;

    CHECK_STATUS(tc__wire_encode(&bye, &buf), TC_OK);
    len = buf.len;
    kept = buf.data;
    CHECK(len > 0 && kept != NULL);
    tc__wire_buf_reset(&buf);
    CHECK(buf.len == 0 && buf.data == kept && buf.cap >= len);
    CHECK_STATUS(tc__wire_encode(&bye, &buf), TC_OK);
    CHECK(buf.len == len && buf.data == kept);

    CHECK_STATUS(tc__wire_buf_reserve(&buf, TC_WIRE_BUF_KEEP_BYTES), TC_OK);
    CHECK(buf.cap > TC_WIRE_BUF_KEEP_BYTES && buf.len == len);
    tc__wire_buf_reset(&buf);
    CHECK(buf.len == 0 && buf.data == NULL && buf.cap == 0);
    CHECK_STATUS(tc__wire_encode(&bye, &buf), TC_OK);
    CHECK(buf.len == len);
    tc__wire_buf_free(&buf);
}

int main(int argc, char **argv)
{
    return wire_test_main(argc, argv);
}
