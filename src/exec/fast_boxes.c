/*
 * fast_boxes.c - comparing the descriptions the local ranks posted in their
 * boxes for one use of a small-message name (fast.c), and the text of a
 * mismatch, worded as the coordinator words one.
 */
#include "exec/fast_boxes.h"

#include <stdio.h>
#include <string.h>

#include "tcoll.h"

int tc__fast_same_call(const tc_shm_box_t *a, const tc_shm_box_t *b)
{
    return a->dtype == b->dtype && a->op == b->op && a->count == b->count && a->ndim == b->ndim &&
           memcmp(a->shape, b->shape, sizeof(a->shape)) == 0 && a->prescale == b->prescale &&
           a->postscale == b->postscale;
}

/* The first field in which boxes a and b differ ("dtype", "op", "shape",
 * "scaling factor"), or NULL; its values into va and vb. */
static const char *differs(const tc_shm_box_t *a, const tc_shm_box_t *b, char *va, char *vb,
                           size_t len)
{
    const tc_shm_box_t *x[2] = {a, b};
    char *v[2] = {va, vb};
    int i, d;

    if (a->dtype != b->dtype) {
        for (i = 0; i < 2; i++) {
            snprintf(v[i], len, "%s", tc_dtype_name((tc_dtype_t)x[i]->dtype));
        }
        return "dtype";
    }
    if (a->op != b->op) {
        for (i = 0; i < 2; i++) {
            snprintf(v[i], len, "%s", tc_op_name((tc_op_t)x[i]->op));
        }
        return "op";
    }
    if (a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(a->shape)) != 0) {
        for (i = 0; i < 2; i++) {
            size_t used = (size_t)snprintf(v[i], len, "[");
            for (d = 0; d < x[i]->ndim && d < TC_MAX_DIMS && used < len; d++) {
                used += (size_t)snprintf(v[i] + used, len - used, d ? ",%lld" : "%lld",
                                         (long long)x[i]->shape[d]);
            }
            if (used < len) {
                snprintf(v[i] + used, len - used, "]");
            }
        }
        return "shape";
    }
    if (a->prescale != b->prescale || a->postscale != b->postscale) {
        for (i = 0; i < 2; i++) {
            snprintf(v[i], len, "prescale %g, postscale %g", x[i]->prescale, x[i]->postscale);
        }
        return "scaling factor";
    }
    return NULL;
}

void tc__fast_mismatch_text(const tc_shm_seg_t *s, int box, int b, const char *name, char *msg,
                            size_t len)
{
    const tc_shm_box_t *b0 = tc__shm_box(s, box, 0, b);
    const char *field = NULL;
    char v0[160], vr[160];
    size_t used;
    int r;

    for (r = 1; r < s->n && field == NULL; r++) {
        field = differs(b0, tc__shm_box(s, box, r, b), v0, vr, sizeof(v0));
    }
    if (field == NULL) {
        snprintf(msg, len, "tensor '%s': allreduce mismatch", name);
        return;
    }
    used = (size_t)snprintf(msg, len, "tensor '%s': allreduce %s mismatch: rank 0 has %s", name,
                            field, v0);
    for (r = 1; r < s->n && used < len; r++) {
        const char *f = differs(b0, tc__shm_box(s, box, r, b), v0, vr, sizeof(v0));
        if (f != NULL && strcmp(f, field) == 0) {
            used += (size_t)snprintf(msg + used, len - used, ", rank %d has %s", r, vr);
        }
    }
}
