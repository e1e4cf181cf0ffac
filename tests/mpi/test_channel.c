/*
 * test_channel.c - channels between the ranks of a node (tcoll_channel.h):
 * handles exchanged and checked on arrival, memory channel and port channel
 * puts of many sizes and offsets verified at the destination, gets, a
 * signal seen only after every earlier put, flush letting the source be
 * reused, semaphore counts under concurrent signals, timeouts, and every
 * refusal. Each rank talks to its right neighbour (rank + 1) and hears from
 * its left one; with one rank the cases that need a peer only check what
 * is refused.
 */
#define _GNU_SOURCE
#include "tcoll_channel.h"
#include "tcoll_trigger.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "chan_ring.h"

static const uint64_t sizes[] = {0, 1, 7, 64, 4095, 4096, 4097, 65537, 200003, REGION / 2};
static const uint64_t offsets[] = {0, 1, 13, 4096, 100000};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define NOFFS (sizeof(offsets) / sizeof(offsets[0]))

/* Round k of a put test: this rank fills its send half, puts it (with how)
 * to the right neighbour's receive half, and checks what the left one put
 * into its own. */
typedef tc_status_t (*put_fn)(void *ch, uint64_t dst, uint64_t src, uint64_t size);

static tc_status_t mem_put(void *ch, uint64_t dst, uint64_t src, uint64_t size)
{
    return tc_memchan_put_with_signal(ch, dst, src, size);
}

static tc_status_t port_put_with_signal(void *ch, uint64_t dst, uint64_t src, uint64_t size)
{
    return tc_portchan_put_with_signal(ch, dst, src, size);
}

static tc_status_t port_put_then_signal(void *ch, uint64_t dst, uint64_t src, uint64_t size)
{
    tc_status_t st = tc_portchan_put(ch, dst, src, size);
    return st != TC_OK ? st : tc_portchan_signal(ch);
}

static void put_rounds(ring_t *g, void *ch, put_fn put)
{
    size_t si, oi;
    int k = 0;

    for (si = 0; si < NSIZES; si++) {
        for (oi = 0; oi < NOFFS; oi++, k++) {
            uint64_t size = sizes[si], src = offsets[oi], dst = offsets[(oi + 2) % NOFFS];

            if (src + size > REGION / 2 || dst + size > REGION / 2) {
                continue;
            }
            fill_send(g, k, src, size);
            CHECK_OK(put(ch, REGION / 2 + dst, src, size));
            CHECK_OK(tc_sem_wait(g->data_l, 30 * SEC)); /* the left one's put is there */
            check_received(g, k, dst, src, size);
            CHECK_OK(tc_sem_signal(g->ack_l));         /* done with it */
            CHECK_OK(tc_sem_wait(g->ack_r, 30 * SEC)); /* the right one is done with ours */
        }
    }
}

TC_CASE(memchan_puts)
{
    ring_t g;
    tc_memchan_t *ch;

    ring_open(&g, 1);
    if (tt_size > 1 && other_node(right())) {
        CHECK_EQ(tc_memchan_create(g.data_r, g.mem, g.rmems[right()], &ch), TC_ERR_ARG);
        CHECK_STR_CONTAINS(tc_last_error(), "another node");
    } else if (tt_size > 1 && !other_node(left())) { /* the whole ring on this node */
        CHECK_OK(tc_memchan_create(g.data_r, g.mem, g.rmems[right()], &ch));
        put_rounds(&g, ch, mem_put);
        tc_memchan_destroy(ch);
    }
    ring_close(&g);
}

/* Gets: every rank writes a pattern into its own memory, then each reads
 * the right neighbour's at many sizes and offsets. */
TC_CASE(memchan_gets)
{
    ring_t g;
    tc_memchan_t *ch;
    size_t si, oi;
    uint64_t i;

    ring_open(&g, 1);
    fill_send(&g, 99, 0, REGION / 2);
    barrier();
    if (tt_size > 1 && !other_node(right())) {
        CHECK_OK(tc_memchan_create(g.data_r, g.mem, g.rmems[right()], &ch));
        for (si = 0; si < NSIZES; si++) {
            for (oi = 0; oi < NOFFS; oi++) {
                uint64_t size = sizes[si], src = offsets[oi], dst = REGION / 2;
                if (src + size > REGION / 2) {
                    continue;
                }
                CHECK_OK(tc_memchan_get(ch, dst, src, size));
                for (i = 0; i < size; i++) {
                    CHECK_EQ((unsigned char)g.buf[dst + i], pattern(right(), 99, src + i));
                }
            }
        }
        CHECK_OK(tc_memchan_flush(ch));
        tc_memchan_destroy(ch);
    }
    ring_close(&g);
}

