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
 * Covered here: the parser rejects what is not JSON; a writer that is not
 * running (stop without start, unopenable and too long paths); an idle
 * writer that does not wake, a flush without a stop, "%r", restart, a write
 * error (/dev/full), starts and stops while other threads record, and the
 * row limit. What events become in the file (escapes, truncation, args,
 * concurrent threads, a full buffer, a stress run) is in
 * test_timeline_events.c; parts and the job-wide merge in
 * test_timeline_merge.c; main runs them all in one order. The public
 * tc_timeline_start/stop ask the engine for the rank
 * (engine/timeline_job.c): tests/mpi/test_timeline.c covers them. Runs under
 * TSan (loops shrink there).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "timeline_testutil.h"

static char dir[64];

const char *tmp_path(const char *name)
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
        "",
        "{",
        "[1,]",
        "{\"a\":1,}",
        "[1 2]",
        "{\"a\" 1}",
        "{\"a\":1}x",
        "[\"a\nb\"]",
        "[\"\\x\"]",
        "[01]",
        "[1.]",
        "[.5]",
        "[-]",
        "[1e]",
        "[tru]",
        "[\"\xff\"]",
        "[\"\xc0\xaf\"]",
        "[\"\\ud800\"]",
        "[\"\\udc00\"]",
        "{\"a\":1,\"a\":2}",
        "[\"abc]",
        "{1:2}",
    };
    static const char *const good[] = {
        "{}",
        "[]",
        " [ 1 , -0.5e+3 , true , false , null , \"\\u00e9\\ud83d\\ude00\\/\" ] ",
        "{\"a\":{\"b\":[{}]}}",
        "\"x\"",
        "0",
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

const jval_t *find_event(const trace_t *t, char ph, const char *name, size_t len)
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
    static const char *const files[] = {"tl.3.json",   "drop.json",    "stress.json", "idle.json",
                                        "r12_12.json", "again.json",   "side.0.json", "job.json",
                                        "shift.json",  "damaged.json", "drops.json",  "churn.json",
                                        "rows.json"};
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
