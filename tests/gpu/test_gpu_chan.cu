// test_gpu_chan.cu - the proxy and channels driven from GPU kernels
// (tcoll_channel_device.h), on device memory, between processes that share
// the GPU (or GPUs) of the machine. One case per run (--case NAME), or all:
//
//   proxy     a proxy for the current device (tc_proxy_create_device): a
//             kernel of 32768 threads pushes 1,015,808 triggers into its
//             mapped FIFO; the handler sees each thread's in push order,
//             none lost, none twice
//   mem_pingpong / port_pingpong
//             kernel-to-kernel ping-pong between ranks 0 and 1 over a memory
//             channel (stores into the peer's memory, opened with CUDA IPC)
//             and over a port channel (device pushes, the proxy copies)
//   mem_bulk / port_bulk
//             a block of 256 threads puts 16 MiB into the peer, then one
//             signal; the peer's kernel waits and checks every byte; the
//             port channel's source is overwritten right after a device
//             flush, and the peer must still see what was put
//   host_device
//             port channels from host memory into a peer's device memory
//             and back (the host pushes)
//   killed    (under run_lost_rank.sh) the last rank dies; the others'
//             kernels put into it until a device flush reports the failure,
//             the host's flush then says why
//
// Each rank talks to its right neighbour (and hears from its left one).
// With TCOLL_RANKS_PER_NODE=1 and TCOLL_MPI_THREAD=multiple every rank is
// a node of its own: memory channel cases are left out, and port channels
// and semaphores travel over MPI, staged through host memory.
//
// Prints PASS lines; exit 0, 1 on a failure, 77 when there is no usable GPU.
#include "tcoll.h"
#include "tcoll_channel.h"
#include "tcoll_channel_device.h"

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

static int rank_ = -1, size_ = 0;

static void fail(const char *fmt, ...)
{
    va_list ap;

    std::printf("test_gpu_chan: rank %d: FAIL: ", rank_);
    va_start(ap, fmt);
    std::vprintf(fmt, ap);
    va_end(ap);
    std::printf("\n");
    std::fflush(stdout);
    std::exit(1);
}

#define CUDA_CHECK(call)                                                                           \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fail("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));              \
        }                                                                                          \
    } while (0)
