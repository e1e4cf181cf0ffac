/*
 * train_mlp_data.c - the synthetic data of train_mlp.c: deterministic random
 * numbers (the same on every rank for the same seed) and a dataset labelled
 * by a fixed random "teacher" network. No tcoll in it.
 */
#include "train_mlp_data.h"

#include <math.h>
#include <stdlib.h>

enum { TEACHER_HIDDEN = 8 };

/* ------------------------------------------------------------------------ */
/* Deterministic random numbers (identical on every rank for the same seed)  */
/* ------------------------------------------------------------------------ */

/* SplitMix64: a 64-bit counter passed through a bit mixer. */
uint64_t rng_next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform in (0, 1), never exactly 0 or 1. */
static double rng_uniform(uint64_t *state)
{
    return ((double)(rng_next(state) >> 11) + 0.5) * 0x1.0p-53;
}

/* Standard normal (Box-Muller; the second value is discarded for simplicity). */
double rng_normal(uint64_t *state)
{
    double u1 = rng_uniform(state);
    double u2 = rng_uniform(state);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* A stream seed derived from the base seed and a few integers. */
uint64_t rng_seed(uint64_t seed, uint64_t a, uint64_t b)
{
    uint64_t s = seed ^ (a * UINT64_C(0xd1b54a32d192ed03)) ^ (b * UINT64_C(0x8cb92ba72f3d8dd7));
    return rng_next(&s);
}

/* ------------------------------------------------------------------------ */
/* Data: a random teacher network labels Gaussian inputs                      */
/* ------------------------------------------------------------------------ */

/* A fixed random teacher, 16 -> 8 tanh -> 4 logits. */
typedef struct {
    double w1[TEACHER_HIDDEN][N_IN], b1[TEACHER_HIDDEN];
    double w2[N_CLASS][TEACHER_HIDDEN];
    double shift[N_CLASS], scale[N_CLASS]; /* per-class standardization of the logits */
} teacher_t;

static void teacher_logits(const teacher_t *t, const float *x, double *z)
{
    double h[TEACHER_HIDDEN];
    for (int j = 0; j < TEACHER_HIDDEN; j++) {
        double a = t->b1[j];
        for (int i = 0; i < N_IN; i++) {
            a += t->w1[j][i] * (double)x[i];
        }
        h[j] = tanh(a);
    }
    for (int k = 0; k < N_CLASS; k++) {
        double a = 0.0;
        for (int j = 0; j < TEACHER_HIDDEN; j++) {
            a += t->w2[k][j] * h[j];
        }
        z[k] = (a - t->shift[k]) * t->scale[k];
    }
}

static void random_input(uint64_t *rng, float *x)
{
    for (int i = 0; i < N_IN; i++) {
        x[i] = (float)rng_normal(rng);
    }
}

/* The label of a row is the class with the largest standardized teacher
 * logit; standardizing each logit (mean 0, deviation 1 over a calibration
 * sample) keeps the four classes of similar size. */
int dataset_make(long n, uint64_t seed, dataset_t *data_p)
{
    enum { N_CALIB = 4096 };
    teacher_t t;
    uint64_t rng = rng_seed(seed, 1, 0);
    double z[N_CLASS], sum[N_CLASS] = {0.0}, sum2[N_CLASS] = {0.0};
    float xc[N_IN];

    for (int j = 0; j < TEACHER_HIDDEN; j++) {
        for (int i = 0; i < N_IN; i++) {
            t.w1[j][i] = 2.0 * rng_normal(&rng) / sqrt((double)N_IN);
        }
        t.b1[j] = 0.5 * rng_normal(&rng);
    }
    for (int k = 0; k < N_CLASS; k++) {
        for (int j = 0; j < TEACHER_HIDDEN; j++) {
            t.w2[k][j] = rng_normal(&rng);
        }
        t.shift[k] = 0.0;
        t.scale[k] = 1.0;
    }
    for (int s = 0; s < N_CALIB; s++) {
        random_input(&rng, xc);
        teacher_logits(&t, xc, z);
        for (int k = 0; k < N_CLASS; k++) {
            sum[k] += z[k];
            sum2[k] += z[k] * z[k];
        }
    }
    for (int k = 0; k < N_CLASS; k++) {
        const double mean = sum[k] / N_CALIB;
        t.shift[k] = mean;
        t.scale[k] = 1.0 / sqrt(fmax(sum2[k] / N_CALIB - mean * mean, 1e-12));
    }

    float *x = malloc((size_t)n * N_IN * sizeof(*x));
    int *label = malloc((size_t)n * sizeof(*label));
    if (x == NULL || label == NULL) {
        free(x);
        free(label);
        return -1;
    }
    rng = rng_seed(seed, 2, 0);
    for (long s = 0; s < n; s++) {
        random_input(&rng, x + s * N_IN);
        teacher_logits(&t, x + s * N_IN, z);
        int best = 0;
        for (int k = 1; k < N_CLASS; k++) {
            if (z[k] > z[best]) {
                best = k;
            }
        }
        label[s] = best;
    }
    data_p->n = n;
    data_p->x = x;
    data_p->label = label;
    return 0;
}

void dataset_free(dataset_t *data)
{
    free(data->x);
    free(data->label);
}
