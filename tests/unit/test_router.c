/*
 * test_router.c - the router transport (transport/router.h) and the generic
 * blocking exchange under it (transport.c), on 1..8 "ranks" that are
 * threads of this process (test_coll_ranks.h). No MPI.
 *
 * Each rank opens two fake child transports, on fake networks 1 and 2, and
 * a router over them; the collective algorithms then run through the
 * router. The children's sends are rendezvous (done only once the receiver
 * copied them), so an exchange whose send and receive sit on different
 * children deadlocks unless the router progresses both together. Which
 * network carries a pair of ranks (the same at both ends) follows a layout:
 *
 *   halves     ranks of the same half on network 1 (a node's shared memory),
 *              the others on network 2 (across nodes); a ring's boundary
 *              ranks send over one and receive over the other
 *   alternate  the pair (a, b) on network 1 + min(a, b) % 2: every rank of a
 *              ring sends right and receives left on different networks
 *
 * Also: reaches(), routes given and refused, zero-byte transfers and peer
 * -1 (nothing posted), a transfer to oneself, a silent peer named at the
 * timeout, the interrupt hook, and that nothing is left posted or queued.
 */
#define _GNU_SOURCE
#include "check.h"
#include "tc_test.h"
#include "test_coll_ranks.h"
#include "coll/coll.h"
#include "transport/router.h"

#include <stdlib.h>

#define MAXN COLL_MAXN

enum { LAYOUT_HALVES, LAYOUT_ALTERNATE, NLAYOUTS };
enum { JOB_ALLREDUCE, JOB_ALLGATHERV, JOB_ALLTOALLV, JOB_BCAST };

static int g_runs; /* collective runs checked, for the summary line */

/* The network (1 or 2) that carries the pair a, b of n ranks. */
static int pair_net(int layout, int n, int a, int b)
{
    int lo = a < b ? a : b, hi = a < b ? b : a;

    if (layout == LAYOUT_HALVES) {
        return (lo < (n + 1) / 2) == (hi < (n + 1) / 2) ? 1 : 2;
    }
    return 1 + lo % 2;
}

/* The peers of rank on network net. */
static unsigned net_reach(int layout, int n, int rank, int net)
{
    unsigned reach = 0;
    int p;

    for (p = 0; p < n; p++) {
        if (pair_net(layout, n, rank, p) == net) {
            reach |= 1u << p;
        }
    }
    return reach;
}

/* The network of rank's child c: odd ranks list their children the other
 * way round, so that in the alternate layout every rank sends right over
 * its first child and receives left over its second (a router that tested
 * only the first child with transfers pending would deadlock the ring). */
static int child_net(int rank, int c)
{
    return 1 + (c + rank) % 2;
}

/* One rank's router over its two children (rendezvous), routed by default
 * (the first child that reaches a peer). */
typedef struct {
    tc_transport_t child[2], rt;
    coll_fake_t fake[2];
    tc_router_t impl;
} ranks_stack_t;

static void stack_open(ranks_stack_t *s, int layout, int rank, int n)
{
    tc_transport_t *children[2] = {&s->child[0], &s->child[1]};
    int c;

    for (c = 0; c < 2; c++) {
        coll_fake_open(&s->child[c], &s->fake[c], rank, n, child_net(rank, c),
                       net_reach(layout, n, rank, child_net(rank, c)), 1);
    }
    CHECK_OK(tc__router_open(&s->rt, &s->impl, children, 2, NULL, 16, 50));
    s->rt.wait.timeout_ns = 20000000000ull; /* a deadlock fails ("lost rank") */
}

static void stack_close(ranks_stack_t *s)
{
    tc__transport_close(&s->rt);
    tc__transport_close(&s->child[0]); /* the children are the opener's */
    tc__transport_close(&s->child[1]);
}

typedef struct {
    int job, layout, root;
    size_t count; /* allreduce: elements; bcast: bytes */
    void *buf;    /* allreduce, allgatherv, bcast: in and out; alltoallv: out */
    const void *send;
    const size_t *bytes, *displs;   /* allgatherv; alltoallv: what is sent */
    const size_t *rbytes, *rdispls; /* alltoallv: what is received */
} job_t;

