/*
 * tcoll_info.c - tcoll-info: what tcoll would run with here.
 *
 * Prints tcoll's version, the MPI library and the MPI standard version it
 * implements, the ranks and how they sit on nodes (one line per node: host
 * and its ranks, from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) and a gather),
 * the hardware hwloc sees on rank 0's node, and every TCOLL_* knob from the
 * table in src/util/config.c: its value, where the value came from (its
 * default, or the environment; an environment value that was rejected is
 * shown, and the default kept), the default, the range and the first sentence
 * of its doc. Knob values are rank 0's; a knob whose value differs on other
 * ranks is flagged with those ranks. Knobs that must be the same on every
 * rank are marked so, and their flag says that tc_init would fail. It also
 * makes each node's shared-memory segment once, as tc_init would, and says
 * how (memfd or posix), how large, or why not, and which allreduce
 * algorithm the global process set would run.
 *
 * The node's shared-memory segment and the selector's choice, which reach
 * into the engine's transport and executor, are tcoll_info_shm.c's.
 *
 * It calls MPI_Init itself and never tc_init, so it runs under mpiexec with
 * any number of ranks or as a singleton (./tcoll-info). Only rank 0 prints
 * (other ranks may log a warning about a bad TCOLL_* value, as tc_init would).
 * It links the internal static library for the knob table (util/config.h).
 *
 * Exit status: 0; 1 when an --expect-source does not hold; 2 bad options.
 */
#define _GNU_SOURCE
#include "tcoll_info.h"

#include "tcoll.h"
#include "exec/exec.h" /* tc__mpi_cuda_support */
#include "util/config.h"
#include "util/log.h"

#include <mpi.h>

#include <getopt.h>
#include <hwloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INFO_EXIT_EXPECT 1 /* an --expect-source did not hold */
#define INFO_EXIT_USAGE 2  /* bad options */

#define MAX_EXPECT 32

typedef struct {
    int help;
    int markdown;
    int json;
    int nexpect;
    const char *expect[MAX_EXPECT]; /* "NAME=SOURCE" */
} info_opts_t;

static void usage(FILE *f)
{
    fprintf(f, "Usage: tcoll-info [options]            (as a singleton)\n"
               "       mpiexec -n N tcoll-info [options]\n"
               "\n"
               "Prints what tcoll would run with here: tcoll's version, the MPI library and\n"
               "MPI version, the ranks and the ranks on each node, the hardware hwloc sees on\n"
               "rank 0's node, and every TCOLL_* knob with its value, where the value came\n"
               "from (default or environment; a rejected environment value is shown and the\n"
               "default kept), its default, its range and a one-line description. Knob values\n"
               "are rank 0's; a knob that differs on other ranks is flagged. Knobs marked\n"
               "\"same on every rank\" must agree: tc_init fails when they differ. Only rank 0\n"
               "prints.\n"
               "\n"
               "  -h, --help              this text\n"
               "      --json              print everything as one JSON object instead\n"
               "      --knobs-markdown    print the README's knob table rows and nothing else\n"
               "      --expect-source NAME=SOURCE\n"
               "                          exit 1 unless knob NAME's source is SOURCE: default,\n"
               "                          environment, or rejected (a default kept because the\n"
               "                          environment's value was bad); may be repeated\n"
               "\n"
               "Exit status: 0; 1 an --expect-source did not hold; 2 bad options.\n");
}

