/*
 * kernels.cu - the device code libtcoll loads at run time: one kernel per
 * dtype combining n device inputs elementwise (reduce_ops.cuh, the host's
 * semantics bit for bit). Built by nvcc into a fatbin (machine code for the
 * common GPUs and PTX for the rest) that the build embeds in cuda_kernels.c
 * (src/cuda/CMakeLists.txt): libtcoll stays a C library linked with the
 * ordinary C compiler, and loads the kernels with cudaLibraryLoadData on
 * first use.
 */
#include "cuda/reduce_ops.cuh"

/* The inputs of one launch, by value (the same layout as cuda_kernels.c's). */
struct tc_cuda_inputs {
    const void *x[64];
};

#define TC_COMBINE_KERNEL(NAME, O)                                                                 \
    extern "C" __global__ void NAME(int op, int n, tc_cuda_inputs in, void *dst, size_t count,    \
                                    double pre, double post)                                       \
    {                                                                                              \
        size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;                                  \
        size_t stride = (size_t)gridDim.x * blockDim.x;                                            \
        for (; i < count; i += stride) {                                                           \
            ((O::S *)dst)[i] = tc_cuda::combine_one<O>((tc_op_t)op, n, in.x, i, pre, post);       \
        }                                                                                          \
    }

typedef tc_cuda::ints<uint8_t, uint32_t> ops_u8;
typedef tc_cuda::ints<int8_t, uint32_t> ops_i8;
typedef tc_cuda::ints<uint16_t, uint32_t> ops_u16;
typedef tc_cuda::ints<int16_t, uint32_t> ops_i16;
typedef tc_cuda::ints<int32_t, uint32_t> ops_i32;
typedef tc_cuda::ints<int64_t, uint64_t> ops_i64;
typedef tc_cuda::half_ops<false> ops_f16;
typedef tc_cuda::half_ops<true> ops_bf16;

TC_COMBINE_KERNEL(tc_combine_u8, ops_u8)
TC_COMBINE_KERNEL(tc_combine_i8, ops_i8)
TC_COMBINE_KERNEL(tc_combine_u16, ops_u16)
TC_COMBINE_KERNEL(tc_combine_i16, ops_i16)
TC_COMBINE_KERNEL(tc_combine_i32, ops_i32)
TC_COMBINE_KERNEL(tc_combine_i64, ops_i64)
TC_COMBINE_KERNEL(tc_combine_f16, ops_f16)
TC_COMBINE_KERNEL(tc_combine_bf16, ops_bf16)
TC_COMBINE_KERNEL(tc_combine_f32, tc_cuda::f32_ops)
TC_COMBINE_KERNEL(tc_combine_f64, tc_cuda::f64_ops)
