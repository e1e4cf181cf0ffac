/*
 * tcoll_trigger.h - how a port channel's request is encoded in one 128-bit
 * trigger (tc_trigger_t, tcoll.h): header-only, for the host (C11 or C++)
 * and for CUDA device code (compiled with nvcc, every function is then
 * __host__ __device__). A trigger is pushed into a proxy's FIFO and carried
 * out by the proxy thread (tcoll_channel.h, docs/channels.md).
 *
 * Bit layout (bit 0 is the least significant bit of the word):
 *
 *   fst  bits  0..31  size            bytes to put (0 is legal: completes, moves nothing)
 *        bits 32..43  channel id      the port channel, 0..4095, in its context's proxy
 *        bits 44..46  type            TC_TRIG_PUT | TC_TRIG_SIGNAL | TC_TRIG_FLUSH, not 0
 *        bits 47..54  src_offset hi   bits 32..39 of the source offset
 *        bits 55..62  dst_offset hi   bits 32..39 of the destination offset
 *        bit  63      reserved        must be 0
 *   snd  bits  0..31  src_offset lo   bits  0..31 of the source offset (in the local memory)
 *        bits 32..63  dst_offset lo   bits  0..31 of the destination offset (in the peer's)
 *
 * So a size is below 4 GiB, an offset below 1 TiB, a channel id below 4096.
 * tc_trigger_encode refuses anything larger (returns nonzero): a field is
 * never truncated. The type bits combine: a trigger with several of them
 * does its put first, then its signal, then its flush.
 */
#ifndef TCOLL_TRIGGER_H
#define TCOLL_TRIGGER_H

#include "tcoll.h"

#if defined(__CUDACC__)
#define TC_HOST_DEVICE __host__ __device__
#else
#define TC_HOST_DEVICE
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Type bits. */
#define TC_TRIG_PUT 1u    /* copy size bytes: local src_offset -> peer's dst_offset */
#define TC_TRIG_SIGNAL 2u /* add 1 to the peer's semaphore, after every earlier put */
#define TC_TRIG_FLUSH 4u  /* complete every earlier operation; the flush counter moves */
#define TC_TRIG_TYPE_MASK 7u

/* Field widths and positions (see the table above). */
#define TC_TRIG_SIZE_BITS 32
#define TC_TRIG_CHAN_BITS 12
#define TC_TRIG_TYPE_BITS 3
#define TC_TRIG_OFFSET_BITS 40
#define TC_TRIG_OFFSET_HI_BITS (TC_TRIG_OFFSET_BITS - 32)

#define TC_TRIG_SIZE_SHIFT 0
#define TC_TRIG_CHAN_SHIFT 32
#define TC_TRIG_TYPE_SHIFT 44
#define TC_TRIG_SRC_HI_SHIFT 47
#define TC_TRIG_DST_HI_SHIFT 55
#define TC_TRIG_RESERVED_SHIFT 63
#define TC_TRIG_SRC_LO_SHIFT 0
#define TC_TRIG_DST_LO_SHIFT 32

/* Largest values (inclusive). */
#define TC_TRIG_MAX_SIZE ((uint64_t)0xffffffffu)
#define TC_TRIG_MAX_CHAN ((1u << TC_TRIG_CHAN_BITS) - 1u)
#define TC_TRIG_MAX_OFFSET ((((uint64_t)1) << TC_TRIG_OFFSET_BITS) - 1u)

/* The fields tile fst exactly (size, chan, type, src hi, dst hi, reserved). */
#if TC_TRIG_CHAN_SHIFT != TC_TRIG_SIZE_SHIFT + TC_TRIG_SIZE_BITS ||                                \
    TC_TRIG_TYPE_SHIFT != TC_TRIG_CHAN_SHIFT + TC_TRIG_CHAN_BITS ||                                \
    TC_TRIG_SRC_HI_SHIFT != TC_TRIG_TYPE_SHIFT + TC_TRIG_TYPE_BITS ||                              \
    TC_TRIG_DST_HI_SHIFT != TC_TRIG_SRC_HI_SHIFT + TC_TRIG_OFFSET_HI_BITS ||                       \
    TC_TRIG_RESERVED_SHIFT != TC_TRIG_DST_HI_SHIFT + TC_TRIG_OFFSET_HI_BITS ||                     \
    TC_TRIG_RESERVED_SHIFT != 63 || TC_TRIG_DST_LO_SHIFT != TC_TRIG_SRC_LO_SHIFT + 32
