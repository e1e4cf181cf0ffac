/*
 * fuzz_wire.c - libFuzzer entry point for the control-message decoder
 * (src/wire/wire_decode.c).
 *
 * Each input is decoded. A rejected input is fine (it must only not crash,
 * leak or read out of bounds: build with -fsanitize=fuzzer,address,undefined).
 * An accepted one must hold what wire.h promises (a CYCLE's round at most
 * TC_WIRE_MAX_ROUND; id lists (ready, some, stale) strictly ascending and
 * below TC_WIRE_MAX_CACHE, NULL when empty; eager inputs likewise, each of
 * 1..TC_WIRE_MAX_EAGER bytes at a non-NULL, 8-aligned copy outside the input;
 * cache_ref in range on a RUN and 0 on an ERROR; process sets at most
 * TC_WIRE_MAX_PSET; a request's ranks strictly ascending below
 * TC_WIRE_MAX_RANKS, NULL when empty, outside the input; a description (in
 * range) and a value only on a RUN that has them; no cycle fields, round, some
 * and eager ones included, on a type without a cycle record, but the seq of a
 * REQUESTS with SEQ) and must re-encode; the
 * re-encoding must decode to the same message (and hold the same promises),
 * and encoding that second decode must give the same bytes again. Any breach
 * aborts with the field at fault. Never writes files and keeps no state
 * between inputs.
 *
 * Build and run (corpus in a scratch copy so new inputs stay out of the tree):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *     src/wire/wire_decode.c src/wire/wire_read.c src/wire/wire_encode.c src/wire/wire_kinds.c \
 *     src/util/status.c src/util/log.c tests/fuzz/fuzz_wire.c -o fuzz_wire
 *   cp -r tests/fuzz/corpus_wire /tmp/corpus && ./fuzz_wire -max_total_time=30 /tmp/corpus
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_wire: %s%s%s\n", what, detail != NULL ? ": " : "",
            detail != NULL ? detail : "");
    abort();
}

static int same_bytes(const char *a, uint32_t alen, const char *b, uint32_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

static int same_ids(const uint32_t *a, uint32_t an, const uint32_t *b, uint32_t bn)
{
    return an == bn && (an == 0 || memcmp(a, b, an * sizeof(*a)) == 0);
}

static int same_eager(const tc_wire_eager_t *a, uint32_t an, const tc_wire_eager_t *b, uint32_t bn)
{
    uint32_t j;

    if (an != bn) {
        return 0;
    }
    for (j = 0; j < an; j++) {
        if (a[j].id != b[j].id || a[j].len != b[j].len ||
            memcmp(a[j].data, b[j].data, a[j].len) != 0) {
            return 0;
        }
    }
    return 1;
}

static int same_desc(const tc_wire_desc_t *a, const tc_wire_desc_t *b)
{
    uint8_t k;

    if (a->kind != b->kind || a->dtype != b->dtype || a->op != b->op || a->ndim != b->ndim) {
        return 0;
    }
    for (k = 0; k < a->ndim && k < TC_MAX_DIMS; k++) {
        if (a->shape[k] != b->shape[k]) {
            return 0;
        }
    }
    return 1;
}

/* NULL if a and b carry the same content, else the name of a field that differs. */
static const char *first_difference(const tc_wire_msg_t *a, const tc_wire_msg_t *b)
{
    uint32_t i, j;

    if (a->type != b->type || a->flags != b->flags || a->count != b->count) {
        return "header";
    }
    for (i = 0; i < a->count && a->type == TC_WIRE_REQUESTS; i++) {
        const tc_wire_request_t *x = &a->reqs[i], *y = &b->reqs[i];
        if (x->kind != y->kind || x->dtype != y->dtype || x->op != y->op || x->root != y->root ||
            x->ndim != y->ndim) {
            return "request fields";
        }
        for (j = 0; j < x->ndim; j++) {
            if (x->shape[j] != y->shape[j]) {
                return "request shape";
            }
        }
        if (!same_bytes(x->name, x->name_len, y->name, y->name_len)) {
            return "request name";
        }
        if (!tc__wire_scales_equal(x, y)) {
            return "request scaling factors";
        }
        if (!tc__wire_groups_equal(x, y)) {
            return "request group";
        }
        if (x->pset != y->pset) {
            return "request process set";
        }
        if (x->nranks != y->nranks ||
            (x->nranks > 0 && memcmp(x->ranks, y->ranks, x->nranks * sizeof(*x->ranks)) != 0)) {
            return "request rank list";
        }
    }
    for (i = 0; i < a->count && a->type == TC_WIRE_CYCLE; i++) {
        const tc_wire_response_t *x = &a->resps[i], *y = &b->resps[i];
        if (x->rtype != y->rtype) {
            return "response rtype";
        }
        if (!same_bytes(x->name, x->name_len, y->name, y->name_len)) {
            return "response name";
        }
        if (x->pset != y->pset) {
            return "response process set";
        }
        if (x->has_desc != y->has_desc || x->has_value != y->has_value || x->value != y->value) {
            return "response description or value";
        }
        if (x->has_desc && !same_desc(&x->desc, &y->desc)) {
            return "response description";
        }
        if (x->rtype == TC_WIRE_RUN) {
            if (x->ndim0 != y->ndim0) {
                return "response ndim0";
            }
            for (j = 0; j < x->ndim0; j++) {
                if (x->dim0[j] != y->dim0[j]) {
                    return "response dim0";
                }
            }
            if (x->cache_ref != y->cache_ref) {
                return "response cache_ref";
            }
        } else if (x->status != y->status ||
                   !same_bytes(x->text, x->text_len, y->text, y->text_len)) {
            return "response error";
        }
    }
    /* both decoded: fields a type does not carry are zero in both, so they
     * can be compared whatever the type */
    if (a->seq != b->seq || a->round != b->round || a->cache_gen != b->cache_gen) {
        return "cycle seq, round or cache_gen";
    }
    if (!same_ids(a->ready, a->nready, b->ready, b->nready)) {
        return "cycle ready ids";
    }
    if (!same_ids(a->stale, a->nstale, b->stale, b->nstale)) {
        return "cycle stale ids";
    }
    if (!same_ids(a->some, a->nsome, b->some, b->nsome)) {
        return "cycle some ids";
    }
    if (!same_eager(a->eager, a->neager, b->eager, b->neager)) {
        return "cycle eager inputs";
    }
    if ((a->flags & TC_WIRE_F_TERMINATE) &&
        (a->term_status != b->term_status ||
         !same_bytes(a->term_text, a->term_text_len, b->term_text, b->term_text_len))) {
        return "terminate record";
    }
    return NULL;
}

