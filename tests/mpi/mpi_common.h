/*
 * mpi_common.h - helpers shared by the multi-rank tests (tests/mpi/).
 *
 * Deterministic data that keeps every reduction exact: tt_value() gives an
 * integer-valued element for (dtype, op, salt, rank, index) in a range where
 * the dtype represents every partial result exactly (or, for integers, where
 * wrap-around is computed the same way here as two's complement), and
 * tt_expect() combines those values over the ranks the way the library must.
 * Also: float16/bfloat16 conversions written independently of the library,
 * a small random generator, sleeping, and the end-of-test barrier.
 *
 * And the skeleton every multi-rank test program shares (mpi_common.c, linked
 * into each): tt_mpi_main() is the whole main - command line (tc_test.h),
 * MPI and tcoll start-up, the cases, a verdict across ranks, shutdown - and
 * tt_run_batch() is the worker threads that submit a table of tasks in a
 * different order on every rank and complete them.
 *
 * The helpers only use the public API (tcoll.h): the tests must never reach
 * into the library's internals.
 */
#ifndef TC_TEST_MPI_COMMON_H
#define TC_TEST_MPI_COMMON_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "tc_test.h"
#include "tcoll.h"
#include "tcoll_channel.h" /* tc_mem_alloc */

/* This process's rank and the job's size; set by tt_mpi_main before the
 * first case (from tcoll, or from MPI where tcoll does not start). */
extern int tt_rank, tt_size;

#define TT_NDTYPES 10
#define TT_NOPS 5

/* A request pointer value no library would return: calls that must fail
 * "at once, with no request" must leave it in *req_p. */
#define TT_SENTINEL ((tc_request_t *)(uintptr_t)0x5e5e5e50u)

#define CHECK_LAST_ERROR_SET()                                                                     \
    do {                                                                                           \
        const char *tt_le_ = tc_last_error();                                                      \
        CHECK_MSG(tt_le_ != NULL && tt_le_[0] != '\0',                                             \
                  "tc_last_error() is empty after a failed call");                                 \
    } while (0)

/* The call (which writes through &req) fails with want at once: no request,
 * *req_p untouched, and a message for this thread. `req` must be in scope. */
#define EXPECT_IMMEDIATE(want, call)                                                               \
    do {                                                                                           \
        req = TT_SENTINEL;                                                                         \
        CHECK_STATUS(call, want);                                                                  \
        CHECK_MSG(req == TT_SENTINEL, "%s changed *req_p on failure", #call);                      \
        CHECK_LAST_ERROR_SET();                                                                    \
    } while (0)

static inline tc_dtype_t tt_dtype(int i)
{
    static const tc_dtype_t all[TT_NDTYPES] = {TC_UINT8,   TC_INT8,     TC_INT32,   TC_INT64,
                                               TC_FLOAT16, TC_BFLOAT16, TC_FLOAT32, TC_FLOAT64,
                                               TC_INT16,   TC_UINT16};
    return all[i];
}

static inline tc_op_t tt_op(int i)
{
    static const tc_op_t all[TT_NOPS] = {TC_SUM, TC_AVG, TC_MIN, TC_MAX, TC_PROD};
    return all[i];
}

/* Names written here, not taken from the library, so the tests check them. */
static inline const char *tt_dtype_str(tc_dtype_t dt)
{
    switch (dt) {
    case TC_UINT8: return "uint8";
    case TC_INT8: return "int8";
    case TC_INT32: return "int32";
    case TC_INT64: return "int64";
    case TC_FLOAT16: return "float16";
    case TC_BFLOAT16: return "bfloat16";
    case TC_FLOAT32: return "float32";
    case TC_FLOAT64: return "float64";
    case TC_INT16: return "int16";
    case TC_UINT16: return "uint16";
    }
    return "?";
}

static inline const char *tt_op_str(tc_op_t op)
{
    switch (op) {
    case TC_SUM: return "sum";
    case TC_AVG: return "avg";
    case TC_MIN: return "min";
    case TC_MAX: return "max";
    case TC_PROD: return "prod";
    }
    return "?";
}

static inline size_t tt_dtype_bytes(tc_dtype_t dt)
{
    switch (dt) {
    case TC_UINT8:
    case TC_INT8: return 1;
    case TC_INT16:
    case TC_UINT16:
    case TC_FLOAT16:
    case TC_BFLOAT16: return 2;
    case TC_INT32:
    case TC_FLOAT32: return 4;
    case TC_INT64:
    case TC_FLOAT64: return 8;
    }
    return 0;
}

static inline int tt_is_float(tc_dtype_t dt)
{
    return dt == TC_FLOAT16 || dt == TC_BFLOAT16 || dt == TC_FLOAT32 || dt == TC_FLOAT64;
}

/* ---- float16 / bfloat16, round to nearest even ---------------------------- */

static inline uint32_t tt_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float tt_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t tt_f32_to_f16(float f)
{
    uint32_t x = tt_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) { /* inf or NaN */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    }
    int e = (int)(ax >> 23); /* biased binary32 exponent */
    if (e == 0) {            /* zero or binary32 subnormal: far below binary16 */
        return sign;
    }
    uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    int he = e - 127 + 15; /* biased binary16 exponent */
    if (he >= 31) {
        return (uint16_t)(sign | 0x7c00u);
    }
    int shift = he >= 1 ? 13 : 14 - he; /* subnormal results shift further */
    if (shift >= 25) {
        return sign;
    }
    uint32_t h = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (he >= 1) {
        h = ((uint32_t)he << 10) | (h & 0x3ffu);
    }
    if (rem > half || (rem == half && (h & 1u))) {
        h++; /* may carry into the exponent: correct, up to inf */
    }
    return (uint16_t)(sign | h);
}

