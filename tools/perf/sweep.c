/*
 * sweep.c - the sizes loop of the sweep modes: for each size, the mode's
 * inputs, then tcoll's operation and then MPI's, each timed iteration by
 * iteration between barriers and checked once more into a poisoned output,
 * and one row of the table. The modes themselves (mode_*.c) say what one
 * operation is; this file never judges a time, and it prints only on rank 0.
 *
 * Timing: every iteration is timed alone, between MPI_Barriers, with
 * CLOCK_MONOTONIC; one MPI_Allreduce(MAX) after the loop gives the slowest
 * rank's time per iteration, and the row shows the median of those.
 */
#include "perf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const perf_sweep_ops_t *perf_sweep_ops(perf_mode_t mode)
{
    switch (mode) {
    case PERF_MODE_ALLREDUCE: return &perf_allreduce_ops;
    case PERF_MODE_ALLGATHER: return &perf_allgather_ops;
    case PERF_MODE_BROADCAST: return &perf_broadcast_ops;
    case PERF_MODE_REDUCESCATTER: return &perf_reducescatter_ops;
    case PERF_MODE_ALLTOALL: return &perf_alltoall_ops;
    case PERF_MODE_BARRIER: return &perf_barrier_ops;
    default: return NULL;
    }
}

double perf_busbw_factor(perf_mode_t mode)
{
    const perf_sweep_ops_t *ops = perf_sweep_ops(mode);
    double n = perf_size;
    switch (ops != NULL ? ops->busbw : PERF_BUSBW_1) {
    case PERF_BUSBW_2RING: return 2.0 * (n - 1) / n;
    case PERF_BUSBW_RING: return (n - 1) / n;
    default: return 1.0;
    }
}

const char *perf_busbw_text(perf_mode_t mode)
{
    const perf_sweep_ops_t *ops = perf_sweep_ops(mode);
    switch (ops != NULL ? ops->busbw : PERF_BUSBW_1) {
    case PERF_BUSBW_2RING: return "2(n-1)/n";
    case PERF_BUSBW_RING: return "(n-1)/n";
    default: return "1";
    }
}

void perf_tc_submit_ok(const perf_bench_t *b, tc_status_t st)
{
    if (st != TC_OK) {
        perf_die("tc_%s('%s') failed: %s: %s", perf_mode_names[b->o->mode], b->name,
                 tc_status_string(st), tc_last_error());
    }
}

void perf_tc_wait(perf_bench_t *b, tc_request_t *req)
{
    tc_status_t st = tc_wait(req);
    if (st != TC_OK) {
        perf_die("tc_wait('%s') failed: %s: %s", b->name, tc_status_string(st),
                 tc_request_error(req));
    }
    b->algo = tc_request_algorithm(req);
}

void *perf_tc_output(const perf_bench_t *b, const tc_request_t *req, uint64_t rows)
{
    tc_tensor_t out;
    tc_status_t st = tc_request_output(req, &out);
    if (st != TC_OK) {
        perf_die("tc_request_output('%s') failed: %s: %s", b->name, tc_status_string(st),
                 tc_last_error());
    }
    if (out.dtype != b->o->dtype || out.ndim != 1 || (uint64_t)out.shape[0] != rows) {
        perf_die("tc_request_output('%s'): got a %s tensor of %d dims, shape[0] %lld; "
                 "expected %s [%llu]",
                 b->name, tc_dtype_name(out.dtype), out.ndim,
                 out.ndim > 0 ? (long long)out.shape[0] : -1LL, tc_dtype_name(b->o->dtype),
                 (unsigned long long)rows);
    }
    return out.data;
}

double perf_time_side(const perf_sweep_ops_t *ops, perf_bench_t *b, int impl, int iters, int warmup,
                      double *times)
{
    for (int i = 0; i < warmup + iters; i++) {
        double t0;
        MPI_Barrier(perf_comm);
        t0 = perf_now_s();
        if (impl == 0) {
            ops->tcoll_once(b, 0);
        } else {
            ops->mpi_once(b, 0);
        }
        if (i >= warmup) {
            times[i - warmup] = perf_now_s() - t0;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, times, iters, MPI_DOUBLE, MPI_MAX, perf_comm);
    return perf_median(times, iters);
}

long long perf_check_side(const perf_sweep_ops_t *ops, perf_bench_t *b, int impl)
{
    long long wrong;
    ops->poison(b);
    MPI_Barrier(perf_comm);
    wrong = impl == 0 ? ops->tcoll_once(b, 1) : ops->mpi_once(b, 1);
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, perf_comm);
    return wrong;
}

