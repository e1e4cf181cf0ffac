/*
 * train_mlp_data.h - the synthetic data train_mlp.c trains on
 * (train_mlp_data.c): random numbers that are the same on every rank for the
 * same seed, and rows of N_IN Gaussian inputs labelled with one of N_CLASS
 * classes by a fixed random teacher network.
 */
#ifndef TRAIN_MLP_DATA_H
#define TRAIN_MLP_DATA_H

#include <stdint.h>

enum { N_IN = 16, N_CLASS = 4 };

typedef struct {
    long n;
    float *x;   /* [n][N_IN] */
    int *label; /* [n] */
} dataset_t;

/* SplitMix64: the next number of the stream in *state. */
uint64_t rng_next(uint64_t *state);
/* A standard normal number (Box-Muller). */
double rng_normal(uint64_t *state);
/* A stream's first state, derived from a base seed and two integers. */
uint64_t rng_seed(uint64_t seed, uint64_t a, uint64_t b);

/* n rows from seed: 0, or -1 when out of memory (nothing allocated then). */
int dataset_make(long n, uint64_t seed, dataset_t *data_p);
void dataset_free(dataset_t *data);

#endif
