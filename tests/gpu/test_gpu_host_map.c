/*
 * test_gpu_host_map.c - tc__cuda_host_map (src/cuda/cuda_host.c), which
 * page-locks host memory and maps it for the device (the channels' and the
 * staging's memory), where CUDA page-locks whole pages:
 *  - two ranges in one page: the second is "registered already" and uses
 *    the first's registration, which stays page-locked until both are
 *    unmapped;
 *  - a range that starts in a page another registration holds and runs into
 *    a page nobody registered is refused, saying so (the device would fault
 *    past the first page), and nothing stays registered;
 *  - memory the application page-locked itself is used and left so;
 *  - other_device (alone in its process: it reads which devices have a
 *    context; with two devices or more, as the stand-in has under
 *    TC_CUDA_EMU_DEVICES=2): memory mapped for device 1 and a proxy for
 *    device 1, each from a thread that never chose a device, start no
 *    context on device 0 (every process of a node would otherwise take
 *    memory on GPU 0).
 * No MPI. Exit 77 with one line without a usable CUDA device.
 */
#define _POSIX_C_SOURCE 200809L

#include <cuda.h> /* the driver's types, for cuDevicePrimaryCtxGetState */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cuda/cuda.h"
#include "tc_test.h"
#include "tcoll.h"

static size_t pg;

/* Whether p is page-locked memory CUDA knows. */
static int locked(const void *p)
{
    struct cudaPointerAttributes a;

    CHECK_EQ(cudaPointerGetAttributes(&a, p), cudaSuccess);
    return a.type == cudaMemoryTypeHost;
}

/* Maps two ranges of base's first page (at 0 and at 200), then unmaps the
 * one at first (0 or 200): the page stays page-locked for the other until
 * that is unmapped too. */
static void map_two_unmap(char *base, size_t first)
{
    char why[256];
    void *d1, *d2;

    CHECK_MSG(tc__cuda_host_map(-1, base, 100, &d1, why, sizeof(why)) == TC_OK, "%s", why);
    CHECK_MSG(tc__cuda_host_map(-1, base + 200, 100, &d2, why, sizeof(why)) == TC_OK, "%s", why);
    CHECK(locked(base + 250));
    tc__cuda_host_unmap(base + first);
    CHECK(locked(base));
    CHECK(locked(base + 250));
    tc__cuda_host_unmap(base + (200 - first));
    CHECK(!locked(base));
}

TC_CASE(two_ranges_in_one_page)
{
    char *base = NULL;

    CHECK_EQ(posix_memalign((void **)&base, pg, 2 * pg), 0);
    map_two_unmap(base, 0);
    map_two_unmap(base, 200); /* and the other way round */
    free(base);
}

TC_CASE(range_locked_in_part)
{
    char *base = NULL, why[256];
    void *d1, *d2;

    CHECK_EQ(posix_memalign((void **)&base, pg, 2 * pg), 0);
    CHECK_EQ(tc__cuda_host_map(-1, base, 100, &d1, why, sizeof(why)), TC_OK);
    CHECK_EQ(tc__cuda_host_map(-1, base + pg - 100, 200, &d2, why, sizeof(why)), TC_ERR_TRANSPORT);
    CHECK_MSG(strstr(why, "page-locked only in part") != NULL, "why: %s", why);
    CHECK(!locked(base + pg));
    tc__cuda_host_unmap(base + pg - 100); /* never mapped: nothing happens */
    CHECK(locked(base));
    tc__cuda_host_unmap(base);
    CHECK(!locked(base));
    free(base);
}

TC_CASE(application_pinned)
{
    char *h = NULL, why[256];
    void *d;

    CHECK_EQ(cudaMallocHost((void **)&h, 3 * pg), cudaSuccess);
    CHECK_EQ(tc__cuda_host_map(-1, h + 10, pg, &d, why, sizeof(why)), TC_OK);
    tc__cuda_host_unmap(h + 10);
    CHECK(locked(h)); /* not tcoll's to unregister */
    CHECK_EQ(cudaFreeHost(h), cudaSuccess);
}

/* Whether device d's primary context is active in this process; -1 when
 * the driver cannot say. */
static int ctx_active(int d)
{
    typedef CUresult (*state_fn_t)(CUdevice, unsigned int *, int *);
    enum cudaDriverEntryPointQueryResult q;
    void *fn = NULL;
    unsigned int flags = 0;
    int active = 0;

    if (cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &fn, 12000,
                                         cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || fn == NULL ||
        ((state_fn_t)fn)((CUdevice)d, &flags, &active) != CUDA_SUCCESS) {
        return -1;
    }
    return active;
}

static tc_proxy_result_t count_trigger(tc_trigger_t t, void *arg)
{
    (void)t;
    ++*(int *)arg;
    return TC_PROXY_CONTINUE;
}

/* On a thread of its own (no device chosen): memory mapped for device 1. */
static void *map_on_1(void *arg)
{
    char *base = arg, why[256];
    void *d;

    CHECK_MSG(tc__cuda_host_map(1, base, pg, &d, why, sizeof(why)) == TC_OK, "%s", why);
    CHECK(locked(base));
    tc__cuda_host_unmap(base);
    CHECK(!locked(base));
    return NULL;
}

/* On a thread of its own: a proxy for device 1 carries out a trigger. */
static void *proxy_on_1(void *arg)
{
    tc_trigger_t t = {1, 2};
    tc_proxy_t *p = NULL;
    int n = 0;

    (void)arg;
    CHECK_OK(tc_proxy_create_device(1, count_trigger, &n, NULL, NULL, 64, &p));
    CHECK_EQ(tc_proxy_device(p), 1);
    CHECK_OK(tc_proxy_start(p, 0));
    CHECK_OK(tc_fifo_sync(tc_proxy_fifo(p), tc_fifo_push(tc_proxy_fifo(p), t), -1));
    CHECK_OK(tc_proxy_stop(p));
    tc_proxy_destroy(p);
    CHECK_EQ(n, 1);
    return NULL;
}

TC_CASE(other_device)
{
    char *base = NULL;
    int ndev = 0;
    pthread_t th;

    CHECK_EQ(cudaGetDeviceCount(&ndev), cudaSuccess);
    if (ndev < 2) {
        printf("test_gpu_host_map: other_device: %d device here, nothing to check\n", ndev);
        return;
    }
    CHECK_MSG(ctx_active(0) == 0,
              "device 0 has a context before the case (state %d): run it alone, --case "
              "other_device",
              ctx_active(0));
    CHECK_EQ(pthread_create(&th, NULL, proxy_on_1, NULL), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_MSG(ctx_active(0) == 0, "a proxy for device 1 started a context on device 0");
    CHECK_EQ(posix_memalign((void **)&base, pg, pg), 0);
    CHECK_EQ(pthread_create(&th, NULL, map_on_1, base), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_MSG(ctx_active(0) == 0, "mapping memory for device 1 started a context on device 0");
    CHECK_EQ(ctx_active(1), 1);
    free(base);
}

int main(int argc, char **argv)
{
    const char *why = NULL;

    if (!tc__cuda_available(&why)) {
        printf("test_gpu_host_map: skipped: %s\n", why);
        return 77;
    }
    pg = (size_t)sysconf(_SC_PAGESIZE);
    return tc_test_main(argc, argv, NULL);
}