/* 0 to run, 1 for --help, -1 with a message in err. */
static int parse_options(int argc, char **argv, info_opts_t *o, char *err, size_t errlen)
{
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"knobs-markdown", no_argument, NULL, 'm'},
                                             {"expect-source", required_argument, NULL, 'e'},
                                             {NULL, 0, NULL, 0}};
    int c;

    memset(o, 0, sizeof(*o));
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': o->help = 1; break;
        case 'j': o->json = 1; break;
        case 'm': o->markdown = 1; break;
        case 'e':
            if (o->nexpect == MAX_EXPECT) {
                snprintf(err, errlen, "more than %d --expect-source options", MAX_EXPECT);
                return -1;
            }
            o->expect[o->nexpect++] = optarg;
            break;
        case ':': snprintf(err, errlen, "option '%s' needs a value", argv[optind - 1]); return -1;
        default: snprintf(err, errlen, "unknown option '%s'", argv[optind - 1]); return -1;
        }
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
        return -1;
    }
    if (o->json && o->markdown) {
        snprintf(err, errlen, "--json and --knobs-markdown exclude each other");
        return -1;
    }
    for (c = 0; c < o->nexpect; c++) {
        const char *eq = strchr(o->expect[c], '=');
        char name[128];
        if (eq == NULL || (size_t)(eq - o->expect[c]) >= sizeof(name)) {
            snprintf(err, errlen, "--expect-source '%s': want NAME=SOURCE", o->expect[c]);
            return -1;
        }
        memcpy(name, o->expect[c], (size_t)(eq - o->expect[c]));
        name[eq - o->expect[c]] = '\0';
        if (tc__config_find(name) < 0) {
            snprintf(err, errlen, "--expect-source: no knob named '%s'", name);
            return -1;
        }
        if (strcmp(eq + 1, "default") != 0 && strcmp(eq + 1, "environment") != 0 &&
            strcmp(eq + 1, "rejected") != 0) {
            snprintf(err, errlen,
                     "--expect-source '%s': SOURCE is default, environment or rejected",
                     o->expect[c]);
            return -1;
        }
    }
    return o->help ? 1 : 0;
}

/* ------------------------------------------------------------------------ */
/* Text helpers                                                              */
/* ------------------------------------------------------------------------ */

/* Copies s (n bytes) to out with '\\' doubled and control bytes as \xNN,
 * so an environment value cannot garble the terminal; cut short (never
 * overrun) when out is too small. */
static void plain(char *out, size_t outlen, const char *s, size_t n)
{
    size_t i, o = 0;

    for (i = 0; i < n && o + 5 <= outlen; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '\\') {
            out[o++] = '\\';
            out[o++] = '\\';
        } else if (ch < 0x20 || ch == 0x7f) {
            o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", ch);
        } else {
            out[o++] = (char)ch;
        }
    }
    out[o] = '\0';
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t len, i;
    uint32_t cp;

    if (s[0] < 0x80) {
        return 1;
    } else if ((s[0] & 0xe0) == 0xc0) {
        len = 2, cp = s[0] & 0x1fu;
    } else if ((s[0] & 0xf0) == 0xe0) {
        len = 3, cp = s[0] & 0x0fu;
    } else if ((s[0] & 0xf8) == 0xf0) {
        len = 4, cp = s[0] & 0x07u;
    } else {
        return 0;
    }
    if (len > n) {
        return 0;
    }
    for (i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = cp << 6 | (s[i] & 0x3fu);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }
    return len;
}

/* Prints s as a JSON string (quotes included); NULL prints null. Bytes that
 * are not valid UTF-8 become U+FFFD, so the output is always valid JSON. */
static void put_json(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n, len;

    if (s == NULL) {
        fputs("null", f);
        return;
    }
    n = strlen(s);
    fputc('"', f);
    while (n > 0) {
        if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p);
            len = 1;
        } else if (*p == '\n') {
            fputs("\\n", f);
            len = 1;
        } else if (*p == '\t') {
            fputs("\\t", f);
            len = 1;
        } else if (*p < 0x20 || *p == 0x7f) {
            fprintf(f, "\\u%04x", *p);
            len = 1;
        } else if ((len = utf8_len(p, n)) == 0) {
            fputs("\\ufffd", f);
            len = 1;
        } else {
            fwrite(p, 1, len, f);
        }
        p += len;
        n -= len;
    }
    fputc('"', f);
}

/* The first sentence of doc: up to the first ". " outside parentheses
 * ("e.g. 0-3" inside them does not end it), the period kept. */
static size_t first_sentence(const char *doc)
{
    int depth = 0;
    size_t i;

    for (i = 0; doc[i] != '\0'; i++) {
        if (doc[i] == '(') {
            depth++;
        } else if (doc[i] == ')' && depth > 0) {
            depth--;
        } else if (doc[i] == '.' && depth == 0 && doc[i + 1] == ' ') {
            return i + 1;
        }
    }
    return i;
}

