/*
 * test_flood.c - a flood of first-time names in flight at once, each rank
 * submitting them in its own order (rank 0 in order, odd ranks in reverse,
 * the others shuffled): every one completes with the exact sum on every
 * rank, and no rank is declared lost while the others are busy with the
 * flood. CMakeLists.txt runs it with TCOLL_PEER_TIMEOUT_S=1, so a rank
 * whose engine went more than about 2.5 s without answering a liveness
 * probe (a step whose work grows with the names in flight) fails the job.
 * Also a grouped allreduce of more members than rank 0 decides in one
 * cycle: the group still runs as a unit.
 */
#define _POSIX_C_SOURCE 200809L

#include "mpi_common.h"

/* The names in flight at once: enough that a step doing work per name in
 * flight (or quadratic in it) runs past the probe's grace. */
#define FLOOD_NAMES 60000
#define GROUP_MEMBERS 5000

/* This rank's order of 0..n-1 (see the file comment). */
static int *flood_order(int n)
{
    int *order = tt_xmalloc((size_t)n * sizeof(*order));
    tt_rng_t rng = {(uint64_t)tt_rank * 7919u + 1u};

    for (int i = 0; i < n; i++) {
        order[i] = tt_rank % 2 == 1 ? n - 1 - i : i;
    }
    if (tt_rank > 0 && tt_rank % 2 == 0) {
        tt_shuffle(order, n, &rng);
    }
    return order;
}

TC_CASE(first_time_names)
{
    const int n = FLOOD_NAMES;
    int32_t *in = tt_xmalloc((size_t)n * sizeof(*in));
    int32_t *out = tt_xmalloc((size_t)n * sizeof(*out));
    tc_request_t **reqs = tt_xmalloc((size_t)n * sizeof(*reqs));
    int *order = flood_order(n);
    const int32_t ranks_sum = (int32_t)(tt_size * (tt_size - 1) / 2);
    char name[48];
    int bad = 0, first_bad = -1;

    for (int k = 0; k < n; k++) {
        int i = order[k];
        tc_tensor_t t = {&in[i], TC_INT32, 1, {1}};
        in[i] = i + tt_rank;
        out[i] = -1;
        snprintf(name, sizeof(name), "flood/%d", i);
        CHECK_OK(tc_allreduce(name, &t, &out[i], TC_SUM, &reqs[i]));
    }
    for (int i = 0; i < n; i++) {
        tc_status_t st = tc_wait(reqs[i]);
        CHECK_MSG(st == TC_OK, "rank %d: flood/%d: %s", tt_rank, i, tc_request_error(reqs[i]));
        if (out[i] != (int32_t)i * tt_size + ranks_sum && bad++ == 0) {
            first_bad = i;
        }
        tc_request_free(reqs[i]);
    }
    CHECK_MSG(bad == 0, "rank %d: %d of %d sums wrong, first flood/%d = %d (expected %d)", tt_rank,
              bad, n, first_bad, first_bad >= 0 ? out[first_bad] : 0,
              first_bad * tt_size + ranks_sum);
    free(order);
    free(reqs);
    free(out);
    free(in);
}

/* One group of more members than rank 0 decides in one cycle, submitted
 * after a flood of single names has been queued: every member runs, with
 * the right sum, on every rank. */
TC_CASE(large_group)
{
    const int n = GROUP_MEMBERS, nsingle = 3 * GROUP_MEMBERS;
    char(*names)[40] = tt_xmalloc((size_t)n * sizeof(*names));
    const char **name_p = tt_xmalloc((size_t)n * sizeof(*name_p));
    tc_tensor_t *sends = tt_xmalloc((size_t)n * sizeof(*sends));
    void **recvs = tt_xmalloc((size_t)n * sizeof(*recvs));
    int64_t *in = tt_xmalloc((size_t)(n + nsingle) * sizeof(*in));
    int64_t *out = tt_xmalloc((size_t)(n + nsingle) * sizeof(*out));
    tc_request_t **reqs = tt_xmalloc((size_t)(n + nsingle) * sizeof(*reqs));
    int *order = flood_order(nsingle);
    const int64_t ranks_sum = tt_size * (tt_size - 1) / 2;
    char name[48];

    for (int k = 0; k < nsingle; k++) {
        int i = order[k];
        tc_tensor_t t = {&in[n + i], TC_INT64, 1, {1}};
        in[n + i] = 3 * i + tt_rank;
        snprintf(name, sizeof(name), "flood/single/%d", i);
        CHECK_OK(tc_allreduce(name, &t, &out[n + i], TC_SUM, &reqs[n + i]));
    }
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof(names[i]), "flood/member/%d", i);
        name_p[i] = names[i];
        in[i] = 2 * i + tt_rank;
        sends[i] = (tc_tensor_t){&in[i], TC_INT64, 1, {1}};
        recvs[i] = &out[i];
    }
    CHECK_OK(tc_grouped_allreduce(n, name_p, sends, recvs, TC_SUM, NULL, reqs));
    for (int i = 0; i < n + nsingle; i++) {
        int64_t want = i < n ? 2 * (int64_t)i * tt_size + ranks_sum
                             : 3 * (int64_t)(i - n) * tt_size + ranks_sum;
        tc_status_t st = tc_wait(reqs[i]);
        CHECK_MSG(st == TC_OK, "rank %d: request %d: %s", tt_rank, i, tc_request_error(reqs[i]));
        CHECK_MSG(out[i] == want, "rank %d: request %d: %lld, expected %lld", tt_rank, i,
                  (long long)out[i], (long long)want);
        tc_request_free(reqs[i]);
    }
    free(order);
    free(reqs);
    free(out);
    free(in);
    free(recvs);
    free(sends);
    free(name_p);
    free(names);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
