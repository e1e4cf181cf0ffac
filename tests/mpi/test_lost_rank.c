/*
 * test_lost_rank.c - a rank that dies must not leave the others blocked
 * (np >= 2, under a launcher that lets the job go on when a rank dies:
 * run_lost_rank.sh passes Open MPI's --enable-recovery). The last rank is
 * killed with SIGKILL; one case per run (it ends tcoll), chosen with --case:
 *
 *   negotiation  it dies between two allreduces, so the others wait for its
 *                negotiation message;
 *   transfer     a thread kills it during a stream of 64 MiB allreduces, so
 *                the others are most likely inside a transfer with it;
 *   allgather, broadcast, reducescatter, alltoall
 *                the same during a stream of that kind (16 MiB from each
 *                rank; inside a node: direct or through the slots);
 *   channel      it dies while the others keep putting into its memory
 *                through port channels (one into a shared region, one with
 *                process_vm_writev): their flushes and a wait on its
 *                semaphore must fail with TC_ERR_TRANSPORT, not hang;
 *   chandev      the same through the handles of tcoll_channel_device.h
 *                (what a GPU kernel calls; here host threads): the device
 *                flush reports the failure (1), a device wait with a time
 *                limit ends, and the host's flush then says why.
 *
 * Every survivor's pending request must fail with TC_ERR_TRANSPORT and a
 * message naming the lost rank within TCOLL_PEER_TIMEOUT_S (3 s here) plus a
 * margin, later submissions must fail at once, tc_shutdown must return
 * an error promptly instead of hanging in MPI, and a tc_init after it must
 * refuse, saying that the run ended after a failure. Each survivor prints one
 * "survived" line; the wrapper counts them.
 */
#define _GNU_SOURCE

#include "mpi_common.h"
#include "tcoll_channel.h"
#include "tcoll_channel_device.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#define PEER_TIMEOUT_S 3 /* TCOLL_PEER_TIMEOUT_S, set by run_lost_rank.sh */
#define MARGIN_S 20      /* generous: the machine is oversubscribed */

static void *killer(void *arg)
{
    (void)arg;
    tt_sleep_ms(400);
    raise(SIGKILL);
    return NULL;
}

/* One collective of mode's kind on in (count floats, all 1) and its
 * request; out receives an allreduce's result. */
static tc_status_t submit(const char *mode, float *in, float *out, size_t count,
                          tc_request_t **req_p)
{
    tc_tensor_t t = {in, TC_FLOAT32, 1, {(int64_t)count}};

    if (strcmp(mode, "allgather") == 0) {
        return tc_allgather("lost/gather", &t, req_p);
    }
    if (strcmp(mode, "broadcast") == 0) {
        t.data = out;
        return tc_broadcast("lost/bcast", &t, 0, req_p);
    }
    if (strcmp(mode, "reducescatter") == 0) {
        return tc_reducescatter("lost/scatter", &t, TC_SUM, req_p);
    }
    if (strcmp(mode, "alltoall") == 0) {
        t.shape[0] = (int64_t)(count / (size_t)tt_size * (size_t)tt_size);
        return tc_alltoall("lost/a2a", &t, NULL, req_p);
    }
    return tc_allreduce("lost/grad", &t, out, TC_SUM, req_p);
}

/* The first and last element of req's result, as mode's kind gives them. */
static void check_result(const char *mode, const tc_request_t *req, const float *out, size_t count)
{
    const float want = strcmp(mode, "transfer") == 0 || strcmp(mode, "negotiation") == 0 ||
                               strcmp(mode, "reducescatter") == 0
                           ? (float)tt_size
                           : 1.0f;
    tc_tensor_t o = {(void *)(uintptr_t)out, TC_FLOAT32, 1, {(int64_t)count}};
    const float *v;

    if (strcmp(mode, "broadcast") != 0 && strcmp(mode, "transfer") != 0 &&
        strcmp(mode, "negotiation") != 0) {
        CHECK_OK(tc_request_output(req, &o));
    }
    v = o.data;
    CHECK(o.shape[0] > 0 && v[0] == want && v[o.shape[0] - 1] == want);
}

