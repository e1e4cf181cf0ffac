/*
 * main.c - tcoll-chan-bench: channels between two ranks of one node
 * (tcoll_channel.h) side by side, in the same run and on the same machine
 * state, with what a program would do with MPI instead.
 *
 * How to run (exactly 2 ranks; anything else is refused):
 *
 *   mpiexec -n 2 tcoll-chan-bench [options]      (--help lists them)
 *
 * Across nodes: when tcoll puts the two ranks on different nodes
 * (tc_local_size() is 1; on one machine, TCOLL_RANKS_PER_NODE=1 makes each
 * rank a pretend node), the port channel and its semaphore go over MPI
 * through the context's proxy thread, which needs MPI_THREAD_MULTIPLE (as
 * below). Memory channels are for one node, so their rows and columns are
 * left out, and with them the memcpy reference; the port channel and MPI
 * rows run as within a node, and the goals section gives the port channel
 * against MPI_Send/Recv in place of the in-node goals. The same holds for two
 * ranks on two real machines.
 *
 * What it measures (only rank 0 prints; Markdown tables):
 *
 *   1. Ping-pong latency, one-way = round trip / 2 (median and p99 over
 *      the iterations, in microseconds): memory channel signal + wait (no
 *      data), memory channel put_with_signal of 8 B, port channel signal +
 *      wait, port channel put_with_signal of 8 B; MPI_Send/MPI_Recv of 0 and
 *      8 B, an MPI notification alone and MPI_Put of 8 B + notification.
 *   2. Bandwidth (GB/s = 1e9 B/s), sizes -b..-e: one-way (rank 0 writes a
 *      window of W messages to W distinct places in rank 1's memory, then
 *      signals; rank 1 waits and signals back) and two-way (both ranks do
 *      the sending half at once; the sum of both directions) for the memory
 *      channel (tc_memchan_put), the port channel (tc_portchan_put; the
 *      proxy thread copies), MPI_Isend/MPI_Irecv and MPI_Put + MPI_Win_flush;
 *      plus a local memcpy of the same W copies in one process, the
 *      reference of the bandwidth goal.
 *   3. Ratios: each tcoll row against MPI_Send/Recv and against MPI_Put
 *      ("x Send", "x Put": > 1 means tcoll is faster), and the port channel's
 *      one-way bandwidth as a percentage of local memcpy.
 *
 * Bandwidth cells are medians over runs (-r), and the runs of one size
 * interleave the columns (memcpy, memory channel, port channel, Send/Recv,
 * Put, then again), so a slow spell of a shared machine hits every column
 * alike; a ratio is the median over the runs of that run's ratio.
 *
 * The MPI one-sided pattern is passive target: MPI_Win_allocate, then
 * MPI_Win_lock_all for the whole run; data goes with MPI_Put and
 * MPI_Win_flush, and the notification is an MPI_Accumulate (MPI_SUM) of 1
 * into a counter in the target's window followed by MPI_Win_flush; the
 * target polls its own counter with MPI_Fetch_and_op (MPI_NO_OP) and
 * MPI_Win_flush on itself, then calls MPI_Win_sync before it reads the data.
 *
 * Every transfer is checked, so no number is printed for a transfer that
 * delivered wrong bytes: each latency round's 8 bytes, and for each size and
 * each bandwidth cell one extra round of the same pattern with fresh data
 * into poisoned destinations, every byte compared. A wrong cell reads
 * WRONG and the program exits 1 (also when a call fails); bad options exit 2.
 *
 * A benchmark, not a test: the goals (memory channel signal/wait under
 * 1 us one-way; port channel put at least 80% of local memcpy at 4 MiB) are
 * printed with the measured values, never judged by the exit status.
 *
 * MPI is initialized here with MPI_THREAD_MULTIPLE before tc_init (tcoll's
 * engine thread calls MPI too, and then works on its own duplicates of
 * MPI_COMM_WORLD); the MPI rows use a third duplicate, from the main thread.
 * Waits on channels spin for tc_chan_opts_t.spin_ns before parking: the
 * library's default unless --spin-ns says otherwise. Port channels add a
 * proxy thread to each rank; when mpiexec binds each rank to one CPU (Open
 * MPI does at 2 ranks) it shares that CPU with the main thread, and the
 * port channel rows then time how the two take turns: the header lists the
 * CPUs each rank may use.
 *
 * With --device cuda the run is another one (device.cu): the channels
 * driven from GPU kernels on device memory, against the GPU's own copy.
 *
 * The sources: chan_bench.h says which file does what.
 */
