/*
 * bench_channel.c - tcoll-chan-bench: channels between two ranks of one
 * node (tcoll_channel.h) side by side, in the same run and on the same
 * machine state, with what a program would do with MPI instead.
 *
 * How to run (exactly 2 ranks, on one node; anything else is refused):
 *
 *   mpiexec -n 2 tcoll-chan-bench [options]      (--help lists them)
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
 */
#define _GNU_SOURCE
#include "tcoll.h"
#include "tcoll_channel.h"

#include <mpi.h>

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXIT_FAIL 1  /* a call failed or a transfer delivered wrong bytes */
#define EXIT_USAGE 2 /* bad options, or not 2 ranks on one node */

#define WAIT_NS (60ll * 1000000000ll) /* a channel wait longer than this is a failure */
#define PAGE 4096u
#define BW_BUDGET (256ull << 20) /* bytes one direction moves per run, by default */
#define MAX_RUNS 15
#define MAX_WINDOW 1024
#define MAX_BYTES (1ull << 30) /* MPI counts are ints; 1 GiB keeps every offset in range */
#define GOAL_SIZE (4ull << 20)
#define SPAN_CAP (64ull << 20) /* receive region: a window of messages fits, up to this */

enum { TAG_DATA = 1, TAG_ACK, TAG_LAT };

/* ------------------------------------------------------------------------ */
/* Options                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct {
    uint64_t min_bytes, max_bytes, factor;
    int window;    /* W: messages per bandwidth round (fewer where W x size > 64 MiB) */
    int bw_iters;  /* rounds per bandwidth run; 0: about BW_BUDGET bytes, 2..1000 */
    int runs;      /* bandwidth runs per cell; the median is shown */
    int lat_iters; /* timed ping-pongs per latency row */
    int lat_warmup;
    int64_t spin_ns; /* < 0: the library's default */
    const char *json;
} opts_t;

static void usage(FILE *f)
{
    fprintf(f,
"Usage: mpiexec -n 2 tcoll-chan-bench [options]\n"
"\n"
"Channels between 2 ranks of one node (memory channels, port channels) side by\n"
"side with MPI_Send/Recv and MPI_Put: ping-pong latency, one-way and two-way\n"
"bandwidth, ratios, and local memcpy as the bandwidth reference. Only rank 0\n"
"prints. Every transfer's bytes are checked.\n"
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
"  -h, --help            this text\n"
"\n"
"SIZE: bytes with an optional K, M or G suffix (powers of 1024).\n"
"Exit status: 0 every transfer right; 1 a call failed or a transfer delivered\n"
"wrong bytes; 2 bad options, or not 2 ranks on one node.\n");
}

static int parse_size(const char *s, uint64_t *v_p)
{
    char *end;
    unsigned long long v;
    uint64_t mult = 1;

    if (*s < '0' || *s > '9') {
        return -1;
    }
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0) {
        return -1;
    }
    switch (*end) {
    case 'k': case 'K': mult = 1ull << 10; end++; break;
    case 'm': case 'M': mult = 1ull << 20; end++; break;
    case 'g': case 'G': mult = 1ull << 30; end++; break;
    default: break;
    }
    if (mult > 1 && strcmp(end, "iB") == 0) {
        end += 2;
    } else if (*end == 'B' || *end == 'b') {
        end++;
    }
    if (*end != '\0' || v > UINT64_MAX / mult) {
        return -1;
    }
    *v_p = v * mult;
    return 0;
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

/* 0: run; 1: --help; -1: bad options (*err says which). */
static int parse_options(int argc, char **argv, opts_t *o, char *err, size_t len)
{
    static const struct option longopts[] = {
        {"minbytes", required_argument, NULL, 'b'}, {"maxbytes", required_argument, NULL, 'e'},
        {"stepfactor", required_argument, NULL, 'f'}, {"window", required_argument, NULL, 'W'},
        {"iters", required_argument, NULL, 'n'},    {"runs", required_argument, NULL, 'r'},
        {"lat-iters", required_argument, NULL, 'l'}, {"warmup", required_argument, NULL, 'w'},
        {"spin-ns", required_argument, NULL, 'S'},  {"json", required_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0}};
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
            if (parse_size(optarg, c == 'b' ? &o->min_bytes : &o->max_bytes) != 0) {
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
            if (parse_long(optarg, 1, MAX_WINDOW, &v) != 0) {
                snprintf(err, len, "-W '%s': expected a whole number 1..%d", optarg, MAX_WINDOW);
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
            if (parse_long(optarg, 1, MAX_RUNS, &v) != 0) {
                snprintf(err, len, "-r '%s': expected a whole number 1..%d", optarg, MAX_RUNS);
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
                snprintf(err, len, "--spin-ns '%s': expected nanoseconds 0..60000000000 (-1: "
                         "the library's default)", optarg);
            }
            o->spin_ns = v;
            break;
        case 'J': o->json = optarg; break;
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
    if (err[0] == '\0' && o->max_bytes > MAX_BYTES) {
        snprintf(err, len, "-e: at most 1G");
    }
    if (o->lat_warmup < 0) {
        o->lat_warmup = o->lat_iters / 10;
    }
    return err[0] == '\0' ? 0 : -1;
}

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

static int g_rank, g_peer;
static MPI_Comm g_comm; /* the MPI rows' communicator: a duplicate of MPI_COMM_WORLD */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "tcoll-chan-bench: rank %d: ", g_rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, EXIT_FAIL);
    exit(EXIT_FAIL); /* not reached */
}

