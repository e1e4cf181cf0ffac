/*
 * test_transport_shm.c - the shared-memory transport (transport/transport_shm.h)
 * on 1..8 "ranks" that are threads of this process (test_coll_ranks.h), over
 * segments laid out in ordinary memory with tc__shm_seg_layout. No MPI.
 *
 * Layouts:
 *   one node   every rank in one segment: the shared-memory transport alone
 *   halves     two pretend nodes, each with its segment; each rank's router
 *              sends over the shared-memory transport inside its half and
 *              over a fake transport (another network) to the other half
 * and three ways of sending: every message through the cells (eager), only
 * small ones (direct from 1000 bytes: process_vm_readv of this process), and
 * every one direct. Tiny cells make each message many cells, and a mailbox
 * full long before a message is through.
 *
 * Also: many transfers queued before the peer looks, in order; a size or
 * process-set mismatch is an error naming the sender; peers not reached;
 * an abandoned transfer leaves the transport refusing new ones; the
 * small-message boxes of both sizes laid out apart from each other and from
 * the verdicts and mailboxes.
 */
#define _GNU_SOURCE
#include "check.h"
#include "tc_test.h"
#include "test_coll_ranks.h"
#include "coll/coll.h"
#include "transport/router.h"
#include "transport/transport_shm.h"

#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAXN COLL_MAXN
#define CELL 256 /* bytes of data per cell */

enum { LAYOUT_ONE, LAYOUT_HALVES, NLAYOUTS };
enum { SEND_EAGER, SEND_MIXED, SEND_DIRECT, NSENDS };
enum { JOB_ALLREDUCE, JOB_ALLGATHERV, JOB_ALLTOALLV, JOB_BCAST };

static int g_runs;
static int g_cma; /* process_vm_readv works here */

/* A node's segment in ordinary memory, and the local ranks' pids. */
typedef struct {
    tc_shm_seg_t seg; /* me 0; each rank copies it and sets its own */
    char *mem;
} node_t;

static void node_make(node_t *nd, int n)
{
    tc_shm_params_t p = {0};
    int r;

    p.nslots = 2;
    p.slot_bytes = 4096;
    p.cell_bytes = CELL;
    memset(nd, 0, sizeof(*nd));
    nd->seg.bytes = tc__shm_seg_layout(n, &p, &nd->seg);
    CHECK(nd->seg.bytes > 0 && nd->seg.mbox_bytes > 0);
    CHECK(posix_memalign((void **)&nd->mem, 4096, nd->seg.bytes) == 0);
    memset(nd->mem, 0, nd->seg.bytes);
    nd->seg.base = nd->mem;
    nd->seg.n = n;
    nd->seg.pids_visible = 1;
    nd->seg.cma = g_cma;
    for (r = 0; r < n; r++) {
        tc__shm_ctl(&nd->seg, r)->pid = (int32_t)getpid();
    }
}

typedef struct {
    int job, layout, send, root;
    size_t count;
    void *buf;
    const void *send_buf;
    const size_t *bytes, *displs, *rbytes, *rdispls;
    node_t *nodes; /* [2] */
} job_t;

/* Rank r's node (0 or 1) and local rank in a layout of n. */
static int node_of(int layout, int n, int r)
{
    return layout == LAYOUT_HALVES && r >= (n + 1) / 2 ? 1 : 0;
}

static int local_of(int layout, int n, int r)
{
    return node_of(layout, n, r) == 1 ? r - (n + 1) / 2 : r;
}

static size_t direct_from(int send)
{
    return send == SEND_EAGER ? SIZE_MAX : send == SEND_MIXED ? 1000 : 0;
}

