/*
 * test_device.c - device tensors (tc_opts_t.device, cuda_stream) where no GPU
 * need be: what tcoll says it was built with and found, the option checks
 * every build makes, and the refusals of a device tensor that cannot run.
 *  - tc_cuda_built / tc_cuda_available / tc_cuda_info agree with each other;
 *  - a device below TC_DEVICE_HOST, a device on a call without a tensor and
 *    a stream without a device are TC_ERR_ARG at once, in every build;
 *  - without usable CUDA (a build without it, or no driver or no device):
 *    every kind with a device tensor is TC_ERR_ARG at once, naming the
 *    device and why, and nothing is queued (the name runs on the host next);
 *  - with CUDA: host memory, or a device that does not exist, given as a
 *    device tensor is TC_ERR_ARG at once, saying so.
 * The device data path itself is tested on a GPU (tests/gpu/).
 */
#define _POSIX_C_SOURCE 200809L

#include "mpi_common.h"

#define CHECK_LAST_ERROR_HAS(text)                                                                 \
    do {                                                                                           \
        const char *le_ = tc_last_error();                                                         \
        CHECK_MSG(le_ != NULL && strstr(le_, (text)) != NULL, "last error '%s' does not say '%s'", \
                  le_ ? le_ : "(null)", (text));                                                   \
    } while (0)

/* Runs a host allreduce named name on every rank: a refused call left the
 * name free. */
static void host_allreduce(const char *name)
{
    tc_request_t *req;
    float x[3] = {1, 2, 3}, y[3];
    tc_tensor_t t = {x, TC_FLOAT32, 1, {3}};
    int i;

    CHECK_OK(tc_allreduce(name, &t, y, TC_SUM, &req));
    CHECK_OK(tc_wait(req));
    for (i = 0; i < 3; i++) {
        CHECK_EQ(y[i], x[i] * (float)tc_size());
    }
    tc_request_free(req);
}

TC_CASE(info_truthful)
{
    const char *info = tc_cuda_info();

    CHECK(info != NULL && info[0] != '\0');
    CHECK(tc_cuda_info() == info); /* found once */
    CHECK(tc_cuda_built() == 0 || tc_cuda_built() == 1);
    CHECK(tc_cuda_available() == 0 || tc_cuda_available() == 1);
    if (!tc_cuda_built()) {
        CHECK(!tc_cuda_available());
        CHECK_MSG(strncmp(info, "not built: ", 11) == 0, "info '%s'", info);
    } else if (!tc_cuda_available()) {
        CHECK_MSG(strstr(info, "not available: ") != NULL, "info '%s'", info);
    } else {
        CHECK_MSG(strncmp(info, "driver ", 7) == 0 && strstr(info, "device") != NULL, "info '%s'",
                  info);
    }
}

TC_CASE(device_options_checked)
{
    tc_request_t *req;
    float x[4] = {0}, y[4];
    tc_tensor_t t = {x, TC_FLOAT32, 1, {4}};
    tc_opts_t o = TC_OPTS_INIT;
    int stream_token;

    CHECK_EQ(o.device, TC_DEVICE_HOST);
    CHECK(o.cuda_stream == NULL);
    o.device = -2;
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce_ex("d", &t, y, TC_SUM, &o, &req));
    CHECK_LAST_ERROR_HAS("device -2 is neither TC_DEVICE_HOST");
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allgather_ex("d", &t, &o, &req));
    o.device = 0;
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_barrier_ex(&o, &req));
    CHECK_LAST_ERROR_HAS("barrier takes no tensor");
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_join_ex(&o, &req));
    CHECK_LAST_ERROR_HAS("takes no tensor");
    o.device = TC_DEVICE_HOST;
    o.cuda_stream = &stream_token; /* never read: refused first */
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce_ex("d", &t, y, TC_SUM, &o, &req));
    CHECK_LAST_ERROR_HAS("a stream goes with a device tensor");
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast_ex("d", &t, 0, &o, &req));
    host_allreduce("d");
}

/* Every kind that takes a tensor, with o, on host buffers: refused at once
 * with TC_ERR_ARG and a message that says want. */
static void every_kind_refused(const tc_opts_t *o, const char *want)
{
    tc_request_t *req, *reqs[2] = {TT_SENTINEL, TT_SENTINEL};
    int n = tc_size();
    float *x = calloc((size_t)n * 2, sizeof(float)), *y = calloc((size_t)n * 2, sizeof(float));
    tc_tensor_t t = {x, TC_FLOAT32, 1, {2 * n}};
    const char *names[2] = {"dev-g0", "dev-g1"};
    tc_tensor_t ts[2] = {t, t};
    void *recvs[2] = {y, y + n};

    CHECK(x != NULL && y != NULL);
    ts[0].shape[0] = ts[1].shape[0] = n;
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce_ex("dev", &t, y, TC_SUM, o, &req));
    CHECK_LAST_ERROR_HAS(want);
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce_ex("dev", &t, x, TC_AVG, o, &req)); /* in place */
    CHECK_LAST_ERROR_HAS(want);
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allgather_ex("dev", &t, o, &req));
    CHECK_LAST_ERROR_HAS(want);
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast_ex("dev", &t, 0, o, &req));
    CHECK_LAST_ERROR_HAS(want);
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_reducescatter_ex("dev", &t, TC_SUM, o, &req));
    CHECK_LAST_ERROR_HAS(want);
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_alltoall_ex("dev", &t, NULL, o, &req));
    CHECK_LAST_ERROR_HAS(want);
    CHECK_STATUS(tc_grouped_allreduce(2, names, ts, recvs, TC_SUM, o, reqs), TC_ERR_ARG);
    CHECK_LAST_ERROR_HAS(want);
    CHECK(reqs[0] == TT_SENTINEL && reqs[1] == TT_SENTINEL);
    CHECK_STATUS(tc_grouped_allgather(2, names, ts, o, reqs), TC_ERR_ARG);
    CHECK_STATUS(tc_grouped_reducescatter(2, names, ts, TC_SUM, o, reqs), TC_ERR_ARG);
    CHECK(reqs[0] == TT_SENTINEL && reqs[1] == TT_SENTINEL);
    free(x);
    free(y);
    /* nothing was queued: every name is free */
    host_allreduce("dev");
    host_allreduce("dev-g0");
    host_allreduce("dev-g1");
}

TC_CASE(device_tensor_refused)
{
    tc_opts_t o = TC_OPTS_INIT;
    char want[64];

    if (!tc_cuda_available()) {
        /* "tensor 'dev' is on CUDA device 0, but <why>" */
        o.device = 0;
        every_kind_refused(&o, "is on CUDA device 0, but ");
        every_kind_refused(&o, tc_cuda_built() ? "no " : "built without CUDA");
        return;
    }
    /* a GPU: host memory is not device memory; a device past the last */
    o.device = 0;
    every_kind_refused(&o, "is host memory, not device memory");
    o.device = 4096;
    snprintf(want, sizeof(want), "CUDA device %d does not exist", o.device);
    every_kind_refused(&o, want);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
