/*
 * pset_common.h - what the process set tests (test_pset.c: creating,
 * querying and every kind inside a set; test_pset_life.c: refusals,
 * mismatches, removal, joins and stalls) share: the test's view of a set
 * and the helpers that make, use and remove one.
 */
#ifndef TC_TEST_PSET_COMMON_H
#define TC_TEST_PSET_COMMON_H

#include "mpi_common.h"

#define MAXR 64 /* most ranks a set here may list */

/* A process set as this test sees it. */
typedef struct {
    int id;
    int n;           /* members */
    int me;          /* this rank's set rank, -1 when not a member */
    int ranks[MAXR]; /* the members' global ranks, ascending */
} pset_t;

/* An allreduce in a set (members only): sum, avg (float64 only: the sum
 * divided by the set's size) or max. Submitted and checked apart, so that
 * several can be in flight at once (and fused). */
typedef struct {
    const char *name;
    tc_dtype_t dt;
    tc_op_t op;
    int64_t count;
    int in_place;
    char *send, *recv;
    tc_request_t *req;
} ar_t;

/* Each is described where it is defined, in pset_common.c. */
void wait_ok(tc_request_t *req, const char *what);
void wait_free(tc_request_t *req, const char *what);
tc_opts_t in_set(int id);
int64_t val(const char *name, int grank, int64_t i, int wide);
void check_same(const char *what, int v);
void global_sync(const char *name);
pset_t add_set_nosync(const int *list, int n);
pset_t add_set(const int *list, int n);
void remove_set(const pset_t *s);
int parity_list(int parity, int *out);
void ar_submit(const pset_t *s, ar_t *a);
void ar_check(const pset_t *s, ar_t *a);
void set_allreduce(const pset_t *s, const char *name, tc_dtype_t dt, tc_op_t op, int64_t count,
                   int in_place);

#endif
