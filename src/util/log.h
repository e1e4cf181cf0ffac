/*
 * log.h - leveled logging to stderr.
 *
 * Each line starts with "tcoll host:pid [rank] subsystem LEVEL:". The macros
 * test the level before any formatting, so a disabled level costs one relaxed
 * atomic load. Never allocates; safe from any thread.
 */
#ifndef TC_UTIL_LOG_H
#define TC_UTIL_LOG_H

#include <stdatomic.h>

typedef enum {
    TC_LOG_ERROR = 0,
    TC_LOG_WARN = 1,
    TC_LOG_INFO = 2,
    TC_LOG_DEBUG = 3,
    TC_LOG_TRACE = 4
} tc_log_level_t;

/* Written by config loading and tc_init; read everywhere with relaxed order:
 * a stale value only changes whether one line is printed. */
extern _Atomic int tc__log_level;
extern _Atomic int tc__log_rank;

void tc__log(int level, const char *subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define TC_LOG(level, subsys, ...)                                                                 \
    do {                                                                                           \
        if ((level) <= atomic_load_explicit(&tc__log_level, memory_order_relaxed)) {               \
            tc__log((level), (subsys), __VA_ARGS__);                                               \
        }                                                                                          \
    } while (0)

#define TC_ERROR(subsys, ...) TC_LOG(TC_LOG_ERROR, subsys, __VA_ARGS__)
#define TC_WARN(subsys, ...) TC_LOG(TC_LOG_WARN, subsys, __VA_ARGS__)
#define TC_INFO(subsys, ...) TC_LOG(TC_LOG_INFO, subsys, __VA_ARGS__)
#define TC_DEBUG(subsys, ...) TC_LOG(TC_LOG_DEBUG, subsys, __VA_ARGS__)
#define TC_TRACE(subsys, ...) TC_LOG(TC_LOG_TRACE, subsys, __VA_ARGS__)

#endif
