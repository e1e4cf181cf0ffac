/*
 * wire.h - the control messages between engine threads, and their codec.
 *
 * Workers (every rank) tell the coordinator (rank 0) which tensors they have
 * submitted for the first time; every rank then takes part in negotiation
 * cycles, each an exchange in rounds (recursive doubling), in which every
 * CYCLE message is one rank's part of one round: its group's contribution to
 * the cycle. The format is ours, compact and self-delimiting; the decoder must
 * reject any malformed input (truncated, trailing bytes, out-of-range values,
 * embedded NUL in a name, ids out of order, counts that cannot fit) with a
 * message and never read out of bounds. Nothing here knows MPI.
 *
 * Encoding (integers are LEB128 varints unless noted "u8"; signed values are
 * zigzag-encoded varints; a varint longer than 10 bytes or above 2^64-1 is
 * rejected):
 *
 *   message   := magic:u8(0x7C) version:u8(6) type:u8 flags:u8 count entry{count}
 *                [cycle] [terminate]
 *   type      := 1 REQUESTS (worker -> coordinator: first-time submissions),
 *                2 CYCLE (one rank's part of an exchange round of a negotiation cycle:
 *                  entries are the responses rank 0 decided (only in messages from the
 *                  group that holds rank 0); the cycle record after them says what the
 *                  sender's group has waiting everywhere (ready), somewhere (some),
 *                  found stale, and holds the group's partial results of small
 *                  allreduces (eager)),
 *                3 BYE (worker -> coordinator, last message of a rank; count must be 0;
 *                  with TERMINATE, sent to every rank: an abort, saying why the sender stopped)
 *                (any other type is rejected; version 3's type 4, UP, no longer exists;
 *                docs/negotiation.md says who sends which, when, under which tag)
 *   flags     := bit 0 SHUTDOWN  (REQUESTS: this rank asks for shutdown)
 *                bit 2 SPREAD    (REQUESTS used as a liveness probe: pass it on)
 *                bit 3 SEQ       (REQUESTS: a seq varint follows the entries: how many
 *                                 negotiation cycles the sender had completed)
 *                bit 1 TERMINATE (CYCLE: a terminate record follows the cycle record;
 *                                 BYE: a terminate record follows the header)
 *                other bits must be 0; a flag that does not fit the type is rejected
 *   request   := kind:u8 dtype:u8 op:u8 root:zigzag ndim:u8 shape{ndim} name extras:u8
 *                [prescale:f64 postscale:f64] [group_size group_index group_key:name]
 *                [pset] [nranks rank{nranks}]
 *                (shape values must be 0..INT64_MAX; kind/dtype/op/ndim in range;
 *                extras bit 0 SCALES: the two factors follow, IEEE 754 binary64
 *                little-endian, both finite, not both 1; bit 1 GROUP: the request
 *                is member group_index (below group_size, 1..TC_WIRE_MAX_GROUP) of
 *                the group named group_key (its first member's name); bit 2 PSET:
 *                the process set the request belongs to, 1..TC_WIRE_MAX_PSET (left
 *                out: set 0, every rank); bit 3 RANKS: a list of ranks (a process
 *                set's members), nranks 1..TC_WIRE_MAX_RANKS, strictly ascending
 *                ranks below TC_WIRE_MAX_RANKS, the first as is, each next one as
 *                (rank - previous rank - 1); other bits must be 0)
 *   name      := len (1..TC_MAX_NAME_LEN) bytes{len} (no 0x00 byte)
 *   response  := rtype:u8 name rflags:u8 [pset] body
 *                (rflags bit 2 PSET: the name's process set follows, 1..TC_WIRE_MAX_PSET;
 *                bits 0 and 1 only with RUN; other bits must be 0)
 *                rtype 0 RUN:   ndim0 (0..TC_WIRE_MAX_RANKS) dim0{ndim0} (allgather: rows per
 *                               rank) cache_ref (0..TC_WIRE_MAX_CACHE: 0 = not cached,
 *                               k = every rank files the name under cache id k-1)
 *                               [desc] [value]
 *                               (rflags bit 0 DESC: desc := kind:u8 dtype:u8 op:u8 ndim:u8
 *                               shape{ndim}, the tensor as the submitting ranks gave it,
 *                               for ranks that run it without having submitted it (they
 *                               joined); bit 1 VALUE: value:zigzag, an int32 result that
 *                               rank 0 decided (a join: the rank that joined last))
 *                rtype 1 ERROR: status:u8 (1..TC_ERR_TIMEOUT) text
 *   cycle     := seq round cache_gen ids(ready) ids(some) ids(stale) eager
 *                (round 0..TC_WIRE_MAX_ROUND: the exchange round within cycle seq)
 *   ids       := n (0..TC_WIRE_MAX_CACHE) id{n}: strictly ascending cache ids, each below
 *                TC_WIRE_MAX_CACHE; the first is written as is, each next one as
 *                (id - previous id - 1)
 *   eager     := n (0..TC_WIRE_MAX_CACHE) (id len bytes{len}){n}: the partial results of
 *                small cached allreduces; ids strictly ascending below TC_WIRE_MAX_CACHE
 *                and written like an id list's; len 1..TC_WIRE_MAX_EAGER
 *   terminate := status:u8 (1..TC_ERR_TIMEOUT) text
 *   text      := len (0..TC_WIRE_MAX_TEXT) bytes{len} (no 0x00 byte)
 */
