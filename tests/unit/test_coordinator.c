/*
 * test_coordinator.c - rank 0's message table without MPI: readiness only
 * when every rank submitted, readiness order, allgather plans, the text of
 * every mismatch kind, joins, and protocol violations that change nothing.
 */
#define _GNU_SOURCE
#include "check.h"
#include "neg/coordinator.h"
#include "tc_test.h"
#include "util/backoff.h"
#include "wire_testutil.h"

/* A submission entered now (the table's stall clock reads the caller's). */
static tc_status_t coord_add(tc_coord_t *c, int rank, const tc_wire_request_t *req, char *err,
                             size_t len)
{
    return tc__coord_add_at(c, rank, req, tc__now_ns(), err, len);
}

/* Submits base on every rank except `odd`, which submits alt; returns the
 * single response's text (malloc'd) or NULL for RUN. */
static char *decide(int size, tc_wire_request_t base, int odd, tc_wire_request_t alt)
{
    tc_coord_t *c;
    tc_coord_batch_t b;
    char err[256], *text = NULL;
    int q;

    CHECK_OK(tc__coord_create(size, &c));
    for (q = 0; q < size; q++) {
        tc_wire_request_t r = q == odd ? alt : base;
        CHECK_OK(coord_add(c, q, &r, err, sizeof(err)));
    }
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.count, 1);
    if (b.resps[0].rtype == TC_WIRE_ERROR) {
        CHECK_EQ(b.resps[0].status, TC_ERR_MISMATCH);
        text = strndup(b.resps[0].text, b.resps[0].text_len);
    }
    tc__coord_batch_free(&b);
    tc__coord_destroy(c);
    return text;
}

typedef struct {
    int n;
    unsigned slow_have;
    int slow_kind;
    uint64_t slow_since;
} pending_seen_t;

static void see_pending(const tc_coord_pending_t *p, void *arg)
{
    pending_seen_t *seen = arg;
    int q;

    seen->n++;
    if (p->name_len == 4 && memcmp(p->name, "slow", 4) == 0) {
        for (q = 0; q < 4; q++) {
            seen->slow_have |= p->have[q] ? 1u << q : 0;
        }
        seen->slow_kind = p->kind;
        seen->slow_since = p->since_ns;
    }
}

static void expect(char *text, const char *want)
{
    CHECK_MSG(text != NULL && strcmp(text, want) == 0, "got \"%s\", want \"%s\"",
              text ? text : "(RUN)", want);
    free(text);
}

/* Readiness only once every rank submitted, in the order names became
 * ready; protocol violations change nothing. */
TC_CASE(readiness_and_order)
{
    tc_coord_t *c;
    tc_coord_batch_t b;
    char err[256];
    tc_wire_request_t a, x;

    CHECK_OK(tc__coord_create(3, &c));
    a = mk("a", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 4, 0);
    x = mk("b", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 4, 0);
    CHECK_OK(coord_add(c, 2, &x, err, sizeof(err)));
    CHECK_OK(coord_add(c, 0, &a, err, sizeof(err)));
    CHECK_OK(coord_add(c, 1, &a, err, sizeof(err)));
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.count, 0);
    CHECK_EQ(tc__coord_pending(c), 2);
    /* protocol violations change nothing */
    CHECK_STATUS(coord_add(c, 1, &a, err, sizeof(err)), TC_ERR_ARG);
    CHECK_STR_CONTAINS(err, "twice");
    CHECK_STATUS(coord_add(c, 3, &a, err, sizeof(err)), TC_ERR_ARG);
    CHECK_STATUS(coord_add(c, -1, &a, err, sizeof(err)), TC_ERR_ARG);
    CHECK_OK(coord_add(c, 0, &x, err, sizeof(err)));
    CHECK_OK(coord_add(c, 1, &x, err, sizeof(err))); /* b ready first */
    CHECK_OK(coord_add(c, 2, &a, err, sizeof(err)));
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.count, 2);
    CHECK(b.resps[0].name_len == 1 && b.resps[0].name[0] == 'b');
    CHECK(b.resps[1].name_len == 1 && b.resps[1].name[0] == 'a');
    CHECK_EQ(b.resps[0].rtype, TC_WIRE_RUN);
    CHECK_EQ(b.resps[0].ndim0, 0);
    tc__coord_batch_free(&b);
    CHECK_EQ(tc__coord_pending(c), 0);
    /* a name can come back once it left the table */
    CHECK_OK(coord_add(c, 0, &a, err, sizeof(err)));
    CHECK_EQ(tc__coord_pending(c), 1);
    tc__coord_destroy(c);
}