static void chk(tc_status_t st, const char *what)
{
    if (st != TC_OK) {
        die("%s: %s: %s", what, tc_status_string(st), tc_last_error());
    }
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *alloc_or_die(size_t bytes, const char *what)
{
    void *p = NULL;

    if (posix_memalign(&p, PAGE, bytes > 0 ? bytes : 1) != 0) {
        die("cannot allocate %zu bytes for %s", bytes, what);
    }
    return p;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v; the q-quantile (nearest rank). */
static uint64_t quantile_u64(uint64_t *v, size_t n, double q)
{
    qsort(v, n, sizeof(*v), cmp_u64);
    return v[(size_t)(q * (double)(n - 1) + 0.5)];
}

static double median_double(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

/* "4 KiB", "64 MiB" when exact; bytes otherwise. */
static void fmt_size(char *buf, size_t len, uint64_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
    int u = 0;

    while (bytes >= 1024 && bytes % 1024 == 0 && u < 3) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, len, "%llu %s", (unsigned long long)bytes, units[u]);
}

/* A well mixed 64-bit value of x (the finalizer of a 64-bit hash). */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* n bytes that only seed makes: word i is mix64(seed + i), the tail a prefix. */
static void fill(char *p, uint64_t n, uint64_t seed)
{
    uint64_t i, w;

    for (i = 0; i + 8 <= n; i += 8) {
        w = mix64(seed + i / 8);
        memcpy(p + i, &w, 8);
    }
    if (i < n) {
        w = mix64(seed + i / 8);
        memcpy(p + i, &w, (size_t)(n - i));
    }
}

/* Bytes of p[0, n) that differ from fill(seed); *first_p: the first's offset. */
static uint64_t count_wrong(const char *p, uint64_t n, uint64_t seed, uint64_t *first_p)
{
    uint64_t i, j, w, bad = 0;
    unsigned char want[8];

    for (i = 0; i < n; i += 8) {
        size_t k = n - i < 8 ? (size_t)(n - i) : 8;
        w = mix64(seed + i / 8);
        memcpy(want, &w, 8);
        if (memcmp(p + i, want, k) != 0) {
            for (j = 0; j < k; j++) {
                if ((unsigned char)p[i + j] != want[j]) {
                    if (bad++ == 0) {
                        *first_p = i + j;
                    }
                }
            }
        }
    }
    return bad;
}

/* ------------------------------------------------------------------------ */
/* The two sides' memory and channels                                        */
/* ------------------------------------------------------------------------ */

/* tcoll: one tc_mem_alloc region per rank, [0, span) sent from and
 * [span, 2 span) received into; one memory channel (semaphore id 0) and one
 * port channel (id 1) to the peer. MPI: one window per rank, the
 * notification counter at 0, then send and receive regions as above. The
 * MPI_Send/Recv rows use the tcoll regions, so both sides move the same
 * memory. */
static struct {
    uint64_t span; /* each region's bytes (setup says how many) */
    tc_chan_ctx_t *ctx;
    char *buf;
    tc_mem_t *mem;
    tc_rmem_t *rmems[2];
    tc_sem_t *msem, *psem;
    tc_memchan_t *mch;
    tc_portchan_t *pch;
    MPI_Win win;
    char *wbase;
    int64_t notified; /* notifications this rank has consumed */
    MPI_Request *reqs;
    char *cpy_src, *cpy_dst; /* rank 0's memcpy reference */
} S;

#define WIN_DATA PAGE

static void setup(const opts_t *o)
{
    tc_chan_opts_t co = TC_CHAN_OPTS_INIT;
    MPI_Aint wbytes;

    /* Room for a whole window of the largest size, up to 64 MiB (so W
     * shrinks only for sizes above 64 MiB / W), and at least that size. */
    S.span = (uint64_t)o->window * o->max_bytes;
    S.span = S.span < SPAN_CAP ? S.span : SPAN_CAP;
    S.span = S.span > o->max_bytes ? S.span : o->max_bytes;
    S.span = (S.span + PAGE - 1) / PAGE * PAGE;
    co.spin_ns = o->spin_ns;
    chk(tc_chan_ctx_create(&co, &S.ctx), "tc_chan_ctx_create");
    chk(tc_mem_alloc(2 * S.span, (void **)&S.buf), "tc_mem_alloc");
    memset(S.buf, 0, 2 * S.span);
    chk(tc_mem_register(S.ctx, S.buf, 2 * S.span, &S.mem), "tc_mem_register");
    chk(tc_mem_exchange(S.ctx, "chan-bench", S.mem, S.rmems), "tc_mem_exchange");
    chk(tc_sem_create(S.ctx, g_peer, 0, &S.msem), "tc_sem_create");
    chk(tc_sem_create(S.ctx, g_peer, 1, &S.psem), "tc_sem_create");
    chk(tc_memchan_create(S.msem, S.mem, S.rmems[g_peer], &S.mch), "tc_memchan_create");
    chk(tc_portchan_create(S.psem, S.mem, S.rmems[g_peer], &S.pch), "tc_portchan_create");

    wbytes = (MPI_Aint)(WIN_DATA + 2 * S.span);
    if (MPI_Win_allocate(wbytes, 1, MPI_INFO_NULL, g_comm, &S.wbase, &S.win) != MPI_SUCCESS) {
        die("MPI_Win_allocate of %lld bytes failed", (long long)wbytes);
    }
    memset(S.wbase, 0, (size_t)wbytes);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, S.win);
    MPI_Win_sync(S.win);
    S.reqs = alloc_or_die(sizeof(MPI_Request) * 2 * MAX_WINDOW, "MPI requests");
    if (g_rank == 0) {
        S.cpy_src = alloc_or_die(S.span, "the memcpy source");
        S.cpy_dst = alloc_or_die(S.span, "the memcpy destination");
        memset(S.cpy_src, 1, S.span);
        memset(S.cpy_dst, 2, S.span);
    }
    MPI_Barrier(g_comm);
}

static void teardown(void)
{
    MPI_Barrier(g_comm); /* nobody reaches into the other's memory any more */
    MPI_Win_unlock_all(S.win);
    MPI_Win_free(&S.win);
    tc_memchan_destroy(S.mch);
    chk(tc_portchan_destroy(S.pch), "tc_portchan_destroy");
    tc_sem_destroy(S.msem);
    tc_sem_destroy(S.psem);
    tc_mem_close(S.rmems[0]);
    tc_mem_close(S.rmems[1]);
    tc_mem_deregister(S.mem);
    chk(tc_chan_ctx_destroy(S.ctx), "tc_chan_ctx_destroy");
    chk(tc_mem_free(S.buf), "tc_mem_free");
    free(S.reqs);
    free(S.cpy_src);
    free(S.cpy_dst);
}

/* Port channel failures are reported by a flush: one after each row. */
static void portchan_check(void)
{
    chk(tc_portchan_flush(S.pch, WAIT_NS), "tc_portchan_flush");
}

/* The MPI notification: +1 on the peer's counter, completed at the peer. */
static void put_notify(void)
{
    int64_t one = 1;

    MPI_Accumulate(&one, 1, MPI_INT64_T, g_peer, 0, 1, MPI_INT64_T, MPI_SUM, S.win);
    MPI_Win_flush(g_peer, S.win);
}

/* Waits for the next notification, then makes the window's data visible. */
static void put_await(void)
{
    int64_t v = 0, dummy = 0;

    S.notified++;
    do {
        MPI_Fetch_and_op(&dummy, &v, MPI_INT64_T, g_rank, 0, MPI_NO_OP, S.win);
        MPI_Win_flush(g_rank, S.win);
    } while (v < S.notified);
    MPI_Win_sync(S.win);
}

/* ------------------------------------------------------------------------ */
/* Latency                                                                   */
/* ------------------------------------------------------------------------ */

#define LAT_LIST(X)                                                                     \
    X(MEM_SIG, "memory channel: tc_memchan_signal + tc_memchan_wait", 0, 0)             \
    X(MEM_PUT, "memory channel: tc_memchan_put_with_signal + wait", 8, 0)               \
    X(PORT_SIG, "port channel: tc_portchan_signal + tc_portchan_wait", 0, 0)            \
    X(PORT_PUT, "port channel: tc_portchan_put_with_signal + wait", 8, 0)               \
    X(SEND0, "MPI_Send + MPI_Recv", 0, 1)                                               \
    X(SEND8, "MPI_Send + MPI_Recv", 8, 1)                                               \
    X(NOTIFY, "MPI notification only (Accumulate + flush; Fetch_and_op poll)", 0, 1)    \
    X(PUT8, "MPI_Put + MPI_Win_flush + notification", 8, 1)

typedef enum {
#define LAT_ENUM(id, name, bytes, mpi) L_##id,
    LAT_LIST(LAT_ENUM)
#undef LAT_ENUM
    NLAT
} lat_t;

static const struct {
    const char *name;
    int bytes, mpi;
} lat_info[NLAT] = {
#define LAT_INFO(id, name, bytes, mpi) {name, bytes, mpi},
    LAT_LIST(LAT_INFO)
#undef LAT_INFO
};

typedef struct {
    double p50_us, p99_us; /* one-way */
    long long wrong;       /* rounds whose 8 bytes were wrong, both ranks */
} lat_row_t;

/* The 8 bytes rank r sends in round i. */
static uint64_t lat_key(int i, int r)
{
    return mix64(((uint64_t)(unsigned)i << 1) | (uint64_t)r);
}

static void lat_send(lat_t k, uint64_t v)
{
    char *wsend = S.wbase + WIN_DATA;

    switch (k) {
    case L_MEM_SIG: chk(tc_memchan_signal(S.mch), "tc_memchan_signal"); break;
    case L_MEM_PUT:
        memcpy(S.buf, &v, 8);
        chk(tc_memchan_put_with_signal(S.mch, S.span, 0, 8), "tc_memchan_put_with_signal");
        break;
    case L_PORT_SIG: chk(tc_portchan_signal(S.pch), "tc_portchan_signal"); break;
    case L_PORT_PUT:
        /* The source may be rewritten: the peer's answer to the previous
         * round came after it saw that round's put complete. */
        memcpy(S.buf, &v, 8);
        chk(tc_portchan_put_with_signal(S.pch, S.span, 0, 8), "tc_portchan_put_with_signal");
        break;
    case L_SEND0: MPI_Send(S.buf, 0, MPI_BYTE, g_peer, TAG_LAT, g_comm); break;
    case L_SEND8:
        memcpy(S.buf, &v, 8);
        MPI_Send(S.buf, 8, MPI_BYTE, g_peer, TAG_LAT, g_comm);
        break;
    case L_NOTIFY: put_notify(); break;
    case L_PUT8:
        memcpy(wsend, &v, 8);
        MPI_Put(wsend, 8, MPI_BYTE, g_peer, (MPI_Aint)(WIN_DATA + S.span), 8, MPI_BYTE, S.win);
        MPI_Win_flush(g_peer, S.win);
        put_notify();
        break;
    case NLAT: break;
    }
}

/* Waits for the peer's round; 1 when its 8 bytes are not want (the first
 * such round of a row is told on stderr). */
static int lat_recv(lat_t k, uint64_t want, int round, int *told)
{
    uint64_t got = want;

    switch (k) {
    case L_MEM_SIG: chk(tc_memchan_wait(S.mch, WAIT_NS), "tc_memchan_wait"); break;
    case L_MEM_PUT:
        chk(tc_memchan_wait(S.mch, WAIT_NS), "tc_memchan_wait");
        memcpy(&got, S.buf + S.span, 8);
        break;
    case L_PORT_SIG: chk(tc_portchan_wait(S.pch, WAIT_NS), "tc_portchan_wait"); break;
    case L_PORT_PUT:
        chk(tc_portchan_wait(S.pch, WAIT_NS), "tc_portchan_wait");
        memcpy(&got, S.buf + S.span, 8);
        break;
    case L_SEND0:
        MPI_Recv(S.buf + S.span, 0, MPI_BYTE, g_peer, TAG_LAT, g_comm, MPI_STATUS_IGNORE);
        break;
    case L_SEND8:
        MPI_Recv(S.buf + S.span, 8, MPI_BYTE, g_peer, TAG_LAT, g_comm, MPI_STATUS_IGNORE);
        memcpy(&got, S.buf + S.span, 8);
        break;
    case L_NOTIFY: put_await(); break;
    case L_PUT8:
        put_await();
        memcpy(&got, S.wbase + WIN_DATA + S.span, 8);
        break;
    case NLAT: break;
    }
    if (got != want && !*told) {
        *told = 1;
        fprintf(stderr, "tcoll-chan-bench: rank %d: %s, round %d: received 0x%016llx, sent "
                "0x%016llx\n", g_rank, lat_info[k].name, round, (unsigned long long)got,
                (unsigned long long)want);
    }
    return got != want;
}

/* Rank 0 sends, rank 1 answers; rank 0 times each round trip. */
static lat_row_t run_latency(const opts_t *o, lat_t k, uint64_t *rtt)
{
    int i, n = o->lat_warmup + o->lat_iters, told = 0;
    long long bad = 0;
    lat_row_t row;
    uint64_t t0;

    memset(&row, 0, sizeof(row));
    MPI_Barrier(g_comm);
    for (i = 0; i < n; i++) {
        if (g_rank == 0) {
            t0 = now_ns();
            lat_send(k, lat_key(i, 0));
            bad += lat_recv(k, lat_key(i, 1), i, &told);
            if (i >= o->lat_warmup) {
                rtt[i - o->lat_warmup] = now_ns() - t0;
            }
        } else {
            bad += lat_recv(k, lat_key(i, 0), i, &told);
            lat_send(k, lat_key(i, 1));
        }
    }
    if (k == L_PORT_SIG || k == L_PORT_PUT) {
        portchan_check();
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG_LONG, MPI_SUM, g_comm);
    row.wrong = bad;
    if (g_rank == 0) {
        row.p50_us = (double)quantile_u64(rtt, (size_t)o->lat_iters, 0.50) / 2e3;
        row.p99_us = (double)quantile_u64(rtt, (size_t)o->lat_iters, 0.99) / 2e3;
    }
    return row;
}

/* ------------------------------------------------------------------------ */
/* Bandwidth                                                                 */
/* ------------------------------------------------------------------------ */

/* id, column, JSON key, what one round does */
#define XPORT_LIST(X)                                                                       \
    X(MEMCHAN, "memchan", "memchan", "memory channel: tc_memchan_put x W, signal")          \
    X(PORTCHAN, "portchan", "portchan", "port channel: tc_portchan_put x W, signal")        \
    X(SEND, "Send/Recv", "mpi_send", "MPI_Isend x W / MPI_Irecv x W, MPI_Waitall")          \
    X(PUT, "Put+flush", "mpi_put", "MPI_Put x W, MPI_Win_flush, notification")

typedef enum {
#define XPORT_ENUM(id, col, key, what) T_##id,
    XPORT_LIST(XPORT_ENUM)
#undef XPORT_ENUM
    NXPORT
} xport_t;

static const struct {
    const char *col, *key, *what;
} xport_info[NXPORT] = {
#define XPORT_INFO(id, col, key, what) {col, key, what},
    XPORT_LIST(XPORT_INFO)
#undef XPORT_INFO
};

static char *send_region(xport_t t)
{
    return t == T_PUT ? S.wbase + WIN_DATA : S.buf;
}

static char *recv_region(xport_t t)
{
    return t == T_PUT ? S.wbase + WIN_DATA + S.span : S.buf + S.span;
}

/* The sending half of a round: W messages of size bytes from the start of
 * the send region to w distinct places of the peer's receive region, then
 * "they are there". Does not wait for the peer. */
static void post_window(xport_t t, uint64_t size, int w)
{
    int j;

    switch (t) {
    case T_MEMCHAN:
        for (j = 0; j < w; j++) {
            chk(tc_memchan_put(S.mch, S.span + (uint64_t)j * size, 0, size), "tc_memchan_put");
        }
        chk(tc_memchan_signal(S.mch), "tc_memchan_signal");
        break;
    case T_PORTCHAN:
        for (j = 0; j < w; j++) {
            chk(tc_portchan_put(S.pch, S.span + (uint64_t)j * size, 0, size), "tc_portchan_put");
        }
        chk(tc_portchan_signal(S.pch), "tc_portchan_signal");
        break;
    case T_SEND:
        for (j = 0; j < w; j++) {
            MPI_Isend(S.buf, (int)size, MPI_BYTE, g_peer, TAG_DATA, g_comm, &S.reqs[j]);
        }
        MPI_Waitall(w, S.reqs, MPI_STATUSES_IGNORE);
        break;
    case T_PUT:
        for (j = 0; j < w; j++) {
            MPI_Put(S.wbase + WIN_DATA, (int)size, MPI_BYTE, g_peer,
                    (MPI_Aint)(WIN_DATA + S.span + (uint64_t)j * size), (int)size, MPI_BYTE,
                    S.win);
        }
        MPI_Win_flush(g_peer, S.win);
        put_notify();
        break;
    case NXPORT: break;
    }
}

/* The receiving half: returns when the peer's window is in this rank's
 * receive region. */
static void await_window(xport_t t, uint64_t size, int w)
{
    int j;

    switch (t) {
    case T_MEMCHAN: chk(tc_memchan_wait(S.mch, WAIT_NS), "tc_memchan_wait"); break;
    case T_PORTCHAN: chk(tc_portchan_wait(S.pch, WAIT_NS), "tc_portchan_wait"); break;
    case T_SEND:
        for (j = 0; j < w; j++) {
            MPI_Irecv(S.buf + S.span + (uint64_t)j * size, (int)size, MPI_BYTE, g_peer, TAG_DATA,
                      g_comm, &S.reqs[j]);
        }
        MPI_Waitall(w, S.reqs, MPI_STATUSES_IGNORE);
        break;
    case T_PUT: put_await(); break;
    case NXPORT: break;
    }
}

/* One round. One-way: rank 0 posts, rank 1 awaits and answers (each
 * transport with its own signal; a 0-byte message for Send/Recv). Two-way:
 * both post, then await the other's (Send/Recv: receives posted first). */
static void bw_round(xport_t t, uint64_t size, int w, int twoway)
{
    int j;

    if (twoway && t == T_SEND) {
        for (j = 0; j < w; j++) {
            MPI_Irecv(S.buf + S.span + (uint64_t)j * size, (int)size, MPI_BYTE, g_peer, TAG_DATA,
                      g_comm, &S.reqs[w + j]);
        }
        for (j = 0; j < w; j++) {
            MPI_Isend(S.buf, (int)size, MPI_BYTE, g_peer, TAG_DATA, g_comm, &S.reqs[j]);
        }
        MPI_Waitall(2 * w, S.reqs, MPI_STATUSES_IGNORE);
    } else if (twoway) {
        post_window(t, size, w);
        await_window(t, size, w);
    } else if (g_rank == 0) {
        post_window(t, size, w);
        switch (t) {
        case T_MEMCHAN: chk(tc_memchan_wait(S.mch, WAIT_NS), "tc_memchan_wait"); break;
        case T_PORTCHAN: chk(tc_portchan_wait(S.pch, WAIT_NS), "tc_portchan_wait"); break;
        case T_SEND:
            MPI_Recv(NULL, 0, MPI_BYTE, g_peer, TAG_ACK, g_comm, MPI_STATUS_IGNORE);
            break;
        case T_PUT: put_await(); break;
        case NXPORT: break;
        }
    } else {
        await_window(t, size, w);
        switch (t) {
        case T_MEMCHAN: chk(tc_memchan_signal(S.mch), "tc_memchan_signal"); break;
        case T_PORTCHAN: chk(tc_portchan_signal(S.pch), "tc_portchan_signal"); break;
        case T_SEND: MPI_Send(NULL, 0, MPI_BYTE, g_peer, TAG_ACK, g_comm); break;
        case T_PUT: put_notify(); break;
        case NXPORT: break;
        }
    }
}

/* W for a size: at most -W, and W x size within the receive region. */
static int window_for(const opts_t *o, uint64_t size)
{
    uint64_t fit = S.span / size;
    return fit < (uint64_t)o->window ? (int)fit : o->window;
}

static int iters_for(const opts_t *o, uint64_t size, int w)
{
    uint64_t it;

    if (o->bw_iters > 0) {
        return o->bw_iters;
    }
    it = BW_BUDGET / (size * (uint64_t)w);
    return it < 2 ? 2 : it > 1000 ? 1000 : (int)it;
}

/* A warm-up of a tenth of the rounds (at least one), untimed. */
static void bw_warmup(xport_t t, uint64_t size, int w, int iters, int twoway)
{
    int i;

    for (i = 0; i < (iters + 9) / 10; i++) {
        bw_round(t, size, w, twoway);
    }
}

/* One timed run of iters rounds: GB/s (1e9 B/s) from the slower rank's
 * time, from a common barrier to the end of its last round. */
static double bw_run(xport_t t, uint64_t size, int w, int iters, int twoway)
{
    uint64_t t0, dt;
    int i;

    MPI_Barrier(g_comm);
    t0 = now_ns();
    for (i = 0; i < iters; i++) {
        bw_round(t, size, w, twoway);
    }
    dt = now_ns() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_UINT64_T, MPI_MAX, g_comm);
    return (double)size * w * iters * (twoway ? 2 : 1) / (double)(dt > 0 ? dt : 1);
}

