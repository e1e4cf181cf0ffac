/*
 * shm_seg.h - the shared-memory segment of the ranks on one node.
 *
 * One segment per node, made collectively by the node's ranks (the local
 * communicator) when tcoll starts and kept until it stops: persistent,
 * pre-faulted staging slots that the shared-memory collectives
 * (coll/shm_allreduce.c) move data through, plus one control block of
 * flags per local rank. How it is made (TCOLL_SHM):
 *
 *   memfd  local rank 0 makes an anonymous memory file (memfd_create, mode
 *          0600) and the others open it through /proc/<pid>/fd/<fd>: it has
 *          no name anywhere, so nothing can ever be left in /dev/shm, not
 *          even after a SIGKILL during setup;
 *   posix  local rank 0 makes /dev/shm/tcoll-<uid>-<pid>-<128 random bits>
 *          (O_EXCL, mode 0600), the others open it, and it is unlinked as
 *          soon as every local rank has mapped it (or setup failed);
 *   auto   memfd, else posix.
 *
 * The memory is reserved at once (fallocate), so a full /dev/shm fails
 * here, with a reason, instead of with SIGBUS later; every rank then
 * touches its own slots and flags (they are NUMA-local to it). Setup either
 * succeeds on every local rank or fails on every one (the ranks agree over
 * MPI), so a node never ends up half in shared memory.
 *
 * Layout (offsets multiples of TC_SHM_LINE): a header; n control blocks of
 * three flags, each on its own cache-line pair; n staging areas of
 * nslots x slot_bytes; then the small-message boxes (exec/fast.c): per
 * name id a verdict word, and per id, rank and parity a box holding one
 * contribution; then the point-to-point mailboxes (transport_shm.c): per
 * ordered pair of local ranks a ring of TC_SHM_P2P_CELLS cells. Only the
 * engine thread touches the segment. Making
 * and unmapping it (over MPI) is declared in shm_setup.h.
 */
#ifndef TC_TRANSPORT_SHM_SEG_H
#define TC_TRANSPORT_SHM_SEG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tcoll.h"
#include "transport/shmem.h"

#define TC_SHM_LINE 128 /* two cache lines: no false sharing, even with adjacent-line prefetch */

/* A flag: a counter one rank stores and the others load. */
typedef struct {
    _Atomic uint64_t v;
    char pad[TC_SHM_LINE - sizeof(uint64_t)];
} tc_shm_flag_t;

/* One local rank's flags (see coll/shm_allreduce.c for what each counts). */
typedef struct {
    tc_shm_flag_t arrived; /* the chunk whose input is in this rank's slot */
    tc_shm_flag_t reduced; /* the chunk whose share this rank has reduced */
    tc_shm_flag_t done;    /* the chunk this rank has finished reading */
    /* the direct (single-copy) algorithms: this rank's buffers for the
     * collective its `arrived` names, stored before that flag */
    uint64_t in_addr, out_addr;
    int32_t pid; /* written once at setup */
    int32_t unused;
    /* the small-message path (exec/fast.c): this rank's joins of the global
     * set that rank 0's negotiation has taken, stored by rank 0's engine
     * (release) and read by this rank's (acquire) */
    _Atomic uint64_t joins_taken;
    /* with in_addr and out_addr: the tc_mem_alloc regions they lie in (fd
     * -1: none), so that the others can map them and read with loads
     * (transport/peer_map.h) */
    tc_shmem_ref_t in_ref, out_ref;
    char pad[TC_SHM_LINE - 4 * sizeof(uint64_t) - 2 * sizeof(tc_shmem_ref_t)];
} tc_shm_ctl_t;

/* One rank's contribution to one use of a small-message name (exec/fast.c):
 * its description, then (fits) its input at TC_SHM_BOX_DATA. seq is stored
 * last, with release. */
typedef struct {
    _Atomic uint64_t seq; /* the use (1, 2, ...) this box holds; 0: none yet */
    int32_t dtype, op;
    uint64_t count;
    int32_t ndim, fits; /* fits: the input is in the box (else a description only) */
    int64_t shape[TC_MAX_DIMS];
    double prescale, postscale;
    uint64_t epoch; /* the poster's joins submitted so far (exec/fast.c) */
} tc_shm_box_t;

#define TC_SHM_BOX_DATA ((sizeof(tc_shm_box_t) + 63) / 64 * 64)

/* What a segment is made with (the knobs). */
typedef struct {
    int mode;           /* TC_SHM_AUTO, _MEMFD or _POSIX (config.h) */
    size_t slot_bytes;  /* TCOLL_SHM_SLOT_KB */
    int nslots;         /* TCOLL_SHM_SLOTS */
    int fast_names;     /* TCOLL_SHM_FAST_NAMES (0: no small boxes) */
    size_t fast_bytes;  /* TCOLL_SHM_FAST_BYTES */
    size_t cell_bytes;  /* TCOLL_SHM_P2P_CELL_KB (0: no mailboxes) */
    int large_names;    /* TCOLL_SHM_FAST_LARGE_NAMES (0: no large boxes) */
    size_t large_bytes; /* TCOLL_SHM_FAST_LARGE_BYTES */
} tc_shm_params_t;

/* The large boxes hold at most this many bytes divided by the local ranks
 * (each rank reduces every rank's input on the small-message path). */
#define TC_SHM_FAST_WORK ((size_t)512 << 10)

#define TC_SHM_P2P_CELLS 4 /* cells in one mailbox */
#define TC_SHM_CELL_HDR 64 /* a cell's header (transport_shm.c), before its data */
/* TCOLL_SHM_P2P_CELL_KB is a most: on a node with many ranks the cells
 * shrink so that all mailboxes fit in this (cells of at least the minimum) */