/* An allgather plan: the rows of every rank. */
TC_CASE(allgather_plan_rows_per_rank)
{
    tc_coord_t *c;
    tc_coord_batch_t b;
    char err[256];
    int q;

    CHECK_OK(tc__coord_create(4, &c));
    for (q = 0; q < 4; q++) {
        tc_wire_request_t g = mk("g", TC_KIND_ALLGATHER, TC_INT8, TC_SUM, 0, 2, q * 3, 5);
        CHECK_OK(coord_add(c, q, &g, err, sizeof(err)));
    }
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.count, 1);
    CHECK_EQ(b.resps[0].rtype, TC_WIRE_RUN);
    CHECK_EQ(b.resps[0].ndim0, 4);
    for (q = 0; q < 4; q++) {
        CHECK_EQ(b.resps[0].dim0[q], q * 3);
    }
    tc__coord_batch_free(&b);
    tc__coord_destroy(c);
}

/* The message of every mismatch kind. */
TC_CASE(every_mismatch_kind_text)
{
    tc_wire_request_t a, x;

    a = mk("grad/w1", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 2, 2, 3);
    expect(decide(3, a, 2, mk("grad/w1", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 2, 3, 2)),
           "tensor 'grad/w1': allreduce shape mismatch: rank 0 has [2,3], rank 2 has [3,2]");
    expect(decide(2, a, 1, mk("grad/w1", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 6, 0)),
           "tensor 'grad/w1': allreduce shape mismatch: rank 0 has [2,3], rank 1 has [6]");
    expect(decide(4, a, 3, mk("grad/w1", TC_KIND_ALLREDUCE, TC_INT32, TC_SUM, 0, 2, 2, 3)),
           "tensor 'grad/w1': allreduce dtype mismatch: rank 0 has float32, rank 3 has int32");
    expect(decide(2, a, 1, mk("grad/w1", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_MAX, 0, 2, 2, 3)),
           "tensor 'grad/w1': allreduce op mismatch: rank 0 has sum, rank 1 has max");
    expect(decide(2, a, 1, mk("grad/w1", TC_KIND_BROADCAST, TC_FLOAT32, TC_SUM, 0, 2, 2, 3)),
           "tensor 'grad/w1': collective mismatch: rank 0 has allreduce, rank 1 has broadcast");
    /* rank 0 is the odd one out: every other rank is listed */
    expect(decide(3, a, 0, mk("grad/w1", TC_KIND_ALLREDUCE, TC_FLOAT64, TC_SUM, 0, 2, 2, 3)),
           "tensor 'grad/w1': allreduce dtype mismatch: rank 0 has float64, rank 1 has float32, "
           "rank 2 has float32");
    x = mk("bc", TC_KIND_BROADCAST, TC_UINT8, TC_SUM, 1, 1, 9, 0);
    expect(decide(3, x, 2, mk("bc", TC_KIND_BROADCAST, TC_UINT8, TC_SUM, 2, 1, 9, 0)),
           "tensor 'bc': broadcast root mismatch: rank 0 has 1, rank 2 has 2");
    /* the op of a broadcast is not compared */
    CHECK(decide(2, x, 1, mk("bc", TC_KIND_BROADCAST, TC_UINT8, TC_MAX, 1, 1, 9, 0)) == NULL);
    x = mk("ag", TC_KIND_ALLGATHER, TC_INT64, TC_SUM, 0, 2, 1, 4);
    expect(decide(2, x, 1, mk("ag", TC_KIND_ALLGATHER, TC_INT64, TC_SUM, 0, 1, 1, 0)),
           "tensor 'ag': allgather ndim mismatch: rank 0 has 2, rank 1 has 1");
    expect(decide(2, x, 1, mk("ag", TC_KIND_ALLGATHER, TC_INT64, TC_SUM, 0, 2, 7, 5)),
           "tensor 'ag': allgather shape mismatch (dims after the first): rank 0 has [1,4], "
           "rank 1 has [7,5]");
    /* dim 0 may differ in an allgather */
    CHECK(decide(2, x, 1, mk("ag", TC_KIND_ALLGATHER, TC_INT64, TC_SUM, 0, 2, 7, 4)) == NULL);
}

