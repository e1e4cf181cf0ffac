/*
 * test_gpu_chan_host.c - port channels on CUDA device memory driven by host
 * threads (no kernel of its own, so it also runs against the CUDA runtime
 * stand-in): in a TC_CHAN_CUDA context each rank registers device memory
 * and puts into its right neighbour's.
 *  - device to device: a buffer sent in puts of uneven sizes then one
 *    signal; the neighbour checks every byte; after the flush the source
 *    is overwritten and sent again (flush means done at the destination:
 *    the second round's bytes, never a mix);
 *  - host to device and device to host, in the same context;
 *  - a put past the peer's region is refused at once and moves nothing;
 *  - ranks on GPUs without peer access: the exchange of device memory
 *    fails on every rank, saying why (run alone where that is so);
 *  - the same context's device handles (tcoll_channel_device.h) driven by
 *    a host thread where the GPU reaches registered host memory at its host
 *    address (cudaDevAttrCanUseHostPointerForRegisteredMem): port channel
 *    puts pushed into the device proxy's mapped FIFO, a device flush, a
 *    device wait on the mapped semaphore;
 *  - built as test_gpu_chan_host_killed (TC_TEST_KILLED), case killed
 *    only, under tests/mpi/run_lost_rank.sh: the last rank is killed while
 *    the others put device memory into its device memory; each survivor's
 *    flush fails with TC_ERR_TRANSPORT naming it, and nothing hangs.
 * On one node the proxy copies device to device into the peer's memory
 * opened through CUDA IPC; across pretend nodes (TCOLL_RANKS_PER_NODE=1,
 * TCOLL_MPI_THREAD=multiple) staged through page-locked host memory over
 * MPI. Exit 77 with one line without a usable CUDA device.
 */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>

#include <cuda_runtime_api.h>

#include "chan_ring.h"
#include "cuda_check.h"
#include "tcoll_channel_device.h"

#define DBYTES (6u << 20) /* per rank: first half sent from, second received into */
#define DHALF (DBYTES / 2)

typedef struct {
    tc_chan_ctx_t *ctx;
    char *buf; /* device memory */
    tc_mem_t *mem;
    tc_rmem_t **rmems; /* [tt_size] */
    tc_sem_t *data_r, *data_l;
} rig_t;

static void rig_open(rig_t *g, const char *name)
{
    tc_chan_opts_t o = TC_CHAN_OPTS_INIT;

    memset(g, 0, sizeof(*g));
    o.flags = TC_CHAN_CUDA;
    o.device = TC_PROXY_CURRENT_DEVICE;
    CHECK_OK(tc_chan_ctx_create(&o, &g->ctx));
    CUDA_OK(cudaMalloc((void **)&g->buf, DBYTES));
    CUDA_OK(cudaMemset(g->buf, 0, DBYTES));
    CHECK_OK(tc_mem_register(g->ctx, g->buf, DBYTES, &g->mem));
    g->rmems = calloc((size_t)tt_size, sizeof(*g->rmems));
    CHECK(g->rmems != NULL);
    CHECK_OK(tc_mem_exchange(g->ctx, name, g->mem, g->rmems));
    CHECK_OK(tc_sem_create(g->ctx, right(), 0, &g->data_r));
    g->data_l = g->data_r;
    if (left() != right()) {
        CHECK_OK(tc_sem_create(g->ctx, left(), 0, &g->data_l));
    }
}

