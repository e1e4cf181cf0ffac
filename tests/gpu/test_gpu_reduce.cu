/*
 * test_gpu_reduce.cu - the GPU reduction (src/cuda/reduce_kernels.cuh)
 * against the host's (src/reduce), bit for bit: every dtype and op, 1 to 7
 * inputs combined in the documented order, with and without prescale and
 * postscale, on random bit patterns (NaNs quiet and signalling, infinities,
 * subnormals, the integer extremes) and on small integers; the output in
 * place over an input too. Both the header's kernel (reduce_kernels.cuh)
 * and libtcoll's (tc__cuda_combine: the fatbin the build embeds, loaded at
 * run time) are checked. Exit 0 PASS, 77 without a usable CUDA device
 * (one line saying why), 1 FAIL with the first differing element.
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "cuda/cuda.h"
#include "reduce/reduce.h"
}
#include "cuda/reduce_kernels.cuh"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t esize(tc_dtype_t dt)
{
    return tc_dtype_size(dt);
}

static int is_float(tc_dtype_t dt)
{
    return dt == TC_FLOAT16 || dt == TC_BFLOAT16 || dt == TC_FLOAT32 || dt == TC_FLOAT64;
}

/* Random bytes, with special values mixed in for the floating dtypes; or
 * small integers (kind 1), which keep sums and products exact. */
static void fill(tc_dtype_t dt, unsigned char *p, size_t count, int kind)
{
    static const uint16_t h_special[] = {0x7c00, 0xfc00, 0x7e00, 0x7d01, 0x0001, 0x8000, 0x3c00};
    static const uint16_t b_special[] = {0x7f80, 0xff80, 0x7fc0, 0x7f81, 0x0001, 0x8000, 0x3f80};
    static const uint32_t f_special[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u,
                                         0x00000001u, 0x80000000u, 0x3f800000u};
    static const uint64_t d_special[] = {0x7ff0000000000000ull, 0xfff0000000000000ull,
                                         0x7ff8000000000000ull, 0x7ff0000000000001ull, 1ull,
                                         0x8000000000000000ull, 0x3ff0000000000000ull};
    size_t es = esize(dt), i;

    for (i = 0; i < count; i++) {
        uint64_t r = rnd();
        if (kind == 1) {
            int64_t v = (int64_t)(r % 7) - 3;
            if (dt == TC_UINT8 || dt == TC_UINT16) {
                v = v < 0 ? -v : v;
            }
            switch (dt) {
            case TC_FLOAT16: {
                uint16_t h = tc__f32_to_f16((float)v);
                memcpy(p + i * 2, &h, 2);
                break;
            }
            case TC_BFLOAT16: {
                uint16_t h = tc__f32_to_bf16((float)v);
                memcpy(p + i * 2, &h, 2);
                break;
            }
            case TC_FLOAT32: {
                float f = (float)v;
                memcpy(p + i * 4, &f, 4);
                break;
            }
            case TC_FLOAT64: {
                double d = (double)v;
                memcpy(p + i * 8, &d, 8);
                break;
            }
            default: memcpy(p + i * es, &v, es); break; /* little-endian low bytes */
            }
            continue;
        }
        if (is_float(dt) && r % 8 == 0) { /* one in 8: a special value */
            size_t k = (size_t)((r >> 8) % 7);
            if (dt == TC_FLOAT16) {
                memcpy(p + i * 2, &h_special[k], 2);
            } else if (dt == TC_BFLOAT16) {
                memcpy(p + i * 2, &b_special[k], 2);
            } else if (dt == TC_FLOAT32) {
                memcpy(p + i * 4, &f_special[k], 4);
            } else {
                memcpy(p + i * 8, &d_special[k], 8);
            }
            continue;
        }
        if (dt == TC_FLOAT32) { /* finite values of moderate size mostly */
            float f = (float)((double)(int64_t)r / 9.2e18 * 1000.0);
            memcpy(p + i * 4, &f, 4);
        } else if (dt == TC_FLOAT64) {
            double d = (double)(int64_t)r / 9.2e18 * 1e6;
            memcpy(p + i * 8, &d, 8);
        } else if (dt == TC_FLOAT16) {
            uint16_t h = tc__f32_to_f16((float)((double)(int64_t)r / 9.2e18 * 100.0));
            memcpy(p + i * 2, &h, 2);
        } else if (dt == TC_BFLOAT16 && r % 4 != 1) {
            uint16_t h = tc__f32_to_bf16((float)((double)(int64_t)r / 9.2e18 * 100.0));
            memcpy(p + i * 2, &h, 2);
        } else {
            memcpy(p + i * es, &r, es); /* raw bits: integers, and some bfloat16 */
        }
    }
}

/* The host path's sequence: each input scaled, combined left to right, the
 * average's division, the postscale. */
static void host_combine(tc_dtype_t dt, tc_op_t op, int n, unsigned char *const *x,
                         unsigned char *out, size_t count, double pre, double post)
{
    size_t bytes = count * esize(dt);
    unsigned char *tmp = (unsigned char *)malloc(bytes > 0 ? bytes : 1);

    memcpy(out, x[0], bytes);
    if (pre != 1.0) {
        tc__scale(dt, out, out, count, pre);
    }
    for (int k = 1; k < n; k++) {
        memcpy(tmp, x[k], bytes);
        if (pre != 1.0) {
            tc__scale(dt, tmp, tmp, count, pre);
        }
        tc__reduce(dt, op, out, tmp, count);
    }
    if (op == TC_AVG) {
        tc__reduce_avg_finish(dt, out, count, n);
    }
    if (post != 1.0) {
        tc__scale(dt, out, out, count, post);
    }
    free(tmp);
}

