/*
 * cuda_api.c - tc_cuda_built, tc_cuda_available and tc_cuda_info: what the
 * cuda layer (src/cuda/cuda.h) found, for applications and tcoll-info. Any
 * thread, with or without tc_init.
 */
#include <pthread.h>

#include "cuda/cuda.h"
#include "tcoll.h"

static pthread_once_t info_once = PTHREAD_ONCE_INIT;
static char info[1024];

static void describe(void)
{
    tc__cuda_describe(info, sizeof(info));
}

int tc_cuda_built(void)
{
    return tc__cuda_built();
}

int tc_cuda_available(void)
{
    return tc__cuda_available(NULL);
}

const char *tc_cuda_info(void)
{
    pthread_once(&info_once, describe);
    return info;
}
