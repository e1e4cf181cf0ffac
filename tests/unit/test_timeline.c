/*
 * test_timeline.c - unit test of the timeline writer (src/util/timeline*.c),
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

/* ------------------------------------------------------------------------ */
/* Parts and their merge: the job-wide timeline, without MPI                 */
/* ------------------------------------------------------------------------ */

#define NPARTS 3

/* Records rank r's events into the running timeline; returns how many. */
static int record_part_events(int r)
{
    tc_tl_args_t a = TC_TL_ARGS_INIT;
    char longname[200], own[32];
    uint64_t t = tc__now_ns();
    int row = tc__tl_track(S("tensor/a")), n;

    a.kind = "allreduce";
    a.algo = "ring";
    a.dtype = TC_FLOAT32;
    a.op = TC_SUM;
    a.bytes = 4096 * (r + 1);
    a.cycle = 7;
    a.status = TC_OK;
    a.fused = 2;
    tc__tl_complete(row, S("ALLREDUCE"), "collective", t, 1500, &a);
    tc__tl_instant(row, S("q\"uote\n\xff"), "negotiation", t + 10, NULL);
    tc__tl_begin(TC_TL_TRACK_COLLECTIVES, S("span"), NULL, t + 20, NULL);
    tc__tl_end(TC_TL_TRACK_COLLECTIVES, NULL, 0, NULL, t + 30, NULL);
    memset(longname, 'n', sizeof(longname));
    tc__tl_instant(tc__tl_track(longname, sizeof(longname)), longname, sizeof(longname), NULL,
                   t + 40, NULL);
    n = snprintf(own, sizeof(own), "rank%d/only", r);
    tc__tl_instant(tc__tl_track(own, (size_t)n), S("mine"), "test", t + 50, NULL);
    return 6;
}

/* Feeds part's bytes to m in pieces of piece bytes (0: all at once). */
static void feed_part(tc_tl_merge_t *m, tc_tl_part_t *part, size_t piece, uint64_t upto)
{
    const tc_tl_part_info_t *info = tc__tl_part_info(part);
    char err[512], *buf = malloc(info->bytes + 1);
    uint64_t off;

    CHECK(buf != NULL);
    CHECK_OK(tc__tl_part_read(part, 0, buf, info->bytes, err, sizeof(err)));
    for (off = 0; off < upto;) {
        size_t n = piece == 0 || upto - off < piece ? (size_t)(upto - off) : piece;
        CHECK_OK(tc__tl_merge_feed(m, buf + off, n, err, sizeof(err)));
        off += n;
    }
    free(buf);
}

/* Starting parts: errors; one part per run; a file may still be written
 * while a part waits; nothing at the path yet. Fills parts[0..NPARTS). */
