/*
 * neg.h - the negotiation state machine: which collectives run, in which
 * order, on every rank.
 *
 * Pure: no MPI, no threads, no clock of its own. Its inputs are this rank's
 * submissions, decoded control messages from other ranks and the time; its
 * outputs are encoded messages to send (with their destinations and tags)
 * and the ordered list of what to run, fail or complete. The engine loop
 * does the I/O and runs the list; tcoll-negsim drives one instance per
 * simulated rank over an in-memory message layer; the unit tests drive a
 * few by hand. The protocol it implements (cycles of recursive-doubling
 * exchange rounds, rank 0's decisions, the response cache, eager inputs,
 * stalls, probes over a binomial tree,
 * shutdown) is described once, in docs/negotiation.md.
 *
 * It never touches what a submission's handle points to: handles are opaque
 * and come back in run items. The input bytes of an eager allreduce (the
 * data passed to tc__neg_submit) are read while the submission is pending.
 */
#ifndef TC_NEG_NEG_H
#define TC_NEG_NEG_H

#include <stddef.h>
#include <stdint.h>

#include "wire/wire.h"

/* Control-message tags (the engine's control communicator). */
enum {
    TC_NEG_TAG_REQ = 1,   /* REQUESTS and BYE to rank 0 */
    TC_NEG_TAG_CYCLE = 2, /* a CYCLE message: a part of an exchange round; an extra's BYE */
    TC_NEG_TAG_ABORT = 4, /* BYE with a terminate record, to every rank */
    TC_NEG_TAG_PING = 5,  /* an empty REQUESTS: are you alive? (SPREAD: ask on) */
    TC_NEG_TAG_PONG = 6,  /* the answer */
};

/* The most destinations of one send: a probe to a tree node's parent and
 * children. */
#define TC_NEG_MAX_DST 48

typedef struct {
    int rank, size;
    uint32_t cache_capacity;  /* TCOLL_CACHE_CAPACITY */
    uint32_t eager_bytes;     /* TCOLL_EAGER_BYTES: cached allreduces up to this ride eagerly */
    int deterministic;        /* TCOLL_DETERMINISTIC: order-sensitive ones ride as every
                               * rank's input (gathered), combined at the end in the
                               * documented order (neg_part.c) */
    const int *node;          /* the job's node table for that order (coll.h; NULL: one
                               * node); owned by the caller, outliving the state */
    uint64_t stall_warn_ns;   /* rank 0: TCOLL_STALL_WARN_S, 0 = off */
    uint64_t stall_abort_ns;  /* rank 0: TCOLL_STALL_ABORT_S, 0 = off */
    uint64_t peer_timeout_ns; /* TCOLL_PEER_TIMEOUT_S */
    uint64_t probe_grace_ns;  /* how long a probed neighbour has to answer */
} tc_neg_params_t;

/* One message to send: the same bytes to each of dst[0..ndst-1]. */
typedef struct {
    int tag;
    int ndst;
    int dst[TC_NEG_MAX_DST];
    tc_wire_buf_t buf;
} tc_neg_send_t;

typedef enum {
    TC_NEG_RUN,  /* run the collective resp describes for req */
    TC_NEG_FAIL, /* fail req with resp.status and resp.text (req NULL: not submitted here) */
    TC_NEG_DONE, /* an eager allreduce: its result is result[0..result_len) */
} tc_neg_action_t;

typedef struct {
    tc_neg_action_t action;
    void *req;               /* the handle given to tc__neg_submit */
    tc_wire_response_t resp; /* RUN: name, dim0 (allgather rows per rank), cache_ref */
    const void *result;      /* DONE */
    size_t result_len;
    uint64_t cycle; /* the cycle that decided it (0, 1, ...) */
} tc_neg_item_t;

typedef enum {
    TC_NEG_RUNNING,
    TC_NEG_DRAINING, /* terminated: saying goodbye (BYE to rank 0; an extra to its host) */
    TC_NEG_DONE_OK,  /* every goodbye exchanged: the control channel is quiet */
    TC_NEG_FAILED,   /* stopped: a protocol error, a lost peer, or another rank's abort */
} tc_neg_state_t;

typedef struct tc_neg tc_neg_t;

/* The tree the liveness probes spread over: rank r's children are r + 2^j for every 2^j below the lowest set
 * bit of r (rank 0: below size), its parent r minus its lowest set bit. */
int tc__neg_parent(int rank);
int tc__neg_children(int rank, int size, int *children, int max);

tc_status_t tc__neg_create(const tc_neg_params_t *p, tc_neg_t **neg_p);
void tc__neg_destroy(tc_neg_t *n);

/* A new submission (w->name is copied). data: the input an eager allreduce
 * reduces, valid until the item for req comes out; out: where its eager
 * result is written (the item's result then points there), or NULL to have
 * it kept until tc__neg_clear. TC_ERR_NOMEM, or TC_ERR_ARG if the name is
 * already pending here (the caller must not let that happen). */
tc_status_t tc__neg_submit(tc_neg_t *n, const tc_wire_request_t *w, void *req, const void *data,
                           void *out);

/* tc_shutdown was called on this rank. */
void tc__neg_shutdown(tc_neg_t *n);

/* A decoded message from src under tag. The state machine may take the
 * message's storage (leaving *msg empty) instead of copying what it keeps;
 * the caller frees *msg after the call either way (tc__wire_msg_free). */
void tc__neg_receive(tc_neg_t *n, int src, int tag, tc_wire_msg_t *msg, uint64_t now);

/* Moves negotiation on: sends what there is to say, processes what arrived,
 * looks at the clock (stalls, probes). Returns 1 if anything changed. */
int tc__neg_step(tc_neg_t *n, uint64_t now);

/* Outputs since the last tc__neg_clear: sends to post, then items to run in
 * order. Pointers stay valid until tc__neg_clear; a caller may take a send's
 * buffer, leaving in its place an empty one (len 0), whose memory the state
 * machine reuses for later sends. */
tc_neg_send_t *tc__neg_sends(tc_neg_t *n, size_t *count_p);
tc_neg_item_t *tc__neg_items(tc_neg_t *n, size_t *count_p);
void tc__neg_clear(tc_neg_t *n);

tc_neg_state_t tc__neg_state(const tc_neg_t *n);
/* FAILED or DRAINING: why (TC_ERR_SHUTDOWN after a normal shutdown). */
tc_status_t tc__neg_status(const tc_neg_t *n, const char **text_p);
/* FAILED by a decision of this rank (not another rank's abort): the engine
 * tells every other rank, see docs/negotiation.md. */
int tc__neg_failed_here(const tc_neg_t *n);
/* Stops this rank for a reason found outside (a transfer failed...). */
void tc__neg_fail(tc_neg_t *n, tc_status_t st, const char *text);

/* DRAINING: marks in flags[size] the ranks whose goodbye has not arrived
 * here; returns how many. */
int tc__neg_missing_byes(const tc_neg_t *n, uint8_t *flags);

/* Whether this rank waits for anything (a submission, a goodbye). */
int tc__neg_busy(const tc_neg_t *n);
/* The name filed under a cache id (NULL if none), for the timeline. */
const char *tc__neg_cached_name(const tc_neg_t *n, uint32_t id, uint32_t *len_p);

/* Number of cycles completed here so far. */
uint64_t tc__neg_cycles(const tc_neg_t *n);

/* Rank 0: the joins of the global set its table has taken from rank (-1:
 * from every rank together), in the order that decides which rank joined
 * last (tc__coord_joins_taken). 0 on the other ranks. */
uint64_t tc__neg_joins_taken(const tc_neg_t *n, int rank);

#endif