/* One more round of the same pattern with fresh data into poisoned
 * destinations; every received byte is compared. Returns the wrong bytes of
 * both ranks. */
static long long bw_verify(const opts_t *o, xport_t t, uint64_t size, int twoway, int salt)
{
    int w = window_for(o, size), j;
    int sends = twoway || g_rank == 0, recvs = twoway || g_rank == 1;
    uint64_t base = ((uint64_t)salt << 48) ^ (size << 8), first = 0, bad;
    long long wrong = 0;

    if (recvs) {
        memset(recv_region(t), 0xee, (size_t)(size * (uint64_t)w));
    }
    if (sends) {
        fill(send_region(t), size, base ^ ((uint64_t)(g_rank + 1) << 60));
    }
    MPI_Win_sync(S.win); /* the local stores into the window, before any RMA */
    MPI_Barrier(g_comm);
    bw_round(t, size, w, twoway);
    if (t == T_PORTCHAN) {
        portchan_check();
    }
    if (recvs) {
        for (j = 0; j < w; j++) {
            bad = count_wrong(recv_region(t) + (uint64_t)j * size, size,
                              base ^ ((uint64_t)(g_peer + 1) << 60), &first);
            if (bad > 0) {
                fprintf(stderr, "tcoll-chan-bench: rank %d: %s, %s, %llu bytes, message %d of "
                        "%d: %llu bytes wrong, the first at offset %llu\n", g_rank,
                        xport_info[t].col, twoway ? "two-way" : "one-way",
                        (unsigned long long)size, j + 1, w, (unsigned long long)bad,
                        (unsigned long long)first);
                wrong += (long long)bad;
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, g_comm);
    return wrong;
}

/* One run of the same W copies of size bytes, memcpy in one thread on rank 0
 * alone (the other rank waits in a barrier): GB/s; 0 on rank 1. */
static double memcpy_run(uint64_t size, int w, int iters)
{
    uint64_t t0, dt;
    double gbs = 0;
    int i, j;

    if (g_rank == 0) {
        t0 = now_ns();
        for (i = 0; i < iters; i++) {
            for (j = 0; j < w; j++) {
                memcpy(S.cpy_dst + (uint64_t)j * size, S.cpy_src, (size_t)size);
            }
        }
        dt = now_ns() - t0;
        gbs = (double)size * w * iters / (double)(dt > 0 ? dt : 1);
    }
    MPI_Barrier(g_comm);
    return gbs;
}

/* Ratios of the table: memchan and portchan against Send/Recv and Put. */
enum { X_MEM_SEND, X_MEM_PUT, X_PORT_SEND, X_PORT_PUT, NX };

typedef struct {
    uint64_t bytes;
    int window, iters;
    double memcpy_gbs;       /* one-way only (rank 0) */
    double gbs[NXPORT];      /* medians over the runs */
    double x[NX];            /* medians over the runs of each run's ratio */
    double pct_memcpy;       /* one-way: median of each run's portchan / memcpy, in % */
    long long wrong[NXPORT]; /* bytes wrong in the checked round, both ranks */
} bw_row_t;

/* The median over n runs of a[r] / b[r]. */
static double median_ratio(const double *a, const double *b, int n)
{
    double q[MAX_RUNS];
    int r;

    for (r = 0; r < n; r++) {
        q[r] = b[r] > 0 ? a[r] / b[r] : 0;
    }
    return median_double(q, n);
}

/* One row: the runs interleave the columns (memcpy, then each transport, in
 * every run), so a slow spell of the machine hits all of them alike rather
 * than one cell; then each transport's checked round. */
static void measure_size(const opts_t *o, uint64_t size, int twoway, bw_row_t *row)
{
    static const int xa[NX] = {T_MEMCHAN, T_MEMCHAN, T_PORTCHAN, T_PORTCHAN};
    static const int xb[NX] = {T_SEND, T_PUT, T_SEND, T_PUT};
    double v[NXPORT][MAX_RUNS], m[MAX_RUNS];
    int w = window_for(o, size), iters = iters_for(o, size, w), r, t, k;

    row->bytes = size;
    row->window = w;
    row->iters = iters;
    for (t = 0; t < NXPORT; t++) {
        bw_warmup((xport_t)t, size, w, iters, twoway);
    }
    for (r = 0; r < o->runs; r++) {
        m[r] = twoway ? 0 : memcpy_run(size, w, iters);
        for (t = 0; t < NXPORT; t++) {
            v[t][r] = bw_run((xport_t)t, size, w, iters, twoway);
        }
    }
    portchan_check();
    for (k = 0; k < NX; k++) {
        row->x[k] = median_ratio(v[xa[k]], v[xb[k]], o->runs);
    }
    row->pct_memcpy = twoway ? 0 : 100.0 * median_ratio(v[T_PORTCHAN], m, o->runs);
    for (t = 0; t < NXPORT; t++) {
        row->gbs[t] = median_double(v[t], o->runs);
        row->wrong[t] = bw_verify(o, (xport_t)t, size, twoway, 1 + t + 8 * twoway);
    }
    row->memcpy_gbs = twoway ? 0 : median_double(m, o->runs);
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */
/* ------------------------------------------------------------------------ */

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

static void print_lat_table(const opts_t *o, const lat_row_t *rows)
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
    for (k = 0; k < NLAT; k++) {
        lat_t ms = lat_info[k].bytes ? L_SEND8 : L_SEND0, mp = lat_info[k].bytes ? L_PUT8 : L_NOTIFY;

        cell_num(p50, sizeof(p50), rows[k].p50_us, rows[k].wrong);
        cell_num(p99, sizeof(p99), rows[k].p99_us, rows[k].wrong);
        if (lat_info[k].mpi) {
            snprintf(xs, sizeof(xs), "-");
            snprintf(xp, sizeof(xp), "-");
        } else {
            cell_ratio(xs, sizeof(xs), rows[ms].p50_us, rows[ms].wrong, rows[k].p50_us,
                       rows[k].wrong);
            cell_ratio(xp, sizeof(xp), rows[mp].p50_us, rows[mp].wrong, rows[k].p50_us,
                       rows[k].wrong);
        }
        printf("| %s | %d B | %s | %s | %s | %s |\n", lat_info[k].name, lat_info[k].bytes, p50,
               p99, xs, xp);
    }
    fflush(stdout);
}

static void print_bw_header(int twoway)
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
    for (t = 0; t < NXPORT; t++) {
        printf("%s: %s.\n", xport_info[t].col, xport_info[t].what);
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

static void print_bw_row(const bw_row_t *r, int twoway)
{
    char size[32], c[NXPORT][32], x[4][32], pct[32];
    int t;

    fmt_size(size, sizeof(size), r->bytes);
    for (t = 0; t < NXPORT; t++) {
        cell_num(c[t], sizeof(c[t]), r->gbs[t], r->wrong[t]);
    }
    cell_x(x[0], sizeof(x[0]), r->x[X_MEM_SEND], r->wrong[T_MEMCHAN], r->wrong[T_SEND]);
    cell_x(x[1], sizeof(x[1]), r->x[X_MEM_PUT], r->wrong[T_MEMCHAN], r->wrong[T_PUT]);
    cell_x(x[2], sizeof(x[2]), r->x[X_PORT_SEND], r->wrong[T_PORTCHAN], r->wrong[T_SEND]);
    cell_x(x[3], sizeof(x[3]), r->x[X_PORT_PUT], r->wrong[T_PORTCHAN], r->wrong[T_PUT]);
    if (!twoway) {
        if (r->wrong[T_PORTCHAN] != 0 || r->pct_memcpy <= 0) {
            snprintf(pct, sizeof(pct), "-");
        } else {
            snprintf(pct, sizeof(pct), "%.0f%%", r->pct_memcpy);
        }
        printf("| %s | %d | %d | %.2f | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", size,
               r->window, r->iters, r->memcpy_gbs, c[T_MEMCHAN], c[T_PORTCHAN], c[T_SEND],
               c[T_PUT], x[0], x[1], x[2], x[3], pct);
    } else {
        printf("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", size, r->window,
               r->iters, c[T_MEMCHAN], c[T_PORTCHAN], c[T_SEND], c[T_PUT], x[0], x[1], x[2],
               x[3]);
    }
    fflush(stdout);
}

static void print_goals(const lat_row_t *lat, const bw_row_t *one, int nsizes)
{
    int i;

    printf("\n## Goals (printed, not judged)\n\n");
    if (lat[L_MEM_SIG].wrong != 0) {
        printf("- memory channel signal/wait one-way latency < 1 us: not measured (WRONG)\n");
    } else {
        printf("- memory channel signal/wait one-way latency < 1 us: p50 %.2f us, %s\n",
               lat[L_MEM_SIG].p50_us, lat[L_MEM_SIG].p50_us < 1.0 ? "met" : "NOT met");
    }
    for (i = 0; i < nsizes && one[i].bytes != GOAL_SIZE; i++) {
    }
    if (i == nsizes) {
        printf("- port channel put one-way bandwidth >= 80%% of local memcpy at 4 MiB: not "
               "measured (4 MiB is not one of the sizes)\n");
    } else if (one[i].wrong[T_PORTCHAN] != 0) {
        printf("- port channel put one-way bandwidth >= 80%% of local memcpy at 4 MiB: not "
               "measured (WRONG)\n");
    } else {
        printf("- port channel put one-way bandwidth >= 80%% of local memcpy at 4 MiB: %.0f%% "
               "(portchan %.2f GB/s, memcpy %.2f GB/s), %s\n", one[i].pct_memcpy,
               one[i].gbs[T_PORTCHAN], one[i].memcpy_gbs,
               one[i].pct_memcpy >= 80.0 ? "met" : "NOT met");
    }
    fflush(stdout);
}

static void json_bw(FILE *f, const char *name, const bw_row_t *rows, int n, int twoway)
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
                "%.4f, \"portchan_x_put\": %.4f", rows[i].x[X_MEM_SEND], rows[i].x[X_MEM_PUT],
                rows[i].x[X_PORT_SEND], rows[i].x[X_PORT_PUT]);
        for (t = 0; t < NXPORT; t++) {
            if (rows[i].wrong[t] != 0) {
                fprintf(f, ", \"%s_gbs\": null", xport_info[t].key);
            } else {
                fprintf(f, ", \"%s_gbs\": %.4f", xport_info[t].key, rows[i].gbs[t]);
            }
            fprintf(f, ", \"%s_wrong_bytes\": %lld", xport_info[t].key, rows[i].wrong[t]);
        }
        fprintf(f, "}%s\n", i + 1 < n ? "," : "");
    }
    fprintf(f, "  ]");
}

