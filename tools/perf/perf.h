/*
 * perf.h - the internal interface between the files of tcoll-perf, the
 * benchmark that times tcoll's collectives side by side with MPI (see
 * docs/perf.md and main.c for the whole picture).
 *
 *   main.c        start-up: MPI, options, tcoll, the chosen mode, the files
 *   options.c     the command line and --help
 *   util.c        errors, clock, progress line, allocation, small formatting
 *   dtype.c       dtypes: float16/bfloat16 by hand, element access, MPI twins
 *   data.c        inputs with exact expected results, and checking them
 *   sweep.c       the sizes loop: timing, checking, the table
 *   mode_*.c      one collective family each, behind perf_sweep_ops_t
 *   workload.c    the workload mode (a list of tensors allreduced per step)
 *   limit.c       the machine's rates, measured in the same run (the limit)
 *   limit_model.c the bytes an algorithm moves per rank: the limit's model
 *   mode_device.c --device cuda: allreduce on device buffers (CUDA builds)
 *   output.c      --json and --plot
 *
 * The program uses only tcoll's public header; nothing here may reach into
 * the library's internals.
 */
#ifndef TCOLL_PERF_H
#define TCOLL_PERF_H

#include "tcoll.h"
#include "tool_util.h"

#include <mpi.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PERF_EXIT_FAIL 1  /* a call failed or a result was wrong */
#define PERF_EXIT_USAGE 2 /* bad options or a bad workload file */
#define PERF_EXIT_SKIP 77 /* --device cuda without a usable device */

/* Expected allreduce values depend on the element index only through
 * hash(index) mod PERF_HBUCKETS, so they are tabulated once (a prime, so
 * no power-of-two stride lines up with it). */
#define PERF_HBUCKETS 1021

/* The modes, in the order --help lists them: enum and names from one list. */
#define PERF_MODE_LIST(X)                                                                          \
    X(ALLREDUCE, "allreduce")                                                                      \
    X(ALLGATHER, "allgather")                                                                      \
    X(BROADCAST, "broadcast")                                                                      \
    X(REDUCESCATTER, "reducescatter")                                                              \
    X(ALLTOALL, "alltoall")                                                                        \
    X(BARRIER, "barrier")                                                                          \
    X(WORKLOAD, "workload")

typedef enum {
#define PERF_MODE_ENUM(id, name) PERF_MODE_##id,
    PERF_MODE_LIST(PERF_MODE_ENUM)
#undef PERF_MODE_ENUM
        PERF_NMODES
} perf_mode_t;

extern const char *const perf_mode_names[PERF_NMODES];

typedef struct {
    perf_mode_t mode;
    uint64_t min_bytes, max_bytes, factor;
    tc_op_t op;
    tc_dtype_t dtype;
    int check;
    int iters, warmup; /* 0 (iters), -1 (warmup): chosen per size */
    int root;
    const char *workload, *json, *plot;
    int mode_set, op_set, dtype_set;
    int sizes_set;      /* -b, -e or -f given */
    int device;         /* --device cuda (mode_device.c) */
    int mem_malloc;     /* --mem malloc: the user buffers from malloc, not tc_mem_alloc */
    int tcoll_owns_mpi; /* --mpi-owner tcoll: tc_init initialized MPI */
} perf_opts_t;

/* The three rates of the limit (limit.c), GB/s; 0: not measured. */
typedef enum { PERF_RATE_COPY, PERF_RATE_REDUCE, PERF_RATE_1COPY, PERF_NRATES } perf_rate_t;

/* A row's limit: the rates at its size and the model's time for the
 * algorithm tcoll ran (us 0: no model for it). */
typedef struct {
    double gbs[PERF_NRATES];
    double us;
} perf_limit_t;

/* One result row of a sweep. wrong < 0: not checked. */
typedef struct {
    uint64_t bytes, count;
    int iters, warmup;
    double us[2]; /* [0] tcoll, [1] MPI */
    long long wrong[2];
    const char *algo; /* tc_request_algorithm of tcoll's checked (or last) operation */
    perf_limit_t lim;
} perf_row_t;

/* Job-wide state, set once by main before anything else runs. */
extern int perf_rank, perf_size;
extern MPI_Comm perf_comm;   /* a duplicate of MPI_COMM_WORLD: barriers, timings, the MPI side */
extern int perf_progress_on; /* rank 0, and stderr reaches a terminal */

/* ------------------------------------------------------------------------ */
/* util.c                                                                    */
/* ------------------------------------------------------------------------ */

