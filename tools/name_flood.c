/*
 * name_flood.c - tcoll-name-flood: the cost of first-time names when many
 * are in flight at once (docs/perf.md, "First-time names"). Every rank
 * submits N allreduces of one int32 under N distinct names, all before
 * waiting for any, rank 0 in order and the others in reverse (-o reverse)
 * or each in its own random order (-o random), then waits for them all and
 * checks every sum. Prints, per N, the slowest rank's time to submit and to
 * complete everything, and the time per name; a cost per name that grows
 * with N is the regression this tool is for.
 *
 * It uses the public API only (tcoll.h), so the same source builds against
 * an older libtcoll for a side-by-side run (tools/name_flood_compare.sh).
 *
 * Usage: mpiexec -n P tcoll-name-flood [-n N[,N...]] [-o reverse|random]
 *        [-r RUNS]   (defaults: -n 10000,50000,200000 -o reverse -r 1)
 * Exit status: 0, or 1 when a call fails or a sum is wrong.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tcoll.h"

#define MAX_SIZES 16

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The largest of every rank's value (an allreduce of tcoll's own). */
static double max_over_ranks(double v, const char *name)
{
    tc_tensor_t t = {&v, TC_FLOAT64, 0, {0}};
    double out = v;
    tc_request_t *req;

    if (tc_allreduce(name, &t, &out, TC_MAX, &req) != TC_OK || tc_wait(req) != TC_OK) {
        fprintf(stderr, "tcoll-name-flood: %s: %s\n", name, tc_last_error());
        exit(1);
    }
    tc_request_free(req);
    return out;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* One run of n names; returns 0, or 1 after a failure (reported). */
static int run(int n, int random_order, int run_no, double *submit_s, double *total_s)
{
    int rank = tc_rank(), size = tc_size(), bad = 0, i;
    int32_t *in = malloc((size_t)n * sizeof(*in)), *out = malloc((size_t)n * sizeof(*out));
    int *order = malloc((size_t)n * sizeof(*order));
    tc_request_t **reqs = malloc((size_t)n * sizeof(*reqs));
    uint64_t seed = (uint64_t)rank * 1000003u + (uint64_t)run_no;
    char name[64];
    double t0, t1, t2;

    if (in == NULL || out == NULL || order == NULL || reqs == NULL) {
        fprintf(stderr, "tcoll-name-flood: out of memory for %d names\n", n);
        exit(1);
    }
    for (i = 0; i < n; i++) {
        order[i] = rank == 0 ? i : n - 1 - i;
    }
    if (random_order && rank > 0) {
        for (i = n - 1; i > 0; i--) {
            int j = (int)(rng_next(&seed) % (uint64_t)(i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
    t0 = now_s();
    for (int k = 0; k < n; k++) {
        tc_tensor_t t = {&in[order[k]], TC_INT32, 1, {1}};
        i = order[k];
        in[i] = i + rank;
        snprintf(name, sizeof(name), "flood/%d/%d/%d", n, run_no, i);
        if (tc_allreduce(name, &t, &out[i], TC_SUM, &reqs[i]) != TC_OK) {
            fprintf(stderr, "tcoll-name-flood: rank %d: %s: %s\n", rank, name, tc_last_error());
            exit(1);
        }
    }
    t1 = now_s();
    for (i = 0; i < n; i++) {
        if (tc_wait(reqs[i]) != TC_OK) {
            if (bad++ == 0) {
                fprintf(stderr, "tcoll-name-flood: rank %d: name %d: %s\n", rank, i,
                        tc_request_error(reqs[i]));
            }
        } else if (out[i] != (int32_t)i * size + size * (size - 1) / 2 && bad++ == 0) {
            fprintf(stderr, "tcoll-name-flood: rank %d: name %d: sum %d, expected %d\n", rank, i,
                    out[i], i * size + size * (size - 1) / 2);
        }
        tc_request_free(reqs[i]);
    }
    t2 = now_s();
    *submit_s = t1 - t0;
    *total_s = t2 - t0;
    free(reqs);
    free(order);
    free(out);
    free(in);
    return bad != 0;
}

int main(int argc, char **argv)
{
    int sizes[MAX_SIZES] = {10000, 50000, 200000}, nsizes = 3, runs = 1, random_order = 0;
    int failed = 0;

    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "-n") == 0 && a + 1 < argc) {
            char *p = argv[++a], *end;
            nsizes = 0;
            while (*p != '\0' && nsizes < MAX_SIZES) {
                long v = strtol(p, &end, 10);
                if (end == p || v < 1 || v > 50000000) {
                    fprintf(stderr, "tcoll-name-flood: -n: bad count in '%s'\n", argv[a]);
                    return 2;
                }
                sizes[nsizes++] = (int)v;
                p = *end == ',' ? end + 1 : end;
                if (*end != ',' && *end != '\0') {
                    fprintf(stderr, "tcoll-name-flood: -n: bad count in '%s'\n", argv[a]);
                    return 2;
                }
            }
        } else if (strcmp(argv[a], "-o") == 0 && a + 1 < argc) {
            a++;
            if (strcmp(argv[a], "random") != 0 && strcmp(argv[a], "reverse") != 0) {
                fprintf(stderr, "tcoll-name-flood: -o: reverse or random, not '%s'\n", argv[a]);
                return 2;
            }
            random_order = strcmp(argv[a], "random") == 0;
        } else if (strcmp(argv[a], "-r") == 0 && a + 1 < argc) {
            runs = atoi(argv[++a]);
            if (runs < 1) {
                fprintf(stderr, "tcoll-name-flood: -r: at least 1\n");
                return 2;
            }
        } else {
            fprintf(stderr, "usage: mpiexec -n P %s [-n N[,N...]] [-o reverse|random] [-r RUNS]\n",
                    argv[0]);
            return 2;
        }
    }
    if (tc_init() != TC_OK) {
        fprintf(stderr, "tcoll-name-flood: tc_init: %s\n", tc_last_error());
        return 1;
    }
    if (tc_rank() == 0) {
        printf("# tcoll %s, %d ranks, other ranks %s; times: the slowest rank's\n", tc_version(),
               tc_size(), random_order ? "in random orders" : "in reverse order");
        printf("%10s %4s %12s %12s %14s\n", "names", "run", "submit_s", "total_s", "us_per_name");
    }
    for (int s = 0; s < nsizes; s++) {
        for (int r = 0; r < runs; r++) {
            double sub, tot;
            char nm[64];
            failed |= run(sizes[s], random_order, r, &sub, &tot);
            snprintf(nm, sizeof(nm), "flood/time/%d/%d/a", s, r);
            sub = max_over_ranks(sub, nm);
            snprintf(nm, sizeof(nm), "flood/time/%d/%d/b", s, r);
            tot = max_over_ranks(tot, nm);
            if (tc_rank() == 0) {
                printf("%10d %4d %12.3f %12.3f %14.2f\n", sizes[s], r, sub, tot,
                       tot * 1e6 / sizes[s]);
                fflush(stdout);
            }
        }
    }
    if (tc_shutdown() != TC_OK) {
        failed = 1;
    }
    return failed;
}