static void rank_main(tc_transport_t *t, void *arg)
{
    job_t *j = arg;
    tc_scratch_t scratch = {0};
    ranks_stack_t s;
    tc_status_t st;
    int p;

    stack_open(&s, j->layout, t->rank, t->size);
    for (p = 0; p < t->size; p++) {
        int c = tc__router_child(&s.rt, p);
        CHECK(s.rt.reaches(&s.rt, p));
        CHECK_EQ(child_net(t->rank, c), pair_net(j->layout, t->size, t->rank, p));
    }
    CHECK(!s.rt.reaches(&s.rt, t->size) && !s.rt.reaches(&s.rt, -1));
    s.rt.sendrecv = t->sendrecv; /* the harness's call log, then the generic exchange */
    switch (j->job) {
    case JOB_ALLREDUCE:
        st = tc__ring_allreduce(&s.rt, NULL, j->buf, j->count, TC_FLOAT32, TC_SUM, 12, &scratch);
        break;
    case JOB_ALLGATHERV: st = tc__ring_allgatherv(&s.rt, j->buf, j->bytes, j->displs); break;
    case JOB_ALLTOALLV:
        st = tc__alltoallv(&s.rt, j->send, j->bytes, j->displs, j->buf, j->rbytes, j->rdispls);
        break;
    default: st = tc__bcast_binomial(&s.rt, j->buf, j->count, j->root);
    }
    CHECK_MSG(st == TC_OK, "job %d layout %d: rank %d of %d: %s: %s", j->job, j->layout, t->rank,
              t->size, tc_status_string(st), s.rt.err);
    tc__scratch_free(&scratch);
    stack_close(&s);
}

static void test_allreduce(int layout, int n, size_t count)
{
    job_t jobs[MAXN];
    size_t i;
    int r;

    for (r = 0; r < n; r++) {
        jobs[r] = (job_t){.job = JOB_ALLREDUCE, .layout = layout, .count = count};
        jobs[r].buf = malloc(count * sizeof(float) + 1);
        CHECK(jobs[r].buf != NULL);
        for (i = 0; i < count; i++) {
            coll_store(TC_FLOAT32, jobs[r].buf, i, coll_input(r, i, TC_SUM));
        }
    }
    coll_run(n, rank_main, jobs, sizeof(*jobs));
    for (r = 0; r < n; r++) {
        for (i = 0; i < count; i++) {
            coll_check_value(TC_FLOAT32, TC_SUM, n, coll_load(TC_FLOAT32, jobs[r].buf, i), i,
                             "router allreduce", count);
        }
        free(jobs[r].buf);
    }
}

static void test_allgatherv(int layout, int n)
{
    job_t jobs[MAXN];
    coll_gather_t g;
    int r;

    coll_gather_make(&g, n, 3);
    for (r = 0; r < n; r++) {
        jobs[r] =
            (job_t){.job = JOB_ALLGATHERV, .layout = layout, .bytes = g.bytes, .displs = g.displs};
        jobs[r].buf = coll_gather_input(&g, r);
    }
    coll_run(n, rank_main, jobs, sizeof(*jobs));
    coll_check_calls_paired(n);
    for (r = 0; r < n; r++) {
        CHECK_MSG(memcmp(jobs[r].buf, g.want, g.total) == 0,
                  "router allgatherv layout %d n=%d: "
                  "rank %d wrong",
                  layout, n, r);
        free(jobs[r].buf);
    }
    coll_gather_free(&g);
}

static void test_alltoallv(int layout, int n)
{
    job_t jobs[MAXN];
    coll_a2a_t a;
    char what[64];
    int r;

    coll_a2a_make(&a, n, 301);
    for (r = 0; r < n; r++) {
        jobs[r] = (job_t){.job = JOB_ALLTOALLV,
                          .layout = layout,
                          .send = a.send[r],
                          .bytes = a.sb[r],
                          .displs = a.sd[r],
                          .rbytes = a.rb[r],
                          .rdispls = a.rd[r]};
        jobs[r].buf = malloc(a.rtotal[r] + 1);
        CHECK(jobs[r].buf != NULL);
    }
    coll_run(n, rank_main, jobs, sizeof(*jobs));
    CHECK_EQ(coll_check_calls_paired(n), (size_t)(n - 1));
    snprintf(what, sizeof(what), "router alltoallv layout %d", layout);
    for (r = 0; r < n; r++) {
        coll_a2a_check(&a, r, jobs[r].buf, what);
        free(jobs[r].buf);
    }
    coll_a2a_free(&a);
}

