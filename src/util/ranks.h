/*
 * ranks.h - a set of ranks as text, for messages.
 */
#ifndef TC_UTIL_RANKS_H
#define TC_UTIL_RANKS_H

#include <stddef.h>
#include <stdint.h>

/* Writes the ranks q < size with (flags[q] != 0) == want as "0-3,5" into buf
 * (cut at len); returns how many there are. */
int tc__format_ranks(const uint8_t *flags, int size, int want, char *buf, size_t len);

#endif
