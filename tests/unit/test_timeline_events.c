/*
 * test_timeline_events.c - what the timeline writer (src/util/timeline*.c)
 * makes of the events it records, read back from the file: names that need
 * escapes (quotes, backslash, newline, 0x01, NUL, DEL, invalid UTF-8 bytes,
 * cut multibyte sequences), truncation of long names, args, a second start,
 * several threads recording and creating rows concurrently (every event
 * present exactly once, in each thread's order), a full buffer with the
 * writer held (exact drop count in the file), and a stress run (written +
 * dropped == recorded). Part of test_timeline (main in test_timeline.c);
 * no MPI; runs under TSan (loops shrink there).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "timeline_testutil.h"

typedef struct {
    const char *raw;
    size_t raw_len;
    const char *want; /* the name as decoded from the file */
    size_t want_len;
} esc_case_t;

static const esc_case_t esc_cases[] = {
    {S("q\"uote"), S("q\"uote")},
    {S("back\\slash"), S("back\\slash")},
    {S("new\nline"), S("new\nline")},
    {S("ctl\x01"), S("ctl\x01")},
    {S("tab\tcr\rbs\bff\f"), S("tab\tcr\rbs\bff\f")},
    {S("nul\0mid"), S("nul\0mid")},
    {S("del\x7f"), S("del\x7f")},
    {S("bad\xff"
       "byte"),
     S("bad\xc3\xbf"
       "byte")},
    {S("gr\xc3\xbc\xc3\x9f"
       "e \xe2\x88\x91 \xf0\x9f\x98\x80"),
     S("gr\xc3\xbc\xc3\x9f"
       "e \xe2\x88\x91 \xf0\x9f\x98\x80")},
    {S("overlong\xc0\xaf"), S("overlong\xc3\x80\xc2\xaf")},
    {S("surrogate\xed\xa0\x80"), S("surrogate\xc3\xad\xc2\xa0\xc2\x80")},
    {S("cut\xe2\x82"), S("cut\xc3\xa2\xc2\x82")},
    {S("big\xf4\x90\x80\x80"), S("big\xc3\xb4\xc2\x90\xc2\x80\xc2\x80")},
    {S("slash/</script>"), S("slash/</script>")},
};

#define NTHREADS 4

typedef struct {
    int id;
    int iters;
} rec_job_t;

static void *recorder_main(void *arg)
{
    rec_job_t *j = arg;
    char name[64], shared[32];
    int row, i, n, ns;

    n = snprintf(name, sizeof(name), "thread/%d", j->id);
    row = tc__tl_track(name, (size_t)n);
    CHECK_GE(row, TC_TL_TRACK_FIRST);
    for (i = 0; i < j->iters; i++) {
        uint64_t t = tc__now_ns();
        n = snprintf(name, sizeof(name), "t%d/b%d", j->id, i);
        tc__tl_begin(row, name, (size_t)n, "test", t, NULL);
        n = snprintf(name, sizeof(name), "t%d/e%d", j->id, i);
        tc__tl_end(row, name, (size_t)n, "test", t + 10, NULL);
        n = snprintf(name, sizeof(name), "t%d/x%d", j->id, i);
        tc__tl_complete(row, name, (size_t)n, "test", t, 1500, NULL);
        /* rows made concurrently by every thread for the same names */
        ns = snprintf(shared, sizeof(shared), "shared/%d", i % 10);
        n = snprintf(name, sizeof(name), "t%d/i%d", j->id, i);
        tc__tl_instant(tc__tl_track(shared, (size_t)ns), name, (size_t)n, "test", t, NULL);
    }
    return NULL;
}

