/*
 * tcoll_perf.c - tcoll-perf, the benchmark users run first: tcoll's
 * collectives through the public asynchronous API (submit, tc_wait,
 * tc_request_free), side by side in the same run and on the same buffers with
 * the MPI call a user would make instead (MPI_Allreduce, MPI_Allgather,
 * MPI_Bcast).
 *
 * Sweep modes (allreduce, allgather, broadcast) print one row per message size:
 *
 *   size count dtype | tcoll: time(us) algbw busbw wrong | MPI: same | ratio
 *
 *   size   bytes of the result each rank ends with (allgather: the whole
 *          gathered output; each rank sends size/n of it)
 *   count  elements of that result
 *   time   median over the timed iterations of the slowest rank's time for
 *          one operation (each iteration is timed alone, between barriers;
 *          the per-iteration maximum over ranks comes from MPI_Allreduce MAX)
 *   algbw  size / time, GB/s (1e9 bytes per second)
 *   busbw  algbw x 2(n-1)/n for allreduce, x (n-1)/n for allgather, x 1 for
 *          broadcast: the bandwidth each rank's link needs, comparable across n
 *   wrong  elements that differ from the exact expected value, summed over
 *          ranks, from one extra, untimed operation into a poisoned buffer
 *   ratio  tcoll busbw / MPI busbw (= MPI time / tcoll time): > 1 means tcoll
 *          is faster
 *
 * The data makes every expected value exact, for float16 and bfloat16 too:
 * small integers, chosen per element from a hash of its index (so a result
 * moved to the wrong place is caught), in a range where every partial sum or
 * product is representable, and for avg a sum that is a multiple of n.
 *
 * Workload mode replays a list of tensors (name, elements, shape; default the
 * ResNet-50 gradients): each step submits every tensor as a float32 allreduce
 * in backprop order (last line first) and waits for all of them, and is timed
 * for tcoll, for one MPI_Allreduce per tensor, and for packing everything into
 * one buffer + one MPI_Allreduce + unpacking (the copies included).
 *
 * This is a benchmark, not a test: it never judges a time. It must exit
 * nonzero when a result is wrong or a call fails (1) or the options are bad
 * (2), so CTest can run it as a correctness smoke test. Only rank 0 prints,
 * except a rank that meets an error, which says so before aborting the job.
 * It uses only tcoll's public header.
 */
#define _GNU_SOURCE
#include "tcoll.h"

#include <mpi.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Where the default workload file lives: relative to the executable's
 * directory once installed, and in the source tree for a build directory.
 * perf.cmake defines both; a hand-made build gets these. */
#ifndef TCOLL_PERF_REL_DATADIR
#define TCOLL_PERF_REL_DATADIR "../share/tcoll"
#endif
#ifndef TCOLL_PERF_SOURCE_WORKLOAD
#define TCOLL_PERF_SOURCE_WORKLOAD ""
#endif
#define PERF_WORKLOAD_FILE "resnet50.tsv"

#define PERF_EXIT_FAIL 1  /* a call failed or a result was wrong */
#define PERF_EXIT_USAGE 2 /* bad options or a bad workload file */

/* Expected allreduce values depend on the element index only through
 * hash(index) mod PERF_HBUCKETS, so they are tabulated once (a prime, so
 * no power-of-two stride lines up with it). */
#define PERF_HBUCKETS 1021

typedef enum { MODE_ALLREDUCE, MODE_ALLGATHER, MODE_BROADCAST, MODE_WORKLOAD } perf_mode_t;

static const char *const mode_names[] = {"allreduce", "allgather", "broadcast", "workload"};

typedef struct {
    perf_mode_t mode;
    uint64_t min_bytes, max_bytes, factor;
    tc_op_t op;
    tc_dtype_t dtype;
    int check;
    int iters, warmup; /* 0: chosen per size */
    int root;
    const char *workload, *json, *plot;
    int mode_set, op_set, dtype_set;
} perf_opts_t;

/* One result row. wrong < 0: not checked. */
typedef struct {
    uint64_t bytes, count;
    int iters, warmup;
    double us[2];        /* [0] tcoll, [1] MPI */
    long long wrong[2];
} perf_row_t;

static int g_rank, g_size;
static MPI_Comm g_comm;       /* a duplicate of MPI_COMM_WORLD: barriers, timings, the MPI side */
static int g_progress;        /* rank 0, and stderr reaches a terminal */
static int g_progress_shown;

/* ------------------------------------------------------------------------ */
/* Errors, time, progress                                                    */
/* ------------------------------------------------------------------------ */

/* Prints what went wrong on this rank and ends the whole job with status 1,
 * so no rank waits forever for one that stopped. */
static void perf_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void perf_die(const char *fmt, ...)
{
    va_list ap;
    if (g_progress_shown) {
        fputs("\r\033[K", stderr);
    }
    fprintf(stderr, "tcoll-perf: rank %d: ", g_rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, PERF_EXIT_FAIL);
    exit(PERF_EXIT_FAIL); /* not reached */
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void progress(const char *fmt, ...)
{
    va_list ap;
    if (!g_progress) {
        return;
    }
    fputs("\r\033[K", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
    g_progress_shown = 1;
}

static void progress_clear(void)
{
    if (g_progress_shown) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        fputs("\r\033[K", stderr);
        fflush(stderr);
        g_progress_shown = 0;
        /* mpirun forwards stderr and stdout separately: give the clear a
         * head start over the row that follows, so they do not share a line. */
        nanosleep(&ts, NULL);
    }
}

/* Whether progress lines would reach a person: stderr is a terminal, or this
 * process was started by a local launcher (mpirun pipes a rank's stderr to
 * itself) whose own stderr is one. Linux /proc; no side effects. */
static int stderr_is_terminal(void)
{
    static const char *const launchers[] = {"mpirun", "mpiexec", "orterun", "orted",
                                            "prterun", "prted", "hydra_pmi_proxy"};
    char path[64], buf[256];
    FILE *f;
    ssize_t n;
    int known = 0;
    if (isatty(STDERR_FILENO)) {
        return 1;
    }
    snprintf(path, sizeof path, "/proc/%d/comm", (int)getppid());
    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    if (fgets(buf, sizeof buf, f) != NULL) {
        buf[strcspn(buf, "\n")] = '\0';
        for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
            known |= strcmp(buf, launchers[i]) == 0;
        }
    }
    fclose(f);
    if (!known) {
        return 0;
    }
    snprintf(path, sizeof path, "/proc/%d/fd/2", (int)getppid());
    n = readlink(path, buf, sizeof buf - 1);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    return strncmp(buf, "/dev/pts/", 9) == 0 || strncmp(buf, "/dev/tty", 8) == 0;
}

static void *perf_alloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL) {
        perf_die("cannot allocate %zu bytes for %s", bytes, what);
    }
    return p;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ------------------------------------------------------------------------ */
/* Data types: float16/bfloat16 by hand, element access, MPI equivalents     */
/* ------------------------------------------------------------------------ */

