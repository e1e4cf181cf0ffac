/*
 * test_errors.c - everything a caller can get wrong, and the request API's
 * edges:
 *  - state: calls before tc_init, tc_init twice, tc_shutdown twice,
 *    collectives after shutdown (no request is created);
 *  - every bad argument (TC_ERR_ARG at once, *req_p untouched, a message for
 *    the calling thread only);
 *  - names: 1, 255 and TC_MAX_NAME_LEN bytes work, one more is rejected;
 *  - duplicates: a name in flight on this rank is refused, the first request
 *    still completes, the name is reusable afterwards;
 *  - tc_test / tc_request_error / tc_request_output on pending, successful
 *    and failed requests; tc_request_free(NULL) and free of a pending request;
 *  - zero-element tensors of every collective;
 *  - MPI is initialized by tc_init when tcoll starts it, and stays
 *    initialized after tc_shutdown (tcoll finalizes it at exit).
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include "mpi_common.h"

/* Waits for req, checks TC_OK, frees it. */
static void wait_ok(tc_request_t *req, const char *what)
{
    tc_status_t st = tc_wait(req);
    CHECK_MSG(st == TC_OK, "%s: %s: %s", what, tc_status_string(st), tc_request_error(req));
    tc_request_free(req);
}

/* An int32 sum allreduce of (rank+1) * (i+1) with the given name. */
static void named_allreduce(const char *name)
{
    int32_t v[3], out[3];
    for (int i = 0; i < 3; i++) {
        v[i] = (tt_rank + 1) * (i + 1);
    }
    tc_tensor_t t = {v, TC_INT32, 1, {3}};
    tc_request_t *req = NULL;
    CHECK_OK(tc_allreduce(name, &t, out, TC_SUM, &req));
    wait_ok(req, name);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(out[i], (i + 1) * tt_size * (tt_size + 1) / 2);
    }
}

/* ---- per-thread error messages --------------------------------------------- */

static void other_thread(int ti, void *arg)
{
    (void)ti;
    (void)arg;
    /* this thread has made no failing call yet */
    CHECK_MSG(tc_last_error() != NULL && tc_last_error()[0] == '\0',
              "fresh thread sees last error '%s'", tc_last_error());
    float x = 1;
    tc_tensor_t t = {&x, TC_FLOAT32, 0, {0}};
    tc_request_t *req;
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast("x", &t, -1, &req));
}

static void test_before_init(void)
{
    tc_request_t *req;
    float x = 1, y = 0;
    tc_tensor_t t = {&x, TC_FLOAT32, 1, {1}};
    int flag = 1;
    MPI_Initialized(&flag);
    CHECK_MSG(flag == 0, "MPI initialized before tc_init");

    CHECK_EQ(tc_rank(), -1);
    CHECK_EQ(tc_size(), -1);
    CHECK_EQ(tc_local_rank(), -1);
    CHECK_EQ(tc_local_size(), -1);
    EXPECT_IMMEDIATE(TC_ERR_STATE, tc_allreduce("a", &t, &y, TC_SUM, &req));
    EXPECT_IMMEDIATE(TC_ERR_STATE, tc_allgather("a", &t, &req));
    EXPECT_IMMEDIATE(TC_ERR_STATE, tc_broadcast("a", &t, 0, &req));
    CHECK_STATUS(tc_shutdown(), TC_ERR_STATE);
    CHECK_LAST_ERROR_SET();
    tc_request_free(NULL);
}

TC_CASE(init_twice_refused)
{
    int flag = 0;
    MPI_Initialized(&flag);
    CHECK_MSG(flag == 1, "MPI not initialized after tc_init");
    CHECK_STATUS(tc_init(), TC_ERR_STATE);
    CHECK_LAST_ERROR_SET();
}

