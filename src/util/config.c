/*
 * config.c - the table of TCOLL_* knobs and their parser.
 *
 * Adding a knob means adding one row below and one field in tc_config_t;
 * nothing else parses the environment but config_horovod.c, which turns the
 * HOROVOD_* variables with an equivalent into these knobs' values (the
 * loader hands them over; TCOLL_* wins). Bad values warn and keep the default:
 * configuration must never crash the process or silently change meaning.
 * Each row also says whether the knob must have the same value on every
 * rank; the pure half of that check (which values, and the message when they
 * differ) is config_agree.c's, the exchange engine/agree.c's. The row's type
 * (knob_t) is in config_table.h, which those files share.
 */
#define _GNU_SOURCE
#include "util/config.h"
#include "util/config_table.h"

#include "util/log.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

/* The names of the choice knobs, NULL-terminated; index = stored value
 * (config.h's TC_SHM_* and TC_ALGO_* enums follow them). */
static const char *const shm_choices[] = {"auto", "memfd", "posix", "off", NULL};
static const char *const algo_choices[] = {"auto", "ring", "shm", "cma", "hier", NULL};
static const char *const mpi_thread_choices[] = {"funneled", "multiple", NULL};

#define OFF(field) offsetof(tc_config_t, field)
#define FIELD_SIZE(field) ((long)sizeof(((tc_config_t *)0)->field))