/* The first line of s, without trailing blanks. */
static size_t first_line(const char *s)
{
    size_t n = strcspn(s, "\r\n");
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) {
        n--;
    }
    return n;
}

/* Writes ranks[0..n) (ascending) as "0-3,8,10-11". */
static void put_rank_list(FILE *f, const int *ranks, int n)
{
    int i = 0;

    while (i < n) {
        int j = i;
        while (j + 1 < n && ranks[j + 1] == ranks[j] + 1) {
            j++;
        }
        fprintf(f, "%s%d", i > 0 ? "," : "", ranks[i]);
        if (j > i) {
            fprintf(f, "-%d", ranks[j]);
        }
        i = j + 1;
    }
}

/* ------------------------------------------------------------------------ */
/* Gathering                                                                 */
/* ------------------------------------------------------------------------ */

static void hardware(hw_t *hw)
{
    hwloc_topology_t topo;
    hwloc_bitmap_t set;

    memset(hw, 0, sizeof(*hw));
    if (hwloc_topology_init(&topo) != 0) {
        return;
    }
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return;
    }
    hw->ok = 1;
    hw->packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    hw->cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    hw->pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    hw->numa = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    hwloc_bitmap_list_snprintf(hw->allowed, sizeof(hw->allowed),
                               hwloc_topology_get_allowed_cpuset(topo));
    set = hwloc_bitmap_alloc();
    if (set != NULL && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
        hwloc_bitmap_list_snprintf(hw->bound, sizeof(hw->bound), set);
    }
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
}

/* FNV-1a of one knob's value text, so ranks can compare values cheaply. */
static uint64_t value_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    return h;
}

/* The ranks other than 0 whose value of knob k differs from rank 0's. */
static int differing(const info_t *in, size_t k, int *out)
{
    int r, n = 0;
    for (r = 1; r < in->size; r++) {
        if (in->hashes[(size_t)r * in->nknobs + k] != in->hashes[k]) {
            out[n++] = r;
        }
    }
    return n;
}

/* ------------------------------------------------------------------------ */
/* Printing (rank 0)                                                         */
/* ------------------------------------------------------------------------ */

/* Node n's ranks (ascending) into out; returns how many. */
static int node_ranks(const info_t *in, int leader, int *out)
{
    int r, n = 0;
    for (r = 0; r < in->size; r++) {
        if (in->recs[r].leader == leader) {
            out[n++] = r;
        }
    }
    return n;
}

/* Whether the MPI says it takes device buffers (the library's answer). */
static const char *mpi_cuda_aware(void)
{
    static char why[128];

    (void)tc__mpi_cuda_support(why, sizeof(why));
    return why;
}

