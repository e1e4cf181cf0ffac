/*
 * wire_gen.c - seeded random valid control messages for the codec's unit
 * tests (gen_msg, wire_codec_testutil.h): every message type and flag, every
 * field of requests and responses (process sets, rank lists, descriptions
 * and values included) at the ends of their ranges and varint boundaries,
 * and on types without a cycle record, cycle fields the encoder must ignore.
 * Draws from rng() only.
 */
#include <stdint.h>
#include <string.h>

#include "wire/wire.h"
#include "wire_codec_testutil.h"

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
        {9, 4, "abcd"}, {3, 0, "x"}, {3, TC_WIRE_MAX_EAGER + 1, "y"}, {TC_WIRE_MAX_CACHE, 1, NULL}};

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
    case 0:
        m->neager = UINT32_MAX;
        m->eager = NULL;
        break;
    case 1:
        m->neager = 4;
        m->eager = bad_eager;
        break;
    default:
        m->neager = rand_eager(6, 0);
        m->eager = gen.eager;
        break; /* valid, ignored */
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
const tc_wire_msg_t *gen_msg(unsigned max_entries, int big)
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
            if (rng_below(4) == 0) {                           /* ignored on ERROR, however bad */
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