static const knob_t knobs[] = {
    {"TCOLL_LOG_LEVEL", KNOB_LEVEL, OFF(log_level), "warn", 0, 0, KNOB_LOCAL,
     "Log verbosity: error, warn, info, debug or trace.", NULL},
    {"TCOLL_IDLE_POLL_MS", KNOB_INT, OFF(idle_poll_ms), "20", 1, 10000, KNOB_LOCAL,
     "How often (ms) an engine thread with nothing pending wakes to check for "
     "control messages from other ranks (a remote shutdown).",
     NULL},
    {"TCOLL_SPIN", KNOB_INT, OFF(spin), "0", 0, 1000000, KNOB_LOCAL,
     "Busy polls (with a cpu pause) before a waiting thread starts to yield. 0 "
     "by default: under KVM, pause loops make the hypervisor deschedule the "
     "vCPU, and yielding polls measured faster. A thread that may run on one "
     "CPU only skips them (the thread it waits for needs that CPU).",
     NULL},
    {"TCOLL_YIELD_US", KNOB_INT, OFF(yield_us), "200", 0, 1000000, KNOB_LOCAL,
     "After spinning, a waiting thread polls with sched_yield for this long (us) "
     "before it starts to sleep: the core goes to any runnable thread, yet a "
     "transfer that completes in microseconds is not slept through.",
     NULL},
    {"TCOLL_BACKOFF_MAX_US", KNOB_INT, OFF(backoff_max_us), "200", 1, 100000, KNOB_LOCAL,
     "Longest sleep (us) between two polls while work is pending; sleeps grow "
     "from 1 us to this cap and reset on progress. After 100 ms without "
     "progress they may grow to 4 ms (a long wait parks nearly idle).",
     NULL},
    {"TCOLL_RING_CHUNK_KB", KNOB_INT, OFF(ring_chunk_kb), "256", 1, 1048576, KNOB_AGREE,
     "Chunk (KiB) in which ring allreduce steps move data, so each chunk is "
     "reduced while still in cache.",
     NULL},
    {"TCOLL_FUSION_THRESHOLD_KB", KNOB_INT, OFF(fusion_threshold_kb), "64", 0, 1048576, KNOB_AGREE,
     "Allreduces of at most this many KiB that rank 0 schedules one after "
     "another with the same dtype and op are packed into one buffer and reduced "
     "as one; 0 turns fusion off.",
     NULL},
    {"TCOLL_FUSION_BUFFER_KB", KNOB_INT, OFF(fusion_buffer_kb), "4096", 1, 1048576, KNOB_AGREE,
     "Largest fused group (KiB); the buffer is kept between steps.", NULL},
    {"TCOLL_EAGER_BYTES", KNOB_INT, OFF(eager_bytes), "16384", 0, 65536, KNOB_AGREE,
     "A cached allreduce of at most this many bytes travels inside the "
     "negotiation messages: in each exchange round the partial results of two "
     "groups of ranks are combined, the lower group's first, so every rank "
     "gets the same bits with the decision to run it: no separate transfer. "
     "An input that waited for other ranks rides once more, in the cycle "
     "after every rank has it. With TCOLL_DETERMINISTIC=1, float sums, "
     "averages and products ride as every rank's input (combined at the end "
     "in the documented order), so up to this many bytes divided by the "
     "number of ranks. 0 turns this off.",
     NULL},
    {"TCOLL_CACHE_CAPACITY", KNOB_INT, OFF(cache_capacity), "1024", 0, 1048576, KNOB_AGREE,
     "Names the response cache holds: a name negotiated once is filed on every "
     "rank, and later submissions with the same parameters skip rank 0's "
     "decision. 0 turns the cache off.",
     NULL},
    {"TCOLL_OUTPUT_POOL_MB", KNOB_INT, OFF(output_pool_mb), "256", 0, 1048576, KNOB_LOCAL,
     "Memory (MiB) of freed allgather outputs (1 MiB and up) kept for reuse by "
     "later allgathers instead of mapping fresh pages; 0 keeps none.",
     NULL},
    {"TCOLL_STALL_WARN_S", KNOB_INT, OFF(stall_warn_s), "60", 0, 86400, KNOB_LOCAL,
     "Rank 0 warns when a tensor has been submitted by some ranks but not all "
     "for this many seconds, listing the ranks that have and have not, and "
     "repeats at this interval while it lasts; 0 turns the warning off.",
     NULL},
    {"TCOLL_STALL_ABORT_S", KNOB_INT, OFF(stall_abort_s), "0", 0, 86400, KNOB_LOCAL,
     "After this many seconds, such a stalled tensor fails on every rank that "
     "submitted it with TC_ERR_TIMEOUT and the same explanation; the engine "
     "goes on. 0 (the default) never fails a stalled tensor.",
     NULL},
    {"TCOLL_PEER_TIMEOUT_S", KNOB_INT, OFF(peer_timeout_s), "60", 1, 86400, KNOB_LOCAL,
     "A rank with work pending that hears nothing from the negotiation for "
     "half this many seconds asks its neighbours in a tree of the ranks "
     "whether they are alive, and the question spreads over the tree; inside "
     "a transfer, a peer that sends nothing this long is asked too. A rank "
     "that does not answer within 2 s is lost: pending requests fail with "
     "TC_ERR_TRANSPORT naming it.",
     NULL},
    {"TCOLL_SHUTDOWN_TIMEOUT_S", KNOB_INT, OFF(shutdown_timeout_s), "30", 1, 86400, KNOB_LOCAL,
     "Longest time tc_shutdown waits for the other ranks to finish the "
     "shutdown handshake; after it, tc_shutdown returns TC_ERR_TIMEOUT and "
     "leaves MPI unfinalized rather than hang.",
     NULL},
    {"TCOLL_TIMELINE", KNOB_STRING, OFF(timeline), "", 0, FIELD_SIZE(timeline), KNOB_LOCAL,
     "Write a Chrome trace (chrome://tracing, Perfetto) of the negotiations "
     "and collectives to this path from tc_init on. With %r in the path (it "
     "becomes the rank) each rank writes a file of its own as it goes; "
     "without %r the job gets one file, in which each rank is a process row: "
     "every rank keeps its part in a temporary file (in $TMPDIR, else /tmp), "
     "and at tc_shutdown rank 0 gathers the parts over MPI and writes it. "
     "Empty: no timeline (tc_timeline_start can still start one).",
     NULL},
    {"TCOLL_SHM", KNOB_CHOICE, OFF(shm), "auto", 0, 0, KNOB_AGREE,
     "The shared-memory segment of the ranks on one node, for the collectives "
     "inside a node: memfd (an anonymous file the other local ranks open "
     "through /proc; never visible in /dev/shm), posix (a 0600 object in "
     "/dev/shm with an unguessable name, unlinked once every local rank has "
     "mapped it), auto (memfd, else posix) or off. If it cannot be set up, "
     "tcoll logs why once and runs over MPI.",
     shm_choices},
    {"TCOLL_SHM_SLOT_KB", KNOB_INT, OFF(shm_slot_kb), "128", 4, 65536, KNOB_AGREE,
     "Size (KiB) of one staging slot in the segment: a shared-memory "
     "allreduce moves a buffer through it in chunks of this size, each local "
     "rank reducing its share of a chunk while it is in cache.",
     NULL},
    {"TCOLL_SHM_SLOTS", KNOB_INT, OFF(shm_slots), "4", 2, 64, KNOB_AGREE,
     "Staging slots per local rank: how many chunks may be in flight at once "
     "(the segment holds local ranks x slots x slot size).",
     NULL},
    {"TCOLL_ALLREDUCE_ALGO", KNOB_CHOICE, OFF(allreduce_algo), "auto", 0, 0, KNOB_AGREE,
     "Allreduce algorithm: ring (point to point: through the segment's "
     "mailboxes to ranks of the same node, over MPI to the others), shm (through the "
     "node's shared-memory segment), cma (reading the other local ranks' "
     "buffers directly with process_vm_readv, where the system allows it, "
     "else shm), hier (across nodes: inside each node through shared memory, "
     "then among one leader per node over MPI, then back inside each node) "
     "or auto (one node: cma from TCOLL_SHM_DIRECT_KB up, shm below; several "
     "nodes: hier). shm and cma run where every rank of the process set is on "
     "one node and the segment is up, hier where the job spans several nodes "
     "and every node with two or more ranks has its segment; else ring. With "
     "TCOLL_DETERMINISTIC=1 every choice gives the same bits (the documented "
     "order); with 0, ring and hier add in their own orders. On one node it also chooses for "
     "allgather, broadcast, reducescatter and alltoall (ring: their MPI "
     "algorithms; hier: as auto), and ring turns the small-message path off.",
     algo_choices},
    {"TCOLL_SHM_DIRECT_KB", KNOB_INT, OFF(shm_direct_kb), "256", 0, 1048576, KNOB_AGREE,
     "With TCOLL_ALLREDUCE_ALGO=auto, collectives inside a node of at least "
     "this many KiB (allreduce and reducescatter: the input; allgather: the "
     "output; broadcast: the buffer; alltoall: the largest rank's input) read "
     "the other ranks' buffers directly (cma) instead of going through the "
     "segment's slots.",
     NULL},
    {"TCOLL_SHM_FAST_BYTES", KNOB_INT, OFF(shm_fast_bytes), "8192", 0, 1048576, KNOB_AGREE,
     "Allreduces of at most this many bytes, of a name that has run once "
     "(and cached), skip the engine thread inside a node: the calling thread "
     "puts its input in the segment and the waiting thread reduces the "
     "ranks' inputs itself. Only when every rank is on one node, for the "
     "global process set. 0 turns this off.",
     NULL},
    {"TCOLL_SHM_FAST_NAMES", KNOB_INT, OFF(shm_fast_names), "256", 0, 65536, KNOB_AGREE,
     "Names that can take that path (the first ones to run; the segment "
     "holds two boxes of TCOLL_SHM_FAST_BYTES per name and local rank: 4 MiB "
     "per local rank by default); later ones go through the engine.",
     NULL},
    {"TCOLL_SHM_FAST_LARGE_BYTES", KNOB_INT, OFF(shm_fast_large_bytes), "131072", 0, 1048576,
     KNOB_AGREE,
     "Larger allreduces, up to this many bytes, take that path too, in boxes "
     "of this size for TCOLL_SHM_FAST_LARGE_NAMES names (the first such names "
     "to run; a name of at most TCOLL_SHM_FAST_BYTES takes one when the small "
     "boxes are all taken). Every rank reduces every rank's input there, so "
     "the boxes hold at most 512 KiB divided by the local ranks (64 KiB at 8). "
     "At most TCOLL_SHM_FAST_BYTES (or 0): none.",
     NULL},
    {"TCOLL_SHM_FAST_LARGE_NAMES", KNOB_INT, OFF(shm_fast_large_names), "32", 0, 4096, KNOB_AGREE,
     "Names that can take the large boxes (two per name and local rank: at "
     "most 8 MiB per local rank by default).",
     NULL},
    {"TCOLL_SHM_FAST_SPIN_US", KNOB_INT, OFF(shm_fast_spin_us), "5", 0, 1000, KNOB_LOCAL,
     "A thread waiting for an allreduce of that path polls without yielding "
     "for up to this long (us) before it backs off as every waiter does, "
     "when the node has at least as many online CPUs as local ranks (with "
     "fewer, a spinning rank would hold back the rank it waits for). 0 turns "
     "it off.",
     NULL},
    {"TCOLL_SHM_P2P_CELL_KB", KNOB_INT, OFF(shm_p2p_cell_kb), "16", 0, 16384, KNOB_AGREE,
     "Size (KiB) of one cell of the segment's point-to-point mailboxes: "
     "every ordered pair of local ranks has a mailbox of 4 cells, through "
     "which the point-to-point algorithms (ring, pairwise, trees) send to a rank "
     "of the same node instead of through MPI; messages of more than two "
     "cells go as one direct read (process_vm_readv) where the system "
     "allows it (TCOLL_ALLREDUCE_ALGO=shm: never; cma: always). The segment holds local ranks squared x 4 "
     "cells; with many local ranks the cells shrink (to no less than 1 KiB) "
     "so that the mailboxes take at most 64 MiB. 0: no mailboxes (those "
     "algorithms use MPI inside a node too).",
     NULL},
    {"TCOLL_DETERMINISTIC", KNOB_INT, OFF(deterministic), "1", 0, 1, KNOB_AGREE,
     "1: every floating-point allreduce and reducescatter sum, average or "
     "product combines the ranks' inputs in one documented order (each "
     "node's ranks left to right, then the nodes in the order of their "
     "lowest rank), so the same inputs give the same bits in every run of "
     "the same layout, whatever the fusion, timing, chunking, algorithm or "
     "path (docs/reproducibility.md); such small allreduces then ride in the "
     "negotiation messages as every rank's input, up to TCOLL_EAGER_BYTES "
     "divided by the number of ranks. 0: the ring and the eager path combine in "
     "their own orders (the same bits on every rank, but not across those "
     "choices). Integers, min and max are exact in any order either way.",
     NULL},
    {"TCOLL_RANKS_PER_NODE", KNOB_INT, OFF(ranks_per_node), "0", 0, 1048576, KNOB_AGREE,
     "Pretend nodes: the ranks of each real node are grouped into nodes of "
     "this many consecutive ranks (the last may hold fewer), and tcoll treats "
     "them as separate nodes: shared memory only inside them, MPI between "
     "them, local_rank and local_size within them. For testing and measuring "
     "the paths across nodes on one machine; 0: the real nodes.",
     NULL},
    {"TCOLL_MPI_THREAD", KNOB_CHOICE, OFF(mpi_thread), "funneled", 0, 0, KNOB_LOCAL,
     "The MPI thread level tc_init asks for when it initializes MPI: funneled "
     "(only the engine thread calls MPI) or multiple (MPI_THREAD_MULTIPLE: "
     "channel proxies call MPI too, which port channels and semaphores "
     "between nodes need; tc_chan_ctx_create refuses a job of several nodes "
     "without it). An application that initializes MPI itself must ask for "
     "MPI_THREAD_MULTIPLE anyway.",
     mpi_thread_choices},
    {"TCOLL_CUDA_IPC", KNOB_INT, OFF(cuda_ipc), "0", 0, 1, KNOB_AGREE,
     "1: an allreduce, broadcast, allgather, reducescatter or alltoall of "
     "CUDA device tensors whose process set is on one node shares the ranks' "
     "device memory through CUDA IPC: for an allreduce each rank combines its "
     "block of every rank's input on its GPU, in the documented order, and "
     "copies the others' blocks; for a reducescatter it combines its block "
     "only; for a broadcast the others copy the root's buffer, for an "
     "allgather every rank copies every rank's input, for an alltoall the "
     "rows every rank sends it (docs/gpu.md). Where the "
     "system refuses IPC the job says so once and stages through host "
     "memory. 0 (the default, until the path has run on a GPU): every device "
     "tensor is staged through host memory.",
     NULL},
    {"TCOLL_CUDA_IPC_MIN_KB", KNOB_INT, OFF(cuda_ipc_min_kb), "256", 0, 1048576, KNOB_AGREE,
     "With TCOLL_CUDA_IPC=1, the smallest device tensor (KiB; an allgather's "
     "output, an alltoall's largest input of any rank) that takes the IPC "
     "path; smaller ones are staged through host memory, "
     "where opening the peers' memory would cost more than the copies.",
     NULL},
    {"TCOLL_MPI_CUDA", KNOB_INT, OFF(mpi_cuda), "1", 0, 1, KNOB_AGREE,
     "1: where every rank's MPI says it is CUDA-aware (Open MPI's "
     "MPIX_Query_cuda_support, MPICH's MPIX_GPU_query_support), CUDA device "
     "tensors that the IPC path does not take go over MPI in device memory: "
     "allgather, broadcast and alltoall always; allreduce and reducescatter "
     "where the documented order is rank order (one node, one rank per node, "
     "integers, min, max, or TCOLL_DETERMINISTIC=0), each rank combining its "
     "block with the combine kernel (docs/gpu.md). 0: device tensors are "
     "never given to MPI (staged through host memory instead).",
     NULL},
    {"TCOLL_CUDA_STAGE_CHUNK_KB", KNOB_INT, OFF(cuda_stage_chunk_kb), "4096", 0, 1048576,
     KNOB_AGREE,
     "A CUDA device allreduce or broadcast larger than this (KiB) that is "
     "staged through host memory goes in chunks of this size, pipelined: the "
     "device-to-host copies of the next chunks and the host-to-device copy of "
     "the last one run while the host collective runs this one, through 4 "
     "page-locked buffers of one chunk (docs/gpu.md). The results are the "
     "same bits. 0: one copy in, the collective, one copy back.",
     NULL},
    {"TCOLL_PROXY_CPUS", KNOB_STRING, OFF(proxy_cpus), "", 0, FIELD_SIZE(proxy_cpus), KNOB_LOCAL,
     "CPUs the default proxy init hook binds its thread to (hwloc list syntax, "
     "e.g. 0-3,8), or NUMA nodes as numa:<nodes>; empty binds nothing (a proxy "
     "for a GPU then binds near the GPU).",
     NULL},
};
#define NKNOBS (sizeof(knobs) / sizeof(knobs[0]))

