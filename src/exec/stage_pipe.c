/*
 * stage_pipe.c - the chunked staging schedule (stage_pipe.h).
 *
 * Chunk i lives in slot i % TC_STAGE_SLOTS. Its copy in is queued
 * TC_STAGE_AHEAD chunks early, once the copy back of the slot's previous
 * chunk (i - TC_STAGE_SLOTS) is done; the host waits for the copy in, queues
 * the copy in of chunk i + TC_STAGE_AHEAD, runs the chunk, and queues its
 * copy back. With 4 slots and 2 ahead, a copy back has one chunk's host time
 * to finish before its slot is wanted again, and the host never waits for a
 * copy that could have run during the chunk before.
 */
#include "exec/stage_pipe.h"

#include <stdio.h>

typedef struct {
    const tc_stage_copier_t *cp;
    const tc_stage_run_t *r;
    int in_q[TC_STAGE_SLOTS];  /* a copy in is queued and not waited for */
    int out_q[TC_STAGE_SLOTS]; /* a copy back is queued and not waited for */
} pipe_t;

size_t tc__stage_chunks(size_t bytes, size_t chunk)
{
    return chunk == 0 ? 0 : bytes / chunk + (bytes % chunk != 0);
}

static size_t chunk_bytes(const tc_stage_run_t *r, size_t i)
{
    size_t off = i * r->chunk;
    return r->bytes - off < r->chunk ? r->bytes - off : r->chunk;
}

/* Makes chunk k's slot free (its last copy back done) and queues the copy
 * of chunk k into it. */
static tc_status_t queue_in(pipe_t *p, size_t k, char *why, size_t len)
{
    int s = (int)(k % TC_STAGE_SLOTS);
    tc_status_t st;

    if (p->out_q[s]) {
        if ((st = p->cp->wait(p->cp->ctx, s, 1, why, len)) != TC_OK) {
            return st; /* still pending: the drain waits again */
        }
        p->out_q[s] = 0;
    }
    if (p->r->src == NULL) {
        return TC_OK;
    }
    p->in_q[s] = 1; /* even if queuing fails: the drain waits for whatever went */
    return p->cp->copy(p->cp->ctx, s, 0, p->r->slots[s], (const char *)p->r->src + k * p->r->chunk,
                       chunk_bytes(p->r, k), why, len);
}

static tc_status_t run_chunks(pipe_t *p, tc_stage_chunk_fn fn, void *arg, char *why, size_t len)
{
    const tc_stage_run_t *r = p->r;
    size_t n = tc__stage_chunks(r->bytes, r->chunk), i;
    tc_status_t st;

    for (i = 0; i < n && i < TC_STAGE_AHEAD; i++) {
        if ((st = queue_in(p, i, why, len)) != TC_OK) {
            return st;
        }
    }
    for (i = 0; i < n; i++) {
        int s = (int)(i % TC_STAGE_SLOTS);
        size_t b = chunk_bytes(r, i);
        if (p->in_q[s]) {
            if ((st = p->cp->wait(p->cp->ctx, s, 0, why, len)) != TC_OK) {
                return st;
            }
            p->in_q[s] = 0;
        }
        if (i + TC_STAGE_AHEAD < n && (st = queue_in(p, i + TC_STAGE_AHEAD, why, len)) != TC_OK) {
            return st;
        }
        if ((st = fn(arg, r->slots[s], i * r->chunk, b, why, len)) != TC_OK) {
            return st;
        }
        if (r->dst != NULL) {
            p->out_q[s] = 1;
            st = p->cp->copy(p->cp->ctx, s, 1, (char *)r->dst + i * r->chunk, r->slots[s], b, why,
                             len);
            if (st != TC_OK) {
                return st;
            }
        }
    }
    return TC_OK;
}

tc_status_t tc__stage_pipeline(const tc_stage_copier_t *cp, const tc_stage_run_t *r,
                               tc_stage_chunk_fn fn, void *arg, char *why, size_t len)
{
    pipe_t p = {cp, r, {0}, {0}};
    tc_status_t st = r->chunk == 0 ? TC_ERR_ARG : run_chunks(&p, fn, arg, why, len);
    char later[256];
    int s, pass;

    if (r->chunk == 0) {
        snprintf(why, len, "staging chunk of 0 bytes");
    }
    /* every queued copy done before the slots go back, whatever happened;
     * a wait that fails is tried once more (a second pass) */
    for (pass = 0; pass < 2; pass++) {
        for (s = 0; s < TC_STAGE_SLOTS; s++) {
            int dir;
            for (dir = 0; dir < 2; dir++) {
                int *q = dir ? &p.out_q[s] : &p.in_q[s];
                tc_status_t w;
                if (!*q) {
                    continue;
                }
                w = cp->wait(cp->ctx, s, dir, st == TC_OK ? why : later,
                             st == TC_OK ? len : sizeof(later));
                if (w == TC_OK) {
                    *q = 0;
                } else if (st == TC_OK) {
                    st = w;
                }
            }
        }
    }
    return st;
}
