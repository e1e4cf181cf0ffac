/*
 * train_mlp.c - data-parallel training of a small neural network with tcoll.
 *
 * Every rank builds the same synthetic classification problem (a fixed-seed
 * "teacher" network labels Gaussian inputs with one of 4 classes) and the same
 * student network (16 inputs -> 32 tanh units -> 4-way softmax), then trains
 * it with plain SGD on its own shard of the rows (rank r owns rows r, r+size,
 * ...). After each backward pass the four gradients are averaged over the
 * ranks with tc_allreduce(TC_AVG): each is submitted, under its layer's name,
 * as soon as backpropagation has produced it (last layer first), so the
 * engine thread can reduce W2 while this thread still computes W1; the step
 * then waits for all four and applies the update. Because every rank starts
 * from the same weights and applies the same averaged gradients, all ranks
 * must end with bitwise-identical weights: the program checks that with a
 * tc_allgather of the weights and exits 1 if any rank differs.
 *
 * It uses only the public API in tcoll.h (tcoll initializes and finalizes MPI
 * itself) and never prints from ranks other than 0, except to report errors.
 * Every tcoll failure is reported with its status and message, after which
 * the rank calls tc_shutdown (which fails the other ranks' pending requests
 * instead of leaving them to hang) and exits with status 1.
 *
 *   mpirun -np 2 tcoll-train-mlp [--epochs N] [--batch N] [--lr X]
 *                                [--samples N] [--seed N]
 */
#define _POSIX_C_SOURCE 200809L

#include <tcoll.h>

#include "train_mlp_data.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The student's hidden layer (its inputs and classes: train_mlp_data.h). */
enum { N_HIDDEN = 32 };

/* The parameters, in one float array; each lives at a fixed offset. */
enum { P_W1, P_B1, P_W2, P_B2, N_PARAM };

typedef struct {
    const char *name; /* tensor name for the gradient allreduce */
    int ndim;
    int64_t shape[2];
    size_t offset; /* into model_t.w and model_t.g, in floats */
    size_t count;
} param_info_t;

static const param_info_t param_info[N_PARAM] = {
    [P_W1] = {"grad/W1", 2, {N_HIDDEN, N_IN}, 0, N_HIDDEN *N_IN},
    [P_B1] = {"grad/b1", 1, {N_HIDDEN, 0}, N_HIDDEN *N_IN, N_HIDDEN},
    [P_W2] = {"grad/W2", 2, {N_CLASS, N_HIDDEN}, N_HIDDEN *N_IN + N_HIDDEN, N_CLASS *N_HIDDEN},
    [P_B2] = {"grad/b2", 1, {N_CLASS, 0}, N_HIDDEN *N_IN + N_HIDDEN + N_CLASS *N_HIDDEN, N_CLASS},
};

#define N_WEIGHTS (N_HIDDEN * N_IN + N_HIDDEN + N_CLASS * N_HIDDEN + N_CLASS)

typedef struct {
    float w[N_WEIGHTS]; /* W1[N_HIDDEN][N_IN], b1, W2[N_CLASS][N_HIDDEN], b2 */
    float g[N_WEIGHTS]; /* gradients, same layout */
} model_t;

typedef struct {
    long epochs;
    long batch; /* rows per step on each rank */
    double lr;
    long samples;
    uint64_t seed;
} options_t;

static int g_rank = -1; /* set once tc_init succeeded */

/* ------------------------------------------------------------------------ */
/* Error reporting                                                           */
/* ------------------------------------------------------------------------ */

/* tc_last_error() stays valid only until this thread's next tcoll call, so
 * take a copy before calling tc_status_string() or anything else. */
static const char *last_error_copy(char *buf, size_t len)
{
    snprintf(buf, len, "%s", tc_last_error());
    return buf;
}

/* Shuts tcoll down (which also fails the other ranks' pending requests, so
 * they stop instead of waiting for this one) and ends this rank. */
static void shutdown_and_exit(int code)
{
    if (g_rank >= 0) {
        tc_status_t st = tc_shutdown();
        if (st != TC_OK) {
            char why[1024];
            last_error_copy(why, sizeof(why));
            fprintf(stderr, "train_mlp: rank %d: tc_shutdown failed: %s: %s\n", g_rank,
                    tc_status_string(st), why);
        }
    }
    exit(code);
}

