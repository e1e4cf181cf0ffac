/*
 * gen_wire_corpus.c - writes the seed corpus for fuzz_wire: a handful of
 * valid control messages (format version 6), one per file, covering each
 * message type, each flag, each response type, the cycle record with and
 * without rounds, cache ids (ready, some, stale) and eager inputs, process
 * sets and rank lists on requests, process sets, descriptions and values on
 * responses, and the extremes of the value ranges.
 *
 * Usage: gen_wire_corpus DIR (DIR must exist; files in it are overwritten,
 * others are left: clear it first to drop seeds no longer written).
 * Build: cc -std=c11 -Iinclude -Isrc tests/fuzz/gen_wire_corpus.c src/wire/wire_encode.c \
 *          src/wire/wire_decode.c src/wire/wire_read.c src/wire/wire_kinds.c src/util/status.c src/util/log.c \
 *          -o gen_wire_corpus
 * Must never write outside DIR; the output is deterministic.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/status.h"
#include "wire/wire.h"

static int write_msg(const char *dir, const char *name, const tc_wire_msg_t *m)
{
    tc_wire_buf_t buf = {0};
    char path[4096];
    FILE *f;
    int rc = 1;

    if (tc__wire_encode(m, &buf) != TC_OK) {
        fprintf(stderr, "gen_wire_corpus: %s: %s\n", name, tc_last_error());
        goto out;
    }
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL) {
        perror(path);
        goto out;
    }
    if (fwrite(buf.data, 1, buf.len, f) != buf.len) {
        perror(path);
        fclose(f);
        goto out;
    }
    if (fclose(f) != 0) {
        perror(path);
        goto out;
    }
    rc = 0;
out:
    tc__wire_buf_free(&buf);
    return rc;
}

int main(int argc, char **argv)
{
    static char name_ff[64];
    static const int64_t rows[] = {0, 1, 127, 128, 1000000, INT64_MAX};
    /* neighbours, a distance of 127 and of 128 (the 1-byte varint limit), and
     * the largest id */
    static const uint32_t ready[] = {0, 1, 2, 130, 259, 70000, TC_WIRE_MAX_CACHE - 1};
    static const uint32_t stale[] = {3, 129};
    /* eager inputs for some of the ready ids: a float32 1.0, 8 bytes with
     * 0x00 among them, 130 bytes (a 2-byte len), 1 byte at the largest id */
    static const uint8_t one_f32[] = {0x00, 0x00, 0x80, 0x3F};
    static const uint8_t mixed[] = {0x00, 0xFF, 0x7C, 0x02, 0x80, 0x00, 0x01, 0x7F};
    static uint8_t ramp[130];
    static const uint8_t last[] = {0xA5};
    /* a process set's members: neighbours, distances of 127 and 128 (the
     * 1-byte varint limit), and the largest rank */
    static const int32_t members[] = {0, 1, 129, 258, 70000, TC_WIRE_MAX_RANKS - 1};
    tc_wire_eager_t eager[4];
    tc_wire_request_t reqs[4];
    tc_wire_response_t resps[3];
    tc_wire_msg_t m;
    size_t i;
    int rc = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    memset(name_ff, 0xFF, sizeof(name_ff));
    for (i = 0; i < sizeof(ramp); i++) {
        ramp[i] = (uint8_t)(i * 2);
    }

    m = (tc_wire_msg_t){.type = TC_WIRE_BYE};
    rc |= write_msg(argv[1], "bye", &m);

    m = (tc_wire_msg_t){.type = TC_WIRE_BYE,
                        .flags = TC_WIRE_F_TERMINATE,
                        .term_status = TC_ERR_TRANSPORT,
                        .term_text = "rank 3 lost",
                        .term_text_len = 11};
    rc |= write_msg(argv[1], "bye_abort", &m);

    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .flags = TC_WIRE_F_SHUTDOWN};
    rc |= write_msg(argv[1], "requests_shutdown_empty", &m);

    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .flags = TC_WIRE_F_SPREAD};
    rc |= write_msg(argv[1], "probe_spread", &m);

    m = (tc_wire_msg_t){
        .type = TC_WIRE_REQUESTS, .flags = TC_WIRE_F_SEQ | TC_WIRE_F_SHUTDOWN, .seq = 129};
    rc |= write_msg(argv[1], "requests_seq_shutdown", &m);

    /* a rank's part of a round from a group without rank 0 (no responses):
     * ids the group has everywhere (with partial results), ids some rank of
     * it has, ids found stale; then one with only a some list, at the
     * largest round */
    eager[0] = (tc_wire_eager_t){0, sizeof(one_f32), one_f32};
    eager[1] = (tc_wire_eager_t){130, sizeof(ramp), ramp};
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE,
                        .seq = 300,
                        .round = 3,
                        .cache_gen = 41,
                        .nready = 4,
                        .ready = ready,
                        .nsome = 2,
                        .some = ready + 4,
                        .nstale = 2,
                        .stale = stale,
                        .neager = 2,
                        .eager = eager};
    rc |= write_msg(argv[1], "cycle_round_some", &m);
    m = (tc_wire_msg_t){
        .type = TC_WIRE_CYCLE, .round = TC_WIRE_MAX_ROUND, .nsome = 1, .some = ready + 6};
    rc |= write_msg(argv[1], "cycle_some_only", &m);

    memset(reqs, 0, sizeof(reqs));
    reqs[0] = (tc_wire_request_t){.kind = TC_KIND_ALLREDUCE,
                                  .dtype = TC_FLOAT32,
                                  .op = TC_SUM,
                                  .ndim = 2,
                                  .shape = {1024, 3},
                                  .name = "layer1.weight.grad",
                                  .name_len = 18,
                                  .scaled = 1,
                                  .prescale = 0.125,
                                  .postscale = -2.0,
                                  .group_size = 2,
                                  .group_index = 1,
                                  .group_key = "layer1.bias.grad",
                                  .group_key_len = 16};
    reqs[1] = (tc_wire_request_t){.kind = TC_KIND_ALLGATHER,
                                  .dtype = TC_INT64,
                                  .op = TC_SUM,
                                  .ndim = 1,
                                  .shape = {17},
                                  .name = "ids",
                                  .name_len = 3};
    reqs[2] = (tc_wire_request_t){.kind = TC_KIND_BROADCAST,
                                  .dtype = TC_BFLOAT16,
                                  .op = TC_SUM,
                                  .root = 3,
                                  .ndim = 0,
                                  .name = "p",
                                  .name_len = 1};
    reqs[3] = (tc_wire_request_t){.kind = TC_KIND_ALLREDUCE,
                                  .dtype = TC_FLOAT16,
                                  .op = TC_MAX,
                                  .root = INT32_MIN,
                                  .ndim = TC_MAX_DIMS,
                                  .shape = {INT64_MAX, 0, 1, 128, 16384, 2, 3, 4},
                                  .name = name_ff,
                                  .name_len = sizeof(name_ff)};
    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .count = 3, .reqs = reqs};
    rc |= write_msg(argv[1], "requests_three", &m);
    m = (tc_wire_msg_t){
        .type = TC_WIRE_REQUESTS, .flags = TC_WIRE_F_SHUTDOWN, .count = 1, .reqs = &reqs[3]};
    rc |= write_msg(argv[1], "requests_extremes_shutdown", &m);

    memset(resps, 0, sizeof(resps));
    resps[0] = (tc_wire_response_t){
        .rtype = TC_WIRE_RUN, .name = "layer1.weight.grad", .name_len = 18, .cache_ref = 1};
    resps[1] = (tc_wire_response_t){.rtype = TC_WIRE_RUN,
                                    .name = "ids",
                                    .name_len = 3,
                                    .ndim0 = sizeof(rows) / sizeof(rows[0]),
                                    .dim0 = rows,
                                    .cache_ref = TC_WIRE_MAX_CACHE};
    resps[2] = (tc_wire_response_t){.rtype = TC_WIRE_ERROR,
                                    .name = "p",
                                    .name_len = 1,
                                    .status = TC_ERR_MISMATCH,
                                    .text = "rank 1: shape [3] vs rank 0: shape [4]",
                                    .text_len = 38};
    m = (tc_wire_msg_t){
        .type = TC_WIRE_CYCLE, .count = 3, .resps = resps, .seq = 41, .cache_gen = 2};
    rc |= write_msg(argv[1], "cycle_run_error", &m);
    m.seq = 300;
    m.round = 1;
    m.cache_gen = 17;
    m.nready = sizeof(ready) / sizeof(ready[0]);
    m.ready = ready;
    m.nsome = sizeof(stale) / sizeof(stale[0]);
    m.some = stale;
    m.nstale = sizeof(stale) / sizeof(stale[0]);
    m.stale = stale;
    m.flags = TC_WIRE_F_TERMINATE;
    m.term_status = TC_ERR_SHUTDOWN;
    m.term_text = "rank 2 called tc_shutdown";
    m.term_text_len = 25;
    rc |= write_msg(argv[1], "cycle_ids_terminate", &m);
    /* a message from a group without rank 0: no responses, only ids */
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE,
                        .seq = UINT64_MAX,
                        .round = TC_WIRE_MAX_ROUND,
                        .cache_gen = UINT64_MAX,
                        .nready = sizeof(ready) / sizeof(ready[0]),
                        .ready = ready};
    rc |= write_msg(argv[1], "cycle_ids_only", &m);
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE};
    rc |= write_msg(argv[1], "cycle_empty", &m);
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE,
                        .flags = TC_WIRE_F_TERMINATE,
                        .seq = 7,
                        .term_status = TC_ERR_TRANSPORT};
    rc |= write_msg(argv[1], "cycle_terminate_only", &m);
    /* a message with the partial results of its group's ready small
     * allreduces (ids 0, 2, 130 and the largest: as is, then distances 1, 127
     * and more), after a response and the id lists, before a terminate record */
    eager[0] = (tc_wire_eager_t){0, sizeof(one_f32), one_f32};
    eager[1] = (tc_wire_eager_t){2, sizeof(mixed), mixed};
    eager[2] = (tc_wire_eager_t){130, sizeof(ramp), ramp};
    eager[3] = (tc_wire_eager_t){TC_WIRE_MAX_CACHE - 1, sizeof(last), last};
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE,
                        .flags = TC_WIRE_F_TERMINATE,
                        .count = 1,
                        .resps = resps,
                        .seq = 1000,
                        .round = 10,
                        .cache_gen = 5,
                        .nready = sizeof(ready) / sizeof(ready[0]),
                        .ready = ready,
                        .nsome = 3,
                        .some = ready + 3,
                        .nstale = sizeof(stale) / sizeof(stale[0]),
                        .stale = stale,
                        .neager = 4,
                        .eager = eager,
                        .term_status = TC_ERR_SHUTDOWN,
                        .term_text = "x",
                        .term_text_len = 1};
    rc |= write_msg(argv[1], "cycle_eager", &m);

    /* requests in process sets: an allreduce in set 3 with its members, a
     * join in the largest set with one member (the largest rank), and a
     * grouped, scaled allreduce in set 128 (a 2-byte varint) */
    memset(reqs, 0, sizeof(reqs));
    reqs[0] = (tc_wire_request_t){.kind = TC_KIND_ALLREDUCE,
                                  .dtype = TC_FLOAT32,
                                  .op = TC_SUM,
                                  .ndim = 1,
                                  .shape = {4096},
                                  .name = "ps.grad",
                                  .name_len = 7,
                                  .pset = 3,
                                  .nranks = sizeof(members) / sizeof(members[0]),
                                  .ranks = members};
    reqs[1] = (tc_wire_request_t){.kind = TC_KIND_JOIN,
                                  .dtype = TC_INT32,
                                  .op = TC_SUM,
                                  .name = "tcoll/join/0",
                                  .name_len = 12,
                                  .pset = TC_WIRE_MAX_PSET,
                                  .nranks = 1,
                                  .ranks = members + 5};
    reqs[2] = (tc_wire_request_t){.kind = TC_KIND_ALLREDUCE,
                                  .dtype = TC_BFLOAT16,
                                  .op = TC_AVG,
                                  .ndim = 2,
                                  .shape = {128, 3},
                                  .name = "g.b",
                                  .name_len = 3,
                                  .scaled = 1,
                                  .prescale = 0.5,
                                  .postscale = 4.0,
                                  .group_size = 2,
                                  .group_index = 1,
                                  .group_key = "g.a",
                                  .group_key_len = 3,
                                  .pset = 128,
                                  .nranks = 2,
                                  .ranks = members + 1};
    m = (tc_wire_msg_t){
        .type = TC_WIRE_REQUESTS, .flags = TC_WIRE_F_SEQ, .count = 3, .reqs = reqs, .seq = 12};
    rc |= write_msg(argv[1], "requests_pset_ranks", &m);

    /* rank 0's answers while ranks have joined: an allreduce they run from
     * its description (in set 3), the join itself with the rank that joined
     * last, and an allgather that cannot run without the joined ranks (in
     * set 1); then a RUN with every rflags bit, at the ends of the ranges */
    memset(resps, 0, sizeof(resps));
    resps[0] = (tc_wire_response_t){.rtype = TC_WIRE_RUN,
                                    .name = "ps.grad",
                                    .name_len = 7,
                                    .pset = 3,
                                    .has_desc = 1,
                                    .desc = {.kind = TC_KIND_ALLREDUCE,
                                             .dtype = TC_FLOAT32,
                                             .op = TC_SUM,
                                             .ndim = 1,
                                             .shape = {4096}}};
    resps[1] = (tc_wire_response_t){
        .rtype = TC_WIRE_RUN, .name = "tcoll/join/0", .name_len = 12, .has_value = 1, .value = 3};
    resps[2] = (tc_wire_response_t){.rtype = TC_WIRE_ERROR,
                                    .name = "ids",
                                    .name_len = 3,
                                    .pset = 1,
                                    .status = TC_ERR_STATE,
                                    .text = "tensor 'ids': allgather cannot run while rank 2 "
                                            "has joined (tc_join)",
                                    .text_len = 68};
    m = (tc_wire_msg_t){
        .type = TC_WIRE_CYCLE, .count = 3, .resps = resps, .seq = 13, .cache_gen = 3};
    rc |= write_msg(argv[1], "cycle_join", &m);
    resps[0] = (tc_wire_response_t){.rtype = TC_WIRE_RUN,
                                    .name = name_ff,
                                    .name_len = sizeof(name_ff),
                                    .pset = TC_WIRE_MAX_PSET,
                                    .ndim0 = sizeof(rows) / sizeof(rows[0]),
                                    .dim0 = rows,
                                    .cache_ref = TC_WIRE_MAX_CACHE,
                                    .has_desc = 1,
                                    .desc = {.kind = TC_KIND_ALLGATHER,
                                             .dtype = TC_UINT16,
                                             .op = TC_PROD,
                                             .ndim = TC_MAX_DIMS,
                                             .shape = {INT64_MAX, 0, 1, 127, 128, 16384, 2, 3}},
                                    .has_value = 1,
                                    .value = INT32_MIN};
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE,
                        .flags = TC_WIRE_F_TERMINATE,
                        .count = 1,
                        .resps = resps,
                        .seq = 14,
                        .round = 2,
                        .nready = 1,
                        .ready = ready,
                        .term_status = TC_ERR_SHUTDOWN,
                        .term_text = "x",
                        .term_text_len = 1};
    rc |= write_msg(argv[1], "cycle_run_extremes", &m);
    return rc;
}