#ifndef TC_WIRE_WIRE_H
#define TC_WIRE_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tcoll.h"

#define TC_WIRE_MAGIC 0x7C
#define TC_WIRE_VERSION 6
#define TC_WIRE_MAX_TEXT 2048
#define TC_WIRE_MAX_RANKS (1 << 24)
#define TC_WIRE_MAX_CACHE (1u << 20) /* cache ids are 0..TC_WIRE_MAX_CACHE-1 */
#define TC_WIRE_MAX_EAGER (1u << 16) /* bytes of one eager input */
#define TC_WIRE_MAX_ROUND 64         /* a CYCLE's round is 0..TC_WIRE_MAX_ROUND */
#define TC_WIRE_MAX_GROUP (1u << 16) /* members of one grouped submission */
#define TC_WIRE_MAX_PSET (1u << 24)  /* process set ids are 0..TC_WIRE_MAX_PSET */

/*
 * The collective kinds: one list gives the kind byte of a request (its
 * position: append only, it is the wire format) and the kind's name in both
 * spellings. The codec needs only the range; everything else about a kind is
 * its descriptor (kind/kind.h), whose table is built from this list.
 */
#define TC_KIND_MAP(X)                                                                             \
    X(ALLREDUCE, allreduce)                                                                        \
    X(ALLGATHER, allgather)                                                                        \
    X(BROADCAST, broadcast)                                                                        \
    X(BARRIER, barrier)                                                                            \
    X(REDUCESCATTER, reducescatter)                                                                \
    X(ALLTOALL, alltoall)                                                                          \
    X(JOIN, join)                                                                                  \
    X(PROCESS_SET_ADD, process_set_add)                                                            \
    X(PROCESS_SET_REMOVE, process_set_remove)

typedef enum {
#define TC_KIND_ENUM_(upper, lower) TC_KIND_##upper,
    TC_KIND_MAP(TC_KIND_ENUM_)
#undef TC_KIND_ENUM_
} tc_kind_t;

enum {
#define TC_KIND_ONE_(upper, lower) +1
    TC_KIND_COUNT = 0 TC_KIND_MAP(TC_KIND_ONE_)
#undef TC_KIND_ONE_
};

const char *tc__kind_name(int kind); /* "allreduce", ... or "?" */

typedef enum {
    TC_WIRE_REQUESTS = 1,
    TC_WIRE_CYCLE = 2, /* one rank's part of an exchange round of a negotiation cycle */
    TC_WIRE_BYE = 3
} tc_wire_type_t;
#define TC_WIRE_F_SHUTDOWN 0x1u
#define TC_WIRE_F_TERMINATE 0x2u
#define TC_WIRE_F_SPREAD 0x4u
#define TC_WIRE_F_SEQ 0x8u