#define TC_CHECK(call)                                                                             \
    do {                                                                                           \
        tc_status_t s_ = (call);                                                                   \
        if (s_ != TC_OK) {                                                                         \
            fail("%s:%d: %s: %s", __FILE__, __LINE__, #call, tc_last_error());                     \
        }                                                                                          \
    } while (0)

static void barrier()
{
    tc_request_t *req = nullptr;
    TC_CHECK(tc_barrier(&req));
    TC_CHECK(tc_wait(req));
    tc_request_free(req);
}

static int right()
{
    return (rank_ + 1) % size_;
}

static int left()
{
    return (rank_ + size_ - 1) % size_;
}

static int other_node(int r)
{
    const char *env = std::getenv("TCOLL_RANKS_PER_NODE");
    int per = env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : size_;
    return r / per != rank_ / per;
}

static const int64_t WAIT_NS = 60ll * 1000000000ll; // a kernel's waits give up after this

// ---- proxy: a million device pushes --------------------------------------------------

struct counter_t {
    std::vector<uint64_t> next; // per producer: the number expected next
    uint64_t errors = 0, handled = 0;
    char first[256] = "";
};

extern "C" tc_proxy_result_t count_handler(tc_trigger_t t, void *arg)
{
    counter_t *c = static_cast<counter_t *>(arg);
    tc_trigger_fields_t f;

    c->handled++;
    if (tc_trigger_decode(t, &f) != 0 || f.src_offset >= c->next.size() ||
        f.dst_offset != c->next[f.src_offset]) {
        if (c->errors++ == 0) {
            std::snprintf(c->first, sizeof(c->first), "trigger {%#llx, %#llx}: producer %llu #%llu",
                          (unsigned long long)t.fst, (unsigned long long)t.snd,
                          (unsigned long long)f.src_offset, (unsigned long long)f.dst_offset);
        }
        return TC_PROXY_CONTINUE;
    }
    c->next[f.src_offset]++;
    return TC_PROXY_CONTINUE;
}

__global__ void push_many(tc_fifo_device_t v, uint32_t per_thread)
{
    uint64_t id = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

    for (uint32_t k = 0; k < per_thread; k++) {
        tc_trigger_t t;
        (void)tc_trigger_encode(TC_TRIG_PUT, (uint32_t)(id % 4096u), k, id, 0, &t);
        (void)tc_fifo_device_push(&v, t);
    }
}

static void case_proxy()
{
    const unsigned blocks = 256, threads = 128;
    const uint32_t per = 31; // 32768 threads x 31 = 1,015,808 triggers
    counter_t c;
    tc_proxy_t *p = nullptr;
    tc_fifo_device_t v;

    c.next.assign((size_t)blocks * threads, 0);
    TC_CHECK(tc_proxy_create_device(TC_PROXY_CURRENT_DEVICE, count_handler, &c, nullptr, nullptr,
                                    1024, &p));
    TC_CHECK(tc_proxy_fifo_device(p, &v));
    TC_CHECK(tc_proxy_start(p, 1));
    auto t0 = std::chrono::steady_clock::now();
    push_many<<<blocks, threads>>>(v, per);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    TC_CHECK(tc_proxy_stop(p)); // handles everything pushed before it
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    tc_proxy_destroy(p);
    if (c.errors != 0) {
        fail("proxy: %llu triggers out of order or damaged; first: %s",
             (unsigned long long)c.errors, c.first);
    }
    for (size_t id = 0; id < c.next.size(); id++) {
        if (c.next[id] != per) {
            fail("proxy: producer %zu: %llu of %u triggers handled", id,
                 (unsigned long long)c.next[id], per);
        }
    }
    std::printf("test_gpu_chan: rank %d: PASS proxy: %llu device pushes handled in order "
                "(%.2f M/s)\n",
                rank_, (unsigned long long)c.handled, (double)c.handled / s / 1e6);
}

// ---- the channels' rig -----------------------------------------------------------------

static const uint64_t BYTES = 32ull << 20; // per rank: first half sent from, second received into
static const uint64_t HALF = BYTES / 2;

struct rig_t {
    tc_chan_ctx_t *ctx = nullptr;
    char *buf = nullptr; // device memory
    tc_mem_t *mem = nullptr;
    std::vector<tc_rmem_t *> rmems;
    tc_sem_t *data_r = nullptr, *data_l = nullptr, *ack_r = nullptr, *ack_l = nullptr;
};

static void rig_open(rig_t *g)
{
    tc_chan_opts_t o = TC_CHAN_OPTS_INIT;

    o.flags = TC_CHAN_CUDA;
    o.device = TC_PROXY_CURRENT_DEVICE;
    TC_CHECK(tc_chan_ctx_create(&o, &g->ctx));
    CUDA_CHECK(cudaMalloc(&g->buf, BYTES));
    CUDA_CHECK(cudaMemset(g->buf, 0, BYTES));
    TC_CHECK(tc_mem_register(g->ctx, g->buf, BYTES, &g->mem));
    g->rmems.assign((size_t)size_, nullptr);
    TC_CHECK(tc_mem_exchange(g->ctx, nullptr, g->mem, g->rmems.data()));
    TC_CHECK(tc_sem_create(g->ctx, right(), 0, &g->data_r));
    TC_CHECK(tc_sem_create(g->ctx, right(), 1, &g->ack_r));
    if (left() != right()) {
        TC_CHECK(tc_sem_create(g->ctx, left(), 0, &g->data_l));
        TC_CHECK(tc_sem_create(g->ctx, left(), 1, &g->ack_l));
    } else {
        g->data_l = g->data_r;
        g->ack_l = g->ack_r;
    }
}

static void rig_close(rig_t *g)
{
    barrier();
    if (g->data_l != g->data_r) {
        tc_sem_destroy(g->data_l);
        tc_sem_destroy(g->ack_l);
    }
    tc_sem_destroy(g->data_r);
    tc_sem_destroy(g->ack_r);
    for (tc_rmem_t *r : g->rmems) {
        tc_mem_close(r);
    }
    barrier(); // every peer closed this rank's buffer before it is freed (CUDA IPC's rule)
    tc_mem_deregister(g->mem);
    TC_CHECK(tc_chan_ctx_destroy(g->ctx));
    CUDA_CHECK(cudaFree(g->buf));
}

// A kernel's verdict, in mapped host memory: 0 ok, else what failed.
struct verdict_t {
    int *host = nullptr, *dev = nullptr;
    verdict_t()
    {
        CUDA_CHECK(cudaHostAlloc(&host, sizeof(int) * 4, cudaHostAllocMapped));
        std::memset(host, 0, sizeof(int) * 4);
        CUDA_CHECK(cudaHostGetDevicePointer(&dev, host, 0));
    }
    ~verdict_t()
    {
        cudaFreeHost(host);
    }
};

__device__ static unsigned char pattern(int r, int round, uint64_t i)
{
    return (unsigned char)((i * 131u + (uint64_t)r * 7u + (uint64_t)round * 29u) >> 3);
}

__global__ void fill_kernel(char *p, uint64_t n, int r, int round)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        p[i] = (char)pattern(r, round, i);
    }
}

