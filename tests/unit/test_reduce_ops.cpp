// test_reduce_ops.cpp - the elementwise semantics of the GPU reduction
// (src/cuda/reduce_ops.cuh), compiled as plain C++ on the CPU, against the
// host's reduction (src/reduce) bit for bit: every dtype and op, 1 to 7
// inputs combined in the documented order, with and without prescale and
// postscale, on random bit patterns (quiet and signalling NaNs, infinities,
// subnormals, the integer extremes) and on small integers. The same logic
// runs on a GPU in tests/gpu/test_gpu_reduce.cu, which adds what only the
// device can show (its NaNs, FMA contraction, the launch).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
#include "reduce/reduce.h"
}
#include "cuda/reduce_ops.cuh"

namespace
{

uint64_t rng_state = 0x2545f4914f6cdd1dull;

uint64_t rnd()
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

bool is_float(tc_dtype_t dt)
{
    return dt == TC_FLOAT16 || dt == TC_BFLOAT16 || dt == TC_FLOAT32 || dt == TC_FLOAT64;
}

// Random bits, a special value one time in 8 for the floating dtypes; or
// small integers (kind 1).
void fill(tc_dtype_t dt, unsigned char *p, size_t count, int kind)
{
    static const uint64_t special[4][7] = {
        {0x7c00, 0xfc00, 0x7e00, 0x7d01, 0x0001, 0x8000, 0x3c00}, // float16
        {0x7f80, 0xff80, 0x7fc0, 0x7f81, 0x0001, 0x8000, 0x3f80}, // bfloat16
        {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 1u, 0x80000000u, 0x3f800000u},
        {0x7ff0000000000000ull, 0xfff0000000000000ull, 0x7ff8000000000000ull, 0x7ff0000000000001ull,
         1ull, 0x8000000000000000ull, 0x3ff0000000000000ull}};
    size_t es = tc_dtype_size(dt);
    for (size_t i = 0; i < count; i++) {
        uint64_t r = rnd();
        unsigned char *e = p + i * es;
        if (kind == 1) {
            int64_t v = (int64_t)(r % 7) - 3;
            if (dt == TC_UINT8 || dt == TC_UINT16) {
                v = v < 0 ? -v : v;
            }
            if (dt == TC_FLOAT16 || dt == TC_BFLOAT16) {
                uint16_t h =
                    dt == TC_FLOAT16 ? tc__f32_to_f16((float)v) : tc__f32_to_bf16((float)v);
                std::memcpy(e, &h, 2);
            } else if (dt == TC_FLOAT32) {
                float f = (float)v;
                std::memcpy(e, &f, 4);
            } else if (dt == TC_FLOAT64) {
                double d = (double)v;
                std::memcpy(e, &d, 8);
            } else {
                std::memcpy(e, &v, es); // the low bytes (little-endian)
            }
            continue;
        }
        int fam = dt == TC_FLOAT16 ? 0 : dt == TC_BFLOAT16 ? 1 : dt == TC_FLOAT32 ? 2 : 3;
        if (is_float(dt) && r % 8 == 0) {
            std::memcpy(e, &special[fam][(r >> 8) % 7], es);
            continue;
        }
        double x = (double)(int64_t)r / 9.2e18;
        if (dt == TC_FLOAT32) {
            float f = (float)(x * 1000.0);
            std::memcpy(e, &f, 4);
        } else if (dt == TC_FLOAT64) {
            double d = x * 1e6;
            std::memcpy(e, &d, 8);
        } else if (dt == TC_FLOAT16) {
            uint16_t h = tc__f32_to_f16((float)(x * 100.0));
            std::memcpy(e, &h, 2);
        } else if (dt == TC_BFLOAT16 && r % 4 != 1) {
            uint16_t h = tc__f32_to_bf16((float)(x * 100.0));
            std::memcpy(e, &h, 2);
        } else {
            std::memcpy(e, &r, es); // raw bits: integers, and some bfloat16
        }
    }
}

// The host path: each input scaled, combined left to right, the average's
// division, the postscale.
void host_combine(tc_dtype_t dt, tc_op_t op, int n, unsigned char *const *x, unsigned char *out,
                  size_t count, double pre, double post)
{
    size_t bytes = count * tc_dtype_size(dt);
    std::vector<unsigned char> tmp(bytes);
    std::memcpy(out, x[0], bytes);
    if (pre != 1.0) {
        tc__scale(dt, out, out, count, pre);
    }
    for (int k = 1; k < n; k++) {
        std::memcpy(tmp.data(), x[k], bytes);
        if (pre != 1.0) {
            tc__scale(dt, tmp.data(), tmp.data(), count, pre);
        }
        tc__reduce(dt, op, out, tmp.data(), count);
    }
    if (op == TC_AVG) {
        tc__reduce_avg_finish(dt, out, count, n);
    }
    if (post != 1.0) {
        tc__scale(dt, out, out, count, post);
    }
}

// with_ops' functor: combine_one over every element.
struct cpu_combine {
    tc_op_t op;
    int n;
    const void *const *x;
    unsigned char *out;
    size_t count;
    double pre, post;
    template <typename O> int run()
    {
        typedef typename O::S S;
        for (size_t i = 0; i < count; i++) {
            S r = tc_cuda::combine_one<O>(op, n, x, i, pre, post);
            std::memcpy(out + i * sizeof(S), &r, sizeof(S));
        }
        return 1;
    }
};

} // namespace

