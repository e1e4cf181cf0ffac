/*
 * mode_device.c - tcoll-perf --device cuda: float32 sum allreduce on CUDA
 * device buffers, in a CUDA build. Rank r uses device (local rank mod the
 * device count), so ranks may share one GPU.
 *
 * One row per size (default 4 B, 1 MiB, 64 MiB, 1 GiB; -b, -e and -f choose
 * others): tcoll (tc_allreduce_ex with tc_opts_t.device, then tc_wait and
 * tc_request_free), and the peer a user without a CUDA-aware MPI has: copy
 * to page-locked host memory, MPI_Allreduce in place, copy back. Beside them
 * the machine's limit, measured in the same run on this rank's device: the
 * bandwidth of a device-to-device cudaMemcpy of the row's size (at least
 * 64 MiB: smaller copies measure the launch, not the memory), as bytes
 * copied per second. Columns: time = median over iterations of the slowest
 * rank's time; busbw = size/time x 2(n-1)/n; ratio = tcoll busbw / the copy
 * bandwidth (the fraction of the limit reached), and tcoll busbw / MPI's.
 * Each result is checked (exact integers) once after the timed loop; path
 * is the algorithm tcoll ran (tc_request_algorithm: "staged, pipelined",
 * "cuda ipc", or the host record a tensor staged whole took).
 * Without a usable device every rank exits with status 77 (skipped).
 */
#include "perf.h"

#include <cuda_runtime_api.h>

#include <stdlib.h>
#include <string.h>

#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t ce_ = (call);                                                                  \
        if (ce_ != cudaSuccess) {                                                                  \
            perf_die("%s: %s", #call, cudaGetErrorString(ce_));                                    \
        }                                                                                          \
    } while (0)

static int dev;

/* The bandwidth of a device-to-device copy of bytes (at least 64 MiB) on
 * this rank's device, in bytes per second: the best of 5. */
static double copy_bandwidth(uint64_t bytes)
{
    void *a, *b;
    cudaEvent_t e0, e1;
    float ms, best = 0;
    int i;

    bytes = bytes < (64ull << 20) ? 64ull << 20 : bytes;
    CU(cudaMalloc(&a, bytes));
    CU(cudaMalloc(&b, bytes));
    CU(cudaMemset(a, 1, bytes));
    CU(cudaEventCreate(&e0));
    CU(cudaEventCreate(&e1));
    CU(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice)); /* warm */
    for (i = 0; i < 5; i++) {
        CU(cudaEventRecord(e0, NULL));
        CU(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
        CU(cudaEventRecord(e1, NULL));
        CU(cudaEventSynchronize(e1));
        CU(cudaEventElapsedTime(&ms, e0, e1));
        best = i == 0 || ms < best ? ms : best;
    }
    CU(cudaEventDestroy(e0));
    CU(cudaEventDestroy(e1));
    CU(cudaFree(a));
    CU(cudaFree(b));
    return (double)bytes / (best * 1e-3);
}

/* Rank r's element i: small integers, so every sum is exact in float32. */
static float value(int r, uint64_t i)
{
    return (float)((int)((i * 7 + (uint64_t)r * 3) % 11) - 5);
}

static void fill(float *host, uint64_t count)
{
    for (uint64_t i = 0; i < count; i++) {
        host[i] = value(perf_rank, i);
    }
}

static long long check(const float *host, uint64_t count)
{
    long long wrong = 0;
    for (uint64_t i = 0; i < count; i++) {
        float want = 0;
        for (int r = 0; r < perf_size; r++) {
            want += value(r, i);
        }
        wrong += host[i] != want;
    }
    return wrong;
}

/* The slowest rank's time of each iteration of op, the median (us). */
typedef void (*once_fn)(void *arg);
static double timed(once_fn op, void *arg, int iters, int warmup)
{
    double *t = perf_alloc((size_t)iters * sizeof(double), "timings"), m;
    int i;

    for (i = 0; i < warmup; i++) {
        op(arg);
    }
    for (i = 0; i < iters; i++) {
        double t0;
        MPI_Barrier(perf_comm);
        t0 = perf_now_s();
        op(arg);
        t[i] = (perf_now_s() - t0) * 1e6;
        MPI_Allreduce(MPI_IN_PLACE, &t[i], 1, MPI_DOUBLE, MPI_MAX, perf_comm);
    }
    m = perf_median(t, iters);
    free(t);
    return m;
}

typedef struct {
    void *d;       /* the device buffer, reduced in place */
    float *pinned; /* MPI's staging */
    uint64_t count;
    const char *name;
    const char *algo; /* what tcoll ran (tc_request_algorithm) the last time */
} job_t;

static void tcoll_once(void *arg)
{
    job_t *j = arg;
    tc_tensor_t t = {j->d, TC_FLOAT32, 1, {(int64_t)j->count}};
    tc_opts_t o = TC_OPTS_INIT;
    tc_request_t *req;
    tc_status_t st;

    o.device = dev;
    if ((st = tc_allreduce_ex(j->name, &t, j->d, TC_SUM, &o, &req)) != TC_OK ||
        (st = tc_wait(req)) != TC_OK) {
        perf_die("tcoll allreduce of %llu device bytes: %s: %s", (unsigned long long)(j->count * 4),
                 tc_status_string(st), tc_last_error());
    }
    j->algo = tc_request_algorithm(req); /* static text */
    tc_request_free(req);
}

