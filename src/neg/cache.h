/*
 * cache.h - the response cache: names every rank has agreed on before, filed
 * under the same id on every rank.
 *
 * Rank 0 hands out an id with the RUN response that first schedules a name;
 * every rank files the name, with its own parameters, when it runs that
 * response, so every rank's cache holds the same names under the same ids at
 * the same point of the cycle sequence. A later submission of a cached name
 * with the same parameters needs no decision from rank 0: the ranks only have
 * to learn that everyone has it (docs/negotiation.md). One with different parameters
 * makes the entry stale; stale entries are dropped on every rank at once.
 *
 * Pure bookkeeping: no MPI, no threads (the engine thread owns it).
 */
#ifndef TC_NEG_CACHE_H
#define TC_NEG_CACHE_H

#include <stdint.h>

#include "util/hmap.h"
#include "wire/wire.h"

typedef struct {
    uint32_t id;
    char *name;             /* NUL-terminated copy */
    tc_wire_request_t desc; /* this rank's parameters; desc.name points at name */
    uint32_t ndim0;         /* allgather: rows per rank, as agreed */
    int64_t *dim0;
    void *pending; /* the engine's waiting request for this name, or NULL */
    int stale;     /* pending was submitted with other parameters */
} tc_cache_entry_t;

typedef struct {
    tc_hmap_t by_name;
    tc_cache_entry_t **slots; /* [nslots], indexed by id */
    uint32_t nslots;
    uint32_t count;
    uint64_t gen; /* entries filed + entries dropped: equal on every rank */
    /* Id allocation (rank 0). */
    uint32_t *free_ids;
    uint32_t nfree, capfree;
    uint32_t next_fresh; /* ids below it were handed out at least once */
    uint32_t reserved;   /* handed out, not filed yet */
} tc_cache_t;

void tc__cache_init(tc_cache_t *c);
/* Frees every entry (not the pending requests). */
void tc__cache_destroy(tc_cache_t *c);

tc_cache_entry_t *tc__cache_find(const tc_cache_t *c, const char *name, uint32_t len);
tc_cache_entry_t *tc__cache_get(const tc_cache_t *c, uint32_t id);

/* Whether a submission has exactly the parameters the entry was filed with. */
int tc__cache_matches(const tc_cache_entry_t *entry, const tc_wire_request_t *w);

/* Rank 0: an id for a name about to be scheduled, as a cache_ref (1 + id), or
 * 0 when capacity names are already cached or promised. Every ref handed out
 * must be filed by tc__cache_file before the next call's cycle. */
uint32_t tc__cache_assign(tc_cache_t *c, uint32_t capacity);

/* Files w (this rank's submission) and the RUN response's rows under id.
 * TC_ERR_ARG when the id is out of range or taken or the name is already
 * filed (ranks disagree: a protocol error), TC_ERR_NOMEM; nothing changes on
 * error. */
tc_status_t tc__cache_file(tc_cache_t *c, uint32_t id, const tc_wire_request_t *w,
                           const tc_wire_response_t *run);

/* Drops the entry filed under id and returns its pending request (or NULL).
 * *found_p says whether there was one. */
void *tc__cache_drop(tc_cache_t *c, uint32_t id, int *found_p);

#endif
