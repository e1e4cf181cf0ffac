/*
 * wire_malformed.h - hand-made messages for the codec's unit tests
 * (test_wire_reject*.c): each row of a table is a list of pieces, the bytes
 * of one message, and whether the decoder must accept it or refuse it with
 * a reason. check_malformed() (wire_codec_testutil.c) runs a table.
 */
#ifndef TC_TEST_WIRE_MALFORMED_H
#define TC_TEST_WIRE_MALFORMED_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"
#include "wire/wire.h"

/*
 * A hand-made message is a list of pieces, written out in order; a table of
 * malformed_t rows gives, for each, whether the decoder must accept it or
 * reject it and a piece of the reason it must give. Most rules have a row just inside the
 * limit (accepted) next to the rows just outside it. Byte positions in the
 * reasons count from 0.
 */
typedef enum {
    P_END = 0,  /* the end of the list */
    P_U8,       /* one byte: v (EACH: the row's byte value, see malformed_t.each) */
    P_VAR,      /* v as a varint */
    P_RAW,      /* the n bytes of s, as they are */
    P_STR,      /* a name or text: n as a varint, then the n bytes of s */
    P_FILL,     /* a name or text of v bytes, each n: v as a varint, then the bytes */
    P_REP,      /* v bytes, each n, with no length before them */
    P_VARS,     /* n varints, each v (a request's shape) */
    P_COUNTING, /* v varints: 0, 1, ..., v-1 */
} piece_op_t;

typedef struct {
    piece_op_t op;
    uint64_t v;
    const char *s;
    size_t n;
} piece_t;

#define EACH 0x100u /* in U8(): the row's byte value */

#define END                                                                                        \
    {                                                                                              \
        P_END, 0, NULL, 0                                                                          \
    }
#define U8(x)                                                                                      \
    {                                                                                              \
        P_U8, (x), NULL, 0                                                                         \
    }
#define VAR(x)                                                                                     \
    {                                                                                              \
        P_VAR, (x), NULL, 0                                                                        \
    }
#define RAW(lit)                                                                                   \
    {                                                                                              \
        P_RAW, 0, (lit), sizeof(lit) - 1                                                           \
    }
#define STR(lit)                                                                                   \
    {                                                                                              \
        P_STR, 0, (lit), sizeof(lit) - 1                                                           \
    }
#define FILL(count, c)                                                                             \
    {                                                                                              \
        P_FILL, (count), NULL, (c)                                                                 \
    }
#define REP(count, c)                                                                              \
    {                                                                                              \
        P_REP, (count), NULL, (c)                                                                  \
    }
#define VARS(count, x)                                                                             \
    {                                                                                              \
        P_VARS, (x), NULL, (count)                                                                 \
    }
#define COUNTING(count)                                                                            \
    {                                                                                              \
        P_COUNTING, (count), NULL, 0                                                               \
    }

/* magic, version, type, flags; and with the entry count */
#define HEAD(type, flags) U8(TC_WIRE_MAGIC), U8(TC_WIRE_VERSION), U8(type), U8(flags)
#define HDR(type, flags, count) HEAD(type, flags), VAR(count)
/* An empty cycle record (seq 0, round 0, cache_gen 0, no ready, some or
 * stale ids, no eager inputs), and the same up to its eager record (the
 * eager count is then byte 11 of a CYCLE with no responses). */
#define CYCLE0 RAW("\0\0\0\0\0\0\0")
#define CYCLE_IDS0 RAW("\0\0\0\0\0\0")
/* seq 0, round 0, cache_gen 0: the cycle record up to its id lists (the ready
 * count is then byte 8 of a CYCLE with no responses) */
#define CYCLE_HEAD0 RAW("\0\0\0")
/* Scaling factors as written: IEEE 754 binary64, little-endian. */
#define F64_1 "\0\0\0\0\0\0\xF0\x3F"
#define F64_NEG1 "\0\0\0\0\0\0\xF0\xBF"
#define F64_NEG0 "\0\0\0\0\0\0\0\x80"
#define F64_2 "\0\0\0\0\0\0\0\x40"
#define F64_HALF "\0\0\0\0\0\0\xE0\x3F"
#define F64_INF "\0\0\0\0\0\0\xF0\x7F"
#define F64_NAN "\0\0\0\0\0\0\xF8\x7F"
/* A request with every one of its ndim shape values dim. */
#define REQ(kind, dtype, op, zz_root, ndim, dim, name)                                             \
    U8(kind), U8(dtype), U8(op), VAR(zz_root), U8(ndim), VARS(ndim, dim), STR(name), U8(0)
