/*
 * test_emu_faults.c - device tensors when one rank's CUDA fails, on the CUDA
 * runtime stand-in (cudart_emu.c), which makes the fault on demand in one
 * process (TC_CUDA_EMU_FAIL_RANK, emu_faults.h): what a GPU cannot be
 * asked to do. One case a run, named with --case, under the environment
 * CMakeLists.txt gives it; TCOLL_CUDA_IPC_MIN_KB=1 always.
 *  - kernel_fails (TCOLL_CUDA_IPC=1, TC_CUDA_EMU_FAIL_LAUNCH=1 on the last
 *    rank): its first combine kernel cannot launch; the allreduce fails on
 *    every rank with TC_ERR_TRANSPORT, the message naming that rank and the
 *    kernel (a status exchange told every rank), and only that tensor
 *    fails: the next device allreduce runs over CUDA IPC with the right
 *    values on every rank, and so does a host one;
 *  - kernel_faults_sticky (the same, TC_CUDA_EMU_FAIL_STICKY=1): the kernel
 *    faults when it runs (an illegal address: that process's CUDA is
 *    broken for good); the tensor fails on every rank alike, host tensors
 *    go on, and that rank's next device submission is refused at once,
 *    saying why;
 *  - copy_back_fails (TCOLL_CUDA_IPC=0: staged): on the last rank the copy
 *    of the result back into its device buffer fails, after the collective
 *    is over on every rank: only that rank's request fails, naming the
 *    tensor and CUDA's error; the others get the sum; then every rank goes
 *    on;
 *  - ipc_refused (TCOLL_CUDA_IPC=1, TC_CUDA_EMU_NO_IPC=1 on rank 1 only):
 *    every rank declines the IPC path alike, the allreduce runs staged on
 *    every rank with the right values, and so does the next, and a
 *    reducescatter.
 */
#define _POSIX_C_SOURCE 200809L

#include <cuda_runtime_api.h>

#include "cuda_check.h"
#include "emu_faults.h"
#include "mpi_common.h"

#define COUNT 4096

/* Rank r's input of an allreduce (sum) of COUNT floats, element i = r + i,
 * into device memory d. */
static void fill(void *d)
{
    float *h = tt_xmalloc(COUNT * sizeof(float));
    int i;

    for (i = 0; i < COUNT; i++) {
        h[i] = (float)(tt_rank + i);
    }
    CUDA_OK(cudaMemcpy(d, h, COUNT * sizeof(float), cudaMemcpyHostToDevice));
    free(h);
}

/* The sum of every rank's input, in device memory d. */
static void check_sum(const char *name, const void *d)
{
    float *h = tt_xmalloc(COUNT * sizeof(float));
    int i;

    CUDA_OK(cudaMemcpy(h, d, COUNT * sizeof(float), cudaMemcpyDeviceToHost));
    for (i = 0; i < COUNT; i++) {
        float want = (float)(tt_size * (tt_size - 1) / 2 + tt_size * i);
        CHECK_MSG(h[i] == want, "%s: element %d is %g, want %g", name, i, h[i], want);
    }
    free(h);
}

/* The allreduce (sum, in place) of device memory d: its status, its
 * message (the submission's where it was refused) and its algorithm. */
static tc_status_t run_allreduce(const char *name, void *d, char *msg, size_t len, char *algo,
                                 size_t alen)
{
    tc_tensor_t t = {d, TC_FLOAT32, 1, {COUNT}};
    tc_opts_t o = TC_OPTS_INIT;
    tc_request_t *req;
    tc_status_t st;

    o.device = 0; /* the stand-in's only device here */
    algo[0] = '\0';
    if ((st = tc_allreduce_ex(name, &t, d, TC_SUM, &o, &req)) != TC_OK) {
        snprintf(msg, len, "%s", tc_last_error());
        return st;
    }
    st = tc_wait(req);
    snprintf(msg, len, "%s", st == TC_OK ? "" : tc_request_error(req));
    snprintf(algo, alen, "%s", tc_request_algorithm(req));
    tc_request_free(req);
    return st;
}

/* The allreduce of a fresh device buffer, checked where it worked; with
 * fail_copy, on the last rank the copy of the result into it fails. */
static tc_status_t dev_allreduce(const char *name, int fail_copy, char *msg, size_t len, char *algo,
                                 size_t alen)
{
    void *d;
    tc_status_t st;

    CUDA_OK(cudaMalloc(&d, COUNT * sizeof(float)));
    fill(d);
    if (fail_copy && tt_rank == tt_size - 1) {
        tc_emu_fail_copy_into(d);
    }
    st = run_allreduce(name, d, msg, len, algo, alen);
    tc_emu_fail_copy_into(NULL);
    if (st == TC_OK) {
        check_sum(name, d);
    }
    CUDA_OK(cudaFree(d));
    return st;
}

/* A host allreduce: the engine still runs. */
static void host_allreduce(const char *name)
{
    float x = (float)tt_rank, y = -1;
    tc_tensor_t t = {&x, TC_FLOAT32, 1, {1}};
    tc_request_t *req;

    CHECK_OK(tc_allreduce(name, &t, &y, TC_SUM, &req));
    CHECK_OK(tc_wait(req));
    tc_request_free(req);
    CHECK_MSG(y == (float)(tt_size * (tt_size - 1) / 2), "%s: %g", name, y);
}

/* Every rank failed the tensor alike: the combine kernel of the last rank. */
static void check_kernel_failure(tc_status_t st, const char *msg, const char *cuda_error)
{
    char want[64];

    CHECK_STATUS(st, TC_ERR_TRANSPORT);
    snprintf(want, sizeof(want), "the combine kernel failed on rank %d", tt_size - 1);
    CHECK_MSG(strstr(msg, want) != NULL, "message '%s' does not say '%s'", msg, want);
    if (tt_rank == tt_size - 1) {
        CHECK_MSG(strstr(msg, cuda_error) != NULL, "message '%s' does not say %s", msg, cuda_error);
    }
}

