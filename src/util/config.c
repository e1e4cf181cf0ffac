/*
 * config.c - the table of TCOLL_* knobs and their parser.
 *
 * Adding a knob means adding one row below and one field in tc_config_t;
 * nothing else parses the environment. Bad values warn and keep the default:
 * configuration must never crash the process or silently change meaning.
 */
#define _GNU_SOURCE
#include "util/config.h"

#include "util/log.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

typedef enum { KNOB_INT, KNOB_LEVEL, KNOB_STRING } knob_type_t;

typedef struct {
    const char *name;
    knob_type_t type;
    size_t offset;
    const char *def;
    long min, max;
    const char *doc;
} knob_t;

#define OFF(field) offsetof(tc_config_t, field)

static const knob_t knobs[] = {
    {"TCOLL_LOG_LEVEL", KNOB_LEVEL, OFF(log_level), "warn", 0, 0,
     "Log verbosity: error, warn, info, debug or trace."},
    {"TCOLL_IDLE_POLL_MS", KNOB_INT, OFF(idle_poll_ms), "20", 1, 10000,
     "How often (ms) an engine thread with nothing pending wakes to check for "
     "control messages from other ranks (a remote shutdown)."},
    {"TCOLL_SPIN", KNOB_INT, OFF(spin), "0", 0, 1000000,
     "Busy polls (with a cpu pause) before a waiting thread starts to yield. 0 "
     "by default: under KVM, pause loops make the hypervisor deschedule the "
     "vCPU, and yielding polls measured faster."},
    {"TCOLL_YIELD_US", KNOB_INT, OFF(yield_us), "200", 0, 1000000,
     "After spinning, a waiting thread polls with sched_yield for this long (us) "
     "before it starts to sleep: the core goes to any runnable thread, yet a "
     "transfer that completes in microseconds is not slept through."},
    {"TCOLL_BACKOFF_MAX_US", KNOB_INT, OFF(backoff_max_us), "200", 1, 100000,
     "Longest sleep (us) between two polls while work is pending; sleeps grow "
     "from 1 us to this cap and reset on progress."},
    {"TCOLL_RING_CHUNK_KB", KNOB_INT, OFF(ring_chunk_kb), "256", 1, 1048576,
     "Chunk (KiB) in which ring allreduce steps move data, so each chunk is "
     "reduced while still in cache. Must be the same on every rank."},
    {"TCOLL_FUSION_THRESHOLD_KB", KNOB_INT, OFF(fusion_threshold_kb), "64", 0, 1048576,
     "Allreduces of at most this many KiB that rank 0 schedules one after "
     "another with the same dtype and op are packed into one buffer and reduced "
     "as one; 0 turns fusion off. Must be the same on every rank."},
    {"TCOLL_FUSION_BUFFER_KB", KNOB_INT, OFF(fusion_buffer_kb), "4096", 1, 1048576,
     "Largest fused group (KiB); the buffer is kept between steps. Must be the "
     "same on every rank."},
    {"TCOLL_EAGER_BYTES", KNOB_INT, OFF(eager_bytes), "16384", 0, 65536,
     "A cached allreduce of at most this many bytes travels inside the "
     "negotiation message that says it is ready, and every rank reduces it "
     "where it lands: no separate transfer. 0 turns this off."},
    {"TCOLL_CACHE_CAPACITY", KNOB_INT, OFF(cache_capacity), "1024", 0, 1048576,
     "Names the response cache holds: a name negotiated once is filed on every "
     "rank, and later submissions with the same parameters skip rank 0's "
     "decision. 0 turns the cache off. Rank 0's value counts."},
    {"TCOLL_OUTPUT_POOL_MB", KNOB_INT, OFF(output_pool_mb), "256", 0, 1048576,
     "Memory (MiB) of freed allgather outputs (1 MiB and up) kept for reuse by "
     "later allgathers instead of mapping fresh pages; 0 keeps none."},
    {"TCOLL_PROXY_CPUS", KNOB_STRING, OFF(proxy_cpus), "", 0, 0,
     "CPUs the default proxy init hook binds its thread to (hwloc list syntax, "
     "e.g. 0-3,8), or NUMA nodes as numa:<nodes>; empty binds nothing."},
};
#define NKNOBS (sizeof(knobs) / sizeof(knobs[0]))

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