static void portchan_rounds(int shared)
{
    ring_t g;
    tc_portchan_t *ch;

    ring_open(&g, shared);
    if (tt_size > 1) {
        CHECK_OK(tc_portchan_create(g.data_r, g.mem, g.rmems[right()], &ch));
        put_rounds(&g, ch, port_put_with_signal);
        put_rounds(&g, ch, port_put_then_signal);
        CHECK_OK(tc_portchan_flush(ch, 30 * SEC));
        CHECK_OK(tc_portchan_destroy(ch));
    }
    ring_close(&g);
}

/* Destination memory from tc_mem_alloc: the proxy stores into the mapping. */
TC_CASE(portchan_puts_shared)
{
    portchan_rounds(1);
}

/* Destination memory from malloc: the proxy writes with process_vm_writev. */
TC_CASE(portchan_puts_private)
{
    portchan_rounds(0);
}

/* Many puts, one signal: when the signal is seen, every put before it is
 * there (each put writes its own slice; the slices are checked). */
TC_CASE(signal_after_puts)
{
    enum { PUTS = 200, SLICE = 1000 };
    ring_t g;
    tc_portchan_t *ch;
    int round, j;

    ring_open(&g, 0);
    if (tt_size > 1) {
        CHECK_OK(tc_portchan_create(g.data_r, g.mem, g.rmems[right()], &ch));
        for (round = 0; round < 5; round++) {
            fill_send(&g, round, 0, (uint64_t)PUTS * SLICE);
            for (j = 0; j < PUTS; j++) {
                CHECK_OK(tc_portchan_put(ch, REGION / 2 + (uint64_t)j * SLICE, (uint64_t)j * SLICE,
                                         SLICE));
            }
            CHECK_OK(tc_portchan_signal(ch));
            CHECK_OK(tc_sem_wait(g.data_l, 30 * SEC));
            check_received(&g, round, 0, 0, (uint64_t)PUTS * SLICE);
            CHECK_OK(tc_sem_signal(g.ack_l));
            CHECK_OK(tc_sem_wait(g.ack_r, 30 * SEC));
        }
        CHECK_OK(tc_portchan_destroy(ch));
    }
    ring_close(&g);
}

/* After a flush the source may be reused: the sender overwrites its source
 * at once after each flush, and the receiver must see the flushed data. */
TC_CASE(flush_then_reuse)
{
    enum { SIZE = 300000 };
    ring_t g;
    tc_portchan_t *ch;
    int k;

    ring_open(&g, 1);
    if (tt_size > 1) {
        CHECK_OK(tc_portchan_create(g.data_r, g.mem, g.rmems[right()], &ch));
        for (k = 0; k < 8; k++) {
            fill_send(&g, k, 0, SIZE);
            CHECK_OK(tc_portchan_put(ch, REGION / 2, 0, SIZE));
            CHECK_OK(tc_portchan_flush(ch, 30 * SEC));
            memset(g.buf, 0xee, SIZE); /* reused at once */
            CHECK_OK(tc_portchan_signal(ch));
            CHECK_OK(tc_sem_wait(g.data_l, 30 * SEC));
            check_received(&g, k, 0, 0, SIZE);
            CHECK_OK(tc_sem_signal(g.ack_l));
            CHECK_OK(tc_sem_wait(g.ack_r, 30 * SEC));
        }
        /* a flush with nothing pending, and a zero-byte put, complete */
        CHECK_OK(tc_portchan_flush(ch, 30 * SEC));
        CHECK_OK(tc_portchan_put(ch, 0, 0, 0));
        CHECK_OK(tc_portchan_flush(ch, 30 * SEC));
        CHECK_OK(tc_portchan_destroy(ch));
    }
    ring_close(&g);
}

typedef struct {
    tc_sem_t *sem;
    tc_portchan_t *ch;
    int n;
} signaller_t;

