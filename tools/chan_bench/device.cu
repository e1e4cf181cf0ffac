// device.cu - tcoll-chan-bench --device cuda: the proxy and channels driven
// from GPU kernels (tcoll_channel_device.h) between two processes on one
// node, sharing a GPU or on two, on device memory. Only rank 0 prints.
//
//   1. Device push to the proxy's handler, on rank 0 alone: a one-thread
//      kernel pushes a trigger and waits until the handler has written its
//      number back into mapped host memory; the round trip per trigger
//      (p50, p99) and half of it, the push-to-handler estimate (the GPU's
//      clock and the host's are not one clock). Then pushes per second
//      from one thread and from a grid (64 blocks of 256 threads), timed on
//      the host from the launch to the handler's last trigger.
//   2. Kernel-to-kernel signal/wait, one way = round trip / 2 (p50, p99):
//      a memory channel's semaphore (stores and atomics across the bus and
//      the GPUs' memory), then a port channel's (each signal a trigger the
//      proxy carries out).
//   3. Put bandwidth (GB/s = 1e9 B/s), rank 0 into rank 1's device memory,
//      sizes -b..-e (factor -f): a memory channel put by the whole grid
//      (256 blocks of 512 threads), n times, then a signal; a port channel
//      put pushed by one thread (the proxy copies it on its stream into the
//      peer's memory, opened with CUDA IPC), n times, then a signal and a
//      flush; beside them, in the same run, cudaMemcpy from rank 0's device
//      memory into the peer's opened with CUDA IPC (what a program without
//      tcoll would do) and cudaMemcpy device-to-device within rank 0's own
//      memory (the GPU's copy limit), and each column's percentage of it.
//      Each cell is the median of 3 runs; the last round's bytes are
//      checked at the receiver.
//
// Goals (printed, not judged): port channel put at 1 GiB >= 80% of the
// device-to-device copy; memory channel signal/wait one way < 5 us; device
// push to handler p50 < 5 us. Two processes on one GPU without MPS take
// turns on it (time slices), which the kernel-to-kernel rows then time.
#include <mpi.h>

