/*
 * options.c - tcoll-perf's command line: --help, and parsing into
 * perf_opts_t. Every rank parses the same arguments; only rank 0 says what
 * is wrong. A bad value, or options that do not go together, must stop the
 * program before anything runs (exit status 2, one line naming the option).
 */
#include "perf.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const perf_mode_names[PERF_NMODES] = {
#define PERF_MODE_NAME(id, name) name,
    PERF_MODE_LIST(PERF_MODE_NAME)
#undef PERF_MODE_NAME
};

void perf_usage(FILE *f)
{
    fprintf(f, "Usage: mpiexec -n N tcoll-perf [options]\n"
               "\n"
               "Times tcoll's collectives through its public async API (submit, tc_wait,\n"
               "tc_request_free; one fixed tensor name per size) and, in the same run and on\n"
               "the same buffers, the MPI call a user would make instead; prints one row per\n"
               "size. Only rank 0 prints.\n"
               "\n"
               "  -m, --mode MODE       allreduce | allgather | broadcast | reducescatter |\n"
               "                        alltoall | barrier | workload (default allreduce)\n"
               "  -b, --minbytes SIZE   smallest size (default 8; barrier: no sizes, -b, -e\n"
               "                        and -f do not apply)\n"
               "  -e, --maxbytes SIZE   largest size, always the last row (default 64M)\n"
               "  -f, --stepfactor F    multiply the size by F from row to row (default 4)\n"
               "  -o, --op OP           sum | avg | min | max | prod (default sum; allreduce,\n"
               "                        reducescatter and workload only)\n"
               "  -d, --datatype T      float32 | float64 | float16 | bfloat16 | int32 |\n"
               "                        int64 | int16 | uint16 | int8 | uint8 (default\n"
               "                        float32; workload: float32 only; not with barrier)\n"
               "  -r, --root R          broadcast root (default 0)\n"
               "  -c, --check 0|1       check each result against exact values (default 1)\n"
               "  -n, --iters N         timed iterations per size (default 100 up to 5 MiB,\n"
               "                        then 512 MiB/size, at least 5); barrier: timed\n"
               "                        barriers (default 1000); workload: timed steps\n"
               "                        (default 20)\n"
               "  -w, --warmup N        untimed iterations first (default iters/10, at\n"
               "                        least 2; workload 3)\n"
               "      --workload FILE   tensors to replay (implies -m workload): lines\n"
               "                        'name<TAB>elements<TAB>shape', e.g.\n"
               "                        'conv1.weight<TAB>9408<TAB>64x3x7x7'; '#' starts a\n"
               "                        comment. Default: ResNet-50's 161 gradients\n"
               "                        (resnet50.tsv, installed under share/tcoll)\n"
               "      --mem shared|malloc  the user buffers (both sides use the same): shared\n"
               "                        = tc_mem_alloc, memory the node's ranks can map, so\n"
               "                        tcoll reads the peers' buffers with loads; malloc =\n"
               "                        private memory, read through process_vm_readv\n"
               "                        (default shared)\n"
               "      --mpi-owner app|tcoll  app: this program initializes MPI\n"
               "                        (MPI_THREAD_MULTIPLE), then tc_init; tcoll: tc_init\n"
               "                        initializes MPI (TCOLL_MPI_THREAD=multiple unless\n"
               "                        set), as a Horovod-style program (default app)\n"
               "      --json FILE       also write every row to FILE as a JSON array\n"
               "      --device cpu|cuda cuda: float32 sum allreduce on CUDA device buffers\n"
               "                        (a CUDA build; default sizes 4, 1M, 64M, 1G) against\n"
               "                        MPI over page-locked host copies, with the device's\n"
               "                        copy bandwidth measured in the same run (default cpu)\n"
               "      --plot FILE.png   draw busbw against size for tcoll and MPI with\n"
               "                        gnuplot (sweeps only, not barrier; a note if\n"
               "                        gnuplot is missing)\n"
               "  -h, --help            this text\n"
               "\n"
               "SIZE: bytes, with an optional K, M or G suffix (powers of 1024): 8, 1K, 256M.\n"
               "\n"
               "Columns (sweeps): size = bytes of the result on each rank (allgather: the whole\n"
               "gathered output, each rank sends size/n; reducescatter: the whole input, a\n"
               "multiple of n elements, each rank keeps its block of size/n; alltoall: what\n"
               "each rank sends in all, a multiple of n elements, size/n to each rank);\n"
               "count = its elements; then for tcoll and for MPI (MPI_Allreduce,\n"
               "MPI_Allgather, MPI_Bcast, MPI_Reduce_scatter_block, MPI_Alltoallv with equal\n"
               "counts; avg = MPI_SUM, then a division): time = median over iterations of the\n"
               "slowest rank's time (us), algbw = size/time (GB/s), busbw = algbw x 2(n-1)/n\n"
               "for allreduce, x (n-1)/n for allgather, reducescatter and alltoall, x 1 for\n"
               "broadcast; wrong = elements differing from the exact result, summed over\n"
               "ranks ('-' with -c 0). ratio = tcoll busbw / MPI busbw: > 1 means tcoll is\n"
               "faster. The limit: copy, reduce, 1copy = this machine's rates in this run at\n"
               "this size, every rank at once (GB/s: memcpy, tc_reduce_local, process_vm_readv\n"
               "from the next rank of the node); limit(us) = the time the bytes tcoll's\n"
               "algorithm (algo, as tc_request_algorithm names it) must copy, reduce and read\n"
               "across processes take at those rates (docs/perf.md); reached = limit / tcoll's\n"
               "time.\n"
               "\n"
               "Barrier mode: tc_barrier (then tc_wait, tc_request_free) vs MPI_Barrier, one\n"
               "row: time = median us per barrier of the slowest rank (size, count, type,\n"
               "algbw and busbw do not apply: 0 and -); wrong = ranks whose barrier completed\n"
               "before the last rank called it, checked with one extra barrier that the last\n"
               "rank calls 20 ms late; ratio = MPI time / tcoll time: > 1 means tcoll is\n"
               "faster.\n"
               "\n"
               "Workload mode: every step submits each tensor as a float32 allreduce in\n"
               "backprop order (last line first) and waits for all; ms per step for tcoll,\n"
               "for one MPI_Allreduce per tensor (on the same buffers, and on private\n"
               "copies: mpi-private), and for packing into one buffer + one MPI_Allreduce +\n"
               "unpacking (copies included); ratio = that ms / tcoll's ms; limit = the step's\n"
               "limit, summed tensor by tensor, its ratio the fraction tcoll reached.\n"
               "\n"
               "Exit status: 0 all results right; 1 a call failed or a result was wrong;\n"
               "2 bad options or workload file; 77 --device cuda without a usable device.\n");
}

