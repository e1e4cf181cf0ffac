/*
 * wire_codec_testutil.c - the checks the codec's unit tests share
 * (wire_codec_testutil.h, wire_malformed.h).
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

#define RNG_SEED 0x5EEDC0DE12345678ull

static uint64_t rng_state = RNG_SEED;

void rng_reset(void)
{
    rng_state = RNG_SEED;
}

uint64_t rng(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint32_t rng_below(uint32_t n)
{
    return (uint32_t)(rng() % n);
}

long n_checks;

/* Compares the fields a message carries on the wire (checks abort on a difference). */
void check_same(const tc_wire_msg_t *a, const tc_wire_msg_t *b)
{
    uint32_t i, j;

    CHECK_EQ(a->type, b->type);
    CHECK_EQ(a->flags, b->flags);
    CHECK_EQ(a->count, b->count);
    for (i = 0; i < a->count && a->type == TC_WIRE_REQUESTS; i++) {
        const tc_wire_request_t *x = &a->reqs[i], *y = &b->reqs[i];
        CHECK_EQ(x->kind, y->kind);
        CHECK_EQ(x->dtype, y->dtype);
        CHECK_EQ(x->memory, y->memory);
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
            CHECK_MSG(x->ranks[j] == y->ranks[j],
                      "request %" PRIu32 ": rank %" PRIu32 ": %" PRId32 " vs %" PRId32, i, j,
                      x->ranks[j], y->ranks[j]);
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
        CHECK_MSG(a->cache_gen == b->cache_gen, "cache_gen %" PRIu64 " vs %" PRIu64, a->cache_gen,
                  b->cache_gen);
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
            CHECK_MSG(x->len == y->len, "eager %" PRIu32 ": len %" PRIu32 " vs %" PRIu32, j, x->len,
                      y->len);
            CHECK_MSG(memcmp(x->data, y->data, x->len) == 0, "eager %" PRIu32 ": bytes differ", j);
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
static void check_decoded_eager(uint32_t n, const tc_wire_eager_t *ents, const void *in, size_t len)
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
void check_decoded_storage(const tc_wire_msg_t *m, const void *in, size_t len)
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
void check_reencodes(const tc_wire_msg_t *decoded)
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
size_t roundtrip(const tc_wire_msg_t *m)
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
void expect_reject_at(const void *data, size_t len, tc_status_t want, const char *needle, int line)
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
    CHECK_MSG(memchr(err, '\0', sizeof(err)) != NULL && err[0] != '\0' && strchr(err, '\n') == NULL,
              "line %d: reason not one non-empty line", line);
    CHECK_MSG(strncmp(err, "wire: ", 6) == 0, "line %d: reason \"%s\"", line, err);
    if (needle != NULL) {
        CHECK_MSG(strstr(err, needle) != NULL, "line %d: reason \"%s\" lacks \"%s\"", line, err,
                  needle);
    }
}

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
/* Prefixes and single-byte changes                                          */
/* ------------------------------------------------------------------------ */

void encode_into(const tc_wire_msg_t *m, tc_wire_buf_t *buf)
{
    buf->len = 0;
    CHECK_OK(tc__wire_encode(m, buf));
}

/* Every proper prefix of a valid encoding is rejected (for a message over
 * 4 KiB: the first and last 512 and every 7th in between, since the cost is
 * quadratic). Each prefix sits at the end of a heap block so ASan sees any
 * read past it. */
void check_prefixes(const uint8_t *data, size_t len)
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
long check_corruptions(const uint8_t *data, size_t len, int every_value)
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

/* The encoder refuses what the decoder would, and leaves buf as it was. */
void expect_encode_reject_at(const tc_wire_msg_t *m, const char *needle, int line)
{
    tc_wire_buf_t buf = {0};
    tc_status_t st;

    CHECK_OK(tc__wire_encode(&(tc_wire_msg_t){.type = TC_WIRE_BYE}, &buf));
    tc__clear_error();
    st = tc__wire_encode(m, &buf);
    CHECK_MSG(st == TC_ERR_ARG, "line %d: encode returned %d (%s), want TC_ERR_ARG", line, (int)st,
              tc_status_string(st));
    CHECK_MSG(buf.len == 5 && buf.data[0] == TC_WIRE_MAGIC && buf.data[4] == 0,
              "line %d: buf changed", line);
    CHECK_MSG(strstr(tc_last_error(), needle) != NULL, "line %d: error \"%s\" lacks \"%s\"", line,
              tc_last_error(), needle);
    tc__wire_buf_free(&buf);
}

/* ------------------------------------------------------------------------ */
/* Hand-made messages (wire_malformed.h)                                     */
/* ------------------------------------------------------------------------ */

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

void check_malformed(const malformed_t *rows, size_t n)
{
    static bytes_t b; /* static: 80 KiB */
    size_t r;
    unsigned v;

    for (r = 0; r < n; r++) {
        const malformed_t *row = &rows[r];
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
                CHECK_MSG(tc__wire_decode(b.b, b.n, &d, err, sizeof(err)) == TC_OK, "line %d: %s",
                          row->line, err);
                row->then(&d);
                tc__wire_msg_free(&d);
            }
        }
    }
}

int wire_test_main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    printf("%s: OK (%ld decodes checked)\n", tc_test_prog(), n_checks);
    return 0;
}