static void mpi_once(void *arg)
{
    job_t *j = arg;
    size_t bytes = j->count * 4;

    CU(cudaMemcpy(j->pinned, j->d, bytes, cudaMemcpyDeviceToHost));
    MPI_Allreduce(MPI_IN_PLACE, j->pinned, (int)j->count, MPI_FLOAT, MPI_SUM, perf_comm);
    CU(cudaMemcpy(j->d, j->pinned, bytes, cudaMemcpyHostToDevice));
}

perf_row_t *perf_run_device(const perf_opts_t *o, int *nrows_p, long long *wrong_p)
{
    static const uint64_t defaults[] = {4, 1ull << 20, 64ull << 20, 1ull << 30};
    uint64_t sizes[64];
    int nsizes = 0, ndev = 0, local = 0, k;
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    double factor = perf_size > 1 ? 2.0 * (perf_size - 1) / perf_size : 1.0;
    perf_row_t *rows;
    struct cudaDeviceProp prop;

    if (lr == NULL) {
        lr = getenv("MPI_LOCALRANKID");
    }
    local = lr != NULL ? atoi(lr) : perf_rank;
    if (!tc_cuda_available() || cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        /* the same on every rank of a machine: all end here, status 77 */
        if (perf_rank == 0) {
            fprintf(stderr, "tcoll-perf: --device cuda: skipped: no usable CUDA device: %s\n",
                    tc_cuda_info());
        }
        tc_shutdown();
        MPI_Comm_free(&perf_comm);
        MPI_Finalize();
        exit(PERF_EXIT_SKIP);
    }
    dev = local % ndev;
    CU(cudaSetDevice(dev));
    CU(cudaGetDeviceProperties(&prop, dev));
    if (o->sizes_set) {
        for (uint64_t s = o->min_bytes; s <= o->max_bytes && nsizes < 63; s *= o->factor) {
            sizes[nsizes++] = s;
        }
        if (nsizes == 0 || sizes[nsizes - 1] != o->max_bytes) {
            sizes[nsizes++] = o->max_bytes;
        }
    } else {
        for (k = 0; k < 4; k++) {
            sizes[nsizes++] = defaults[k];
        }
    }
    rows = perf_alloc((size_t)nsizes * sizeof(*rows), "rows");
    if (perf_rank == 0) {
        printf("# tcoll-perf --device cuda: float32 sum allreduce on device buffers, %d ranks on "
               "%d device%s (rank 0: device %d, %s)\n",
               perf_size, ndev, ndev == 1 ? "" : "s", dev, prop.name);
        printf("# %s\n", tc_cuda_info());
        printf("# MPI = copy to page-locked host memory, MPI_Allreduce in place, copy back\n");
        printf("# limit = device-to-device cudaMemcpy bandwidth measured now (GB/s)\n");
        printf("%12s %12s %10s %12s %10s %10s %8s %10s %7s  %s\n", "size", "tcoll_us", "busbw",
               "MPI_us", "busbw", "limit", "of_limit", "tcoll/MPI", "wrong", "path");
        fflush(stdout);
    }
    *wrong_p = 0;
    for (k = 0; k < nsizes; k++) {
        uint64_t bytes = sizes[k] < 4 ? 4 : sizes[k] / 4 * 4, count = bytes / 4;
        int iters = o->iters > 0            ? o->iters
                    : bytes <= (1ull << 20) ? 50
                    : bytes >= (1ull << 30) ? 5
                                            : 10;
        int warmup = o->warmup >= 0 ? o->warmup : 2;
        float *host = perf_alloc(bytes, "host data");
        job_t j = {NULL, NULL, count, NULL, "none"};
        char name[64];
        double limit, us[2], bw[2];
        long long wrong = 0;

        snprintf(name, sizeof name, "perf.device.%llu", (unsigned long long)bytes);
        j.name = name;
        CU(cudaMalloc(&j.d, bytes));
        CU(cudaMallocHost((void **)&j.pinned, bytes));
        limit = copy_bandwidth(bytes);
        MPI_Allreduce(MPI_IN_PLACE, &limit, 1, MPI_DOUBLE, MPI_MIN, perf_comm);
        fill(host, count);
        CU(cudaMemcpy(j.d, host, bytes, cudaMemcpyHostToDevice));
        us[0] = timed(tcoll_once, &j, iters, warmup);
        /* checked once more, from fresh inputs */
        CU(cudaMemcpy(j.d, host, bytes, cudaMemcpyHostToDevice));
        tcoll_once(&j);
        CU(cudaMemcpy(host, j.d, bytes, cudaMemcpyDeviceToHost));
        wrong = o->check ? check(host, count) : 0;
        fill(host, count);
        CU(cudaMemcpy(j.d, host, bytes, cudaMemcpyHostToDevice));
        us[1] = timed(mpi_once, &j, iters, warmup);
        MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, perf_comm);
        *wrong_p += wrong;
        bw[0] = (double)bytes / (us[0] * 1e-6) * factor / 1e9;
        bw[1] = (double)bytes / (us[1] * 1e-6) * factor / 1e9;
        rows[k] = (perf_row_t){.bytes = bytes,
                               .count = count,
                               .iters = iters,
                               .warmup = warmup,
                               .us = {us[0], us[1]},
                               .wrong = {wrong, -1}};
        if (perf_rank == 0) {
            printf("%12llu %12.1f %10.2f %12.1f %10.2f %10.1f %8.3f %10.2f %7lld  %s\n",
                   (unsigned long long)bytes, us[0], bw[0], us[1], bw[1], limit / 1e9,
                   bw[0] / (limit / 1e9), bw[0] / bw[1], wrong, j.algo);
            fflush(stdout);
        }
        CU(cudaFreeHost(j.pinned));
        CU(cudaFree(j.d));
        free(host);
    }
    *nrows_p = nsizes;
    return rows;
}
