/*
 * coord_internal.h - what rank 0's message table (coordinator.c: entries,
 * readiness, groups, joins) and its agreement checks (coord_agree.c) share.
 * Nothing outside those two files includes it.
 */
#ifndef TC_ENGINE_COORD_INTERNAL_H
#define TC_ENGINE_COORD_INTERNAL_H

#include <stdint.h>

#include "engine/coordinator.h"
#include "util/hmap.h"
#include "util/status.h"

#define MAX_LISTED_RANKS 4

typedef struct entry {
    struct entry *next_ready;
    char *name; /* NUL-terminated copy */
    uint32_t name_len;
    int nsub;
    uint8_t *have;           /* [size] */
    tc_wire_request_t *reqs; /* [size] */
    int64_t *dim0;           /* [size], filled for an allgather RUN */
    char *text;              /* ERROR text */
    uint64_t since_ns;       /* when the first rank's submission arrived */
    tc_status_t fail_status; /* set by tc__coord_expire: fail with text */
    int size;
    char **gkeys; /* [size] or NULL: each rank's group key (reqs[q].group_key), owned */
    int last;     /* the rank whose submission completed it (a join's value) */
} entry_t;

/* A grouped submission's members that every rank has submitted, waiting
 * for the rest of the group: they become ready together, in member order,
 * or, when one disagrees or expires, all fail with its message. */
typedef struct {
    char *key; /* NUL-terminated: the first member's name */
    uint32_t size, nin;
    entry_t **members; /* [size] */
    tc_status_t fail_status; /* once a member expired: every later one fails too */
    char *fail_text;
} group_t;

struct tc_coord {
    int size;
    uint8_t *joined; /* [size]: the rank's join is in the table (tc_join) */
    int njoined;
    tc_hmap_t table;
    tc_hmap_t groups; /* key -> group_t */
    entry_t *ready_head, *ready_tail;
    size_t nready;
};

/* coord_agree.c: NULL if every rank that submitted e agrees (the kind, the
 * group, then what the kind's descriptor lists), else a malloc'd message
 * naming the field, the lowest submitting rank's value and up to
 * MAX_LISTED_RANKS disagreeing ranks with theirs. */
char *tc__coord_check_agreement(const tc_coord_t *c, const entry_t *e);

/* The lowest rank that submitted e (every entry has one). */
static inline int tc__coord_first(const entry_t *e)
{
    int q;

    for (q = 0; q < e->size; q++) {
        if (e->have[q]) {
            return q;
        }
    }
    return 0;
}

#endif