#ifdef TC_TEST_KILLED
TC_CASE(killed)
{
    const int last = tt_size - 1;
    tc_portchan_t *ch = NULL;
    tc_sem_t *sem = NULL;
    double t0;
    int i;
    tc_status_t st = TC_OK;
    rig_t g;

    CHECK_MSG(tt_size >= 2, "killed needs 2 or more ranks");
    rig_open(&g, "killed");
    if (tt_rank != last) {
        CHECK_OK(tc_sem_create(g.ctx, last, 2, &sem));
        CHECK_OK(tc_portchan_create(sem, g.mem, g.rmems[last], &ch));
    }
    barrier();
    if (tt_rank == last) {
        tt_sleep_ms(300);
        raise(SIGKILL);
    }
    t0 = tt_now();
    for (i = 0; st == TC_OK; i++) {
        CHECK_OK(tc_portchan_put_with_signal(ch, DHALF, 0, DHALF));
        st = tc_portchan_flush(ch, -1);
        CHECK_MSG(tt_now() - t0 < 60, "rank %d: puts to a dead rank still succeed after %.1f s",
                  tt_rank, tt_now() - t0);
    }
    CHECK_STATUS(st, TC_ERR_TRANSPORT);
    CHECK_STR_CONTAINS(tc_last_error(), "has exited");
    (void)tc_portchan_destroy(ch);
    tc_sem_destroy(sem);
    for (i = 0; i < tt_size; i++) {
        tc_mem_close(g.rmems[i]);
    }
    tc_mem_deregister(g.mem);
    (void)tc_chan_ctx_destroy(g.ctx);
    CUDA_OK(cudaFree(g.buf));
    free(g.rmems);
    (void)tc_shutdown(); /* the engine finds the lost rank too */
    printf("test_gpu_chan_host_killed killed: rank %d survived: the flush failed after %.1f s "
           "and %d rounds: rank %d has exited\n",
           tt_rank, tt_now() - t0, i, last);
    fflush(stdout);
}

#else
static void rig_close(rig_t *g)
{
    int r;

    barrier();
    if (g->data_l != g->data_r) {
        tc_sem_destroy(g->data_l);
    }
    tc_sem_destroy(g->data_r);
    for (r = 0; r < tt_size; r++) {
        tc_mem_close(g->rmems[r]);
    }
    barrier(); /* every peer closed this rank's buffer before it is freed */
    tc_mem_deregister(g->mem);
    CHECK_OK(tc_chan_ctx_destroy(g->ctx));
    CUDA_OK(cudaFree(g->buf));
    free(g->rmems);
}

/* This rank's send half, for round. */
static void fill_dev(const rig_t *g, int round, size_t n)
{
    unsigned char *h = tt_xmalloc(n);
    size_t i;

    for (i = 0; i < n; i++) {
        h[i] = pattern(tt_rank, round, i);
    }
    CUDA_OK(cudaMemcpy(g->buf, h, n, cudaMemcpyHostToDevice));
    free(h);
}

/* The receive half holds what the left neighbour sent in round. */
static void check_dev(const rig_t *g, int round, size_t n, const char *what)
{
    unsigned char *h = tt_xmalloc(n);
    size_t i;

    CUDA_OK(cudaMemcpy(h, g->buf + DHALF, n, cudaMemcpyDeviceToHost));
    for (i = 0; i < n; i++) {
        CHECK_MSG(h[i] == pattern(left(), round, i), "%s: round %d: byte %zu is %u, want %u", what,
                  round, i, h[i], pattern(left(), round, i));
    }
    free(h);
}

TC_CASE(device_to_device)
{
    static const size_t sizes[] = {1, 4095, 65536, 1000003, 3};
    size_t n = 0, off, k;
    tc_portchan_t *ch;
    rig_t g;
    int round, remote;

    if (tt_size < 2) {
        return;
    }
    for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        n += sizes[k];
    }
    rig_open(&g, "d2d");
    CHECK_OK(tc_portchan_create(g.data_r, g.mem, g.rmems[right()], &ch));
    /* a put past the peer's region: refused at once, nothing moves */
    CHECK_EQ(tc_portchan_put(ch, DHALF + 1, 0, DHALF), TC_ERR_ARG);
    for (round = 0; round < 2; round++) {
        fill_dev(&g, round, n); /* round 1: the source reused after the flush */
        for (k = 0, off = 0; k < sizeof(sizes) / sizeof(sizes[0]); off += sizes[k], k++) {
            CHECK_OK(tc_portchan_put(ch, DHALF + off, off, sizes[k]));
        }
        CHECK_OK(tc_portchan_signal(ch));
        CHECK_OK(tc_portchan_flush(ch, 60 * SEC));
        CHECK_OK(tc_sem_wait(g.data_l, 60 * SEC));
        check_dev(&g, round, n, "device to device");
        barrier(); /* the left one's next round overwrites what was just checked */
    }
    CHECK_OK(tc_portchan_destroy(ch));
    rig_close(&g);
    remote = other_node(right()); /* collective the first time: every rank */
    if (tt_rank == 0) {
        tt_say("test_gpu_chan_host: device to device: 2 rounds of %zu bytes in %zu puts, %s\n", n,
               sizeof(sizes) / sizeof(sizes[0]), remote ? "across nodes" : "on one node");
    }
}

