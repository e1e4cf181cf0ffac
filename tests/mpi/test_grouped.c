/*
 * test_grouped.c - grouped calls (tc_grouped_allreduce, _allgather,
 * _reducescatter): members run together and give each their own exact
 * result; one disagreeing member fails every member on every rank with its
 * message; names grouped differently fail as a group mismatch; a name that
 * was cached alone can be grouped later; bad groups are refused whole.
 */
#define _POSIX_C_SOURCE 200809L

#include "mpi_common.h"

#define NMEM 10

typedef struct {
    char names[NMEM][32];
    const char *np[NMEM];
    tc_tensor_t t[NMEM];
    float data[NMEM][64];
    float out[NMEM][64];
    void *recv[NMEM];
    tc_request_t *req[NMEM];
} group_t;

static void make(group_t *g, const char *prefix, int n, int count)
{
    int i, j;

    memset(g, 0, sizeof(*g));
    for (i = 0; i < n; i++) {
        snprintf(g->names[i], sizeof(g->names[i]), "%s/%d", prefix, i);
        g->np[i] = g->names[i];
        for (j = 0; j < count; j++) {
            g->data[i][j] = (float)(tt_rank * 100 + i * 10 + j);
        }
        g->t[i] = (tc_tensor_t){g->data[i], TC_FLOAT32, 1, {count}};
        g->recv[i] = g->out[i];
    }
}

/* sum over ranks of (r * 100 + i * 10 + j) */
static float expect_sum(int i, int j)
{
    return (float)(100 * tt_size * (tt_size - 1) / 2 + tt_size * (i * 10 + j));
}

TC_CASE(allreduce_members)
{
    group_t g;
    int round, i, j;

    for (round = 0; round < 3; round++) { /* the same names again: never cached */
        make(&g, "grp/ar", NMEM, 8 + round);
        CHECK_OK(tc_grouped_allreduce(NMEM, g.np, g.t, g.recv, TC_SUM, NULL, g.req));
        for (i = NMEM - 1; i >= 0; i--) {
            CHECK_OK(tc_wait(g.req[i]));
            tc_request_free(g.req[i]);
            for (j = 0; j < 8 + round; j++) {
                CHECK_MSG(g.out[i][j] == expect_sum(i, j), "member %d element %d: %g, want %g", i,
                          j, (double)g.out[i][j], (double)expect_sum(i, j));
            }
        }
    }
}

TC_CASE(allgather_and_reducescatter)
{
    group_t g;
    tc_tensor_t out;
    int i, j;

    make(&g, "grp/ag", 3, 2);
    CHECK_OK(tc_grouped_allgather(3, g.np, g.t, NULL, g.req));
    for (i = 0; i < 3; i++) {
        CHECK_OK(tc_wait(g.req[i]));
        CHECK_OK(tc_request_output(g.req[i], &out));
        CHECK_EQ(out.shape[0], 2 * tt_size);
        for (j = 0; j < 2 * tt_size; j++) { /* rank j/2's element j%2 */
            CHECK(((float *)out.data)[j] == (float)((j / 2) * 100 + i * 10 + j % 2));
        }
        tc_request_free(g.req[i]);
    }
    make(&g, "grp/rs", 4, tt_size);
    CHECK_OK(tc_grouped_reducescatter(4, g.np, g.t, TC_SUM, NULL, g.req));
    for (i = 0; i < 4; i++) {
        CHECK_OK(tc_wait(g.req[i]));
        CHECK_OK(tc_request_output(g.req[i], &out));
        CHECK_EQ(out.shape[0], 1); /* one row each */
        CHECK(((float *)out.data)[0] == expect_sum(i, tt_rank));
        tc_request_free(g.req[i]);
    }
}

/* Member 2's shape differs on the last rank: every member fails on every
 * rank with member 2's message; then the engine goes on. */
