/*
 * test_wire_codec.c - unit test of the control-message codec (src/wire/wire_*.c):
 * round trips of requests and responses, each field across its range (scaling
 * factors, groups, process sets and rank lists; a RUN's dim0, cache_ref,
 * description and value; an ERROR's status and text; process sets on both),
 * and exact encodings worked out by hand from wire.h, so that the format
 * cannot drift from it. Every round trip checks the decoded message against
 * the format and that it re-encodes to the same bytes (wire_codec_testutil.c).
 * The cycle record, counts at scale and random messages are test_wire_records.c
 * and test_wire_fuzz.c; malformed input test_wire_reject*.c; what the encoder
 * refuses test_wire_encode.c. Deterministic; needs no MPI.
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

TC_CASE(kind_names)
{
    CHECK(strcmp(tc__kind_name(TC_KIND_ALLREDUCE), "allreduce") == 0);
    CHECK(strcmp(tc__kind_name(TC_KIND_ALLGATHER), "allgather") == 0);
    CHECK(strcmp(tc__kind_name(TC_KIND_BROADCAST), "broadcast") == 0);
    CHECK(strcmp(tc__kind_name(-1), "?") == 0);
    CHECK(strcmp(tc__kind_name(TC_KIND_COUNT), "?") == 0);
    CHECK(strcmp(tc__kind_name(255), "?") == 0);
}

/* Exact bytes for a few small messages, worked out by hand from wire.h. */
TC_CASE(golden)
{
    static const uint8_t bye[] = {0x7C, 0x06, 0x03, 0x00, 0x00};
    /* broadcast float32 sum, root -2 (zigzag 3), shape {300, 0}, name "ab" */
    static const uint8_t req[] = {0x7C, 0x06, 0x01, 0x01, 0x01, 0x02, 0x06, 0x00, 0x03,
                                  0x02, 0xAC, 0x02, 0x00, 0x02, 0x61, 0x62, 0x00};
    /* RUN "x" dim0 {1, 128} cache_ref 129; seq 300, round 64, cache_gen 0,
     * ready {0, 5, 200} (0, then 5-0-1 = 4, then 200-5-1 = 194), some {7, 1000}
     * (7, then 1000-7-1 = 992), stale {2^20-1}, eager inputs id 5 {DE AD 00 FF}
     * and id 200 {80} (5 as is, then 200-5-1 = 194, each with its len, then
     * the raw bytes: a 0x00 is fine there); terminate TC_ERR_SHUTDOWN "bye" */
    static const uint8_t cycle[] = {0x7C, 0x06, 0x02, 0x02, 0x01,       /* header */
                                    0x00, 0x01, 0x78, 0x00,             /* RUN "x", rflags 0 */
                                    0x02, 0x01, 0x80, 0x01, 0x81, 0x01, /* dim0, cache_ref */
                                    0xAC, 0x02, 0x40, 0x00,             /* seq, round, cache_gen */
                                    0x03, 0x00, 0x04, 0xC2, 0x01,       /* ready */
                                    0x02, 0x07, 0xE0, 0x07,             /* some */
                                    0x01, 0xFF, 0xFF, 0x3F,             /* stale */
                                    0x02,                               /* eager: 2 inputs */
                                    0x05, 0x04, 0xDE, 0xAD, 0x00, 0xFF, /* id 5, len 4 */
                                    0xC2, 0x01, 0x01, 0x80,             /* id 200, len 1 */
                                    0x05, 0x03, 0x62, 0x79, 0x65};      /* terminate */
    /* an empty CYCLE: no responses, seq 0, round 0, cache_gen 0, no ids, no
     * eager inputs */
    static const uint8_t empty_cycle[] = {0x7C, 0x06, 0x02, 0x00, 0x00, 0x00,
                                          0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    /* the largest eager input, alone at the largest id: count 1, id 2^20-1,
     * len 2^16 (3 varint bytes each), then the bytes */
    static const uint8_t big_eager_head[] = {0x7C, 0x06, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                             0x00, 0x00, 0x01, 0xFF, 0xFF, 0x3F, 0x80, 0x80, 0x04};
    static const int64_t dim0[] = {1, 128};
    static const uint32_t ready[] = {0, 5, 200}, some[] = {7, 1000},
                          stale[] = {TC_WIRE_MAX_CACHE - 1};
    static const uint8_t in5[] = {0xDE, 0xAD, 0x00, 0xFF}, in200[] = {0x80};
    static uint8_t big_in[TC_WIRE_MAX_EAGER];
    const tc_wire_eager_t eager[] = {{5, 4, in5}, {200, 1, in200}};
    tc_wire_request_t r = {0};
    tc_wire_response_t s = {0};
    tc_wire_msg_t m = {0};
    tc_wire_buf_t buf = {0};

    m.type = TC_WIRE_BYE;
    CHECK_OK(tc__wire_encode(&m, &buf));
    CHECK_EQ(buf.len, sizeof(bye));
    CHECK(memcmp(buf.data, bye, sizeof(bye)) == 0);

    r.kind = TC_KIND_BROADCAST;
    r.dtype = TC_FLOAT32;
    r.op = TC_SUM;
    r.root = -2;
    r.ndim = 2;
    r.shape[0] = 300;
    r.shape[1] = 0;
    r.name = "ab";
    r.name_len = 2;
    m = (tc_wire_msg_t){
        .type = TC_WIRE_REQUESTS, .flags = TC_WIRE_F_SHUTDOWN, .count = 1, .reqs = &r};
    buf.len = 0;
    CHECK_OK(tc__wire_encode(&m, &buf));
    CHECK_EQ(buf.len, sizeof(req));
    CHECK(memcmp(buf.data, req, sizeof(req)) == 0);

    s.rtype = TC_WIRE_RUN;
    s.name = "x";
    s.name_len = 1;
    s.ndim0 = 2;
    s.dim0 = dim0;
    s.cache_ref = 129;
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE,
                        .flags = TC_WIRE_F_TERMINATE,
                        .count = 1,
                        .resps = &s,
                        .seq = 300,
                        .round = TC_WIRE_MAX_ROUND,
                        .nready = 3,
                        .ready = ready,
                        .nsome = 2,
                        .some = some,
                        .nstale = 1,
                        .stale = stale,
                        .neager = 2,
                        .eager = eager,
                        .term_status = TC_ERR_SHUTDOWN,
                        .term_text = "bye",
                        .term_text_len = 3};
    buf.len = 0;
    CHECK_OK(tc__wire_encode(&m, &buf));
    CHECK_EQ(buf.len, sizeof(cycle));
    CHECK(memcmp(buf.data, cycle, sizeof(cycle)) == 0);
    /* and the decoder reads the same bytes back to the same values */
    {
        tc_wire_msg_t d;
        char err[128];
        CHECK_OK(tc__wire_decode(cycle, sizeof(cycle), &d, err, sizeof(err)));
        CHECK(d.type == TC_WIRE_CYCLE && d.count == 1 && d.resps[0].cache_ref == 129);
        CHECK(d.seq == 300 && d.round == TC_WIRE_MAX_ROUND && d.cache_gen == 0);
        CHECK(d.nready == 3 && d.ready[0] == 0 && d.ready[1] == 5 && d.ready[2] == 200);
        CHECK(d.nsome == 2 && d.some[0] == 7 && d.some[1] == 1000);
        CHECK(d.nstale == 1 && d.stale[0] == TC_WIRE_MAX_CACHE - 1);
        CHECK(d.neager == 2 && d.eager != NULL);
        CHECK(d.eager[0].id == 5 && d.eager[0].len == 4);
        CHECK(memcmp(d.eager[0].data, in5, 4) == 0);
        CHECK(d.eager[1].id == 200 && d.eager[1].len == 1);
        CHECK(memcmp(d.eager[1].data, in200, 1) == 0);
        CHECK(d.term_status == TC_ERR_SHUTDOWN && d.term_text_len == 3);
        CHECK(memcmp(d.term_text, "bye", 3) == 0);
        tc__wire_msg_free(&d);
    }

    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE};
    buf.len = 0;
    CHECK_OK(tc__wire_encode(&m, &buf));
    CHECK_EQ(buf.len, sizeof(empty_cycle));
    CHECK(memcmp(buf.data, empty_cycle, sizeof(empty_cycle)) == 0);

    {
        size_t k;
        tc_wire_eager_t e = {TC_WIRE_MAX_CACHE - 1, TC_WIRE_MAX_EAGER, big_in};
        for (k = 0; k < sizeof(big_in); k++) {
            big_in[k] = (uint8_t)(k * 7 + (k >> 8));
        }
        m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .neager = 1, .eager = &e};
        buf.len = 0;
        CHECK_OK(tc__wire_encode(&m, &buf));
        CHECK_EQ(buf.len, sizeof(big_eager_head) + TC_WIRE_MAX_EAGER);
        CHECK(memcmp(buf.data, big_eager_head, sizeof(big_eager_head)) == 0);
        CHECK(memcmp(buf.data + sizeof(big_eager_head), big_in, TC_WIRE_MAX_EAGER) == 0);
    }
    tc__wire_buf_free(&buf);
    CHECK(buf.data == NULL && buf.len == 0 && buf.cap == 0);
    tc__wire_buf_free(&buf);
    tc__wire_buf_free(NULL);
}