extern "C" {
#include "chan_bench.h"
}
#include "tcoll_channel_device.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstring>
#include <vector>

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            cb_die("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));            \
        }                                                                                          \
    } while (0)

static double now_s()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

static void bar()
{
    MPI_Barrier(cb_comm);
}

// ---- 1. device push to handler ------------------------------------------------------------

struct echo_t {
    volatile uint64_t *done; // mapped host memory: the last trigger's number
    std::atomic<uint64_t> count{0};
};

extern "C" tc_proxy_result_t echo_handler(tc_trigger_t t, void *arg)
{
    echo_t *e = static_cast<echo_t *>(arg);
    e->count.fetch_add(1, std::memory_order_release);
    *e->done = t.snd; // the kernel waits for it
    return TC_PROXY_CONTINUE;
}

__global__ void push_echo(tc_fifo_device_t v, const uint64_t *done, int iters, uint64_t *ns)
{
    for (int i = 0; i < iters; i++) {
        tc_trigger_t t;
        uint64_t t0 = tc__dev_now_ns();
        t.fst = 1;
        t.snd = (uint64_t)i + 1;
        (void)tc_fifo_device_push(&v, t);
        while (*(const volatile uint64_t *)done < (uint64_t)i + 1) {
        }
        ns[i] = tc__dev_now_ns() - t0;
    }
}

__global__ void push_flood(tc_fifo_device_t v, uint32_t per_thread)
{
    for (uint32_t k = 0; k < per_thread; k++) {
        tc_trigger_t t;
        t.fst = 1;
        t.snd = 0;
        (void)tc_fifo_device_push(&v, t);
    }
}

static void push_rows(const cb_opts_t *o)
{
    echo_t e;
    tc_proxy_t *p = nullptr;
    tc_fifo_device_t v;
    uint64_t *done_h = nullptr, *done_d = nullptr, *ns_d = nullptr;
    int iters = std::min(o->lat_iters, 20000);

    CUDA_OK(cudaHostAlloc(&done_h, sizeof(uint64_t), cudaHostAllocMapped));
    *done_h = 0;
    CUDA_OK(cudaHostGetDevicePointer(&done_d, done_h, 0));
    e.done = done_h;
    cb_chk(tc_proxy_create_device(TC_PROXY_CURRENT_DEVICE, echo_handler, &e, nullptr, nullptr, 1024,
                                  &p),
           "tc_proxy_create_device");
    cb_chk(tc_proxy_fifo_device(p, &v), "tc_proxy_fifo_device");
    cb_chk(tc_proxy_start(p, 1), "tc_proxy_start");
    CUDA_OK(cudaMalloc(&ns_d, sizeof(uint64_t) * (size_t)iters));
    push_echo<<<1, 1>>>(v, done_d, iters, ns_d);
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<uint64_t> ns((size_t)iters);
    CUDA_OK(cudaMemcpy(ns.data(), ns_d, sizeof(uint64_t) * (size_t)iters, cudaMemcpyDeviceToHost));
    std::sort(ns.begin() + iters / 10, ns.end());
    double p50 = (double)ns[(size_t)iters / 10 + (size_t)(iters - iters / 10) / 2] / 1000.0;
    double p99 = (double)ns[(size_t)iters / 10 + (size_t)((iters - iters / 10) * 0.99)] / 1000.0;
    printf("\n## Device push to proxy handler (rank 0, its own proxy for the device)\n\n");
    printf("| what | p50 | p99 |\n| --- | ---: | ---: |\n");
    printf("| push, handler, back to the kernel (round trip, us) | %.2f | %.2f |\n", p50, p99);
    printf("| push to handler (half the round trip, us) | %.2f | %.2f |\n\n", p50 / 2, p99 / 2);

    printf("| pushers | triggers | seconds | million pushes/s |\n| --- | ---: | ---: | ---: |\n");
    const struct {
        unsigned blocks, threads;
        uint32_t per;
    } runs[] = {{1, 1, 200000}, {64, 256, 64}};
    for (const auto &r : runs) {
        uint64_t before = e.count.load(), total = (uint64_t)r.blocks * r.threads * r.per;
        double t0 = now_s();
        push_flood<<<r.blocks, r.threads>>>(v, r.per);
        CUDA_OK(cudaDeviceSynchronize());
        while (e.count.load(std::memory_order_acquire) - before < total) {
            std::this_thread::yield();
        }
        double s = now_s() - t0;
        printf("| %u x %u threads | %llu | %.3f | %.2f |\n", r.blocks, r.threads,
               (unsigned long long)total, s, (double)total / s / 1e6);
    }
    cb_chk(tc_proxy_stop(p), "tc_proxy_stop");
    tc_proxy_destroy(p);
    cudaFree(ns_d);
    cudaFreeHost(done_h);
    fflush(stdout);
}

// ---- the two ranks' channels ----------------------------------------------------------------

struct dev_rig_t {
    uint64_t bytes = 0; // each rank's buffer: [0, bytes) sent from, [bytes, 2 bytes) received
    char *buf = nullptr;
    tc_chan_ctx_t *ctx = nullptr;
    tc_mem_t *mem = nullptr;
    tc_rmem_t *rmems[2] = {nullptr, nullptr};
    tc_sem_t *msem = nullptr, *psem = nullptr, *asem = nullptr;
    tc_memchan_t *mch = nullptr;
    tc_portchan_t *pch = nullptr;
    tc_memchan_device_t mh;
    tc_portchan_device_t ph;
    tc_sem_device_t ack; // the peer's "done" signals (semaphore id 2)
};

static void rig_open(dev_rig_t *g, uint64_t bytes)
{
    tc_chan_opts_t co = TC_CHAN_OPTS_INIT;

    co.flags = TC_CHAN_CUDA;
    co.device = TC_PROXY_CURRENT_DEVICE;
    g->bytes = bytes;
    cb_chk(tc_chan_ctx_create(&co, &g->ctx), "tc_chan_ctx_create (TC_CHAN_CUDA)");
    CUDA_OK(cudaMalloc(&g->buf, 2 * bytes));
    CUDA_OK(cudaMemset(g->buf, 0, 2 * bytes));
    cb_chk(tc_mem_register(g->ctx, g->buf, 2 * bytes, &g->mem), "tc_mem_register");
    cb_chk(tc_mem_exchange(g->ctx, "chanbench/dev", g->mem, g->rmems), "tc_mem_exchange");
    cb_chk(tc_sem_create(g->ctx, cb_peer, 0, &g->msem), "tc_sem_create");
    cb_chk(tc_sem_create(g->ctx, cb_peer, 1, &g->psem), "tc_sem_create");
    cb_chk(tc_sem_create(g->ctx, cb_peer, 2, &g->asem), "tc_sem_create");
    cb_chk(tc_memchan_create(g->msem, g->mem, g->rmems[cb_peer], &g->mch), "tc_memchan_create");
    cb_chk(tc_portchan_create(g->psem, g->mem, g->rmems[cb_peer], &g->pch), "tc_portchan_create");
    cb_chk(tc_memchan_device_handle(g->mch, &g->mh), "tc_memchan_device_handle");
    cb_chk(tc_portchan_device_handle(g->pch, &g->ph), "tc_portchan_device_handle");
    cb_chk(tc_sem_device_handle(g->asem, &g->ack), "tc_sem_device_handle");
}

static void rig_close(dev_rig_t *g)
{
    bar();
    tc_memchan_destroy(g->mch);
    cb_chk(tc_portchan_destroy(g->pch), "tc_portchan_destroy");
    tc_sem_destroy(g->msem);
    tc_sem_destroy(g->psem);
    tc_sem_destroy(g->asem);
    tc_mem_close(g->rmems[0]);
    tc_mem_close(g->rmems[1]);
    bar(); // every peer closed this rank's buffer before it is freed (CUDA IPC's rule)
    tc_mem_deregister(g->mem);
    cb_chk(tc_chan_ctx_destroy(g->ctx), "tc_chan_ctx_destroy");
    CUDA_OK(cudaFree(g->buf));
}

// ---- 2. kernel-to-kernel signal/wait -----------------------------------------------------

// Rank 0 signals and waits iters times, recording each round trip; rank 1
// waits and signals back. The handles are copied in by value: the kernel's
// waits count on its own copy.
__global__ void sem_pingpong(tc_sem_device_t s, int first, int iters, uint64_t *ns, int *bad)
{
    for (int i = 0; i < iters; i++) {
        uint64_t t0 = tc__dev_now_ns();
        if (first) {
            tc_sem_device_signal(&s);
        }
        if (tc_sem_device_wait(&s, CB_WAIT_NS) != 0) {
            *bad = 1;
            return;
        }
        if (!first) {
            tc_sem_device_signal(&s);
        } else {
            ns[i] = tc__dev_now_ns() - t0;
        }
    }
}

__global__ void port_sig_pingpong(tc_portchan_device_t h, int first, int iters, uint64_t *ns,
                                  int *bad)
{
    for (int i = 0; i < iters; i++) {
        uint64_t t0 = tc__dev_now_ns();
        if (first && tc_portchan_device_signal(&h) != 0) {
            *bad = 1;
            return;
        }
        if (tc_portchan_device_wait(&h, CB_WAIT_NS) != 0) {
            *bad = 2;
            return;
        }
        if (!first && tc_portchan_device_signal(&h) != 0) {
            *bad = 3;
            return;
        } else if (first) {
            ns[i] = tc__dev_now_ns() - t0;
        }
    }
}

static void signal_rows(dev_rig_t *g, const cb_opts_t *o)
{
    int iters = std::min(o->lat_iters, 2000), *bad = nullptr, nbad = 0;
    uint64_t *ns_d = nullptr;
    std::vector<uint64_t> ns((size_t)iters);

    CUDA_OK(cudaMalloc(&ns_d, sizeof(uint64_t) * (size_t)iters));
    CUDA_OK(cudaMalloc(&bad, sizeof(int)));
    if (cb_rank == 0) {
        printf("## Kernel-to-kernel signal/wait, one way = round trip / 2 (%d rounds)\n\n", iters);
        printf("| channel | p50 (us) | p99 (us) |\n| --- | ---: | ---: |\n");
    }
    for (int k = 0; k < 2; k++) {
        CUDA_OK(cudaMemset(bad, 0, sizeof(int)));
        bar();
        if (k == 0) {
            sem_pingpong<<<1, 1>>>(g->mh.sem, cb_rank == 0, iters, ns_d, bad);
        } else {
            port_sig_pingpong<<<1, 1>>>(g->ph, cb_rank == 0, iters, ns_d, bad);
        }
        CUDA_OK(cudaDeviceSynchronize());
        // the kernels consumed iters signals on their copies
        (k == 0 ? g->mh.sem : g->ph.sem).expected += (uint64_t)iters;
        CUDA_OK(cudaMemcpy(&nbad, bad, sizeof(int), cudaMemcpyDeviceToHost));
        if (nbad != 0) {
            cb_die("kernel-to-kernel ping-pong (%s): a wait timed out or a push was refused (%d)",
                   k == 0 ? "memory channel" : "port channel", nbad);
        }
        if (cb_rank == 0) {
            CUDA_OK(cudaMemcpy(ns.data(), ns_d, sizeof(uint64_t) * (size_t)iters,
                               cudaMemcpyDeviceToHost));
            std::sort(ns.begin(), ns.end());
            printf("| %s | %.2f | %.2f |\n",
                   k == 0 ? "memory channel: tc_sem_device_signal + wait"
                          : "port channel: tc_portchan_device_signal + wait",
                   (double)ns[(size_t)iters / 2] / 2000.0,
                   (double)ns[(size_t)(iters * 0.99)] / 2000.0);
        }
    }
    if (cb_rank == 0) {
        printf("\n");
        fflush(stdout);
    }
    cudaFree(ns_d);
    cudaFree(bad);
}

// ---- 3. put bandwidth --------------------------------------------------------------------------

__global__ void memchan_put_grid(tc_memchan_device_t h, uint64_t dst, uint64_t bytes)
{
    (void)tc_memchan_device_put(&h, dst, 0, bytes, blockIdx.x * blockDim.x + threadIdx.x,
                                gridDim.x * blockDim.x);
}

__global__ void memchan_signal(tc_memchan_device_t h)
{
    tc_memchan_device_signal(&h);
}

__global__ void portchan_puts(tc_portchan_device_t h, uint64_t dst, uint64_t bytes, int n, int *bad)
{
    for (int i = 0; i < n; i++) {
        if (tc_portchan_device_put(&h, dst, 0, bytes) != 0) {
            *bad = 1;
        }
    }
    if (tc_portchan_device_signal(&h) != 0 || tc_portchan_device_flush(&h) != 0) {
        *bad = 2;
    }
}

__global__ void wait_then_ack(tc_sem_device_t in, tc_sem_device_t ack, int *bad)
{
    if (tc_sem_device_wait(&in, CB_WAIT_NS) != 0) {
        *bad = 1;
        return;
    }
    tc_sem_device_signal(&ack);
}

__global__ void wait_only(tc_sem_device_t s, int *bad)
{
    if (tc_sem_device_wait(&s, CB_WAIT_NS) != 0) {
        *bad = 1;
    }
}

__global__ void fill_seq(uint64_t *p, uint64_t words, uint64_t seed)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < words;
         i += (uint64_t)gridDim.x * blockDim.x) {
        p[i] = (i + seed) * 0x9E3779B97F4A7C15ull;
    }
}

