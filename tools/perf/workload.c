/*
 * workload.c - the workload mode: a list of tensors (name, elements, shape;
 * by default ResNet-50's 161 gradients) allreduced once each per step, as a
 * data-parallel training step does, timed three ways: tcoll (every tensor
 * submitted by name in backprop order, then all waited for), one blocking
 * MPI_Allreduce per tensor, and everything packed into one buffer for one
 * MPI_Allreduce (the copies included). Rank 0 reads the file and sends it to
 * the others; a bad file stops every rank with exit status 2 before tcoll
 * starts. Like the sweeps, it never judges a time.
 */
#define _GNU_SOURCE
#include "perf.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where the default workload file lives: relative to the executable's
 * directory once installed, and in the source tree for a build directory.
 * perf.cmake defines both; a hand-made build gets these. */
#ifndef TCOLL_PERF_REL_DATADIR
#define TCOLL_PERF_REL_DATADIR "../share/tcoll"
#endif
#ifndef TCOLL_PERF_SOURCE_WORKLOAD
#define TCOLL_PERF_SOURCE_WORKLOAD ""
#endif
#define PERF_WORKLOAD_FILE "resnet50.tsv"

/* Reads the whole file on rank 0 and sends it to every rank (the path may
 * exist on rank 0's node only). NULL on every rank if rank 0 cannot read it. */
char *perf_read_file_bcast(const char *path, long long *len_p)
{
    long long len = -1;
    char *buf = NULL;
    if (perf_rank == 0) {
        FILE *f = fopen(path, "rb");
        if (f == NULL) {
            fprintf(stderr, "tcoll-perf: cannot open workload file '%s': %s\n", path,
                    strerror(errno));
        } else {
            size_t cap = 1 << 16, got = 0, k;
            buf = perf_alloc(cap, "the workload file");
            while ((k = fread(buf + got, 1, cap - got - 1, f)) > 0) {
                got += k;
                if (cap - got - 1 == 0) {
                    char *nb = realloc(buf, cap * 2);
                    if (nb == NULL) {
                        perf_die("cannot allocate %zu bytes for the workload file", cap * 2);
                    }
                    buf = nb;
                    cap *= 2;
                }
            }
            if (ferror(f)) {
                fprintf(stderr, "tcoll-perf: cannot read workload file '%s': %s\n", path,
                        strerror(errno));
                free(buf);
                buf = NULL;
            } else {
                len = (long long)got;
            }
            fclose(f);
        }
    }
    MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, perf_comm);
    if (len < 0 || len > INT_MAX) {
        if (perf_rank == 0 && len > INT_MAX) {
            fprintf(stderr, "tcoll-perf: workload file '%s' is too large\n", path);
        }
        free(buf);
        return NULL;
    }
    if (perf_rank != 0) {
        buf = perf_alloc((size_t)len + 1, "the workload file");
    }
    MPI_Bcast(buf, (int)len, MPI_CHAR, 0, perf_comm);
    buf[len] = '\0';
    *len_p = len;
    return buf;
}

/* Parses "name<TAB>elements<TAB>shape" lines ('#' lines and blank lines
 * skipped). On a bad line rank 0 says which and why; returns -1. */
