/*
 * output.c - what rank 0 prints for tcoll-chan-bench: the latency table
 * with its ratios to the MPI rows of the same payload, the headers and rows
 * of the two bandwidth tables, the goals (printed with the measured values,
 * never judged by the exit status) and the --json file. A cell of a
 * transfer that delivered wrong bytes reads WRONG, and a ratio that would
 * use it reads "-". It measures nothing and talks to no rank.
 */
#include "chan_bench.h"

/* v with two decimals, or WRONG. */
static void cell_num(char *buf, size_t len, double v, long long wrong)
{
    if (wrong != 0) {
        snprintf(buf, len, "WRONG");
    } else {
        snprintf(buf, len, "%.2f", v);
    }
}

/* x as a ratio ("1.52x"), or "-" when either side is wrong. */
static void cell_x(char *buf, size_t len, double x, long long wa, long long wb)
{
    if (wa != 0 || wb != 0 || x <= 0) {
        snprintf(buf, len, "-");
    } else {
        snprintf(buf, len, "%.3gx", x);
    }
}

/* a / b as a ratio, or "-" when either side is wrong. */
static void cell_ratio(char *buf, size_t len, double a, long long wa, double b, long long wb)
{
    cell_x(buf, len, b > 0 ? a / b : 0, wa, wb);
}

void cb_print_lat_table(const cb_opts_t *o, const cb_lat_row_t *rows)
{
    char p50[32], p99[32], xs[32], xp[32];
    int k;

    printf("\n## Ping-pong latency, one-way = round trip / 2 (us); %d rounds after %d warm-up\n\n",
           o->lat_iters, o->lat_warmup);
    printf("x Send, x Put: the MPI row of the same payload (0 B: MPI_Send/Recv of 0 B and the "
           "notification alone;\n8 B: MPI_Send/Recv of 8 B and MPI_Put + notification) divided "
           "by this row, from the p50s: > 1 means tcoll is faster.\n\n");
    printf("| operation | payload | p50 (us) | p99 (us) | x Send | x Put |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (k = 0; k < CB_NLAT; k++) {
        cb_lat_t ms = cb_lat_info[k].bytes ? CB_L_SEND8 : CB_L_SEND0,
                 mp = cb_lat_info[k].bytes ? CB_L_PUT8 : CB_L_NOTIFY;

        cell_num(p50, sizeof(p50), rows[k].p50_us, rows[k].wrong);
        cell_num(p99, sizeof(p99), rows[k].p99_us, rows[k].wrong);
        if (cb_lat_info[k].mpi) {
            snprintf(xs, sizeof(xs), "-");
            snprintf(xp, sizeof(xp), "-");
        } else {
            cell_ratio(xs, sizeof(xs), rows[ms].p50_us, rows[ms].wrong, rows[k].p50_us,
                       rows[k].wrong);
            cell_ratio(xp, sizeof(xp), rows[mp].p50_us, rows[mp].wrong, rows[k].p50_us,
                       rows[k].wrong);
        }
        printf("| %s | %d B | %s | %s | %s | %s |\n", cb_lat_info[k].name, cb_lat_info[k].bytes,
               p50, p99, xs, xp);
    }
    fflush(stdout);
}

