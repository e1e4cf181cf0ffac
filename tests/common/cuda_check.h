/*
 * cuda_check.h - the GPU tests' check of a CUDA runtime call (check.h's
 * failure, naming the call and CUDA's error).
 */
#ifndef TC_TEST_CUDA_CHECK_H
#define TC_TEST_CUDA_CHECK_H

#include <cuda_runtime_api.h>

#include "check.h"

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t ce_ = (call);                                                                  \
        CHECK_MSG(ce_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(ce_));                   \
    } while (0)

#endif