static void test_part_record(tc_tl_part_t **parts, int *nevents)
{
    char err[512], *tmpdir = getenv("TMPDIR") != NULL ? strdup(getenv("TMPDIR")) : NULL;
    const tc_tl_part_info_t *info;
    trace_t t;
    int r;

    CHECK(tc__tl_part_take() == NULL);
    CHECK_STATUS(tc__tl_start_part("/nonexistent-tcoll-dir/job.json", 0, err, sizeof(err)),
                 TC_ERR_ARG);
    CHECK_STR_CONTAINS(err, "/nonexistent-tcoll-dir/job.json");
    CHECK_STR_CONTAINS(err, strerror(ENOENT));
    setenv("TMPDIR", "/nonexistent-tcoll-dir", 1);
    CHECK_STATUS(tc__tl_start_part(tmp_path("job.json"), 0, err, sizeof(err)), TC_ERR_ARG);
    CHECK_STR_CONTAINS(err, "temporary file in /nonexistent-tcoll-dir");
    if (tmpdir != NULL) {
        setenv("TMPDIR", tmpdir, 1);
        free(tmpdir);
    } else {
        unsetenv("TMPDIR");
    }
    CHECK_EQ(tc__tl_active(), 0);

    for (r = 0; r < NPARTS; r++) {
        CHECK_OK(tc__tl_start_part(tmp_path("job.json"), r, err, sizeof(err)));
        CHECK_EQ(tc__tl_active(), 1);
        CHECK_STATUS(tc__tl_start(tmp_path("side.%r.json"), r, err, sizeof(err)), TC_ERR_STATE);
        CHECK_STR_CONTAINS(err, "already");
        nevents[r] = record_part_events(r);
        CHECK_OK(tc__tl_stop());
        CHECK_STATUS(tc__tl_stop(), TC_ERR_STATE);
        if (r == 0) {
            /* one part per run: it waits to be taken */
            CHECK_STATUS(tc__tl_start_part(tmp_path("job2.json"), r, err, sizeof(err)),
                         TC_ERR_STATE);
            CHECK_STR_CONTAINS(err, "already recorded");
            CHECK_STR_CONTAINS(err, tmp_path("job.json"));
            /* a file of its own still works meanwhile */
            CHECK_OK(tc__tl_start(tmp_path("side.%r.json"), r, err, sizeof(err)));
            tc__tl_instant(TC_TL_TRACK_OTHER, S("side"), NULL, tc__now_ns(), NULL);
            CHECK_OK(tc__tl_stop());
            load_trace(tmp_path("side.0.json"), 0, &t);
            CHECK(find_event(&t, 'i', S("side")) != NULL);
            free_trace(&t);
        }
        parts[r] = tc__tl_part_take();
        CHECK(parts[r] != NULL);
        CHECK(tc__tl_part_take() == NULL);
        info = tc__tl_part_info(parts[r]);
        CHECK_EQ(info->rank, r);
        CHECK_EQ(info->events, nevents[r]);
        CHECK_EQ(info->dropped, 0);
        CHECK_GT(info->bytes, 0);
        CHECK(strcmp(info->path, tmp_path("job.json")) == 0);
        CHECK(access(tmp_path("job.json"), F_OK) != 0); /* written by the merge only */
    }
}

/* Three ranks' parts, fed whole, byte by byte and in 7-byte pieces: one
 * trace, each rank on its own pid with its own rows and events. */