static inline float tt_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    if (e == 0) {
        float v = (float)m * (1.0f / 16777216.0f); /* m * 2^-24, exact */
        return sign ? -v : v;
    }
    if (e == 31) {
        return tt_bits_f32(sign | 0x7f800000u | (m << 13));
    }
    return tt_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

static inline uint16_t tt_f32_to_bf16(float f)
{
    uint32_t x = tt_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t)((x >> 16) | 0x40u);
    }
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static inline float tt_bf16_to_f32(uint16_t h)
{
    return tt_bits_f32((uint32_t)h << 16);
}

/* ---- element access ------------------------------------------------------- */

/* Stores the integer v (truncated to the width for integer dtypes, converted
 * for floating dtypes) as element i of buf. */
static inline void tt_store(tc_dtype_t dt, void *buf, int64_t i, int64_t v)
{
    char *p = (char *)buf + (size_t)i * tt_dtype_bytes(dt);
    uint64_t u = (uint64_t)v;
    switch (dt) {
    case TC_UINT8:
    case TC_INT8: {
        uint8_t b = (uint8_t)u;
        memcpy(p, &b, 1);
        break;
    }
    case TC_INT16:
    case TC_UINT16: {
        uint16_t s = (uint16_t)u;
        memcpy(p, &s, 2);
        break;
    }
    case TC_INT32: {
        uint32_t w = (uint32_t)u;
        memcpy(p, &w, 4);
        break;
    }
    case TC_INT64: memcpy(p, &u, 8); break;
    case TC_FLOAT16: {
        uint16_t h = tt_f32_to_f16((float)v);
        memcpy(p, &h, 2);
        break;
    }
    case TC_BFLOAT16: {
        uint16_t h = tt_f32_to_bf16((float)v);
        memcpy(p, &h, 2);
        break;
    }
    case TC_FLOAT32: {
        float f = (float)v;
        memcpy(p, &f, 4);
        break;
    }
    case TC_FLOAT64: {
        double d = (double)v;
        memcpy(p, &d, 8);
        break;
    }
    }
}

/* Stores a floating value (already rounded to float for the 16/32-bit types). */
static inline void tt_store_real(tc_dtype_t dt, void *buf, int64_t i, double v)
{
    char *p = (char *)buf + (size_t)i * tt_dtype_bytes(dt);
    switch (dt) {
    case TC_FLOAT16: {
        uint16_t h = tt_f32_to_f16((float)v);
        memcpy(p, &h, 2);
        break;
    }
    case TC_BFLOAT16: {
        uint16_t h = tt_f32_to_bf16((float)v);
        memcpy(p, &h, 2);
        break;
    }
    case TC_FLOAT32: {
        float f = (float)v;
        memcpy(p, &f, 4);
        break;
    }
    case TC_FLOAT64: memcpy(p, &v, 8); break;
    default: tt_store(dt, buf, i, (int64_t)v); break;
    }
}

/* u reduced to the dtype's width, read back signed (or unsigned for uint8 and
 * uint16). */
