/*
 * test_channel_device.c - the handles of tcoll_channel_device.h, driven
 * from host threads through the same header a GPU kernel compiles (in a
 * context without TC_CHAN_CUDA they hold host addresses): semaphores
 * signalled and waited on through handles, against the host calls both
 * ways (a host wait on a line a handle signals parks for a limited time);
 * memory channel puts by a "block" of threads then one signal, every byte
 * checked by the peer, and gets; port channel puts pushed through the
 * device push and flushed with the device flush, the source reused after
 * the flush; refusals (ranges, fields) that push and copy nothing; and
 * TC_CHAN_CUDA refused on every rank where there is no GPU.
 *
 * Each rank talks to its right neighbour and hears from its left one. Run
 * also across pretend nodes (TCOLL_RANKS_PER_NODE=1, TCOLL_MPI_THREAD=
 * multiple): semaphores and port channels then travel over MPI through the
 * proxies, and memory channels are not made.
 */
#define _GNU_SOURCE
#include "tcoll_channel.h"
#include "tcoll_channel_device.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "chan_ring.h"

#define HALF (REGION / 2)

/* The handles refuse NULLs; TC_CHAN_CUDA is checked, and refused on every
 * rank alike where no GPU can be used. */
TC_CASE(refusals)
{
    tc_chan_opts_t o = TC_CHAN_OPTS_INIT;
    tc_chan_ctx_t *ctx = NULL;
    tc_sem_device_t sh;
    tc_memchan_device_t mh;
    tc_portchan_device_t ph;

    CHECK_EQ(tc_sem_device_handle(NULL, &sh), TC_ERR_ARG);
    CHECK_EQ(tc_memchan_device_handle(NULL, &mh), TC_ERR_ARG);
    CHECK_EQ(tc_portchan_device_handle(NULL, &ph), TC_ERR_ARG);
    o.flags = 2;
    CHECK_EQ(tc_chan_ctx_create(&o, &ctx), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "TC_CHAN_CUDA");
    o.flags = TC_CHAN_CUDA;
    o.device = -3;
    CHECK_EQ(tc_chan_ctx_create(&o, &ctx), TC_ERR_ARG);
    CHECK(ctx == NULL);
    if (!tc_cuda_available()) {
        o.device = TC_PROXY_CURRENT_DEVICE;
        CHECK_EQ(tc_chan_ctx_create(&o, &ctx), TC_ERR_TRANSPORT);
        CHECK_STR_CONTAINS(tc_last_error(), "TC_CHAN_CUDA");
        CHECK(ctx == NULL);
        o.device = 0;
        CHECK_EQ(tc_chan_ctx_create(&o, &ctx), TC_ERR_TRANSPORT);
        CHECK(ctx == NULL);
    }
    /* contexts keep working after refusals */
    CHECK_OK(tc_chan_ctx_create(NULL, &ctx));
    if (tt_size > 1) {
        tc_sem_t *s;
        CHECK_OK(tc_sem_create(ctx, right(), 0, &s));
        CHECK_EQ(tc_sem_device_handle(s, NULL), TC_ERR_ARG);
        CHECK_OK(tc_sem_device_handle(s, &sh));
        CHECK(sh.inbound != NULL && sh.expected == 0);
        CHECK((sh.outbound == NULL) == other_node(right()));
        tc_sem_destroy(s);
    }
    barrier();
    CHECK_OK(tc_chan_ctx_destroy(ctx));
}

/* Semaphores through handles: every rank signals its right neighbour and
 * waits for its left one, many rounds; then handle signals against host
 * waits (which park with a time limit: a handle's signal wakes no futex)
 * and host signals against handle waits. */