TC_CASE(rank_size_and_names)
{
    CHECK(tt_size >= 1);
    CHECK(tt_rank >= 0 && tt_rank < tt_size);
    int lr = tc_local_rank(), ls = tc_local_size();
    CHECK(ls >= 1 && ls <= tt_size);
    CHECK(lr >= 0 && lr < ls);
    /* Open MPI tells each process where it is: every test runs on one node */
    const char *e;
    if ((e = getenv("OMPI_COMM_WORLD_SIZE")) != NULL) {
        CHECK_EQ(tt_size, atoi(e));
    }
    if ((e = getenv("OMPI_COMM_WORLD_RANK")) != NULL) {
        CHECK_EQ(tt_rank, atoi(e));
    }
    if ((e = getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) != NULL) {
        CHECK_EQ(ls, atoi(e));
    }
    if ((e = getenv("OMPI_COMM_WORLD_LOCAL_RANK")) != NULL) {
        CHECK_EQ(lr, atoi(e));
    }
    for (int s = TC_OK; s <= TC_ERR_TIMEOUT; s++) {
        const char *str = tc_status_string((tc_status_t)s);
        CHECK(str != NULL && str[0] != '\0');
    }
    CHECK(tc_status_string((tc_status_t)999) != NULL);
    for (int i = 0; i < TT_NDTYPES; i++) {
        CHECK_EQ(tc_dtype_size(tt_dtype(i)), tt_dtype_bytes(tt_dtype(i)));
        CHECK_MSG(strcmp(tc_dtype_name(tt_dtype(i)), tt_dtype_str(tt_dtype(i))) == 0,
                  "tc_dtype_name(%d) is '%s', want '%s'", i, tc_dtype_name(tt_dtype(i)),
                  tt_dtype_str(tt_dtype(i)));
    }
    CHECK_EQ(tc_dtype_size((tc_dtype_t)99), 0);
    /* appended dtypes keep the older values (ABI); the next one is unknown */
    CHECK_EQ((int)TC_FLOAT64, 7);
    CHECK_EQ((int)TC_INT16, 8);
    CHECK_EQ((int)TC_UINT16, 9);
    CHECK_EQ(tc_dtype_size((tc_dtype_t)(TC_UINT16 + 1)), 0);
    CHECK_EQ(strcmp(tc_dtype_name((tc_dtype_t)(TC_UINT16 + 1)), "?"), 0);
    for (int i = 0; i < TT_NOPS; i++) {
        CHECK_EQ(strcmp(tc_op_name(tt_op(i)), tt_op_str(tt_op(i))), 0);
    }
}

TC_CASE(bad_arguments_fail_at_once)
{
    tc_request_t *req;
    float x[6] = {1, 2, 3, 4, 5, 6}, y[6];
    const tc_tensor_t good = {x, TC_FLOAT32, 2, {2, 3}};
    tc_tensor_t t;

    /* NULL req_p: nothing to leave untouched, but TC_ERR_ARG */
    t = good;
    CHECK_STATUS(tc_allreduce("a", &good, y, TC_SUM, NULL), TC_ERR_ARG);
    CHECK_LAST_ERROR_SET();
    CHECK_STATUS(tc_allgather("a", &good, NULL), TC_ERR_ARG);
    CHECK_STATUS(tc_broadcast("a", &t, 0, NULL), TC_ERR_ARG);

    /* names */
    char longname[TC_MAX_NAME_LEN + 2];
    memset(longname, 'n', TC_MAX_NAME_LEN + 1);
    longname[TC_MAX_NAME_LEN + 1] = '\0'; /* one byte too long */
    t = good;
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce(NULL, &good, y, TC_SUM, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce("", &good, y, TC_SUM, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce(longname, &good, y, TC_SUM, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allgather(NULL, &good, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allgather("", &good, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allgather(longname, &good, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast(NULL, &t, 0, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast("", &t, 0, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast(longname, &t, 0, &req));

    /* NULL tensor */
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce("a", NULL, y, TC_SUM, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allgather("a", NULL, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast("a", NULL, 0, &req));

    /* NULL data with elements */
    t = good;
    t.data = NULL;
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce("a", &t, y, TC_SUM, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allgather("a", &t, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast("a", &t, 0, &req));
    t.ndim = 0; /* a scalar has one element */
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce("a", &t, y, TC_SUM, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast("a", &t, 0, &req));

    /* NULL recv with elements */
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce("a", &good, NULL, TC_SUM, &req));

    /* ndim outside 0..8 */
    const int bad_ndims[] = {-1, TC_MAX_DIMS + 1, 1000, -1000};
    for (int i = 0; i < 4; i++) {
        t = good;
        t.ndim = bad_ndims[i];
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce("a", &t, y, TC_SUM, &req));
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allgather("a", &t, &req));
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast("a", &t, 0, &req));
    }

    /* negative dims (also one where the product would be positive) */
    const int64_t bad_shapes[3][2] = {{-1, 3}, {2, -3}, {-2, -3}};
    for (int i = 0; i < 3; i++) {
        t = good;
        t.shape[0] = bad_shapes[i][0];
        t.shape[1] = bad_shapes[i][1];
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce("a", &t, y, TC_SUM, &req));
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allgather("a", &t, &req));
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast("a", &t, 0, &req));
    }

    /* unknown dtype (TC_UINT16 is the last one) */
    const int bad_dtypes[] = {99, -1, TC_UINT16 + 1};
    for (int i = 0; i < 3; i++) {
        t = good;
        t.dtype = (tc_dtype_t)bad_dtypes[i];
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce("a", &t, y, TC_SUM, &req));
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allgather("a", &t, &req));
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast("a", &t, 0, &req));
    }

    /* unknown op */
    const int bad_ops[] = {99, -1, TC_PROD + 1};
    for (int i = 0; i < 3; i++) {
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce("a", &good, y, (tc_op_t)bad_ops[i], &req));
    }

    /* TC_AVG on integers */
    int64_t iv[4] = {1, 2, 3, 4}, io[4];
    const tc_dtype_t ints[6] = {TC_UINT8, TC_INT8, TC_INT32, TC_INT64, TC_INT16, TC_UINT16};
    for (int i = 0; i < 6; i++) {
        tc_tensor_t ti = {iv, ints[i], 1, {2}};
        EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce("a", &ti, io, TC_AVG, &req));
    }

    /* root outside 0..size-1 */
    t = good;
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast("a", &t, -1, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast("a", &t, tt_size, &req));
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_broadcast("a", &t, tt_size + 100, &req));

    /* allgather of a scalar */
    t = good;
    t.ndim = 0;
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allgather("a", &t, &req));

    /* nothing was queued: "a" is not in flight and every rank can run it */
    const float x0[6] = {1, 2, 3, 4, 5, 6};
    CHECK(memcmp(x, x0, sizeof x) == 0);
    named_allreduce("a");

    /* messages are per thread */
    EXPECT_IMMEDIATE(TC_ERR_ARG, tc_allreduce(NULL, &good, y, TC_SUM, &req));
    char mine[512];
    snprintf(mine, sizeof mine, "%s", tc_last_error());
    tt_run_threads(1, other_thread, NULL);
    CHECK_MSG(strcmp(tc_last_error(), mine) == 0,
              "another thread's failure changed this thread's last error: '%s' -> '%s'", mine,
              tc_last_error());
}

