/*
 * test_knob_agree.c - knobs that must be the same on every rank are compared
 * at tc_init. One variant per run, chosen by argv[1] (tc_init can be called
 * only once per process):
 *
 *   differ      the application initializes MPI (MPI_THREAD_MULTIPLE); rank 1
 *               sets TCOLL_RING_CHUNK_KB=128 (the others keep 256) and, with
 *               3 ranks or more, the last rank TCOLL_FUSION_BUFFER_KB=1024;
 *               every rank also sets TCOLL_SPIN to its own rank, a knob that
 *               may differ. tc_init must fail on every rank with TC_ERR_ARG
 *               and the same message, which names the two knobs, their values
 *               and ranks, and not TCOLL_SPIN; tcoll stays uninitialized and
 *               MPI stays the application's and usable.
 *   differ-own  the same disagreement, but tc_init initializes MPI itself (the
 *               rank comes from the launcher's environment): the same failure,
 *               and tcoll has finalized MPI again.
 *   agree       every rank sets TCOLL_RING_CHUNK_KB=64 (not the default) and
 *               TCOLL_SPIN to its rank: tc_init succeeds and an allreduce of
 *               several 64 KiB chunks gives the exact sums.
 *
 * The knobs are set with setenv before tc_init: tcoll reads them there.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include "mpi_common.h"

#define MSG_LEN 1024

/* The first of the launcher's variables that is set, as a number; -1 if
 * none (for a process that has not initialized MPI). */
static int launcher_var(const char *const *vars, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && v[0] != '\0') {
            return atoi(v);
        }
    }
    return -1;
}

static void set_knob(const char *name, int value)
{
    char text[32];
    snprintf(text, sizeof(text), "%d", value);
    CHECK_EQ(setenv(name, text, 1), 0);
}

/* The disagreement of the differ variants, set on this rank. */
static void set_differing(int rank, int size)
{
    set_knob("TCOLL_SPIN", rank); /* may differ: never named */
    if (rank == 1) {
        set_knob("TCOLL_RING_CHUNK_KB", 128);
    }
    if (size >= 3 && rank == size - 1) {
        set_knob("TCOLL_FUSION_BUFFER_KB", 1024);
    }
}

/* tc_init fails with TC_ERR_ARG and the message every rank must write. */
static void check_failed_init(int rank, int size, char *msg)
{
    CHECK_STATUS(tc_init(), TC_ERR_ARG);
    snprintf(msg, MSG_LEN, "%s", tc_last_error());
    if (size == 2) {
        CHECK_MSG(strcmp(msg, "tc_init: TCOLL_RING_CHUNK_KB differs across ranks: 256 on rank 0, "
                              "128 on rank 1 (must be the same on every rank)") == 0,
                  "rank %d: %s", rank, msg);
    } else if (size == 3) {
        CHECK_MSG(strcmp(msg, "tc_init: TCOLL_RING_CHUNK_KB differs across ranks: 256 on ranks "
                              "0,2, 128 on rank 1; TCOLL_FUSION_BUFFER_KB differs across ranks: "
                              "4096 on ranks 0-1, 1024 on rank 2 (must be the same on every "
                              "rank)") == 0,
                  "rank %d: %s", rank, msg);
    } else {
        CHECK_STR_CONTAINS(msg, "tc_init: TCOLL_RING_CHUNK_KB differs across ranks: 256 on ranks "
                                "0,2-");
        CHECK_STR_CONTAINS(msg, ", 128 on rank 1; TCOLL_FUSION_BUFFER_KB differs across ranks: "
                                "4096 on ranks 0-");
    }
    CHECK_MSG(strstr(msg, "TCOLL_SPIN") == NULL, "names a knob that may differ: %s", msg);
    /* tcoll did not start, and cannot start again. */
    CHECK_EQ(tc_rank(), -1);
    CHECK_EQ(tc_size(), -1);
    CHECK_STATUS(tc_shutdown(), TC_ERR_STATE);
    CHECK_STATUS(tc_init(), TC_ERR_STATE);
}