void test_escapes_args_threads(void)
{
    const int iters = TEST_TSAN ? 150 : 300;
    char err[512], longname[300], cutname[130], want[200];
    pthread_t th[NTHREADS];
    rec_job_t jobs[NTHREADS];
    tc_tl_args_t a = TC_TL_ARGS_INIT;
    tc_tl_stats_t st;
    trace_t t;
    size_t i;
    int k, row, shared_rows[10];
    static int seen[NTHREADS][4][300];
    const jval_t *e, *args;

    CHECK_OK(tc__tl_start(tmp_path("tl.%r.json"), 3, err, sizeof(err)));
    CHECK_EQ(tc__tl_active(), 1);
    CHECK_STATUS(tc__tl_start(tmp_path("other.json"), 3, err, sizeof(err)), TC_ERR_STATE);
    CHECK_STR_CONTAINS(err, "already");
    CHECK_STR_CONTAINS(err, "tl.3.json");
    CHECK(access(tmp_path("other.json"), F_OK) != 0);

    for (i = 0; i < sizeof(esc_cases) / sizeof(esc_cases[0]); i++) {
        row = tc__tl_track(esc_cases[i].raw, esc_cases[i].raw_len);
        CHECK_GE(row, TC_TL_TRACK_FIRST);
        CHECK_EQ(tc__tl_track(esc_cases[i].raw, esc_cases[i].raw_len), row);
        tc__tl_complete(row, esc_cases[i].raw, esc_cases[i].raw_len, "esc", tc__now_ns(), 1000,
                        NULL);
    }
    /* long names: cut to TC_TL_NAME_MAX bytes and "..."; a multibyte
     * character cut in half is dropped whole */
    for (i = 0; i < sizeof(longname); i++) {
        longname[i] = (char)('a' + i % 26);
    }
    tc__tl_instant(TC_TL_TRACK_OTHER, longname, sizeof(longname), NULL, tc__now_ns(), NULL);
    memset(cutname, 'x', 127);
    memcpy(cutname + 127, "\xe2\x88\x91", 3);
    tc__tl_instant(TC_TL_TRACK_OTHER, cutname, sizeof(cutname), NULL, tc__now_ns(), NULL);

    a.kind = "allreduce";
    a.algo = "ring \"quoted\"";
    a.dtype = TC_FLOAT32;
    a.op = TC_SUM;
    a.root = 2;
    a.bytes = 4096;
    a.fused = 3;
    a.cycle = 12;
    a.status = TC_ERR_MISMATCH;
    tc__tl_instant(TC_TL_TRACK_NEGOTIATION, S("with args"), "negotiation", tc__now_ns(), &a);
    tc__tl_begin(TC_TL_TRACK_COLLECTIVES, S("slice"), "collective", tc__now_ns(), NULL);
    tc__tl_end(TC_TL_TRACK_COLLECTIVES, NULL, 0, NULL, tc__now_ns(), NULL);
    tc__tl_complete(TC_TL_TRACK_COLLECTIVES, S("exact"), NULL, tc__now_ns(), 1234567, NULL);
    tc__tl_complete(-1, S("ignored: negative track"), NULL, tc__now_ns(), 1, NULL);

    for (k = 0; k < NTHREADS; k++) {
        jobs[k].id = k;
        jobs[k].iters = iters;
        CHECK_EQ(pthread_create(&th[k], NULL, recorder_main, &jobs[k]), 0);
    }
    for (k = 0; k < NTHREADS; k++) {
        CHECK_EQ(pthread_join(th[k], NULL), 0);
    }
    CHECK_OK(tc__tl_stop());
    CHECK_EQ(tc__tl_active(), 0);
    CHECK_STATUS(tc__tl_stop(), TC_ERR_STATE); /* idempotent */
    tc__tl_stats(&st);
    CHECK_EQ(st.dropped, 0); /* fewer events than the buffer holds */
    CHECK_EQ(st.recorded, st.written);
    CHECK_EQ(st.recorded, sizeof(esc_cases) / sizeof(esc_cases[0]) + 6 + 4 * NTHREADS * iters);

    load_trace(tmp_path("tl.3.json"), 3, &t);
    CHECK_EQ(num_of(t.other, "dropped_events"), 0);
    CHECK_EQ(num_of(t.other, "events"), st.written);
    CHECK(find_row(&t, S("negotiation")) == TC_TL_TRACK_NEGOTIATION);
    CHECK(find_row(&t, S("collectives")) == TC_TL_TRACK_COLLECTIVES);
    CHECK(find_row(&t, S("other tensors")) == TC_TL_TRACK_OTHER);
    for (i = 0; i < sizeof(esc_cases) / sizeof(esc_cases[0]); i++) {
        const esc_case_t *c = &esc_cases[i];
        row = find_row(&t, c->want, c->want_len);
        CHECK_MSG(row >= TC_TL_TRACK_FIRST, "no row for escape case %zu", i);
        e = find_event(&t, 'X', c->want, c->want_len);
        CHECK_MSG(e != NULL, "escape case %zu: event not found under its expected name", i);
        CHECK_EQ(num_of(e, "tid"), row);
        CHECK(num_of(e, "dur") == 1.0);
        CHECK(jstr_is(jget(e, "cat"), S("esc")));
    }
    memcpy(want, longname, TC_TL_NAME_MAX);
    memcpy(want + TC_TL_NAME_MAX, "...", 3);
    CHECK(find_event(&t, 'i', want, TC_TL_NAME_MAX + 3) != NULL);
    memcpy(want, cutname, 127);
    memcpy(want + 127, "...", 3);
    CHECK(find_event(&t, 'i', want, 130) != NULL);

    e = find_event(&t, 'i', S("with args"));
    CHECK(e != NULL);
    CHECK(jstr_is(jget(e, "s"), S("t")));
    CHECK(jstr_is(jget(e, "cat"), S("negotiation")));
    CHECK_EQ(num_of(e, "tid"), TC_TL_TRACK_NEGOTIATION);
    args = jget(e, "args");
    CHECK(jstr_is(jget(args, "kind"), S("allreduce")));
    CHECK(jstr_is(jget(args, "algo"), S("ring \"quoted\"")));
    CHECK(jstr_is(jget(args, "dtype"), S("float32")));
    CHECK(jstr_is(jget(args, "op"), S("sum")));
    CHECK(jstr_is(jget(args, "status"), tc_status_string(TC_ERR_MISMATCH),
                  strlen(tc_status_string(TC_ERR_MISMATCH))));
    CHECK_EQ(num_of(args, "root"), 2);
    CHECK_EQ(num_of(args, "bytes"), 4096);
    CHECK_EQ(num_of(args, "fused"), 3);
    CHECK_EQ(num_of(args, "cycle"), 12);
    CHECK_EQ(args->n, 9);
    e = find_event(&t, 'X', S("exact"));
    CHECK(e != NULL && num_of(e, "dur") == 1234.567 && jget(e, "cat") == NULL);
    CHECK(find_event(&t, 'B', S("slice")) != NULL);
    CHECK(find_event(&t, 'X', S("ignored: negative track")) == NULL);

    /* the threads' events: each exactly once, B before its E on the row */
    for (k = 0; k < 10; k++) {
        char s[16];
        int n = snprintf(s, sizeof(s), "shared/%d", k);
        shared_rows[k] = find_row(&t, s, (size_t)n);
        CHECK_GE(shared_rows[k], TC_TL_TRACK_FIRST);
    }
    memset(seen, 0, sizeof(seen));
    {
        int open[NTHREADS] = {0};
        int unnamed_ends = 0;
        for (i = 0; i < t.events->n; i++) {
            const jval_t *name;
            char ph;
            int id, idx, kind;
            char c;

            e = &t.events->items[i];
            name = jget(e, "name");
            ph = jget(e, "ph")->str[0];
            if (name == NULL) {
                unnamed_ends++;
                continue;
            }
            if (ph == 'M' || sscanf(name->str, "t%d/%c%d", &id, &c, &idx) != 3) {
                continue;
            }
            CHECK(id >= 0 && id < NTHREADS && idx >= 0 && idx < iters);
            kind = c == 'b' ? 0 : c == 'e' ? 1 : c == 'x' ? 2 : 3;
            CHECK_EQ(ph, "BEXi"[kind]);
            seen[id][kind][idx]++;
            if (kind == 0) {
                CHECK_EQ(open[id], 0);
                open[id] = 1;
            } else if (kind == 1) {
                CHECK_EQ(open[id], 1);
                open[id] = 0;
            }
            if (kind == 3) {
                CHECK_EQ(num_of(e, "tid"), shared_rows[idx % 10]);
            } else {
                char rn[16];
                int n = snprintf(rn, sizeof(rn), "thread/%d", id);
                CHECK_EQ(num_of(e, "tid"), find_row(&t, rn, (size_t)n));
            }
            if (kind == 2) {
                CHECK(num_of(e, "dur") == 1.5);
            }
        }
        CHECK_EQ(unnamed_ends, 1);
    }
    for (k = 0; k < NTHREADS; k++) {
        int kind, idx;
        for (kind = 0; kind < 4; kind++) {
            for (idx = 0; idx < iters; idx++) {
                CHECK_MSG(seen[k][kind][idx] == 1, "thread %d event %c%d seen %d times", k,
                          "beXi"[kind], idx, seen[k][kind][idx]);
            }
        }
    }
    free_trace(&t);
}

