/*
 * neg_internal.h - what the negotiation state machine's files share: its
 * state (struct tc_neg) and the functions they call across, by file, in the
 * order they may call each other (below). Nothing outside src/neg/neg*.c
 * includes it.
 */
#ifndef TC_NEG_NEG_INTERNAL_H
#define TC_NEG_NEG_INTERNAL_H

#include "neg/cache.h"
#include "neg/coordinator.h"
#include "neg/neg.h"
#include "util/hmap.h"

#define NEG_MAX_CHILDREN 32

/* One submission of this rank, from tc__neg_submit until its item is out. */
typedef struct sub {
    struct sub *next; /* the list of submissions to negotiate in full */
    char *name;       /* NUL-terminated copy; w.name points at it */
    int32_t *ranks;   /* a copy of w.ranks (process_set_add), or NULL */
    tc_wire_request_t w;
    void *req;
    const void *data;
    void *out; /* where an eager result goes, or NULL */
    /* a small allreduce's input rides in its rank's first part, and again
     * once every rank has it (docs/negotiation.md, "Eager inputs") */
    int eager_sent; /* its input rode in a part */
    int promoted;   /* every rank has it: every input rides in the next cycle */
    int sent;       /* negotiated in full: sent to rank 0 (no longer in fresh) */
} sub_t;

/* Rank 0's clock for one cached id: since when some rank, not every rank,
 * has had it waiting (0: not stalled). */
typedef struct {
    uint64_t since_ns;
} idst_t;

/* One group's part of a negotiation cycle (docs/negotiation.md, "The
 * exchange"): what its ranks have waiting. Lists strictly ascending. */
typedef struct {
    uint32_t *ready; /* cached ids every rank of the group has waiting */
    uint32_t *some;  /* ids some rank of the group has waiting, not every one */
    uint32_t *stale; /* ids a rank of the group found stale, or rank 0 drops */
    uint32_t nready, nsome, nstale;
    tc_wire_eager_t *eager; /* the group's partial results of the eager ready ids
                             * (data malloc'ed, owned) */
    uint32_t neager;
    tc_wire_msg_t r0; /* rank 0's part (responses, terminate), decoder-owned;
                       * r0.type 0: the group does not hold rank 0, or it had nothing */
    uint32_t cap_ready, cap_some, cap_stale, cap_eager; /* room in the arrays, kept
                                                         * from cycle to cycle */
} part_t;

#define NEG_MAX_ROUNDS 32
/* The job size that exchanges directly (docs/negotiation.md, "The
 * exchange"): with 3 ranks the recursive doubling needs an extra rank and
 * three message latencies, the direct exchange one, within the same
 * number of messages per rank (2 each way); every eager input rides
 * gathered. From 5 ranks on a direct exchange would send more than the
 * 2 (log2 n + 1) messages the exchange keeps to. */
#define NEG_DIRECT_SIZE 3
/* The most first-time names rank 0 decides in one cycle (past it, the rest
 * of a group): a flood of names is decided over several cycles, so that no
 * rank spends long on one cycle's list without looking at its liveness
 * probes in between. */
#define NEG_MAX_DECISIONS 4096
struct tc_neg {
    tc_neg_params_t p;
    /* the binomial tree the liveness probes spread over (tc__neg_parent) */
    int parent; /* -1 at rank 0 */
    int nchild;
    int child[NEG_MAX_CHILDREN];

    tc_neg_state_t state;
    tc_status_t status;
    char text[TC_WIRE_MAX_TEXT + 1];
    int failed_here;

    /* Submissions. */
    tc_cache_t cache;
    sub_t *fresh; /* to negotiate in full, oldest first */
    sub_t **fresh_tail;
    tc_hmap_t full;   /* wire key (name, set) -> sub_t: every submission negotiated
                            * in full, from tc__neg_submit (in fresh) until rank 0's
                            * decision (sent); the one lookup of a name however many
                            * are in flight */
    uint32_t ncached; /* cache entries holding a pending submission */
    int shutdown_local, shutdown_sent;