__global__ void count_wrong(const uint64_t *p, uint64_t words, uint64_t seed,
                            unsigned long long *wrong)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < words;
         i += (uint64_t)gridDim.x * blockDim.x) {
        if (p[i] != (i + seed) * 0x9E3779B97F4A7C15ull) {
            atomicAdd(wrong, 1ull);
        }
    }
}

enum { COL_MEM, COL_PORT, COL_IPC, COL_D2D, NCOL };

// One run of column c at size bytes, n times: seconds (rank 0's clock;
// rank 1 helps). The semaphores' counts are kept in the host's handles.
static double bw_run(dev_rig_t *g, int c, uint64_t bytes, int n, void *peer_ipc, int *bad)
{
    double t0, s = 0;

    bar();
    if (cb_rank == 0) {
        t0 = now_s();
        switch (c) {
        case COL_MEM:
            for (int i = 0; i < n; i++) {
                memchan_put_grid<<<256, 512>>>(g->mh, g->bytes, bytes);
            }
            memchan_signal<<<1, 1>>>(g->mh);
            wait_only<<<1, 1>>>(g->ack, bad);
            g->ack.expected++;
            break;
        case COL_PORT:
            portchan_puts<<<1, 1>>>(g->ph, g->bytes, bytes, n, bad);
            wait_only<<<1, 1>>>(g->ack, bad);
            g->ack.expected++;
            break;
        case COL_IPC:
            for (int i = 0; i < n; i++) {
                CUDA_OK(cudaMemcpyAsync(peer_ipc, g->buf, bytes, cudaMemcpyDefault, 0));
            }
            break;
        case COL_D2D:
            for (int i = 0; i < n; i++) {
                CUDA_OK(
                    cudaMemcpyAsync(g->buf + g->bytes, g->buf, bytes, cudaMemcpyDeviceToDevice, 0));
            }
            break;
        }
        CUDA_OK(cudaDeviceSynchronize());
        s = now_s() - t0;
    } else if (c == COL_MEM || c == COL_PORT) {
        tc_sem_device_t in = c == COL_MEM ? g->mh.sem : g->ph.sem;
        wait_then_ack<<<1, 1>>>(in, g->ack, bad);
        CUDA_OK(cudaDeviceSynchronize());
        (c == COL_MEM ? g->mh.sem : g->ph.sem).expected++;
    }
    return s;
}

