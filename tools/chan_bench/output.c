/*
 * output.c - what rank 0 prints for tcoll-chan-bench: the latency table
 * with its ratios to the MPI rows of the same payload, the headers and rows
 * of the two bandwidth tables, the goals (printed with the measured values,
 * never judged by the exit status) and the --json file. A cell of a
 * transfer that delivered wrong bytes reads WRONG, and a ratio that would
 * use it reads "-". Across nodes (cb_nodes) the memory channel rows and
 * columns and the memcpy reference are left out, each table says so, and
 * the goals give the port channel against MPI_Send/Recv instead. It
 * measures nothing and talks to no rank.
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
    if (cb_nodes) {
        printf("No memory channel rows: the ranks are on different nodes, and memory channels "
               "are for one node.\n\n");
    }
    printf("| operation | payload | p50 (us) | p99 (us) | x Send | x Put |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (k = 0; k < CB_NLAT; k++) {
        cb_lat_t ms = cb_lat_info[k].bytes ? CB_L_SEND8 : CB_L_SEND0,
                 mp = cb_lat_info[k].bytes ? CB_L_PUT8 : CB_L_NOTIFY;

        if (!cb_lat_on(k)) {
            continue;
        }
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
    int cpy = !twoway && cb_memcpy_on(), t, k, ncols = 3;

    if (!twoway) {
        printf("\n## Bandwidth, one-way (GB/s = 1e9 B/s)\n\n");
        printf("Rank 0 sends a round of W messages of the size to W distinct places in rank 1's "
               "memory, then signals;\nrank 1 waits and signals back.%s\n",
               cpy ? " memcpy: the same W copies in one process, one thread (rank 0)." : "");
    } else {
        printf("\n## Bandwidth, two-way (GB/s, both directions added)\n\n");
        printf("Both ranks send their round at once, then wait for the other's.\n");
    }
    if (cb_nodes) {
        printf(
            "%s",
            twoway
                ? "No memchan column: the ranks are on different nodes, and memory "
                  "channels are for one node.\n"
                : "No memchan or memcpy column: the ranks are on "
                  "different nodes, and memory channels (and the\nmemcpy reference of the in-node "
                  "goal) are for one node.\n");
    }
    for (t = 0; t < CB_NXPORT; t++) {
        if (cb_xport_on(t)) {
            printf("%s: %s.\n", cb_xport_info[t].col, cb_xport_info[t].what);
        }
    }
    printf("GB/s: the median of the runs; the runs interleave the columns%s.\n",
           cpy ? " (memcpy first)" : "");
    printf("x Send, x Put: this tcoll column divided by Send/Recv, by Put+flush (> 1: tcoll "
           "faster)%s;\nthe median over the runs of each run's ratio.\n\n",
           cpy ? "; % memcpy: portchan / memcpy" : "");
    printf("| size | W | rounds |");
    if (cpy) {
        printf(" memcpy |");
        ncols++;
    }
    for (t = 0; t < CB_NXPORT; t++) {
        if (cb_xport_on(t)) {
            printf(" %s |", cb_xport_info[t].col);
            ncols++;
        }
    }
    for (k = 0; k < CB_NX; k++) {
        if (cb_xport_on(cb_x_info[k].a) && cb_xport_on(cb_x_info[k].b)) {
            printf(" %s |", cb_x_info[k].col);
            ncols++;
        }
    }
    if (cpy) {
        printf(" portchan %% memcpy |");
        ncols++;
    }
    printf("\n|");
    for (k = 0; k < ncols; k++) {
        printf(" ---: |");
    }
    printf("\n");
    fflush(stdout);
}

void cb_print_bw_row(const cb_bw_row_t *r, int twoway)
{
    char cell[32];
    int t, k;

    cb_fmt_size(cell, sizeof(cell), r->bytes);
    printf("| %s | %d | %d |", cell, r->window, r->iters);
    if (!twoway && cb_memcpy_on()) {
        printf(" %.2f |", r->memcpy_gbs);
    }
    for (t = 0; t < CB_NXPORT; t++) {
        if (cb_xport_on(t)) {
            cell_num(cell, sizeof(cell), r->gbs[t], r->wrong[t]);
            printf(" %s |", cell);
        }
    }
    for (k = 0; k < CB_NX; k++) {
        if (cb_xport_on(cb_x_info[k].a) && cb_xport_on(cb_x_info[k].b)) {
            cell_x(cell, sizeof(cell), r->x[k], r->wrong[cb_x_info[k].a], r->wrong[cb_x_info[k].b]);
            printf(" %s |", cell);
        }
    }
    if (!twoway && cb_memcpy_on()) {
        if (r->wrong[CB_T_PORTCHAN] != 0 || r->pct_memcpy <= 0) {
            snprintf(cell, sizeof(cell), "-");
        } else {
            snprintf(cell, sizeof(cell), "%.0f%%", r->pct_memcpy);
        }
        printf(" %s |", cell);
    }
    printf("\n");
    fflush(stdout);
}

/* The row of the goal size (4 MiB), or -1. */
static int goal_row(const cb_bw_row_t *rows, int nsizes)
{
    int i;

    for (i = 0; i < nsizes; i++) {
        if (rows[i].bytes == CB_GOAL_SIZE) {
            return i;
        }
    }
    return -1;
}

