/*
 * test_emu_faults.c - device tensors when one rank's CUDA fails, on the CUDA
 * runtime stand-in (cudart_emu.c), which makes the fault on demand in one
 * process (TC_CUDA_EMU_FAIL_RANK): what a GPU cannot be asked to do. One
 * case a run, named with --case, under the environment CMakeLists.txt gives
 * it; TCOLL_CUDA_IPC=1 and TCOLL_CUDA_IPC_MIN_KB=1 always (kernel_fails
 * under run_all_fail.sh, which reads each rank's last line).
 *  - kernel_fails (TC_CUDA_EMU_FAIL_LAUNCH=1 on the last rank): its first
 *    combine kernel cannot launch; the allreduce fails on every rank with
 *    TC_ERR_TRANSPORT, the message naming that rank and the kernel, and
 *    tcoll stops on every rank as after any failed collective (as NCCL
 *    aborts a communicator after a CUDA error): the next call fails at
 *    once, nothing hangs;
 *  - ipc_refused (TC_CUDA_EMU_NO_IPC=1 on rank 1 only): every rank declines
 *    the IPC path alike, the allreduce runs staged on every rank with the
 *    right values, and so does the next, and a reducescatter.
 */
#define _POSIX_C_SOURCE 200809L

#include <cuda_runtime_api.h>

#include "mpi_common.h"

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t ce_ = (call);                                                                  \
        CHECK_MSG(ce_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(ce_));                   \
    } while (0)

#define COUNT 4096

/* An allreduce (sum) of COUNT floats, rank r's element i = r + i, on device
 * memory: its status (the output checked on success) and algorithm. */
static tc_status_t dev_allreduce(const char *name, char *msg, size_t len, char *algo, size_t alen)
{
    float *h = tt_xmalloc(COUNT * sizeof(float));
    void *d;
    tc_tensor_t t = {NULL, TC_FLOAT32, 1, {COUNT}};
    tc_opts_t o = TC_OPTS_INIT;
    tc_request_t *req;
    tc_status_t st;
    int i;

    for (i = 0; i < COUNT; i++) {
        h[i] = (float)(tt_rank + i);
    }
    CUDA_OK(cudaMalloc(&d, COUNT * sizeof(float)));
    CUDA_OK(cudaMemcpy(d, h, COUNT * sizeof(float), cudaMemcpyHostToDevice));
    t.data = d;
    CUDA_OK(cudaGetDevice(&o.device));
    CHECK_OK(tc_allreduce_ex(name, &t, d, TC_SUM, &o, &req));
    st = tc_wait(req);
    snprintf(msg, len, "%s", st == TC_OK ? "" : tc_request_error(req));
    snprintf(algo, alen, "%s", tc_request_algorithm(req));
    tc_request_free(req);
    if (st == TC_OK) {
        CUDA_OK(cudaMemcpy(h, d, COUNT * sizeof(float), cudaMemcpyDeviceToHost));
        for (i = 0; i < COUNT; i++) {
            float want = (float)(tt_size * (tt_size - 1) / 2 + tt_size * i);
            CHECK_MSG(h[i] == want, "%s: element %d is %g, want %g", name, i, h[i], want);
        }
    }
    CUDA_OK(cudaFree(d));
    free(h);
    return st;
}

TC_CASE(kernel_fails)
{
    char msg[512], algo[64], want[64];
    float x = 1, y;
    tc_tensor_t t = {&x, TC_FLOAT32, 1, {1}};
    tc_request_t *req = NULL;
    tc_status_t st;

    st = dev_allreduce("ar/fails", msg, sizeof(msg), algo, sizeof(algo));
    CHECK_STATUS(st, TC_ERR_TRANSPORT);
    snprintf(want, sizeof(want), "the combine kernel failed on rank %d", tt_size - 1);
    CHECK_MSG(strstr(msg, want) != NULL, "message '%s' does not say '%s'", msg, want);
    if (tt_rank == tt_size - 1) {
        CHECK_MSG(strstr(msg, "cudaErrorLaunchOutOfResources") != NULL, "message '%s'", msg);
    }
    /* tcoll stopped on this rank: the next call fails at once, saying why */
    st = tc_allreduce("after", &t, &y, TC_SUM, &req);
    if (st == TC_OK) {
        st = tc_wait(req);
        tc_request_free(req);
    }
    CHECK_MSG(st != TC_OK, "a collective after the failure succeeded");
    CHECK_STR_CONTAINS(tc_last_error(), "combine kernel");
    (void)tc_shutdown();
    printf("test_emu_faults kernel_fails: rank %d stopped cleanly\n", tt_rank);
    fflush(stdout);
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

    CHECK_OK(dev_allreduce("ar/refused", msg, sizeof(msg), algo, sizeof(algo)));
    CHECK_MSG(strcmp(algo, "cuda ipc") != 0, "ran '%s' though rank 1 refuses IPC", algo);
    CHECK_OK(dev_allreduce("ar/refused2", msg, sizeof(msg), algo, sizeof(algo)));
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
