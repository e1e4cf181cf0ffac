/*
 * fuzz_config.c - libFuzzer entry point for the knob parser and the
 * environment loader (src/util/config.c).
 *
 * The first byte of an input picks what the rest is (its value modulo 3):
 *   0  "NAME=text": tc__config_parse_one on a scratch config, the input split
 *      at its first '=' or NUL (no separator: an empty text);
 *   1  a knob index byte, then the text: tc__config_parse_one for that knob;
 *   2  an environment: entries split at '\n' and NUL, handed to
 *      tc__config_load as a "NAME=value" array (no global environment),
 *      then again with the HOROVOD_* variables read (config_horovod.c).
 * Every string is its own heap block of exact size, so ASan catches a read
 * one byte past any of them.
 *
 * Whatever the input: parsing never crashes, overreads or overflows the error
 * buffer (it is also parsed into a tiny one, which must give the same result);
 * a rejected value leaves the config unchanged; an accepted one means what
 * its text says; every int knob stays in its range and every string knob is
 * NUL-terminated inside its field; every value's text parses back to the same
 * config. The loader's result must match a model built from
 * tc__config_parse_one: for each knob the first entry named after it counts,
 * accepted means source "environment", rejected means the default kept with
 * the text (cut to TC_CONFIG_REJECTED_MAX - 1 bytes) and its full length
 * recorded; the count returned is the rejected values plus the unknown
 * TCOLL_* names. With HOROVOD_* read: the config stays valid and a knob a
 * valid TCOLL_* entry set keeps its value. Any breach aborts with the knob at
 * fault. Never writes files.
 *
 * Build and run (corpus in a scratch copy so new inputs stay out of the tree):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *     src/util/config.c src/util/config_horovod.c src/util/log.c \
 *     tests/fuzz/fuzz_config.c -o fuzz_config
 *   cp -r tests/fuzz/corpus_config /tmp/corpus && ./fuzz_config -max_total_time=60 /tmp/corpus
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/config.h"
#include "util/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *knob)
{
    fprintf(stderr, "fuzz_config: %s%s%s\n", what, knob != NULL ? ": " : "",
            knob != NULL ? knob : "");
    abort();
}

/* A heap copy of s[0..n) plus a NUL, exactly that big. */
static char *dup_exact(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p == NULL) {
        fail("out of memory", NULL);
    }
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* Every knob of cfg in range, terminated, and its text parses back to it. */
static void check_config(const tc_config_t *cfg)
{
    static tc_config_state_t st; /* static: large, and only cfg is read */
    char err[512];
    size_t i;

    st.cfg = *cfg;
    for (i = 0; i < tc__config_count(); i++) {
        tc_knob_desc_t d;
        tc_config_t copy = *cfg;
        const char *field;
        if (tc__config_describe_state(&st, i, &d) != 0) {
            fail("describe failed", NULL);
        }
        if (d.offset + d.size > sizeof(tc_config_t) || d.size == 0) {
            fail("field outside tc_config_t", d.name);
        }
        field = (const char *)cfg + d.offset;
        if (strcmp(d.type, "string") == 0) {
            if (memchr(field, '\0', d.size) == NULL) {
                fail("string knob not terminated inside its field", d.name);
            }
            if (strlen(field) > (size_t)d.max || strcmp(field, d.value) != 0) {
                fail("string knob's description disagrees with its field", d.name);
            }
        } else {
            int v;
            memcpy(&v, field, sizeof(v));
            if (v < d.min || v > d.max || d.number != v) {
                fail("int knob outside its range", d.name);
            }
        }
        if (memchr(d.value, '\0', sizeof(d.value)) == NULL) {
            fail("value text not terminated", d.name);
        }
        if (tc__config_parse_one(&copy, d.name, d.value, err, sizeof(err)) != 0 ||
            memcmp(&copy, cfg, sizeof(copy)) != 0) {
            fail("value text does not parse back to the same value", d.name);
        }
    }
}

/* parse_one into cfg twice (a roomy and a tiny error buffer), checking what
 * it promises. */