static int parse_int(const char *s, int lo, int hi, int *v_p)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *v_p = (int)v;
    return 0;
}

static int parse_name(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(s, names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* Returns 0 to run, 1 for --help, -1 after printing (rank 0) what is wrong. */
int perf_parse_options(int argc, char **argv, perf_opts_t *o)
{
    static const char *const op_names[] = {"sum", "avg", "min", "max", "prod"};
    static const tc_op_t ops[] = {TC_SUM, TC_AVG, TC_MIN, TC_MAX, TC_PROD};
    static const char *const dt_names[] = {"uint8",    "int8",    "int32",   "int64", "float16",
                                           "bfloat16", "float32", "float64", "int16", "uint16"};
    static const tc_dtype_t dts[] = {TC_UINT8,    TC_INT8,    TC_INT32,   TC_INT64, TC_FLOAT16,
                                     TC_BFLOAT16, TC_FLOAT32, TC_FLOAT64, TC_INT16, TC_UINT16};
    static const struct option longopts[] = {
        {"mode", required_argument, NULL, 'm'},     {"minbytes", required_argument, NULL, 'b'},
        {"maxbytes", required_argument, NULL, 'e'}, {"stepfactor", required_argument, NULL, 'f'},
        {"op", required_argument, NULL, 'o'},       {"datatype", required_argument, NULL, 'd'},
        {"root", required_argument, NULL, 'r'},     {"check", required_argument, NULL, 'c'},
        {"iters", required_argument, NULL, 'n'},    {"warmup", required_argument, NULL, 'w'},
        {"workload", required_argument, NULL, 'W'}, {"json", required_argument, NULL, 'J'},
        {"plot", required_argument, NULL, 'P'},     {"device", required_argument, NULL, 'D'},
        {"mem", required_argument, NULL, 'M'},      {"mpi-owner", required_argument, NULL, 'O'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0}};
    char err[512] = "";
    int c, i;

    memset(o, 0, sizeof *o);
    o->mode = PERF_MODE_ALLREDUCE;
    o->min_bytes = 8;
    o->max_bytes = 64ull << 20;
    o->factor = 4;
    o->op = TC_SUM;
    o->dtype = TC_FLOAT32;
    o->check = 1;
    o->warmup = -1;
    opterr = 0;
    while (err[0] == '\0' &&
           (c = getopt_long(argc, argv, ":m:b:e:f:o:d:r:c:n:w:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if ((i = parse_name(optarg, perf_mode_names, PERF_NMODES)) < 0) {
                snprintf(err, sizeof err,
                         "-m '%s': expected allreduce, allgather, broadcast, reducescatter, "
                         "alltoall, barrier or workload",
                         optarg);
            }
            o->mode = (perf_mode_t)(i < 0 ? 0 : i);
            o->mode_set = 1;
            break;
        case 'b':
        case 'e':
            o->sizes_set = 1;
            if (tc_tool_parse_size(optarg, c == 'b' ? &o->min_bytes : &o->max_bytes) != 0) {
                snprintf(err, sizeof err, "-%c '%s': expected a size such as 8, 1K, 256M or 1G", c,
                         optarg);
            }
            break;
        case 'f':
            if (parse_int(optarg, 2, 1024, &i) != 0) {
                snprintf(err, sizeof err, "-f '%s': expected an integer factor from 2 to 1024",
                         optarg);
            }
            o->factor = i < 2 ? 2 : (uint64_t)i;
            o->sizes_set = 1;
            break;
        case 'o':
            if ((i = parse_name(optarg, op_names, 5)) < 0) {
                snprintf(err, sizeof err, "-o '%s': expected sum, avg, min, max or prod", optarg);
            }
            o->op = ops[i < 0 ? 0 : i];
            o->op_set = 1;
            break;
        case 'd':
            i = parse_name(optarg, dt_names, (int)(sizeof dt_names / sizeof dt_names[0]));
            if (i < 0) {
                snprintf(err, sizeof err,
                         "-d '%s': expected float32, float64, float16, bfloat16, int32, int64, "
                         "int16, uint16, int8 or uint8",
                         optarg);
            }
            o->dtype = dts[i < 0 ? 0 : i];
            o->dtype_set = 1;
            break;
        case 'r':
            if (parse_int(optarg, 0, perf_size - 1, &o->root) != 0) {
                snprintf(err, sizeof err, "-r '%s': expected a rank from 0 to %d", optarg,
                         perf_size - 1);
            }
            break;
        case 'c':
            if (parse_int(optarg, 0, 1, &o->check) != 0) {
                snprintf(err, sizeof err, "-c '%s': expected 0 or 1", optarg);
            }
            break;
        case 'n':
            if (parse_int(optarg, 1, 1000000, &o->iters) != 0) {
                snprintf(err, sizeof err, "-n '%s': expected an iteration count from 1 to 1000000",
                         optarg);
            }
            break;
        case 'w':
            if (parse_int(optarg, 0, 1000000, &o->warmup) != 0) {
                snprintf(err, sizeof err, "-w '%s': expected a warmup count from 0 to 1000000",
                         optarg);
            }
            break;
        case 'W': o->workload = optarg; break;
        case 'J': o->json = optarg; break;
        case 'P': o->plot = optarg; break;
        case 'D':
            if (strcmp(optarg, "cpu") != 0 && strcmp(optarg, "cuda") != 0) {
                snprintf(err, sizeof err, "--device '%s': expected cpu or cuda", optarg);
            }
            o->device = strcmp(optarg, "cuda") == 0;
            break;
        case 'M':
            if (strcmp(optarg, "shared") != 0 && strcmp(optarg, "malloc") != 0) {
                snprintf(err, sizeof err, "--mem '%s': expected shared or malloc", optarg);
            }
            o->mem_malloc = strcmp(optarg, "malloc") == 0;
            break;
        case 'O':
            if (strcmp(optarg, "app") != 0 && strcmp(optarg, "tcoll") != 0) {
                snprintf(err, sizeof err, "--mpi-owner '%s': expected app or tcoll", optarg);
            }
            o->tcoll_owns_mpi = strcmp(optarg, "tcoll") == 0;
            break;
        case 'h': return 1;
        case ':': snprintf(err, sizeof err, "option '%s' needs a value", argv[optind - 1]); break;
        default:
            if (optopt != 0) {
                snprintf(err, sizeof err, "unknown option '-%c'", optopt);
            } else {
                snprintf(err, sizeof err, "unknown option '%s'", argv[optind - 1]);
            }
            break;
        }
    }
    if (err[0] == '\0' && optind < argc) {
        snprintf(err, sizeof err, "unexpected argument '%s'", argv[optind]);
    }
    if (err[0] == '\0' && o->workload != NULL) {
        if (o->mode_set && o->mode != PERF_MODE_WORKLOAD) {
            snprintf(err, sizeof err, "--workload goes with -m workload, not -m %s",
                     perf_mode_names[o->mode]);
        }
        o->mode = PERF_MODE_WORKLOAD;
    }
    if (err[0] == '\0') {
        size_t es = tc_dtype_size(o->dtype);
        int sized = o->mode != PERF_MODE_BARRIER; /* the barrier ignores -b, -e and -f */
        if (sized && o->min_bytes == 0) {
            snprintf(err, sizeof err, "-b must be at least 1 byte");
        } else if (sized && o->min_bytes > o->max_bytes) {
            snprintf(err, sizeof err, "-b %llu is larger than -e %llu",
                     (unsigned long long)o->min_bytes, (unsigned long long)o->max_bytes);
        } else if (sized && o->max_bytes / es > INT_MAX) {
            snprintf(err, sizeof err, "-e %llu gives %llu %s elements, more than an MPI count (%d)",
                     (unsigned long long)o->max_bytes, (unsigned long long)(o->max_bytes / es),
                     tc_dtype_name(o->dtype), INT_MAX);
        } else if (o->op == TC_AVG && !perf_dt_is_float(o->dtype)) {
            snprintf(err, sizeof err, "-o avg needs a floating-point dtype, not %s",
                     tc_dtype_name(o->dtype));
        } else if (o->mode == PERF_MODE_WORKLOAD && o->dtype != TC_FLOAT32) {
            snprintf(err, sizeof err, "-m workload uses float32, not -d %s",
                     tc_dtype_name(o->dtype));
        } else if (o->mode == PERF_MODE_WORKLOAD && o->op != TC_SUM && o->op != TC_AVG) {
            snprintf(err, sizeof err, "-m workload takes -o sum or avg, not %s", tc_op_name(o->op));
        } else if ((o->mode == PERF_MODE_WORKLOAD || o->mode == PERF_MODE_BARRIER) &&
                   o->plot != NULL) {
            snprintf(err, sizeof err,
                     "--plot draws a sweep (busbw against size); it has "
                     "nothing to draw with -m %s",
                     perf_mode_names[o->mode]);
        } else if (o->mode == PERF_MODE_BARRIER && o->dtype_set) {
            snprintf(err, sizeof err, "-d has no meaning with -m barrier");
        } else if (o->op_set && o->mode != PERF_MODE_WORKLOAD &&
                   (perf_sweep_ops(o->mode) == NULL || !perf_sweep_ops(o->mode)->takes_op)) {
            snprintf(err, sizeof err, "-o has no meaning with -m %s", perf_mode_names[o->mode]);
        }
    }
    if (err[0] == '\0' && o->device) {
#ifndef TCOLL_PERF_CUDA
        snprintf(err, sizeof err, "--device cuda: this tcoll-perf was built without CUDA");
#else
        if (o->mode != PERF_MODE_ALLREDUCE || o->op != TC_SUM || o->dtype != TC_FLOAT32) {
            snprintf(err, sizeof err,
                     "--device cuda times float32 sum allreduce only (no -m, -o "
                     "or -d)");
        } else if (o->json != NULL || o->plot != NULL) {
            snprintf(err, sizeof err, "--device cuda prints its table only (no --json, --plot)");
        }
#endif
    }
    if (err[0] != '\0') {
        if (perf_rank == 0) {
            fprintf(stderr, "tcoll-perf: %s (see tcoll-perf --help)\n", err);
        }
        return -1;
    }
    return 0;
}