TC_CASE(name_lengths_and_bytes)
{
    char name[TC_MAX_NAME_LEN + 1];
    named_allreduce("x");
    memset(name, 'b', 255);
    name[255] = '\0';
    named_allreduce(name);
    memset(name, 'c', TC_MAX_NAME_LEN);
    name[TC_MAX_NAME_LEN] = '\0';
    named_allreduce(name);
    /* names that differ only after the first 255 bytes are different tensors */
    name[TC_MAX_NAME_LEN - 1] = 'd';
    named_allreduce(name);
    /* characters a wire format might trip on */
    named_allreduce("grad/layer.0:w b'\"\\%s%n\t\xc3\xa9");
}

/* Submits the int32 sum allreduce "name" (values rank+1) into *out. */
static tc_request_t *submit_sum(const char *name, int32_t *in, int32_t *out)
{
    *in = tt_rank + 1;
    tc_tensor_t t = {in, TC_INT32, 0, {0}};
    tc_request_t *req = NULL;
    CHECK_OK(tc_allreduce(name, &t, out, TC_SUM, &req));
    return req;
}

/* A duplicate of a request known to be pending: every collective refuses it,
 * and the pending request is untouched (tc_test: not done, TC_OK, no error,
 * no output yet). */
static void check_duplicate_of_pending(const char *name, tc_request_t *pending)
{
    tc_request_t *req;
    int32_t v = 5, o;
    tc_tensor_t t = {&v, TC_INT32, 0, {0}};
    tc_tensor_t t1 = {&v, TC_INT32, 1, {1}};
    EXPECT_IMMEDIATE(TC_ERR_DUPLICATE, tc_allreduce(name, &t, &o, TC_SUM, &req));
    EXPECT_IMMEDIATE(TC_ERR_DUPLICATE, tc_allgather(name, &t1, &req));
    EXPECT_IMMEDIATE(TC_ERR_DUPLICATE, tc_broadcast(name, &t, 0, &req));
    int done = 7;
    CHECK_OK(tc_test(pending, &done));
    CHECK_EQ(done, 0);
    CHECK_MSG(tc_request_error(pending)[0] == '\0', "pending request has error '%s'",
              tc_request_error(pending));
    tc_tensor_t out;
    CHECK_STATUS(tc_request_output(pending, &out), TC_ERR_STATE);
}

