/*
 * cuda_none.c - cuda.h in a build without CUDA (TCOLL_CUDA off or no
 * toolkit found): CUDA is never available, and says so. The executor
 * reaches none of the other calls then (a device tensor is refused at
 * submission), so they only refuse.
 */
#include "cuda/cuda.h"

#include <stdio.h>

static const char not_built[] = "this tcoll was built without CUDA (TCOLL_CUDA=OFF, or no CUDA "
                                "toolkit was found when it was built)";

int tc__cuda_built(void)
{
    return 0;
}

int tc__cuda_available(const char **why_p)
{
    if (why_p != NULL) {
        *why_p = not_built;
    }
    return 0;
}

int tc__cuda_device_count(void)
{
    return 0;
}

void tc__cuda_describe(char *buf, size_t len)
{
    snprintf(buf, len, "not built: %s", not_built);
}

static tc_status_t refuse(char *why, size_t len)
{
    snprintf(why, len, "%s", not_built);
    return TC_ERR_ARG;
}

tc_status_t tc__cuda_check_ptr(int dev, const void *ptr, size_t bytes, char *why, size_t len)
{
    (void)dev, (void)ptr, (void)bytes;
    return refuse(why, len);
}

tc_status_t tc__cuda_mark(int dev, void *stream, tc_cuda_mark_t **mark_p, char *why, size_t len)
{
    (void)dev, (void)stream, (void)mark_p;
    return refuse(why, len);
}

void tc__cuda_mark_release(tc_cuda_mark_t *mark)
{
    (void)mark;
}

tc_status_t tc__cuda_mark_query(const tc_cuda_mark_t *mark, int *done_p, char *why, size_t len)
{
    (void)mark;
    *done_p = 1;
    return refuse(why, len);
}

tc_status_t tc__cuda_to_host(int dev, void *dst, const void *src, size_t bytes,
                             const tc_cuda_mark_t *after, char *why, size_t len)
{
    (void)dev, (void)dst, (void)src, (void)bytes, (void)after;
    return refuse(why, len);
}

tc_status_t tc__cuda_to_device(int dev, void *dst, const void *src, size_t bytes, char *why,
                               size_t len)
{
    (void)dev, (void)dst, (void)src, (void)bytes;
    return refuse(why, len);
}

tc_status_t tc__cuda_alloc(int dev, size_t bytes, void **p_p, char *why, size_t len)
{
    (void)dev, (void)bytes, (void)p_p;
    return refuse(why, len);
}

void tc__cuda_free(int dev, void *p)
{
    (void)dev, (void)p;
}

void tc__cuda_free_after(int dev, void *p, const tc_cuda_mark_t *after)
{
    (void)dev, (void)p, (void)after;
}

void *tc__cuda_host_alloc(size_t bytes)
{
    (void)bytes;
    return NULL;
}

void tc__cuda_host_free(void *p)
{
    (void)p;
}

void tc__cuda_release(void)
{
}

tc_status_t tc__cuda_ipc_export(int dev, const void *ptr, tc_cuda_ipc_t *h, char *why, size_t len)
{
    (void)dev;
    (void)ptr;
    (void)h;
    return refuse(why, len);
}

tc_status_t tc__cuda_ipc_open(int dev, const tc_cuda_ipc_t *h, int m, void **ptrs,
                              tc_cuda_ipc_maps_t **maps_p, char *why, size_t len)
{
    (void)dev;
    (void)h;
    (void)m;
    (void)ptrs;
    *maps_p = NULL;
    return refuse(why, len);
}

void tc__cuda_ipc_close(int dev, tc_cuda_ipc_maps_t *maps)
{
    (void)dev;
    (void)maps;
}

tc_status_t tc__cuda_combine_ready(int dev, tc_dtype_t dtype, char *why, size_t len)
{
    (void)dev, (void)dtype;
    return refuse(why, len);
}

tc_status_t tc__cuda_combine(int dev, tc_dtype_t dtype, tc_op_t op, int n, const void *const *x,
                             void *dst, size_t count, double prescale, double postscale, char *why,
                             size_t len)
{
    (void)dev;
    (void)dtype;
    (void)op;
    (void)n;
    (void)x;
    (void)dst;
    (void)count;
    (void)prescale;
    (void)postscale;
    return refuse(why, len);
}

tc_status_t tc__cuda_copy_many(int dev, int n, void *const *dst, const void *const *src,
                               const size_t *bytes, char *why, size_t len)
{
    (void)dev;
    (void)n;
    (void)dst;
    (void)src;
    (void)bytes;
    return refuse(why, len);
}

tc_status_t tc__cuda_current(int *dev_p, char *why, size_t len)
{
    (void)dev_p;
    snprintf(why, len, "%s", not_built);
    return TC_ERR_STATE;
}

tc_status_t tc__cuda_set_current(int dev, char *why, size_t len)
{
    (void)dev;
    return refuse(why, len);
}

tc_status_t tc__cuda_pci_bus_id(int dev, char *buf, size_t buflen, char *why, size_t len)
{
    (void)dev, (void)buf, (void)buflen;
    return refuse(why, len);
}

tc_status_t tc__cuda_host_map(int dev, void *p, size_t bytes, void **dev_p, char *why, size_t len)
{
    (void)dev, (void)p, (void)bytes, (void)dev_p;
    return refuse(why, len);
}

void tc__cuda_host_unmap(void *p)
{
    (void)p;
}

int tc__cuda_host_native_atomics(int dev)
{
    (void)dev;
    return 0;
}

tc_status_t tc__cuda_ptr_device(const void *p, size_t bytes, int *dev_p, char *why, size_t len)
{
    (void)p, (void)bytes, (void)why, (void)len;
    *dev_p = -1;
    return TC_OK;
}

tc_status_t tc__cuda_copier_create(int dev, tc_cuda_copier_t **c_p, char *why, size_t len)
{
    (void)dev;
    *c_p = NULL;
    return refuse(why, len);
}

tc_status_t tc__cuda_copier_copy(tc_cuda_copier_t *c, void *dst, const void *src, size_t bytes,
                                 char *why, size_t len)
{
    (void)c, (void)dst, (void)src, (void)bytes;
    return refuse(why, len);
}

tc_status_t tc__cuda_copier_finish(tc_cuda_copier_t *c, char *why, size_t len)
{
    (void)c;
    return refuse(why, len);
}

void tc__cuda_copier_destroy(tc_cuda_copier_t *c)
{
    (void)c;
}

tc_status_t tc__cuda_pipe_copy(int dev, int slot, int to_device, void *dst, const void *src,
                               size_t bytes, char *why, size_t len)
{
    (void)dev, (void)slot, (void)to_device, (void)dst, (void)src, (void)bytes;
    return refuse(why, len);
}

tc_status_t tc__cuda_pipe_wait(int dev, int slot, int to_device, char *why, size_t len)
{
    (void)dev, (void)slot, (void)to_device;
    return refuse(why, len);
}
