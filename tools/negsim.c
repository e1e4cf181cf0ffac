/*
 * negsim.c - tcoll-negsim: the engine's negotiation state machine (the same
 * code, src/neg/neg*.c) for N simulated ranks in one process.
 *
 * Every rank is a tc_neg_t. Messages are encoded and decoded exactly as on
 * the wire and delivered after a random delay, in order between any two
 * ranks (as MPI does). Each step every rank submits the same T tensors (the
 * ResNet-50 parameter sizes, cycled) in its own random order at random
 * times, and starts its next step once all of them have come out. The
 * program checks that every rank got the same items in the same order, that
 * eager results are exact, and reports the control traffic of the steps
 * after the first two (every name cached: the steady state).
 *
 * Never touches MPI; time is simulated, so a run is reproducible by seed.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neg/neg.h"
#include "wire/wire.h"

static const int k_sizes[] = {
    9408, 64,     64,    4096, 64,    64,    36864, 64,     64,    16384, 256,     256,   16384,
    256,  256,    16384, 64,   64,    36864, 64,    64,     16384, 256,   256,     32768, 128,
    128,  147456, 128,   128,  65536, 512,   512,   131072, 512,   512,   2048000, 1000};
#define NSIZES (sizeof(k_sizes) / sizeof(k_sizes[0]))
#define EAGER_BYTES 16384 /* TCOLL_EAGER_BYTES's default */

typedef struct event {
    uint64_t t, order;
    int kind; /* 0 message, 1 submission, 2 tick */
    int dst, src, tag;
    uint8_t *data;
    size_t len;
    int tensor;
} event_t;

typedef struct {
    event_t *v;
    size_t n, cap;
} heap_t;

typedef struct {
    tc_neg_t *neg;
    int step, left; /* tensors of this step not out yet */
    int *perm;
    float *input;          /* every tensor's input: rank + 1 */
    uint64_t hash, nitems; /* of the item sequence */
    uint64_t cur_cycle, cur_msgs, cur_bytes;
    uint64_t max_msgs, max_bytes; /* the most in one cycle (this rank's view) */
    uint64_t msgs, bytes;         /* in the steady state */
    uint64_t next_tick;
} simrank_t;

static struct {
    int ranks, tensors, steps, json, verbose;
    uint64_t seed, rng;
    heap_t heap;
    uint64_t order;
    simrank_t *r;
    uint64_t *pair_last; /* [src * ranks + dst]: last delivery time */
    tc_wire_request_t *reqs;
    char **names;
    uint64_t measure_from_cycle, measured; /* rank 0's cycles when steady state began */
    int measuring, failures, bad_results;
    uint64_t eager_done, eager_run; /* steady state: small allreduces done eagerly, or run */
    uint64_t msgs_total, bytes_total;
    uint64_t now;
} S;

static uint64_t rnd(void)
{
    uint64_t x = S.rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    S.rng = x;
    return x;
}

static int before(const event_t *a, const event_t *b)
{
    return a->t < b->t || (a->t == b->t && a->order < b->order);
}

static void push(event_t e)
{
    size_t i;

    if (S.heap.n == S.heap.cap) {
        S.heap.cap = S.heap.cap ? S.heap.cap * 2 : 1024;
        S.heap.v = realloc(S.heap.v, S.heap.cap * sizeof(event_t));
        if (S.heap.v == NULL) {
            fprintf(stderr, "tcoll-negsim: out of memory\n");
            exit(2);
        }
    }
    e.order = S.order++;
    i = S.heap.n++;
    while (i > 0 && before(&e, &S.heap.v[(i - 1) / 2])) {
        S.heap.v[i] = S.heap.v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    S.heap.v[i] = e;
}

static event_t pop(void)
{
    event_t top = S.heap.v[0], last = S.heap.v[--S.heap.n];
    size_t i = 0;

    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= S.heap.n) {
            break;
        }
        if (c + 1 < S.heap.n && before(&S.heap.v[c + 1], &S.heap.v[c])) {
            c++;
        }
        if (!before(&S.heap.v[c], &last)) {
            break;
        }
        S.heap.v[i] = S.heap.v[c];
        i = c;
    }
    if (S.heap.n > 0) {
        S.heap.v[i] = last;
    }
    return top;
}