static void test_merge_ranks(tc_tl_part_t **parts, const int *nevents)
{
    const char *path = tmp_path("job.json");
    char err[512], own[32];
    int64_t origin = INT64_MAX;
    tc_tl_merge_t *m;
    trace_t t, v;
    int r, k, total = 0;

    for (r = 0; r < NPARTS; r++) {
        int64_t st = tc__tl_part_info(parts[r])->start_unix_ns;
        origin = st < origin ? st : origin;
    }
    CHECK_STATUS(tc__tl_merge_open("/nonexistent-tcoll-dir/job.json", origin, &m, err,
                                   sizeof(err)),
                 TC_ERR_ARG);
    CHECK_STR_CONTAINS(err, "/nonexistent-tcoll-dir/job.json");
    CHECK_OK(tc__tl_merge_open(path, origin, &m, err, sizeof(err)));
    for (r = 0; r < NPARTS; r++) {
        static const size_t piece[NPARTS] = {0, 1, 7};
        tc__tl_merge_rank(m, tc__tl_part_info(parts[r]));
        feed_part(m, parts[r], piece[r], tc__tl_part_info(parts[r])->bytes);
        CHECK_EQ(tc__tl_merge_rank_end(m, 1), 1);
    }
    CHECK_OK(tc__tl_merge_close(m, err, sizeof(err)));

    load_job_trace(path, NPARTS, &t);
    CHECK_EQ(jget(t.other, "ranks")->n, NPARTS);
    for (r = 0; r < NPARTS; r++) {
        const jval_t *info = job_rank_info(&t, r), *e, *a;
        int nonmeta = 0, pnames = 0;
        char pname[16];

        trace_view_pid(&t, r, &v);
        snprintf(pname, sizeof(pname), "rank %d", r);
        for (size_t i = 0; i < v.events->n; i++) {
            e = &v.events->items[i];
            if (jget(e, "ph")->str[0] != 'M') {
                nonmeta++;
                CHECK(num_of(e, "ts") >= 0);
            } else if (jstr_is(jget(e, "name"), S("process_name"))) {
                CHECK(jstr_is(jget(jget(e, "args"), "name"), pname, strlen(pname)));
                pnames++;
            }
        }
        CHECK_EQ(pnames, 1);
        CHECK_EQ(nonmeta, nevents[r]);
        CHECK(info != NULL);
        CHECK_EQ(num_of(info, "events"), nevents[r]);
        CHECK(jget(info, "complete")->b);
        CHECK_EQ(num_of(info, "start_unix_us"),
                 (double)(tc__tl_part_info(parts[r])->start_unix_ns / 1000));
        total += nonmeta;
        /* the rows: fixed, shared names, the rank's own */
        CHECK_EQ(find_row(&v, S("collectives")), TC_TL_TRACK_COLLECTIVES);
        CHECK_EQ(find_row(&v, S("tensor/a")), TC_TL_TRACK_FIRST);
        for (k = 0; k < NPARTS; k++) {
            int n = snprintf(own, sizeof(own), "rank%d/only", k);
            CHECK_EQ(find_row(&v, own, (size_t)n) >= 0, k == r);
        }
        e = find_event(&v, 'X', S("ALLREDUCE"));
        CHECK(e != NULL && jstr_is(jget(e, "cat"), S("collective")));
        CHECK_EQ(num_of(e, "dur"), 1.5);
        a = jget(e, "args");
        CHECK(jstr_is(jget(a, "kind"), S("allreduce")) && jstr_is(jget(a, "algo"), S("ring")));
        CHECK(jstr_is(jget(a, "dtype"), S("float32")) && jstr_is(jget(a, "op"), S("sum")));
        CHECK(jstr_is(jget(a, "status"), S("success")));
        CHECK_EQ(num_of(a, "bytes"), 4096 * (r + 1));
        CHECK_EQ(num_of(a, "cycle"), 7);
        CHECK_EQ(num_of(a, "fused"), 2);
        CHECK(jget(a, "root") == NULL);
        CHECK(find_event(&v, 'i', S("q\"uote\n\xc3\xbf")) != NULL);
        e = find_event(&v, 'B', S("span"));
        CHECK(e != NULL && jget(e, "cat") == NULL);
        for (size_t i = 0; i < v.events->n; i++) {
            e = &v.events->items[i];
            if (jget(e, "ph")->str[0] == 'E') {
                CHECK(jget(e, "name") == NULL);
            }
        }
        {
            char cut[TC_TL_NAME_MAX + 3];
            memset(cut, 'n', TC_TL_NAME_MAX);
            memcpy(cut + TC_TL_NAME_MAX, "...", 3);
            CHECK(find_event(&v, 'i', cut, sizeof(cut)) != NULL);
        }
        free_trace_view(&v);
    }
    CHECK_EQ(num_of(t.other, "events"), total);
    CHECK_EQ(num_of(t.other, "dropped_events"), 0);
    CHECK_EQ(num_of(t.other, "start_unix_us"), (double)(origin / 1000));
    free_trace(&t);
}

/* A rank's times move by its start's distance from the origin, exactly:
 * the same part merged as three ranks that started 0, 1 and 2.5 ms apart. */
