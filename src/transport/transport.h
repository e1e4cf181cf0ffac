/*
 * transport.h - the ops table the collective algorithms send data through.
 *
 * A transport moves bytes between the ranks of one group (rank, size); it
 * knows nothing about tensors, names or dtypes. Implementations: MPI
 * (transport_mpi.c), the node's shared memory through the segment's
 * mailboxes (transport_shm.c), and the router over a few child transports
 * (router.c: a peer's transfers go to the child that reaches it).
 *
 * Two levels:
 *
 *   blocking     t->sendrecv, tc__send, tc__recv: what the algorithms
 *                (src/coll/) call. One generic function for every transport
 *                (tc__transport_sendrecv, transport.c): it posts the send
 *                and the receive and waits for both under t->wait (wait.h:
 *                back-off, interrupt hook, lost-peer timeout).
 *   non-blocking post a transfer (tc_xfer_t), test posted ones: what a
 *                transport implements, and what the generic sendrecv and
 *                the router call.
 *
 * Who may call what: a transport is one thread's (in tcoll the engine
 * thread's; in the unit tests each rank thread's own); nothing here is
 * thread-safe. The algorithms call only the blocking level. The
 * non-blocking ops are called by transport.c (through the tc__xfer_*
 * helpers below) and by transports over other transports (the router); a
 * transport never waits inside post or test. Every call returns TC_OK, or
 * TC_ERR_TRANSPORT (or TC_ERR_NOMEM) with a reason in t->err.
 *
 * Ranks are numbered in the transport's group, 0..size-1: a router and its
 * children number the same group the same way.
 */
#ifndef TC_TRANSPORT_TRANSPORT_H
#define TC_TRANSPORT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "tcoll.h"
#include "transport/wait.h"

typedef struct tc_transport tc_transport_t;

typedef enum { TC_XFER_SEND, TC_XFER_RECV } tc_xfer_dir_t;

/* Room for a transport's own state of one transfer (the MPI transport: its
 * requests), so that posting allocates nothing in the common case. */
#define TC_XFER_STATE_BYTES 64

/*
 * One transfer: bytes from buf to peer (a send) or from peer into buf (a
 * receive). The caller fills the first four fields (tc__xfer_send,
 * tc__xfer_recv), posts it, and tests it until done; the transfer must stay
 * where it is (not be copied or moved) and buf must stay valid from the
 * post until it is done or abandoned. Zero bytes or peer -1: nothing to do,
 * done at once (both ends compute the same sizes, so skipping is
 * symmetric). Two transfers between the same two ranks in the same
 * direction are matched in the order both ends posted them.
 */
typedef struct {
    tc_xfer_dir_t dir;
    int peer;  /* a rank of the group, or -1 */
    void *buf; /* a send only reads it */
    size_t bytes;
    int done; /* set by post (nothing to do) or by test, never cleared */
    union {   /* the transport's own, between post and done */
        max_align_t align;
        unsigned char bytes[TC_XFER_STATE_BYTES];
    } state;
} tc_xfer_t;

struct tc_transport {
    int rank;
    int size;
    /* Whether this transport can move data to and from peer (a rank of the
     * group; 0 for anything else). Fixed from open to close. */
    int (*reaches)(tc_transport_t *t, int peer);
    /* Starts x (not done, bytes > 0, peer reached). TC_OK: x is posted (and
     * may already be done); anything else: x is not posted, and the caller
     * neither tests nor abandons it (what it started underneath is left
     * there, as after a failed test). */
    tc_status_t (*post)(tc_transport_t *t, tc_xfer_t *x);
    /* Progresses the n transfers of xs, all posted on t, and sets done on
     * those that completed; skips those already done. Never waits. An
     * error leaves the ones not done posted (the caller abandons them). */
    tc_status_t (*test)(tc_transport_t *t, tc_xfer_t *const *xs, int n);
    /* The caller gives up on posted x, not done (a failure or a timeout):
     * frees what post allocated for it without waiting for anything. The
     * transfer may stay in flight underneath (the peer may be gone), so
     * after a failure nothing is reused. NULL: nothing to free. */
    void (*abandon)(tc_transport_t *t, tc_xfer_t *x);
    /* Frees what the transport's open set up (the MPI transport: its
     * communicator); no transfer may be posted. Call through
     * tc__transport_close. */
    void (*close)(tc_transport_t *t);
    /* The algorithms' blocking exchange: tc__transport_sendrecv for every
     * transport (a test harness may wrap it). Sends sbytes from sbuf to rank
     * dst while receiving rbytes into rbuf from rank src; dst or src may be
     * -1 to skip that side, and zero byte counts skip too. */
    tc_status_t (*sendrecv)(tc_transport_t *t, const void *sbuf, size_t sbytes, int dst, void *rbuf,
                            size_t rbytes, int src);
    /* How sendrecv waits: back-off, interrupt hook, lost-peer timeout
     * (wait.h). Open sets back-off only; the owner sets the hooks. */
    tc_wait_policy_t wait;
    void *impl;    /* the implementation's state */
    char err[256]; /* reason for the last error */
};

/* For an implementation's open: fills the generic part of t for a group of
 * size ranks (rank, the generic sendrecv, a wait policy that backs off with
 * spin polls then sleeps up to backoff_max_us, and no hooks) and clears the
 * rest; the open then sets its ops and impl. */
void tc__transport_init(tc_transport_t *t, int rank, int size, uint32_t spin,
                        uint32_t backoff_max_us);

/* The generic blocking exchange (see sendrecv above): posts the send, then
 * the receive, and waits for both under t->wait; on a timeout the text in
 * t->err names the peer still pending (the receive's first). */
tc_status_t tc__transport_sendrecv(tc_transport_t *t, const void *sbuf, size_t sbytes, int dst,
                                   void *rbuf, size_t rbytes, int src);

/* Closes t if it is open (its close is set) and marks it closed: a second
 * call, or a call on a zeroed transport that was never opened, does
 * nothing. */
void tc__transport_close(tc_transport_t *t);

/* Fills x as a send of bytes from buf to dst, or a receive into buf from
 * src, not yet posted. */
void tc__xfer_send(tc_xfer_t *x, const void *buf, size_t bytes, int dst);
void tc__xfer_recv(tc_xfer_t *x, void *buf, size_t bytes, int src);

/* Posts x on t: done at once when there is nothing to do, otherwise
 * t->post. On an error x is not posted. */
tc_status_t tc__xfer_post(tc_transport_t *t, tc_xfer_t *x);

/* Gives up on x, posted on t with TC_OK: t->abandon when x is not done.
 * Never call it on a transfer whose post failed. */
void tc__xfer_abandon(tc_transport_t *t, tc_xfer_t *x);

static inline tc_status_t tc__send(tc_transport_t *t, const void *buf, size_t bytes, int dst)
{
    return t->sendrecv(t, buf, bytes, dst, NULL, 0, -1);
}

static inline tc_status_t tc__recv(tc_transport_t *t, void *buf, size_t bytes, int src)
{
    return t->sendrecv(t, NULL, 0, -1, buf, bytes, src);
}

#endif
