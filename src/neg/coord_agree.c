/*
 * coord_agree.c - rank 0's agreement checks: whether every rank that
 * submitted a name gave the same parameters, and if not, the message that
 * fails it everywhere: the tensor, the first field that differs (the kind,
 * the group, then the fields the kind's descriptor lists, kind/kind.h),
 * the lowest submitting rank's value and up to MAX_LISTED_RANKS
 * disagreeing ranks with theirs. Pure: it reads the table's entry only.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neg/coord_internal.h"
#include "kind/kind.h"

/* The fields a disagreement is reported on: the kind, then the fields of
 * TC_AGREE_MAP (kind/kind.h) that the kind's descriptor asks for. */
#define F_KIND TC_AGREE_NFIELDS
#define F_GROUP (TC_AGREE_NFIELDS + 1)

static const struct {
    const char *name; /* in "<kind> <name> mismatch" */
    const char *note; /* after it */
} fields[] = {
#define FIELD(name, text, note) [TC_AGREE_INDEX_##name] = {text, note},
    TC_AGREE_MAP(FIELD)
#undef FIELD
        [F_KIND] = {"collective", ""},
    [F_GROUP] = {"group", ""},
};

static int shape_differs(const tc_wire_request_t *a, const tc_wire_request_t *b, int first)
{
    int i;

    if (a->ndim != b->ndim) {
        return 1;
    }
    for (i = first; i < a->ndim; i++) {
        if (a->shape[i] != b->shape[i]) {
            return 1;
        }
    }
    return 0;
}

static int field_differs(int f, const tc_wire_request_t *a, const tc_wire_request_t *b)
{
    switch (f) {
    case F_KIND: return a->kind != b->kind;
    case F_GROUP: return !tc__wire_groups_equal(a, b);
    case TC_AGREE_INDEX_DTYPE: return a->dtype != b->dtype;
    case TC_AGREE_INDEX_MEMORY: return a->memory != b->memory;
    case TC_AGREE_INDEX_OP: return a->op != b->op;
    case TC_AGREE_INDEX_ROOT: return a->root != b->root;
    case TC_AGREE_INDEX_NDIM: return a->ndim != b->ndim;
    case TC_AGREE_INDEX_SHAPE: return shape_differs(a, b, 0);
    case TC_AGREE_INDEX_SHAPE_TAIL: return shape_differs(a, b, 1);
    case TC_AGREE_INDEX_SCALE: return !tc__wire_scales_equal(a, b);
    case TC_AGREE_INDEX_RANKS:
        return a->nranks != b->nranks ||
               (a->nranks > 0 && memcmp(a->ranks, b->ranks, a->nranks * sizeof(*a->ranks)) != 0);
    case TC_AGREE_INDEX_TARGET: return a->root != b->root;
    }
    return 0;
}

/* Appends printf output to buf at *pos, never past len. */
static void append(char *buf, size_t len, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*pos >= len) {
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(buf + *pos, len - *pos, fmt, ap);
    va_end(ap);
    if (n > 0) {
        *pos = (size_t)n >= len - *pos ? len : *pos + (size_t)n;
    }
}

