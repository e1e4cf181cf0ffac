/*
 * test_wire.c - unit test of the control-message codec (src/wire/wire_*.c).
 *
 * Checks round trips of every message type and field range (the cycle record,
 * its id lists and its eager record included), pins a few exact
 * encodings so the format cannot drift from wire.h, and throws malformed input
 * at the decoder: every prefix of valid messages, every single-byte change,
 * trailing bytes, one hand-made message per rule the decoder enforces, and a
 * few hundred thousand seeded random buffers. The decoder must reject cleanly
 * (status, one-line reason, *msg_p untouched) or produce a message that
 * re-encodes and decodes to the same thing. Build it with ASan/UBSan to catch
 * out-of-bounds reads. Deterministic (fixed seeds); must never need MPI or
 * take more than a few seconds.
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
#include "wire_testutil.h"

/* check.h names the rank through tc_rank(); a program linked without the
 * engine gets this one. The library's definition wins where it is linked. */
__attribute__((weak)) int tc_rank(void)
{
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

#define RNG_SEED 0x5EEDC0DE12345678ull

/* Every case that draws from it starts from RNG_SEED, so that it makes the
 * same messages alone (--case) as in a run of every case. */
static uint64_t rng_state = RNG_SEED;

static uint64_t rng(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint32_t rng_below(uint32_t n)
{
    return (uint32_t)(rng() % n);
}

static long n_checks;           /* messages decoded, for the summary line */
static long g_garbage_ok = -1; /* random buffers that decoded (-1: not run) */

/* Compares the fields a message carries on the wire (checks abort on a difference). */
static void check_same(const tc_wire_msg_t *a, const tc_wire_msg_t *b)
{
    uint32_t i, j;

    CHECK_EQ(a->type, b->type);
    CHECK_EQ(a->flags, b->flags);
    CHECK_EQ(a->count, b->count);
    for (i = 0; i < a->count && a->type == TC_WIRE_REQUESTS; i++) {
        const tc_wire_request_t *x = &a->reqs[i], *y = &b->reqs[i];
        CHECK_EQ(x->kind, y->kind);
        CHECK_EQ(x->dtype, y->dtype);
        CHECK_EQ(x->op, y->op);
        CHECK_EQ(x->root, y->root);
        CHECK_EQ(x->ndim, y->ndim);
        for (j = 0; j < x->ndim; j++) {
            CHECK_EQ(x->shape[j], y->shape[j]);
        }
        CHECK_EQ(x->name_len, y->name_len);
        CHECK(memcmp(x->name, y->name, x->name_len) == 0);
        CHECK(tc__wire_scales_equal(x, y));
        CHECK(tc__wire_groups_equal(x, y));
        CHECK_EQ(x->pset, y->pset);
        CHECK_EQ(x->nranks, y->nranks);
        for (j = 0; j < x->nranks; j++) {
            CHECK_MSG(x->ranks[j] == y->ranks[j], "request %" PRIu32 ": rank %" PRIu32
                      ": %" PRId32 " vs %" PRId32, i, j, x->ranks[j], y->ranks[j]);
        }
    }
    for (i = 0; i < a->count && a->type == TC_WIRE_CYCLE; i++) {
        const tc_wire_response_t *x = &a->resps[i], *y = &b->resps[i];
        CHECK_EQ(x->rtype, y->rtype);
        CHECK_EQ(x->name_len, y->name_len);
        CHECK(memcmp(x->name, y->name, x->name_len) == 0);
        CHECK_EQ(x->pset, y->pset);
        if (x->rtype == TC_WIRE_RUN) {
            CHECK_EQ(x->ndim0, y->ndim0);
            for (j = 0; j < x->ndim0; j++) {
                CHECK_EQ(x->dim0[j], y->dim0[j]);
            }
            CHECK_EQ(x->cache_ref, y->cache_ref);
            /* any nonzero has_desc or has_value says "set" */
            CHECK_EQ(x->has_desc != 0, y->has_desc != 0);
            if (x->has_desc) {
                CHECK_EQ(x->desc.kind, y->desc.kind);
                CHECK_EQ(x->desc.dtype, y->desc.dtype);
                CHECK_EQ(x->desc.op, y->desc.op);
                CHECK_EQ(x->desc.ndim, y->desc.ndim);
                for (j = 0; j < x->desc.ndim; j++) {
                    CHECK_EQ(x->desc.shape[j], y->desc.shape[j]);
                }
            }
            CHECK_EQ(x->has_value != 0, y->has_value != 0);
            if (x->has_value) {
                CHECK_EQ(x->value, y->value);
            }
        } else {
            CHECK_EQ(x->status, y->status);
            CHECK_EQ(x->text_len, y->text_len);
            CHECK(x->text_len == 0 || memcmp(x->text, y->text, x->text_len) == 0);
        }
    }
    if (a->type == TC_WIRE_CYCLE) {
        CHECK_MSG(a->seq == b->seq, "seq %" PRIu64 " vs %" PRIu64, a->seq, b->seq);
        CHECK_EQ(a->round, b->round);
        CHECK_MSG(a->cache_gen == b->cache_gen, "cache_gen %" PRIu64 " vs %" PRIu64,
                  a->cache_gen, b->cache_gen);
        CHECK_EQ(a->nready, b->nready);
        for (j = 0; j < a->nready; j++) {
            CHECK_EQ(a->ready[j], b->ready[j]);
        }
        CHECK_EQ(a->nsome, b->nsome);
        for (j = 0; j < a->nsome; j++) {
            CHECK_EQ(a->some[j], b->some[j]);
        }
        CHECK_EQ(a->nstale, b->nstale);
        for (j = 0; j < a->nstale; j++) {
            CHECK_EQ(a->stale[j], b->stale[j]);
        }
        CHECK_EQ(a->neager, b->neager);
        for (j = 0; j < a->neager; j++) {
            const tc_wire_eager_t *x = &a->eager[j], *y = &b->eager[j];
            CHECK_MSG(x->id == y->id, "eager %" PRIu32 ": id %" PRIu32 " vs %" PRIu32, j, x->id,
                      y->id);
            CHECK_MSG(x->len == y->len, "eager %" PRIu32 ": len %" PRIu32 " vs %" PRIu32, j,
                      x->len, y->len);
            CHECK_MSG(memcmp(x->data, y->data, x->len) == 0, "eager %" PRIu32 ": bytes differ",
                      j);
        }
    }
    if (a->flags & TC_WIRE_F_TERMINATE) {
        CHECK_EQ(a->term_status, b->term_status);
        CHECK_EQ(a->term_text_len, b->term_text_len);
        CHECK(a->term_text_len == 0 || memcmp(a->term_text, b->term_text, a->term_text_len) == 0);
    }
}

static int points_into(const void *p, const void *base, size_t len)
{
    const uint8_t *q = p, *b = base;
    return p != NULL && q >= b && q < b + len;
}

/* Whether [p, p + n) and [base, base + len) share a byte. */
static int overlaps(const void *p, size_t n, const void *base, size_t len)
{
    uintptr_t q = (uintptr_t)p, b = (uintptr_t)base;
    return p != NULL && n > 0 && len > 0 && q < b + len && b < q + n;
}

/* A decoded eager record: NULL when empty, else an array outside the input
 * whose ids are strictly ascending below the limit, each len 1..TC_WIRE_MAX_EAGER
 * bytes at an 8-aligned copy outside the input. */
static void check_decoded_eager(uint32_t n, const tc_wire_eager_t *ents, const void *in,
                                size_t len)
{
    uint32_t j;

    CHECK_LE(n, TC_WIRE_MAX_CACHE);
    CHECK(n == 0 ? ents == NULL : ents != NULL && !overlaps(ents, n * sizeof(*ents), in, len));
    for (j = 0; j < n; j++) {
        const tc_wire_eager_t *e = &ents[j];
        CHECK_LT(e->id, TC_WIRE_MAX_CACHE);
        CHECK(j == 0 || e->id > ents[j - 1].id);
        CHECK(e->len >= 1 && e->len <= TC_WIRE_MAX_EAGER);
        CHECK(e->data != NULL);
        CHECK_MSG(!overlaps(e->data, e->len, in, len), "eager %" PRIu32 ": data in the input", j);
        CHECK_MSG((uintptr_t)e->data % 8 == 0, "eager %" PRIu32 ": data %p not 8-aligned", j,
                  e->data);
    }
}

/* A decoded id list: NULL when empty, else outside the input, strictly
 * ascending and below the limit. */
static void check_decoded_ids(uint32_t n, const uint32_t *ids, const void *in, size_t len)
{
    uint32_t j;

    CHECK_LE(n, TC_WIRE_MAX_CACHE);
    CHECK(n == 0 ? ids == NULL : ids != NULL && !points_into(ids, in, len));
    for (j = 0; j < n; j++) {
        CHECK_LT(ids[j], TC_WIRE_MAX_CACHE);
        CHECK(j == 0 || ids[j] > ids[j - 1]);
    }
}

/* A response's description as the decoder leaves it when it has none. */
static int desc_is_zero(const tc_wire_desc_t *d)
{
    int k;

    for (k = 0; k < TC_MAX_DIMS; k++) {
        if (d->shape[k] != 0) {
            return 0;
        }
    }
    return d->kind == 0 && d->dtype == 0 && d->op == 0 && d->ndim == 0;
}

/* A decoded message: strings are NUL-terminated copies outside the input; the
 * fields its type or rtype does not carry are zero. */
static void check_decoded_storage(const tc_wire_msg_t *m, const void *in, size_t len)
{
    uint32_t i;

    CHECK(!points_into(m->reqs, in, len) && !points_into(m->resps, in, len));
    for (i = 0; i < m->count && m->type == TC_WIRE_REQUESTS; i++) {
        const tc_wire_request_t *r = &m->reqs[i];
        uint32_t j;
        CHECK(r->name != NULL && !points_into(r->name, in, len));
        CHECK_EQ(r->name[r->name_len], '\0');
        CHECK_LE(r->pset, TC_WIRE_MAX_PSET);
        /* a rank list: NULL when empty, else outside the input, strictly
         * ascending and below the limit */
        CHECK_LE(r->nranks, TC_WIRE_MAX_RANKS);
        CHECK(r->nranks == 0 ? r->ranks == NULL
                             : r->ranks != NULL &&
                                   !overlaps(r->ranks, r->nranks * sizeof(*r->ranks), in, len));
        for (j = 0; j < r->nranks; j++) {
            CHECK(r->ranks[j] >= 0 && r->ranks[j] < TC_WIRE_MAX_RANKS);
            CHECK(j == 0 || r->ranks[j] > r->ranks[j - 1]);
        }
    }
    for (i = 0; i < m->count && m->type == TC_WIRE_CYCLE; i++) {
        const tc_wire_response_t *r = &m->resps[i];
        CHECK(r->name != NULL && !points_into(r->name, in, len));
        CHECK_EQ(r->name[r->name_len], '\0');
        CHECK_LE(r->pset, TC_WIRE_MAX_PSET);
        if (r->rtype == TC_WIRE_ERROR) {
            CHECK(r->text != NULL && !points_into(r->text, in, len));
            CHECK_EQ(r->text[r->text_len], '\0');
            CHECK(r->ndim0 == 0 && r->dim0 == NULL && r->cache_ref == 0);
            CHECK(r->has_desc == 0 && r->has_value == 0 && r->value == 0);
            CHECK(desc_is_zero(&r->desc));
        } else {
            CHECK(r->ndim0 == 0 ? r->dim0 == NULL
                                : r->dim0 != NULL && !points_into(r->dim0, in, len));
            CHECK_LE(r->cache_ref, TC_WIRE_MAX_CACHE);
            CHECK(r->status == 0 && r->text == NULL && r->text_len == 0);
            CHECK(r->has_desc <= 1 && r->has_value <= 1);
            CHECK(r->has_value || r->value == 0);
            if (r->has_desc) {
                uint32_t k;
                CHECK(r->desc.kind < TC_KIND_COUNT && r->desc.ndim <= TC_MAX_DIMS);
                for (k = 0; k < TC_MAX_DIMS; k++) {
                    CHECK(k < r->desc.ndim ? r->desc.shape[k] >= 0 : r->desc.shape[k] == 0);
                }
            } else {
                CHECK(desc_is_zero(&r->desc));
            }
        }
    }
    if (m->type == TC_WIRE_CYCLE) {
        CHECK(m->reqs == NULL);
        CHECK_LE(m->round, TC_WIRE_MAX_ROUND);
        check_decoded_ids(m->nready, m->ready, in, len);
        check_decoded_ids(m->nsome, m->some, in, len);
        check_decoded_ids(m->nstale, m->stale, in, len);
        check_decoded_eager(m->neager, m->eager, in, len);
    } else {
        /* a REQUESTS with SEQ carries seq, and nothing else of a cycle record */
        CHECK(m->seq == 0 || (m->type == TC_WIRE_REQUESTS && (m->flags & TC_WIRE_F_SEQ)));
        CHECK(m->round == 0 && m->cache_gen == 0);
        CHECK(m->nready == 0 && m->ready == NULL && m->nstale == 0 && m->stale == NULL);
        CHECK(m->nsome == 0 && m->some == NULL);
        CHECK(m->neager == 0 && m->eager == NULL);
        CHECK(m->resps == NULL);
    }
    if (m->flags & TC_WIRE_F_TERMINATE) {
        CHECK(m->term_text != NULL && !points_into(m->term_text, in, len));
        CHECK_EQ(m->term_text[m->term_text_len], '\0');
    } else {
        CHECK(m->term_status == 0 && m->term_text == NULL && m->term_text_len == 0);
    }
    if (m->count > 0 || m->nready > 0 || m->nsome > 0 || m->nstale > 0 || m->neager > 0 ||
        (m->flags & TC_WIRE_F_TERMINATE)) {
        CHECK(m->owned != NULL);
    }
}

/* decoded must re-encode, decode to the same message and re-encode to the
 * same bytes (the minimal form). */
static void check_reencodes(const tc_wire_msg_t *decoded)
{
    tc_wire_buf_t b1 = {0}, b2 = {0};
    tc_wire_msg_t again;
    char err[256];

    CHECK_OK(tc__wire_encode(decoded, &b1));
    CHECK_MSG(tc__wire_decode(b1.data, b1.len, &again, err, sizeof(err)) == TC_OK,
              "re-encoded message does not decode: %s", err);
    check_same(decoded, &again);
    CHECK_OK(tc__wire_encode(&again, &b2));
    CHECK_EQ(b1.len, b2.len);
    CHECK(memcmp(b1.data, b2.data, b1.len) == 0);
    tc__wire_msg_free(&again);
    tc__wire_buf_free(&b1);
    tc__wire_buf_free(&b2);
}

/* Encodes m, decodes it, checks the result; returns the encoded length. */
static size_t roundtrip(const tc_wire_msg_t *m)
{
    tc_wire_buf_t buf = {0};
    tc_wire_msg_t d;
    char err[256];
    size_t len;

    CHECK_OK(tc__wire_encode(m, &buf));
    CHECK_MSG(tc__wire_decode(buf.data, buf.len, &d, err, sizeof(err)) == TC_OK,
              "decode of an encoded message failed: %s", err);
    n_checks++;
    check_same(m, &d);
    check_decoded_storage(&d, buf.data, buf.len);
    /* the decoded message must not depend on the input bytes any more */
    memset(buf.data, 0xEE, buf.len);
    check_same(m, &d);
    check_reencodes(&d);
    tc__wire_msg_free(&d);
    CHECK(d.owned == NULL && d.count == 0);
    tc__wire_msg_free(&d); /* safe twice: free zeroes the struct */
    len = buf.len;
    tc__wire_buf_free(&buf);
    return len;
}

/* Decodes data; must fail with want, a one-line reason containing needle (if
 * not NULL), and leave the output untouched. */
static void expect_reject_at(const void *data, size_t len, tc_status_t want, const char *needle,
                             int line)
{
    tc_wire_msg_t m, before;
    char err[256];
    tc_status_t st;

    memset(&m, 0xA5, sizeof(m));
    memcpy(&before, &m, sizeof(m)); /* bytes, padding included */
    memset(err, 'x', sizeof(err));
    st = tc__wire_decode(data, len, &m, err, sizeof(err));
    n_checks++;
    CHECK_MSG(st == want, "line %d: decode returned %d (%s), want %s", line, (int)st,
              tc_status_string(st), tc_status_string(want));
    CHECK_MSG(memcmp(&m, &before, sizeof(m)) == 0, "line %d: *msg_p changed on failure", line);
    CHECK_MSG(memchr(err, '\0', sizeof(err)) != NULL && err[0] != '\0' &&
                  strchr(err, '\n') == NULL,
              "line %d: reason not one non-empty line", line);
    CHECK_MSG(strncmp(err, "wire: ", 6) == 0, "line %d: reason \"%s\"", line, err);
    if (needle != NULL) {
        CHECK_MSG(strstr(err, needle) != NULL, "line %d: reason \"%s\" lacks \"%s\"", line, err,
                  needle);
    }
}
#define EXPECT_REJECT(data, len, needle)                                                \
    expect_reject_at((data), (len), TC_ERR_TRANSPORT, (needle), __LINE__)

/* Hand-built byte strings for malformed input (room for the largest eager
 * input and then some). */
typedef struct {
    uint8_t b[TC_WIRE_MAX_EAGER + 16384];
    size_t n;
} bytes_t;

static void b_u8(bytes_t *b, unsigned v)
{
    CHECK_LT(b->n, sizeof(b->b));
    b->b[b->n++] = (uint8_t)v;
}

static void b_varint(bytes_t *b, uint64_t v)
{
    while (v >= 0x80) {
        b_u8(b, (unsigned)(v & 0x7F) | 0x80);
        v >>= 7;
    }
    b_u8(b, (unsigned)v);
}

static void b_raw(bytes_t *b, const void *p, size_t n)
{
    CHECK_LE(b->n + n, sizeof(b->b));
    memcpy(b->b + b->n, p, n);
    b->n += n;
}

/* A length-prefixed string of n bytes, all c. */
static void b_fill(bytes_t *b, size_t n, unsigned c)
{
    b_varint(b, n);
    CHECK_LE(b->n + n, sizeof(b->b));
    memset(b->b + b->n, (int)c, n);
    b->n += n;
}

static void expect_ok_at(const bytes_t *b, int line)
{
    tc_wire_msg_t m;
    char err[256];
    tc_status_t st = tc__wire_decode(b->b, b->n, &m, err, sizeof(err));

    n_checks++;
    CHECK_MSG(st == TC_OK, "line %d: valid message rejected: %s", line, err);
    check_decoded_storage(&m, b->b, b->n);
    check_reencodes(&m);
    tc__wire_msg_free(&m);
}

/* ------------------------------------------------------------------------ */
/* Random valid messages                                                     */
/* ------------------------------------------------------------------------ */

#define GEN_MAX_ENTRIES 12
#define GEN_MAX_DIM0 300
#define GEN_MAX_IDS 1000
#define GEN_MAX_EAGER 40
#define GEN_EAGER_POOL (TC_WIRE_MAX_EAGER + 4096)
#define GEN_MAX_RANKS 300

typedef struct {
    tc_wire_msg_t msg;
    tc_wire_request_t reqs[GEN_MAX_ENTRIES];
    tc_wire_response_t resps[GEN_MAX_ENTRIES];
    char names[GEN_MAX_ENTRIES][TC_MAX_NAME_LEN];
    char texts[GEN_MAX_ENTRIES][TC_WIRE_MAX_TEXT];
    int64_t dim0[GEN_MAX_ENTRIES][GEN_MAX_DIM0];
    int32_t ranks[GEN_MAX_ENTRIES][GEN_MAX_RANKS];
    char term[TC_WIRE_MAX_TEXT];
    uint32_t ready[GEN_MAX_IDS];
    uint32_t some[GEN_MAX_IDS];
    uint32_t stale[GEN_MAX_IDS];
    uint32_t eager_ids[GEN_MAX_EAGER];
    tc_wire_eager_t eager[GEN_MAX_EAGER];
    uint8_t eager_pool[GEN_EAGER_POOL]; /* random bytes (0x00 too) the inputs point into */
    int eager_pool_filled;
} gen_t;

static gen_t gen; /* big: static */

static int64_t rand_dim(void)
{
    switch (rng_below(8)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return INT64_MAX;
    case 3: return (int64_t)1 << rng_below(63);
    case 4: return ((int64_t)1 << rng_below(63)) - 1;
    case 5: return (int64_t)(rng() >> 1);
    default: return (int64_t)rng_below(1000);
    }
}

/* A seq or cache_gen: any uint64, the extremes often. */
static uint64_t rand_u64(void)
{
    switch (rng_below(6)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return UINT64_MAX;
    case 3: return (uint64_t)1 << rng_below(64);
    case 4: return ((uint64_t)1 << rng_below(64)) - 1;
    default: return rng();
    }
}

/* A RUN's cache_ref: 0..TC_WIRE_MAX_CACHE, the ends often. */
static uint32_t rand_cache_ref(void)
{
    switch (rng_below(5)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return TC_WIRE_MAX_CACHE;
    default: return rng_below(TC_WIRE_MAX_CACHE + 1);
    }
}

/* A CYCLE's round: 0..TC_WIRE_MAX_ROUND, the ends often. */
static uint32_t rand_round(void)
{
    switch (rng_below(4)) {
    case 0: return 0;
    case 1: return TC_WIRE_MAX_ROUND;
    default: return rng_below(TC_WIRE_MAX_ROUND + 1);
    }
}

/* Up to max_n strictly ascending ids below TC_WIRE_MAX_CACHE. Each list has
 * one style of gap (neighbours, around the 1-byte varint limit, wide, or
 * anything, which ends the list early when it runs past the limit), and now
 * and then starts at 0 or ends at the largest id. */
static uint32_t rand_ids(uint32_t *ids, uint32_t max_n)
{
    uint32_t style = rng_below(4), r = rng_below(8), n, j;

    n = r == 0 ? 0 : r == 1 ? max_n : rng_below(max_n + 1);
    for (j = 0; j < n; j++) {
        uint64_t gap, id;
        switch (style) {
        case 0: gap = rng_below(3); break;
        case 1: gap = rng_below(260); break;
        case 2: gap = rng_below(20000); break;
        default: gap = rng_below(TC_WIRE_MAX_CACHE); break;
        }
        id = j == 0 ? gap : (uint64_t)ids[j - 1] + 1 + gap;
        if (id >= TC_WIRE_MAX_CACHE) {
            n = j;
            break;
        }
        ids[j] = (uint32_t)id;
    }
    if (n > 0 && rng_below(4) == 0) {
        ids[0] = 0; /* below ids[1] still */
    }
    if (n > 0 && rng_below(4) == 0) {
        ids[n - 1] = TC_WIRE_MAX_CACHE - 1; /* above ids[n - 2] still */
    }
    return n;
}

/* An eager input's length: 1, around the 1-byte varint limit, a multiple of
 * 8, up to a few hundred, or short. */
static uint32_t rand_eager_len(void)
{
    switch (rng_below(8)) {
    case 0: return 1;
    case 1: return 127 + rng_below(3);
    case 2: return 8 * (1 + rng_below(8));
    case 3: return 1 + rng_below(600);
    default: return 1 + rng_below(24);
    }
}

/* Up to max_n eager inputs with ids as rand_ids makes them, each pointing at
 * len bytes somewhere in the random pool. With big, now and then one input
 * (never more, to keep the messages small enough for the quadratic checks)
 * is TC_WIRE_MAX_EAGER bytes. */
static uint32_t rand_eager(uint32_t max_n, int big)
{
    uint32_t n, j;
    int max_used = !big;

    if (!gen.eager_pool_filled) {
        for (j = 0; j < GEN_EAGER_POOL; j++) {
            gen.eager_pool[j] = (uint8_t)rng();
        }
        gen.eager_pool_filled = 1;
    }
    n = rand_ids(gen.eager_ids, max_n);
    for (j = 0; j < n; j++) {
        tc_wire_eager_t *e = &gen.eager[j];
        e->id = gen.eager_ids[j];
        if (!max_used && rng_below(40) == 0) {
            e->len = TC_WIRE_MAX_EAGER;
            max_used = 1;
        } else {
            e->len = rand_eager_len();
        }
        e->data = gen.eager_pool + rng_below(GEN_EAGER_POOL - e->len + 1);
    }
    return n;
}

/* Cycle fields on a message type that has no cycle record: the encoder must
 * ignore them, however bad (too many, unsorted, NULL, len 0 or too long), and
 * the decoder must leave them zero. Not round and some, which the encoder
 * refuses there (encode_rejects); a some array without a count is ignored. */
static void gen_ignored_cycle(tc_wire_msg_t *m)
{
    static const uint32_t bad_ids[] = {TC_WIRE_MAX_CACHE, 7, 7, 0};
    static const tc_wire_eager_t bad_eager[] = {
        {9, 4, "abcd"}, {3, 0, "x"}, {3, TC_WIRE_MAX_EAGER + 1, "y"},
        {TC_WIRE_MAX_CACHE, 1, NULL}};

    if (rng_below(2)) {
        return;
    }
    m->seq = rand_u64() | 1;
    m->cache_gen = UINT64_MAX;
    m->nready = UINT32_MAX;
    m->ready = NULL;
    m->nstale = 4;
    m->stale = bad_ids;
    m->some = bad_ids;
    switch (rng_below(3)) {
    case 0: m->neager = UINT32_MAX; m->eager = NULL; break;
    case 1: m->neager = 4; m->eager = bad_eager; break;
    default: m->neager = rand_eager(6, 0); m->eager = gen.eager; break; /* valid, ignored */
    }
}

/* A process set: none (0) half the time, else 1..TC_WIRE_MAX_PSET, the
 * ends and the 1-byte varint limit often. */
static uint32_t rand_pset(void)
{
    switch (rng_below(8)) {
    case 0: return 1;
    case 1: return TC_WIRE_MAX_PSET;
    case 2: return 127 + rng_below(3);
    case 3: return 1 + rng_below(TC_WIRE_MAX_PSET);
    default: return 0;
    }
}

/* Up to max_n strictly ascending ranks below TC_WIRE_MAX_RANKS, none a
 * third of the time; gaps as rand_ids makes them, now and then starting at
 * 0 or ending at the largest rank. */
static uint32_t rand_ranks(int32_t *ranks, uint32_t max_n)
{
    uint32_t style = rng_below(4), n, j;

    if (rng_below(3) == 0) {
        return 0;
    }
    n = rng_below(4) == 0 ? max_n : 1 + rng_below(max_n);
    for (j = 0; j < n; j++) {
        uint64_t gap, rank;
        switch (style) {
        case 0: gap = rng_below(3); break;
        case 1: gap = rng_below(260); break;
        case 2: gap = rng_below(40000); break;
        default: gap = rng_below(TC_WIRE_MAX_RANKS); break;
        }
        rank = j == 0 ? gap : (uint64_t)ranks[j - 1] + 1 + gap;
        if (rank >= TC_WIRE_MAX_RANKS) {
            n = j;
            break;
        }
        ranks[j] = (int32_t)rank;
    }
    if (n > 1 && rng_below(4) == 0) {
        ranks[0] = 0; /* below ranks[1] still */
    }
    if (n > 1 && rng_below(4) == 0) {
        ranks[n - 1] = TC_WIRE_MAX_RANKS - 1; /* above ranks[n - 2] still */
    }
    return n;
}

/* A RUN's description: any kind, dtype and op, shapes as rand_dim makes them. */
static tc_wire_desc_t rand_desc(void)
{
    tc_wire_desc_t d;
    uint32_t k;

    memset(&d, 0, sizeof(d));
    d.kind = (uint8_t)rng_below(TC_KIND_COUNT);
    d.dtype = (uint8_t)rng_below(TC_UINT16 + 1);
    d.op = (uint8_t)rng_below(TC_PROD + 1);
    d.ndim = (uint8_t)rng_below(TC_MAX_DIMS + 1);
    for (k = 0; k < d.ndim; k++) {
        d.shape[k] = rand_dim();
    }
    return d;
}

static int32_t rand_root(void)
{
    switch (rng_below(6)) {
    case 0: return INT32_MIN;
    case 1: return INT32_MAX;
    case 2: return -1;
    case 3: return (int32_t)(uint32_t)rng();
    default: return (int32_t)rng_below(64);
    }
}

/* Bytes 0x01..0xFF; length 1, the maximum, or short. */
static uint32_t rand_bytes(char *s, uint32_t min_len, uint32_t max_len, int big)
{
    uint32_t n, i;
    uint32_t r = rng_below(10);

    if (big && r == 0) {
        n = max_len;
    } else if (r == 1) {
        n = min_len;
    } else {
        n = min_len + rng_below(24);
    }
    for (i = 0; i < n; i++) {
        s[i] = (char)(uint8_t)(1 + rng_below(255));
    }
    return n;
}

/* A random valid message of up to max_entries entries; big allows names and
 * texts of maximal length, long dim0 arrays and long id lists. */
static const tc_wire_msg_t *gen_msg(unsigned max_entries, int big)
{
    tc_wire_msg_t *m = &gen.msg;
    uint32_t i, j;

    memset(m, 0, sizeof(*m));
    m->type = (uint8_t)(1 + rng_below(3));
    if (m->type == TC_WIRE_BYE) {
        gen_ignored_cycle(m);
        return m;
    }
    m->count = rng_below(max_entries + 1);
    if (m->type == TC_WIRE_REQUESTS) {
        m->reqs = gen.reqs;
        m->flags = rng_below(2) ? TC_WIRE_F_SHUTDOWN : 0;
        for (i = 0; i < m->count; i++) {
            tc_wire_request_t *r = &gen.reqs[i];
            memset(r, 0, sizeof(*r));
            r->kind = (uint8_t)rng_below(TC_KIND_COUNT);
            r->dtype = (uint8_t)rng_below(TC_UINT16 + 1);
            r->op = (uint8_t)rng_below(TC_PROD + 1);
            r->root = rand_root();
            r->ndim = (uint8_t)rng_below(TC_MAX_DIMS + 1);
            for (j = 0; j < r->ndim; j++) {
                r->shape[j] = rand_dim();
            }
            r->name = gen.names[i];
            r->name_len = rand_bytes(gen.names[i], 1, TC_MAX_NAME_LEN, big);
            r->pset = rand_pset();
            r->nranks = rand_ranks(gen.ranks[i], big ? GEN_MAX_RANKS : 6);
            r->ranks = r->nranks > 0 || rng_below(2) ? gen.ranks[i] : NULL;
        }
        gen_ignored_cycle(m);
        return m;
    }
    m->resps = gen.resps;
    m->flags = rng_below(2) ? TC_WIRE_F_TERMINATE : 0;
    for (i = 0; i < m->count; i++) {
        tc_wire_response_t *r = &gen.resps[i];
        memset(r, 0, sizeof(*r));
        r->rtype = (uint8_t)rng_below(2);
        r->name = gen.names[i];
        r->name_len = rand_bytes(gen.names[i], 1, TC_MAX_NAME_LEN, big);
        if (r->rtype == TC_WIRE_RUN) {
            r->ndim0 = big ? rng_below(GEN_MAX_DIM0 + 1) : rng_below(6);
            for (j = 0; j < r->ndim0; j++) {
                gen.dim0[i][j] = rand_dim();
            }
            r->dim0 = gen.dim0[i];
            r->cache_ref = rand_cache_ref();
            if (rng_below(3) == 0) {
                r->has_desc = 1;
                r->desc = rand_desc();
            }
            if (rng_below(3) == 0) {
                r->has_value = 1;
                r->value = rand_root();
            }
        } else {
            r->status = (uint8_t)(1 + rng_below(TC_ERR_TIMEOUT));
            r->text = gen.texts[i];
            r->text_len = rand_bytes(gen.texts[i], 0, TC_WIRE_MAX_TEXT, big);
            r->cache_ref = rng_below(2) ? 0 : (uint32_t)rng(); /* ignored on ERROR */
            if (rng_below(4) == 0) { /* ignored on ERROR, however bad */
                r->has_desc = 1;
                r->desc.kind = 255;
                r->desc.ndim = 255;
                r->has_value = 1;
                r->value = -7;
            }
        }
        r->pset = rand_pset();
    }
    m->seq = rand_u64();
    m->round = rand_round();
    m->cache_gen = rand_u64();
    m->nready = rand_ids(gen.ready, big ? GEN_MAX_IDS : 6);
    m->ready = m->nready > 0 || rng_below(2) ? gen.ready : NULL;
    m->nsome = rand_ids(gen.some, big ? GEN_MAX_IDS : 6);
    m->some = m->nsome > 0 || rng_below(2) ? gen.some : NULL;
    m->nstale = rand_ids(gen.stale, big ? GEN_MAX_IDS : 6);
    m->stale = m->nstale > 0 || rng_below(2) ? gen.stale : NULL;
    m->neager = rand_eager(big ? GEN_MAX_EAGER : 6, big);
    m->eager = m->neager > 0 || rng_below(2) ? gen.eager : NULL;
    if (m->flags & TC_WIRE_F_TERMINATE) {
        m->term_status = (uint8_t)(1 + rng_below(TC_ERR_TIMEOUT));
        m->term_text = gen.term;
        m->term_text_len = rand_bytes(gen.term, 0, TC_WIRE_MAX_TEXT, big);
    }
    return m;
}

/* ------------------------------------------------------------------------ */
/* Round trips                                                               */
/* ------------------------------------------------------------------------ */

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
    static const uint8_t req[] = {0x7C, 0x06, 0x01, 0x01, 0x01, 0x02, 0x06, 0x00,
                                  0x03, 0x02, 0xAC, 0x02, 0x00, 0x02, 0x61, 0x62, 0x00};
    /* RUN "x" dim0 {1, 128} cache_ref 129; seq 300, round 64, cache_gen 0,
     * ready {0, 5, 200} (0, then 5-0-1 = 4, then 200-5-1 = 194), some {7, 1000}
     * (7, then 1000-7-1 = 992), stale {2^20-1}, eager inputs id 5 {DE AD 00 FF}
     * and id 200 {80} (5 as is, then 200-5-1 = 194, each with its len, then
     * the raw bytes: a 0x00 is fine there); terminate TC_ERR_SHUTDOWN "bye" */
    static const uint8_t cycle[] = {0x7C, 0x06, 0x02, 0x02, 0x01,                   /* header */
                                    0x00, 0x01, 0x78, 0x00,             /* RUN "x", rflags 0 */
                                    0x02, 0x01, 0x80, 0x01, 0x81, 0x01, /* dim0, cache_ref */
                                    0xAC, 0x02, 0x40, 0x00,       /* seq, round, cache_gen */
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
    static const uint8_t big_eager_head[] = {0x7C, 0x06, 0x02, 0x00, 0x00, 0x00,
                                             0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
                                             0xFF, 0xFF, 0x3F, 0x80, 0x80, 0x04};
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
    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .flags = TC_WIRE_F_SHUTDOWN, .count = 1,
                        .reqs = &r};
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
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .flags = TC_WIRE_F_TERMINATE, .count = 1,
                        .resps = &s, .seq = 300, .round = TC_WIRE_MAX_ROUND, .nready = 3,
                        .ready = ready, .nsome = 2, .some = some, .nstale = 1,
                        .stale = stale, .neager = 2, .eager = eager,
                        .term_status = TC_ERR_SHUTDOWN, .term_text = "bye", .term_text_len = 3};
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
    static const uint8_t cycle[] = {0x7C, 0x06, 0x02, 0x00, 0x03,          /* header */
                                    0x00, 0x01, 0x6A, 0x07, 0x05,          /* RUN "j" */
                                    0x00, 0x00,                            /* ndim0, cache_ref */
                                    0x00, 0x06, 0x00, 0x02, 0x03, 0x80, 0x01, /* desc */
                                    0x03,                                  /* value */
                                    0x01, 0x01, 0x6B, 0x04,                /* ERROR "k" */
                                    0x80, 0x80, 0x80, 0x08,                /* pset */
                                    0x02, 0x02, 0x6E, 0x6F,                /* status, text */
                                    0x00, 0x01, 0x76, 0x02, 0x00, 0x01,    /* RUN "v" */
                                    0xFF, 0xFF, 0xFF, 0xFF, 0x0F,          /* value */
                                    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    static const int32_t ranks[] = {1, 2, 200};
    tc_wire_request_t r = {.kind = TC_KIND_JOIN, .dtype = TC_INT32, .op = TC_SUM, .name = "j",
                           .name_len = 1, .pset = 300, .nranks = 3, .ranks = ranks};
    tc_wire_response_t s[3] = {
        {.rtype = TC_WIRE_RUN, .name = "j", .name_len = 1, .pset = 5, .has_desc = 1,
         .desc = {.kind = TC_KIND_ALLREDUCE, .dtype = TC_FLOAT32, .op = TC_SUM, .ndim = 2,
                  .shape = {3, 128}},
         .has_value = 1, .value = -2},
        {.rtype = TC_WIRE_ERROR, .name = "k", .name_len = 1, .pset = TC_WIRE_MAX_PSET,
         .status = TC_ERR_STATE, .text = "no", .text_len = 2},
        {.rtype = TC_WIRE_RUN, .name = "v", .name_len = 1, .cache_ref = 1, .has_value = 1,
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
    static const int64_t dims[] = {0, 1, 127, 128, 16383, 16384, (int64_t)1 << 32,
                                   INT64_MAX - 1, INT64_MAX};
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
        m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .flags = (uint8_t)flags, .count = n,
                            .reqs = reqs};
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
            tc_wire_request_t r = {.kind = TC_KIND_ALLGATHER, .dtype = TC_INT64, .op = TC_MAX,
                                   .ndim = (uint8_t)ndim, .root = INT32_MIN, .name = "t",
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
    s[1] = (tc_wire_response_t){.rtype = TC_WIRE_RUN, .name = "ag", .name_len = 2, .ndim0 = 5000,
                                .dim0 = dim0, .cache_ref = TC_WIRE_MAX_CACHE};
    s[2] = (tc_wire_response_t){.rtype = TC_WIRE_ERROR, .name = "bad", .name_len = 3,
                                .status = TC_ERR_MISMATCH, .text = "ranks 0,1 differ",
                                .text_len = 16, .cache_ref = 5};
    s[3] = (tc_wire_response_t){.rtype = TC_WIRE_ERROR, .name = "\xFF\xFE", .name_len = 2,
                                .status = TC_ERR_ARG, .text = NULL, .text_len = 0};
    s[4] = (tc_wire_response_t){.rtype = TC_WIRE_ERROR, .name = "e", .name_len = 1,
                                .status = TC_ERR_TIMEOUT, .text = "", .text_len = 0};
    s[5] = (tc_wire_response_t){.rtype = TC_WIRE_ERROR, .name = "long", .name_len = 4,
                                .status = TC_ERR_TRANSPORT, .text = text_max,
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

/* The cycle record: seq and cache_gen at the varint boundaries, round at its
 * ends, and every pair of a few id lists as ready and stale (empty, each end
 * of the range, neighbours, distances on either side of the 1-byte varint
 * limit, spread over the whole range), with a third as some. */
TC_CASE(cycle_record_roundtrip)
{
    enum { NLISTS = 8 };
    static const uint64_t u64s[] = {0, 1, 127, 128, 16383, 16384, UINT32_MAX,
                                    (uint64_t)UINT32_MAX + 1, INT64_MAX, UINT64_MAX};
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
            m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .seq = i, .cache_gen = k,
                                .neager = lens[i], .eager = sets[i]};
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

/* Process sets and rank lists on requests: every pset at the varint
 * boundaries and the ends of its range with every rank list (one rank at
 * either end of the range, neighbours, gaps on either side of the varint
 * byte limits, the widest gap, many), alone and beside scaling factors and a
 * group; and the bytes each takes. */
TC_CASE(pset_ranks_roundtrip)
{
    enum { NPSETS = 9, NLISTS = 9 };
    static const uint32_t psets[NPSETS] = {0, 1, 2, 127, 128, 16383, 16384,
                                           TC_WIRE_MAX_PSET - 1, TC_WIRE_MAX_PSET};
    static const int32_t one_zero[] = {0}, one_mid[] = {1000},
                         one_max[] = {TC_WIRE_MAX_RANKS - 1}, neighbours[] = {0, 1, 2, 3, 4},
                         gaps[] = {127, 255, 384, 16768, 16769, 33154},
                         ends[] = {0, TC_WIRE_MAX_RANKS - 1},
                         near_end[] = {TC_WIRE_MAX_RANKS - 3, TC_WIRE_MAX_RANKS - 2,
                                       TC_WIRE_MAX_RANKS - 1};
    static int32_t spread[1000];
    const int32_t *lists[NLISTS] = {NULL, one_zero, one_mid, one_max, neighbours,
                                    gaps, ends, near_end, spread};
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
    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .flags = TC_WIRE_F_SHUTDOWN, .count = n,
                        .reqs = reqs};
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

/* A RUN's description and value, and a process set on a RUN and an ERROR:
 * every kind x dtype x op as a description, shapes and values at the varint
 * boundaries and the ends of their ranges, beside dim0 and cache_ref; and
 * the bytes each takes. */
TC_CASE(desc_value_roundtrip)
{
    static const int32_t values[] = {0,   -1,        1,         63,            -64,
                                     64,  -65,       INT32_MAX, INT32_MIN,     INT32_MAX - 1,
                                     INT32_MIN + 1};
    static const int64_t dims[] = {0, 1, 127, 128, 16383, 16384, (int64_t)1 << 32,
                                   INT64_MAX - 1, INT64_MAX};
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
        one = (tc_wire_response_t){.rtype = TC_WIRE_RUN, .name = "v", .name_len = 1,
                                   .has_value = 1, .value = values[i % NVALUES],
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
    one.value = -64; /* zigzag 127: 1 byte */
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
    err = (tc_wire_response_t){.rtype = TC_WIRE_ERROR, .name = "e", .name_len = 1,
                               .status = TC_ERR_MISMATCH, .text = "x", .text_len = 1};
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = 1, .resps = &err};
    len = roundtrip(&m);
    CHECK_EQ(len, bare + 1); /* status and a 1-byte text */
    err.has_desc = 1;
    err.desc = (tc_wire_desc_t){.kind = 255, .dtype = 255, .op = 255, .ndim = 255,
                                .shape = {-1}};
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
        m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .flags = TC_WIRE_F_TERMINATE, .count = 2,
                            .resps = two, .term_status = TC_ERR_SHUTDOWN};
        roundtrip(&m);
    }
}

TC_CASE(bye_and_misc)
{
    tc_wire_msg_t m = {.type = TC_WIRE_BYE}, d;
    tc_wire_buf_t buf = {0};
    char err[64];
    size_t i, off[4], lens[4];

    rng_state = RNG_SEED;

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
        static const tc_wire_eager_t bad_eager[] = {
            {9, 1, "a"}, {3, 1, "b"}, {4, 0, "c"}, {5, TC_WIRE_MAX_EAGER + 1, "d"},
            {6, 2, NULL}, {TC_WIRE_MAX_CACHE, 1, "f"}};
        static const tc_wire_eager_t good_eager[] = {{1, 2, "ab"}, {7, 1, "c"}};
        static const struct {
            uint32_t n;
            const tc_wire_eager_t *e;
        } eagers[] = {{UINT32_MAX, NULL}, {TC_WIRE_MAX_CACHE + 1, good_eager}, {3, NULL},
                      {6, bad_eager}, {2, good_eager}};
        tc_wire_request_t r = {.name = "q", .name_len = 1};
        tc_wire_msg_t with = {.seq = UINT64_MAX, .cache_gen = 7, .nready = UINT32_MAX,
                              .nstale = 4, .stale = bad};
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
        m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .round = TC_WIRE_MAX_ROUND,
                            .nready = TC_WIRE_MAX_CACHE, .ready = ids,
                            .nsome = TC_WIRE_MAX_CACHE, .some = ids,
                            .nstale = TC_WIRE_MAX_CACHE, .stale = ids};
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

TC_CASE(random_roundtrip)
{
    int i, with_eager = 0, with_max = 0, ignored_eager = 0, with_some = 0, with_max_round = 0;
    int with_pset = 0, with_ranks = 0, with_max_rank = 0, with_desc = 0, with_value = 0;
    int ignored_desc = 0;
    uint32_t j;

    rng_state = RNG_SEED;

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

/* ------------------------------------------------------------------------ */
/* Malformed input                                                           */
/* ------------------------------------------------------------------------ */

static void encode_into(const tc_wire_msg_t *m, tc_wire_buf_t *buf)
{
    buf->len = 0;
    CHECK_OK(tc__wire_encode(m, buf));
}

/* Every proper prefix of a valid encoding is rejected (for a message over
 * 4 KiB: the first and last 512 and every 7th in between, since the cost is
 * quadratic). Each prefix sits at the end of a heap block so ASan sees any
 * read past it. */
static void check_prefixes(const uint8_t *data, size_t len)
{
    uint8_t *block = malloc(len > 0 ? len : 1);
    size_t n;

    CHECK(block != NULL);
    for (n = 0; n < len; n++) {
        if (len > 4096 && n > 512 && n + 512 < len && n % 7 != 0) {
            continue;
        }
        memcpy(block + len - n, data, n);
        EXPECT_REJECT(block + len - n, n, NULL);
    }
    free(block);
}

/* Every single-byte change either fails cleanly or decodes to a message that
 * re-encodes. With every_value, each byte takes each of its 255 other values;
 * otherwise each of its 8 bits is flipped, at every byte of a short message or
 * at 200 random bytes of a long one. */
static long check_corruptions(const uint8_t *data, size_t len, int every_value)
{
    uint8_t *copy = malloc(len);
    long accepted = 0;
    size_t i, n, t;
    unsigned k;

    CHECK(copy != NULL);
    memcpy(copy, data, len);
    n = every_value || len <= 200 ? len : 200;
    for (t = 0; t < n; t++) {
        i = n == len ? t : rng_below((uint32_t)len);
        for (k = 1; k < (every_value ? 256u : 9u); k++) {
            tc_wire_msg_t d;
            char err[256];
            tc_status_t st;
            copy[i] = (uint8_t)(every_value ? data[i] ^ k : data[i] ^ (1u << (k - 1)));
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
        }
        copy[i] = data[i];
    }
    free(copy);
    return accepted;
}

TC_CASE(truncation_and_corruption)
{
    tc_wire_buf_t buf = {0};
    tc_wire_msg_t m = {.type = TC_WIRE_BYE};
    uint8_t *trailing;
    int i;
    long accepted = 0;

    rng_state = RNG_SEED;

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
    static const tc_wire_eager_t ents[] = {{0, 1, vals}, {1, 4, vals}, {300, 2, vals + 2},
                                           {TC_WIRE_MAX_CACHE - 1, 3, vals + 1}};
    tc_wire_response_t s = {.rtype = TC_WIRE_RUN, .name = "r", .name_len = 1, .cache_ref = 2};
    static const uint32_t ready[] = {1, 300};
    tc_wire_msg_t m = {.type = TC_WIRE_CYCLE, .count = 1, .resps = &s, .seq = 9,
                       .nready = 2, .ready = ready, .neager = 4, .eager = ents};
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

    rng_state = RNG_SEED;

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
    s[0] = (tc_wire_response_t){.rtype = TC_WIRE_RUN, .name = "rq", .name_len = 2, .pset = 200,
                                .ndim0 = 2, .dim0 = rows, .cache_ref = 4, .has_desc = 1,
                                .desc = {.kind = TC_KIND_ALLREDUCE, .dtype = TC_FLOAT32,
                                         .op = TC_MAX, .ndim = 2, .shape = {3, 129}},
                                .has_value = 1, .value = -300};
    s[1] = (tc_wire_response_t){.rtype = TC_WIRE_RUN, .name = "j", .name_len = 1,
                                .has_value = 1, .value = INT32_MIN};
    s[2] = (tc_wire_response_t){.rtype = TC_WIRE_ERROR, .name = "e", .name_len = 1, .pset = 1,
                                .status = TC_ERR_STATE, .text = "joined", .text_len = 6};
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .flags = TC_WIRE_F_TERMINATE, .count = 3,
                        .resps = s, .seq = 5, .term_status = TC_ERR_SHUTDOWN};
    encode_into(&m, &buf);
    check_prefixes(buf.data, buf.len);
    accepted += check_corruptions(buf.data, buf.len, 1);
    CHECK_GT(accepted, 0);
    tc__wire_buf_free(&buf);
}

/* ------------------------------------------------------------------------ */
/* Malformed input: one hand-made message per rule                           */
/* ------------------------------------------------------------------------ */

/*
 * A hand-made message is a list of pieces, written out in order; the table
 * below gives, for each, whether the decoder must accept it or reject it and
 * a piece of the reason it must give. Most rules have a row just inside the
 * limit (accepted) next to the rows just outside it. Byte positions in the
 * reasons count from 0.
 */
typedef enum {
    P_END = 0,  /* the end of the list */
    P_U8,       /* one byte: v (EACH: the row's byte value, see malformed_t.each) */
    P_VAR,      /* v as a varint */
    P_RAW,      /* the n bytes of s, as they are */
    P_STR,      /* a name or text: n as a varint, then the n bytes of s */
    P_FILL,     /* a name or text of v bytes, each n: v as a varint, then the bytes */
    P_REP,      /* v bytes, each n, with no length before them */
    P_VARS,     /* n varints, each v (a request's shape) */
    P_COUNTING, /* v varints: 0, 1, ..., v-1 */
} piece_op_t;

typedef struct {
    piece_op_t op;
    uint64_t v;
    const char *s;
    size_t n;
} piece_t;

#define EACH 0x100u /* in U8(): the row's byte value */

#define END {P_END, 0, NULL, 0}
#define U8(x) {P_U8, (x), NULL, 0}
#define VAR(x) {P_VAR, (x), NULL, 0}
#define RAW(lit) {P_RAW, 0, (lit), sizeof(lit) - 1}
#define STR(lit) {P_STR, 0, (lit), sizeof(lit) - 1}
#define FILL(count, c) {P_FILL, (count), NULL, (c)}
#define REP(count, c) {P_REP, (count), NULL, (c)}
#define VARS(count, x) {P_VARS, (x), NULL, (count)}
#define COUNTING(count) {P_COUNTING, (count), NULL, 0}

/* magic, version, type, flags; and with the entry count */
#define HEAD(type, flags) U8(TC_WIRE_MAGIC), U8(TC_WIRE_VERSION), U8(type), U8(flags)
#define HDR(type, flags, count) HEAD(type, flags), VAR(count)
/* An empty cycle record (seq 0, round 0, cache_gen 0, no ready, some or
 * stale ids, no eager inputs), and the same up to its eager record (the
 * eager count is then byte 11 of a CYCLE with no responses). */
#define CYCLE0 RAW("\0\0\0\0\0\0\0")
#define CYCLE_IDS0 RAW("\0\0\0\0\0\0")
/* seq 0, round 0, cache_gen 0: the cycle record up to its id lists (the ready
 * count is then byte 8 of a CYCLE with no responses) */
#define CYCLE_HEAD0 RAW("\0\0\0")
/* Scaling factors as written: IEEE 754 binary64, little-endian. */
#define F64_1 "\0\0\0\0\0\0\xF0\x3F"
#define F64_NEG1 "\0\0\0\0\0\0\xF0\xBF"
#define F64_NEG0 "\0\0\0\0\0\0\0\x80"
#define F64_2 "\0\0\0\0\0\0\0\x40"
#define F64_HALF "\0\0\0\0\0\0\xE0\x3F"
#define F64_INF "\0\0\0\0\0\0\xF0\x7F"
#define F64_NAN "\0\0\0\0\0\0\xF8\x7F"
/* A request with every one of its ndim shape values dim. */
#define REQ(kind, dtype, op, zz_root, ndim, dim, name)                                  \
    U8(kind), U8(dtype), U8(op), VAR(zz_root), U8(ndim), VARS(ndim, dim), STR(name), U8(0)
/* The same up to its name: the extras byte (and its factors) follow. */
#define REQ_NOX(kind, dtype, op, zz_root, ndim, dim, name)                              \
    U8(kind), U8(dtype), U8(op), VAR(zz_root), U8(ndim), VARS(ndim, dim), STR(name)
/* One eager input as written: the id (or distance), then len bytes of c. */
#define EAGER(id_or_delta, len, c) VAR(id_or_delta), FILL(len, c)

/* Id lists: after id prev, a distance d gives prev + 1 + d; the same two ids
 * as the ready, the some and the stale list (the other two empty), after seq,
 * round and cache_gen 0. */
#define READY_PAIR(prev, delta)                                                         \
    HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(2), VAR(prev), VAR(delta), U8(0), U8(0), U8(0)
#define SOME_PAIR(prev, delta)                                                          \
    HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(0), U8(2), VAR(prev), VAR(delta), U8(0), U8(0)
#define STALE_PAIR(prev, delta)                                                         \
    HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(0), U8(0), U8(2), VAR(prev), VAR(delta), U8(0)
/* The same for two eager inputs. */
#define EAGER_PAIR(prev, delta)                                                         \
    HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(2), EAGER(prev, 1, 0x01), EAGER(delta, 2, 0x02)

#define MAX_PIECES 24

typedef struct {
    int line;           /* of the row, for a failure */
    tc_status_t status; /* TC_OK (accepted) or what the decoder must return */
    const char *reason; /* rejected: a piece of the reason (NULL: any reason) */
    int each;           /* EACH_OUTSIDE or EACH_BEYOND: the row stands for many byte values */
    unsigned each_lo, each_hi; /* the range outside which; for EACH_BEYOND each_lo is the mask */
    void (*then)(const tc_wire_msg_t *m); /* accepted: more checks of the decoded message */
    piece_t bytes[MAX_PIECES];
} malformed_t;

enum {
    EACH_OUTSIDE = 1, /* every byte value outside each_lo..each_hi */
    EACH_BEYOND,      /* every byte value with a bit outside the mask each_lo */
};

#define REJECT(reason, ...) {__LINE__, TC_ERR_TRANSPORT, (reason), 0, 0, 0, NULL, {__VA_ARGS__}}
#define REJECT_EACH_BUT(lo, hi, reason, ...)                                            \
    {__LINE__, TC_ERR_TRANSPORT, (reason), EACH_OUTSIDE, (lo), (hi), NULL, {__VA_ARGS__}}
#define REJECT_EACH_BEYOND(mask, reason, ...)                                           \
    {__LINE__, TC_ERR_TRANSPORT, (reason), EACH_BEYOND, (mask), 0, NULL, {__VA_ARGS__}}
#define ACCEPT(...) {__LINE__, TC_OK, NULL, 0, 0, 0, NULL, {__VA_ARGS__}}
#define ACCEPT_THEN(then, ...) {__LINE__, TC_OK, NULL, 0, 0, 0, (then), {__VA_ARGS__}}
/* A distance accepted, and one refused, in each id list. */
#define IDS_OK(prev, delta)                                                             \
    ACCEPT(READY_PAIR(prev, delta)), ACCEPT(SOME_PAIR(prev, delta)),                   \
        ACCEPT(STALE_PAIR(prev, delta))
#define IDS_REFUSED(prev, delta)                                                        \
    REJECT("ready id 1: delta ", READY_PAIR(prev, delta)),                             \
        REJECT("some id 1: delta ", SOME_PAIR(prev, delta)),                           \
        REJECT("stale id 1: delta ", STALE_PAIR(prev, delta))

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

static void pset_is_1(const tc_wire_msg_t *d)
{
    CHECK(d->reqs[0].pset == 1 && d->reqs[0].nranks == 0 && d->reqs[0].ranks == NULL);
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

/* The dtype byte is the tc_dtype_t value; the table below spells it out. */
_Static_assert(TC_INT16 == 8 && TC_UINT16 == 9, "dtype values on the wire changed");

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
    ACCEPT(HDR(TC_WIRE_REQUESTS, 0, 1), U8(0), U8(0), U8(0),
           RAW("\x80\x00"), /* root 0, padded */
           U8(0), RAW("\x81\x00"), U8('z'), U8(0)), /* name length 1, padded */

    /* ---- request fields ---- */
    ACCEPT(HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ(TC_KIND_BROADCAST, TC_FLOAT64, TC_PROD, 0, TC_MAX_DIMS, INT64_MAX, "ok")),
    REJECT("request 0: kind 7 not in 0..6", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ(TC_KIND_COUNT, 0, 0, 0, 0, 0, "k")),
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
    ACCEPT(HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, TC_FLOAT32, 0, 0, 0, 0, "s"), U8(1),
           RAW(F64_1), RAW(F64_NEG1)),
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
    REJECT("request 0: unknown extras bits 0x10", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(0x10)),
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
    REJECT("group key length 0", HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"),
           U8(2), U8(2), U8(0), U8(0), U8(0)),
    REJECT("truncated reading group key", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(2), U8(2), U8(0), U8(5), RAW("ab")),
    REJECT("unknown extras bits 0x80", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(0x81), RAW(F64_2), RAW(F64_2)),
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
    /* bit 4 up is unknown, beside the known bits or alone */
    REJECT("request 0: unknown extras bits 0x10 (byte 12)", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(0x1C), VAR(1), VAR(1), VAR(0)),
    REJECT("unknown extras bits 0xf0", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(0xFF)),
    REJECT_EACH_BEYOND(0x0F, "unknown extras bits", HDR(TC_WIRE_REQUESTS, 0, 1),
                       REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(EACH), RAW(F64_2), RAW(F64_2),
                       VAR(2), VAR(1), STR("k"), VAR(1), VAR(1), VAR(0)),
    /* ---- rank lists: extras bit 3, then the count, 1..TC_WIRE_MAX_RANKS, and
     * the ranks: the first as is, then each distance less one; each rank below
     * TC_WIRE_MAX_RANKS ---- */
    ACCEPT_THEN(rank_0, HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(8),
                VAR(1), VAR(0)),
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
    ACCEPT_THEN(every_extra, HDR(TC_WIRE_REQUESTS, 0, 1), REQ_NOX(0, 0, 0, 0, 0, 0, "s"),
                U8(0x0F), RAW(F64_2), RAW(F64_HALF), U8(3), U8(1), STR("key"), VAR(9), VAR(1),
                VAR(4)),
    /* a list before its set: the count is read as the set, the rank as the
     * count, which then cannot fit */
    REJECT("request 0: rank count 4 not in 1..1", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "s"), U8(0x0C), VAR(1), VAR(4), VAR(9)),
    /* a name one byte longer so that the count bound is not what fails */
    REJECT("request 0: truncated reading extras", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ_NOX(0, 0, 0, 0, 0, 0, "ss")),

    /* ---- names ---- */
    /* one more byte so that the count bound is not what fails */
    REJECT("name length 0 not in 1..1024", HDR(TC_WIRE_REQUESTS, 0, 1),
           REQ(0, 0, 0, 0, 0, 0, ""), U8(0)),
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

    /* ---- responses (each followed by an empty cycle record, so that the count
     * bound is not what fails); rflags 0 after the name ---- */
    REJECT("unknown rtype 2", HDR(TC_WIRE_CYCLE, 0, 1), U8(2), STR("r"), U8(0), U8(0), U8(0),
           CYCLE0),
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_ERROR), STR("r"), U8(0), U8(TC_ERR_TIMEOUT),
           FILL(TC_WIRE_MAX_TEXT, 'e'), CYCLE0),
    REJECT_EACH_BUT(1, TC_ERR_TIMEOUT, "error status", HDR(TC_WIRE_CYCLE, 0, 1),
                    U8(TC_WIRE_ERROR), STR("r"), U8(0), U8(EACH), STR("why"), CYCLE0),
    REJECT("error text length 2049", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_ERROR), STR("r"),
           U8(0), U8(TC_ERR_ARG), FILL(TC_WIRE_MAX_TEXT + 1, 'e'), CYCLE0),
    REJECT("error text contains a 0x00 byte", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_ERROR),
           STR("r"), U8(0), U8(TC_ERR_ARG), STR("ee\0e"), CYCLE0),
    /* an ERROR has no cache_ref: a byte for one is the cycle record's first,
     * so the record's last is left over; without it the message is valid */
    REJECT("1 trailing bytes", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_ERROR), STR("r"), U8(0),
           U8(TC_ERR_ARG), STR(""), U8(0), CYCLE0),
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_ERROR), STR("r"), U8(0), U8(TC_ERR_ARG), STR(""),
           CYCLE0),
    /* RUN: ndim0 */
    REJECT("ndim0 16777217 above 16777216", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"),
           U8(0), VAR(TC_WIRE_MAX_RANKS + 1), U8(0), CYCLE0),
    REJECT("ndim0 16777216 cannot fit", HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"),
           U8(0), VAR(TC_WIRE_MAX_RANKS), U8(1), U8(0), CYCLE0),
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
    REJECT("response 0: rflags 0xff not allowed on RUN", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(0xFF), U8(0), U8(0), CYCLE0),
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
    REJECT("response 0: process set 0 must be left out", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(4), U8(0), U8(0), U8(0), CYCLE0),
    REJECT("response 0: process set 0 must be left out", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_ERROR), STR("r"), U8(4), U8(0), U8(TC_ERR_ARG), STR(""), CYCLE0),
    REJECT("response 0: process set 16777217 above 16777216 (byte 9)", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(4), VAR(TC_WIRE_MAX_PSET + 1), U8(0), U8(0), CYCLE0),
    REJECT("response 0: process set 16777217 above 16777216", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_ERROR), STR("r"), U8(4), VAR(TC_WIRE_MAX_PSET + 1), U8(TC_ERR_ARG),
           STR(""), CYCLE0),
    REJECT("response 0: truncated reading process set", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("abcdefghij"), U8(4)),
    /* ---- a RUN's description: after cache_ref, kind dtype op ndim (each in
     * range), then ndim shape values 0..INT64_MAX ---- */
    ACCEPT_THEN(desc_join_ndim0, HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(1),
                U8(0), U8(0), U8(TC_KIND_JOIN), U8(TC_INT32), U8(TC_SUM), U8(0), CYCLE0),
    ACCEPT_THEN(desc_max_dims, HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0),
                U8(0), U8(TC_KIND_ALLGATHER), U8(TC_UINT16), U8(TC_PROD), U8(TC_MAX_DIMS),
                VARS(TC_MAX_DIMS, INT64_MAX), CYCLE0),
    REJECT("response 0: description: kind 7 dtype 2 op 0 ndim 0", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0), U8(TC_KIND_COUNT), U8(TC_INT32),
           U8(TC_SUM), U8(0), CYCLE0),
    REJECT_EACH_BUT(0, TC_KIND_COUNT - 1, "response 0: description: kind ",
                    HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0),
                    U8(EACH), U8(0), U8(0), U8(0), CYCLE0),
    REJECT("response 0: description: kind 0 dtype 10 op 0 ndim 0", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0), U8(0), U8(TC_UINT16 + 1), U8(0),
           U8(0), CYCLE0),
    REJECT_EACH_BUT(0, TC_UINT16, "response 0: description: kind 0 dtype ",
                    HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0),
                    U8(0), U8(EACH), U8(0), U8(0), CYCLE0),
    REJECT("response 0: description: kind 0 dtype 0 op 5 ndim 0", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0), U8(0), U8(0), U8(TC_PROD + 1), U8(0),
           CYCLE0),
    REJECT_EACH_BUT(0, TC_PROD, "response 0: description: kind 0 dtype 0 op ",
                    HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0),
                    U8(0), U8(0), U8(EACH), U8(0), CYCLE0),
    REJECT("response 0: description: kind 0 dtype 0 op 0 ndim 9", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0), U8(0), U8(0), U8(0),
           U8(TC_MAX_DIMS + 1), VARS(TC_MAX_DIMS + 1, 1), CYCLE0),
    REJECT_EACH_BUT(0, TC_MAX_DIMS, "response 0: description: kind 0 dtype 0 op 0 ndim ",
                    HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0),
                    U8(0), U8(0), U8(0), U8(EACH), CYCLE0),
    REJECT("response 0: description shape value 9223372036854775808 above",
           HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(1), U8(0), U8(0), U8(0),
           U8(0), U8(0), U8(2), VAR(1), VAR((uint64_t)INT64_MAX + 1), CYCLE0),
    /* truncated: before the description, inside it, inside a shape value */
    REJECT("response 0: truncated reading description kind", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("abcdefghij"), U8(1), U8(0), U8(0)),
    REJECT("response 0: truncated reading description op", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("abcdefghij"), U8(1), U8(0), U8(0), U8(0), U8(TC_FLOAT32)),
    REJECT("response 0: truncated reading description ndim", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("abcdefghij"), U8(1), U8(0), U8(0), U8(0), U8(TC_FLOAT32),
           U8(0)),
    REJECT("response 0: truncated reading description shape value", HDR(TC_WIRE_CYCLE, 0, 1),
           U8(TC_WIRE_RUN), STR("abcdefghij"), U8(1), U8(0), U8(0), U8(0), U8(TC_FLOAT32),
           U8(0), U8(2), VAR(3), U8(0x80)),
    /* ---- a RUN's value: after the description, zigzag int32 ---- */
    ACCEPT_THEN(value_is_int32_min, HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(2),
                U8(0), U8(0), VAR(UINT32_MAX), CYCLE0),
    ACCEPT_THEN(value_is_int32_max, HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(2),
                U8(0), U8(0), VAR((uint64_t)UINT32_MAX - 1), CYCLE0),
    ACCEPT_THEN(value_is_minus_1, HDR(TC_WIRE_CYCLE, 0, 1), U8(TC_WIRE_RUN), STR("r"), U8(2),
                U8(0), U8(0), RAW("\x81\x80\x80\x00"), CYCLE0), /* padded */
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
    REJECT("count 1 cannot fit in the 12 bytes left", HDR(TC_WIRE_CYCLE, 0, 1),
           RAW("\0\1r\0\0\0"), CYCLE_IDS0),
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
    ACCEPT_THEN(round_is_max, HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 1), RAW("\0\1r\0\0\0"),
                U8(7), RAW("\xC0\x80\x00"), RAW("\0\0\0\0\0"), U8(TC_ERR_SHUTDOWN), STR("")),
    REJECT("wire: round 65 above 64 (byte 6)", HDR(TC_WIRE_CYCLE, 0, 0), U8(0),
           VAR(TC_WIRE_MAX_ROUND + 1), RAW("\0\0\0\0\0")),
    REJECT("wire: round 65 above 64 (byte 12)", HDR(TC_WIRE_CYCLE, 0, 1), RAW("\0\1r\0\0\0"),
           U8(0), VAR(TC_WIRE_MAX_ROUND + 1), RAW("\0\0\0\0\0")),
    REJECT("wire: round 128 above 64 (byte 6)", HDR(TC_WIRE_CYCLE, 0, 0), U8(0), VAR(128),
           RAW("\0\0\0\0\0")),
    REJECT("round 18446744073709551615 above 64", HDR(TC_WIRE_CYCLE, 0, 0), U8(0),
           VAR(UINT64_MAX), RAW("\0\0\0\0\0")),
    REJECT("round 4294967361 above 64", HDR(TC_WIRE_CYCLE, 0, 0), U8(0),
           VAR(((uint64_t)1 << 32) + TC_WIRE_MAX_ROUND + 1), RAW("\0\0\0\0\0")),
    REJECT("wire: truncated reading round (byte 6)", HDR(TC_WIRE_CYCLE, 0, 0), U8(0), U8(0xC0)),
    REJECT("wire: truncated reading round (byte 6)", HDR(TC_WIRE_CYCLE, 0, 0), U8(0),
           RAW("\x80\x80")),
    REJECT("round: varint longer than 10 bytes", HDR(TC_WIRE_CYCLE, 0, 0), U8(0), REP(10, 0x80),
           RAW("\0\0\0\0\0")),

    /* ---- id lists: counts. A list of TC_WIRE_MAX_CACHE ids is decoded in the
     * large case; here only the ends of the range that fit in a bytes_t ---- */
    REJECT("ready count 1048577 above 1048576 (byte 8)", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0,
           VAR(TC_WIRE_MAX_CACHE + 1), U8(0)),
    REJECT("some count 1048577 above 1048576 (byte 9)", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0,
           U8(0), VAR(TC_WIRE_MAX_CACHE + 1), U8(0)),
    REJECT("stale count 18446744073709551615 above 1048576", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_HEAD0, RAW("\0\0"), VAR(UINT64_MAX)),
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
    REJECT("stale count 2 cannot fit in the 1 bytes left", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_HEAD0, RAW("\0\0"), U8(2), U8(0)),
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
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(1), VAR(TC_WIRE_MAX_CACHE - 1),
           RAW("\0\0\0")),
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
           HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(3), VAR(10), VAR(0),
           VAR(TC_WIRE_MAX_CACHE), RAW("\0\0")),
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
    REJECT("some id 0: value: varint longer than 10 bytes", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_HEAD0, U8(0), U8(1), REP(10, 0x80), U8(0), RAW("\0\0")),

    /* ---- terminate record: after the cycle record ---- */
    REJECT("truncated reading terminate status", HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0),
           CYCLE0),
    REJECT("truncated reading terminate text", HDR(TC_WIRE_CYCLE, TC_WIRE_F_TERMINATE, 0),
           CYCLE0, U8(TC_ERR_SHUTDOWN)),
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
    REJECT("10 trailing bytes", HDR(TC_WIRE_REQUESTS, 0, 1), REQ(0, 0, 0, 0, 0, 0, "a"),
           CYCLE_IDS0, U8(1), EAGER(0, 1, 0x11)),
    /* nor a round after a REQUESTS' seq */
    REJECT("wire: 1 trailing bytes after the message (byte 6)",
           HDR(TC_WIRE_REQUESTS, TC_WIRE_F_SEQ, 0), U8(3), U8(2)),

    /* ---- the eager record: each message a CYCLE with no responses and an empty
     * cycle record up to the eager record, whose count is byte 11 ---- */
    /* valid: none; two at 3 bytes each (the fewest), ids 0 and 1; one of the
     * largest at the largest id; padded varints for id and len */
    ACCEPT(HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(0)),
    ACCEPT_THEN(two_smallest_inputs, HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(2),
                EAGER(0, 1, 0xAA), EAGER(0, 1, 0x00)),
    ACCEPT_THEN(largest_input_at_largest_id, HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(1),
                EAGER(TC_WIRE_MAX_CACHE - 1, TC_WIRE_MAX_EAGER, 0xC3)),
    ACCEPT_THEN(padded_id_and_len, HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(1),
                RAW("\x85\x80\x00"), /* id 5, padded */
                RAW("\x82\x00"),     /* len 2, padded */
                RAW("\x01\x02")),
    /* count: at most TC_WIRE_MAX_CACHE, and 3 bytes an input at least */
    REJECT("wire: eager count 1048577 above 1048576 (byte 11)", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_IDS0, VAR(TC_WIRE_MAX_CACHE + 1), EAGER(0, 1, 0xAA)),
    REJECT("eager count 18446744073709551615 above 1048576", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_IDS0, VAR(UINT64_MAX)),
    REJECT("eager count: varint above 2^64-1", HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0,
           REP(9, 0xFF), U8(0x02)),
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
    REJECT("eager input 1: id delta ", EAGER_PAIR(0, UINT64_MAX)),     /* 0 + 1 + d wraps to 0 */
    REJECT("eager input 1: id delta ", EAGER_PAIR(5, UINT64_MAX - 5)), /* wraps to 0 */
    REJECT("eager input 1: id delta ", EAGER_PAIR(5, UINT64_MAX - 4)), /* wraps to 1 */
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
    REJECT("eager input 0: len 18446744073709551615 outside", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_IDS0, U8(1), U8(0), VAR(UINT64_MAX)),
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
    REJECT("eager input 0: truncated reading len (byte 13)", HDR(TC_WIRE_CYCLE, 0, 0),
           CYCLE_IDS0, U8(1), RAW("\x05\x80\x80")),
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

