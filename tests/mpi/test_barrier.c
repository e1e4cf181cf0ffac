/*
 * test_barrier.c - tc_barrier: completes on every rank only once every rank
 * has called it; on a rank, only after every request that rank submitted
 * before it; many in flight at once pair up by call count; and what it
 * refuses.
 */
#define _POSIX_C_SOURCE 200809L

#include <time.h>

#include "mpi_common.h"

/* A clock every process on this machine shares (CLOCK_MONOTONIC). */
static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void wait_free(tc_request_t *req)
{
    CHECK_OK(tc_wait(req));
    tc_request_free(req);
}

/* The last rank calls late; every rank's barrier completes after that call
 * (the last rank's clock reading, broadcast afterwards). */
TC_CASE(waits_for_every_rank)
{
    tc_request_t *req;
    int64_t called = 0, done;
    tc_tensor_t t = {&called, TC_INT64, 0, {0}};
    tc_tensor_t out;

    if (tt_rank == tt_size - 1) {
        tt_sleep_ms(300);
        called = mono_ns();
    }
    CHECK_OK(tc_barrier(&req));
    CHECK_OK(tc_wait(req));
    done = mono_ns();
    CHECK_OK(tc_request_output(req, &out));
    CHECK(out.data == NULL && tt_count(out.ndim, out.shape) == 0);
    tc_request_free(req);
    CHECK_OK(tc_broadcast("bar/called", &t, tt_size - 1, &req));
    wait_free(req);
    CHECK_MSG(done >= called, "rank %d: barrier done %lld ns before the last rank called it",
              tt_rank, (long long)(called - done));
}

/* Ranks before the last submit an allreduce, then the barrier; the last
 * rank the barrier first and the allreduce 200 ms later. Before the last,
 * the barrier must not complete before the allreduce (submitted earlier
 * there); on the last rank it completes without it. */
TC_CASE(after_earlier_requests)
{
    float x[4] = {1, 2, 3, 4}, y[4];
    tc_tensor_t t = {x, TC_FLOAT32, 1, {4}};
    tc_request_t *ar = NULL, *bar;
    int done = 0;

    if (tt_rank != tt_size - 1) {
        CHECK_OK(tc_allreduce("bar/early", &t, y, TC_SUM, &ar));
        CHECK_OK(tc_barrier(&bar));
        CHECK_OK(tc_wait(bar));
        CHECK_OK(tc_test(ar, &done));
        CHECK_MSG(done == 1,
                  "rank %d: the barrier completed before the allreduce submitted "
                  "before it",
                  tt_rank);
        tc_request_free(bar);
        wait_free(ar);
    } else {
        CHECK_OK(tc_barrier(&bar));
        if (tt_size == 1) { /* alone: nothing to wait for */
            wait_free(bar);
        } else {
            tt_sleep_ms(200); /* the barrier can complete here already, or after */
        }
        CHECK_OK(tc_allreduce("bar/early", &t, y, TC_SUM, &ar));
        if (tt_size > 1) {
            wait_free(bar);
        }
        wait_free(ar);
    }
    CHECK(y[3] == 4.0f * (float)tt_size);
}

/* Eight barriers in flight at once on every rank, from two threads' worth
 * of submissions, completed in reverse: the k-th calls meet. Then the
 * same again, to reuse nothing by accident. */
TC_CASE(many_in_flight)
{
    tc_request_t *b[8];
    int round, k;

    for (round = 0; round < 2; round++) {
        for (k = 0; k < 8; k++) {
            CHECK_OK(tc_barrier(&b[k]));
        }
        for (k = 7; k >= 0; k--) {
            wait_free(b[k]);
        }
    }
}

/* Refused at once: no request pointer, options the barrier does not take,
 * a user name in the barrier's reserved space; and nothing counted, so the
 * next barrier still meets the other ranks'. */
TC_CASE(refusals)
{
    tc_opts_t o = TC_OPTS_INIT;
    tc_request_t *req = NULL;
    float x = 1, y;
    tc_tensor_t t = {&x, TC_FLOAT32, 0, {0}};

    CHECK_EQ(tc_barrier(NULL), TC_ERR_ARG);
    o.prescale = 2.0;
    CHECK_EQ(tc_barrier_ex(&o, &req), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "barrier takes no scaling factors") != NULL);
    CHECK_EQ(tc_allreduce("tcoll/barrier/0", &t, &y, TC_SUM, &req), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "are tcoll's") != NULL);
    CHECK(req == NULL);
    if (tt_rank == 0) { /* only rank 0 fails one more: counts must not drift */
        o.size = 1;
        CHECK_EQ(tc_barrier_ex(&o, &req), TC_ERR_ARG);
    }
    CHECK_OK(tc_barrier_ex(NULL, &req));
    wait_free(req);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