TC_CASE(sem_rounds)
{
    tc_sem_device_t to_r, from_l;
    ring_t g;
    int k, rounds = 2000;

    if (tt_size < 2) {
        return;
    }
    ring_open(&g, 1);
    CHECK_OK(tc_sem_device_handle(g.data_r, &to_r));
    CHECK_OK(tc_sem_device_handle(g.data_l, &from_l));
    CHECK_EQ(tc_sem_device_poll(&from_l), 0);
    CHECK_EQ(tc_sem_device_wait(&from_l, 0), 1); /* nothing yet: times out */
    CHECK_EQ(tc_sem_device_wait(&from_l, 1000000), 1);
    barrier(); /* nobody signals before every rank has seen none */
    for (k = 0; k < rounds; k++) {
        tc_sem_device_signal(&to_r);
        CHECK_EQ(tc_sem_device_wait(&from_l, 30 * SEC), 0);
    }
    CHECK_EQ(from_l.expected, (uint64_t)rounds);
    barrier();
    CHECK_EQ(tc_sem_device_poll(&from_l), 0); /* exactly rounds of them */
    /* handle signals, host waits, which go on from what the handle
     * consumed; the signal comes after the odd ranks' waits have parked */
    CHECK_EQ(tc_sem_device_done(NULL, &from_l), TC_ERR_ARG);
    CHECK_EQ(tc_sem_device_done(g.ack_l, &from_l), TC_ERR_ARG); /* not its handle */
    CHECK_OK(tc_sem_device_done(g.data_l, &from_l));
    CHECK_EQ(tc_sem_poll(g.data_l), 0);
    barrier();
    for (k = 0; k < 3; k++) {
        if (tt_rank % 2 == 0) {
            tt_sleep_ms(20);
        }
        tc_sem_device_signal(&to_r);
        CHECK_OK(tc_sem_wait(g.data_l, 30 * SEC));
    }
    barrier();
    /* host signals, handle waits (a fresh handle counts from the host's) */
    CHECK_OK(tc_sem_device_handle(g.data_l, &from_l));
    CHECK_EQ(from_l.expected, (uint64_t)rounds + 3);
    for (k = 0; k < 3; k++) {
        CHECK_OK(tc_sem_signal(g.data_r));
        CHECK_EQ(tc_sem_device_wait(&from_l, 30 * SEC), 0);
    }
    ring_close(&g);
}

/* A "block" of threads putting one buffer together: thread tid copies its
 * share, all meet, thread 0 signals. */
typedef struct {
    tc_memchan_device_t *h;
    uint64_t dst, src, size;
    uint32_t tid, n;
    pthread_barrier_t *meet;
    int refused;
} block_arg_t;

static void *block_put(void *p)
{
    block_arg_t *a = p;

    a->refused = tc_memchan_device_put(a->h, a->dst, a->src, a->size, a->tid, a->n);
    pthread_barrier_wait(a->meet); /* as __syncthreads() */
    if (a->tid == 0 && !a->refused) {
        tc_memchan_device_signal(a->h);
    }
    return NULL;
}

static void put_by_block(tc_memchan_device_t *h, uint64_t dst, uint64_t src, uint64_t size,
                         uint32_t n)
{
    pthread_t th[8];
    block_arg_t a[8];
    pthread_barrier_t meet;
    uint32_t i;

    CHECK(n <= 8);
    pthread_barrier_init(&meet, NULL, n);
    for (i = 0; i < n; i++) {
        a[i] = (block_arg_t){h, dst, src, size, i, n, &meet, 0};
        CHECK_EQ(pthread_create(&th[i], NULL, block_put, &a[i]), 0);
    }
    for (i = 0; i < n; i++) {
        CHECK_EQ(pthread_join(th[i], NULL), 0);
        CHECK_EQ(a[i].refused, 0);
    }
    pthread_barrier_destroy(&meet);
}

static const uint64_t sizes[] = {0, 1, 15, 16, 4097, 65536 + 3, HALF - 64};

/* Memory channels through handles: puts by 1, 3 and 8 threads, each byte
 * checked by the receiver after a handle wait, then the receiver's ack;
 * put_with_signal from one thread; gets; refusals copy nothing. */
