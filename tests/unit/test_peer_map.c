/*
 * test_peer_map.c - the cache of the peers' tc_mem_alloc regions mapped
 * here (src/transport/peer_map.c), with this process as its own "peer"
 * (/proc/<own pid>/fd opens like another process's would): what is mapped
 * reads the region's bytes; a range outside the region, or no region, is
 * NULL; a region freed and made again under the same descriptor is mapped
 * afresh (its serial differs), never read through the stale mapping; more
 * regions than a peer keeps push out the least recently used; a peer that
 * cannot be mapped is refused from then on; and the mappings are read-only
 * (as /proc/self/maps says).
 */
#define _GNU_SOURCE
#include "check.h"
#include "tc_test.h"
#include "tcoll_channel.h"
#include "transport/peer_map.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { N = 2, PEER = 1, BYTES = 3 * 4096 + 100 };

/* A region of BYTES filled with byte v, and its reference. */
static char *region(int v, tc_shmem_ref_t *ref)
{
    void *p = NULL;
    CHECK_EQ(tc_mem_alloc(BYTES, &p), TC_OK);
    memset(p, v, BYTES);
    CHECK(tc__shmem_ref(p, BYTES, ref) == 1);
    CHECK(ref->fd >= 0 && ref->len >= BYTES && ref->base == (uint64_t)(uintptr_t)p);
    return p;
}

static const char *map(tc_peer_maps_t *m, const tc_shmem_ref_t *ref, const char *p, size_t off,
                       size_t bytes)
{
    return tc__peer_map(m, N, PEER, getpid(), ref, (uint64_t)(uintptr_t)(p + off), bytes);
}

TC_CASE(maps_reads_and_refuses_ranges)
{
    tc_peer_maps_t m = {0};
    tc_shmem_ref_t ref, none;
    char *p = region(7, &ref);
    const char *q;
    char local[64];

    q = map(&m, &ref, p, 100, 500);
    CHECK(q != NULL && q != p + 100); /* a second mapping of the same memory */
    CHECK(q[0] == 7 && q[499] == 7);
    p[100] = 42; /* the owner's store is seen through the mapping */
    CHECK(q[0] == 42);
    CHECK(map(&m, &ref, p, 0, BYTES) != NULL);
    CHECK(map(&m, &ref, p, 0, ref.len + 1) == NULL); /* past the region */
    CHECK(map(&m, &ref, p, ref.len, 1) == NULL);
    CHECK(tc__peer_map(&m, N, PEER, getpid(), &ref, ref.base - 1, 1) == NULL);
    CHECK(tc__shmem_ref(local, sizeof(local), &none) == 0 && none.fd == -1);
    CHECK(tc__peer_map(&m, N, PEER, getpid(), &none, (uint64_t)(uintptr_t)local, 8) == NULL);
    CHECK(tc__peer_map(&m, N, N, getpid(), &ref, ref.base, 8) == NULL); /* no such peer */
    tc__peer_maps_free(&m);
    CHECK_EQ(tc_mem_free(p), TC_OK);
}

TC_CASE(a_region_made_again_is_mapped_afresh)
{
    tc_peer_maps_t m = {0};
    tc_shmem_ref_t a, b;
    char *p = region(1, &a);
    const char *q;
    int fd = a.fd;

    q = map(&m, &a, p, 0, BYTES);
    CHECK(q != NULL && q[5] == 1);
    CHECK_EQ(tc_mem_free(p), TC_OK);
    p = region(2, &b); /* the descriptor comes back: the same fd, another serial */
    CHECK_EQ(b.fd, fd);
    CHECK(b.serial != a.serial);
    q = map(&m, &b, p, 0, BYTES);
    CHECK(q != NULL && q[5] == 2);
    p[5] = 3;
    CHECK(q[5] == 3);
    tc__peer_maps_free(&m);
    CHECK_EQ(tc_mem_free(p), TC_OK);
}

TC_CASE(the_least_recently_used_goes)
{
    enum { R = TC_PEER_MAPS + 3 };
    tc_peer_maps_t m = {0};
    tc_shmem_ref_t ref[R];
    char *p[R];
    const char *first;
    int i;

    for (i = 0; i < R; i++) {
        p[i] = region(10 + i, &ref[i]);
    }
    first = map(&m, &ref[0], p[0], 0, 1);
    for (i = 1; i < TC_PEER_MAPS; i++) { /* the cache full, region 0 the oldest */
        CHECK(map(&m, &ref[i], p[i], 0, 1)[0] == 10 + i);
    }
    CHECK(map(&m, &ref[0], p[0], 0, 1) == first); /* a hit: now the newest */
    for (i = TC_PEER_MAPS; i < R; i++) {          /* each pushes out the oldest, never region 0 */
        CHECK(map(&m, &ref[i], p[i], 0, 1)[0] == 10 + i);
    }
    CHECK(map(&m, &ref[0], p[0], 0, 1) == first);
    for (i = 0; i < R; i++) { /* every one still reads its own bytes, mapped again or not */
        const char *q = map(&m, &ref[i], p[i], 7, 1);
        CHECK(q != NULL && q[0] == 10 + i);
    }
    tc__peer_maps_free(&m);
    CHECK(m.n == 0 && m.ents == NULL);
    for (i = 0; i < R; i++) {
        CHECK_EQ(tc_mem_free(p[i]), TC_OK);
    }
}

TC_CASE(an_unmappable_peer_is_refused_from_then_on)
{
    tc_peer_maps_t m = {0};
    tc_shmem_ref_t ref, bad;
    char *p = region(5, &ref);

    bad = ref;
    bad.fd = 1000000; /* no such descriptor */
    CHECK(map(&m, &bad, p, 0, 8) == NULL);
    CHECK(map(&m, &ref, p, 0, 8) == NULL); /* refused: process_vm_readv from now on */
    tc__peer_maps_free(&m);
    CHECK(map(&m, &ref, p, 0, 8) != NULL); /* a new cache tries again */
    tc__peer_maps_free(&m);
    CHECK_EQ(tc_mem_free(p), TC_OK);
}

/* The permissions of the mapping that holds addr, from /proc/self/maps
 * ("r--s"), or "" if none does. */
static void perms_of(const void *addr, char perms[8])
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    uintptr_t a = (uintptr_t)addr;

    perms[0] = '\0';
    CHECK(f != NULL);
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long lo, hi;
        char pr[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, pr) == 3 && a >= lo && a < hi) {
            snprintf(perms, 8, "%s", pr);
            break;
        }
    }
    fclose(f);
}

TC_CASE(mappings_are_read_only)
{
    tc_peer_maps_t m = {0};
    tc_shmem_ref_t ref;
    char *p = region(9, &ref);
    const char *q = map(&m, &ref, p, 0, 8);
    char perms[8];

    CHECK(q != NULL);
    perms_of(q, perms);
    CHECK_MSG(strcmp(perms, "r--s") == 0, "the mapping is '%s', not read-only and shared", perms);
    perms_of(p, perms);
    CHECK(strcmp(perms, "rw-s") == 0); /* the owner's own stays writable */
    tc__peer_maps_free(&m);
    CHECK_EQ(tc_mem_free(p), TC_OK);
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    return 0;
}