TC_CASE(duplicates_and_request_states)
{
    int32_t inx, outx = -1, iny, outy = -1, ing, outg;
    if (tt_size >= 2) {
        /*
         * Rank 0 holds "dup/y" pending until every other rank has checked
         * "dup/x"; the others hold "dup/x" pending until rank 0 has checked
         * "dup/y". The gate allreduce orders the two.
         */
        tc_request_t *x = NULL, *y = NULL, *g;
        if (tt_rank == 0) {
            y = submit_sum("dup/y", &iny, &outy);
            check_duplicate_of_pending("dup/y", y); /* nobody else has "dup/y" yet */
            g = submit_sum("dup/gate", &ing, &outg);
            wait_ok(g, "dup/gate");
            x = submit_sum("dup/x", &inx, &outx);
        } else {
            x = submit_sum("dup/x", &inx, &outx);
            check_duplicate_of_pending("dup/x", x); /* rank 0 has no "dup/x" yet */
            g = submit_sum("dup/gate", &ing, &outg);
            wait_ok(g, "dup/gate");
            y = submit_sum("dup/y", &iny, &outy);
        }
        /* the first requests complete normally */
        wait_ok(x, "dup/x");
        wait_ok(y, "dup/y");
        CHECK_EQ(outx, tt_size * (tt_size + 1) / 2);
        CHECK_EQ(outy, tt_size * (tt_size + 1) / 2);
    } else {
        /*
         * One rank: a request may complete as soon as the engine thread sees
         * it, so a duplicate is refused only while it has not. Repeat until
         * one is seen; whenever the second submission is accepted the first
         * must already have completed.
         */
        int seen = 0;
        iny = 1;
        for (int i = 0; i < 200 && !seen; i++) {
            tc_request_t *a = submit_sum("dup/one", &inx, &outx), *b = TT_SENTINEL;
            tc_status_t st =
                tc_allreduce("dup/one", &(tc_tensor_t){&iny, TC_INT32, 0, {0}}, &outy, TC_SUM, &b);
            if (st == TC_ERR_DUPLICATE) {
                CHECK(b == TT_SENTINEL);
                CHECK_LAST_ERROR_SET();
                seen = 1;
            } else {
                CHECK_OK(st);
                int done = 0;
                CHECK_OK(tc_test(a, &done));
                CHECK_MSG(done == 1, "a name was accepted while its request was pending");
                wait_ok(b, "dup/one (second)");
            }
            wait_ok(a, "dup/one");
            CHECK_EQ(outx, 1);
        }
        CHECK_MSG(seen, "200 immediate resubmissions of a name were never refused as duplicates");
    }
    /* completed names can be reused, several times */
    for (int i = 0; i < 3; i++) {
        named_allreduce("dup/x");
        named_allreduce("dup/y");
    }

    /* free of a pending request waits for it: rank 0 submits late */
    if (tt_rank == 0) {
        tt_sleep_ms(100);
    }
    outx = -1;
    tc_request_t *f = submit_sum("free/pending", &inx, &outx);
    tc_request_free(f);
    CHECK_EQ(outx, tt_size * (tt_size + 1) / 2);

    /* a completed request: tc_test and tc_request_output agree */
    tc_request_t *c = submit_sum("done/one", &inx, &outx);
    CHECK_OK(tc_wait(c));
    int done = 0;
    CHECK_OK(tc_test(c, &done));
    CHECK_EQ(done, 1);
    tc_tensor_t out;
    CHECK_OK(tc_request_output(c, &out));
    CHECK(out.data == &outx);
    CHECK_EQ(out.ndim, 0);
    CHECK_EQ(out.dtype, TC_INT32);
    CHECK_EQ(((int32_t *)out.data)[0], tt_size * (tt_size + 1) / 2);
    tc_request_free(c);

    /* a failed request (needs two ranks to disagree) */
    if (tt_size >= 2) {
        float v[4] = {0}, o[4];
        tc_tensor_t t = {v, TC_FLOAT32, 1, {tt_rank == 0 ? 3 : 4}};
        tc_request_t *m = NULL;
        CHECK_OK(tc_allreduce("failed/one", &t, o, TC_SUM, &m));
        CHECK_STATUS(tc_wait(m), TC_ERR_MISMATCH);
        done = 0;
        CHECK_STATUS(tc_test(m, &done), TC_ERR_MISMATCH);
        CHECK_EQ(done, 1);
        CHECK_STATUS(tc_request_output(m, &out), TC_ERR_MISMATCH);
        CHECK_STR_CONTAINS(tc_request_error(m), "failed/one");
        tc_request_free(m);
    }
    tc_request_free(NULL);
}