TC_CASE(memchan)
{
    tc_memchan_device_t h;
    tc_memchan_t *ch;
    tc_sem_device_t ack_in, back;
    ring_t g;
    size_t si;
    int k = 0;
    uint32_t threads[] = {1, 3, 8};

    if (tt_size < 2 || other_node(right()) || other_node(left())) {
        return; /* memory channels stay within a node */
    }
    ring_open(&g, 1);
    CHECK_OK(tc_memchan_create(g.data_r, g.mem, g.rmems[right()], &ch));
    CHECK_OK(tc_memchan_device_handle(ch, &h));
    CHECK_OK(tc_sem_device_handle(g.ack_r, &ack_in));
    CHECK_OK(tc_sem_device_handle(g.data_l, &back)); /* only its semaphore is used */
    for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        uint64_t size = sizes[si], src = si % 3 == 1 ? 7 : 0, dst = si % 2 == 1 ? 33 : 0;
        uint32_t n = threads[si % 3];

        if (src + size > HALF || dst + size > HALF) {
            continue;
        }
        fill_send(&g, k, src, size);
        put_by_block(&h, HALF + dst, src, size, n);
        CHECK_EQ(tc_sem_device_wait(&back, 30 * SEC), 0);
        check_received(&g, k, dst, src, size);
        CHECK_OK(tc_sem_signal(g.ack_l));
        CHECK_EQ(tc_sem_device_wait(&ack_in, 30 * SEC), 0);
        k++;
    }
    /* one thread: put_with_signal */
    fill_send(&g, k, 100, 5000);
    CHECK_EQ(tc_memchan_device_put_with_signal(&h, HALF + 200, 100, 5000), 0);
    tc_memchan_device_flush(&h);
    CHECK_EQ(tc_sem_device_wait(&back, 30 * SEC), 0);
    check_received(&g, k, 200, 100, 5000);
    barrier();
    /* get: the right neighbour's bytes it received (from this rank) */
    memset(g.buf + 1000, 0, 5000);
    CHECK_EQ(tc_memchan_device_get(&h, 1000, HALF + 200, 5000, 0, 1), 0);
    {
        uint64_t i;
        for (i = 0; i < 5000; i++) {
            CHECK_EQ((unsigned char)g.buf[1000 + i], pattern(tt_rank, k, 100 + i));
        }
    }
    /* refusals: outside either memory, or a bad thread count; nothing copied */
    CHECK_EQ(tc_memchan_device_put(&h, REGION - 10, 0, 11, 0, 1), 1);
    CHECK_EQ(tc_memchan_device_put(&h, 0, REGION, 1, 0, 1), 1);
    CHECK_EQ(tc_memchan_device_put(&h, 0, 0, 1, 0, 0), 1);
    CHECK_EQ(tc_memchan_device_put(&h, 0, 0, 1, 2, 2), 1);
    CHECK_EQ(tc_memchan_device_get(&h, REGION, 0, 1, 0, 1), 1);
    CHECK_EQ(tc_memchan_device_put_with_signal(&h, 0, UINT64_MAX, 2), 1);
    barrier();
    CHECK_EQ(tc_sem_device_poll(&back), 0); /* no signal came from a refusal */
    tc_memchan_destroy(ch);
    ring_close(&g);
}

/* Port channels through handles: puts and put_with_signal pushed with the
 * device push, checked by the receiver; a device flush, then the source
 * is overwritten at once and the receiver still sees what was put; a
 * refused put pushes nothing (no signal, flush still clean). */
TC_CASE(portchan)
{
    tc_portchan_device_t h;
    tc_sem_device_t from_l, ack_in;
    tc_portchan_t *ch;
    ring_t g;
    size_t si;
    int k = 0;

    if (tt_size < 2) {
        return;
    }
    ring_open(&g, 1);
    CHECK_OK(tc_portchan_create(g.data_r, g.mem, g.rmems[right()], &ch));
    CHECK_OK(tc_portchan_device_handle(ch, &h));
    CHECK_EQ(h.chan, tc_portchan_id(ch));
    CHECK_OK(tc_sem_device_handle(g.data_l, &from_l));
    CHECK_OK(tc_sem_device_handle(g.ack_r, &ack_in));
    for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        uint64_t size = sizes[si], src = si % 2 == 0 ? 3 : 0, dst = si % 3 == 0 ? 0 : 64;

        if (src + size > HALF || dst + size > HALF) {
            continue;
        }
        fill_send(&g, k, src, size);
        if (si % 2 == 0) {
            CHECK_EQ(tc_portchan_device_put_with_signal(&h, HALF + dst, src, size), 0);
        } else {
            CHECK_EQ(tc_portchan_device_put(&h, HALF + dst, src, size / 2), 0);
            CHECK_EQ(
                tc_portchan_device_put(&h, HALF + dst + size / 2, src + size / 2, size - size / 2),
                0);
            CHECK_EQ(tc_portchan_device_signal(&h), 0);
        }
        CHECK_EQ(tc_portchan_device_flush(&h), 0);
        memset(g.buf + src, 0x5a, size); /* the source is free after the flush */
        CHECK_EQ(tc_sem_device_wait(&from_l, 30 * SEC), 0);
        check_received(&g, k, dst, src, size);
        CHECK_OK(tc_sem_signal(g.ack_l));
        CHECK_EQ(tc_sem_device_wait(&ack_in, 30 * SEC), 0);
        k++;
    }
    /* refusals push nothing */
    CHECK_EQ(tc_portchan_device_put(&h, REGION, 0, 1), 1);
    CHECK_EQ(tc_portchan_device_put(&h, 0, HALF * 2 - 1, 2), 1);
    CHECK_EQ(tc_portchan_device_put_with_signal(&h, (uint64_t)1 << 41, 0, 0), 1);
    CHECK_EQ(tc_portchan_device_flush(&h), 0);
    barrier();
    CHECK_EQ(tc_sem_device_poll(&from_l), 0);
    CHECK_OK(tc_portchan_flush(ch, 30 * SEC)); /* the host's flush agrees: nothing failed */
    CHECK_OK(tc_portchan_destroy(ch));
    ring_close(&g);
}

