/*
 * config.h - every TCOLL_* knob, from one table.
 *
 * The table (config.c) drives environment parsing, the README's knob table
 * and tcoll-info. Values are read once, on first use, and never change after.
 * Each knob also remembers where its value came from (its default or the
 * environment) and, when the environment's text was rejected, that text.
 */
#ifndef TC_UTIL_CONFIG_H
#define TC_UTIL_CONFIG_H

#include <stddef.h>
#include <stdio.h>

typedef struct tc_config {
    int log_level;            /* TCOLL_LOG_LEVEL */
    int idle_poll_ms;         /* TCOLL_IDLE_POLL_MS */
    int spin;                 /* TCOLL_SPIN */
    int backoff_max_us;       /* TCOLL_BACKOFF_MAX_US */
    int yield_us;             /* TCOLL_YIELD_US */
    int ring_chunk_kb;        /* TCOLL_RING_CHUNK_KB */
    int output_pool_mb;       /* TCOLL_OUTPUT_POOL_MB */
    int fusion_threshold_kb;  /* TCOLL_FUSION_THRESHOLD_KB */
    int fusion_buffer_kb;     /* TCOLL_FUSION_BUFFER_KB */
    int cache_capacity;       /* TCOLL_CACHE_CAPACITY */
    int eager_bytes;          /* TCOLL_EAGER_BYTES */
    int stall_warn_s;         /* TCOLL_STALL_WARN_S */
    int stall_abort_s;        /* TCOLL_STALL_ABORT_S */
    int peer_timeout_s;       /* TCOLL_PEER_TIMEOUT_S */
    int shutdown_timeout_s;   /* TCOLL_SHUTDOWN_TIMEOUT_S */
    int shm;                  /* TCOLL_SHM: tc_shm_mode_t */
    int shm_slot_kb;          /* TCOLL_SHM_SLOT_KB */
    int shm_slots;            /* TCOLL_SHM_SLOTS */
    int allreduce_algo;       /* TCOLL_ALLREDUCE_ALGO: tc_algo_choice_t */
    int shm_direct_kb;        /* TCOLL_SHM_DIRECT_KB */
    int ranks_per_node;       /* TCOLL_RANKS_PER_NODE */
    int deterministic;        /* TCOLL_DETERMINISTIC */
    int shm_fast_bytes;       /* TCOLL_SHM_FAST_BYTES */
    int shm_fast_names;       /* TCOLL_SHM_FAST_NAMES */
    int shm_fast_large_bytes; /* TCOLL_SHM_FAST_LARGE_BYTES */
    int shm_fast_large_names; /* TCOLL_SHM_FAST_LARGE_NAMES */
    int shm_fast_spin_us;     /* TCOLL_SHM_FAST_SPIN_US */
    int shm_p2p_cell_kb;      /* TCOLL_SHM_P2P_CELL_KB */
    int mpi_thread;           /* TCOLL_MPI_THREAD: 0 funneled, 1 multiple */
    int cuda_ipc;             /* TCOLL_CUDA_IPC */
    int cuda_ipc_min_kb;      /* TCOLL_CUDA_IPC_MIN_KB */
    int cuda_stage_chunk_kb;  /* TCOLL_CUDA_STAGE_CHUNK_KB */
    int mpi_cuda;             /* TCOLL_MPI_CUDA */
    char timeline[1024];      /* TCOLL_TIMELINE */
    char proxy_cpus[256];     /* TCOLL_PROXY_CPUS */
} tc_config_t;

/* TCOLL_SHM's values, in the order of its names in config.c. */
typedef enum { TC_SHM_AUTO, TC_SHM_MEMFD, TC_SHM_POSIX, TC_SHM_OFF } tc_shm_mode_t;
/* TCOLL_*_ALGO's values, in the order of their names in config.c. */
typedef enum {
    TC_ALGO_AUTO,
    TC_ALGO_RING,
    TC_ALGO_SHM,
    TC_ALGO_CMA,
    TC_ALGO_HIER
} tc_algo_choice_t;

/* Loads the table from the environment on first call (thread-safe); then
 * returns the same values. Logs overrides at info level and warns about
 * unknown TCOLL_* variables and bad values (which keep the default). */
const tc_config_t *tc__config(void);