static void *signaller(void *arg)
{
    signaller_t *s = arg;
    int i;

    for (i = 0; i < s->n; i++) {
        CHECK_OK(s->ch != NULL && (i & 1) ? tc_portchan_signal(s->ch) : tc_sem_signal(s->sem));
    }
    return NULL;
}

/* Four threads signal the right neighbour's semaphore at once, directly and
 * through a port channel; the neighbour counts exactly every signal. */
TC_CASE(sem_concurrent_signals)
{
    enum { THREADS = 4, EACH = 2000 };
    pthread_t th[THREADS];
    signaller_t s;
    ring_t g;
    int t, i;

    ring_open(&g, 1);
    if (tt_size > 1) {
        s.sem = g.data_r;
        s.n = EACH;
        CHECK_OK(tc_portchan_create(g.data_r, g.mem, g.rmems[right()], &s.ch));
        for (t = 0; t < THREADS; t++) {
            CHECK_EQ(pthread_create(&th[t], NULL, signaller, &s), 0);
        }
        for (i = 0; i < THREADS * EACH; i++) { /* waits, and polls when one is there */
            if (i % 3 == 0 || !tc_sem_poll(g.data_l)) {
                CHECK_OK(tc_sem_wait(g.data_l, 30 * SEC));
            }
        }
        for (t = 0; t < THREADS; t++) {
            pthread_join(th[t], NULL);
        }
        CHECK_OK(tc_portchan_destroy(s.ch));
        barrier(); /* every signal sent */
        CHECK_EQ(tc_sem_poll(g.data_l), 0);
        CHECK_EQ(tc_sem_wait(g.data_l, 0), TC_ERR_TIMEOUT);
    }
    ring_close(&g);
}

/* A wait that times out consumes nothing and says so. */
TC_CASE(timeouts)
{
    ring_t g;

    ring_open(&g, 1);
    if (tt_size > 1) {
        CHECK_EQ(tc_sem_wait(g.data_l, 0), TC_ERR_TIMEOUT);
        CHECK_EQ(tc_sem_wait(g.data_l, 2000000), TC_ERR_TIMEOUT);
        CHECK_STR_CONTAINS(tc_last_error(), "no signal from rank");
        CHECK_EQ(tc_sem_poll(g.data_l), 0);
        barrier();
        CHECK_OK(tc_sem_signal(g.data_r));
        CHECK_OK(tc_sem_wait(g.data_l, 30 * SEC));
        CHECK_EQ(tc_sem_wait(g.data_l, 1000000), TC_ERR_TIMEOUT);
    }
    ring_close(&g);
}

/* Handles: opened on arrival with every check; the exchange gives every
 * rank's; damaged, foreign or short handles are refused. */
TC_CASE(handles)
{
    tc_chan_ctx_t *other;
    tc_mem_handle_t h, bad;
    tc_rmem_t *rm = NULL;
    ring_t g;
    int r;

    ring_open(&g, 1);
    for (r = 0; r < tt_size; r++) {
        CHECK_EQ(tc_rmem_rank(g.rmems[r]), r);
        CHECK_EQ(tc_rmem_size(g.rmems[r]), REGION);
    }
    CHECK_OK(tc_mem_handle(g.mem, &h));
    CHECK_OK(tc_mem_open(g.ctx, h.bytes, sizeof(h.bytes), &rm));
    CHECK_EQ(tc_rmem_rank(rm), tt_rank);
    tc_mem_close(rm);
    rm = NULL;
    bad = h;
    bad.bytes[45] ^= 1;
    CHECK_EQ(tc_mem_open(g.ctx, bad.bytes, sizeof(bad.bytes), &rm), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "damaged");
    bad = h;
    bad.bytes[0] ^= 0xff;
    CHECK_EQ(tc_mem_open(g.ctx, bad.bytes, sizeof(bad.bytes), &rm), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "not a tcoll memory handle");
    CHECK_EQ(tc_mem_open(g.ctx, h.bytes, sizeof(h.bytes) - 1, &rm), TC_ERR_ARG);
    CHECK_EQ(tc_mem_open(g.ctx, NULL, sizeof(h.bytes), &rm), TC_ERR_ARG);
    CHECK_EQ(tc_mem_open(g.ctx, h.bytes, sizeof(h.bytes), NULL), TC_ERR_ARG);
    CHECK_OK(tc_chan_ctx_create(NULL, &other));
    CHECK_EQ(tc_mem_open(other, h.bytes, sizeof(h.bytes), &rm), TC_ERR_ARG);
    CHECK_STR_CONTAINS(tc_last_error(), "another channel context");
    CHECK(rm == NULL);
    CHECK_EQ(tc_mem_exchange(other, NULL, g.mem, g.rmems), TC_ERR_ARG);
    CHECK_OK(tc_chan_ctx_destroy(other));
    ring_close(&g);
}

