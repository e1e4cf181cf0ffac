/*
 * test_config.c - the knob table: defaults, valid and invalid values (which
 * must be rejected with a message and change nothing), unknown names, where
 * each value came from (the loader on explicit arrays and on the live
 * environment), the descriptions tcoll-info prints, and the README rows.
 */
#define _GNU_SOURCE
#include "check.h"
#include "tc_test.h"
#include "util/config.h"
#include "util/log.h"

#include <stdlib.h>

static const tc_knob_desc_t *describe(const tc_config_state_t *st, const char *name)
{
    static tc_knob_desc_t d;
    long i = tc__config_find(name);
    CHECK_MSG(i >= 0, "no knob %s", name);
    if (st != NULL) {
        CHECK_EQ(tc__config_describe_state(st, (size_t)i, &d), 0);
    } else {
        CHECK_EQ(tc__config_describe((size_t)i, &d), 0);
    }
    CHECK(strcmp(d.name, name) == 0);
    return &d;
}

/* Every value's text parses back to the same value. */
static void test_round_trip(const tc_config_t *cfg)
{
    tc_config_state_t st;
    char err[256];
    size_t i;

    memset(&st, 0, sizeof(st));
    st.cfg = *cfg;
    for (i = 0; i < tc__config_count(); i++) {
        tc_knob_desc_t d;
        tc_config_t copy = *cfg;
        CHECK_EQ(tc__config_describe_state(&st, i, &d), 0);
        CHECK_GE(d.number, d.min);
        CHECK_LE(d.number, d.max);
        CHECK_LE(d.offset + d.size, sizeof(tc_config_t));
        CHECK_MSG(tc__config_parse_one(&copy, d.name, d.value, err, sizeof(err)) == 0, "%s", err);
        CHECK_MSG(memcmp(&copy, cfg, sizeof(copy)) == 0, "%s='%s' does not round-trip", d.name,
                  d.value);
        CHECK(d.doc != NULL && d.doc[0] != '\0');
    }
}

/* Defaults, and one value at a time: a valid one is taken, a bad one or an
 * unknown name is refused with a message naming the knob and changes
 * nothing; every value's text parses back to the same value. */
TC_CASE(defaults_and_one_value_at_a_time)
{
    tc_config_t cfg, before;
    char err[256];

    tc__config_defaults(&cfg);
    CHECK_EQ(cfg.log_level, TC_LOG_WARN);
    CHECK_EQ(cfg.idle_poll_ms, 20);
    CHECK_EQ(cfg.backoff_max_us, 200);
    CHECK_EQ(cfg.proxy_cpus[0], '\0');

    CHECK_EQ(tc__config_parse_one(&cfg, "TCOLL_LOG_LEVEL", "DEBUG", err, sizeof(err)), 0);
    CHECK_EQ(cfg.log_level, TC_LOG_DEBUG);
    CHECK_EQ(tc__config_parse_one(&cfg, "TCOLL_IDLE_POLL_MS", "5", err, sizeof(err)), 0);
    CHECK_EQ(cfg.idle_poll_ms, 5);
    CHECK_EQ(tc__config_parse_one(&cfg, "TCOLL_PROXY_CPUS", "0-3,8", err, sizeof(err)), 0);
    CHECK(strcmp(cfg.proxy_cpus, "0-3,8") == 0);

    before = cfg;
    {
        const char *bad[][2] = {
            {"TCOLL_LOG_LEVEL", "loud"},   {"TCOLL_IDLE_POLL_MS", "0"},
            {"TCOLL_IDLE_POLL_MS", "12x"}, {"TCOLL_IDLE_POLL_MS", ""},
            {"TCOLL_SPIN", "-1"},          {"TCOLL_BACKOFF_MAX_US", "99999999999999999999"},
            {"TCOLL_NO_SUCH_KNOB", "1"},
        };
        size_t i;
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            err[0] = '\0';
            CHECK_EQ(tc__config_parse_one(&cfg, bad[i][0], bad[i][1], err, sizeof(err)), -1);
            CHECK_STR_CONTAINS(err, bad[i][0]);
            CHECK(memcmp(&cfg, &before, sizeof(cfg)) == 0);
        }
    }
    {
        char longval[400];
        memset(longval, '1', sizeof(longval) - 1);
        longval[sizeof(longval) - 1] = '\0';
        CHECK_EQ(tc__config_parse_one(&cfg, "TCOLL_PROXY_CPUS", longval, err, sizeof(err)), -1);
        CHECK(memcmp(&cfg, &before, sizeof(cfg)) == 0);
    }
    test_round_trip(&cfg);
}

