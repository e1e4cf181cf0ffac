/*
 * test_coll_ranks.c - the threads-as-ranks harness of the collective tests
 * (test_coll_ranks.h) and its fake transport. Each (network, src, dst) has
 * a channel: a queue of messages under a mutex. A buffered send copies its
 * bytes into a message it queues and is done at once; a rendezvous send
 * queues a message that points at its own buffer, kept in the transfer's
 * inline state, and is done once the receiver set its `taken` flag. A
 * receive is done once it took the next message of its channel. Each rank
 * appends to its own call log only, and the logs are read after the
 * threads are joined.
 */
#define _GNU_SOURCE
#include "test_coll_ranks.h"

#include "check.h"
#include "reduce/reduce.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef struct msg {
    struct msg *next;
    size_t len;
    const unsigned char *data;
    /* Rendezvous: the sender's flag, set once the data is copied; NULL for
     * a buffered message (freed by the receiver, data after the header). */
    atomic_int *taken;
} msg_t;

/* A rendezvous send's state, in its tc_xfer_t. */
typedef struct {
    msg_t m;
    atomic_int taken;
} rdv_t;

_Static_assert(sizeof(rdv_t) <= TC_XFER_STATE_BYTES, "rdv_t fits a transfer's state");

typedef struct {
    pthread_mutex_t mu;
    msg_t *head, *tail;
} chan_t;

static chan_t chans[COLL_NNETS][COLL_MAXN][COLL_MAXN]; /* [net][src][dst] */
static pthread_once_t chans_once = PTHREAD_ONCE_INIT;

typedef struct {
    size_t sbytes, rbytes;
    int dst, src;
} call_t;

typedef struct {
    call_t *calls;
    size_t n, cap;
} call_log_t;

static call_log_t call_logs[COLL_MAXN];

typedef struct {
    void (*fn)(tc_transport_t *t, void *arg);
    void *arg;
    int rank, n;
} rank_t;

static void chans_init(void)
{
    int k, s, d;

    for (k = 0; k < COLL_NNETS; k++) {
        for (s = 0; s < COLL_MAXN; s++) {
            for (d = 0; d < COLL_MAXN; d++) {
                pthread_mutex_init(&chans[k][s][d].mu, NULL);
            }
        }
    }
}

static rdv_t *rdv_of(tc_xfer_t *x)
{
    return (rdv_t *)(void *)x->state.bytes;
}

static int fake_reaches(tc_transport_t *t, int peer)
{
    const coll_fake_t *f = t->impl;

    return peer >= 0 && peer < t->size && (f->reach >> peer & 1u);
}

static tc_status_t fake_post(tc_transport_t *t, tc_xfer_t *x)
{
    coll_fake_t *f = t->impl;
    chan_t *c;
    msg_t *m;

    CHECK(!x->done && x->bytes > 0 && x->peer >= 0); /* tc__xfer_post's job */
    if (!fake_reaches(t, x->peer)) {
        snprintf(t->err, sizeof(t->err), "fake network %d: rank %d does not reach rank %d", f->net,
                 t->rank, x->peer);
        return TC_ERR_TRANSPORT;
    }
    f->nposted++;
    if (x->dir == TC_XFER_RECV) {
        return TC_OK; /* the test takes the message */
    }
    if (f->rendezvous) {
        rdv_t *r = rdv_of(x);
        atomic_init(&r->taken, 0);
        r->m = (msg_t){.len = x->bytes, .data = x->buf, .taken = &r->taken};
        m = &r->m;
    } else {
        m = malloc(sizeof(*m) + x->bytes);
        CHECK(m != NULL);
        *m = (msg_t){.len = x->bytes, .data = (unsigned char *)(m + 1)};
        memcpy(m + 1, x->buf, x->bytes);
        x->done = 1;
        f->nposted--;
    }
    c = &chans[f->net][t->rank][x->peer];
    pthread_mutex_lock(&c->mu);
    if (c->tail) {
        c->tail->next = m;
    } else {
        c->head = m;
    }
    c->tail = m;
    pthread_mutex_unlock(&c->mu);
    return TC_OK;
}

