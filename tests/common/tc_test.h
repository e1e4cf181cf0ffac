/*
 * tc_test.h - named test cases, so that any one case can run alone.
 *
 * A test program declares each case by name:
 *
 *   TC_CASE(allreduce_in_place)
 *   {
 *       ... checks (check.h): a failed check aborts the process ...
 *   }
 *
 * and its main hands argv to tc_test_main() (unit tests) or to tt_mpi_main()
 * (multi-rank tests, tests/mpi/mpi_common.h). Every case then runs in the
 * order it appears in the source, or only the ones named on the command line:
 *
 *   prog                        every case
 *   prog --case NAME [--case NAME2 ...]
 *                               only those (still in source order)
 *   prog --list                 the names, one a line
 *   mpiexec -n 3 prog --case NAME
 *                               every rank gets the same argv, so every rank
 *                               runs the same cases (tt_mpi_main checks it)
 *
 * A case passes by returning. Cases must not rely on what an earlier case
 * did: any one of them may be the only one to run. The registry is filled
 * before main by one constructor per case (GCC and Clang), so a case cannot
 * be declared and then forgotten in some list.
 */
#ifndef TC_TEST_TC_TEST_H
#define TC_TEST_TC_TEST_H

#include <stdint.h>

typedef struct tc_case {
    const char *name;
    void (*fn)(void);
    const char *file;
    int line;
    struct tc_case *next;
} tc_case_t;

/* Adds a case to the program's registry (TC_CASE does it before main). */
void tc_test_register(tc_case_t *c);

#define TC_CASE(name)                                                                              \
    static void tc_case_fn_##name(void);                                                           \
    static tc_case_t tc_case_##name = {#name, tc_case_fn_##name, __FILE__, __LINE__, NULL};        \
    __attribute__((constructor)) static void tc_case_register_##name(void)                         \
    {                                                                                              \
        tc_test_register(&tc_case_##name);                                                         \
    }                                                                                              \
    static void tc_case_fn_##name(void)

/* How a program takes its command line. Zero is the usual answer for both. */
typedef struct {
    /* The program's own positional arguments, as --help shows them (e.g.
     * "[steps]"); NULL: it takes none, and a stray word is a usage error
     * (it is most likely a case name without --case). */
    const char *args;
    /* Each case needs a fresh process (it reads state that a process reads
     * once, or it ends the library). With several cases selected, a unit
     * test runs each one in a child process of its own; a multi-rank test
     * refuses and asks for one --case. */
    int one_case_per_run;
} tc_test_opts_t;

/* Reads --case NAME (also --case=NAME), --list and -h/--help, and keeps the
 * other words as the program's arguments. --list and --help print and exit
 * 0; a usage error (an unknown case, a stray word) prints why and exits 2. */
void tc_test_parse(int argc, char **argv, const tc_test_opts_t *opts);

/* The program's own arguments (after tc_test_parse). */
int tc_test_nargs(void);
const char *tc_test_arg(int i); /* NULL past the end */

/* The program's name (argv[0] without its directory) for messages. */
const char *tc_test_prog(void);

/* How many cases will run, and a hash of their names in order: equal on two
 * processes exactly when they run the same cases. */
int tc_test_nselected(void);
uint64_t tc_test_selection_hash(void);

/* Nonzero on the process that should print (under a launcher: rank 0, read
 * from the launcher's environment, so that it works before MPI is up). */
int tc_test_prints(void);

/* Runs the selected cases in order; returns how many ran. */
int tc_test_run(void);

/* tc_test_parse, then tc_test_run; returns 0 (a failure aborts before). */
int tc_test_main(int argc, char **argv, const tc_test_opts_t *opts);

#endif
