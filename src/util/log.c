/*
 * log.c - the one place that writes log lines. One fprintf per line so lines
 * from different threads do not interleave mid-line.
 */
#define _GNU_SOURCE
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

_Atomic int tc__log_level = TC_LOG_WARN;
_Atomic int tc__log_rank = -1;

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};

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
    fprintf(stderr, "tcoll %s:%d [%d] %s %s: %s\n", host, (int)getpid(),
            atomic_load_explicit(&tc__log_rank, memory_order_relaxed), subsys,
            level_names[level], msg);
}
