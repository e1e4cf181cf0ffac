/*
 * transport_shm.c - point-to-point transfers between the ranks of one node
 * through the segment's mailboxes (transport_shm.h).
 *
 * One mailbox per ordered pair (sender, receiver) of local ranks: head
 * counts the cells the sender has filled, tail those the receiver has
 * emptied; cell k of the stream is cell k % TC_SHM_P2P_CELLS. The sender
 * fills a cell only when head - tail < TC_SHM_P2P_CELLS.
 *
 * Memory order, per mailbox:
 *   - the sender writes a cell (header and data), then stores head + 1 with
 *     release; the receiver loads head with acquire before it reads the
 *     cell: it sees the whole cell;
 *   - the receiver reads a cell (for a direct message: reads the sender's
 *     buffer with process_vm_readv), then stores tail + 1 with release; the
 *     sender loads tail with acquire before it writes that cell again, and
 *     before it lets a direct message's buffer go: the receiver's reads
 *     happen before the sender's later writes.
 *
 * Posted transfers wait in a queue per peer and direction, in post order
 * (the order in which transfers between two ranks match); every test
 * progresses every queue, whatever transfers it was handed, so an earlier
 * transfer never waits behind a later one. When nothing moves, the peers
 * with transfers pending are checked about every millisecond: a process
 * that is gone is reported lost, but only after a grace time (from when it
 * was first seen gone) in which test reports nothing, so that the abort of
 * a rank that failed first (and then exited) can reach the wait policy's
 * interrupt hook and win (its reason is the real one).
 */
#define _GNU_SOURCE
#include "transport/transport_shm.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_NS 1000000ull   /* how often an idle test looks for gone peers */
#define GRACE_NS 200000000ull /* how long a gone peer's abort may take to arrive */

enum { CELL_EAGER = 1, CELL_DIRECT = 2 };

/* A cell's header (at most TC_SHM_CELL_HDR bytes); its data follows. */
typedef struct {
    uint64_t total; /* the message's bytes */
    uint64_t off;   /* eager: where this piece goes in the message */
    uint64_t addr;  /* direct: the message in the sender's memory */
    uint32_t len;   /* eager: bytes in this cell */
    uint32_t id;    /* the sending transport's id */
    uint32_t kind;  /* CELL_EAGER or CELL_DIRECT */
} cell_hdr_t;

_Static_assert(sizeof(cell_hdr_t) <= TC_SHM_CELL_HDR, "a cell header fits its room");

/* A transfer's state while posted (in tc_xfer_t.state). */
typedef struct {
    tc_xfer_t *next; /* the next in its queue */
    size_t off;      /* bytes moved so far */
    uint64_t cell;   /* a direct send: the cell holding its address */
    int direct;      /* a direct send whose cell is filled */
} xstate_t;

_Static_assert(sizeof(xstate_t) <= TC_XFER_STATE_BYTES, "the state fits the transfer");

static xstate_t *xs_of(tc_xfer_t *x)
{
    return (xstate_t *)(void *)x->state.bytes;
}

static int name_of(const tc_transport_t *t, int peer)
{
    return t->wait.rank_of != NULL ? t->wait.rank_of(t->wait.arg, peer) : peer;
}

static tc_status_t fail(tc_transport_t *t, const char *fmt, int peer, size_t a, size_t b)
{
    snprintf(t->err, sizeof(t->err), fmt, name_of(t, peer), a, b);
    return TC_ERR_TRANSPORT;
}

/* Takes the head of queue q (it is done). */
static void pop(tc_xfer_t **q)
{
    tc_xfer_t *x = *q;

    x->done = 1;
    *q = xs_of(x)->next;
}

/* Moves what it can of the sends queued to peer: fills free cells, and
 * completes direct sends whose cell the receiver has emptied. Returns the
 * cells filled or emptied (progress). */
