/*
 * config_horovod.c - the HOROVOD_* environment variables that have a tcoll
 * equivalent, and how each becomes the values of TCOLL_* knobs (Horovod's
 * units and words converted). The loader (config.c) applies them after the
 * TCOLL_* variables, and a knob whose TCOLL_* variable is set keeps that
 * value: TCOLL_* wins. Rows apply in table order, so a later row's value
 * replaces an earlier one's (HOROVOD_STALL_CHECK_DISABLE turns off what the
 * stall times set, as in Horovod).
 *
 * Pure: text in, knob texts out. A HOROVOD_* variable not in the table is
 * never read, and never warned about (Horovod has many that tcoll does not
 * need); the README's "Knobs" section lists the table.
 */
#define _GNU_SOURCE
#include "util/config.h"

#include "util/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef int (*convert_fn)(const char *text, tc_config_hvd_set_t *sets, char *why, size_t len);

typedef struct {
    const char *name;
    convert_fn convert;
} hvd_var_t;

/* A whole decimal integer in 0..max (Horovod reads these with strtol; tcoll
 * takes the whole text or nothing, as for its own knobs). */
static int whole(const char *text, long max, long *v, char *why, size_t len)
{
    char *end;

    errno = 0;
    *v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || *v < 0 || *v > max) {
        snprintf(why, len, "is not an integer in 0..%ld", max);
        return -1;
    }
    return 0;
}

static int put(tc_config_hvd_set_t *s, const char *knob, const char *fmt, long v)
{
    s->knob = knob;
    snprintf(s->text, sizeof(s->text), fmt, v);
    return 1;
}

/* Bytes. Horovod's threshold is both the most a fused group holds and so
 * the largest tensor fused: both knobs get it, in KiB rounded up (as
 * tcollrun's --fusion-threshold-mb); 0 turns fusion off. */
static int fusion_threshold(const char *text, tc_config_hvd_set_t *sets, char *why, size_t len)
{
    long v;

    if (whole(text, 1024L * 1048576L, &v, why, len) != 0) {
        return -1;
    }
    if (v == 0) {
        return put(&sets[0], "TCOLL_FUSION_THRESHOLD_KB", "%ld", 0);
    }
    put(&sets[0], "TCOLL_FUSION_THRESHOLD_KB", "%ld", (v + 1023) / 1024);
    return 1 + put(&sets[1], "TCOLL_FUSION_BUFFER_KB", "%ld", (v + 1023) / 1024);
}

static int cache_capacity(const char *text, tc_config_hvd_set_t *sets, char *why, size_t len)
{
    long v;

    return whole(text, 1048576, &v, why, len) != 0
               ? -1
               : put(&sets[0], "TCOLL_CACHE_CAPACITY", "%ld", v);
}

static int stall_check_time(const char *text, tc_config_hvd_set_t *sets, char *why, size_t len)
{
    long v;

    return whole(text, 86400, &v, why, len) != 0 ? -1
                                                 : put(&sets[0], "TCOLL_STALL_WARN_S", "%ld", v);
}

static int stall_shutdown_time(const char *text, tc_config_hvd_set_t *sets, char *why, size_t len)
{
    long v;

    return whole(text, 86400, &v, why, len) != 0 ? -1
                                                 : put(&sets[0], "TCOLL_STALL_ABORT_S", "%ld", v);
}

/* > 0: no stall warnings and no stall failures; 0 changes nothing. */
static int stall_check_disable(const char *text, tc_config_hvd_set_t *sets, char *why, size_t len)
{
    long v;

    if (whole(text, 1000000, &v, why, len) != 0) {
        return -1;
    }
    if (v == 0) {
        return 0;
    }
    put(&sets[0], "TCOLL_STALL_WARN_S", "%ld", 0);
    return 1 + put(&sets[1], "TCOLL_STALL_ABORT_S", "%ld", 0);
}

/* > 0: the hierarchical allreduce; 0 changes nothing (tcoll's auto). */
static int hierarchical_allreduce(const char *text, tc_config_hvd_set_t *sets, char *why,
                                  size_t len)
{
    long v;

    if (whole(text, 1000000, &v, why, len) != 0) {
        return -1;
    }
    if (v == 0) {
        return 0;
    }
    sets[0].knob = "TCOLL_ALLREDUCE_ALGO";
    snprintf(sets[0].text, sizeof(sets[0].text), "hier");
    return 1;
}

/* > 0: MPI_THREAD_FUNNELED (Horovod: no threads); 0: MPI_THREAD_MULTIPLE
 * (Horovod's default). */