TC_CASE(device_handles)
{
    size_t n = 777777;
    tc_portchan_t *ch;
    tc_portchan_device_t ph;
    tc_sem_device_t sl;
    int dev = 0, same = 0, round;
    rig_t g;

    CUDA_OK(cudaGetDevice(&dev));
    CUDA_OK(cudaDeviceGetAttribute(&same, cudaDevAttrCanUseHostPointerForRegisteredMem, dev));
    if (tt_size < 2 || !same) {
        if (tt_rank == 0) {
            tt_say("test_gpu_chan_host: device_handles: skipped (%s)\n",
                   tt_size < 2 ? "one rank" : "the GPU maps host memory elsewhere");
        }
        return;
    }
    rig_open(&g, "dh");
    CHECK_OK(tc_portchan_create(g.data_r, g.mem, g.rmems[right()], &ch));
    CHECK_OK(tc_portchan_device_handle(ch, &ph));
    CHECK_OK(tc_sem_device_handle(g.data_l, &sl));
    for (round = 10; round < 12; round++) {
        fill_dev(&g, round, n);
        CHECK_EQ(tc_portchan_device_put(&ph, DHALF, 0, n / 2), 0);
        CHECK_EQ(tc_portchan_device_put_with_signal(&ph, DHALF + n / 2, n / 2, n - n / 2), 0);
        CHECK_EQ(tc_portchan_device_flush(&ph), 0);
        CHECK_EQ(tc_sem_device_wait(&sl, 60 * SEC), 0);
        check_dev(&g, round, n, "device handles");
        barrier();
    }
    CHECK_OK(tc_portchan_flush(ch, 60 * SEC)); /* the host's view: nothing failed */
    CHECK_OK(tc_portchan_destroy(ch));
    rig_close(&g);
}

/* Ranks on two GPUs without peer access (cudaDeviceCanAccessPeer): the
 * device memory of a rank on the other GPU cannot be mapped, so
 * tc_mem_exchange fails on every rank with TC_ERR_TRANSPORT, saying so, and
 * nothing stays open (the context then goes as usual). Elsewhere there is
 * nothing to check. */
TC_CASE(no_peer_access)
{
    tc_chan_opts_t o = TC_CHAN_OPTS_INIT;
    tc_chan_ctx_t *ctx;
    tc_mem_t *mem;
    tc_rmem_t **rmems;
    int32_t mine, *devs;
    tc_tensor_t t = {&mine, TC_INT32, 1, {1}}, out;
    tc_request_t *req;
    int r, a, b, can = 1, unreachable = 0;
    void *buf;

    CUDA_OK(cudaGetDevice(&mine));
    CHECK_OK(tc_allgather("npa/devs", &t, &req));
    CHECK_OK(tc_wait(req));
    CHECK_OK(tc_request_output(req, &out));
    devs = out.data;
    for (a = 0; a < tt_size; a++) { /* every rank decides alike */
        for (b = 0; b < tt_size; b++) {
            if (devs[a] != devs[b]) {
                CUDA_OK(cudaDeviceCanAccessPeer(&can, devs[a], devs[b]));
                unreachable |= !can;
            }
        }
    }
    tc_request_free(req);
    if (!unreachable) {
        if (tt_rank == 0) {
            tt_say("test_gpu_chan_host: no_peer_access: every GPU reaches every other\n");
        }
        return;
    }
    o.flags = TC_CHAN_CUDA;
    o.device = TC_PROXY_CURRENT_DEVICE;
    CHECK_OK(tc_chan_ctx_create(&o, &ctx));
    CUDA_OK(cudaMalloc(&buf, 4096));
    CHECK_OK(tc_mem_register(ctx, buf, 4096, &mem));
    rmems = calloc((size_t)tt_size, sizeof(*rmems));
    CHECK(rmems != NULL);
    CHECK_STATUS(tc_mem_exchange(ctx, "npa", mem, rmems), TC_ERR_TRANSPORT);
    CHECK_MSG(strstr(tc_last_error(), "cudaIpcOpenMemHandle") != NULL ||
                  strstr(tc_last_error(), "another rank could not open") != NULL,
              "last error: %s", tc_last_error());
    for (r = 0; r < tt_size; r++) {
        CHECK(rmems[r] == NULL);
    }
    barrier();
    tc_mem_deregister(mem);
    CHECK_OK(tc_chan_ctx_destroy(ctx));
    CUDA_OK(cudaFree(buf));
    free(rmems);
}

