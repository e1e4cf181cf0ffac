/*
 * tool_util.c - helpers tcoll's MPI benchmarks share (tool_util.h).
 */
#include "tool_util.h"

#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tc_tool_parse_size(const char *s, uint64_t *v_p)
{
    char *end;
    unsigned long long v;
    uint64_t mult = 1;

    if (*s < '0' || *s > '9') {
        return -1;
    }
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0) {
        return -1;
    }
    switch (*end) {
    case 'k':
    case 'K':
        mult = 1ull << 10;
        end++;
        break;
    case 'm':
    case 'M':
        mult = 1ull << 20;
        end++;
        break;
    case 'g':
    case 'G':
        mult = 1ull << 30;
        end++;
        break;
    default: break;
    }
    if (mult > 1 && strcmp(end, "iB") == 0) {
        end += 2;
    } else if (*end == 'B' || *end == 'b') {
        end++;
    }
    if (*end != '\0' || v > UINT64_MAX / mult) {
        return -1;
    }
    *v_p = v * mult;
    return 0;
}

void tc_tool_mpi_library(char *buf, size_t len)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;

    MPI_Get_library_version(v, &n);
    v[strcspn(v, ",\n")] = '\0';
    snprintf(buf, len, "%.100s", v);
}
