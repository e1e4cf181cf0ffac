/*
 * test_shutdown.c - shutdown always finishes, whoever starts it and whatever
 * is pending. One case per run (each ends tcoll), chosen with --case:
 *
 *   rank0_first  rank 0 shuts down while the others have requests pending
 *                that can never run (names rank 0 never submits);
 *   last_first   the last rank shuts down first; the others are pending
 *                (even ranks) or idle (odd ranks);
 *   uneven       every rank works, then rank r sleeps r*50 ms and shuts down;
 *                odd ranks have a request pending that can never run;
 *   threads      on every rank four threads are blocked (tc_wait, tc_wait,
 *                a tc_test loop, tc_request_free) on requests that can never
 *                run when rank 1 shuts down.
 *
 * Afterwards: pending requests fail with TC_ERR_SHUTDOWN (with a message,
 * and tc_request_output says so too), later submissions fail at once with
 * TC_ERR_SHUTDOWN and create no request, each rank's own first tc_shutdown
 * returns TC_OK and the second TC_ERR_STATE. A rank learns of another rank's
 * shutdown by waiting on a request that can never complete, never by sleeping.
 */
#define _POSIX_C_SOURCE 200809L

#include "mpi_common.h"

static float g_never_in[16], g_never_out[16];

/* An allreduce under a name only this rank (or only some ranks) submits. */
static tc_request_t *submit_named(const char *name, int slot)
{
    tc_tensor_t t = {&g_never_in[slot], TC_FLOAT32, 1, {1}};
    tc_request_t *req = NULL;
    CHECK_OK(tc_allreduce(name, &t, &g_never_out[slot], TC_SUM, &req));
    CHECK(req != NULL);
    return req;
}

static tc_request_t *submit_never(const char *tag, int slot)
{
    char name[64];
    snprintf(name, sizeof name, "never/%d/%s", tt_rank, tag);
    return submit_named(name, slot);
}

/* A request that failed because of the shutdown. */
static void check_shut(tc_request_t *req, tc_status_t st, const char *what)
{
    CHECK_MSG(st == TC_ERR_SHUTDOWN, "%s: got %s (%s), want shutdown", what, tc_status_string(st),
              tc_request_error(req));
    const char *msg = tc_request_error(req);
    CHECK_MSG(msg != NULL && msg[0] != '\0', "%s: failed with no message", what);
    int done = 0;
    CHECK_STATUS(tc_test(req, &done), TC_ERR_SHUTDOWN);
    CHECK_EQ(done, 1);
    tc_tensor_t out;
    CHECK_STATUS(tc_request_output(req, &out), TC_ERR_SHUTDOWN);
}

static void wait_shut(tc_request_t *req, const char *what)
{
    check_shut(req, tc_wait(req), what);
    tc_request_free(req);
}

/* Every collective fails at once, with no request. */
static void check_submissions_refused(void)
{
    tc_request_t *req;
    float x = 1, y;
    tc_tensor_t t = {&x, TC_FLOAT32, 0, {0}};
    tc_tensor_t t1 = {&x, TC_FLOAT32, 1, {1}};
    EXPECT_IMMEDIATE(TC_ERR_SHUTDOWN, tc_allreduce("after", &t, &y, TC_SUM, &req));
    EXPECT_IMMEDIATE(TC_ERR_SHUTDOWN, tc_allgather("after", &t1, &req));
    EXPECT_IMMEDIATE(TC_ERR_SHUTDOWN, tc_broadcast("after", &t, 0, &req));
}

/* This rank's own shutdown: first call TC_OK, then TC_ERR_STATE. */
static void own_shutdown(void)
{
    CHECK_OK(tc_shutdown());
    check_submissions_refused();
    CHECK_STATUS(tc_shutdown(), TC_ERR_STATE);
}

/* An allreduce every rank submits; on ranks other than `first` it may end
 * with TC_ERR_SHUTDOWN when `first` shuts down right after it completes. */