/* Reports a failed tcoll call and ends this rank. `why` is tc_last_error() for
 * an immediate failure or tc_request_error() for a failed request; it is
 * copied before any other tcoll call can replace it. */
static void die(const char *what, tc_status_t st, const char *why)
{
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s", why != NULL ? why : "");
    fprintf(stderr, "train_mlp: rank %d: %s failed: %s%s%s\n", g_rank, what, tc_status_string(st),
            msg[0] != '\0' ? ": " : "", msg);
    shutdown_and_exit(1);
}

/* Checks the status of an immediate call (no request involved). */
static void check(tc_status_t st, const char *what)
{
    if (st != TC_OK) {
        die(what, st, tc_last_error());
    }
}

/* Waits for req, ends this rank if it failed, and frees it. */
static void wait_and_free(tc_request_t *req, const char *what)
{
    tc_status_t st = tc_wait(req);
    if (st != TC_OK) {
        die(what, st, tc_request_error(req));
    }
    tc_request_free(req);
}

/* Reports a failure that is not a tcoll status (out of memory) and ends this rank. */
static void die_msg(const char *msg)
{
    fprintf(stderr, "train_mlp: rank %d: %s\n", g_rank, msg);
    shutdown_and_exit(1);
}

/* ------------------------------------------------------------------------ */
/* The student network                                                       */
/* ------------------------------------------------------------------------ */

static float *param(model_t *m, int p)
{
    return m->w + param_info[p].offset;
}

static const float *cparam(const model_t *m, int p)
{
    return m->w + param_info[p].offset;
}

static float *grad(model_t *m, int p)
{
    return m->g + param_info[p].offset;
}

/* Same seed on every rank, so every rank starts from the same weights. */
static void model_init(model_t *m, uint64_t seed)
{
    uint64_t rng = rng_seed(seed, 3, 0);
    float *w1 = param(m, P_W1), *w2 = param(m, P_W2);

    memset(m, 0, sizeof(*m)); /* biases start at 0 */
    for (size_t i = 0; i < param_info[P_W1].count; i++) {
        w1[i] = (float)(rng_normal(&rng) / sqrt((double)N_IN));
    }
    for (size_t i = 0; i < param_info[P_W2].count; i++) {
        w2[i] = (float)(rng_normal(&rng) / sqrt((double)N_HIDDEN));
    }
}

/* Forward pass for one row: hidden activations into h, class probabilities
 * into prob. Returns the cross-entropy loss for the given label. */
static double forward(const model_t *m, const float *x, int label, float *h, float *prob)
{
    const float *w1 = cparam(m, P_W1), *b1 = cparam(m, P_B1);
    const float *w2 = cparam(m, P_W2), *b2 = cparam(m, P_B2);
    float z[N_CLASS], zmax = -INFINITY, sum = 0.0f;

    for (int j = 0; j < N_HIDDEN; j++) {
        float a = b1[j];
        for (int i = 0; i < N_IN; i++) {
            a += w1[j * N_IN + i] * x[i];
        }
        h[j] = tanhf(a);
    }
    for (int k = 0; k < N_CLASS; k++) {
        float a = b2[k];
        for (int j = 0; j < N_HIDDEN; j++) {
            a += w2[k * N_HIDDEN + j] * h[j];
        }
        z[k] = a;
        zmax = fmaxf(zmax, a);
    }
    for (int k = 0; k < N_CLASS; k++) {
        prob[k] = expf(z[k] - zmax);
        sum += prob[k];
    }
    for (int k = 0; k < N_CLASS; k++) {
        prob[k] /= sum;
    }
    return -log(fmax((double)prob[label], 1e-30));
}

/* Submits the in-place average of one gradient over all ranks. */
static tc_request_t *submit_grad(model_t *m, int p)
{
    const param_info_t *pi = &param_info[p];
    tc_tensor_t t = {.data = grad(m, p), .dtype = TC_FLOAT32, .ndim = pi->ndim};
    tc_request_t *req = NULL;

    for (int d = 0; d < pi->ndim; d++) {
        t.shape[d] = pi->shape[d];
    }
    check(tc_allreduce(pi->name, &t, t.data, TC_AVG, &req), pi->name);
    return req;
}