/* Handles sent pairwise: out of tag order, several under one tag (taken in
 * sending order), to itself; a channel made from a received handle works;
 * a mailbox on this node holds 16 unreceived handles from one sender (no
 * limit to another node); timeouts and refusals. */
TC_CASE(handles_pairwise)
{
    enum { MAXQ = 16 };
    ring_t g;
    tc_mem_t *small[3], *extra;
    tc_rmem_t *rm = NULL, *rs[3], *rq[MAXQ + 1];
    tc_portchan_t *ch;
    char *bufs = malloc(3 * 4096 + 1);
    int i, nq;

    ring_open(&g, 1);
    for (i = 0; i < 3; i++) {
        CHECK_OK(tc_mem_register(g.ctx, bufs + i * 4096, (size_t)(1000 + i), &small[i]));
    }
    CHECK_OK(tc_mem_register(g.ctx, bufs + 3 * 4096, 1, &extra));
    CHECK_EQ(tc_mem_handle_send(NULL, right(), 1), TC_ERR_ARG);
    CHECK_EQ(tc_mem_handle_send(g.mem, tt_size, 1), TC_ERR_ARG);
    CHECK_EQ(tc_mem_handle_send(g.mem, -1, 1), TC_ERR_ARG);
    CHECK_EQ(tc_mem_handle_recv(NULL, left(), 1, 0, &rm), TC_ERR_ARG);
    CHECK_EQ(tc_mem_handle_recv(g.ctx, -1, 1, 0, &rm), TC_ERR_ARG);
    CHECK_EQ(tc_mem_handle_recv(g.ctx, left(), 1, 0, NULL), TC_ERR_ARG);
    CHECK_EQ(tc_mem_handle_recv(g.ctx, left(), 99, 1000000, &rm), TC_ERR_TIMEOUT);
    CHECK_STR_CONTAINS(tc_last_error(), "no handle with tag 99");
    CHECK(rm == NULL);

    /* three under tag 5, then the big one under tag 7; to itself under 9 */
    for (i = 0; i < 3; i++) {
        CHECK_OK(tc_mem_handle_send(small[i], right(), 5));
    }
    CHECK_OK(tc_mem_handle_send(g.mem, right(), 7));
    CHECK_OK(tc_mem_handle_send(extra, tt_rank, 9));
    CHECK_OK(tc_mem_handle_recv(g.ctx, tt_rank, 9, 0, &rm));
    CHECK_EQ(tc_rmem_rank(rm), tt_rank);
    CHECK_EQ(tc_rmem_size(rm), 1);
    tc_mem_close(rm);
    CHECK_OK(tc_mem_handle_recv(g.ctx, left(), 7, 30 * SEC, &rm));
    CHECK_EQ(tc_rmem_rank(rm), left());
    CHECK_EQ(tc_rmem_size(rm), REGION);
    for (i = 0; i < 3; i++) {
        CHECK_OK(tc_mem_handle_recv(g.ctx, left(), 5, 30 * SEC, &rs[i]));
        CHECK_EQ(tc_rmem_size(rs[i]), (uint64_t)(1000 + i)); /* in sending order */
        CHECK_EQ(tc_rmem_rank(rs[i]), left());
    }
    CHECK_EQ(tc_mem_handle_recv(g.ctx, left(), 5, 0, &rs[0]), TC_ERR_TIMEOUT);
    for (i = 0; i < 3; i++) {
        tc_mem_close(rs[i]);
    }

    /* a port channel to the right one through the handle it sent us (its
     * handle went to its right; ours came from our left: send back) */
    CHECK_OK(tc_mem_handle_send(g.mem, left(), 8));
    tc_mem_close(rm);
    CHECK_OK(tc_mem_handle_recv(g.ctx, right(), 8, 30 * SEC, &rm));
    if (tt_size > 1) {
        CHECK_OK(tc_portchan_create(g.data_r, g.mem, rm, &ch));
        fill_send(&g, 42, 0, 70000);
        CHECK_OK(tc_portchan_put_with_signal(ch, REGION / 2, 0, 70000));
        CHECK_OK(tc_sem_wait(g.data_l, 30 * SEC));
        check_received(&g, 42, 0, 0, 70000);
        CHECK_OK(tc_portchan_destroy(ch));
    }
    tc_mem_close(rm);

    /* a full mailbox on this node; none across nodes */
    barrier();
    for (nq = 0; nq < MAXQ + 1; nq++) {
        tc_status_t st = tc_mem_handle_send(extra, right(), 11);
        if (st != TC_OK) {
            CHECK_EQ(st, TC_ERR_NOMEM);
            CHECK_STR_CONTAINS(tc_last_error(), "not yet received");
            CHECK(!other_node(right()));
            break;
        }
    }
    CHECK_EQ(nq, other_node(right()) ? MAXQ + 1 : MAXQ);
    barrier(); /* every rank has sent before any receives */
    for (i = 0; i < (other_node(left()) ? MAXQ + 1 : MAXQ); i++) {
        CHECK_OK(tc_mem_handle_recv(g.ctx, left(), 11, 30 * SEC, &rq[i]));
    }
    CHECK_EQ(tc_mem_handle_recv(g.ctx, left(), 11, 0, &rm), TC_ERR_TIMEOUT);
    for (i = 0; i < (other_node(left()) ? MAXQ + 1 : MAXQ); i++) {
        tc_mem_close(rq[i]);
    }
    for (i = 0; i < 3; i++) {
        tc_mem_deregister(small[i]);
    }
    tc_mem_deregister(extra);
    ring_close(&g);
    free(bufs);
}