__global__ void check_kernel(const char *p, uint64_t n, int r, int round, int *bad)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        if ((unsigned char)p[i] != pattern(r, round, i)) {
            atomicAdd(bad, 1);
        }
    }
}

// ---- ping-pong ---------------------------------------------------------------------

// One thread: rank 0 sends i and waits for i back; rank 1 waits and sends back.
__global__ void mem_pingpong(tc_memchan_device_t h, char *mine, int first, int iters, int *v)
{
    for (int i = 0; i < iters; i++) {
        if (first) {
            *(volatile int *)mine = i; // the value to send, at offset 0 of this rank's memory
            if (tc_memchan_device_put_with_signal(&h, HALF, 0, sizeof(int)) != 0 ||
                tc_memchan_device_wait(&h, WAIT_NS) != 0) {
                v[0] = 1;
                return;
            }
            if (*(volatile int *)(mine + HALF) != i) {
                v[1] = 1 + i;
                return;
            }
        } else {
            if (tc_memchan_device_wait(&h, WAIT_NS) != 0) {
                v[0] = 2;
                return;
            }
            *(volatile int *)mine = *(volatile int *)(mine + HALF);
            if (tc_memchan_device_put_with_signal(&h, HALF, 0, sizeof(int)) != 0) {
                v[0] = 3;
                return;
            }
        }
    }
}

__global__ void port_pingpong(tc_portchan_device_t h, char *mine, int first, int iters, int *v)
{
    for (int i = 0; i < iters; i++) {
        if (first) {
            *(volatile int *)mine = i;
            __threadfence_system(); // the proxy's copy reads it after the push
            if (tc_portchan_device_put_with_signal(&h, HALF, 0, sizeof(int)) != 0 ||
                tc_portchan_device_wait(&h, WAIT_NS) != 0) {
                v[0] = 1;
                return;
            }
            if (*(volatile int *)(mine + HALF) != i) {
                v[1] = 1 + i;
                return;
            }
        } else {
            if (tc_portchan_device_wait(&h, WAIT_NS) != 0) {
                v[0] = 2;
                return;
            }
            *(volatile int *)mine = *(volatile int *)(mine + HALF);
            __threadfence_system();
            if (tc_portchan_device_put_with_signal(&h, HALF, 0, sizeof(int)) != 0) {
                v[0] = 3;
                return;
            }
        }
    }
    if (tc_portchan_device_flush(&h) != 0) {
        v[2] = 1;
    }
}