static int mpi_threads_disable(const char *text, tc_config_hvd_set_t *sets, char *why, size_t len)
{
    long v;

    if (whole(text, 1000000, &v, why, len) != 0) {
        return -1;
    }
    sets[0].knob = "TCOLL_MPI_THREAD";
    snprintf(sets[0].text, sizeof(sets[0].text), "%s", v > 0 ? "funneled" : "multiple");
    return 1;
}

/* A path (one file for the job, written by rank 0, as tcoll does for a path
 * without %r); DISABLED: none. */
static int timeline(const char *text, tc_config_hvd_set_t *sets, char *why, size_t len)
{
    if (strlen(text) >= sizeof(sets[0].text)) {
        snprintf(why, len, "is longer than %zu bytes", sizeof(sets[0].text) - 1);
        return -1;
    }
    sets[0].knob = "TCOLL_TIMELINE";
    snprintf(sets[0].text, sizeof(sets[0].text), "%s", strcmp(text, "DISABLED") == 0 ? "" : text);
    return 1;
}

/* Horovod's levels; FATAL (only fatal errors) is tcoll's error. */
static int log_level(const char *text, tc_config_hvd_set_t *sets, char *why, size_t len)
{
    static const char *const names[][2] = {{"trace", "trace"}, {"debug", "debug"},
                                           {"info", "info"},   {"warning", "warn"},
                                           {"error", "error"}, {"fatal", "error"}};
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcasecmp(text, names[i][0]) == 0) {
            sets[0].knob = "TCOLL_LOG_LEVEL";
            snprintf(sets[0].text, sizeof(sets[0].text), "%s", names[i][1]);
            return 1;
        }
    }
    snprintf(why, len, "is not one of TRACE, DEBUG, INFO, WARNING, ERROR, FATAL");
    return -1;
}

/* Table order is the order of application (file comment). */
static const hvd_var_t vars[] = {
    {"HOROVOD_LOG_LEVEL", log_level},
    {"HOROVOD_FUSION_THRESHOLD", fusion_threshold},
    {"HOROVOD_CACHE_CAPACITY", cache_capacity},
    {"HOROVOD_TIMELINE", timeline},
    {"HOROVOD_STALL_CHECK_TIME_SECONDS", stall_check_time},
    {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", stall_shutdown_time},
    {"HOROVOD_STALL_CHECK_DISABLE", stall_check_disable},
    {"HOROVOD_HIERARCHICAL_ALLREDUCE", hierarchical_allreduce},
    {"HOROVOD_MPI_THREADS_DISABLE", mpi_threads_disable},
};
#define NVARS (sizeof(vars) / sizeof(vars[0]))

size_t tc__config_hvd_count(void)
{
    return NVARS;
}

const char *tc__config_hvd_name(size_t i)
{
    return i < NVARS ? vars[i].name : NULL;
}

int tc__config_hvd_convert(size_t i, const char *text, tc_config_hvd_set_t *sets, char *why,
                           size_t len)
{
    if (i >= NVARS || text == NULL) {
        snprintf(why, len, "is not a variable tcoll reads");
        return -1;
    }
    return vars[i].convert(text, sets, why, len);
}

int tc__config_hvd_load(char *const *env, const char *only, int log, tc_config_hvd_set_fn set,
                        void *arg)
{
    tc_config_hvd_set_t sets[TC_CONFIG_HVD_MAX_SETS];
    char why[256], err[512];
    int problems = 0, n, j, rc;
    size_t i;

    for (i = 0; i < NVARS; i++) {
        const char *name = vars[i].name, *text = NULL;
        size_t len = strlen(name);
        char *const *e;
        for (e = env; e != NULL && *e != NULL && text == NULL; e++) {
            text = strncmp(*e, name, len) == 0 && (*e)[len] == '=' ? *e + len + 1 : NULL;
        }
        if (text == NULL || (only != NULL && strcmp(only, name) != 0)) {
            continue;
        }
        if ((n = vars[i].convert(text, sets, why, sizeof(why))) < 0) {
            problems++;
            if (log) {
                TC_WARN("config", "%s=\"%s\" %s; ignored", name, text, why);
            }
            continue;
        }
        for (j = 0; j < n; j++) {
            rc = set(arg, sets[j].knob, sets[j].text, i, err, sizeof(err));
            problems += rc < 0;
            if (log && rc < 0) {
                TC_WARN("config", "%s=\"%s\": %s; ignored", name, text, err);
            } else if (log && rc > 0) {
                TC_INFO("config", "%s=%s ignored: %s is set", name, text, sets[j].knob);
            } else if (log) {
                TC_INFO("config", "%s=%s (from %s=%s)", sets[j].knob, sets[j].text, name, text);
            }
        }
    }
    return problems;
}
