/*
 * test_wire_tree.c - the codec's version-3 additions for the negotiation
 * tree (src/wire/wire.h): UP messages with their `some` list, and the SPREAD
 * flag of a liveness probe. Round trips, exact bytes, and the malformed
 * inputs the decoder must reject with a reason.
 */
#include "check.h"
#include "tc_test.h"
#include "wire/wire.h"

TC_CASE(up_roundtrip)
{
    static const uint32_t ready[] = {0, 7}, some[] = {3, 9, 1000}, stale[] = {5};
    static const uint8_t in0[] = {1, 2, 3, 4};
    const tc_wire_eager_t eager[] = {{0, 4, in0}};
    tc_wire_msg_t m = {.type = TC_WIRE_UP, .seq = 17, .cache_gen = 4, .nready = 2,
                       .ready = ready, .nsome = 3, .some = some, .nstale = 1, .stale = stale,
                       .neager = 1, .eager = eager};
    tc_wire_buf_t buf = {0};
    tc_wire_msg_t d;
    char err[256];

    CHECK_OK(tc__wire_encode(&m, &buf));
    CHECK_OK(tc__wire_decode(buf.data, buf.len, &d, err, sizeof(err)));
    CHECK_EQ(d.type, TC_WIRE_UP);
    CHECK_EQ(d.seq, 17);
    CHECK_EQ(d.cache_gen, 4);
    CHECK_EQ(d.nready, 2);
    CHECK(d.ready[0] == 0 && d.ready[1] == 7);
    CHECK_EQ(d.nsome, 3);
    CHECK(d.some[0] == 3 && d.some[1] == 9 && d.some[2] == 1000);
    CHECK_EQ(d.nstale, 1);
    CHECK_EQ(d.stale[0], 5);
    CHECK_EQ(d.neager, 1);
    CHECK(d.eager[0].id == 0 && d.eager[0].len == 4 && memcmp(d.eager[0].data, in0, 4) == 0);
    tc__wire_msg_free(&d);
    tc__wire_buf_free(&buf);
}

/* The smallest UP, byte for byte: header, seq, generation, three empty id
 * lists, no eager inputs. */
/* A REQUESTS with SEQ: the sender's DOWN count after the entries. */
TC_CASE(requests_seq)
{
    static const uint8_t want[] = {0x7C, 0x03, 0x01, 0x09, 0x00, 0xAC, 0x02};
    tc_wire_msg_t m = {.type = TC_WIRE_REQUESTS, .flags = TC_WIRE_F_SEQ | TC_WIRE_F_SHUTDOWN,
                       .seq = 300};
    tc_wire_buf_t buf = {0};
    tc_wire_msg_t d;
    char err[256];

    CHECK_OK(tc__wire_encode(&m, &buf));
    CHECK_EQ(buf.len, sizeof(want));
    CHECK(memcmp(buf.data, want, sizeof(want)) == 0);
    CHECK_OK(tc__wire_decode(buf.data, buf.len, &d, err, sizeof(err)));
    CHECK_EQ(d.seq, 300);
    CHECK_EQ(d.flags, TC_WIRE_F_SEQ | TC_WIRE_F_SHUTDOWN);
    tc__wire_msg_free(&d);
    tc__wire_buf_free(&buf);
}

TC_CASE(up_and_probe_bytes)
{
    static const uint8_t want[] = {0x7C, 0x03, 0x04, 0x00, 0x00, 0x01, 0x02,
                                   0x00, 0x00, 0x00, 0x00};
    static const uint8_t probe[] = {0x7C, 0x03, 0x01, 0x04, 0x00};
    tc_wire_msg_t m = {.type = TC_WIRE_UP, .seq = 1, .cache_gen = 2};
    tc_wire_buf_t buf = {0};

    CHECK_OK(tc__wire_encode(&m, &buf));
    CHECK_EQ(buf.len, sizeof(want));
    CHECK(memcmp(buf.data, want, sizeof(want)) == 0);
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

TC_CASE(malformed_up_and_probe)
{
    static const bad_t cases[] = {
        {"UP with entries", {0x7C, 0x03, 0x04, 0x00, 0x01}, 5, "UP with count 1"},
        {"UP with a flag", {0x7C, 0x03, 0x04, 0x02, 0x00}, 5, "not allowed"},
        {"SPREAD on a CYCLE", {0x7C, 0x03, 0x02, 0x04, 0x00}, 5, "not allowed"},
        {"UP cut before its some list", {0x7C, 0x03, 0x04, 0x00, 0x00, 0x01, 0x02, 0x00}, 8,
         ""},
        {"UP some ids not ascending",
         {0x7C, 0x03, 0x04, 0x00, 0x00, 0x01, 0x02, 0x00, 0x02, 0x05, 0xFF, 0xFF, 0xFF, 0x7F,
          0x00, 0x00}, 16, "some id"},
        {"version 2", {0x7C, 0x02, 0x04, 0x00, 0x00}, 5, "unsupported version 2"},
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tc_wire_msg_t d;
        char err[256] = "";
        tc_status_t st = tc__wire_decode(cases[i].bytes, cases[i].len, &d, err, sizeof(err));
        CHECK_MSG(st == TC_ERR_TRANSPORT, "%s: decoded (status %d)", cases[i].what, (int)st);
        CHECK_MSG(strstr(err, cases[i].reason) != NULL, "%s: '%s' lacks '%s'", cases[i].what,
                  err, cases[i].reason);
    }
}

int main(int argc, char **argv)
{
    return tc_test_main(argc, argv, NULL);
}
