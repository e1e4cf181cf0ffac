/*
 * test_stage_pipe.c - the chunked staging schedule (src/exec/stage_pipe.c)
 * over a copier that behaves like two copy streams of a GPU: each copy is
 * queued in its direction's order and carried out only when a wait needs
 * it (a wait for a slot completes every copy of that direction queued up to
 * the slot's last one), or at once in the "eager" mode. A copy reads its
 * source when it is carried out, as a DMA engine does, so a slot refilled
 * before its copy back ran, or a chunk read before its copy in, gives wrong
 * bytes at the destination.
 *
 * Checked: every byte of the result for sizes of 0, under one chunk, whole
 * chunks and a remainder, and many more chunks than slots; in place; a
 * broadcast's root (no copy back) and receivers (no copy in); that copies
 * in run TC_STAGE_AHEAD chunks ahead of the host and each copy back is
 * queued before the next chunk runs (the overlap); that the run returns
 * with no copy pending, on success and when a chunk, a copy or a wait
 * fails at any point, with the first failure's status and reason.
 */
#define _GNU_SOURCE
#include "check.h"
#include "exec/stage_pipe.h"
#include "tc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAXQ = 4096 };

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
    int slot;
} job_t;

typedef struct {
    int eager;                 /* carry copies out when queued */
    job_t q[2][MAXQ];          /* per direction: queued, in order */
    size_t head[2], tail[2];   /* [head, tail) not yet carried out */
    size_t queued[2];          /* copies queued so far, per direction */
    long fail_copy, fail_wait; /* the n-th copy / wait fails (0-based; -1: none) */
    long copies, waits;
} fake_t;

static void carry(fake_t *f, int d, size_t upto)
{
    while (f->head[d] < upto) {
        job_t *j = &f->q[d][f->head[d]++];
        memcpy(j->dst, j->src, j->bytes);
    }
}

static tc_status_t fake_copy(void *ctx, int slot, int to_device, void *dst, const void *src,
                             size_t bytes, char *why, size_t len)
{
    fake_t *f = ctx;
    int d = to_device != 0;

    CHECK(slot >= 0 && slot < TC_STAGE_SLOTS);
    if (f->copies++ == f->fail_copy) {
        snprintf(why, len, "copy %ld refused", f->copies - 1);
        return TC_ERR_TRANSPORT;
    }
    CHECK(f->tail[d] < MAXQ);
    f->q[d][f->tail[d]++] = (job_t){dst, src, bytes, slot};
    f->queued[d]++;
    if (f->eager) {
        carry(f, d, f->tail[d]);
    }
    return TC_OK;
}

static tc_status_t fake_wait(void *ctx, int slot, int to_device, char *why, size_t len)
{
    fake_t *f = ctx;
    int d = to_device != 0;
    size_t last = f->head[d], i;

    if (f->waits++ == f->fail_wait) {
        snprintf(why, len, "wait %ld refused", f->waits - 1);
        return TC_ERR_TRANSPORT;
    }
    for (i = f->head[d]; i < f->tail[d]; i++) {
        if (f->q[d][i].slot == slot) {
            last = i + 1;
        }
    }
    carry(f, d, last); /* a stream: everything before the slot's last copy too */
    return TC_OK;
}

typedef struct {
    fake_t *f;
    const unsigned char *src; /* what the chunks must hold (NULL: nothing copied in) */
    size_t chunk, bytes;
    long ran, fail_at; /* chunks run; the chunk that fails (-1: none) */
} host_t;

/* The host's work on a chunk: checks the slot holds the source's bytes,
 * then writes 3x + 1 of each (or, with no source, a pattern of the offset);
 * and that the copies run ahead of it. */
static tc_status_t chunk_fn(void *arg, void *slot, size_t off, size_t bytes, char *why, size_t len)
{
    host_t *h = arg;
    unsigned char *p = slot;
    size_t i = off / h->chunk, n = (h->bytes + h->chunk - 1) / h->chunk, k;

    CHECK_EQ(off, (size_t)h->ran * h->chunk);
    CHECK_EQ(bytes, h->bytes - off < h->chunk ? h->bytes - off : h->chunk);
    if (h->src != NULL) {
        size_t ahead = i + 1 + TC_STAGE_AHEAD < n ? i + 1 + TC_STAGE_AHEAD : n;
        CHECK(memcmp(p, h->src + off, bytes) == 0);
        CHECK_EQ(h->f->queued[0], ahead); /* the next chunks' copies in are queued */
    }
    if (i > 0 && h->f->queued[1] > 0) {
        CHECK_EQ(h->f->queued[1], i); /* the last chunk's copy back is queued */
    }
    if (h->ran++ == h->fail_at) {
        snprintf(why, len, "chunk %zu refused", i);
        return TC_ERR_MISMATCH;
    }
    for (k = 0; k < bytes; k++) {
        p[k] = h->src != NULL ? (unsigned char)(3 * p[k] + 1) : (unsigned char)((off + k) * 7);
    }
    return TC_OK;
}

typedef struct {
    size_t bytes, chunk;
    int in, out, in_place, eager;
    long fail_at, fail_copy, fail_wait;
} spec_t;

/* Runs one pipeline as s says; checks the result and that nothing is
 * pending; returns the status. */
static fake_t f; /* the last run's */

