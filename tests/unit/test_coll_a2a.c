/*
 * test_coll_a2a.c - the pairwise alltoallv and the count exchange before it,
 * on 1..8 "ranks" that are threads of this process (test_coll_ranks.h). No
 * MPI. Blocks of uneven sizes, empty ones, large ones, at displacements with
 * gaps between them: every byte must land in its place and nothing else may
 * be written; the ranks' sendrecv calls must pair up call by call.
 */
#define _GNU_SOURCE
#include "check.h"
#include "tc_test.h"
#include "test_coll_ranks.h"
#include "coll/coll.h"

#include <stdlib.h>

#define MAXN COLL_MAXN
#define GAP 3 /* bytes left between blocks, in both buffers */

static int g_runs; /* collective runs checked, for the summary line */

/* One rank's part: its blocks, and the ones it expects, into recv. */
typedef struct {
    const void *send;
    void *recv;
    const size_t *send_bytes, *send_displs, *recv_bytes, *recv_displs;
    tc_status_t want; /* what tc__alltoallv must return */
} job_t;

/* As the engine would do it: first the block sizes, each as a count, with
 * tc__alltoall_counts and again with tc__alltoallv on 8-byte blocks (the
 * counts use all 64 bits: receiver and sender are in the high ones), then
 * the blocks themselves. */
static void rank_main(tc_transport_t *t, void *arg)
{
    const job_t *j = arg;
    const int n = t->size, me = t->rank;
    uint64_t scount[MAXN], rcount[MAXN], rcount8[MAXN];
    size_t eight[MAXN], displs8[MAXN];
    int i;

    for (i = 0; i < n; i++) {
        scount[i] = j->send_bytes[i] + ((uint64_t)i << 40) + ((uint64_t)me << 48);
        eight[i] = sizeof(uint64_t);
        displs8[i] = (size_t)i * sizeof(uint64_t);
    }
    memset(rcount, 0xEE, sizeof(rcount));
    memset(rcount8, 0xEE, sizeof(rcount8));
    CHECK_OK(tc__alltoall_counts(t, scount, rcount));
    CHECK_OK(tc__alltoallv(t, scount, eight, displs8, rcount8, eight, displs8));
    for (i = 0; i < n && j->want == TC_OK; i++) {
        uint64_t want = j->recv_bytes[i] + ((uint64_t)me << 40) + ((uint64_t)i << 48);
        CHECK_MSG(rcount[i] == want && rcount8[i] == want,
                  "alltoall counts n=%d rank %d from "
                  "%d: got %" PRIx64 " and %" PRIx64 ", want %" PRIx64,
                  n, me, i, rcount[i], rcount8[i], want);
    }
    CHECK_STATUS(tc__alltoallv(t, j->send, j->send_bytes, j->send_displs, j->recv, j->recv_bytes,
                               j->recv_displs),
                 j->want);
}

/* Byte k of the block rank s sends rank d. */
static unsigned char block_byte(int s, int d, size_t k)
{
    return (unsigned char)(s * 31 + d * 17 + k * 7 + 1);
}

/* Bytes rank s sends rank d in each pattern. */
static size_t block_size(int pattern, int n, int s, int d)
{
    switch (pattern) {
    case 0: return (size_t)((s * 5 + d * 3) % 7) * 3; /* uneven, some empty */
    case 1: return 0;                                 /* all empty */
    case 2: return 1;
    case 3: return (size_t)((s + 1) * (d + 2)) * 4099 / (size_t)n; /* large, uneven */
    case 4: return s == d ? 1000 : 0;                              /* only the own block */
    default: return s == d ? 0 : (size_t)(s + d + 1);              /* all but the own block */
    }
}

/* Pairwise alltoallv on n ranks. Each rank's send buffer holds its blocks in
 * reverse rank order and its receive buffer in rank order, with gaps between
 * them: the displacements are honoured, and the gaps and anything past the
 * last block stay untouched. bad_rank >= 0 expects one more byte from itself
 * than it sends itself: it gets TC_ERR_ARG and its own block is left alone,
 * while every rank still gets its blocks from the others. */