#error "tcoll_trigger.h: the trigger fields do not tile 128 bits"
#endif

/* A trigger's fields, decoded. */
typedef struct {
    uint32_t type;       /* TC_TRIG_* bits */
    uint32_t chan;       /* channel id */
    uint64_t size;       /* bytes */
    uint64_t src_offset; /* in the sender's registered memory */
    uint64_t dst_offset; /* in the peer's registered memory */
} tc_trigger_fields_t;

/* Encodes; returns 0, or 1 (and leaves *t_p alone) when a field is out of
 * range: type 0 or above TC_TRIG_TYPE_MASK, chan above TC_TRIG_MAX_CHAN,
 * size above TC_TRIG_MAX_SIZE, an offset above TC_TRIG_MAX_OFFSET. */
static inline TC_HOST_DEVICE int tc_trigger_encode(uint32_t type, uint32_t chan,
                                                   uint64_t dst_offset, uint64_t src_offset,
                                                   uint64_t size, tc_trigger_t *t_p)
{
    if (type == 0 || type > TC_TRIG_TYPE_MASK || chan > TC_TRIG_MAX_CHAN ||
        size > TC_TRIG_MAX_SIZE || src_offset > TC_TRIG_MAX_OFFSET ||
        dst_offset > TC_TRIG_MAX_OFFSET) {
        return 1;
    }
    t_p->fst = (size << TC_TRIG_SIZE_SHIFT) | ((uint64_t)chan << TC_TRIG_CHAN_SHIFT) |
               ((uint64_t)type << TC_TRIG_TYPE_SHIFT) |
               ((src_offset >> 32) << TC_TRIG_SRC_HI_SHIFT) |
               ((dst_offset >> 32) << TC_TRIG_DST_HI_SHIFT);
    t_p->snd = ((src_offset & 0xffffffffu) << TC_TRIG_SRC_LO_SHIFT) |
               ((dst_offset & 0xffffffffu) << TC_TRIG_DST_LO_SHIFT);
    return 0;
}

/* Decodes any 128 bits; returns 0, or 1 when the trigger is not one that
 * tc_trigger_encode makes (type 0 or the reserved bit set). */
static inline TC_HOST_DEVICE int tc_trigger_decode(tc_trigger_t t, tc_trigger_fields_t *f_p)
{
    const uint64_t hi_mask = (((uint64_t)1) << TC_TRIG_OFFSET_HI_BITS) - 1u;

    f_p->size = (t.fst >> TC_TRIG_SIZE_SHIFT) & 0xffffffffu;
    f_p->chan = (uint32_t)((t.fst >> TC_TRIG_CHAN_SHIFT) & TC_TRIG_MAX_CHAN);
    f_p->type = (uint32_t)((t.fst >> TC_TRIG_TYPE_SHIFT) & TC_TRIG_TYPE_MASK);
    f_p->src_offset = (((t.fst >> TC_TRIG_SRC_HI_SHIFT) & hi_mask) << 32) |
                      ((t.snd >> TC_TRIG_SRC_LO_SHIFT) & 0xffffffffu);
    f_p->dst_offset = (((t.fst >> TC_TRIG_DST_HI_SHIFT) & hi_mask) << 32) |
                      ((t.snd >> TC_TRIG_DST_LO_SHIFT) & 0xffffffffu);
    return f_p->type == 0 || (t.fst >> TC_TRIG_RESERVED_SHIFT) != 0;
}

#ifdef __cplusplus
}
#endif

#endif /* TCOLL_TRIGGER_H */