int perf_workload_parse(char *text, const char *path, perf_workload_t *w)
{
    int cap = 256, lineno = 0;
    char *line = text, *next;
    memset(w, 0, sizeof *w);
    w->t = perf_alloc(sizeof *w->t * (size_t)cap, "the workload");
    for (; line != NULL && *line != '\0'; line = next) {
        char *f[4] = {NULL}, *save = NULL, *tok, *end, *dim;
        int nf = 0;
        perf_wl_tensor_t *t;
        long long elems, prod = 1;

        lineno++;
        next = strchr(line, '\n');
        if (next != NULL) {
            *next++ = '\0';
        }
        line[strcspn(line, "\r")] = '\0';
        if (line[0] == '#' || line[strspn(line, " \t")] == '\0') {
            continue;
        }
        for (tok = strtok_r(line, "\t", &save); tok != NULL && nf < 4;
             tok = strtok_r(NULL, "\t", &save)) {
            f[nf++] = tok;
        }
        if (nf != 3) {
            if (perf_rank == 0) {
                fprintf(stderr,
                        "tcoll-perf: %s:%d: expected 3 tab-separated fields (name, elements, "
                        "shape), got %d\n",
                        path, lineno, nf);
            }
            return -1;
        }
        if (strlen(f[0]) > TC_MAX_NAME_LEN) {
            if (perf_rank == 0) {
                fprintf(stderr, "tcoll-perf: %s:%d: name longer than %d bytes\n", path, lineno,
                        TC_MAX_NAME_LEN);
            }
            return -1;
        }
        errno = 0;
        elems = strtoll(f[1], &end, 10);
        if (errno != 0 || end == f[1] || *end != '\0' || elems < 0 || elems > INT_MAX) {
            if (perf_rank == 0) {
                fprintf(stderr, "tcoll-perf: %s:%d: bad element count '%s' (0..%d)\n", path, lineno,
                        f[1], INT_MAX);
            }
            return -1;
        }
        if (w->n == cap) {
            perf_wl_tensor_t *nt = realloc(w->t, sizeof *w->t * (size_t)cap * 2);
            if (nt == NULL) {
                perf_die("cannot allocate the workload");
            }
            w->t = nt;
            cap *= 2;
        }
        t = &w->t[w->n];
        memset(t, 0, sizeof *t);
        t->line = lineno;
        t->t.dtype = TC_FLOAT32;
        for (dim = f[2]; *dim != '\0';) {
            long long d;
            errno = 0;
            d = strtoll(dim, &end, 10);
            if (errno != 0 || end == dim || d < 0 || d > INT_MAX || t->t.ndim == TC_MAX_DIMS ||
                (*end != '\0' && *end != 'x')) {
                if (perf_rank == 0) {
                    fprintf(stderr,
                            "tcoll-perf: %s:%d: bad shape '%s' (like 64x3x7x7, at most %d dims)\n",
                            path, lineno, f[2], TC_MAX_DIMS);
                }
                return -1;
            }
            t->t.shape[t->t.ndim++] = d;
            if (d == 0) {
                prod = 0;
            } else if (prod <= INT_MAX) { /* past INT_MAX it cannot match elems anyway */
                prod *= d;
            }
            dim = *end == 'x' ? end + 1 : end;
        }
        if (t->t.ndim == 0 || prod != elems) {
            if (perf_rank == 0) {
                fprintf(stderr, "tcoll-perf: %s:%d: shape '%s' does not hold %lld elements\n", path,
                        lineno, f[2], elems);
            }
            return -1;
        }
        for (int i = 0; i < w->n; i++) {
            if (strcmp(w->t[i].name, f[0]) == 0) {
                if (perf_rank == 0) {
                    fprintf(stderr, "tcoll-perf: %s:%d: name '%s' already used on line %d\n", path,
                            lineno, f[0], w->t[i].line);
                }
                return -1;
            }
        }
        t->name = strdup(f[0]);
        if (t->name == NULL) {
            perf_die("cannot allocate the workload");
        }
        t->count = (size_t)elems;
        t->off = w->span;
        w->span += (t->count + 15) / 16 * 16; /* 64-byte aligned, like separate allocations */
        w->total += t->count;
        w->n++;
    }
    if (w->n == 0) {
        if (perf_rank == 0) {
            fprintf(stderr, "tcoll-perf: %s: no tensors\n", path);
        }
        return -1;
    }
    return 0;
}

void perf_workload_free(perf_workload_t *w)
{
    for (int i = 0; i < w->n; i++) {
        free(w->t[i].name);
    }
    free(w->t);
}