static void write_json(FILE *f, const opts_t *o, const lat_row_t *lat, const bw_row_t *one,
                       const bw_row_t *two, int nsizes)
{
    int k;

    fprintf(f, "{\n  \"tool\": \"tcoll-chan-bench\",\n  \"tcoll\": \"%s\",\n", tc_version());
    fprintf(f, "  \"spin_ns\": %lld,\n  \"latency_rounds\": %d,\n  \"runs\": %d,\n",
            (long long)o->spin_ns, o->lat_iters, o->runs);
    fprintf(f, "  \"latency\": [\n");
    for (k = 0; k < NLAT; k++) {
        fprintf(f, "    {\"op\": \"%s\", \"bytes\": %d, ", lat_info[k].name, lat_info[k].bytes);
        if (lat[k].wrong != 0) {
            fprintf(f, "\"p50_us\": null, \"p99_us\": null, ");
        } else {
            fprintf(f, "\"p50_us\": %.4f, \"p99_us\": %.4f, ", lat[k].p50_us, lat[k].p99_us);
        }
        fprintf(f, "\"wrong_rounds\": %lld}%s\n", lat[k].wrong, k + 1 < NLAT ? "," : "");
    }
    fprintf(f, "  ],\n");
    json_bw(f, "oneway", one, nsizes, 0);
    fprintf(f, ",\n");
    json_bw(f, "twoway", two, nsizes, 1);
    fprintf(f, "\n}\n");
}

