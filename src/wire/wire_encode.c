/*
 * wire_encode.c - the encoder of wire.h's control messages: a tc_wire_msg_t
 * appended to a growing buffer as bytes, and that buffer's memory.
 *
 * It makes the checks the decoder (wire_decode.c) makes, in a sizing pass
 * that validates and counts the bytes, then writes them in a second pass into
 * space reserved once, so it never emits what the decoder would refuse. The
 * choices the header leaves open are in wire_internal.h.
 *
 * Must never: change buf->len on failure, log (it reports through
 * tc__set_error; the caller decides what to say), or know anything about MPI.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/le.h"
#include "wire/wire_internal.h"

/* With out == NULL it only counts bytes (the sizing pass). */
typedef struct {
    uint8_t *out;
    size_t n;
} wire_writer_t;

static void wr_u8(wire_writer_t *w, uint8_t b)
{
    if (w->out != NULL) {
        w->out[w->n] = b;
    }
    w->n++;
}

static void wr_varint(wire_writer_t *w, uint64_t v)
{
    while (v >= 0x80) {
        wr_u8(w, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    wr_u8(w, (uint8_t)v);
}

/* zigzag: 0, -1, 1, -2, ... -> 0, 1, 2, 3, ... without shifting a negative value */
static void wr_zigzag(wire_writer_t *w, int32_t v)
{
    wr_varint(w, v < 0 ? ((uint32_t)(-(v + 1)) << 1) | 1u : (uint32_t)v << 1);
}

static void wr_bytes(wire_writer_t *w, const void *p, size_t n)
{
    if (w->out != NULL && n > 0) {
        memcpy(w->out + w->n, p, n);
    }
    w->n += n;
}

/* Records "wire encode: [<where> <i>: ]<reason>" for tc_last_error(); returns TC_ERR_ARG. */
static tc_status_t enc_fail(const char *where, uint32_t i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static tc_status_t enc_fail(const char *where, uint32_t i, const char *fmt, ...)
{
    char reason[192];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    if (where != NULL) {
        return tc__set_error(TC_ERR_ARG, "wire encode: %s %" PRIu32 ": %s", where, i, reason);
    }
    return tc__set_error(TC_ERR_ARG, "wire encode: %s", reason);
}

static tc_status_t wr_string(wire_writer_t *w, const char *where, uint32_t i, const char *what,
                             const char *s, uint32_t len, uint32_t min_len, uint32_t max_len)
{
    if (len < min_len || len > max_len) {
        return enc_fail(where, i, "%s length %" PRIu32 " not in %" PRIu32 "..%" PRIu32, what, len,
                        min_len, max_len);
    }
    if (len > 0 && s == NULL) {
        return enc_fail(where, i, "%s is NULL with length %" PRIu32, what, len);
    }
    if (len > 0 && memchr(s, 0, len) != NULL) {
        return enc_fail(where, i, "%s contains a 0x00 byte", what);
    }
    wr_varint(w, len);
    wr_bytes(w, s, len);
    return TC_OK;
}

static tc_status_t wr_status(wire_writer_t *w, const char *where, uint32_t i, const char *what,
                             uint8_t status)
{
    if (status == 0 || status > WIRE_STATUS_MAX) {
        return enc_fail(where, i, "%s %u not in 1..%u", what, status, WIRE_STATUS_MAX);
    }
    wr_u8(w, status);
    return TC_OK;
}

static tc_status_t wr_request(wire_writer_t *w, uint32_t i, const tc_wire_request_t *r)
{
    unsigned char f64[8];
    uint64_t bits;
    unsigned d;
    int scales;
    tc_status_t st;

    if (r->kind >= TC_KIND_COUNT) {
        return enc_fail("request", i, "kind %u not in 0..%d", r->kind, TC_KIND_COUNT - 1);
    }
    if (!tc__dtype_valid(r->dtype)) {
        return enc_fail("request", i, "unknown dtype %u", r->dtype);
    }
    if (!tc__op_valid(r->op)) {
        return enc_fail("request", i, "unknown op %u", r->op);
    }
    if (r->ndim > TC_MAX_DIMS) {
        return enc_fail("request", i, "ndim %u above %d", r->ndim, TC_MAX_DIMS);
    }
    wr_u8(w, r->kind);
    wr_u8(w, r->dtype);
    wr_u8(w, r->op);
    wr_zigzag(w, r->root);
    wr_u8(w, r->ndim);
    for (d = 0; d < r->ndim; d++) {
        if (r->shape[d] < 0) {
            return enc_fail("request", i, "shape[%u] = %" PRId64 " is negative", d, r->shape[d]);
        }
        wr_varint(w, (uint64_t)r->shape[d]);
    }
    st = wr_string(w, "request", i, "name", r->name, r->name_len, 1, TC_MAX_NAME_LEN);
    if (st != TC_OK) {
        return st;
    }
    scales = r->scaled && !(r->prescale == 1.0 && r->postscale == 1.0);
    if (scales && (!isfinite(r->prescale) || !isfinite(r->postscale))) {
        return enc_fail("request", i, "a scaling factor is not finite");
    }
    if (r->group_size > TC_WIRE_MAX_GROUP ||
        (r->group_size > 0 && r->group_index >= r->group_size)) {
        return enc_fail("request", i, "group member %u of %u", r->group_index, r->group_size);
    }
    if (r->pset > TC_WIRE_MAX_PSET) {
        return enc_fail("request", i, "process set %" PRIu32 " above %u", r->pset,
                        TC_WIRE_MAX_PSET);
    }
    if (r->nranks > TC_WIRE_MAX_RANKS || (r->nranks > 0 && r->ranks == NULL)) {
        return enc_fail("request", i, "a rank list of %" PRIu32, r->nranks);
    }
    for (d = 0; d < r->nranks; d++) {
        if (r->ranks[d] < 0 || r->ranks[d] >= TC_WIRE_MAX_RANKS ||
            (d > 0 && r->ranks[d] <= r->ranks[d - 1])) {
            return enc_fail("request", i,
                            "rank list entry %u (%" PRId32 ") out of order or "
                            "range",
                            d, r->ranks[d]);
        }
    }
    if (r->memory > TC_WIRE_MEM_CUDA) {
        return enc_fail("request", i, "memory %u", (unsigned)r->memory);
    }
    wr_u8(w,
          (uint8_t)((scales ? WIRE_EXTRA_SCALES : 0u) |
                    (r->group_size > 0 ? WIRE_EXTRA_GROUP : 0u) |
                    (r->pset > 0 ? WIRE_EXTRA_PSET : 0u) | (r->nranks > 0 ? WIRE_EXTRA_RANKS : 0u) |
                    (r->memory == TC_WIRE_MEM_CUDA ? WIRE_EXTRA_CUDA : 0u)));
    if (scales) {
        memcpy(&bits, &r->prescale, sizeof(bits));
        tc__le_put64(f64, bits);
        wr_bytes(w, f64, sizeof(f64));
        memcpy(&bits, &r->postscale, sizeof(bits));
        tc__le_put64(f64, bits);
        wr_bytes(w, f64, sizeof(f64));
    }
    if (r->group_size > 0) {
        wr_varint(w, r->group_size);
        wr_varint(w, r->group_index);
        st = wr_string(w, "request", i, "group key", r->group_key, r->group_key_len, 1,
                       TC_MAX_NAME_LEN);
        if (st != TC_OK) {
            return st;
        }
    }
    if (r->pset > 0) {
        wr_varint(w, r->pset);
    }
    if (r->nranks > 0) {
        wr_varint(w, r->nranks);
        for (d = 0; d < r->nranks; d++) {
            wr_varint(w, (uint64_t)(d == 0 ? r->ranks[0] : r->ranks[d] - r->ranks[d - 1] - 1));
        }
    }
    return TC_OK;
}

/* RUN ignores status and text; ERROR ignores ndim0, dim0, cache_ref, desc and value. */
static tc_status_t wr_response(wire_writer_t *w, uint32_t i, const tc_wire_response_t *r)
{
    uint32_t j;
    int run;
    tc_status_t st;

    if (r->rtype != TC_WIRE_RUN && r->rtype != TC_WIRE_ERROR) {
        return enc_fail("response", i, "unknown rtype %u", r->rtype);
    }
    wr_u8(w, r->rtype);
    st = wr_string(w, "response", i, "name", r->name, r->name_len, 1, TC_MAX_NAME_LEN);
    if (st != TC_OK) {
        return st;
    }
    if (r->pset > TC_WIRE_MAX_PSET) {
        return enc_fail("response", i, "process set %" PRIu32 " above %u", r->pset,
                        TC_WIRE_MAX_PSET);
    }
    run = r->rtype == TC_WIRE_RUN;
    wr_u8(w, (uint8_t)((run && r->has_desc ? WIRE_RESP_DESC : 0u) |
                       (run && r->has_value ? WIRE_RESP_VALUE : 0u) |
                       (r->pset > 0 ? WIRE_RESP_PSET : 0u)));
    if (r->pset > 0) {
        wr_varint(w, r->pset);
    }
    if (r->rtype == TC_WIRE_ERROR) {
        if ((st = wr_status(w, "response", i, "error status", r->status)) != TC_OK) {
            return st;
        }
        return wr_string(w, "response", i, "error text", r->text, r->text_len, 0, TC_WIRE_MAX_TEXT);
    }
    if (r->ndim0 > TC_WIRE_MAX_RANKS) {
        return enc_fail("response", i, "ndim0 %" PRIu32 " above %d", r->ndim0, TC_WIRE_MAX_RANKS);
    }
    if (r->ndim0 > 0 && r->dim0 == NULL) {
        return enc_fail("response", i, "dim0 is NULL with ndim0 %" PRIu32, r->ndim0);
    }
    wr_varint(w, r->ndim0);
    for (j = 0; j < r->ndim0; j++) {
        if (r->dim0[j] < 0) {
            return enc_fail("response", i, "dim0[%" PRIu32 "] = %" PRId64 " is negative", j,
                            r->dim0[j]);
        }
        wr_varint(w, (uint64_t)r->dim0[j]);
    }
    if (r->cache_ref > TC_WIRE_MAX_CACHE) {
        return enc_fail("response", i, "cache_ref %" PRIu32 " above %u", r->cache_ref,
                        TC_WIRE_MAX_CACHE);
    }
    wr_varint(w, r->cache_ref);
    if (r->has_desc) {
        const tc_wire_desc_t *d = &r->desc;
        if (d->kind >= TC_KIND_COUNT || !tc__dtype_valid(d->dtype) || !tc__op_valid(d->op) ||
            d->ndim > TC_MAX_DIMS) {
            return enc_fail("response", i, "description: kind %u dtype %u op %u ndim %u", d->kind,
                            d->dtype, d->op, d->ndim);
        }
        wr_u8(w, d->kind);
        wr_u8(w, d->dtype);
        wr_u8(w, d->op);
        wr_u8(w, d->ndim);
        for (j = 0; j < d->ndim; j++) {
            if (d->shape[j] < 0) {
                return enc_fail("response", i, "description: shape[%" PRIu32 "] is negative", j);
            }
            wr_varint(w, (uint64_t)d->shape[j]);
        }
    }
    if (r->has_value) {
        wr_zigzag(w, r->value);
    }
    return TC_OK;
}

/* An id list (see rd_ids). The decoder cannot see an order problem, since the
 * distances make every list it reads ascending, so it has to be caught here.
 * what names the list ("ready"), count_what its count field ("nready"). */
static tc_status_t wr_ids(wire_writer_t *w, const char *what, const char *count_what, uint32_t n,
                          const uint32_t *ids)
{
    uint32_t j;

    if (n > TC_WIRE_MAX_CACHE) {
        return enc_fail(NULL, 0, "%s %" PRIu32 " above %u", count_what, n, TC_WIRE_MAX_CACHE);
    }
    if (n > 0 && ids == NULL) {
        return enc_fail(NULL, 0, "%s is NULL with %s %" PRIu32, what, count_what, n);
    }
    wr_varint(w, n);
    for (j = 0; j < n; j++) {
        if (ids[j] >= TC_WIRE_MAX_CACHE) {
            return enc_fail(NULL, 0, "%s[%" PRIu32 "] = %" PRIu32 " not below %u", what, j, ids[j],
                            TC_WIRE_MAX_CACHE);
        }
        if (j > 0 && ids[j] <= ids[j - 1]) {
            return enc_fail(NULL, 0,
                            "%s[%" PRIu32 "] = %" PRIu32 " not above %s[%" PRIu32 "] = %" PRIu32
                            " (ids must be strictly ascending)",
                            what, j, ids[j], what, j - 1, ids[j - 1]);
        }
        wr_varint(w, j == 0 ? ids[j] : ids[j] - ids[j - 1] - 1);
    }
    return TC_OK;
}

static tc_status_t wr_eager(wire_writer_t *w, uint32_t n, const tc_wire_eager_t *ents)
{
    uint32_t j;

    if (n > TC_WIRE_MAX_CACHE) {
        return enc_fail(NULL, 0, "neager %" PRIu32 " above %u", n, TC_WIRE_MAX_CACHE);
    }
    if (n > 0 && ents == NULL) {
        return enc_fail(NULL, 0, "eager is NULL with neager %" PRIu32, n);
    }
    wr_varint(w, n);
    for (j = 0; j < n; j++) {
        const tc_wire_eager_t *x = &ents[j];
        if (x->id >= TC_WIRE_MAX_CACHE) {
            return enc_fail("eager input", j, "id %" PRIu32 " not below %u", x->id,
                            TC_WIRE_MAX_CACHE);
        }
        if (j > 0 && x->id <= ents[j - 1].id) {
            return enc_fail("eager input", j,
                            "id %" PRIu32 " not above the previous id %" PRIu32
                            " (ids must be strictly ascending)",
                            x->id, ents[j - 1].id);
        }
        if (x->len == 0 || x->len > TC_WIRE_MAX_EAGER) {
            return enc_fail("eager input", j, "len %" PRIu32 " outside 1..%u", x->len,
                            TC_WIRE_MAX_EAGER);
        }
        if (x->data == NULL) {
            return enc_fail("eager input", j, "data is NULL with len %" PRIu32, x->len);
        }
        wr_varint(w, j == 0 ? x->id : x->id - ents[j - 1].id - 1);
        wr_varint(w, x->len);
        wr_bytes(w, x->data, x->len);
    }
    return TC_OK;
}

static tc_status_t wr_message(wire_writer_t *w, const tc_wire_msg_t *m)
{
    uint8_t allowed;
    uint32_t i;
    tc_status_t st;

    switch (m->type) {
    case TC_WIRE_REQUESTS: allowed = TC_WIRE_F_SHUTDOWN | TC_WIRE_F_SPREAD | TC_WIRE_F_SEQ; break;
    case TC_WIRE_CYCLE: allowed = TC_WIRE_F_TERMINATE; break;
    case TC_WIRE_BYE: allowed = TC_WIRE_F_TERMINATE; break;
    default: return enc_fail(NULL, 0, "unknown message type %u", m->type);
    }
    if (m->flags & ~allowed) {
        return enc_fail(NULL, 0, "flags 0x%02X not allowed on message type %u (allowed 0x%02X)",
                        m->flags, m->type, allowed);
    }
    if (m->type == TC_WIRE_BYE && m->count != 0) {
        return enc_fail(NULL, 0, "BYE with count %" PRIu32 ", want 0", m->count);
    }
    /* round and some belong to CYCLE alone: on another type they would be
     * lost, so they are refused like a flag that does not fit */
    if (m->type != TC_WIRE_CYCLE && m->round != 0) {
        return enc_fail(NULL, 0, "round %" PRIu32 " not allowed on message type %u (CYCLE only)",
                        m->round, m->type);
    }
    if (m->type != TC_WIRE_CYCLE && m->nsome != 0) {
        return enc_fail(NULL, 0,
                        "some list (nsome %" PRIu32 ") not allowed on message type %u (CYCLE only)",
                        m->nsome, m->type);
    }
    if (m->type == TC_WIRE_CYCLE && m->round > TC_WIRE_MAX_ROUND) {
        return enc_fail(NULL, 0, "round %" PRIu32 " above %d", m->round, TC_WIRE_MAX_ROUND);
    }
    if (m->count > 0 && ((m->type == TC_WIRE_REQUESTS && m->reqs == NULL) ||
                         (m->type == TC_WIRE_CYCLE && m->resps == NULL))) {
        return enc_fail(NULL, 0, "NULL entries with count %" PRIu32, m->count);
    }
    wr_u8(w, TC_WIRE_MAGIC);
    wr_u8(w, TC_WIRE_VERSION);
    wr_u8(w, m->type);
    wr_u8(w, m->flags);
    wr_varint(w, m->count);
    for (i = 0; i < m->count; i++) {
        st = m->type == TC_WIRE_REQUESTS ? wr_request(w, i, &m->reqs[i])
                                         : wr_response(w, i, &m->resps[i]);
        if (st != TC_OK) {
            return st;
        }
    }
    if (m->flags & TC_WIRE_F_SEQ) {
        wr_varint(w, m->seq);
    }
    /* REQUESTS and BYE carry no cycle record: their other cycle fields are
     * ignored (seq is written above for a REQUESTS with SEQ) */
    if (m->type == TC_WIRE_CYCLE) {
        wr_varint(w, m->seq);
        wr_varint(w, m->round);
        wr_varint(w, m->cache_gen);
        if ((st = wr_ids(w, "ready", "nready", m->nready, m->ready)) != TC_OK) {
            return st;
        }
        if ((st = wr_ids(w, "some", "nsome", m->nsome, m->some)) != TC_OK) {
            return st;
        }
        if ((st = wr_ids(w, "stale", "nstale", m->nstale, m->stale)) != TC_OK) {
            return st;
        }
        if ((st = wr_eager(w, m->neager, m->eager)) != TC_OK) {
            return st;
        }
    }
    if (m->flags & TC_WIRE_F_TERMINATE) {
        if ((st = wr_status(w, NULL, 0, "terminate status", m->term_status)) != TC_OK) {
            return st;
        }
        st = wr_string(w, NULL, 0, "terminate text", m->term_text, m->term_text_len, 0,
                       TC_WIRE_MAX_TEXT);
        if (st != TC_OK) {
            return st;
        }
    }
    return TC_OK;
}

/* Makes room for n more bytes, at least doubling the capacity when it grows. */
tc_status_t tc__wire_buf_reserve(tc_wire_buf_t *buf, size_t n)
{
    size_t cap;
    uint8_t *data;

    if (buf->cap - buf->len >= n) {
        return TC_OK;
    }
    if (n > SIZE_MAX - buf->len) {
        return tc__set_error(TC_ERR_NOMEM, "wire encode: buffer size overflows");
    }
    cap = buf->cap < 64 ? 64 : buf->cap;
    while (cap < buf->len + n) {
        cap = cap > SIZE_MAX / 2 ? buf->len + n : cap * 2;
    }
    data = realloc(buf->data, cap);
    if (data == NULL) {
        return tc__set_error(TC_ERR_NOMEM,
                             "wire encode: out of memory growing a buffer to %zu bytes", cap);
    }
    buf->data = data;
    buf->cap = cap;
    return TC_OK;
}

tc_status_t tc__wire_encode(const tc_wire_msg_t *msg, tc_wire_buf_t *buf)
{
    wire_writer_t w = {NULL, 0};
    tc_status_t st;

    if (msg == NULL || buf == NULL) {
        return enc_fail(NULL, 0, "NULL %s", msg == NULL ? "msg" : "buf");
    }
    if (buf->len > buf->cap || (buf->cap > 0 && buf->data == NULL)) {
        return enc_fail(NULL, 0, "inconsistent buffer (len %zu, cap %zu)", buf->len, buf->cap);
    }
    st = wr_message(&w, msg); /* sizing pass: all the checks happen here */
    if (st != TC_OK) {
        return st;
    }
    st = tc__wire_buf_reserve(buf, w.n);
    if (st != TC_OK) {
        return st;
    }
    w = (wire_writer_t){buf->data + buf->len, 0};
    st = wr_message(&w, msg);
    if (st != TC_OK) {
        return st; /* cannot happen: the sizing pass accepted the same message */
    }
    buf->len += w.n;
    return TC_OK;
}

void tc__wire_buf_free(tc_wire_buf_t *buf)
{
    if (buf == NULL) {
        return;
    }
    free(buf->data);
    memset(buf, 0, sizeof(*buf));
}

void tc__wire_buf_reset(tc_wire_buf_t *buf)
{
    if (buf->cap > TC_WIRE_BUF_KEEP_BYTES) {
        tc__wire_buf_free(buf);
    }
    buf->len = 0;
}
