/*
 * peer_map.c - the cache of the peers' regions mapped here (peer_map.h).
 */
#define _GNU_SOURCE
#include "transport/peer_map.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#define POPULATE_MAX ((uint64_t)1 << 30) /* larger regions fault their pages in as read */

static int setup(tc_peer_maps_t *m, int n)
{
    int i;

    if (m->n == n) {
        return 0;
    }
    tc__peer_maps_free(m);
    m->ents = calloc((size_t)n * TC_PEER_MAPS, sizeof(*m->ents));
    m->refused = calloc((size_t)n, 1);
    if (m->ents == NULL || m->refused == NULL) {
        free(m->ents);
        free(m->refused);
        m->ents = NULL;
        m->refused = NULL;
        return -1;
    }
    for (i = 0; i < n * TC_PEER_MAPS; i++) {
        m->ents[i].fd = -1;
    }
    m->n = n;
    return 0;
}

static void drop(tc_peer_map_ent_t *e)
{
    if (e->fd >= 0) {
        tc__shmem_unmap(e->addr, e->len);
    }
    memset(e, 0, sizeof(*e));
    e->fd = -1;
}

const char *tc__peer_map(tc_peer_maps_t *m, int n, int p, pid_t pid, const tc_shmem_ref_t *ref,
                         uint64_t addr, size_t bytes)
{
    tc_peer_map_ent_t *row, *slot = NULL;
    char why[256];
    void *mapped;
    int i;

    if (ref->fd < 0 || addr < ref->base || addr - ref->base > ref->len ||
        bytes > ref->len - (addr - ref->base) || p < 0 || p >= n || setup(m, n) != 0 ||
        m->refused[p]) {
        return NULL;
    }
    row = &m->ents[(size_t)p * TC_PEER_MAPS];
    for (i = 0; i < TC_PEER_MAPS; i++) {
        tc_peer_map_ent_t *e = &row[i];
        if (e->fd == ref->fd && e->serial == ref->serial && e->len == ref->len) {
            e->used = ++m->clock;
            return e->addr + (addr - ref->base);
        }
    }
    for (i = 0; i < TC_PEER_MAPS; i++) { /* a stale mapping of this fd, an empty one, the oldest */
        tc_peer_map_ent_t *e = &row[i];
        if (e->fd == ref->fd) {
            slot = e;
            break;
        }
        if (slot == NULL || (slot->fd >= 0 && (e->fd < 0 || e->used < slot->used))) {
            slot = e;
        }
    }
    drop(slot);
    /* page tables filled at once (no fault per page on first read), unless
     * the region is so large that most of it may never be read from here */
    if (tc__shmem_map_peer(pid, ref->fd, ref->len,
                           TC_SHMEM_READONLY | (ref->len <= POPULATE_MAX ? TC_SHMEM_POPULATE : 0),
                           &mapped, why, sizeof(why)) != TC_OK) {
        m->refused[p] = 1; /* the same next time: process_vm_readv from now on */
        TC_DEBUG("shm",
                 "local rank %d's memory stays unmapped (reads go through "
                 "process_vm_readv): %s",
                 p, why);
        return NULL;
    }
    slot->serial = ref->serial;
    slot->len = ref->len;
    slot->fd = ref->fd;
    slot->addr = mapped;
    slot->used = ++m->clock;
    return slot->addr + (addr - ref->base);
}

void tc__peer_maps_free(tc_peer_maps_t *m)
{
    if (m->ents != NULL) {
        for (int i = 0; i < m->n * TC_PEER_MAPS; i++) {
            drop(&m->ents[i]);
        }
    }
    free(m->ents);
    free(m->refused);
    memset(m, 0, sizeof(*m));
}
