/*
 * test_wire_records.c - unit test of the control-message codec (src/wire/wire_*.c):
 * the cycle record (seq, round, cache_gen, the ready, some and stale id
 * lists) and the eager record at the ends of their ranges, BYE, the cycle
 * fields that REQUESTS and BYE ignore, several messages appended in one
 * buffer, and counts far above the toy sizes (100000 entries, every cache id,
 * every rank in a rank list). Deterministic; needs no MPI.
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

/* The cycle record: seq and cache_gen at the varint boundaries, round at its
 * ends, and every pair of a few id lists as ready and stale (empty, each end
 * of the range, neighbours, distances on either side of the 1-byte varint
 * limit, spread over the whole range), with a third as some. */
TC_CASE(cycle_record_roundtrip)
{
    enum { NLISTS = 8 };
    static const uint64_t u64s[] = {
        0, 1, 127, 128, 16383, 16384, UINT32_MAX, (uint64_t)UINT32_MAX + 1, INT64_MAX, UINT64_MAX};
    static const uint32_t rounds[] = {0, 1, 5, TC_WIRE_MAX_ROUND - 1, TC_WIRE_MAX_ROUND};
    static const uint32_t one_zero[] = {0}, one_max[] = {TC_WIRE_MAX_CACHE - 1},
                          ends[] = {0, TC_WIRE_MAX_CACHE - 1},
                          near_end[] = {TC_WIRE_MAX_CACHE - 3, TC_WIRE_MAX_CACHE - 2,
                                        TC_WIRE_MAX_CACHE - 1},
                          gaps[] = {127, 255, 384, 16768, 16769, 33154};
    static uint32_t run[300], spread[300];
    const uint32_t *lists[NLISTS] = {NULL, one_zero, one_max, ends, near_end, gaps, run, spread};
    const uint32_t lens[NLISTS] = {0, 1, 1, 2, 3, 6, 300, 300};
    tc_wire_response_t s = {.rtype = TC_WIRE_RUN, .name = "c", .name_len = 1, .cache_ref = 42};
    tc_wire_msg_t m;
    uint32_t i, r, t, n = 0;

    for (i = 0; i < 300; i++) {
        run[i] = 1000 + i;
        spread[i] = i * 3495 + 7; /* the last is 1045012, below the limit */
    }
    for (r = 0; r < NLISTS; r++) {
        for (t = 0; t < NLISTS; t++, n++) {
            m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE,
                                .count = n % 2,
                                .resps = n % 2 ? &s : NULL,
                                .seq = u64s[n % 10],
                                .round = rounds[n % 5],
                                .cache_gen = u64s[(n * 3 + 1) % 10],
                                .nready = lens[r],
                                .ready = lists[r],
                                .nsome = lens[(r + t) % NLISTS],
                                .some = lists[(r + t) % NLISTS],
                                .nstale = lens[t],
                                .stale = lists[t]};
            if (n % 3 == 0) {
                m.flags = TC_WIRE_F_TERMINATE;
                m.term_status = TC_ERR_SHUTDOWN;
            }
            roundtrip(&m);
        }
    }
    /* a count of 0 with a non-NULL array is fine; it decodes to NULL */
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .ready = run, .some = gaps, .stale = spread};
    CHECK_EQ(roundtrip(&m), 12);
    /* the varint sizes: each distance is written, not the id */
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .nready = 300, .ready = run};
    CHECK_EQ(roundtrip(&m), 12 + 1 + 2 + 299); /* count 300 takes 2 bytes, id 1000 2 */
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .nsome = 300, .some = run};
    CHECK_EQ(roundtrip(&m), 12 + 1 + 2 + 299);
    /* and round is one byte up to its maximum */
    m.round = TC_WIRE_MAX_ROUND;
    CHECK_EQ(roundtrip(&m), 12 + 1 + 2 + 299);
}

/* The eager record: ids as in an id list (the ends of the range, neighbours,
 * distances on either side of the 1-byte varint limit), lengths at their ends
 * and varint boundaries, bytes of every value (0x00 included), alongside the
 * other parts of a CYCLE. */