static void print_text(FILE *f, const info_t *in, int *scratch)
{
    static char text[4 * TC_CONFIG_TEXT_MAX + 8];
    int r, nodes = 0, lo = 0, hi = 0;
    size_t k;

    fprintf(f, "tcoll %s\n", tc_version());
    fprintf(f, "MPI: %.*s (MPI standard %d.%d)\n", (int)first_line(in->lib), in->lib,
            in->mpi_version, in->mpi_subversion);
    for (r = 0; r < in->size; r++) {
        if (in->recs[r].leader == r) {
            int n = in->recs[r].local_size;
            lo = nodes == 0 || n < lo ? n : lo;
            hi = nodes == 0 || n > hi ? n : hi;
            nodes++;
        }
    }
    fprintf(f, "ranks: %d on %d node%s, ", in->size, nodes, nodes == 1 ? "" : "s");
    if (lo == hi) {
        fprintf(f, "%d per node\n", lo);
    } else {
        fprintf(f, "%d to %d per node\n", lo, hi);
    }
    for (r = 0; r < in->size; r++) {
        if (in->recs[r].leader == r) {
            int n = node_ranks(in, r, scratch);
            fprintf(f, "  node %s: %d rank%s (", in->recs[r].host, n, n == 1 ? "" : "s");
            put_rank_list(f, scratch, n);
            fprintf(f, ")\n");
        }
    }
    if (in->hw.ok) {
        fprintf(f,
                "hardware (rank 0's node, hwloc %s): %d package%s, %d core%s, %d PU%s, "
                "%d NUMA node%s; CPUs allowed %s",
                HWLOC_VERSION, in->hw.packages, in->hw.packages == 1 ? "" : "s", in->hw.cores,
                in->hw.cores == 1 ? "" : "s", in->hw.pus, in->hw.pus == 1 ? "" : "s", in->hw.numa,
                in->hw.numa == 1 ? "" : "s", in->hw.allowed);
        if (in->hw.bound[0] != '\0') {
            fprintf(f, ", rank 0 bound to %s", in->hw.bound);
        }
        fprintf(f, "\n");
    } else {
        fprintf(f, "hardware: hwloc could not load the topology\n");
    }
    fprintf(f, "CUDA (rank 0's process): %s; CUDA-aware MPI: %s\n", tc_cuda_info(),
            mpi_cuda_aware());
    tc_info_print_shm(f, in);
    fprintf(f, "knobs (rank 0's values, each from its default or the environment):\n");
    for (k = 0; k < in->nknobs; k++) {
        const tc_knob_desc_t *d = &in->knobs[k];
        int nd = differing(in, k, scratch);
        /* The value, then where it came from. */
        plain(text, sizeof(text), d->value, strlen(d->value));
        if (strcmp(d->type, "string") == 0) {
            fprintf(f, "  %-26s = \"%s\"%*s  %s", d->name, text,
                    (int)(strlen(text) + 2 < 8 ? 8 - strlen(text) - 2 : 0), "", d->source_name);
        } else {
            fprintf(f, "  %-26s = %-8s  %s", d->name, text, d->source_name);
        }
        if (d->rejected != NULL) {
            plain(text, sizeof(text), d->rejected, strlen(d->rejected));
            fprintf(f, " (environment value '%s%s", text,
                    strlen(d->rejected) < d->rejected_len ? "...'" : "'");
            if (strlen(d->rejected) < d->rejected_len) {
                fprintf(f, " of %zu bytes", d->rejected_len);
            }
            fprintf(f, " rejected, default kept)");
        } else if (d->source == TC_KNOB_ENVIRONMENT) {
            fprintf(f, strcmp(d->type, "string") == 0 ? " (default \"%s\")" : " (default %s)",
                    d->def);
        }
        fprintf(f, ", range %s", d->range);
        if (d->must_agree) {
            fprintf(f, ", same on every rank");
        }
        if (nd > 0) {
            fprintf(f, "  DIFFERS on rank%s ", nd == 1 ? "" : "s");
            put_rank_list(f, scratch, nd);
            if (d->must_agree) {
                fprintf(f, " (tc_init would fail)");
            }
        }
        fprintf(f, "\n      %.*s\n", (int)first_sentence(d->doc), d->doc);
    }
}

