/*
 * reduce_hooks.h - test-only controls for the reduction kernels.
 *
 * On x86 tcoll picks CPU-specific kernels at run time (AVX2 clones of the
 * loops, an F16C float16 path). Every path must give the same bits as the
 * portable one; these hooks let the unit test run the portable kernels on a
 * machine that has the fast ones and compare. Production code must never
 * call them.
 */
#ifndef TC_REDUCE_REDUCE_HOOKS_H
#define TC_REDUCE_REDUCE_HOOKS_H

/* force != 0: tc__reduce and tc__reduce_avg_finish use only the portable
 * kernels from now on; force == 0: the default choice again. Returns the
 * previous setting. Any thread; takes effect for calls that start later. */
int tc__reduce_force_portable(int force);

/* The kernel set tc__reduce would use now: "portable", "avx2", "f16c" or
 * "avx2+f16c". Static string. */
const char *tc__reduce_path(void);

#endif
