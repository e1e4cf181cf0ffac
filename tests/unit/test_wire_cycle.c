/*
 * test_wire_cycle.c - the codec's version-4 CYCLE message (src/wire/wire.h),
 * one rank's part of an exchange round of a negotiation cycle: its round, its
 * some list and its eager inputs together, beside responses, the ready and
 * stale lists and a terminate record; and the REQUESTS flags of the
 * negotiation (SEQ, and SPREAD for a liveness probe). Round trips, exact
 * bytes, the malformed inputs the decoder must reject with a reason, and the
 * messages the encoder must refuse. The other test_wire_*.c cover each field
 * alone.
 */
#include "check.h"
#include "tc_test.h"
#include "util/status.h"
#include "wire/wire.h"

/* A CYCLE with every part of the cycle record, at each round 0..the maximum:
 * what comes back is what went in. */
TC_CASE(cycle_roundtrip)
{
    static const uint32_t ready[] = {0, 7}, some[] = {0, 3, 7, 9, 1000, TC_WIRE_MAX_CACHE - 1},
                          stale[] = {5};
    static const uint8_t in0[] = {1, 2, 3, 4}, in7[] = {0x00, 0xFF};
    static const int64_t rows[] = {3, 0, 5};
    const tc_wire_eager_t eager[] = {{0, 4, in0}, {7, 2, in7}};
    tc_wire_response_t resp = {.rtype = TC_WIRE_RUN,
                               .name = "ag",
                               .name_len = 2,
                               .ndim0 = 3,
                               .dim0 = rows,
                               .cache_ref = 8};
    uint32_t round;

    for (round = 0; round <= TC_WIRE_MAX_ROUND; round++) {
        int with_resp = round % 2 == 1, with_term = round % 3 == 0;
        tc_wire_msg_t m = {.type = TC_WIRE_CYCLE,
                           .seq = 17 + round,
                           .round = round,
                           .cache_gen = 4,
                           .nready = 2,
                           .ready = ready,
                           .nsome = 6,
                           .some = some,
                           .nstale = 1,
                           .stale = stale,
                           .neager = 2,
                           .eager = eager};
        tc_wire_buf_t buf = {0};
        tc_wire_msg_t d;
        char err[256];

        if (with_resp) { /* from the group that holds rank 0 */
            m.count = 1;
            m.resps = &resp;
        }
        if (with_term) {
            m.flags = TC_WIRE_F_TERMINATE;
            m.term_status = TC_ERR_SHUTDOWN;
            m.term_text = "bye";
            m.term_text_len = 3;
        }
        CHECK_OK(tc__wire_encode(&m, &buf));
        CHECK_MSG(tc__wire_decode(buf.data, buf.len, &d, err, sizeof(err)) == TC_OK, "round %u: %s",
                  round, err);
        CHECK_EQ(d.type, TC_WIRE_CYCLE);
        CHECK_EQ(d.flags, m.flags);
        CHECK_EQ(d.count, m.count);
        if (with_resp) {
            CHECK(d.resps[0].rtype == TC_WIRE_RUN && d.resps[0].name_len == 2);
            CHECK(d.resps[0].ndim0 == 3 && d.resps[0].dim0[2] == 5);
            CHECK_EQ(d.resps[0].cache_ref, 8);
        }
        CHECK_EQ(d.seq, 17 + round);
        CHECK_EQ(d.round, round);
        CHECK_EQ(d.cache_gen, 4);
        CHECK_EQ(d.nready, 2);
        CHECK(d.ready[0] == 0 && d.ready[1] == 7);
        CHECK_EQ(d.nsome, 6);
        CHECK(memcmp(d.some, some, sizeof(some)) == 0);
        CHECK_EQ(d.nstale, 1);
        CHECK_EQ(d.stale[0], 5);
        CHECK_EQ(d.neager, 2);
        CHECK(d.eager[0].id == 0 && d.eager[0].len == 4 && memcmp(d.eager[0].data, in0, 4) == 0);
        CHECK(d.eager[1].id == 7 && d.eager[1].len == 2 && memcmp(d.eager[1].data, in7, 2) == 0);
        if (with_term) {
            CHECK(d.term_status == TC_ERR_SHUTDOWN && d.term_text_len == 3);
            CHECK(memcmp(d.term_text, "bye", 3) == 0);
        }
        tc__wire_msg_free(&d);
        tc__wire_buf_free(&buf);
    }
}

