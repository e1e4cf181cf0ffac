/*
 * chan_ring.h - what the channel tests share (test_channel.c,
 * test_channel_device.c): the neighbours of a ring, whether a rank is on
 * another (pretend or real) node, a barrier, the bytes each rank sends, and a ring
 * of channel resources: a REGION of memory per rank (first half sent from,
 * second half received into), every rank's handle, and semaphores with
 * both neighbours.
 */
#ifndef TC_TEST_CHAN_RING_H
#define TC_TEST_CHAN_RING_H

#include "tcoll_channel.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_common.h"

#define REGION (1u << 20)
#define SEC 1000000000ll

static inline int right(void)
{
    return (tt_rank + 1) % tt_size;
}

static inline int left(void)
{
    return (tt_rank + tt_size - 1) % tt_size;
}

/* Whether rank r is on another node than this rank: pretend nodes of
 * TCOLL_RANKS_PER_NODE ranks (with TCOLL_MPI_THREAD=multiple, port channels
 * and semaphores then go over MPI; memory channels are refused), else the
 * hosts the ranks run on (every rank's host name, gathered once through
 * tcoll: an emulated cluster's hosts, or real ones). */
static inline int other_node(int r)
{
    static uint64_t *host; /* [tt_size]: a hash of each rank's host name */
    const char *env = getenv("TCOLL_RANKS_PER_NODE");

    if (env != NULL && atoi(env) > 0) {
        return r / atoi(env) != tt_rank / atoi(env);
    }
    if (host == NULL) {
        char name[256] = "";
        uint64_t h;
        tc_tensor_t t = {&h, TC_UINT8, 1, {8}};
        tc_tensor_t out;
        tc_request_t *req;

        CHECK_EQ(gethostname(name, sizeof(name) - 1), 0);
        h = tt_hash_str(name);
        CHECK_OK(tc_allgather("chan_ring/hosts", &t, &req));
        CHECK_OK(tc_wait(req));
        CHECK_OK(tc_request_output(req, &out));
        CHECK(out.shape[0] == 8 * (int64_t)tt_size);
        host = tt_xmalloc(8 * (size_t)tt_size);
        memcpy(host, out.data, 8 * (size_t)tt_size);
        tc_request_free(req);
    }
    return host[r] != host[tt_rank];
}

static inline void barrier(void)
{
    tc_request_t *req;
    CHECK_OK(tc_barrier(&req));
    CHECK_OK(tc_wait(req));
    tc_request_free(req);
}

/* The byte at offset i of what rank r sends in round k. */
static inline unsigned char pattern(int r, int k, uint64_t i)
{
    return (unsigned char)(tt_key((uint64_t)r, (uint64_t)k, i) & 0xff);
}

/* A ring of channels: sends to the right, hears from the left; sem id 0
 * carries "data is there", id 1 "done reading it". */
typedef struct {
    tc_chan_ctx_t *ctx;
    char *buf;  /* this rank's memory: first half sent from, second half received into */
    int shared; /* buf from tc_mem_alloc */
    tc_mem_t *mem;
    tc_rmem_t **rmems;
    tc_sem_t *data_r, *data_l, *ack_r, *ack_l; /* (right|left, 0|1) */
} ring_t;

static inline void ring_open(ring_t *g, int shared)
{
    memset(g, 0, sizeof(*g));
    CHECK_OK(tc_chan_ctx_create(NULL, &g->ctx));
    g->shared = shared;
    if (shared) {
        CHECK_OK(tc_mem_alloc(REGION, (void **)&g->buf));
    } else {
        g->buf = malloc(REGION);
        CHECK(g->buf != NULL);
    }
    memset(g->buf, 0, REGION);
    CHECK_OK(tc_mem_register(g->ctx, g->buf, REGION, &g->mem));
    g->rmems = calloc((size_t)tt_size, sizeof(*g->rmems));
    CHECK_OK(tc_mem_exchange(g->ctx, NULL, g->mem, g->rmems));
    if (tt_size > 1) {
        CHECK_OK(tc_sem_create(g->ctx, right(), 0, &g->data_r));
        CHECK_OK(tc_sem_create(g->ctx, right(), 1, &g->ack_r));
        if (left() != right()) {
            CHECK_OK(tc_sem_create(g->ctx, left(), 0, &g->data_l));
            CHECK_OK(tc_sem_create(g->ctx, left(), 1, &g->ack_l));
        } else {
            g->data_l = g->data_r;
            g->ack_l = g->ack_r;
        }
    }
}

static inline void ring_close(ring_t *g)
{
    int r;

    barrier(); /* nobody writes into this rank's memory any more */
    if (g->data_l != g->data_r) {
        tc_sem_destroy(g->data_l);
        tc_sem_destroy(g->ack_l);
    }
    tc_sem_destroy(g->data_r);
    tc_sem_destroy(g->ack_r);
    for (r = 0; r < tt_size; r++) {
        tc_mem_close(g->rmems[r]);
    }
    free(g->rmems);
    tc_mem_deregister(g->mem);
    CHECK_OK(tc_chan_ctx_destroy(g->ctx));
    if (g->shared) {
        CHECK_OK(tc_mem_free(g->buf));
    } else {
        free(g->buf);
    }
}

static inline void check_received(ring_t *g, int k, uint64_t dst, uint64_t src, uint64_t size)
{
    const unsigned char *p = (const unsigned char *)g->buf + REGION / 2 + dst;
    uint64_t i;

    for (i = 0; i < size; i++) {
        if (p[i] != pattern(left(), k, src + i)) {
            CHECK_MSG(0,
                      "round %d: byte %llu of %llu (dst offset %llu) from rank %d is 0x%02x, "
                      "want 0x%02x",
                      k, (unsigned long long)i, (unsigned long long)size, (unsigned long long)dst,
                      left(), p[i], pattern(left(), k, src + i));
        }
    }
}

static inline void fill_send(ring_t *g, int k, uint64_t src, uint64_t size)
{
    uint64_t i;
    for (i = 0; i < size; i++) {
        g->buf[src + i] = (char)pattern(tt_rank, k, src + i);
    }
}

#endif