/* FNV-1a 64, as the handle's checksum (regmem.c's layout). */
static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;

    for (i = 0; i < n; i++) {
        h = (h ^ p[i]) * 0x100000001b3ull;
    }
    return h;
}

static void put_le32(unsigned char *b, uint32_t v)
{
    int i;
    for (i = 0; i < 4; i++) {
        b[i] = (unsigned char)(v >> (8 * i));
    }
}

static void put_le64(unsigned char *b, uint64_t v)
{
    int i;
    for (i = 0; i < 8; i++) {
        b[i] = (unsigned char)(v >> (8 * i));
    }
}

/* The handle's device field (offset 72) set to dev, checksum made good. */
static void with_device(const tc_mem_handle_t *h, int32_t dev, tc_mem_handle_t *out)
{
    *out = *h;
    put_le32(out->bytes + 72, (uint32_t)dev);
    put_le64(out->bytes + 184, fnv1a(out->bytes, 184));
}

/* Handles that say "device memory" (version 2, 192 bytes), checked on
 * arrival: an impossible device, or device memory in a shared region, is
 * refused; a well-formed one opens in a context for host threads, which
 * cannot reach it: a memory channel to it is refused and a port channel's
 * put to it fails at the proxy, reported by the flush, saying why. */
TC_CASE(device_handles)
{
    tc_mem_handle_t h, bad;
    tc_rmem_t *r = NULL;
    tc_portchan_t *ch;
    tc_memchan_t *mch = NULL;
    char *priv = tt_xmalloc(4096);
    tc_mem_t *pm;
    ring_t g;

    CHECK_EQ(TC_MEM_HANDLE_BYTES, 192);
    if (tt_size < 2) {
        free(priv);
        return;
    }
    ring_open(&g, 1);
    CHECK_OK(tc_mem_register(g.ctx, priv, 4096, &pm)); /* private memory: no region */
    CHECK_OK(tc_mem_handle(pm, &h));
    CHECK_EQ(tc_mem_handle(g.mem, &bad), TC_OK);
    with_device(&bad, 0, &bad); /* a shared region that says it is device memory */
    CHECK_EQ(tc_mem_open(g.ctx, bad.bytes, sizeof(bad.bytes), &r), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "shared host region");
    with_device(&h, -7, &bad);
    CHECK_EQ(tc_mem_open(g.ctx, bad.bytes, sizeof(bad.bytes), &r), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "CUDA device -7");
    bad = h;
    bad.bytes[80] ^= 1; /* the IPC handle is under the checksum too */
    CHECK_EQ(tc_mem_open(g.ctx, bad.bytes, sizeof(bad.bytes), &r), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "damaged");
    CHECK(r == NULL);

    /* this rank's own handle, sent to the right neighbour as device memory */
    with_device(&h, 0, &bad);
    {
        tc_request_t *req;
        tc_tensor_t t = {bad.bytes, TC_UINT8, 1, {TC_MEM_HANDLE_BYTES}}, all;
        CHECK_OK(tc_allgather("devhandles", &t, &req));
        CHECK_OK(tc_wait(req));
        CHECK_OK(tc_request_output(req, &all));
        CHECK_EQ(all.shape[0], (int64_t)tt_size * TC_MEM_HANDLE_BYTES);
        CHECK_OK(tc_mem_open(
            g.ctx, (const unsigned char *)all.data + (size_t)right() * TC_MEM_HANDLE_BYTES,
            TC_MEM_HANDLE_BYTES, &r));
        tc_request_free(req);
    }
    CHECK_EQ(tc_rmem_rank(r), right());
    if (!other_node(right())) {
        CHECK_EQ(tc_memchan_create(g.data_r, g.mem, r, &mch), TC_ERR_ARG);
        CHECK_STR_CONTAINS(tc_last_error(), "TC_CHAN_CUDA");
        CHECK_OK(tc_portchan_create(g.data_r, g.mem, r, &ch));
        CHECK_OK(tc_portchan_put(ch, 0, 0, 64));
        CHECK_EQ(tc_portchan_flush(ch, 30 * SEC), TC_ERR_TRANSPORT);
        CHECK_STR_CONTAINS(tc_last_error(), "CUDA device memory that this context cannot reach");
        CHECK_OK(tc_portchan_flush(ch, 30 * SEC)); /* reported once */
        CHECK_OK(tc_portchan_destroy(ch));
    }
    tc_mem_close(r);
    barrier();
    tc_mem_deregister(pm);
    free(priv);
    ring_close(&g);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