TC_CASE(zero_element_tensors)
{
    tc_request_t *r[8];
    float buf[4];
    int n = 0;
    /* allreduce: NULL data and NULL recv, and real pointers, in place too */
    tc_tensor_t a0 = {NULL, TC_FLOAT32, 1, {0}};
    CHECK_OK(tc_allreduce("zero/ar-null", &a0, NULL, TC_SUM, &r[n++]));
    tc_tensor_t a1 = {buf, TC_INT8, 3, {2, 0, 5}};
    CHECK_OK(tc_allreduce("zero/ar-out", &a1, buf + 2, TC_MAX, &r[n++]));
    CHECK_OK(tc_allreduce("zero/ar-in", &a1, buf, TC_PROD, &r[n++]));
    /* broadcast from the last rank */
    tc_tensor_t b0 = {NULL, TC_FLOAT64, 2, {0, 7}};
    CHECK_OK(tc_broadcast("zero/bc", &b0, tt_size - 1, &r[n++]));
    /* allgather: every rank 0 rows */
    tc_tensor_t g0 = {NULL, TC_BFLOAT16, 2, {0, 4}};
    CHECK_OK(tc_allgather("zero/ag", &g0, &r[n++]));
    /* allgather: rows of zero elements, a different number per rank */
    tc_tensor_t g1 = {buf, TC_UINT8, 2, {tt_rank + 1, 0}};
    CHECK_OK(tc_allgather("zero/ag-rows", &g1, &r[n++]));

    for (int i = 0; i < n; i++) {
        tc_status_t st = tc_wait(r[i]);
        CHECK_MSG(st == TC_OK, "zero-element request %d: %s: %s", i, tc_status_string(st),
                  tc_request_error(r[i]));
    }
    tc_tensor_t out;
    CHECK_OK(tc_request_output(r[0], &out));
    CHECK_EQ(out.ndim, 1);
    CHECK_EQ(out.shape[0], 0);
    CHECK_OK(tc_request_output(r[4], &out));
    CHECK_EQ(out.dtype, TC_BFLOAT16);
    CHECK_EQ(out.ndim, 2);
    CHECK_EQ(out.shape[0], 0);
    CHECK_EQ(out.shape[1], 4);
    CHECK_OK(tc_request_output(r[5], &out));
    CHECK_EQ(out.dtype, TC_UINT8);
    CHECK_EQ(out.ndim, 2);
    CHECK_EQ(out.shape[0], tt_size * (tt_size + 1) / 2);
    CHECK_EQ(out.shape[1], 0);
    for (int i = 0; i < n; i++) {
        tc_request_free(r[i]);
    }
}

static void test_after_shutdown(void)
{
    tc_request_t *req;
    float x = 1, y;
    tc_tensor_t t = {&x, TC_FLOAT32, 0, {0}};
    tc_tensor_t t1 = {&x, TC_FLOAT32, 1, {1}};
    EXPECT_IMMEDIATE(TC_ERR_SHUTDOWN, tc_allreduce("late", &t, &y, TC_SUM, &req));
    EXPECT_IMMEDIATE(TC_ERR_SHUTDOWN, tc_allgather("late", &t1, &req));
    EXPECT_IMMEDIATE(TC_ERR_SHUTDOWN, tc_broadcast("late", &t, 0, &req));
    CHECK_STATUS(tc_shutdown(), TC_ERR_STATE);
    CHECK_LAST_ERROR_SET();
    tc_request_free(NULL);
    /* tcoll started MPI: it stays initialized for a later tc_init (see
     * test_reinit) and is finalized at exit (mpiexec fails the job if not) */
    int flag = 1;
    MPI_Finalized(&flag);
    CHECK_MSG(flag == 0, "tc_shutdown finalized MPI: a later tc_init could not start");
    MPI_Initialized(&flag);
    CHECK_EQ(flag, 1);
}

/* test_before_init runs before the skeleton's tc_init, test_after_shutdown
 * after its tc_shutdown. */
int main(int argc, char **argv)
{
    return tt_mpi_main(
        argc, argv,
        &(tt_program_t){.before_init = test_before_init, .after_shutdown = test_after_shutdown});
}
