/*
 * emu_kernels.cpp - tcoll's kernels (src/cuda/kernels.cu) compiled as
 * plain C++ for the CUDA runtime stand-in (cudart_emu.c): the kernel
 * bodies are the same source nvcc compiles, reduce_ops.cuh gives its
 * arithmetic as plain C++ (its IEEE meaning), and a launch calls the body
 * once per thread of the grid with threadIdx, blockIdx, blockDim and
 * gridDim set as a GPU would, so a launch configuration that leaves
 * elements out leaves them out here too.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "emu.h"

namespace
{
struct emu_dim3 {
    unsigned x, y, z;
};
thread_local emu_dim3 threadIdx, blockIdx, blockDim, gridDim;
} // namespace

#define __global__
#include "cuda/kernels.cu"
#undef __global__

namespace
{
typedef void (*combine_fn)(int, int, tc_cuda_inputs, void *, size_t, double, double);

struct entry {
    const char *name;
    size_t elsize;
    combine_fn fn;
};

const entry table[] = {
    {"tc_combine_u8", 1, tc_combine_u8},   {"tc_combine_i8", 1, tc_combine_i8},
    {"tc_combine_u16", 2, tc_combine_u16}, {"tc_combine_i16", 2, tc_combine_i16},
    {"tc_combine_i32", 4, tc_combine_i32}, {"tc_combine_i64", 8, tc_combine_i64},
    {"tc_combine_f16", 2, tc_combine_f16}, {"tc_combine_bf16", 2, tc_combine_bf16},
    {"tc_combine_f32", 4, tc_combine_f32}, {"tc_combine_f64", 8, tc_combine_f64},
};
const int ntable = (int)(sizeof(table) / sizeof(table[0]));
} // namespace

extern "C" int tc_emu_kernel_find(const char *name)
{
    for (int k = 0; k < ntable; k++) {
        if (strcmp(table[k].name, name) == 0) {
            return k;
        }
    }
    return -1;
}

extern "C" size_t tc_emu_kernel_elsize(int k)
{
    return table[k].elsize;
}

extern "C" void tc_emu_kernel_run(int k, unsigned grid, unsigned block, int op, int n,
                                  const void *const *x, void *dst, size_t count, double pre,
                                  double post)
{
    tc_cuda_inputs in;

    memset(&in, 0, sizeof(in));
    for (int j = 0; j < n && j < TC_EMU_MAX_INPUTS; j++) {
        in.x[j] = x[j];
    }
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    for (unsigned b = 0; b < grid; b++) {
        for (unsigned t = 0; t < block; t++) {
            blockIdx = {b, 0, 0};
            threadIdx = {t, 0, 0};
            table[k].fn(op, n, in, dst, count, pre, post);
        }
    }
}
