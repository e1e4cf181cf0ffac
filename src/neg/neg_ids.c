/*
 * neg_ids.c - cache ids as the negotiation's parts list them: the ascending
 * id lists and their lookups, which cached names ride eagerly (and whether
 * gathered), and rank 0's stall clock per id. Below the parts (neg_part.c)
 * and the end of a cycle (neg_cycle.c); calls only neg_io.c.
 */
#define _GNU_SOURCE
#include "neg/neg_internal.h"

#include <stdlib.h>
#include <string.h>

#include "kind/kind.h"
#include "reduce/reduce.h"

int neg_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

int neg_has_id(const uint32_t *ids, uint32_t count, uint32_t id)
{
    return count > 0 && bsearch(&id, ids, count, sizeof(id), neg_cmp_u32) != NULL;
}

const tc_wire_eager_t *neg_find_eager(const tc_wire_eager_t *e, uint32_t count, uint32_t id)
{
    uint32_t lo = 0, hi = count;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (e[mid].id == id) {
            return &e[mid];
        }
        if (e[mid].id < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

/* ---- rank 0's stall clocks ------------------------------------------------- */

idst_t *neg_idst(tc_neg_t *n, uint32_t id)
{
    if (id >= n->nids) {
        uint32_t cap = n->nids < 64 ? 64 : n->nids;
        idst_t *v;
        while (cap <= id) {
            cap *= 2;
        }
        v = realloc(n->ids, (size_t)cap * sizeof(*v));
        if (v == NULL) {
            neg_fail(n, TC_ERR_NOMEM, "out of memory tracking cached tensors");
            return NULL;
        }
        memset(v + n->nids, 0, (size_t)(cap - n->nids) * sizeof(*v));
        n->ids = v;
        n->nids = cap;
    }
    return &n->ids[id];
}

/* The id ran or was dropped: its stall clock stops. */
void neg_id_reset(tc_neg_t *n, uint32_t id)
{
    if (id < n->nids) {
        n->ids[id].since_ns = 0;
    }
}

/* ---- eager inputs --------------------------------------------------------- */

int neg_eager_gathers(const tc_neg_t *n, const tc_wire_request_t *w)
{
    /* the direct exchange merges parts in the order they arrive: only
     * gathered inputs, combined at the end, give every rank the same bits */
    return n->direct ||
           (n->p.deterministic && tc__order_matters((tc_dtype_t)w->dtype, (tc_op_t)w->op));
}

/* Whether a cached submission rides eagerly: a small tensor of a kind that
 * can combine eager inputs (kind/kind.h), whose record in a part (gathered
 * over rounds: one input per rank; direct: its rank's) fits
 * TCOLL_EAGER_BYTES. *bytes_p: that record's size. Device tensors never
 * ride: the negotiation reads inputs on the host. */
int neg_is_eager(const tc_neg_t *n, const tc_wire_request_t *w, size_t *bytes_p)
{
    const tc_kind_desc_t *kd = tc__kind_get(w->kind);
    size_t count = 1;
    int d;

    if (n->p.eager_bytes == 0 || kd == NULL || kd->eager_combine == NULL ||
        w->memory != TC_WIRE_MEM_HOST) {
        return 0;
    }
    if (!n->direct && neg_eager_gathers(n, w)) {
        count = (size_t)n->p.size; /* a slot per rank in every part (direct: its own) */
    }
    for (d = 0; d < w->ndim; d++) {
        if (w->shape[d] <= 0 || (uint64_t)w->shape[d] > n->p.eager_bytes) {
            return 0;
        }
        count *= (size_t)w->shape[d];
        if (count > n->p.eager_bytes) {
            return 0;
        }
    }
    *bytes_p = count * tc_dtype_size((tc_dtype_t)w->dtype);
    return *bytes_p > 0 && *bytes_p <= n->p.eager_bytes;
}