/* Prints what went wrong on this rank and ends the whole job with status 1,
 * so no rank waits forever for one that stopped. */
void perf_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
double perf_now_s(void);
/* Rank 0's status line on stderr (only when perf_progress_on), and its erasure. */
void perf_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void perf_progress_clear(void);
int perf_stderr_is_terminal(void);
void *perf_alloc(size_t bytes, const char *what);
/* The user buffers (--mem): tc_mem_alloc, or malloc with shared 0 or where
 * tc_mem_alloc fails (then *shared_p is 0; rank 0 says why once). */
void *perf_alloc_data(size_t bytes, int shared, int *shared_p, const char *what);
void perf_free_data(void *p, int shared);
/* Sorts v. */
double perf_median(double *v, int n);
/* "-" for w < 0 (not checked), else the count. */
void perf_fmt_wrong(char *buf, size_t len, long long w);

/* ------------------------------------------------------------------------ */
/* dtype.c                                                                   */
/* ------------------------------------------------------------------------ */

int perf_dt_is_float(tc_dtype_t dt);
/* Largest integer magnitude up to which every integer is exact. */
int64_t perf_dt_exact_limit(tc_dtype_t dt);
/* Element i of buf := the integer v (truncated for integer dtypes). */
void perf_put_int(tc_dtype_t dt, void *buf, size_t i, int64_t v);
/* Whether element i of buf is v (integers bit for bit after truncation to
 * their width, floats by value); *got_p, *want_p: both as numbers. */
int perf_elem_is(tc_dtype_t dt, const void *buf, size_t i, int64_t v, double *got_p,
                 double *want_p);
MPI_Datatype perf_mpi_dtype(tc_dtype_t dt);
/* *created_p: whether the caller must MPI_Op_free it. avg is MPI_SUM, then
 * perf_mpi_avg_finish. */
MPI_Op perf_mpi_op(tc_dtype_t dt, tc_op_t op, int *created_p);
void perf_mpi_avg_finish(tc_dtype_t dt, void *buf, size_t count);

/* ------------------------------------------------------------------------ */
/* data.c                                                                    */
/* ------------------------------------------------------------------------ */

/* Reduction data: rank r's element i is perf_ar_value(s, r, perf_hbucket(i, salt)). */
typedef struct {
    tc_dtype_t dt;
    tc_op_t op;
    int k; /* sum/avg: values span k consecutive integers */
    int d; /* avg: 1 if rank r adds (2r - (n-1)) to half of the elements */
    int64_t expect[PERF_HBUCKETS];
} perf_ar_scheme_t;

uint64_t perf_hash(uint64_t x);
unsigned perf_hbucket(uint64_t i, uint64_t salt);
int64_t perf_ar_value(const perf_ar_scheme_t *s, int r, unsigned h);
void perf_ar_scheme_init(perf_ar_scheme_t *s, tc_dtype_t dt, tc_op_t op);
/* Data that is only moved (allgather, broadcast): any integer exact in dt. */
int64_t perf_copy_value(tc_dtype_t dt, uint64_t j, uint64_t salt);

/* ------------------------------------------------------------------------ */
/* sweep.c and the modes                                                     */
/* ------------------------------------------------------------------------ */

/* What one row of a sweep works on. sweep.c sets everything but per and
 * tensor, which the mode's setup sets. */
typedef struct perf_bench {
    const perf_opts_t *o;
    const perf_ar_scheme_t *ar; /* reductions: the data and expected values */
    uint64_t count;             /* elements of the row (its size / the element size) */
    uint64_t per;               /* count/n where blocks are per rank (allgather, reducescatter,
                        * alltoall) */
    uint64_t salt;
    void *send;       /* the input; the broadcast buffer */
    void *recv;       /* MPI's output, and tcoll's when the user provides it */
    char name[64];    /* tcoll's tensor name for this size */
    const char *algo; /* what tcoll reported for its last operation (perf_tc_wait) */
    tc_tensor_t tensor;
    MPI_Datatype mdt;
    MPI_Op mop;
    int *counts, *displs; /* n entries each, for MPI's v-collectives (the mode's setup) */
} perf_bench_t;

/* The expected value of element i of an output. */
typedef int64_t (*perf_want_fn)(const perf_bench_t *b, uint64_t i);

typedef enum {
    PERF_BUSBW_1,    /* x 1 */
    PERF_BUSBW_RING, /* x (n-1)/n */
    PERF_BUSBW_2RING /* x 2(n-1)/n */
} perf_busbw_t;

