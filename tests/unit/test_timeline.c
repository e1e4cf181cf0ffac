/*
 * test_timeline.c - unit test of the timeline writer (src/util/timeline.c),
 * no MPI.
 *
 * Every file the writer produces is read back through the strict JSON parser
 * of tests/common/json_check.h (objects, arrays, strings with every escape,
 * numbers, literals; no trailing commas, no raw control characters or
 * invalid UTF-8 in strings, no duplicate keys, nothing after the top value)
 * and then checked for the trace structure (load_trace): a traceEvents array
 * whose events all have name (except unnamed ends), ph, ts, pid (the rank)
 * and tid.
 *
 * Covered: names that need escapes (quotes, backslash, newline, 0x01, NUL,
 * DEL, invalid UTF-8 bytes, cut multibyte sequences), truncation of long
 * names, args, several threads recording and creating rows concurrently
 * (every event present exactly once, in each thread's order), a full buffer
 * with the writer held (exact drop count in the file), a stress run (written
 * + dropped == recorded), an idle writer that does not wake, a flush without
 * a stop, start twice, stop without start, unopenable and too long paths,
 * "%r", a write error (/dev/full), restart, starts and stops while other
 * threads record, and the row limit. The public tc_timeline_start/stop ask
 * the engine for the rank (engine/timeline_job.c): tests/mpi/test_timeline.c
 * covers them. Runs under TSan (loops shrink there).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "json_check.h"
#include "util/backoff.h"
#include "util/timeline.h"

/* check.h reports tc_rank(), which lives in the engine; this test uses only
 * the util layer, so this stub answers. */
__attribute__((weak)) int tc_rank(void)
{
    return -1;
}

static char dir[64];

static const char *tmp_path(const char *name)
{
    static char buf[4][PATH_MAX];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, PATH_MAX, "%s/%s", dir, name);
    return p;
}

/* The parser in json_check.h must reject what is not JSON. */
static void test_parser_rejects(void)
{
    static const char *const bad[] = {
        "", "{", "[1,]", "{\"a\":1,}", "[1 2]", "{\"a\" 1}", "{\"a\":1}x", "[\"a\nb\"]",
        "[\"\\x\"]", "[01]", "[1.]", "[.5]", "[-]", "[1e]", "[tru]", "[\"\xff\"]",
        "[\"\xc0\xaf\"]", "[\"\\ud800\"]", "[\"\\udc00\"]", "{\"a\":1,\"a\":2}", "[\"abc]", "{1:2}",
    };
    static const char *const good[] = {
        "{}", "[]", " [ 1 , -0.5e+3 , true , false , null , \"\\u00e9\\ud83d\\ude00\\/\" ] ",
        "{\"a\":{\"b\":[{}]}}", "\"x\"", "0",
    };
    char err[200];
    jval_t v;
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_MSG(jparse(bad[i], strlen(bad[i]), &v, err, sizeof(err)) != 0,
                  "the test's parser accepted bad JSON #%zu", i);
    }
    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        CHECK_MSG(jparse(good[i], strlen(good[i]), &v, err, sizeof(err)) == 0,
                  "the test's parser rejected good JSON #%zu: %s", i, err);
        jfree(&v);
    }
}