/* Default iterations: 100 up to 5 MiB, then fewer so each size takes about
 * the same time (512 MiB of data per side), never under 5. */
static int default_iters(uint64_t bytes)
{
    uint64_t it = bytes ? (512ull << 20) / bytes : 100;
    return it > 100 ? 100 : it < 5 ? 5 : (int)it;
}

static int default_warmup(int iters)
{
    int w = iters / 10;
    return w < 2 ? 2 : w;
}

/* "12.34", or "-" for a rate that was not measured. */
static void fmt_rate(char *buf, size_t len, double gbs)
{
    if (gbs > 0) {
        snprintf(buf, len, "%.2f", gbs);
    } else {
        snprintf(buf, len, "-");
    }
}

/* The label tcoll reported, without a parenthesis ("eager (...)": "eager"). */
static void fmt_algo(char *buf, size_t len, const char *algo)
{
    const char *paren = algo != NULL ? strstr(algo, " (") : NULL;
    if (algo == NULL) {
        snprintf(buf, len, "-");
    } else {
        snprintf(buf, len, "%.*s", paren != NULL ? (int)(paren - algo) : (int)strlen(algo), algo);
    }
}

static void print_row(const perf_opts_t *o, const perf_row_t *r)
{
    double f = perf_busbw_factor(o->mode), alg[2];
    char w0[24], w1[24], rate[PERF_NRATES][24], lim[24], reached[24], algo[64];
    for (int k = 0; k < 2; k++) {
        alg[k] = (double)r->bytes / r->us[k] / 1e3;
    }
    perf_fmt_wrong(w0, sizeof w0, r->wrong[0]);
    perf_fmt_wrong(w1, sizeof w1, r->wrong[1]);
    for (int k = 0; k < PERF_NRATES; k++) {
        fmt_rate(rate[k], sizeof rate[k], r->lim.gbs[k]);
    }
    if (r->lim.us > 0) {
        snprintf(lim, sizeof lim, "%.2f", r->lim.us);
        snprintf(reached, sizeof reached, "%.2f", r->lim.us / r->us[0]);
    } else {
        snprintf(lim, sizeof lim, "-");
        snprintf(reached, sizeof reached, "-");
    }
    fmt_algo(algo, sizeof algo, r->algo);
    perf_progress_clear();
    printf("%12llu %12llu %8s  %10.2f %7.2f %7.2f %6s  %10.2f %7.2f %7.2f %6s  %6.2f"
           "  %6s %6s %6s %10s %7s  %s\n",
           (unsigned long long)r->bytes, (unsigned long long)r->count, tc_dtype_name(o->dtype),
           r->us[0], alg[0], alg[0] * f, w0, r->us[1], alg[1], alg[1] * f, w1, r->us[1] / r->us[0],
           rate[PERF_RATE_COPY], rate[PERF_RATE_REDUCE], rate[PERF_RATE_1COPY], lim, reached, algo);
    fflush(stdout);
}

void perf_print_banner(void)
{
    char lib[128];
    tc_tool_mpi_library(lib, sizeof lib);
    printf("# tcoll-perf: tcoll %s vs %s, %d ranks (%d on this node)\n", tc_version(), lib,
           perf_size, tc_local_size());
}

void perf_print_columns(int with_limit)
{
    printf("#%35s%s  %s%s\n", "", "------------- tcoll -------------",
           "-------------- MPI --------------",
           with_limit ? "          ----------------- limit -----------------" : "");
    printf("#%11s %12s %8s  %10s %7s %7s %6s  %10s %7s %7s %6s  %6s", "size(B)", "count", "type",
           "time(us)", "algbw", "busbw", "wrong", "time(us)", "algbw", "busbw", "wrong", "ratio");
    if (with_limit) {
        printf("  %6s %6s %6s %10s %7s  %s", "copy", "reduce", "1copy", "limit(us)", "reached",
               "algo");
    }
    printf("\n");
    fflush(stdout);
}