typedef struct {
    float h[N_HIDDEN];   /* hidden activations */
    float dz2[N_CLASS];  /* d loss / d logits */
    float dz1[N_HIDDEN]; /* d loss / d hidden pre-activations */
} row_scratch_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/*
 * One SGD step on the rows `rows[0..n-1]`: forward, backward with each
 * gradient submitted for averaging as soon as it is final (W2, b2, W1, b1),
 * wait for all four, update. Returns the mean loss of the local batch and
 * adds the time spent waiting for the averages to *wait_s. Collective.
 */
static double train_step(model_t *m, const dataset_t *data, const long *rows, long n,
                         row_scratch_t *scratch, double lr, double *wait_s)
{
    tc_request_t *req[N_PARAM];
    const float *w2 = cparam(m, P_W2);
    float *gw1 = grad(m, P_W1), *gb1 = grad(m, P_B1);
    float *gw2 = grad(m, P_W2), *gb2 = grad(m, P_B2);
    const float inv_n = 1.0f / (float)n;
    double loss = 0.0;

    /* Forward; keep what the backward pass needs. */
    for (long b = 0; b < n; b++) {
        const long r = rows[b];
        row_scratch_t *s = &scratch[b];
        float prob[N_CLASS];
        loss += forward(m, data->x + r * N_IN, data->label[r], s->h, prob);
        for (int k = 0; k < N_CLASS; k++) {
            s->dz2[k] = (prob[k] - (k == data->label[r] ? 1.0f : 0.0f)) * inv_n;
        }
    }

    /* Output layer: dW2 = dz2^T h, db2 = sum dz2. Each goes out at once. */
    memset(gw2, 0, param_info[P_W2].count * sizeof(float));
    for (long b = 0; b < n; b++) {
        for (int k = 0; k < N_CLASS; k++) {
            for (int j = 0; j < N_HIDDEN; j++) {
                gw2[k * N_HIDDEN + j] += scratch[b].dz2[k] * scratch[b].h[j];
            }
        }
    }
    req[P_W2] = submit_grad(m, P_W2);

    memset(gb2, 0, param_info[P_B2].count * sizeof(float));
    for (long b = 0; b < n; b++) {
        for (int k = 0; k < N_CLASS; k++) {
            gb2[k] += scratch[b].dz2[k];
        }
    }
    req[P_B2] = submit_grad(m, P_B2);

    /* Hidden layer: dz1 = (dz2 W2) * tanh'(.), dW1 = dz1^T x, db1 = sum dz1.
     * Uses the weights W2, not the gradient being reduced. */
    for (long b = 0; b < n; b++) {
        row_scratch_t *s = &scratch[b];
        for (int j = 0; j < N_HIDDEN; j++) {
            float a = 0.0f;
            for (int k = 0; k < N_CLASS; k++) {
                a += s->dz2[k] * w2[k * N_HIDDEN + j];
            }
            s->dz1[j] = a * (1.0f - s->h[j] * s->h[j]);
        }
    }
    memset(gw1, 0, param_info[P_W1].count * sizeof(float));
    for (long b = 0; b < n; b++) {
        const float *x = data->x + rows[b] * N_IN;
        for (int j = 0; j < N_HIDDEN; j++) {
            for (int i = 0; i < N_IN; i++) {
                gw1[j * N_IN + i] += scratch[b].dz1[j] * x[i];
            }
        }
    }
    req[P_W1] = submit_grad(m, P_W1);

    memset(gb1, 0, param_info[P_B1].count * sizeof(float));
    for (long b = 0; b < n; b++) {
        for (int j = 0; j < N_HIDDEN; j++) {
            gb1[j] += scratch[b].dz1[j];
        }
    }
    req[P_B1] = submit_grad(m, P_B1);

    /* Wait for every average, in the order they were submitted, then step. */
    const double t0 = now_s();
    static const int order[N_PARAM] = {P_W2, P_B2, P_W1, P_B1};
    for (int i = 0; i < N_PARAM; i++) {
        wait_and_free(req[order[i]], param_info[order[i]].name);
    }
    *wait_s += now_s() - t0;

    const float flr = (float)lr;
    for (size_t i = 0; i < N_WEIGHTS; i++) {
        m->w[i] -= flr * m->g[i];
    }
    return loss / (double)n;
}

/*
 * Loss and accuracy on the whole dataset: each rank evaluates its own shard
 * and one TC_SUM allreduce adds the shards up. Collective.
 */
