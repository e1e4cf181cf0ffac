/*
 * limit_model.c - the model behind the limit columns (docs/perf.md, "The
 * limit"): for the algorithm tcoll reports for a row
 * (tc_request_algorithm), the bytes one rank must copy, reduce and read
 * from another process in one operation, written from the algorithm's own
 * steps (src/coll), with S the row's size and n the ranks. No MPI, no
 * clock: only arithmetic.
 *
 * Most phases are sequential and their times add up. One overlaps: where
 * an algorithm reads a block from another process into cache and reduces
 * it there at once (cma, ring, ordered, hier: the reduce-scatter half), the
 * reduction runs on data just read, so that phase takes the longer of its
 * read and its reduction, written [1copy X | reduce X] below.
 *
 * Where the peers' buffers are mapped here ("cma, mapped": they lie in
 * tc_mem_alloc memory), no byte goes through the kernel: a rank reads the
 * inputs of its share where they lie and reduces them into its output,
 * then copies the others' shares of the result, so its memory reads every
 * input share (S) and the others' results (P) and writes its output (S):
 * 2S + P bytes of traffic, a memcpy's worth of (2S + P)/2, which the
 * reduction's arithmetic overlaps.
 *
 *   allreduce (S: the tensor, P = (n-1)/n S, the others' shares)
 *     cma               [1copy P | reduce P] + 1copy P + copy S/n
 *     cma, mapped       [copy (2S + P)/2 | reduce P]
 *     ring, ordered,    [1copy P | reduce P] + 1copy P (the bytes a rank
 *     hier              receives, at the single-copy rate: what MPI's best
 *                       path within a node costs)
 *     shm               copy 2S + reduce P (in through the slots, out)
 *     shm, fast; eager  copy 2S + reduce (n-1) S (every rank reduces
 *                       every input)
 *     ", fused"         copy 2S more (into the fusion buffer and out)
 *   allgather (S: the whole output)
 *     cma, ring allgatherv   1copy P + copy S/n (its own block)
 *     cma, mapped            copy S
 *     shm                    copy S + S/n
 *   broadcast (S: the buffer)
 *     cma                    1copy S
 *     shm, cma, mapped       copy S
 *     binomial tree          1copy S x ceil(log2 n)
 *   reducescatter (S: the whole input)
 *     cma, ring/ordered reduce-scatter   [1copy P | reduce P] + copy S/n
 *     cma, mapped                        [copy P | reduce P] + copy S/n
 *     shm                                copy S + reduce P
 *   alltoall (S: what a rank sends)
 *     cma, pairwise exchange   1copy P + copy S/n
 *     cma, mapped              copy S
 *     shm                      copy 2P + S/n
 *
 * Where the single-copy rate could not be measured, a byte of 1copy counts
 * as two copies (in and out of shared memory).
 */
#include "perf.h"

#include <string.h>

/* algo without ", fused" equals name */
static int is(const char *algo, size_t len, const char *name)
{
    return strlen(name) == len && strncmp(algo, name, len) == 0;
}