static void parse_checked(tc_config_t *cfg, const char *name, const char *text)
{
    tc_config_t before = *cfg, other = *cfg;
    char err[512];
    char *tiny = malloc(7);
    long k = tc__config_find(name);
    int rc, rc2;

    if (tiny == NULL) {
        fail("out of memory", NULL);
    }
    memset(err, 'x', sizeof(err));
    rc = tc__config_parse_one(cfg, name, text, err, sizeof(err));
    rc2 = tc__config_parse_one(&other, name, text, tiny, 7);
    if (rc != rc2 || memcmp(cfg, &other, sizeof(other)) != 0) {
        fail("the error buffer's size changed the result", name);
    }
    if (rc != 0) {
        if (rc != -1) {
            fail("parse_one returned neither 0 nor -1", name);
        }
        if (memchr(err, '\0', sizeof(err)) == NULL || memchr(tiny, '\0', 7) == NULL) {
            fail("error message not terminated", name);
        }
        if (memcmp(cfg, &before, sizeof(before)) != 0) {
            fail("a rejected value changed the config", name);
        }
    } else {
        tc_config_state_t *st;
        tc_knob_desc_t d;
        if (k < 0) {
            fail("an unknown name was accepted", name);
        }
        st = calloc(1, sizeof(*st));
        if (st == NULL) {
            fail("out of memory", NULL);
        }
        st->cfg = *cfg;
        (void)tc__config_describe_state(st, (size_t)k, &d);
        if (strcmp(d.type, "string") == 0) {
            if (strcmp(d.value, text) != 0) {
                fail("an accepted string was not stored as given", name);
            }
        } else if (strcmp(d.type, "level") == 0) {
            if (strcasecmp(d.value, text) != 0) {
                fail("an accepted level was not stored as given", name);
            }
        } else if (strtol(text, NULL, 10) != d.number) {
            fail("an accepted integer was not stored as given", name);
        }
        free(st);
    }
    free(tiny);
    check_config(cfg);
}

/* The text of the first "name=..." entry, or NULL. */
static const char *model_find(char *const *env, const char *name)
{
    size_t n = strlen(name);
    for (; *env != NULL; env++) {
        if (strncmp(*env, name, n) == 0 && (*env)[n] == '=') {
            return *env + n + 1;
        }
    }
    return NULL;
}

static void load_checked(char *const *env, unsigned flags)
{
    static tc_config_state_t st;
    tc_config_t defaults;
    char err[512];
    size_t i;
    int expected = 0, got;
    char *const *e;

    tc__config_defaults(&defaults);
    atomic_store_explicit(&tc__log_level, TC_LOG_ERROR, memory_order_relaxed);
    got = tc__config_load(&st, env, flags);
    if (!(flags & TC_CONFIG_LOAD_SET_LEVEL) &&
        atomic_load_explicit(&tc__log_level, memory_order_relaxed) != TC_LOG_ERROR) {
        fail("the loader touched the global log level unasked", NULL);
    }
    for (i = 0; i < tc__config_count(); i++) {
        tc_knob_desc_t d;
        tc_config_t one = defaults;
        const char *text;
        (void)tc__config_describe_state(&st, i, &d);
        text = model_find(env, d.name);
        if (text != NULL && tc__config_parse_one(&one, d.name, text, err, sizeof(err)) == 0) {
            if (d.source != TC_KNOB_ENVIRONMENT || d.rejected != NULL) {
                fail("an accepted value is not marked as from the environment", d.name);
            }
        } else if (text != NULL) {
            size_t len = strlen(text);
            size_t kept = len < TC_CONFIG_REJECTED_MAX - 1 ? len : TC_CONFIG_REJECTED_MAX - 1;
            expected++;
            if (d.source != TC_KNOB_DEFAULT || d.rejected == NULL) {
                fail("a rejected value is not marked as rejected", d.name);
            }
            if (d.rejected_len != len || strlen(d.rejected) != kept ||
                memcmp(d.rejected, text, kept) != 0) {
                fail("the rejected text was not kept as given", d.name);
            }
        } else if (d.source != TC_KNOB_DEFAULT || d.rejected != NULL) {
            fail("an unset knob is not marked as default", d.name);
        }
        if (memcmp((const char *)&st.cfg + d.offset, (const char *)&one + d.offset, d.size) != 0) {
            fail("the loaded value differs from parsing its entry alone", d.name);
        }
    }
    for (e = env; *e != NULL; e++) {
        size_t len = strcspn(*e, "=");
        int known = 0;
        if (strncmp(*e, "TCOLL_", 6) != 0) {
            continue;
        }
        for (i = 0; i < tc__config_count() && !known; i++) {
            tc_knob_desc_t d;
            (void)tc__config_describe_state(&st, i, &d);
            known = strlen(d.name) == len && strncmp(d.name, *e, len) == 0;
        }
        expected += !known;
    }
    if (got != expected) {
        fail("the loader's count of problems is wrong", NULL);
    }
    if ((flags & TC_CONFIG_LOAD_SET_LEVEL) &&
        atomic_load_explicit(&tc__log_level, memory_order_relaxed) != st.cfg.log_level) {
        fail("the log level was not set", NULL);
    }
    check_config(&st.cfg);
}

