/*
 * test_wire_fuzz.c - unit test of the control-message codec (src/wire/wire_*.c)
 * with seeded random input: random valid messages round trip; every prefix
 * of valid messages, every single-byte change, trailing bytes and a few
 * hundred thousand random buffers are either rejected cleanly (status,
 * one-line reason, *msg_p untouched) or decode to a message that re-encodes
 * and decodes to the same thing. Build it with ASan/UBSan to catch
 * out-of-bounds reads. Deterministic (fixed seeds); takes a few seconds at
 * most; needs no MPI.
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

static long g_garbage_ok = -1; /* random buffers that decoded (-1: not run) */

TC_CASE(random_roundtrip)
{
    int i, with_eager = 0, with_max = 0, ignored_eager = 0, with_some = 0, with_max_round = 0;
    int with_pset = 0, with_ranks = 0, with_max_rank = 0, with_desc = 0, with_value = 0;
    int ignored_desc = 0;
    uint32_t j;

    rng_reset();

    for (i = 0; i < 3000; i++) {
        const tc_wire_msg_t *m = gen_msg(GEN_MAX_ENTRIES, i % 4 == 0);
        if (m->type == TC_WIRE_CYCLE && m->neager > 0) {
            with_eager++;
            for (j = 0; j < m->neager; j++) {
                with_max += m->eager[j].len == TC_WIRE_MAX_EAGER;
            }
        } else if (m->type != TC_WIRE_CYCLE && m->neager > 0) {
            ignored_eager++;
        }
        if (m->type == TC_WIRE_CYCLE) {
            with_some += m->nsome > 0;
            with_max_round += m->round == TC_WIRE_MAX_ROUND;
        }
        for (j = 0; j < m->count && m->type == TC_WIRE_REQUESTS; j++) {
            const tc_wire_request_t *r = &m->reqs[j];
            with_pset += r->pset > 0;
            with_ranks += r->nranks > 0;
            with_max_rank += r->nranks > 0 && r->ranks[r->nranks - 1] == TC_WIRE_MAX_RANKS - 1;
        }
        for (j = 0; j < m->count && m->type == TC_WIRE_CYCLE; j++) {
            const tc_wire_response_t *r = &m->resps[j];
            with_pset += r->pset > 0;
            with_desc += r->rtype == TC_WIRE_RUN && r->has_desc;
            with_value += r->rtype == TC_WIRE_RUN && r->has_value;
            ignored_desc += r->rtype == TC_WIRE_ERROR && r->has_desc;
        }
        roundtrip(m);
    }
    /* the generator does make what it is meant to */
    CHECK_GT(with_eager, 300);
    CHECK_GT(with_max, 0);
    CHECK_GT(ignored_eager, 0);
    CHECK_GT(with_some, 300);
    CHECK_GT(with_max_round, 0);
    CHECK_GT(with_pset, 1000);
    CHECK_GT(with_ranks, 1000);
    CHECK_GT(with_max_rank, 0);
    CHECK_GT(with_desc, 500);
    CHECK_GT(with_value, 500);
    CHECK_GT(ignored_desc, 0);
}

TC_CASE(truncation_and_corruption)
{
    tc_wire_buf_t buf = {0};
    tc_wire_msg_t m = {.type = TC_WIRE_BYE};
    uint8_t *trailing;
    int i;
    long accepted = 0;

    rng_reset();

    encode_into(&m, &buf);
    check_prefixes(buf.data, buf.len);
    accepted += check_corruptions(buf.data, buf.len, 1);

    for (i = 0; i < 24; i++) {
        int big = i % 6 == 5;
        encode_into(gen_msg(big ? GEN_MAX_ENTRIES : 3, big), &buf);
        check_prefixes(buf.data, buf.len);
        /* every value at each byte for small messages, bit flips for big ones */
        accepted += check_corruptions(buf.data, buf.len, buf.len <= 200);

        /* trailing bytes: one, a zero, a whole second message */
        trailing = malloc(buf.len * 2 + 1);
        CHECK(trailing != NULL);
        memcpy(trailing, buf.data, buf.len);
        trailing[buf.len] = 0;
        EXPECT_REJECT(trailing, buf.len + 1, "trailing");
        memcpy(trailing + buf.len, buf.data, buf.len);
        EXPECT_REJECT(trailing, buf.len * 2, "trailing");
        free(trailing);
    }
    CHECK_GT(accepted, 0); /* some changes (a name byte, a dim) stay valid */
    tc__wire_buf_free(&buf);
}

/* Every prefix and every single-byte change of messages with eager inputs. */
TC_CASE(eager_prefixes_and_corruptions)
{
    static const uint8_t vals[] = {0x00, 0xFF, 0x7C, 0x80};
    static const tc_wire_eager_t ents[] = {
        {0, 1, vals}, {1, 4, vals}, {300, 2, vals + 2}, {TC_WIRE_MAX_CACHE - 1, 3, vals + 1}};
    tc_wire_response_t s = {.rtype = TC_WIRE_RUN, .name = "r", .name_len = 1, .cache_ref = 2};
    static const uint32_t ready[] = {1, 300};
    tc_wire_msg_t m = {.type = TC_WIRE_CYCLE,
                       .count = 1,
                       .resps = &s,
                       .seq = 9,
                       .nready = 2,
                       .ready = ready,
                       .neager = 4,
                       .eager = ents};
    tc_wire_buf_t buf = {0};
    int i;

    for (i = 0; i < 2; i++) {
        if (i) {
            m.flags = TC_WIRE_F_TERMINATE;
            m.term_status = TC_ERR_SHUTDOWN;
            m.term_text = "t";
            m.term_text_len = 1;
        }
        encode_into(&m, &buf);
        check_prefixes(buf.data, buf.len);
        check_corruptions(buf.data, buf.len, 1);
    }
    tc__wire_buf_free(&buf);
}