#define _GNU_SOURCE
#include "chan_bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    cb_opts_t o;
    char err[256], lib[MPI_MAX_LIBRARY_VERSION_STRING], host[64] = "", my_cpus[64], cpus[2][64];
    int provided, size, local_size, rc, nsizes = 0, i, t, twoway, exit_code = 0, my_ncpus, ncpus[2];
    MPI_Comm node;
    uint64_t bytes, sizes[72], *rtt = NULL;
    cb_lat_row_t lat[CB_NLAT];
    cb_bw_row_t *bw[2];
    FILE *json = NULL;
    const char *rpn;
    long long wrong = 0;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &cb_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rc = cb_parse_options(argc, argv, &o, err, sizeof(err));
    if (rc != 0) {
        if (cb_rank == 0) {
            if (rc > 0) {
                cb_usage(stdout);
            } else {
                fprintf(stderr, "tcoll-chan-bench: %s\n", err);
            }
        }
        MPI_Finalize();
        return rc > 0 ? 0 : CB_EXIT_USAGE;
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
    if (size != 2) {
        if (cb_rank == 0) {
            fprintf(stderr,
                    "tcoll-chan-bench: needs exactly 2 ranks (mpiexec -n 2; on one node, "
                    "or on two); this job has %d rank%s, %d on this node\n",
                    size, size == 1 ? "" : "s", local_size);
        }
        MPI_Finalize();
        return CB_EXIT_USAGE;
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        if (cb_rank == 0) {
            fprintf(stderr,
                    "tcoll-chan-bench: this MPI gives thread level %d, below "
                    "MPI_THREAD_MULTIPLE, which it needs to call MPI while tcoll's engine "
                    "thread runs\n",
                    provided);
        }
        MPI_Finalize();
        return CB_EXIT_FAIL;
    }
    cb_peer = 1 - cb_rank;
    MPI_Comm_dup(MPI_COMM_WORLD, &cb_comm);
    rc = 1;
    if (cb_rank == 0 && o.json != NULL && (json = fopen(o.json, "w")) == NULL) {
        fprintf(stderr, "tcoll-chan-bench: --json: cannot write '%s': %s\n", o.json,
                strerror(errno));
        rc = 0;
    }
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MIN, cb_comm);
    if (!rc) {
        MPI_Comm_free(&cb_comm);
        MPI_Finalize();
        return CB_EXIT_USAGE;
    }

    /* -b, -b*f, ... up to -e, and -e itself last if the steps miss it. */
    for (bytes = o.min_bytes;; bytes *= o.factor) {
        sizes[nsizes++] = bytes;
        if (bytes > o.max_bytes / o.factor) {
            break;
        }
    }
    if (sizes[nsizes - 1] != o.max_bytes) {
        sizes[nsizes++] = o.max_bytes;
    }

    cb_chk(tc_init(), "tc_init");
    if (o.device) {
        exit_code = cb_device_main(&o, sizes, nsizes);
        cb_chk(tc_shutdown(), "tc_shutdown");
        MPI_Comm_free(&cb_comm);
        MPI_Finalize();
        return exit_code;
    }
    cb_nodes = tc_local_size() == 1; /* the same on both ranks: TCOLL_RANKS_PER_NODE must agree */
    cb_setup(&o);
    bw[0] = calloc((size_t)nsizes, sizeof(cb_bw_row_t));
    bw[1] = calloc((size_t)nsizes, sizeof(cb_bw_row_t));
    rtt = cb_alloc(sizeof(uint64_t) * (size_t)o.lat_iters, "round trip times");
    if (bw[0] == NULL || bw[1] == NULL) {
        cb_die("out of memory");
    }

    my_ncpus = cb_cpu_list(my_cpus, sizeof(my_cpus));
    MPI_Gather(my_cpus, (int)sizeof(my_cpus), MPI_CHAR, cpus, (int)sizeof(my_cpus), MPI_CHAR, 0,
               cb_comm);
    MPI_Gather(&my_ncpus, 1, MPI_INT, ncpus, 1, MPI_INT, 0, cb_comm);
    if (cb_rank == 0) {
        gethostname(host, sizeof(host) - 1);
        tc_tool_mpi_library(lib, sizeof(lib));
        printf("# tcoll-chan-bench: tcoll %s vs %s; 2 ranks on %s, %ld CPUs online\n", tc_version(),
               lib, host, sysconf(_SC_NPROCESSORS_ONLN));
        if (cb_nodes) {
            rpn = getenv("TCOLL_RANKS_PER_NODE");
            printf("# across nodes: to tcoll each rank is a node of its own "
                   "(TCOLL_RANKS_PER_NODE=%s); the port channel\n#   and its semaphore go over "
                   "MPI through each rank's proxy thread; no memory channel rows (one\n#   node "
                   "only)\n",
                   rpn != NULL ? rpn : "unset");
        }
        printf("# CPUs each rank may run on (affinity): rank 0: %s, rank 1: %s\n", cpus[0],
               cpus[1]);
        if (ncpus[0] < 2 || ncpus[1] < 2) {
            printf("#   one CPU per rank: its port channel proxy thread shares it with the main "
                   "thread, so the two\n#   take turns on it (mpiexec's binding options can give "
                   "each rank more CPUs)\n");
        }
        printf("# latency: %d rounds after %d warm-up per row; bandwidth: up to %d messages per "
               "round, rounds per run\n#   as in the tables, median of %d run%s per cell\n",
               o.lat_iters, o.lat_warmup, o.window, o.runs, o.runs > 1 ? "s" : "");
        if (o.spin_ns < 0) {
            printf("# channel waits poll for the library's default spin_ns before parking\n");
        } else {
            printf("# channel waits poll for spin_ns = %lld ns before parking (--spin-ns)\n",
                   (long long)o.spin_ns);
        }
        if (!cb_nodes) {
            printf("# goals (printed, not judged): memory channel signal/wait one-way latency "
                   "< 1 us; port channel put\n#   one-way bandwidth >= 80%% of local memcpy at "
                   "4 MiB within a node\n");
        } else {
            printf("# goals: the in-node goals do not apply across nodes; the port channel "
                   "against MPI_Send/Recv\n#   is printed in their place\n");
        }
        printf("# MPI one-sided: MPI_Win_allocate + MPI_Win_lock_all (passive target); data: "
               "MPI_Put, then MPI_Win_flush;\n#   notification: MPI_Accumulate(MPI_SUM) of 1 "
               "into a counter in the target's window + MPI_Win_flush; the target\n#   polls "
               "its counter with MPI_Fetch_and_op(MPI_NO_OP) + MPI_Win_flush on itself, then "
               "MPI_Win_sync\n");
        printf("# checked: every latency round's 8 bytes; one extra round per bandwidth cell "
               "(fresh data, poisoned\n#   destinations, every byte); WRONG marks a cell whose "
               "bytes were wrong (exit status 1)\n");
        fflush(stdout);
    }

    memset(lat, 0, sizeof(lat));
    for (i = 0; i < CB_NLAT; i++) {
        if (cb_lat_on(i)) {
            lat[i] = cb_run_latency(&o, (cb_lat_t)i, rtt);
        }
    }
    if (cb_rank == 0) {
        cb_print_lat_table(&o, lat);
    }

    for (twoway = 0; twoway < 2; twoway++) {
        if (cb_rank == 0) {
            cb_print_bw_header(twoway);
        }
        for (i = 0; i < nsizes; i++) {
            cb_measure_size(&o, sizes[i], twoway, &bw[twoway][i]);
            if (cb_rank == 0) {
                cb_print_bw_row(&bw[twoway][i], twoway);
            }
        }
    }
    for (i = 0; i < CB_NLAT; i++) {
        wrong += lat[i].wrong;
    }
    for (twoway = 0; twoway < 2; twoway++) {
        for (i = 0; i < nsizes; i++) {
            for (t = 0; t < CB_NXPORT; t++) {
                wrong += bw[twoway][i].wrong[t];
            }
        }
    }
    if (cb_rank == 0) {
        cb_print_goals(lat, bw[0], bw[1], nsizes);
        if (wrong != 0) {
            printf("\nWRONG: some transfers delivered wrong bytes (see above and stderr)\n");
        }
        if (json != NULL) {
            cb_write_json(json, &o, lat, bw[0], bw[1], nsizes);
            if (fclose(json) != 0) {
                fprintf(stderr, "tcoll-chan-bench: --json: writing '%s' failed\n", o.json);
                exit_code = CB_EXIT_FAIL;
            }
        }
    }
    exit_code = wrong != 0 ? CB_EXIT_FAIL : exit_code;

    cb_teardown();
    cb_chk(tc_shutdown(), "tc_shutdown");
    free(rtt);
    free(bw[0]);
    free(bw[1]);
    MPI_Comm_free(&cb_comm);
    MPI_Finalize();
    return exit_code;
}