void cb_print_bw_header(int twoway)
{
    int t;

    if (!twoway) {
        printf("\n## Bandwidth, one-way (GB/s = 1e9 B/s)\n\n");
        printf("Rank 0 sends a round of W messages of the size to W distinct places in rank 1's "
               "memory, then signals;\nrank 1 waits and signals back. memcpy: the same W copies "
               "in one process, one thread (rank 0).\n");
    } else {
        printf("\n## Bandwidth, two-way (GB/s, both directions added)\n\n");
        printf("Both ranks send their round at once, then wait for the other's.\n");
    }
    for (t = 0; t < CB_NXPORT; t++) {
        printf("%s: %s.\n", cb_xport_info[t].col, cb_xport_info[t].what);
    }
    printf("GB/s: the median of the runs; the runs interleave the columns%s.\n",
           twoway ? "" : " (memcpy first)");
    printf("x Send, x Put: this tcoll column divided by Send/Recv, by Put+flush (> 1: tcoll "
           "faster)%s;\nthe median over the runs of each run's ratio.\n\n",
           twoway ? "" : "; % memcpy: portchan / memcpy");
    if (!twoway) {
        printf("| size | W | rounds | memcpy | memchan | portchan | Send/Recv | Put+flush | "
               "memchan x Send | memchan x Put | portchan x Send | portchan x Put | "
               "portchan %% memcpy |\n");
        printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
               "---: | ---: |\n");
    } else {
        printf("| size | W | rounds | memchan | portchan | Send/Recv | Put+flush | "
               "memchan x Send | memchan x Put | portchan x Send | portchan x Put |\n");
        printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    }
    fflush(stdout);
}

void cb_print_bw_row(const cb_bw_row_t *r, int twoway)
{
    char size[32], c[CB_NXPORT][32], x[4][32], pct[32];
    int t;

    cb_fmt_size(size, sizeof(size), r->bytes);
    for (t = 0; t < CB_NXPORT; t++) {
        cell_num(c[t], sizeof(c[t]), r->gbs[t], r->wrong[t]);
    }
    cell_x(x[0], sizeof(x[0]), r->x[CB_X_MEM_SEND], r->wrong[CB_T_MEMCHAN], r->wrong[CB_T_SEND]);
    cell_x(x[1], sizeof(x[1]), r->x[CB_X_MEM_PUT], r->wrong[CB_T_MEMCHAN], r->wrong[CB_T_PUT]);
    cell_x(x[2], sizeof(x[2]), r->x[CB_X_PORT_SEND], r->wrong[CB_T_PORTCHAN], r->wrong[CB_T_SEND]);
    cell_x(x[3], sizeof(x[3]), r->x[CB_X_PORT_PUT], r->wrong[CB_T_PORTCHAN], r->wrong[CB_T_PUT]);
    if (!twoway) {
        if (r->wrong[CB_T_PORTCHAN] != 0 || r->pct_memcpy <= 0) {
            snprintf(pct, sizeof(pct), "-");
        } else {
            snprintf(pct, sizeof(pct), "%.0f%%", r->pct_memcpy);
        }
        printf("| %s | %d | %d | %.2f | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", size,
               r->window, r->iters, r->memcpy_gbs, c[CB_T_MEMCHAN], c[CB_T_PORTCHAN], c[CB_T_SEND],
               c[CB_T_PUT], x[0], x[1], x[2], x[3], pct);
    } else {
        printf("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", size, r->window,
               r->iters, c[CB_T_MEMCHAN], c[CB_T_PORTCHAN], c[CB_T_SEND], c[CB_T_PUT], x[0], x[1],
               x[2], x[3]);
    }
    fflush(stdout);
}

void cb_print_goals(const cb_lat_row_t *lat, const cb_bw_row_t *one, int nsizes)
{
    int i;

    printf("\n## Goals (printed, not judged)\n\n");
    if (lat[CB_L_MEM_SIG].wrong != 0) {
        printf("- memory channel signal/wait one-way latency < 1 us: not measured (WRONG)\n");
    } else {
        printf("- memory channel signal/wait one-way latency < 1 us: p50 %.2f us, %s\n",
               lat[CB_L_MEM_SIG].p50_us, lat[CB_L_MEM_SIG].p50_us < 1.0 ? "met" : "NOT met");
    }
    for (i = 0; i < nsizes && one[i].bytes != CB_GOAL_SIZE; i++) {
    }
    if (i == nsizes) {
        printf("- port channel put one-way bandwidth >= 80%% of local memcpy at 4 MiB: not "
               "measured (4 MiB is not one of the sizes)\n");
    } else if (one[i].wrong[CB_T_PORTCHAN] != 0) {
        printf("- port channel put one-way bandwidth >= 80%% of local memcpy at 4 MiB: not "
               "measured (WRONG)\n");
    } else {
        printf("- port channel put one-way bandwidth >= 80%% of local memcpy at 4 MiB: %.0f%% "
               "(portchan %.2f GB/s, memcpy %.2f GB/s), %s\n", one[i].pct_memcpy,
               one[i].gbs[CB_T_PORTCHAN], one[i].memcpy_gbs,
               one[i].pct_memcpy >= 80.0 ? "met" : "NOT met");
    }
    fflush(stdout);
}