TC_CASE(eager_roundtrip)
{
    enum { NSETS = 7 };
    static uint8_t bytes[TC_WIRE_MAX_EAGER];
    static tc_wire_eager_t one_zero[1], one_max[1], ends[2], near_end[3], gaps[6], many[300];
    static const uint32_t ready[] = {0, 5, 200}, some[] = {1, 5, 9, 300};
    static const uint32_t gap_ids[] = {127, 255, 384, 16768, 16769, 33154};
    static const uint32_t gap_lens[] = {1, 127, 128, 129, 16383, 16384};
    tc_wire_eager_t *sets[NSETS] = {NULL, one_zero, one_max, ends, near_end, gaps, many};
    const uint32_t lens[NSETS] = {0, 1, 1, 2, 3, 6, 300};
    tc_wire_response_t s = {.rtype = TC_WIRE_RUN, .name = "e", .name_len = 1, .cache_ref = 6};
    tc_wire_msg_t m;
    uint32_t i, k;

    for (i = 0; i < TC_WIRE_MAX_EAGER; i++) {
        bytes[i] = (uint8_t)(i * 131 + (i >> 8)); /* every value, 0x00 included */
    }
    one_zero[0] = (tc_wire_eager_t){0, 1, bytes};
    one_max[0] = (tc_wire_eager_t){TC_WIRE_MAX_CACHE - 1, TC_WIRE_MAX_EAGER, bytes};
    ends[0] = (tc_wire_eager_t){0, TC_WIRE_MAX_EAGER, bytes};
    ends[1] = (tc_wire_eager_t){TC_WIRE_MAX_CACHE - 1, 3, bytes + 1};
    for (i = 0; i < 3; i++) {
        near_end[i] = (tc_wire_eager_t){TC_WIRE_MAX_CACHE - 3 + i, 8 * (i + 1), bytes + i};
    }
    for (i = 0; i < 6; i++) {
        gaps[i] = (tc_wire_eager_t){gap_ids[i], gap_lens[i], bytes + 1000 * i + 7};
    }
    for (i = 0; i < 300; i++) {
        many[i] = (tc_wire_eager_t){i * 3495 + 7, 1 + i % 37, bytes + i * 61};
    }
    for (i = 0; i < NSETS; i++) {
        for (k = 0; k < 4; k++) {
            m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE,
                                .seq = i,
                                .cache_gen = k,
                                .neager = lens[i],
                                .eager = sets[i]};
            if (k & 1) {
                m.count = 1;
                m.resps = &s;
                m.round = k + i;
                m.nready = 3;
                m.ready = ready;
                m.nsome = 4;
                m.some = some;
                m.nstale = 1;
                m.stale = ready + 2;
            }
            if (k & 2) {
                m.flags = TC_WIRE_F_TERMINATE;
                m.term_status = TC_ERR_SHUTDOWN;
                m.term_text = "t";
                m.term_text_len = 1;
            }
            roundtrip(&m);
        }
    }
    /* a count of 0 with a non-NULL array is fine; it decodes to NULL */
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .eager = many};
    CHECK_EQ(roundtrip(&m), 12);
    /* the sizes (11 bytes before the eager record): count, the first id as
     * is, then distances; each len, then the bytes */
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .neager = 1, .eager = one_zero};
    CHECK_EQ(roundtrip(&m), 11 + 1 + 1 + 1 + 1);
    m.eager = one_max; /* id 2^20-1 and len 2^16 take 3 bytes each */
    CHECK_EQ(roundtrip(&m), 11 + 1 + 3 + 3 + TC_WIRE_MAX_EAGER);
    m.neager = 6;
    m.eager = gaps; /* ids: 127 (1 byte), then distances 127 (1), 128 (2), 16383 (2),
                     * 0 (1), 16384 (3); lens 1, 127 (1 byte each), 128, 129, 16383 (2
                     * each), 16384 (3) */
    CHECK_EQ(roundtrip(&m), 11 + 1 + (1 + 1 + 2 + 2 + 1 + 3) + (1 + 1 + 2 + 2 + 2 + 3) +
                                (1 + 127 + 128 + 129 + 16383 + 16384));
}