/* Everything refused at once, and nothing changed by it. */
TC_CASE(refusals)
{
    tc_chan_opts_t o = TC_CHAN_OPTS_INIT;
    tc_sem_t *sem = NULL, *dup;
    tc_memchan_t *mch = NULL;
    tc_portchan_t *pch = NULL;
    tc_chan_ctx_t *ctx;
    tc_trigger_t t;
    tc_mem_t *priv;
    char *p;
    ring_t g;

    CHECK_EQ(tc_chan_ctx_create(NULL, NULL), TC_ERR_ARG);
    o.fifo_size = 3;
    CHECK_EQ(tc_chan_ctx_create(&o, &ctx), TC_ERR_ARG);
    o = (tc_chan_opts_t)TC_CHAN_OPTS_INIT;
    o.sem_ids = 5000;
    CHECK_EQ(tc_chan_ctx_create(&o, &ctx), TC_ERR_ARG);
    o = (tc_chan_opts_t)TC_CHAN_OPTS_INIT;
    o.size = 1;
    CHECK_EQ(tc_chan_ctx_create(&o, &ctx), TC_ERR_ARG);
    /* sem_ids that differ between ranks fail every rank alike */
    o = (tc_chan_opts_t)TC_CHAN_OPTS_INIT;
    o.sem_ids = (uint32_t)(8 + (tt_size > 1 ? tt_rank : 0));
    CHECK_EQ(tc_chan_ctx_create(&o, &ctx), tt_size > 1 ? TC_ERR_ARG : TC_OK);
    if (tt_size > 1) {
        CHECK_STR_CONTAINS(tc_last_error(), "sem_ids differ");
    } else {
        CHECK_OK(tc_chan_ctx_destroy(ctx));
    }
    CHECK_EQ(tc_chan_ctx_destroy(NULL), TC_ERR_ARG);
    CHECK_EQ(tc_mem_alloc(0, (void **)&p), TC_ERR_ARG);
    CHECK_EQ(tc_mem_alloc(16, NULL), TC_ERR_ARG);
    CHECK_EQ(tc_mem_free(&o), TC_ERR_ARG);
    CHECK_OK(tc_mem_free(NULL));

    ring_open(&g, 1);
    CHECK_EQ(tc_mem_register(g.ctx, NULL, 16, &priv), TC_ERR_ARG);
    CHECK_EQ(tc_mem_register(NULL, g.buf, 16, &priv), TC_ERR_ARG);
    CHECK_EQ(tc_sem_create(g.ctx, tt_rank, 2, &sem), TC_ERR_ARG);
    CHECK_EQ(tc_sem_create(g.ctx, tt_size, 2, &sem), TC_ERR_ARG);
    CHECK_EQ(tc_sem_create(g.ctx, -1, 2, &sem), TC_ERR_ARG);
    CHECK(sem == NULL);
    CHECK_EQ(tc_sem_signal(NULL), TC_ERR_ARG);
    CHECK_EQ(tc_sem_wait(NULL, 0), TC_ERR_ARG);
    CHECK_EQ(tc_sem_poll(NULL), 0);
    if (tt_size > 1) {
        CHECK_EQ(tc_sem_create(g.ctx, right(), 64, &sem), TC_ERR_ARG);
        CHECK_EQ(tc_sem_create(g.ctx, right(), 0, &dup), TC_ERR_ARG); /* taken */
        CHECK_STR_CONTAINS(tc_last_error(), "exists already");
        /* memory channels need the peer's memory mapped */
        p = malloc(4096);
        CHECK_OK(tc_mem_register(g.ctx, p, 4096, &priv));
        CHECK_EQ(tc_memchan_create(g.data_r, g.mem, g.rmems[tt_rank], &mch), TC_ERR_ARG);
    }
    if (tt_size > 1 && !other_node(right())) {
        CHECK_OK(tc_memchan_create(g.data_r, priv, g.rmems[right()], &mch));
        CHECK_EQ(tc_memchan_put(mch, 0, 1, 4096), TC_ERR_ARG);       /* past the source */
        CHECK_EQ(tc_memchan_put(mch, REGION - 1, 0, 2), TC_ERR_ARG); /* past the peer's */
        CHECK_EQ(tc_memchan_put(mch, UINT64_MAX, 0, 2), TC_ERR_ARG);
        CHECK_EQ(tc_memchan_get(mch, 4000, 0, 97), TC_ERR_ARG);
        CHECK_OK(tc_memchan_put(mch, REGION, 0, 0)); /* zero bytes at the end: legal */
        tc_memchan_destroy(mch);
    }
    if (tt_size > 1) {
        CHECK_OK(tc_portchan_create(g.data_r, priv, g.rmems[right()], &pch));
        CHECK_EQ(tc_portchan_put(pch, 0, 0, 4097), TC_ERR_ARG);
        CHECK_EQ(tc_portchan_put(pch, REGION, 0, 1), TC_ERR_ARG);
        CHECK_EQ(tc_portchan_put(pch, 0, 0, (uint64_t)1 << 32), TC_ERR_ARG);
        CHECK_STR_CONTAINS(tc_last_error(), "does not fit a trigger");
        CHECK_EQ(tc_portchan_put(pch, (uint64_t)1 << 40, 0, 0), TC_ERR_ARG);
        CHECK_EQ(tc_portchan_trigger(pch, 0, 0, 0, 0, &t), TC_ERR_ARG);
        CHECK_EQ(tc_portchan_trigger(pch, 8, 0, 0, 0, &t), TC_ERR_ARG);
        CHECK_OK(tc_portchan_trigger(pch, TC_TRIG_PUT | TC_TRIG_SIGNAL, 5, 6, 7, &t));
        {
            tc_trigger_fields_t f;
            CHECK_EQ(tc_trigger_decode(t, &f), 0);
            CHECK_EQ(f.chan, tc_portchan_id(pch));
            CHECK(f.dst_offset == 5 && f.src_offset == 6 && f.size == 7);
        }
        CHECK_EQ(tc_portchan_flush(NULL, 0), TC_ERR_ARG);
        CHECK_OK(tc_portchan_flush(pch, 30 * SEC)); /* nothing was pushed: nothing failed */
        CHECK_OK(tc_portchan_destroy(pch));
        CHECK_EQ(tc_portchan_destroy(NULL), TC_ERR_ARG);
        tc_mem_deregister(priv);
        free(p);
    }
    ring_close(&g);
}