/* Exact bytes of version 6's fields, worked out by hand from wire.h. */
TC_CASE(golden_v6)
{
    /* join int32 sum, root 0, ndim 0, name "j"; extras PSET | RANKS (0x0C);
     * pset 300; ranks {1, 2, 200}: 3 of them, 1 as is, then 2-1-1 = 0 and
     * 200-2-1 = 197 */
    static const uint8_t req[] = {0x7C, 0x06, 0x01, 0x00, 0x01,             /* header */
                                  0x06, 0x02, 0x00, 0x00, 0x00, 0x01, 0x6A, /* request */
                                  0x0C,                                     /* extras */
                                  0xAC, 0x02,                               /* pset */
                                  0x03, 0x01, 0x00, 0xC5, 0x01};            /* ranks */
    /* RUN "j", rflags DESC | VALUE | PSET, pset 5, ndim0 0, cache_ref 0, then
     * the description (allreduce float32 sum, shape {3, 128}) and the value
     * -2 (zigzag 3); ERROR "k", rflags PSET, pset 2^24 (4 varint bytes),
     * TC_ERR_STATE, text "no"; RUN "v", rflags VALUE, ndim0 0, cache_ref 1,
     * value INT32_MIN (zigzag 2^32-1: 5 bytes); an empty cycle record */
    static const uint8_t cycle[] = {0x7C, 0x06, 0x02, 0x00, 0x03,             /* header */
                                    0x00, 0x01, 0x6A, 0x07, 0x05,             /* RUN "j" */
                                    0x00, 0x00,                               /* ndim0, cache_ref */
                                    0x00, 0x06, 0x00, 0x02, 0x03, 0x80, 0x01, /* desc */
                                    0x03,                                     /* value */
                                    0x01, 0x01, 0x6B, 0x04,                   /* ERROR "k" */
                                    0x80, 0x80, 0x80, 0x08,                   /* pset */
                                    0x02, 0x02, 0x6E, 0x6F,                   /* status, text */
                                    0x00, 0x01, 0x76, 0x02, 0x00, 0x01,       /* RUN "v" */
                                    0xFF, 0xFF, 0xFF, 0xFF, 0x0F,             /* value */
                                    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    static const int32_t ranks[] = {1, 2, 200};
    tc_wire_request_t r = {.kind = TC_KIND_JOIN,
                           .dtype = TC_INT32,
                           .op = TC_SUM,
                           .name = "j",
                           .name_len = 1,
                           .pset = 300,
                           .nranks = 3,
                           .ranks = ranks};
    tc_wire_response_t s[3] = {{.rtype = TC_WIRE_RUN,
                                .name = "j",
                                .name_len = 1,
                                .pset = 5,
                                .has_desc = 1,
                                .desc = {.kind = TC_KIND_ALLREDUCE,
                                         .dtype = TC_FLOAT32,
                                         .op = TC_SUM,
                                         .ndim = 2,
                                         .shape = {3, 128}},
                                .has_value = 1,
                                .value = -2},
                               {.rtype = TC_WIRE_ERROR,
                                .name = "k",
                                .name_len = 1,
                                .pset = TC_WIRE_MAX_PSET,
                                .status = TC_ERR_STATE,
                                .text = "no",
                                .text_len = 2},
                               {.rtype = TC_WIRE_RUN,
                                .name = "v",
                                .name_len = 1,
                                .cache_ref = 1,
                                .has_value = 1,
                                .value = INT32_MIN}};
    tc_wire_msg_t m = {.type = TC_WIRE_REQUESTS, .count = 1, .reqs = &r}, d;
    tc_wire_buf_t buf = {0};
    char err[128];

    CHECK_OK(tc__wire_encode(&m, &buf));
    CHECK_EQ(buf.len, sizeof(req));
    CHECK(memcmp(buf.data, req, sizeof(req)) == 0);
    CHECK_OK(tc__wire_decode(req, sizeof(req), &d, err, sizeof(err)));
    CHECK(d.count == 1 && d.reqs[0].kind == TC_KIND_JOIN && d.reqs[0].pset == 300);
    CHECK(d.reqs[0].nranks == 3 && d.reqs[0].ranks[0] == 1 && d.reqs[0].ranks[1] == 2 &&
          d.reqs[0].ranks[2] == 200);
    tc__wire_msg_free(&d);

    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = 3, .resps = s};
    buf.len = 0;
    CHECK_OK(tc__wire_encode(&m, &buf));
    CHECK_EQ(buf.len, sizeof(cycle));
    CHECK(memcmp(buf.data, cycle, sizeof(cycle)) == 0);
    CHECK_OK(tc__wire_decode(cycle, sizeof(cycle), &d, err, sizeof(err)));
    CHECK(d.count == 3 && d.resps[0].pset == 5 && d.resps[0].has_desc && d.resps[0].has_value);
    CHECK(d.resps[0].desc.kind == TC_KIND_ALLREDUCE && d.resps[0].desc.dtype == TC_FLOAT32 &&
          d.resps[0].desc.op == TC_SUM && d.resps[0].desc.ndim == 2);
    CHECK(d.resps[0].desc.shape[0] == 3 && d.resps[0].desc.shape[1] == 128);
    CHECK_EQ(d.resps[0].value, -2);
    CHECK(d.resps[1].rtype == TC_WIRE_ERROR && d.resps[1].pset == TC_WIRE_MAX_PSET);
    CHECK(d.resps[1].status == TC_ERR_STATE && d.resps[1].text_len == 2);
    CHECK(d.resps[2].pset == 0 && !d.resps[2].has_desc && d.resps[2].has_value);
    CHECK(d.resps[2].value == INT32_MIN && d.resps[2].cache_ref == 1);
    tc__wire_msg_free(&d);
    tc__wire_buf_free(&buf);
}