static void test_merge_shift(tc_tl_part_t *part)
{
    static const int64_t delay_ns[NPARTS] = {0, 1000000, 2500000};
    const char *path = tmp_path("shift.json");
    tc_tl_part_info_t info = *tc__tl_part_info(part);
    int64_t origin = info.start_unix_ns;
    char err[512];
    tc_tl_merge_t *m;
    trace_t t, v[NPARTS];
    int r;

    CHECK_OK(tc__tl_merge_open(path, origin, &m, err, sizeof(err)));
    for (r = 0; r < NPARTS; r++) {
        info.rank = r;
        info.start_unix_ns = origin + delay_ns[r];
        tc__tl_merge_rank(m, &info);
        feed_part(m, part, 0, info.bytes);
        CHECK(tc__tl_merge_rank_end(m, 1));
    }
    CHECK_OK(tc__tl_merge_close(m, err, sizeof(err)));
    load_job_trace(path, NPARTS, &t);
    for (r = 0; r < NPARTS; r++) {
        trace_view_pid(&t, r, &v[r]);
        CHECK_EQ(v[r].events->n, v[0].events->n);
    }
    for (size_t i = 0; i < v[0].events->n; i++) {
        const jval_t *e0 = &v[0].events->items[i];
        if (jget(e0, "ph")->str[0] == 'M') {
            continue;
        }
        for (r = 1; r < NPARTS; r++) {
            double d = num_of(&v[r].events->items[i], "ts") - num_of(e0, "ts");
            CHECK_MSG(d > delay_ns[r] / 1000.0 - 1e-6 && d < delay_ns[r] / 1000.0 + 1e-6,
                      "rank %d's event %zu is %.6f us after rank 0's, want %.3f", r, i, d,
                      delay_ns[r] / 1000.0);
        }
    }
    for (r = 0; r < NPARTS; r++) {
        free_trace_view(&v[r]);
    }
    free_trace(&t);
}

/* A part cut short and parts that are not parts: the file stays valid
 * JSON, the whole items before the damage are kept, and otherData says the
 * sections are incomplete. */
static void test_merge_damaged(tc_tl_part_t *part, int nevents)
{
    static const unsigned char zeros[8] = {0};
    static const unsigned char unknown[9] = {5, 0, 0, 0, 'Z', 1, 2, 3, 4};
    const char *path = tmp_path("damaged.json");
    tc_tl_part_info_t info = *tc__tl_part_info(part);
    char err[512];
    tc_tl_merge_t *m;
    trace_t t, v;
    int r;

    CHECK_OK(tc__tl_merge_open(path, info.start_unix_ns, &m, err, sizeof(err)));
    info.rank = 0; /* cut: the last item (an event) is lost */
    tc__tl_merge_rank(m, &info);
    feed_part(m, part, 5, info.bytes - 3);
    CHECK_EQ(tc__tl_merge_rank_end(m, 1), 0);
    info.rank = 1; /* an item of length 0 */
    tc__tl_merge_rank(m, &info);
    CHECK_STATUS(tc__tl_merge_feed(m, zeros, sizeof(zeros), err, sizeof(err)), TC_ERR_TRANSPORT);
    CHECK_STR_CONTAINS(err, "rank 1's part of the timeline is malformed at byte 0");
    CHECK_STATUS(tc__tl_merge_feed(m, zeros, sizeof(zeros), err, sizeof(err)), TC_ERR_STATE);
    CHECK_EQ(tc__tl_merge_rank_end(m, 1), 0);
    info.rank = 2; /* a whole part, then an item of an unknown type */
    tc__tl_merge_rank(m, &info);
    feed_part(m, part, 0, info.bytes);
    CHECK_STATUS(tc__tl_merge_feed(m, unknown, sizeof(unknown), err, sizeof(err)),
                 TC_ERR_TRANSPORT);
    /* left open: close ends it (incomplete) */
    CHECK_OK(tc__tl_merge_close(m, err, sizeof(err)));

    load_job_trace(path, NPARTS, &t);
    for (r = 0; r < NPARTS; r++) {
        const jval_t *ri = job_rank_info(&t, r);
        CHECK(ri != NULL && !jget(ri, "complete")->b);
        CHECK_EQ(num_of(ri, "events"), r == 0 ? nevents - 1 : r == 1 ? 0 : nevents);
    }
    trace_view_pid(&t, 1, &v);
    CHECK(find_row(&v, S("collectives")) >= 0); /* the rank's rows are there, no events */
    free_trace_view(&v);
    free_trace(&t);
}

/* A part alone as a file (what a rank writes when the parts cannot be
 * gathered), with the drop count of a full buffer; the file name for it. */