/* Writes a row's pieces into b, with each for the pieces that say EACH. */
static void build(bytes_t *b, const piece_t *p, unsigned each)
{
    uint64_t k;
    int i;

    b->n = 0;
    for (i = 0; i < MAX_PIECES && p[i].op != P_END; i++) {
        const piece_t *q = &p[i];
        uint64_t v = q->op == P_U8 && q->v == EACH ? each : q->v;
        switch (q->op) {
        case P_END: break;
        case P_U8: b_u8(b, (unsigned)v); break;
        case P_VAR: b_varint(b, v); break;
        case P_RAW: b_raw(b, q->s, q->n); break;
        case P_STR:
            b_varint(b, q->n);
            b_raw(b, q->s, q->n);
            break;
        case P_FILL: b_fill(b, (size_t)v, (unsigned)q->n); break;
        case P_REP:
            for (k = 0; k < v; k++) {
                b_u8(b, (unsigned)q->n);
            }
            break;
        case P_VARS:
            for (k = 0; k < q->n; k++) {
                b_varint(b, v);
            }
            break;
        case P_COUNTING:
            for (k = 0; k < v; k++) {
                b_varint(b, k);
            }
            break;
        }
    }
}

/* Every row of the table: accepted ones must decode (and re-encode), the
 * others must be refused with their status and reason. */
