/*
 * timeline_common.h - what the two halves of test_timeline_mpi share: the
 * program (test_timeline.c: the periods, the collectives submitted and
 * checked, main) records what this rank submitted under each name; the
 * file checks (test_timeline_files.c) read the timelines back and match
 * them against it.
 */
#ifndef TC_TEST_TIMELINE_COMMON_H
#define TC_TEST_TIMELINE_COMMON_H

#include "mpi_common.h"

#define NROUNDS 4   /* rounds of period 1 */
#define MAX_SUBS 32 /* names in one period */
#define MAX_RANKS 16

/* What this rank submitted under one name in one period. */
typedef struct {
    char name[64];
    tt_kind_t kind;
    tc_dtype_t dt;
    tc_op_t op;
    int root;
    int64_t bytes[MAX_RANKS]; /* each rank's input */
    int nsub;
    int nmismatch;
} sub_t;

typedef struct {
    int events, rows, marks, groups;
    int eager, fused, ring, failed, bcast, gather;
} stats_t;

/* This rank and the job's size; what this rank submitted in period 0 and 1
 * (test_timeline.c fills them, before the files are read). */
extern int g_rank, g_size;
extern sub_t g_subs[2][MAX_SUBS];
extern int g_nsubs[2];

/* This rank's own file of a period; the job-wide file (rank 0, after its
 * tc_shutdown wrote it: st[r] for each rank r). Each fills the counts of
 * what it saw (stats_t) and aborts on anything the file must not hold. */
void check_file(const char *path, int period, stats_t *st);
void check_job_file(const char *path, int period, stats_t *st);

#endif