static void lose_last_rank(const char *mode)
{
    const int transfer = strcmp(mode, "negotiation") != 0;
    size_t count = strcmp(mode, "transfer") == 0 ? (size_t)16 << 20
                   : transfer                    ? (size_t)4 << 20
                                                 : 1000;
    float *in, *out;
    tc_tensor_t t;
    tc_request_t *req = NULL;
    tc_status_t st = TC_OK;
    double t0 = 0, waited;
    char want[64];
    int rank, size, i;
    pthread_t th;

    rank = tt_rank;
    size = tt_size;
    CHECK_MSG(size >= 2, "test_lost_rank needs 2 or more ranks");
    in = tt_xmalloc(count * sizeof(float));
    out = tt_xmalloc(count * sizeof(float));
    for (i = 0; i < (int)count; i++) {
        in[i] = 1.0f;
        out[i] = 1.0f;
    }
    t = (tc_tensor_t){in, TC_FLOAT32, 1, {(int64_t)count}};
    if (transfer && rank == size - 1) {
        CHECK_EQ(pthread_create(&th, NULL, killer, NULL), 0);
    }
    for (i = 0; i < 1000000; i++) {
        if (!transfer && i == 20 && rank == size - 1) {
            raise(SIGKILL);
        }
        t0 = tt_now();
        CHECK_OK(submit(mode, in, out, count, &req));
        st = tc_wait(req);
        if (st != TC_OK) {
            break;
        }
        check_result(mode, req, out, count);
        tc_request_free(req);
    }
    CHECK_MSG(rank != size - 1, "the last rank was not killed");
    waited = tt_now() - t0;
    snprintf(want, sizeof want, "lost rank %d", size - 1);
    CHECK_MSG(st == TC_ERR_TRANSPORT, "rank %d: %s (%s)", rank, tc_status_string(st),
              tc_request_error(req));
    CHECK_MSG(strstr(tc_request_error(req), want) != NULL, "rank %d: message '%s' lacks '%s'", rank,
              tc_request_error(req), want);
    CHECK_MSG(waited < PEER_TIMEOUT_S + MARGIN_S, "rank %d: the failure took %.1f s", rank, waited);
    tc_request_free(req);
    req = TT_SENTINEL;
    CHECK_STATUS(tc_allreduce("lost/after", &t, out, TC_SUM, &req), TC_ERR_TRANSPORT);
    CHECK(req == TT_SENTINEL);
    t0 = tt_now();
    st = tc_shutdown();
    CHECK_MSG(st == TC_ERR_TRANSPORT, "rank %d: tc_shutdown: %s (%s)", rank, tc_status_string(st),
              tc_last_error());
    CHECK_MSG(tt_now() - t0 < MARGIN_S, "rank %d: tc_shutdown took %.1f s", rank, tt_now() - t0);
    /* MPI was left as it was: tcoll cannot start again, and says why */
    CHECK_STATUS(tc_init(), TC_ERR_STATE);
    CHECK_STR_CONTAINS(tc_last_error(), "previous run in this process ended after a failure");
    CHECK_STR_CONTAINS(tc_last_error(), "lost rank");
    printf("test_lost_rank %s: rank %d survived: failed after %.1f s: %s\n", mode, rank, waited,
           want);
    fflush(stdout);
    free(in);
    free(out);
}

TC_CASE(negotiation)
{
    lose_last_rank("negotiation");
}

TC_CASE(transfer)
{
    lose_last_rank("transfer");
}

TC_CASE(allgather)
{
    lose_last_rank("allgather");
}

TC_CASE(broadcast)
{
    lose_last_rank("broadcast");
}

TC_CASE(reducescatter)
{
    lose_last_rank("reducescatter");
}

TC_CASE(alltoall)
{
    lose_last_rank("alltoall");
}

#define CHAN_BYTES (1u << 20)