    /* The exchange (neg_exch.c). */
    idst_t *ids; /* rank 0: [nids] */
    uint32_t nids;
    int nrounds;      /* log2 of the core size (the largest power of 2 <= size); the
                       * direct exchange: 1 */
    int extra;        /* core rank: the extra rank it hosts, or -1 */
    int host;         /* extra rank: its host, or -1 (a core rank) */
    int direct;       /* the direct exchange (NEG_DIRECT_SIZE ranks): one round in
                       * which every rank sends its part to every other */
    uint32_t got;     /* direct: the ranks whose part of this cycle is merged */
    uint64_t ncycles; /* cycles completed */
    int in_cycle;     /* core rank: taking part in cycle ncycles */
    int round;        /* the next round to merge; -1: waiting for the extra's snapshot */
    int round_sent;   /* this rank's part for that round is sent */
    int want;         /* something new since this rank's last snapshot */
    part_t part;      /* the group's part so far */
    part_t spare;     /* what a merge writes, then swapped with part (an extra:
                       * its snapshot) */
    uint32_t *tmp;    /* a merge's scratch id lists */
    uint32_t cap_tmp;
    tc_wire_msg_t slot[2][NEG_MAX_ROUNDS]; /* partners' parts that came early:
                                            * [0] this cycle, [1] the next */
    /* a host: its extra's latest snapshot for cycle ncycles */
    tc_wire_msg_t xsnap;
    int extra_want; /* the extra has news for a cycle */
    /* an extra: a snapshot with news sent since the last FINAL */
    int pushed, snap0_sent;

    /* Rank 0. */
    tc_coord_t *coord;
    int shutdown_from; /* the first rank that asked, or -1 */
    int term_sent;
    uint32_t *drops; /* ids to drop in our next part (stalled) */
    uint32_t ndrops, capdrops;
    tc_hmap_t evicted; /* name -> uint64_t *since: stalled cached names */
    tc_hmap_t expired; /* name -> uint64_t *: cycles a rank has completed once it
                          * knows the name expired (see crossed_expiry) */
    uint64_t next_stall_check, next_stall_warn;

    /* Goodbye. */
    uint8_t *bye_req; /* rank 0: [size], BYE on TC_NEG_TAG_REQ seen */
    int bye_req_left;
    int bye_extra; /* the hosted extra rank's BYE on TC_NEG_TAG_CYCLE seen */

    /* Liveness probes. */
    uint64_t last_progress_ns, last_probe_ns;
    int probe_nb[NEG_MAX_CHILDREN + 1];            /* parent and children */
    uint64_t probe_deadline[NEG_MAX_CHILDREN + 1]; /* 0: not waiting */
    int nprobe_nb;
    int spread_from; /* a SPREAD probe arrived from this rank: probe on (-2: none) */
    /* The roll call once a neighbour is silent: every rank is asked, and the
     * lost ones are named together ([size], 1 = answered; NULL: none). */
    uint8_t *roll;
    uint64_t roll_deadline;

    /* Outputs, until tc__neg_clear. */
    tc_neg_send_t *sends;
    size_t nsends, capsends;
    tc_neg_item_t *items;
    size_t nitems, capitems;
    void **keep; /* storage the items point into */
    size_t nkeep, capkeep;
};

/* The files call downward only, in this order (top first):
 *   neg.c        the API: life, submissions, messages in, the step
 *   neg_watch.c  rank 0's stall inspector, the liveness probes
 *   neg_exch.c   the exchange rounds of a cycle, the extra ranks
 *   neg_cycle.c  the end of a cycle, processed alike on every rank
 *   neg_part.c   the parts exchanged, rank 0's decisions among them, merges
 *   neg_ids.c    id lists and lookups, eager eligibility, rank 0's stall clocks
 *   neg_io.c     failing, a submission's record, outputs, the engine's questions
 * (then the message table, coordinator.c, and the response cache, cache.c). */