/* Every prefix and every single-byte change of messages with version 6's
 * fields: a request with every extra, RUNs with every rflags bit, an ERROR
 * with a process set. */
TC_CASE(v6_prefixes_and_corruptions)
{
    static const int32_t ranks[] = {0, 2, 130, TC_WIRE_MAX_RANKS - 1};
    static const int64_t rows[] = {2, 3};
    tc_wire_request_t r[2];
    tc_wire_response_t s[3];
    tc_wire_msg_t m;
    tc_wire_buf_t buf = {0};
    long accepted = 0;

    rng_reset();

    r[0] = mk("rq", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_MAX, 0, 2, 3, 129);
    r[0].scaled = 1;
    r[0].prescale = 2.0;
    r[0].postscale = 0.5;
    r[0].group_size = 2;
    r[0].group_key = "rq";
    r[0].group_key_len = 2;
    r[0].pset = 200;
    r[0].nranks = 4;
    r[0].ranks = ranks;
    r[1] = mk("j", TC_KIND_JOIN, TC_INT32, TC_SUM, 0, 0, 0, 0);
    r[1].pset = TC_WIRE_MAX_PSET;
    r[1].nranks = 1;
    r[1].ranks = ranks + 3;
    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .count = 2, .reqs = r};
    encode_into(&m, &buf);
    check_prefixes(buf.data, buf.len);
    accepted += check_corruptions(buf.data, buf.len, 1);

    memset(s, 0, sizeof(s));
    s[0] = (tc_wire_response_t){.rtype = TC_WIRE_RUN,
                                .name = "rq",
                                .name_len = 2,
                                .pset = 200,
                                .ndim0 = 2,
                                .dim0 = rows,
                                .cache_ref = 4,
                                .has_desc = 1,
                                .desc = {.kind = TC_KIND_ALLREDUCE,
                                         .dtype = TC_FLOAT32,
                                         .op = TC_MAX,
                                         .ndim = 2,
                                         .shape = {3, 129}},
                                .has_value = 1,
                                .value = -300};
    s[1] = (tc_wire_response_t){
        .rtype = TC_WIRE_RUN, .name = "j", .name_len = 1, .has_value = 1, .value = INT32_MIN};
    s[2] = (tc_wire_response_t){.rtype = TC_WIRE_ERROR,
                                .name = "e",
                                .name_len = 1,
                                .pset = 1,
                                .status = TC_ERR_STATE,
                                .text = "joined",
                                .text_len = 6};
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE,
                        .flags = TC_WIRE_F_TERMINATE,
                        .count = 3,
                        .resps = s,
                        .seq = 5,
                        .term_status = TC_ERR_SHUTDOWN};
    encode_into(&m, &buf);
    check_prefixes(buf.data, buf.len);
    accepted += check_corruptions(buf.data, buf.len, 1);
    CHECK_GT(accepted, 0);
    tc__wire_buf_free(&buf);
}

/* Seeded random buffers: the decoder must never crash; what it accepts must
 * re-encode. Most buffers start with a plausible header and hold small byte
 * values so they get past the first checks. */
static long check_garbage(long n)
{
    uint8_t data[64];
    long i, accepted = 0;

    for (i = 0; i < n; i++) {
        size_t len = rng_below(sizeof(data) + 1), j;
        uint64_t bits = rng();
        tc_wire_msg_t d;
        char err[160];

        for (j = 0; j < len; j++) {
            uint64_t r = rng();
            switch (r & 3) {
            case 0: data[j] = (uint8_t)(r >> 8); break;
            case 1: data[j] = (uint8_t)((r >> 8) % 4); break;
            default: data[j] = (uint8_t)((r >> 8) % 10); break;
            }
        }
        if ((bits & 3) != 0 && len >= 5) {
            data[0] = TC_WIRE_MAGIC;
            data[1] = TC_WIRE_VERSION;
            data[2] = (uint8_t)(1 + (bits >> 2) % 3);
            data[3] = (uint8_t)((bits >> 4) % 3);
            data[4] = (uint8_t)((bits >> 8) % 4);
            if (data[2] == TC_WIRE_BYE) {
                data[3] = 0;
                data[4] = 0;
            }
        }
        /* an exact-size heap copy so ASan catches a read past the end */
        {
            uint8_t *copy = malloc(len > 0 ? len : 1);
            tc_status_t st;
            CHECK(copy != NULL);
            memcpy(copy, data, len);
            st = tc__wire_decode(copy, len, &d, err, sizeof(err));
            n_checks++;
            if (st == TC_OK) {
                check_decoded_storage(&d, copy, len);
                check_reencodes(&d);
                tc__wire_msg_free(&d);
                accepted++;
            } else {
                CHECK_EQ(st, TC_ERR_TRANSPORT);
                CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
            }
            free(copy);
        }
    }
    return accepted;
}

/* Seeded random buffers (see check_garbage). */
TC_CASE(garbage)
{
    rng_reset();

    g_garbage_ok = check_garbage(300000);
    CHECK_GT(g_garbage_ok, 0);
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    if (g_garbage_ok >= 0) {
        printf("test_wire_fuzz: OK (%ld decodes checked, %ld of 300000 random buffers were "
               "valid)\n",
               n_checks, g_garbage_ok);
    } else {
        printf("test_wire_fuzz: OK (%ld decodes checked)\n", n_checks);
    }
    return 0;
}