TC_CASE(malformed)
{
    static bytes_t b; /* static: 80 KiB */
    size_t r;
    unsigned v;

    for (r = 0; r < sizeof(malformed) / sizeof(malformed[0]); r++) {
        const malformed_t *row = &malformed[r];
        for (v = 0; v < (row->each ? 256u : 1u); v++) {
            if ((row->each == EACH_OUTSIDE && v >= row->each_lo && v <= row->each_hi) ||
                (row->each == EACH_BEYOND && (v & ~row->each_lo) == 0)) {
                continue;
            }
            build(&b, row->bytes, v);
            if (row->status != TC_OK) {
                expect_reject_at(b.b, b.n, row->status, row->reason, row->line);
                continue;
            }
            expect_ok_at(&b, row->line);
            if (row->then != NULL) {
                tc_wire_msg_t d;
                char err[256];
                CHECK_MSG(tc__wire_decode(b.b, b.n, &d, err, sizeof(err)) == TC_OK,
                          "line %d: %s", row->line, err);
                row->then(&d);
                tc__wire_msg_free(&d);
            }
        }
    }
}

/* The encoder refuses what the decoder would, and leaves buf as it was. */
static void expect_encode_reject_at(const tc_wire_msg_t *m, const char *needle, int line)
{
    tc_wire_buf_t buf = {0};
    tc_status_t st;

    CHECK_OK(tc__wire_encode(&(tc_wire_msg_t){.type = TC_WIRE_BYE}, &buf));
    tc__clear_error();
    st = tc__wire_encode(m, &buf);
    CHECK_MSG(st == TC_ERR_ARG, "line %d: encode returned %d (%s), want TC_ERR_ARG", line,
              (int)st, tc_status_string(st));
    CHECK_MSG(buf.len == 5 && buf.data[0] == TC_WIRE_MAGIC && buf.data[4] == 0,
              "line %d: buf changed", line);
    CHECK_MSG(strstr(tc_last_error(), needle) != NULL, "line %d: error \"%s\" lacks \"%s\"",
              line, tc_last_error(), needle);
    tc__wire_buf_free(&buf);
}
#define EXPECT_ENCODE_REJECT(m, needle) expect_encode_reject_at((m), (needle), __LINE__)

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
        m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .round = TC_WIRE_MAX_ROUND, .nsome = 2,
                            .some = ids};
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
        static const char *const needles[] = {
            "kind 7 not in 0..6", "unknown dtype 10", "unknown op 5", "ndim 9", "shape[1] = -1",
            "name length 0", "name length 1025", "name is NULL", "name contains a 0x00",
            "shape[0] = -9223372036854775808", "kind 255", "unknown op 255"};
        memset(r, 0, sizeof(r));
        r[0].name = r[1].name = "ok";
        r[0].name_len = r[1].name_len = 2;
        switch (i) {
        case 0: r[1].kind = TC_KIND_COUNT; break;
        case 1: r[1].dtype = TC_UINT16 + 1; break;
        case 2: r[1].op = TC_PROD + 1; break;
        case 3: r[1].ndim = TC_MAX_DIMS + 1; break;
        case 4: r[1].ndim = 2; r[1].shape[0] = 5; r[1].shape[1] = -1; break;
        case 5: r[1].name_len = 0; break;
        case 6: r[1].name = long_name; r[1].name_len = TC_MAX_NAME_LEN + 1; break;
        case 7: r[1].name = NULL; break;
        case 8: r[1].name = "a\0b"; r[1].name_len = 3; break;
        case 9: r[1].ndim = 1; r[1].shape[0] = INT64_MIN; break;
        case 10: r[1].kind = 255; break;
        default: r[1].op = 255; break;
        }
        EXPECT_ENCODE_REJECT(&m, needles[i]);
        CHECK_STR_CONTAINS(tc_last_error(), "request 1: ");
    }

    /* responses */
    m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = 2, .resps = s};
    for (i = 0; i < 13; i++) {
        static const char *const needles[] = {
            "unknown rtype 2", "error status 0", "error status 9", "error text length 2049",
            "error text is NULL", "error text contains a 0x00", "ndim0 16777217",
            "dim0 is NULL", "dim0[1] = -1", "name length 0", "name contains a 0x00",
            "cache_ref 1048577 above 1048576", "cache_ref 4294967295 above 1048576"};
        memset(s, 0, sizeof(s));
        s[0].name = s[1].name = "ok";
        s[0].name_len = s[1].name_len = 2;
        switch (i) {
        case 0: s[1].rtype = 2; break;
        case 1: s[1].rtype = TC_WIRE_ERROR; s[1].status = 0; break;
        case 2: s[1].rtype = TC_WIRE_ERROR; s[1].status = TC_ERR_TIMEOUT + 1; break;
        case 3:
            s[1].rtype = TC_WIRE_ERROR;
            s[1].status = 1;
            s[1].text = long_text;
            s[1].text_len = TC_WIRE_MAX_TEXT + 1;
            break;
        case 4: s[1].rtype = TC_WIRE_ERROR; s[1].status = 1; s[1].text_len = 4; break;
        case 5:
            s[1].rtype = TC_WIRE_ERROR;
            s[1].status = 1;
            s[1].text = "x\0";
            s[1].text_len = 2;
            break;
        case 6: s[1].ndim0 = TC_WIRE_MAX_RANKS + 1; s[1].dim0 = neg; break;
        case 7: s[1].ndim0 = 2; break;
        case 8: s[1].ndim0 = 2; s[1].dim0 = neg; break;
        case 9: s[1].name_len = 0; break;
        case 10: s[1].name = "\0"; s[1].name_len = 1; break;
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
                m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = 1, .resps = s, .seq = 1,
                                    .round = 3, .nready = 3, .ready = ok, .nsome = 3,
                                    .some = ok, .nstale = 3, .stale = ok};
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
        static const tc_wire_eager_t ok[] = {{2, 1, "a"}, {4, 3, "bcd"},
                                             {TC_WIRE_MAX_CACHE - 1, 2, "ef"}};
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
            e[2] = (tc_wire_eager_t){cases[c].id, cases[c].len,
                                     cases[c].null_data ? NULL : big};
            /* a valid response and id lists before, a terminate record after */
            m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .flags = TC_WIRE_F_TERMINATE,
                                .count = 1, .resps = s, .seq = 1, .nready = 1,
                                .ready = &ok[2].id, .neager = 3, .eager = e,
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
    static const int32_t ok_ranks[] = {0, 3, TC_WIRE_MAX_RANKS - 1},
                         dup[] = {1, 3, 3}, down[] = {5, 2}, neg[] = {-1},
                         neg_later[] = {0, INT32_MIN}, at_max[] = {TC_WIRE_MAX_RANKS},
                         i32max[] = {0, INT32_MAX}, last_max[] = {4, TC_WIRE_MAX_RANKS};
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
        {TC_WIRE_RUN, 0, {.kind = TC_KIND_COUNT}, "description: kind 7 dtype 0 op 0 ndim 0"},
        {TC_WIRE_RUN, 1, {.kind = 255, .dtype = TC_INT32}, "description: kind 255 dtype 2"},
        {TC_WIRE_RUN, 0, {.dtype = TC_UINT16 + 1}, "description: kind 0 dtype 10 op 0"},
        {TC_WIRE_RUN, 0, {.op = TC_PROD + 1}, "description: kind 0 dtype 0 op 5 ndim 0"},
        {TC_WIRE_RUN, 0, {.ndim = TC_MAX_DIMS + 1}, "description: kind 0 dtype 0 op 0 ndim 9"},
        {TC_WIRE_RUN, 0, {.ndim = 255}, "ndim 255"},
        {TC_WIRE_RUN, 0, {.ndim = 2, .shape = {1, -1}}, "description: shape[1] is negative"},
        {TC_WIRE_RUN, 0, {.ndim = 1, .shape = {INT64_MIN}}, "description: shape[0] is negative"},
        {TC_WIRE_RUN, 0, {.ndim = TC_MAX_DIMS, .shape = {0, 0, 0, 0, 0, 0, 0, -5}},
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
        s[0] = (tc_wire_response_t){.rtype = TC_WIRE_RUN, .name = "ok", .name_len = 2,
                                    .pset = TC_WIRE_MAX_PSET, .has_desc = 1,
                                    .desc = {.kind = TC_KIND_JOIN, .dtype = TC_INT32},
                                    .has_value = 1, .value = INT32_MIN};
        s[1] = (tc_wire_response_t){.rtype = resp_cases[c].rtype, .name = "bad", .name_len = 3,
                                    .pset = resp_cases[c].pset, .status = TC_ERR_MISMATCH,
                                    .has_desc = 1, .desc = resp_cases[c].desc, .has_value = 1,
                                    .value = -1};
        m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = 2, .resps = s};
        EXPECT_ENCODE_REJECT(&m, resp_cases[c].needle);
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
        s[0] = (tc_wire_response_t){.rtype = TC_WIRE_RUN, .name = "lim", .name_len = 3,
                                    .pset = TC_WIRE_MAX_PSET, .has_desc = 1,
                                    .desc = {.kind = TC_KIND_COUNT - 1, .dtype = TC_UINT16,
                                             .op = TC_PROD, .ndim = TC_MAX_DIMS,
                                             .shape = {INT64_MAX, 0, INT64_MAX, 0, 1, 2, 3,
                                                       INT64_MAX}}};
        m = (tc_wire_msg_t){.type = TC_WIRE_CYCLE, .count = 1, .resps = s};
        roundtrip(&m);
    }
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
    rng_state = RNG_SEED;

    g_garbage_ok = check_garbage(300000);
    CHECK_GT(g_garbage_ok, 0);
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    if (g_garbage_ok >= 0) {
        printf("test_wire: OK (%ld decodes checked, %ld of 300000 random buffers were valid)\n",
               n_checks, g_garbage_ok);
    } else {
        printf("test_wire: OK (%ld decodes checked)\n", n_checks);
    }
    return 0;
}