static void sync_all(const char *name, int first)
{
    int32_t one = 1, sum = 0;
    tc_tensor_t t = {&one, TC_INT32, 0, {0}};
    tc_request_t *req = NULL;
    CHECK_OK(tc_allreduce(name, &t, &sum, TC_SUM, &req));
    tc_status_t st = tc_wait(req);
    if (tt_rank == first) {
        CHECK_MSG(st == TC_OK, "%s: %s: %s", name, tc_status_string(st), tc_request_error(req));
    } else {
        CHECK_MSG(st == TC_OK || st == TC_ERR_SHUTDOWN, "%s: %s: %s", name, tc_status_string(st),
                  tc_request_error(req));
    }
    if (st == TC_OK) {
        CHECK_EQ(sum, tt_size);
    }
    tc_request_free(req);
}

/* A normal allreduce that must succeed (nobody can have shut down yet). */
static void work(const char *name)
{
    int32_t v[5], o[5];
    for (int i = 0; i < 5; i++) {
        v[i] = tt_rank + i;
    }
    tc_tensor_t t = {v, TC_INT32, 1, {5}};
    tc_request_t *req = NULL;
    CHECK_OK(tc_allreduce(name, &t, o, TC_SUM, &req));
    tc_status_t st = tc_wait(req);
    CHECK_MSG(st == TC_OK, "%s: %s: %s", name, tc_status_string(st), tc_request_error(req));
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(o[i], tt_size * (tt_size - 1) / 2 + tt_size * i);
    }
    tc_request_free(req);
}

/* ---- variants -------------------------------------------------------------- */

static void variant_first(int first)
{
    work("work/0");
    work("work/1");
    if (tt_size == 1) {
        own_shutdown();
        return;
    }
    tc_request_t *never = NULL, *partial = NULL;
    /* ranks other than `first`: a name `first` never submits; for the last
     * variant only the even ranks, the odd ones stay idle */
    int pending = tt_rank != first && (first == 0 || tt_rank % 2 == 0);
    if (pending) {
        never = submit_never("a", 0);
        partial = submit_named("partial", 1);
    }
    if (tt_rank == first) {
        never = submit_never("own", 0); /* even first's own pending request fails */
    }
    sync_all("sync", first);

    if (tt_rank == first) {
        own_shutdown();
        wait_shut(never, "own pending request");
    } else if (pending) {
        wait_shut(never, "never"); /* returns once the shutdown reaches us */
        wait_shut(partial, "partial");
        check_submissions_refused(); /* the shutdown has reached us */
        own_shutdown();
    } else {
        /* idle: the shutdown may or may not have reached us yet */
        tt_sleep_ms(100);
        tc_request_t *req = TT_SENTINEL;
        float x = 1, y;
        tc_tensor_t t = {&x, TC_FLOAT32, 0, {0}};
        char name[32];
        snprintf(name, sizeof name, "late/%d", tt_rank);
        tc_status_t st = tc_allreduce(name, &t, &y, TC_SUM, &req);
        if (st == TC_OK) {
            wait_shut(req, "late submission"); /* no other rank submits it */
        } else {
            CHECK_STATUS(st, TC_ERR_SHUTDOWN);
            CHECK(req == TT_SENTINEL);
        }
        own_shutdown();
    }
}