static inline int64_t tt_wrap(tc_dtype_t dt, uint64_t u)
{
    switch (dt) {
    case TC_UINT8: return (int64_t)(u & 0xffu);
    case TC_INT8: {
        int64_t x = (int64_t)(u & 0xffu);
        return x >= 128 ? x - 256 : x;
    }
    case TC_UINT16: return (int64_t)(u & 0xffffu);
    case TC_INT16: {
        int64_t x = (int64_t)(u & 0xffffu);
        return x >= 32768 ? x - 65536 : x;
    }
    case TC_INT32: {
        int64_t x = (int64_t)(u & 0xffffffffu);
        return x >= 2147483648LL ? x - 4294967296LL : x;
    }
    case TC_INT64:
        if (u > (uint64_t)INT64_MAX) {
            return -(int64_t)(~u) - 1;
        }
        return (int64_t)u;
    default: return (int64_t)u;
    }
}

/* Element i of buf as a double (floating dtypes) or integer (others). */
static inline double tt_load(tc_dtype_t dt, const void *buf, int64_t i)
{
    const char *p = (const char *)buf + (size_t)i * tt_dtype_bytes(dt);
    switch (dt) {
    case TC_UINT8:
    case TC_INT8: {
        uint8_t b;
        memcpy(&b, p, 1);
        return (double)tt_wrap(dt, b);
    }
    case TC_INT16:
    case TC_UINT16: {
        uint16_t s;
        memcpy(&s, p, 2);
        return (double)tt_wrap(dt, s);
    }
    case TC_INT32: {
        uint32_t w;
        memcpy(&w, p, 4);
        return (double)tt_wrap(dt, w);
    }
    case TC_INT64: {
        uint64_t w;
        memcpy(&w, p, 8);
        return (double)tt_wrap(dt, w);
    }
    case TC_FLOAT16: {
        uint16_t h;
        memcpy(&h, p, 2);
        return tt_f16_to_f32(h);
    }
    case TC_BFLOAT16: {
        uint16_t h;
        memcpy(&h, p, 2);
        return tt_bf16_to_f32(h);
    }
    case TC_FLOAT32: {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    case TC_FLOAT64: {
        double d;
        memcpy(&d, p, 8);
        return d;
    }
    }
    return 0;
}

/* ---- deterministic data --------------------------------------------------- */

static inline uint64_t tt_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline uint64_t tt_key(uint64_t a, uint64_t b, uint64_t c)
{
    return tt_mix(tt_mix(tt_mix(a) ^ b) ^ c);
}

/* An FNV-1a hash of a string, to derive salts from names. */
static inline uint64_t tt_hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    }
    return h;
}

/*
 * Element i of rank's input for an allreduce with (dt, op), an integer:
 *  - integer dtypes: 64 random bits (stored truncated), so SUM and PROD wrap
 *    and MIN/MAX see the whole signed/unsigned range;
 *  - floating PROD: one of {1, 2, -1, -2, 3} (|product| <= 81 over 4 ranks;
 *    over more, {1, 2, -1, -2}: every product a power of two);
 *  - floating SUM/AVG: small enough that every partial sum over 4 ranks is
 *    exact (float16: |v| <= 500, bfloat16: |v| <= 60; over n > 4 ranks
 *    these times 4 / n);
 *  - floating MIN/MAX (also used as "any exact value" for copies): the whole
 *    exact-integer range of the dtype (float16 2048, bfloat16 256).
 */
static inline int64_t tt_value(tc_dtype_t dt, tc_op_t op, uint64_t salt, int rank, int64_t i)
{
    uint64_t h = tt_key(salt, (uint64_t)rank, (uint64_t)i);
    if (!tt_is_float(dt)) {
        return (int64_t)h;
    }
    if (op == TC_PROD) {
        static const int64_t v[5] = {1, 2, -1, -2, 3}, v8[4] = {1, 2, -1, -2};
        return tt_size > 4 ? v8[h % 4] : v[h % 5];
    }
    int sum = (op == TC_SUM || op == TC_AVG), many = tt_size > 4 ? tt_size : 4;
    int64_t lim;
    switch (dt) {
    case TC_FLOAT16: lim = sum ? 500 * 4 / many : 2048; break;
    case TC_BFLOAT16: lim = sum ? 60 * 4 / many : 256; break;
    case TC_FLOAT32: lim = sum ? (1 << 20) : (1 << 24); break;
    default: lim = sum ? (1ll << 40) : (1ll << 52); break;
    }
    return (int64_t)(h % (uint64_t)(2 * lim + 1)) - lim;
}