static void print_json(FILE *f, const info_t *in, int *scratch)
{
    int r, first = 1;
    size_t k;

    fprintf(f, "{\n  \"tcoll_version\": ");
    put_json(f, tc_version());
    fprintf(f, ",\n  \"mpi\": {\"library\": ");
    put_json(f, in->lib);
    fprintf(f, ", \"version\": \"%d.%d\"},\n", in->mpi_version, in->mpi_subversion);
    fprintf(f, "  \"cuda\": {\"built\": %s, \"available\": %s, \"info\": ",
            tc_cuda_built() ? "true" : "false", tc_cuda_available() ? "true" : "false");
    put_json(f, tc_cuda_info());
    fprintf(f, ", \"mpi_cuda_aware\": ");
    put_json(f, mpi_cuda_aware());
    fprintf(f, "},\n");
    fprintf(f, "  \"ranks\": %d,\n  \"nodes\": [", in->size);
    for (r = 0; r < in->size; r++) {
        if (in->recs[r].leader == r) {
            int n = node_ranks(in, r, scratch), i;
            fprintf(f, "%s\n    {\"host\": ", first ? "" : ",");
            put_json(f, in->recs[r].host);
            fprintf(f, ", \"ranks\": [");
            for (i = 0; i < n; i++) {
                fprintf(f, "%s%d", i > 0 ? ", " : "", scratch[i]);
            }
            fprintf(f, "], \"shm\": ");
            if (in->recs[r].shm_ok == 1) {
                fprintf(f, "{\"method\": \"%s\", \"bytes\": %llu, \"p2p_cell_bytes\": %llu}",
                        in->recs[r].shm_method, (unsigned long long)in->recs[r].shm_bytes,
                        (unsigned long long)in->recs[r].shm_cell);
            } else {
                fprintf(f, "null, \"shm_why\": ");
                put_json(f, in->recs[r].shm_why);
            }
            fprintf(f, "}");
            first = 0;
        }
    }
    fprintf(f, "\n  ],\n  \"hardware\": ");
    if (in->hw.ok) {
        fprintf(f,
                "{\"of_rank\": 0, \"hwloc_version\": \"%s\", \"packages\": %d, \"cores\": %d, "
                "\"pus\": %d, \"numa_nodes\": %d, \"allowed_cpus\": ",
                HWLOC_VERSION, in->hw.packages, in->hw.cores, in->hw.pus, in->hw.numa);
        put_json(f, in->hw.allowed);
        fprintf(f, ", \"rank0_binding\": ");
        put_json(f, in->hw.bound[0] != '\0' ? in->hw.bound : NULL);
        fprintf(f, "}");
    } else {
        fprintf(f, "null");
    }
    fprintf(f, ",\n  \"knobs\": [");
    for (k = 0; k < in->nknobs; k++) {
        const tc_knob_desc_t *d = &in->knobs[k];
        int nd = differing(in, k, scratch), i;
        fprintf(f, "%s\n    {\"name\": ", k > 0 ? "," : "");
        put_json(f, d->name);
        fprintf(f, ", \"type\": ");
        put_json(f, d->type);
        fprintf(f, ", \"value\": ");
        if (strcmp(d->type, "int") == 0) {
            fprintf(f, "%ld", d->number);
        } else {
            put_json(f, d->value);
        }
        fprintf(f, ", \"source\": ");
        put_json(f, d->source_name);
        fprintf(f, ", \"default\": ");
        put_json(f, d->def);
        fprintf(f, ",\n     \"rejected\": ");
        put_json(f, d->rejected);
        if (d->rejected != NULL) {
            fprintf(f, ", \"rejected_bytes\": %zu", d->rejected_len);
        }
        fprintf(f, ", \"min\": %ld, \"max\": %ld, \"range\": ", d->min, d->max);
        put_json(f, d->range);
        fprintf(f, ", \"must_agree\": %s", d->must_agree ? "true" : "false");
        fprintf(f, ", \"differs_on_ranks\": [");
        for (i = 0; i < nd; i++) {
            fprintf(f, "%s%d", i > 0 ? ", " : "", scratch[i]);
        }
        fprintf(f, "],\n     \"doc\": ");
        put_json(f, d->doc);
        fprintf(f, "}");
    }
    fprintf(f, "\n  ]\n}\n");
}

/* 0 when every --expect-source holds; else 1, each failure on stderr. */
static int check_expect(const info_opts_t *o)
{
    int i, bad = 0;

    for (i = 0; i < o->nexpect; i++) {
        const char *eq = strchr(o->expect[i], '=');
        char name[128];
        tc_knob_desc_t d;
        const char *got;
        memcpy(name, o->expect[i], (size_t)(eq - o->expect[i]));
        name[eq - o->expect[i]] = '\0';
        if (tc__config_describe((size_t)tc__config_find(name), &d) != 0) {
            bad = 1;
            continue;
        }
        got = d.rejected != NULL && strcmp(eq + 1, "rejected") == 0 ? "rejected" : d.source_name;
        if (strcmp(got, eq + 1) != 0) {
            fprintf(stderr, "tcoll-info: %s: source is %s%s, expected %s\n", name, d.source_name,
                    d.rejected != NULL ? " (its environment value was rejected)" : "", eq + 1);
            bad = 1;
        }
    }
    return bad ? INFO_EXIT_EXPECT : 0;
}

