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
 *  - memory the application page-locked itself is used and left so.
 * No MPI. Exit 77 with one line without a usable CUDA device.
 */
#define _POSIX_C_SOURCE 200809L

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cuda/cuda.h"
#include "tc_test.h"

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

    CHECK_MSG(tc__cuda_host_map(base, 100, &d1, why, sizeof(why)) == TC_OK, "%s", why);
    CHECK_MSG(tc__cuda_host_map(base + 200, 100, &d2, why, sizeof(why)) == TC_OK, "%s", why);
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
    CHECK_EQ(tc__cuda_host_map(base, 100, &d1, why, sizeof(why)), TC_OK);
    CHECK_EQ(tc__cuda_host_map(base + pg - 100, 200, &d2, why, sizeof(why)), TC_ERR_TRANSPORT);
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
    CHECK_EQ(tc__cuda_host_map(h + 10, pg, &d, why, sizeof(why)), TC_OK);
    tc__cuda_host_unmap(h + 10);
    CHECK(locked(h)); /* not tcoll's to unregister */
    CHECK_EQ(cudaFreeHost(h), cudaSuccess);
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