static void test_part_save(tc_tl_part_t *part, int nevents)
{
    char err[512], path[PATH_MAX], name[32];
    const tc_tl_part_info_t *info = tc__tl_part_info(part);
    tc_tl_part_t *drops;
    const jval_t *e;
    trace_t t, v;
    int i, n;

    CHECK_EQ(tc__tl_rank_path("a/b/tl.json", 3, path, sizeof(path)), 0);
    CHECK(strcmp(path, "a/b/tl.rank3.json") == 0);
    CHECK_EQ(tc__tl_rank_path("tl", 12, path, sizeof(path)), 0);
    CHECK(strcmp(path, "tl.rank12") == 0);
    CHECK_EQ(tc__tl_rank_path("x.json/tl", 0, path, sizeof(path)), 0);
    CHECK(strcmp(path, "x.json/tl.rank0") == 0);
    CHECK_EQ(tc__tl_rank_path("d/.json", 1, path, sizeof(path)), 0);
    CHECK(strcmp(path, "d/.json.rank1") == 0);
    CHECK_EQ(tc__tl_rank_path("tl.json", 1234, path, 13), -1);

    CHECK_EQ(tc__tl_rank_path(tmp_path("alone.json"), info->rank, path, sizeof(path)), 0);
    CHECK_OK(tc__tl_part_save(part, path, err, sizeof(err)));
    load_job_trace(path, info->rank + 1, &t);
    trace_view_pid(&t, info->rank, &v); /* every event is the part's rank's */
    CHECK_EQ(v.events->n, t.events->n);
    free_trace_view(&v);
    CHECK_EQ(jget(t.other, "ranks")->n, 1);
    CHECK(jget(job_rank_info(&t, info->rank), "complete")->b);
    CHECK_EQ(num_of(t.other, "events"), nevents);
    free_trace(&t);
    unlink(path);

    /* a full buffer: the drops reach the part and the file */
    tc__tl_test_config(8, 1);
    CHECK_OK(tc__tl_start_part(tmp_path("drops.json"), 2, err, sizeof(err)));
    for (i = 0; i < 12; i++) {
        n = snprintf(name, sizeof(name), "drop/%d", i);
        tc__tl_instant(TC_TL_TRACK_OTHER, name, (size_t)n, NULL, tc__now_ns(), NULL);
    }
    CHECK_OK(tc__tl_stop());
    tc__tl_test_config(0, 0);
    drops = tc__tl_part_take();
    CHECK(drops != NULL);
    CHECK_EQ(tc__tl_part_info(drops)->events, 8);
    CHECK_EQ(tc__tl_part_info(drops)->dropped, 4);
    CHECK_OK(tc__tl_part_save(drops, tmp_path("drops.json"), err, sizeof(err)));
    tc__tl_part_free(drops);
    load_job_trace(tmp_path("drops.json"), 3, &t);
    CHECK_EQ(num_of(t.other, "dropped_events"), 4);
    CHECK_EQ(num_of(t.other, "events"), 8);
    e = find_event(&t, 'i', S("tcoll timeline: 4 events dropped (buffer full)"));
    CHECK(e != NULL && num_of(e, "pid") == 2);
    free_trace(&t);
}

static void test_parts(void)
{
    tc_tl_part_t *parts[NPARTS];
    int nevents[NPARTS], r;

    test_part_record(parts, nevents);
    test_merge_ranks(parts, nevents);
    test_merge_shift(parts[1]);
    test_merge_damaged(parts[2], nevents[2]);
    test_part_save(parts[1], nevents[1]);
    for (r = 0; r < NPARTS; r++) {
        tc__tl_part_free(parts[r]);
    }
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
                                        "r12_12.json", "again.json", "side.0.json", "job.json", "shift.json",
                                        "damaged.json", "drops.json",
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
    test_parts();

    for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        unlink(tmp_path(files[i]));
    }
    CHECK_EQ(rmdir(dir), 0);
    printf("test_timeline: OK\n");
    return 0;
}