/* Parses one knob's text into a scratch config; 0 on success, -1 with a
 * message in err on a bad value or unknown name (cfg is then unchanged).
 * Used by the loader, tests and the fuzzer. */
int tc__config_parse_one(tc_config_t *cfg, const char *name, const char *text, char *err,
                         size_t errlen);
void tc__config_defaults(tc_config_t *cfg);

/* Writes the knob table as the README's Markdown rows (name, default, doc and
 * range) when cfg is NULL, or "NAME value" lines with cfg's values. */
void tc__config_print(FILE *out, const tc_config_t *cfg);

/* ------------------------------------------------------------------------ */
/* Where each value came from                                                */
/* ------------------------------------------------------------------------ */

#define TC_CONFIG_MAX_KNOBS 48     /* room in tc_config_state_t (the table has fewer) */
#define TC_CONFIG_REJECTED_MAX 256 /* bytes kept of a rejected value, NUL included */
#define TC_CONFIG_TEXT_MAX 1024    /* any knob's value as text, NUL included */

typedef enum {
    TC_KNOB_DEFAULT = 0,    /* not set, or set to a rejected value */
    TC_KNOB_ENVIRONMENT = 1 /* set, and accepted */
} tc_knob_source_t;

/* A loaded configuration and, per knob in table order, its source. */
typedef struct {
    tc_config_t cfg;
    unsigned char source[TC_CONFIG_MAX_KNOBS]; /* a tc_knob_source_t */
    /* from the environment through a HOROVOD_* variable: 1 + its index
     * (tc__config_hvd_name); 0: its own TCOLL_* variable, or the default */
    unsigned char via[TC_CONFIG_MAX_KNOBS];
    unsigned char rejected[TC_CONFIG_MAX_KNOBS]; /* 1: the environment's text was rejected */
    size_t rejected_len[TC_CONFIG_MAX_KNOBS];    /* that text's full length in bytes */
    /* Its first TC_CONFIG_REJECTED_MAX - 1 bytes, NUL-terminated. */
    char rejected_text[TC_CONFIG_MAX_KNOBS][TC_CONFIG_REJECTED_MAX];
} tc_config_state_t;

enum {
    TC_CONFIG_LOAD_LOG = 1,       /* log overrides (info), bad values and unknown TCOLL_* (warn) */
    TC_CONFIG_LOAD_SET_LEVEL = 2, /* set the log level from TCOLL_LOG_LEVEL before logging */
    TC_CONFIG_LOAD_HOROVOD = 4    /* also the HOROVOD_* variables with a tcoll equivalent
                                   * (config_horovod.c), for knobs whose TCOLL_* is unset */
};

/* Fills st from defaults and an environment-style array of "NAME=value"
 * strings (NULL-terminated; env itself may be NULL). For each knob the first
 * entry named after it counts, as with getenv; an entry without '=' sets
 * nothing. Touches no global state unless flags ask for it. Returns the
 * number of rejected values (HOROVOD_* ones included) plus unknown TCOLL_*
 * names. tc__config() is this on environ with every flag. */
int tc__config_load(tc_config_state_t *st, char *const *env, unsigned flags);

/* One knob described, for tcoll-info, tests and the fuzzer. */
typedef struct {
    const char *name;
    const char *type;               /* "int", "level", "string" or "choice" */
    char value[TC_CONFIG_TEXT_MAX]; /* the value in effect, as text */
    long number;                    /* int and level: the value; string: its length */
    const char *def;                /* the default, as text */
    tc_knob_source_t source;
    const char *source_name; /* "default" or "environment" */
    const char *via;         /* environment: the HOROVOD_* variable it came from, or NULL */
    const char *rejected;    /* NULL, or the rejected text (see rejected_len) */
    size_t rejected_len;     /* its full length: more than strlen(rejected) when cut */
    const char *doc;
    long min, max;       /* int: the range; level: 0..4; string: 0..longest */
    char range[64];      /* the same as text: "1..10000", "error|warn|...",
                                        "up to 1023 bytes" */
    size_t offset, size; /* where the value lives in tc_config_t */
    int must_agree;      /* 1: must be the same on every rank (see below) */
} tc_knob_desc_t;

size_t tc__config_count(void);
/* Describes knob i (table order) of the live configuration (loading it on
 * first use), or of st; 0, or -1 when i is out of range. */