/*
 * The live configuration, read from the environment once per process: a bad
 * value keeps the default; each value's source, as tcoll-info shows it; one
 * "NAME value" line per knob. It must be the first case to read the live
 * configuration: keep it above every case that does (cases run in source
 * order, also when picked with --case).
 */
TC_CASE(environment_read_once)
{
    const tc_config_t *live;

    setenv("TCOLL_IDLE_POLL_MS", "not-a-number", 1);
    setenv("TCOLL_SPIN", "7", 1);
    setenv("TCOLL_LOG_LEVEL", "error", 1);
    setenv("TCOLL_TYPO_KNOB", "1", 1);
    live = tc__config();
    CHECK_EQ(live->idle_poll_ms, 20);
    CHECK_EQ(live->spin, 7);
    CHECK_EQ(live->log_level, TC_LOG_ERROR);
    CHECK(tc__config() == live);
    tc__config_print(stdout, NULL);

    /* ... and each value's source, as tcoll-info shows it. */
    {
        const tc_knob_desc_t *d = describe(NULL, "TCOLL_SPIN");
        size_t i, from_env = 0;
        CHECK_EQ(d->source, TC_KNOB_ENVIRONMENT);
        CHECK(strcmp(d->value, "7") == 0);
        d = describe(NULL, "TCOLL_IDLE_POLL_MS");
        CHECK_EQ(d->source, TC_KNOB_DEFAULT);
        CHECK(d->rejected != NULL && strcmp(d->rejected, "not-a-number") == 0);
        CHECK(strcmp(d->value, "20") == 0);
        d = describe(NULL, "TCOLL_LOG_LEVEL");
        CHECK_EQ(d->source, TC_KNOB_ENVIRONMENT);
        CHECK(strcmp(d->value, "error") == 0);
        for (i = 0; i < tc__config_count(); i++) {
            tc_knob_desc_t k;
            CHECK_EQ(tc__config_describe(i, &k), 0);
            from_env += k.source == TC_KNOB_ENVIRONMENT;
        }
        CHECK_EQ(from_env, 2);
    }
    test_round_trip(live);

    /* The value listing: one "NAME value" line per knob. */
    {
        char text[8192];
        FILE *mem = fmemopen(text, sizeof(text), "w");
        CHECK(mem != NULL);
        tc__config_print(mem, live);
        CHECK_LT(ftell(mem), (long)sizeof(text) - 1);
        fclose(mem);
        CHECK(strstr(text, "TCOLL_SPIN             7\n") != NULL);
        CHECK(strstr(text, "TCOLL_LOG_LEVEL        error\n") != NULL);
    }
}

