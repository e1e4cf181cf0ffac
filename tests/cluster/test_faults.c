/*
 * test_faults.c - the job's side of the emulated cluster's fault tests
 * (faults.sh makes the faults; tools/cluster/emu.sh the hosts). One case
 * per run, chosen with --case; the arguments are MARKER, a path in the
 * hosts' shared /tmp, and GONE, the ranks of the host the fault hits
 * ("2-3"):
 *
 *   lose  steps until the job fails: faults.sh kills every process of a host
 *         or cuts its link for good, once rank 0 has written MARKER.steps
 *         (mid-step from then on). Every rank that still runs must fail with
 *         TC_ERR_TRANSPORT within the bound the README gives, naming exactly
 *         the ranks on the other side: GONE for the others, the others for
 *         a rank of GONE (its link was cut, so it finds itself alone); later
 *         submissions fail at once and tc_shutdown returns promptly. Each
 *         prints one "survived" line; faults.sh counts them.
 *   flap  steps on while faults.sh cuts GONE's link and restores it within
 *         the peer timeout; after MARKER.restored appears, ten more steps.
 *         Every step must succeed with the exact results: the job survives.
 *   loss  STEPS steps (the third argument) on a link that drops packets:
 *         slower, and still exact.
 *
 * A step is an allreduce of 4 MiB (across hosts: the hierarchical path), an
 * allgather of 64 KiB and a 4-byte allreduce (the small-message path inside
 * a host), every value an integer, so each result is exact and known.
 */
#define _GNU_SOURCE

#include "mpi_common.h"

#include <sys/stat.h>

#define BIG (1u << 20)     /* floats in the allreduce: 4 MiB */
#define GATHER (16u << 10) /* floats from each rank in the allgather: 64 KiB */
#define GRACE_S 2.0        /* a probed rank's time to answer (the README) */
#define MARGIN_S 15.0      /* scheduling on an oversubscribed machine */

static float *big_in, *big_out, *gat_in;

static double peer_timeout_s(void)
{
    const char *v = getenv("TCOLL_PEER_TIMEOUT_S");
    return v != NULL ? atof(v) : 60.0;
}

/* "LO-HI" or "R" into [*lo, *hi]. */
static void parse_gone(const char *s, int *lo, int *hi)
{
    char *end;

    *lo = (int)strtol(s, &end, 10);
    *hi = *end == '-' ? (int)strtol(end + 1, &end, 10) : *lo;
    CHECK_MSG(*end == '\0' && *lo >= 0 && *lo <= *hi && *hi < tt_size, "bad GONE '%s'", s);
}

/* The ranks in [lo, hi] (want 1) or outside it (want 0), as "0-1,4": how
 * tcoll's messages name a set of ranks. */
static void format_set(int lo, int hi, int want, char *buf, size_t len)
{
    int q = 0, n = 0;

    buf[0] = '\0';
    while (q < tt_size) {
        int a, b;
        if ((q >= lo && q <= hi) != want) {
            q++;
            continue;
        }
        a = q;
        while (q + 1 < tt_size && ((q + 1 >= lo && q + 1 <= hi) == want)) {
            q++;
        }
        b = q++;
        n += snprintf(buf + n, len - (size_t)n, "%s%d", n > 0 ? "," : "", a);
        if (b > a) {
            n += snprintf(buf + n, len - (size_t)n, "-%d", b);
        }
    }
}

/* Marks in in[] (n entries) the ranks of the set at *p ("0", "0-1",
 * "0,2-3": as format_set writes it) and moves *p past it. */
static void read_set(const char **p, char *in, long n)
{
    char *end;

    while (**p >= '0' && **p <= '9') {
        long a = strtol(*p, &end, 10), b = a;
        if (*end == '-') {
            b = strtol(end + 1, &end, 10);
        }
        for (; a <= b && a < n; a++) {
            in[a] = 1;
        }
        *p = *end == ',' ? end + 1 : end;
    }
}

/* Whether msg's "lost rank(s) SET:" names every rank of want (a set as
 * format_set writes it). It may name more: a survivor that failed first,
 * told the others and exited may be gone by the time another rank's probe
 * asks for it, and then it is lost too (seen under load: "lost ranks 0-1"
 * where rank 0 was killed and rank 1 had failed and exited). */