/* Many disagreeing ranks: four listed, the rest counted. */
TC_CASE(many_disagreeing_ranks)
{
    tc_coord_t *c;
    tc_coord_batch_t b;
    char err[256];
    int q;

    CHECK_OK(tc__coord_create(8, &c));
    for (q = 0; q < 8; q++) {
        tc_wire_request_t r =
            mk("m", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, q == 0 ? 1 : 2, 0);
        CHECK_OK(coord_add(c, q, &r, err, sizeof(err)));
    }
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.resps[0].rtype, TC_WIRE_ERROR);
    CHECK_STR_CONTAINS(b.resps[0].text, "rank 4 has [2], and 3 more ranks differ");
    tc__coord_batch_free(&b);
    tc__coord_destroy(c);
}

/* The stall inspector's view: waiting names, who has them, since when;
 * expiring one turns it into an ERROR for the next batch. */
TC_CASE(stall_view_and_expiry)
{
    tc_coord_t *c;
    tc_coord_batch_t b;
    char err[256];
    tc_wire_request_t a, x;
    pending_seen_t seen = {0};
    uint64_t before = tc__now_ns();

    CHECK_OK(tc__coord_create(4, &c));
    a = mk("slow", TC_KIND_BROADCAST, TC_INT32, TC_SUM, 0, 1, 3, 0);
    x = mk("fast", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 3, 0);
    CHECK_OK(coord_add(c, 2, &a, err, sizeof(err)));
    CHECK_OK(coord_add(c, 1, &a, err, sizeof(err)));
    CHECK_OK(coord_add(c, 0, &x, err, sizeof(err)));
    tc__coord_foreach_pending(c, see_pending, &seen);
    CHECK_EQ(seen.n, 2);
    CHECK_EQ(seen.slow_have, 0x6); /* ranks 1 and 2 */
    CHECK_EQ(seen.slow_kind, TC_KIND_BROADCAST);
    CHECK(seen.slow_since >= before && seen.slow_since <= tc__now_ns());
    CHECK_STATUS(tc__coord_expire(c, "none", 4, 0, TC_ERR_TIMEOUT, "x"), TC_ERR_ARG);
    CHECK_STATUS(tc__coord_expire(c, "slow", 4, 0, TC_OK, "x"), TC_ERR_ARG);
    CHECK_EQ(tc__coord_pending(c), 2);
    CHECK_OK(tc__coord_expire(c, "slow", 4, 0, TC_ERR_TIMEOUT, "tensor 'slow' stalled"));
    CHECK_EQ(tc__coord_pending(c), 1);
    CHECK_EQ(tc__coord_nready(c), 1);
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.count, 1);
    CHECK_EQ(b.resps[0].rtype, TC_WIRE_ERROR);
    CHECK_EQ(b.resps[0].status, TC_ERR_TIMEOUT);
    CHECK_STR_CONTAINS(b.resps[0].text, "tensor 'slow' stalled");
    tc__coord_batch_free(&b);
    /* the name can be submitted afresh; a late rank starts a new entry */
    CHECK_OK(coord_add(c, 3, &a, err, sizeof(err)));
    CHECK_EQ(tc__coord_pending(c), 2);
    tc__coord_destroy(c);
}

/* Member i of a group of n named key. */
static tc_wire_request_t member(const char *name, const char *key, int i, int n)
{
    tc_wire_request_t r = mk(name, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 3, 0);
    r.group_size = (uint32_t)n;
    r.group_index = (uint32_t)i;
    r.group_key = key;
    r.group_key_len = (uint32_t)strlen(key);
    return r;
}