static int push_sends(tc_transport_t *t, int peer)
{
    tc_transport_shm_t *s = t->impl;
    const tc_shm_seg_t *seg = s->seg;
    tc_shm_mbox_t *m = tc__shm_mbox(seg, seg->me, s->local[peer]);
    const size_t room = seg->cell_bytes - TC_SHM_CELL_HDR;
    uint64_t head = atomic_load_explicit(&m->head.v, memory_order_relaxed), tail;
    int moved = 0;

    while (s->sendq[peer] != NULL) {
        tc_xfer_t *x = s->sendq[peer];
        xstate_t *xs = xs_of(x);
        char *cell;
        cell_hdr_t *h;

        /* acquire: pairs with the receiver's release of tail (file comment) */
        tail = atomic_load_explicit(&m->tail.v, memory_order_acquire);
        if (xs->direct) {
            if (tail <= xs->cell) {
                break; /* the receiver has not read it yet */
            }
            pop(&s->sendq[peer]);
            moved++;
            continue;
        }
        if (head - tail >= TC_SHM_P2P_CELLS) {
            break; /* full */
        }
        cell = tc__shm_cell(seg, m, head);
        h = (cell_hdr_t *)(void *)cell;
        h->total = x->bytes;
        h->id = s->id;
        if (x->bytes >= s->direct_from) {
            h->kind = CELL_DIRECT;
            h->addr = (uint64_t)(uintptr_t)x->buf;
            h->off = 0;
            h->len = 0;
            xs->direct = 1;
            xs->cell = head;
        } else {
            size_t len = x->bytes - xs->off < room ? x->bytes - xs->off : room;
            h->kind = CELL_EAGER;
            h->addr = 0;
            h->off = xs->off;
            h->len = (uint32_t)len;
            memcpy(cell + TC_SHM_CELL_HDR, (const char *)x->buf + xs->off, len);
            xs->off += len;
        }
        head++;
        /* release: the cell's header and data before head (file comment) */
        atomic_store_explicit(&m->head.v, head, memory_order_release);
        moved++;
        if (!xs->direct && xs->off == x->bytes) {
            pop(&s->sendq[peer]); /* every byte is in the mailbox: the buffer is free */
        }
    }
    return moved;
}

/* Moves what has arrived from peer into the receives queued for it.
 * Returns the cells emptied, or -1 with the reason in t->err. */
static int pull_recvs(tc_transport_t *t, int peer)
{
    tc_transport_shm_t *s = t->impl;
    const tc_shm_seg_t *seg = s->seg;
    const int lp = s->local[peer];
    tc_shm_mbox_t *m = tc__shm_mbox(seg, lp, seg->me);
    uint64_t tail = atomic_load_explicit(&m->tail.v, memory_order_relaxed), head;
    int moved = 0;

    while (s->recvq[peer] != NULL) {
        tc_xfer_t *x = s->recvq[peer];
        xstate_t *xs = xs_of(x);
        const cell_hdr_t *h;
        const char *cell;

        /* acquire: pairs with the sender's release of head (file comment) */
        head = atomic_load_explicit(&m->head.v, memory_order_acquire);
        if (head == tail) {
            break;
        }
        cell = tc__shm_cell(seg, m, tail);
        h = (const cell_hdr_t *)(const void *)cell;
        if (h->id != s->id) {
            fail(t,
                 "shared-memory transport: rank %d sent a message of another process set "
                 "(id %zu, expected %zu): the ranks run collectives in different orders",
                 peer, h->id, s->id);
            return -1;
        }
        if (h->total != x->bytes) {
            fail(t,
                 "shared-memory transport: rank %d sent %zu bytes where this rank expects "
                 "%zu",
                 peer, (size_t)h->total, x->bytes);
            return -1;
        }
        if (h->kind == CELL_DIRECT) {
            if (tc__shm_peer_read(seg, lp, x->buf, h->addr, x->bytes) != 0) {
                return -2 - errno; /* the caller decides what that means */
            }
            xs->off = x->bytes;
        } else if (h->kind != CELL_EAGER || h->off != xs->off || h->len > x->bytes - xs->off ||
                   h->len > seg->cell_bytes - TC_SHM_CELL_HDR) {
            fail(t,
                 "shared-memory transport: a malformed cell from rank %d (at byte %zu of "
                 "%zu)",
                 peer, (size_t)h->off, x->bytes);
            return -1;
        } else {
            memcpy((char *)x->buf + xs->off, cell + TC_SHM_CELL_HDR, h->len);
            xs->off += h->len;
        }
        tail++;
        /* release: this cell read (and a direct message's buffer) before
         * the sender may reuse them (file comment) */
        atomic_store_explicit(&m->tail.v, tail, memory_order_release);
        moved++;
        if (xs->off == x->bytes) {
            pop(&s->recvq[peer]);
        }
    }
    return moved;
}

