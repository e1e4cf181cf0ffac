/*
 * ranks.c - a set of ranks as text ("0-3,5"), for the messages that name
 * ranks (lost, stalled, missing, mismatched).
 */
#define _GNU_SOURCE
#include "util/ranks.h"

#include <stdio.h>

int tc__format_ranks(const uint8_t *flags, int size, int want, char *buf, size_t len)
{
    size_t pos = 0;
    int q = 0, count = 0;

    buf[0] = '\0';
    while (q < size) {
        int r;
        if ((flags[q] != 0) != want) {
            q++;
            continue;
        }
        for (r = q; r + 1 < size && (flags[r + 1] != 0) == want; r++) {
        }
        if (pos < len) {
            int w = snprintf(buf + pos, len - pos, r == q ? "%s%d" : "%s%d-%d",
                             count > 0 ? "," : "", q, r);
            pos += w > 0 ? (size_t)w : 0;
        }
        count += r - q + 1;
        q = r + 1;
    }
    return count;
}
