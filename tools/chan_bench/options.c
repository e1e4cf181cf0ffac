/*
 * options.c - tcoll-chan-bench's command line: --help, sizes with K/M/G
 * suffixes, the checks of every value. It only parses; main.c decides what
 * a bad option does (rank 0 says why, every rank exits 2).
 */
#include "chan_bench.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

void cb_usage(FILE *f)
{
    fprintf(f, "Usage: mpiexec -n 2 tcoll-chan-bench [options]\n"
               "\n"
               "Channels between 2 ranks (memory channels, port channels) side by\n"
               "side with MPI_Send/Recv and MPI_Put: ping-pong latency, one-way and two-way\n"
               "bandwidth, ratios, and local memcpy as the bandwidth reference. Only rank 0\n"
               "prints. Every transfer's bytes are checked.\n"
               "\n"
               "With the ranks on two nodes (two machines, or TCOLL_RANKS_PER_NODE=1 on one,\n"
               "which makes each rank a node of its own to tcoll) the port channel goes over\n"
               "MPI through the proxy threads, the memory channel rows\n"
               "and the memcpy reference are left out, and the goals give the port channel\n"
               "against MPI_Send/Recv.\n"
               "\n"
               "  -b, --minbytes SIZE   smallest bandwidth size (default 4K)\n"
               "  -e, --maxbytes SIZE   largest, always the last row (default 64M, at most 1G)\n"
               "  -f, --stepfactor F    multiply the size by F from row to row (default 4)\n"
               "  -W, --window N        messages per bandwidth round (default 16; fewer when\n"
               "                        N x size passes max(64M, the largest size))\n"
               "  -n, --iters N         bandwidth rounds per run (default: 256 MiB per run\n"
               "                        and direction, 2..1000 rounds)\n"
               "  -r, --runs N          bandwidth runs per cell, interleaved with the other\n"
               "                        columns' runs; the median is shown (default 5, at\n"
               "                        most 15)\n"
               "  -l, --lat-iters N     timed ping-pongs per latency row (default 10000)\n"
               "  -w, --warmup N        untimed ping-pongs first (default lat-iters/10)\n"
               "      --spin-ns NS      how long channel waits poll before parking\n"
               "                        (tc_chan_opts_t.spin_ns; default: the library's)\n"
               "      --json FILE       also write every number to FILE as JSON\n"
               "      --device cuda     the channels driven from GPU kernels on device memory\n"
               "                        (tcoll_channel_device.h): device push to proxy\n"
               "                        latency and rate, kernel-to-kernel signal/wait, memory\n"
               "                        and port channel put bandwidth against the GPU's own\n"
               "                        device-to-device copy (needs a CUDA build and a GPU;\n"
               "                        -b, -e, -f, -n, -l apply; the other options do not)\n"
               "  -h, --help            this text\n"
               "\n"
               "SIZE: bytes with an optional K, M or G suffix (powers of 1024).\n"
               "Exit status: 0 every transfer right; 1 a call failed or a transfer delivered\n"
               "wrong bytes; 2 bad options, or not 2 ranks; 77 --device cuda without a GPU\n"
               "or in a build without CUDA kernels.\n");
}

static int parse_long(const char *s, long lo, long hi, long *v_p)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *v_p = v;
    return 0;
}