typedef struct {
    const char *name; /* not NUL-terminated on decode: use name_len */
    uint32_t name_len;
    uint8_t kind;  /* tc_kind_t */
    uint8_t dtype; /* tc_dtype_t */
    uint8_t op;    /* tc_op_t */
    uint8_t ndim;
    int32_t root;
    int64_t shape[TC_MAX_DIMS];
    /* Scaling factors (tcoll.h, tc_opts_t): scaled 0 means both are 1 and
     * the fields are ignored, so a zeroed request has none. */
    uint8_t scaled;
    double prescale, postscale;
    /* A grouped submission (tc_grouped_*): member group_index of group_size,
     * the group named by its first member's name; group_size 0: not grouped. */
    uint32_t group_size, group_index;
    const char *group_key; /* not NUL-terminated on decode: use group_key_len */
    uint32_t group_key_len;
    uint32_t pset;        /* the process set (0: every rank) */
    uint32_t nranks;      /* a list of ranks (a process set's members), or 0 */
    const int32_t *ranks; /* nranks values, strictly ascending */
    uint8_t memory;       /* where the tensor lives: TC_WIRE_MEM_* */
} tc_wire_request_t;

/* tc_wire_request_t.memory: which memory a rank's tensor is in. Ranks that
 * disagree fail the tensor like any other mismatch. */
#define TC_WIRE_MEM_HOST 0u
#define TC_WIRE_MEM_CUDA 1u

/* The key a name has in process set pset, in tables that hold names of
 * several sets: the name itself in set 0; otherwise the name, a 0x00 byte
 * (which no name contains) and the set's id as 4 bytes. buf has room for
 * TC_WIRE_KEY_MAX bytes; returns the key's length. */
#define TC_WIRE_KEY_MAX (TC_MAX_NAME_LEN + 5)
static inline size_t tc__wire_key(char *buf, const char *name, uint32_t len, uint32_t pset)
{
    memcpy(buf, name, len);
    if (pset == 0) {
        return len;
    }
    buf[len] = '\0';
    buf[len + 1] = (char)(pset & 0xFF);
    buf[len + 2] = (char)((pset >> 8) & 0xFF);
    buf[len + 3] = (char)((pset >> 16) & 0xFF);
    buf[len + 4] = (char)((pset >> 24) & 0xFF);
    return (size_t)len + 5;
}

/* Whether two requests are grouped alike: neither, or the same member of
 * the same group. */
static inline int tc__wire_groups_equal(const tc_wire_request_t *a, const tc_wire_request_t *b)
{
    return a->group_size == b->group_size &&
           (a->group_size == 0 ||
            (a->group_index == b->group_index && a->group_key_len == b->group_key_len &&
             memcmp(a->group_key, b->group_key, a->group_key_len) == 0));
}

/* Whether two requests scale alike: neither does, or both with the same
 * factors, bit for bit (-0.0 is not 0.0: it flips signs of zeros). */
static inline int tc__wire_scales_equal(const tc_wire_request_t *a, const tc_wire_request_t *b)
{
    double fa[2] = {1.0, 1.0}, fb[2] = {1.0, 1.0};

    if (a->scaled) {
        fa[0] = a->prescale;
        fa[1] = a->postscale;
    }
    if (b->scaled) {
        fb[0] = b->prescale;
        fb[1] = b->postscale;
    }
    return memcmp(fa, fb, sizeof(fa)) == 0;
}

typedef enum { TC_WIRE_RUN = 0, TC_WIRE_ERROR = 1 } tc_wire_rtype_t;

/* A tensor as the ranks that submitted it gave it, for a rank that runs it
 * without having submitted it (it joined: tc_join). */
typedef struct {
    uint8_t kind, dtype, op, ndim;
    int64_t shape[TC_MAX_DIMS];
} tc_wire_desc_t;