static int format_value(char *buf, size_t len, int f, const tc_wire_request_t *r)
{
    size_t pos = 0;
    int i;

    switch (f) {
    case F_KIND: return snprintf(buf, len, "%s", tc__kind_name(r->kind));
    case F_GROUP:
        if (r->group_size == 0) {
            return snprintf(buf, len, "no group");
        }
        return snprintf(buf, len, "member %u of %u of group '%.*s'", r->group_index + 1,
                        r->group_size, (int)(r->group_key_len > 64 ? 64 : r->group_key_len),
                        r->group_key);
    case TC_AGREE_INDEX_DTYPE: return snprintf(buf, len, "%s", tc_dtype_name((tc_dtype_t)r->dtype));
    case TC_AGREE_INDEX_MEMORY:
        return snprintf(buf, len, "%s",
                        r->memory == TC_WIRE_MEM_CUDA ? "CUDA device memory" : "host memory");
    case TC_AGREE_INDEX_OP: return snprintf(buf, len, "%s", tc_op_name((tc_op_t)r->op));
    case TC_AGREE_INDEX_ROOT: return snprintf(buf, len, "%" PRId32, r->root);
    case TC_AGREE_INDEX_NDIM: return snprintf(buf, len, "%u", (unsigned)r->ndim);
    case TC_AGREE_INDEX_SHAPE:
    case TC_AGREE_INDEX_SHAPE_TAIL:
        append(buf, len, &pos, "[");
        for (i = 0; i < r->ndim && i < TC_MAX_DIMS; i++) {
            append(buf, len, &pos, i ? ",%" PRId64 : "%" PRId64, r->shape[i]);
        }
        append(buf, len, &pos, "]");
        return (int)pos;
    case TC_AGREE_INDEX_SCALE:
        return snprintf(buf, len, "prescale %.17g postscale %.17g", r->scaled ? r->prescale : 1.0,
                        r->scaled ? r->postscale : 1.0);
    case TC_AGREE_INDEX_RANKS: /* at most 16 ranks shown, then how many more */
        append(buf, len, &pos, "[");
        for (i = 0; i < (int)r->nranks && i < 16; i++) {
            append(buf, len, &pos, i ? ",%" PRId32 : "%" PRId32, r->ranks[i]);
        }
        if (r->nranks > 16) {
            append(buf, len, &pos, ", ... %u in all", r->nranks);
        }
        append(buf, len, &pos, "]");
        return (int)pos;
    case TC_AGREE_INDEX_TARGET: return snprintf(buf, len, "%" PRId32, r->root);
    }
    return snprintf(buf, len, "?");
}

/* The first rank after r0 that submitted e and differs from r0 on field f,
 * or c->size. */
static int next_differing(const tc_coord_t *c, const entry_t *e, int f, int r0, int q)
{
    for (; q < c->size; q++) {
        if (e->have[q] && field_differs(f, &e->reqs[r0], &e->reqs[q])) {
            return q;
        }
    }
    return c->size;
}

/* The first field on which some submitting rank differs from the lowest
 * one (r0), or -1: the kind, the group, then what r0's kind says must
 * agree; *q_p is the first such rank. Ranks that joined and did not submit
 * (tc_join) have nothing to compare. */
static int first_difference(const tc_coord_t *c, const entry_t *e, int r0, int *q_p)
{
    unsigned agree = tc__kind_get(e->reqs[r0].kind)->agree; /* checked by tc__coord_add */
    int f;

    if ((*q_p = next_differing(c, e, F_KIND, r0, r0 + 1)) < c->size) {
        return F_KIND;
    }
    if ((*q_p = next_differing(c, e, F_GROUP, r0, r0 + 1)) < c->size) {
        return F_GROUP;
    }
    for (f = 0; f < TC_AGREE_NFIELDS; f++) {
        if ((agree & (1u << f)) && (*q_p = next_differing(c, e, f, r0, r0 + 1)) < c->size) {
            return f;
        }
    }
    return -1;
}

char *tc__coord_check_agreement(const tc_coord_t *c, const entry_t *e)
{
    const int r0 = tc__coord_first(e);
    const tc_wire_request_t *ref = &e->reqs[r0];
    char value[256];
    size_t pos = 0, len = TC_WIRE_MAX_TEXT + 1;
    char *text;
    int q, f = first_difference(c, e, r0, &q), listed = 0, extra = 0;

    if (f < 0) {
        return NULL;
    }
    text = malloc(len);
    if (text == NULL) {
        return NULL;
    }
    if (f == F_KIND) {
        append(text, len, &pos, "tensor '%s': collective mismatch:", e->name);
    } else {
        append(text, len, &pos, "tensor '%s': %s %s mismatch%s:", e->name,
               tc__kind_get(ref->kind)->name, fields[f].name, fields[f].note);
    }
    format_value(value, sizeof(value), f, ref);
    append(text, len, &pos, " rank %d has %s", r0, value);
    for (; q < c->size; q = next_differing(c, e, f, r0, q + 1)) {
        if (listed == MAX_LISTED_RANKS) {
            extra++;
            continue;
        }
        format_value(value, sizeof(value), f, &e->reqs[q]);
        append(text, len, &pos, ", rank %d has %s", q, value);
        listed++;
    }
    if (extra > 0) {
        append(text, len, &pos, ", and %d more rank%s differ", extra, extra > 1 ? "s" : "");
    }
    text[len - 1] = '\0';
    if (strlen(text) > TC_WIRE_MAX_TEXT) {
        text[TC_WIRE_MAX_TEXT] = '\0';
    }
    return text;
}