/* Counts one message of len bytes for rank q in the cycle it is in. */
static void count(int q, size_t len)
{
    simrank_t *r = &S.r[q];
    uint64_t c = tc__neg_cycles(r->neg);

    if (c != r->cur_cycle) {
        if (S.measuring) {
            r->max_msgs = r->cur_msgs > r->max_msgs ? r->cur_msgs : r->max_msgs;
            r->max_bytes = r->cur_bytes > r->max_bytes ? r->cur_bytes : r->max_bytes;
        }
        r->cur_cycle = c;
        r->cur_msgs = r->cur_bytes = 0;
    }
    r->cur_msgs++;
    r->cur_bytes += len;
    if (S.measuring) {
        r->msgs++;
        r->bytes += len;
        S.msgs_total++;
        S.bytes_total += len;
    }
}

static void submit_step(int q, uint64_t t0);

/* Posts rank q's sends and takes its items. */
static void drain(int q)
{
    simrank_t *r = &S.r[q];
    size_t ns, ni, i;
    int d;
    tc_neg_send_t *sends = tc__neg_sends(r->neg, &ns);
    tc_neg_item_t *items = tc__neg_items(r->neg, &ni);

    for (i = 0; i < ns; i++) {
        for (d = 0; d < sends[i].ndst; d++) {
            int dst = sends[i].dst[d];
            uint64_t *last = &S.pair_last[(size_t)q * (size_t)S.ranks + (size_t)dst];
            uint64_t t = S.now + 2000 + rnd() % 20000; /* 2-22 us */
            event_t e = {0};
            if (t <= *last) {
                t = *last + 1; /* in order between two ranks */
            }
            *last = t;
            e.t = t;
            e.kind = 0;
            e.src = q;
            e.dst = dst;
            e.tag = sends[i].tag;
            e.len = sends[i].buf.len;
            e.data = malloc(e.len);
            if (e.data == NULL) {
                fprintf(stderr, "tcoll-negsim: out of memory\n");
                exit(2);
            }
            memcpy(e.data, sends[i].buf.data, e.len);
            count(q, e.len);
            push(e);
        }
    }
    for (i = 0; i < ni; i++) {
        const tc_neg_item_t *it = &items[i];
        int tensor = (int)(intptr_t)it->req;
        size_t k;
        r->hash = (r->hash ^ (uint64_t)(tensor * 4 + (int)it->action)) * 1099511628211ull;
        r->nitems++;
        if (it->action == TC_NEG_FAIL) {
            if (S.failures++ < 5) {
                fprintf(stderr, "tcoll-negsim: rank %d: tensor %d failed: %s\n", q, tensor,
                        it->resp.text);
            }
        } else if (it->action == TC_NEG_RUN && S.measuring &&
                   (size_t)k_sizes[(size_t)tensor % NSIZES] * sizeof(float) <= EAGER_BYTES) {
            S.eager_run++; /* its input waited past the eager tries: run as a collective */
        } else if (it->action == TC_NEG_DONE) {
            const float *res = it->result;
            S.eager_done += S.measuring != 0;
            float want = (float)S.ranks * (float)(S.ranks + 1) / 2.0f;
            for (k = 0; k < it->result_len / sizeof(float); k++) {
                if (res[k] != want) {
                    S.bad_results++;
                    break;
                }
            }
        }
        if (--r->left == 0) {
            r->step++;
            if (r->step < S.steps) {
                submit_step(q, S.now + 10000 + rnd() % 100000);
            }
        }
    }
    tc__neg_clear(r->neg);
}