static void case_pingpong(bool mem)
{
    const int iters = 200;
    rig_t g;
    verdict_t v;

    if (size_ != 2 || (mem && other_node(right()))) {
        std::printf("test_gpu_chan: rank %d: skip %s_pingpong (needs 2 ranks%s)\n", rank_,
                    mem ? "mem" : "port", mem ? " on one node" : "");
        return;
    }
    rig_open(&g);
    auto t0 = std::chrono::steady_clock::now();
    if (mem) {
        tc_memchan_t *ch = nullptr;
        tc_memchan_device_t h;
        TC_CHECK(tc_memchan_create(g.data_r, g.mem, g.rmems[(size_t)right()], &ch));
        TC_CHECK(tc_memchan_device_handle(ch, &h));
        barrier();
        mem_pingpong<<<1, 1>>>(h, g.buf, rank_ == 0, iters, v.dev);
        CUDA_CHECK(cudaDeviceSynchronize());
        tc_memchan_destroy(ch);
    } else {
        tc_portchan_t *ch = nullptr;
        tc_portchan_device_t h;
        TC_CHECK(tc_portchan_create(g.data_r, g.mem, g.rmems[(size_t)right()], &ch));
        TC_CHECK(tc_portchan_device_handle(ch, &h));
        barrier();
        port_pingpong<<<1, 1>>>(h, g.buf, rank_ == 0, iters, v.dev);
        CUDA_CHECK(cudaDeviceSynchronize());
        TC_CHECK(tc_portchan_flush(ch, -1));
        TC_CHECK(tc_portchan_destroy(ch));
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (v.host[0] != 0 || v.host[1] != 0 || v.host[2] != 0) {
        fail("%s_pingpong: kernel verdict %d/%d/%d (1: send or wait failed, 2: no signal in "
             "time, 3: send back failed; second: round+1 whose value was wrong; third: flush)",
             mem ? "mem" : "port", v.host[0], v.host[1], v.host[2]);
    }
    rig_close(&g);
    std::printf("test_gpu_chan: rank %d: PASS %s_pingpong: %d round trips, %.1f us each\n", rank_,
                mem ? "mem" : "port", iters, s / iters * 1e6);
}

// ---- bulk puts -----------------------------------------------------------------------

__global__ void mem_bulk_put(tc_memchan_device_t h, uint64_t bytes, int *v)
{
    if (tc_memchan_device_put(&h, HALF, 0, bytes, threadIdx.x, blockDim.x) != 0) {
        v[0] = 1;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        tc_memchan_device_signal(&h);
    }
}

__global__ void wait_kernel(tc_sem_device_t s, int *v)
{
    if (tc_sem_device_wait(&s, WAIT_NS) != 0) {
        v[1] = 1;
    }
}

// One thread pushes puts of chunk bytes, then a signal, then a flush.
__global__ void port_bulk_put(tc_portchan_device_t h, uint64_t bytes, uint64_t chunk, int *v)
{
    for (uint64_t off = 0; off < bytes; off += chunk) {
        uint64_t n = bytes - off < chunk ? bytes - off : chunk;
        if (tc_portchan_device_put(&h, HALF + off, off, n) != 0) {
            v[0] = 1;
        }
    }
    if (tc_portchan_device_signal(&h) != 0 || tc_portchan_device_flush(&h) != 0) {
        v[2] = 1;
    }
}

static void case_bulk(bool mem)
{
    const uint64_t bytes = 16ull << 20;
    rig_t g;
    verdict_t v;
    int *bad = nullptr, nbad = 0;

    if (size_ < 2 || (mem && (other_node(right()) || other_node(left())))) {
        std::printf("test_gpu_chan: rank %d: skip %s_bulk\n", rank_, mem ? "mem" : "port");
        return;
    }
    rig_open(&g);
    CUDA_CHECK(cudaMalloc(&bad, sizeof(int)));
    CUDA_CHECK(cudaMemset(bad, 0, sizeof(int)));
    tc_sem_device_t from_l;
    TC_CHECK(tc_sem_device_handle(g.data_l, &from_l));
    tc_memchan_t *mch = nullptr;
    tc_portchan_t *pch = nullptr;
    tc_memchan_device_t mh;
    tc_portchan_device_t ph;
    if (mem) {
        TC_CHECK(tc_memchan_create(g.data_r, g.mem, g.rmems[(size_t)right()], &mch));
        TC_CHECK(tc_memchan_device_handle(mch, &mh));
    } else {
        TC_CHECK(tc_portchan_create(g.data_r, g.mem, g.rmems[(size_t)right()], &pch));
        TC_CHECK(tc_portchan_device_handle(pch, &ph));
    }
    for (int round = 0; round < 2; round++) {
        fill_kernel<<<256, 256>>>(g.buf, bytes, rank_, round);
        CUDA_CHECK(cudaDeviceSynchronize());
        barrier();
        // the receiver's kernel waits while the sender's puts: both queued
        cudaStream_t s2;
        CUDA_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
        wait_kernel<<<1, 1, 0, s2>>>(from_l, v.dev);
        if (mem) {
            mem_bulk_put<<<1, 256>>>(mh, bytes, v.dev);
        } else {
            port_bulk_put<<<1, 1>>>(ph, bytes, 4ull << 20, v.dev);
            // after the flush the source is free: overwrite it at once
            fill_kernel<<<256, 256>>>(g.buf, bytes, rank_, 100 + round);
        }
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaStreamDestroy(s2));
        from_l.expected++; // the kernel consumed one on its copy of the handle
        check_kernel<<<256, 256>>>(g.buf + HALF, bytes, left(), round, bad);
        CUDA_CHECK(cudaMemcpy(&nbad, bad, sizeof(int), cudaMemcpyDeviceToHost));
        if (v.host[0] != 0 || v.host[1] != 0 || v.host[2] != 0 || nbad != 0) {
            fail("%s_bulk round %d: put refused %d, no signal %d, flush failed %d; %d of %llu "
                 "bytes from rank %d wrong",
                 mem ? "mem" : "port", round, v.host[0], v.host[1], v.host[2], nbad,
                 (unsigned long long)bytes, left());
        }
        barrier(); // everyone checked before the next round's puts
    }
    if (mem) {
        tc_memchan_destroy(mch);
    } else {
        TC_CHECK(tc_portchan_destroy(pch));
    }
    TC_CHECK(tc_sem_device_done(g.data_l, &from_l));
    CUDA_CHECK(cudaFree(bad));
    rig_close(&g);
    std::printf("test_gpu_chan: rank %d: PASS %s_bulk: 2 rounds of %llu bytes, every byte\n", rank_,
                mem ? "mem" : "port", (unsigned long long)bytes);
}