/* Fills count elements of buf with rank's input. */
static inline void tt_fill(tc_dtype_t dt, tc_op_t op, uint64_t salt, int rank, void *buf,
                           int64_t count)
{
    for (int64_t i = 0; i < count; i++) {
        tt_store(dt, buf, i, tt_value(dt, op, salt, rank, i));
    }
}

/* The exact result element i of an allreduce of tt_value() over nranks ranks,
 * stored as the first element of out_elem. */
static inline void tt_expect(tc_dtype_t dt, tc_op_t op, uint64_t salt, int nranks, int64_t i,
                             void *out_elem)
{
    if (!tt_is_float(dt)) {
        uint64_t acc = 0;
        int64_t best = 0;
        for (int r = 0; r < nranks; r++) {
            uint64_t v = (uint64_t)tt_value(dt, op, salt, r, i);
            int64_t sv = tt_wrap(dt, v);
            if (r == 0) {
                acc = v;
                best = sv;
                continue;
            }
            switch (op) {
            case TC_SUM: acc += v; break;
            case TC_PROD: acc *= v; break;
            case TC_MIN: best = sv < best ? sv : best; break;
            case TC_MAX: best = sv > best ? sv : best; break;
            case TC_AVG: break;
            }
        }
        if (op == TC_MIN || op == TC_MAX) {
            acc = (uint64_t)best;
        }
        tt_store(dt, out_elem, 0, (int64_t)acc);
        return;
    }
    double acc = 0;
    for (int r = 0; r < nranks; r++) {
        double v = (double)tt_value(dt, op, salt, r, i);
        if (r == 0) {
            acc = v;
            continue;
        }
        switch (op) {
        case TC_SUM:
        case TC_AVG: acc += v; break;
        case TC_PROD: acc *= v; break;
        case TC_MIN: acc = v < acc ? v : acc; break;
        case TC_MAX: acc = v > acc ? v : acc; break;
        }
    }
    if (op == TC_AVG) {
        /* the exact sum divided by the rank count in the dtype's arithmetic
         * (float32 for the 16-bit types, then rounded to nearest even) */
        if (dt == TC_FLOAT64) {
            acc = acc / (double)nranks;
        } else {
            acc = (double)((float)acc / (float)nranks);
        }
    }
    tt_store_real(dt, out_elem, 0, acc);
}

/* Compares count elements of got with the exact allreduce result, element by
 * element and bit for bit; on the first difference reports it and aborts. */
static inline void tt_check_allreduce(const char *what, tc_dtype_t dt, tc_op_t op, uint64_t salt,
                                      int nranks, const void *got, int64_t count)
{
    size_t es = tt_dtype_bytes(dt);
    for (int64_t i = 0; i < count; i++) {
        unsigned char want[8];
        tt_expect(dt, op, salt, nranks, i, want);
        if (memcmp((const char *)got + (size_t)i * es, want, es) != 0) {
            TC_CHECK_FAIL("%s (%s %s, np %d): element %lld is %.17g, want %.17g", what,
                          tt_dtype_str(dt), tt_op_str(op), nranks, (long long)i,
                          tt_load(dt, got, i), tt_load(dt, want, 0));
        }
    }
}

/* ---- random order, threads, time ------------------------------------------ */

typedef struct {
    uint64_t s;
} tt_rng_t;

static inline uint64_t tt_rng_next(tt_rng_t *rng)
{
    rng->s += 0x9e3779b97f4a7c15ull;
    return tt_mix(rng->s);
}

static inline uint64_t tt_rng_below(tt_rng_t *rng, uint64_t n)
{
    return n ? tt_rng_next(rng) % n : 0;
}

static inline void tt_shuffle(int *a, int n, tt_rng_t *rng)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)tt_rng_below(rng, (uint64_t)i + 1);
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

static inline void tt_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static inline double tt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A file name of this process's own in /tmp: "/tmp/STEM.HOST.PID.log"
 * (the host too: processes of different hosts of a cluster may have the
 * same pid and see the same /tmp). */
static inline void tt_own_log_path(char *buf, size_t len, const char *stem)
{
    char host[64] = "";

    (void)gethostname(host, sizeof(host) - 1);
    snprintf(buf, len, "/tmp/%s.%s.%d.log", stem, host, (int)getpid());
}