/* Every float32 element of the workload, indexed by its place in the blocks. */
static long long workload_check(const perf_workload_t *w, const float *recv,
                                const perf_ar_scheme_t *ar, const char *impl)
{
    long long wrong = 0;
    for (int k = 0; k < w->n; k++) {
        const perf_wl_tensor_t *t = &w->t[k];
        for (size_t i = 0; i < t->count; i++) {
            int64_t want = ar->expect[perf_hbucket(t->off + i, 0)];
            double got, wantd;
            if (!perf_elem_is(TC_FLOAT32, recv + t->off, i, want, &got, &wantd)) {
                if (wrong == 0) {
                    fprintf(stderr,
                            "tcoll-perf: rank %d: workload, %s: tensor '%s' element %zu is %.9g, "
                            "expected %.9g\n",
                            perf_rank, impl, t->name, i, got, wantd);
                }
                wrong++;
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, perf_comm);
    return wrong;
}

const char *const perf_wl_mode_names[PERF_WL_NMODES] = {"tcoll", "mpi-per-tensor", "mpi-private",
                                                        "mpi-packed"};

/* One step of one mode. Returns the time spent copying (packed mode). */
static double workload_step(const perf_workload_t *w, int mode, tc_op_t op, float *send,
                            float *recv, float *pack, tc_request_t **reqs)
{
    double copy = 0, t0;
    int k;
    switch (mode) {
    case PERF_WL_TCOLL:
        for (k = w->n - 1; k >= 0; k--) {
            tc_status_t st =
                tc_allreduce(w->t[k].name, &w->t[k].t, recv + w->t[k].off, op, &reqs[k]);
            if (st != TC_OK) {
                perf_die("tc_allreduce('%s') failed: %s: %s", w->t[k].name, tc_status_string(st),
                         tc_last_error());
            }
        }
        for (k = w->n - 1; k >= 0; k--) {
            tc_status_t st = tc_wait(reqs[k]);
            if (st != TC_OK) {
                perf_die("tc_wait('%s') failed: %s: %s", w->t[k].name, tc_status_string(st),
                         tc_request_error(reqs[k]));
            }
            w->t[k].algo = tc_request_algorithm(reqs[k]);
            tc_request_free(reqs[k]);
        }
        break;
    case PERF_WL_MPI_EACH:
        for (k = w->n - 1; k >= 0; k--) {
            MPI_Allreduce(send + w->t[k].off, recv + w->t[k].off, (int)w->t[k].count, MPI_FLOAT,
                          MPI_SUM, perf_comm);
            if (op == TC_AVG) {
                perf_mpi_avg_finish(TC_FLOAT32, recv + w->t[k].off, w->t[k].count);
            }
        }
        break;
    case PERF_WL_MPI_PACKED:
        t0 = perf_now_s();
        for (k = w->n - 1; k >= 0; k--) {
            memcpy(pack + w->t[k].packoff, send + w->t[k].off, w->t[k].count * sizeof(float));
        }
        copy += perf_now_s() - t0;
        MPI_Allreduce(MPI_IN_PLACE, pack, (int)w->total, MPI_FLOAT, MPI_SUM, perf_comm);
        if (op == TC_AVG) {
            perf_mpi_avg_finish(TC_FLOAT32, pack, w->total);
        }
        t0 = perf_now_s();
        for (k = w->n - 1; k >= 0; k--) {
            memcpy(recv + w->t[k].off, pack + w->t[k].packoff, w->t[k].count * sizeof(float));
        }
        copy += perf_now_s() - t0;
        break;
    }
    return copy;
}

/* Rank 0: "# tcoll's algorithms in its last step: cma, mapped 53 tensors
 * (96.1 MB), shm, fused 108 (6.1 MB)", in the order first met. */
static void print_algos(const perf_workload_t *w)
{
    const char *seen[16];
    int nseen = 0, k, j;

    printf("# tcoll's algorithms in its last step:");
    for (k = 0; k < w->n; k++) {
        const char *a = w->t[k].algo != NULL ? w->t[k].algo : "?";
        int tensors = 0;
        size_t bytes = 0;
        for (j = 0; j < nseen && strcmp(seen[j], a) != 0; j++) {
        }
        if (j < nseen || nseen == 16) {
            continue;
        }
        seen[nseen++] = a;
        for (j = 0; j < w->n; j++) {
            if (strcmp(w->t[j].algo != NULL ? w->t[j].algo : "?", a) == 0) {
                tensors++;
                bytes += w->t[j].count * sizeof(float);
            }
        }
        printf("%s %s %d tensor%s (%.1f MB)", nseen > 1 ? ";" : "", a, tensors,
               tensors == 1 ? "" : "s", (double)bytes / 1e6);
    }
    printf("\n");
}

/* The step's limit (limit.c, limit_model.c): every tensor through each
 * kernel at its own size, in backprop order through buffers of the step's
 * size (as cold in cache as the step's own), and each tensor's bytes by the
 * algorithm tcoll ran it with in the last step. res->limit_ms 0 if some
 * tensor's algorithm has no model. */
static void workload_limit(const perf_opts_t *o, const perf_workload_t *w, perf_wl_result_t *res)
{
    size_t *bytes = perf_alloc(sizeof *bytes * (size_t)w->n, "the tensors' sizes");
    double *sec = perf_alloc(sizeof *sec * PERF_NRATES * (size_t)w->n, "the limit's timings");
    double total = 0;
    int j, k, modeled = 1;

    for (j = 0; j < w->n; j++) {
        bytes[j] = w->t[w->n - 1 - j].count * sizeof(float);
    }
    perf_limit_init(w->total * sizeof(float));
    perf_limit_measure_each(bytes, w->n, TC_FLOAT32, o->op, 5, sec);
    for (k = 0; k < PERF_NRATES; k++) {
        res->sec_all[k] = 0;
        for (j = 0; j < w->n; j++) {
            res->sec_all[k] += sec[(size_t)k * (size_t)w->n + (size_t)j];
        }
    }
    for (j = 0; j < w->n && modeled; j++) {
        perf_limit_bytes_t b;
        double gbs[PERF_NRATES], t;
        for (k = 0; k < PERF_NRATES; k++) {
            double s = sec[(size_t)k * (size_t)w->n + (size_t)j];
            gbs[k] = s > 0 ? (double)bytes[j] / s / 1e9 : 0;
        }
        modeled = perf_limit_bytes(PERF_MODE_WORKLOAD, w->t[w->n - 1 - j].algo, (double)bytes[j],
                                   perf_size, &b);
        t = perf_limit_seconds(&b, gbs);
        modeled = modeled && (t > 0 || bytes[j] == 0);
        total += t;
    }
    res->limit_ms = modeled ? total * 1e3 : 0;
    perf_limit_free();
    free(sec);
    free(bytes);
}

void perf_run_workload(const perf_opts_t *o, const char *path, perf_workload_t *w,
                       perf_wl_result_t *res)
{
    int steps = o->iters ? o->iters : 20, warmup = o->warmup >= 0 ? o->warmup : 3;
    float *send, *recv, *pack, *psend, *precv;
    tc_request_t **reqs;
    perf_ar_scheme_t *ar;
    double *times, *copies;
    size_t p = 0;
    int shared[2];

    if (w->total > INT_MAX) {
        perf_die("the workload has %zu elements, more than one MPI_Allreduce can take", w->total);
    }
    send = perf_alloc_data(w->span * sizeof(float), !o->mem_malloc, &shared[0],
                           "the workload send block");
    recv = perf_alloc_data(w->span * sizeof(float), !o->mem_malloc, &shared[1],
                           "the workload receive block");
    pack = perf_alloc(w->total * sizeof(float), "the packed buffer");
    psend = perf_alloc(w->span * sizeof(float), "the private send block");
    precv = perf_alloc(w->span * sizeof(float), "the private receive block");
    reqs = perf_alloc(sizeof *reqs * (size_t)w->n, "requests");
    times = perf_alloc(sizeof *times * (size_t)steps, "timings");
    copies = perf_alloc(sizeof *copies * (size_t)steps, "timings");
    ar = perf_alloc(sizeof *ar, "the expected values");
    perf_ar_scheme_init(ar, TC_FLOAT32, o->op);

    memset(send, 0, w->span * sizeof(float));
    memset(pack, 0, w->total * sizeof(float));
    for (int k = w->n - 1; k >= 0; k--) { /* packed in backprop order */
        perf_wl_tensor_t *t = &w->t[k];
        t->t.data = send + t->off;
        t->packoff = p;
        p += t->count;
        for (size_t i = 0; i < t->count; i++) {
            perf_put_int(TC_FLOAT32, send + t->off, i,
                         perf_ar_value(ar, perf_rank, perf_hbucket(t->off + i, 0)));
        }
    }
    memcpy(psend, send, w->span * sizeof(float));
    memset(precv, 0, w->span * sizeof(float));

    if (perf_rank == 0) {
        char lib[128];
        tc_tool_mpi_library(lib, sizeof lib);
        printf("# tcoll-perf: tcoll %s vs %s, %d ranks (%d on this node)\n", tc_version(), lib,
               perf_size, tc_local_size());
        printf("# workload %s: %d tensors, %zu float32 elements (%zu bytes), op %s\n", path, w->n,
               w->total, w->total * sizeof(float), tc_op_name(o->op));
        perf_print_mem(shared[0] && shared[1]);
        printf("# one step: every tensor allreduced once, submitted in backprop order (last line "
               "first), then all waited for\n");
        printf("#   tcoll           tc_allreduce by name for each, then tc_wait + tc_request_free "
               "each\n");
        printf("#   mpi-per-tensor  one blocking MPI_Allreduce per tensor, same order\n");
        printf("#   mpi-private     the same on private copies of the buffers (malloc)\n");
        printf("#   mpi-packed      copy all into one buffer, one MPI_Allreduce (in place), copy "
               "back; copy(ms) is the copies' share\n");
        printf("# ms/step: median over %d steps (after %d warmup) of the slowest rank; "
               "ratio = ms/step / tcoll's ms/step (> 1: tcoll is faster)\n",
               steps, warmup);
        printf("# limit: the time the bytes each tensor's algorithm (as tc_request_algorithm "
               "names it in tcoll's last step)\n"
               "#   must copy, reduce and read across processes per rank would take at this "
               "machine's rates, measured\n"
               "#   in this run on each tensor's size, every rank at once (docs/perf.md); its "
               "ratio = limit / tcoll's ms/step:\n"
               "#   the fraction of the limit tcoll reached\n");
        printf("#\n#%-17s %10s %8s %9s %8s\n", "mode", "ms/step", "ratio", "copy(ms)", "wrong");
        fflush(stdout);
    }

    for (int m = 0; m < PERF_WL_NMODES; m++) {
        const int priv = m == PERF_WL_MPI_PRIVATE;
        float *in = priv ? psend : send, *out = priv ? precv : recv;
        memset(out, 0xa5, w->span * sizeof(float));
        for (int s = 0; s < warmup + steps; s++) {
            double t0, c;
            perf_progress("workload: %s, step %d/%d", perf_wl_mode_names[m], s + 1, warmup + steps);
            MPI_Barrier(perf_comm);
            t0 = perf_now_s();
            c = workload_step(w, priv ? PERF_WL_MPI_EACH : m, o->op, in, out, pack, reqs);
            if (s >= warmup) {
                times[s - warmup] = perf_now_s() - t0;
                copies[s - warmup] = c;
            }
        }
        MPI_Allreduce(MPI_IN_PLACE, times, steps, MPI_DOUBLE, MPI_MAX, perf_comm);
        MPI_Allreduce(MPI_IN_PLACE, copies, steps, MPI_DOUBLE, MPI_MAX, perf_comm);
        res->ms[m] = perf_median(times, steps) * 1e3;
        if (m == PERF_WL_MPI_PACKED) {
            res->copy_ms = perf_median(copies, steps) * 1e3;
        }
        res->wrong[m] = o->check ? workload_check(w, out, ar, perf_wl_mode_names[m]) : -1;
    }
    perf_progress("workload: the limit");
    workload_limit(o, w, res);
    perf_progress_clear();
    res->steps = steps;
    res->warmup = warmup;
    if (perf_rank == 0) {
        for (int m = 0; m < PERF_WL_NMODES; m++) {
            char wr[24], cp[24];
            perf_fmt_wrong(wr, sizeof wr, res->wrong[m]);
            if (m == PERF_WL_MPI_PACKED) {
                snprintf(cp, sizeof cp, "%.3f", res->copy_ms);
            } else {
                snprintf(cp, sizeof cp, "-");
            }
            printf(" %-17s %10.3f %8.2f %9s %8s\n", perf_wl_mode_names[m], res->ms[m],
                   res->ms[m] / res->ms[PERF_WL_TCOLL], cp, wr);
        }
        if (res->limit_ms > 0) {
            printf(" %-17s %10.3f %8.2f %9s %8s\n", "limit", res->limit_ms,
                   res->limit_ms / res->ms[PERF_WL_TCOLL], "-", "-");
        } else {
            printf(" %-17s %10s %8s %9s %8s\n", "limit", "-", "-", "-", "-");
        }
        print_algos(w);
        printf("# the limit's rates, each kernel over every tensor once: copy %.2f GB/s, "
               "reduce %.2f GB/s, 1copy ",
               (double)(w->total * sizeof(float)) / res->sec_all[PERF_RATE_COPY] / 1e9,
               (double)(w->total * sizeof(float)) / res->sec_all[PERF_RATE_REDUCE] / 1e9);
        if (res->sec_all[PERF_RATE_1COPY] > 0) {
            printf("%.2f GB/s\n",
                   (double)(w->total * sizeof(float)) / res->sec_all[PERF_RATE_1COPY] / 1e9);
        } else {
            printf("- (not measured here: counted as two copies)\n");
        }
        fflush(stdout);
    }
    free(ar);
    free(copies);
    free(times);
    free(reqs);
    free(pack);
    free(psend);
    free(precv);
    perf_free_data(recv, shared[1]);
    perf_free_data(send, shared[0]);
}

/* The default workload file: next to an installed executable, else in the
 * source tree this program was built from. NULL if neither exists. */
char *perf_default_workload(char *tried, size_t tried_len)
{
    char exe[4096], *slash, *path;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    tried[0] = '\0';
    if (n > 0) {
        exe[n] = '\0';
        slash = strrchr(exe, '/');
        if (slash != NULL) {
            *slash = '\0';
            if (asprintf(&path, "%s/%s/%s", exe, TCOLL_PERF_REL_DATADIR, PERF_WORKLOAD_FILE) < 0) {
                return NULL;
            }
            if (access(path, R_OK) == 0) {
                char *clean = realpath(path, NULL); /* no "bin/../share" in the header */
                if (clean != NULL) {
                    free(path);
                    return clean;
                }
                return path;
            }
            snprintf(tried, tried_len, "%s", path);
            free(path);
        }
    }
    if (TCOLL_PERF_SOURCE_WORKLOAD[0] != '\0') {
        if (access(TCOLL_PERF_SOURCE_WORKLOAD, R_OK) == 0) {
            return strdup(TCOLL_PERF_SOURCE_WORKLOAD);
        }
        size_t l = strlen(tried);
        snprintf(tried + l, tried_len - l, "%s%s", l ? ", " : "", TCOLL_PERF_SOURCE_WORKLOAD);
    }
    return NULL;
}