/* One collective as the sweep drives it. */
typedef struct {
    perf_busbw_t busbw;
    int takes_op;            /* -o applies; MPI needs an MPI_Op */
    int count_multiple_of_n; /* the row's count is rounded down to a multiple of n */
    int needs_recv;          /* a receive buffer of the row's count */
    const char *size_note;   /* a header line on what size and count are, or NULL */
    /* Sets per and the tensor for this row's count. */
    void (*setup)(perf_bench_t *b);
    /* Writes the inputs for this row and poisons the outputs. */
    void (*fill)(perf_bench_t *b);
    /* Poisons the outputs before the checked operation. */
    void (*poison)(perf_bench_t *b);
    /* One operation; with check set, returns this rank's wrong elements. */
    long long (*tcoll_once)(perf_bench_t *b, int check);
    long long (*mpi_once)(perf_bench_t *b, int check);
} perf_sweep_ops_t;

/* mode_device.c (CUDA builds): the --device cuda table; returns its rows. */
perf_row_t *perf_run_device(const perf_opts_t *o, int *nrows_p, long long *wrong_p);

/* mode_reduce.c */
extern const perf_sweep_ops_t perf_allreduce_ops, perf_reducescatter_ops;
/* mode_copy.c */
extern const perf_sweep_ops_t perf_allgather_ops, perf_broadcast_ops, perf_alltoall_ops;
/* mode_barrier.c: no sizes, one row (perf_run_barrier) */
extern const perf_sweep_ops_t perf_barrier_ops;

/* The bytes 0xa5 in an output: a non-integer float, and an unlikely integer. */
#define PERF_POISON 0xa5

/* data.c: counts the elements out[0..n) that differ from want(b, i) and
 * reports the first on stderr; impl is "tcoll" or "MPI". */
long long perf_check_result(const perf_bench_t *b, const void *out, uint64_t n, perf_want_fn want,
                            const char *impl);
/* The status of tc_<mode>(b->name, ...): dies with tcoll's message unless TC_OK. */
void perf_tc_submit_ok(const perf_bench_t *b, tc_status_t st);
/* tc_wait(req) for b->name: dies with the request's message unless TC_OK;
 * then b->algo := tc_request_algorithm(req). */
void perf_tc_wait(perf_bench_t *b, tc_request_t *req);
/* tcoll's output of a completed request: dies unless it is a 1-D tensor of
 * rows elements of the row's dtype. */
void *perf_tc_output(const perf_bench_t *b, const tc_request_t *req, uint64_t rows);
/* Fills the whole output buffer (count elements) with PERF_POISON: the
 * poison of the modes whose output is count elements. */
void perf_poison_recv(perf_bench_t *b);

/* The operations of a mode (barrier's too); NULL for the workload mode. */
const perf_sweep_ops_t *perf_sweep_ops(perf_mode_t mode);
/* Warmup, then iters timed operations of one side (impl 0: tcoll, 1: MPI);
 * returns the median over iterations of the slowest rank's time, seconds. */
double perf_time_side(const perf_sweep_ops_t *ops, perf_bench_t *b, int impl, int iters, int warmup,
                      double *times);
/* One extra, untimed operation of one side into a poisoned output; wrong
 * elements summed over ranks. */
long long perf_check_side(const perf_sweep_ops_t *ops, perf_bench_t *b, int impl);
/* The first header line (versions, ranks), and the two column lines. */
void perf_print_banner(void);
void perf_print_columns(int with_limit);
/* The header line saying where the user buffers are (--mem). */
void perf_print_mem(int shared);
/* busbw / algbw for a mode at this rank count, and the factor as printed. */
double perf_busbw_factor(perf_mode_t mode);
const char *perf_busbw_text(perf_mode_t mode);
/* Runs every size; returns the rows (rank 0 prints them as they come). */
perf_row_t *perf_run_sweep(const perf_opts_t *o, int *nrows_p, long long *wrong_p);
/* The barrier mode: one row, no sizes (mode_barrier.c). */
perf_row_t *perf_run_barrier(const perf_opts_t *o, int *nrows_p, long long *wrong_p);

/* ------------------------------------------------------------------------ */
/* limit.c and limit_model.c                                                 */
/* ------------------------------------------------------------------------ */

/* Collective: buffers of max_bytes for the rates, and the rank of this
 * node to read from (none: 1copy is not measured). */