TC_CASE(requests_roundtrip)
{
    static const int64_t dims[] = {
        0, 1, 127, 128, 16383, 16384, (int64_t)1 << 32, INT64_MAX - 1, INT64_MAX};
    static const int32_t roots[] = {0, 1, -1, 63, -64, 64, INT32_MAX, INT32_MIN, INT32_MIN + 1};
    static char name_max[TC_MAX_NAME_LEN];
    static tc_wire_request_t reqs[TC_KIND_COUNT * (TC_UINT16 + 1) * 5];
    tc_wire_msg_t m = {0};
    uint32_t n = 0, i;
    int kind, dtype, op, ndim, flags;

    for (i = 0; i < TC_MAX_NAME_LEN; i++) {
        name_max[i] = (char)(uint8_t)(i % 3 == 0 ? 0xFF : 1 + i % 255);
    }
    /* every kind x dtype x op, ndim cycling 0..8, shapes and roots cycling */
    for (kind = 0; kind < TC_KIND_COUNT; kind++) {
        for (dtype = TC_UINT8; dtype <= TC_UINT16; dtype++) {
            for (op = TC_SUM; op <= TC_PROD; op++) {
                tc_wire_request_t *r = &reqs[n];
                memset(r, 0, sizeof(*r));
                r->kind = (uint8_t)kind;
                r->dtype = (uint8_t)dtype;
                r->op = (uint8_t)op;
                r->ndim = (uint8_t)(n % (TC_MAX_DIMS + 1));
                for (ndim = 0; ndim < r->ndim; ndim++) {
                    r->shape[ndim] = dims[(n + (uint32_t)ndim) % (sizeof(dims) / sizeof(dims[0]))];
                }
                r->root = roots[n % (sizeof(roots) / sizeof(roots[0]))];
                /* names: length 1 (0xFF or 0x01), the maximum, or in between */
                r->name = n % 5 == 0 ? "\xFF" : n % 5 == 1 ? "\x01" : name_max;
                r->name_len = n % 5 < 2 ? 1 : n % 5 == 2 ? TC_MAX_NAME_LEN : 1 + n * 7 % 300;
                n++;
            }
        }
    }
    CHECK_EQ(n, sizeof(reqs) / sizeof(reqs[0]));
    for (flags = 0; flags <= 1; flags++) {
        m = (tc_wire_msg_t){
            .type = TC_WIRE_REQUESTS, .flags = (uint8_t)flags, .count = n, .reqs = reqs};
        roundtrip(&m);
        m.count = 0; /* an empty batch, e.g. only the shutdown flag */
        roundtrip(&m);
        /* one at a time as well */
        m.count = 1;
        for (i = 0; i < n; i++) {
            m.reqs = &reqs[i];
            roundtrip(&m);
        }
    }
    /* every ndim with every shape value at the extremes */
    for (ndim = 0; ndim <= TC_MAX_DIMS; ndim++) {
        for (i = 0; i < sizeof(dims) / sizeof(dims[0]); i++) {
            tc_wire_request_t r = {.kind = TC_KIND_ALLGATHER,
                                   .dtype = TC_INT64,
                                   .op = TC_MAX,
                                   .ndim = (uint8_t)ndim,
                                   .root = INT32_MIN,
                                   .name = "t",
                                   .name_len = 1};
            int d;
            for (d = 0; d < ndim; d++) {
                r.shape[d] = dims[i];
            }
            m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .count = 1, .reqs = &r};
            roundtrip(&m);
        }
    }
}