TC_CASE(channel)
{
    const int last = tt_size - 1;
    tc_chan_ctx_t *ctx;
    char *shared, *priv = tt_xmalloc(CHAN_BYTES);
    tc_mem_t *mshared, *mpriv;
    tc_rmem_t **rshared = calloc((size_t)tt_size, sizeof(*rshared));
    tc_rmem_t **rpriv = calloc((size_t)tt_size, sizeof(*rpriv));
    tc_portchan_t *to_shared = NULL, *to_priv = NULL;
    tc_sem_t *s0 = NULL, *s1 = NULL;
    tc_status_t st1 = TC_OK, st2 = TC_OK;
    tc_request_t *req;
    double t0;
    float x = 1, y;
    tc_tensor_t t = {&x, TC_FLOAT32, 1, {1}};
    int i;

    CHECK_MSG(tt_size >= 2, "test_lost_rank needs 2 or more ranks");
    CHECK_OK(tc_chan_ctx_create(NULL, &ctx));
    CHECK_OK(tc_mem_alloc(CHAN_BYTES, (void **)&shared));
    CHECK_OK(tc_mem_register(ctx, shared, CHAN_BYTES, &mshared));
    CHECK_OK(tc_mem_register(ctx, priv, CHAN_BYTES, &mpriv));
    CHECK_OK(tc_mem_exchange(ctx, "lost/shared", mshared, rshared));
    CHECK_OK(tc_mem_exchange(ctx, "lost/priv", mpriv, rpriv));
    if (tt_rank != last) {
        CHECK_OK(tc_sem_create(ctx, last, 0, &s0));
        CHECK_OK(tc_sem_create(ctx, last, 1, &s1));
        CHECK_OK(tc_portchan_create(s0, mshared, rshared[last], &to_shared));
        CHECK_OK(tc_portchan_create(s1, mpriv, rpriv[last], &to_priv));
    }
    CHECK_OK(tc_allreduce("lost/ready", &t, &y, TC_SUM, &req));
    CHECK_OK(tc_wait(req));
    tc_request_free(req);
    if (tt_rank == last) {
        tt_sleep_ms(200);
        raise(SIGKILL);
    }
    t0 = tt_now();
    for (i = 0; st1 == TC_OK || st2 == TC_OK; i++) {
        if (st1 == TC_OK) {
            CHECK_OK(tc_portchan_put_with_signal(to_shared, 0, 0, CHAN_BYTES));
            st1 = tc_portchan_flush(to_shared, -1);
        }
        if (st2 == TC_OK) {
            CHECK_OK(tc_portchan_put_with_signal(to_priv, 0, 0, CHAN_BYTES));
            st2 = tc_portchan_flush(to_priv, -1);
        }
        CHECK_MSG(tt_now() - t0 < MARGIN_S,
                  "rank %d: puts to a dead rank still succeed "
                  "after %.1f s",
                  tt_rank, tt_now() - t0);
    }
    CHECK_EQ(st1, TC_ERR_TRANSPORT);
    CHECK_EQ(st2, TC_ERR_TRANSPORT);
    /* the wait on its semaphore ends too, without a limit given */
    CHECK_EQ(tc_sem_wait(s0, -1), TC_ERR_TRANSPORT);
    CHECK_STR_CONTAINS(tc_last_error(), "has exited");
    CHECK_EQ(tc_portchan_destroy(to_shared), TC_ERR_TRANSPORT); /* fails again, said again */
    CHECK_EQ(tc_portchan_destroy(to_priv), TC_ERR_TRANSPORT);
    tc_sem_destroy(s0);
    tc_sem_destroy(s1);
    for (i = 0; i < tt_size; i++) {
        tc_mem_close(rshared[i]);
        tc_mem_close(rpriv[i]);
    }
    if (getenv("TCOLL_RANKS_PER_NODE") != NULL) {
        /* Across nodes destroying is collective: the lost rank never comes. */
        CHECK_EQ(tc_chan_ctx_destroy(ctx), TC_ERR_TRANSPORT);
        CHECK_STR_CONTAINS(tc_last_error(), "not every rank destroyed the context");
    } else {
        CHECK_OK(tc_chan_ctx_destroy(ctx));
    }
    CHECK_OK(tc_mem_free(shared));
    /* the engine finds the lost rank too (across nodes, already during the
     * destroy: then the submission itself fails); then shutdown returns */
    st1 = tc_allreduce("lost/after", &t, &y, TC_SUM, &req);
    if (st1 == TC_OK) {
        st1 = tc_wait(req);
        tc_request_free(req);
    }
    CHECK_EQ(st1, TC_ERR_TRANSPORT);
    CHECK_STR_CONTAINS(tc_last_error(), "lost rank");
    CHECK_EQ(tc_shutdown(), TC_ERR_TRANSPORT);
    printf("test_lost_rank channel: rank %d survived: failed after %.1f s: rank %d has exited\n",
           tt_rank, tt_now() - t0, last);
    fflush(stdout);
    free(rshared);
    free(rpriv);
    free(priv);
}

