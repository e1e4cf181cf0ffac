/*
 * test_stall.c - the stall inspector (np >= 2). The last rank withholds a
 * tensor that every other rank has submitted; one case per run (each needs
 * its own environment, set by the CTest), chosen with --case:
 *
 *   warn   (TCOLL_STALL_WARN_S=1) the last rank submits it after 2.5 s.
 *          Rank 0's log (its stderr, captured in a file) must list the
 *          tensor, the ranks that submitted it and the one missing, once for
 *          a first-time name and once for a cached one; then every request
 *          succeeds with the right sum.
 *   abort  (TCOLL_STALL_WARN_S=1, TCOLL_STALL_ABORT_S=2) the last rank never
 *          submits it. Every other rank's request fails with TC_ERR_TIMEOUT
 *          and a message naming the tensor and the missing rank, for a
 *          first-time name and for a cached one; the engine goes on (later
 *          collectives succeed, on every rank), and a name that stalled can
 *          be used again by everyone.
 */
#define _GNU_SOURCE

#include "mpi_common.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#define ABORT_S 2 /* TCOLL_STALL_ABORT_S in the abort variant (tests/mpi/CMakeLists.txt) */

static const char *g_mode = "?";
static char g_log[256];
static int g_saved_stderr = -1;

/* A failed check aborts: show what went to the captured stderr (the check's
 * message included) on the real one first. Async-signal-safe calls only. */