static int shm_reaches(tc_transport_t *t, int peer)
{
    const tc_transport_shm_t *s = t->impl;

    return peer >= 0 && peer < t->size && peer != t->rank && s->local[peer] >= 0;
}

static tc_status_t shm_post(tc_transport_t *t, tc_xfer_t *x)
{
    tc_transport_shm_t *s = t->impl;
    tc_xfer_t **q;

    if (!shm_reaches(t, x->peer)) {
        snprintf(t->err, sizeof(t->err), "shared-memory transport: rank %d is not on this node",
                 name_of(t, x->peer));
        return TC_ERR_TRANSPORT;
    }
    if (s->broken) {
        snprintf(t->err, sizeof(t->err),
                 "shared-memory transport: unusable after an abandoned "
                 "transfer");
        return TC_ERR_TRANSPORT;
    }
    memset(xs_of(x), 0, sizeof(xstate_t));
    q = x->dir == TC_XFER_SEND ? &s->sendq[x->peer] : &s->recvq[x->peer];
    while (*q != NULL) {
        q = &xs_of(*q)->next;
    }
    *q = x;
    return TC_OK;
}

/* Nothing moved: about every millisecond, is a peer with transfers pending
 * gone? Reported after GRACE_NS (see the file comment). */
static tc_status_t check_peers(tc_transport_t *t)
{
    tc_transport_shm_t *s = t->impl;
    const uint64_t now = tc__now_ns();
    int p;

    if (s->idle_since == 0) {
        s->idle_since = now;
        s->next_check = now + CHECK_NS;
        return TC_OK;
    }
    if (now < s->next_check) {
        return TC_OK;
    }
    s->next_check = now + CHECK_NS;
    for (p = 0; p < t->size; p++) {
        if ((s->sendq[p] != NULL || s->recvq[p] != NULL) &&
            tc__shm_peer_dead(s->seg, s->local[p])) {
            /* From when it was first seen gone, not from when nothing
             * moved: a peer that failed first stalls the transfers long
             * before it exits, and its abort needs the grace after that. */
            if (s->gone_since == 0) {
                s->gone_since = now;
            }
            if (now - s->gone_since < GRACE_NS) {
                return TC_OK; /* its abort, if it sent one, may still come */
            }
            snprintf(t->err, sizeof(t->err),
                     "lost rank %d: its process (pid %d) exited while "
                     "this rank %s it through shared memory",
                     name_of(t, p), (int)tc__shm_ctl(s->seg, s->local[p])->pid,
                     s->sendq[p] != NULL ? "was sending to" : "was receiving from");
            return TC_ERR_TRANSPORT;
        }
    }
    return TC_OK;
}

