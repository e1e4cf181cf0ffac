/*
 * peer_map.h - the regions of the node's other processes (tc_mem_alloc
 * memory, transport/shmem.h) mapped into this one, kept for reuse: the
 * direct collectives (src/coll) read a peer's buffer that lies in such a
 * region with loads instead of process_vm_readv. Mapped read-only: a
 * collective never writes into another rank's memory. One cache per user
 * (one thread at a time).
 *
 * A region is known by the owner's (fd, serial): a region freed and a
 * later one given the same descriptor differ in serial, and the stale
 * mapping is dropped when the new one is met. At most TC_PEER_MAPS regions
 * per peer stay mapped (the least recently used goes). A mapping never
 * outlives this cache, and a region the owner has freed stays readable
 * here (its pages live while mapped) until the cache drops it, so a late
 * read can only see old bytes, never fault.
 */
#ifndef TC_TRANSPORT_PEER_MAP_H
#define TC_TRANSPORT_PEER_MAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "transport/shmem.h"

#define TC_PEER_MAPS 8 /* regions kept mapped per peer */

typedef struct {
    uint64_t serial, len; /* the owner's region */
    int32_t fd;           /* -1: empty */
    char *addr;           /* mapped here */
    uint64_t used;        /* the cache's clock at its last use */
} tc_peer_map_ent_t;

typedef struct {
    int n;                   /* peers (local ranks); 0 until first use */
    tc_peer_map_ent_t *ents; /* [n x TC_PEER_MAPS] */
    unsigned char *refused;  /* [n]: mapping from that peer failed once: not tried again */
    uint64_t clock;
} tc_peer_maps_t;

/* Where [addr, addr + bytes) of local peer p of n (process pid) is mapped
 * here, when the peer says (ref) that it lies in one of its regions: mapped
 * now if it was not. NULL (use process_vm_readv) when ref names no region,
 * the range is not inside it, or the region cannot be mapped. */
const char *tc__peer_map(tc_peer_maps_t *m, int n, int p, pid_t pid, const tc_shmem_ref_t *ref,
                         uint64_t addr, size_t bytes);

/* Unmaps everything; the cache is empty (and reusable) after. */
void tc__peer_maps_free(tc_peer_maps_t *m);

#endif