TC_CASE(bye_and_misc)
{
    tc_wire_msg_t m = {.type = TC_WIRE_BYE}, d;
    tc_wire_buf_t buf = {0};
    char err[64];
    size_t i, off[4], lens[4];

    rng_reset();

    CHECK_EQ(roundtrip(&m), 5);
    /* a decoded BYE owns nothing */
    CHECK_OK(tc__wire_encode(&m, &buf));
    CHECK_OK(tc__wire_decode(buf.data, buf.len, &d, err, sizeof(err)));
    CHECK(d.type == TC_WIRE_BYE && d.count == 0 && d.reqs == NULL && d.resps == NULL);
    CHECK(d.owned == NULL);
    tc__wire_msg_free(&d);

    /* REQUESTS and BYE carry no cycle record: whatever the cycle fields hold
     * (too many ids, NULL, unsorted, past the limit; eager inputs that are
     * too many, NULL, unsorted, empty, too long or without data, or valid
     * ones) is ignored on encode, and the bytes are the same as without it */
    {
        static const uint32_t bad[] = {9, 3, TC_WIRE_MAX_CACHE, 3};
        static const tc_wire_eager_t bad_eager[] = {{9, 1, "a"},  {3, 1, "b"},
                                                    {4, 0, "c"},  {5, TC_WIRE_MAX_EAGER + 1, "d"},
                                                    {6, 2, NULL}, {TC_WIRE_MAX_CACHE, 1, "f"}};
        static const tc_wire_eager_t good_eager[] = {{1, 2, "ab"}, {7, 1, "c"}};
        static const struct {
            uint32_t n;
            const tc_wire_eager_t *e;
        } eagers[] = {{UINT32_MAX, NULL},
                      {TC_WIRE_MAX_CACHE + 1, good_eager},
                      {3, NULL},
                      {6, bad_eager},
                      {2, good_eager}};
        tc_wire_request_t r = {.name = "q", .name_len = 1};
        tc_wire_msg_t with = {
            .seq = UINT64_MAX, .cache_gen = 7, .nready = UINT32_MAX, .nstale = 4, .stale = bad};
        tc_wire_msg_t without = {0};
        tc_wire_buf_t b2 = {0};
        size_t e;
        int t;
        for (t = 0; t < 2; t++) {
            for (e = 0; e < sizeof(eagers) / sizeof(eagers[0]); e++) {
                with.type = without.type = t == 0 ? TC_WIRE_BYE : TC_WIRE_REQUESTS;
                with.count = without.count = (uint32_t)t;
                with.reqs = without.reqs = t ? &r : NULL;
                with.neager = eagers[e].n;
                with.eager = eagers[e].e;
                buf.len = 0;
                b2.len = 0;
                CHECK_OK(tc__wire_encode(&with, &buf));
                CHECK_OK(tc__wire_encode(&without, &b2));
                CHECK(buf.len == b2.len && memcmp(buf.data, b2.data, buf.len) == 0);
                roundtrip(&with); /* checks that the decoded cycle fields are zero */
            }
        }
        tc__wire_buf_free(&b2);
    }

    /* free is safe on a zeroed struct and on NULL */
    memset(&d, 0, sizeof(d));
    tc__wire_msg_free(&d);
    tc__wire_msg_free(NULL);

    /* encode appends: several messages in one buffer, each slice decodes */
    buf.len = 0;
    for (i = 0; i < 4; i++) {
        off[i] = buf.len;
        CHECK_OK(tc__wire_encode(gen_msg(4, 0), &buf));
        lens[i] = buf.len - off[i];
        CHECK_LE(buf.len, buf.cap);
    }
    for (i = 0; i < 4; i++) {
        CHECK_OK(tc__wire_decode(buf.data + off[i], lens[i], &d, err, sizeof(err)));
        tc__wire_msg_free(&d);
    }
    /* growing by many appends keeps every byte */
    tc__wire_buf_free(&buf);
    for (i = 0; i < 20000; i++) {
        CHECK_OK(tc__wire_encode(&m, &buf));
    }
    CHECK_EQ(buf.len, 20000 * 5);
    CHECK_LE(buf.len, buf.cap);
    CHECK_LE(buf.cap, 2 * buf.len + 64);
    for (i = 0; i < buf.len; i += 5) {
        CHECK(buf.data[i] == TC_WIRE_MAGIC && buf.data[i + 2] == TC_WIRE_BYE);
    }
    tc__wire_buf_free(&buf);

    /* err may be NULL or tiny */
    {
        static const uint8_t bad[] = {0x7D};
        char tiny[8];
        CHECK_STATUS(tc__wire_decode(bad, 1, &d, NULL, 0), TC_ERR_TRANSPORT);
        CHECK_STATUS(tc__wire_decode(bad, 1, &d, tiny, 0), TC_ERR_TRANSPORT);
        CHECK_STATUS(tc__wire_decode(bad, 1, &d, tiny, 1), TC_ERR_TRANSPORT);
        CHECK_EQ(tiny[0], '\0');
        CHECK_STATUS(tc__wire_decode(bad, 1, &d, tiny, sizeof(tiny)), TC_ERR_TRANSPORT);
        CHECK_EQ(strlen(tiny), sizeof(tiny) - 1);
        CHECK_STATUS(tc__wire_decode(NULL, 0, &d, tiny, sizeof(tiny)), TC_ERR_TRANSPORT);
        CHECK_STATUS(tc__wire_decode(NULL, 5, &d, tiny, sizeof(tiny)), TC_ERR_TRANSPORT);
    }
}