static inline void *tt_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    CHECK_MSG(p != NULL, "malloc(%zu) failed", n);
    return p;
}

/* The data buffers a test hands to tcoll: from tc_mem_alloc (memory the
 * node's ranks map, read by the direct algorithms with loads) when the
 * environment has TT_MEM=shared, else malloc. Free with tt_data_free. */
static inline int tt_data_shared(void)
{
    const char *v = getenv("TT_MEM");
    return v != NULL && strcmp(v, "shared") == 0;
}

static inline void *tt_data_alloc(size_t n)
{
    void *p = NULL;
    if (!tt_data_shared()) {
        return tt_xmalloc(n);
    }
    CHECK_MSG(tc_mem_alloc(n ? n : 1, &p) == TC_OK, "tc_mem_alloc(%zu) failed: %s", n,
              tc_last_error());
    return p;
}

static inline void tt_data_free(void *p)
{
    if (tt_data_shared()) {
        CHECK_OK(tc_mem_free(p));
    } else {
        free(p);
    }
}

/* The collectives a test that mixes them submits by kind. */
typedef enum { TT_ALLREDUCE, TT_ALLGATHER, TT_BROADCAST } tt_kind_t;

/* What one rank submits under a name. */
typedef struct {
    tt_kind_t kind;
    tc_dtype_t dt;
    tc_op_t op; /* allreduce */
    int root;   /* broadcast */
    int ndim;
    int64_t shape[TC_MAX_DIMS];
} tt_params_t;

static inline tt_params_t tt_params(tt_kind_t kind, tc_dtype_t dt, tc_op_t op, int root, int ndim,
                                    int64_t d0, int64_t d1, int64_t d2)
{
    tt_params_t p;
    memset(&p, 0, sizeof p);
    p.kind = kind;
    p.dt = dt;
    p.op = op;
    p.root = root;
    p.ndim = ndim;
    p.shape[0] = d0;
    p.shape[1] = d1;
    p.shape[2] = d2;
    return p;
}

/* Submits p under name on data (allreduce into recv); the submission must be
 * accepted. Returns the request. */
static inline tc_request_t *tt_submit(const char *name, const tt_params_t *p, void *data,
                                      void *recv)
{
    tc_tensor_t ten;
    tc_request_t *req = NULL;

    memset(&ten, 0, sizeof ten);
    ten.data = data;
    ten.dtype = p->dt;
    ten.ndim = p->ndim;
    for (int d = 0; d < p->ndim; d++) {
        ten.shape[d] = p->shape[d];
    }
    switch (p->kind) {
    case TT_ALLREDUCE: CHECK_OK(tc_allreduce(name, &ten, recv, p->op, &req)); break;
    case TT_ALLGATHER: CHECK_OK(tc_allgather(name, &ten, &req)); break;
    case TT_BROADCAST: CHECK_OK(tc_broadcast(name, &ten, p->root, &req)); break;
    }
    CHECK(req != NULL);
    return req;
}

static inline int64_t tt_count(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        n *= shape[d];
    }
    return n;
}

static inline void tt_shape_str(int ndim, const int64_t *shape, char *out, size_t cap)
{
    size_t len = 0;
    len += (size_t)snprintf(out + len, cap - len, "[");
    for (int d = 0; d < ndim && len < cap; d++) {
        len += (size_t)snprintf(out + len, cap - len, "%s%lld", d ? "," : "", (long long)shape[d]);
    }
    if (len < cap) {
        snprintf(out + len, cap - len, "]");
    }
}

/* Runs fn(i) on n threads (i = 0..n-1) and joins them. */
typedef struct {
    void (*fn)(int, void *);
    void *arg;
    int index;
} tt_thread_arg_t;

static inline void *tt_thread_main(void *p)
{
    tt_thread_arg_t *a = (tt_thread_arg_t *)p;
    a->fn(a->index, a->arg);
    return NULL;
}

static inline void tt_run_threads(int n, void (*fn)(int, void *), void *arg)
{
    pthread_t th[16];
    tt_thread_arg_t args[16];
    CHECK(n >= 1 && n <= 16);
    for (int i = 0; i < n; i++) {
        args[i].fn = fn;
        args[i].arg = arg;
        args[i].index = i;
        CHECK_EQ(pthread_create(&th[i], NULL, tt_thread_main, &args[i]), 0);
    }
    for (int i = 0; i < n; i++) {
        CHECK_EQ(pthread_join(th[i], NULL), 0);
    }
}

