// test_gpu_fifo.cu - the device push on a real GPU: CUDA kernels (many blocks
// and threads) encode triggers with tc_trigger_encode and push them with
// tc_fifo_device_push into a proxy's FIFO, whose pages are registered with
// cudaHostRegister(cudaHostRegisterMapped); the proxy's handler decodes every
// trigger and checks it: handled exactly once, fields as encoded, each GPU
// thread's triggers in its push order. Then a proxy that has gone idle
// (parked with a time limit) picks up single device pushes.
//
// Where the device's atomics on host memory are atomic for the CPU too
// (cudaDevAttrHostNativeAtomicSupported), host threads push with
// tc_fifo_push into the same FIFO while the kernel runs; elsewhere a FIFO
// must not have both kinds of producer (tcoll_fifo_device.h), and they
// take turns instead.
//
// Not part of CI: scripts/test_gpu.sh builds and runs it. Prints PASS or
// FAIL; exit 0, 1, or 77 when there is no usable GPU.
#include "tcoll.h"
#include "tcoll_fifo_device.h"
#include "tcoll_trigger.h"

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#define CUDA_CHECK(call)                                                                  \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            fail("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));     \
        }                                                                                 \
    } while (0)

static void fail(const char *fmt, ...)
{
    va_list ap;

    std::printf("test_gpu_fifo: FAIL: ");
    va_start(ap, fmt);
    std::vprintf(fmt, ap);
    va_end(ap);
    std::printf("\n");
    std::fflush(stdout);
    std::exit(1);
}

// ---- the triggers: producer id and number ---------------------------------------

struct want_t {
    uint32_t type, chan;
    uint64_t size, src, dst;
};

// The fields of producer id's trigger number k (id: a GPU thread, or a host
// thread numbered after them). Every field varies, offsets above 2^32 too.
__host__ __device__ static want_t want_of(uint64_t id, uint64_t k)
{
    want_t w;

    w.type = 1u + (uint32_t)((id + k) % TC_TRIG_TYPE_MASK);
    w.chan = (uint32_t)(id % (TC_TRIG_MAX_CHAN + 1u));
    w.size = k;
    w.src = id;
    w.dst = (((uint64_t)1) << 39) + id * 4096u + k;
    return w;
}