static int names_lost(const char *msg, const char *want)
{
    char named[64] = {0}, wanted[64] = {0};
    const char *p = strstr(msg, "lost rank");
    int q;

    if (p == NULL) {
        return 0;
    }
    p += strlen("lost rank");
    p += *p == 's';
    if (*p++ != ' ') {
        return 0;
    }
    read_set(&p, named, (long)sizeof(named));
    if (*p != ':') {
        return 0;
    }
    read_set(&want, wanted, (long)sizeof(wanted));
    for (q = 0; q < (int)sizeof(wanted); q++) {
        if (wanted[q] && !named[q]) {
            return 0;
        }
    }
    return 1;
}

static void touch(const char *marker, const char *suffix)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s.%s", marker, suffix);
    f = fopen(path, "w");
    CHECK_MSG(f != NULL, "cannot write %s", path);
    fclose(f);
}

static int exists(const char *marker, const char *suffix)
{
    char path[512];
    struct stat st;

    snprintf(path, sizeof(path), "%s.%s", marker, suffix);
    return stat(path, &st) == 0;
}

/* One step; returns TC_OK or the first failure, with its message in err.
 * flag: this rank's 4-byte input; *flag_out gets the max over the ranks. */
static tc_status_t step(int s, float flag, float *flag_out, char *err, size_t errlen)
{
    tc_tensor_t tb = {big_in, TC_FLOAT32, 1, {BIG}};
    tc_tensor_t tg = {gat_in, TC_FLOAT32, 1, {GATHER}};
    tc_tensor_t tf = {&flag, TC_FLOAT32, 1, {1}};
    tc_tensor_t go;
    tc_request_t *r[3] = {NULL, NULL, NULL};
    tc_status_t st[3], first = TC_OK;
    const float *g;
    uint32_t i;
    int k, q;

    for (i = 0; i < BIG; i++) {
        big_in[i] = (float)((tt_rank + 1) * ((int)(i % 97) + s % 5));
    }
    for (i = 0; i < GATHER; i++) {
        gat_in[i] = (float)(tt_rank * 1000 + (int)(i % 13) + s % 3);
    }
    st[0] = tc_allreduce("fault/big", &tb, big_out, TC_SUM, &r[0]);
    st[1] = tc_allgather("fault/gather", &tg, &r[1]);
    st[2] = tc_allreduce("fault/flag", &tf, flag_out, TC_MAX, &r[2]);
    for (k = 0; k < 3; k++) {
        if (st[k] == TC_OK) {
            st[k] = tc_wait(r[k]);
        }
        if (st[k] != TC_OK && first == TC_OK) {
            first = st[k];
            snprintf(err, errlen, "%s", r[k] != NULL ? tc_request_error(r[k]) : tc_last_error());
        }
    }
    if (first == TC_OK) {
        const float tri = (float)(tt_size * (tt_size + 1) / 2);
        for (i = 0; i < BIG; i++) {
            CHECK_MSG(big_out[i] == tri * (float)((int)(i % 97) + s % 5),
                      "step %d: allreduce element %u is %g", s, i, (double)big_out[i]);
        }
        go = (tc_tensor_t){0};
        CHECK_OK(tc_request_output(r[1], &go));
        CHECK_EQ(go.shape[0], (int64_t)GATHER * tt_size);
        g = go.data;
        for (q = 0; q < tt_size; q++) {
            for (i = 0; i < GATHER; i++) {
                CHECK_MSG(g[(size_t)q * GATHER + i] == (float)(q * 1000 + (int)(i % 13) + s % 3),
                          "step %d: allgather element %u of rank %d", s, i, q);
            }
        }
    }
    for (k = 0; k < 3; k++) {
        if (r[k] != NULL) {
            tc_request_free(r[k]);
        }
    }
    return first;
}

static void setup(void)
{
    big_in = tt_xmalloc(BIG * sizeof(float));
    big_out = tt_xmalloc(BIG * sizeof(float));
    gat_in = tt_xmalloc(GATHER * sizeof(float));
}

