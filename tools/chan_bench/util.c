/*
 * util.c - tcoll-chan-bench's small helpers: dying on a failed call (the
 * whole job, so no rank waits for one that stopped), the clock, page
 * aligned allocation, medians, size labels, the data every transfer carries
 * and its check, and the CPU list of this process (the MPI library's name
 * is tool_util.c's, shared with tcoll-perf).
 * Nothing here talks to the peer.
 */
#define _GNU_SOURCE
#include "chan_bench.h"

#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int cb_rank, cb_peer;
MPI_Comm cb_comm;
int cb_nodes;

void cb_die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "tcoll-chan-bench: rank %d: ", cb_rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, CB_EXIT_FAIL);
    exit(CB_EXIT_FAIL); /* not reached */
}

void cb_chk(tc_status_t st, const char *what)
{
    if (st != TC_OK) {
        cb_die("%s: %s: %s", what, tc_status_string(st), tc_last_error());
    }
}

uint64_t cb_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void *cb_alloc(size_t bytes, const char *what)
{
    void *p = NULL;

    if (posix_memalign(&p, CB_PAGE, bytes > 0 ? bytes : 1) != 0) {
        cb_die("cannot allocate %zu bytes for %s", bytes, what);
    }
    return p;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

uint64_t cb_quantile_u64(uint64_t *v, size_t n, double q)
{
    qsort(v, n, sizeof(*v), cmp_u64);
    return v[(size_t)(q * (double)(n - 1) + 0.5)];
}

double cb_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

void cb_fmt_size(char *buf, size_t len, uint64_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
    int u = 0;

    while (bytes >= 1024 && bytes % 1024 == 0 && u < 3) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, len, "%llu %s", (unsigned long long)bytes, units[u]);
}

uint64_t cb_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

void cb_fill(char *p, uint64_t n, uint64_t seed)
{
    uint64_t i, w;

    for (i = 0; i + 8 <= n; i += 8) {
        w = cb_mix64(seed + i / 8);
        memcpy(p + i, &w, 8);
    }
    if (i < n) {
        w = cb_mix64(seed + i / 8);
        memcpy(p + i, &w, (size_t)(n - i));
    }
}

uint64_t cb_count_wrong(const char *p, uint64_t n, uint64_t seed, uint64_t *first_p)
{
    uint64_t i, j, w, bad = 0;
    unsigned char want[8];

    for (i = 0; i < n; i += 8) {
        size_t k = n - i < 8 ? (size_t)(n - i) : 8;
        w = cb_mix64(seed + i / 8);
        memcpy(want, &w, 8);
        if (memcmp(p + i, want, k) != 0) {
            for (j = 0; j < k; j++) {
                if ((unsigned char)p[i + j] != want[j]) {
                    if (bad++ == 0) {
                        *first_p = i + j;
                    }
                }
            }
        }
    }
    return bad;
}

int cb_cpu_list(char *buf, size_t len)
{
    cpu_set_t set;
    int c, first = -1, n = 0;
    size_t used = 0;

    buf[0] = '\0';
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        snprintf(buf, len, "?");
        return 0;
    }
    for (c = 0; c <= CPU_SETSIZE; c++) {
        int in = c < CPU_SETSIZE && CPU_ISSET(c, &set);

        n += in;
        if (in && first < 0) {
            first = c;
        } else if (!in && first >= 0) {
            if (used < len) {
                used += (size_t)snprintf(buf + used, len - used, c - 1 > first ? "%s%d-%d" : "%s%d",
                                         used > 0 ? "," : "", first, c - 1);
            }
            first = -1;
        }
    }
    return n;
}