int cb_parse_options(int argc, char **argv, cb_opts_t *o, char *err, size_t len)
{
    static const struct option longopts[] = {{"minbytes", required_argument, NULL, 'b'},
                                             {"maxbytes", required_argument, NULL, 'e'},
                                             {"stepfactor", required_argument, NULL, 'f'},
                                             {"window", required_argument, NULL, 'W'},
                                             {"iters", required_argument, NULL, 'n'},
                                             {"runs", required_argument, NULL, 'r'},
                                             {"lat-iters", required_argument, NULL, 'l'},
                                             {"warmup", required_argument, NULL, 'w'},
                                             {"spin-ns", required_argument, NULL, 'S'},
                                             {"json", required_argument, NULL, 'J'},
                                             {"device", required_argument, NULL, 'D'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    long v;
    int c;

    memset(o, 0, sizeof(*o));
    o->min_bytes = 4ull << 10;
    o->max_bytes = 64ull << 20;
    o->factor = 4;
    o->window = 16;
    o->runs = 5;
    o->lat_iters = 10000;
    o->lat_warmup = -1;
    o->spin_ns = -1;
    err[0] = '\0';
    opterr = 0;
    while (err[0] == '\0' &&
           (c = getopt_long(argc, argv, ":b:e:f:W:n:r:l:w:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'b':
        case 'e':
            if (tc_tool_parse_size(optarg, c == 'b' ? &o->min_bytes : &o->max_bytes) != 0) {
                snprintf(err, len, "-%c '%s': expected a size such as 4096, 4K, 64M or 1G", c,
                         optarg);
            }
            break;
        case 'f':
            if (parse_long(optarg, 2, 1024, &v) != 0) {
                snprintf(err, len, "-f '%s': expected a whole number 2..1024", optarg);
            }
            o->factor = (uint64_t)v;
            break;
        case 'W':
            if (parse_long(optarg, 1, CB_MAX_WINDOW, &v) != 0) {
                snprintf(err, len, "-W '%s': expected a whole number 1..%d", optarg, CB_MAX_WINDOW);
            }
            o->window = (int)v;
            break;
        case 'n':
            if (parse_long(optarg, 1, 1000000, &v) != 0) {
                snprintf(err, len, "-n '%s': expected a whole number 1..1000000", optarg);
            }
            o->bw_iters = (int)v;
            break;
        case 'r':
            if (parse_long(optarg, 1, CB_MAX_RUNS, &v) != 0) {
                snprintf(err, len, "-r '%s': expected a whole number 1..%d", optarg, CB_MAX_RUNS);
            }
            o->runs = (int)v;
            break;
        case 'l':
            if (parse_long(optarg, 1, 100000000, &v) != 0) {
                snprintf(err, len, "-l '%s': expected a whole number 1..100000000", optarg);
            }
            o->lat_iters = (int)v;
            break;
        case 'w':
            if (parse_long(optarg, 0, 100000000, &v) != 0) {
                snprintf(err, len, "-w '%s': expected a whole number 0..100000000", optarg);
            }
            o->lat_warmup = (int)v;
            break;
        case 'S':
            if (parse_long(optarg, -1, 60l * 1000000000l, &v) != 0) {
                snprintf(err, len,
                         "--spin-ns '%s': expected nanoseconds 0..60000000000 (-1: "
                         "the library's default)",
                         optarg);
            }
            o->spin_ns = v;
            break;
        case 'J': o->json = optarg; break;
        case 'D':
            if (strcmp(optarg, "cuda") == 0) {
                o->device = 1;
            } else if (strcmp(optarg, "host") != 0) {
                snprintf(err, len, "--device '%s': expected cuda or host", optarg);
            }
            break;
        case 'h': return 1;
        case ':': snprintf(err, len, "%s needs a value", argv[optind - 1]); break;
        default: snprintf(err, len, "unknown option '%s' (--help lists them)", argv[optind - 1]);
        }
    }
    if (err[0] == '\0' && optind < argc) {
        snprintf(err, len, "unexpected argument '%s'", argv[optind]);
    }
    if (err[0] == '\0' && (o->min_bytes == 0 || o->max_bytes < o->min_bytes)) {
        snprintf(err, len, "sizes: need 1 <= -b <= -e (got %llu and %llu)",
                 (unsigned long long)o->min_bytes, (unsigned long long)o->max_bytes);
    }
    if (err[0] == '\0' && o->max_bytes > CB_MAX_BYTES) {
        snprintf(err, len, "-e: at most 1G");
    }
    if (o->lat_warmup < 0) {
        o->lat_warmup = o->lat_iters / 10;
    }
    return err[0] == '\0' ? 0 : -1;
}
