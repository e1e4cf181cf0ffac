/*
 * main.c - tcoll-perf, the benchmark users run first: tcoll's collectives
 * through the public asynchronous API (submit, tc_wait, tc_request_free),
 * side by side in the same run and on the same buffers with the MPI call a
 * user would make instead (MPI_Allreduce, MPI_Allgather, MPI_Bcast,
 * MPI_Reduce_scatter_block, MPI_Alltoallv, MPI_Barrier).
 *
 * Sweep modes (allreduce, allgather, broadcast, reducescatter, alltoall)
 * print one row per message size:
 *
 *   size count dtype | tcoll: time(us) algbw busbw wrong | MPI: same | ratio
 *
 *   size   bytes of the result each rank ends with (allgather: the whole
 *          gathered output; each rank sends size/n of it), or for
 *          reducescatter of the input (each rank keeps size/n of it), or
 *          for alltoall of what each rank sends (size/n to each rank)
 *   count  elements of that
 *   time   median over the timed iterations of the slowest rank's time for
 *          one operation (each iteration is timed alone, between barriers;
 *          the per-iteration maximum over ranks comes from MPI_Allreduce MAX)
 *   algbw  size / time, GB/s (1e9 bytes per second)
 *   busbw  algbw x 2(n-1)/n for allreduce, x (n-1)/n for allgather,
 *          reducescatter and alltoall, x 1 for broadcast: the bandwidth each
 *          rank's link needs, comparable across n
 *   wrong  elements that differ from the exact expected value, summed over
 *          ranks, from one extra, untimed operation into a poisoned buffer
 *   ratio  tcoll busbw / MPI busbw (= MPI time / tcoll time): > 1 means tcoll
 *          is faster
 *
 * The data makes every expected value exact, for float16 and bfloat16 too
 * (data.c). Barrier mode (mode_barrier.c) prints one row in the same
 * columns: microseconds per barrier, ratio = MPI time / tcoll time. Workload
 * mode (workload.c) replays a list of tensors, by default the ResNet-50
 * gradients, as one step of allreduces.
 *
 * This is a benchmark, not a test: it never judges a time. It must exit
 * nonzero when a result is wrong or a call fails (1) or the options are bad
 * (2), so CTest can run it as a correctness smoke test. Only rank 0 prints,
 * except a rank that meets an error, which says so before aborting the job.
 * It initializes MPI itself (MPI_THREAD_MULTIPLE), then tcoll, which works
 * on its own duplicates of MPI_COMM_WORLD while the program uses a third;
 * with --mpi-owner tcoll, tc_init comes first and initializes MPI (at
 * MPI_THREAD_MULTIPLE: TCOLL_MPI_THREAD=multiple unless set), as in a
 * Horovod-style program, and tcoll finalizes it at exit.
 */
#define _GNU_SOURCE
#include "perf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --mpi-owner tcoll anywhere on the command line (looked for before MPI
 * starts; perf_parse_options checks it again with the rest). */
/* MPI_Finalize, unless tcoll initialized MPI (its exit handler finalizes
 * it; after tc_shutdown, or with tcoll still running on an early exit). */
static int tcoll_owner, tcoll_shut;

static void perf_finalize(void)
{
    if (!tcoll_owner) {
        MPI_Finalize();
    } else if (!tcoll_shut) {
        (void)tc_shutdown();
    }
}