// Threads id_base + global index push k_base .. k_base + count - 1 each.
// bad counts triggers that failed to encode (there should be none).
__global__ void push_kernel(tc_fifo_device_t view, uint64_t id_base, uint64_t k_base,
                            uint32_t count, unsigned int *bad)
{
    uint64_t id = id_base + (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

    for (uint32_t i = 0; i < count; i++) {
        want_t w = want_of(id, k_base + i);
        tc_trigger_t t;

        if (tc_trigger_encode(w.type, w.chan, w.dst, w.src, w.size, &t) != 0) {
            atomicAdd(bad, 1u);
            return;
        }
        (void)tc_fifo_device_push(&view, t);
    }
}

// ---- the checking handler (runs on the proxy thread) -----------------------------

struct checker_t {
    std::vector<uint64_t> next; // per producer id: the number expected next
    std::atomic<uint64_t> handled{0};
    uint64_t errors = 0;        // proxy thread only; read after a stop or sync
    char first_error[256] = "";
};

static void checker_error(checker_t *c, const char *fmt, ...)
{
    va_list ap;

    if (c->errors++ == 0) {
        va_start(ap, fmt);
        std::vsnprintf(c->first_error, sizeof(c->first_error), fmt, ap);
        va_end(ap);
    }
}

extern "C" tc_proxy_result_t gpu_check_handler(tc_trigger_t t, void *arg)
{
    checker_t *c = static_cast<checker_t *>(arg);
    tc_trigger_fields_t f;

    if (tc_trigger_decode(t, &f) != 0) {
        checker_error(c, "trigger {%#llx, %#llx} does not decode", (unsigned long long)t.fst,
                      (unsigned long long)t.snd);
    } else if (f.src_offset >= c->next.size()) {
        checker_error(c, "producer id %llu out of range", (unsigned long long)f.src_offset);
    } else {
        uint64_t id = f.src_offset, k = f.size;
        want_t w = want_of(id, k);

        if (k != c->next[id]) {
            checker_error(c, "producer %llu: got #%llu, expected #%llu", (unsigned long long)id,
                          (unsigned long long)k, (unsigned long long)c->next[id]);
        } else if (f.type != w.type || f.chan != w.chan || f.dst_offset != w.dst) {
            checker_error(c, "producer %llu #%llu: fields differ (type %u/%u chan %u/%u)",
                          (unsigned long long)id, (unsigned long long)k, f.type, w.type, f.chan,
                          w.chan);
        }
        c->next[id] = k + 1;
    }
    c->handled.fetch_add(1, std::memory_order_release);
    return TC_PROXY_CONTINUE;
}

// ---- one proxy, mapped for the GPU ------------------------------------------------

struct rig_t {
    checker_t check;
    tc_proxy_t *proxy = nullptr;
    tc_fifo_device_t host_view, dev_view;
};

static void rig_open(rig_t *r, uint32_t fifo_size, uint64_t nids)
{
    r->check.next.assign(nids, 0);
    if (tc_proxy_create(gpu_check_handler, &r->check, nullptr, nullptr, fifo_size, &r->proxy) !=
            TC_OK ||
        tc_fifo_device_view(tc_proxy_fifo(r->proxy), &r->host_view) != TC_OK) {
        fail("proxy setup: %s", tc_last_error());
    }
    CUDA_CHECK(tc_fifo_device_map_cuda(&r->host_view, &r->dev_view));
    if (tc_proxy_start(r->proxy, 1) != TC_OK) {
        fail("tc_proxy_start: %s", tc_last_error());
    }
}

// Stops the proxy (handling everything pushed) and checks the count.
static void rig_close(rig_t *r, const char *what, uint64_t per_id)
{
    uint64_t total = 0;

    if (tc_proxy_stop(r->proxy) != TC_OK) {
        fail("%s: tc_proxy_stop: %s", what, tc_last_error());
    }
    for (uint64_t id = 0; id < r->check.next.size(); id++) {
        total += r->check.next[id];
        if (per_id != 0 && r->check.next[id] != per_id) {
            fail("%s: producer %llu: %llu triggers handled, %llu pushed", what,
                 (unsigned long long)id, (unsigned long long)r->check.next[id],
                 (unsigned long long)per_id);
        }
    }
    if (r->check.errors != 0) {
        fail("%s: %llu bad triggers; first: %s", what, (unsigned long long)r->check.errors,
             r->check.first_error);
    }
    if (r->check.handled.load() != total) {
        fail("%s: %llu handled, %llu expected", what,
             (unsigned long long)r->check.handled.load(), (unsigned long long)total);
    }
    CUDA_CHECK(cudaHostUnregister(r->host_view.map_base));
    tc_proxy_destroy(r->proxy);
    r->proxy = nullptr;
}

// Many blocks push per_thread triggers each (and, with native host atomics,
// host threads push at the same time) through a FIFO of fifo_size slots.
static void run_many(uint32_t fifo_size, unsigned blocks, unsigned threads, uint32_t per_thread,
                     int native_atomics)
{
    const uint64_t ngpu = (uint64_t)blocks * threads, nhost = 2;
    unsigned int *bad_d = nullptr, bad = 0;
    std::vector<std::thread> host;
    char what[128];
    rig_t r;

    std::snprintf(what, sizeof(what), "%u slots, %u x %u GPU threads x %u triggers%s", fifo_size,
                  blocks, threads, per_thread, native_atomics ? " + 2 host threads" : "");
    rig_open(&r, fifo_size, ngpu + nhost);
    CUDA_CHECK(cudaMalloc(&bad_d, sizeof(*bad_d)));
    CUDA_CHECK(cudaMemset(bad_d, 0, sizeof(*bad_d)));
    auto host_push = [&r, ngpu, per_thread](uint64_t h) {
        tc_fifo_t *fifo = tc_proxy_fifo(r.proxy);
        for (uint64_t k = 0; k < per_thread; k++) {
            want_t w = want_of(ngpu + h, k);
            tc_trigger_t t;
            if (tc_trigger_encode(w.type, w.chan, w.dst, w.src, w.size, &t) == 0) {
                (void)tc_fifo_push(fifo, t);
            }
        }
    };
    auto t0 = std::chrono::steady_clock::now();
    push_kernel<<<blocks, threads>>>(r.dev_view, 0, 0, per_thread, bad_d);
    CUDA_CHECK(cudaGetLastError());
    if (native_atomics) {
        for (uint64_t h = 0; h < nhost; h++) {
            host.emplace_back(host_push, h);
        }
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    for (auto &th : host) {
        th.join();
    }
    if (!native_atomics) {
        // Not at the same time as the kernel: the head's fetch-adds of the
        // CPU and the GPU are not atomic against each other here.
        for (uint64_t h = 0; h < nhost; h++) {
            host_push(h);
        }
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count();
    CUDA_CHECK(cudaMemcpy(&bad, bad_d, sizeof(bad), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(bad_d));
    if (bad != 0) {
        fail("%s: %u triggers failed to encode on the device", what, bad);
    }
    rig_close(&r, what, per_thread);
    std::printf("test_gpu_fifo: ok: %s: %llu triggers in %.1f ms\n", what,
                (unsigned long long)((ngpu + nhost) * per_thread), ms);
    std::fflush(stdout);
}

// The proxy goes idle (it parks, with a time limit, since nothing rings for
// a device push); single pushes from a one-thread kernel still get handled.
static void run_idle(void)
{
    static const int idle_ms[] = {0, 1, 10, 50, 200};
    unsigned int *bad_d = nullptr;
    rig_t r;

    rig_open(&r, 16, 1);
    CUDA_CHECK(cudaMalloc(&bad_d, sizeof(*bad_d)));
    CUDA_CHECK(cudaMemset(bad_d, 0, sizeof(*bad_d)));
    for (unsigned i = 0; i < sizeof(idle_ms) / sizeof(idle_ms[0]); i++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms[i]));
        push_kernel<<<1, 1>>>(r.dev_view, 0, i, 1, bad_d);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        auto t0 = std::chrono::steady_clock::now();
        // Position i: only these pushes went into this FIFO. The limit only
        // turns a lost trigger into a message instead of a hang.
        if (tc_fifo_sync(tc_proxy_fifo(r.proxy), i, 10000000000ll) != TC_OK) {
            fail("idle proxy: device push #%u not handled: %s", i, tc_last_error());
        }
        double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() -
                                                              t0)
                        .count();
        std::printf("test_gpu_fifo: ok: idle %d ms, then a device push: handled %.0f us after the "
                    "kernel ended\n",
                    idle_ms[i], us);
    }
    CUDA_CHECK(cudaFree(bad_d));
    rig_close(&r, "idle proxy", sizeof(idle_ms) / sizeof(idle_ms[0]));
}

int main()
{
    cudaDeviceProp prop;
    int ndev = 0, native = 0;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        std::printf("test_gpu_fifo: SKIP: no CUDA device\n");
        return 77;
    }
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    if (prop.major < 7 || !prop.canMapHostMemory) {
        std::printf("test_gpu_fifo: SKIP: %s (sm_%d%d) %s\n", prop.name, prop.major, prop.minor,
                    prop.major < 7 ? "is older than compute capability 7.0"
                                   : "cannot map host memory");
        return 77;
    }
    CUDA_CHECK(cudaDeviceGetAttribute(&native, cudaDevAttrHostNativeAtomicSupported, 0));
    std::printf("test_gpu_fifo: %s (sm_%d%d), native host atomics: %s\n", prop.name, prop.major,
                prop.minor, native ? "yes" : "no");

    run_many(4096, 32, 128, 16, native);
    run_many(64, 64, 256, 8, native); // far more pushers than slots: they wait for room
    run_many(1, 4, 32, 4, native);
    run_idle();
    std::printf("test_gpu_fifo: PASS\n");
    return 0;
}