/* ------------------------------------------------------------------------ */

/* The CPUs this process may run on, as "0-3,8" (its affinity mask);
 * returns how many. */
static int cpu_list(char *buf, size_t len)
{
    cpu_set_t set;
    int c, first = -1, n = 0;
    size_t used = 0;

    buf[0] = '\0';
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        snprintf(buf, len, "?");
        return 0;
    }
    for (c = 0; c <= CPU_SETSIZE; c++) {
        int in = c < CPU_SETSIZE && CPU_ISSET(c, &set);

        n += in;
        if (in && first < 0) {
            first = c;
        } else if (!in && first >= 0) {
            if (used < len) {
                used += (size_t)snprintf(buf + used, len - used, c - 1 > first ? "%s%d-%d" : "%s%d",
                                         used > 0 ? "," : "", first, c - 1);
            }
            first = -1;
        }
    }
    return n;
}

static void mpi_library(char *buf, size_t len)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;

    MPI_Get_library_version(lib, &n);
    lib[strcspn(lib, "\n,")] = '\0';
    snprintf(buf, len, "%s", lib);
}

int main(int argc, char **argv)
{
    opts_t o;
    char err[256], lib[MPI_MAX_LIBRARY_VERSION_STRING], host[64] = "", my_cpus[64], cpus[2][64];
    int provided, size, local_size, rc, nsizes = 0, i, t, twoway, exit_code = 0, my_ncpus,
        ncpus[2];
    MPI_Comm node;
    uint64_t bytes, sizes[72], *rtt = NULL;
    lat_row_t lat[NLAT];
    bw_row_t *bw[2];
    FILE *json = NULL;
    long long wrong = 0;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rc = parse_options(argc, argv, &o, err, sizeof(err));
    if (rc != 0) {
        if (g_rank == 0) {
            if (rc > 0) {
                usage(stdout);
            } else {
                fprintf(stderr, "tcoll-chan-bench: %s\n", err);
            }
        }
        MPI_Finalize();
        return rc > 0 ? 0 : EXIT_USAGE;
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
    if (size != 2 || local_size != 2) {
        if (g_rank == 0) {
            fprintf(stderr, "tcoll-chan-bench: needs exactly 2 ranks on one node (mpiexec -n 2); "
                    "this job has %d rank%s, %d on this node\n", size, size == 1 ? "" : "s",
                    local_size);
        }
        MPI_Finalize();
        return EXIT_USAGE;
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        if (g_rank == 0) {
            fprintf(stderr, "tcoll-chan-bench: this MPI gives thread level %d, below "
                    "MPI_THREAD_MULTIPLE, which it needs to call MPI while tcoll's engine "
                    "thread runs\n", provided);
        }
        MPI_Finalize();
        return EXIT_FAIL;
    }
    g_peer = 1 - g_rank;
    MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
    rc = 1;
    if (g_rank == 0 && o.json != NULL && (json = fopen(o.json, "w")) == NULL) {
        fprintf(stderr, "tcoll-chan-bench: --json: cannot write '%s': %s\n", o.json,
                strerror(errno));
        rc = 0;
    }
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MIN, g_comm);
    if (!rc) {
        MPI_Comm_free(&g_comm);
        MPI_Finalize();
        return EXIT_USAGE;
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

    chk(tc_init(), "tc_init");
    setup(&o);
    bw[0] = calloc((size_t)nsizes, sizeof(bw_row_t));
    bw[1] = calloc((size_t)nsizes, sizeof(bw_row_t));
    rtt = alloc_or_die(sizeof(uint64_t) * (size_t)o.lat_iters, "round trip times");
    if (bw[0] == NULL || bw[1] == NULL) {
        die("out of memory");
    }

    my_ncpus = cpu_list(my_cpus, sizeof(my_cpus));
    MPI_Gather(my_cpus, (int)sizeof(my_cpus), MPI_CHAR, cpus, (int)sizeof(my_cpus), MPI_CHAR, 0,
               g_comm);
    MPI_Gather(&my_ncpus, 1, MPI_INT, ncpus, 1, MPI_INT, 0, g_comm);
    if (g_rank == 0) {
        gethostname(host, sizeof(host) - 1);
        mpi_library(lib, sizeof(lib));
        printf("# tcoll-chan-bench: tcoll %s vs %s; 2 ranks on %s, %ld CPUs online\n",
               tc_version(), lib, host, sysconf(_SC_NPROCESSORS_ONLN));
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
        printf("# goals (printed, not judged): memory channel signal/wait one-way latency "
               "< 1 us; port channel put\n#   one-way bandwidth >= 80%% of local memcpy at "
               "4 MiB within a node\n");
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

    for (i = 0; i < NLAT; i++) {
        lat[i] = run_latency(&o, (lat_t)i, rtt);
    }
    if (g_rank == 0) {
        print_lat_table(&o, lat);
    }

    for (twoway = 0; twoway < 2; twoway++) {
        if (g_rank == 0) {
            print_bw_header(twoway);
        }
        for (i = 0; i < nsizes; i++) {
            measure_size(&o, sizes[i], twoway, &bw[twoway][i]);
            if (g_rank == 0) {
                print_bw_row(&bw[twoway][i], twoway);
            }
        }
    }
    for (i = 0; i < NLAT; i++) {
        wrong += lat[i].wrong;
    }
    for (twoway = 0; twoway < 2; twoway++) {
        for (i = 0; i < nsizes; i++) {
            for (t = 0; t < NXPORT; t++) {
                wrong += bw[twoway][i].wrong[t];
            }
        }
    }
    if (g_rank == 0) {
        print_goals(lat, bw[0], nsizes);
        if (wrong != 0) {
            printf("\nWRONG: some transfers delivered wrong bytes (see above and stderr)\n");
        }
        if (json != NULL) {
            write_json(json, &o, lat, bw[0], bw[1], nsizes);
            if (fclose(json) != 0) {
                fprintf(stderr, "tcoll-chan-bench: --json: writing '%s' failed\n", o.json);
                exit_code = EXIT_FAIL;
            }
        }
    }
    exit_code = wrong != 0 ? EXIT_FAIL : exit_code;

    teardown();
    chk(tc_shutdown(), "tc_shutdown");
    free(rtt);
    free(bw[0]);
    free(bw[1]);
    MPI_Comm_free(&g_comm);
    MPI_Finalize();
    return exit_code;
}
