/*
 * neg_internal.h - what the negotiation state machine's files share (neg.c:
 * submissions, messages in, the DOWN processing every rank does; neg_io.c:
 * messages out, items, what the engine asks;
 * neg_tree.c: what each rank knows of its subtree, UP messages, rank 0's
 * decisions; neg_watch.c: rank 0's stall inspector and the liveness probes).
 * Nothing outside src/engine/neg*.c includes it.
 */
#ifndef TC_ENGINE_NEG_INTERNAL_H
#define TC_ENGINE_NEG_INTERNAL_H

#include "engine/cache.h"
#include "engine/coordinator.h"
#include "engine/neg.h"
#include "util/hmap.h"

#define NEG_MAX_CHILDREN 32

/* One submission of this rank, from tc__neg_submit until its item is out. */
typedef struct sub {
    struct sub *next;  /* the list of submissions to negotiate in full */
    char *name;        /* NUL-terminated copy; w.name points at it */
    tc_wire_request_t w;
    void *req;
    const void *data;
    void *out; /* where an eager result goes, or NULL */
} sub_t;

/* What this rank knows about one cached id, below and at itself. */
typedef struct {
    uint32_t child_ready; /* bit k: every rank of child k's subtree has it waiting */
    uint32_t child_some;  /* bit k: some rank of child k's subtree has it waiting */
    uint32_t child_stale; /* bit k: some rank of child k's subtree found it stale */
    void **partial;       /* [nchild]: child k's eager partial result, or NULL */
    uint32_t partial_len;
    uint8_t sent_ready, sent_some, sent_stale; /* told the parent (rank 0: decided) */
    uint8_t dirty;        /* on the dirty list */
    uint64_t removed_at;  /* DOWN messages processed when it last ran or was dropped */
    uint64_t since_ns;    /* rank 0: since when some rank, not every rank, has it */
} idst_t;

struct tc_neg {
    tc_neg_params_t p;
    int parent; /* -1 at rank 0 */
    int nchild;
    int child[NEG_MAX_CHILDREN];
    uint32_t all_children; /* (1 << nchild) - 1 */

    tc_neg_state_t state;
    tc_status_t status;
    char text[TC_WIRE_MAX_TEXT + 1];
    int failed_here;

    /* Submissions. */
    tc_cache_t cache;
    sub_t *fresh;          /* to negotiate in full, oldest first */
    sub_t **fresh_tail;
    tc_hmap_t full;        /* name -> sub_t: with rank 0, waiting for its decision */
    uint32_t ncached;      /* cache entries holding a pending submission */
    int shutdown_local, shutdown_sent;

    /* The tree. */
    idst_t *ids;
    uint32_t nids;
    uint32_t *dirty;
    uint32_t ndirty, capdirty;
    int up_credit;  /* may send an UP: none is waiting for its DOWN */
    uint64_t ndown; /* DOWN messages processed */
    int got_up;     /* rank 0: an UP arrived since our last DOWN */
    uint64_t some_since; /* when ids only some ranks below have began to wait to go up */

    /* Rank 0. */
    tc_coord_t *coord;
    int shutdown_from;   /* the first rank that asked, or -1 */
    int term_sent;
    uint32_t *drops;     /* ids to drop in our next DOWN (stale or stalled) */
    uint32_t ndrops, capdrops;
    tc_hmap_t evicted;   /* name -> uint64_t *since: stalled cached names */
    tc_hmap_t expired;   /* name -> uint64_t *: DOWNs a rank has processed once it
                          * knows the name expired (see crossed_expiry) */
    uint64_t next_stall_check, next_stall_warn;

    /* Goodbye. */
    uint8_t *bye_req;     /* rank 0: [size], BYE on TC_NEG_TAG_REQ seen */
    int bye_req_left;
    uint32_t bye_children; /* bit k: child k's BYE on TC_NEG_TAG_UP seen */

    /* Liveness probes. */
    uint64_t last_progress_ns, last_probe_ns;
    int probe_nb[NEG_MAX_CHILDREN + 1];   /* parent and children */
    uint64_t probe_deadline[NEG_MAX_CHILDREN + 1]; /* 0: not waiting */
    int nprobe_nb;
    int spread_from; /* a SPREAD probe arrived from this rank: probe on (-2: none) */

    /* Outputs, until tc__neg_clear. */
    tc_neg_send_t *sends;
    size_t nsends, capsends;
    tc_neg_item_t *items;
    size_t nitems, capitems;
    void **keep; /* storage the items point into */
    size_t nkeep, capkeep;
};

/* neg.c (and neg_io.c: outputs) */
void neg_fail(tc_neg_t *n, tc_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
tc_neg_send_t *neg_send(tc_neg_t *n, const tc_wire_msg_t *msg, int tag);
void neg_send_to(tc_neg_t *n, const tc_wire_msg_t *msg, int tag, int dst);
void *neg_keep(tc_neg_t *n, const void *src, size_t len);
tc_neg_item_t *neg_add_item(tc_neg_t *n, tc_neg_action_t action, void *req);
int neg_is_eager(const tc_neg_t *n, const tc_wire_request_t *w, size_t *bytes_p);
void neg_process_down(tc_neg_t *n, const tc_wire_msg_t *msg, uint64_t now);

/* neg_tree.c */
idst_t *neg_idst(tc_neg_t *n, uint32_t id); /* NULL: out of memory (fails n) */
void neg_mark(tc_neg_t *n, uint32_t id);
void neg_id_reset(tc_neg_t *n, uint32_t id);
void neg_receive_up(tc_neg_t *n, int k, const tc_wire_msg_t *msg);
int neg_send_up(tc_neg_t *n, uint64_t now);
int neg_decide(tc_neg_t *n, uint64_t now);
void neg_tree_free(tc_neg_t *n);
int cmp_u32(const void *a, const void *b);

/* neg_watch.c */
void neg_stall_check(tc_neg_t *n, uint64_t now);
void neg_receive_ping(tc_neg_t *n, int src, const tc_wire_msg_t *msg);
void neg_receive_pong(tc_neg_t *n, int src);
void neg_probe_step(tc_neg_t *n, uint64_t now);
int neg_has_work(const tc_neg_t *n);

#endif