/* Scaling factors: kept bit for bit (-0.0 too); factors of 1 are written
 * as none, and read back as none. */
TC_CASE(scales_roundtrip)
{
    tc_wire_request_t r[4];
    tc_wire_msg_t m = {.type = TC_WIRE_REQUESTS, .count = 4, .reqs = r};
    size_t plain, len;
    int i;

    for (i = 0; i < 4; i++) {
        r[i] = mk("s", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 3, 0);
    }
    m.count = 1;
    plain = roundtrip(&m);
    r[1].scaled = 1; /* both 1: the same bytes as none */
    r[1].prescale = 1.0;
    r[1].postscale = 1.0;
    r[2].scaled = 1;
    r[2].prescale = -0.0;
    r[2].postscale = 1e300;
    r[3].scaled = 1;
    r[3].prescale = 0.125;
    r[3].postscale = -3.5;
    m.reqs = &r[1];
    CHECK_EQ(roundtrip(&m), plain);
    m.reqs = r;
    m.count = 4;
    len = roundtrip(&m);
    CHECK_EQ(len, 4 * plain - 3 * 5 + 2 * 16); /* one 5-byte header; two with 16 bytes more */
    CHECK(!tc__wire_scales_equal(&r[0], &r[2]) && !tc__wire_scales_equal(&r[2], &r[3]));
    CHECK(tc__wire_scales_equal(&r[0], &r[1]));
    r[1].prescale = 0.0; /* ignored while scaled is 0 */
    r[1].scaled = 0;
    CHECK(tc__wire_scales_equal(&r[0], &r[1]));
    /* grouped, with and without factors: size, index and key travel */
    r[1].group_size = 2;
    r[1].group_index = 1;
    r[1].group_key = "first";
    r[1].group_key_len = 5;
    r[3].group_size = 1;
    r[3].group_key = "s";
    r[3].group_key_len = 1;
    CHECK_EQ(roundtrip(&m), len + (1 + 1 + 1 + 5) + (1 + 1 + 1 + 1));
    CHECK(!tc__wire_groups_equal(&r[0], &r[1]) && tc__wire_groups_equal(&r[0], &r[2]));
}