static void test_alltoallv(int n, int pattern, int bad_rank)
{
    job_t jobs[MAXN];
    size_t sb[MAXN][MAXN], sd[MAXN][MAXN], rb[MAXN][MAXN], rd[MAXN][MAXN], total[MAXN], k;
    unsigned char *send[MAXN];
    int r, i;

    for (r = 0; r < n; r++) {
        size_t off = GAP;
        for (i = n - 1; i >= 0; i--) {
            sb[r][i] = block_size(pattern, n, r, i);
            sd[r][i] = off;
            off += sb[r][i] + GAP;
        }
        send[r] = malloc(off);
        CHECK(send[r] != NULL);
        memset(send[r], 0x55, off);
        for (i = 0; i < n; i++) {
            for (k = 0; k < sb[r][i]; k++) {
                send[r][sd[r][i] + k] = block_byte(r, i, k);
            }
        }
    }
    for (r = 0; r < n; r++) {
        size_t off = GAP;
        for (i = 0; i < n; i++) {
            rb[r][i] = block_size(pattern, n, i, r) + (r == bad_rank && i == r);
            rd[r][i] = off;
            off += rb[r][i] + GAP;
        }
        total[r] = off;
        jobs[r] = (job_t){.send = send[r],
                          .send_bytes = sb[r],
                          .send_displs = sd[r],
                          .recv_bytes = rb[r],
                          .recv_displs = rd[r],
                          .want = r == bad_rank ? TC_ERR_ARG : TC_OK};
        jobs[r].recv = malloc(off);
        CHECK(jobs[r].recv != NULL);
        memset(jobs[r].recv, 0xEE, off);
    }
    coll_run(n, rank_main, jobs, sizeof(*jobs));
    CHECK_EQ(coll_check_calls_paired(n), 3 * (size_t)(n - 1));

    for (r = 0; r < n; r++) {
        const unsigned char *got = jobs[r].recv;
        size_t at = 0;
        for (i = 0; i < n; i++) {
            for (; at < rd[r][i]; at++) {
                CHECK_MSG(got[at] == 0xEE,
                          "alltoallv n=%d pattern %d: rank %d wrote byte %zu, "
                          "before the block from %d",
                          n, pattern, r, at, i);
            }
            for (k = 0; k < rb[r][i]; k++, at++) {
                unsigned char want = r == bad_rank && i == r ? 0xEE : block_byte(i, r, k);
                CHECK_MSG(got[at] == want,
                          "alltoallv n=%d pattern %d: rank %d, byte %zu of the "
                          "block from %d: got %#x want %#x",
                          n, pattern, r, k, i, got[at], want);
            }
        }
        for (; at < total[r]; at++) {
            CHECK_MSG(got[at] == 0xEE,
                      "alltoallv n=%d pattern %d: rank %d wrote byte %zu, past "
                      "its last block",
                      n, pattern, r, at);
        }
        for (i = 0; i < n; i++) {
            for (k = 0; k < sb[r][i]; k++) {
                CHECK_MSG(send[r][sd[r][i] + k] == block_byte(r, i, k),
                          "alltoallv n=%d: rank "
                          "%d's send buffer changed",
                          n, r);
            }
        }
        free(jobs[r].recv);
        free(send[r]);
    }
}

/* Uneven blocks with empty ones, all empty, one byte each, large blocks,
 * only the own block, all but the own block; on 1..MAXN ranks. */
TC_CASE(alltoallv_uneven_blocks)
{
    int n, pattern;

    for (n = 1; n <= MAXN; n++) {
        for (pattern = 0; pattern < 6; pattern++) {
            test_alltoallv(n, pattern, -1);
            g_runs++;
        }
    }
}

/* A rank that expects a different size from itself than it sends itself
 * gets TC_ERR_ARG, after the exchange: the others finish with their data. */
TC_CASE(alltoallv_own_block_mismatch)
{
    test_alltoallv(1, 0, 0);
    test_alltoallv(3, 0, 1);
    test_alltoallv(4, 3, 3);
    g_runs += 3;
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    printf("test_coll_a2a: %d collective runs ok\n", g_runs);
    return 0;
}
