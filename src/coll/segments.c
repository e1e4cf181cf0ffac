/*
 * segments.c - how a buffer is cut into per-rank segments (of elements, or of
 * whole rows), and the scratch buffer the algorithms share. Pure arithmetic:
 * no transport, no allocation beyond the scratch buffer.
 */
#define _GNU_SOURCE
#include "coll/coll.h"
#include "tcoll_channel.h" /* tc_mem_alloc: the transport layer's */

#include <stdlib.h>
#include <string.h>

void tc__segment(size_t count, int n, int i, size_t *off_p, size_t *len_p)
{
    size_t base = count / (size_t)n;
    size_t rem = count % (size_t)n;
    size_t idx = (size_t)i;

    *off_p = idx * base + (idx < rem ? idx : rem);
    *len_p = base + (idx < rem ? 1 : 0);
}

void tc__row_block(size_t rows, size_t row_elems, int n, int i, size_t *off_p, size_t *len_p)
{
    size_t row_off, row_len;

    tc__segment(rows, n, i, &row_off, &row_len);
    *off_p = row_off * row_elems;
    *len_p = row_len * row_elems;
}

tc_status_t tc__scratch_reserve(tc_scratch_t *s, size_t bytes)
{
    void *p;

    if (bytes <= s->cap) {
        return TC_OK;
    }
    if (s->shared) { /* from the shared reserve: private from now on */
        tc__scratch_free(s);
    }
    p = realloc(s->data, bytes);
    if (p == NULL) {
        return TC_ERR_NOMEM;
    }
    memset(p, 0, bytes); /* fault the pages in now, not in the middle of a step */
    s->data = p;
    s->cap = bytes;
    return TC_OK;
}

tc_status_t tc__scratch_reserve_shared(tc_scratch_t *s, size_t bytes)
{
    size_t cap = 4096;
    void *p = NULL;

    if (bytes <= s->cap) {
        return TC_OK;
    }
    while (cap < bytes && cap <= SIZE_MAX / 2) {
        cap *= 2;
    }
    if (cap < bytes || tc_mem_alloc(cap, &p) != TC_OK) {
        return tc__scratch_reserve(s, bytes); /* private memory will do */
    }
    tc__scratch_free(s);
    memset(p, 0, cap); /* fault the pages in now, not in the middle of a step */
    s->data = p;
    s->cap = cap;
    s->shared = 1;
    return TC_OK;
}

void tc__scratch_free(tc_scratch_t *s)
{
    if (s->shared) {
        (void)tc_mem_free(s->data);
    } else {
        free(s->data);
    }
    s->data = NULL;
    s->cap = 0;
    s->shared = 0;
}