/* A buffer of 8 records and a writer that takes nothing: exactly 8 events
 * are kept and the rest counted, in the file and in the stats. */
void test_buffer_full(void)
{
    char err[512], name[32];
    tc_tl_stats_t st;
    trace_t t;
    size_t i;
    int n, kept = 0;
    const jval_t *e;

    tc__tl_test_config(8, 1);
    CHECK_OK(tc__tl_start(tmp_path("drop.json"), 0, err, sizeof(err)));
    for (i = 0; i < 100; i++) {
        n = snprintf(name, sizeof(name), "drop/%zu", i);
        tc__tl_complete(tc__tl_track(S("dropper")), name, (size_t)n, "drop", tc__now_ns(), 10,
                        NULL);
    }
    tc__tl_stats(&st);
    CHECK_EQ(st.recorded, 8);
    CHECK_EQ(st.dropped, 92);
    CHECK_EQ(st.written, 0);
    CHECK_OK(tc__tl_stop());
    tc__tl_test_config(0, 0);
    tc__tl_stats(&st);
    CHECK_EQ(st.written, 8);

    load_trace(tmp_path("drop.json"), 0, &t);
    CHECK_EQ(num_of(t.other, "dropped_events"), 92);
    CHECK_EQ(num_of(t.other, "events"), 8);
    for (i = 0; i < t.events->n; i++) {
        e = &t.events->items[i];
        if (jget(e, "ph")->str[0] == 'X') {
            n = snprintf(name, sizeof(name), "drop/%d", kept);
            CHECK(jstr_is(jget(e, "name"), name, (size_t)n));
            kept++;
        }
    }
    CHECK_EQ(kept, 8);
    e = find_event(&t, 'i', S("tcoll timeline: 92 events dropped (buffer full)"));
    CHECK(e != NULL);
    CHECK(jstr_is(jget(e, "s"), S("p")));
    CHECK_EQ(num_of(jget(e, "args"), "dropped"), 92);
    CHECK(find_row(&t, S("dropper")) == TC_TL_TRACK_FIRST);
    free_trace(&t);
}