int main()
{
    const tc_dtype_t dts[] = {TC_UINT8, TC_INT8,    TC_UINT16,   TC_INT16,   TC_INT32,
                              TC_INT64, TC_FLOAT16, TC_BFLOAT16, TC_FLOAT32, TC_FLOAT64};
    const tc_op_t ops[] = {TC_SUM, TC_AVG, TC_MIN, TC_MAX, TC_PROD};
    const int ns[] = {1, 2, 3, 4, 7};
    const double scales[][2] = {{1.0, 1.0}, {0.5, 3.0}, {-2.0, 1.0}, {1.0, 0.1}, {1e30, -1e-30}};
    const size_t count = 2053;
    std::vector<unsigned char> bufs[7], want(count * 8), got(count * 8);
    unsigned char *hx[7];
    const void *cx[7];
    int cases = 0;

    for (int k = 0; k < 7; k++) {
        bufs[k].resize(count * 8);
        hx[k] = bufs[k].data();
        cx[k] = hx[k];
    }
    for (tc_dtype_t dt : dts) {
        size_t es = tc_dtype_size(dt);
        for (int kind = 0; kind < 2; kind++) {
            for (tc_op_t op : ops) {
                if (op == TC_AVG && !is_float(dt)) {
                    continue;
                }
                for (int n : ns) {
                    for (const auto &sc : scales) {
                        for (int k = 0; k < n; k++) {
                            fill(dt, hx[k], count, kind);
                        }
                        host_combine(dt, op, n, hx, want.data(), count, sc[0], sc[1]);
                        cpu_combine c = {op, n, cx, got.data(), count, sc[0], sc[1]};
                        if (!tc_cuda::with_ops(dt, c)) {
                            std::printf("test_reduce_ops: FAIL: %s not known\n", tc_dtype_name(dt));
                            return 1;
                        }
                        for (size_t i = 0; i < count * es; i++) {
                            if (got[i] == want[i]) {
                                continue;
                            }
                            size_t e = i / es;
                            std::printf("test_reduce_ops: FAIL: %s %s, %d inputs, prescale %g, "
                                        "postscale %g, %s data: element %zu: got",
                                        tc_dtype_name(dt), tc_op_name(op), n, sc[0], sc[1],
                                        kind ? "small-integer" : "random", e);
                            for (size_t b = es; b-- > 0;) {
                                std::printf(" %02x", got[e * es + b]);
                            }
                            std::printf(", host");
                            for (size_t b = es; b-- > 0;) {
                                std::printf(" %02x", want[e * es + b]);
                            }
                            std::printf("; inputs");
                            for (int k = 0; k < n; k++) {
                                std::printf(" ");
                                for (size_t b = es; b-- > 0;) {
                                    std::printf("%02x", hx[k][e * es + b]);
                                }
                            }
                            std::printf("\n");
                            return 1;
                        }
                        cases++;
                    }
                }
            }
        }
    }
    cpu_combine none = {TC_SUM, 1, cx, got.data(), 1, 1.0, 1.0};
    if (tc_cuda::with_ops((tc_dtype_t)99, none) != 0) {
        std::printf("test_reduce_ops: FAIL: an unknown dtype was taken\n");
        return 1;
    }
    std::printf("test_reduce_ops: PASS: %d cases of %zu elements, bit for bit\n", cases, count);
    return 0;
}