/* A group's members wait for each other, come out in member order, are
 * never cached; one disagreeing member fails them all with its message;
 * one expiring member fails them all, even those still to come. */
TC_CASE(groups)
{
    tc_coord_t *c;
    tc_coord_batch_t b;
    char err[256];
    tc_wire_request_t g0 = member("g0", "g0", 0, 3), g1 = member("g1", "g0", 1, 3),
                      g2 = member("g2", "g0", 2, 3), bad = g1, solo;
    int r;

    CHECK_OK(tc__coord_create(2, &c));
    for (r = 0; r < 2; r++) { /* members 2 and 0 complete first: nothing ready */
        CHECK_OK(coord_add(c, r, &g2, err, sizeof(err)));
        CHECK_OK(coord_add(c, r, &g0, err, sizeof(err)));
    }
    CHECK_EQ(tc__coord_nready(c), 0);
    CHECK_OK(coord_add(c, 0, &g1, err, sizeof(err)));
    CHECK_EQ(tc__coord_nready(c), 0);
    CHECK_OK(coord_add(c, 1, &g1, err, sizeof(err)));
    CHECK_EQ(tc__coord_nready(c), 3);
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.count, 3);
    for (r = 0; r < 3; r++) {
        char want[4];
        snprintf(want, sizeof(want), "g%d", r);
        CHECK_EQ(b.resps[r].rtype, TC_WIRE_RUN);
        CHECK(b.resps[r].name_len == 2 && memcmp(b.resps[r].name, want, 2) == 0);
        CHECK_EQ(b.kinds[r], TC_COORD_NOCACHE);
    }
    tc__coord_batch_free(&b);
    /* member 1's shape differs on rank 1: all three fail with its message */
    bad.shape[0] = 4;
    for (r = 0; r < 2; r++) {
        CHECK_OK(coord_add(c, r, &g0, err, sizeof(err)));
        CHECK_OK(coord_add(c, r, r ? &bad : &g1, err, sizeof(err)));
        CHECK_OK(coord_add(c, r, &g2, err, sizeof(err)));
    }
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.count, 3);
    for (r = 0; r < 3; r++) {
        CHECK_EQ(b.resps[r].rtype, TC_WIRE_ERROR);
        CHECK_EQ(b.resps[r].status, TC_ERR_MISMATCH);
        CHECK_STR_CONTAINS(b.resps[r].text, "tensor 'g1': allreduce shape mismatch");
    }
    tc__coord_batch_free(&b);
    /* member 0 complete, member 1 expires: both fail; member 2 fails when
     * it completes */
    for (r = 0; r < 2; r++) {
        CHECK_OK(coord_add(c, r, &g0, err, sizeof(err)));
    }
    CHECK_OK(coord_add(c, 0, &g1, err, sizeof(err)));
    CHECK_OK(tc__coord_expire(c, "g1", 2, 0, TC_ERR_TIMEOUT, "tensor 'g1' stalled"));
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.count, 2);
    for (r = 0; r < 2; r++) {
        CHECK_EQ(b.resps[r].status, TC_ERR_TIMEOUT);
        CHECK_STR_CONTAINS(b.resps[r].text, "tensor 'g1' stalled");
    }
    tc__coord_batch_free(&b);
    for (r = 0; r < 2; r++) {
        CHECK_OK(coord_add(c, r, &g2, err, sizeof(err)));
    }
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.count, 1);
    CHECK_EQ(b.resps[0].status, TC_ERR_TIMEOUT);
    tc__coord_batch_free(&b);
    /* a name grouped on one rank and not on the other: a group mismatch */
    solo = mk("g9", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 3, 0);
    g0 = member("g9", "g9", 0, 1);
    CHECK_OK(coord_add(c, 0, &g0, err, sizeof(err)));
    CHECK_OK(coord_add(c, 1, &solo, err, sizeof(err)));
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.count, 1);
    CHECK_STR_CONTAINS(b.resps[0].text, "tensor 'g9': allreduce group mismatch: rank 0 has member "
                                        "1 of 1 of group 'g9', rank 1 has no group");
    tc__coord_batch_free(&b);
    tc__coord_destroy(c);
}

