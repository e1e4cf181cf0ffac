/*
 * test_fusion.c - small allreduces that rank 0 schedules together are fused
 * into one ring allreduce: check exact results for runs of mixed dtypes, ops,
 * sizes, in place and out of place, with large tensors and a mismatch cutting
 * through the runs, and that fusion really happened (or, with
 * TCOLL_FUSION_THRESHOLD_KB=0, did not). The engine's debug log is captured
 * in a file to count "fused" lines.
 *
 * Argument: "on" (fusion expected) or "off" (the CTest sets the knob to 0).
 */
#define _GNU_SOURCE
#include "mpi_common.h"

#include <unistd.h>

#define NT_MIXED 240       /* the runs over dts[] below */
#define NT (NT_MIXED + 64) /* then 8 runs of int16 and uint16 */

typedef struct {
    char name[64];
    tc_dtype_t dt;
    tc_op_t op;
    int64_t count;
    int in_place;
    int odd; /* the last rank submits one element more: a mismatch */
    void *send, *recv;
    tc_request_t *req;
} item_t;

static item_t items[NT];
static char g_logpath[64];
static int g_mismatches;
static int g_fused_calls; /* calls tc_request_algorithm says were fused */

/* The engine's debug log goes to a file of this process's own. */
static void log_to_file(void)
{
    tt_own_log_path(g_logpath, sizeof(g_logpath), "tcoll_test_fusion");
    setenv("TCOLL_LOG_LEVEL", "debug", 1);
    CHECK(freopen(g_logpath, "w", stderr) != NULL);
}

/*
 * NT allreduces in runs of 8 with one dtype and op, every 17th one above the
 * fusion threshold, a third in place, tensor 100 one element longer on the
 * last rank (a mismatch), submitted in the same order everywhere before any
 * wait: exact results, and TC_ERR_MISMATCH for tensor 100 only.
 */
TC_CASE(small_allreduces_in_runs)
{
    static const tc_dtype_t dts[] = {TC_FLOAT32, TC_INT32, TC_FLOAT16, TC_FLOAT64, TC_BFLOAT16};
    static const tc_op_t ops[] = {TC_SUM, TC_MAX, TC_AVG, TC_MIN, TC_PROD};
    static const tc_dtype_t dts16[] = {TC_INT16, TC_UINT16};
    static const tc_op_t ops16[] = {TC_SUM, TC_MAX, TC_MIN, TC_PROD};
    int rank = tt_rank, size = tt_size, i;

    g_mismatches = 0;
    for (i = 0; i < NT; i++) {
        item_t *it = &items[i];
        int run = i / 8; /* runs of 8 with one dtype and op */
        if (i < NT_MIXED) {
            it->dt = dts[run % 5];
            it->op = ops[(run / 5) % 5];
        } else { /* every op but avg on both 16-bit integer dtypes */
            int k = run - NT_MIXED / 8;
            it->dt = dts16[k % 2];
            it->op = ops16[(k / 2) % 4];
        }
        if (it->op == TC_AVG && !tt_is_float(it->dt)) {
            it->op = TC_SUM;
        }
        it->count = 1 + (i * 37) % 3000;
        if (i % 17 == 5) {
            it->count = 100000; /* above the fusion threshold: runs alone */
        }
        it->in_place = i % 3 == 0;
        it->odd = size > 1 && i == 100 && rank == size - 1;
        snprintf(it->name, sizeof(it->name), "fusion/%d", i);
        it->send = tt_xmalloc((size_t)(it->count + 1) * tt_dtype_bytes(it->dt));
        tt_fill(it->dt, it->op, (uint64_t)i, rank, it->send, it->count + it->odd);
        it->recv =
            it->in_place ? it->send : tt_xmalloc((size_t)it->count * tt_dtype_bytes(it->dt) + 1);
    }
    /* every rank submits in the same order, all before waiting */
    for (i = 0; i < NT; i++) {
        item_t *it = &items[i];
        tc_tensor_t t;
        memset(&t, 0, sizeof t);
        t.data = it->send;
        t.dtype = it->dt;
        t.ndim = 1;
        t.shape[0] = it->count + it->odd;
        CHECK_OK(tc_allreduce(it->name, &t, it->in_place ? it->send : it->recv, it->op, &it->req));
    }
    for (i = 0; i < NT; i++) {
        item_t *it = &items[i];
        tc_status_t st = tc_wait(it->req);
        if (size > 1 && i == 100) {
            CHECK_STATUS(st, TC_ERR_MISMATCH);
            CHECK(tc_request_algorithm(it->req) == NULL);
            CHECK_STR_CONTAINS(tc_request_error(it->req), "tensor 'fusion/100'");
            g_mismatches++;
        } else {
            const char *algo = tc_request_algorithm(it->req);
            CHECK_MSG(st == TC_OK, "%s: %s", it->name, tc_request_error(it->req));
            tt_check_allreduce(it->name, it->dt, it->op, (uint64_t)i, size, it->recv, it->count);
            CHECK_MSG(algo != NULL, "%s: no algorithm reported", it->name);
            if (it->count == 100000) { /* above the threshold: never fused */
                CHECK_MSG(strstr(algo, ", fused") == NULL, "%s ran alone, reported '%s'", it->name,
                          algo);
            }
            g_fused_calls += strstr(algo, ", fused") != NULL;
        }
        tc_request_free(it->req);
        if (!it->in_place) {
            free(it->recv);
        }
        free(it->send);
    }
}

/* After tc_shutdown, this rank's log must show fused allreduces ("on"), or
 * none at all ("off": TCOLL_FUSION_THRESHOLD_KB=0). */
static void check_fusion_logged(void)
{
    int expect_fused = tc_test_nargs() > 0 && strcmp(tc_test_arg(0), "on") == 0;
    int fused = 0;

    fflush(stderr);
    {
        FILE *f = fopen(g_logpath, "r");
        char line[2048];
        CHECK(f != NULL);
        while (fgets(line, sizeof(line), f) != NULL) {
            fused += strstr(line, "engine DEBUG: fused ") != NULL;
        }
        fclose(f);
        unlink(g_logpath);
    }
    if (expect_fused) {
        CHECK_MSG(fused > 0, "no fused allreduce in the debug log");
        CHECK_MSG(g_fused_calls > 0, "tc_request_algorithm reported no fused call");
    } else {
        CHECK_EQ(fused, 0);
        CHECK_EQ(g_fused_calls, 0);
    }
    tt_say("test_fusion: %d allreduces OK on %d ranks, %d fused groups on rank 0, "
           "%d mismatch\n",
           NT, tt_size, fused, g_mismatches);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv,
                       &(tt_program_t){.args = "on|off",
                                       .before_init = log_to_file,
                                       .after_shutdown = check_fusion_logged});
}
