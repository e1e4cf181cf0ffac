/*
 * test_coll_ranks.h - what the tests of the collective algorithms
 * (test_coll*.c, test_router.c) share: 1..COLL_MAXN "ranks" that are
 * threads of this process, joined by in-memory transports (the fake
 * transport below, through the transport interface: non-blocking post and
 * test, the generic blocking sendrecv), with a log of every sendrecv call;
 * and inputs whose reductions are exact in every dtype used, with their
 * reduction computed naively. No MPI.
 */
#ifndef TC_TEST_COLL_RANKS_H
#define TC_TEST_COLL_RANKS_H

#include <stddef.h>

#include "coll/coll.h"

#define COLL_MAXN 8
#define COLL_NNETS 3 /* fake networks: 0 coll_run's, the others a test's own */

/* A fake transport: every (network, src, dst) has a queue of messages.
 * Buffered: a send copies its bytes into a message and is done at once.
 * Rendezvous: a send queues its own buffer and is done only once the
 * receiver has copied it (as a large MPI message), so two ranks that each
 * wait for their send before testing their receive deadlock. A receive is
 * done once it copied the next message of its queue, which must have its
 * size. Each rank thread owns its own fake transports. */
typedef struct {
    int net;
    unsigned reach; /* bit p: peer p is reached */
    int rendezvous;
    int nposted; /* sends and receives posted and not yet done or abandoned */
} coll_fake_t;

/* Opens t as a fake transport of rank in a group of n on network net
 * (0..COLL_NNETS-1), reaching the peers in reach. Close checks nothing is
 * left posted. */
void coll_fake_open(tc_transport_t *t, coll_fake_t *impl, int rank, int n, int net, unsigned reach,
                    int rendezvous);

/* Checks that no message was left unreceived on any fake network. */
void coll_check_quiet(void);

/* Runs fn(t, arg of rank r) on n threads, rank r's arg at args + r * arg_size,
 * t a buffered fake transport of rank r in a group of n on network 0 that
 * reaches every rank and logs each sendrecv call; returns when all have
 * returned. Clears the call log first, and checks coll_check_quiet after.
 * Called from the main thread only. */
void coll_run(int n, void (*fn)(tc_transport_t *t, void *arg), void *args, size_t arg_size);

/* After coll_run: every rank made the same number of sendrecv calls, and in
 * each call a rank's send meets the receive its destination made in the same
 * call, with the same size. Holds for the ring and pairwise algorithms (not
 * for the binomial broadcast). Returns the number of calls per rank. */
size_t coll_check_calls_paired(int n);

/* Integer-valued input of rank r at element i, exact in every dtype used. */
double coll_input(int r, size_t i, tc_op_t op);

/* Element i of buf as a double, and back (int8, int16, int32, float16,
 * bfloat16, float32, float64). */
void coll_store(tc_dtype_t dt, void *buf, size_t i, double v);
double coll_load(tc_dtype_t dt, const void *buf, size_t i);

/* got, element i (of count) of what a collective named what left, must be
 * the reduction of coll_input(0..n-1, i, op) computed in double (exact for
 * these inputs), or for TC_AVG its quotient by n within one rounding. */
void coll_check_value(tc_dtype_t dt, tc_op_t op, int n, double got, size_t i, const char *what,
                      size_t count);

/* Allgatherv data for n ranks: rank r's block is ((r * 37) % 11) * unit
 * bytes (some empty) at displs[r]; want is the whole gathered output. */
typedef struct {
    size_t bytes[COLL_MAXN], displs[COLL_MAXN], total;
    unsigned char *want;
} coll_gather_t;

void coll_gather_make(coll_gather_t *g, int n, size_t unit);
/* A zeroed output buffer (total + 1 bytes) with rank r's block in place;
 * the caller frees it. */
void *coll_gather_input(const coll_gather_t *g, int r);
void coll_gather_free(coll_gather_t *g);

/* Alltoallv data for n ranks: the block rank s sends rank d is
 * ((s * 5 + d * 3) % 7) * unit bytes (uneven, some empty), with bytes
 * that depend on s, d and their place. send[r] is rank r's input (sb, sd:
 * its blocks); rb, rd are rank r's receive sizes and displacements, rtotal[r]
 * its output's size. */
typedef struct {
    size_t sb[COLL_MAXN][COLL_MAXN], sd[COLL_MAXN][COLL_MAXN];
    size_t rb[COLL_MAXN][COLL_MAXN], rd[COLL_MAXN][COLL_MAXN], rtotal[COLL_MAXN];
    unsigned char *send[COLL_MAXN];
    int n;
} coll_a2a_t;

void coll_a2a_make(coll_a2a_t *a, int n, size_t unit);
/* Rank r's output got holds every block sent to it; what names the test. */
void coll_a2a_check(const coll_a2a_t *a, int r, const unsigned char *got, const char *what);
void coll_a2a_free(coll_a2a_t *a);

#endif