TC_CASE(lose)
{
    const char *marker = tc_test_arg(0), *gone = tc_test_arg(1);
    const double bound = peer_timeout_s() + 2 * GRACE_S + MARGIN_S;
    tc_status_t st = TC_OK;
    char err[1024] = "", want[160], named[200];
    double t0 = 0, took;
    float flag, out = 0;
    tc_request_t *req = TT_SENTINEL;
    tc_tensor_t tf = {&flag, TC_FLOAT32, 1, {1}};
    int lo, hi, s;

    CHECK_MSG(marker != NULL && gone != NULL, "usage: --case lose MARKER GONE");
    parse_gone(gone, &lo, &hi);
    setup();
    for (s = 0; s < 100000; s++) {
        if (s == 3 && tt_rank == 0) {
            touch(marker, "steps");
        }
        t0 = tt_now();
        st = step(s, 0.0f, &out, err, sizeof(err));
        if (st != TC_OK) {
            break;
        }
    }
    took = tt_now() - t0;
    CHECK_MSG(st == TC_ERR_TRANSPORT, "rank %d: %s (%s)", tt_rank, tc_status_string(st), err);
    format_set(lo, hi, !(tt_rank >= lo && tt_rank <= hi), want, sizeof(want));
    snprintf(named, sizeof(named), "lost rank%s %s:", strpbrk(want, ",-") != NULL ? "s" : "", want);
    CHECK_MSG(names_lost(err, want), "rank %d: the message does not name '%s': %s", tt_rank, named,
              err);
    CHECK_MSG(took < bound, "rank %d: the failure took %.1f s (bound %.0f s)", tt_rank, took,
              bound);
    flag = 1;
    CHECK_STATUS(tc_allreduce("fault/after", &tf, &out, TC_SUM, &req), TC_ERR_TRANSPORT);
    CHECK(req == TT_SENTINEL);
    t0 = tt_now();
    st = tc_shutdown();
    CHECK_MSG(st == TC_ERR_TRANSPORT, "rank %d: tc_shutdown: %s (%s)", tt_rank,
              tc_status_string(st), tc_last_error());
    CHECK_MSG(tt_now() - t0 < MARGIN_S, "rank %d: tc_shutdown took %.1f s", tt_rank, tt_now() - t0);
    printf("test_faults lose: rank %d survived: failed after %.1f s in step %d: %s\n", tt_rank,
           took, s, err);
    fflush(stdout);
}

TC_CASE(flap)
{
    const char *marker = tc_test_arg(0);
    char err[1024] = "";
    double longest = 0, t0;
    float out = 0;
    int s, after = -1, longest_at = -1;

    CHECK_MSG(marker != NULL, "usage: --case flap MARKER GONE");
    setup();
    for (s = 0; after < 10; s++) {
        /* rank 0 says when the link is back; the 4-byte max tells all */
        float flag = tt_rank == 0 && exists(marker, "restored") ? 1.0f : 0.0f;
        if (s == 3 && tt_rank == 0) {
            touch(marker, "steps");
        }
        t0 = tt_now();
        CHECK_MSG(step(s, flag, &out, err, sizeof(err)) == TC_OK, "rank %d step %d: %s", tt_rank, s,
                  err);
        if (tt_now() - t0 > longest) {
            longest = tt_now() - t0;
            longest_at = s;
        }
        if (out == 1.0f) {
            after++;
        }
        CHECK_MSG(s < 1000000, "rank %d: the link was never restored", tt_rank);
    }
    CHECK_OK(tc_shutdown());
    tt_say("test_faults flap: %d steps, all exact; the longest, step %d, took %.1f s\n", s,
           longest_at, longest);
}

TC_CASE(loss)
{
    const char *n = tc_test_arg(2);
    const int steps = n != NULL ? atoi(n) : 20;
    char err[1024] = "";
    double t0 = tt_now();
    float out = 0;
    int s;

    CHECK_MSG(steps > 0, "usage: --case loss MARKER GONE STEPS");
    setup();
    for (s = 0; s < steps; s++) {
        CHECK_MSG(step(s, 0.0f, &out, err, sizeof(err)) == TC_OK, "rank %d step %d: %s", tt_rank, s,
                  err);
    }
    CHECK_OK(tc_shutdown());
    tt_say("test_faults loss: %d steps, all exact, %.1f ms a step\n", steps,
           (tt_now() - t0) * 1e3 / steps);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv,
                       &(tt_program_t){.args = "MARKER GONE [STEPS]", .case_ends_tcoll = 1});
}