static int set_knob(tc_config_t *cfg, const knob_t *k, const char *text, char *err, size_t errlen)
{
    char *end;
    long v;
    size_t i;

    switch (k->type) {
    case KNOB_INT:
        errno = 0;
        v = strtol(text, &end, 10);
        if (errno != 0 || end == text || *end != '\0' || v < k->min || v > k->max) {
            snprintf(err, errlen, "%s=\"%s\" is not an integer in %ld..%ld", k->name, text,
                     k->min, k->max);
            return -1;
        }
        *(int *)((char *)cfg + k->offset) = (int)v;
        return 0;
    case KNOB_LEVEL:
        for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
            if (strcasecmp(text, level_names[i]) == 0) {
                *(int *)((char *)cfg + k->offset) = (int)i;
                return 0;
            }
        }
        snprintf(err, errlen, "%s=\"%s\" is not one of error, warn, info, debug, trace", k->name,
                 text);
        return -1;
    case KNOB_STRING:
        if (strlen(text) >= sizeof(cfg->proxy_cpus)) {
            snprintf(err, errlen, "%s is longer than %zu bytes", k->name,
                     sizeof(cfg->proxy_cpus) - 1);
            return -1;
        }
        strcpy((char *)cfg + k->offset, text);
        return 0;
    }
    snprintf(err, errlen, "%s: bad knob type", k->name);
    return -1;
}

void tc__config_defaults(tc_config_t *cfg)
{
    char err[256];
    size_t i;

    memset(cfg, 0, sizeof(*cfg));
    for (i = 0; i < NKNOBS; i++) {
        (void)set_knob(cfg, &knobs[i], knobs[i].def, err, sizeof(err));
    }
}

int tc__config_parse_one(tc_config_t *cfg, const char *name, const char *text, char *err,
                         size_t errlen)
{
    size_t i;

    for (i = 0; i < NKNOBS; i++) {
        if (strcmp(knobs[i].name, name) == 0) {
            return set_knob(cfg, &knobs[i], text, err, errlen);
        }
    }
    snprintf(err, errlen, "unknown knob %s", name);
    return -1;
}

static tc_config_t config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

static void config_load(void)
{
    char err[512];
    char **env;
    size_t i;

    tc__config_defaults(&config);
    /* The log level first, so the lines below obey it. */
    for (i = 0; i < NKNOBS; i++) {
        const char *text = getenv(knobs[i].name);
        if (text == NULL) {
            continue;
        }
        if (set_knob(&config, &knobs[i], text, err, sizeof(err)) != 0) {
            TC_WARN("config", "%s; keeping the default \"%s\"", err, knobs[i].def);
            continue;
        }
        if (knobs[i].type == KNOB_LEVEL) {
            atomic_store_explicit(&tc__log_level, config.log_level, memory_order_relaxed);
        }
        TC_INFO("config", "%s=%s (from the environment)", knobs[i].name, text);
    }
    atomic_store_explicit(&tc__log_level, config.log_level, memory_order_relaxed);
    for (env = environ; env != NULL && *env != NULL; env++) {
        const char *eq = strchr(*env, '=');
        size_t len = eq ? (size_t)(eq - *env) : strlen(*env);
        int known = 0;
        if (strncmp(*env, "TCOLL_", 6) != 0) {
            continue;
        }
        for (i = 0; i < NKNOBS; i++) {
            if (strlen(knobs[i].name) == len && strncmp(knobs[i].name, *env, len) == 0) {
                known = 1;
            }
        }
        if (!known) {
            TC_WARN("config", "unknown variable %.*s ignored (see the README for the knobs)",
                    (int)len, *env);
        }
    }
}

const tc_config_t *tc__config(void)
{
    pthread_once(&config_once, config_load);
    return &config;
}

void tc__config_print(FILE *out, const tc_config_t *cfg)
{
    size_t i;

    for (i = 0; i < NKNOBS; i++) {
        const knob_t *k = &knobs[i];
        if (cfg == NULL) {
            fprintf(out, "| `%s` | `%s` | %s |\n", k->name, k->def, k->doc);
        } else if (k->type == KNOB_STRING) {
            fprintf(out, "%-22s %s\n", k->name, (const char *)cfg + k->offset);
        } else if (k->type == KNOB_LEVEL) {
            fprintf(out, "%-22s %s\n", k->name, level_names[*(const int *)((const char *)cfg + k->offset)]);
        } else {
            fprintf(out, "%-22s %d\n", k->name, *(const int *)((const char *)cfg + k->offset));
        }
    }
}