/* The loader on explicit "NAME=value" arrays: sources, rejected text, counts. */
TC_CASE(loader_on_explicit_arrays)
{
    tc_config_state_t st;
    const tc_knob_desc_t *d;
    static char longbad[1000];
    char *env[16];
    size_t i, n = 0;

    /* No environment at all: every knob at its default. */
    CHECK_EQ(tc__config_load(&st, NULL, 0), 0);
    for (i = 0; i < tc__config_count(); i++) {
        tc_knob_desc_t k;
        CHECK_EQ(tc__config_describe_state(&st, i, &k), 0);
        CHECK_EQ(k.source, TC_KNOB_DEFAULT);
        CHECK(strcmp(k.source_name, "default") == 0);
        CHECK(k.rejected == NULL);
        CHECK_MSG(strcmp(k.value, k.def) == 0, "%s: value '%s', default '%s'", k.name, k.value,
                  k.def);
    }

    memset(longbad, 'x', sizeof(longbad) - 1);
    memcpy(longbad, "TCOLL_YIELD_US=", 15);
    env[n++] = "PATH=/usr/bin";
    env[n++] = "TCOLL_RING_CHUNK_KB=128";
    env[n++] = "TCOLL_RING_CHUNK_KB=512"; /* the first one counts, as with getenv */
    env[n++] = "TCOLL_SPIN=0x10";
    env[n++] = "TCOLL_TIMELINE="; /* set to its default: still the environment */
    env[n++] = "TCOLL_LOG_LEVEL=Trace";
    env[n++] = "TCOLL_STALL_WARN_S"; /* no '=': sets nothing, but is a known name */
    env[n++] = "TCOLL_NOT_A_KNOB=1";
    env[n++] = "TCOLL_=";
    env[n++] = "XTCOLL_SPIN=3";
    env[n++] = longbad;
    env[n] = NULL;
    /* Rejected: SPIN, YIELD_US; unknown: NOT_A_KNOB and TCOLL_. */
    CHECK_EQ(tc__config_load(&st, env, 0), 4);
    CHECK_EQ(st.cfg.ring_chunk_kb, 128);
    CHECK_EQ(st.cfg.log_level, TC_LOG_TRACE);
    CHECK_EQ(st.cfg.spin, 0);

    d = describe(&st, "TCOLL_RING_CHUNK_KB");
    CHECK_EQ(d->source, TC_KNOB_ENVIRONMENT);
    CHECK(strcmp(d->source_name, "environment") == 0);
    CHECK(strcmp(d->value, "128") == 0 && strcmp(d->def, "256") == 0);
    CHECK(strcmp(d->type, "int") == 0 && strcmp(d->range, "1..1048576") == 0);
    CHECK(d->rejected == NULL);
    CHECK_EQ(d->number, 128);

    d = describe(&st, "TCOLL_SPIN");
    CHECK_EQ(d->source, TC_KNOB_DEFAULT);
    CHECK(d->rejected != NULL && strcmp(d->rejected, "0x10") == 0);
    CHECK_EQ(d->rejected_len, 4);
    CHECK(strcmp(d->value, "0") == 0);

    d = describe(&st, "TCOLL_YIELD_US");
    CHECK_EQ(d->source, TC_KNOB_DEFAULT);
    CHECK(d->rejected != NULL);
    CHECK_EQ(d->rejected_len, sizeof(longbad) - 1 - 15);
    CHECK_EQ(strlen(d->rejected), TC_CONFIG_REJECTED_MAX - 1);
    CHECK(strspn(d->rejected, "x") == TC_CONFIG_REJECTED_MAX - 1);
    CHECK(strcmp(d->value, "200") == 0);

    d = describe(&st, "TCOLL_TIMELINE");
    CHECK_EQ(d->source, TC_KNOB_ENVIRONMENT);
    CHECK(strcmp(d->value, "") == 0 && strcmp(d->type, "string") == 0);
    CHECK_EQ(d->max, 1023);

    d = describe(&st, "TCOLL_LOG_LEVEL");
    CHECK_EQ(d->source, TC_KNOB_ENVIRONMENT);
    CHECK(strcmp(d->value, "trace") == 0 && strcmp(d->type, "level") == 0);
    CHECK_EQ(d->number, TC_LOG_TRACE);

    d = describe(&st, "TCOLL_STALL_WARN_S");
    CHECK_EQ(d->source, TC_KNOB_DEFAULT);
    CHECK(d->rejected == NULL);

    /* An empty value is rejected for an integer, and kept as its text. */
    env[0] = "TCOLL_PEER_TIMEOUT_S=";
    env[1] = NULL;
    CHECK_EQ(tc__config_load(&st, env, 0), 1);
    d = describe(&st, "TCOLL_PEER_TIMEOUT_S");
    CHECK(d->rejected != NULL && d->rejected[0] == '\0' && d->rejected_len == 0);
    CHECK_EQ(d->source, TC_KNOB_DEFAULT);

    CHECK_EQ(tc__config_find("TCOLL_NO_SUCH_KNOB"), -1);
    CHECK_EQ(tc__config_describe_state(&st, tc__config_count(), (tc_knob_desc_t *)d), -1);
    CHECK_EQ(tc__config_describe(tc__config_count() + 5, (tc_knob_desc_t *)d), -1);
}

/* Every knob in the table is documented in the README. */
TC_CASE(readme_documents_every_knob)
{
    char table[16384], *line, *save = NULL;
    FILE *mem = fmemopen(table, sizeof(table), "w");
    FILE *readme = fopen(TCOLL_SOURCE_DIR "/README.md", "r");
    static char text[1 << 20]; /* the whole README, with room to grow */
    size_t n;
    CHECK(mem != NULL && readme != NULL);
    tc__config_print(mem, NULL);
    CHECK_LT(ftell(mem), (long)sizeof(table) - 1); /* not cut short */
    fclose(mem);
    /* The rows read like the README's: "(empty)" and a trailing range. */
    CHECK(strstr(table, "| `TCOLL_TIMELINE` | (empty) | ") != NULL);
    CHECK(strstr(table, "| `TCOLL_IDLE_POLL_MS` | `20` | ") != NULL);
    CHECK(strstr(table, " 1..10000. | no |\n") != NULL);
    CHECK(strstr(table, " 1..1048576. | yes |\n") != NULL); /* TCOLL_RING_CHUNK_KB */
    n = fread(text, 1, sizeof(text) - 1, readme);
    CHECK_MSG(n < sizeof(text) - 1, "README.md is larger than this test reads");
    text[n] = '\0';
    fclose(readme);
    for (line = strtok_r(table, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char name[64];
        CHECK_EQ(sscanf(line, "| `%63[A-Z0-9_]`", name), 1);
        CHECK_MSG(strstr(text, name) != NULL, "README.md does not document %s", name);
    }
}

int main(int argc, char **argv)
{
    tc_test_main(argc, argv, NULL);
    printf("test_config: ok\n");
    return 0;
}
