/*
 * neg_sim.h - simulated ranks for the unit tests of the negotiation state
 * machine (neg/neg.h), without MPI: the test_neg_*.c programs.
 *
 * One tc_neg_t per simulated rank, joined by an in-memory message layer:
 * every send is copied into a queue per (source, destination) pair that
 * delivers in FIFO order, as MPI does; across pairs, and between deliveries,
 * steps and submissions, a seeded random schedule (or an explicit one)
 * decides what happens next. The clock is fake and moves only when a test
 * moves it. Every message is decoded when it is sent and checked against the
 * protocol (tag and type, destinations, one part per exchange round), and decoded
 * again when it is delivered; every item is checked against the submission
 * it answers. A rank that fails by its own decision tells every other rank,
 * as the engine does.
 *
 * A failed check aborts the process (check.h). Must rely on nothing but
 * neg.h's contract and the protocol: never on the state machine's internals
 * (timings neg.h does not promise included).
 */
#ifndef TC_TEST_NEG_SIM_H
#define TC_TEST_NEG_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "neg/neg.h"

#define SIM_MAX 64    /* ranks in one simulation */
#define NAME_LEN 48   /* longest tensor name here, with its NUL */
#define MAX_NAMES 8   /* names in one workload */
#define DATA_BYTES 32 /* eager input per submission */
#define MS 1000000ull
#define SEC 1000000000ull
/* The fake clock starts here: far from 0 and from any real clock, so that a
 * clock read behind the caller's back shows (stall tests also start at the
 * real monotonic time, as the engine would pass it). */
#define T0 (1ull << 62)

/* ---- workloads: what each rank submits ------------------------------------- */

typedef struct {
    const char *name;
    int kind, dtype, op;
    int root; /* -1: the last rank */
    int ndim;
    int64_t shape[2]; /* allgather: shape[0] is rank 0's rows; rank r has r + 1 times as many */
} spec_t;

/* One submission of one rank; its address is the request handle, so every
 * item that comes out can be matched with what was submitted. */
typedef struct {
    int rank, name, inst; /* inst: the how-manyth submission of the name on the rank */
    int64_t delta;        /* added to the last dimension: a shape other ranks do not have */
    tc_wire_request_t w;
    char namebuf[NAME_LEN];
    union {
        uint8_t bytes[DATA_BYTES];
        double align;
    } data; /* element j: (rank + 1) * (j + 1) + inst, so every result is exact */
    int submitted, done;
    size_t rec; /* its item's index in the rank's log */
} plan_t;

/* ---- the simulation -------------------------------------------------------- */

typedef struct qmsg {
    struct qmsg *next;
    int tag;
    size_t len;
    uint8_t *bytes;
} qmsg_t;

typedef struct {
    qmsg_t *head, *tail;
    size_t n;
} chan_t;

/* An item as it came out, copied before tc__neg_clear. */
typedef struct {
    tc_neg_action_t action;
    void *req;
    char name[NAME_LEN];
    int status;         /* FAIL */
    char *text;         /* FAIL */
    uint32_t cache_ref; /* RUN */
    uint32_t ndim0;     /* RUN */
    int64_t dim0[SIM_MAX];
    uint8_t result[DATA_BYTES]; /* DONE */
    size_t result_len;
    uint64_t cycle;
} rec_t;

typedef struct {
    int size;
    tc_neg_params_t p;
    tc_neg_t *neg[SIM_MAX];
    chan_t *ch; /* [src * size + dst] */
    size_t inflight;
    int frozen[SIM_MAX];    /* a stuck rank: never stepped, nothing delivered to it */
    int announced[SIM_MAX]; /* its own failure was sent to every rank, as the engine does */
    uint64_t now;
    uint64_t rng;    /* 0: the deterministic schedule */
    int pdeliver;    /* random schedule: percent of actions that deliver a message */
    uint64_t jitter; /* random schedule: now and then the clock moves by up to this */
    long shut_after; /* random schedule: after this many actions, shut_rank shuts down */
    int shut_rank;
    rec_t *log[SIM_MAX];
    size_t nlog[SIM_MAX], caplog[SIM_MAX];
    /* what went over the wire */
    size_t ntag[8];              /* messages per tag, one per destination */
    size_t req_entries[SIM_MAX]; /* submissions each rank sent rank 0 in full */
    uint64_t last_part[SIM_MAX]; /* a core rank's last part sent: cycle * 64 + round + 1 */
    /* the workload */
    const spec_t *specs;
    int nspecs;
    plan_t **plan[SIM_MAX]; /* each rank's submissions, in order */
    size_t nplan[SIM_MAX], capplan[SIM_MAX], next[SIM_MAX];
    int pending[SIM_MAX][MAX_NAMES];
} sim_t;

/* ---- functions (neg_sim.c; workloads and their checks: neg_sim_plan.c) ----- */

/* Random numbers (xorshift64*): one below n; a shuffle of v[0..n). */
int rnd_below(uint64_t *s, int n);
void shuffle(uint64_t *s, int *v, int n);

const char *act_name(tc_neg_action_t a);
const char *state_name(tc_neg_state_t st);

/* Parameters for `size` ranks: a cache of 64, eager up to 16 bytes, a peer
 * timeout far away; a simulation of them (seed 0: the deterministic
 * schedule); its end. */
tc_neg_params_t params(int size);
sim_t *sim_new(const tc_neg_params_t *p, uint64_t seed);
void sim_free(sim_t *s);

/* The message layer: the queue from src to dst; a message added to it; its
 * oldest message delivered; all of them delivered. */
chan_t *chan(sim_t *s, int src, int dst);
void enqueue(sim_t *s, int src, int dst, int tag, const uint8_t *data, size_t len);
void deliver_head(sim_t *s, int src, int dst);
void deliver_chan(sim_t *s, int src, int dst);

/* Whether q is r's parent or child in the probes' tree of `size` ranks. */
int is_neighbour(int size, int r, int q);
/* The largest power of 2 not above size: the ranks of the exchange rounds. */
int core_size(int size);

/* The schedule by hand: a step of rank r at the current time (whether it
 * did anything); rank r's next planned submission. Or run() until it
 * settles. */
int step(sim_t *s, int r);
void submit_next(sim_t *s, int r);
void run(sim_t *s);

/* Plans rank r's next submission of workload name `name`. */
plan_t *mkplan(sim_t *s, int r, int name, int inst, int64_t delta);
/* Whether a cached submission of the spec (unchanged) rides eagerly; the
 * exact reduction of every rank's input of instance inst, its size. */
int spec_eager(const sim_t *s, const spec_t *sp);
size_t eager_expect(const sim_t *s, const spec_t *sp, int inst, uint8_t *out);

/* The item a submission came out as (it must have). */
const rec_t *rec_of(const sim_t *s, const plan_t *pl);
/* Every rank got the same items, in the same order, from the same cycle. */
void check_agreement(const sim_t *s);
/* Every planned submission came out, every rank runs and waits for nothing,
 * nothing is in flight. */
void check_settled(const sim_t *s);

/* A workload of every kind, some eager, some not; the same names every
 * round. */
#define NMIXED 6
extern const spec_t mixed_specs[NMIXED];
/* Each rank submits every name once per round, in its own random order. */
void plan_rounds(sim_t *s, int rounds);
/* What each instance must have become when no shape changed. */
void check_cached_rounds(const sim_t *s);

/* For main: unless TCOLL_LOG_LEVEL says otherwise, errors only (the stall
 * tests warn on purpose). */
void sim_quiet_log(void);

#endif