static void submit_step(int q, uint64_t t0)
{
    simrank_t *r = &S.r[q];
    int i;

    for (i = S.tensors - 1; i > 0; i--) {
        int j = (int)(rnd() % (uint64_t)(i + 1)), x = r->perm[i];
        r->perm[i] = r->perm[j];
        r->perm[j] = x;
    }
    r->left = S.tensors;
    for (i = 0; i < S.tensors; i++) {
        event_t e = {0};
        e.t = t0 + (uint64_t)i * (500 + rnd() % 3000); /* a backward pass: 0.5-3.5 us apart */
        e.kind = 1;
        e.dst = q;
        e.tensor = r->perm[i];
        push(e);
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: tcoll-negsim --ranks N --tensors T --steps S [--seed X] [--json]\n");
    exit(2);
}

static int setup(void)
{
    tc_neg_params_t p = {0};
    int q, i;

    S.r = calloc((size_t)S.ranks, sizeof(*S.r));
    S.pair_last = calloc((size_t)S.ranks * (size_t)S.ranks, sizeof(uint64_t));
    S.reqs = calloc((size_t)S.tensors, sizeof(*S.reqs));
    S.names = calloc((size_t)S.tensors, sizeof(char *));
    if (S.r == NULL || S.pair_last == NULL || S.reqs == NULL || S.names == NULL) {
        return -1;
    }
    for (i = 0; i < S.tensors; i++) {
        if (asprintf(&S.names[i], "grad/%d", i) < 0) {
            return -1;
        }
        S.reqs[i].name = S.names[i];
        S.reqs[i].name_len = (uint32_t)strlen(S.names[i]);
        S.reqs[i].kind = TC_KIND_ALLREDUCE;
        S.reqs[i].dtype = TC_FLOAT32;
        S.reqs[i].op = TC_SUM;
        S.reqs[i].ndim = 1;
        S.reqs[i].shape[0] = k_sizes[(size_t)i % NSIZES];
    }
    p.size = S.ranks;
    p.cache_capacity = 1024;
    p.eager_bytes = EAGER_BYTES;
    p.peer_timeout_ns = 60ull * 1000000000ull;
    p.probe_grace_ns = 2ull * 1000000000ull;
    for (q = 0; q < S.ranks; q++) {
        simrank_t *r = &S.r[q];
        p.rank = q;
        if (tc__neg_create(&p, &r->neg) != TC_OK) {
            return -1;
        }
        r->perm = malloc((size_t)S.tensors * sizeof(int));
        r->input = malloc(4096 * sizeof(float));
        if (r->perm == NULL || r->input == NULL) {
            return -1;
        }
        for (i = 0; i < S.tensors; i++) {
            r->perm[i] = i;
        }
        for (i = 0; i < 4096; i++) {
            r->input[i] = (float)(q + 1);
        }
        r->hash = 14695981039346656037ull;
        submit_step(q, rnd() % 50000);
    }
    return 0;
}

static void deliver(const event_t *e)
{
    simrank_t *r = &S.r[e->dst];
    tc_wire_msg_t msg;
    char err[256];

    count(e->dst, e->len);
    if (tc__wire_decode(e->data, e->len, &msg, err, sizeof(err)) != TC_OK) {
        fprintf(stderr, "tcoll-negsim: undecodable message from rank %d: %s\n", e->src, err);
        exit(1);
    }
    tc__neg_receive(r->neg, e->src, e->tag, &msg, S.now);
    tc__wire_msg_free(&msg);
}

static void tick(int q)
{
    simrank_t *r = &S.r[q];

    tc__neg_step(r->neg, S.now);
    drain(q);
    if (tc__neg_state(r->neg) == TC_NEG_FAILED) {
        const char *why;
        tc__neg_status(r->neg, &why);
        fprintf(stderr, "tcoll-negsim: rank %d failed: %s\n", q, why);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"ranks", required_argument, NULL, 'n'},
                                         {"tensors", required_argument, NULL, 't'},
                                         {"steps", required_argument, NULL, 's'},
                                         {"seed", required_argument, NULL, 'x'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    uint64_t steady_steps, cycles, peak_msgs = 0, peak_bytes = 0;
    double max_msgs = 0, max_bytes = 0, r0_msgs, r0_bytes, eager_share;
    int c, q, agree = 1, steady_from;

    S.ranks = 8;
    S.tensors = 161;
    S.steps = 20;
    S.seed = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end = NULL;
        long v = c == 'j' || c == 'h' ? 0 : strtol(optarg, &end, 10);
        if (end != NULL && (*end != '\0' || v < 1)) {
            usage();
        }
        switch (c) {
        case 'n': S.ranks = v > (1 << 16) ? 0 : (int)v; break;
        case 't': S.tensors = v > (1 << 16) ? 0 : (int)v; break;
        case 's': S.steps = (int)v; break;
        case 'x': S.seed = (uint64_t)v; break;
        case 'j': S.json = 1; break;
        default: usage();
        }
    }
    if (S.ranks < 1 || S.tensors < 1 || S.steps < 1 || optind != argc) {
        usage();
    }
    S.rng = S.seed * 0x9E3779B97F4A7C15ull + 1;
    if (setup() != 0) {
        fprintf(stderr, "tcoll-negsim: out of memory\n");
        return 2;
    }
    steady_from = S.steps > 2 ? 2 : S.steps - 1;
    if (steady_from == 0) {
        S.measuring = 1;
    }
    while (S.heap.n > 0) {
        event_t e = pop();
        S.now = e.t;
        if (!S.measuring && S.r[0].step >= steady_from) {
            S.measuring = 1;
            S.measure_from_cycle = tc__neg_cycles(S.r[0].neg);
            for (q = 0; q < S.ranks; q++) { /* what came before is not steady state */
                S.r[q].cur_msgs = S.r[q].cur_bytes = 0;
            }
        }
        if (e.kind == 0) {
            deliver(&e);
            free(e.data);
        } else if (e.kind == 1) {
            tc_wire_request_t w = S.reqs[e.tensor];
            if (tc__neg_submit(S.r[e.dst].neg, &w, (void *)(intptr_t)e.tensor, S.r[e.dst].input,
                               NULL) != TC_OK) {
                fprintf(stderr, "tcoll-negsim: rank %d: submission failed\n", e.dst);
                return 1;
            }
        }
        tick(e.dst);
    }
    for (q = 0; q < S.ranks; q++) {
        simrank_t *r = &S.r[q];
        count(q, 0); /* fold the last cycle in */
        r->cur_msgs--;
        r->max_msgs = r->cur_msgs > r->max_msgs ? r->cur_msgs : r->max_msgs;
        r->max_bytes = r->cur_bytes > r->max_bytes ? r->cur_bytes : r->max_bytes;
        if (r->step != S.steps || r->hash != S.r[0].hash || r->nitems != S.r[0].nitems) {
            agree = 0;
        }
        peak_msgs = r->max_msgs > peak_msgs ? r->max_msgs : peak_msgs;
        peak_bytes = r->max_bytes > peak_bytes ? r->max_bytes : peak_bytes;
    }
    if (S.failures > 0 || S.bad_results > 0) {
        agree = 0;
    }
    steady_steps = (uint64_t)(S.steps - steady_from);
    cycles = tc__neg_cycles(S.r[0].neg) - S.measure_from_cycle;
    for (q = 0; q < S.ranks && cycles > 0; q++) {
        double m = (double)S.r[q].msgs / (double)cycles, b = (double)S.r[q].bytes / (double)cycles;
        max_msgs = m > max_msgs ? m : max_msgs;
        max_bytes = b > max_bytes ? b : max_bytes;
    }
    r0_msgs = cycles > 0 ? (double)S.r[0].msgs / (double)cycles : 0;
    eager_share = S.eager_done + S.eager_run > 0
                      ? (double)S.eager_done / (double)(S.eager_done + S.eager_run)
                      : 0.0;
    r0_bytes = cycles > 0 ? (double)S.r[0].bytes / (double)cycles : 0;
    if (S.json) {
        printf("{\"ranks\": %d, \"tensors\": %d, \"steps\": %d, \"seed\": %" PRIu64
               ", \"cycles\": %" PRIu64 ", \"cycles_per_step\": %.1f"
               ", \"max_msgs_per_rank_per_cycle\": %.2f, \"max_bytes_per_rank_per_cycle\": %.0f"
               ", \"rank0_msgs_per_cycle\": %.2f, \"rank0_bytes_per_cycle\": %.0f"
               ", \"peak_msgs_per_rank_in_one_cycle\": %" PRIu64
               ", \"peak_bytes_per_rank_in_one_cycle\": %" PRIu64
               ", \"alltoall_msgs_per_rank_per_cycle\": %d, \"eager_share\": %.3f"
               ", \"order_agrees\": %s}\n",
               S.ranks, S.tensors, S.steps, S.seed, cycles,
               steady_steps ? (double)cycles / (double)steady_steps : 0.0, max_msgs, max_bytes,
               r0_msgs, r0_bytes, peak_msgs, peak_bytes, 2 * (S.ranks - 1), eager_share,
               agree ? "true" : "false");
    } else {
        printf("tcoll-negsim: %d ranks, %d tensors, %d steps (seed %" PRIu64 ")\n", S.ranks,
               S.tensors, S.steps, S.seed);
        printf("  steady state (steps %d..%d): %" PRIu64 " cycles, %.1f per step\n",
               steady_from + 1, S.steps, cycles,
               steady_steps ? (double)cycles / (double)steady_steps : 0.0);
        printf("  messages sent + received per cycle: most by one rank %.2f, rank 0 %.2f "
               "(all-to-all negotiation: %d); peak in one cycle %" PRIu64 "\n",
               max_msgs, r0_msgs, 2 * (S.ranks - 1), peak_msgs);
        printf("  bytes sent + received per cycle: most by one rank %.0f, rank 0 %.0f; peak in "
               "one cycle %" PRIu64 "\n",
               max_bytes, r0_bytes, peak_bytes);
        printf("  small allreduces completed eagerly (the rest ran as collectives): %.1f%%\n",
               100.0 * eager_share);
        printf("  every rank ran the same collectives in the same order: %s\n",
               agree ? "yes" : "NO");
    }
    for (q = 0; q < S.ranks; q++) {
        tc__neg_destroy(S.r[q].neg);
        free(S.r[q].perm);
        free(S.r[q].input);
    }
    for (q = 0; q < S.tensors; q++) {
        free(S.names[q]);
    }
    free(S.names);
    free(S.reqs);
    free(S.r);
    free(S.pair_last);
    free(S.heap.v);
    return agree ? 0 : 1;
}
