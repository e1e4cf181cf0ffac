/*
 * config.h - every TCOLL_* knob, from one table.
 *
 * The table (config.c) drives environment parsing, the README's knob table
 * and tcoll-info. Values are read once, on first use, and never change after.
 */
#ifndef TC_UTIL_CONFIG_H
#define TC_UTIL_CONFIG_H

#include <stdio.h>

typedef struct {
    int log_level;        /* TCOLL_LOG_LEVEL */
    int idle_poll_ms;     /* TCOLL_IDLE_POLL_MS */
    int spin;             /* TCOLL_SPIN */
    int backoff_max_us;   /* TCOLL_BACKOFF_MAX_US */
    int yield_us;         /* TCOLL_YIELD_US */
    int ring_chunk_kb;    /* TCOLL_RING_CHUNK_KB */
    int output_pool_mb;   /* TCOLL_OUTPUT_POOL_MB */
    int fusion_threshold_kb; /* TCOLL_FUSION_THRESHOLD_KB */
    int fusion_buffer_kb; /* TCOLL_FUSION_BUFFER_KB */
    int cache_capacity;   /* TCOLL_CACHE_CAPACITY */
    int eager_bytes;      /* TCOLL_EAGER_BYTES */
    char proxy_cpus[256]; /* TCOLL_PROXY_CPUS */
} tc_config_t;

/* Loads the table from the environment on first call (thread-safe); then
 * returns the same values. Logs overrides at info level and warns about
 * unknown TCOLL_* variables and bad values (which keep the default). */
const tc_config_t *tc__config(void);

/* Parses one knob's text into a scratch config; 0 on success, -1 with a
 * message in err on a bad value or unknown name. Used by the loader and tests. */
int tc__config_parse_one(tc_config_t *cfg, const char *name, const char *text, char *err,
                         size_t errlen);
void tc__config_defaults(tc_config_t *cfg);

/* Writes the knob table (name, default, doc) as Markdown rows, or with the
 * current values when cfg is not NULL. */
void tc__config_print(FILE *out, const tc_config_t *cfg);

#endif