int tc__config_describe(size_t i, tc_knob_desc_t *d);
int tc__config_describe_state(const tc_config_state_t *st, size_t i, tc_knob_desc_t *d);
/* The index of the knob with this name, or -1. */
long tc__config_find(const char *name);

/* ------------------------------------------------------------------------ */
/* HOROVOD_* variables (config_horovod.c)                                    */
/* ------------------------------------------------------------------------ */

/* The HOROVOD_* variables tcoll reads, each turned into values of TCOLL_*
 * knobs; a knob whose TCOLL_* variable is set keeps that value. */
#define TC_CONFIG_HVD_MAX_SETS 2 /* knobs one variable sets at most */

typedef struct {
    const char *knob;              /* the TCOLL_* knob */
    char text[TC_CONFIG_TEXT_MAX]; /* its value, as its own variable would give it */
} tc_config_hvd_set_t;

size_t tc__config_hvd_count(void);
/* Variable i's name (table order, the order they apply in), or NULL. */
const char *tc__config_hvd_name(size_t i);
/* Converts variable i's text into sets[0..n): returns n (0: it sets
 * nothing, e.g. HOROVOD_STALL_CHECK_DISABLE=0), or -1 with why (a phrase
 * after the value, "is not an integer in 0..86400") for a bad value. */
int tc__config_hvd_convert(size_t i, const char *text, tc_config_hvd_set_t *sets, char *why,
                           size_t len);

/* The loader's part (config.c calls it, for knobs whose TCOLL_* variable is
 * unset): each variable of the table set in env (the first entry of its
 * name, as getenv finds it; only: that one alone), converted and handed to
 * set(arg, knob, text, i, err, len), which returns 0 (taken), 1 (not taken:
 * the TCOLL_* variable is set) or -1 (refused, err says why). With log, a
 * bad value is warned about naming the HOROVOD_* variable (it sets
 * nothing), and what it set or could not set is logged at info. Returns
 * the number of bad values. */
typedef int (*tc_config_hvd_set_fn)(void *arg, const char *knob, const char *text, size_t var,
                                    char *err, size_t len);
int tc__config_hvd_load(char *const *env, const char *only, int log, tc_config_hvd_set_fn set,
                        void *arg);

/* ------------------------------------------------------------------------ */
/* Knobs that must agree across ranks                                        */
/* ------------------------------------------------------------------------ */

/* Some knobs decide what a rank sends and receives, or how it groups and
 * schedules work (the ring chunk, fusion, eager inputs, the cache): every
 * rank must run with the same value. The table marks them; tc_init exchanges
 * every rank's values once (engine/agree.c) and fails on every rank when one
 * differs. These are the pure halves (config_agree.c): no MPI. */

#define TC_CONFIG_AGREE_MAX 24 /* slots per rank in the exchanged array */
#define TC_CONFIG_AGREE_MSG_MAX                                                                    \
    440 /* longest message, NUL included: with a
                                        "tc_init: " prefix it fits tc_last_error */

/* The number of knobs marked "must agree" (at most TC_CONFIG_AGREE_MAX). */
size_t tc__config_agree_count(void);

/* Writes cfg's values of the must-agree knobs, in table order, into
 * vals[0..tc__config_agree_count()) and zeroes the rest of the
 * TC_CONFIG_AGREE_MAX slots. */
void tc__config_agree_values(const tc_config_t *cfg, int vals[TC_CONFIG_AGREE_MAX]);

/* Given every rank's values (rank r's array at all[r * TC_CONFIG_AGREE_MAX]),
 * returns the number of must-agree knobs whose value is not the same on all
 * nranks ranks (0: they agree, and msg is ""). Otherwise msg names each such
 * knob in table order with its values, in the order of the lowest rank that
 * has each, and the ranks that have it, e.g. "TCOLL_RING_CHUNK_KB differs
 * across ranks: 256 on ranks 0,2-3, 128 on rank 1 (must be the same on every
 * rank)". At most three values per knob and about forty characters of ranks
 * per value are listed, and at most min(len, TC_CONFIG_AGREE_MSG_MAX) bytes
 * are written; knobs that do not fit are counted at the end. The text depends
 * only on the input, so every rank writes the same. */
int tc__config_agree_check(const int *all, int nranks, char *msg, size_t len);

#endif
