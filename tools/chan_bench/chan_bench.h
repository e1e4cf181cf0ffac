/*
 * chan_bench.h - the internal interface between the files of
 * tcoll-chan-bench, the benchmark of channels between two ranks (of one
 * node, or of two pretend nodes) beside MPI_Send/Recv and MPI_Put (main.c
 * has the whole picture).
 *
 *   main.c        start-up: MPI, options, the node check, the header lines,
 *                 the order of the measurements, shutdown
 *   options.c     the command line and --help
 *   util.c        errors, clock, allocation, medians, sizes, the checked
 *                 data, CPU lists, the MPI library's name
 *   setup.c       the two sides' memory: context, registrations,
 *                 semaphores, channels, the MPI window; which rows and
 *                 columns the run has; the MPI notification
 *   latency.c     the ping-pong rows
 *   bandwidth.c   the one-way and two-way rounds, runs, checks and ratios
 *   output.c      the tables, the goals and --json
 *   device.cu     --device cuda: the channels driven from kernels (or, in a
 *                 build without a CUDA compiler, device_none.c saying so)
 *
 * The program uses only tcoll's public headers; nothing here may reach into
 * the library's internals.
 */
#ifndef TCOLL_CHAN_BENCH_H
#define TCOLL_CHAN_BENCH_H

#include "tcoll.h"
#include "tcoll_channel.h"
#include "tool_util.h"

#include <mpi.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CB_EXIT_FAIL 1  /* a call failed or a transfer delivered wrong bytes */
#define CB_EXIT_USAGE 2 /* bad options, or not 2 ranks on one node */

#define CB_WAIT_NS (60ll * 1000000000ll) /* a channel wait longer than this is a failure */
#define CB_PAGE 4096u
#define CB_MAX_RUNS 15
#define CB_MAX_WINDOW 1024
#define CB_MAX_BYTES (1ull << 30) /* MPI counts are ints; 1 GiB keeps every offset in range */
#define CB_GOAL_SIZE (4ull << 20)

/* The MPI rows' tags on cb_comm. */
enum { CB_TAG_DATA = 1, CB_TAG_ACK, CB_TAG_LAT };

/* ------------------------------------------------------------------------ */
/* options.c                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct {
    uint64_t min_bytes, max_bytes, factor;
    int window;    /* W: messages per bandwidth round (fewer where W x size > 64 MiB) */
    int bw_iters;  /* rounds per bandwidth run; 0: about CB_BW_BUDGET bytes, 2..1000 */
    int runs;      /* bandwidth runs per cell; the median is shown */
    int lat_iters; /* timed ping-pongs per latency row */
    int lat_warmup;
    int64_t spin_ns; /* < 0: the library's default */
    const char *json;
    int device; /* --device cuda: device.cu's tables instead */
} cb_opts_t;

void cb_usage(FILE *f);
/* 0: run; 1: --help; -1: bad options (*err says which). */
int cb_parse_options(int argc, char **argv, cb_opts_t *o, char *err, size_t len);

/* ------------------------------------------------------------------------ */
/* util.c                                                                    */
/* ------------------------------------------------------------------------ */

/* Job-wide, set once by main before anything else runs. */
extern int cb_rank, cb_peer;
extern MPI_Comm cb_comm; /* the MPI rows' communicator: a duplicate of MPI_COMM_WORLD */
/* 1 when tcoll puts the two ranks on different nodes (tc_local_size() is 1:
 * TCOLL_RANKS_PER_NODE=1 on one machine): the port channel and its
 * semaphore go over MPI through the proxy threads, and there is no memory
 * channel and no memcpy reference. */
extern int cb_nodes;