/* Where a tensor lives travels as one extras bit: a device tensor costs no
 * byte more than a host one, next to every other extra, and a memory the
 * format has no name for is refused by the encoder. */
TC_CASE(memory_roundtrip)
{
    tc_wire_request_t r[3];
    tc_wire_msg_t m = {.type = TC_WIRE_REQUESTS, .count = 1, .reqs = r};
    tc_wire_buf_t buf = {0};
    size_t plain, len;
    int i;

    for (i = 0; i < 3; i++) {
        r[i] = mk("dev", TC_KIND_ALLREDUCE, TC_FLOAT16, TC_SUM, 0, 1, 1024, 0);
    }
    plain = roundtrip(&m);
    r[0].memory = TC_WIRE_MEM_CUDA;
    CHECK_EQ(roundtrip(&m), plain);
    r[1].scaled = 1; /* with every other extra beside it */
    r[1].prescale = 0.5;
    r[1].postscale = 2.0;
    r[1].group_size = 2;
    r[1].group_key = "dev";
    r[1].group_key_len = 3;
    r[1].memory = TC_WIRE_MEM_CUDA;
    m.count = 3;
    len = roundtrip(&m);
    r[1].memory = TC_WIRE_MEM_HOST;
    CHECK_EQ(roundtrip(&m), len);
    r[2].memory = TC_WIRE_MEM_CUDA + 1;
    CHECK_EQ(tc__wire_encode(&m, &buf), TC_ERR_ARG);
    tc__wire_buf_free(&buf);
}

/* Process sets and rank lists on requests: every pset at the varint
 * boundaries and the ends of its range with every rank list (one rank at
 * either end of the range, neighbours, gaps on either side of the varint
 * byte limits, the widest gap, many), alone and beside scaling factors and a
 * group; and the bytes each takes. */
