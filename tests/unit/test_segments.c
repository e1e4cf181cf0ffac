/*
 * test_segments.c - the segment math of the ring algorithms: segments cover
 * the buffer exactly once, in order, and differ in size by at most one.
 */
#define _GNU_SOURCE /* coll.h -> transport/wait.h -> util/backoff.h: clock_gettime */
#include "check.h"
#include "coll/coll.h"
#include "tc_test.h"

static int g_checked;

/* Counts 0..2^33 over 1..67 segments. */
TC_CASE(cover_once_in_order_within_one)
{
    size_t counts[] = {0, 1, 2, 3, 5, 7, 8, 63, 64, 65, 1000, 7919, (size_t)1 << 33};
    size_t ci;
    int n;

    for (ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
        size_t count = counts[ci];
        for (n = 1; n <= 67; n++) {
            size_t next = 0, minlen = (size_t)-1, maxlen = 0;
            int i;
            for (i = 0; i < n; i++) {
                size_t off, len;
                tc__segment(count, n, i, &off, &len);
                CHECK_EQ(off, next);
                next = off + len;
                minlen = len < minlen ? len : minlen;
                maxlen = len > maxlen ? len : maxlen;
                /* the first count % n segments are the long ones */
                CHECK_EQ(len, count / (size_t)n + ((size_t)i < count % (size_t)n ? 1 : 0));
                g_checked++;
            }
            CHECK_EQ(next, count);
            CHECK_LE(maxlen - minlen, 1);
        }
    }
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    printf("test_segments: %d segments checked\n", g_checked);
    return 0;
}