static void json_bw(FILE *f, const char *name, const cb_bw_row_t *rows, int n, int twoway)
{
    int i, t;

    fprintf(f, "  \"%s\": [\n", name);
    for (i = 0; i < n; i++) {
        fprintf(f, "    {\"bytes\": %llu, \"window\": %d, \"rounds\": %d",
                (unsigned long long)rows[i].bytes, rows[i].window, rows[i].iters);
        if (!twoway) {
            fprintf(f, ", \"memcpy_gbs\": %.4f, \"portchan_pct_memcpy\": %.2f",
                    rows[i].memcpy_gbs, rows[i].pct_memcpy);
        }
        fprintf(f, ", \"memchan_x_send\": %.4f, \"memchan_x_put\": %.4f, \"portchan_x_send\": "
                "%.4f, \"portchan_x_put\": %.4f", rows[i].x[CB_X_MEM_SEND], rows[i].x[CB_X_MEM_PUT],
                rows[i].x[CB_X_PORT_SEND], rows[i].x[CB_X_PORT_PUT]);
        for (t = 0; t < CB_NXPORT; t++) {
            if (rows[i].wrong[t] != 0) {
                fprintf(f, ", \"%s_gbs\": null", cb_xport_info[t].key);
            } else {
                fprintf(f, ", \"%s_gbs\": %.4f", cb_xport_info[t].key, rows[i].gbs[t]);
            }
            fprintf(f, ", \"%s_wrong_bytes\": %lld", cb_xport_info[t].key, rows[i].wrong[t]);
        }
        fprintf(f, "}%s\n", i + 1 < n ? "," : "");
    }
    fprintf(f, "  ]");
}

void cb_write_json(FILE *f, const cb_opts_t *o, const cb_lat_row_t *lat,
                   const cb_bw_row_t *one, const cb_bw_row_t *two, int nsizes)
{
    int k;

    fprintf(f, "{\n  \"tool\": \"tcoll-chan-bench\",\n  \"tcoll\": \"%s\",\n", tc_version());
    fprintf(f, "  \"spin_ns\": %lld,\n  \"latency_rounds\": %d,\n  \"runs\": %d,\n",
            (long long)o->spin_ns, o->lat_iters, o->runs);
    fprintf(f, "  \"latency\": [\n");
    for (k = 0; k < CB_NLAT; k++) {
        fprintf(f, "    {\"op\": \"%s\", \"bytes\": %d, ", cb_lat_info[k].name,
                cb_lat_info[k].bytes);
        if (lat[k].wrong != 0) {
            fprintf(f, "\"p50_us\": null, \"p99_us\": null, ");
        } else {
            fprintf(f, "\"p50_us\": %.4f, \"p99_us\": %.4f, ", lat[k].p50_us, lat[k].p99_us);
        }
        fprintf(f, "\"wrong_rounds\": %lld}%s\n", lat[k].wrong, k + 1 < CB_NLAT ? "," : "");
    }
    fprintf(f, "  ],\n");
    json_bw(f, "oneway", one, nsizes, 0);
    fprintf(f, ",\n");
    json_bw(f, "twoway", two, nsizes, 1);
    fprintf(f, "\n}\n");
}