TC_CASE(pset_ranks_roundtrip)
{
    enum { NPSETS = 9, NLISTS = 9 };
    static const uint32_t psets[NPSETS] = {
        0, 1, 2, 127, 128, 16383, 16384, TC_WIRE_MAX_PSET - 1, TC_WIRE_MAX_PSET};
    static const int32_t one_zero[] = {0}, one_mid[] = {1000}, one_max[] = {TC_WIRE_MAX_RANKS - 1},
                         neighbours[] = {0, 1, 2, 3, 4},
                         gaps[] = {127, 255, 384, 16768, 16769, 33154},
                         ends[] = {0, TC_WIRE_MAX_RANKS - 1},
                         near_end[] = {TC_WIRE_MAX_RANKS - 3, TC_WIRE_MAX_RANKS - 2,
                                       TC_WIRE_MAX_RANKS - 1};
    static int32_t spread[1000];
    const int32_t *lists[NLISTS] = {NULL, one_zero, one_mid,  one_max, neighbours,
                                    gaps, ends,     near_end, spread};
    const uint32_t lens[NLISTS] = {0, 1, 1, 1, 5, 6, 2, 3, 1000};
    static tc_wire_request_t reqs[NPSETS * NLISTS];
    tc_wire_msg_t m;
    tc_wire_request_t r;
    uint32_t p, l, n = 0;
    size_t plain;

    for (l = 0; l < 1000; l++) {
        spread[l] = (int32_t)(l * 16777 + 5); /* the last is 16760228, below the limit */
    }
    for (p = 0; p < NPSETS; p++) {
        for (l = 0; l < NLISTS; l++, n++) {
            tc_wire_request_t *q = &reqs[n];
            *q = mk("pr", (int)(n % TC_KIND_COUNT), TC_FLOAT32, TC_SUM, 0, 1, 4, 0);
            q->pset = psets[p];
            q->nranks = lens[l];
            q->ranks = lists[l];
            if (n % 3 == 1) {
                q->scaled = 1;
                q->prescale = 0.5;
                q->postscale = 3.0;
            }
            if (n % 4 == 2) {
                q->group_size = 3;
                q->group_index = 2;
                q->group_key = "first";
                q->group_key_len = 5;
            }
            m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .count = 1, .reqs = q};
            roundtrip(&m);
        }
    }
    m = (tc_wire_msg_t){
        .type = TC_WIRE_REQUESTS, .flags = TC_WIRE_F_SHUTDOWN, .count = n, .reqs = reqs};
    roundtrip(&m);

    /* the sizes: a process set is its varint, a rank list its count and
     * then the first rank and each distance less one */
    r = mk("s", TC_KIND_JOIN, TC_INT32, TC_SUM, 0, 0, 0, 0);
    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .count = 1, .reqs = &r};
    plain = roundtrip(&m);
    r.ranks = gaps; /* without a count, no list: ignored */
    CHECK_EQ(roundtrip(&m), plain);
    r.pset = 1;
    CHECK_EQ(roundtrip(&m), plain + 1);
    r.pset = 128;
    CHECK_EQ(roundtrip(&m), plain + 2);
    r.pset = TC_WIRE_MAX_PSET; /* 2^24 takes 4 bytes */
    CHECK_EQ(roundtrip(&m), plain + 4);
    r.pset = 0;
    r.nranks = 1;
    r.ranks = one_zero;
    CHECK_EQ(roundtrip(&m), plain + 1 + 1);
    r.ranks = one_max; /* 2^24-1 takes 4 bytes */
    CHECK_EQ(roundtrip(&m), plain + 1 + 4);
    r.nranks = 2;
    r.ranks = ends; /* 0, then the distance 2^24-2 less one */
    CHECK_EQ(roundtrip(&m), plain + 1 + 1 + 4);
    r.nranks = 6;
    r.ranks = gaps; /* 127 (1 byte), then 127 (1), 128 (2), 16383 (2), 0 (1), 16384 (3) */
    CHECK_EQ(roundtrip(&m), plain + 1 + (1 + 1 + 2 + 2 + 1 + 3));
    r.nranks = 1000;
    r.ranks = spread; /* 5, then 999 distances of 16776 (3 bytes each); count 2 bytes */
    CHECK_EQ(roundtrip(&m), plain + 2 + 1 + 999 * 3);
    r.pset = 7; /* both: pset first, then the list */
    r.nranks = 3;
    r.ranks = neighbours;
    CHECK_EQ(roundtrip(&m), plain + 1 + 1 + 3);
}

