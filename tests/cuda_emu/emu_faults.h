/*
 * emu_faults.h - what a test program may ask of the CUDA runtime stand-in
 * beyond CUDA's own API: faults placed exactly, which an environment
 * variable cannot point at (cudart_emu.c).
 */
#ifndef TC_CUDA_EMU_FAULTS_H
#define TC_CUDA_EMU_FAULTS_H

/* The next copy (any stream, any direction) whose destination lies in the
 * allocation holding p fails at once with cudaErrorInvalidValue, nothing
 * copied; once. p NULL: no such fault. */
void tc_emu_fail_copy_into(const void *p);

#endif