TC_CASE(kernel_fails)
{
    char msg[512], algo[64];

    check_kernel_failure(dev_allreduce("ar/fails", 0, msg, sizeof(msg), algo, sizeof(algo)), msg,
                         "cudaErrorLaunchOutOfResources");
    /* only that tensor failed */
    CHECK_OK(dev_allreduce("ar/after", 0, msg, sizeof(msg), algo, sizeof(algo)));
    CHECK_MSG(strcmp(algo, "cuda ipc") == 0, "ar/after ran '%s'", algo);
    host_allreduce("host/after");
    CHECK_OK(tc_shutdown());
}

TC_CASE(kernel_faults_sticky)
{
    char msg[512], algo[64];
    void *d;
    tc_status_t st;

    CUDA_OK(cudaMalloc(&d, COUNT * sizeof(float)));
    fill(d);
    st = run_allreduce("ar/faults", d, msg, sizeof(msg), algo, sizeof(algo));
    check_kernel_failure(st, msg, "cudaErrorIllegalAddress");
    host_allreduce("host/after");
    if (tt_rank == tt_size - 1) { /* its CUDA is broken: refused at once, saying why */
        st = run_allreduce("ar/refused", d, msg, sizeof(msg), algo, sizeof(algo));
        CHECK_MSG(st != TC_OK, "a device allreduce was taken after an illegal address");
        CHECK_STR_CONTAINS(msg, "ar/refused");
        CHECK_STR_CONTAINS(msg, "cudaErrorIllegalAddress");
        CHECK_STATUS(st, TC_ERR_TRANSPORT);
        (void)cudaFree(d); /* fails too: the error is sticky */
    } else {
        CUDA_OK(cudaFree(d));
    }
    host_allreduce("host/last");
    CHECK_OK(tc_shutdown());
}

TC_CASE(copy_back_fails)
{
    char msg[512], algo[64];
    tc_status_t st = dev_allreduce("ar/copy", 1, msg, sizeof(msg), algo, sizeof(algo));

    if (tt_rank == tt_size - 1) {
        CHECK_MSG(st != TC_OK, "the allreduce succeeded though its copy back failed");
        CHECK_STR_CONTAINS(msg, "tensor 'ar/copy'");
        CHECK_STR_CONTAINS(msg, "cudaErrorInvalidValue");
    } else {
        CHECK_MSG(st == TC_OK, "rank %d: %s", tt_rank, msg);
    }
    CHECK_OK(dev_allreduce("ar/copy2", 0, msg, sizeof(msg), algo, sizeof(algo)));
    host_allreduce("host/after");
    CHECK_OK(tc_shutdown());
}

TC_CASE(ipc_refused)
{
    char msg[512], algo[64];
    size_t rows = (size_t)tt_size * 3, i;
    float *h = tt_xmalloc(rows * 8 * sizeof(float)), *back = tt_xmalloc(3 * 8 * sizeof(float));
    void *d;
    tc_tensor_t t = {NULL, TC_FLOAT32, 2, {(int64_t)rows, 8}}, out;
    tc_opts_t o = TC_OPTS_INIT;
    tc_request_t *req;

    CHECK_OK(dev_allreduce("ar/refused", 0, msg, sizeof(msg), algo, sizeof(algo)));
    CHECK_MSG(strcmp(algo, "cuda ipc") != 0, "ran '%s' though rank 1 refuses IPC", algo);
    CHECK_OK(dev_allreduce("ar/refused2", 0, msg, sizeof(msg), algo, sizeof(algo)));
    CHECK_MSG(strcmp(algo, "cuda ipc") != 0, "ran '%s' though rank 1 refuses IPC", algo);
    for (i = 0; i < rows * 8; i++) {
        h[i] = (float)i;
    }
    CUDA_OK(cudaMalloc(&d, rows * 8 * sizeof(float)));
    CUDA_OK(cudaMemcpy(d, h, rows * 8 * sizeof(float), cudaMemcpyHostToDevice));
    t.data = d;
    CUDA_OK(cudaGetDevice(&o.device));
    CHECK_OK(tc_reducescatter_ex("rs/refused", &t, TC_SUM, &o, &req));
    CHECK_OK(tc_wait(req));
    CHECK_OK(tc_request_output(req, &out));
    CHECK_EQ(out.shape[0], 3);
    CUDA_OK(cudaMemcpy(back, out.data, 3 * 8 * sizeof(float), cudaMemcpyDeviceToHost));
    for (i = 0; i < 3 * 8; i++) {
        float w = (float)(tt_size * ((size_t)tt_rank * 3 * 8 + i));
        CHECK_MSG(back[i] == w, "reducescatter element %zu is %g, want %g", i, back[i], w);
    }
    CHECK_MSG(strcmp(tc_request_algorithm(req), "cuda ipc") != 0, "reducescatter ran '%s'",
              tc_request_algorithm(req));
    tc_request_free(req);
    CUDA_OK(cudaFree(d));
    free(back);
    free(h);
    CHECK_OK(tc_shutdown());
}

int main(int argc, char **argv)
{
    int ndev = 0;

    if (!tc_cuda_available() || cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        printf("test_emu_faults: no device: %s\n", tc_cuda_info());
        return 1; /* the stand-in always has one */
    }
    return tt_mpi_main(argc, argv, &(tt_program_t){.case_ends_tcoll = 1});
}
