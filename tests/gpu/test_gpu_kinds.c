/*
 * test_gpu_kinds.c - every kind on CUDA device tensors, against the same call
 * on host tensors (the host path's result, bit for bit), on 1 to 4 ranks that
 * may share one GPU (rank r uses device r mod the device count).
 *  - allreduce: every dtype (float16 and bfloat16 included) and op, out of
 *    place and in place, 1 to 262144 elements, with scaling factors;
 *  - allgather (a different dim 0 per rank), broadcast from every root,
 *    reducescatter, alltoall with uneven splits: the outputs tcoll allocates
 *    are device memory of the tensor's device;
 *  - grouped allreduce, a process set of the even ranks, and an allreduce
 *    that runs while the last rank has joined;
 *  - ordering: the input is written by a copy queued on the caller's stream
 *    behind a host function that sleeps, and tcoll reads it only after that;
 *    the legacy default stream too;
 *  - a name that is a host tensor on rank 0 and a device tensor elsewhere
 *    fails on every rank with TC_ERR_MISMATCH, "memory mismatch";
 *  - with TCOLL_CUDA_STAGE_CHUNK_KB small (and IPC off), the allreduces and
 *    broadcasts larger than a chunk say they ran "staged, pipelined".
 * The data are small integers (exact in every dtype, so any reduction order
 * gives the same bits) or, with TCOLL_DETERMINISTIC=1, random floats (the
 * documented order must then give the host path's bits).
 * Exit 77 with one line when this process has no usable CUDA device.
 */
#define _POSIX_C_SOURCE 200809L

#include <cuda.h> /* the driver's types, for cuDevicePrimaryCtxGetState */
#include <cuda_runtime_api.h>
#include <mpi.h>

#include "cuda_check.h"
#include "mpi_common.h"

static int dev;
static cudaStream_t stream;
static int random_data; /* TCOLL_DETERMINISTIC=1: random floats */

static void *dalloc(size_t bytes)
{
    void *p = NULL;
    CUDA_OK(cudaMalloc(&p, bytes > 0 ? bytes : 1));
    return p;
}