void perf_print_mem(int shared)
{
    printf("# buffers (both sides): %s\n",
           shared ? "tc_mem_alloc (--mem shared): the node's ranks map each other's, tcoll "
                    "reads them with loads"
                  : "malloc (--mem malloc): private, tcoll reads the peers' through "
                    "process_vm_readv");
}

/* What the limit columns are, under the header. */
static void print_limit_note(void)
{
    printf("# limit: copy, reduce, 1copy = this machine's rates in this run at this size, every "
           "rank at once (GB/s): memcpy,\n"
           "#   tc_reduce_local (the collectives' kernel), process_vm_readv from the next rank of "
           "the node%s;\n"
           "#   limit(us) = the bytes tcoll's algorithm (algo, as tc_request_algorithm names it) "
           "must copy, reduce and read\n"
           "#   across processes per rank, at those rates (docs/perf.md); reached = limit / "
           "tcoll's time (1 = at the limit)\n",
           perf_limit_has_1copy() ? "" : " (not measured here: counted as two copies)");
}

static void print_sweep_header(const perf_opts_t *o, const perf_sweep_ops_t *ops, int sizes,
                               int shared)
{
    perf_print_banner();
    printf("# %s", perf_mode_names[o->mode]);
    if (ops->takes_op) {
        printf(", op %s", tc_op_name(o->op));
    }
    if (o->mode == PERF_MODE_BROADCAST) {
        printf(", root %d", o->root);
    }
    printf(", dtype %s, %d sizes from %llu to %llu bytes, check %s\n", tc_dtype_name(o->dtype),
           sizes, (unsigned long long)o->min_bytes, (unsigned long long)o->max_bytes,
           o->check ? "on" : "off");
    if (o->iters) {
        printf("# iterations: %d timed after %d warmup, per size and side\n", o->iters,
               o->warmup >= 0 ? o->warmup : default_warmup(o->iters));
    } else {
        printf("# iterations: 100 timed per size and side up to 5 MiB, then 512 MiB/size (at "
               "least 5), after iters/10 warmup (at least 2)\n");
    }
    printf("# time: median over iterations of the slowest rank (us); algbw = size/time (GB/s);\n"
           "# busbw = algbw * %s (n = %d ranks); wrong = elements differing from the exact "
           "result, all ranks\n",
           perf_busbw_text(o->mode), perf_size);
    if (ops->size_note != NULL) {
        printf("# size and count: %s\n", ops->size_note);
    }
    printf("# ratio = tcoll busbw / MPI busbw: > 1 means tcoll is faster\n");
    perf_print_mem(shared);
    print_limit_note();
    perf_print_columns(1);
}