static void evaluate(const model_t *m, const dataset_t *data, double *loss_p, double *acc_p)
{
    const int rank = tc_rank(), size = tc_size();
    double sums[3] = {0.0, 0.0, 0.0}; /* loss, correct, rows */
    float h[N_HIDDEN], prob[N_CLASS];
    tc_request_t *req = NULL;

    for (long r = rank; r < data->n; r += size) {
        sums[0] += forward(m, data->x + r * N_IN, data->label[r], h, prob);
        int best = 0;
        for (int k = 1; k < N_CLASS; k++) {
            if (prob[k] > prob[best]) {
                best = k;
            }
        }
        sums[1] += best == data->label[r];
        sums[2] += 1.0;
    }
    tc_tensor_t t = {.data = sums, .dtype = TC_FLOAT64, .ndim = 1, .shape = {3}};
    check(tc_allreduce("metrics/eval", &t, sums, TC_SUM, &req), "metrics/eval");
    wait_and_free(req, "metrics/eval");
    *loss_p = sums[0] / sums[2];
    *acc_p = sums[1] / sums[2];
}

/* Mean of one value over all ranks (TC_AVG). Collective. */
static double average_over_ranks(const char *name, double value)
{
    tc_tensor_t t = {.data = &value, .dtype = TC_FLOAT64, .ndim = 0};
    tc_request_t *req = NULL;

    check(tc_allreduce(name, &t, &value, TC_AVG, &req), name);
    wait_and_free(req, name);
    return value;
}

/* FNV-1a over the bytes of the weights: a short fingerprint to print. */
static uint64_t weights_hash(const model_t *m)
{
    const unsigned char *p = (const unsigned char *)m->w;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < sizeof(m->w); i++) {
        h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    }
    return h;
}

/*
 * Gathers every rank's weights and compares them bit for bit with rank 0's.
 * Every rank sees the same gathered data, so every rank reaches the same
 * verdict. Returns 1 if all are identical. Collective.
 */
static int weights_identical(const model_t *m)
{
    const int rank = tc_rank(), size = tc_size();
    tc_tensor_t t = {.data = (void *)m->w, .dtype = TC_FLOAT32, .ndim = 1, .shape = {N_WEIGHTS}};
    tc_tensor_t out;
    tc_request_t *req = NULL;
    tc_status_t st;
    int identical = 1;

    check(tc_allgather("check/weights", &t, &req), "check/weights");
    st = tc_wait(req);
    if (st != TC_OK) {
        die("check/weights", st, tc_request_error(req));
    }
    st = tc_request_output(req, &out);
    if (st != TC_OK) {
        die("tc_request_output(check/weights)", st, tc_request_error(req));
    }
    if (out.dtype != TC_FLOAT32 || out.ndim != 1 || out.shape[0] != (int64_t)size * N_WEIGHTS) {
        fprintf(stderr,
                "train_mlp: rank %d: allgather of %d x %d float32 returned %s with ndim %d, "
                "shape[0] %" PRId64 "\n",
                rank, size, N_WEIGHTS, tc_dtype_name(out.dtype), out.ndim,
                out.ndim > 0 ? out.shape[0] : (int64_t)0);
        tc_request_free(req);
        return 0;
    }

    const float *all = out.data;
    if (memcmp(all + (size_t)rank * N_WEIGHTS, m->w, sizeof(m->w)) != 0) {
        fprintf(stderr, "train_mlp: rank %d: the gathered copy of my weights differs from them\n",
                rank);
        identical = 0;
    }
    for (int r = 1; r < size; r++) {
        const float *wr = all + (size_t)r * N_WEIGHTS;
        if (memcmp(wr, all, sizeof(m->w)) == 0) {
            continue;
        }
        identical = 0;
        if (rank == 0) {
            long ndiff = 0, first = -1;
            for (long i = 0; i < N_WEIGHTS; i++) {
                if (memcmp(&wr[i], &all[i], sizeof(float)) != 0) {
                    ndiff++;
                    first = first < 0 ? i : first;
                }
            }
            fprintf(stderr,
                    "train_mlp: weights of rank %d differ from rank 0 in %ld of %d values; "
                    "first at index %ld: %a (rank %d) vs %a (rank 0)\n",
                    r, ndiff, N_WEIGHTS, first, (double)wr[first], r, (double)all[first]);
        }
    }
    tc_request_free(req);
    return identical;
}