static void rank_main(tc_transport_t *t, void *arg)
{
    job_t *j = arg;
    const int me = t->rank, n = t->size, mynode = node_of(j->layout, n, me);
    tc_transport_t shm, fake, rt, *children[2] = {&shm, &fake}, *use;
    tc_transport_shm_t impl;
    tc_router_t rimpl;
    coll_fake_t fimpl;
    tc_shm_seg_t seg = j->nodes[mynode].seg;
    tc_scratch_t scratch = {0};
    int local[MAXN], p;
    unsigned other = 0;
    tc_status_t st;

    seg.me = local_of(j->layout, n, me);
    for (p = 0; p < n; p++) {
        local[p] = node_of(j->layout, n, p) == mynode ? local_of(j->layout, n, p) : -1;
        other |= local[p] < 0 ? 1u << p : 0u;
    }
    CHECK_OK(
        tc__transport_shm_open(&shm, &impl, &seg, me, n, local, 7, direct_from(j->send), 16, 50));
    for (p = 0; p < n; p++) {
        CHECK_EQ(shm.reaches(&shm, p), p != me && local[p] >= 0);
    }
    coll_fake_open(&fake, &fimpl, me, n, 1, other | 1u << me, 0);
    CHECK_OK(tc__router_open(&rt, &rimpl, children, 2, NULL, 16, 50));
    rt.wait.timeout_ns = 20000000000ull; /* a deadlock fails ("lost rank") */
    use = j->layout == LAYOUT_ONE ? &shm : &rt;
    use->wait.timeout_ns = 20000000000ull;
    use->sendrecv = t->sendrecv; /* the harness's call log, then the generic exchange */
    switch (j->job) {
    case JOB_ALLREDUCE:
        st = tc__ring_allreduce(use, NULL, j->buf, j->count, TC_FLOAT32, TC_SUM,
                                j->count > 10000 ? 65536 : 12, &scratch);
        break;
    case JOB_ALLGATHERV: st = tc__ring_allgatherv(use, j->buf, j->bytes, j->displs); break;
    case JOB_ALLTOALLV:
        st = tc__alltoallv(use, j->send_buf, j->bytes, j->displs, j->buf, j->rbytes, j->rdispls);
        break;
    default: st = tc__bcast_binomial(use, j->buf, j->count, j->root);
    }
    CHECK_MSG(st == TC_OK, "job %d layout %d send %d: rank %d of %d: %s: %s", j->job, j->layout,
              j->send, me, n, tc_status_string(st), use->err);
    tc__scratch_free(&scratch);
    CHECK(impl.broken == 0);
    for (p = 0; p < n; p++) {
        CHECK(impl.sendq[p] == NULL && impl.recvq[p] == NULL);
    }
    tc__transport_close(&rt);
    tc__transport_close(&shm);
    tc__transport_close(&fake);
}

static void run(job_t *jobs, int n)
{
    coll_run(n, rank_main, jobs, sizeof(*jobs));
    g_runs++;
}

static void test_allreduce(node_t *nodes, int layout, int send, int n, size_t count)
{
    job_t jobs[MAXN];
    size_t i;
    int r;

    for (r = 0; r < n; r++) {
        jobs[r] = (job_t){
            .job = JOB_ALLREDUCE, .layout = layout, .send = send, .count = count, .nodes = nodes};
        jobs[r].buf = malloc(count * sizeof(float) + 1);
        CHECK(jobs[r].buf != NULL);
        for (i = 0; i < count; i++) {
            coll_store(TC_FLOAT32, jobs[r].buf, i, coll_input(r, i, TC_SUM));
        }
    }
    run(jobs, n);
    for (r = 0; r < n; r++) {
        for (i = 0; i < count; i++) {
            coll_check_value(TC_FLOAT32, TC_SUM, n, coll_load(TC_FLOAT32, jobs[r].buf, i), i,
                             "shm transport allreduce", count);
        }
        free(jobs[r].buf);
    }
}

static void test_allgatherv(node_t *nodes, int layout, int send, int n)
{
    job_t jobs[MAXN];
    coll_gather_t g;
    int r;

    coll_gather_make(&g, n, 301);
    for (r = 0; r < n; r++) {
        jobs[r] = (job_t){.job = JOB_ALLGATHERV,
                          .layout = layout,
                          .send = send,
                          .bytes = g.bytes,
                          .displs = g.displs,
                          .nodes = nodes};
        jobs[r].buf = coll_gather_input(&g, r);
    }
    run(jobs, n);
    for (r = 0; r < n; r++) {
        CHECK_MSG(memcmp(jobs[r].buf, g.want, g.total) == 0,
                  "shm allgatherv layout %d send %d "
                  "n=%d: rank %d wrong",
                  layout, send, n, r);
        free(jobs[r].buf);
    }
    coll_gather_free(&g);
}

static void test_alltoallv(node_t *nodes, int layout, int send, int n)
{
    job_t jobs[MAXN];
    coll_a2a_t a;
    char what[64];
    int r;

    coll_a2a_make(&a, n, 301);
    for (r = 0; r < n; r++) {
        jobs[r] = (job_t){.job = JOB_ALLTOALLV,
                          .layout = layout,
                          .send = send,
                          .send_buf = a.send[r],
                          .bytes = a.sb[r],
                          .displs = a.sd[r],
                          .rbytes = a.rb[r],
                          .rdispls = a.rd[r],
                          .nodes = nodes};
        jobs[r].buf = malloc(a.rtotal[r] + 1);
        CHECK(jobs[r].buf != NULL);
    }
    run(jobs, n);
    snprintf(what, sizeof(what), "shm alltoallv layout %d send %d", layout, send);
    for (r = 0; r < n; r++) {
        coll_a2a_check(&a, r, jobs[r].buf, what);
        free(jobs[r].buf);
    }
    coll_a2a_free(&a);
}