/* neg_io.c */
void neg_fail(tc_neg_t *n, tc_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void neg_sub_free(sub_t *s); /* NULL: nothing */
tc_neg_send_t *neg_send(tc_neg_t *n, const tc_wire_msg_t *msg, int tag);
void neg_send_to(tc_neg_t *n, const tc_wire_msg_t *msg, int tag, int dst);
void *neg_keep(tc_neg_t *n, const void *src, size_t len);
tc_neg_item_t *neg_add_item(tc_neg_t *n, tc_neg_action_t action, void *req);
int neg_has_work(const tc_neg_t *n);

/* neg_ids.c */
int neg_cmp_u32(const void *a, const void *b);
/* Whether id is in the ascending list ids[0..count); the eager entry of id
 * in the list e[0..count) ascending by id, or NULL. */
int neg_has_id(const uint32_t *ids, uint32_t count, uint32_t id);
const tc_wire_eager_t *neg_find_eager(const tc_wire_eager_t *e, uint32_t count, uint32_t id);
idst_t *neg_idst(tc_neg_t *n, uint32_t id); /* NULL: out of memory (fails n) */
void neg_id_reset(tc_neg_t *n, uint32_t id);
int neg_is_eager(const tc_neg_t *n, const tc_wire_request_t *w, size_t *bytes_p);
/* Whether w's eager record gathers every rank's input (TCOLL_DETERMINISTIC
 * and an order-sensitive op, or the direct exchange) instead of a partial
 * result: a slot per rank, combined at the end in the documented order by
 * neg_eager_fold. */
int neg_eager_gathers(const tc_neg_t *n, const tc_wire_request_t *w);

/* neg_part.c */
void neg_part_clear(part_t *pt); /* for the next cycle: arrays keep their room */
void neg_part_free(part_t *pt);
/* A copy of src that owns its storage (through the codec). -1 after a failure. */
int neg_msg_copy(tc_neg_t *n, const tc_wire_msg_t *src, tc_wire_msg_t *dst);
/* The message that sends part pt (to a partner, an extra, or as a snapshot). */
void neg_part_msg(const tc_neg_t *n, const part_t *pt, uint32_t round, tc_wire_msg_t *m);
/* This rank's own part, into pt; rank 0 then adds its own with
 * neg_rank0_part. -1 after a failure. */
int neg_snapshot(tc_neg_t *n, part_t *pt);
int neg_rank0_part(tc_neg_t *n, part_t *pt);
/* Checks a part that came from rank src. -1 after a failure. */
int neg_check_part(tc_neg_t *n, int src, const tc_wire_msg_t *m);
/* The group's part merged with another group's (m, from rank src), in
 * n->part; when m carries rank 0's part, the merged part takes m's storage
 * (m is left empty). -1 after a failure. */
int neg_merge(tc_neg_t *n, tc_wire_msg_t *m, int src);
/* A gathered eager record (one slot of len bytes per rank) combined in the
 * documented order into out. 0, or -1 after a failure (out of memory). */
int neg_eager_fold(tc_neg_t *n, const tc_wire_request_t *w, const void *record, void *out,
                   size_t len);

/* Whether a message carries rank 0's part. */
static inline int neg_has_r0(const tc_wire_msg_t *m)
{
    return m->type == TC_WIRE_CYCLE && (m->count > 0 || (m->flags & TC_WIRE_F_TERMINATE));
}

/* neg_cycle.c: the end of the cycle whose job-wide part is g. */
void neg_run_cycle(tc_neg_t *n, const tc_wire_msg_t *g, uint64_t now);

/* neg_exch.c */
void neg_exch_init(tc_neg_t *n);
void neg_exch_free(tc_neg_t *n);
/* May take msg's storage (leaving it empty), as tc__neg_receive says. */
void neg_receive_cycle(tc_neg_t *n, int src, tc_wire_msg_t *msg, uint64_t now);
int neg_exch_step(tc_neg_t *n, uint64_t now);

/* neg_watch.c */
void neg_stall_check(tc_neg_t *n, uint64_t now);
void neg_receive_ping(tc_neg_t *n, int src, const tc_wire_msg_t *msg);
void neg_receive_pong(tc_neg_t *n, int src);
void neg_probe_step(tc_neg_t *n, uint64_t now);

#endif