/* With pretend nodes (TCOLL_RANKS_PER_NODE=k: ranks 0..k-1 on one, and so
 * on) a context spans nodes. With TCOLL_MPI_THREAD=multiple, semaphores
 * with every rank work (across nodes through the proxies, over MPI) and
 * memory channels across nodes are refused; without it the context itself
 * is refused, on every rank, saying what to set. Without the knob every
 * rank is on this node. */
TC_CASE(pretend_nodes)
{
    const char *mt = getenv("TCOLL_MPI_THREAD");
    int multiple = mt != NULL && strcmp(mt, "multiple") == 0, spans = 0, r, round;
    tc_sem_t **sems = calloc((size_t)tt_size, sizeof(*sems));
    tc_memchan_t *mch = NULL;
    tc_chan_ctx_t *ctx;
    ring_t g;

    for (r = 0; r < tt_size; r++) {
        spans |= other_node(r);
    }
    if (spans && !multiple) {
        CHECK_EQ(tc_chan_ctx_create(NULL, &ctx), TC_ERR_STATE);
        CHECK_STR_CONTAINS(tc_last_error(), "MPI_THREAD_MULTIPLE");
        CHECK_STR_CONTAINS(tc_last_error(), "TCOLL_MPI_THREAD=multiple");
        free(sems);
        return;
    }
    CHECK_OK(tc_chan_ctx_create(NULL, &ctx));
    for (r = 0; r < tt_size; r++) {
        if (r != tt_rank) {
            CHECK_OK(tc_sem_create(ctx, r, 0, &sems[r]));
        }
    }
    for (round = 0; round < 3; round++) { /* every rank signals every other */
        for (r = 0; r < tt_size; r++) {
            if (r != tt_rank) {
                CHECK_OK(tc_sem_signal(sems[r]));
            }
        }
        for (r = 0; r < tt_size; r++) {
            if (r != tt_rank) {
                CHECK_OK(tc_sem_wait(sems[r], 30 * SEC));
            }
        }
    }
    barrier();
    for (r = 0; r < tt_size; r++) {
        if (r != tt_rank) {
            CHECK_EQ(tc_sem_poll(sems[r]), 0); /* exactly 3 each */
            tc_sem_destroy(sems[r]);
        }
    }
    free(sems);
    barrier();
    CHECK_OK(tc_chan_ctx_destroy(ctx));
    ring_open(&g, 1);
    if (tt_size > 1 && other_node(right())) {
        CHECK_EQ(tc_memchan_create(g.data_r, g.mem, g.rmems[right()], &mch), TC_ERR_ARG);
        CHECK_STR_CONTAINS(tc_last_error(), "another node");
    }
    ring_close(&g);
}