static void variant_uneven(void)
{
    tc_request_t *never = NULL;
    if (tt_size > 1 && tt_rank % 2 == 1) {
        never = submit_never("odd", 0); /* before anyone can shut down */
    }
    const int steps = 20;
    for (int s = 0; s < steps; s++) {
        int32_t v = tt_rank + s, o = 0;
        tc_tensor_t t = {&v, TC_INT32, 0, {0}};
        tc_request_t *req = NULL;
        CHECK_OK(tc_allreduce("step", &t, &o, TC_SUM, &req)); /* one name, reused */
        tc_status_t st = tc_wait(req);
        if (s < steps - 1) {
            /* step s+1 cannot complete anywhere before every rank's step s
             * has, so nobody can have shut down yet */
            CHECK_MSG(st == TC_OK, "step %d: %s: %s", s, tc_status_string(st),
                      tc_request_error(req));
        } else {
            CHECK_MSG(st == TC_OK || st == TC_ERR_SHUTDOWN, "step %d: %s: %s", s,
                      tc_status_string(st), tc_request_error(req));
        }
        if (st == TC_OK) {
            CHECK_EQ(o, tt_size * (tt_size - 1) / 2 + tt_size * s);
        }
        tc_request_free(req);
    }
    tt_sleep_ms(50L * tt_rank);
    CHECK_OK(tc_shutdown());
    if (never) {
        wait_shut(never, "pending at shutdown");
    }
    check_submissions_refused();
    CHECK_STATUS(tc_shutdown(), TC_ERR_STATE);
}

/* -- threads blocked at shutdown -- */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_ready;

static void mark_ready(void)
{
    pthread_mutex_lock(&g_mu);
    g_ready++;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
}

static void blocked_thread(int ti, void *arg)
{
    (void)arg;
    char tag[16];
    snprintf(tag, sizeof tag, "t%d", ti);
    tc_request_t *req = submit_never(tag, ti);
    mark_ready();
    switch (ti) {
    case 0:
    case 1: wait_shut(req, "thread in tc_wait"); break;
    case 2: {
        int done = 0;
        tc_status_t st;
        while ((st = tc_test(req, &done)) == TC_OK && !done) {
            tt_sleep_ms(1);
        }
        CHECK_EQ(done, 1);
        check_shut(req, st, "thread in a tc_test loop");
        tc_request_free(req);
        break;
    }
    default:
        tc_request_free(req); /* waits for the request first */
        break;
    }
}

static void variant_threads(void)
{
    const int shutter = 1;
    work("work/0");
    g_ready = 0;
    pthread_t threads[4];
    tt_thread_arg_t args[4];
    for (int i = 0; i < 4; i++) {
        args[i].fn = blocked_thread;
        args[i].arg = NULL;
        args[i].index = i;
        CHECK_EQ(pthread_create(&threads[i], NULL, tt_thread_main, &args[i]), 0);
    }
    pthread_mutex_lock(&g_mu);
    while (g_ready < 4) {
        pthread_cond_wait(&g_cv, &g_mu);
    }
    pthread_mutex_unlock(&g_mu);
    /* every rank's threads have submitted once this completes anywhere */
    sync_all("sync", shutter);
    if (tt_rank == shutter) {
        tt_sleep_ms(50); /* let the local threads block */
        CHECK_OK(tc_shutdown());
    }
    for (int i = 0; i < 4; i++) {
        CHECK_EQ(pthread_join(threads[i], NULL), 0);
    }
    check_submissions_refused();
    if (tt_rank != shutter) {
        CHECK_OK(tc_shutdown());
    }
    CHECK_STATUS(tc_shutdown(), TC_ERR_STATE);
}

TC_CASE(rank0_first)
{
    variant_first(0);
    tt_say("test_shutdown rank0_first: OK on %d ranks\n", tt_size);
}

TC_CASE(last_first)
{
    variant_first(tt_size - 1);
    tt_say("test_shutdown last_first: OK on %d ranks\n", tt_size);
}

TC_CASE(uneven)
{
    variant_uneven();
    tt_say("test_shutdown uneven: OK on %d ranks\n", tt_size);
}

TC_CASE(threads)
{
    CHECK_MSG(tt_size >= 2, "the threads variant needs 2 or more ranks");
    variant_threads();
    tt_say("test_shutdown threads: OK on %d ranks\n", tt_size);
}

static void fill_never_inputs(void)
{
    for (int i = 0; i < 16; i++) {
        g_never_in[i] = (float)i;
    }
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv,
                       &(tt_program_t){.case_ends_tcoll = 1, .before_init = fill_never_inputs});
}