TC_CASE(chandev)
{
    const int last = tt_size - 1;
    tc_chan_ctx_t *ctx;
    char *shared;
    tc_mem_t *mem;
    tc_rmem_t **rmems = calloc((size_t)tt_size, sizeof(*rmems));
    tc_portchan_t *ch = NULL;
    tc_portchan_device_t h;
    tc_sem_device_t back;
    tc_sem_t *s = NULL;
    tc_request_t *req;
    float x = 1, y;
    tc_tensor_t t = {&x, TC_FLOAT32, 1, {1}};
    double t0;
    int i, failed = 0;

    CHECK_MSG(tt_size >= 2, "test_lost_rank needs 2 or more ranks");
    CHECK_OK(tc_chan_ctx_create(NULL, &ctx));
    CHECK_OK(tc_mem_alloc(CHAN_BYTES, (void **)&shared));
    CHECK_OK(tc_mem_register(ctx, shared, CHAN_BYTES, &mem));
    CHECK_OK(tc_mem_exchange(ctx, "lost/dev", mem, rmems));
    if (tt_rank != last) {
        CHECK_OK(tc_sem_create(ctx, last, 0, &s));
        CHECK_OK(tc_portchan_create(s, mem, rmems[last], &ch));
        CHECK_OK(tc_portchan_device_handle(ch, &h));
        CHECK_OK(tc_sem_device_handle(s, &back));
    }
    CHECK_OK(tc_allreduce("lost/ready", &t, &y, TC_SUM, &req));
    CHECK_OK(tc_wait(req));
    tc_request_free(req);
    if (tt_rank == last) {
        tt_sleep_ms(200);
        raise(SIGKILL);
    }
    t0 = tt_now();
    for (i = 0; !failed; i++) {
        CHECK_EQ(tc_portchan_device_put_with_signal(&h, 0, 0, CHAN_BYTES), 0);
        failed = tc_portchan_device_flush(&h);
        CHECK_MSG(tt_now() - t0 < MARGIN_S,
                  "rank %d: device puts to a dead rank still succeed "
                  "after %.1f s",
                  tt_rank, tt_now() - t0);
    }
    CHECK_EQ(tc_sem_device_wait(&back, 100000000), 1); /* no signal from the dead: times out */
    CHECK_EQ(tc_portchan_flush(ch, -1), TC_ERR_TRANSPORT);
    CHECK_STR_CONTAINS(tc_last_error(), "has exited");
    (void)tc_portchan_destroy(ch);
    tc_sem_destroy(s);
    for (i = 0; i < tt_size; i++) {
        tc_mem_close(rmems[i]);
    }
    if (getenv("TCOLL_RANKS_PER_NODE") != NULL) {
        CHECK_EQ(tc_chan_ctx_destroy(ctx), TC_ERR_TRANSPORT);
    } else {
        (void)tc_chan_ctx_destroy(ctx);
    }
    CHECK_OK(tc_mem_free(shared));
    (void)tc_shutdown();
    printf("test_lost_rank chandev: rank %d survived: the device flush failed after %.1f s: "
           "rank %d has exited\n",
           tt_rank, tt_now() - t0, last);
    fflush(stdout);
    free(rmems);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){.case_ends_tcoll = 1});
}