static void bandwidth_rows(dev_rig_t *g, const cb_opts_t *o, const uint64_t *sizes, int nsizes,
                           int *exit_code)
{
    static const char *names[NCOL] = {"memchan (grid put)", "portchan (proxy copy)",
                                      "cudaMemcpy to peer (IPC)", "cudaMemcpy D2D (local)"};
    int *bad = nullptr, nbad = 0;
    unsigned long long *wrong_d = nullptr, wrong = 0;
    double best_port_pct = 0;
    void *peer_ipc = nullptr;

    // the reference column without tcoll: the peer's buffer through a raw
    // CUDA IPC handle sent over MPI, opened here, written with cudaMemcpy
    {
        cudaIpcMemHandle_t mine, theirs;
        CUDA_OK(cudaIpcGetMemHandle(&mine, g->buf));
        MPI_Sendrecv(&mine, sizeof(mine), MPI_BYTE, cb_peer, 9, &theirs, sizeof(theirs), MPI_BYTE,
                     cb_peer, 9, cb_comm, MPI_STATUS_IGNORE);
        CUDA_OK(cudaIpcOpenMemHandle(&peer_ipc, theirs, cudaIpcMemLazyEnablePeerAccess));
        peer_ipc = (char *)peer_ipc + g->bytes; // into the peer's receiving half
    }
    CUDA_OK(cudaMalloc(&bad, sizeof(int)));
    CUDA_OK(cudaMemset(bad, 0, sizeof(int)));
    CUDA_OK(cudaMalloc(&wrong_d, sizeof(*wrong_d)));
    if (cb_rank == 0) {
        printf("## Put bandwidth, rank 0 into rank 1's device memory (GB/s, median of 3 runs; "
               "%% of the local device-to-device copy)\n\n");
        printf("| size | rounds | %s | %s | %s | %s | memchan %% | portchan %% | checked |\n"
               "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n",
               names[0], names[1], names[2], names[3]);
    }
    for (int si = 0; si < nsizes; si++) {
        uint64_t bytes = sizes[si];
        int n = o->bw_iters > 0
                    ? o->bw_iters
                    : (int)std::max<uint64_t>(2, std::min<uint64_t>(100, (4ull << 30) / bytes));
        double gbs[NCOL], runs[NCOL][3];
        char sz[32];

        if (bytes > g->bytes) {
            break;
        }
        for (int r = 0; r < 3; r++) {
            for (int c = 0; c < NCOL; c++) {
                runs[c][r] = bw_run(g, c, bytes, n, peer_ipc, bad);
            }
        }
        for (int c = 0; c < NCOL; c++) {
            std::sort(runs[c], runs[c] + 3);
            gbs[c] = (double)bytes * n / runs[c][1] / 1e9;
        }
        // the check: fresh data through the port channel and the memory channel
        uint64_t words = bytes / 8, seed = 1000 + (uint64_t)si;
        wrong = 0;
        for (int c = 0; c < 2; c++) {
            if (cb_rank == 0) {
                fill_seq<<<256, 256>>>((uint64_t *)g->buf, words, seed + (uint64_t)c);
                CUDA_OK(cudaDeviceSynchronize());
            } else {
                CUDA_OK(cudaMemset(g->buf + g->bytes, 0xa5, bytes));
                CUDA_OK(cudaDeviceSynchronize());
            }
            bw_run(g, c == 0 ? COL_MEM : COL_PORT, bytes, 1, peer_ipc, bad);
            if (cb_rank == 1) {
                CUDA_OK(cudaMemset(wrong_d, 0, sizeof(*wrong_d)));
                count_wrong<<<256, 256>>>((const uint64_t *)(g->buf + g->bytes), words,
                                          seed + (uint64_t)c, wrong_d);
                unsigned long long w = 0;
                CUDA_OK(cudaMemcpy(&w, wrong_d, sizeof(w), cudaMemcpyDeviceToHost));
                wrong += w;
            }
        }
        MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, cb_comm);
        CUDA_OK(cudaMemcpy(&nbad, bad, sizeof(int), cudaMemcpyDeviceToHost));
        MPI_Allreduce(MPI_IN_PLACE, &nbad, 1, MPI_INT, MPI_MAX, cb_comm);
        if (wrong != 0 || nbad != 0) {
            *exit_code = CB_EXIT_FAIL;
        }
        if (cb_rank == 0) {
            cb_fmt_size(sz, sizeof(sz), bytes);
            double pm = 100.0 * gbs[COL_MEM] / gbs[COL_D2D];
            double pp = 100.0 * gbs[COL_PORT] / gbs[COL_D2D];
            best_port_pct = pp;
            printf("| %s | %d | %.2f | %.2f | %.2f | %.2f | %.0f%% | %.0f%% | %s |\n", sz, n,
                   gbs[COL_MEM], gbs[COL_PORT], gbs[COL_IPC], gbs[COL_D2D], pm, pp,
                   wrong == 0 && nbad == 0 ? "ok" : "WRONG");
            fflush(stdout);
        }
    }
    if (cb_rank == 0) {
        printf("\nport channel put at the largest size: %.0f%% of the device-to-device copy "
               "(goal at 1 GiB: 80%%)\n",
               best_port_pct);
    }
    CUDA_OK(cudaIpcCloseMemHandle((char *)peer_ipc - g->bytes));
    cudaFree(bad);
    cudaFree(wrong_d);
}

