/*
 * test_wire.c - unit test of the control-message codec (src/wire/wire.c).
 *
 * Checks round trips of every message type and field range, pins a few exact
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
#include "util/status.h"
#include "wire/wire.h"

/* check.h names the rank through tc_rank(); a program linked without the
 * engine gets this one. The library's definition wins where it is linked. */
__attribute__((weak)) int tc_rank(void)
{
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

static uint64_t rng_state = 0x5EEDC0DE12345678ull;

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

static long n_checks; /* messages decoded, for the summary line */

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
    }
    for (i = 0; i < a->count && a->type == TC_WIRE_RESPONSES; i++) {
        const tc_wire_response_t *x = &a->resps[i], *y = &b->resps[i];
        CHECK_EQ(x->rtype, y->rtype);
        CHECK_EQ(x->name_len, y->name_len);
        CHECK(memcmp(x->name, y->name, x->name_len) == 0);
        if (x->rtype == TC_WIRE_RUN) {
            CHECK_EQ(x->ndim0, y->ndim0);
            for (j = 0; j < x->ndim0; j++) {
                CHECK_EQ(x->dim0[j], y->dim0[j]);
            }
        } else {
            CHECK_EQ(x->status, y->status);
            CHECK_EQ(x->text_len, y->text_len);
            CHECK(x->text_len == 0 || memcmp(x->text, y->text, x->text_len) == 0);
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

/* A decoded message: strings are NUL-terminated copies outside the input. */
static void check_decoded_storage(const tc_wire_msg_t *m, const void *in, size_t len)
{
    uint32_t i;

    CHECK(!points_into(m->reqs, in, len) && !points_into(m->resps, in, len));
    for (i = 0; i < m->count && m->type == TC_WIRE_REQUESTS; i++) {
        CHECK(m->reqs[i].name != NULL && !points_into(m->reqs[i].name, in, len));
        CHECK_EQ(m->reqs[i].name[m->reqs[i].name_len], '\0');
    }
    for (i = 0; i < m->count && m->type == TC_WIRE_RESPONSES; i++) {
        const tc_wire_response_t *r = &m->resps[i];
        CHECK(r->name != NULL && !points_into(r->name, in, len));
        CHECK_EQ(r->name[r->name_len], '\0');
        if (r->rtype == TC_WIRE_ERROR) {
            CHECK(r->text != NULL && !points_into(r->text, in, len));
            CHECK_EQ(r->text[r->text_len], '\0');
        } else {
            CHECK(r->ndim0 == 0 || (r->dim0 != NULL && !points_into(r->dim0, in, len)));
        }
    }
    if (m->flags & TC_WIRE_F_TERMINATE) {
        CHECK(m->term_text != NULL && !points_into(m->term_text, in, len));
        CHECK_EQ(m->term_text[m->term_text_len], '\0');
    }
    if (m->count > 0 || (m->flags & TC_WIRE_F_TERMINATE)) {
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

/* Decodes data; must fail with TC_ERR_TRANSPORT, a one-line reason containing
 * needle (if not NULL), and leave the output untouched. */
static void expect_reject_at(const void *data, size_t len, const char *needle, int line)
{
    tc_wire_msg_t m, before;
    char err[256];
    tc_status_t st;

    memset(&m, 0xA5, sizeof(m));
    memcpy(&before, &m, sizeof(m)); /* bytes, padding included */
    memset(err, 'x', sizeof(err));
    st = tc__wire_decode(data, len, &m, err, sizeof(err));
    n_checks++;
    CHECK_MSG(st == TC_ERR_TRANSPORT, "line %d: decode returned %d (%s), want rejection", line,
              (int)st, tc_status_string(st));
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
#define EXPECT_REJECT(data, len, needle) expect_reject_at((data), (len), (needle), __LINE__)

/* Hand-built byte strings for malformed input. */
typedef struct {
    uint8_t b[16384];
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

static void b_str(bytes_t *b, const char *s)
{
    b_varint(b, strlen(s));
    b_raw(b, s, strlen(s));
}

static void b_header(bytes_t *b, unsigned type, unsigned flags, uint64_t count)
{
    b->n = 0;
    b_u8(b, TC_WIRE_MAGIC);
    b_u8(b, TC_WIRE_VERSION);
    b_u8(b, type);
    b_u8(b, flags);
    b_varint(b, count);
}

/* A request with every shape value set to dim. */
static void b_req(bytes_t *b, unsigned kind, unsigned dtype, unsigned op, uint64_t zz_root,
                  unsigned ndim, uint64_t dim, const char *name)
{
    unsigned d;

    b_u8(b, kind);
    b_u8(b, dtype);
    b_u8(b, op);
    b_varint(b, zz_root);
    b_u8(b, ndim);
    for (d = 0; d < ndim; d++) {
        b_varint(b, dim);
    }
    b_str(b, name);
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
#define EXPECT_OK(b) expect_ok_at((b), __LINE__)

/* ------------------------------------------------------------------------ */
/* Random valid messages                                                     */
/* ------------------------------------------------------------------------ */

#define GEN_MAX_ENTRIES 12
#define GEN_MAX_DIM0 300

typedef struct {
    tc_wire_msg_t msg;
    tc_wire_request_t reqs[GEN_MAX_ENTRIES];
    tc_wire_response_t resps[GEN_MAX_ENTRIES];
    char names[GEN_MAX_ENTRIES][TC_MAX_NAME_LEN];
    char texts[GEN_MAX_ENTRIES][TC_WIRE_MAX_TEXT];
    int64_t dim0[GEN_MAX_ENTRIES][GEN_MAX_DIM0];
    char term[TC_WIRE_MAX_TEXT];
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
 * texts of maximal length and long dim0 arrays. */
static const tc_wire_msg_t *gen_msg(unsigned max_entries, int big)
{
    tc_wire_msg_t *m = &gen.msg;
    uint32_t i, j;

    memset(m, 0, sizeof(*m));
    m->type = (uint8_t)(1 + rng_below(3));
    if (m->type == TC_WIRE_BYE) {
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
            r->dtype = (uint8_t)rng_below(TC_FLOAT64 + 1);
            r->op = (uint8_t)rng_below(TC_PROD + 1);
            r->root = rand_root();
            r->ndim = (uint8_t)rng_below(TC_MAX_DIMS + 1);
            for (j = 0; j < r->ndim; j++) {
                r->shape[j] = rand_dim();
            }
            r->name = gen.names[i];
            r->name_len = rand_bytes(gen.names[i], 1, TC_MAX_NAME_LEN, big);
        }
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
        } else {
            r->status = (uint8_t)(1 + rng_below(TC_ERR_TIMEOUT));
            r->text = gen.texts[i];
            r->text_len = rand_bytes(gen.texts[i], 0, TC_WIRE_MAX_TEXT, big);
        }
    }
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

static void test_kind_names(void)
{
    CHECK(strcmp(tc__kind_name(TC_KIND_ALLREDUCE), "allreduce") == 0);
    CHECK(strcmp(tc__kind_name(TC_KIND_ALLGATHER), "allgather") == 0);
    CHECK(strcmp(tc__kind_name(TC_KIND_BROADCAST), "broadcast") == 0);
    CHECK(strcmp(tc__kind_name(-1), "?") == 0);
    CHECK(strcmp(tc__kind_name(TC_KIND_COUNT), "?") == 0);
    CHECK(strcmp(tc__kind_name(255), "?") == 0);
}

/* Exact bytes for three small messages, worked out by hand from wire.h. */
static void test_golden(void)
{
    static const uint8_t bye[] = {0x7C, 0x01, 0x03, 0x00, 0x00};
    /* broadcast float32 sum, root -2 (zigzag 3), shape {300, 0}, name "ab" */
    static const uint8_t req[] = {0x7C, 0x01, 0x01, 0x01, 0x01, 0x02, 0x06, 0x00,
                                  0x03, 0x02, 0xAC, 0x02, 0x00, 0x02, 0x61, 0x62};
    /* RUN "x" dim0 {1, 128}; terminate TC_ERR_SHUTDOWN "bye" */
    static const uint8_t resp[] = {0x7C, 0x01, 0x02, 0x02, 0x01, 0x00, 0x01, 0x78, 0x02,
                                   0x01, 0x80, 0x01, 0x05, 0x03, 0x62, 0x79, 0x65};
    static const int64_t dim0[] = {1, 128};
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
    m = (tc_wire_msg_t){.type = TC_WIRE_RESPONSES, .flags = TC_WIRE_F_TERMINATE, .count = 1,
                        .resps = &s, .term_status = TC_ERR_SHUTDOWN, .term_text = "bye",
                        .term_text_len = 3};
    buf.len = 0;
    CHECK_OK(tc__wire_encode(&m, &buf));
    CHECK_EQ(buf.len, sizeof(resp));
    CHECK(memcmp(buf.data, resp, sizeof(resp)) == 0);
    tc__wire_buf_free(&buf);
    CHECK(buf.data == NULL && buf.len == 0 && buf.cap == 0);
    tc__wire_buf_free(&buf);
    tc__wire_buf_free(NULL);
}

static void test_requests_roundtrip(void)
{
    static const int64_t dims[] = {0, 1, 127, 128, 16383, 16384, (int64_t)1 << 32,
                                   INT64_MAX - 1, INT64_MAX};
    static const int32_t roots[] = {0, 1, -1, 63, -64, 64, INT32_MAX, INT32_MIN, INT32_MIN + 1};
    static char name_max[TC_MAX_NAME_LEN];
    static tc_wire_request_t reqs[TC_KIND_COUNT * 8 * 5];
    tc_wire_msg_t m = {0};
    uint32_t n = 0, i;
    int kind, dtype, op, ndim, flags;

    for (i = 0; i < TC_MAX_NAME_LEN; i++) {
        name_max[i] = (char)(uint8_t)(i % 3 == 0 ? 0xFF : 1 + i % 255);
    }
    /* every kind x dtype x op, ndim cycling 0..8, shapes and roots cycling */
    for (kind = 0; kind < TC_KIND_COUNT; kind++) {
        for (dtype = TC_UINT8; dtype <= TC_FLOAT64; dtype++) {
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

static void test_responses_roundtrip(void)
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
                                .dim0 = dim0};
    s[2] = (tc_wire_response_t){.rtype = TC_WIRE_ERROR, .name = "bad", .name_len = 3,
                                .status = TC_ERR_MISMATCH, .text = "ranks 0,1 differ",
                                .text_len = 16};
    s[3] = (tc_wire_response_t){.rtype = TC_WIRE_ERROR, .name = "\xFF\xFE", .name_len = 2,
                                .status = TC_ERR_ARG, .text = NULL, .text_len = 0};
    s[4] = (tc_wire_response_t){.rtype = TC_WIRE_ERROR, .name = "e", .name_len = 1,
                                .status = TC_ERR_TIMEOUT, .text = "", .text_len = 0};
    s[5] = (tc_wire_response_t){.rtype = TC_WIRE_ERROR, .name = "long", .name_len = 4,
                                .status = TC_ERR_TRANSPORT, .text = text_max,
                                .text_len = TC_WIRE_MAX_TEXT};
    for (term = 0; term <= 1; term++) {
        m = (tc_wire_msg_t){.type = TC_WIRE_RESPONSES, .count = 6, .resps = s};
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
    /* RUN ignores status/text and ERROR ignores ndim0/dim0 */
    s[0].status = 99;
    s[0].text_len = 99999;
    s[2].ndim0 = 1u << 30;
    m = (tc_wire_msg_t){.type = TC_WIRE_RESPONSES, .count = 3, .resps = s};
    {
        tc_wire_buf_t buf = {0};
        tc_wire_msg_t d;
        char err[128];
        CHECK_OK(tc__wire_encode(&m, &buf));
        CHECK_OK(tc__wire_decode(buf.data, buf.len, &d, err, sizeof(err)));
        CHECK_EQ(d.resps[0].status, 0);
        CHECK_EQ(d.resps[0].text_len, 0);
        CHECK(d.resps[0].text == NULL);
        CHECK_EQ(d.resps[2].ndim0, 0);
        CHECK(d.resps[2].dim0 == NULL);
        CHECK(d.resps[1].dim0 != NULL && d.resps[1].dim0[4999] == dim0[4999]);
        tc__wire_msg_free(&d);
        tc__wire_buf_free(&buf);
    }
}

static void test_bye_and_misc(void)
{
    tc_wire_msg_t m = {.type = TC_WIRE_BYE}, d;
    tc_wire_buf_t buf = {0};
    char err[64];
    size_t i, off[4], lens[4];

    CHECK_EQ(roundtrip(&m), 5);
    /* a decoded BYE owns nothing */
    CHECK_OK(tc__wire_encode(&m, &buf));
    CHECK_OK(tc__wire_decode(buf.data, buf.len, &d, err, sizeof(err)));
    CHECK(d.type == TC_WIRE_BYE && d.count == 0 && d.reqs == NULL && d.resps == NULL);
    tc__wire_msg_free(&d);

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
static void test_large(void)
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
    }
    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .count = N, .reqs = r};
    len = roundtrip(&m);
    CHECK_EQ(len, 4 + 3 + (size_t)N * 7); /* minimal requests: 7 bytes each */
    m = (tc_wire_msg_t){.type = TC_WIRE_RESPONSES, .count = N, .resps = s};
    len = roundtrip(&m);
    CHECK_EQ(len, 4 + 3 + (size_t)N * 4); /* minimal responses: 4 bytes each */
    free(r);
    free(s);
}

static void test_random_roundtrip(void)
{
    int i;

    for (i = 0; i < 3000; i++) {
        roundtrip(gen_msg(GEN_MAX_ENTRIES, i % 4 == 0));
    }
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

static void test_truncation_and_corruption(void)
{
    tc_wire_buf_t buf = {0};
    tc_wire_msg_t m = {.type = TC_WIRE_BYE};
    uint8_t *trailing;
    int i;
    long accepted = 0;

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

/* One hand-made message per rule. */
static void test_malformed(void)
{
    static bytes_t b; /* static: 16 KiB */
    int i;

    /* header */
    EXPECT_REJECT(b.b, 0, "truncated reading magic");
    b_header(&b, TC_WIRE_BYE, 0, 0);
    EXPECT_OK(&b);
    b.b[0] = 0x7D;
    EXPECT_REJECT(b.b, b.n, "magic");
    b.b[0] = 0x00;
    EXPECT_REJECT(b.b, b.n, "magic");
    b_header(&b, TC_WIRE_BYE, 0, 0);
    b.b[1] = 0;
    EXPECT_REJECT(b.b, b.n, "version");
    b.b[1] = 2;
    EXPECT_REJECT(b.b, b.n, "version");
    for (i = 0; i < 256; i++) {
        if (i >= TC_WIRE_REQUESTS && i <= TC_WIRE_BYE) {
            continue;
        }
        b_header(&b, (unsigned)i, 0, 0);
        EXPECT_REJECT(b.b, b.n, "unknown message type");
    }

    /* flags that do not fit the type; BYE takes none */
    for (i = 0; i < 256; i++) {
        b_header(&b, TC_WIRE_REQUESTS, (unsigned)i, 0);
        if (i == 0 || i == TC_WIRE_F_SHUTDOWN) {
            EXPECT_OK(&b);
        } else {
            EXPECT_REJECT(b.b, b.n, "flags");
        }
        b_header(&b, TC_WIRE_BYE, (unsigned)i, 0);
        if (i == 0) {
            EXPECT_OK(&b);
        } else {
            EXPECT_REJECT(b.b, b.n, "flags");
        }
        b_header(&b, TC_WIRE_RESPONSES, (unsigned)i, 0);
        if (i == TC_WIRE_F_TERMINATE) {
            b_u8(&b, TC_ERR_SHUTDOWN);
            b_str(&b, "");
        }
        if (i == 0 || i == TC_WIRE_F_TERMINATE) {
            EXPECT_OK(&b);
        } else {
            EXPECT_REJECT(b.b, b.n, "flags");
        }
    }

    /* counts */
    b_header(&b, TC_WIRE_BYE, 0, 1);
    b_req(&b, 0, 0, 0, 0, 0, 0, "a");
    EXPECT_REJECT(b.b, b.n, "BYE with count 1");
    b_header(&b, TC_WIRE_REQUESTS, 0, (uint64_t)UINT32_MAX + 1);
    EXPECT_REJECT(b.b, b.n, "count 4294967296 above 4294967295");
    b_header(&b, TC_WIRE_REQUESTS, 0, UINT64_MAX);
    EXPECT_REJECT(b.b, b.n, "count");
    b_header(&b, TC_WIRE_REQUESTS, 0, UINT32_MAX);
    b_req(&b, 0, 0, 0, 0, 0, 0, "a");
    EXPECT_REJECT(b.b, b.n, "cannot fit");
    b_header(&b, TC_WIRE_RESPONSES, 0, UINT32_MAX);
    EXPECT_REJECT(b.b, b.n, "cannot fit");
    b_header(&b, TC_WIRE_REQUESTS, 0, 2);
    b_req(&b, 0, 0, 0, 0, 0, 0, "abcdefghij");
    EXPECT_REJECT(b.b, b.n, "request 1: truncated reading kind");
    b_header(&b, TC_WIRE_REQUESTS, 0, 2); /* 7 bytes per request at least: 13 cannot hold 2 */
    b_req(&b, 0, 0, 0, 0, 0, 0, "abcdefg");
    EXPECT_REJECT(b.b, b.n, "cannot fit");

    /* varints */
    b_header(&b, TC_WIRE_BYE, 0, 0);
    b.n--;
    for (i = 0; i < 10; i++) {
        b_u8(&b, 0x80);
    }
    b_u8(&b, 0x00);
    EXPECT_REJECT(b.b, b.n, "varint longer than 10 bytes");
    b_header(&b, TC_WIRE_BYE, 0, 0);
    b.n--;
    for (i = 0; i < 9; i++) {
        b_u8(&b, 0xFF);
    }
    b_u8(&b, 0x02);
    EXPECT_REJECT(b.b, b.n, "varint above 2^64-1");
    b.n--;
    EXPECT_REJECT(b.b, b.n, "truncated reading count");
    /* padded (non-minimal) varints up to 10 bytes are accepted */
    b_header(&b, TC_WIRE_BYE, 0, 0);
    b.n--;
    for (i = 0; i < 9; i++) {
        b_u8(&b, 0x80);
    }
    b_u8(&b, 0x00);
    EXPECT_OK(&b);
    b_header(&b, TC_WIRE_REQUESTS, 0, 1);
    b_u8(&b, 0);
    b_u8(&b, 0);
    b_u8(&b, 0);
    b_u8(&b, 0x80); /* root 0, padded */
    b_u8(&b, 0x00);
    b_u8(&b, 0);
    b_u8(&b, 0x81); /* name length 1, padded */
    b_u8(&b, 0x00);
    b_u8(&b, 'z');
    EXPECT_OK(&b);

    /* request fields */
    b_header(&b, TC_WIRE_REQUESTS, 0, 1);
    b_req(&b, TC_KIND_BROADCAST, TC_FLOAT64, TC_PROD, 0, TC_MAX_DIMS, INT64_MAX, "ok");
    EXPECT_OK(&b);
    b_header(&b, TC_WIRE_REQUESTS, 0, 1);
    b_req(&b, TC_KIND_COUNT, 0, 0, 0, 0, 0, "k");
    EXPECT_REJECT(b.b, b.n, "request 0: kind 3");
    b_header(&b, TC_WIRE_REQUESTS, 0, 1);
    b_req(&b, 255, 0, 0, 0, 0, 0, "k");
    EXPECT_REJECT(b.b, b.n, "kind 255");
    b_header(&b, TC_WIRE_REQUESTS, 0, 1);
    b_req(&b, 0, TC_FLOAT64 + 1, 0, 0, 0, 0, "k");
    EXPECT_REJECT(b.b, b.n, "unknown dtype 8");
    b_header(&b, TC_WIRE_REQUESTS, 0, 1);
    b_req(&b, 0, 0, TC_PROD + 1, 0, 0, 0, "k");
    EXPECT_REJECT(b.b, b.n, "unknown op 5");
    b_header(&b, TC_WIRE_REQUESTS, 0, 1);
    b_req(&b, 0, 0, 0, 0, TC_MAX_DIMS + 1, 1, "k");
    EXPECT_REJECT(b.b, b.n, "ndim 9");
    b_header(&b, TC_WIRE_REQUESTS, 0, 1);
    b_req(&b, 0, 0, 0, 0, 1, (uint64_t)INT64_MAX + 1, "k");
    EXPECT_REJECT(b.b, b.n, "shape value 9223372036854775808 above");
    b_header(&b, TC_WIRE_REQUESTS, 0, 1);
    b_req(&b, 0, 0, 0, 0, 1, UINT64_MAX, "k");
    EXPECT_REJECT(b.b, b.n, "shape value");
    /* root: zigzag 2^32-1 is INT32_MIN, 2^32 is out of range */
    b_header(&b, TC_WIRE_REQUESTS, 0, 1);
    b_req(&b, 0, 0, 0, UINT32_MAX, 0, 0, "k");
    EXPECT_OK(&b);
    {
        tc_wire_msg_t d;
        char err[128];
        CHECK_OK(tc__wire_decode(b.b, b.n, &d, err, sizeof(err)));
        CHECK_EQ(d.reqs[0].root, INT32_MIN);
        tc__wire_msg_free(&d);
        b_header(&b, TC_WIRE_REQUESTS, 0, 1);
        b_req(&b, 0, 0, 0, (uint64_t)UINT32_MAX - 1, 0, 0, "k");
        CHECK_OK(tc__wire_decode(b.b, b.n, &d, err, sizeof(err)));
        CHECK_EQ(d.reqs[0].root, INT32_MAX);
        tc__wire_msg_free(&d);
    }
    b_header(&b, TC_WIRE_REQUESTS, 0, 1);
    b_req(&b, 0, 0, 0, (uint64_t)UINT32_MAX + 1, 0, 0, "k");
    EXPECT_REJECT(b.b, b.n, "root");
    b_header(&b, TC_WIRE_REQUESTS, 0, 1);
    b_req(&b, 0, 0, 0, UINT64_MAX, 0, 0, "k");
    EXPECT_REJECT(b.b, b.n, "root");

    /* names */
    b_header(&b, TC_WIRE_REQUESTS, 0, 1);
    b_req(&b, 0, 0, 0, 0, 0, 0, "");
    b_u8(&b, 0); /* one more byte so the count bound is not what fails */
    EXPECT_REJECT(b.b, b.n, "name length 0 not in 1..1024");
    b_header(&b, TC_WIRE_REQUESTS, 0, 1);
    b_raw(&b, "\0\0\0\0\0", 5);
    b_fill(&b, TC_MAX_NAME_LEN, 0xFF);
    EXPECT_OK(&b);
    b_header(&b, TC_WIRE_REQUESTS, 0, 1);
    b_raw(&b, "\0\0\0\0\0", 5);
    b_fill(&b, TC_MAX_NAME_LEN + 1, 'a');
    EXPECT_REJECT(b.b, b.n, "name length 1025");
    for (i = 0; i < 3; i++) {
        b_header(&b, TC_WIRE_REQUESTS, 0, 1);
        b_raw(&b, "\0\0\0\0\0", 5);
        b_fill(&b, 5, 'a');
        b.b[b.n - 5 + (size_t)i * 2] = 0; /* first, middle, last byte */
        EXPECT_REJECT(b.b, b.n, "name contains a 0x00 byte");
    }
    b_header(&b, TC_WIRE_REQUESTS, 0, 1);
    b_raw(&b, "\0\0\0\0\0", 5);
    b_varint(&b, 10);
    b_raw(&b, "abcde", 5);
    EXPECT_REJECT(b.b, b.n, "truncated reading name");

    /* responses */
    b_header(&b, TC_WIRE_RESPONSES, 0, 1);
    b_u8(&b, 2);
    b_str(&b, "r");
    b_u8(&b, 0);
    EXPECT_REJECT(b.b, b.n, "unknown rtype 2");
    b_header(&b, TC_WIRE_RESPONSES, 0, 1);
    b_u8(&b, TC_WIRE_ERROR);
    b_str(&b, "r");
    b_u8(&b, TC_ERR_TIMEOUT);
    b_fill(&b, TC_WIRE_MAX_TEXT, 'e');
    EXPECT_OK(&b);
    for (i = 0; i < 256; i++) {
        if (i >= 1 && i <= TC_ERR_TIMEOUT) {
            continue;
        }
        b_header(&b, TC_WIRE_RESPONSES, 0, 1);
        b_u8(&b, TC_WIRE_ERROR);
        b_str(&b, "r");
        b_u8(&b, (unsigned)i);
        b_str(&b, "why");
        EXPECT_REJECT(b.b, b.n, "error status");
    }
    b_header(&b, TC_WIRE_RESPONSES, 0, 1);
    b_u8(&b, TC_WIRE_ERROR);
    b_str(&b, "r");
    b_u8(&b, TC_ERR_ARG);
    b_fill(&b, TC_WIRE_MAX_TEXT + 1, 'e');
    EXPECT_REJECT(b.b, b.n, "error text length 2049");
    b_header(&b, TC_WIRE_RESPONSES, 0, 1);
    b_u8(&b, TC_WIRE_ERROR);
    b_str(&b, "r");
    b_u8(&b, TC_ERR_ARG);
    b_fill(&b, 4, 'e');
    b.b[b.n - 2] = 0;
    EXPECT_REJECT(b.b, b.n, "error text contains a 0x00 byte");
    /* RUN: ndim0 */
    b_header(&b, TC_WIRE_RESPONSES, 0, 1);
    b_u8(&b, TC_WIRE_RUN);
    b_str(&b, "r");
    b_varint(&b, TC_WIRE_MAX_RANKS + 1);
    EXPECT_REJECT(b.b, b.n, "ndim0 16777217 above 16777216");
    b_header(&b, TC_WIRE_RESPONSES, 0, 1);
    b_u8(&b, TC_WIRE_RUN);
    b_str(&b, "r");
    b_varint(&b, TC_WIRE_MAX_RANKS);
    b_u8(&b, 1);
    EXPECT_REJECT(b.b, b.n, "ndim0 16777216 cannot fit");
    b_header(&b, TC_WIRE_RESPONSES, 0, 1);
    b_u8(&b, TC_WIRE_RUN);
    b_str(&b, "r");
    b_varint(&b, 3);
    b_varint(&b, 1);
    b_varint(&b, (uint64_t)INT64_MAX + 1);
    b_varint(&b, 1);
    EXPECT_REJECT(b.b, b.n, "dim0 value 9223372036854775808 above");
    b_header(&b, TC_WIRE_RESPONSES, 0, 1);
    b_u8(&b, TC_WIRE_RUN);
    b_str(&b, "r");
    b_varint(&b, 3);
    b_varint(&b, 1);
    b_u8(&b, 0x80);
    b_u8(&b, 0x80);
    EXPECT_REJECT(b.b, b.n, "truncated reading dim0 value");
    b_header(&b, TC_WIRE_RESPONSES, 0, 1);
    b_u8(&b, TC_WIRE_RUN);
    b_str(&b, "r");
    b_varint(&b, 4000);
    for (i = 0; i < 4000; i++) {
        b_varint(&b, (uint64_t)i);
    }
    EXPECT_OK(&b);

    /* terminate record */
    b_header(&b, TC_WIRE_RESPONSES, TC_WIRE_F_TERMINATE, 0);
    EXPECT_REJECT(b.b, b.n, "truncated reading terminate status");
    b_u8(&b, TC_ERR_SHUTDOWN);
    EXPECT_REJECT(b.b, b.n, "truncated reading terminate text");
    b_str(&b, "x");
    EXPECT_OK(&b);
    for (i = 0; i < 256; i++) {
        if (i >= 1 && i <= TC_ERR_TIMEOUT) {
            continue;
        }
        b_header(&b, TC_WIRE_RESPONSES, TC_WIRE_F_TERMINATE, 0);
        b_u8(&b, (unsigned)i);
        b_str(&b, "x");
        EXPECT_REJECT(b.b, b.n, "terminate status");
    }
    b_header(&b, TC_WIRE_RESPONSES, TC_WIRE_F_TERMINATE, 0);
    b_u8(&b, TC_ERR_SHUTDOWN);
    b_fill(&b, TC_WIRE_MAX_TEXT + 1, 't');
    EXPECT_REJECT(b.b, b.n, "terminate text length 2049");
    b_header(&b, TC_WIRE_RESPONSES, TC_WIRE_F_TERMINATE, 0);
    b_u8(&b, TC_ERR_SHUTDOWN);
    b_fill(&b, 3, 't');
    b.b[b.n - 1] = 0;
    EXPECT_REJECT(b.b, b.n, "terminate text contains a 0x00 byte");
    b_header(&b, TC_WIRE_RESPONSES, TC_WIRE_F_TERMINATE, 0);
    b_u8(&b, TC_ERR_SHUTDOWN);
    b_str(&b, "x");
    b_u8(&b, 0);
    EXPECT_REJECT(b.b, b.n, "1 trailing bytes");
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

static void test_encode_rejects(void)
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
    m.type = 4;
    EXPECT_ENCODE_REJECT(&m, "unknown message type 4");
    m = (tc_wire_msg_t){.type = TC_WIRE_BYE, .flags = TC_WIRE_F_SHUTDOWN};
    EXPECT_ENCODE_REJECT(&m, "flags");
    m = (tc_wire_msg_t){.type = TC_WIRE_BYE, .count = 1, .reqs = r};
    EXPECT_ENCODE_REJECT(&m, "BYE with count 1");
    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .flags = TC_WIRE_F_TERMINATE};
    EXPECT_ENCODE_REJECT(&m, "flags");
    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .flags = 0x80};
    EXPECT_ENCODE_REJECT(&m, "flags");
    m = (tc_wire_msg_t){.type = TC_WIRE_RESPONSES, .flags = TC_WIRE_F_SHUTDOWN};
    EXPECT_ENCODE_REJECT(&m, "flags");
    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .count = 1};
    EXPECT_ENCODE_REJECT(&m, "NULL entries");
    m = (tc_wire_msg_t){.type = TC_WIRE_RESPONSES, .count = 1};
    EXPECT_ENCODE_REJECT(&m, "NULL entries");

    /* requests: the bad one is the second, after a valid first */
    m = (tc_wire_msg_t){.type = TC_WIRE_REQUESTS, .count = 2, .reqs = r};
    for (i = 0; i < 12; i++) {
        static const char *const needles[] = {
            "kind 3", "unknown dtype 8", "unknown op 5", "ndim 9", "shape[1] = -1",
            "name length 0", "name length 1025", "name is NULL", "name contains a 0x00",
            "shape[0] = -9223372036854775808", "kind 255", "unknown op 255"};
        memset(r, 0, sizeof(r));
        r[0].name = r[1].name = "ok";
        r[0].name_len = r[1].name_len = 2;
        switch (i) {
        case 0: r[1].kind = TC_KIND_COUNT; break;
        case 1: r[1].dtype = TC_FLOAT64 + 1; break;
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
    m = (tc_wire_msg_t){.type = TC_WIRE_RESPONSES, .count = 2, .resps = s};
    for (i = 0; i < 11; i++) {
        static const char *const needles[] = {
            "unknown rtype 2", "error status 0", "error status 9", "error text length 2049",
            "error text is NULL", "error text contains a 0x00", "ndim0 16777217",
            "dim0 is NULL", "dim0[1] = -1", "name length 0", "name contains a 0x00"};
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
        default: s[1].name = "\0"; s[1].name_len = 1; break;
        }
        EXPECT_ENCODE_REJECT(&m, needles[i]);
        CHECK_STR_CONTAINS(tc_last_error(), "response 1: ");
    }

    /* terminate record */
    memset(s, 0, sizeof(s));
    m = (tc_wire_msg_t){.type = TC_WIRE_RESPONSES, .flags = TC_WIRE_F_TERMINATE};
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

/* Seeded random buffers: the decoder must never crash; what it accepts must
 * re-encode. Most buffers start with a plausible header and hold small byte
 * values so they get past the first checks. */
static long test_garbage(long n)
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

int main(void)
{
    long garbage_ok;

    test_kind_names();
    test_golden();
    test_requests_roundtrip();
    test_responses_roundtrip();
    test_bye_and_misc();
    test_large();
    test_random_roundtrip();
    test_truncation_and_corruption();
    test_malformed();
    test_encode_rejects();
    garbage_ok = test_garbage(300000);
    CHECK_GT(garbage_ok, 0);
    printf("test_wire: OK (%ld decodes checked, %ld of 300000 random buffers were valid)\n",
           n_checks, garbage_ok);
    return 0;
}