static tc_status_t run_one(const spec_t *s)
{
    unsigned char *src = malloc(s->bytes + 1), *dst = malloc(s->bytes + 1),
                  *slots = malloc(TC_STAGE_SLOTS * s->chunk + 1);
    tc_stage_copier_t cp = {&f, fake_copy, fake_wait};
    tc_stage_run_t r = {NULL, NULL, s->bytes, s->chunk, {NULL}};
    host_t h = {&f, NULL, s->chunk, s->bytes, 0, s->fail_at};
    char why[256] = "";
    size_t k, done;
    tc_status_t st;
    int i;

    CHECK(src != NULL && dst != NULL && slots != NULL);
    memset(&f, 0, sizeof(f));
    f.eager = s->eager;
    f.fail_copy = s->fail_copy;
    f.fail_wait = s->fail_wait;
    for (k = 0; k < s->bytes; k++) {
        src[k] = (unsigned char)(k * 131 + k / 251);
    }
    memset(dst, 0xEE, s->bytes + 1);
    for (i = 0; i < TC_STAGE_SLOTS; i++) {
        r.slots[i] = slots + (size_t)i * s->chunk;
    }
    if (s->in_place) {
        memcpy(dst, src, s->bytes);
        r.src = r.dst = dst;
        h.src = src; /* the reference: dst's bytes before */
    } else {
        r.src = s->in ? src : NULL;
        r.dst = s->out ? dst : NULL;
        h.src = s->in ? src : NULL;
    }
    st = tc__stage_pipeline(&cp, &r, chunk_fn, &h, why, sizeof(why));
    CHECK_EQ(f.head[0], f.tail[0]); /* nothing pending, whatever happened */
    CHECK_EQ(f.head[1], f.tail[1]);
    if (st != TC_OK) {
        CHECK(why[0] != '\0');
    }
    /* the chunks that ran have their results copied back; the rest are untouched */
    done = st == TC_OK ? s->bytes : 0;
    if (st != TC_OK && (s->out || s->in_place)) {
        done = f.queued[1] * s->chunk < s->bytes ? f.queued[1] * s->chunk : s->bytes;
    }
    for (k = 0; k < s->bytes && (s->out || s->in_place); k++) {
        unsigned char want = k >= done                ? (s->in_place ? src[k] : 0xEE)
                             : (s->in || s->in_place) ? (unsigned char)(3 * src[k] + 1)
                                                      : (unsigned char)(k * 7);
        CHECK_MSG(dst[k] == want, "byte %zu of %zu (chunk %zu): %d, want %d (%s)", k, s->bytes,
                  s->chunk, dst[k], want, why);
    }
    if (!s->out && !s->in_place) {
        CHECK_EQ(f.queued[1], (size_t)0); /* the root copies nothing back */
    }
    CHECK_EQ(dst[s->bytes], 0xEE);
    if (st == TC_OK) {
        CHECK_EQ(h.ran, (long)tc__stage_chunks(s->bytes, s->chunk));
    }
    free(src);
    free(dst);
    free(slots);
    return st;
}

TC_CASE(every_byte_every_size)
{
    static const size_t sizes[] = {0, 1, 99, 100, 101, 400, 401, 1000, 3999, 4000, 4001, 20000};
    size_t i;
    int eager, mode;

    for (eager = 0; eager < 2; eager++) {
        for (mode = 0; mode < 4; mode++) { /* allreduce, in place, root, receiver */
            for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                spec_t s = {sizes[i], 100, mode != 3, mode != 2, mode == 1, eager, -1, -1, -1};
                CHECK_EQ(run_one(&s), TC_OK);
            }
        }
    }
}

TC_CASE(chunks)
{
    CHECK_EQ(tc__stage_chunks(0, 8), (size_t)0);
    CHECK_EQ(tc__stage_chunks(8, 8), (size_t)1);
    CHECK_EQ(tc__stage_chunks(9, 8), (size_t)2);
    CHECK_EQ(tc__stage_chunks(9, 0), (size_t)0);
}

TC_CASE(zero_chunk_refused)
{
    tc_stage_copier_t cp = {NULL, fake_copy, fake_wait};
    tc_stage_run_t r = {NULL, NULL, 10, 0, {NULL}};
    char why[128] = "";

    CHECK_EQ(tc__stage_pipeline(&cp, &r, chunk_fn, NULL, why, sizeof(why)), TC_ERR_ARG);
    CHECK(strstr(why, "0 bytes") != NULL);
}

/* A failure anywhere (each chunk, each copy, each wait of a clean run in
 * turn): the first failure's status, nothing left pending, the chunks
 * before it complete and the rest untouched. */
TC_CASE(failures_drain)
{
    int eager, mode, in_place;

    for (eager = 0; eager < 2; eager++) {
        for (in_place = 0; in_place < 2; in_place++) {
            spec_t clean = {2050, 100, 1, 1, in_place, eager, -1, -1, -1};
            long chunks = 21, copies, waits, k;
            CHECK_EQ(run_one(&clean), TC_OK);
            copies = f.copies;
            waits = f.waits;
            CHECK_EQ(copies, 2 * chunks);
            CHECK_GE(waits, chunks);
            for (mode = 0; mode < 3; mode++) {
                long n = mode == 0 ? chunks : mode == 1 ? copies : waits;
                for (k = 0; k < n; k++) {
                    spec_t s = clean;
                    *(mode == 0 ? &s.fail_at : mode == 1 ? &s.fail_copy : &s.fail_wait) = k;
                    CHECK_EQ(run_one(&s), mode == 0 ? TC_ERR_MISMATCH : TC_ERR_TRANSPORT);
                }
            }
        }
    }
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    return 0;
}
