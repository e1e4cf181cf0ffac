/*
 * emu.h - between the CUDA runtime stand-in's two files: the C runtime
 * (cudart_emu.c) and tcoll's kernels compiled as host C++
 * (emu_kernels.cpp).
 */
#ifndef TC_CUDA_EMU_H
#define TC_CUDA_EMU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TC_EMU_MAX_INPUTS 64 /* kernels.cu's struct tc_cuda_inputs */

/* The kernel named name (kernels.cu): its index, or -1. */
int tc_emu_kernel_find(const char *name);
/* The bytes of one element of kernel k's dtype. */
size_t tc_emu_kernel_elsize(int k);
/* Runs kernel k over a grid of grid blocks of block threads, every thread
 * in turn, with the launch's arguments (pointers already host addresses). */
void tc_emu_kernel_run(int k, unsigned grid, unsigned block, int op, int n, const void *const *x,
                       void *dst, size_t count, double pre, double post);

#ifdef __cplusplus
}
#endif

#endif
