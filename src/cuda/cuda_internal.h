/*
 * cuda_internal.h - what the files of the cuda layer share over the CUDA
 * runtime (cuda_rt.c: the devices' objects; cuda_path.c: the in-node
 * device path). Not for the layers above, which use cuda.h.
 */
#ifndef TC_CUDA_CUDA_INTERNAL_H
#define TC_CUDA_CUDA_INTERNAL_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "tcoll.h"

/* tcoll's stream of a device and the event its waits sleep on. */
typedef struct {
    cudaStream_t stream;
    cudaEvent_t done;
} tc_cuda_ctx_t;

/* Makes dev current on this thread (its previous device in *old_p when
 * old_p is not NULL: give it back with tc__cuda_restore) and fills ctx,
 * making the device's objects on first use. */
tc_status_t tc__cuda_ctx(int dev, int *old_p, tc_cuda_ctx_t *ctx, char *why, size_t len);
void tc__cuda_restore(int dev, int old);
/* Makes *dev current on this thread for a call (its own device in *old_p,
 * -1 where it cannot say: give it back with tc__cuda_restore); *dev -1:
 * the current one, found (-1 still where CUDA cannot say). cudaSetDevice's
 * result. */
cudaError_t tc__cuda_enter(int *dev, int *old_p);
/* Sleeps until everything queued on ctx's stream is done. */
tc_status_t tc__cuda_finish(const tc_cuda_ctx_t *ctx, char *why, size_t len);
/* Writes "what: error name: text" into why, clears a non-sticky error,
 * returns st. */
tc_status_t tc__cuda_failed(tc_status_t st, char *why, size_t len, const char *what, cudaError_t e);

/* The allocation ptr lies in (cuMemGetAddressRange): 1, or 0 when the
 * driver does not say. */
int tc__cuda_alloc_range(const void *ptr, void **base_p, size_t *size_p);
/* The memory mapped without a gap from ptr's allocation on: that
 * allocation, and where [ptr, ptr + bytes) runs past it, the allocations
 * mapped right after it on the same device (virtual-memory pieces, as
 * PyTorch's expandable segments map them). 0 when the driver cannot say. */
int tc__cuda_mapped_range(const void *ptr, size_t bytes, void **base_p, size_t *size_p);

/* 1 when some device's primary context is active in this process (device
 * memory can only exist then; a driver-API context of the application's
 * own is not seen), or when the driver cannot say; 0 without CUDA. Creates
 * no context. */
int tc__cuda_any_context(void);

/* The kernels' fatbin (kernels.cu), embedded by the build. */
extern const unsigned char tc__cuda_kernels_image[];
extern const size_t tc__cuda_kernels_image_len;

#endif