int main(int argc, char **argv)
{
    info_opts_t o;
    info_t in;
    char err[512] = "";
    MPI_Comm local;
    rank_rec_t me;
    uint64_t *mine;
    int rank, rc, len, *scratch = NULL;
    size_t k;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &in.size);
    atomic_store_explicit(&tc__log_rank, rank, memory_order_relaxed);

    rc = parse_options(argc, argv, &o, err, sizeof(err));
    if (rc != 0) {
        if (rank == 0) {
            if (rc > 0) {
                usage(stdout);
            } else {
                fprintf(stderr, "tcoll-info: %s (--help lists the options)\n", err);
            }
        }
        MPI_Finalize();
        return rc > 0 ? 0 : INFO_EXIT_USAGE;
    }
    if (o.markdown) {
        if (rank == 0) {
            tc__config_print(stdout, NULL);
        }
        MPI_Finalize();
        return 0;
    }

    /* Where every rank runs. Local rank 0 is the lowest world rank there. */
    memset(&me, 0, sizeof(me));
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    if (tc__config()->ranks_per_node > 0) { /* pretend nodes, as tc_init makes them */
        MPI_Comm split;
        MPI_Comm_split(local, rank / tc__config()->ranks_per_node, rank, &split);
        MPI_Comm_free(&local);
        local = split;
    }
    MPI_Comm_size(local, &me.local_size);
    me.leader = rank;
    MPI_Bcast(&me.leader, 1, MPI_INT, 0, local);
    tc_info_shm_try(local, &me);
    MPI_Comm_free(&local);
    MPI_Get_processor_name(me.host, &len);
    me.host[sizeof(me.host) - 1] = '\0';

    /* Every rank's knob values, hashed, to flag those that differ. */
    in.nknobs = tc__config_count();
    in.knobs = calloc(in.nknobs, sizeof(*in.knobs));
    mine = calloc(in.nknobs, sizeof(*mine));
    if (in.knobs == NULL || mine == NULL) {
        fprintf(stderr, "tcoll-info: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (k = 0; k < in.nknobs; k++) {
        (void)tc__config_describe(k, &in.knobs[k]);
        mine[k] = value_hash(in.knobs[k].value);
    }

    in.recs = NULL;
    in.hashes = NULL;
    if (rank == 0) {
        in.recs = calloc((size_t)in.size, sizeof(*in.recs));
        in.hashes = calloc((size_t)in.size * in.nknobs, sizeof(*in.hashes));
        scratch = calloc((size_t)in.size, sizeof(*scratch));
        if (in.recs == NULL || in.hashes == NULL || scratch == NULL) {
            fprintf(stderr, "tcoll-info: out of memory for %d ranks\n", in.size);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Gather(&me, (int)sizeof(me), MPI_BYTE, in.recs, (int)sizeof(me), MPI_BYTE, 0,
               MPI_COMM_WORLD);
    MPI_Gather(mine, (int)(in.nknobs * sizeof(*mine)), MPI_BYTE, in.hashes,
               (int)(in.nknobs * sizeof(*mine)), MPI_BYTE, 0, MPI_COMM_WORLD);

    rc = 0;
    if (rank == 0) {
        MPI_Get_library_version(in.lib, &len);
        in.lib[len < (int)sizeof(in.lib) ? (len < 0 ? 0 : len) : (int)sizeof(in.lib) - 1] = '\0';
        MPI_Get_version(&in.mpi_version, &in.mpi_subversion);
        hardware(&in.hw);
        if (o.json) {
            print_json(stdout, &in, scratch);
        } else {
            print_text(stdout, &in, scratch);
        }
        fflush(stdout);
        rc = check_expect(&o);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(scratch);
    free(in.hashes);
    free(in.recs);
    free(mine);
    free(in.knobs);
    MPI_Finalize();
    return rc;
}