#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            printf("test_gpu_reduce: FAIL: %s: %s\n", #call, cudaGetErrorString(e_));            \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

int main(void)
{
    static const tc_dtype_t dts[] = {TC_UINT8,    TC_INT8,    TC_UINT16,  TC_INT16, TC_INT32,
                                     TC_INT64,    TC_FLOAT16, TC_BFLOAT16, TC_FLOAT32,
                                     TC_FLOAT64};
    static const tc_op_t ops[] = {TC_SUM, TC_AVG, TC_MIN, TC_MAX, TC_PROD};
    static const int ns[] = {1, 2, 3, 4, 7};
    static const double scales[][2] = {{1.0, 1.0}, {0.5, 3.0}, {-2.0, 1.0}, {1.0, 0.1}};
    const size_t count = 4099;
    int ndev = 0, cases = 0;
    unsigned char *hx[7], *dx[7], *want, *got;
    void *dout;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        printf("test_gpu_reduce: skipped: no usable CUDA device\n");
        return 77;
    }
    CU(cudaSetDevice(0));
    for (int k = 0; k < 7; k++) {
        hx[k] = (unsigned char *)malloc(count * 8);
        CU(cudaMalloc((void **)&dx[k], count * 8));
    }
    want = (unsigned char *)malloc(count * 8);
    got = (unsigned char *)malloc(count * 8);
    CU(cudaMalloc(&dout, count * 8));
    for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
        tc_dtype_t dt = dts[d];
        size_t es = esize(dt);
        for (int kind = 0; kind < 2; kind++) {
            for (size_t o = 0; o < 5; o++) {
                tc_op_t op = ops[o];
                if (op == TC_AVG && !is_float(dt)) {
                    continue;
                }
                for (size_t ni = 0; ni < 5; ni++) {
                    int n = ns[ni];
                    for (size_t sc = 0; sc < 4; sc++) {
                        double pre = scales[sc][0], post = scales[sc][1];
                        const void *xs[7];
                        int in_place = (cases % 3) == 0;
                        for (int k = 0; k < n; k++) {
                            fill(dt, hx[k], count, kind);
                            CU(cudaMemcpy(dx[k], hx[k], count * es, cudaMemcpyHostToDevice));
                            xs[k] = dx[k];
                        }
                        host_combine(dt, op, n, hx, want, count, pre, post);
                        if (cases % 2 == 0) {
                            CU(tc_cuda_combine(dt, op, n, xs, in_place ? (void *)dx[0] : dout,
                                               count, pre, post, 0));
                        } else { /* libtcoll's own, loaded from its fatbin */
                            char why[256];
                            tc_status_t st =
                                tc__cuda_combine(0, dt, op, n, xs, in_place ? (void *)dx[0] : dout,
                                                 count, pre, post, why, sizeof(why));
                            if (st != TC_OK) {
                                printf("test_gpu_reduce: FAIL: tc__cuda_combine: %s\n", why);
                                return 1;
                            }
                        }
                        CU(cudaDeviceSynchronize());
                        CU(cudaMemcpy(got, in_place ? (void *)dx[0] : dout, count * es,
                                      cudaMemcpyDeviceToHost));
                        for (size_t i = 0; i < count * es; i++) {
                            if (got[i] != want[i]) {
                                size_t e = i / es;
                                printf("test_gpu_reduce: FAIL: %s %s, %d inputs, prescale %g, "
                                       "postscale %g, %s data%s: element %zu byte %zu: GPU 0x%02x, "
                                       "host 0x%02x (%s; inputs' first bytes:",
                                       tc_dtype_name(dt), tc_op_name(op), n, pre, post,
                                       kind ? "small-integer" : "random",
                                       in_place ? ", in place" : "", e, i % es, got[i], want[i],
                                       cases % 2 == 0 ? "the header's kernel" : "libtcoll's");
                                for (int k = 0; k < n; k++) {
                                    printf(" 0x%02x", hx[k][e * es]);
                                }
                                printf(")\n");
                                return 1;
                            }
                        }
                        cases++;
                    }
                }
            }
        }
    }
    /* what it refuses */
    {
        const void *xs[1] = {dx[0]};
        if (tc_cuda_combine(TC_FLOAT32, TC_SUM, 0, xs, dout, 4, 1.0, 1.0, 0) !=
                cudaErrorInvalidValue ||
            tc_cuda_combine(TC_FLOAT32, (tc_op_t)99, 1, xs, dout, 4, 1.0, 1.0, 0) !=
                cudaErrorInvalidValue ||
            tc_cuda_combine((tc_dtype_t)99, TC_SUM, 1, xs, dout, 4, 1.0, 1.0, 0) !=
                cudaErrorInvalidValue) {
            printf("test_gpu_reduce: FAIL: a bad n, op or dtype was not refused\n");
            return 1;
        }
    }
    printf("test_gpu_reduce: PASS: %d cases of %zu elements, GPU and host bit for bit\n", cases,
           count);
    return 0;
}
