/*
 * data.c - inputs whose results are exact, and the check against them.
 *
 * Every value is a small integer chosen from a hash of the element's index
 * (so a block reduced or moved into the wrong place is caught) and the rank.
 * Reductions (allreduce) keep every partial sum or product within the range
 * where the dtype holds every integer, whatever order a library combines the
 * ranks in, and make avg's sum a multiple of n; data that is only moved
 * (allgather, broadcast) may be any integer the dtype holds. Nothing here
 * may depend on timing or on how a library splits its work.
 */
#include "perf.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

uint64_t perf_hash(uint64_t x)
{
    x ^= x >> 32;
    x *= 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    x *= 0xc2b2ae3d27d4eb4full;
    x ^= x >> 32;
    return x;
}

unsigned perf_hbucket(uint64_t i, uint64_t salt)
{
    return (unsigned)(perf_hash(i + salt) % PERF_HBUCKETS);
}

int64_t perf_ar_value(const perf_ar_scheme_t *s, int r, unsigned h)
{
    int n = perf_size, sgn = perf_dt_is_float(s->dt) || s->dt == TC_INT8 || s->dt == TC_INT16 ||
                             s->dt == TC_INT32 || s->dt == TC_INT64;
    switch (s->op) {
    case TC_SUM: return (int64_t)((h + 7u * (unsigned)r) % (unsigned)s->k) - (sgn ? s->k / 2 : 0);
    case TC_AVG:
        /* Sums to n * b: the average is exact whatever the division does. */
        return (int64_t)(h % (unsigned)s->k) - s->k / 2 +
               (int64_t)s->d * ((h / (unsigned)s->k) % 2) * (2 * r - (n - 1));
    case TC_MIN:
    case TC_MAX: return (int64_t)((h * 5u + 3u * (unsigned)r) % 15u) - (sgn ? 7 : 0);
    case TC_PROD:
        /* One rank holds 2 or 3, the others +-1: the product stays tiny. */
        if ((unsigned)r == h % (unsigned)n) {
            return 2 + (h / (unsigned)n) % 2;
        }
        return (h + (unsigned)r) % 3 == 0 ? -1 : 1;
    }
    return 0;
}

void perf_ar_scheme_init(perf_ar_scheme_t *s, tc_dtype_t dt, tc_op_t op)
{
    int64_t lim = perf_dt_exact_limit(dt), n = perf_size;
    memset(s, 0, sizeof *s);
    s->dt = dt;
    s->op = op;
    /* Every partial sum over ranks stays within lim: n * max|v| <= lim. */
    s->k = (int)(lim / n + 1 < 16 ? lim / n + 1 : 16);
    if (op == TC_AVG) {
        s->d = n * (n - 1) <= lim / 2;
        int64_t maxb = lim / n - s->d * (n - 1);
        s->k = (int)(maxb + 1 < 16 ? maxb + 1 : 16);
    }
    if (s->k < 1) {
        s->k = 1;
    }
    for (unsigned h = 0; h < PERF_HBUCKETS; h++) {
        /* Integers wrap in uint64 like two's complement, then truncate to
         * their width when compared; floats never leave the exact range. */
        uint64_t u = op == TC_PROD ? 1 : 0;
        int64_t lo = INT64_MAX, hi = INT64_MIN, sum = 0;
        for (int r = 0; r < perf_size; r++) {
            int64_t v = perf_ar_value(s, r, h);
            u = op == TC_PROD ? u * (uint64_t)v : u + (uint64_t)v;
            sum += v;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        switch (op) {
        case TC_SUM:
        case TC_PROD: memcpy(&s->expect[h], &u, sizeof u); break;
        case TC_AVG: s->expect[h] = sum / n; break;
        case TC_MIN: s->expect[h] = lo; break;
        case TC_MAX: s->expect[h] = hi; break;
        }
    }
}

/* Allgather/broadcast data: any integer exact in the dtype. */
int64_t perf_copy_value(tc_dtype_t dt, uint64_t j, uint64_t salt)
{
    uint64_t x = perf_hash(j * 0x100000001b3ull + salt);
    int64_t lim = perf_dt_exact_limit(dt), v;
    if (!perf_dt_is_float(dt)) {
        memcpy(&v, &x, sizeof v);
        return v;
    }
    if (lim > ((int64_t)1 << 40)) {
        lim = (int64_t)1 << 40;
    }
    return (int64_t)(x % (uint64_t)(2 * lim + 1)) - lim;
}

long long perf_check_result(const perf_bench_t *b, const void *out, uint64_t n, perf_want_fn want,
                            const char *impl)
{
    tc_dtype_t dt = b->o->dtype;
    long long wrong = 0;
    for (uint64_t i = 0; i < n; i++) {
        double got, wantd;
        if (!perf_elem_is(dt, out, i, want(b, i), &got, &wantd)) {
            if (wrong == 0) {
                fprintf(stderr,
                        "tcoll-perf: rank %d: %s %s of %llu %s elements: element %llu is %.17g, "
                        "expected %.17g\n",
                        perf_rank, impl, perf_mode_names[b->o->mode], (unsigned long long)b->count,
                        tc_dtype_name(dt), (unsigned long long)i, got, wantd);
            }
            wrong++;
        }
    }
    return wrong;
}
