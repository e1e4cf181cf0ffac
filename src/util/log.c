/*
 * log.c - the one place that writes log lines. One fprintf per line so lines
 * from different threads do not interleave mid-line.
 */
#define _GNU_SOURCE
#include "util/log.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

_Atomic int tc__log_level = TC_LOG_WARN;
_Atomic int tc__log_rank = -1;

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};

/* The rank once tc_init has found it; before that (knob warnings at start-up)
 * the rank the launcher gave this process, if it says: Open MPI, MPICH's
 * Hydra and PMIx launchers export it. -1 when unknown. */
static int log_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    int rank = atomic_load_explicit(&tc__log_rank, memory_order_relaxed);
    size_t i;

    for (i = 0; rank < 0 && i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long r;
        if (v == NULL || *v == '\0') {
            continue;
        }
        r = strtol(v, &end, 10);
        if (*end == '\0' && r >= 0 && r <= INT_MAX) {
            rank = (int)r;
        }
    }
    return rank;
}

void tc__log(int level, const char *subsys, const char *fmt, ...)
{
    char host[64];
    char msg[1024];
    va_list ap;

    if (gethostname(host, sizeof(host)) != 0) {
        strcpy(host, "?");
    }
    host[sizeof(host) - 1] = '\0';
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (level < 0 || level > TC_LOG_TRACE) {
        level = TC_LOG_ERROR;
    }
    fprintf(stderr, "tcoll %s:%d [%d] %s %s: %s\n", host, (int)getpid(), log_rank(), subsys,
            level_names[level], msg);
}