static const char *bad_ids(const uint32_t *ids, uint32_t n)
{
    uint32_t j;

    if (n > TC_WIRE_MAX_CACHE || (n == 0) != (ids == NULL)) {
        return "id list count or array";
    }
    for (j = 0; j < n; j++) {
        if (ids[j] >= TC_WIRE_MAX_CACHE || (j > 0 && ids[j] <= ids[j - 1])) {
            return "id list not strictly ascending below TC_WIRE_MAX_CACHE";
        }
    }
    return NULL;
}

/* Whether [p, p + n) and [base, base + len) share a byte. */
static int overlaps(const void *p, size_t n, const void *base, size_t len)
{
    uintptr_t q = (uintptr_t)p, b = (uintptr_t)base;
    return p != NULL && n > 0 && len > 0 && q < b + len && b < q + n;
}

static const char *bad_eager(const tc_wire_eager_t *e, uint32_t n, const uint8_t *in, size_t len)
{
    uint32_t j;

    if (n > TC_WIRE_MAX_CACHE || (n == 0) != (e == NULL)) {
        return "eager count or array";
    }
    if (overlaps(e, (size_t)n * sizeof(*e), in, len)) {
        return "eager array in the input";
    }
    for (j = 0; j < n; j++) {
        if (e[j].id >= TC_WIRE_MAX_CACHE || (j > 0 && e[j].id <= e[j - 1].id)) {
            return "eager ids not strictly ascending below TC_WIRE_MAX_CACHE";
        }
        if (e[j].len == 0 || e[j].len > TC_WIRE_MAX_EAGER) {
            return "eager len not in 1..TC_WIRE_MAX_EAGER";
        }
        if (e[j].data == NULL || (uintptr_t)e[j].data % 8 != 0) {
            return "eager data NULL or not 8-aligned";
        }
        if (overlaps(e[j].data, e[j].len, in, len)) {
            return "eager data in the input";
        }
    }
    return NULL;
}

/* NULL if a decoded message (from len bytes at in) holds only what wire.h
 * allows, else what is wrong. */