static void test_bcast(node_t *nodes, int layout, int send, int n, int root, size_t bytes)
{
    job_t jobs[MAXN];
    size_t i;
    int r;

    for (r = 0; r < n; r++) {
        jobs[r] = (job_t){.job = JOB_BCAST,
                          .layout = layout,
                          .send = send,
                          .count = bytes,
                          .root = root,
                          .nodes = nodes};
        jobs[r].buf = malloc(bytes + 1);
        CHECK(jobs[r].buf != NULL);
        for (i = 0; i < bytes; i++) {
            ((unsigned char *)jobs[r].buf)[i] = (unsigned char)(r == root ? i * 13 + 1 : 0xEE);
        }
    }
    run(jobs, n);
    for (r = 0; r < n; r++) {
        for (i = 0; i < bytes; i++) {
            CHECK_MSG(((unsigned char *)jobs[r].buf)[i] == (unsigned char)(i * 13 + 1),
                      "shm bcast layout %d send %d n=%d root=%d: rank %d byte %zu", layout, send, n,
                      root, r, i);
        }
        free(jobs[r].buf);
    }
}

/* The collectives through the transport, in both layouts and every way of
 * sending, on 1..MAXN ranks: exact results, and nothing left queued. */
TC_CASE(collectives_through_shm)
{
    node_t nodes[2];
    int layout, send, n;

    for (n = 1; n <= MAXN; n++) {
        for (layout = 0; layout < NLAYOUTS; layout++) {
            node_make(&nodes[0], layout == LAYOUT_HALVES ? (n + 1) / 2 : n);
            node_make(&nodes[1], layout == LAYOUT_HALVES && n > 1 ? n / 2 : 1);
            for (send = 0; send < NSENDS; send++) {
                if (send != SEND_EAGER && !g_cma) {
                    continue;
                }
                test_allreduce(nodes, layout, send, n, 0);
                test_allreduce(nodes, layout, send, n, (size_t)n + 1);
                test_allreduce(nodes, layout, send, n, 4099);
                test_allreduce(nodes, layout, send, n, 100003);
                test_allgatherv(nodes, layout, send, n);
                test_alltoallv(nodes, layout, send, n);
                test_bcast(nodes, layout, send, n, n - 1, 3001);
            }
            free(nodes[0].mem);
            free(nodes[1].mem);
        }
    }
}

/* ---- two ranks on one thread: post and test by hand ------------------------ */

typedef struct {
    node_t node;
    tc_shm_seg_t seg[2];
    tc_transport_t t[2];
    tc_transport_shm_t impl[2];
} pair_t;

static void pair_open(pair_t *pr, int n, uint32_t id1, size_t direct)
{
    int local[MAXN], r;

    node_make(&pr->node, n);
    for (r = 0; r < n; r++) {
        local[r] = r;
    }
    for (r = 0; r < 2; r++) {
        pr->seg[r] = pr->node.seg;
        pr->seg[r].me = r;
        CHECK_OK(tc__transport_shm_open(&pr->t[r], &pr->impl[r], &pr->seg[r], r, n, local,
                                        r == 1 ? id1 : 3, direct, 0, 1));
    }
}

static void pair_close(pair_t *pr)
{
    tc__transport_close(&pr->t[0]);
    tc__transport_close(&pr->t[1]);
    free(pr->node.mem);
}

/* Tests every transfer of xs on both ranks until all are done; the status
 * of the first failure otherwise. */
static tc_status_t pair_drive(pair_t *pr, tc_xfer_t *xs, int nx)
{
    tc_xfer_t *v[64];
    int i, k, left;
    tc_status_t st;

    for (k = 0; k < 100000; k++) {
        for (i = 0, left = 0; i < nx; i++) {
            v[i] = &xs[i];
            left += !xs[i].done;
        }
        if (left == 0) {
            return TC_OK;
        }
        if ((st = pr->t[0].test(&pr->t[0], v, nx)) != TC_OK ||
            (st = pr->t[1].test(&pr->t[1], v, nx)) != TC_OK) {
            return st;
        }
    }
    return TC_ERR_TIMEOUT;
}

/* Twenty sends of many sizes queued before the receiver posts anything,
 * eager and direct mixed: they arrive whole and in order. */