static uint16_t f32_to_f16(float f)
{
    uint32_t x, ax, sign, m, r, rem, half;
    int shift;
    memcpy(&x, &f, sizeof x);
    sign = (x >> 16) & 0x8000u;
    ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) {
        return (uint16_t)(sign | 0x7e00u); /* NaN stays NaN */
    }
    if (ax >= 0x47800000u) {
        return (uint16_t)(sign | 0x7c00u); /* >= 2^16 or inf */
    }
    if (ax >= 0x38800000u) { /* a normal binary16: keep 10 of 23 mantissa bits */
        m = ax & 0x7fffffu;
        r = ((((ax >> 23) - 127u + 15u)) << 10) | (m >> 13);
        rem = m & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) {
            r++; /* a carry into the exponent is right, up to inf */
        }
        return (uint16_t)(sign | r);
    }
    if (ax <= 0x33000000u) {
        return (uint16_t)sign; /* at most 2^-25: rounds to zero */
    }
    /* A subnormal binary16: count units of 2^-24. */
    m = (ax & 0x7fffffu) | 0x800000u;
    shift = 126 - (int)(ax >> 23); /* 14..24 */
    r = m >> shift;
    rem = m & ((1u << shift) - 1u);
    half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) {
        r++;
    }
    return (uint16_t)(sign | r);
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
    float f;
    if (e == 0) {
        f = (float)m * 0x1p-24f;
        return sign ? -f : f;
    }
    x = sign | (e == 31 ? 0x7f800000u : (e + 112u) << 23) | (m << 13);
    memcpy(&f, &x, sizeof f);
    return f;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t)((x >> 16) | 0x40u);
    }
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static float bf16_to_f32(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static int dt_is_float(tc_dtype_t dt)
{
    return dt == TC_FLOAT16 || dt == TC_BFLOAT16 || dt == TC_FLOAT32 || dt == TC_FLOAT64;
}

/* Largest integer magnitude up to which every integer is exact. */
static int64_t dt_exact_limit(tc_dtype_t dt)
{
    switch (dt) {
    case TC_FLOAT16: return 2048;
    case TC_BFLOAT16: return 256;
    case TC_FLOAT32: return (int64_t)1 << 24;
    case TC_FLOAT64: return (int64_t)1 << 53;
    default: return INT64_MAX;
    }
}

/* Element i of buf := the integer v (truncated for integer dtypes). */
static void put_int(tc_dtype_t dt, void *buf, size_t i, int64_t v)
{
    uint64_t u = (uint64_t)v;
    switch (dt) {
    case TC_UINT8:
    case TC_INT8: ((uint8_t *)buf)[i] = (uint8_t)u; break;
    case TC_UINT16:
    case TC_INT16: ((uint16_t *)buf)[i] = (uint16_t)u; break;
    case TC_INT32: ((uint32_t *)buf)[i] = (uint32_t)u; break;
    case TC_INT64: ((uint64_t *)buf)[i] = u; break;
    case TC_FLOAT16: ((uint16_t *)buf)[i] = f32_to_f16((float)v); break;
    case TC_BFLOAT16: ((uint16_t *)buf)[i] = f32_to_bf16((float)v); break;
    case TC_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case TC_FLOAT64: ((double *)buf)[i] = (double)v; break;
    }
}

/* An integer element's bits (zero-extended) as the value its dtype means. */
static double int_meaning(tc_dtype_t dt, uint64_t bits)
{
    switch (dt) {
    case TC_INT8: return (double)(bits >= 0x80u ? (int64_t)bits - 0x100 : (int64_t)bits);
    case TC_INT16: return (double)(bits >= 0x8000u ? (int64_t)bits - 0x10000 : (int64_t)bits);
    case TC_INT32:
        return (double)(bits >= 0x80000000u ? (int64_t)bits - 0x100000000 : (int64_t)bits);
    case TC_INT64: {
        int64_t v;
        memcpy(&v, &bits, sizeof v);
        return (double)v;
    }
    default: return (double)bits;
    }
}

/* Whether element i of buf is v: integers bit for bit after truncation to
 * their width, floating types by value. *got_p and *want_p: both as numbers,
 * for a message. */
static int elem_is(tc_dtype_t dt, const void *buf, size_t i, int64_t v, double *got_p,
                   double *want_p)
{
    uint64_t u = (uint64_t)v, g = 0;
    double d = 0;
    switch (dt) {
    case TC_UINT8:
    case TC_INT8: g = ((const uint8_t *)buf)[i]; u &= 0xffu; break;
    case TC_UINT16:
    case TC_INT16: g = ((const uint16_t *)buf)[i]; u &= 0xffffu; break;
    case TC_INT32: g = ((const uint32_t *)buf)[i]; u &= 0xffffffffu; break;
    case TC_INT64: g = ((const uint64_t *)buf)[i]; break;
    case TC_FLOAT16: d = f16_to_f32(((const uint16_t *)buf)[i]); break;
    case TC_BFLOAT16: d = bf16_to_f32(((const uint16_t *)buf)[i]); break;
    case TC_FLOAT32: d = ((const float *)buf)[i]; break;
    case TC_FLOAT64: d = ((const double *)buf)[i]; break;
    }
    if (!dt_is_float(dt)) {
        *got_p = int_meaning(dt, g);
        *want_p = int_meaning(dt, u);
        return g == u;
    }
    *got_p = d;
    *want_p = (double)v;
    return d == (double)v;
}

/* The MPI datatype for a tcoll dtype; 16-bit floats travel as MPI_UINT16_T
 * and reduce with the user-defined operations below. */
static MPI_Datatype mpi_dtype(tc_dtype_t dt)
{
    switch (dt) {
    case TC_UINT8: return MPI_UINT8_T;
    case TC_INT8: return MPI_INT8_T;
    case TC_UINT16: return MPI_UINT16_T;
    case TC_INT16: return MPI_INT16_T;
    case TC_INT32: return MPI_INT32_T;
    case TC_INT64: return MPI_INT64_T;
    case TC_FLOAT16:
    case TC_BFLOAT16: return MPI_UINT16_T;
    case TC_FLOAT32: return MPI_FLOAT;
    case TC_FLOAT64: return MPI_DOUBLE;
    }
    return MPI_DATATYPE_NULL;
}

/* float16/bfloat16 reductions for MPI: combine in float32, round to nearest
 * even after each operation (as tcoll does); min/max propagate NaN. */
#define PERF_HALF_OP(NAME, TO, FROM, EXPR)                                            \
    static void NAME(void *in, void *inout, int *len, MPI_Datatype *dt)               \
    {                                                                                 \
        const uint16_t *a = in;                                                       \
        uint16_t *b = inout;                                                          \
        (void)dt;                                                                     \
        for (int i = 0; i < *len; i++) {                                              \
            float x = TO(a[i]), y = TO(b[i]);                                         \
            b[i] = FROM(EXPR);                                                        \
        }                                                                             \
    }
PERF_HALF_OP(f16_sum, f16_to_f32, f32_to_f16, x + y)
PERF_HALF_OP(f16_prod, f16_to_f32, f32_to_f16, x * y)
PERF_HALF_OP(f16_min, f16_to_f32, f32_to_f16, (isnan(x) || x < y) ? x : y)
PERF_HALF_OP(f16_max, f16_to_f32, f32_to_f16, (isnan(x) || x > y) ? x : y)
PERF_HALF_OP(bf16_sum, bf16_to_f32, f32_to_bf16, x + y)
PERF_HALF_OP(bf16_prod, bf16_to_f32, f32_to_bf16, x * y)
PERF_HALF_OP(bf16_min, bf16_to_f32, f32_to_bf16, (isnan(x) || x < y) ? x : y)
PERF_HALF_OP(bf16_max, bf16_to_f32, f32_to_bf16, (isnan(x) || x > y) ? x : y)

/* The MPI operation for (dtype, op); avg is a sum followed by mpi_avg_finish.
 * *created_p says whether the caller must MPI_Op_free it. */
static MPI_Op mpi_op(tc_dtype_t dt, tc_op_t op, int *created_p)
{
    MPI_User_function *fn = NULL;
    MPI_Op mop;
    *created_p = 0;
    if (dt != TC_FLOAT16 && dt != TC_BFLOAT16) {
        switch (op) {
        case TC_SUM:
        case TC_AVG: return MPI_SUM;
        case TC_MIN: return MPI_MIN;
        case TC_MAX: return MPI_MAX;
        case TC_PROD: return MPI_PROD;
        }
        return MPI_OP_NULL;
    }
    switch (op) {
    case TC_SUM:
    case TC_AVG: fn = dt == TC_FLOAT16 ? f16_sum : bf16_sum; break;
    case TC_MIN: fn = dt == TC_FLOAT16 ? f16_min : bf16_min; break;
    case TC_MAX: fn = dt == TC_FLOAT16 ? f16_max : bf16_max; break;
    case TC_PROD: fn = dt == TC_FLOAT16 ? f16_prod : bf16_prod; break;
    }
    MPI_Op_create(fn, 1, &mop);
    *created_p = 1;
    return mop;
}

/* MPI has no average: divide the sum by n, as a user of MPI would have to. */
static void mpi_avg_finish(tc_dtype_t dt, void *buf, size_t count)
{
    float nf = (float)g_size;
    size_t i;
    switch (dt) {
    case TC_FLOAT32:
        for (i = 0; i < count; i++) {
            ((float *)buf)[i] /= nf;
        }
        break;
    case TC_FLOAT64:
        for (i = 0; i < count; i++) {
            ((double *)buf)[i] /= (double)g_size;
        }
        break;
    case TC_FLOAT16:
        for (i = 0; i < count; i++) {
            uint16_t *p = (uint16_t *)buf + i;
            *p = f32_to_f16(f16_to_f32(*p) / nf);
        }
        break;
    case TC_BFLOAT16:
        for (i = 0; i < count; i++) {
            uint16_t *p = (uint16_t *)buf + i;
            *p = f32_to_bf16(bf16_to_f32(*p) / nf);
        }
        break;
    default: break; /* integers: avg is refused when options are parsed */
    }
}

/* ------------------------------------------------------------------------ */
/* Test data with exact expected results                                     */
/* ------------------------------------------------------------------------ */

static uint64_t perf_hash(uint64_t x)
{
    x ^= x >> 32;
    x *= 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    x *= 0xc2b2ae3d27d4eb4full;
    x ^= x >> 32;
    return x;
}

static unsigned hbucket(uint64_t i, uint64_t salt)
{
    return (unsigned)(perf_hash(i + salt) % PERF_HBUCKETS);
}

/* Allreduce data: rank r's element i is ar_value(s, r, hbucket(i)). */
typedef struct {
    tc_dtype_t dt;
    tc_op_t op;
    int k;     /* sum/avg: values span k consecutive integers */
    int d;     /* avg: 1 if rank r adds (2r - (n-1)) to half of the elements */
    int64_t expect[PERF_HBUCKETS];
} ar_scheme_t;

static int64_t ar_value(const ar_scheme_t *s, int r, unsigned h)
{
    int n = g_size, sgn = dt_is_float(s->dt) || s->dt == TC_INT8 || s->dt == TC_INT16 ||
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

static void ar_scheme_init(ar_scheme_t *s, tc_dtype_t dt, tc_op_t op)
{
    int64_t lim = dt_exact_limit(dt), n = g_size;
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
        for (int r = 0; r < g_size; r++) {
            int64_t v = ar_value(s, r, h);
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
static int64_t copy_value(tc_dtype_t dt, uint64_t j, uint64_t salt)
{
    uint64_t x = perf_hash(j * 0x100000001b3ull + salt);
    int64_t lim = dt_exact_limit(dt), v;
    if (!dt_is_float(dt)) {
        memcpy(&v, &x, sizeof v);
        return v;
    }
    if (lim > ((int64_t)1 << 40)) {
        lim = (int64_t)1 << 40;
    }
    return (int64_t)(x % (uint64_t)(2 * lim + 1)) - lim;
}

/* ------------------------------------------------------------------------ */
/* One sweep row                                                             */
/* ------------------------------------------------------------------------ */

typedef struct {
    const perf_opts_t *o;
    const ar_scheme_t *ar;
    uint64_t count;    /* elements of the result */
    uint64_t per;      /* allgather: elements each rank sends */
    uint64_t salt;
    void *send;        /* allreduce/allgather input; the broadcast buffer */
    void *recv;        /* allreduce output; MPI's allgather output */
    char name[64];
    tc_tensor_t tensor;
    MPI_Datatype mdt;
    MPI_Op mop;
} bench_t;

/* Counts the elements of out that differ from what the operation must give;
 * reports the first one on stderr. */
static long long check_result(const bench_t *b, const void *out, const char *impl)
{
    tc_dtype_t dt = b->o->dtype;
    long long wrong = 0;
    for (uint64_t i = 0; i < b->count; i++) {
        int64_t want;
        double got, wantd;
        if (b->o->mode == MODE_ALLREDUCE) {
            want = b->ar->expect[hbucket(i, b->salt)];
        } else {
            want = copy_value(dt, i, b->salt);
        }
        if (!elem_is(dt, out, i, want, &got, &wantd)) {
            if (wrong == 0) {
                fprintf(stderr,
                        "tcoll-perf: rank %d: %s %s of %llu %s elements: element %llu is %.17g, "
                        "expected %.17g\n",
                        g_rank, impl, mode_names[b->o->mode], (unsigned long long)b->count,
                        tc_dtype_name(dt), (unsigned long long)i, got, wantd);
            }
            wrong++;
        }
    }
    return wrong;
}

/* Fills the inputs for this size and poisons the outputs (0xa5 bytes: a
 * non-integer float, and an unlikely integer). */
static void bench_fill(bench_t *b)
{
    tc_dtype_t dt = b->o->dtype;
    size_t es = tc_dtype_size(dt);
    switch (b->o->mode) {
    case MODE_ALLREDUCE:
        for (uint64_t i = 0; i < b->count; i++) {
            put_int(dt, b->send, i, ar_value(b->ar, g_rank, hbucket(i, b->salt)));
        }
        memset(b->recv, 0xa5, b->count * es);
        break;
    case MODE_ALLGATHER:
        for (uint64_t i = 0; i < b->per; i++) {
            put_int(dt, b->send, i, copy_value(dt, (uint64_t)g_rank * b->per + i, b->salt));
        }
        memset(b->recv, 0xa5, b->count * es);
        break;
    case MODE_BROADCAST:
        if (g_rank == b->o->root) {
            for (uint64_t i = 0; i < b->count; i++) {
                put_int(dt, b->send, i, copy_value(dt, i, b->salt));
            }
        } else {
            memset(b->send, 0xa5, b->count * es);
        }
        break;
    case MODE_WORKLOAD: break;
    }
}

static void poison_output(bench_t *b)
{
    size_t bytes = b->count * tc_dtype_size(b->o->dtype);
    if (b->o->mode == MODE_BROADCAST) {
        if (g_rank != b->o->root) {
            memset(b->send, 0xa5, bytes);
        }
    } else {
        memset(b->recv, 0xa5, bytes);
    }
}

/* One tcoll operation through the public async API: submit, wait, (check),
 * free. Returns the local wrong-element count when check is set. */
static long long tcoll_once(bench_t *b, int check)
{
    tc_request_t *req = NULL;
    tc_status_t st = TC_OK;
    tc_tensor_t out;
    long long wrong = 0;
    const char *fn = mode_names[b->o->mode];
    switch (b->o->mode) {
    case MODE_ALLREDUCE: st = tc_allreduce(b->name, &b->tensor, b->recv, b->o->op, &req); break;
    case MODE_ALLGATHER: st = tc_allgather(b->name, &b->tensor, &req); break;
    case MODE_BROADCAST: st = tc_broadcast(b->name, &b->tensor, b->o->root, &req); break;
    case MODE_WORKLOAD: break;
    }
    if (st != TC_OK) {
        perf_die("tc_%s('%s') failed: %s: %s", fn, b->name, tc_status_string(st), tc_last_error());
    }
    st = tc_wait(req);
    if (st != TC_OK) {
        perf_die("tc_wait('%s') failed: %s: %s", b->name, tc_status_string(st),
                 tc_request_error(req));
    }
    if (check) {
        if (b->o->mode == MODE_ALLGATHER) {
            st = tc_request_output(req, &out);
            if (st != TC_OK) {
                perf_die("tc_request_output('%s') failed: %s: %s", b->name,
                         tc_status_string(st), tc_last_error());
            }
            if (out.dtype != b->o->dtype || out.ndim != 1 || (uint64_t)out.shape[0] != b->count) {
                perf_die("tc_request_output('%s'): got a %s tensor of %d dims, shape[0] %lld; "
                         "expected %s [%llu]",
                         b->name, tc_dtype_name(out.dtype), out.ndim,
                         out.ndim > 0 ? (long long)out.shape[0] : -1LL,
                         tc_dtype_name(b->o->dtype), (unsigned long long)b->count);
            }
            wrong = check_result(b, out.data, "tcoll");
        } else {
            wrong = check_result(b, b->o->mode == MODE_BROADCAST ? b->send : b->recv, "tcoll");
        }
    }
    tc_request_free(req);
    return wrong;
}

static long long mpi_once(bench_t *b, int check)
{
    switch (b->o->mode) {
    case MODE_ALLREDUCE:
        MPI_Allreduce(b->send, b->recv, (int)b->count, b->mdt, b->mop, g_comm);
        if (b->o->op == TC_AVG) {
            mpi_avg_finish(b->o->dtype, b->recv, b->count);
        }
        break;
    case MODE_ALLGATHER:
        MPI_Allgather(b->send, (int)b->per, b->mdt, b->recv, (int)b->per, b->mdt, g_comm);
        break;
    case MODE_BROADCAST: MPI_Bcast(b->send, (int)b->count, b->mdt, b->o->root, g_comm); break;
    case MODE_WORKLOAD: break;
    }
    if (!check) {
        return 0;
    }
    return check_result(b, b->o->mode == MODE_BROADCAST ? b->send : b->recv, "MPI");
}

/* Warmup, then iters timed operations; returns the median over iterations of
 * the slowest rank's time, in seconds. */
static double time_impl(bench_t *b, int impl, int iters, int warmup, double *times)
{
    for (int i = 0; i < warmup + iters; i++) {
        double t0;
        MPI_Barrier(g_comm);
        t0 = now_s();
        if (impl == 0) {
            tcoll_once(b, 0);
        } else {
            mpi_once(b, 0);
        }
        if (i >= warmup) {
            times[i - warmup] = now_s() - t0;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, times, iters, MPI_DOUBLE, MPI_MAX, g_comm);
    return median(times, iters);
}

/* One extra, untimed operation into a poisoned output; wrong elements summed
 * over ranks. */
static long long check_impl(bench_t *b, int impl)
{
    long long wrong;
    poison_output(b);
    MPI_Barrier(g_comm);
    wrong = impl == 0 ? tcoll_once(b, 1) : mpi_once(b, 1);
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, g_comm);
    return wrong;
}

/* Default iterations: 100 up to 5 MiB, then fewer so each size takes about
 * the same time (512 MiB of data per side), never under 5. */
static int default_iters(uint64_t bytes)
{
    uint64_t it = bytes ? (512ull << 20) / bytes : 100;
    return it > 100 ? 100 : it < 5 ? 5 : (int)it;
}

static int default_warmup(int iters)
{
    int w = iters / 10;
    return w < 2 ? 2 : w;
}

static double busbw_factor(perf_mode_t mode)
{
    double n = g_size;
    switch (mode) {
    case MODE_ALLREDUCE: return 2.0 * (n - 1) / n;
    case MODE_ALLGATHER: return (n - 1) / n;
    default: return 1.0;
    }
}

/* 8, 1K, 256M, 1G when exact; plain bytes otherwise. */
static void fmt_size(char *buf, size_t len, uint64_t bytes)
{
    static const char units[] = "KMGTPE";
    int u = -1;
    while (bytes >= 1024 && bytes % 1024 == 0 && u < 5) {
        bytes /= 1024;
        u++;
    }
    if (u < 0) {
        snprintf(buf, len, "%llu", (unsigned long long)bytes);
    } else {
        snprintf(buf, len, "%llu%c", (unsigned long long)bytes, units[u]);
    }
}

static void fmt_wrong(char *buf, size_t len, long long w)
{
    if (w < 0) {
        snprintf(buf, len, "-");
    } else {
        snprintf(buf, len, "%lld", w);
    }
}

static void print_row(const perf_opts_t *o, const perf_row_t *r)
{
    double f = busbw_factor(o->mode), alg[2];
    char w0[24], w1[24];
    for (int k = 0; k < 2; k++) {
        alg[k] = (double)r->bytes / r->us[k] / 1e3;
    }
    fmt_wrong(w0, sizeof w0, r->wrong[0]);
    fmt_wrong(w1, sizeof w1, r->wrong[1]);
    progress_clear();
    printf("%12llu %12llu %8s  %10.2f %7.2f %7.2f %6s  %10.2f %7.2f %7.2f %6s  %6.2f\n",
           (unsigned long long)r->bytes, (unsigned long long)r->count, tc_dtype_name(o->dtype),
           r->us[0], alg[0], alg[0] * f, w0, r->us[1], alg[1], alg[1] * f, w1,
           r->us[1] / r->us[0]);
    fflush(stdout);
}

static void mpi_library_name(char *buf, size_t len)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(v, &n);
    v[strcspn(v, ",\n")] = '\0';
    snprintf(buf, len, "%.100s", v);
}

static void print_sweep_header(const perf_opts_t *o, int sizes)
{
    char lib[128];
    const char *factor = o->mode == MODE_ALLREDUCE   ? "2(n-1)/n"
                         : o->mode == MODE_ALLGATHER ? "(n-1)/n"
                                                     : "1";
    mpi_library_name(lib, sizeof lib);
    printf("# tcoll-perf: tcoll %s vs %s, %d ranks (%d on this node)\n", tc_version(), lib, g_size,
           tc_local_size());
    printf("# %s", mode_names[o->mode]);
    if (o->mode == MODE_ALLREDUCE) {
        printf(", op %s", tc_op_name(o->op));
    }
    if (o->mode == MODE_BROADCAST) {
        printf(", root %d", o->root);
    }
    printf(", dtype %s, %d sizes from %llu to %llu bytes, check %s\n", tc_dtype_name(o->dtype),
           sizes, (unsigned long long)o->min_bytes, (unsigned long long)o->max_bytes,
           o->check ? "on" : "off");
    if (o->iters) {
        printf("# iterations: %d timed after %d warmup, per size and side\n", o->iters,
               o->warmup >= 0 ? o->warmup : default_warmup(o->iters));
    } else {
        printf("# iterations: 100 timed per size and side up to 5 MiB, then 512 MiB/size (at "
               "least 5), after iters/10 warmup (at least 2)\n");
    }
    printf("# time: median over iterations of the slowest rank (us); algbw = size/time (GB/s);\n"
           "# busbw = algbw * %s (n = %d ranks); wrong = elements differing from the exact "
           "result, all ranks\n",
           factor, g_size);
    if (o->mode == MODE_ALLGATHER) {
        printf("# size and count: the gathered output; each rank sends count/n elements\n");
    }
    printf("# ratio = tcoll busbw / MPI busbw: > 1 means tcoll is faster\n");
    printf("#%35s%s  %s\n", "", "------------- tcoll -------------",
           "-------------- MPI --------------");
    printf("#%11s %12s %8s  %10s %7s %7s %6s  %10s %7s %7s %6s  %6s\n", "size(B)", "count", "type",
           "time(us)", "algbw", "busbw", "wrong", "time(us)", "algbw", "busbw", "wrong", "ratio");
    fflush(stdout);
}

/* Runs every size; returns the rows (rank 0 prints them as they come). */
static perf_row_t *run_sweep(const perf_opts_t *o, int *nrows_p, long long *wrong_p)
{
    size_t es = tc_dtype_size(o->dtype);
    uint64_t max_count = o->max_bytes / es, bytes, *sizes;
    int nsizes = 0, n, created = 0, max_iters = 0;
    perf_row_t *rows;
    ar_scheme_t *ar = NULL;
    double *times;
    bench_t b;
    void *send, *recv;

    /* -b, -b*f, -b*f^2, ... up to -e, and -e itself last if the steps miss it. */
    sizes = perf_alloc(sizeof *sizes * 66, "sizes"); /* f >= 2: at most 64 steps + 1 */
    for (bytes = o->min_bytes;; bytes *= o->factor) {
        sizes[nsizes++] = bytes;
        if (bytes > o->max_bytes / o->factor) {
            break;
        }
    }
    if (sizes[nsizes - 1] != o->max_bytes) {
        sizes[nsizes++] = o->max_bytes;
    }
    for (n = 0; n < nsizes; n++) {
        int it = o->iters ? o->iters : default_iters(sizes[n]);
        max_iters = it > max_iters ? it : max_iters;
    }
    rows = perf_alloc(sizeof *rows * (size_t)nsizes, "rows");
    times = perf_alloc(sizeof *times * (size_t)max_iters, "timings");

    /* One set of buffers for every size, touched now so that neither side
     * pays the first-touch page faults. */
    send = perf_alloc(max_count * es, "the send buffer");
    recv = perf_alloc(o->mode == MODE_BROADCAST ? 0 : max_count * es, "the receive buffer");
    memset(send, 0, max_count * es);
    if (o->mode != MODE_BROADCAST) {
        memset(recv, 0, max_count * es);
    }
    if (o->mode == MODE_ALLREDUCE) {
        ar = perf_alloc(sizeof *ar, "the expected values");
        ar_scheme_init(ar, o->dtype, o->op);
    }

    memset(&b, 0, sizeof b);
    b.o = o;
    b.ar = ar;
    b.send = send;
    b.recv = recv;
    b.mdt = mpi_dtype(o->dtype);
    b.mop = o->mode == MODE_ALLREDUCE ? mpi_op(o->dtype, o->op, &created) : MPI_OP_NULL;

    if (g_rank == 0) {
        print_sweep_header(o, nsizes);
    }
    *wrong_p = 0;
    for (n = 0; n < nsizes; n++) {
        perf_row_t *r = &rows[n];
        bytes = sizes[n];
        uint64_t count = bytes / es;
        if (o->mode == MODE_ALLGATHER) {
            count -= count % (uint64_t)g_size;
        }
        b.count = count;
        b.per = o->mode == MODE_ALLGATHER ? count / (uint64_t)g_size : count;
        b.salt = perf_hash(count + 1);
        snprintf(b.name, sizeof b.name, "tcoll-perf/%s/%llu", mode_names[o->mode],
                 (unsigned long long)bytes);
        memset(&b.tensor, 0, sizeof b.tensor);
        b.tensor.data = send;
        b.tensor.dtype = o->dtype;
        b.tensor.ndim = 1;
        b.tensor.shape[0] = (int64_t)b.per;

        memset(r, 0, sizeof *r);
        r->bytes = count * es;
        r->count = count;
        r->iters = o->iters ? o->iters : default_iters(bytes);
        r->warmup = o->warmup >= 0 ? o->warmup : default_warmup(r->iters);
        bench_fill(&b);
        for (int impl = 0; impl < 2; impl++) {
            progress("[%d/%d] %llu bytes: %s, %d iterations", n + 1, nsizes,
                     (unsigned long long)r->bytes, impl == 0 ? "tcoll" : "MPI", r->iters);
            r->us[impl] = time_impl(&b, impl, r->iters, r->warmup, times) * 1e6;
            r->wrong[impl] = o->check ? check_impl(&b, impl) : -1;
            if (r->wrong[impl] > 0) {
                *wrong_p += r->wrong[impl];
            }
        }
        if (g_rank == 0) {
            print_row(o, r);
        }
    }
    progress_clear();
    if (created) {
        MPI_Op_free(&b.mop);
    }
    free(ar);
    free(send);
    free(recv);
    free(times);
    free(sizes);
    *nrows_p = nsizes;
    return rows;
}

/* ------------------------------------------------------------------------ */
/* Workload mode                                                             */
/* ------------------------------------------------------------------------ */

typedef struct {
    char *name;
    tc_tensor_t t;   /* data points into the send block */
    size_t count, off; /* elements; offset in the send/recv blocks */
    size_t packoff;  /* offset in the packed buffer (backprop order) */
    int line;
} wl_tensor_t;

typedef struct {
    wl_tensor_t *t;
    int n;
    size_t total, span; /* elements; elements of the blocks incl. alignment */
} workload_t;

/* Reads the whole file on rank 0 and sends it to every rank (the path may
 * exist on rank 0's node only). NULL on every rank if rank 0 cannot read it. */
static char *read_file_bcast(const char *path, long long *len_p)
{
    long long len = -1;
    char *buf = NULL;
    if (g_rank == 0) {
        FILE *f = fopen(path, "rb");
        if (f == NULL) {
            fprintf(stderr, "tcoll-perf: cannot open workload file '%s': %s\n", path,
                    strerror(errno));
        } else {
            size_t cap = 1 << 16, got = 0, k;
            buf = perf_alloc(cap, "the workload file");
            while ((k = fread(buf + got, 1, cap - got - 1, f)) > 0) {
                got += k;
                if (cap - got - 1 == 0) {
                    char *nb = realloc(buf, cap * 2);
                    if (nb == NULL) {
                        perf_die("cannot allocate %zu bytes for the workload file", cap * 2);
                    }
                    buf = nb;
                    cap *= 2;
                }
            }
            if (ferror(f)) {
                fprintf(stderr, "tcoll-perf: cannot read workload file '%s': %s\n", path,
                        strerror(errno));
                free(buf);
                buf = NULL;
            } else {
                len = (long long)got;
            }
            fclose(f);
        }
    }
    MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, g_comm);
    if (len < 0 || len > INT_MAX) {
        if (g_rank == 0 && len > INT_MAX) {
            fprintf(stderr, "tcoll-perf: workload file '%s' is too large\n", path);
        }
        free(buf);
        return NULL;
    }
    if (g_rank != 0) {
        buf = perf_alloc((size_t)len + 1, "the workload file");
    }
    MPI_Bcast(buf, (int)len, MPI_CHAR, 0, g_comm);
    buf[len] = '\0';
    *len_p = len;
    return buf;
}

/* Parses "name<TAB>elements<TAB>shape" lines ('#' lines and blank lines
 * skipped). On a bad line rank 0 says which and why; returns -1. */
static int workload_parse(char *text, const char *path, workload_t *w)
{
    int cap = 256, lineno = 0;
    char *line = text, *next;
    memset(w, 0, sizeof *w);
    w->t = perf_alloc(sizeof *w->t * (size_t)cap, "the workload");
    for (; line != NULL && *line != '\0'; line = next) {
        char *f[4] = {NULL}, *save = NULL, *tok, *end, *dim;
        int nf = 0;
        wl_tensor_t *t;
        long long elems, prod = 1;

        lineno++;
        next = strchr(line, '\n');
        if (next != NULL) {
            *next++ = '\0';
        }
        line[strcspn(line, "\r")] = '\0';
        if (line[0] == '#' || line[strspn(line, " \t")] == '\0') {
            continue;
        }
        for (tok = strtok_r(line, "\t", &save); tok != NULL && nf < 4;
             tok = strtok_r(NULL, "\t", &save)) {
            f[nf++] = tok;
        }
        if (nf != 3) {
            if (g_rank == 0) {
                fprintf(stderr,
                        "tcoll-perf: %s:%d: expected 3 tab-separated fields (name, elements, "
                        "shape), got %d\n",
                        path, lineno, nf);
            }
            return -1;
        }
        if (strlen(f[0]) > TC_MAX_NAME_LEN) {
            if (g_rank == 0) {
                fprintf(stderr, "tcoll-perf: %s:%d: name longer than %d bytes\n", path, lineno,
                        TC_MAX_NAME_LEN);
            }
            return -1;
        }
        errno = 0;
        elems = strtoll(f[1], &end, 10);
        if (errno != 0 || end == f[1] || *end != '\0' || elems < 0 || elems > INT_MAX) {
            if (g_rank == 0) {
                fprintf(stderr, "tcoll-perf: %s:%d: bad element count '%s' (0..%d)\n", path,
                        lineno, f[1], INT_MAX);
            }
            return -1;
        }
        if (w->n == cap) {
            wl_tensor_t *nt = realloc(w->t, sizeof *w->t * (size_t)cap * 2);
            if (nt == NULL) {
                perf_die("cannot allocate the workload");
            }
            w->t = nt;
            cap *= 2;
        }
        t = &w->t[w->n];
        memset(t, 0, sizeof *t);
        t->line = lineno;
        t->t.dtype = TC_FLOAT32;
        for (dim = f[2]; *dim != '\0';) {
            long long d;
            errno = 0;
            d = strtoll(dim, &end, 10);
            if (errno != 0 || end == dim || d < 0 || d > INT_MAX || t->t.ndim == TC_MAX_DIMS ||
                (*end != '\0' && *end != 'x')) {
                if (g_rank == 0) {
                    fprintf(stderr,
                            "tcoll-perf: %s:%d: bad shape '%s' (like 64x3x7x7, at most %d dims)\n",
                            path, lineno, f[2], TC_MAX_DIMS);
                }
                return -1;
            }
            t->t.shape[t->t.ndim++] = d;
            if (d == 0) {
                prod = 0;
            } else if (prod <= INT_MAX) { /* past INT_MAX it cannot match elems anyway */
                prod *= d;
            }
            dim = *end == 'x' ? end + 1 : end;
        }
        if (t->t.ndim == 0 || prod != elems) {
            if (g_rank == 0) {
                fprintf(stderr, "tcoll-perf: %s:%d: shape '%s' does not hold %lld elements\n",
                        path, lineno, f[2], elems);
            }
            return -1;
        }
        for (int i = 0; i < w->n; i++) {
            if (strcmp(w->t[i].name, f[0]) == 0) {
                if (g_rank == 0) {
                    fprintf(stderr, "tcoll-perf: %s:%d: name '%s' already used on line %d\n",
                            path, lineno, f[0], w->t[i].line);
                }
                return -1;
            }
        }
        t->name = strdup(f[0]);
        if (t->name == NULL) {
            perf_die("cannot allocate the workload");
        }
        t->count = (size_t)elems;
        t->off = w->span;
        w->span += (t->count + 15) / 16 * 16; /* 64-byte aligned, like separate allocations */
        w->total += t->count;
        w->n++;
    }
    if (w->n == 0) {
        if (g_rank == 0) {
            fprintf(stderr, "tcoll-perf: %s: no tensors\n", path);
        }
        return -1;
    }
    return 0;
}

static void workload_free(workload_t *w)
{
    for (int i = 0; i < w->n; i++) {
        free(w->t[i].name);
    }
    free(w->t);
}

/* Every float32 element of the workload, indexed by its place in the blocks. */
static long long workload_check(const workload_t *w, const float *recv, const ar_scheme_t *ar,
                                const char *impl)
{
    long long wrong = 0;
    for (int k = 0; k < w->n; k++) {
        const wl_tensor_t *t = &w->t[k];
        for (size_t i = 0; i < t->count; i++) {
            int64_t want = ar->expect[hbucket(t->off + i, 0)];
            double got, wantd;
            if (!elem_is(TC_FLOAT32, recv + t->off, i, want, &got, &wantd)) {
                if (wrong == 0) {
                    fprintf(stderr,
                            "tcoll-perf: rank %d: workload, %s: tensor '%s' element %zu is %.9g, "
                            "expected %.9g\n",
                            g_rank, impl, t->name, i, got, wantd);
                }
                wrong++;
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, g_comm);
    return wrong;
}

enum { WL_TCOLL, WL_MPI_EACH, WL_MPI_PACKED, WL_NMODES };
static const char *const wl_mode_names[] = {"tcoll", "mpi-per-tensor", "mpi-packed"};

typedef struct {
    double ms[WL_NMODES], copy_ms;
    long long wrong[WL_NMODES];
    int steps, warmup;
} wl_result_t;

/* One step of one mode. Returns the time spent copying (packed mode). */
static double workload_step(const workload_t *w, int mode, tc_op_t op, float *send, float *recv,
                            float *pack, tc_request_t **reqs)
{
    double copy = 0, t0;
    int k;
    switch (mode) {
    case WL_TCOLL:
        for (k = w->n - 1; k >= 0; k--) {
            tc_status_t st = tc_allreduce(w->t[k].name, &w->t[k].t, recv + w->t[k].off, op, &reqs[k]);
            if (st != TC_OK) {
                perf_die("tc_allreduce('%s') failed: %s: %s", w->t[k].name, tc_status_string(st),
                         tc_last_error());
            }
        }
        for (k = w->n - 1; k >= 0; k--) {
            tc_status_t st = tc_wait(reqs[k]);
            if (st != TC_OK) {
                perf_die("tc_wait('%s') failed: %s: %s", w->t[k].name, tc_status_string(st),
                         tc_request_error(reqs[k]));
            }
            tc_request_free(reqs[k]);
        }
        break;
    case WL_MPI_EACH:
        for (k = w->n - 1; k >= 0; k--) {
            MPI_Allreduce(send + w->t[k].off, recv + w->t[k].off, (int)w->t[k].count, MPI_FLOAT,
                          MPI_SUM, g_comm);
            if (op == TC_AVG) {
                mpi_avg_finish(TC_FLOAT32, recv + w->t[k].off, w->t[k].count);
            }
        }
        break;
    case WL_MPI_PACKED:
        t0 = now_s();
        for (k = w->n - 1; k >= 0; k--) {
            memcpy(pack + w->t[k].packoff, send + w->t[k].off, w->t[k].count * sizeof(float));
        }
        copy += now_s() - t0;
        MPI_Allreduce(MPI_IN_PLACE, pack, (int)w->total, MPI_FLOAT, MPI_SUM, g_comm);
        if (op == TC_AVG) {
            mpi_avg_finish(TC_FLOAT32, pack, w->total);
        }
        t0 = now_s();
        for (k = w->n - 1; k >= 0; k--) {
            memcpy(recv + w->t[k].off, pack + w->t[k].packoff, w->t[k].count * sizeof(float));
        }
        copy += now_s() - t0;
        break;
    }
    return copy;
}

static void run_workload(const perf_opts_t *o, const char *path, workload_t *w, wl_result_t *res)
{
    int steps = o->iters ? o->iters : 20, warmup = o->warmup >= 0 ? o->warmup : 3;
    float *send, *recv, *pack;
    tc_request_t **reqs;
    ar_scheme_t *ar;
    double *times, *copies;
    size_t p = 0;

    if (w->total > INT_MAX) {
        perf_die("the workload has %zu elements, more than one MPI_Allreduce can take", w->total);
    }
    send = perf_alloc(w->span * sizeof(float), "the workload send block");
    recv = perf_alloc(w->span * sizeof(float), "the workload receive block");
    pack = perf_alloc(w->total * sizeof(float), "the packed buffer");
    reqs = perf_alloc(sizeof *reqs * (size_t)w->n, "requests");
    times = perf_alloc(sizeof *times * (size_t)steps, "timings");
    copies = perf_alloc(sizeof *copies * (size_t)steps, "timings");
    ar = perf_alloc(sizeof *ar, "the expected values");
    ar_scheme_init(ar, TC_FLOAT32, o->op);

    memset(send, 0, w->span * sizeof(float));
    memset(pack, 0, w->total * sizeof(float));
    for (int k = w->n - 1; k >= 0; k--) { /* packed in backprop order */
        wl_tensor_t *t = &w->t[k];
        t->t.data = send + t->off;
        t->packoff = p;
        p += t->count;
        for (size_t i = 0; i < t->count; i++) {
            put_int(TC_FLOAT32, send + t->off, i, ar_value(ar, g_rank, hbucket(t->off + i, 0)));
        }
    }

    if (g_rank == 0) {
        char lib[128];
        mpi_library_name(lib, sizeof lib);
        printf("# tcoll-perf: tcoll %s vs %s, %d ranks (%d on this node)\n", tc_version(), lib,
               g_size, tc_local_size());
        printf("# workload %s: %d tensors, %zu float32 elements (%zu bytes), op %s\n", path, w->n,
               w->total, w->total * sizeof(float), tc_op_name(o->op));
        printf("# one step: every tensor allreduced once, submitted in backprop order (last line "
               "first), then all waited for\n");
        printf("#   tcoll           tc_allreduce by name for each, then tc_wait + tc_request_free "
               "each\n");
        printf("#   mpi-per-tensor  one blocking MPI_Allreduce per tensor, same order\n");
        printf("#   mpi-packed      copy all into one buffer, one MPI_Allreduce (in place), copy "
               "back; copy(ms) is the copies' share\n");
        printf("# ms/step: median over %d steps (after %d warmup) of the slowest rank; "
               "ratio = ms/step / tcoll's ms/step (> 1: tcoll is faster)\n",
               steps, warmup);
        printf("#\n#%-17s %10s %8s %9s %8s\n", "mode", "ms/step", "ratio", "copy(ms)", "wrong");
        fflush(stdout);
    }

    for (int m = 0; m < WL_NMODES; m++) {
        memset(recv, 0xa5, w->span * sizeof(float));
        for (int s = 0; s < warmup + steps; s++) {
            double t0, c;
            progress("workload: %s, step %d/%d", wl_mode_names[m], s + 1, warmup + steps);
            MPI_Barrier(g_comm);
            t0 = now_s();
            c = workload_step(w, m, o->op, send, recv, pack, reqs);
            if (s >= warmup) {
                times[s - warmup] = now_s() - t0;
                copies[s - warmup] = c;
            }
        }
        MPI_Allreduce(MPI_IN_PLACE, times, steps, MPI_DOUBLE, MPI_MAX, g_comm);
        MPI_Allreduce(MPI_IN_PLACE, copies, steps, MPI_DOUBLE, MPI_MAX, g_comm);
        res->ms[m] = median(times, steps) * 1e3;
        if (m == WL_MPI_PACKED) {
            res->copy_ms = median(copies, steps) * 1e3;
        }
        res->wrong[m] = o->check ? workload_check(w, recv, ar, wl_mode_names[m]) : -1;
    }
    progress_clear();
    res->steps = steps;
    res->warmup = warmup;
    if (g_rank == 0) {
        for (int m = 0; m < WL_NMODES; m++) {
            char wr[24], cp[24];
            fmt_wrong(wr, sizeof wr, res->wrong[m]);
            if (m == WL_MPI_PACKED) {
                snprintf(cp, sizeof cp, "%.3f", res->copy_ms);
            } else {
                snprintf(cp, sizeof cp, "-");
            }
            printf(" %-17s %10.3f %8.2f %9s %8s\n", wl_mode_names[m], res->ms[m],
                   res->ms[m] / res->ms[WL_TCOLL], cp, wr);
        }
        fflush(stdout);
    }
    free(ar);
    free(copies);
    free(times);
    free(reqs);
    free(pack);
    free(recv);
    free(send);
}

/* The default workload file: next to an installed executable, else in the
 * source tree this program was built from. NULL if neither exists. */
static char *default_workload(char *tried, size_t tried_len)
{
    char exe[4096], *slash, *path;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    tried[0] = '\0';
    if (n > 0) {
        exe[n] = '\0';
        slash = strrchr(exe, '/');
        if (slash != NULL) {
            *slash = '\0';
            if (asprintf(&path, "%s/%s/%s", exe, TCOLL_PERF_REL_DATADIR, PERF_WORKLOAD_FILE) < 0) {
                return NULL;
            }
            if (access(path, R_OK) == 0) {
                char *clean = realpath(path, NULL); /* no "bin/../share" in the header */
                if (clean != NULL) {
                    free(path);
                    return clean;
                }
                return path;
            }
            snprintf(tried, tried_len, "%s", path);
            free(path);
        }
    }
    if (TCOLL_PERF_SOURCE_WORKLOAD[0] != '\0') {
        if (access(TCOLL_PERF_SOURCE_WORKLOAD, R_OK) == 0) {
            return strdup(TCOLL_PERF_SOURCE_WORKLOAD);
        }
        size_t l = strlen(tried);
        snprintf(tried + l, tried_len - l, "%s%s", l ? ", " : "", TCOLL_PERF_SOURCE_WORKLOAD);
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* JSON and plot (rank 0, after MPI is finalized)                            */
/* ------------------------------------------------------------------------ */

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            fprintf(f, "\\%c", c);
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
        } else {
            fputc(c, f);
        }
    }
    fputc('"', f);
}

static void json_wrong(FILE *f, long long w)
{
    if (w < 0) {
        fputs("null", f);
    } else {
        fprintf(f, "%lld", w);
    }
}

static int write_json_sweep(FILE *f, const perf_opts_t *o, const perf_row_t *rows, int n)
{
    double fct = busbw_factor(o->mode);
    fputs("[\n", f);
    for (int i = 0; i < n; i++) {
        const perf_row_t *r = &rows[i];
        fprintf(f, "  {\"mode\": \"%s\", \"op\": ", mode_names[o->mode]);
        if (o->mode == MODE_ALLREDUCE) {
            fprintf(f, "\"%s\"", tc_op_name(o->op));
        } else {
            fputs("null", f);
        }
        fprintf(f, ", \"dtype\": \"%s\", \"ranks\": %d, \"size\": %llu, \"count\": %llu, "
                   "\"iters\": %d, \"warmup\": %d",
                tc_dtype_name(o->dtype), g_size, (unsigned long long)r->bytes,
                (unsigned long long)r->count, r->iters, r->warmup);
        for (int k = 0; k < 2; k++) {
            const char *p = k == 0 ? "tcoll" : "mpi";
            double alg = (double)r->bytes / r->us[k] / 1e3;
            fprintf(f, ", \"%s_time_us\": %.3f, \"%s_algbw_gbs\": %.4f, \"%s_busbw_gbs\": %.4f, "
                       "\"%s_wrong\": ",
                    p, r->us[k], p, alg, p, alg * fct, p);
            json_wrong(f, r->wrong[k]);
        }
        fprintf(f, ", \"ratio\": %.4f}%s\n", r->us[1] / r->us[0], i + 1 < n ? "," : "");
    }
    fputs("]\n", f);
    return ferror(f) ? -1 : 0;
}

static int write_json_workload(FILE *f, const perf_opts_t *o, const char *path,
                               const workload_t *w, const wl_result_t *res)
{
    fputs("[\n", f);
    for (int m = 0; m < WL_NMODES; m++) {
        fputs("  {\"mode\": \"workload\", \"workload\": ", f);
        json_string(f, path);
        fprintf(f, ", \"impl\": \"%s\", \"op\": \"%s\", \"dtype\": \"float32\", \"ranks\": %d, "
                   "\"tensors\": %d, \"elements\": %zu, \"bytes\": %zu, \"steps\": %d, "
                   "\"warmup\": %d, \"ms_per_step\": %.4f, \"ratio_vs_tcoll\": %.4f, \"copy_ms\": ",
                wl_mode_names[m], tc_op_name(o->op), g_size, w->n, w->total,
                w->total * sizeof(float), res->steps, res->warmup, res->ms[m],
                res->ms[m] / res->ms[WL_TCOLL]);
        if (m == WL_MPI_PACKED) {
            fprintf(f, "%.4f", res->copy_ms);
        } else {
            fputs("null", f);
        }
        fputs(", \"wrong\": ", f);
        json_wrong(f, res->wrong[m]);
        fprintf(f, "}%s\n", m + 1 < WL_NMODES ? "," : "");
    }
    fputs("]\n", f);
    return ferror(f) ? -1 : 0;
}

static int on_path(const char *prog)
{
    const char *path = getenv("PATH");
    char buf[4096];
    while (path != NULL && *path != '\0') {
        size_t len = strcspn(path, ":");
        snprintf(buf, sizeof buf, "%.*s/%s", (int)(len ? len : 1), len ? path : ".", prog);
        if (access(buf, X_OK) == 0) {
            return 1;
        }
        path += len;
        path += *path == ':';
    }
    return 0;
}

/* Draws busbw against size with gnuplot; returns 0 on success, -1 if it
 * could not (after saying why). */
static int draw_plot(const perf_opts_t *o, const perf_row_t *rows, int n)
{
    FILE *gp;
    int st;
    double f = busbw_factor(o->mode);
    int points = 0;
    for (int i = 0; i < n; i++) {
        points += rows[i].bytes > 0;
    }
    if (points == 0) {
        fprintf(stderr, "tcoll-perf: note: every row has size 0, so no plot was drawn\n");
        return 0;
    }
    if (!on_path("gnuplot")) {
        fprintf(stderr, "tcoll-perf: note: gnuplot is not on PATH, so no plot was drawn "
                        "(Debian: apt-get install gnuplot-nox)\n");
        return 0;
    }
    signal(SIGPIPE, SIG_IGN);
    gp = popen("gnuplot", "w");
    if (gp == NULL) {
        fprintf(stderr, "tcoll-perf: cannot run gnuplot: %s\n", strerror(errno));
        return -1;
    }
    fputs("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
          "  set terminal pngcairo size 960,600 noenhanced font 'sans,10'\n"
          "} else {\n"
          "  set terminal png size 960,600 noenhanced\n"
          "}\n",
          gp);
    fputs("set output '", gp);
    for (const char *s = o->plot; *s; s++) {
        if (*s == '\'') {
            fputc('\'', gp); /* '' is a quote inside a single-quoted string */
        }
        fputc(*s, gp);
    }
    fputs("'\n", gp);
    fprintf(gp, "set title 'tcoll-perf: %s", mode_names[o->mode]);
    if (o->mode == MODE_ALLREDUCE) {
        fprintf(gp, " %s", tc_op_name(o->op));
    }
    fprintf(gp, ", %s, %d ranks (tcoll %s)'\n", tc_dtype_name(o->dtype), g_size, tc_version());
    fprintf(gp, "set xlabel 'size (bytes)'\n"
                "set ylabel 'busbw (GB/s), algbw x %s'\n"
                "set logscale x 2\n"
                "set grid\n"
                "set key top left\n"
                "set yrange [0:*]\n",
            o->mode == MODE_ALLREDUCE   ? "2(n-1)/n"
            : o->mode == MODE_ALLGATHER ? "(n-1)/n"
                                        : "1");
    /* Tics at the measured sizes (at most about 14 labels), named like -b/-e. */
    fputs("set xtics (", gp);
    for (int i = 0, first = 1, step = (n + 13) / 14; i < n; i += step) {
        char lbl[32];
        if (rows[i].bytes > 0) {
            fmt_size(lbl, sizeof lbl, rows[i].bytes);
            fprintf(gp, "%s'%s' %llu", first ? "" : ", ", lbl, (unsigned long long)rows[i].bytes);
            first = 0;
        }
    }
    fputs(")\n", gp);
    for (int i = 0, lo = -1; i < n; i++) { /* margins, so no point sits on the border */
        if (rows[i].bytes > 0 && lo < 0) {
            lo = i;
        }
        if (i == n - 1) {
            fprintf(gp, "set xrange [%g:%g]\n", (double)rows[lo].bytes / 1.5,
                    (double)rows[i].bytes * 1.5);
        }
    }
    fputs("plot '-' using 1:2 with linespoints lw 2 pt 7 title 'tcoll', "
          "'-' using 1:2 with linespoints lw 2 pt 5 title 'MPI'\n",
          gp);
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < n; i++) {
            if (rows[i].bytes > 0) { /* a log axis has no 0 */
                fprintf(gp, "%llu %.6f\n", (unsigned long long)rows[i].bytes,
                        (double)rows[i].bytes / rows[i].us[k] / 1e3 * f);
            }
        }
        fputs("e\n", gp);
    }
    st = pclose(gp);
    if (st != 0) {
        fprintf(stderr, "tcoll-perf: gnuplot failed (status %d, its messages are above); no plot "
                        "in '%s'\n", st, o->plot);
        return -1;
    }
    fprintf(stderr, "tcoll-perf: plot written to %s\n", o->plot);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Options                                                                   */
/* ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
"Usage: mpiexec -n N tcoll-perf [options]\n"
"\n"
"Times tcoll's collectives through its public async API (submit, tc_wait,\n"
"tc_request_free; one fixed tensor name per size) and, in the same run and on\n"
"the same buffers, the MPI call a user would make instead; prints one row per\n"
"size. Only rank 0 prints.\n"
"\n"
"  -m, --mode MODE       allreduce | allgather | broadcast | workload\n"
"                        (default allreduce)\n"
"  -b, --minbytes SIZE   smallest size (default 8)\n"
"  -e, --maxbytes SIZE   largest size, always the last row (default 64M)\n"
"  -f, --stepfactor F    multiply the size by F from row to row (default 4)\n"
"  -o, --op OP           sum | avg | min | max | prod (default sum; allreduce\n"
"                        and workload only)\n"
"  -d, --datatype T      float32 | float64 | float16 | bfloat16 | int32 |\n"
"                        int64 | int16 | uint16 | int8 | uint8 (default\n"
"                        float32; workload: float32 only)\n"
"  -r, --root R          broadcast root (default 0)\n"
"  -c, --check 0|1       check each result against exact values (default 1)\n"
"  -n, --iters N         timed iterations per size (default 100 up to 5 MiB,\n"
"                        then 512 MiB/size, at least 5); workload: timed\n"
"                        steps (default 20)\n"
"  -w, --warmup N        untimed iterations first (default iters/10, at\n"
"                        least 2; workload 3)\n"
"      --workload FILE   tensors to replay (implies -m workload): lines\n"
"                        'name<TAB>elements<TAB>shape', e.g.\n"
"                        'conv1.weight<TAB>9408<TAB>64x3x7x7'; '#' starts a\n"
"                        comment. Default: ResNet-50's 161 gradients\n"
"                        (resnet50.tsv, installed under share/tcoll)\n"
"      --json FILE       also write every row to FILE as a JSON array\n"
"      --plot FILE.png   draw busbw against size for tcoll and MPI with\n"
"                        gnuplot (sweeps only; a note if gnuplot is missing)\n"
"  -h, --help            this text\n"
"\n"
"SIZE: bytes, with an optional K, M or G suffix (powers of 1024): 8, 1K, 256M.\n"
"\n"
"Columns (sweeps): size = bytes of the result on each rank (allgather: the whole\n"
"gathered output, each rank sends size/n); count = its elements; then for tcoll\n"
"and for MPI (MPI_Allreduce, MPI_Allgather, MPI_Bcast; avg = MPI_SUM, then a\n"
"division): time = median over iterations of the slowest rank's time (us),\n"
"algbw = size/time (GB/s), busbw = algbw x 2(n-1)/n for allreduce, x (n-1)/n\n"
"for allgather, x 1 for broadcast; wrong = elements differing from the exact\n"
"result, summed over ranks ('-' with -c 0). ratio = tcoll busbw / MPI busbw:\n"
"> 1 means tcoll is faster.\n"
"\n"
"Workload mode: every step submits each tensor as a float32 allreduce in\n"
"backprop order (last line first) and waits for all; ms per step for tcoll,\n"
"for one MPI_Allreduce per tensor, and for packing into one buffer + one\n"
"MPI_Allreduce + unpacking (copies included); ratio = that ms / tcoll's ms.\n"
"\n"
"Exit status: 0 all results right; 1 a call failed or a result was wrong;\n"
"2 bad options or workload file.\n");
}

/* "8", "1K", "256M", "1G" (optionally followed by B or iB) -> bytes. */
static int parse_size(const char *s, uint64_t *v_p)
{
    char *end;
    unsigned long long v;
    uint64_t mult = 1;
    if (*s == '\0' || *s == '-' || *s == '+') {
        return -1;
    }
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || end == s) {
        return -1;
    }
    switch (*end) {
    case 'k':
    case 'K': mult = 1ull << 10; end++; break;
    case 'm':
    case 'M': mult = 1ull << 20; end++; break;
    case 'g':
    case 'G': mult = 1ull << 30; end++; break;
    default: break;
    }
    if (mult > 1 && strcmp(end, "iB") == 0) {
        end += 2;
    } else if (*end == 'B' || *end == 'b') {
        end++;
    }
    if (*end != '\0' || v > UINT64_MAX / mult) {
        return -1;
    }
    *v_p = v * mult;
    return 0;
}

static int parse_int(const char *s, int lo, int hi, int *v_p)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *v_p = (int)v;
    return 0;
}