/* Joins (tc_join): names that only joined ranks lack run without them,
 * with the tensor's description; kinds that need every rank fail; nothing
 * is cached meanwhile; the join completes with the last rank to join, and
 * then names wait for every rank again. */
/* A capped take: the oldest max ready names, past max the rest of a group
 * it started (a group runs as a unit), the others left ready in order for
 * the next take; at least one name even with max 0. */
TC_CASE(take_ready_max)
{
    tc_coord_t *c;
    tc_coord_batch_t b;
    char err[256];
    const char *names[] = {"a", "g0", "g1", "g2", "b", "c"};
    tc_wire_request_t reqs[6];
    int r, i;

    reqs[0] = mk("a", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 4, 0);
    for (i = 0; i < 3; i++) {
        reqs[1 + i] = member(names[1 + i], "g0", i, 3);
    }
    reqs[4] = mk("b", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 4, 0);
    reqs[5] = mk("c", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 4, 0);
    CHECK_OK(tc__coord_create(2, &c));
    for (i = 0; i < 6; i++) {
        for (r = 0; r < 2; r++) {
            CHECK_OK(coord_add(c, r, &reqs[i], err, sizeof(err)));
        }
    }
    CHECK_EQ(tc__coord_nready(c), 6);
    CHECK_OK(tc__coord_take_ready_max(c, 2, &b)); /* a, g0, and g1 g2 with g0 */
    CHECK_EQ(b.count, 4);
    for (i = 0; i < 4; i++) {
        CHECK(b.resps[i].name_len == strlen(names[i]) &&
              memcmp(b.resps[i].name, names[i], b.resps[i].name_len) == 0);
        CHECK_EQ(b.resps[i].rtype, TC_WIRE_RUN);
    }
    tc__coord_batch_free(&b);
    CHECK_EQ(tc__coord_nready(c), 2);
    CHECK_OK(tc__coord_take_ready_max(c, 0, &b)); /* at least one: b */
    CHECK(b.count == 1 && b.resps[0].name_len == 1 && b.resps[0].name[0] == 'b');
    tc__coord_batch_free(&b);
    CHECK_OK(tc__coord_take_ready_max(c, 5, &b)); /* fewer than max: c, the list empties */
    CHECK(b.count == 1 && b.resps[0].name_len == 1 && b.resps[0].name[0] == 'c');
    tc__coord_batch_free(&b);
    CHECK_EQ(tc__coord_nready(c), 0);
    /* the list is whole again after emptying: a new name is taken alone */
    for (r = 0; r < 2; r++) {
        CHECK_OK(coord_add(c, r, &reqs[0], err, sizeof(err)));
    }
    CHECK_OK(tc__coord_take_ready_max(c, 1, &b));
    CHECK(b.count == 1 && b.resps[0].name_len == 1 && b.resps[0].name[0] == 'a');
    tc__coord_batch_free(&b);
    CHECK_EQ(tc__coord_pending(c), 0);
    tc__coord_destroy(c);
}