TC_CASE(cycle_roundtrip)
{
    static int64_t dim0[5000];
    static char text_max[TC_WIRE_MAX_TEXT];
    tc_wire_response_t s[6];
    tc_wire_msg_t m;
    uint32_t i;
    int term;

    for (i = 0; i < 5000; i++) {
        dim0[i] = i % 7 == 0 ? INT64_MAX : (int64_t)i * 1000003;
    }
    for (i = 0; i < TC_WIRE_MAX_TEXT; i++) {
        text_max[i] = (char)(uint8_t)(1 + (i * 31) % 255);
    }
    memset(s, 0, sizeof(s));
    s[0] = (tc_wire_response_t){.rtype = TC_WIRE_RUN, .name = "grad/0", .name_len = 6};
    s[1] = (tc_wire_response_t){.rtype = TC_WIRE_RUN,
                                .name = "ag",
                                .name_len = 2,
                                .ndim0 = 5000,
                                .dim0 = dim0,
                                .cache_ref = TC_WIRE_MAX_CACHE};
    s[2] = (tc_wire_response_t){.rtype = TC_WIRE_ERROR,
                                .name = "bad",
                                .name_len = 3,
                                .status = TC_ERR_MISMATCH,
                                .text = "ranks 0,1 differ",
                                .text_len = 16,
                                .cache_ref = 5};
    s[3] = (tc_wire_response_t){.rtype = TC_WIRE_ERROR,
                                .name = "\xFF\xFE",
                                .name_len = 2,
                                .status = TC_ERR_ARG,
                                .text = NULL,
                                .text_len = 0};
    s[4] = (tc_wire_response_t){.rtype = TC_WIRE_ERROR,
                                .name = "e",
                                .name_len = 1,
                                .status = TC_ERR_TIMEOUT,
                                .text = "",
                                .text_len = 0};
    s[5] = (tc_wire_response_t){.rtype = TC_WIRE_ERROR,
                                .name = "long",
                                .name_len = 4,
                                .status = TC_ERR_TRANSPORT,
                                .text = text_max,
                                .text_len = TC_WIRE_MAX_TEXT};
    for (term = 0; term <= 1; term++) {
        m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = 6, .resps = s};
        if (term) {
            m.flags = TC_WIRE_F_TERMINATE;
            m.term_status = TC_ERR_SHUTDOWN;
            m.term_text = "rank 3 asked for shutdown";
            m.term_text_len = (uint32_t)strlen(m.term_text);
        }
        roundtrip(&m);
        for (i = 0; i < 6; i++) {
            m.count = 1;
            m.resps = &s[i];
            roundtrip(&m);
        }
        m.count = 0;
        roundtrip(&m);
        if (term) {
            /* terminate with an empty text (NULL and ""), and with the longest */
            m.term_text = NULL;
            m.term_text_len = 0;
            roundtrip(&m);
            m.term_text = "";
            roundtrip(&m);
            m.term_text = text_max;
            m.term_text_len = TC_WIRE_MAX_TEXT;
            m.term_status = TC_ERR_TIMEOUT;
            roundtrip(&m);
        }
    }
    /* RUN ignores status/text and ERROR ignores ndim0/dim0/cache_ref */
    s[0].status = 99;
    s[0].text_len = 99999;
    s[0].cache_ref = 1;
    s[2].ndim0 = 1u << 30;
    s[2].cache_ref = UINT32_MAX;
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = 3, .resps = s};
    {
        tc_wire_buf_t buf = {0};
        tc_wire_msg_t d;
        char err[128];
        CHECK_OK(tc__wire_encode(&m, &buf));
        CHECK_OK(tc__wire_decode(buf.data, buf.len, &d, err, sizeof(err)));
        CHECK_EQ(d.resps[0].status, 0);
        CHECK_EQ(d.resps[0].text_len, 0);
        CHECK(d.resps[0].text == NULL);
        CHECK_EQ(d.resps[0].cache_ref, 1);
        CHECK_EQ(d.resps[2].ndim0, 0);
        CHECK(d.resps[2].dim0 == NULL);
        CHECK_EQ(d.resps[2].cache_ref, 0);
        CHECK(d.resps[1].dim0 != NULL && d.resps[1].dim0[4999] == dim0[4999]);
        CHECK_EQ(d.resps[1].cache_ref, TC_WIRE_MAX_CACHE);
        tc__wire_msg_free(&d);
        tc__wire_buf_free(&buf);
    }
}

/* A RUN's description and value, and a process set on a RUN and an ERROR:
 * every kind x dtype x op as a description, shapes and values at the varint
 * boundaries and the ends of their ranges, beside dim0 and cache_ref; and
 * the bytes each takes. */