extern "C" int cb_device_main(const cb_opts_t *o, const uint64_t *sizes, int nsizes)
{
    int ndev = 0, ok, exit_code = 0;
    char info[256] = "";
    dev_rig_t g;

    ok = cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0 && tc_cuda_available();
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, cb_comm);
    if (!ok) {
        if (cb_rank == 0) {
            fprintf(stderr, "tcoll-chan-bench: --device cuda: no usable GPU on every rank (%s)\n",
                    tc_cuda_info());
        }
        return CB_EXIT_SKIP;
    }
    if (tc_local_size() != 2) {
        if (cb_rank == 0) {
            fprintf(stderr, "tcoll-chan-bench: --device cuda: the two ranks must be on one node\n");
        }
        return CB_EXIT_USAGE;
    }
    CUDA_OK(cudaSetDevice(tc_local_rank() % ndev));
    if (cb_rank == 0) {
        cudaDeviceProp prop;
        int dev = 0;
        CUDA_OK(cudaGetDevice(&dev));
        CUDA_OK(cudaGetDeviceProperties(&prop, dev));
        snprintf(info, sizeof(info), "%s", prop.name);
        printf("# tcoll-chan-bench --device cuda: tcoll %s; 2 ranks on %d GPU%s (%s), rank r on "
               "device r %% %d\n# %s\n",
               tc_version(), ndev, ndev == 1 ? "" : "s", info, ndev, tc_cuda_info());
        printf("# goals (printed, not judged): port channel put at 1 GiB >= 80%% of the "
               "device-to-device copy;\n#   memory channel signal/wait one way < 5 us; device "
               "push to handler p50 < 5 us\n");
        if (ndev == 1) {
            printf("# both processes share one GPU: without MPS their kernels take turns on it "
                   "(time slices)\n");
        }
        push_rows(o);
    }
    bar();
    rig_open(&g, sizes[nsizes - 1]);
    signal_rows(&g, o);
    bandwidth_rows(&g, o, sizes, nsizes, &exit_code);
    rig_close(&g);
    return exit_code;
}