/* The same up to its name: the extras byte (and its factors) follow. */
#define REQ_NOX(kind, dtype, op, zz_root, ndim, dim, name)                                         \
    U8(kind), U8(dtype), U8(op), VAR(zz_root), U8(ndim), VARS(ndim, dim), STR(name)
/* One eager input as written: the id (or distance), then len bytes of c. */
#define EAGER(id_or_delta, len, c) VAR(id_or_delta), FILL(len, c)

/* Id lists: after id prev, a distance d gives prev + 1 + d; the same two ids
 * as the ready, the some and the stale list (the other two empty), after seq,
 * round and cache_gen 0. */
#define READY_PAIR(prev, delta)                                                                    \
    HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(2), VAR(prev), VAR(delta), U8(0), U8(0), U8(0)
#define SOME_PAIR(prev, delta)                                                                     \
    HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(0), U8(2), VAR(prev), VAR(delta), U8(0), U8(0)
#define STALE_PAIR(prev, delta)                                                                    \
    HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_HEAD0, U8(0), U8(0), U8(2), VAR(prev), VAR(delta), U8(0)
/* The same for two eager inputs. */
#define EAGER_PAIR(prev, delta)                                                                    \
    HDR(TC_WIRE_CYCLE, 0, 0), CYCLE_IDS0, U8(2), EAGER(prev, 1, 0x01), EAGER(delta, 2, 0x02)

#define MAX_PIECES 24

typedef struct {
    int line;           /* of the row, for a failure */
    tc_status_t status; /* TC_OK (accepted) or what the decoder must return */
    const char *reason; /* rejected: a piece of the reason (NULL: any reason) */
    int each;           /* EACH_OUTSIDE or EACH_BEYOND: the row stands for many byte values */
    unsigned each_lo, each_hi; /* the range outside which; for EACH_BEYOND each_lo is the mask */
    void (*then)(const tc_wire_msg_t *m); /* accepted: more checks of the decoded message */
    piece_t bytes[MAX_PIECES];
} malformed_t;

enum {
    EACH_OUTSIDE = 1, /* every byte value outside each_lo..each_hi */
    EACH_BEYOND,      /* every byte value with a bit outside the mask each_lo */
};

#define REJECT(reason, ...)                                                                        \
    {                                                                                              \
        __LINE__, TC_ERR_TRANSPORT, (reason), 0, 0, 0, NULL,                                       \
        {                                                                                          \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }
#define REJECT_EACH_BUT(lo, hi, reason, ...)                                                       \
    {                                                                                              \
        __LINE__, TC_ERR_TRANSPORT, (reason), EACH_OUTSIDE, (lo), (hi), NULL,                      \
        {                                                                                          \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }
#define REJECT_EACH_BEYOND(mask, reason, ...)                                                      \
    {                                                                                              \
        __LINE__, TC_ERR_TRANSPORT, (reason), EACH_BEYOND, (mask), 0, NULL,                        \
        {                                                                                          \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }
#define ACCEPT(...)                                                                                \
    {                                                                                              \
        __LINE__, TC_OK, NULL, 0, 0, 0, NULL,                                                      \
        {                                                                                          \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }
#define ACCEPT_THEN(then, ...)                                                                     \
    {                                                                                              \
        __LINE__, TC_OK, NULL, 0, 0, 0, (then),                                                    \
        {                                                                                          \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }
/* A distance accepted, and one refused, in each id list. */
#define IDS_OK(prev, delta)                                                                        \
    ACCEPT(READY_PAIR(prev, delta)), ACCEPT(SOME_PAIR(prev, delta)), ACCEPT(STALE_PAIR(prev, delta))
#define IDS_REFUSED(prev, delta)                                                                   \
    REJECT("ready id 1: delta ", READY_PAIR(prev, delta)),                                         \
        REJECT("some id 1: delta ", SOME_PAIR(prev, delta)),                                       \
        REJECT("stale id 1: delta ", STALE_PAIR(prev, delta))

/* Every row: accepted ones must decode (and re-encode) and pass their then
 * check, the others must be refused with their status and reason. */
void check_malformed(const malformed_t *rows, size_t n);

#endif