/* Prints what went wrong on this rank and ends the whole job with status 1. */
void cb_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* cb_die with tcoll's message unless st is TC_OK. */
void cb_chk(tc_status_t st, const char *what);
uint64_t cb_now_ns(void);
/* Page aligned; dies when there is no memory. */
void *cb_alloc(size_t bytes, const char *what);
/* Sorts v; the q-quantile (nearest rank). */
uint64_t cb_quantile_u64(uint64_t *v, size_t n, double q);
/* Sorts v. */
double cb_median(double *v, int n);
/* "4 KiB", "64 MiB" when exact; bytes otherwise. */
void cb_fmt_size(char *buf, size_t len, uint64_t bytes);
/* A well mixed 64-bit value of x (the finalizer of a 64-bit hash). */
uint64_t cb_mix64(uint64_t x);
/* n bytes that only seed makes: word i is cb_mix64(seed + i), the tail a prefix. */
void cb_fill(char *p, uint64_t n, uint64_t seed);
/* Bytes of p[0, n) that differ from cb_fill(seed); *first_p: the first's offset. */
uint64_t cb_count_wrong(const char *p, uint64_t n, uint64_t seed, uint64_t *first_p);
/* The CPUs this process may run on, as "0-3,8" (its affinity mask);
 * returns how many. */
