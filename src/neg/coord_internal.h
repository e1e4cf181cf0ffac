/*
 * coord_internal.h - what rank 0's message table shares among its files,
 * which call downward only: coordinator.c (the table: entries, taking the
 * ready ones, expiry), coord_sets.c (process sets and joins), coord_ready.c
 * (the ready list and groups), coord_agree.c (the agreement checks).
 * Nothing outside them includes it.
 */
#ifndef TC_NEG_COORD_INTERNAL_H
#define TC_NEG_COORD_INTERNAL_H

#include <stdint.h>

#include "neg/coordinator.h"
#include "util/hmap.h"
#include "util/status.h"

#define MAX_LISTED_RANKS 4

typedef struct entry {
    struct entry *next_ready;
    char *name; /* NUL-terminated copy */
    uint32_t name_len;
    uint32_t pset; /* the name's process set */
    char *key;     /* the table's key: tc__wire_key of name and pset */
    size_t key_len;
    int nsub;
    uint8_t *have;           /* [size] */
    tc_wire_request_t *reqs; /* [size] */
    int64_t *dim0;           /* [size], filled for an allgather RUN */
    char *text;              /* ERROR text */
    uint64_t since_ns;       /* when the first rank's submission arrived */
    tc_status_t fail_status; /* set by tc__coord_expire: fail with text */
    int size;
    char **gkeys;     /* [size] or NULL: each rank's group key (reqs[q].group_key), owned */
    int32_t **rlists; /* [size] or NULL: each rank's rank list (reqs[q].ranks), owned */
    int last;         /* the rank whose submission completed it */
    int32_t value;    /* a valued kind's (kind/kind.h): the join's last rank, the new set's id */
} entry_t;

/* A process set as rank 0 sees it: its members, and which of them joined. */
typedef struct {
    uint32_t id;
    int n;           /* members */
    uint8_t *member; /* [size] */
    uint8_t *joined; /* [size]: the member's join in this set is in the table */
    int njoined;
    int removing; /* its removal is decided: submissions to it fail; it goes when
                   * the removal's response is taken (tc__coord_set_drop) */
} coord_set_t;

/* A grouped submission's members that every rank has submitted, waiting
 * for the rest of the group: they become ready together, in member order,
 * or, when one disagrees or expires, all fail with its message. */
typedef struct {
    char *key; /* the first member's name, with the set's id (tc__wire_key) */
    size_t key_len;
    uint32_t pset;
    uint32_t size, nin;
    entry_t **members;       /* [size] */
    tc_status_t fail_status; /* once a member expired: every later one fails too */
    char *fail_text;
} group_t;

struct tc_coord {
    int size;
    coord_set_t **sets; /* [nsets], by id; NULL: removed or never made */
    uint32_t nsets;
    uint32_t last_set; /* the newest set's id */
    tc_hmap_t table;
    tc_hmap_t groups; /* key -> group_t */
    entry_t *ready_head, *ready_tail;
    size_t nready;
    /* joins of the global set taken from each rank ([size]), and in all */
    uint64_t *joins_taken;
    uint64_t joins_total;
};

/* coord_agree.c: NULL if every rank that submitted e agrees (the kind, the
 * group, then what the kind's descriptor lists), else a malloc'd message
 * naming the field, the lowest submitting rank's value and up to
 * MAX_LISTED_RANKS disagreeing ranks with theirs. */
char *tc__coord_check_agreement(const tc_coord_t *c, const entry_t *e);

/* coord_ready.c: moves a waiting entry to the end of the ready list (a
 * group's member waits for the rest of its group first). */
void tc__coord_make_ready(tc_coord_t *c, entry_t *e);
/* Whether e is waiting in the table (not ready, not in a group). */
int tc__coord_waiting(const tc_coord_t *c, const entry_t *e);
void tc__coord_entry_free(entry_t *e); /* NULL: nothing */
void tc__coord_groups_free(tc_coord_t *c);

/* coord_sets.c: process sets and joins. */
int tc__coord_sets_init(tc_coord_t *c);
void tc__coord_sets_free(tc_coord_t *c);
coord_set_t *tc__coord_set(const tc_coord_t *c, uint32_t id);
/* Whether every member of e's set has submitted e or joined the set. */
int tc__coord_complete(const tc_coord_t *c, const entry_t *e);
/* rank's join in set s arrived: what only joined members lack runs. -1
 * when out of memory (nothing changed). */
int tc__coord_mark_joined(tc_coord_t *c, coord_set_t *s, int rank);
/* The ranks that submitted join entry e are no longer joined. */
void tc__coord_unjoin(tc_coord_t *c, const entry_t *e);
/* e, every member having submitted it or joined, becomes ready: the hooks
 * of the kinds that change the table of sets run first (a new set gets its
 * id, a removed set's waiting names fail). */
void tc__coord_complete_entry(tc_coord_t *c, entry_t *e, int rank);
/* Forgets set id (its removal's RUN is being taken). */
void tc__coord_set_drop(tc_coord_t *c, uint32_t id);
/* coord_ready.c: fails the members of set pset's groups that wait for the
 * rest of their group. */
void tc__coord_fail_set_groups(tc_coord_t *c, uint32_t pset, tc_status_t st, const char *text);
/* Why e, which some joined members did not submit, cannot run (malloc'd,
 * NULL when out of memory). */
char *tc__coord_joined_text(const tc_coord_t *c, const entry_t *e);

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

/* The submission of the lowest rank that submitted e: the one every other
 * is compared with, and whose kind and group speak for the name. */
static inline const tc_wire_request_t *tc__coord_ref(const entry_t *e)
{
    return &e->reqs[tc__coord_first(e)];
}

#endif