#define TC_SHM_P2P_MAX_BYTES ((size_t)64 << 20)
#define TC_SHM_P2P_MIN_CELL ((size_t)1024)

/* The head of one mailbox (transport_shm.c): the sender counts the cells
 * it has filled, the receiver those it has emptied. */
typedef struct {
    tc_shm_flag_t head;
    tc_shm_flag_t tail;
} tc_shm_mbox_t;

typedef struct {
    char *base;        /* the mapping; NULL when there is no segment */
    size_t bytes;      /* its length */
    int n;             /* local ranks */
    int me;            /* this rank's index among them */
    int nslots;        /* staging slots per rank */
    size_t slot_bytes; /* bytes per slot */
    size_t ctl_off, stage_off;
    int fast_names;                        /* small boxes (per rank and parity) */
    size_t fast_bytes;                     /* input bytes a small box holds */
    size_t box_bytes;                      /* one small box, header and data */
    int large_names;                       /* large boxes, after the small ones */
    size_t large_bytes;                    /* input bytes a large box holds */
    size_t lbox_bytes;                     /* one large box, header and data */
    size_t verdict_off, box_off, lbox_off; /* a verdict per box of either size */
    size_t cell_bytes;                     /* one mailbox cell, header and data; 0: no mailboxes */
    size_t mbox_off, mbox_bytes;
    int pids_visible;   /* every peer's pid exists in this pid namespace */
    int cma;            /* every local rank can read the others' memory with
                         * process_vm_readv (checked at setup; a container's
                         * seccomp policy or ptrace rules may forbid it) */
    const char *method; /* "memfd" or "posix" */
} tc_shm_seg_t;

static inline tc_shm_ctl_t *tc__shm_ctl(const tc_shm_seg_t *s, int r)
{
    return (tc_shm_ctl_t *)(s->base + s->ctl_off) + r;
}

/* Slot `slot` of local rank r's staging area. */
static inline char *tc__shm_slot(const tc_shm_seg_t *s, int r, int slot)
{
    return s->base + s->stage_off + ((size_t)r * (size_t)s->nslots + (size_t)slot) * s->slot_bytes;
}

#define TC_SHM_VERDICT_STRIDE 512 /* the word, then a note of the rest */

/* The verdict word of small-message id k (exec/fast.c). */
static inline _Atomic uint64_t *tc__shm_verdict(const tc_shm_seg_t *s, int k)
{
    return (_Atomic uint64_t *)(s->base + s->verdict_off + (size_t)k * TC_SHM_VERDICT_STRIDE);
}

/* The text written with id k's verdict (an abort's explanation). */
static inline char *tc__shm_verdict_note(const tc_shm_seg_t *s, int k, size_t *len_p)
{
    *len_p = TC_SHM_VERDICT_STRIDE - TC_SHM_LINE;
    return s->base + s->verdict_off + (size_t)k * TC_SHM_VERDICT_STRIDE + TC_SHM_LINE;
}

/* Local rank r's box k and parity b (0 or 1): boxes 0 .. fast_names - 1
 * are small, the large_names after them large. exec/fast.c gives each id
 * its box; the verdicts are per id, one for each box of either size. */
static inline tc_shm_box_t *tc__shm_box(const tc_shm_seg_t *s, int k, int r, int b)
{
    int large = k >= s->fast_names;
    size_t i = (size_t)(large ? k - s->fast_names : k);
    size_t slot = (i * (size_t)s->n + (size_t)r) * 2 + (size_t)b;

    return (tc_shm_box_t *)(s->base + (large ? s->lbox_off + slot * s->lbox_bytes
                                             : s->box_off + slot * s->box_bytes));
}

/* The input bytes box k holds. */
static inline size_t tc__shm_box_cap(const tc_shm_seg_t *s, int k)
{
    return k < s->fast_names ? s->fast_bytes : s->large_bytes;
}

/* The mailbox from local rank `from` to local rank `to`: its counters,
 * then TC_SHM_P2P_CELLS cells of cell_bytes. */
static inline tc_shm_mbox_t *tc__shm_mbox(const tc_shm_seg_t *s, int from, int to)
{
    return (tc_shm_mbox_t *)(s->base + s->mbox_off +
                             ((size_t)from * (size_t)s->n + (size_t)to) * s->mbox_bytes);
}

static inline char *tc__shm_cell(const tc_shm_seg_t *s, tc_shm_mbox_t *m, uint64_t k)
{
    return (char *)(m + 1) + (size_t)(k % TC_SHM_P2P_CELLS) * s->cell_bytes;
}

/* Fills the offsets and sizes of seg for n local ranks and parameters p and
 * returns the segment's length (0: too large for a size_t). base, me and
 * the rest are the caller's. No MPI: the unit tests lay out a segment of
 * their own in memory with it. */
size_t tc__shm_seg_layout(int n, const tc_shm_params_t *p, tc_shm_seg_t *seg);

/* Reads bytes at address `from` in local rank r's process into to
 * (process_vm_readv, looping over partial reads). 0, or -1 with errno set
 * (ESRCH: the process is gone). */
int tc__shm_peer_read(const tc_shm_seg_t *s, int r, void *to, uint64_t from, size_t bytes);

/* Whether local rank r's process is gone (checked with kill(pid, 0); 0 when
 * pids cannot be seen from here). */
int tc__shm_peer_dead(const tc_shm_seg_t *s, int r);

#endif