/* A REQUESTS with SEQ: the sender's count of completed negotiation cycles
 * after the entries. */
TC_CASE(requests_seq)
{
    static const uint8_t want[] = {0x7C, 0x06, 0x01, 0x09, 0x00, 0xAC, 0x02};
    tc_wire_msg_t m = {
        .type = TC_WIRE_REQUESTS, .flags = TC_WIRE_F_SEQ | TC_WIRE_F_SHUTDOWN, .seq = 300};
    tc_wire_buf_t buf = {0};
    tc_wire_msg_t d;
    char err[256];

    CHECK_OK(tc__wire_encode(&m, &buf));
    CHECK_EQ(buf.len, sizeof(want));
    CHECK(memcmp(buf.data, want, sizeof(want)) == 0);
    CHECK_OK(tc__wire_decode(buf.data, buf.len, &d, err, sizeof(err)));
    CHECK_EQ(d.seq, 300);
    CHECK_EQ(d.flags, TC_WIRE_F_SEQ | TC_WIRE_F_SHUTDOWN);
    CHECK(d.round == 0 && d.nsome == 0 && d.some == NULL);
    tc__wire_msg_free(&d);
    tc__wire_buf_free(&buf);
}

/* Exact bytes: a small CYCLE (no responses; seq 1, round 3, cache_gen 2,
 * ready {4}, some {6, 9} (6, then 9-6-1 = 2), no stale ids, one eager input
 * of 2 bytes for id 4), the same at the largest round, and a probe. */
TC_CASE(cycle_and_probe_bytes)
{
    static const uint8_t want[] = {0x7C, 0x06, 0x02, 0x00, 0x00,  /* header */
                                   0x01, 0x03, 0x02,              /* seq, round, cache_gen */
                                   0x01, 0x04,                    /* ready */
                                   0x02, 0x06, 0x02,              /* some */
                                   0x00,                          /* stale */
                                   0x01, 0x04, 0x02, 0xAB, 0xCD}; /* eager */
    static const uint8_t probe[] = {0x7C, 0x06, 0x01, 0x04, 0x00};
    static const uint32_t ready[] = {4}, some[] = {6, 9};
    static const uint8_t in4[] = {0xAB, 0xCD};
    const tc_wire_eager_t eager[] = {{4, 2, in4}};
    tc_wire_msg_t m = {.type = TC_WIRE_CYCLE,
                       .seq = 1,
                       .round = 3,
                       .cache_gen = 2,
                       .nready = 1,
                       .ready = ready,
                       .nsome = 2,
                       .some = some,
                       .neager = 1,
                       .eager = eager};
    tc_wire_buf_t buf = {0};

    CHECK_OK(tc__wire_encode(&m, &buf));
    CHECK_EQ(buf.len, sizeof(want));
    CHECK(memcmp(buf.data, want, sizeof(want)) == 0);
    buf.len = 0;
    m.round = TC_WIRE_MAX_ROUND; /* still one byte */
    CHECK_OK(tc__wire_encode(&m, &buf));
    CHECK_EQ(buf.len, sizeof(want));
    CHECK_EQ(buf.data[6], 0x40);
    CHECK(memcmp(buf.data, want, 6) == 0 && memcmp(buf.data + 7, want + 7, sizeof(want) - 7) == 0);
    buf.len = 0;
    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .flags = TC_WIRE_F_SPREAD};
    CHECK_OK(tc__wire_encode(&m, &buf));
    CHECK_EQ(buf.len, sizeof(probe));
    CHECK(memcmp(buf.data, probe, sizeof(probe)) == 0);
    tc__wire_buf_free(&buf);
}

typedef struct {
    const char *what;
    uint8_t bytes[16];
    size_t len;
    const char *reason; /* a part of the decoder's message */
} bad_t;

