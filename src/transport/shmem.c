/*
 * shmem.c - the allocator of memory that other processes on the node can
 * map (tc_mem_alloc, tc_mem_free), and mapping a peer's region. Channels
 * (src/channel) map registered memory through it, and the node's direct
 * collectives (src/coll) read the peers' buffers that lie in such regions
 * with loads instead of process_vm_readv (peer_map.c).
 *
 * Each allocation is an anonymous memory file (memfd_create): it has no name
 * anywhere, so nothing is ever left behind in /dev/shm, not even after a
 * SIGKILL. A peer maps it by opening /proc/<pid>/fd/<fd> of the owner (the
 * same permission that process_vm_readv needs). The memory is reserved at
 * once (fallocate), so a full /dev/shm fails the allocation with a reason
 * instead of killing the process with SIGBUS at first touch.
 *
 * The process's regions are kept in a list under a mutex (allocations are
 * rare and few); lookups by address serve tc_mem_register and the
 * collectives. Each region has a serial number, unique in the process, so
 * that a peer that mapped a region can tell it from a later one that got
 * the same file descriptor.
 */
#define _GNU_SOURCE
#include "transport/shmem.h"
#include "tcoll_channel.h" /* tc_mem_alloc, tc_mem_free */
#include "util/log.h"
#include "util/status.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct region {
    char *base;
    uint64_t len;
    uint64_t serial;
    int fd;
    struct region *next;
} region_t;

static pthread_mutex_t regions_mu = PTHREAD_MUTEX_INITIALIZER;
static region_t *regions;
static uint64_t last_serial;

tc_status_t tc_mem_alloc(size_t size, void **ptr_p)
{
    long page = sysconf(_SC_PAGESIZE);
    uint64_t len;
    region_t *r;
    void *addr;
    int fd, rc;

    if (ptr_p == NULL || size == 0) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_alloc: %s",
                             ptr_p == NULL ? "ptr_p is NULL" : "size is 0");
    }
    if (page <= 0) {
        page = 4096;
    }
    if (size > UINT64_MAX - (uint64_t)page) {
        return tc__set_error(TC_ERR_NOMEM, "tc_mem_alloc: %zu bytes is too many", size);
    }
    len = ((uint64_t)size + (uint64_t)page - 1) / (uint64_t)page * (uint64_t)page;
    r = malloc(sizeof(*r));
    if (r == NULL) {
        return tc__set_error(TC_ERR_NOMEM, "tc_mem_alloc: out of memory");
    }
    fd = memfd_create("tcoll-mem", MFD_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        free(r);
        return tc__set_error(TC_ERR_NOMEM, "tc_mem_alloc: memfd_create: %s", strerror(err));
    }
    /* Reserve every page now: a full /dev/shm fails here, not with SIGBUS. */
    rc = posix_fallocate(fd, 0, (off_t)len);
    if (rc != 0) {
        close(fd);
        free(r);
        return tc__set_error(TC_ERR_NOMEM, "tc_mem_alloc: reserving %llu bytes: %s",
                             (unsigned long long)len, strerror(rc));
    }
    addr = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) {
        int err = errno;
        close(fd);
        free(r);
        return tc__set_error(TC_ERR_NOMEM, "tc_mem_alloc: mmap of %llu bytes: %s",
                             (unsigned long long)len, strerror(err));
    }
    r->base = addr;
    r->len = len;
    r->fd = fd;
    pthread_mutex_lock(&regions_mu);
    r->serial = ++last_serial;
    r->next = regions;
    regions = r;
    pthread_mutex_unlock(&regions_mu);
    *ptr_p = addr;
    return TC_OK;
}

tc_status_t tc_mem_free(void *ptr)
{
    region_t **pp, *r = NULL;

    if (ptr == NULL) {
        return TC_OK;
    }
    pthread_mutex_lock(&regions_mu);
    for (pp = &regions; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->base == ptr) {
            r = *pp;
            *pp = r->next;
            break;
        }
    }
    pthread_mutex_unlock(&regions_mu);
    if (r == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_mem_free: %p was not returned by tc_mem_alloc", ptr);
    }
    munmap(r->base, (size_t)r->len);
    close(r->fd);
    free(r);
    return TC_OK;
}

int tc__shmem_find(const void *ptr, size_t size, int *fd_p, uint64_t *off_p, uint64_t *len_p)
{
    tc_shmem_ref_t ref;

    if (!tc__shmem_ref(ptr, size, &ref)) {
        return 0;
    }
    *fd_p = ref.fd;
    *off_p = (uint64_t)(uintptr_t)ptr - ref.base;
    *len_p = ref.len;
    return 1;
}

int tc__shmem_ref(const void *ptr, size_t size, tc_shmem_ref_t *ref)
{
    const char *p = ptr;
    region_t *r;
    int found = 0;

    memset(ref, 0, sizeof(*ref));
    ref->fd = -1;
    if (ptr == NULL) {
        return 0;
    }
    pthread_mutex_lock(&regions_mu);
    for (r = regions; r != NULL; r = r->next) {
        if (p >= r->base && p <= r->base + r->len && (uint64_t)(p - r->base) <= r->len &&
            size <= r->len - (uint64_t)(p - r->base)) {
            ref->base = (uint64_t)(uintptr_t)r->base;
            ref->len = r->len;
            ref->serial = r->serial;
            ref->fd = r->fd;
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&regions_mu);
    return found;
}

tc_status_t tc__shmem_map_peer(pid_t pid, int fd, uint64_t len, int flags, void **addr_p, char *why,
                               size_t why_len)
{
    char path[64];
    void *addr;
    int pfd;

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
    pfd = open(path, ((flags & TC_SHMEM_READONLY) ? O_RDONLY : O_RDWR) | O_CLOEXEC);
    if (pfd < 0) {
        snprintf(why, why_len, "opening %s: %s", path, strerror(errno));
        return TC_ERR_TRANSPORT;
    }
    addr = mmap(NULL, (size_t)len, PROT_READ | ((flags & TC_SHMEM_READONLY) ? 0 : PROT_WRITE),
                MAP_SHARED | ((flags & TC_SHMEM_POPULATE) ? MAP_POPULATE : 0), pfd, 0);
    if (addr == MAP_FAILED) {
        snprintf(why, why_len, "mapping %llu bytes of %s: %s", (unsigned long long)len, path,
                 strerror(errno));
        close(pfd);
        return TC_ERR_TRANSPORT;
    }
    close(pfd); /* the mapping keeps the file */
    *addr_p = addr;
    return TC_OK;
}

void tc__shmem_unmap(void *addr, uint64_t len)
{
    if (addr != NULL) {
        munmap(addr, (size_t)len);
    }
}
