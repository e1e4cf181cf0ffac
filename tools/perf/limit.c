/*
 * limit.c - this machine's limit for a row, measured in the same run: the
 * rates of the three things tcoll's host algorithms do with bytes, at the
 * row's size and on buffers of that size, with every rank doing it at once
 * (as in a collective), and the model that turns the bytes an algorithm
 * must move into a time at those rates (docs/perf.md, "The limit"):
 *
 *   copy    memcpy from one buffer of the size into another
 *   reduce  tc_reduce_local (the collectives' kernel) of one buffer into
 *           another, in the row's dtype and op
 *   1copy   process_vm_readv of the size from the next rank of this node
 *           (its buffer into this one's): a single copy between processes
 *
 * Each is timed like a row (between barriers, the slowest rank per
 * iteration, the median over iterations). A rate is bytes / that time.
 */
#define _GNU_SOURCE
#include "perf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static struct {
    char *src, *dst; /* this rank's, max bytes each, written once */
    size_t cap;
    int has_peer; /* a rank of this node to read from, and reading works */
    pid_t peer_pid;
    uint64_t peer_src; /* its src */
} L;

/* Reads bytes of the peer's src at off into dst + off; -1 (errno) on failure. */
static int read_peer(size_t off, size_t bytes)
{
    while (bytes > 0) {
        struct iovec local = {L.dst + off, bytes};
        struct iovec remote = {(void *)(uintptr_t)(L.peer_src + off), bytes};
        ssize_t got = process_vm_readv(L.peer_pid, &local, 1, &remote, 1, 0);
        if (got <= 0) {
            return -1;
        }
        off += (size_t)got;
        bytes -= (size_t)got;
    }
    return 0;
}

void perf_limit_init(size_t max_bytes)
{
    MPI_Comm node;
    int lrank, lsize, ok;
    struct {
        long long pid;
        unsigned long long addr;
    } me, *all;

    L.cap = max_bytes > 0 ? max_bytes : 1;
    L.src = perf_alloc(L.cap, "the limit's source buffer");
    L.dst = perf_alloc(L.cap, "the limit's destination buffer");
    memset(L.src, 1, L.cap); /* written: no page is the shared zero page */
    memset(L.dst, 2, L.cap);
    MPI_Comm_split_type(perf_comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &lrank);
    MPI_Comm_size(node, &lsize);
    me.pid = (long long)getpid();
    me.addr = (unsigned long long)(uintptr_t)L.src;
    all = perf_alloc(sizeof *all * (size_t)lsize, "the node's addresses");
    MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, node);
    L.peer_pid = (pid_t)all[(lrank + 1) % lsize].pid;
    L.peer_src = all[(lrank + 1) % lsize].addr;
    ok = lsize > 1 && read_peer(0, L.cap < 4096 ? L.cap : 4096) == 0;
    /* every rank measures 1copy, or none does */
    MPI_Allreduce(&ok, &L.has_peer, 1, MPI_INT, MPI_MIN, perf_comm);
    free(all);
    MPI_Comm_free(&node);
}

void perf_limit_free(void)
{
    free(L.src);
    free(L.dst);
    memset(&L, 0, sizeof L);
}

int perf_limit_has_1copy(void)
{
    return L.has_peer;
}

/* Writes the value 1 in dt into both buffers' first bytes: sums of ones
 * stay finite over every iteration, and no float is subnormal. */
static void fill_ones(tc_dtype_t dt, size_t bytes)
{
    size_t es = tc_dtype_size(dt), n = bytes / es;
    for (size_t i = 0; i < n; i++) {
        perf_put_int(dt, L.src, i, 1);
        perf_put_int(dt, L.dst, i, 0);
    }
}

/* Why this rank's first failed kernel failed ("" while none did). */
static char kernel_err[256];

/* One kernel over [off, off + bytes) of the buffers; 0, or -1 (the reason
 * in kernel_err) if it failed. */