/* Across nodes: the port channel against MPI_Send/Recv, latency at both
 * payloads and bandwidth both ways at 4 MiB (the largest size without it). */
static void print_goals_nodes(const cb_lat_row_t *lat, const cb_bw_row_t *one,
                              const cb_bw_row_t *two, int nsizes)
{
    static const struct {
        cb_lat_t port, mpi;
        const char *what;
    } lrows[] = {{CB_L_PORT_SIG, CB_L_SEND0, "signal + wait, 0 B"},
                 {CB_L_PORT_PUT, CB_L_SEND8, "put_with_signal + wait, 8 B"}};
    const cb_bw_row_t *bw[2] = {one, two};
    char a[32], b[32], x[32], size[32];
    int i = goal_row(one, nsizes), k;

    printf("- the in-node goals (memory channel signal/wait one-way latency < 1 us; port channel "
           "put one-way\n  bandwidth >= 80%% of local memcpy at 4 MiB) do not apply: the ranks "
           "are on different nodes\n");
    printf("- in their place, the port channel against MPI_Send/Recv (x Send as in the tables: "
           "> 1 means the port\n  channel is faster):\n");
    for (k = 0; k < 2; k++) {
        const cb_lat_row_t *p = &lat[lrows[k].port], *m = &lat[lrows[k].mpi];

        cell_num(a, sizeof(a), p->p50_us, p->wrong);
        cell_num(b, sizeof(b), m->p50_us, m->wrong);
        cell_ratio(x, sizeof(x), m->p50_us, m->wrong, p->p50_us, p->wrong);
        printf("  - latency, %s: port channel p50 %s us, MPI_Send/Recv p50 %s us: %s Send\n",
               lrows[k].what, a, b, x);
    }
    i = i >= 0 ? i : nsizes - 1;
    cb_fmt_size(size, sizeof(size), one[i].bytes);
    for (k = 0; k < 2; k++) {
        const cb_bw_row_t *r = &bw[k][i];

        cell_num(a, sizeof(a), r->gbs[CB_T_PORTCHAN], r->wrong[CB_T_PORTCHAN]);
        cell_num(b, sizeof(b), r->gbs[CB_T_SEND], r->wrong[CB_T_SEND]);
        cell_x(x, sizeof(x), r->x[CB_X_PORT_SEND], r->wrong[CB_T_PORTCHAN], r->wrong[CB_T_SEND]);
        printf("  - %s bandwidth at %s: port channel %s GB/s, Send/Recv %s GB/s: %s Send\n",
               k == 0 ? "one-way" : "two-way", size, a, b, x);
    }
}