void perf_limit_init(size_t max_bytes);
void perf_limit_free(void);
int perf_limit_has_1copy(void);
/* Collective: the rates at one size (reduce only when reduces: dtype dt, op
 * op), each timed like a row, every rank at once. */
void perf_limit_measure(size_t bytes, tc_dtype_t dt, tc_op_t op, int reduces, int iters, int warmup,
                        perf_limit_t *lim);
/* Collective: each kernel over n consecutive pieces of bytes[j], each piece
 * timed alone, reps passes; sec[k x n + j]: the median of piece j under
 * kernel k, the slowest rank's. */
void perf_limit_measure_each(const size_t *bytes, int n, tc_dtype_t dt, tc_op_t op, int reps,
                             double *sec);
/* The bytes one rank copies, reduces and reads across processes in one
 * operation: serial[rate] one after the other, and one phase in which
 * reads (ov_1copy from another process, ov_copy of memory) and the
 * reduction of what they read (ov_reduce) overlap. */
typedef struct {
    double serial[PERF_NRATES];
    double ov_1copy, ov_copy, ov_reduce;
} perf_limit_bytes_t;

/* Those bytes for one operation of mode on s bytes at n ranks, by
 * algorithm algo (a tc_request_algorithm name); 0 (all 0) when there is no
 * model for it. */
int perf_limit_bytes(perf_mode_t mode, const char *algo, double s, int n, perf_limit_bytes_t *lb);
/* The time of those bytes at those rates (GB/s), seconds: the serial ones
 * added, the overlapping phase the longer of its two; 0 if a needed rate
 * is missing. 1copy unmeasured: its bytes count as two copies. */
double perf_limit_seconds(const perf_limit_bytes_t *lb, const double gbs[PERF_NRATES]);

/* ------------------------------------------------------------------------ */
/* workload.c                                                                */
/* ------------------------------------------------------------------------ */

typedef struct {
    char *name;
    tc_tensor_t t;     /* data points into the send block */
    size_t count, off; /* elements; offset in the send/recv blocks */
    size_t packoff;    /* offset in the packed buffer (backprop order) */
    int line;
    const char *algo; /* tc_request_algorithm in the last tcoll step */
} perf_wl_tensor_t;

typedef struct {
    perf_wl_tensor_t *t;
    int n;
    size_t total, span; /* elements; elements of the blocks incl. alignment */
} perf_workload_t;

/* mpi-private: mpi-per-tensor on private (malloc) copies of the buffers,
 * MPI's best case where --mem shared puts the others in shared memory */
enum { PERF_WL_TCOLL, PERF_WL_MPI_EACH, PERF_WL_MPI_PRIVATE, PERF_WL_MPI_PACKED, PERF_WL_NMODES };
extern const char *const perf_wl_mode_names[PERF_WL_NMODES];

typedef struct {
    double ms[PERF_WL_NMODES], copy_ms;
    double limit_ms;             /* the step's limit (0: none) */
    double sec_all[PERF_NRATES]; /* each kernel over every tensor once, seconds */
    long long wrong[PERF_WL_NMODES];
    int steps, warmup;
} perf_wl_result_t;

/* Rank 0 reads the file and sends it to every rank; NULL everywhere if it cannot. */
char *perf_read_file_bcast(const char *path, long long *len_p);
/* -1 (rank 0 says why) on a bad line. */
int perf_workload_parse(char *text, const char *path, perf_workload_t *w);
void perf_workload_free(perf_workload_t *w);
/* The default workload file, or NULL (tried: where it looked). */
char *perf_default_workload(char *tried, size_t tried_len);
void perf_run_workload(const perf_opts_t *o, const char *path, perf_workload_t *w,
                       perf_wl_result_t *res);

/* ------------------------------------------------------------------------ */
/* output.c and options.c                                                    */
/* ------------------------------------------------------------------------ */

int perf_write_json_sweep(FILE *f, const perf_opts_t *o, const perf_row_t *rows, int n);
int perf_write_json_workload(FILE *f, const perf_opts_t *o, const char *path,
                             const perf_workload_t *w, const perf_wl_result_t *res);
/* 0 on success or when there is nothing to draw; -1 after saying why. */
int perf_draw_plot(const perf_opts_t *o, const perf_row_t *rows, int n);

void perf_usage(FILE *f);
/* 0 to run, 1 for --help, -1 after printing (rank 0) what is wrong. */
int perf_parse_options(int argc, char **argv, perf_opts_t *o);

#endif /* TCOLL_PERF_H */