TC_CASE(joins)
{
    tc_coord_t *c;
    tc_coord_batch_t b;
    char err[256];
    tc_wire_request_t g = mk("g", TC_KIND_REDUCESCATTER, TC_FLOAT32, TC_MAX, 0, 2, 5, 3);
    tc_wire_request_t ag = mk("ag", TC_KIND_ALLGATHER, TC_FLOAT32, TC_SUM, 0, 1, 2, 0);
    tc_wire_request_t w = mk("w", TC_KIND_ALLREDUCE, TC_INT16, TC_SUM, 0, 1, 4, 0);
    tc_wire_request_t m0 = mk("m", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 3, 0);
    tc_wire_request_t m1 = mk("m", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 4, 0);
    tc_wire_request_t bar = mk("tcoll/barrier/0.0", TC_KIND_BARRIER, TC_UINT8, TC_SUM, 0, 1, 0, 0);
    tc_wire_request_t j = mk("tcoll/join/0", TC_KIND_JOIN, TC_UINT8, TC_SUM, 0, 1, 0, 0);
    int q;

    CHECK_OK(tc__coord_create(4, &c));
    CHECK_EQ(tc__coord_joins_taken(c, -1), 0);
    CHECK_OK(coord_add(c, 0, &w, err, sizeof(err)));
    CHECK_OK(coord_add(c, 1, &w, err, sizeof(err)));
    CHECK_OK(coord_add(c, 3, &j, err, sizeof(err)));
    CHECK_EQ(tc__coord_njoined(c), 1);
    /* the joins taken, per rank (the small-message path waits for these) */
    CHECK_EQ(tc__coord_joins_taken(c, 3), 1);
    CHECK_EQ(tc__coord_joins_taken(c, 0), 0);
    CHECK_EQ(tc__coord_joins_taken(c, -1), 1);
    CHECK(coord_add(c, 3, &j, err, sizeof(err)) != TC_OK); /* twice: refused, not counted */
    CHECK_EQ(tc__coord_joins_taken(c, 3), 1);
    CHECK_EQ(tc__coord_nready(c), 0); /* w still waits for rank 2 */
    for (q = 0; q < 3; q++) {
        CHECK_OK(coord_add(c, q, &g, err, sizeof(err)));
        CHECK_OK(coord_add(c, q, &ag, err, sizeof(err)));
        CHECK_OK(coord_add(c, q, &bar, err, sizeof(err)));
    }
    CHECK_OK(coord_add(c, 0, &m0, err, sizeof(err)));
    CHECK_OK(coord_add(c, 1, &m1, err, sizeof(err)));
    CHECK_EQ(tc__coord_nready(c), 3);
    /* rank 2 joins: w and m, waiting only for joined ranks, run first */
    CHECK_OK(coord_add(c, 2, &j, err, sizeof(err)));
    CHECK_EQ(tc__coord_njoined(c), 2);
    CHECK_EQ(tc__coord_nready(c), 5);
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.count, 5);
    CHECK_EQ(b.resps[0].rtype, TC_WIRE_RUN); /* g: the description for ranks 3 */
    CHECK(b.resps[0].has_desc && !b.resps[0].has_value);
    CHECK_EQ(b.resps[0].desc.kind, TC_KIND_REDUCESCATTER);
    CHECK_EQ(b.resps[0].desc.dtype, TC_FLOAT32);
    CHECK_EQ(b.resps[0].desc.op, TC_MAX);
    CHECK_EQ(b.resps[0].desc.ndim, 2);
    CHECK_EQ(b.resps[0].desc.shape[0], 5);
    CHECK_EQ(b.resps[0].desc.shape[1], 3);
    CHECK_EQ(b.kinds[0], TC_COORD_NOCACHE);
    CHECK_EQ(b.resps[1].rtype, TC_WIRE_ERROR); /* ag needs every rank */
    CHECK_EQ(b.resps[1].status, TC_ERR_STATE);
    CHECK_STR_CONTAINS(b.resps[1].text, "tensor 'ag': allgather cannot run while rank 3 has "
                                        "joined");
    CHECK_EQ(b.resps[2].rtype, TC_WIRE_RUN); /* the barrier, without rank 3 */
    CHECK(b.resps[2].has_desc);
    for (q = 3; q < 5; q++) { /* once rank 2 joined, in the table's order */
        const tc_wire_response_t *r = &b.resps[q];
        CHECK(r->name_len == 1 && (r->name[0] == 'w' || r->name[0] == 'm'));
        if (r->name[0] == 'w') {
            CHECK(r->rtype == TC_WIRE_RUN && r->has_desc);
            CHECK_EQ(r->desc.dtype, TC_INT16);
        } else { /* its submitters disagree */
            CHECK_EQ(r->rtype, TC_WIRE_ERROR);
            CHECK_EQ(r->status, TC_ERR_MISMATCH);
            CHECK_STR_CONTAINS(r->text, "rank 0 has [3], rank 1 has [4]");
        }
    }
    CHECK(b.resps[3].name[0] != b.resps[4].name[0]);
    tc__coord_batch_free(&b);
    /* every rank submitting still runs without a description, uncached */
    for (q = 0; q < 4; q++) {
        tc_wire_request_t x = mk("x", TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 3, 0);
        if (q < 2) {
            CHECK_OK(coord_add(c, q, &x, err, sizeof(err)));
        }
    }
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.count, 1);
    CHECK(b.resps[0].rtype == TC_WIRE_RUN && b.resps[0].has_desc);
    CHECK_EQ(b.kinds[0], TC_COORD_NOCACHE);
    tc__coord_batch_free(&b);
    /* rank 0 joins last: the join completes with value 0, and names wait
     * for every rank again */
    CHECK_OK(coord_add(c, 1, &j, err, sizeof(err)));
    CHECK_EQ(tc__coord_nready(c), 0);
    CHECK_OK(coord_add(c, 0, &j, err, sizeof(err)));
    CHECK_EQ(tc__coord_njoined(c), 0);
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.count, 1);
    CHECK(b.resps[0].rtype == TC_WIRE_RUN && b.resps[0].has_value && !b.resps[0].has_desc);
    CHECK_EQ(b.resps[0].value, 0);
    for (q = 0; q < 4; q++) {
        CHECK_EQ(tc__coord_joins_taken(c, q), 1);
    }
    CHECK_EQ(tc__coord_joins_taken(c, -1), 4);
    tc__coord_batch_free(&b);
    CHECK_OK(coord_add(c, 0, &w, err, sizeof(err)));
    CHECK_EQ(tc__coord_nready(c), 0);
    /* a join rank 0 gives up on unmarks its ranks */
    j = mk("tcoll/join/1", TC_KIND_JOIN, TC_UINT8, TC_SUM, 0, 1, 0, 0);
    CHECK_OK(coord_add(c, 2, &j, err, sizeof(err)));
    CHECK_EQ(tc__coord_njoined(c), 1);
    CHECK_OK(tc__coord_expire(c, "tcoll/join/1", 12, 0, TC_ERR_TIMEOUT, "stalled"));
    CHECK_EQ(tc__coord_njoined(c), 0);
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK(b.count == 1 && b.resps[0].rtype == TC_WIRE_ERROR);
    tc__coord_batch_free(&b);
    CHECK_EQ(tc__coord_nready(c), 0); /* w waits for every rank again */
    tc__coord_destroy(c);
}