/* Many entries: counts far above the toy sizes. */
TC_CASE(large)
{
    enum { N = 100000 };
    tc_wire_request_t *r = calloc(N, sizeof(*r));
    tc_wire_response_t *s = calloc(N, sizeof(*s));
    tc_wire_msg_t m;
    uint32_t i;
    size_t len;

    CHECK(r != NULL && s != NULL);
    for (i = 0; i < N; i++) {
        r[i].name = "n";
        r[i].name_len = 1;
        s[i].name = "n";
        s[i].name_len = 1;
        if (i % 2) { /* an ERROR with an empty text is as short as a bare RUN */
            s[i].rtype = TC_WIRE_ERROR;
            s[i].status = TC_ERR_ARG;
        }
    }
    /* these are the shortest entries there are, so they also show that the
     * decoder's bound on count (bytes left / fewest bytes an entry) is no
     * tighter than the format */
    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .count = N, .reqs = r};
    len = roundtrip(&m);
    CHECK_EQ(len, 4 + 3 + (size_t)N * 8); /* minimal requests: 8 bytes each */
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = N, .resps = s};
    len = roundtrip(&m);
    /* minimal responses: 6 bytes each (rtype, name, rflags, then ndim0 and
     * cache_ref or status and text); then a 7-byte cycle record */
    CHECK_EQ(len, 4 + 3 + (size_t)N * 6 + 7);
    m.flags = TC_WIRE_F_TERMINATE;
    m.term_status = TC_ERR_SHUTDOWN;
    len = roundtrip(&m);
    CHECK_EQ(len, 4 + 3 + (size_t)N * 6 + 7 + 2);
    free(r);
    free(s);

    /* the longest id lists: every cache id, in all three */
    {
        uint32_t *ids = malloc(TC_WIRE_MAX_CACHE * sizeof(*ids));
        CHECK(ids != NULL);
        for (i = 0; i < TC_WIRE_MAX_CACHE; i++) {
            ids[i] = i;
        }
        m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE,
                            .round = TC_WIRE_MAX_ROUND,
                            .nready = TC_WIRE_MAX_CACHE,
                            .ready = ids,
                            .nsome = TC_WIRE_MAX_CACHE,
                            .some = ids,
                            .nstale = TC_WIRE_MAX_CACHE,
                            .stale = ids};
        len = roundtrip(&m);
        /* seq, round, cache_gen; count 2^20 takes 3 bytes, then one byte an
         * id; then an eager count */
        CHECK_EQ(len, 4 + 1 + 3 + 3 * (3 + (size_t)TC_WIRE_MAX_CACHE) + 1);
        free(ids);
    }

    /* the longest rank list: every rank, one byte each after a 4-byte count;
     * so the decoder's bound on the rank count (bytes left) is no tighter
     * than the format */
    {
        int32_t *ranks = malloc((size_t)TC_WIRE_MAX_RANKS * sizeof(*ranks));
        tc_wire_request_t one = mk("all", TC_KIND_JOIN, TC_INT32, TC_SUM, 0, 0, 0, 0);
        CHECK(ranks != NULL);
        for (i = 0; i < TC_WIRE_MAX_RANKS; i++) {
            ranks[i] = (int32_t)i;
        }
        one.pset = TC_WIRE_MAX_PSET;
        one.nranks = TC_WIRE_MAX_RANKS;
        one.ranks = ranks;
        m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .count = 1, .reqs = &one};
        len = roundtrip(&m);
        /* header, the request's 10 bytes, pset and count 4 bytes each */
        CHECK_EQ(len, 4 + 1 + 10 + 4 + 4 + (size_t)TC_WIRE_MAX_RANKS);
        free(ranks);
    }

    /* the most eager inputs, each as short as one can be (3 bytes: distance,
     * len 1, the byte): so the decoder's bound on the eager count (bytes left
     * / 3) is no tighter than the format either */
    {
        tc_wire_eager_t *e = malloc(TC_WIRE_MAX_CACHE * sizeof(*e));
        static const uint8_t vals[] = {0x00, 0x5A, 0xFF};
        CHECK(e != NULL);
        for (i = 0; i < TC_WIRE_MAX_CACHE; i++) {
            e[i] = (tc_wire_eager_t){i, 1, &vals[i % 3]};
        }
        m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .neager = TC_WIRE_MAX_CACHE, .eager = e};
        len = roundtrip(&m);
        CHECK_EQ(len, 4 + 1 + 3 + 3 + 3 + 3 * (size_t)TC_WIRE_MAX_CACHE);
        free(e);
    }
}

int main(int argc, char **argv)
{
    return wire_test_main(argc, argv);
}