typedef struct {
    int id;
    int iters;
} stress_job_t;

static void *stress_main(void *arg)
{
    stress_job_t *j = arg;
    char name[32];
    int i, n;

    for (i = 0; i < j->iters; i++) {
        n = snprintf(name, sizeof(name), "s%d/%d", j->id, i);
        tc__tl_complete(TC_TL_TRACK_COLLECTIVES, name, (size_t)n, NULL, tc__now_ns(), 1, NULL);
    }
    return NULL;
}

/* Writer running, recorders as fast as they go: whatever is dropped is
 * counted, what is kept is in each thread's order. */
void test_stress(void)
{
    const int iters = TEST_TSAN ? 20000 : 50000;
    char err[512];
    pthread_t th[NTHREADS];
    stress_job_t jobs[NTHREADS];
    tc_tl_stats_t st;
    trace_t t;
    long last[NTHREADS], kept[NTHREADS] = {0}, total = 0;
    size_t i;
    int k;

    CHECK_OK(tc__tl_start(tmp_path("stress.json"), 1, err, sizeof(err)));
    for (k = 0; k < NTHREADS; k++) {
        jobs[k].id = k;
        jobs[k].iters = iters;
        last[k] = -1;
        CHECK_EQ(pthread_create(&th[k], NULL, stress_main, &jobs[k]), 0);
    }
    for (k = 0; k < NTHREADS; k++) {
        CHECK_EQ(pthread_join(th[k], NULL), 0);
    }
    CHECK_OK(tc__tl_stop());
    tc__tl_stats(&st);
    CHECK_EQ(st.recorded + st.dropped, (uint64_t)NTHREADS * (uint64_t)iters);
    CHECK_EQ(st.written, st.recorded);

    load_trace(tmp_path("stress.json"), 1, &t);
    for (i = 0; i < t.events->n; i++) {
        const jval_t *e = &t.events->items[i];
        int id, idx;
        if (jget(e, "ph")->str[0] != 'X') {
            continue;
        }
        CHECK_EQ(sscanf(jget(e, "name")->str, "s%d/%d", &id, &idx), 2);
        CHECK(id >= 0 && id < NTHREADS);
        CHECK_GT(idx, last[id]);
        last[id] = idx;
        kept[id]++;
        total++;
    }
    CHECK_EQ(total, st.written);
    CHECK_EQ(num_of(t.other, "dropped_events"), st.dropped);
    printf("stress: %d threads x %d events: %" PRIu64 " written in %" PRIu64 " batches, %" PRIu64
           " dropped\n",
           NTHREADS, iters, st.written, st.batches, st.dropped);
    free_trace(&t);
}
