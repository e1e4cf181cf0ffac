/*
 * le.h - fixed-width unsigned integers to and from little-endian bytes, for
 * the binary formats tcoll writes itself (timeline parts, the job-wide
 * timeline's exchange). Byte by byte, so alignment and host order never
 * matter; never reads or writes more than the width.
 */
#ifndef TC_UTIL_LE_H
#define TC_UTIL_LE_H

#include <stdint.h>

static inline void tc__le_put32(unsigned char *p, uint32_t v)
{
    int i;

    for (i = 0; i < 4; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

static inline void tc__le_put64(unsigned char *p, uint64_t v)
{
    int i;

    for (i = 0; i < 8; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

static inline uint32_t tc__le_get32(const unsigned char *p)
{
    uint32_t v = 0;
    int i;

    for (i = 0; i < 4; i++) {
        v |= (uint32_t)p[i] << (8 * i);
    }
    return v;
}

static inline uint64_t tc__le_get64(const unsigned char *p)
{
    uint64_t v = 0;
    int i;

    for (i = 0; i < 8; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

#endif