static void dump_log(int sig)
{
    char buf[4096];
    ssize_t n;
    int fd = open(g_log, O_RDONLY);

    if (fd >= 0 && g_saved_stderr >= 0) {
        while ((n = read(fd, buf, sizeof buf)) > 0) {
            if (write(g_saved_stderr, buf, (size_t)n) < 0) {
                break;
            }
        }
        close(fd);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Rank 0's stderr goes to a file so the test can read what tcoll logged. */
static void capture_stderr(void)
{
    int fd;

    tt_own_log_path(g_log, sizeof g_log, "tcoll-test-stall");
    fd = open(g_log, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND, 0600);
    CHECK(fd >= 0);
    fflush(stderr);
    g_saved_stderr = dup(2);
    CHECK(g_saved_stderr >= 0);
    CHECK(dup2(fd, 2) == 2);
    close(fd);
    signal(SIGABRT, dump_log);
}

static char *read_log(void)
{
    FILE *f = fopen(g_log, "r");
    char *text;
    long n;

    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    text = tt_xmalloc((size_t)n + 1);
    CHECK_EQ((long)fread(text, 1, (size_t)n, f), n);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* "ranks 0-1" / "rank 0": how the inspector lists ranks 0..L-1. */
static void submitters(char *out, size_t len)
{
    int L = tt_size - 1;
    if (L == 1) {
        snprintf(out, len, "submitted by rank 0;");
    } else {
        snprintf(out, len, "submitted by ranks 0-%d;", L - 1);
    }
}

static tc_request_t *submit(const char *name, const float *in, float *out)
{
    tc_tensor_t t = {(void *)in, TC_FLOAT32, 1, {3}};
    tc_request_t *req = NULL;
    CHECK_OK(tc_allreduce(name, &t, out, TC_SUM, &req));
    return req;
}

/* An allreduce every rank joins at once: must succeed with the right sum. */
static void good(const char *name)
{
    float in[3] = {(float)tt_rank, 1, 2}, out[3] = {-1, -1, -1};
    tc_request_t *req = submit(name, in, out);
    CHECK_MSG(tc_wait(req) == TC_OK, "'%s': %s", name, tc_request_error(req));
    CHECK(out[0] == (float)(tt_size * (tt_size - 1) / 2) && out[1] == (float)tt_size &&
          out[2] == (float)(2 * tt_size));
    tc_request_free(req);
}

/* The last rank submits name only after delay_ms, or never (delay_ms < 0;
 * it then waits ABORT_S + 1 s, so that the others have had their timeout
 * before it submits anything else: a tensor one rank submits ABORT_S before
 * another is failed as stalled too, by design). */
static void withheld(const char *name, long delay_ms, int expect_timeout)
{
    const int L = tt_size - 1;
    float in[3] = {1, 1, 1}, out[3] = {-1, -1, -1};
    tc_request_t *req;
    tc_status_t st;
    char want[160];

    if (tt_rank == L) {
        if (delay_ms < 0) {
            tt_sleep_ms((ABORT_S + 1) * 1000);
            return;
        }
        tt_sleep_ms(delay_ms);
    }
    req = submit(name, in, out);
    st = tc_wait(req);
    if (!expect_timeout) {
        CHECK_MSG(st == TC_OK, "'%s': %s (%s)", name, tc_status_string(st), tc_request_error(req));
        CHECK(out[0] == (float)tt_size);
    } else {
        CHECK_MSG(st == TC_ERR_TIMEOUT, "'%s': %s (%s), want a timeout", name, tc_status_string(st),
                  tc_request_error(req));
        snprintf(want, sizeof want, "tensor '%s' (allreduce) stalled for", name);
        CHECK_MSG(strstr(tc_request_error(req), want) != NULL, "'%s': message '%s'", name,
                  tc_request_error(req));
        snprintf(want, sizeof want, "not by rank %d", L);
        CHECK_MSG(strstr(tc_request_error(req), want) != NULL, "'%s': message '%s'", name,
                  tc_request_error(req));
    }
    tc_request_free(req);
}

/* The kinds beyond allreduce stall and expire the same way: a
 * reducescatter, an alltoall, a grouped pair and a join the last rank never
 * submits; every member of the group fails, and the join's ranks are no
 * longer joined (the names after it run with every rank). */
static void withheld_new_kinds(void)
{
    const int L = tt_size - 1;
    float in[64] = {0};
    tc_tensor_t t = {in, TC_FLOAT32, 1, {tt_size}};
    const char *gnames[2] = {"st/g/0", "st/g/1"};
    tc_tensor_t gt[2] = {t, t};
    float gout[2][64];
    void *grecv[2] = {gout[0], gout[1]};
    tc_request_t *req[5];
    static const char *const what[5][2] = {{"st/rs", "reducescatter"},
                                           {"st/a2a", "alltoall"},
                                           {"st/g/0", "allreduce"},
                                           {"st/g/1", "allreduce"},
                                           {"tcoll/join/0", "join"}};
    char want[160];
    int k;

    if (tt_rank == L) {
        tt_sleep_ms((ABORT_S + 1) * 1000);
        return;
    }
    CHECK_OK(tc_reducescatter("st/rs", &t, TC_SUM, &req[0]));
    CHECK_OK(tc_alltoall("st/a2a", &t, NULL, &req[1]));
    CHECK_OK(tc_grouped_allreduce(2, gnames, gt, grecv, TC_SUM, NULL, &req[2]));
    CHECK_OK(tc_join(&req[4]));
    for (k = 0; k < 5; k++) {
        CHECK_EQ(tc_wait(req[k]), TC_ERR_TIMEOUT);
        snprintf(want, sizeof want, "tensor '%s' (%s) stalled for", what[k][0], what[k][1]);
        CHECK_MSG(strstr(tc_request_error(req[k]), want) != NULL, "'%s': message '%s'", what[k][0],
                  tc_request_error(req[k]));
        tc_request_free(req[k]);
    }
}

static void check_warned(const char *log, const char *name)
{
    char want[160], who[64], *at;

    snprintf(want, sizeof want, "'%s' (allreduce): waiting ", name);
    at = strstr(log, want);
    CHECK_MSG(at != NULL, "no stall warning for '%s' in rank 0's log:\n%s", name, log);
    submitters(who, sizeof who);
    CHECK_MSG(strstr(at, who) != NULL, "warning for '%s' lacks '%s':\n%s", name, who, log);
    snprintf(want, sizeof want, "missing rank %d", tt_size - 1);
    CHECK_MSG(strstr(at, want) != NULL, "warning for '%s' lacks '%s':\n%s", name, want, log);
}

/* Before tc_init (the engine thread logs from the start): rank 0's stderr
 * goes to a file. */
static void capture_rank0_stderr(void)
{
    if (getenv("OMPI_COMM_WORLD_RANK") != NULL && atoi(getenv("OMPI_COMM_WORLD_RANK")) == 0) {
        capture_stderr();
    } else if (getenv("PMI_RANK") != NULL && atoi(getenv("PMI_RANK")) == 0) {
        capture_stderr();
    }
}

/* Every rank runs "st/cached" three times: from then on it is a cached name. */
static void cache_a_name(void)
{
    CHECK_MSG(tt_size >= 2, "test_stall needs 2 or more ranks");
    for (int k = 0; k < 3; k++) {
        good("st/cached"); /* filed in the response cache from now on */
    }
}

/* TCOLL_STALL_WARN_S=1: the last rank submits 2.5 s late, a first-time name
 * and a cached one; rank 0's log warns about both. */
TC_CASE(warn)
{
    g_mode = "warn";
    cache_a_name();
    withheld("st/first-time", 2500, 0);
    withheld("st/cached", 2500, 0);
    good("st/after");
    if (tt_rank == 0) {
        char *log = read_log();
        check_warned(log, "st/first-time");
        check_warned(log, "st/cached");
        free(log);
    }
}

/* TCOLL_STALL_WARN_S=1, TCOLL_STALL_ABORT_S=2: the last rank never submits,
 * the others time out; the engine and the names go on. */
TC_CASE(abort)
{
    g_mode = "abort";
    cache_a_name();
    withheld("st/first-time", -1, 1);
    good("st/after-1");
    withheld("st/cached", -1, 1);
    good("st/after-2");
    good("st/cached"); /* everyone again: it works as before */
    good("st/first-time");
    withheld_new_kinds();
    good("st/after-3");
    if (tt_rank == 0) {
        char *log = read_log();
        CHECK_MSG(strstr(log, "failing it with TC_ERR_TIMEOUT") != NULL,
                  "rank 0's log does not say it failed the stalled tensors:\n%s", log);
        free(log);
    }
}

/* After tc_shutdown: what tcoll logged on rank 0, for the test's output. */
static void show_rank0_log(void)
{
    if (tt_rank == 0) {
        char *log = read_log();
        fflush(stderr);
        dup2(g_saved_stderr, 2); /* what tcoll logged, for the test's output */
        fputs(log, stderr);
        free(log);
        unlink(g_log);
        printf("test_stall %s: OK on %d ranks\n", g_mode, tt_size);
    }
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv,
                       &(tt_program_t){.one_case_per_run = 1,
                                       .before_init = capture_rank0_stderr,
                                       .after_shutdown = show_rank0_log});
}
