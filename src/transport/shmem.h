/*
 * shmem.h - memory that the processes of a node can share: the allocator
 * behind tc_mem_alloc (tcoll_channel.h), looking up the region an address
 * lies in, and mapping another process's region (shmem.c). Any thread.
 */
#ifndef TC_TRANSPORT_SHMEM_H
#define TC_TRANSPORT_SHMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tcoll.h"

/* What another process of the node needs to map one region of this one:
 * its memory file, length, address here, and serial (unique in this
 * process: a later region with the same fd has another). fd -1: none. */
typedef struct {
    uint64_t base, len, serial;
    int32_t fd;
    int32_t unused;
} tc_shmem_ref_t;

/* Where [ptr, ptr + size) lies in a region of tc_mem_alloc: 1 and the
 * region's memory file, the offset of ptr in it and the region's length;
 * 0 when it is not inside one region. */
int tc__shmem_find(const void *ptr, size_t size, int *fd_p, uint64_t *off_p, uint64_t *len_p);
/* The same lookup as a reference: 1 and *ref; 0 and ref->fd = -1. */
int tc__shmem_ref(const void *ptr, size_t size, tc_shmem_ref_t *ref);
/* How tc__shmem_map_peer maps. */
enum {
    TC_SHMEM_READONLY = 1, /* read only (else read-write) */
    TC_SHMEM_POPULATE = 2  /* every page table entry at once */
};

/* Maps len bytes of process pid's memory file fd (shared; flags above).
 * TC_OK and *addr_p, or an error with why written. */
tc_status_t tc__shmem_map_peer(pid_t pid, int fd, uint64_t len, int flags, void **addr_p, char *why,
                               size_t why_len);
void tc__shmem_unmap(void *addr, uint64_t len);

#endif