static tc_status_t shm_test(tc_transport_t *t, tc_xfer_t *const *xs, int n)
{
    tc_transport_shm_t *s = t->impl;
    int p, r, moved = 0;

    (void)xs;
    (void)n; /* every queue progresses (the file comment says why) */
    for (p = 0; p < t->size; p++) {
        if (s->sendq[p] != NULL) {
            moved += push_sends(t, p);
        }
        if (s->recvq[p] != NULL) {
            r = pull_recvs(t, p);
            if (r == -1) {
                return TC_ERR_TRANSPORT;
            }
            if (r < -1) {
                /* a direct read failed: the sender is gone (lost), or it
                 * failed and let its buffer go (its abort is the reason) */
                if (!tc__shm_peer_dead(s->seg, s->local[p]) && -2 - r != ESRCH) {
                    snprintf(t->err, sizeof(t->err),
                             "reading the message of rank %d through "
                             "shared memory failed: %s",
                             name_of(t, p), strerror(-2 - r));
                    if (s->idle_since == 0) {
                        s->idle_since = tc__now_ns();
                    }
                    if (tc__now_ns() - s->idle_since >= GRACE_NS) {
                        return TC_ERR_TRANSPORT;
                    }
                }
                continue; /* a gone process: check_peers reports it */
            }
            moved += r;
        }
    }
    if (moved > 0) {
        s->idle_since = 0;
        return TC_OK;
    }
    return check_peers(t);
}

static void shm_abandon(tc_transport_t *t, tc_xfer_t *x)
{
    tc_transport_shm_t *s = t->impl;
    tc_xfer_t **q = x->dir == TC_XFER_SEND ? &s->sendq[x->peer] : &s->recvq[x->peer];

    while (*q != NULL && *q != x) {
        q = &xs_of(*q)->next;
    }
    if (*q == x) {
        *q = xs_of(x)->next;
    }
    s->broken = 1;
}

static void shm_close(tc_transport_t *t)
{
    tc_transport_shm_t *s = t->impl;

    free(s->local);
    free(s->sendq);
    free(s->recvq);
    memset(s, 0, sizeof(*s));
}

tc_status_t tc__transport_shm_open(tc_transport_t *t, tc_transport_shm_t *impl,
                                   const tc_shm_seg_t *seg, int rank, int size, const int *local,
                                   uint32_t id, size_t direct_from, uint32_t spin,
                                   uint32_t backoff_max_us)
{
    int p;

    tc__transport_init(t, rank, size, spin, backoff_max_us);
    memset(impl, 0, sizeof(*impl));
    if (seg == NULL || seg->base == NULL || seg->mbox_bytes == 0 || size < 1 || rank < 0 ||
        rank >= size || local == NULL || local[rank] != seg->me) {
        snprintf(t->err, sizeof(t->err),
                 "shared-memory transport: no mailboxes, or this rank "
                 "is not the segment's");
        return TC_ERR_ARG;
    }
    for (p = 0; p < size; p++) {
        if (local[p] < -1 || local[p] >= seg->n) {
            snprintf(t->err, sizeof(t->err),
                     "shared-memory transport: rank %d has local rank "
                     "%d of %d",
                     p, local[p], seg->n);
            return TC_ERR_ARG;
        }
    }
    impl->local = malloc((size_t)size * sizeof(int));
    impl->sendq = calloc((size_t)size, sizeof(tc_xfer_t *));
    impl->recvq = calloc((size_t)size, sizeof(tc_xfer_t *));
    if (impl->local == NULL || impl->sendq == NULL || impl->recvq == NULL) {
        free(impl->local);
        free(impl->sendq);
        free(impl->recvq);
        memset(impl, 0, sizeof(*impl));
        snprintf(t->err, sizeof(t->err), "shared-memory transport: out of memory");
        return TC_ERR_NOMEM;
    }
    memcpy(impl->local, local, (size_t)size * sizeof(int));
    impl->seg = seg;
    impl->id = id;
    impl->direct_from = seg->cma ? direct_from : SIZE_MAX;
    t->impl = impl;
    t->reaches = shm_reaches;
    t->post = shm_post;
    t->test = shm_test;
    t->abandon = shm_abandon;
    t->close = shm_close;
    return TC_OK;
}