int cb_cpu_list(char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* setup.c                                                                   */
/* ------------------------------------------------------------------------ */

/* tcoll: one tc_mem_alloc region per rank, [0, span) sent from and
 * [span, 2 span) received into; one memory channel (semaphore id 0; none
 * when cb_nodes) and one port channel (id 1) to the peer. MPI: one window per rank, the
 * notification counter at 0, then send and receive regions as above (from
 * CB_WIN_DATA). The MPI_Send/Recv rows use the tcoll regions, so both sides
 * move the same memory. */
typedef struct {
    uint64_t span; /* each region's bytes (cb_setup says how many) */
    tc_chan_ctx_t *ctx;
    char *buf;
    tc_mem_t *mem;
    tc_rmem_t *rmems[2];
    tc_sem_t *msem, *psem;
    tc_memchan_t *mch;
    tc_portchan_t *pch;
    MPI_Win win;
    char *wbase;
    int64_t notified; /* notifications this rank has consumed */
    MPI_Request *reqs;
    char *cpy_src, *cpy_dst; /* rank 0's memcpy reference (none when cb_nodes) */
} cb_state_t;

#define CB_WIN_DATA CB_PAGE

extern cb_state_t cb_st;

/* Collective (both ranks), after tc_init; cb_teardown undoes it. */
void cb_setup(const cb_opts_t *o);
void cb_teardown(void);
/* Port channel failures are reported by a flush: one after each row. */
void cb_portchan_check(void);
/* Whether this run has the latency row / the bandwidth column: memory
 * channels and the memcpy reference only within a node. */
int cb_lat_on(int k);
int cb_xport_on(int t);
int cb_memcpy_on(void);
/* The MPI notification: +1 on the peer's counter, completed at the peer. */
void cb_put_notify(void);
/* Waits for the next notification, then makes the window's data visible. */
void cb_put_await(void);

/* ------------------------------------------------------------------------ */
/* latency.c                                                                 */
/* ------------------------------------------------------------------------ */

/* id, row name, payload bytes, whether it is an MPI row */
#define CB_LAT_LIST(X)                                                                             \
    X(MEM_SIG, "memory channel: tc_memchan_signal + tc_memchan_wait", 0, 0)                        \
    X(MEM_PUT, "memory channel: tc_memchan_put_with_signal + wait", 8, 0)                          \
    X(PORT_SIG, "port channel: tc_portchan_signal + tc_portchan_wait", 0, 0)                       \
    X(PORT_PUT, "port channel: tc_portchan_put_with_signal + wait", 8, 0)                          \
    X(SEND0, "MPI_Send + MPI_Recv", 0, 1)                                                          \
    X(SEND8, "MPI_Send + MPI_Recv", 8, 1)                                                          \
    X(NOTIFY, "MPI notification only (Accumulate + flush; Fetch_and_op poll)", 0, 1)               \
    X(PUT8, "MPI_Put + MPI_Win_flush + notification", 8, 1)

typedef enum {
#define CB_LAT_ENUM(id, name, bytes, mpi) CB_L_##id,
    CB_LAT_LIST(CB_LAT_ENUM)
#undef CB_LAT_ENUM
        CB_NLAT
} cb_lat_t;

typedef struct {
    const char *name;
    int bytes, mpi;
} cb_lat_info_t;

extern const cb_lat_info_t cb_lat_info[CB_NLAT];

typedef struct {
    double p50_us, p99_us; /* one-way */
    long long wrong;       /* rounds whose 8 bytes were wrong, both ranks */
} cb_lat_row_t;

/* Collective: one row; rtt has room for o->lat_iters round trips. */
cb_lat_row_t cb_run_latency(const cb_opts_t *o, cb_lat_t k, uint64_t *rtt);

/* ------------------------------------------------------------------------ */
/* bandwidth.c                                                               */
/* ------------------------------------------------------------------------ */

/* id, column, JSON key, what one round does */
#define CB_XPORT_LIST(X)                                                                           \
    X(MEMCHAN, "memchan", "memchan", "memory channel: tc_memchan_put x W, signal")                 \
    X(PORTCHAN, "portchan", "portchan", "port channel: tc_portchan_put x W, signal")               \
    X(SEND, "Send/Recv", "mpi_send", "MPI_Isend x W / MPI_Irecv x W, MPI_Waitall")                 \
    X(PUT, "Put+flush", "mpi_put", "MPI_Put x W, MPI_Win_flush, notification")

typedef enum {
#define CB_XPORT_ENUM(id, col, key, what) CB_T_##id,
    CB_XPORT_LIST(CB_XPORT_ENUM)
#undef CB_XPORT_ENUM
        CB_NXPORT
} cb_xport_t;

typedef struct {
    const char *col, *key, *what;
} cb_xport_info_t;

extern const cb_xport_info_t cb_xport_info[CB_NXPORT];

/* Ratios of the tables, each tcoll column against each MPI column:
 * id, tcoll column, MPI column, table column, JSON key. */
#define CB_X_LIST(X)                                                                               \
    X(MEM_SEND, MEMCHAN, SEND, "memchan x Send", "memchan_x_send")                                 \
    X(MEM_PUT, MEMCHAN, PUT, "memchan x Put", "memchan_x_put")                                     \
    X(PORT_SEND, PORTCHAN, SEND, "portchan x Send", "portchan_x_send")                             \
    X(PORT_PUT, PORTCHAN, PUT, "portchan x Put", "portchan_x_put")

typedef enum {
#define CB_X_ENUM(id, a, b, col, key) CB_X_##id,
    CB_X_LIST(CB_X_ENUM)
#undef CB_X_ENUM
        CB_NX
} cb_x_t;

typedef struct {
    cb_xport_t a, b; /* the ratio is a / b */
    const char *col, *key;
} cb_x_info_t;

extern const cb_x_info_t cb_x_info[CB_NX];

typedef struct {
    uint64_t bytes;
    int window, iters;
    double memcpy_gbs;          /* one-way only (rank 0) */
    double gbs[CB_NXPORT];      /* medians over the runs */
    double x[CB_NX];            /* medians over the runs of each run's ratio */
    double pct_memcpy;          /* one-way: median of each run's portchan / memcpy, in % */
    long long wrong[CB_NXPORT]; /* bytes wrong in the checked round, both ranks */
} cb_bw_row_t;

/* Collective: one row of a bandwidth table (one-way or two-way). */
void cb_measure_size(const cb_opts_t *o, uint64_t size, int twoway, cb_bw_row_t *row);

/* ------------------------------------------------------------------------ */
/* output.c (rank 0)                                                         */
/* ------------------------------------------------------------------------ */

void cb_print_lat_table(const cb_opts_t *o, const cb_lat_row_t *rows);
void cb_print_bw_header(int twoway);
void cb_print_bw_row(const cb_bw_row_t *r, int twoway);
void cb_print_goals(const cb_lat_row_t *lat, const cb_bw_row_t *one, const cb_bw_row_t *two,
                    int nsizes);
void cb_write_json(FILE *f, const cb_opts_t *o, const cb_lat_row_t *lat, const cb_bw_row_t *one,
                   const cb_bw_row_t *two, int nsizes);

/* ------------------------------------------------------------------------ */
/* device.cu (device_none.c without a CUDA compiler)                         */
/* ------------------------------------------------------------------------ */

#define CB_EXIT_SKIP 77 /* --device cuda without a GPU or without the kernels */

/* --device cuda, after tc_init (both ranks): the whole run; returns the
 * exit status. sizes[0..nsizes) as for the host tables. */
#ifdef __cplusplus
extern "C"
#endif
    int
    cb_device_main(const cb_opts_t *o, const uint64_t *sizes, int nsizes);

#endif /* TCOLL_CHAN_BENCH_H */