TC_CASE(queued_in_order)
{
    enum { NMSG = 20 };
    pair_t pr;
    tc_xfer_t xs[2 * NMSG];
    unsigned char *out[NMSG], *in[NMSG];
    size_t bytes[NMSG], k;
    int i;

    pair_open(&pr, 2, 3, g_cma ? 3000 : SIZE_MAX);
    for (i = 0; i < NMSG; i++) {
        bytes[i] = (size_t)(i * 977) % 5000 + 1;
        out[i] = malloc(bytes[i]);
        in[i] = calloc(1, bytes[i]);
        CHECK(out[i] != NULL && in[i] != NULL);
        for (k = 0; k < bytes[i]; k++) {
            out[i][k] = (unsigned char)(i * 7 + k);
        }
        tc__xfer_send(&xs[i], out[i], bytes[i], 1);
        CHECK_OK(tc__xfer_post(&pr.t[0], &xs[i]));
    }
    {
        tc_xfer_t *v[NMSG];
        int done = 0;
        for (i = 0; i < NMSG; i++) {
            v[i] = &xs[i];
        }
        CHECK_OK(pr.t[0].test(&pr.t[0], v, NMSG));
        for (i = 0; i < NMSG; i++) {
            done += xs[i].done;
        }
        CHECK(done < NMSG); /* the mailbox is full: the rest wait */
    }
    for (i = 0; i < NMSG; i++) {
        tc__xfer_recv(&xs[NMSG + i], in[i], bytes[i], 0);
        CHECK_OK(tc__xfer_post(&pr.t[1], &xs[NMSG + i]));
    }
    CHECK_OK(pair_drive(&pr, xs, 2 * NMSG));
    for (i = 0; i < NMSG; i++) {
        CHECK_MSG(memcmp(in[i], out[i], bytes[i]) == 0, "message %d of %zu bytes", i, bytes[i]);
        free(out[i]);
        free(in[i]);
    }
    pair_close(&pr);
}

/* Rank 0 sends 8 bytes that rank 1 (its transport's id id1) expects as
 * rbytes: the exchange fails on rank 1 with a reason containing want. */
static void expect_mismatch(uint32_t id1, size_t rbytes, const char *want)
{
    pair_t pr;
    tc_xfer_t xs[2];
    char out[8] = "1234567", in[8];

    pair_open(&pr, 2, id1, SIZE_MAX);
    tc__xfer_send(&xs[0], out, 8, 1);
    tc__xfer_recv(&xs[1], in, rbytes, 0);
    CHECK_OK(tc__xfer_post(&pr.t[0], &xs[0]));
    CHECK_OK(tc__xfer_post(&pr.t[1], &xs[1]));
    CHECK_STATUS(pair_drive(&pr, xs, 2), TC_ERR_TRANSPORT);
    CHECK_STR_CONTAINS(pr.t[1].err, want);
    pair_close(&pr);
}

/* A message of another size, or of another process set, is an error that
 * names the sender; peers not on the node, and oneself, are not reached. */
TC_CASE(mismatch_and_reach)
{
    char out[8] = "1234567";
    int local[3] = {0, 1, -1};

    expect_mismatch(3, 4, "rank 0 sent 8 bytes where this rank expects 4");
    /* rank 1's transport has another id */
    expect_mismatch(5, 8, "rank 0 sent a message of another process set");
    {
        tc_transport_t t;
        tc_transport_shm_t impl;
        node_t nd;
        tc_shm_seg_t seg;

        node_make(&nd, 2);
        seg = nd.seg;
        seg.me = 0;
        CHECK_OK(tc__transport_shm_open(&t, &impl, &seg, 0, 3, local, 1, SIZE_MAX, 0, 1));
        CHECK(!t.reaches(&t, 0) && t.reaches(&t, 1) && !t.reaches(&t, 2) && !t.reaches(&t, 3));
        CHECK_STATUS(tc__send(&t, out, 8, 2), TC_ERR_TRANSPORT);
        CHECK_STR_CONTAINS(t.err, "rank 2 is not on this node");
        tc__transport_close(&t);
        local[0] = 1; /* this rank is not the segment's */
        CHECK_STATUS(tc__transport_shm_open(&t, &impl, &seg, 0, 3, local, 1, SIZE_MAX, 0, 1),
                     TC_ERR_ARG);
        local[0] = 0;
        local[2] = 2; /* no such local rank */
        CHECK_STATUS(tc__transport_shm_open(&t, &impl, &seg, 0, 3, local, 1, SIZE_MAX, 0, 1),
                     TC_ERR_ARG);
        CHECK_STR_CONTAINS(t.err, "rank 2 has local rank 2 of 2");
        free(nd.mem);
    }
}