static int tcoll_owns_mpi(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mpi-owner=tcoll") == 0 ||
            (strcmp(argv[i], "--mpi-owner") == 0 && i + 1 < argc &&
             strcmp(argv[i + 1], "tcoll") == 0)) {
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    perf_opts_t o;
    int provided, rc, ok = 1, nrows = 0, exit_code = 0;
    long long wrong = 0;
    perf_row_t *rows = NULL;
    FILE *json = NULL;
    char *wl_path = NULL, *wl_text = NULL;
    perf_workload_t wl;
    perf_wl_result_t wres;
    tc_status_t st;

    memset(&wl, 0, sizeof wl);
    memset(&wres, 0, sizeof wres);
    tcoll_owner = tcoll_owns_mpi(argc, argv);
    if (tcoll_owner) {
        setenv("TCOLL_MPI_THREAD", "multiple", 0); /* this program calls MPI too */
        st = tc_init();
        if (st != TC_OK) {
            fprintf(stderr, "tcoll-perf: tc_init failed: %s: %s\n", tc_status_string(st),
                    tc_last_error());
            return PERF_EXIT_FAIL;
        }
        MPI_Query_thread(&provided);
    } else {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &perf_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &perf_size);

    rc = perf_parse_options(argc, argv, &o);
    if (rc != 0) {
        if (rc > 0 && perf_rank == 0) {
            perf_usage(stdout);
        }
        perf_finalize();
        return rc > 0 ? 0 : PERF_EXIT_USAGE;
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        if (perf_rank == 0) {
            fprintf(stderr,
                    "tcoll-perf: this MPI gives thread level %d, below "
                    "MPI_THREAD_MULTIPLE; tcoll-perf needs it to call MPI while tcoll's "
                    "engine thread runs\n",
                    provided);
        }
        perf_finalize();
        return PERF_EXIT_FAIL;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &perf_comm);
    perf_progress_on = perf_rank == 0 && perf_stderr_is_terminal();

    /* Files rank 0 writes: opened now, so a bad path fails before the run. */
    if (perf_rank == 0 && o.json != NULL) {
        json = fopen(o.json, "w");
        if (json == NULL) {
            fprintf(stderr, "tcoll-perf: --json: cannot write '%s': %s\n", o.json, strerror(errno));
            ok = 0;
        }
    }
    if (o.mode == PERF_MODE_WORKLOAD && ok) {
        char tried[8192];
        if (o.workload != NULL) {
            wl_path = strdup(o.workload);
        } else if (perf_rank == 0) {
            wl_path = perf_default_workload(tried, sizeof tried);
            if (wl_path == NULL) {
                fprintf(stderr,
                        "tcoll-perf: no default workload file (looked for %s); "
                        "name one with --workload FILE\n",
                        tried[0] ? tried : "none");
            }
        } else {
            wl_path = strdup("(rank 0's file)");
        }
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, perf_comm);
        ok = ok && wl_path != NULL;
        MPI_Bcast(&ok, 1, MPI_INT, 0, perf_comm);
        if (ok) {
            long long len = 0;
            wl_text = perf_read_file_bcast(wl_path, &len);
            ok = wl_text != NULL && perf_workload_parse(wl_text, wl_path, &wl) == 0;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, perf_comm);
    if (!ok) {
        if (json != NULL) {
            fclose(json);
        }
        MPI_Comm_free(&perf_comm);
        perf_finalize();
        return PERF_EXIT_USAGE;
    }

    if (!tcoll_owner && (st = tc_init()) != TC_OK) {
        perf_die("tc_init failed: %s: %s", tc_status_string(st), tc_last_error());
    }

    if (o.mode == PERF_MODE_WORKLOAD) {
        perf_run_workload(&o, wl_path, &wl, &wres);
        for (int m = 0; m < PERF_WL_NMODES; m++) {
            wrong += wres.wrong[m] > 0 ? wres.wrong[m] : 0;
        }
    } else if (o.device) {
#ifdef TCOLL_PERF_CUDA
        rows = perf_run_device(&o, &nrows, &wrong);
#endif
    } else if (o.mode == PERF_MODE_BARRIER) {
        rows = perf_run_barrier(&o, &nrows, &wrong);
    } else {
        rows = perf_run_sweep(&o, &nrows, &wrong);
    }

    st = tc_shutdown();
    if (st != TC_OK) {
        perf_die("tc_shutdown failed: %s: %s", tc_status_string(st), tc_last_error());
    }
    tcoll_shut = 1;
    MPI_Comm_free(&perf_comm);
    perf_finalize();

    if (wrong > 0) {
        if (perf_rank == 0) {
            fprintf(stderr, "tcoll-perf: %lld wrong %s in all (see the 'wrong' columns)\n", wrong,
                    o.mode == PERF_MODE_BARRIER ? "barriers" : "elements");
        }
        exit_code = PERF_EXIT_FAIL;
    }
    if (json != NULL) {
        int jr = o.mode == PERF_MODE_WORKLOAD
                     ? perf_write_json_workload(json, &o, wl_path, &wl, &wres)
                     : perf_write_json_sweep(json, &o, rows, nrows);
        if (fclose(json) != 0 || jr != 0) {
            fprintf(stderr, "tcoll-perf: --json: error writing '%s'\n", o.json);
            exit_code = PERF_EXIT_FAIL;
        }
    }
    if (perf_rank == 0 && o.plot != NULL && perf_draw_plot(&o, rows, nrows) != 0) {
        exit_code = PERF_EXIT_FAIL;
    }
    if (o.mode == PERF_MODE_WORKLOAD) {
        perf_workload_free(&wl);
    }
    free(wl_text);
    free(wl_path);
    free(rows);
    return exit_code;
}