_Static_assert(NKNOBS <= TC_CONFIG_MAX_KNOBS, "raise TC_CONFIG_MAX_KNOBS");
_Static_assert(sizeof(((tc_config_t *)0)->timeline) <= TC_CONFIG_TEXT_MAX &&
                   sizeof(((tc_config_t *)0)->proxy_cpus) <= TC_CONFIG_TEXT_MAX,
               "a string knob must fit in tc_knob_desc_t.value");

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

/* "a|b|c": a choice knob's names. */
static const char *choice_list(const knob_t *k)
{
    static _Thread_local char buf[128];
    size_t used = 0, i;

    buf[0] = '\0';
    for (i = 0; k->choices[i] != NULL && used < sizeof(buf); i++) {
        int n = snprintf(buf + used, sizeof(buf) - used, "%s%s", i > 0 ? "|" : "", k->choices[i]);
        used += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

const knob_t *tc__config_knob(size_t i)
{
    return i < NKNOBS ? &knobs[i] : NULL;
}

const char *tc__config_choice_name(const knob_t *k, int v)
{
    int i;

    for (i = 0; k->choices[i] != NULL; i++) {
        if (i == v) {
            return k->choices[i];
        }
    }
    return "?";
}

static int set_knob(tc_config_t *cfg, const knob_t *k, const char *text, char *err, size_t errlen)
{
    char *end;
    long v;
    size_t i;

    switch (k->type) {
    case KNOB_INT:
        errno = 0;
        v = strtol(text, &end, 10);
        if (errno != 0 || end == text || *end != '\0' || v < k->min || v > k->max) {
            snprintf(err, errlen, "%s=\"%s\" is not an integer in %ld..%ld", k->name, text, k->min,
                     k->max);
            return -1;
        }
        *(int *)((char *)cfg + k->offset) = (int)v;
        return 0;
    case KNOB_LEVEL:
        for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
            if (strcasecmp(text, level_names[i]) == 0) {
                *(int *)((char *)cfg + k->offset) = (int)i;
                return 0;
            }
        }
        snprintf(err, errlen, "%s=\"%s\" is not one of error, warn, info, debug, trace", k->name,
                 text);
        return -1;
    case KNOB_CHOICE:
        for (i = 0; k->choices[i] != NULL; i++) {
            if (strcasecmp(text, k->choices[i]) == 0) {
                *(int *)((char *)cfg + k->offset) = (int)i;
                return 0;
            }
        }
        snprintf(err, errlen, "%s=\"%s\" is not one of %s", k->name, text, choice_list(k));
        return -1;
    case KNOB_STRING:
        if (strlen(text) >= (size_t)k->max) { /* max: the field's size */
            snprintf(err, errlen, "%s is longer than %ld bytes", k->name, k->max - 1);
            return -1;
        }
        strcpy((char *)cfg + k->offset, text);
        return 0;
    }
    snprintf(err, errlen, "%s: bad knob type", k->name);
    return -1;
}

void tc__config_defaults(tc_config_t *cfg)
{
    char err[256];
    size_t i;

    memset(cfg, 0, sizeof(*cfg));
    for (i = 0; i < NKNOBS; i++) {
        (void)set_knob(cfg, &knobs[i], knobs[i].def, err, sizeof(err));
    }
}

int tc__config_parse_one(tc_config_t *cfg, const char *name, const char *text, char *err,
                         size_t errlen)
{
    size_t i;

    for (i = 0; i < NKNOBS; i++) {
        if (strcmp(knobs[i].name, name) == 0) {
            return set_knob(cfg, &knobs[i], text, err, errlen);
        }
    }
    snprintf(err, errlen, "unknown knob %s", name);
    return -1;
}

static tc_config_state_t live;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

/* The value of env entry e when it is "name=value", else NULL. */
static const char *entry_value(const char *e, const char *name)
{
    size_t n = strlen(name);
    return strncmp(e, name, n) == 0 && e[n] == '=' ? e + n + 1 : NULL;
}

/* The loader's hook for config_horovod.c: knob takes text from HOROVOD_*
 * variable var, unless its own TCOLL_* variable is set (found: TCOLL_* wins).
 * a->st NULL: only the value (the early log level). */
typedef struct {
    tc_config_t *cfg;
    tc_config_state_t *st;
    const char *const *found;
} hvd_arg_t;

static int hvd_set(void *arg, const char *knob, const char *text, size_t var, char *err, size_t len)
{
    const hvd_arg_t *a = arg;
    long k = tc__config_find(knob);

    if (k < 0 || a->found[k] != NULL) {
        return 1;
    }
    if (set_knob(a->cfg, &knobs[k], text, err, len) != 0) {
        return -1;
    }
    if (a->st != NULL) {
        a->st->source[k] = TC_KNOB_ENVIRONMENT;
        a->st->via[k] = (unsigned char)(var + 1);
    }
    return 0;
}

int tc__config_load(tc_config_state_t *st, char *const *env, unsigned flags)
{
    const char *found[NKNOBS];
    char err[512];
    char *const *e;
    size_t i;
    int problems = 0;

    memset(st, 0, sizeof(*st));
    tc__config_defaults(&st->cfg);
    for (i = 0; i < NKNOBS; i++) {
        found[i] = NULL;
        for (e = env; e != NULL && *e != NULL && found[i] == NULL; e++) {
            found[i] = entry_value(*e, knobs[i].name);
        }
    }
    /* The log level first, so the lines below obey it. */
    if (flags & TC_CONFIG_LOAD_SET_LEVEL) {
        tc_config_t scratch = st->cfg;
        for (i = 0; i < NKNOBS; i++) {
            if (knobs[i].type == KNOB_LEVEL && found[i] != NULL) {
                (void)set_knob(&scratch, &knobs[i], found[i], err, sizeof(err));
            }
        }
        if (flags & TC_CONFIG_LOAD_HOROVOD) {
            hvd_arg_t a = {&scratch, NULL, found};
            (void)tc__config_hvd_load(env, "HOROVOD_LOG_LEVEL", 0, hvd_set, &a);
        }
        atomic_store_explicit(&tc__log_level, scratch.log_level, memory_order_relaxed);
    }
    for (i = 0; i < NKNOBS; i++) {
        const char *text = found[i];
        size_t len;
        if (text == NULL) {
            continue;
        }
        if (set_knob(&st->cfg, &knobs[i], text, err, sizeof(err)) == 0) {
            st->source[i] = TC_KNOB_ENVIRONMENT;
            if (flags & TC_CONFIG_LOAD_LOG) {
                TC_INFO("config", "%s=%s (from the environment)", knobs[i].name, text);
            }
            continue;
        }
        problems++;
        len = strlen(text);
        st->rejected[i] = 1;
        st->rejected_len[i] = len;
        if (len >= TC_CONFIG_REJECTED_MAX) {
            len = TC_CONFIG_REJECTED_MAX - 1;
        }
        memcpy(st->rejected_text[i], text, len);
        st->rejected_text[i][len] = '\0';
        if (flags & TC_CONFIG_LOAD_LOG) {
            TC_WARN("config", "%s; keeping the default \"%s\"", err, knobs[i].def);
        }
    }
    if (flags & TC_CONFIG_LOAD_HOROVOD) {
        hvd_arg_t a = {&st->cfg, st, found};
        problems += tc__config_hvd_load(env, NULL, flags & TC_CONFIG_LOAD_LOG, hvd_set, &a);
    }
    for (e = env; e != NULL && *e != NULL; e++) {
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        int known = 0;
        if (strncmp(*e, "TCOLL_", 6) != 0) {
            continue;
        }
        for (i = 0; i < NKNOBS && !known; i++) {
            known = strlen(knobs[i].name) == len && strncmp(knobs[i].name, *e, len) == 0;
        }
        if (!known) {
            problems++;
            if (flags & TC_CONFIG_LOAD_LOG) {
                TC_WARN("config", "unknown variable %.*s ignored (see the README for the knobs)",
                        len > INT_MAX ? INT_MAX : (int)len, *e);
            }
        }
    }
    if (flags & TC_CONFIG_LOAD_SET_LEVEL) {
        atomic_store_explicit(&tc__log_level, st->cfg.log_level, memory_order_relaxed);
    }
    return problems;
}

static void config_load(void)
{
    (void)tc__config_load(&live, environ,
                          TC_CONFIG_LOAD_LOG | TC_CONFIG_LOAD_SET_LEVEL | TC_CONFIG_LOAD_HOROVOD);
}

const tc_config_t *tc__config(void)
{
    pthread_once(&config_once, config_load);
    return &live.cfg;
}

size_t tc__config_count(void)
{
    return NKNOBS;
}

long tc__config_find(const char *name)
{
    size_t i;

    for (i = 0; i < NKNOBS; i++) {
        if (strcmp(knobs[i].name, name) == 0) {
            return (long)i;
        }
    }
    return -1;
}

/* The value of knob k in cfg as text. */
static void value_text(const tc_config_t *cfg, const knob_t *k, char *buf, size_t len)
{
    int v;

    switch (k->type) {
    case KNOB_INT: snprintf(buf, len, "%d", KNOB_INT_AT(cfg, k)); return;
    case KNOB_LEVEL:
        v = KNOB_INT_AT(cfg, k);
        snprintf(buf, len, "%s",
                 v >= 0 && (size_t)v < sizeof(level_names) / sizeof(level_names[0]) ? level_names[v]
                                                                                    : "?");
        return;
    case KNOB_STRING:
        snprintf(buf, len, "%.*s", (int)(k->max - 1), (const char *)cfg + k->offset);
        return;
    case KNOB_CHOICE:
        snprintf(buf, len, "%s", tc__config_choice_name(k, KNOB_INT_AT(cfg, k)));
        return;
    }
    snprintf(buf, len, "?");
}

int tc__config_describe_state(const tc_config_state_t *st, size_t i, tc_knob_desc_t *d)
{
    static const char *const type_names[] = {"int", "level", "string", "choice"};
    const knob_t *k;

    if (i >= NKNOBS) {
        return -1;
    }
    k = &knobs[i];
    memset(d, 0, sizeof(*d));
    d->name = k->name;
    d->type = type_names[k->type];
    value_text(&st->cfg, k, d->value, sizeof(d->value));
    d->def = k->def;
    d->source = st->source[i] == TC_KNOB_ENVIRONMENT ? TC_KNOB_ENVIRONMENT : TC_KNOB_DEFAULT;
    d->source_name = d->source == TC_KNOB_ENVIRONMENT ? "environment" : "default";
    d->via = st->via[i] > 0 ? tc__config_hvd_name((size_t)st->via[i] - 1) : NULL;
    if (st->rejected[i]) {
        d->rejected = st->rejected_text[i];
        d->rejected_len = st->rejected_len[i];
    }
    d->doc = k->doc;
    d->offset = k->offset;
    d->must_agree = k->scope == KNOB_AGREE;
    switch (k->type) {
    case KNOB_INT:
        d->number = KNOB_INT_AT(&st->cfg, k);
        d->min = k->min;
        d->max = k->max;
        d->size = sizeof(int);
        snprintf(d->range, sizeof(d->range), "%ld..%ld", k->min, k->max);
        break;
    case KNOB_LEVEL:
        d->number = KNOB_INT_AT(&st->cfg, k);
        d->min = 0;
        d->max = (long)(sizeof(level_names) / sizeof(level_names[0])) - 1;
        d->size = sizeof(int);
        snprintf(d->range, sizeof(d->range), "error|warn|info|debug|trace");
        break;
    case KNOB_CHOICE:
        d->number = KNOB_INT_AT(&st->cfg, k);
        d->min = 0;
        for (d->max = 0; k->choices[d->max + 1] != NULL; d->max++) {
        }
        d->size = sizeof(int);
        snprintf(d->range, sizeof(d->range), "%s", choice_list(k));
        break;
    case KNOB_STRING:
        d->number = (long)strlen(d->value);
        d->min = 0;
        d->max = k->max - 1;
        d->size = (size_t)k->max;
        snprintf(d->range, sizeof(d->range), "up to %ld bytes", k->max - 1);
        break;
    }
    return 0;
}

int tc__config_describe(size_t i, tc_knob_desc_t *d)
{
    (void)tc__config();
    return tc__config_describe_state(&live, i, d);
}

void tc__config_print(FILE *out, const tc_config_t *cfg)
{
    char text[TC_CONFIG_TEXT_MAX];
    size_t i;

    for (i = 0; i < NKNOBS; i++) {
        const knob_t *k = &knobs[i];
        if (cfg == NULL) {
            /* As in the README: an empty default reads "(empty)", and an
             * integer's doc ends with its range. */
            if (k->def[0] == '\0') {
                fprintf(out, "| `%s` | (empty) | %s", k->name, k->doc);
            } else {
                fprintf(out, "| `%s` | `%s` | %s", k->name, k->def, k->doc);
            }
            if (k->type == KNOB_INT) {
                fprintf(out, " %ld..%ld.", k->min, k->max);
            } else if (k->type == KNOB_CHOICE) {
                fprintf(out, " %s.", choice_list(k));
            }
            fprintf(out, " | %s |\n", k->scope == KNOB_AGREE ? "yes" : "no");
        } else {
            value_text(cfg, k, text, sizeof(text));
            fprintf(out, "%-22s %s\n", k->name, text);
        }
    }
}
