/*
 * util.c - what every part of tcoll-perf uses: the way out on an error (one
 * rank's message, then the whole job ends, so no rank waits for one that
 * stopped), the clock, rank 0's progress line, allocation that cannot
 * return NULL, the median. The progress line goes to stderr only, and only
 * when a person can see it: it must never reach redirected output.
 */
#define _GNU_SOURCE
#include "perf.h"
#include "tcoll_channel.h" /* tc_mem_alloc */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int perf_rank, perf_size;
MPI_Comm perf_comm;
int perf_progress_on;
static int progress_shown;

void perf_die(const char *fmt, ...)
{
    va_list ap;
    if (progress_shown) {
        fputs("\r\033[K", stderr);
    }
    fprintf(stderr, "tcoll-perf: rank %d: ", perf_rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, PERF_EXIT_FAIL);
    exit(PERF_EXIT_FAIL); /* not reached */
}

double perf_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void perf_progress(const char *fmt, ...)
{
    va_list ap;
    if (!perf_progress_on) {
        return;
    }
    fputs("\r\033[K", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
    progress_shown = 1;
}

void perf_progress_clear(void)
{
    if (progress_shown) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        fputs("\r\033[K", stderr);
        fflush(stderr);
        progress_shown = 0;
        /* mpirun forwards stderr and stdout separately: give the clear a
         * head start over the row that follows, so they do not share a line. */
        nanosleep(&ts, NULL);
    }
}

/* Whether progress lines would reach a person: stderr is a terminal, or this
 * process was started by a local launcher (mpirun pipes a rank's stderr to
 * itself) whose own stderr is one. Linux /proc; no side effects. */
int perf_stderr_is_terminal(void)
{
    static const char *const launchers[] = {"mpirun",  "mpiexec", "orterun",        "orted",
                                            "prterun", "prted",   "hydra_pmi_proxy"};
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

void *perf_alloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL) {
        perf_die("cannot allocate %zu bytes for %s", bytes, what);
    }
    return p;
}

void *perf_alloc_data(size_t bytes, int shared, int *shared_p, const char *what)
{
    void *p = NULL;
    if (shared && tc_mem_alloc(bytes ? bytes : 1, &p) == TC_OK) {
        *shared_p = 1;
        return p;
    }
    if (shared) {
        fprintf(stderr, "tcoll-perf: rank %d: tc_mem_alloc for %s failed (%s): malloc instead\n",
                perf_rank, what, tc_last_error());
    }
    *shared_p = 0;
    return perf_alloc(bytes, what);
}

void perf_free_data(void *p, int shared)
{
    if (shared) {
        (void)tc_mem_free(p);
    } else {
        free(p);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double perf_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void perf_fmt_wrong(char *buf, size_t len, long long w)
{
    if (w < 0) {
        snprintf(buf, len, "-");
    } else {
        snprintf(buf, len, "%lld", w);
    }
}

void perf_poison_recv(perf_bench_t *b)
{
    memset(b->recv, PERF_POISON, b->count * tc_dtype_size(b->o->dtype));
}