/* ---- end of a test -------------------------------------------------------- */

/*
 * Every rank calls this after its own checks have passed and before
 * tc_shutdown: once the allreduce completes on any rank, every rank has
 * reached this point, so no rank shuts down while another still has work that
 * must succeed. A rank that completes it first may shut down at once, so on
 * the other ranks it may end with TC_ERR_SHUTDOWN (allowed: its response was
 * decided before the shutdown); when it succeeds the sum must be right.
 */
static inline void tt_final_barrier(void)
{
    int32_t one = 1, sum = 0;
    tc_tensor_t t = {&one, TC_INT32, 0, {0}};
    tc_request_t *req = NULL;
    CHECK_OK(tc_allreduce("tt/final-barrier", &t, &sum, TC_SUM, &req));
    tc_status_t st = tc_wait(req);
    CHECK_MSG(st == TC_OK || st == TC_ERR_SHUTDOWN, "final barrier: %s (%s)", tc_status_string(st),
              tc_request_error(req));
    if (st == TC_OK) {
        CHECK_EQ(sum, tc_size());
    }
    tc_request_free(req);
}

/* ---- the program skeleton (mpi_common.c) ---------------------------------- */

/*
 * A multi-rank test program is its cases (TC_CASE, tc_test.h) and a main of
 * one line:
 *
 *   int main(int argc, char **argv)
 *   {
 *       return tt_mpi_main(argc, argv, &(tt_program_t){ 0 });
 *   }
 *
 * tt_mpi_main reads the command line (--case, --list), starts MPI and tcoll
 * as the program asks, sets tt_rank and tt_size, checks that every rank is to
 * run the same cases (one broadcast from rank 0), runs them, combines a
 * verdict across ranks (every rank must reach it having run as many cases),
 * shuts tcoll down, and has rank 0 print one line. A failed check anywhere
 * aborts that rank, which ends the whole job.
 */
typedef struct {
    /* The program's own positional arguments, as tc_test_opts_t.args. */
    const char *args;
    /* Each case needs a run of its own (e.g. its own environment): a run
     * must name exactly one with --case. */
    int one_case_per_run;
    /* Each case ends tcoll itself (its own tc_shutdown, or a lost rank): no
     * verdict and no tc_shutdown after it. Implies one_case_per_run. */
    int case_ends_tcoll;
    /* The program initializes MPI itself with MPI_Init_thread(app_mpi_level)
     * and finalizes it at the end; tcoll must leave it initialized. With
     * MPI_THREAD_MULTIPLE tcoll starts on the application's MPI (skipped
     * where MPI gives less); with a lower level tcoll cannot start, and the
     * cases check that tc_init refuses (skipped where MPI gives
     * MPI_THREAD_MULTIPLE anyway). Otherwise tc_init starts MPI. */
    int app_mpi;
    int app_mpi_level;
    /* Run on every rank before tc_init and after tc_shutdown (or after the
     * case, with case_ends_tcoll): checks of the library's lifecycle, and
     * set-up that must precede tc_init (environment, captured stderr). */
    void (*before_init)(void);
    void (*after_shutdown)(void);
} tt_program_t;

int tt_mpi_main(int argc, char **argv, const tt_program_t *prog);

/* printf on rank 0 only (then flushed): a case's summary line. */
void tt_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A batch of tasks 0..ntasks-1 run the way an application's threads would:
 * every rank shuffles the task numbers with its own seed, thread t of
 * nthreads takes the shuffled positions t, t + nthreads, ..., submits each of
 * its tasks, then completes each (waits and checks) in the same order or in
 * reverse. One thread means the calling thread. With pause_one_in, after a
 * submission a thread sleeps 1 ms one time in pause_one_in (its own random
 * stream, tt_key(pause_seed, rank, thread)), so the engine sees partial sets.
 */
typedef struct {
    int ntasks;
    int nthreads;        /* 1..16 */
    uint64_t order_seed; /* state of the tt_rng_t that shuffles this rank's order */
    int complete_in_reverse;
    int pause_one_in; /* 0: never pause */
    uint64_t pause_seed;
    void (*submit)(int task, void *arg);
    void (*complete)(int task, void *arg);
    void *arg;
} tt_batch_t;

void tt_run_batch(const tt_batch_t *batch);

#endif