typedef struct {
    uint8_t rtype; /* tc_wire_rtype_t */
    const char *name;
    uint32_t name_len;
    uint32_t pset; /* the name's process set (0: every rank) */
    /* RUN */
    uint32_t ndim0;
    const int64_t *dim0; /* ndim0 values */
    uint32_t cache_ref;  /* 0, or 1 + the cache id every rank files this name under */
    uint8_t has_desc;    /* desc is set */
    tc_wire_desc_t desc;
    uint8_t has_value; /* value is set */
    int32_t value;
    /* ERROR */
    uint8_t status;
    const char *text; /* not NUL-terminated on decode: use text_len */
    uint32_t text_len;
} tc_wire_response_t;

/* One eager input: len bytes of the tensor filed under id. */
typedef struct {
    uint32_t id;
    uint32_t len;
    const void *data;
} tc_wire_eager_t;

typedef struct {
    uint8_t type;  /* tc_wire_type_t */
    uint8_t flags; /* TC_WIRE_F_* */
    uint32_t count;
    tc_wire_request_t *reqs;   /* type REQUESTS: count entries */
    tc_wire_response_t *resps; /* type CYCLE: count entries */
    /* type CYCLE: the cycle record (the encoder refuses round and some on
     * another type, and ignores the other fields there) */
    uint64_t seq;                 /* the cycle's number, from 0 (REQUESTS with SEQ: see wire.h) */
    uint32_t round;               /* the exchange round within the cycle, 0..TC_WIRE_MAX_ROUND */
    uint64_t cache_gen;           /* how many cache entries the sender has filed and dropped */
    uint32_t nready;              /* cached ids every rank of the sender's group has waiting */
    const uint32_t *ready;        /* nready ids, strictly ascending */
    uint32_t nsome;               /* cached ids some rank of the sender's group has waiting */
    const uint32_t *some;         /* nsome ids, strictly ascending */
    uint32_t nstale;              /* cached ids the sender's group found stale (other parameters) */
    const uint32_t *stale;        /* nstale ids, strictly ascending */
    uint32_t neager;              /* the group's partial results, for ready ids */
    const tc_wire_eager_t *eager; /* neager entries, ids strictly ascending */
    /* present when flags & TC_WIRE_F_TERMINATE */
    uint8_t term_status;
    const char *term_text;
    uint32_t term_text_len;
    /* decoder-owned storage; NULL for a message built by hand */
    void *owned;
} tc_wire_msg_t;

/* A growable byte buffer for encoding. */
typedef struct {
    uint8_t *data;
    size_t len, cap;
} tc_wire_buf_t;

void tc__wire_buf_free(tc_wire_buf_t *buf);

/* The largest buffer kept for the next message by tc__wire_buf_reset: a
 * rare bigger one is freed after use. Reusing buffers matters: allocating
 * and freeing a cycle's messages each time made glibc give the heap's top
 * back to the kernel and fault it in again, which cost more than the
 * messages once eager payloads ride in them. */
#define TC_WIRE_BUF_KEEP_BYTES ((size_t)1 << 20)

/* Empties buf (len 0) for the next message, keeping its memory unless it is
 * larger than TC_WIRE_BUF_KEEP_BYTES. */
void tc__wire_buf_reset(tc_wire_buf_t *buf);

/* Makes room for n more bytes after buf's len. TC_ERR_NOMEM. */
tc_status_t tc__wire_buf_reserve(tc_wire_buf_t *buf, size_t n);

/* Appends the encoding of msg to buf. TC_ERR_NOMEM, or TC_ERR_ARG if msg holds
 * a value the format cannot carry (the same checks the decoder makes). */
tc_status_t tc__wire_encode(const tc_wire_msg_t *msg, tc_wire_buf_t *buf);

/* Decodes len bytes. On success *msg_p holds pointers into storage it owns
 * (release with tc__wire_msg_free), never into data. On failure returns
 * TC_ERR_TRANSPORT (malformed) or TC_ERR_NOMEM, writes a one-line reason into
 * err (errlen > 0) and leaves *msg_p untouched. */
tc_status_t tc__wire_decode(const void *data, size_t len, tc_wire_msg_t *msg_p, char *err,
                            size_t errlen);

/* Frees what tc__wire_decode allocated; safe on a zeroed struct. */
void tc__wire_msg_free(tc_wire_msg_t *msg);

#endif