perf_row_t *perf_run_sweep(const perf_opts_t *o, int *nrows_p, long long *wrong_p)
{
    const perf_sweep_ops_t *ops = perf_sweep_ops(o->mode);
    size_t es = tc_dtype_size(o->dtype);
    uint64_t max_count = o->max_bytes / es, bytes, *sizes;
    int nsizes = 0, n, created = 0, max_iters = 0;
    perf_row_t *rows;
    perf_ar_scheme_t *ar = NULL;
    double *times;
    perf_bench_t b;
    void *send, *recv;
    int shared[2];

    /* -b, -b*f, -b*f^2, ... up to -e, and -e itself last if the steps miss it. */
    sizes = perf_alloc(sizeof *sizes * 66, "sizes"); /* f >= 2: at most 64 steps + 1 */
    for (bytes = o->min_bytes;; bytes *= o->factor) {
        sizes[nsizes++] = bytes;
        if (bytes > o->max_bytes / o->factor) {
            break;
        }
    }
    if (sizes[nsizes - 1] != o->max_bytes) {
        sizes[nsizes++] = o->max_bytes;
    }
    for (n = 0; n < nsizes; n++) {
        int it = o->iters ? o->iters : default_iters(sizes[n]);
        max_iters = it > max_iters ? it : max_iters;
    }
    rows = perf_alloc(sizeof *rows * (size_t)nsizes, "rows");
    times = perf_alloc(sizeof *times * (size_t)max_iters, "timings");

    /* One set of buffers for every size, touched now so that neither side
     * pays the first-touch page faults. */
    send = perf_alloc_data(max_count * es, !o->mem_malloc, &shared[0], "the send buffer");
    recv = perf_alloc_data(ops->needs_recv ? max_count * es : 0, !o->mem_malloc, &shared[1],
                           "the receive buffer");
    memset(send, 0, max_count * es);
    if (ops->needs_recv) {
        memset(recv, 0, max_count * es);
    }
    if (ops->takes_op) {
        ar = perf_alloc(sizeof *ar, "the expected values");
        perf_ar_scheme_init(ar, o->dtype, o->op);
    }

    memset(&b, 0, sizeof b);
    b.o = o;
    b.ar = ar;
    b.send = send;
    b.recv = recv;
    b.mdt = perf_mpi_dtype(o->dtype);
    b.mop = ops->takes_op ? perf_mpi_op(o->dtype, o->op, &created) : MPI_OP_NULL;
    b.counts = perf_alloc(sizeof *b.counts * (size_t)perf_size, "counts");
    b.displs = perf_alloc(sizeof *b.displs * (size_t)perf_size, "displacements");

    perf_limit_init(max_count * es);
    if (perf_rank == 0) {
        print_sweep_header(o, ops, nsizes, shared[0] && shared[1]);
    }
    *wrong_p = 0;
    for (n = 0; n < nsizes; n++) {
        perf_row_t *r = &rows[n];
        bytes = sizes[n];
        uint64_t count = bytes / es;
        if (ops->count_multiple_of_n) {
            count -= count % (uint64_t)perf_size;
        }
        b.count = count;
        b.salt = perf_hash(count + 1);
        snprintf(b.name, sizeof b.name, "tcoll-perf/%s/%llu", perf_mode_names[o->mode],
                 (unsigned long long)bytes);
        memset(&b.tensor, 0, sizeof b.tensor);
        b.tensor.data = send;
        b.tensor.dtype = o->dtype;
        b.tensor.ndim = 1;
        ops->setup(&b);

        memset(r, 0, sizeof *r);
        r->bytes = count * es;
        r->count = count;
        r->iters = o->iters ? o->iters : default_iters(bytes);
        r->warmup = o->warmup >= 0 ? o->warmup : default_warmup(r->iters);
        ops->fill(&b);
        for (int impl = 0; impl < 2; impl++) {
            perf_progress("[%d/%d] %llu bytes: %s, %d iterations", n + 1, nsizes,
                          (unsigned long long)r->bytes, impl == 0 ? "tcoll" : "MPI", r->iters);
            r->us[impl] = perf_time_side(ops, &b, impl, r->iters, r->warmup, times) * 1e6;
            r->wrong[impl] = o->check ? perf_check_side(ops, &b, impl) : -1;
            if (r->wrong[impl] > 0) {
                *wrong_p += r->wrong[impl];
            }
            if (impl == 0) {
                r->algo = b.algo;
            }
        }
        perf_progress("[%d/%d] %llu bytes: the limit", n + 1, nsizes, (unsigned long long)r->bytes);
        perf_limit_measure(r->bytes, o->dtype, o->op, ops->takes_op, r->iters, r->warmup, &r->lim);
        {
            perf_limit_bytes_t lb;
            if (perf_limit_bytes(o->mode, r->algo, (double)r->bytes, perf_size, &lb)) {
                r->lim.us = perf_limit_seconds(&lb, r->lim.gbs) * 1e6;
            }
        }
        if (perf_rank == 0) {
            print_row(o, r);
        }
    }
    perf_progress_clear();
    if (created) {
        MPI_Op_free(&b.mop);
    }
    perf_limit_free();
    free(b.displs);
    free(b.counts);
    free(ar);
    perf_free_data(send, shared[0]);
    perf_free_data(recv, shared[1]);
    free(times);
    free(sizes);
    *nrows_p = nsizes;
    return rows;
}
