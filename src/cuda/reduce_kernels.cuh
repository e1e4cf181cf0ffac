/*
 * reduce_kernels.cuh - the kernel and the launch of the GPU reduction whose
 * elementwise semantics are reduce_ops.cuh's (the host's, bit for bit). CUDA
 * C++ for nvcc, header only: the .cu files that combine device tensors
 * include it (tests/gpu/test_gpu_reduce.cu checks it on a GPU).
 */
#ifndef TC_CUDA_REDUCE_KERNELS_CUH
#define TC_CUDA_REDUCE_KERNELS_CUH

#include <cuda_runtime.h>

#include "cuda/reduce_ops.cuh"

#define TC_CUDA_MAX_INPUTS 64 /* the inputs one launch combines */

namespace tc_cuda {

struct inputs {
    const void *x[TC_CUDA_MAX_INPUTS];
};

template <typename O>
__global__ void combine_kernel(tc_op_t op, int n, inputs in, typename O::S *dst, size_t count,
                               double pre, double post)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;

    for (; i < count; i += stride) {
        dst[i] = combine_one<O>(op, n, in.x, i, pre, post);
    }
}

/* with_ops' functors: whether the dtype is known; one launch for it. */
struct known {
    template <typename O> int run()
    {
        return 1;
    }
};


struct launcher {
    tc_op_t op;
    int n;
    const inputs *in;
    void *dst;
    size_t count;
    double pre, post;
    cudaStream_t s;
    cudaError_t err;
    template <typename O> int run()
    {
        int threads = 256;
        size_t want = (count + threads - 1) / threads;
        int blocks = (int)(want < 4096 ? (want > 0 ? want : 1) : 4096);
        combine_kernel<O><<<blocks, threads, 0, s>>>(op, n, *in, (typename O::S *)dst, count, pre,
                                                     post);
        err = cudaGetLastError();
        return 1;
    }
};

} // namespace tc_cuda

/* Combines n (1 .. TC_CUDA_MAX_INPUTS) device inputs x[0..n) of count
 * elements into dst (device memory; it may be one of the inputs) on stream
 * s, as reduce_ops.cuh says. cudaErrorInvalidValue for a dtype, op or n it
 * does not take. */
static inline cudaError_t tc_cuda_combine(tc_dtype_t dtype, tc_op_t op, int n,
                                          const void *const *x, void *dst, size_t count,
                                          double prescale, double postscale, cudaStream_t s)
{
    tc_cuda::inputs in;
    tc_cuda::launcher l = {op, n, &in, dst, count, prescale, postscale, s, cudaSuccess};

    if (n < 1 || n > TC_CUDA_MAX_INPUTS || (int)op < (int)TC_SUM || (int)op > (int)TC_PROD) {
        return cudaErrorInvalidValue;
    }
    for (int k = 0; k < n; k++) {
        in.x[k] = x[k];
    }
    tc_cuda::known k;
    if (!tc_cuda::with_ops(dtype, k)) {
        return cudaErrorInvalidValue;
    }
    if (count > 0) {
        tc_cuda::with_ops(dtype, l);
    }
    return l.err;
}

#endif