/* Takes the next message from src to rank on net, or NULL. */
static msg_t *chan_pop(int net, int src, int rank)
{
    chan_t *c = &chans[net][src][rank];
    msg_t *m;

    pthread_mutex_lock(&c->mu);
    m = c->head;
    if (m != NULL) {
        c->head = m->next;
        if (c->head == NULL) {
            c->tail = NULL;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return m;
}

static tc_status_t fake_test(tc_transport_t *t, tc_xfer_t *const *xs, int n)
{
    coll_fake_t *f = t->impl;
    int i;

    for (i = 0; i < n; i++) {
        tc_xfer_t *x = xs[i];
        msg_t *m;
        if (x->done) {
            continue;
        }
        if (x->dir == TC_XFER_SEND) {
            /* acquire: pairs with the receiver's release store below; the
             * receiver has finished reading the buffer (and the message in
             * this transfer) before the send is done */
            x->done = atomic_load_explicit(&rdv_of(x)->taken, memory_order_acquire);
        } else if ((m = chan_pop(f->net, x->peer, t->rank)) != NULL) {
            CHECK_MSG(m->len == x->bytes,
                      "fake network %d: rank %d receives %zu bytes from "
                      "%d, which sent %zu",
                      f->net, t->rank, x->bytes, x->peer, m->len);
            memcpy(x->buf, m->data, x->bytes);
            if (m->taken == NULL) {
                free(m);
            } else {
                /* release: the copy above is complete before the sender
                 * sees its send done and reuses or frees the buffer; pairs
                 * with the acquire load above. m is the sender's and is
                 * not touched after this. */
                atomic_store_explicit(m->taken, 1, memory_order_release);
            }
            x->done = 1;
        }
        f->nposted -= x->done;
    }
    return TC_OK;
}

/* A receive has nothing queued. A rendezvous send still queued is unlinked;
 * one a receiver has already taken is waited for (the receiver is copying
 * from it and sets taken at once). */
static void fake_abandon(tc_transport_t *t, tc_xfer_t *x)
{
    coll_fake_t *f = t->impl;

    f->nposted--;
    if (x->dir == TC_XFER_SEND) {
        rdv_t *r = rdv_of(x);
        chan_t *c = &chans[f->net][t->rank][x->peer];
        msg_t **pp, *prev = NULL;
        int found = 0;
        pthread_mutex_lock(&c->mu);
        for (pp = &c->head; *pp != NULL; prev = *pp, pp = &(*pp)->next) {
            if (*pp == &r->m) {
                *pp = r->m.next;
                if (c->tail == &r->m) {
                    c->tail = prev;
                }
                found = 1;
                break;
            }
        }
        pthread_mutex_unlock(&c->mu);
        /* acquire: as in fake_test */
        while (!found && !atomic_load_explicit(&r->taken, memory_order_acquire)) {
            sched_yield();
        }
    }
}

static void fake_close(tc_transport_t *t)
{
    const coll_fake_t *f = t->impl;

    CHECK_MSG(f->nposted == 0, "fake network %d: rank %d closes with %d transfers posted", f->net,
              t->rank, f->nposted);
}

void coll_fake_open(tc_transport_t *t, coll_fake_t *impl, int rank, int n, int net, unsigned reach,
                    int rendezvous)
{
    CHECK(net >= 0 && net < COLL_NNETS && n >= 1 && n <= COLL_MAXN);
    pthread_once(&chans_once, chans_init);
    /* spin a little, then yield: the ranks share a few cores */
    tc__transport_init(t, rank, n, 16, 50);
    *impl = (coll_fake_t){.net = net, .reach = reach, .rendezvous = rendezvous};
    t->reaches = fake_reaches;
    t->post = fake_post;
    t->test = fake_test;
    t->abandon = fake_abandon;
    t->close = fake_close;
    t->impl = impl;
}

static void log_call(int rank, size_t sbytes, int dst, size_t rbytes, int src)
{
    call_log_t *l = &call_logs[rank];

    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->calls = realloc(l->calls, l->cap * sizeof(*l->calls));
        CHECK(l->calls != NULL);
    }
    l->calls[l->n++] = (call_t){.sbytes = sbytes, .rbytes = rbytes, .dst = dst, .src = src};
}

/* coll_run's sendrecv: logs the call, then the generic exchange. */
static tc_status_t logged_sendrecv(tc_transport_t *t, const void *sbuf, size_t sbytes, int dst,
                                   void *rbuf, size_t rbytes, int src)
{
    log_call(t->rank, sbytes, dst, rbytes, src);
    return tc__transport_sendrecv(t, sbuf, sbytes, dst, rbuf, rbytes, src);
}

static void *rank_main(void *arg)
{
    rank_t *rk = arg;
    tc_transport_t t;
    coll_fake_t f;

    coll_fake_open(&t, &f, rk->rank, rk->n, 0, (1u << rk->n) - 1, 0);
    t.sendrecv = logged_sendrecv;
    rk->fn(&t, rk->arg);
    tc__transport_close(&t);
    return NULL;
}

void coll_run(int n, void (*fn)(tc_transport_t *t, void *arg), void *args, size_t arg_size)
{
    pthread_t th[COLL_MAXN];
    rank_t ranks[COLL_MAXN];
    int r;

    CHECK(n >= 1 && n <= COLL_MAXN);
    pthread_once(&chans_once, chans_init);
    for (r = 0; r < n; r++) {
        call_logs[r].n = 0;
        ranks[r] =
            (rank_t){.fn = fn, .arg = (char *)args + (size_t)r * arg_size, .rank = r, .n = n};
    }
    for (r = 0; r < n; r++) {
        CHECK_EQ(pthread_create(&th[r], NULL, rank_main, &ranks[r]), 0);
    }
    for (r = 0; r < n; r++) {
        pthread_join(th[r], NULL);
    }
    coll_check_quiet();
}

void coll_check_quiet(void)
{
    int k, s, d;

    pthread_once(&chans_once, chans_init);
    pthread_once(&chans_once, chans_init);
    for (k = 0; k < COLL_NNETS; k++) {
        for (s = 0; s < COLL_MAXN; s++) {
            for (d = 0; d < COLL_MAXN; d++) {
                chan_t *c = &chans[k][s][d];
                pthread_mutex_lock(&c->mu);
                CHECK_MSG(c->head == NULL,
                          "a message from rank %d to %d on fake network %d "
                          "was never received",
                          s, d, k);
                pthread_mutex_unlock(&c->mu);
            }
        }
    }
}

size_t coll_check_calls_paired(int n)
{
    size_t c, calls = call_logs[0].n;
    int r;

    for (r = 0; r < n; r++) {
        CHECK_MSG(call_logs[r].n == calls, "n=%d: rank %d made %zu sendrecv calls, rank 0 %zu", n,
                  r, call_logs[r].n, calls);
    }
    for (r = 0; r < n; r++) {
        for (c = 0; c < calls; c++) {
            const call_t *a = &call_logs[r].calls[c];
            if (a->dst >= 0 && a->sbytes > 0) {
                const call_t *b = &call_logs[a->dst].calls[c];
                CHECK_MSG(b->src == r && b->rbytes == a->sbytes,
                          "n=%d call %zu: rank %d sends "
                          "%zu bytes to %d, which receives %zu from %d",
                          n, c, r, a->sbytes, a->dst, b->rbytes, b->src);
            }
        }
    }
    return calls;
}

double coll_input(int r, size_t i, tc_op_t op)
{
    if (op == TC_PROD) {
        return (i + (size_t)r) % 5 == 0 ? 2.0 : 1.0;
    }
    return (double)((int)((i * 7 + (size_t)r * 13) % 23) - 11);
}

void coll_store(tc_dtype_t dt, void *buf, size_t i, double v)
{
    switch (dt) {
    case TC_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case TC_INT16: ((int16_t *)buf)[i] = (int16_t)v; break;
    case TC_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case TC_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case TC_FLOAT64: ((double *)buf)[i] = v; break;
    case TC_FLOAT16: ((uint16_t *)buf)[i] = tc__f32_to_f16((float)v); break;
    case TC_BFLOAT16: ((uint16_t *)buf)[i] = tc__f32_to_bf16((float)v); break;
    default: CHECK(0);
    }
}

double coll_load(tc_dtype_t dt, const void *buf, size_t i)
{
    switch (dt) {
    case TC_INT8: return ((const int8_t *)buf)[i];
    case TC_INT16: return ((const int16_t *)buf)[i];
    case TC_INT32: return ((const int32_t *)buf)[i];
    case TC_FLOAT32: return ((const float *)buf)[i];
    case TC_FLOAT64: return ((const double *)buf)[i];
    case TC_FLOAT16: return tc__f16_to_f32(((const uint16_t *)buf)[i]);
    case TC_BFLOAT16: return tc__bf16_to_f32(((const uint16_t *)buf)[i]);
    default: CHECK(0);
    }
    return 0;
}

/* The reduction of coll_input(0..n-1, i, op) in double; TC_AVG gives the
 * sum, not yet divided. */
static double naive_reduce(tc_op_t op, int n, size_t i)
{
    double want = op == TC_PROD ? 1 : (op == TC_MIN ? 1e300 : (op == TC_MAX ? -1e300 : 0));
    int r;

    for (r = 0; r < n; r++) {
        double v = coll_input(r, i, op);
        if (op == TC_SUM || op == TC_AVG)
            want += v;
        if (op == TC_PROD)
            want *= v;
        if (op == TC_MIN)
            want = v < want ? v : want;
        if (op == TC_MAX)
            want = v > want ? v : want;
    }
    return want;
}

void coll_check_value(tc_dtype_t dt, tc_op_t op, int n, double got, size_t i, const char *what,
                      size_t count)
{
    double want = naive_reduce(op, n, i);

    if (op == TC_AVG) {
        /* one rounding of the quotient: half an ulp of the dtype */
        double tol = (want < 0 ? -want : want) / n * (dt == TC_BFLOAT16 ? 1.0 / 256 : 1.0 / 2048);
        CHECK_MSG(got >= want / n - tol - 1e-12 && got <= want / n + tol + 1e-12,
                  "%s n=%d count=%zu %s avg [%zu]: got %g want %g", what, n, count,
                  tc_dtype_name(dt), i, got, want / n);
    } else {
        CHECK_MSG(got == want, "%s n=%d count=%zu %s %s [%zu]: got %g want %g", what, n, count,
                  tc_dtype_name(dt), tc_op_name(op), i, got, want);
    }
}

void coll_gather_make(coll_gather_t *g, int n, size_t unit)
{
    size_t i;
    int r;

    g->total = 0;
    for (r = 0; r < n; r++) {
        g->bytes[r] = (size_t)((r * 37) % 11) * unit; /* some ranks contribute nothing */
        g->displs[r] = g->total;
        g->total += g->bytes[r];
    }
    g->want = malloc(g->total + 1);
    CHECK(g->want != NULL);
    for (i = 0; i < g->total; i++) {
        g->want[i] = (unsigned char)(i * 31 + 7);
    }
}

void *coll_gather_input(const coll_gather_t *g, int r)
{
    char *buf = calloc(1, g->total + 1);

    CHECK(buf != NULL);
    memcpy(buf + g->displs[r], g->want + g->displs[r], g->bytes[r]);
    return buf;
}

void coll_gather_free(coll_gather_t *g)
{
    free(g->want);
    g->want = NULL;
}

/* Byte k of the block rank s sends rank d. */
static unsigned char a2a_byte(int s, int d, size_t k)
{
    return (unsigned char)(s * 31 + d * 17 + k * 7 + 1);
}

void coll_a2a_make(coll_a2a_t *a, int n, size_t unit)
{
    size_t k;
    int r, i;

    a->n = n;
    for (r = 0; r < n; r++) {
        size_t soff = 0, roff = 0;
        for (i = 0; i < n; i++) {
            a->sb[r][i] = (size_t)((r * 5 + i * 3) % 7) * unit;
            a->sd[r][i] = soff;
            soff += a->sb[r][i];
            a->rb[r][i] = (size_t)((i * 5 + r * 3) % 7) * unit;
            a->rd[r][i] = roff;
            roff += a->rb[r][i];
        }
        a->rtotal[r] = roff;
        a->send[r] = malloc(soff + 1);
        CHECK(a->send[r] != NULL);
        for (i = 0; i < n; i++) {
            for (k = 0; k < a->sb[r][i]; k++) {
                a->send[r][a->sd[r][i] + k] = a2a_byte(r, i, k);
            }
        }
    }
}

void coll_a2a_check(const coll_a2a_t *a, int r, const unsigned char *got, const char *what)
{
    size_t k;
    int i;

    for (i = 0; i < a->n; i++) {
        for (k = 0; k < a->rb[r][i]; k++) {
            CHECK_MSG(got[a->rd[r][i] + k] == a2a_byte(i, r, k),
                      "%s n=%d: rank %d, byte %zu "
                      "of the block from %d",
                      what, a->n, r, k, i);
        }
    }
}

void coll_a2a_free(coll_a2a_t *a)
{
    int r;

    for (r = 0; r < a->n; r++) {
        free(a->send[r]);
        a->send[r] = NULL;
    }
}