/* Process sets: a name of a set is ready once its members submitted it;
 * the same name lives in two sets at once; creation gives ids in order and
 * checks the rank lists; removal fails the set's waiting names and what is
 * submitted to it later; stall views carry the set and its members. */
static tc_wire_request_t set_op(int kind, const char *name, const int32_t *ranks, uint32_t n,
                                int target)
{
    tc_wire_request_t r = mk(name, kind, TC_UINT8, TC_SUM, target, 1, 0, 0);
    r.nranks = n;
    r.ranks = ranks;
    return r;
}

static void see_set_pending(const tc_coord_pending_t *p, void *arg)
{
    int *seen = arg;

    CHECK_EQ(p->pset, 2);
    CHECK(p->member != NULL && !p->member[0] && p->member[1] && !p->member[2] && p->member[3]);
    CHECK(p->have[1] && !p->have[3]);
    (*seen)++;
}

TC_CASE(process_sets)
{
    static const int32_t odd[2] = {1, 3}, even[2] = {0, 2}, other[2] = {0, 1};
    tc_coord_t *c;
    tc_coord_batch_t b;
    char err[256];
    tc_wire_request_t x = mk("x", TC_KIND_ALLGATHER, TC_FLOAT32, TC_SUM, 0, 1, 2, 0);
    int q, seen = 0;

    CHECK_OK(tc__coord_create(4, &c));
    for (q = 0; q < 4; q++) { /* sets 1 = {0,2}, 2 = {1,3} */
        tc_wire_request_t a = set_op(TC_KIND_PROCESS_SET_ADD, "tcoll/pset/0.0", even, 2, 0);
        tc_wire_request_t o = set_op(TC_KIND_PROCESS_SET_ADD, "tcoll/pset/0.1", odd, 2, 0);
        CHECK_OK(coord_add(c, q, &a, err, sizeof(err)));
        CHECK_OK(coord_add(c, q, &o, err, sizeof(err)));
    }
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.count, 2);
    CHECK(b.resps[0].rtype == TC_WIRE_RUN && b.resps[0].has_value && b.resps[0].value == 1);
    CHECK(b.resps[1].rtype == TC_WIRE_RUN && b.resps[1].has_value && b.resps[1].value == 2);
    tc__coord_batch_free(&b);
    /* "x" in set 1 and in set 2 at once: each ready with its members */
    x.pset = 1;
    CHECK_OK(coord_add(c, 0, &x, err, sizeof(err)));
    x.pset = 2;
    CHECK_OK(coord_add(c, 1, &x, err, sizeof(err)));
    x.shape[0] = 5;
    x.pset = 1;
    CHECK_OK(coord_add(c, 2, &x, err, sizeof(err)));
    CHECK_EQ(tc__coord_nready(c), 1);
    /* a rank outside the set is a protocol violation that changes nothing */
    CHECK_STATUS(coord_add(c, 1, &x, err, sizeof(err)), TC_ERR_ARG);
    CHECK_STR_CONTAINS(err, "not in");
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK(b.count == 1 && b.resps[0].rtype == TC_WIRE_RUN && b.resps[0].pset == 1);
    CHECK_EQ(b.resps[0].ndim0, 2); /* the plan: rows of the set's members, in set order */
    CHECK_EQ(b.resps[0].dim0[0], 2);
    CHECK_EQ(b.resps[0].dim0[1], 5);
    CHECK_EQ(b.kinds[0], TC_COORD_NOCACHE); /* another set's names are never cached */
    tc__coord_batch_free(&b);
    tc__coord_foreach_pending(c, see_set_pending, &seen);
    CHECK_EQ(seen, 1);
    /* rank lists that differ: a mismatch, and no set */
    for (q = 0; q < 4; q++) {
        tc_wire_request_t a =
            set_op(TC_KIND_PROCESS_SET_ADD, "tcoll/pset/0.2", q == 3 ? other : even, 2, 0);
        CHECK_OK(coord_add(c, q, &a, err, sizeof(err)));
    }
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK(b.count == 1 && b.resps[0].rtype == TC_WIRE_ERROR);
    CHECK_EQ(b.resps[0].status, TC_ERR_MISMATCH);
    CHECK_STR_CONTAINS(b.resps[0].text, "rank list mismatch: rank 0 has [0,2], rank 3 has "
                                        "[0,1]");
    tc__coord_batch_free(&b);
    /* removing set 2: its waiting "x" fails first; later submissions fail */
    for (q = 0; q < 4; q++) {
        tc_wire_request_t rm = set_op(TC_KIND_PROCESS_SET_REMOVE, "tcoll/pset/0.3", NULL, 0, 2);
        CHECK_OK(coord_add(c, q, &rm, err, sizeof(err)));
    }
    x.pset = 2;
    CHECK_OK(coord_add(c, 3, &x, err, sizeof(err)));
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.count, 3);
    CHECK(b.resps[0].rtype == TC_WIRE_ERROR && b.resps[0].status == TC_ERR_STATE &&
          b.resps[0].pset == 2);
    CHECK_STR_CONTAINS(b.resps[0].text, "process set 2 was removed");
    CHECK(b.resps[1].rtype == TC_WIRE_RUN && !b.resps[1].has_value);
    CHECK(b.resps[2].rtype == TC_WIRE_ERROR && b.resps[2].status == TC_ERR_STATE);
    CHECK_STR_CONTAINS(b.resps[2].text, "process set 2 does not exist");
    tc__coord_batch_free(&b);
    CHECK_EQ(tc__coord_pending(c), 0);
    /* the same ranks again: a new id */
    for (q = 0; q < 4; q++) {
        tc_wire_request_t a = set_op(TC_KIND_PROCESS_SET_ADD, "tcoll/pset/0.4", odd, 2, 0);
        CHECK_OK(coord_add(c, q, &a, err, sizeof(err)));
    }
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK(b.count == 1 && b.resps[0].has_value && b.resps[0].value == 3);
    tc__coord_batch_free(&b);
    tc__coord_destroy(c);
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    printf("test_coordinator: ok\n");
    return 0;
}