static void test_bcast(int layout, int n, int root, size_t bytes)
{
    job_t jobs[MAXN];
    size_t i;
    int r;

    for (r = 0; r < n; r++) {
        jobs[r] = (job_t){.job = JOB_BCAST, .layout = layout, .count = bytes, .root = root};
        jobs[r].buf = malloc(bytes + 1);
        CHECK(jobs[r].buf != NULL);
        for (i = 0; i < bytes; i++) {
            ((unsigned char *)jobs[r].buf)[i] = (unsigned char)(r == root ? i * 13 + 1 : 0xEE);
        }
    }
    coll_run(n, rank_main, jobs, sizeof(*jobs));
    for (r = 0; r < n; r++) {
        for (i = 0; i < bytes; i++) {
            CHECK_MSG(((unsigned char *)jobs[r].buf)[i] == (unsigned char)(i * 13 + 1),
                      "router bcast layout %d n=%d root=%d: rank %d byte %zu", layout, n, root, r,
                      i);
        }
        free(jobs[r].buf);
    }
}

/* Ring allreduce (3-element chunks: many exchanges), allgatherv and
 * alltoallv with uneven and empty blocks, and the broadcast, on 1..MAXN
 * ranks in both layouts: exact results; the allgatherv's and alltoallv's
 * exchanges paired call by call (the allreduce's chunked steps are not: a
 * rank's step has as many chunks as the larger of its two segments). */
TC_CASE(collectives_through_router)
{
    int layout, n;

    for (layout = 0; layout < NLAYOUTS; layout++) {
        for (n = 1; n <= MAXN; n++) {
            test_allreduce(layout, n, 0);
            test_allreduce(layout, n, (size_t)n + 1);
            test_allreduce(layout, n, 4099);
            test_allgatherv(layout, n);
            test_alltoallv(layout, n);
            test_bcast(layout, n, n - 1, 3001);
            g_runs += 6;
        }
    }
}

/* ---- one rank, no threads ---------------------------------------------------- */

/* Routes by default and as given; reaches() follows the children; a route
 * that does not fit, and children that do not agree, are refused. */
TC_CASE(routes_and_reaches)
{
    tc_transport_t c[3], rt, *children[3] = {&c[0], &c[1], &c[2]};
    coll_fake_t f[3];
    tc_router_t impl;
    int route[4] = {1, 0, -1, 1}, bad[4] = {0, 0, 0, 0}, p;

    coll_fake_open(&c[0], &f[0], 1, 4, 1, 0x3, 1);  /* reaches 0, 1 */
    coll_fake_open(&c[1], &f[1], 1, 4, 2, 0x9, 1);  /* reaches 0, 3 */
    coll_fake_open(&c[2], &f[2], 1, 5, 1, 0x1f, 1); /* a group of 5 */

    CHECK_OK(tc__router_open(&rt, &impl, children, 2, NULL, 0, 1));
    CHECK_EQ(rt.rank, 1);
    CHECK_EQ(rt.size, 4);
    for (p = 0; p < 4; p++) {
        static const int want[4] = {0, 0, -1, 1}; /* the first child that reaches */
        CHECK_EQ(tc__router_child(&rt, p), want[p]);
        CHECK_EQ(rt.reaches(&rt, p), want[p] >= 0);
    }
    CHECK_EQ(tc__router_child(&rt, 4), -1);
    CHECK_EQ(tc__router_child(&rt, -1), -1);
    tc__transport_close(&rt);
    tc__transport_close(&rt); /* a second close does nothing */

    CHECK_OK(tc__router_open(&rt, &impl, children, 2, route, 0, 1));
    for (p = 0; p < 4; p++) {
        CHECK_EQ(tc__router_child(&rt, p), route[p]);
        CHECK_EQ(rt.reaches(&rt, p), route[p] >= 0);
    }
    tc__transport_close(&rt);

    CHECK_STATUS(tc__router_open(&rt, &impl, children, 2, bad, 0, 1), TC_ERR_ARG);
    CHECK_STR_CONTAINS(rt.err, "rank 2 routed to child 0, which does not reach it");
    bad[2] = 2;
    CHECK_STATUS(tc__router_open(&rt, &impl, children, 2, bad, 0, 1), TC_ERR_ARG);
    CHECK_STR_CONTAINS(rt.err, "does not exist");
    CHECK_STATUS(tc__router_open(&rt, &impl, children, 3, NULL, 0, 1), TC_ERR_ARG);
    CHECK_STR_CONTAINS(rt.err, "child 2 is rank 1 of 5");
    CHECK_STATUS(tc__router_open(&rt, &impl, children, 0, NULL, 0, 1), TC_ERR_ARG);
    CHECK_STATUS(tc__router_open(&rt, &impl, children, TC_ROUTER_MAX_CHILDREN + 1, NULL, 0, 1),
                 TC_ERR_ARG);
    tc__transport_close(&rt); /* never opened: nothing to do */
    for (p = 0; p < 3; p++) {
        tc__transport_close(&c[p]);
    }
}