/* Overlapping puts complete in order: a large put and then a small one
 * (inline in one message across nodes) into the same place; the small
 * one's bytes must win, the rest be the large one's. */
TC_CASE(overlapping_puts)
{
    enum { BIG = 300000, SMALL = 100 };
    ring_t g;
    tc_portchan_t *ch;
    uint64_t i;
    int k;

    ring_open(&g, 0);
    if (tt_size > 1) {
        CHECK_OK(tc_portchan_create(g.data_r, g.mem, g.rmems[right()], &ch));
        for (k = 0; k < 4; k++) {
            fill_send(&g, 2 * k, 0, BIG);
            fill_send(&g, 2 * k + 1, BIG, SMALL);
            CHECK_OK(tc_portchan_put(ch, REGION / 2, 0, BIG));
            CHECK_OK(tc_portchan_put_with_signal(ch, REGION / 2 + 7, BIG, SMALL));
            CHECK_OK(tc_sem_wait(g.data_l, 30 * SEC));
            for (i = 0; i < BIG; i++) {
                unsigned char want = i >= 7 && i < 7 + SMALL
                                         ? pattern(left(), 2 * k + 1, BIG + i - 7)
                                         : pattern(left(), 2 * k, i);
                CHECK_EQ((unsigned char)g.buf[REGION / 2 + i], want);
            }
            CHECK_OK(tc_sem_signal(g.ack_l));
            CHECK_OK(tc_sem_wait(g.ack_r, 30 * SEC));
        }
        CHECK_OK(tc_portchan_flush(ch, 30 * SEC));
        CHECK_OK(tc_portchan_destroy(ch));
    }
    ring_close(&g);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
