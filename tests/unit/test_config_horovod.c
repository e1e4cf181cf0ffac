/*
 * test_config_horovod.c - the HOROVOD_* variables tcoll reads
 * (src/util/config_horovod.c): each one's conversion into TCOLL_* knob
 * values (units, words, what a value sets and what it leaves alone), bad
 * values (refused, warned about naming the HOROVOD_* variable, nothing
 * set), the loader's precedence (TCOLL_* wins; later rows replace earlier
 * ones; nothing without TC_CONFIG_LOAD_HOROVOD), variables tcoll does not
 * read (never counted or warned about), the must-agree check on the
 * effective value, and the README's list.
 */
#define _GNU_SOURCE
#include "check.h"
#include "tc_test.h"
#include "util/config.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define LOAD_ALL (TC_CONFIG_LOAD_HOROVOD)

static long var_index(const char *name)
{
    size_t i;

    for (i = 0; i < tc__config_hvd_count(); i++) {
        if (strcmp(tc__config_hvd_name(i), name) == 0) {
            return (long)i;
        }
    }
    CHECK_MSG(0, "tcoll does not read %s", name);
    return -1;
}

/* Converts name=text; returns the number of knobs set (-1: refused, why in
 * *why_p). */
static int convert(const char *name, const char *text, tc_config_hvd_set_t *sets,
                   const char **why_p)
{
    static char why[256];
    int n;

    why[0] = '\0';
    n = tc__config_hvd_convert((size_t)var_index(name), text, sets, why, sizeof(why));
    CHECK_MSG(n >= -1 && n <= TC_CONFIG_HVD_MAX_SETS, "%s=%s: %d", name, text, n);
    CHECK_MSG(n >= 0 || why[0] != '\0', "%s=%s refused without a reason", name, text);
    if (why_p != NULL) {
        *why_p = why;
    }
    return n;
}

/* name=text sets exactly knob=want (one knob). */
static void expect_one(const char *name, const char *text, const char *knob, const char *want)
{
    tc_config_hvd_set_t sets[TC_CONFIG_HVD_MAX_SETS];
    int n = convert(name, text, sets, NULL);

    CHECK_MSG(n == 1, "%s=%s sets %d knobs, want 1", name, text, n);
    CHECK_MSG(strcmp(sets[0].knob, knob) == 0 && strcmp(sets[0].text, want) == 0,
              "%s=%s gives %s=%s, want %s=%s", name, text, sets[0].knob, sets[0].text, knob, want);
}

/* HOROVOD_FUSION_THRESHOLD=text sets both fusion knobs to kb. */
static void expect_fusion(const char *text, const char *kb)
{
    tc_config_hvd_set_t sets[TC_CONFIG_HVD_MAX_SETS];

    CHECK_EQ(convert("HOROVOD_FUSION_THRESHOLD", text, sets, NULL), 2);
    CHECK(strcmp(sets[0].knob, "TCOLL_FUSION_THRESHOLD_KB") == 0 && strcmp(sets[0].text, kb) == 0);
    CHECK(strcmp(sets[1].knob, "TCOLL_FUSION_BUFFER_KB") == 0 && strcmp(sets[1].text, kb) == 0);
}

static void expect_bad(const char *name, const char *text, const char *reason)
{
    tc_config_hvd_set_t sets[TC_CONFIG_HVD_MAX_SETS];
    const char *why;

    CHECK_MSG(convert(name, text, sets, &why) == -1, "%s=%s was taken", name, text);
    CHECK_MSG(strstr(why, reason) != NULL, "%s=%s: '%s' does not say '%s'", name, text, why,
              reason);
}

