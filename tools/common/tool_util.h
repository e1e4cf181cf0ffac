/*
 * tool_util.h - what tcoll's MPI benchmarks (tcoll-perf, tcoll-chan-bench)
 * share: their size arguments and the MPI library's name in their headers.
 */
#ifndef TC_TOOL_UTIL_H
#define TC_TOOL_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* "8", "1K", "256M", "1G" (k, m, g in either case, optionally followed by
 * B, or iB after a unit) -> bytes in *v_p: 0; anything else (not starting
 * with a digit, trailing text, overflow): -1, *v_p unchanged. */
int tc_tool_parse_size(const char *s, uint64_t *v_p);

/* The MPI library's version string up to its first comma or newline (at
 * most 100 characters), e.g. "Open MPI v4.1.4". */
void tc_tool_mpi_library(char *buf, size_t len);

#endif