TC_CASE(one_member_disagrees)
{
    group_t g;
    int i;

    if (tt_size < 2) {
        return;
    }
    make(&g, "grp/bad", 4, 4);
    if (tt_rank == tt_size - 1) {
        g.t[2].shape[0] = 3;
    }
    CHECK_OK(tc_grouped_allreduce(4, g.np, g.t, g.recv, TC_SUM, NULL, g.req));
    for (i = 0; i < 4; i++) {
        CHECK_EQ(tc_wait(g.req[i]), TC_ERR_MISMATCH);
        CHECK_MSG(strstr(tc_request_error(g.req[i]),
                         "tensor 'grp/bad/2': allreduce shape mismatch: rank 0 has [4]") != NULL,
                  "member %d: %s", i, tc_request_error(g.req[i]));
        tc_request_free(g.req[i]);
    }
    make(&g, "grp/bad", 4, 4); /* the same names, now agreeing */
    CHECK_OK(tc_grouped_allreduce(4, g.np, g.t, g.recv, TC_SUM, NULL, g.req));
    for (i = 0; i < 4; i++) {
        CHECK_OK(tc_wait(g.req[i]));
        tc_request_free(g.req[i]);
    }
}

/* The last rank groups the same names in another order: a group mismatch
 * for every member. */
TC_CASE(grouped_differently)
{
    group_t g;
    const char *swap;
    int i;

    if (tt_size < 2) {
        return;
    }
    make(&g, "grp/order", 3, 2);
    if (tt_rank == tt_size - 1) {
        swap = g.np[0];
        g.np[0] = g.np[1];
        g.np[1] = swap;
    }
    CHECK_OK(tc_grouped_allreduce(3, g.np, g.t, g.recv, TC_SUM, NULL, g.req));
    for (i = 0; i < 3; i++) {
        CHECK_EQ(tc_wait(g.req[i]), TC_ERR_MISMATCH);
        CHECK_MSG(strstr(tc_request_error(g.req[i]), "allreduce group mismatch: rank 0 has member "
                                                     "1 of 3 of group 'grp/order/0'") != NULL,
                  "member %d: %s", i, tc_request_error(g.req[i]));
        tc_request_free(g.req[i]);
    }
}

/* A name run alone twice (cached by then) joins a group: it leaves the
 * cache and runs with the group; alone again afterwards, it still works. */
TC_CASE(cached_name_joins_a_group)
{
    group_t g;
    tc_request_t *req;
    int round, i;

    make(&g, "grp/c", 2, 4);
    for (round = 0; round < 2; round++) {
        CHECK_OK(tc_allreduce(g.np[0], &g.t[0], g.recv[0], TC_SUM, &req));
        CHECK_OK(tc_wait(req));
        tc_request_free(req);
    }
    CHECK_OK(tc_grouped_allreduce(2, g.np, g.t, g.recv, TC_SUM, NULL, g.req));
    for (i = 0; i < 2; i++) {
        CHECK_OK(tc_wait(g.req[i]));
        tc_request_free(g.req[i]);
        CHECK(g.out[i][3] == expect_sum(i, 3));
    }
    CHECK_OK(tc_allreduce(g.np[0], &g.t[0], g.recv[0], TC_SUM, &req));
    CHECK_OK(tc_wait(req));
    tc_request_free(req);
}

/* Refused whole, nothing queued: the same names then run as a group. */
TC_CASE(refusals)
{
    group_t g;
    int i;

    make(&g, "grp/ref", 3, 2);
    g.req[0] = NULL;
    CHECK_EQ(tc_grouped_allreduce(0, g.np, g.t, g.recv, TC_SUM, NULL, g.req), TC_ERR_ARG);
    CHECK_EQ(tc_grouped_allreduce(3, NULL, g.t, g.recv, TC_SUM, NULL, g.req), TC_ERR_ARG);
    CHECK_EQ(tc_grouped_allreduce(3, g.np, g.t, NULL, TC_SUM, NULL, g.req), TC_ERR_ARG);
    g.t[2].data = NULL; /* one bad member */
    CHECK_EQ(tc_grouped_allreduce(3, g.np, g.t, g.recv, TC_SUM, NULL, g.req), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "tensor 'grp/ref/2': data is NULL") != NULL);
    g.t[2].data = g.data[2];
    g.np[2] = g.np[0]; /* a name twice */
    CHECK_EQ(tc_grouped_allreduce(3, g.np, g.t, g.recv, TC_SUM, NULL, g.req), TC_ERR_DUPLICATE);
    CHECK(g.req[0] == NULL);
    g.np[2] = g.names[2];
    CHECK_OK(tc_grouped_allreduce(3, g.np, g.t, g.recv, TC_SUM, NULL, g.req));
    for (i = 0; i < 3; i++) {
        CHECK_OK(tc_wait(g.req[i]));
        tc_request_free(g.req[i]);
    }
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
