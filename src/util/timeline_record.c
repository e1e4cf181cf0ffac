/*
 * timeline_record.c - the record calls of the timeline (util/timeline.h) and
 * the two buffers they fill, which the writer thread of timeline.c drains.
 *
 * Two buffers of fixed-size records. Recording threads append to the *fill*
 * buffer under tc__tl.mu (a bounds check and a copy of at most
 * TC_TL_NAME_MAX name bytes); a full buffer drops the event and counts it.
 * The writer swaps the fill buffer for its own, empty one under tc__tl.mu
 * (two pointer moves), then formats and writes the records it took without
 * any lock. No thread holds tc__tl.mu across anything longer than a copy or
 * a hash lookup (plus, the first time a row's name is seen, one malloc and
 * at times a rehash of at most TC_TL_MAX_TRACKS entries); never across I/O
 * or formatting.
 *
 * Waiting: with nothing recorded the writer sleeps on tc__tl.cv with no
 * timeout (idle costs no CPU); recorders signal it only when it announced,
 * under tc__tl.mu, that it waits (writer_wait), so a busy writer costs them
 * nothing.
 *
 * Must never do I/O, format, or wait for the writer: the engine thread
 * records.
 */
#define _GNU_SOURCE
#include "util/timeline_internal.h"

#include <stdlib.h>
#include <string.h>

tl_state_t tc__tl = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .cv = PTHREAD_COND_INITIALIZER,
};

/* A hint without the lock; its memory order: see timeline_internal.h. */
_Atomic int tc__tl_on;

int tc__tl_active(void)
{
    return atomic_load_explicit(&tc__tl_on, memory_order_relaxed);
}

void tc__tl_stats(tc_tl_stats_t *stats_p)
{
    pthread_mutex_lock(&tc__tl.mu);
    *stats_p = tc__tl.stats;
    pthread_mutex_unlock(&tc__tl.mu);
}

int tc__tl_track(const char *name, size_t name_len)
{
    void *v;
    char *copy;
    int id;

    if (!atomic_load_explicit(&tc__tl_on, memory_order_relaxed)) {
        return -1;
    }
    if (name == NULL) {
        name = "";
        name_len = 0;
    }
    pthread_mutex_lock(&tc__tl.mu);
    if (!tc__tl.active) {
        id = -1;
    } else if ((v = tc__hmap_get(&tc__tl.track_map, name, name_len)) != NULL) {
        id = (int)(uintptr_t)v;
    } else if (tc__tl.ntracks == TC_TL_MAX_TRACKS || (copy = malloc(name_len + 1)) == NULL) {
        id = TC_TL_TRACK_OTHER;
    } else {
        memcpy(copy, name, name_len);
        copy[name_len] = '\0';
        id = TC_TL_TRACK_FIRST + (int)tc__tl.ntracks;
        if (tc__hmap_put(&tc__tl.track_map, name, name_len, (void *)(uintptr_t)id) != 0) {
            free(copy);
            id = TC_TL_TRACK_OTHER;
        } else {
            /* Published by the count under tc__tl.mu; never changed afterwards. */
            tc__tl.tracks[tc__tl.ntracks].name = copy;
            tc__tl.tracks[tc__tl.ntracks].len = name_len;
            tc__tl.ntracks++;
        }
    }
    pthread_mutex_unlock(&tc__tl.mu);
    return id;
}

static void record(char ph, int track, const char *name, size_t name_len, const char *cat,
                   uint64_t ts_ns, uint64_t dur_ns, const tc_tl_args_t *args)
{
    tl_rec_t *r;

    if (track < 0 || !atomic_load_explicit(&tc__tl_on, memory_order_relaxed)) {
        return;
    }
    pthread_mutex_lock(&tc__tl.mu);
    if (!tc__tl.active) {
        goto out;
    }
    if (tc__tl.nfill == tc__tl.cap) {
        tc__tl.stats.dropped++;
        goto out;
    }
    r = &tc__tl.fill[tc__tl.nfill++];
    tc__tl.stats.recorded++;
    r->ts_ns = ts_ns;
    r->dur_ns = dur_ns;
    r->cat = cat;
    r->track = track;
    r->ph = ph;
    r->has_args = args != NULL;
    if (args != NULL) {
        r->args = *args;
    }
    r->has_name = name != NULL;
    r->truncated = name_len > TC_TL_NAME_MAX;
    r->name_len = (uint32_t)(name_len > TC_TL_NAME_MAX ? TC_TL_NAME_MAX : name_len);
    if (name != NULL) {
        memcpy(r->name, name, r->name_len);
    }
    /* Wake the writer only if it sleeps and has a reason to get up: an idle
     * one for the first record, a batching one once half the buffer is used. */
    if (!tc__tl.hold && (tc__tl.writer_wait == WAIT_IDLE ||
                         (tc__tl.writer_wait == WAIT_BATCH && tc__tl.nfill >= tc__tl.batch_min))) {
        tc__tl.writer_wait = WAIT_NONE;
        pthread_cond_signal(&tc__tl.cv);
    }
out:
    pthread_mutex_unlock(&tc__tl.mu);
}

void tc__tl_begin(int track, const char *name, size_t name_len, const char *cat, uint64_t ts_ns,
                  const tc_tl_args_t *args)
{
    record('B', track, name != NULL ? name : "", name != NULL ? name_len : 0, cat, ts_ns, 0, args);
}

void tc__tl_end(int track, const char *name, size_t name_len, const char *cat, uint64_t ts_ns,
                const tc_tl_args_t *args)
{
    record('E', track, name, name != NULL ? name_len : 0, cat, ts_ns, 0, args);
}

void tc__tl_complete(int track, const char *name, size_t name_len, const char *cat, uint64_t ts_ns,
                     uint64_t dur_ns, const tc_tl_args_t *args)
{
    record('X', track, name != NULL ? name : "", name != NULL ? name_len : 0, cat, ts_ns, dur_ns,
           args);
}

void tc__tl_instant(int track, const char *name, size_t name_len, const char *cat, uint64_t ts_ns,
                    const tc_tl_args_t *args)
{
    record('i', track, name != NULL ? name : "", name != NULL ? name_len : 0, cat, ts_ns, 0, args);
}