static int parse_name(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(s, names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* Returns 0 to run, 1 for --help, -1 after printing (rank 0) what is wrong. */
static int parse_options(int argc, char **argv, perf_opts_t *o)
{
    static const char *const op_names[] = {"sum", "avg", "min", "max", "prod"};
    static const tc_op_t ops[] = {TC_SUM, TC_AVG, TC_MIN, TC_MAX, TC_PROD};
    static const char *const dt_names[] = {"uint8",   "int8",     "int32",   "int64",
                                           "float16", "bfloat16", "float32", "float64",
                                           "int16",   "uint16"};
    static const tc_dtype_t dts[] = {TC_UINT8,   TC_INT8,     TC_INT32,   TC_INT64,
                                     TC_FLOAT16, TC_BFLOAT16, TC_FLOAT32, TC_FLOAT64,
                                     TC_INT16,   TC_UINT16};
    static const struct option longopts[] = {
        {"mode", required_argument, NULL, 'm'},       {"minbytes", required_argument, NULL, 'b'},
        {"maxbytes", required_argument, NULL, 'e'},   {"stepfactor", required_argument, NULL, 'f'},
        {"op", required_argument, NULL, 'o'},         {"datatype", required_argument, NULL, 'd'},
        {"root", required_argument, NULL, 'r'},       {"check", required_argument, NULL, 'c'},
        {"iters", required_argument, NULL, 'n'},      {"warmup", required_argument, NULL, 'w'},
        {"workload", required_argument, NULL, 'W'},   {"json", required_argument, NULL, 'J'},
        {"plot", required_argument, NULL, 'P'},       {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    char err[512] = "";
    int c, i;

    memset(o, 0, sizeof *o);
    o->mode = MODE_ALLREDUCE;
    o->min_bytes = 8;
    o->max_bytes = 64ull << 20;
    o->factor = 4;
    o->op = TC_SUM;
    o->dtype = TC_FLOAT32;
    o->check = 1;
    o->warmup = -1;
    opterr = 0;
    while (err[0] == '\0' &&
           (c = getopt_long(argc, argv, ":m:b:e:f:o:d:r:c:n:w:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if ((i = parse_name(optarg, mode_names, 4)) < 0) {
                snprintf(err, sizeof err,
                         "-m '%s': expected allreduce, allgather, broadcast or workload", optarg);
            }
            o->mode = (perf_mode_t)(i < 0 ? 0 : i);
            o->mode_set = 1;
            break;
        case 'b':
        case 'e':
            if (parse_size(optarg, c == 'b' ? &o->min_bytes : &o->max_bytes) != 0) {
                snprintf(err, sizeof err, "-%c '%s': expected a size such as 8, 1K, 256M or 1G", c,
                         optarg);
            }
            break;
        case 'f':
            if (parse_int(optarg, 2, 1024, &i) != 0) {
                snprintf(err, sizeof err, "-f '%s': expected an integer factor from 2 to 1024",
                         optarg);
            }
            o->factor = i < 2 ? 2 : (uint64_t)i;
            break;
        case 'o':
            if ((i = parse_name(optarg, op_names, 5)) < 0) {
                snprintf(err, sizeof err, "-o '%s': expected sum, avg, min, max or prod", optarg);
            }
            o->op = ops[i < 0 ? 0 : i];
            o->op_set = 1;
            break;
        case 'd':
            i = parse_name(optarg, dt_names, (int)(sizeof dt_names / sizeof dt_names[0]));
            if (i < 0) {
                snprintf(err, sizeof err,
                         "-d '%s': expected float32, float64, float16, bfloat16, int32, int64, "
                         "int16, uint16, int8 or uint8",
                         optarg);
            }
            o->dtype = dts[i < 0 ? 0 : i];
            o->dtype_set = 1;
            break;
        case 'r':
            if (parse_int(optarg, 0, g_size - 1, &o->root) != 0) {
                snprintf(err, sizeof err, "-r '%s': expected a rank from 0 to %d", optarg,
                         g_size - 1);
            }
            break;
        case 'c':
            if (parse_int(optarg, 0, 1, &o->check) != 0) {
                snprintf(err, sizeof err, "-c '%s': expected 0 or 1", optarg);
            }
            break;
        case 'n':
            if (parse_int(optarg, 1, 1000000, &o->iters) != 0) {
                snprintf(err, sizeof err, "-n '%s': expected an iteration count from 1 to 1000000",
                         optarg);
            }
            break;
        case 'w':
            if (parse_int(optarg, 0, 1000000, &o->warmup) != 0) {
                snprintf(err, sizeof err, "-w '%s': expected a warmup count from 0 to 1000000",
                         optarg);
            }
            break;
        case 'W': o->workload = optarg; break;
        case 'J': o->json = optarg; break;
        case 'P': o->plot = optarg; break;
        case 'h': return 1;
        case ':':
            snprintf(err, sizeof err, "option '%s' needs a value", argv[optind - 1]);
            break;
        default:
            if (optopt != 0) {
                snprintf(err, sizeof err, "unknown option '-%c'", optopt);
            } else {
                snprintf(err, sizeof err, "unknown option '%s'", argv[optind - 1]);
            }
            break;
        }
    }
    if (err[0] == '\0' && optind < argc) {
        snprintf(err, sizeof err, "unexpected argument '%s'", argv[optind]);
    }
    if (err[0] == '\0' && o->workload != NULL) {
        if (o->mode_set && o->mode != MODE_WORKLOAD) {
            snprintf(err, sizeof err, "--workload goes with -m workload, not -m %s",
                     mode_names[o->mode]);
        }
        o->mode = MODE_WORKLOAD;
    }
    if (err[0] == '\0') {
        size_t es = tc_dtype_size(o->dtype);
        if (o->min_bytes == 0) {
            snprintf(err, sizeof err, "-b must be at least 1 byte");
        } else if (o->min_bytes > o->max_bytes) {
            snprintf(err, sizeof err, "-b %llu is larger than -e %llu",
                     (unsigned long long)o->min_bytes, (unsigned long long)o->max_bytes);
        } else if (o->max_bytes / es > INT_MAX) {
            snprintf(err, sizeof err, "-e %llu gives %llu %s elements, more than an MPI count (%d)",
                     (unsigned long long)o->max_bytes, (unsigned long long)(o->max_bytes / es),
                     tc_dtype_name(o->dtype), INT_MAX);
        } else if (o->op == TC_AVG && !dt_is_float(o->dtype)) {
            snprintf(err, sizeof err, "-o avg needs a floating-point dtype, not %s",
                     tc_dtype_name(o->dtype));
        } else if (o->mode == MODE_WORKLOAD && o->dtype != TC_FLOAT32) {
            snprintf(err, sizeof err, "-m workload uses float32, not -d %s",
                     tc_dtype_name(o->dtype));
        } else if (o->mode == MODE_WORKLOAD && o->op != TC_SUM && o->op != TC_AVG) {
            snprintf(err, sizeof err, "-m workload takes -o sum or avg, not %s",
                     tc_op_name(o->op));
        } else if (o->mode == MODE_WORKLOAD && o->plot != NULL) {
            snprintf(err, sizeof err, "--plot draws a sweep (busbw against size); it has "
                                      "nothing to draw with -m workload");
        } else if (o->op_set && (o->mode == MODE_ALLGATHER || o->mode == MODE_BROADCAST)) {
            snprintf(err, sizeof err, "-o has no meaning with -m %s", mode_names[o->mode]);
        }
    }
    if (err[0] != '\0') {
        if (g_rank == 0) {
            fprintf(stderr, "tcoll-perf: %s (see tcoll-perf --help)\n", err);
        }
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    perf_opts_t o;
    int provided, rc, ok = 1, nrows = 0, exit_code = 0;
    long long wrong = 0;
    perf_row_t *rows = NULL;
    FILE *json = NULL;
    char *wl_path = NULL, *wl_text = NULL;
    workload_t wl;
    wl_result_t wres;
    tc_status_t st;

    memset(&wl, 0, sizeof wl);
    memset(&wres, 0, sizeof wres);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);

    rc = parse_options(argc, argv, &o);
    if (rc != 0) {
        if (rc > 0 && g_rank == 0) {
            usage(stdout);
        }
        MPI_Finalize();
        return rc > 0 ? 0 : PERF_EXIT_USAGE;
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        if (g_rank == 0) {
            fprintf(stderr, "tcoll-perf: this MPI gives thread level %d, below "
                            "MPI_THREAD_MULTIPLE; tcoll-perf needs it to call MPI while tcoll's "
                            "engine thread runs\n", provided);
        }
        MPI_Finalize();
        return PERF_EXIT_FAIL;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
    g_progress = g_rank == 0 && stderr_is_terminal();

    /* Files rank 0 writes: opened now, so a bad path fails before the run. */
    if (g_rank == 0 && o.json != NULL) {
        json = fopen(o.json, "w");
        if (json == NULL) {
            fprintf(stderr, "tcoll-perf: --json: cannot write '%s': %s\n", o.json,
                    strerror(errno));
            ok = 0;
        }
    }
    if (o.mode == MODE_WORKLOAD && ok) {
        char tried[8192];
        if (o.workload != NULL) {
            wl_path = strdup(o.workload);
        } else if (g_rank == 0) {
            wl_path = default_workload(tried, sizeof tried);
            if (wl_path == NULL) {
                fprintf(stderr, "tcoll-perf: no default workload file (looked for %s); "
                                "name one with --workload FILE\n", tried[0] ? tried : "none");
            }
        } else {
            wl_path = strdup("(rank 0's file)");
        }
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, g_comm);
        ok = ok && wl_path != NULL;
        MPI_Bcast(&ok, 1, MPI_INT, 0, g_comm);
        if (ok) {
            long long len = 0;
            wl_text = read_file_bcast(wl_path, &len);
            ok = wl_text != NULL && workload_parse(wl_text, wl_path, &wl) == 0;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, g_comm);
    if (!ok) {
        if (json != NULL) {
            fclose(json);
        }
        MPI_Comm_free(&g_comm);
        MPI_Finalize();
        return PERF_EXIT_USAGE;
    }

    st = tc_init();
    if (st != TC_OK) {
        perf_die("tc_init failed: %s: %s", tc_status_string(st), tc_last_error());
    }

    if (o.mode == MODE_WORKLOAD) {
        run_workload(&o, wl_path, &wl, &wres);
        for (int m = 0; m < WL_NMODES; m++) {
            wrong += wres.wrong[m] > 0 ? wres.wrong[m] : 0;
        }
    } else {
        rows = run_sweep(&o, &nrows, &wrong);
    }

    st = tc_shutdown();
    if (st != TC_OK) {
        perf_die("tc_shutdown failed: %s: %s", tc_status_string(st), tc_last_error());
    }
    MPI_Comm_free(&g_comm);
    MPI_Finalize();

    if (wrong > 0) {
        if (g_rank == 0) {
            fprintf(stderr, "tcoll-perf: %lld wrong elements in all (see the 'wrong' columns)\n",
                    wrong);
        }
        exit_code = PERF_EXIT_FAIL;
    }
    if (json != NULL) {
        int jr = o.mode == MODE_WORKLOAD ? write_json_workload(json, &o, wl_path, &wl, &wres)
                                         : write_json_sweep(json, &o, rows, nrows);
        if (fclose(json) != 0 || jr != 0) {
            fprintf(stderr, "tcoll-perf: --json: error writing '%s'\n", o.json);
            exit_code = PERF_EXIT_FAIL;
        }
    }
    if (g_rank == 0 && o.plot != NULL && draw_plot(&o, rows, nrows) != 0) {
        exit_code = PERF_EXIT_FAIL;
    }
    if (o.mode == MODE_WORKLOAD) {
        workload_free(&wl);
    }
    free(wl_text);
    free(wl_path);
    free(rows);
    return exit_code;
}