/* What each variable becomes, with Horovod's units and words. */
TC_CASE(each_variable_converts)
{
    tc_config_hvd_set_t sets[TC_CONFIG_HVD_MAX_SETS];

    /* bytes -> KiB, rounded up, for the largest tensor fused and the
     * largest group; 0: fusion off */
    expect_one("HOROVOD_FUSION_THRESHOLD", "0", "TCOLL_FUSION_THRESHOLD_KB", "0");
    expect_fusion("1", "1");
    expect_fusion("1024", "1");
    expect_fusion("1025", "2");
    expect_fusion("67108864", "65536");
    expect_fusion("1073741824", "1048576");
    expect_bad("HOROVOD_FUSION_THRESHOLD", "1073741825", "0..1073741824");
    expect_bad("HOROVOD_FUSION_THRESHOLD", "-1", "not an integer");
    expect_bad("HOROVOD_FUSION_THRESHOLD", "64MB", "not an integer");
    expect_bad("HOROVOD_FUSION_THRESHOLD", "", "not an integer");

    expect_one("HOROVOD_CACHE_CAPACITY", "0", "TCOLL_CACHE_CAPACITY", "0");
    expect_one("HOROVOD_CACHE_CAPACITY", "2048", "TCOLL_CACHE_CAPACITY", "2048");
    expect_bad("HOROVOD_CACHE_CAPACITY", "lots", "not an integer");

    expect_one("HOROVOD_TIMELINE", "/tmp/tl.json", "TCOLL_TIMELINE", "/tmp/tl.json");
    expect_one("HOROVOD_TIMELINE", "DISABLED", "TCOLL_TIMELINE", "");

    /* Horovod's levels, any case; WARNING is warn, FATAL error */
    expect_one("HOROVOD_LOG_LEVEL", "TRACE", "TCOLL_LOG_LEVEL", "trace");
    expect_one("HOROVOD_LOG_LEVEL", "debug", "TCOLL_LOG_LEVEL", "debug");
    expect_one("HOROVOD_LOG_LEVEL", "Info", "TCOLL_LOG_LEVEL", "info");
    expect_one("HOROVOD_LOG_LEVEL", "WARNING", "TCOLL_LOG_LEVEL", "warn");
    expect_one("HOROVOD_LOG_LEVEL", "error", "TCOLL_LOG_LEVEL", "error");
    expect_one("HOROVOD_LOG_LEVEL", "FATAL", "TCOLL_LOG_LEVEL", "error");
    expect_bad("HOROVOD_LOG_LEVEL", "warn", "TRACE, DEBUG, INFO, WARNING, ERROR, FATAL");

    expect_one("HOROVOD_STALL_CHECK_TIME_SECONDS", "30", "TCOLL_STALL_WARN_S", "30");
    expect_one("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "120", "TCOLL_STALL_ABORT_S", "120");
    expect_bad("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "1.5", "not an integer");
    /* disabling the stall check turns off both; 0 changes nothing */
    CHECK_EQ(convert("HOROVOD_STALL_CHECK_DISABLE", "1", sets, NULL), 2);
    CHECK(strcmp(sets[0].knob, "TCOLL_STALL_WARN_S") == 0 && strcmp(sets[0].text, "0") == 0);
    CHECK(strcmp(sets[1].knob, "TCOLL_STALL_ABORT_S") == 0 && strcmp(sets[1].text, "0") == 0);
    CHECK_EQ(convert("HOROVOD_STALL_CHECK_DISABLE", "0", sets, NULL), 0);
    expect_bad("HOROVOD_STALL_CHECK_DISABLE", "yes", "not an integer");

    expect_one("HOROVOD_HIERARCHICAL_ALLREDUCE", "1", "TCOLL_ALLREDUCE_ALGO", "hier");
    CHECK_EQ(convert("HOROVOD_HIERARCHICAL_ALLREDUCE", "0", sets, NULL), 0);

    expect_one("HOROVOD_MPI_THREADS_DISABLE", "1", "TCOLL_MPI_THREAD", "funneled");
    expect_one("HOROVOD_MPI_THREADS_DISABLE", "0", "TCOLL_MPI_THREAD", "multiple");

    /* every converted value is one its knob takes */
    {
        static const char *const samples[] = {"0", "1", "4096", "DISABLED", "info", "/x"};
        size_t i, s;
        for (i = 0; i < tc__config_hvd_count(); i++) {
            for (s = 0; s < sizeof(samples) / sizeof(samples[0]); s++) {
                char why[256], err[512];
                int n = tc__config_hvd_convert(i, samples[s], sets, why, sizeof(why)), j;
                for (j = 0; j < n; j++) {
                    tc_config_t cfg;
                    tc__config_defaults(&cfg);
                    CHECK_MSG(tc__config_parse_one(&cfg, sets[j].knob, sets[j].text, err,
                                                   sizeof(err)) == 0,
                              "%s=%s: %s", tc__config_hvd_name(i), samples[s], err);
                }
            }
        }
    }
    CHECK(tc__config_hvd_name(tc__config_hvd_count()) == NULL);
}

static const tc_knob_desc_t *describe(const tc_config_state_t *st, const char *name)
{
    static tc_knob_desc_t d;
    long i = tc__config_find(name);

    CHECK_MSG(i >= 0, "no knob %s", name);
    CHECK_EQ(tc__config_describe_state(st, (size_t)i, &d), 0);
    return &d;
}

static void expect_via(const tc_config_state_t *st, const char *knob, const char *via)
{
    const tc_knob_desc_t *d = describe(st, knob);

    if (via == NULL) {
        CHECK_MSG(d->via == NULL, "%s came through %s", knob, d->via);
        return;
    }
    CHECK_MSG(d->source == TC_KNOB_ENVIRONMENT && d->via != NULL && strcmp(d->via, via) == 0,
              "%s: source %s via %s, want %s", knob, d->source_name, d->via ? d->via : "-", via);
}

/* Precedence: TCOLL_* wins over HOROVOD_*, later rows replace earlier
 * ones, and nothing is read without the flag. */
TC_CASE(loader_precedence)
{
    tc_config_state_t st;
    char *env[16];
    int n = 0;

    env[n++] = "HOROVOD_FUSION_THRESHOLD=33554432";
    env[n++] = "HOROVOD_CACHE_CAPACITY=0";
    env[n++] = "TCOLL_CACHE_CAPACITY=7";
    env[n++] = "HOROVOD_STALL_CHECK_TIME_SECONDS=5";
    env[n++] = "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=9";
    env[n++] = "HOROVOD_LOG_LEVEL=WARNING";
    env[n++] = "HOROVOD_HIERARCHICAL_ALLREDUCE=1";
    env[n++] = "HOROVOD_TIMELINE=/tmp/hvd-%r.json";
    env[n++] = "HOROVOD_CACHE_CAPACITY=99"; /* the first entry counts, as with getenv */
    /* read by Horovod, not by tcoll: never counted, never warned about */
    env[n++] = "HOROVOD_CYCLE_TIME=3.5";
    env[n++] = "HOROVOD_AUTOTUNE=1";
    env[n++] = "HOROVOD_NOT_A_VARIABLE=x";
    env[n] = NULL;

    CHECK_EQ(tc__config_load(&st, env, LOAD_ALL), 0);
    CHECK_EQ(st.cfg.fusion_buffer_kb, 32768);
    CHECK_EQ(st.cfg.fusion_threshold_kb, 32768);
    CHECK_EQ(st.cfg.cache_capacity, 7); /* TCOLL_* wins */
    CHECK_EQ(st.cfg.stall_warn_s, 5);
    CHECK_EQ(st.cfg.stall_abort_s, 9);
    CHECK_EQ(st.cfg.log_level, TC_LOG_WARN);
    CHECK_EQ(st.cfg.allreduce_algo, TC_ALGO_HIER);
    CHECK(strcmp(st.cfg.timeline, "/tmp/hvd-%r.json") == 0);
    expect_via(&st, "TCOLL_FUSION_BUFFER_KB", "HOROVOD_FUSION_THRESHOLD");
    expect_via(&st, "TCOLL_STALL_ABORT_S", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS");
    expect_via(&st, "TCOLL_CACHE_CAPACITY", NULL);
    CHECK_EQ(describe(&st, "TCOLL_CACHE_CAPACITY")->source, TC_KNOB_ENVIRONMENT);
    expect_via(&st, "TCOLL_FUSION_THRESHOLD_KB", "HOROVOD_FUSION_THRESHOLD");
    CHECK_EQ(describe(&st, "TCOLL_SPIN")->source, TC_KNOB_DEFAULT);

    /* without the flag: HOROVOD_* is not read at all */
    CHECK_EQ(tc__config_load(&st, env, 0), 0);
    CHECK_EQ(st.cfg.fusion_buffer_kb, 4096);
    CHECK_EQ(st.cfg.stall_warn_s, 60);
    CHECK_EQ(st.cfg.allreduce_algo, TC_ALGO_AUTO);
    expect_via(&st, "TCOLL_FUSION_BUFFER_KB", NULL);

    /* the stall check disabled after its times: both off; a TCOLL_* stall
     * knob still wins */
    n = 0;
    env[n++] = "HOROVOD_STALL_CHECK_DISABLE=1";
    env[n++] = "HOROVOD_STALL_CHECK_TIME_SECONDS=5";
    env[n++] = "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=9";
    env[n++] = "HOROVOD_FUSION_THRESHOLD=0";
    env[n++] = "HOROVOD_LOG_LEVEL=FATAL";
    env[n++] = "TCOLL_LOG_LEVEL=debug";
    env[n] = NULL;
    CHECK_EQ(tc__config_load(&st, env, LOAD_ALL), 0);
    CHECK_EQ(st.cfg.stall_warn_s, 0);
    CHECK_EQ(st.cfg.stall_abort_s, 0);
    CHECK_EQ(st.cfg.fusion_threshold_kb, 0); /* fusion off */
    CHECK_EQ(st.cfg.fusion_buffer_kb, 4096); /* untouched */
    CHECK_EQ(st.cfg.log_level, TC_LOG_DEBUG);
    expect_via(&st, "TCOLL_STALL_WARN_S", "HOROVOD_STALL_CHECK_DISABLE");
    env[n++] = "TCOLL_STALL_WARN_S=3";
    env[n] = NULL;
    CHECK_EQ(tc__config_load(&st, env, LOAD_ALL), 0);
    CHECK_EQ(st.cfg.stall_warn_s, 3);
    CHECK_EQ(st.cfg.stall_abort_s, 0);

    /* HOROVOD_TIMELINE=DISABLED: no timeline; MPI threads */
    env[0] = "HOROVOD_TIMELINE=DISABLED";
    env[1] = "HOROVOD_MPI_THREADS_DISABLE=0";
    env[2] = NULL;
    CHECK_EQ(tc__config_load(&st, env, LOAD_ALL), 0);
    CHECK(st.cfg.timeline[0] == '\0');
    CHECK_EQ(describe(&st, "TCOLL_TIMELINE")->source, TC_KNOB_ENVIRONMENT);
    CHECK_EQ(st.cfg.mpi_thread, 1);
}

/* Bad values: counted, warned about naming the HOROVOD_* variable, and the
 * knob keeps its default (or what TCOLL_* gave it). */
TC_CASE(bad_values)
{
    tc_config_state_t st;
    char *env[8], path[] = "/tmp/tcoll-hvd-warn-XXXXXX", text[8192];
    int fd, saved, level = atomic_load(&tc__log_level);
    size_t got;
    FILE *f;

    env[0] = "HOROVOD_CACHE_CAPACITY=lots";
    env[1] = "HOROVOD_FUSION_THRESHOLD=2147483648";
    env[2] = "HOROVOD_LOG_LEVEL=loud";
    env[3] = "HOROVOD_STALL_CHECK_TIME_SECONDS=86401";
    env[4] = "HOROVOD_CYCLE_TIME=fast"; /* not read: not a problem */
    env[5] = NULL;

    fd = mkstemp(path);
    CHECK(fd >= 0);
    fflush(stderr);
    saved = dup(2);
    CHECK(saved >= 0 && dup2(fd, 2) == 2);
    atomic_store(&tc__log_level, TC_LOG_WARN);
    CHECK_EQ(tc__config_load(&st, env, LOAD_ALL | TC_CONFIG_LOAD_LOG), 4);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    atomic_store(&tc__log_level, level);
    f = fdopen(fd, "r");
    CHECK(f != NULL);
    rewind(f);
    got = fread(text, 1, sizeof(text) - 1, f);
    text[got] = '\0';
    fclose(f);
    unlink(path);

    CHECK_EQ(st.cfg.cache_capacity, 1024);
    CHECK_EQ(st.cfg.fusion_buffer_kb, 4096);
    CHECK_EQ(st.cfg.log_level, TC_LOG_WARN);
    CHECK_EQ(st.cfg.stall_warn_s, 60);
    CHECK_EQ(describe(&st, "TCOLL_CACHE_CAPACITY")->source, TC_KNOB_DEFAULT);
    CHECK_STR_CONTAINS(text, "HOROVOD_CACHE_CAPACITY=\"lots\" is not an integer in 0..1048576; "
                             "ignored");
    CHECK_STR_CONTAINS(text, "HOROVOD_FUSION_THRESHOLD=\"2147483648\" is not an integer in "
                             "0..1073741824; ignored");
    CHECK_STR_CONTAINS(text, "HOROVOD_LOG_LEVEL=\"loud\" is not one of TRACE, DEBUG, INFO, "
                             "WARNING, ERROR, FATAL; ignored");
    CHECK_STR_CONTAINS(text, "HOROVOD_STALL_CHECK_TIME_SECONDS=\"86401\"");
    CHECK_MSG(strstr(text, "HOROVOD_CYCLE_TIME") == NULL, "warned about a variable not read: %s",
              text);
    CHECK_MSG(strstr(text, "unknown") == NULL, "HOROVOD_* taken for unknown knobs: %s", text);
}

/* The knobs that must agree are compared with their effective value: one
 * rank with HOROVOD_FUSION_THRESHOLD, one without, differ on both fusion
 * knobs. */
TC_CASE(agreement_uses_the_effective_value)
{
    tc_config_state_t a, b;
    char *env[] = {"HOROVOD_FUSION_THRESHOLD=1048576", NULL};
    int all[2 * TC_CONFIG_AGREE_MAX];
    char msg[TC_CONFIG_AGREE_MSG_MAX];

    CHECK_EQ(tc__config_load(&a, env, LOAD_ALL), 0);
    CHECK_EQ(tc__config_load(&b, NULL, LOAD_ALL), 0);
    tc__config_agree_values(&a.cfg, all);
    tc__config_agree_values(&b.cfg, all + TC_CONFIG_AGREE_MAX);
    CHECK_EQ(tc__config_agree_check(all, 2, msg, sizeof(msg)), 2);
    CHECK_STR_CONTAINS(msg, "TCOLL_FUSION_THRESHOLD_KB differs across ranks: 1024 on rank 0, 64 "
                            "on rank 1; TCOLL_FUSION_BUFFER_KB differs across ranks: 1024 on rank "
                            "0, 4096 on rank 1");
    tc__config_agree_values(&a.cfg, all + TC_CONFIG_AGREE_MAX);
    CHECK_EQ(tc__config_agree_check(all, 2, msg, sizeof(msg)), 0);
}

/* The README's "Knobs" section lists every HOROVOD_* variable tcoll reads. */
TC_CASE(readme_lists_every_variable)
{
    static char text[1 << 19];
    FILE *readme = fopen(TCOLL_SOURCE_DIR "/README.md", "r");
    const char *knobs, *end;
    size_t n, i;

    CHECK(readme != NULL);
    n = fread(text, 1, sizeof(text) - 1, readme);
    CHECK_LT(n, sizeof(text) - 1);
    text[n] = '\0';
    fclose(readme);
    knobs = strstr(text, "\n## Knobs\n");
    CHECK(knobs != NULL);
    end = strstr(knobs + 1, "\n## ");
    if (end != NULL) {
        text[end - text] = '\0';
    }
    for (i = 0; i < tc__config_hvd_count(); i++) {
        char row[96];
        snprintf(row, sizeof(row), "| `%s` |", tc__config_hvd_name(i));
        CHECK_MSG(strstr(knobs, row) != NULL, "README.md's Knobs section has no row for %s",
                  tc__config_hvd_name(i));
    }
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    printf("test_config_horovod: ok\n");
    return 0;
}