int perf_limit_bytes(perf_mode_t mode, const char *algo, double s, int n, perf_limit_bytes_t *lb)
{
    const char *fused = algo != NULL ? strstr(algo, ", fused") : NULL;
    size_t len = algo == NULL ? 0 : fused != NULL ? (size_t)(fused - algo) : strlen(algo);
    double part = (n - 1.0) / n * s, own = s / n;

    double *b = lb->serial;

    memset(lb, 0, sizeof *lb);
    if (algo == NULL) {
        return 0;
    }
    switch (mode) {
    case PERF_MODE_ALLREDUCE:
    case PERF_MODE_WORKLOAD:
        if (is(algo, len, "cma")) {
            lb->ov_1copy = lb->ov_reduce = part;
            b[PERF_RATE_1COPY] = part;
            b[PERF_RATE_COPY] = own;
        } else if (is(algo, len, "cma, mapped")) {
            lb->ov_copy = (2 * s + part) / 2;
            lb->ov_reduce = part;
        } else if (is(algo, len, "shm")) {
            b[PERF_RATE_COPY] = 2 * s;
            b[PERF_RATE_REDUCE] = part;
        } else if (is(algo, len, "shm, fast") || strncmp(algo, "eager", 5) == 0) {
            b[PERF_RATE_COPY] = 2 * s;
            b[PERF_RATE_REDUCE] = (n - 1.0) * s;
        } else if (is(algo, len, "ring") || is(algo, len, "ordered") || is(algo, len, "hier")) {
            lb->ov_1copy = lb->ov_reduce = part;
            b[PERF_RATE_1COPY] = part;
        } else {
            return 0;
        }
        if (fused != NULL) {
            b[PERF_RATE_COPY] += 2 * s;
        }
        return 1;
    case PERF_MODE_ALLGATHER:
        if (is(algo, len, "cma") || is(algo, len, "ring allgatherv")) {
            b[PERF_RATE_1COPY] = part;
            b[PERF_RATE_COPY] = own;
        } else if (is(algo, len, "cma, mapped")) {
            b[PERF_RATE_COPY] = s;
        } else if (is(algo, len, "shm")) {
            b[PERF_RATE_COPY] = s + own;
        } else {
            return 0;
        }
        return 1;
    case PERF_MODE_BROADCAST:
        if (is(algo, len, "cma")) {
            b[PERF_RATE_1COPY] = s;
        } else if (is(algo, len, "shm") || is(algo, len, "cma, mapped")) {
            b[PERF_RATE_COPY] = s;
        } else if (is(algo, len, "binomial tree")) {
            int steps = 0;
            while ((1 << steps) < n) {
                steps++;
            }
            b[PERF_RATE_1COPY] = s * steps;
        } else {
            return 0;
        }
        return 1;
    case PERF_MODE_REDUCESCATTER:
        if (is(algo, len, "cma") || is(algo, len, "ring reduce-scatter") ||
            is(algo, len, "ordered reduce-scatter")) {
            lb->ov_1copy = lb->ov_reduce = part;
            b[PERF_RATE_COPY] = own;
        } else if (is(algo, len, "cma, mapped")) {
            lb->ov_copy = lb->ov_reduce = part;
            b[PERF_RATE_COPY] = own;
        } else if (is(algo, len, "shm")) {
            b[PERF_RATE_COPY] = s;
            b[PERF_RATE_REDUCE] = part;
        } else {
            return 0;
        }
        return 1;
    case PERF_MODE_ALLTOALL:
        if (is(algo, len, "cma") || is(algo, len, "pairwise exchange")) {
            b[PERF_RATE_1COPY] = part;
            b[PERF_RATE_COPY] = own;
        } else if (is(algo, len, "cma, mapped")) {
            b[PERF_RATE_COPY] = s;
        } else if (is(algo, len, "shm")) {
            b[PERF_RATE_COPY] = 2 * part + own;
        } else {
            return 0;
        }
        return 1;
    default: return 0;
    }
}

/* Seconds for bytes of kernel k at gbs; 1copy unmeasured: two copies; -1
 * if the rate is missing. */
static double kernel_s(int k, double bytes, const double gbs[PERF_NRATES])
{
    double rate = gbs[k];

    if (bytes <= 0) {
        return 0;
    }
    if (k == PERF_RATE_1COPY && rate <= 0) { /* not measured: in and out of shared memory */
        bytes *= 2;
        rate = gbs[PERF_RATE_COPY];
    }
    return rate > 0 ? bytes / (rate * 1e9) : -1;
}

double perf_limit_seconds(const perf_limit_bytes_t *lb, const double gbs[PERF_NRATES])
{
    double t = 0, r = kernel_s(PERF_RATE_1COPY, lb->ov_1copy, gbs),
           c = kernel_s(PERF_RATE_COPY, lb->ov_copy, gbs),
           x = kernel_s(PERF_RATE_REDUCE, lb->ov_reduce, gbs);

    if (r < 0 || c < 0 || x < 0) {
        return 0; /* a rate the row needs is missing: no limit */
    }
    t = r + c > x ? r + c : x;
    for (int k = 0; k < PERF_NRATES; k++) {
        double s = kernel_s(k, lb->serial[k], gbs);
        if (s < 0) {
            return 0;
        }
        t += s;
    }
    return t;
}