static int kernel(perf_rate_t k, size_t off, size_t bytes, tc_dtype_t dt, tc_op_t op)
{
    int rc = 0;

    switch (k) {
    case PERF_RATE_COPY: memcpy(L.dst + off, L.src + off, bytes); break;
    case PERF_RATE_REDUCE:
        if (tc_reduce_local(L.dst + off, L.src + off, bytes / tc_dtype_size(dt), dt,
                            op == TC_AVG ? TC_SUM : op) != TC_OK) {
            rc = -1;
            if (kernel_err[0] == '\0') {
                snprintf(kernel_err, sizeof kernel_err, "tc_reduce_local: %s", tc_last_error());
            }
        }
        break;
    default:
        if ((rc = read_peer(off, bytes)) != 0 && kernel_err[0] == '\0') {
            snprintf(kernel_err, sizeof kernel_err, "process_vm_readv: %s", strerror(errno));
        }
        break;
    }
    return rc;
}

/* Collective, after the kernels: ends the job if any rank's kernel failed,
 * with this rank's reason where it was this one. */
static void kernels_succeeded(int failed)
{
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, perf_comm);
    if (failed) {
        perf_die("limit: a kernel failed while measuring the rates (%s)",
                 kernel_err[0] != '\0' ? kernel_err : "on another rank");
    }
}

/* Dies unless the buffers of perf_limit_init hold bytes. */
static void check_room(size_t bytes)
{
    if (bytes > L.cap) {
        perf_die("limit: %zu bytes, more than the %zu prepared", bytes, L.cap);
    }
}

void perf_limit_measure(size_t bytes, tc_dtype_t dt, tc_op_t op, int reduces, int iters, int warmup,
                        perf_limit_t *lim)
{
    double *times = perf_alloc(sizeof *times * (size_t)iters, "the limit's timings");
    int failed = 0;

    memset(lim, 0, sizeof *lim);
    check_room(bytes);
    if (reduces) {
        fill_ones(dt, bytes);
    }
    for (int k = 0; k < PERF_NRATES; k++) {
        if ((k == PERF_RATE_REDUCE && !reduces) || (k == PERF_RATE_1COPY && !L.has_peer) ||
            bytes == 0) {
            continue;
        }
        for (int i = 0; i < warmup + iters; i++) {
            double t0;
            MPI_Barrier(perf_comm);
            t0 = perf_now_s();
            failed |= kernel((perf_rate_t)k, 0, bytes, dt, op);
            if (i >= warmup) {
                times[i - warmup] = perf_now_s() - t0;
            }
        }
        MPI_Allreduce(MPI_IN_PLACE, times, iters, MPI_DOUBLE, MPI_MAX, perf_comm);
        lim->gbs[k] = (double)bytes / perf_median(times, iters) / 1e9;
    }
    kernels_succeeded(failed);
    free(times);
}

void perf_limit_measure_each(const size_t *bytes, int n, tc_dtype_t dt, tc_op_t op, int reps,
                             double *sec)
{
    double *t = perf_alloc(sizeof *t * (size_t)n * (size_t)reps, "the limit's timings");
    size_t total = 0;
    int failed = 0;

    for (int j = 0; j < n; j++) {
        total += bytes[j];
    }
    check_room(total);
    fill_ones(dt, total);
    for (int k = 0; k < PERF_NRATES; k++) {
        if (k == PERF_RATE_1COPY && !L.has_peer) {
            for (int j = 0; j < n; j++) {
                sec[(size_t)k * (size_t)n + (size_t)j] = 0;
            }
            continue;
        }
        for (int r = -1; r < reps; r++) { /* one untimed pass first */
            size_t off = 0;
            MPI_Barrier(perf_comm);
            for (int j = 0; j < n; j++) {
                double t0 = perf_now_s();
                failed |= kernel((perf_rate_t)k, off, bytes[j], dt, op);
                if (r >= 0) {
                    t[(size_t)j * (size_t)reps + (size_t)r] = perf_now_s() - t0;
                }
                off += bytes[j];
            }
        }
        for (int j = 0; j < n; j++) {
            sec[(size_t)k * (size_t)n + (size_t)j] =
                perf_median(t + (size_t)j * (size_t)reps, reps);
        }
        MPI_Allreduce(MPI_IN_PLACE, sec + (size_t)k * (size_t)n, n, MPI_DOUBLE, MPI_MAX, perf_comm);
    }
    kernels_succeeded(failed);
    free(t);
}