// ---- host memory to device memory and back ------------------------------------------------

static void case_host_device()
{
    const uint64_t n = 3u << 20;
    rig_t g;

    if (size_ < 2) {
        std::printf("test_gpu_chan: rank %d: skip host_device\n", rank_);
        return;
    }
    rig_open(&g);
    // this rank's host memory, registered in the same context
    char *host = nullptr;
    tc_mem_t *hmem = nullptr;
    std::vector<tc_rmem_t *> hr((size_t)size_, nullptr);
    TC_CHECK(tc_mem_alloc(BYTES, (void **)&host));
    TC_CHECK(tc_mem_register(g.ctx, host, BYTES, &hmem));
    TC_CHECK(tc_mem_exchange(g.ctx, "host", hmem, hr.data()));
    std::vector<unsigned char> want(n), got(n);
    for (uint64_t i = 0; i < n; i++) {
        host[i] = (char)(i * 7u + (uint64_t)rank_);
        want[i] = (unsigned char)(i * 7u + (uint64_t)left());
    }
    // host -> the right one's device memory
    tc_portchan_t *h2d = nullptr, *d2h = nullptr;
    TC_CHECK(tc_portchan_create(g.data_r, hmem, g.rmems[(size_t)right()], &h2d));
    TC_CHECK(tc_portchan_put_with_signal(h2d, HALF, 0, n));
    TC_CHECK(tc_portchan_flush(h2d, -1));
    TC_CHECK(tc_sem_wait(g.data_l, WAIT_NS));
    CUDA_CHECK(cudaMemcpy(got.data(), g.buf + HALF, n, cudaMemcpyDeviceToHost));
    if (got != want) {
        fail("host_device: host to device: the bytes from rank %d differ", left());
    }
    barrier();
    // device -> the right one's host memory: this rank's device memory holds the left one's bytes
    TC_CHECK(tc_portchan_create(g.ack_r, g.mem, hr[(size_t)right()], &d2h));
    TC_CHECK(tc_portchan_put_with_signal(d2h, HALF, HALF, n));
    TC_CHECK(tc_portchan_flush(d2h, -1));
    TC_CHECK(tc_sem_wait(g.ack_l, WAIT_NS));
    for (uint64_t i = 0; i < n; i++) {
        // what the left one received came from its left one
        unsigned char w = (unsigned char)(i * 7u + (uint64_t)((left() + size_ - 1) % size_));
        if ((unsigned char)host[HALF + i] != w) {
            fail("host_device: device to host: byte %llu is %u, want %u", (unsigned long long)i,
                 (unsigned char)host[HALF + i], w);
        }
    }
    TC_CHECK(tc_portchan_destroy(h2d));
    TC_CHECK(tc_portchan_destroy(d2h));
    barrier();
    for (tc_rmem_t *r : hr) {
        tc_mem_close(r);
    }
    tc_mem_deregister(hmem);
    rig_close(&g);
    TC_CHECK(tc_mem_free(host));
    std::printf("test_gpu_chan: rank %d: PASS host_device: %llu bytes host to device and back\n",
                rank_, (unsigned long long)n);
}

