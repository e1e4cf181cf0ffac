/*
 * tc_test.c - the registry of named test cases and the command line that
 * picks among them (see tc_test.h). Knows nothing of MPI or of tcoll: the
 * multi-rank skeleton (tests/mpi/mpi_common.c) builds on it.
 */
#define _POSIX_C_SOURCE 200809L

#include "tc_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A weak reference: NULL in a program that links no layer defining it. */
extern int tc_rank(void) __attribute__((weak));
int tc_test_rank(void); /* check.h, which needs tcoll.h: not this library's */

int tc_test_rank(void)
{
    return tc_rank != NULL ? tc_rank() : -1;
}

static tc_case_t *g_cases; /* sorted by (file, line): the order in the source */
static int g_ncases;
static tc_test_opts_t g_opts;
static const char *g_prog = "test";
static char **g_args;
static int g_nargs;
static unsigned char *g_selected; /* g_selected[i]: the i-th case runs */

void tc_test_register(tc_case_t *c)
{
    tc_case_t **at = &g_cases;
    while (*at != NULL) {
        int cmp = strcmp((*at)->file, c->file);
        if (cmp > 0 || (cmp == 0 && (*at)->line > c->line)) {
            break;
        }
        at = &(*at)->next;
    }
    c->next = *at;
    *at = c;
    g_ncases++;
}

/* The launcher's rank of this process, -1 when not started by one. */
static int launcher_rank(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && v[0] != '\0') {
            return atoi(v);
        }
    }
    return -1;
}

int tc_test_prints(void)
{
    return launcher_rank() <= 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: %s [--case NAME]... [--list]%s%s\n", g_prog, g_opts.args ? " " : "",
            g_opts.args ? g_opts.args : "");
    fprintf(f, "  runs every case in source order, or only the ones named with --case\n");
    fprintf(f, "  (one case per run for this program: %s)\n",
            g_opts.one_case_per_run ? "yes" : "no");
    fprintf(f, "cases:\n");
    for (tc_case_t *c = g_cases; c != NULL; c = c->next) {
        fprintf(f, "  %s\n", c->name);
    }
}

static void usage_error(const char *fmt, const char *what)
{
    if (tc_test_prints()) {
        fprintf(stderr, "%s: ", g_prog);
        fprintf(stderr, fmt, what);
        fprintf(stderr, " (%s --list shows the cases)\n", g_prog);
    }
    exit(2);
}

static void select_case(const char *name)
{
    int i = 0;
    for (tc_case_t *c = g_cases; c != NULL; c = c->next, i++) {
        if (strcmp(c->name, name) == 0) {
            g_selected[i] = 1;
            return;
        }
    }
    usage_error("no case named '%s'", name);
}

void tc_test_parse(int argc, char **argv, const tc_test_opts_t *opts)
{
    int named = 0, list = 0;

    if (opts != NULL) {
        g_opts = *opts;
    }
    if (argc > 0 && argv[0] != NULL) {
        const char *slash = strrchr(argv[0], '/');
        g_prog = slash ? slash + 1 : argv[0];
    }
    g_selected = calloc((size_t)g_ncases + 1, 1);
    g_args = calloc((size_t)argc + 1, sizeof *g_args);
    if (g_selected == NULL || g_args == NULL) {
        fprintf(stderr, "%s: out of memory\n", g_prog);
        exit(2);
    }
    /* two cases of one name can only come from two files: refuse them */
    for (tc_case_t *c = g_cases; c != NULL; c = c->next) {
        for (tc_case_t *d = c->next; d != NULL; d = d->next) {
            if (strcmp(c->name, d->name) == 0) {
                usage_error("two cases are named '%s'", c->name);
            }
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--case") == 0) {
            if (i + 1 >= argc) {
                usage_error("%s needs a case name", a);
            }
            select_case(argv[++i]);
            named = 1;
        } else if (strncmp(a, "--case=", 7) == 0) {
            select_case(a + 7);
            named = 1;
        } else if (strcmp(a, "--list") == 0) {
            list = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            if (tc_test_prints()) {
                usage(stdout);
            }
            exit(0);
        } else if (a[0] == '-' && a[1] == '-') {
            usage_error("unknown option '%s'", a);
        } else if (g_opts.args == NULL) {
            usage_error("unexpected argument '%s': name a case with --case", a);
        } else {
            g_args[g_nargs++] = argv[i];
        }
    }
    if (list) {
        if (tc_test_prints()) {
            for (tc_case_t *c = g_cases; c != NULL; c = c->next) {
                printf("%s\n", c->name);
            }
        }
        exit(0);
    }
    if (!named) {
        memset(g_selected, 1, (size_t)g_ncases);
    }
}

int tc_test_nargs(void)
{
    return g_nargs;
}

const char *tc_test_arg(int i)
{
    return i >= 0 && i < g_nargs ? g_args[i] : NULL;
}

const char *tc_test_prog(void)
{
    return g_prog;
}

int tc_test_nselected(void)
{
    int n = 0;
    for (int i = 0; i < g_ncases; i++) {
        n += g_selected[i];
    }
    return n;
}

uint64_t tc_test_selection_hash(void)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a over "name\n" of each selected case */
    int i = 0;
    for (tc_case_t *c = g_cases; c != NULL; c = c->next, i++) {
        if (!g_selected[i]) {
            continue;
        }
        for (const char *p = c->name; *p; p++) {
            h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
        }
        h = (h ^ '\n') * 0x100000001b3ull;
    }
    return h;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs c in a child process; a child that does not exit 0 fails the run. */
static void run_in_child(const tc_case_t *c)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        c->fn();
        fflush(NULL);
        _exit(0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s: case %s failed in its own process (%s %d)\n", g_prog, c->name,
                WIFSIGNALED(status) ? "signal" : "exit status",
                WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        exit(1);
    }
}

int tc_test_run(void)
{
    int ran = 0, i = 0;
    int fork_each = g_opts.one_case_per_run && tc_test_nselected() > 1;
    int prints = tc_test_prints();

    for (tc_case_t *c = g_cases; c != NULL; c = c->next, i++) {
        if (!g_selected[i]) {
            continue;
        }
        if (prints) {
            printf("%s: case %s\n", g_prog, c->name);
            fflush(stdout);
        }
        double t0 = now_s();
        if (fork_each) {
            run_in_child(c);
        } else {
            c->fn();
        }
        if (prints) {
            printf("%s: case %s ok (%.2f s)\n", g_prog, c->name, now_s() - t0);
            fflush(stdout);
        }
        ran++;
    }
    return ran;
}

int tc_test_main(int argc, char **argv, const tc_test_opts_t *opts)
{
    tc_test_parse(argc, argv, opts);
    tc_test_run();
    return 0;
}