/* The same environment with the HOROVOD_* variables read too: whatever they
 * say, the config stays valid, and every knob a valid TCOLL_* entry set
 * keeps that entry's value (TCOLL_* wins). */
static void load_horovod_checked(char *const *env)
{
    static tc_config_state_t plain, st;
    size_t i;

    (void)tc__config_load(&plain, env, 0);
    (void)tc__config_load(&st, env, TC_CONFIG_LOAD_HOROVOD);
    for (i = 0; i < tc__config_count(); i++) {
        tc_knob_desc_t d;
        (void)tc__config_describe_state(&plain, i, &d);
        if (d.source == TC_KNOB_ENVIRONMENT &&
            memcmp((const char *)&st.cfg + d.offset, (const char *)&plain.cfg + d.offset, d.size) !=
                0) {
            fail("a HOROVOD_* variable overrode a TCOLL_* knob", d.name);
        }
    }
    check_config(&st.cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tc_config_state_t blank; /* only for the knob names */
    const char *in;
    size_t n, i;
    tc_config_t cfg;

    if (size == 0) {
        return 0;
    }
    in = (const char *)data + 1;
    n = size - 1;
    tc__config_defaults(&cfg);
    switch (data[0] % 3) {
    case 0: {
        size_t cut = 0;
        char *name, *text;
        while (cut < n && in[cut] != '=' && in[cut] != '\0') {
            cut++;
        }
        name = dup_exact(in, cut);
        text = cut < n ? dup_exact(in + cut + 1, n - cut - 1) : dup_exact("", 0);
        parse_checked(&cfg, name, text);
        /* Again on a config that is no longer all defaults. */
        parse_checked(&cfg, name, text);
        free(name);
        free(text);
        break;
    }
    case 1: {
        tc_knob_desc_t d;
        char *text;
        if (n == 0) {
            return 0;
        }
        (void)tc__config_describe_state(&blank, (size_t)((unsigned char)in[0] % tc__config_count()),
                                        &d);
        text = dup_exact(in + 1, n - 1);
        parse_checked(&cfg, d.name, text);
        free(text);
        break;
    }
    default: {
        size_t count = 0, start = 0;
        char **env;
        for (i = 0; i < n; i++) {
            count += in[i] == '\n' || in[i] == '\0';
        }
        env = calloc(count + 2, sizeof(*env));
        if (env == NULL) {
            fail("out of memory", NULL);
        }
        count = 0;
        for (i = 0; i <= n; i++) {
            if (i == n || in[i] == '\n' || in[i] == '\0') {
                env[count++] = dup_exact(in + start, i - start);
                start = i + 1;
            }
        }
        env[count] = NULL;
        load_checked(env, size % 2 ? TC_CONFIG_LOAD_SET_LEVEL : 0);
        load_horovod_checked(env);
        for (i = 0; i < count; i++) {
            free(env[i]);
        }
        free(env);
        break;
    }
    }
    return 0;
}