/* ------------------------------------------------------------------------ */
/* Options                                                                   */
/* ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np N tcoll-train-mlp [options]\n"
               "  --epochs N    passes over the data (default 10)\n"
               "  --batch N     rows per step on each rank (default 32)\n"
               "  --lr X        SGD learning rate (default 0.2)\n"
               "  --samples N   rows in the synthetic dataset (default 8192)\n"
               "  --seed N      seed for the data and the initial weights (default 42)\n"
               "  --help        this text\n");
}

static int parse_long(const char *s, long lo, long hi, long *out_p)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *out_p = v;
    return 0;
}

/* Returns 0 on success, 1 for --help, -1 (after printing why, on rank 0) on error. */
static int parse_options(int argc, char **argv, options_t *opt)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = NULL;
        char key[32];
        const char *eq = strchr(arg, '=');

        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            return 1;
        }
        /* Accept both "--key value" and "--key=value". */
        if (eq != NULL && (size_t)(eq - arg) < sizeof(key)) {
            memcpy(key, arg, (size_t)(eq - arg));
            key[eq - arg] = '\0';
            val = eq + 1;
        } else {
            snprintf(key, sizeof(key), "%s", arg);
            val = i + 1 < argc ? argv[++i] : NULL;
        }
        if (val == NULL) {
            if (g_rank == 0) {
                fprintf(stderr, "train_mlp: %s needs a value\n", arg);
            }
            return -1;
        }

        long v = 0;
        int bad = 0;
        if (strcmp(key, "--epochs") == 0) {
            bad = parse_long(val, 0, 1000000, &v);
            opt->epochs = v;
        } else if (strcmp(key, "--batch") == 0) {
            bad = parse_long(val, 1, 1000000, &v);
            opt->batch = v;
        } else if (strcmp(key, "--samples") == 0) {
            bad = parse_long(val, 1, 100000000, &v);
            opt->samples = v;
        } else if (strcmp(key, "--seed") == 0) {
            bad = parse_long(val, 0, LONG_MAX, &v);
            opt->seed = (uint64_t)v;
        } else if (strcmp(key, "--lr") == 0) {
            char *end;
            errno = 0;
            opt->lr = strtod(val, &end);
            bad = errno != 0 || end == val || *end != '\0' || !(opt->lr > 0.0 && opt->lr < 1e3);
        } else {
            if (g_rank == 0) {
                fprintf(stderr, "train_mlp: unknown option %s\n", arg);
            }
            return -1;
        }
        if (bad) {
            if (g_rank == 0) {
                fprintf(stderr, "train_mlp: bad value for %s: '%s'\n", key, val);
            }
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Main                                                                      */
/* ------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    options_t opt = {.epochs = 10, .batch = 32, .lr = 0.2, .samples = 8192, .seed = 42};
    tc_status_t st;

    st = tc_init();
    if (st != TC_OK) {
        char why[1024];
        last_error_copy(why, sizeof(why));
        fprintf(stderr, "train_mlp: tc_init failed: %s: %s\n", tc_status_string(st), why);
        return 1;
    }
    g_rank = tc_rank();
    const int rank = g_rank, size = tc_size();

    /* Every rank parses the same command line and reaches the same verdict. */
    int pr = parse_options(argc, argv, &opt);
    if (pr != 0) {
        if (rank == 0) {
            usage(pr > 0 ? stdout : stderr);
        }
        shutdown_and_exit(pr > 0 ? 0 : 2);
    }
    if (opt.samples < size) {
        if (rank == 0) {
            fprintf(stderr, "train_mlp: --samples %ld is fewer than the %d ranks\n", opt.samples,
                    size);
        }
        shutdown_and_exit(2);
    }

    dataset_t data;
    model_t *model = calloc(1, sizeof(*model));
    if (model == NULL) {
        die_msg("out of memory for the model");
    }
    if (dataset_make(opt.samples, opt.seed, &data) != 0) {
        die_msg("out of memory for the dataset");
    }
    model_init(model, opt.seed);

    /* This rank's shard, and a step count every rank agrees on: the smallest
     * shard decides, so every rank submits the same names the same number of
     * times (a rank with one row more leaves a random one out each epoch). */
    const long shard_n = (opt.samples - rank + size - 1) / size;
    const long min_shard = opt.samples / size;
    const long steps_per_epoch = (min_shard + opt.batch - 1) / opt.batch;
    const long max_batch = opt.batch < min_shard ? opt.batch : min_shard;
    long *rows = malloc((size_t)shard_n * sizeof(*rows));
    row_scratch_t *scratch = malloc((size_t)max_batch * sizeof(*scratch));
    if (rows == NULL || scratch == NULL) {
        die_msg("out of memory for the shard");
    }
    for (long i = 0; i < shard_n; i++) {
        rows[i] = rank + i * size;
    }

    if (rank == 0) {
        int count[N_CLASS] = {0};
        for (long s = 0; s < data.n; s++) {
            count[data.label[s]]++;
        }
        printf("tcoll %s: data-parallel SGD on %d rank%s\n", tc_version(), size,
               size == 1 ? "" : "s");
        printf("model %d-%d-%d (tanh, softmax), %d weights; %ld samples (classes %d/%d/%d/%d)\n",
               N_IN, N_HIDDEN, N_CLASS, N_WEIGHTS, data.n, count[0], count[1], count[2], count[3]);
        printf("batch %ld per rank (%ld global), lr %g, %ld steps per epoch, %ld epochs\n",
               opt.batch, opt.batch * size, opt.lr, steps_per_epoch, opt.epochs);
        printf("%5s %11s %10s %9s %8s %8s\n", "epoch", "train-loss", "loss", "accuracy", "time-s",
               "wait-s");
    }

    double loss, acc;
    evaluate(model, &data, &loss, &acc);
    if (rank == 0) {
        printf("%5d %11s %10.4f %8.2f%% %8s %8s\n", 0, "-", loss, 100.0 * acc, "-", "-");
        fflush(stdout);
    }

    const double t_start = now_s();
    double total_wait = 0.0;
    for (long epoch = 1; epoch <= opt.epochs; epoch++) {
        const double t0 = now_s();
        double wait_s = 0.0, train_loss = 0.0;
        uint64_t rng = rng_seed(opt.seed, 4 + (uint64_t)rank, (uint64_t)epoch);

        /* A new order of this rank's rows each epoch (Fisher-Yates). */
        for (long i = shard_n - 1; i > 0; i--) {
            long j = (long)(rng_next(&rng) % (uint64_t)(i + 1));
            long tmp = rows[i];
            rows[i] = rows[j];
            rows[j] = tmp;
        }
        for (long step = 0; step < steps_per_epoch; step++) {
            const long first = step * opt.batch;
            const long n = first + opt.batch <= min_shard ? opt.batch : min_shard - first;
            train_loss += train_step(model, &data, rows + first, n, scratch, opt.lr, &wait_s);
        }
        train_loss = average_over_ranks("metrics/train_loss", train_loss / (double)steps_per_epoch);
        evaluate(model, &data, &loss, &acc);
        total_wait += wait_s;
        if (rank == 0) {
            printf("%5ld %11.4f %10.4f %8.2f%% %8.3f %8.3f\n", epoch, train_loss, loss, 100.0 * acc,
                   now_s() - t0, wait_s);
            fflush(stdout);
        }
    }
    if (rank == 0) {
        printf("trained %ld steps in %.3f s, %.3f s of it waiting for gradient averages (rank 0)\n",
               steps_per_epoch * opt.epochs, now_s() - t_start, total_wait);
    }

    const int identical = weights_identical(model);
    if (rank == 0) {
        if (identical) {
            printf("weights identical on all %d ranks (FNV-1a 0x%016" PRIx64 ")\n", size,
                   weights_hash(model));
        } else {
            printf("FAILED: weights differ between ranks (see above)\n");
        }
        fflush(stdout);
    }

    free(scratch);
    free(rows);
    free(model);
    dataset_free(&data);

    g_rank = -1; /* tcoll is gone; nothing left to shut down on error */
    st = tc_shutdown();
    if (st != TC_OK) {
        char why[1024];
        last_error_copy(why, sizeof(why));
        fprintf(stderr, "train_mlp: rank %d: tc_shutdown failed: %s: %s\n", rank,
                tc_status_string(st), why);
        return 1;
    }
    return identical ? 0 : 1;
}