// ---- a peer killed mid-put ---------------------------------------------------------------

__global__ void put_until_failed(tc_portchan_device_t h, uint64_t bytes, int max_rounds, int *v)
{
    for (int i = 0; i < max_rounds; i++) {
        if (tc_portchan_device_put_with_signal(&h, HALF, 0, bytes) != 0) {
            v[0] = 1;
            return;
        }
        if (tc_portchan_device_flush(&h) != 0) {
            v[3] = 1 + i; // failed, as it must once the peer is gone
            return;
        }
    }
}

static void case_killed()
{
    const int last = size_ - 1;
    rig_t g;
    verdict_t v;

    if (size_ < 2) {
        fail("killed needs 2 or more ranks");
    }
    rig_open(&g);
    tc_portchan_t *ch = nullptr;
    tc_portchan_device_t h;
    tc_sem_t *s = nullptr;
    if (rank_ != last) {
        TC_CHECK(tc_sem_create(g.ctx, last, 2, &s));
        TC_CHECK(tc_portchan_create(s, g.mem, g.rmems[(size_t)last], &ch));
        TC_CHECK(tc_portchan_device_handle(ch, &h));
    }
    barrier();
    if (rank_ == last) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        std::raise(SIGKILL);
    }
    auto t0 = std::chrono::steady_clock::now();
    put_until_failed<<<1, 1>>>(h, 8u << 20, 100000, v.dev);
    CUDA_CHECK(cudaDeviceSynchronize());
    double s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (v.host[0] != 0 || v.host[3] == 0) {
        fail("killed: the device flush never failed (%d, %d)", v.host[0], v.host[3]);
    }
    if (tc_portchan_flush(ch, -1) != TC_ERR_TRANSPORT ||
        std::strstr(tc_last_error(), "exited") == nullptr) {
        fail("killed: the host's flush says: %s", tc_last_error());
    }
    (void)tc_portchan_destroy(ch); /* fails again, said again */
    tc_sem_destroy(s);
    for (tc_rmem_t *r : g.rmems) {
        tc_mem_close(r);
    }
    tc_mem_deregister(g.mem);
    (void)tc_chan_ctx_destroy(g.ctx);
    CUDA_CHECK(cudaFree(g.buf));
    (void)tc_shutdown(); /* the engine finds the lost rank too */
    std::printf("test_gpu_chan killed: rank %d survived: the device flush failed after %.1f s\n",
                rank_, s_);
    std::fflush(stdout);
    std::exit(0);
}

int main(int argc, char **argv)
{
    std::string which = argc > 2 && std::string(argv[1]) == "--case" ? argv[2] : "all";
    int ndev = 0;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        std::printf("test_gpu_chan: skipped: no usable GPU\n");
        return 77;
    }
    if (tc_init() != TC_OK) {
        std::printf("test_gpu_chan: tc_init: %s\n", tc_last_error());
        return 1;
    }
    rank_ = tc_rank();
    size_ = tc_size();
    CUDA_CHECK(cudaSetDevice(tc_local_rank() % ndev));
    if (which == "proxy" || which == "all") {
        case_proxy();
    }
    if (which == "mem_pingpong" || which == "all") {
        case_pingpong(true);
    }
    if (which == "port_pingpong" || which == "all") {
        case_pingpong(false);
    }
    if (which == "mem_bulk" || which == "all") {
        case_bulk(true);
    }
    if (which == "port_bulk" || which == "all") {
        case_bulk(false);
    }
    if (which == "host_device" || which == "all") {
        case_host_device();
    }
    if (which == "killed") {
        case_killed();
    }
    TC_CHECK(tc_shutdown());
    std::printf("test_gpu_chan: rank %d: PASS (%s)\n", rank_, which.c_str());
    return 0;
}