static void *dcopy_of(const void *h, size_t bytes)
{
    void *d = dalloc(bytes);
    CUDA_OK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

static void *hcopy_of(const void *d, size_t bytes)
{
    void *h = malloc(bytes > 0 ? bytes : 1);
    CHECK(h != NULL);
    CUDA_OK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
    return h;
}

static tc_opts_t dopts(void)
{
    tc_opts_t o = TC_OPTS_INIT;
    o.device = dev;
    o.cuda_stream = stream;
    return o;
}

/* Element i of this rank's input for salt: small integers where the op keeps
 * every partial result exact, or random floats in [-1, 1). */
static void fill(tc_dtype_t dt, tc_op_t op, void *buf, size_t count, uint64_t salt)
{
    tt_rng_t g = {tt_key(salt, (uint64_t)tt_rank, 17)};
    size_t i;

    for (i = 0; i < count; i++) {
        int64_t v;
        if (random_data && tt_is_float(dt)) {
            double r = (double)(tt_rng_next(&g) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
            tt_store_real(dt, buf, (int64_t)i, dt == TC_FLOAT64 ? r : (double)(float)r);
            continue;
        }
        v = (int64_t)(tt_rng_next(&g) % 7) - 3; /* -3..3 */
        if (op == TC_PROD) {
            v = v < -1 ? -1 : v > 1 ? 2 : 1; /* -1, 1 or 2: at most 2^4 in magnitude */
        }
        if (dt == TC_UINT8 || dt == TC_UINT16) {
            v = v < 0 ? -v : v;
        }
        tt_store(dt, buf, (int64_t)i, v);
    }
}

/* Waits for req and expects TC_OK; returns the output tensor (before free). */
static tc_tensor_t done(tc_request_t *req, const char *what)
{
    tc_tensor_t out;
    tc_status_t st = tc_wait(req);
    CHECK_MSG(st == TC_OK, "%s: %s: %s", what, tc_status_string(st), tc_request_error(req));
    CHECK_OK(tc_request_output(req, &out));
    return out;
}

static size_t tensor_bytes(const tc_tensor_t *t)
{
    size_t n = tt_dtype_bytes(t->dtype);
    int d;
    for (d = 0; d < t->ndim; d++) {
        n *= (size_t)t->shape[d];
    }
    return n;
}

/* out (a device tensor tcoll allocated on dev) holds what host does. */
static void check_device_output(const tc_tensor_t *out, const tc_tensor_t *host, const char *what)
{
    struct cudaPointerAttributes a;
    size_t bytes = tensor_bytes(host);
    void *h;
    int d;

    CHECK_EQ(out->dtype, host->dtype);
    CHECK_EQ(out->ndim, host->ndim);
    for (d = 0; d < out->ndim; d++) {
        CHECK_EQ(out->shape[d], host->shape[d]);
    }
    if (bytes == 0) {
        return;
    }
    CUDA_OK(cudaPointerGetAttributes(&a, out->data));
    CHECK_MSG(a.type == cudaMemoryTypeDevice && a.device == dev,
              "%s: output is memory type %d of device %d, not device %d's", what, (int)a.type,
              a.device, dev);
    h = hcopy_of(out->data, bytes);
    CHECK_MSG(memcmp(h, host->data, bytes) == 0, "%s: device output differs from the host's", what);
    free(h);
}

/* Whether a device allreduce or broadcast of bytes must have run in chunks
 * (TCOLL_CUDA_STAGE_CHUNK_KB set, smaller than bytes, IPC off): then
 * tc_request_algorithm says "staged, pipelined". */
static int want_pipelined(size_t bytes)
{
    const char *chunk = getenv("TCOLL_CUDA_STAGE_CHUNK_KB"), *ipc = getenv("TCOLL_CUDA_IPC");
    long kb = chunk != NULL ? atol(chunk) : 0;

    return kb > 0 && bytes > (size_t)kb * 1024 && (ipc == NULL || strcmp(ipc, "1") != 0);
}

/* TC_TEST_EXPECT_IPC (set where it is known whether CUDA IPC works: 1 on
 * the CUDA runtime stand-in, 0 where it refuses IPC): with TCOLL_CUDA_IPC=1,
 * whether a device collective of the global set over 2 or more ranks,
 * selected by bytes of at least TCOLL_CUDA_IPC_MIN_KB, must have run
 * "cuda ipc" (1), must not have (0), or may have either (-1). */
static int want_ipc(size_t bytes)
{
    const char *e = getenv("TC_TEST_EXPECT_IPC"), *ipc = getenv("TCOLL_CUDA_IPC"),
               *kb = getenv("TCOLL_CUDA_IPC_MIN_KB");
    size_t min = (size_t)(kb != NULL ? atol(kb) : 256) * 1024;

    if (e == NULL || ipc == NULL || strcmp(ipc, "1") != 0 || tt_size < 2) {
        return -1;
    }
    if (strcmp(e, "0") == 0) {
        return 0;
    }
    return bytes >= (min > 0 ? min : 1) ? 1 : -1;
}

static void check_ipc(tc_request_t *dr, size_t bytes, const char *name)
{
    const char *a = tc_request_algorithm(dr);
    int ipc = want_ipc(bytes);

    if (ipc >= 0) {
        CHECK_MSG((strcmp(a, "cuda ipc") == 0) == ipc, "%s (%zu bytes) ran '%s': want %s'cuda ipc'",
                  name, bytes, a, ipc ? "" : "anything but ");
    }
}

/* An allreduce's or a broadcast's path: pipelined, or IPC, where known. */
static void check_path(tc_request_t *dr, size_t bytes, const char *name)
{
    const char *a = tc_request_algorithm(dr);

    if (want_pipelined(bytes)) {
        CHECK_MSG(strcmp(a, "staged, pipelined") == 0, "%s (%zu bytes) ran '%s'", name, bytes, a);
    }
    check_ipc(dr, bytes, name);
}

static void allreduce_one(tc_dtype_t dt, tc_op_t op, size_t count, int scaled, int in_place)
{
    size_t bytes = count * tt_dtype_bytes(dt);
    void *h = malloc(bytes), *hout = malloc(bytes), *d, *dout, *back;
    tc_tensor_t ht = {h, dt, 1, {(int64_t)count}}, dt_;
    tc_opts_t ho = TC_OPTS_INIT, o = dopts();
    tc_request_t *hr, *dr;
    char name[96];

    CHECK(h != NULL && hout != NULL);
    fill(dt, op, h, count, (uint64_t)dt * 131 + (uint64_t)op * 7 + count);
    d = dcopy_of(h, bytes);
    dout = in_place ? d : dalloc(bytes);
    dt_ = ht;
    dt_.data = d;
    if (scaled) {
        ho.prescale = o.prescale = 0.5;
        ho.postscale = o.postscale = 3.0;
    }
    snprintf(name, sizeof(name), "ar/%s/%s/%zu/%d%d", tt_dtype_str(dt), tt_op_str(op), count,
             scaled, in_place);
    CHECK_OK(tc_allreduce_ex(name, &dt_, dout, op, &o, &dr));
    name[0] = 'h';
    CHECK_OK(tc_allreduce_ex(name, &ht, hout, op, &ho, &hr));
    done(hr, name);
    done(dr, name);
    check_path(dr, bytes, name);
    back = hcopy_of(dout, bytes);
    CHECK_MSG(memcmp(back, hout, bytes) == 0, "%s: device result differs from the host's", name);
    tc_request_free(hr);
    tc_request_free(dr);
    free(back);
    free(h);
    free(hout);
    if (dout != d) {
        CUDA_OK(cudaFree(dout));
    }
    CUDA_OK(cudaFree(d));
}

TC_CASE(allreduce_every_dtype_and_op)
{
    static const size_t counts[] = {1, 4099, 262144};
    int i, k, c, n = 0;

    for (i = 0; i < TT_NDTYPES; i++) {
        for (k = 0; k < TT_NOPS; k++) {
            tc_dtype_t dt = tt_dtype(i);
            tc_op_t op = tt_op(k);
            if (op == TC_AVG && !tt_is_float(dt)) {
                continue;
            }
            for (c = 0; c < 3; c++) {
                allreduce_one(dt, op, counts[c], 0, c == 1);
                n++;
            }
            if (tt_is_float(dt) && (op == TC_SUM || op == TC_AVG)) {
                allreduce_one(dt, op, 1000, 1, 0);
                n++;
            }
        }
    }
    tt_say("%d allreduces on device %d matched the host path\n", n, dev);
}

TC_CASE(allgather_broadcast)
{
    int root;
    /* 100 columns: from 2.4 KB of output at 2 ranks, so TCOLL_CUDA_IPC_MIN_KB=1 lets
     * the IPC record take it */
    size_t rows = (size_t)tt_rank + 1, count = rows * 100, bytes = count * sizeof(double);
    double *h = malloc(bytes);
    void *d;
    tc_tensor_t ht = {h, TC_FLOAT64, 2, {(int64_t)rows, 100}}, dt_, hout, dout;
    tc_opts_t o = dopts();
    tc_request_t *hr, *dr;

    fill(TC_FLOAT64, TC_SUM, h, count, 5);
    d = dcopy_of(h, bytes);
    dt_ = ht;
    dt_.data = d;
    CHECK_OK(tc_allgather_ex("ag", &dt_, &o, &dr));
    CHECK_OK(tc_allgather("ag-h", &ht, &hr));
    hout = done(hr, "ag-h");
    dout = done(dr, "ag");
    check_device_output(&dout, &hout, "allgather");
    check_ipc(dr, tensor_bytes(&hout), "ag");
    tc_request_free(hr);
    tc_request_free(dr);
    CUDA_OK(cudaFree(d));
    free(h);

    for (root = 0; root < tt_size; root++) {
        size_t n = 100003;
        uint16_t *hb = malloc(n * 2), *back;
        void *db;
        char name[32];
        tc_tensor_t hb_t = {hb, TC_FLOAT16, 1, {(int64_t)n}}, db_t;

        fill(TC_FLOAT16, TC_SUM, hb, n, 40 + (uint64_t)root);
        db = dcopy_of(hb, n * 2);
        db_t = hb_t;
        db_t.data = db;
        snprintf(name, sizeof(name), "bc/%d", root);
        CHECK_OK(tc_broadcast_ex(name, &db_t, root, &o, &dr));
        name[0] = 'h';
        CHECK_OK(tc_broadcast(name, &hb_t, root, &hr));
        done(hr, name);
        done(dr, name);
        check_path(dr, n * 2, name);
        back = hcopy_of(db, n * 2);
        CHECK_MSG(memcmp(back, hb, n * 2) == 0, "broadcast from %d differs", root);
        free(back);
        free(hb);
        CUDA_OK(cudaFree(db));
        tc_request_free(hr);
        tc_request_free(dr);
    }
}

/* A reducescatter of the device tensor dt (name) and of its host twin
 * host (name-h): the device output holds the host's. */
static void reducescatter_pair(const char *name, const tc_tensor_t *dt, const tc_tensor_t *host,
                               tc_op_t op, const char *what)
{
    tc_opts_t o = dopts();
    tc_request_t *hr, *dr;
    tc_tensor_t a, b;
    char hname[64];

    snprintf(hname, sizeof(hname), "%s-h", name);
    CHECK_OK(tc_reducescatter_ex(name, dt, op, &o, &dr));
    CHECK_OK(tc_reducescatter(hname, host, op, &hr));
    a = done(hr, hname);
    b = done(dr, name);
    check_device_output(&b, &a, what);
    check_ipc(dr, tensor_bytes(dt), name);
    tc_request_free(hr);
    tc_request_free(dr);
}

TC_CASE(reducescatter_alltoall)
{
    int n = tt_size, j;
    size_t rows = 2 * (size_t)n + 1, count = rows * 300; /* IPC from 1 KiB: 6 KB at 2 ranks */
    float *h = malloc(count * sizeof(float));
    uint16_t *hb = malloc(count * 2);
    void *d, *db;
    tc_tensor_t ht = {h, TC_FLOAT32, 2, {(int64_t)rows, 300}}, hbt = ht, dt_, dbt, a, b;
    tc_opts_t o = dopts();
    tc_request_t *hr, *dr;
    int64_t *splits = calloc((size_t)n, sizeof(int64_t)), total = 0;
    const int64_t *got_splits;
    int got_n;

    fill(TC_FLOAT32, TC_SUM, h, count, 9);
    fill(TC_BFLOAT16, TC_MAX, hb, count, 10);
    hbt.data = hb;
    hbt.dtype = TC_BFLOAT16;
    d = dcopy_of(h, count * sizeof(float));
    db = dcopy_of(hb, count * 2);
    dt_ = ht;
    dt_.data = d;
    dbt = hbt;
    dbt.data = db;
    reducescatter_pair("rs", &dt_, &ht, TC_SUM, "reducescatter float32 sum");
    reducescatter_pair("rs-bf", &dbt, &hbt, TC_MAX, "reducescatter bfloat16 max");

    /* alltoall: splits[j] = (rank + j) % 3 rows to rank j, 300 floats a row */
    for (j = 0; j < n; j++) {
        splits[j] = (tt_rank + j) % 3;
        total += splits[j];
    }
    ht.shape[0] = dt_.shape[0] = total;
    CHECK_OK(tc_alltoall_ex("a2a", &dt_, splits, &o, &dr));
    CHECK_OK(tc_alltoall("a2a-h", &ht, splits, &hr));
    a = done(hr, "a2a-h");
    b = done(dr, "a2a");
    check_device_output(&b, &a, "alltoall");
    if (tt_rank == 0) { /* which path: "cuda ipc" where IPC is on and works */
        printf("# device alltoall ran '%s'\n", tc_request_algorithm(dr));
    }
    CHECK_OK(tc_request_splits(dr, &got_splits, &got_n));
    CHECK_EQ(got_n, n);
    for (j = 0; j < n; j++) {
        CHECK_EQ(got_splits[j], (j + tt_rank) % 3); /* rank j's splits[this rank] */
    }
    tc_request_free(hr);
    tc_request_free(dr);
    CUDA_OK(cudaFree(d));
    CUDA_OK(cudaFree(db));
    free(h);
    free(hb);
    free(splits);
}

TC_CASE(grouped_pset_join)
{
    enum { G = 3 };
    static const size_t counts[G] = {7, 1024, 70001};
    const char *names[G] = {"g0", "g1", "g2"}, *hnames[G] = {"hg0", "hg1", "hg2"};
    tc_tensor_t hts[G], dts[G];
    void *hout[G], *dout[G];
    tc_request_t *hr[G], *dr[G], *r1, *r2, *jr;
    tc_opts_t o = dopts(), po = TC_OPTS_INIT;
    int i, id = 0, even[4], neven = 0;

    for (i = 0; i < G; i++) {
        size_t bytes = counts[i] * 4;
        hts[i] = (tc_tensor_t){malloc(bytes), TC_FLOAT32, 1, {(int64_t)counts[i]}};
        fill(TC_FLOAT32, TC_SUM, hts[i].data, counts[i], 60 + (uint64_t)i);
        dts[i] = hts[i];
        dts[i].data = dcopy_of(hts[i].data, bytes);
        hout[i] = malloc(bytes);
        dout[i] = dalloc(bytes);
    }
    CHECK_OK(tc_grouped_allreduce(G, names, dts, dout, TC_SUM, &o, dr));
    CHECK_OK(tc_grouped_allreduce(G, hnames, hts, hout, TC_SUM, NULL, hr));
    for (i = 0; i < G; i++) {
        void *back;
        done(hr[i], hnames[i]);
        done(dr[i], names[i]);
        back = hcopy_of(dout[i], counts[i] * 4);
        CHECK_MSG(memcmp(back, hout[i], counts[i] * 4) == 0, "grouped member %d differs", i);
        free(back);
        tc_request_free(hr[i]);
        tc_request_free(dr[i]);
    }

    /* the even ranks' set */
    for (i = 0; i < tt_size; i += 2) {
        even[neven++] = i;
    }
    CHECK_OK(tc_process_set_add(even, neven, &id));
    if (tt_rank % 2 == 0) {
        void *back;
        o.process_set = po.process_set = id;
        CHECK_OK(tc_allreduce_ex("ps", &dts[1], dout[1], TC_MAX, &o, &r1));
        CHECK_OK(tc_allreduce_ex("ps-h", &hts[1], hout[1], TC_MAX, &po, &r2));
        done(r1, "ps");
        done(r2, "ps-h");
        back = hcopy_of(dout[1], counts[1] * 4);
        CHECK_MSG(memcmp(back, hout[1], counts[1] * 4) == 0, "process set allreduce differs");
        free(back);
        tc_request_free(r1);
        tc_request_free(r2);
        o.process_set = po.process_set = 0;
    }
    CHECK_OK(tc_process_set_remove(id));

    /* the last rank joins; the others reduce without it */
    if (tt_rank != tt_size - 1) {
        void *back;
        CHECK_OK(tc_allreduce_ex("jn", &dts[2], dout[2], TC_SUM, &o, &r1));
        CHECK_OK(tc_allreduce("jn-h", &hts[2], hout[2], TC_SUM, &r2));
        done(r1, "jn");
        done(r2, "jn-h");
        back = hcopy_of(dout[2], counts[2] * 4);
        CHECK_MSG(memcmp(back, hout[2], counts[2] * 4) == 0, "allreduce beside a join differs");
        free(back);
        tc_request_free(r1);
        tc_request_free(r2);
    }
    CHECK_OK(tc_join(&jr));
    done(jr, "join");
    tc_request_free(jr);
    for (i = 0; i < G; i++) {
        free(hts[i].data);
        free(hout[i]);
        CUDA_OK(cudaFree(dts[i].data));
        CUDA_OK(cudaFree(dout[i]));
    }
}

static void CUDART_CB sleep_100ms(void *arg)
{
    (void)arg;
    tt_sleep_ms(100);
}

/* The input is written by a copy queued on the stream behind a sleeping host
 * function; tcoll must read it after the copy. */
static void ordered_on(cudaStream_t s, const char *name)
{
    size_t count = 1 << 20, bytes = count * 4, i;
    float *pinned = NULL, *back;
    void *d = dalloc(bytes);
    tc_tensor_t t = {d, TC_FLOAT32, 1, {(int64_t)count}};
    tc_opts_t o = TC_OPTS_INIT;
    tc_request_t *r;

    o.device = dev;
    o.cuda_stream = s;
    CUDA_OK(cudaMallocHost((void **)&pinned, bytes));
    for (i = 0; i < count; i++) {
        pinned[i] = (float)(tt_rank + 1);
    }
    CUDA_OK(cudaMemsetAsync(d, 0, bytes, s)); /* on s: ordered before the copy */
    CUDA_OK(cudaLaunchHostFunc(s, sleep_100ms, NULL));
    CUDA_OK(cudaMemcpyAsync(d, pinned, bytes, cudaMemcpyHostToDevice, s));
    CHECK_OK(tc_allreduce_ex(name, &t, d, TC_SUM, &o, &r));
    done(r, name);
    /* after tc_wait the host reads the result with a plain copy */
    back = hcopy_of(d, bytes);
    for (i = 0; i < count; i++) {
        CHECK_MSG(back[i] == (float)(tt_size * (tt_size + 1) / 2), "%s: element %zu is %g", name, i,
                  (double)back[i]);
    }
    free(back);
    tc_request_free(r);
    CUDA_OK(cudaFreeHost(pinned));
    CUDA_OK(cudaFree(d));
}

TC_CASE(stream_ordering)
{
    ordered_on(stream, "ord-stream");
    ordered_on(NULL, "ord-default");
}

TC_CASE(host_device_mismatch)
{
    float h[4] = {1, 2, 3, 4}, out[4];
    void *d = dcopy_of(h, sizeof(h));
    tc_tensor_t t = {h, TC_FLOAT32, 1, {4}};
    tc_opts_t o = dopts();
    tc_request_t *r;
    tc_status_t st;

    if (tt_size < 2) {
        tt_say("skipped at 1 rank\n");
        CUDA_OK(cudaFree(d));
        return;
    }
    if (tt_rank == 0) {
        CHECK_OK(tc_allreduce("mix", &t, out, TC_SUM, &r));
    } else {
        t.data = d;
        CHECK_OK(tc_allreduce_ex("mix", &t, d, TC_SUM, &o, &r));
    }
    st = tc_wait(r);
    CHECK_STATUS(st, TC_ERR_MISMATCH);
    CHECK_MSG(strstr(tc_request_error(r), "memory mismatch") != NULL &&
                  strstr(tc_request_error(r), "CUDA device memory") != NULL,
              "message: %s", tc_request_error(r));
    tc_request_free(r);
    CUDA_OK(cudaFree(d));
}

/* After a device allreduce of 1 MiB (the first of the process when this
 * case runs alone: then the engine thread has made no device current yet),
 * no device but this rank's has a context in this process: tcoll made the
 * tensor's device current on its own threads before asking CUDA anything
 * (else every rank would start a context on device 0). Where there is one
 * device there is nothing to check. */
TC_CASE(other_devices_untouched)
{
    typedef CUresult (*state_fn_t)(CUdevice, unsigned int *, int *);
    enum cudaDriverEntryPointQueryResult q;
    void *fn = NULL;
    int ndev = 0, d;

    allreduce_one(TC_FLOAT32, TC_SUM, 262144, 0, 0);
    CUDA_OK(cudaGetDeviceCount(&ndev));
    if (cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &fn, 12000,
                                         cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || fn == NULL) {
        return;
    }
    for (d = 0; d < ndev; d++) {
        unsigned int flags = 0;
        int active = 0;
        if (d != dev && ((state_fn_t)fn)((CUdevice)d, &flags, &active) == CUDA_SUCCESS) {
            CHECK_MSG(!active, "rank %d uses device %d, but device %d has a context here", tt_rank,
                      dev, d);
        }
    }
}

int main(int argc, char **argv)
{
    int ndev = 0, rank = 0;
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    const char *det = getenv("TCOLL_DETERMINISTIC");
    int rc;

    if (r == NULL) {
        r = getenv("PMI_RANK");
    }
    rank = r != NULL ? atoi(r) : 0;
    if (!tc_cuda_available() || cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        printf("test_gpu_kinds: skipped: %s\n", tc_cuda_info());
        return 77;
    }
    dev = rank % ndev;
    random_data = det != NULL && atoi(det) != 0;
    CUDA_OK(cudaSetDevice(dev));
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    rc = tt_mpi_main(argc, argv, &(tt_program_t){0});
    return rc;
}