TC_CASE(malformed_cycle_and_probe)
{
    static const bad_t cases[] = {
        {"type 4 (version 3's UP)",
         {0x7C, 0x06, 0x04, 0x00, 0x00},
         5,
         "unknown message type 4 (byte 2)"},
        {"a version 3 UP",
         {0x7C, 0x03, 0x04, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00},
         11,
         "unsupported version 3, want 6"},
        {"a version 3 CYCLE",
         {0x7C, 0x03, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
         10,
         "unsupported version 3, want 6"},
        {"a version 5 CYCLE",
         {0x7C, 0x05, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
         12,
         "unsupported version 5, want 6 (byte 1)"},
        {"SPREAD on a CYCLE", {0x7C, 0x06, 0x02, 0x04, 0x00}, 5, "not allowed"},
        {"CYCLE round above the maximum",
         {0x7C, 0x06, 0x02, 0x00, 0x00, 0x00, 0x41, 0x00, 0x00, 0x00, 0x00, 0x00},
         12,
         "round 65 above 64 (byte 6)"},
        {"CYCLE cut inside its round",
         {0x7C, 0x06, 0x02, 0x00, 0x00, 0x00, 0xC0},
         7,
         "truncated reading round (byte 6)"},
        {"CYCLE cut before its some list",
         {0x7C, 0x06, 0x02, 0x00, 0x00, 0x01, 0x02, 0x03, 0x00},
         9,
         "truncated reading some count (byte 9)"},
        {"CYCLE some ids past the limit",
         {0x7C, 0x06, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x05, 0xFF, 0xFF, 0xFF, 0x7F,
          0x00},
         16,
         "some id 1: delta 268435455 after id 5"},
        {"CYCLE in the version 3 layout (no round, no some list)",
         {0x7C, 0x06, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
         10,
         "truncated reading stale count"},
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tc_wire_msg_t d;
        char err[256] = "";
        tc_status_t st = tc__wire_decode(cases[i].bytes, cases[i].len, &d, err, sizeof(err));
        CHECK_MSG(st == TC_ERR_TRANSPORT, "%s: decoded (status %d)", cases[i].what, (int)st);
        CHECK_MSG(strstr(err, cases[i].reason) != NULL, "%s: '%s' lacks '%s'", cases[i].what, err,
                  cases[i].reason);
    }
}

/* What the encoder refuses of the new fields: a round above the maximum, a
 * some list out of order, and either on a type other than CYCLE. */
TC_CASE(encode_rejects_cycle_fields)
{
    static const uint32_t unsorted[] = {1, 7, 3}, ok[] = {1, 3, 7};
    static const struct {
        tc_wire_msg_t m;
        const char *needle;
    } cases[] = {
        {{.type = TC_WIRE_CYCLE, .round = TC_WIRE_MAX_ROUND + 1}, "round 65 above 64"},
        {{.type = TC_WIRE_CYCLE, .nsome = 3, .some = unsorted},
         "some[2] = 3 not above some[1] = 7 (ids must be strictly ascending)"},
        {{.type = TC_WIRE_CYCLE, .nsome = 3}, "some is NULL with nsome 3"},
        {{.type = TC_WIRE_REQUESTS, .round = 2}, "round 2 not allowed on message type 1"},
        {{.type = TC_WIRE_REQUESTS, .nsome = 3, .some = ok},
         "some list (nsome 3) not allowed on message type 1"},
        {{.type = TC_WIRE_BYE, .round = 1}, "round 1 not allowed on message type 3"},
        {{.type = TC_WIRE_BYE,
          .flags = TC_WIRE_F_TERMINATE,
          .nsome = 1,
          .some = ok,
          .term_status = TC_ERR_SHUTDOWN},
         "some list (nsome 1) not allowed on message type 3"},
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tc_wire_buf_t buf = {0};
        tc__clear_error();
        CHECK_STATUS(tc__wire_encode(&cases[i].m, &buf), TC_ERR_ARG);
        CHECK(buf.len == 0);
        CHECK_MSG(strstr(tc_last_error(), cases[i].needle) != NULL, "case %zu: '%s' lacks '%s'", i,
                  tc_last_error(), cases[i].needle);
        tc__wire_buf_free(&buf);
    }
}

int main(int argc, char **argv)
{
    return tc_test_main(argc, argv, NULL);
}