/* After an abandoned transfer the streams are out of step: no new post. */
TC_CASE(abandon_breaks)
{
    pair_t pr;
    tc_xfer_t x;
    char buf[4] = "abc";

    pair_open(&pr, 2, 3, SIZE_MAX);
    tc__xfer_recv(&x, buf, 4, 1);
    CHECK_OK(tc__xfer_post(&pr.t[0], &x));
    tc__xfer_abandon(&pr.t[0], &x);
    CHECK(pr.impl[0].recvq[1] == NULL);
    CHECK_STATUS(tc__send(&pr.t[0], buf, 4, 1), TC_ERR_TRANSPORT);
    CHECK_STR_CONTAINS(pr.t[0].err, "unusable after an abandoned transfer");
    pair_close(&pr);
}

/* Every box (small and large, every rank and parity) holds its header and
 * its capacity, 64-byte aligned, after the verdicts of every id and before
 * the mailboxes, and no two overlap. */
TC_CASE(box_layout)
{
    static const int larges[] = {0, 3};

    for (int n = 1; n <= 5; n++) {
        for (int l = 0; l < 2; l++) {
            tc_shm_params_t p = {0};
            tc_shm_seg_t seg = {0};
            size_t lo[128], hi[128], bytes;
            int nb = 0;

            p.nslots = 2;
            p.slot_bytes = 4096;
            p.cell_bytes = CELL;
            p.fast_names = 4;
            p.fast_bytes = 100;
            p.large_names = larges[l];
            p.large_bytes = p.large_names > 0 ? 5000 : 0;
            bytes = tc__shm_seg_layout(n, &p, &seg);
            CHECK(bytes > 0 && seg.fast_names == 4 && seg.large_names == larges[l]);
            seg.n = n;
            for (int k = 0; k < seg.fast_names + seg.large_names; k++) {
                for (int r = 0; r < n; r++) {
                    for (int b = 0; b < 2; b++) {
                        size_t off = (size_t)((char *)tc__shm_box(&seg, k, r, b) - seg.base);
                        CHECK(nb < 128);
                        lo[nb] = off;
                        hi[nb] = off + TC_SHM_BOX_DATA + tc__shm_box_cap(&seg, k);
                        CHECK(off % 64 == 0);
                        CHECK(off >= seg.verdict_off + (size_t)(seg.fast_names + seg.large_names) *
                                                           TC_SHM_VERDICT_STRIDE);
                        CHECK(hi[nb] <= seg.mbox_off);
                        CHECK(tc__shm_box_cap(&seg, k) == (k < 4 ? 100u : 5000u));
                        for (int j = 0; j < nb; j++) {
                            CHECK_MSG(hi[nb] <= lo[j] || hi[j] <= lo[nb],
                                      "n %d: box %d of rank %d parity %d overlaps another", n, k, r,
                                      b);
                        }
                        nb++;
                    }
                }
            }
        }
    }
}

/* The large boxes shrink with the node's ranks (TC_SHM_FAST_WORK / n) and
 * go when they would be no larger than the small ones. */
TC_CASE(large_boxes_shrink)
{
    static const struct {
        int n;
        size_t bytes;
        int names;
    } want[] = {{1, 131072, 32}, {2, 131072, 32}, {4, 131072, 32}, {5, 104832, 32},
                {8, 65536, 32},  {64, 0, 0},      {100, 0, 0}};

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        tc_shm_params_t p = {0};
        tc_shm_seg_t seg = {0};

        p.nslots = 1;
        p.slot_bytes = 4096;
        p.fast_names = 8;
        p.fast_bytes = 8192;
        p.large_names = 32;
        p.large_bytes = 131072;
        CHECK(tc__shm_seg_layout(want[i].n, &p, &seg) > 0);
        CHECK_MSG(seg.large_bytes == want[i].bytes && seg.large_names == want[i].names,
                  "n %d: large boxes %zu bytes x %d names", want[i].n, seg.large_bytes,
                  seg.large_names);
        CHECK(seg.lbox_off + (size_t)seg.large_names * (size_t)want[i].n * 2 * seg.lbox_bytes <=
              seg.mbox_off);
    }
}

int main(int argc, char **argv)
{
    static volatile int word = 42;
    int got = 0;
    struct iovec l = {&got, sizeof(got)}, r = {(void *)&word, sizeof(word)};

    g_cma = process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)sizeof(got) && got == 42;
    if (!g_cma) {
        printf("test_transport_shm: process_vm_readv refused here: eager only\n");
    }
    tc_test_main(argc, argv, NULL);
    printf("test_transport_shm: %d collective runs ok\n", g_runs);
    return 0;
}