void cb_print_goals(const cb_lat_row_t *lat, const cb_bw_row_t *one, const cb_bw_row_t *two,
                    int nsizes)
{
    int i = goal_row(one, nsizes);

    printf("\n## Goals (printed, not judged)\n\n");
    if (cb_nodes) {
        print_goals_nodes(lat, one, two, nsizes);
        fflush(stdout);
        return;
    }
    if (lat[CB_L_MEM_SIG].wrong != 0) {
        printf("- memory channel signal/wait one-way latency < 1 us: not measured (WRONG)\n");
    } else {
        printf("- memory channel signal/wait one-way latency < 1 us: p50 %.2f us, %s\n",
               lat[CB_L_MEM_SIG].p50_us, lat[CB_L_MEM_SIG].p50_us < 1.0 ? "met" : "NOT met");
    }
    if (i < 0) {
        printf("- port channel put one-way bandwidth >= 80%% of local memcpy at 4 MiB: not "
               "measured (4 MiB is not one of the sizes)\n");
    } else if (one[i].wrong[CB_T_PORTCHAN] != 0) {
        printf("- port channel put one-way bandwidth >= 80%% of local memcpy at 4 MiB: not "
               "measured (WRONG)\n");
    } else {
        printf("- port channel put one-way bandwidth >= 80%% of local memcpy at 4 MiB: %.0f%% "
               "(portchan %.2f GB/s, memcpy %.2f GB/s), %s\n",
               one[i].pct_memcpy, one[i].gbs[CB_T_PORTCHAN], one[i].memcpy_gbs,
               one[i].pct_memcpy >= 80.0 ? "met" : "NOT met");
    }
    fflush(stdout);
}

static void json_bw(FILE *f, const char *name, const cb_bw_row_t *rows, int n, int twoway)
{
    int i, t, k;

    fprintf(f, "  \"%s\": [\n", name);
    for (i = 0; i < n; i++) {
        fprintf(f, "    {\"bytes\": %llu, \"window\": %d, \"rounds\": %d",
                (unsigned long long)rows[i].bytes, rows[i].window, rows[i].iters);
        if (!twoway && cb_memcpy_on()) {
            fprintf(f, ", \"memcpy_gbs\": %.4f, \"portchan_pct_memcpy\": %.2f", rows[i].memcpy_gbs,
                    rows[i].pct_memcpy);
        }
        for (k = 0; k < CB_NX; k++) {
            if (cb_xport_on(cb_x_info[k].a) && cb_xport_on(cb_x_info[k].b)) {
                fprintf(f, ", \"%s\": %.4f", cb_x_info[k].key, rows[i].x[k]);
            }
        }
        for (t = 0; t < CB_NXPORT; t++) {
            if (!cb_xport_on(t)) {
                continue;
            }
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

void cb_write_json(FILE *f, const cb_opts_t *o, const cb_lat_row_t *lat, const cb_bw_row_t *one,
                   const cb_bw_row_t *two, int nsizes)
{
    int k, last = CB_NLAT - 1;

    while (!cb_lat_on(last)) {
        last--;
    }
    fprintf(f, "{\n  \"tool\": \"tcoll-chan-bench\",\n  \"tcoll\": \"%s\",\n", tc_version());
    fprintf(f, "  \"across_nodes\": %s,\n", cb_nodes ? "true" : "false");
    fprintf(f, "  \"spin_ns\": %lld,\n  \"latency_rounds\": %d,\n  \"runs\": %d,\n",
            (long long)o->spin_ns, o->lat_iters, o->runs);
    fprintf(f, "  \"latency\": [\n");
    for (k = 0; k < CB_NLAT; k++) {
        if (!cb_lat_on(k)) {
            continue;
        }
        fprintf(f, "    {\"op\": \"%s\", \"bytes\": %d, ", cb_lat_info[k].name,
                cb_lat_info[k].bytes);
        if (lat[k].wrong != 0) {
            fprintf(f, "\"p50_us\": null, \"p99_us\": null, ");
        } else {
            fprintf(f, "\"p50_us\": %.4f, \"p99_us\": %.4f, ", lat[k].p50_us, lat[k].p99_us);
        }
        fprintf(f, "\"wrong_rounds\": %lld}%s\n", lat[k].wrong, k < last ? "," : "");
    }
    fprintf(f, "  ],\n");
    json_bw(f, "oneway", one, nsizes, 0);
    fprintf(f, ",\n");
    json_bw(f, "twoway", two, nsizes, 1);
    fprintf(f, "\n}\n");
}