TC_CASE(host_device)
{
    const size_t n = 1u << 20;
    char *host = NULL;
    tc_mem_t *hmem = NULL;
    tc_rmem_t **hr;
    tc_portchan_t *h2d, *d2h;
    tc_sem_t *ack_r, *ack_l;
    rig_t g;
    size_t i;

    if (tt_size < 2) {
        return;
    }
    rig_open(&g, "hd");
    ack_r = ack_l = NULL;
    CHECK_OK(tc_sem_create(g.ctx, right(), 1, &ack_r));
    ack_l = ack_r;
    if (left() != right()) {
        CHECK_OK(tc_sem_create(g.ctx, left(), 1, &ack_l));
    }
    hr = calloc((size_t)tt_size, sizeof(*hr));
    CHECK(hr != NULL);
    CHECK_OK(tc_mem_alloc(DBYTES, (void **)&host));
    CHECK_OK(tc_mem_register(g.ctx, host, DBYTES, &hmem));
    CHECK_OK(tc_mem_exchange(g.ctx, "hd-host", hmem, hr));
    for (i = 0; i < n; i++) {
        host[i] = (char)pattern(tt_rank, 5, i);
    }
    /* this rank's host memory into the right one's device memory */
    CHECK_OK(tc_portchan_create(g.data_r, hmem, g.rmems[right()], &h2d));
    CHECK_OK(tc_portchan_put_with_signal(h2d, DHALF, 0, n));
    CHECK_OK(tc_portchan_flush(h2d, 60 * SEC));
    CHECK_OK(tc_sem_wait(g.data_l, 60 * SEC));
    check_dev(&g, 5, n, "host to device");
    barrier();
    /* this rank's device memory (the left one's bytes) into the right
     * one's host memory */
    CHECK_OK(tc_portchan_create(ack_r, g.mem, hr[right()], &d2h));
    CHECK_OK(tc_portchan_put_with_signal(d2h, DHALF, DHALF, n));
    CHECK_OK(tc_portchan_flush(d2h, 60 * SEC));
    CHECK_OK(tc_sem_wait(ack_l, 60 * SEC));
    for (i = 0; i < n; i++) {
        unsigned char w = pattern((left() + tt_size - 1) % tt_size, 5, i);
        CHECK_MSG((unsigned char)host[DHALF + i] == w, "device to host: byte %zu is %u, want %u", i,
                  (unsigned char)host[DHALF + i], w);
    }
    CHECK_OK(tc_portchan_destroy(h2d));
    CHECK_OK(tc_portchan_destroy(d2h));
    barrier();
    for (i = 0; i < (size_t)tt_size; i++) {
        tc_mem_close(hr[i]);
    }
    tc_mem_deregister(hmem);
    if (ack_l != ack_r) {
        tc_sem_destroy(ack_l);
    }
    tc_sem_destroy(ack_r);
    rig_close(&g);
    CHECK_OK(tc_mem_free(host));
    free(hr);
}

#endif

int main(int argc, char **argv)
{
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    int ndev = 0;

    if (r == NULL) {
        r = getenv("PMI_RANK");
    }
    if (tc_cuda_available() && cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0) {
        CUDA_OK(cudaSetDevice((r != NULL ? atoi(r) : 0) % ndev));
    } else {
#ifdef TC_TEST_KILLED
        printf("test_gpu_chan_host_killed: skipped: %s\n", tc_cuda_info());
#else
        printf("test_gpu_chan_host: skipped: %s\n", tc_cuda_info());
#endif
        return 77;
    }
#ifdef TC_TEST_KILLED
    return tt_mpi_main(argc, argv, &(tt_program_t){.case_ends_tcoll = 1});
#else
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
#endif
}