static const char *first_violation(const tc_wire_msg_t *m, const uint8_t *in, size_t len)
{
    const char *bad;
    uint32_t i, j;

    if (m->type != TC_WIRE_REQUESTS && m->type != TC_WIRE_CYCLE && m->type != TC_WIRE_BYE) {
        return "an unknown message type";
    }
    if (m->type == TC_WIRE_BYE && (m->count != 0 || m->reqs != NULL || m->resps != NULL)) {
        return "entries on a BYE";
    }
    if (m->type == TC_WIRE_REQUESTS && m->resps != NULL) {
        return "responses on a REQUESTS";
    }
    for (i = 0; i < m->count && m->type == TC_WIRE_REQUESTS; i++) {
        const tc_wire_request_t *r = &m->reqs[i];
        uint32_t j;
        if (r->pset > TC_WIRE_MAX_PSET) {
            return "request process set above TC_WIRE_MAX_PSET";
        }
        if (r->nranks > TC_WIRE_MAX_RANKS || (r->nranks == 0) != (r->ranks == NULL) ||
            overlaps(r->ranks, (size_t)r->nranks * sizeof(*r->ranks), in, len)) {
            return "request rank count or array";
        }
        for (j = 0; j < r->nranks; j++) {
            if (r->ranks[j] < 0 || r->ranks[j] >= TC_WIRE_MAX_RANKS ||
                (j > 0 && r->ranks[j] <= r->ranks[j - 1])) {
                return "request ranks not strictly ascending below TC_WIRE_MAX_RANKS";
            }
        }
    }
    if (m->type != TC_WIRE_CYCLE) {
        /* only a REQUESTS with SEQ carries seq */
        if ((m->seq != 0 && !(m->type == TC_WIRE_REQUESTS && (m->flags & TC_WIRE_F_SEQ))) ||
            m->round != 0 || m->cache_gen != 0 || m->nready != 0 || m->ready != NULL ||
            m->nsome != 0 || m->some != NULL || m->nstale != 0 || m->stale != NULL ||
            m->neager != 0 || m->eager != NULL) {
            return "cycle fields on a message without a cycle record";
        }
        return NULL;
    }
    if (m->round > TC_WIRE_MAX_ROUND) {
        return "round above TC_WIRE_MAX_ROUND";
    }
    if (m->reqs != NULL) {
        return "requests on a CYCLE";
    }
    for (i = 0; i < m->count; i++) {
        const tc_wire_response_t *r = &m->resps[i];
        if (r->rtype == TC_WIRE_RUN ? r->cache_ref > TC_WIRE_MAX_CACHE : r->cache_ref != 0) {
            return "response cache_ref";
        }
        if (r->pset > TC_WIRE_MAX_PSET) {
            return "response process set above TC_WIRE_MAX_PSET";
        }
        if (r->has_desc > 1 || r->has_value > 1 ||
            (r->rtype == TC_WIRE_ERROR && (r->has_desc || r->has_value))) {
            return "response description or value flag";
        }
        if (!r->has_value && r->value != 0) {
            return "response value without its flag";
        }
        if (r->has_desc && (r->desc.kind >= TC_KIND_COUNT || r->desc.ndim > TC_MAX_DIMS)) {
            return "response description out of range";
        }
        for (j = 0; j < TC_MAX_DIMS; j++) {
            if (r->has_desc && j < r->desc.ndim ? r->desc.shape[j] < 0 : r->desc.shape[j] != 0) {
                return "response description shape";
            }
        }
    }
    if ((bad = bad_ids(m->ready, m->nready)) != NULL) {
        return bad;
    }
    if ((bad = bad_ids(m->some, m->nsome)) != NULL) {
        return bad;
    }
    if ((bad = bad_ids(m->stale, m->nstale)) != NULL) {
        return bad;
    }
    return bad_eager(m->eager, m->neager, in, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tc_wire_msg_t first, second;
    tc_wire_buf_t enc1 = {0}, enc2 = {0};
    char err[256];
    const char *diff;

    if (tc__wire_decode(data, size, &first, err, sizeof(err)) != TC_OK) {
        if (err[0] == '\0' || strchr(err, '\n') != NULL) {
            fail("rejection without a one-line reason", err);
        }
        return 0;
    }
    diff = first_violation(&first, data, size);
    if (diff != NULL) {
        fail("a decoded message breaks the format", diff);
    }
    if (tc__wire_encode(&first, &enc1) != TC_OK) {
        fail("a decoded message does not re-encode", NULL);
    }
    if (enc1.len > size) {
        fail("the re-encoding is longer than the input", NULL);
    }
    if (tc__wire_decode(enc1.data, enc1.len, &second, err, sizeof(err)) != TC_OK) {
        fail("a re-encoded message does not decode", err);
    }
    diff = first_violation(&second, enc1.data, enc1.len);
    if (diff != NULL) {
        fail("a re-encoded message decodes to one that breaks the format", diff);
    }
    diff = first_difference(&first, &second);
    if (diff != NULL) {
        fail("the two decodes differ in", diff);
    }
    if (tc__wire_encode(&second, &enc2) != TC_OK) {
        fail("the second decode does not encode", NULL);
    }
    if (enc1.len != enc2.len || memcmp(enc1.data, enc2.data, enc1.len) != 0) {
        fail("encoding is not stable", NULL);
    }
    tc__wire_msg_free(&first);
    tc__wire_msg_free(&second);
    tc__wire_buf_free(&enc1);
    tc__wire_buf_free(&enc2);
    return 0;
}
