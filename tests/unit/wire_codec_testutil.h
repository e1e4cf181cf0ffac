/*
 * wire_codec_testutil.h - what the codec's unit tests (test_wire_*.c) share:
 * the checks of a decoded message, round trips, rejections expected of the
 * decoder and of the encoder, every prefix and every byte change of an
 * encoding, seeded random valid messages (wire_gen.c) and a main that ends
 * with a summary line. The checks abort on a failure (check.h). The hand-made
 * malformed messages are in wire_malformed.h.
 */
#ifndef TC_TEST_WIRE_CODEC_TESTUTIL_H
#define TC_TEST_WIRE_CODEC_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"
#include "wire/wire.h"

/* A seeded generator (splitmix64). Every case that draws from it starts with
 * rng_reset(), so that it makes the same values alone (--case) as in a run
 * of every case. */
void rng_reset(void);
uint64_t rng(void);
uint32_t rng_below(uint32_t n);

/* Messages decoded so far, for the summary line. */
extern long n_checks;

/* Compares the fields a message carries on the wire. */
void check_same(const tc_wire_msg_t *a, const tc_wire_msg_t *b);

/* A decoded message (from len bytes at in) holds only what wire.h allows:
 * strings are NUL-terminated copies outside the input, lists strictly
 * ascending below their limits, and the fields its type or rtype does not
 * carry are zero. */
void check_decoded_storage(const tc_wire_msg_t *m, const void *in, size_t len);

/* decoded re-encodes, decodes to the same message and re-encodes to the same
 * bytes (the minimal form). */
void check_reencodes(const tc_wire_msg_t *decoded);

/* Encodes m, decodes it, checks the result; returns the encoded length. */
size_t roundtrip(const tc_wire_msg_t *m);

/* Decodes data; must fail with want, a one-line reason containing needle (if
 * not NULL), and leave the output untouched. */
void expect_reject_at(const void *data, size_t len, tc_status_t want, const char *needle, int line);
#define EXPECT_REJECT(data, len, needle)                                                           \
    expect_reject_at((data), (len), TC_ERR_TRANSPORT, (needle), __LINE__)

/* The encoder refuses m with TC_ERR_ARG and an error containing needle, and
 * leaves the buffer as it was. */
void expect_encode_reject_at(const tc_wire_msg_t *m, const char *needle, int line);
#define EXPECT_ENCODE_REJECT(m, needle) expect_encode_reject_at((m), (needle), __LINE__)

/* Encodes m into buf from its start. */
void encode_into(const tc_wire_msg_t *m, tc_wire_buf_t *buf);

/* Every proper prefix of a valid encoding is rejected. */
void check_prefixes(const uint8_t *data, size_t len);

/* Every single-byte change either fails cleanly or decodes to a message that
 * re-encodes; returns how many decoded. */
long check_corruptions(const uint8_t *data, size_t len, int every_value);

/* wire_gen.c: a random valid message of up to max_entries entries (it stays
 * valid until the next call); big allows names and texts of maximal length,
 * long dim0 arrays, rank lists and id lists. */
#define GEN_MAX_ENTRIES 12
const tc_wire_msg_t *gen_msg(unsigned max_entries, int big);

/* Runs the selected cases (tc_test.h), then prints "<program>: OK (<n>
 * decodes checked)"; returns 0 (a failure aborts before). */
int wire_test_main(int argc, char **argv);

#endif