static int run_differ(void)
{
    int provided = 0, rank, size, r;
    static char msg[MSG_LEN];
    char *gathered = NULL;

    MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE || size < 2) {
        if (rank == 0) {
            printf("test_knob_agree differ: %s; skipped\n",
                   size < 2 ? "one rank cannot disagree" : "no MPI_THREAD_MULTIPLE");
        }
        MPI_Finalize();
        return 0;
    }
    set_differing(rank, size);
    check_failed_init(rank, size, msg);

    /* MPI is still the application's: the same message on every rank. */
    if (rank == 0) {
        gathered = calloc((size_t)size, MSG_LEN);
        CHECK(gathered != NULL);
    }
    MPI_Gather(msg, MSG_LEN, MPI_CHAR, gathered, MSG_LEN, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (r = 1; r < size; r++) {
            CHECK_MSG(strcmp(gathered + (size_t)r * MSG_LEN, msg) == 0,
                      "rank %d says '%s', rank 0 '%s'", r, gathered + (size_t)r * MSG_LEN, msg);
        }
        free(gathered);
        printf("test_knob_agree differ: every rank of %d: %s\n", size, msg);
    }
    {
        int fin = 1;
        MPI_Finalized(&fin);
        CHECK_MSG(fin == 0, "tcoll finalized MPI that the application initialized");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}

static int run_differ_own(void)
{
    static const char *const rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK"};
    static const char *const size_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
    static char msg[MSG_LEN];
    int rank = launcher_var(rank_vars, 2), size = launcher_var(size_vars, 2), fin = 0;

    if (rank < 0 || size < 2) {
        printf("test_knob_agree differ-own: %s; skipped\n",
               rank < 0 ? "the launcher exported no rank" : "one rank cannot disagree");
        return 0;
    }
    set_differing(rank, size);
    check_failed_init(rank, size, msg);
    MPI_Finalized(&fin); /* callable at any time */
    CHECK_MSG(fin == 1, "tcoll initialized MPI but did not finalize it after failing");
    if (rank == 0) {
        printf("test_knob_agree differ-own: %s\n", msg);
    }
    return 0;
}

static int run_agree(void)
{
    enum { N = 100003 }; /* about 6 chunks of 64 KiB, and a prime */
    int provided = 0, rank, size, i;
    int32_t *in = malloc(N * sizeof(*in)), *out = malloc(N * sizeof(*out));
    tc_tensor_t t = {in, TC_INT32, 1, {N}};
    tc_request_t *req = NULL;
    tc_status_t st;

    CHECK(in != NULL && out != NULL);
    MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) {
            printf("test_knob_agree agree: no MPI_THREAD_MULTIPLE; skipped\n");
        }
        MPI_Finalize();
        return 0;
    }
    set_knob("TCOLL_RING_CHUNK_KB", 64);
    set_knob("TCOLL_SPIN", rank);
    CHECK_OK(tc_init());
    CHECK_EQ(tc_rank(), rank);
    for (i = 0; i < N; i++) {
        in[i] = rank * 1000 + i % 997;
    }
    CHECK_OK(tc_allreduce("agree/ar", &t, out, TC_SUM, &req));
    st = tc_wait(req);
    CHECK_MSG(st == TC_OK, "%s: %s", tc_status_string(st), tc_request_error(req));
    tc_request_free(req);
    for (i = 0; i < N; i++) {
        CHECK_EQ(out[i], 1000 * size * (size - 1) / 2 + size * (i % 997));
    }
    MPI_Barrier(MPI_COMM_WORLD); /* nobody shuts down while others still work */
    CHECK_OK(tc_shutdown());
    if (rank == 0) {
        printf("test_knob_agree agree: TCOLL_RING_CHUNK_KB=64 on %d ranks, allreduce exact\n",
               size);
    }
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}

int main(int argc, char **argv)
{
    CHECK_MSG(argc == 2, "usage: %s differ|differ-own|agree", argv[0]);
    if (strcmp(argv[1], "differ") == 0) {
        return run_differ();
    }
    if (strcmp(argv[1], "differ-own") == 0) {
        return run_differ_own();
    }
    CHECK_MSG(strcmp(argv[1], "agree") == 0, "unknown variant '%s'", argv[1]);
    return run_agree();
}
