/*
 * device_none.c - --device cuda in a build without a CUDA compiler (or
 * without CUDA): says so, on rank 0, and the run ends with CB_EXIT_SKIP.
 */
#include "chan_bench.h"

int cb_device_main(const cb_opts_t *o, const uint64_t *sizes, int nsizes)
{
    (void)o, (void)sizes, (void)nsizes;
    if (cb_rank == 0) {
        fprintf(stderr, "tcoll-chan-bench: --device cuda: this build has no CUDA kernels "
                        "(tcoll built without CUDA, or no CUDA compiler was found)\n");
    }
    return CB_EXIT_SKIP;
}