/* Zero bytes and peer -1 post nothing (the children reach no one, so any
 * post would fail); a peer no child reaches fails the exchange, naming it;
 * a rank exchanges with itself over its child. */
TC_CASE(empty_unreachable_and_self)
{
    tc_transport_t c[2], rt, *children[2] = {&c[0], &c[1]};
    coll_fake_t f[2];
    tc_router_t impl;
    char out[5] = "abcd", in[5] = "....";

    coll_fake_open(&c[0], &f[0], 0, 3, 1, 0x1, 1); /* reaches itself only */
    coll_fake_open(&c[1], &f[1], 0, 3, 2, 0x0, 1);
    CHECK_OK(tc__router_open(&rt, &impl, children, 2, NULL, 0, 1));
    CHECK_OK(rt.sendrecv(&rt, out, 0, 1, in, 0, 2));
    CHECK_OK(rt.sendrecv(&rt, out, 4, -1, in, 4, -1));
    CHECK_OK(tc__send(&rt, out, 0, 2));
    CHECK_OK(tc__recv(&rt, in, 4, -1));
    CHECK_OK(rt.sendrecv(&rt, NULL, 0, -1, NULL, 0, -1));
    CHECK(memcmp(in, "....", 4) == 0);

    CHECK_STATUS(tc__send(&rt, out, 4, 1), TC_ERR_TRANSPORT);
    CHECK_STR_CONTAINS(rt.err, "no transport reaches rank 1");
    /* the send to 0 was posted before the receive from 2 failed: abandoned */
    CHECK_STATUS(rt.sendrecv(&rt, out, 4, 0, in, 4, 2), TC_ERR_TRANSPORT);
    CHECK_STR_CONTAINS(rt.err, "no transport reaches rank 2");

    CHECK_OK(rt.sendrecv(&rt, out, 4, 0, in, 4, 0)); /* rendezvous with oneself */
    CHECK(memcmp(in, "abcd", 4) == 0);
    tc__transport_close(&rt);
    tc__transport_close(&c[0]); /* checks nothing is left posted */
    tc__transport_close(&c[1]);
    coll_check_quiet();
}

static int interrupt_after(void *arg, char *why, size_t len)
{
    int *calls = arg;

    if (++*calls < 3) {
        return 0;
    }
    snprintf(why, len, "rank 7 stopped: test");
    return 1;
}

/* A peer that never sends, or never receives, is named when the router's
 * wait policy times out (no probe: lost at once); the interrupt hook ends a
 * wait with its text. The transfers left are abandoned: nothing stays
 * posted, and a send nobody took leaves its queue. */
TC_CASE(silent_peer_and_interrupt)
{
    tc_transport_t c[2], rt, *children[2] = {&c[0], &c[1]};
    coll_fake_t f[2];
    tc_router_t impl;
    char out[4] = "xyz", in[4];
    int calls = 0;

    coll_fake_open(&c[0], &f[0], 0, 3, 1, 0x3, 1); /* 0, 1 */
    coll_fake_open(&c[1], &f[1], 0, 3, 2, 0x4, 1); /* 2 */
    CHECK_OK(tc__router_open(&rt, &impl, children, 2, NULL, 0, 100));
    rt.wait.timeout_ns = 30000000; /* 30 ms */

    CHECK_STATUS(tc__recv(&rt, in, 4, 2), TC_ERR_TRANSPORT);
    CHECK_STR_CONTAINS(rt.err, "lost rank 2: no data from it");
    CHECK_STATUS(tc__send(&rt, out, 4, 1), TC_ERR_TRANSPORT);
    CHECK_STR_CONTAINS(rt.err, "lost rank 1:");
    /* the receive is named first while both wait */
    CHECK_STATUS(rt.sendrecv(&rt, out, 4, 1, in, 4, 2), TC_ERR_TRANSPORT);
    CHECK_STR_CONTAINS(rt.err, "lost rank 2:");

    rt.wait.timeout_ns = 0;
    rt.wait.interrupt = interrupt_after;
    rt.wait.arg = &calls;
    CHECK_STATUS(rt.sendrecv(&rt, out, 4, 2, in, 4, 1), TC_ERR_TRANSPORT);
    CHECK_STR_CONTAINS(rt.err, "rank 7 stopped: test");
    CHECK_EQ(calls, 3);

    tc__transport_close(&rt);
    tc__transport_close(&c[0]);
    tc__transport_close(&c[1]);
    coll_check_quiet();
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    printf("test_router: %d collective runs ok\n", g_runs);
    return 0;
}
