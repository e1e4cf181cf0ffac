/*
 * test_coll_ranks.c - the threads-as-ranks harness of the collective tests
 * (test_coll_ranks.h). Each (src, dst) pair of ranks has a channel: a send
 * copies the bytes into a message queued there and never waits; a receive
 * waits for the next message and checks its size. Each rank appends to its
 * own call log only, and the logs are read after the threads are joined.
 */
#define _GNU_SOURCE
#include "test_coll_ranks.h"

#include "check.h"
#include "reduce/reduce.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct msg {
    struct msg *next;
    size_t len;
    unsigned char data[];
} msg_t;

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    msg_t *head, *tail;
} chan_t;

static chan_t chans[COLL_MAXN][COLL_MAXN]; /* [src][dst] */
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
    int s, d;

    for (s = 0; s < COLL_MAXN; s++) {
        for (d = 0; d < COLL_MAXN; d++) {
            pthread_mutex_init(&chans[s][d].mu, NULL);
            pthread_cond_init(&chans[s][d].cv, NULL);
        }
    }
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

static tc_status_t fake_sendrecv(tc_transport_t *t, const void *sbuf, size_t sbytes, int dst,
                                 void *rbuf, size_t rbytes, int src)
{
    log_call(t->rank, sbytes, dst, rbytes, src);
    if (dst >= 0 && sbytes > 0) {
        chan_t *c = &chans[t->rank][dst];
        msg_t *m = malloc(sizeof(*m) + sbytes);
        CHECK(m != NULL);
        m->next = NULL;
        m->len = sbytes;
        memcpy(m->data, sbuf, sbytes);
        pthread_mutex_lock(&c->mu);
        if (c->tail) {
            c->tail->next = m;
        } else {
            c->head = m;
        }
        c->tail = m;
        pthread_cond_signal(&c->cv);
        pthread_mutex_unlock(&c->mu);
    }
    if (src >= 0 && rbytes > 0) {
        chan_t *c = &chans[src][t->rank];
        msg_t *m;
        pthread_mutex_lock(&c->mu);
        while (c->head == NULL) {
            pthread_cond_wait(&c->cv, &c->mu);
        }
        m = c->head;
        c->head = m->next;
        if (c->head == NULL) {
            c->tail = NULL;
        }
        pthread_mutex_unlock(&c->mu);
        CHECK_EQ(m->len, rbytes);
        memcpy(rbuf, m->data, rbytes);
        free(m);
    }
    return TC_OK;
}

static void *rank_main(void *arg)
{
    rank_t *rk = arg;
    tc_transport_t t = {0};

    t.rank = rk->rank;
    t.size = rk->n;
    t.sendrecv = fake_sendrecv;
    rk->fn(&t, rk->arg);
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
        ranks[r] = (rank_t){.fn = fn, .arg = (char *)args + (size_t)r * arg_size, .rank = r,
                            .n = n};
    }
    for (r = 0; r < n; r++) {
        CHECK_EQ(pthread_create(&th[r], NULL, rank_main, &ranks[r]), 0);
    }
    for (r = 0; r < n; r++) {
        pthread_join(th[r], NULL);
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
                CHECK_MSG(b->src == r && b->rbytes == a->sbytes, "n=%d call %zu: rank %d sends "
                          "%zu bytes to %d, which receives %zu from %d", n, c, r, a->sbytes,
                          a->dst, b->rbytes, b->src);
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
        if (op == TC_SUM || op == TC_AVG) want += v;
        if (op == TC_PROD) want *= v;
        if (op == TC_MIN) want = v < want ? v : want;
        if (op == TC_MAX) want = v > want ? v : want;
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
