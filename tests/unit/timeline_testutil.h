/*
 * timeline_testutil.h - what the timeline writer's unit test shares across
 * its files: test_timeline.c (the parser's own check, the writer's life:
 * not running, idle, flush, "%r", restart, write errors, starts and stops
 * while others record, the row limit; main), test_timeline_events.c (what
 * the events become in the file: escapes, args, threads, a full buffer, a
 * stress run) and test_timeline_merge.c (parts and the job-wide merge).
 * Files go to one temporary directory per run (tmp_path); the checks abort
 * on a failure (check.h) and read files back through json_check.h.
 */
#ifndef TC_TEST_TIMELINE_TESTUTIL_H
#define TC_TEST_TIMELINE_TESTUTIL_H

#include <stddef.h>

#include "check.h"
#include "json_check.h"
#include "util/backoff.h" /* tc__now_ns */
#include "util/timeline.h"

/* A string literal as the (bytes, length) pair the writer takes. */
#define S(lit) lit, sizeof(lit) - 1

/* name in this run's temporary directory (one of 4 rotating buffers). */
const char *tmp_path(const char *name);

/* The event of phase ph named name (exact bytes); NULL if none, fails if several. */
const jval_t *find_event(const trace_t *t, char ph, const char *name, size_t len);

/* test_timeline_events.c */
void test_escapes_args_threads(void);
void test_buffer_full(void);
void test_stress(void);

/* test_timeline_merge.c: every check of parts and their merge, in order. */
void test_parts(void);

#endif
