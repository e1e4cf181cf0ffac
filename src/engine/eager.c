/*
 * eager.c - eager inputs: the input of a small cached tensor rides inside
 * this rank's cycle message, and when every rank's message carries it each
 * rank combines them where they land, with no separate transfer.
 *
 * Only kinds whose descriptor has an eager function take part (allreduce:
 * the inputs are reduced in rank order, so every rank gets the same bits).
 * Whether a tensor went eagerly is decided per cycle from what every rank
 * listed, so all ranks decide the same; a tensor that did not travel on
 * every rank runs as a collective. Running out of memory here is never an
 * error: the tensor goes the normal way.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "engine/engine_internal.h"
#include "engine/kinds.h"
#include "util/backoff.h"
#include "util/timeline.h"

/* Picks the ready ids whose inputs ride in our cycle message: small tensors
 * of a kind that can combine eager inputs, up to ENG_EAGER_MSG_MAX bytes in
 * all. ready: the ids our message lists, each with a pending request. */
void tc__eager_attach(engine_t *e, const tc_cache_t *cache, const uint32_t *ready,
                      uint32_t nready)
{
    size_t total = 0, limit = (size_t)e->cfg->eager_bytes;
    uint32_t i;

    e->eager.nmine = 0;
    if (limit == 0 || nready == 0 || e->size > ENG_EAGER_MAX_RANKS) {
        return;
    }
    e->eager.mine = malloc((size_t)nready * sizeof(*e->eager.mine));
    if (e->eager.mine == NULL) {
        return; /* they go the normal way */
    }
    for (i = 0; i < nready; i++) {
        const tc_cache_entry_t *ce = tc__cache_get(cache, ready[i]);
        const tc_request_t *req = ce->pending;
        size_t bytes = req->count * tc_dtype_size(req->dtype);
        if (tc__kind_of(req)->eager == NULL || bytes == 0 || bytes > limit ||
            total + bytes > ENG_EAGER_MSG_MAX) {
            continue;
        }
        e->eager.mine[e->eager.nmine++] = (tc_wire_eager_t){ce->id, (uint32_t)bytes, req->send};
        total += bytes;
    }
}

/* Forgets what our last cycle message carried. */
void tc__eager_clear(engine_t *e)
{
    free(e->eager.mine);
    e->eager.mine = NULL;
    e->eager.nmine = 0;
}

static int cmp_eager(const void *a, const void *b)
{
    uint32_t x = ((const tc_wire_eager_t *)a)->id, y = ((const tc_wire_eager_t *)b)->id;
    return (x > y) - (x < y);
}

static const tc_wire_eager_t *find_eager(const tc_wire_eager_t *ents, uint32_t n, uint32_t id)
{
    tc_wire_eager_t key = {id, 0, NULL};
    return n > 0 ? bsearch(&key, ents, n, sizeof(key), cmp_eager) : NULL;
}

/* If every rank sent its input for id inside its cycle message (msgs[q]:
 * rank q's; this rank's own is what tc__eager_attach picked), combines them
 * here and completes req: returns 1. Returns 0 when the id must run as a
 * collective (or after a protocol error, which stops the engine). */
int tc__eager_reduce(engine_t *e, uint32_t id, tc_request_t *req, const tc_wire_msg_t *msgs)
{
    const void *inputs[ENG_EAGER_MAX_RANKS];
    size_t bytes = req->count * tc_dtype_size(req->dtype);
    int q;

    if (e->size > ENG_EAGER_MAX_RANKS) {
        return 0;
    }
    for (q = 0; q < e->size; q++) {
        const tc_wire_eager_t *x = q == e->rank ? find_eager(e->eager.mine, e->eager.nmine, id)
                                                : find_eager(msgs[q].eager, msgs[q].neager, id);
        if (x == NULL) {
            return 0;
        }
        if (x->len != bytes) {
            tc__engine_fail(e, TC_ERR_TRANSPORT, "protocol error: rank %d sent %u bytes of "
                            "tensor '%s', this rank has %zu", q, x->len, req->name, bytes);
            return 0;
        }
        inputs[q] = x->data;
    }
    if (tc__kind_of(req)->eager(req, inputs, e->size, &e->eager.acc) != TC_OK) {
        return 0;
    }
    if (tc__tl_active()) {
        tc__engine_tl_tensor(e, req, "eager (inputs in the cycle messages)", e->exec.ready_ns,
                             tc__now_ns(), 1, TC_OK);
    }
    tc__queue_finish(req, TC_OK, NULL);
    return 1;
}