TC_CASE(desc_value_roundtrip)
{
    static const int32_t values[] = {
        0, -1, 1, 63, -64, 64, -65, INT32_MAX, INT32_MIN, INT32_MAX - 1, INT32_MIN + 1};
    static const int64_t dims[] = {
        0, 1, 127, 128, 16383, 16384, (int64_t)1 << 32, INT64_MAX - 1, INT64_MAX};
    static const uint32_t psets[] = {0, 1, 128, TC_WIRE_MAX_PSET};
    static const int64_t rows[] = {4, 0, INT64_MAX};
    enum { NVALUES = sizeof(values) / sizeof(values[0]), NDIMS = sizeof(dims) / sizeof(dims[0]) };
    static tc_wire_response_t s[TC_KIND_COUNT * (TC_UINT16 + 1) * (TC_PROD + 1)];
    tc_wire_response_t one, err;
    tc_wire_msg_t m;
    uint32_t n = 0, i;
    int kind, dtype, op, d;
    size_t bare, len;

    for (kind = 0; kind < TC_KIND_COUNT; kind++) {
        for (dtype = TC_UINT8; dtype <= TC_UINT16; dtype++) {
            for (op = TC_SUM; op <= TC_PROD; op++, n++) {
                tc_wire_response_t *r = &s[n];
                memset(r, 0, sizeof(*r));
                r->rtype = TC_WIRE_RUN;
                r->name = n % 2 ? "desc" : "\xFF";
                r->name_len = n % 2 ? 4 : 1;
                r->pset = psets[n % 4];
                r->has_desc = 1;
                r->desc.kind = (uint8_t)kind;
                r->desc.dtype = (uint8_t)dtype;
                r->desc.op = (uint8_t)op;
                r->desc.ndim = (uint8_t)(n % (TC_MAX_DIMS + 1));
                for (d = 0; d < r->desc.ndim; d++) {
                    r->desc.shape[d] = dims[(n + (uint32_t)d) % NDIMS];
                }
                r->has_value = n % 3 != 0;
                r->value = values[n % NVALUES];
                if (n % 5 == 0) {
                    r->ndim0 = 3;
                    r->dim0 = rows;
                    r->cache_ref = n % 2 ? TC_WIRE_MAX_CACHE : 1;
                }
            }
        }
    }
    CHECK_EQ(n, sizeof(s) / sizeof(s[0]));
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = n, .resps = s};
    roundtrip(&m);
    for (i = 0; i < n; i++) {
        m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = 1, .resps = &s[i]};
        roundtrip(&m);
    }
    /* every value alone, with and without a description */
    for (i = 0; i < 2 * NVALUES; i++) {
        one = (tc_wire_response_t){.rtype = TC_WIRE_RUN,
                                   .name = "v",
                                   .name_len = 1,
                                   .has_value = 1,
                                   .value = values[i % NVALUES],
                                   .has_desc = i >= NVALUES};
        m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = 1, .resps = &one};
        roundtrip(&m);
    }

    /* the sizes: a bare RUN of a 1-byte name takes 6 bytes */
    one = (tc_wire_response_t){.rtype = TC_WIRE_RUN, .name = "r", .name_len = 1};
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = 1, .resps = &one};
    bare = roundtrip(&m);
    CHECK_EQ(bare, 5 + 6 + 7);
    one.desc = s[3].desc; /* without has_desc: ignored */
    one.desc.kind = 255;
    one.value = 99; /* without has_value: ignored */
    CHECK_EQ(roundtrip(&m), bare);
    one.has_desc = 1; /* kind dtype op ndim, then no shape */
    one.desc = (tc_wire_desc_t){.kind = TC_KIND_JOIN, .dtype = TC_INT32, .op = TC_SUM};
    CHECK_EQ(roundtrip(&m), bare + 4);
    one.desc.ndim = TC_MAX_DIMS; /* 8 values of 2^63-1: 9 bytes each */
    for (d = 0; d < TC_MAX_DIMS; d++) {
        one.desc.shape[d] = INT64_MAX;
    }
    CHECK_EQ(roundtrip(&m), bare + 4 + TC_MAX_DIMS * 9);
    one.has_desc = 0xFF; /* any nonzero: set */
    CHECK_EQ(roundtrip(&m), bare + 4 + TC_MAX_DIMS * 9);
    one.has_desc = 0;
    one.has_value = 2; /* the same */
    one.value = -64;   /* zigzag 127: 1 byte */
    CHECK_EQ(roundtrip(&m), bare + 1);
    one.value = 64; /* zigzag 128: 2 bytes */
    CHECK_EQ(roundtrip(&m), bare + 2);
    one.value = INT32_MAX; /* zigzag 2^32-2: 5 bytes */
    CHECK_EQ(roundtrip(&m), bare + 5);
    one.value = INT32_MIN; /* zigzag 2^32-1 */
    CHECK_EQ(roundtrip(&m), bare + 5);
    one.has_value = 0;
    one.pset = 1;
    CHECK_EQ(roundtrip(&m), bare + 1);
    one.pset = TC_WIRE_MAX_PSET;
    CHECK_EQ(roundtrip(&m), bare + 4);

    /* an ERROR carries a process set, and ignores a description and a value
     * (however bad): the bytes are the same as without them */
    err = (tc_wire_response_t){.rtype = TC_WIRE_ERROR,
                               .name = "e",
                               .name_len = 1,
                               .status = TC_ERR_MISMATCH,
                               .text = "x",
                               .text_len = 1};
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = 1, .resps = &err};
    len = roundtrip(&m);
    CHECK_EQ(len, bare + 1); /* status and a 1-byte text */
    err.has_desc = 1;
    err.desc = (tc_wire_desc_t){.kind = 255, .dtype = 255, .op = 255, .ndim = 255, .shape = {-1}};
    err.has_value = 1;
    err.value = INT32_MIN;
    CHECK_EQ(roundtrip(&m), len);
    for (i = 1; i < sizeof(psets) / sizeof(psets[0]); i++) {
        err.pset = psets[i];
        CHECK_EQ(roundtrip(&m), len + (i == 1 ? 1 : i == 2 ? 2 : 4));
    }
    /* and both side by side, each with a process set */
    {
        tc_wire_response_t two[2];
        two[0] = s[7];
        two[0].pset = 3;
        two[1] = err;
        m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE,
                            .flags = TC_WIRE_F_TERMINATE,
                            .count = 2,
                            .resps = two,
                            .term_status = TC_ERR_SHUTDOWN};
        roundtrip(&m);
    }
}

int main(int argc, char **argv)
{
    return wire_test_main(argc, argv);
}