/* The event of phase ph named name (exact bytes); NULL if none, fails if several. */
static const jval_t *find_event(const trace_t *t, char ph, const char *name, size_t len)
{
    const jval_t *found = NULL;
    size_t i;

    for (i = 0; i < t->events->n; i++) {
        const jval_t *e = &t->events->items[i];
        if (jget(e, "ph")->str[0] == ph && jstr_is(jget(e, "name"), name, len)) {
            CHECK_MSG(found == NULL, "event %c \"%.*s\" appears twice", ph, (int)len, name);
            found = e;
        }
    }
    return found;
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                     */
/* ------------------------------------------------------------------------ */

static void test_not_running(void)
{
    char err[512];
    char longpath[PATH_MAX + 100];
    tc_tl_args_t a = TC_TL_ARGS_INIT;

    CHECK_EQ(tc__tl_active(), 0);
    CHECK_STATUS(tc__tl_stop(), TC_ERR_STATE);
    CHECK_EQ(tc__tl_track("x", 1), -1);
    /* no-ops, no crash */
    tc__tl_begin(TC_TL_TRACK_COLLECTIVES, "x", 1, "c", tc__now_ns(), &a);
    tc__tl_end(TC_TL_TRACK_COLLECTIVES, "x", 1, "c", tc__now_ns(), NULL);
    tc__tl_complete(TC_TL_TRACK_COLLECTIVES, "x", 1, "c", tc__now_ns(), 5, NULL);
    tc__tl_instant(TC_TL_TRACK_COLLECTIVES, "x", 1, "c", tc__now_ns(), NULL);

    CHECK_STATUS(tc__tl_start(NULL, 0, err, sizeof(err)), TC_ERR_ARG);
    CHECK_STR_CONTAINS(err, "NULL");
    CHECK_STATUS(tc__tl_start("", 0, err, sizeof(err)), TC_ERR_ARG);
    CHECK_STR_CONTAINS(err, "empty");

    /* a directory that does not exist: the message names the path and why */
    CHECK_STATUS(tc__tl_start("/nonexistent-tcoll-dir/tl.%r.json", 4, err, sizeof(err)),
                 TC_ERR_ARG);
    CHECK_STR_CONTAINS(err, "/nonexistent-tcoll-dir/tl.4.json");
    CHECK_STR_CONTAINS(err, strerror(ENOENT));
    CHECK_EQ(tc__tl_active(), 0);
    CHECK_STATUS(tc__tl_stop(), TC_ERR_STATE);
    /* err may be NULL */
    CHECK_STATUS(tc__tl_start("/nonexistent-tcoll-dir/x", 0, NULL, 0), TC_ERR_ARG);

    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[0] = '/';
    longpath[sizeof(longpath) - 1] = '\0';
    CHECK_STATUS(tc__tl_start(longpath, 0, err, sizeof(err)), TC_ERR_ARG);
    CHECK_STR_CONTAINS(err, "longer than");
    CHECK_EQ(tc__tl_active(), 0);
}

typedef struct {
    const char *raw;
    size_t raw_len;
    const char *want; /* the name as decoded from the file */
    size_t want_len;
} esc_case_t;

#define S(lit) lit, sizeof(lit) - 1

static const esc_case_t esc_cases[] = {
    {S("q\"uote"), S("q\"uote")},
    {S("back\\slash"), S("back\\slash")},
    {S("new\nline"), S("new\nline")},
    {S("ctl\x01"), S("ctl\x01")},
    {S("tab\tcr\rbs\bff\f"), S("tab\tcr\rbs\bff\f")},
    {S("nul\0mid"), S("nul\0mid")},
    {S("del\x7f"), S("del\x7f")},
    {S("bad\xff" "byte"), S("bad\xc3\xbf" "byte")},
    {S("gr\xc3\xbc\xc3\x9f" "e \xe2\x88\x91 \xf0\x9f\x98\x80"),
     S("gr\xc3\xbc\xc3\x9f" "e \xe2\x88\x91 \xf0\x9f\x98\x80")},
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

static void test_escapes_args_threads(void)
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
static void test_buffer_full(void)
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
static void test_stress(void)
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
    printf("stress: %d threads x %d events: %" PRIu64 " written in %" PRIu64
           " batches, %" PRIu64 " dropped\n",
           NTHREADS, iters, st.written, st.batches, st.dropped);
    free_trace(&t);
}

/* An idle writer sleeps without waking; a recorded event reaches the file
 * within the flush interval, without a stop. */
static void test_idle_and_flush(void)
{
    struct timespec ms300 = {0, 300000000L}, ms10 = {0, 10000000L};
    char err[512];
    tc_tl_stats_t s0, s1;
    char *text;
    size_t len;
    int i;

    CHECK_OK(tc__tl_start(tmp_path("idle.json"), 2, err, sizeof(err)));
    tc__tl_stats(&s0);
    nanosleep(&ms300, NULL);
    tc__tl_stats(&s1);
    CHECK_LE(s1.wakeups - s0.wakeups, 1); /* no timeouts while idle (1: a spurious wake) */
    CHECK_EQ(s1.batches, 0);

    tc__tl_instant(TC_TL_TRACK_NEGOTIATION, S("flushed without a stop"), NULL, tc__now_ns(), NULL);
    for (i = 0; i < 1000; i++) {
        tc__tl_stats(&s1);
        if (s1.written == 1) {
            break;
        }
        nanosleep(&ms10, NULL);
    }
    CHECK_EQ(s1.written, 1);
    text = read_all(tmp_path("idle.json"), &len);
    CHECK_STR_CONTAINS(text, "\"name\":\"flushed without a stop\"");
    CHECK_STR_CONTAINS(text, "\"traceEvents\":[");
    free(text);
    /* and then it goes back to sleep */
    nanosleep(&ms300, NULL);
    tc__tl_stats(&s0);
    nanosleep(&ms300, NULL);
    tc__tl_stats(&s1);
    CHECK_LE(s1.wakeups - s0.wakeups, 1);
    CHECK_OK(tc__tl_stop());
}

/* "%r" anywhere, several times; a second timeline after a stop starts clean. */
static void test_rank_path_and_restart(void)
{
    char err[512];
    trace_t t;

    CHECK_OK(tc__tl_start(tmp_path("r%r_%r.json"), 12, err, sizeof(err)));
    CHECK_EQ(tc__tl_track(S("first")), TC_TL_TRACK_FIRST);
    tc__tl_instant(tc__tl_track(S("first")), S("a"), NULL, tc__now_ns(), NULL);
    CHECK_OK(tc__tl_stop());
    load_trace(tmp_path("r12_12.json"), 12, &t);
    CHECK(find_event(&t, 'i', S("a")) != NULL);
    free_trace(&t);

    CHECK_OK(tc__tl_start(tmp_path("again.json"), 0, err, sizeof(err)));
    CHECK_EQ(tc__tl_track(S("second")), TC_TL_TRACK_FIRST);
    tc__tl_instant(tc__tl_track(S("second")), S("b"), NULL, tc__now_ns(), NULL);
    CHECK_OK(tc__tl_stop());
    load_trace(tmp_path("again.json"), 0, &t);
    CHECK(find_event(&t, 'i', S("b")) != NULL);
    CHECK(find_event(&t, 'i', S("a")) == NULL);
    CHECK_EQ(find_row(&t, S("second")), TC_TL_TRACK_FIRST);
    CHECK_EQ(find_row(&t, S("first")), -1);
    free_trace(&t);
}

static void test_write_error(void)
{
    char err[512];

    if (access("/dev/full", W_OK) != 0) {
        printf("write error: skipped (no writable /dev/full)\n");
        return;
    }
    CHECK_OK(tc__tl_start("/dev/full", 0, err, sizeof(err)));
    tc__tl_instant(TC_TL_TRACK_NEGOTIATION, S("lost"), NULL, tc__now_ns(), NULL);
    CHECK_STATUS(tc__tl_stop_err(err, sizeof(err)), TC_ERR_TRANSPORT);
    CHECK_STR_CONTAINS(err, "/dev/full");
    CHECK_STR_CONTAINS(err, strerror(ENOSPC));
    CHECK_EQ(tc__tl_active(), 0);
    CHECK_STATUS(tc__tl_stop(), TC_ERR_STATE);
}

static _Atomic int churn_stop;

static void *churn_main(void *arg)
{
    int id = (int)(intptr_t)arg;
    char name[32];
    long i = 0;

    /* relaxed: the flag only ends the loop; pthread_join orders the rest */
    while (!atomic_load_explicit(&churn_stop, memory_order_relaxed)) {
        int n = snprintf(name, sizeof(name), "c%d/%ld", id, i % 50);
        if (tc__tl_active()) {
            int row = tc__tl_track(name, (size_t)n);
            tc__tl_begin(row, name, (size_t)n, "churn", tc__now_ns(), NULL);
            tc__tl_end(row, name, (size_t)n, "churn", tc__now_ns(), NULL);
        }
        tc__tl_complete(TC_TL_TRACK_COLLECTIVES, name, (size_t)n, NULL, tc__now_ns(), 1, NULL);
        i++;
    }
    return NULL;
}

/* Timelines started and stopped while other threads record and make rows:
 * nothing recorded after a stop touches freed memory (ASan, TSan), and
 * every file is complete. */
static void test_start_stop_while_recording(void)
{
    const int rounds = TEST_TSAN ? 10 : 30;
    struct timespec ms2 = {0, 2000000L};
    char err[512];
    pthread_t th[3];
    trace_t t;
    int r, k;

    atomic_store_explicit(&churn_stop, 0, memory_order_relaxed);
    for (k = 0; k < 3; k++) {
        CHECK_EQ(pthread_create(&th[k], NULL, churn_main, (void *)(intptr_t)k), 0);
    }
    for (r = 0; r < rounds; r++) {
        tc__tl_test_config(r % 3 == 0 ? 16 : 0, 0); /* some rounds drop */
        CHECK_OK(tc__tl_start(tmp_path("churn.json"), r, err, sizeof(err)));
        nanosleep(&ms2, NULL);
        CHECK_OK(tc__tl_stop());
        load_trace(tmp_path("churn.json"), r, &t);
        free_trace(&t);
    }
    tc__tl_test_config(0, 0);
    atomic_store_explicit(&churn_stop, 1, memory_order_relaxed);
    for (k = 0; k < 3; k++) {
        CHECK_EQ(pthread_join(th[k], NULL), 0);
    }
}

/* Past TC_TL_MAX_TRACKS names, rows are shared. */
static void test_track_limit(void)
{
    char err[512], name[32];
    int i, n, row;

    tc__tl_test_config(8, 1);
    CHECK_OK(tc__tl_start(tmp_path("rows.json"), 0, err, sizeof(err)));
    for (i = 0; i < TC_TL_MAX_TRACKS + 5; i++) {
        n = snprintf(name, sizeof(name), "row/%d", i);
        row = tc__tl_track(name, (size_t)n);
        CHECK_EQ(row, i < TC_TL_MAX_TRACKS ? TC_TL_TRACK_FIRST + i : TC_TL_TRACK_OTHER);
    }
    CHECK_EQ(tc__tl_track(S("row/0")), TC_TL_TRACK_FIRST);
    CHECK_OK(tc__tl_stop());
    tc__tl_test_config(0, 0);
    {
        trace_t t;
        load_trace(tmp_path("rows.json"), 0, &t);
        n = snprintf(name, sizeof(name), "row/%d", TC_TL_MAX_TRACKS - 1);
        CHECK_EQ(find_row(&t, name, (size_t)n), TC_TL_TRACK_FIRST + TC_TL_MAX_TRACKS - 1);
        n = snprintf(name, sizeof(name), "row/%d", TC_TL_MAX_TRACKS);
        CHECK_EQ(find_row(&t, name, (size_t)n), -1);
        free_trace(&t);
    }
}

int main(void)
{
    static const char *const files[] = {"tl.3.json", "drop.json", "stress.json", "idle.json",
                                        "r12_12.json", "again.json",
                                        "churn.json", "rows.json"};
    size_t i;

    snprintf(dir, sizeof(dir), "/tmp/tc_timeline.XXXXXX");
    CHECK(mkdtemp(dir) != NULL);

    test_parser_rejects();
    test_not_running();
    test_escapes_args_threads();
    test_buffer_full();
    test_stress();
    test_idle_and_flush();
    test_rank_path_and_restart();
    test_start_stop_while_recording();
    test_track_limit();
    test_write_error();

    for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        unlink(tmp_path(files[i]));
    }
    CHECK_EQ(rmdir(dir), 0);
    printf("test_timeline: OK\n");
    return 0;
}
