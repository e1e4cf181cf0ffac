/*
 * output.c - what tcoll-perf writes besides its table, on rank 0 after the
 * run (and after MPI_Finalize): the rows as a JSON array (--json; the file
 * was opened before the run, so a bad path failed early) and a PNG of busbw
 * against size drawn by gnuplot (--plot), which is optional: without
 * gnuplot it says so and carries on. Nothing here may change a row.
 */
#define _GNU_SOURCE
#include "perf.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 8, 1K, 256M, 1G when exact; plain bytes otherwise. */
static void fmt_size(char *buf, size_t len, uint64_t bytes)
{
    static const char units[] = "KMGTPE";
    int u = -1;
    while (bytes >= 1024 && bytes % 1024 == 0 && u < 5) {
        bytes /= 1024;
        u++;
    }
    if (u < 0) {
        snprintf(buf, len, "%llu", (unsigned long long)bytes);
    } else {
        snprintf(buf, len, "%llu%c", (unsigned long long)bytes, units[u]);
    }
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            fprintf(f, "\\%c", c);
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
        } else {
            fputc(c, f);
        }
    }
    fputc('"', f);
}

/* v in fmt, or null for a value that was not measured (0). */
static void json_number(FILE *f, double v, const char *fmt)
{
    if (v > 0) {
        fprintf(f, fmt, v);
    } else {
        fputs("null", f);
    }
}

static void json_wrong(FILE *f, long long w)
{
    if (w < 0) {
        fputs("null", f);
    } else {
        fprintf(f, "%lld", w);
    }
}

int perf_write_json_sweep(FILE *f, const perf_opts_t *o, const perf_row_t *rows, int n)
{
    double fct = perf_busbw_factor(o->mode);
    int data = o->mode != PERF_MODE_BARRIER; /* the barrier: no dtype, no bandwidths */
    fputs("[\n", f);
    for (int i = 0; i < n; i++) {
        const perf_row_t *r = &rows[i];
        fprintf(f, "  {\"mode\": \"%s\", \"op\": ", perf_mode_names[o->mode]);
        if (perf_sweep_ops(o->mode)->takes_op) {
            fprintf(f, "\"%s\"", tc_op_name(o->op));
        } else {
            fputs("null", f);
        }
        fputs(", \"dtype\": ", f);
        if (data) {
            fprintf(f, "\"%s\"", tc_dtype_name(o->dtype));
        } else {
            fputs("null", f);
        }
        fprintf(f,
                ", \"ranks\": %d, \"size\": %llu, \"count\": %llu, \"iters\": %d, "
                "\"warmup\": %d",
                perf_size, (unsigned long long)r->bytes, (unsigned long long)r->count, r->iters,
                r->warmup);
        for (int k = 0; k < 2; k++) {
            const char *p = k == 0 ? "tcoll" : "mpi";
            double alg = (double)r->bytes / r->us[k] / 1e3;
            fprintf(f, ", \"%s_time_us\": %.3f", p, r->us[k]);
            if (data) {
                fprintf(f, ", \"%s_algbw_gbs\": %.4f, \"%s_busbw_gbs\": %.4f", p, alg, p,
                        alg * fct);
            } else {
                fprintf(f, ", \"%s_algbw_gbs\": null, \"%s_busbw_gbs\": null", p, p);
            }
            fprintf(f, ", \"%s_wrong\": ", p);
            json_wrong(f, r->wrong[k]);
        }
        fprintf(f, ", \"ratio\": %.4f, \"algo\": ", r->us[1] / r->us[0]);
        if (r->algo != NULL) {
            json_string(f, r->algo);
        } else {
            fputs("null", f);
        }
        fputs(", \"copy_gbs\": ", f);
        json_number(f, r->lim.gbs[PERF_RATE_COPY], "%.4f");
        fputs(", \"reduce_gbs\": ", f);
        json_number(f, r->lim.gbs[PERF_RATE_REDUCE], "%.4f");
        fputs(", \"single_copy_gbs\": ", f);
        json_number(f, r->lim.gbs[PERF_RATE_1COPY], "%.4f");
        fputs(", \"limit_us\": ", f);
        json_number(f, r->lim.us, "%.3f");
        fputs(", \"reached\": ", f);
        json_number(f, r->lim.us / r->us[0], "%.4f");
        fprintf(f, "}%s\n", i + 1 < n ? "," : "");
    }
    fputs("]\n", f);
    return ferror(f) ? -1 : 0;
}

int perf_write_json_workload(FILE *f, const perf_opts_t *o, const char *path,
                             const perf_workload_t *w, const perf_wl_result_t *res)
{
    fputs("[\n", f);
    for (int m = 0; m < PERF_WL_NMODES; m++) {
        fputs("  {\"mode\": \"workload\", \"workload\": ", f);
        json_string(f, path);
        fprintf(f,
                ", \"impl\": \"%s\", \"op\": \"%s\", \"dtype\": \"float32\", \"ranks\": %d, "
                "\"tensors\": %d, \"elements\": %zu, \"bytes\": %zu, \"steps\": %d, "
                "\"warmup\": %d, \"ms_per_step\": %.4f, \"ratio_vs_tcoll\": %.4f, \"copy_ms\": ",
                perf_wl_mode_names[m], tc_op_name(o->op), perf_size, w->n, w->total,
                w->total * sizeof(float), res->steps, res->warmup, res->ms[m],
                res->ms[m] / res->ms[PERF_WL_TCOLL]);
        if (m == PERF_WL_MPI_PACKED) {
            fprintf(f, "%.4f", res->copy_ms);
        } else {
            fputs("null", f);
        }
        fputs(", \"wrong\": ", f);
        json_wrong(f, res->wrong[m]);
        fputs(", \"limit_ms\": ", f);
        json_number(f, res->limit_ms, "%.4f");
        fputs(", \"reached\": ", f);
        json_number(f, res->limit_ms / res->ms[PERF_WL_TCOLL], "%.4f");
        fprintf(f, "}%s\n", m + 1 < PERF_WL_NMODES ? "," : "");
    }
    fputs("]\n", f);
    return ferror(f) ? -1 : 0;
}

static int on_path(const char *prog)
{
    const char *path = getenv("PATH");
    char buf[4096];
    while (path != NULL && *path != '\0') {
        size_t len = strcspn(path, ":");
        snprintf(buf, sizeof buf, "%.*s/%s", (int)(len ? len : 1), len ? path : ".", prog);
        if (access(buf, X_OK) == 0) {
            return 1;
        }
        path += len;
        path += *path == ':';
    }
    return 0;
}

int perf_draw_plot(const perf_opts_t *o, const perf_row_t *rows, int n)
{
    FILE *gp;
    int st;
    double f = perf_busbw_factor(o->mode);
    int points = 0;
    for (int i = 0; i < n; i++) {
        points += rows[i].bytes > 0;
    }
    if (points == 0) {
        fprintf(stderr, "tcoll-perf: note: every row has size 0, so no plot was drawn\n");
        return 0;
    }
    if (!on_path("gnuplot")) {
        fprintf(stderr, "tcoll-perf: note: gnuplot is not on PATH, so no plot was drawn "
                        "(Debian: apt-get install gnuplot-nox)\n");
        return 0;
    }
    signal(SIGPIPE, SIG_IGN);
    gp = popen("gnuplot", "w");
    if (gp == NULL) {
        fprintf(stderr, "tcoll-perf: cannot run gnuplot: %s\n", strerror(errno));
        return -1;
    }
    fputs("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
          "  set terminal pngcairo size 960,600 noenhanced font 'sans,10'\n"
          "} else {\n"
          "  set terminal png size 960,600 noenhanced\n"
          "}\n",
          gp);
    fputs("set output '", gp);
    for (const char *s = o->plot; *s; s++) {
        if (*s == '\'') {
            fputc('\'', gp); /* '' is a quote inside a single-quoted string */
        }
        fputc(*s, gp);
    }
    fputs("'\n", gp);
    fprintf(gp, "set title 'tcoll-perf: %s", perf_mode_names[o->mode]);
    if (perf_sweep_ops(o->mode)->takes_op) {
        fprintf(gp, " %s", tc_op_name(o->op));
    }
    fprintf(gp, ", %s, %d ranks (tcoll %s)'\n", tc_dtype_name(o->dtype), perf_size, tc_version());
    fprintf(gp,
            "set xlabel 'size (bytes)'\n"
            "set ylabel 'busbw (GB/s), algbw x %s'\n"
            "set logscale x 2\n"
            "set grid\n"
            "set key top left\n"
            "set yrange [0:*]\n",
            perf_busbw_text(o->mode));
    /* Tics at the measured sizes (at most about 14 labels), named like -b/-e. */
    fputs("set xtics (", gp);
    for (int i = 0, first = 1, step = (n + 13) / 14; i < n; i += step) {
        char lbl[32];
        if (rows[i].bytes > 0) {
            fmt_size(lbl, sizeof lbl, rows[i].bytes);
            fprintf(gp, "%s'%s' %llu", first ? "" : ", ", lbl, (unsigned long long)rows[i].bytes);
            first = 0;
        }
    }
    fputs(")\n", gp);
    for (int i = 0, lo = -1; i < n; i++) { /* margins, so no point sits on the border */
        if (rows[i].bytes > 0 && lo < 0) {
            lo = i;
        }
        if (i == n - 1) {
            fprintf(gp, "set xrange [%g:%g]\n", (double)rows[lo].bytes / 1.5,
                    (double)rows[i].bytes * 1.5);
        }
    }
    fputs("plot '-' using 1:2 with linespoints lw 2 pt 7 title 'tcoll', "
          "'-' using 1:2 with linespoints lw 2 pt 5 title 'MPI'\n",
          gp);
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < n; i++) {
            if (rows[i].bytes > 0) { /* a log axis has no 0 */
                fprintf(gp, "%llu %.6f\n", (unsigned long long)rows[i].bytes,
                        (double)rows[i].bytes / rows[i].us[k] / 1e3 * f);
            }
        }
        fputs("e\n", gp);
    }
    st = pclose(gp);
    if (st != 0) {
        fprintf(stderr,
                "tcoll-perf: gnuplot failed (status %d, its messages are above); no plot "
                "in '%s'\n",
                st, o->plot);
        return -1;
    }
    fprintf(stderr, "tcoll-perf: plot written to %s\n", o->plot);
    return 0;
}
