/*
 * test_allreduce.c - every dtype x op, many shapes, in place and out of place,
 * submitted from several application threads in a different random order on
 * each rank; every result checked bit for bit against values computed here.
 *
 * Counts: 0 (two shapes, with and without data pointers), 1 (scalar and
 * [1,1]), size-1, size+1, the prime 7919, multi-dimensional shapes, plus two
 * large tensors (a 3 MiB float32 sum out of place, a 1 MiB int32 sum in place).
 * Integer-valued data keeps every floating result exact (see mpi_common.h).
 * And int16/uint16 on values at the ends of their ranges.
 */
#define _POSIX_C_SOURCE 200809L

#include "mpi_common.h"

#define NTHREADS 4
#define MAX_TASKS 1024

typedef struct {
    char name[96];
    tc_dtype_t dt;
    tc_op_t op;
    int ndim;
    int64_t shape[TC_MAX_DIMS];
    int64_t count;
    int inplace;
    int use_test; /* complete with a tc_test loop instead of tc_wait */
    uint64_t salt;
    void *send;
    void *recv;
    void *send_copy; /* out of place: send must be left untouched */
    tc_request_t *req;
} task_t;

static task_t g_tasks[MAX_TASKS];
static int g_ntasks;

static void add_task(tc_dtype_t dt, tc_op_t op, int ndim, const int64_t *shape, int inplace,
                     int null_data)
{
    CHECK_LT(g_ntasks, MAX_TASKS);
    task_t *t = &g_tasks[g_ntasks];
    memset(t, 0, sizeof *t);
    t->dt = dt;
    t->op = op;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
    }
    t->count = tt_count(ndim, shape);
    t->inplace = inplace;
    t->use_test = (g_ntasks % 3 == 1);
    char shp[64];
    tt_shape_str(ndim, shape, shp, sizeof shp);
    /* the task index keeps names unique when two shapes coincide (size-1 = 0 at np 1) */
    snprintf(t->name, sizeof t->name, "ar/%s/%s/%s/%s%s/%d", tt_dtype_str(dt), tt_op_str(op), shp,
             inplace ? "in" : "out", null_data ? "/null" : "", g_ntasks);
    t->salt = tt_hash_str(t->name);

    size_t bytes = (size_t)t->count * tt_dtype_bytes(dt);
    if (null_data) {
        CHECK_EQ(t->count, 0);
        t->send = NULL;
        t->recv = NULL;
    } else {
        t->send = tt_xmalloc(bytes);
        tt_fill(dt, op, t->salt, tt_rank, t->send, t->count);
        if (inplace) {
            t->recv = t->send;
        } else {
            t->recv = tt_xmalloc(bytes);
            memset(t->recv, 0xa5, bytes);
            t->send_copy = tt_xmalloc(bytes);
            memcpy(t->send_copy, t->send, bytes);
        }
    }
    g_ntasks++;
}

static void submit(int task, void *arg)
{
    task_t *t = &g_tasks[task];
    (void)arg;
    tc_tensor_t ten;
    memset(&ten, 0, sizeof ten);
    ten.data = t->send;
    ten.dtype = t->dt;
    ten.ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) {
        ten.shape[d] = t->shape[d];
    }
    t->req = NULL;
    CHECK_OK(tc_allreduce(t->name, &ten, t->recv, t->op, &t->req));
    CHECK(t->req != NULL);
}

static void complete_and_check(int task, void *arg)
{
    task_t *t = &g_tasks[task];
    (void)arg;
    tc_status_t st;
    int done = 0;
    if (t->use_test) {
        for (;;) {
            st = tc_test(t->req, &done);
            if (done) {
                break;
            }
            CHECK_OK(st);
            const char *e = tc_request_error(t->req); /* "" while pending */
            CHECK_MSG(e != NULL && e[0] == '\0', "%s: pending request has error '%s'", t->name,
                      e ? e : "(null)");
            tt_sleep_ms(1);
        }
    } else {
        st = tc_wait(t->req);
    }
    CHECK_MSG(st == TC_OK, "%s: %s: %s", t->name, tc_status_string(st), tc_request_error(t->req));
    CHECK_MSG(tc_request_error(t->req) != NULL && tc_request_error(t->req)[0] == '\0',
              "%s: error message on success: '%s'", t->name, tc_request_error(t->req));

    /* tc_test after completion: done, and the operation's status */
    done = 0;
    CHECK_OK(tc_test(t->req, &done));
    CHECK_EQ(done, 1);
    /* a second wait returns at once with the same status */
    CHECK_OK(tc_wait(t->req));

    tc_tensor_t out;
    memset(&out, 0, sizeof out);
    CHECK_OK(tc_request_output(t->req, &out));
    CHECK_MSG(out.data == t->recv, "%s: output is not the recv buffer", t->name);
    CHECK_EQ(out.dtype, t->dt);
    CHECK_EQ(out.ndim, t->ndim);
    for (int d = 0; d < t->ndim; d++) {
        CHECK_EQ(out.shape[d], t->shape[d]);
    }

    tt_check_allreduce(t->name, t->dt, t->op, t->salt, tt_size, t->recv, t->count);
    if (t->send_copy) {
        CHECK_MSG(memcmp(t->send, t->send_copy, (size_t)t->count * tt_dtype_bytes(t->dt)) == 0,
                  "%s: out-of-place allreduce modified the send buffer", t->name);
    }
    tc_request_free(t->req);
    t->req = NULL;
}

/*
 * Every dtype x op (avg on floating dtypes only: TC_ERR_ARG otherwise, see
 * test_errors) x every shape, alternately in place and out of place, plus
 * the zero-element tensors without buffers and the two large ones, all in
 * flight at once: NTHREADS threads submit every NTHREADS-th task of this
 * rank's shuffled order (pausing now and then), then complete them in
 * reverse.
 */
TC_CASE(every_dtype_op_shape_from_threads)
{
    const struct {
        int ndim;
        int64_t shape[4];
    } shapes[] = {
        {1, {0}},           /* 0 elements */
        {2, {3, 0}},        /* 0 elements, ndim 2 */
        {0, {0}},           /* scalar: 1 element */
        {2, {1, 1}},        /* 1 element */
        {1, {tt_size - 1}}, /* size-1 (0 at np 1) */
        {1, {tt_size + 1}}, /* size+1 */
        {1, {7919}},        /* a prime */
        {3, {3, 5, 7}},     /* 105 */
        {4, {2, 3, 4, 5}},  /* 120 */
    };
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);

    g_ntasks = 0;
    int combo = 0;
    for (int di = 0; di < TT_NDTYPES; di++) {
        for (int oi = 0; oi < TT_NOPS; oi++) {
            tc_dtype_t dt = tt_dtype(di);
            tc_op_t op = tt_op(oi);
            if (op == TC_AVG && !tt_is_float(dt)) {
                continue; /* TC_ERR_ARG: checked in test_errors */
            }
            for (int si = 0; si < nshapes; si++) {
                int inplace = (combo + si) & 1;
                add_task(dt, op, shapes[si].ndim, shapes[si].shape, inplace, 0);
                if (shapes[si].ndim == 1 && shapes[si].shape[0] == 7919) {
                    add_task(dt, op, shapes[si].ndim, shapes[si].shape, !inplace, 0);
                }
            }
            combo++;
        }
    }
    /* zero elements with no buffers at all */
    {
        const int64_t zero[1] = {0};
        add_task(TC_FLOAT32, TC_SUM, 1, zero, 0, 1);
        add_task(TC_INT64, TC_MAX, 1, zero, 1, 1);
    }
    /* large: 3 MiB float32 sum out of place, 1 MiB int32 sum in place */
    {
        const int64_t big[1] = {768 * 1024};
        add_task(TC_FLOAT32, TC_SUM, 1, big, 0, 0);
        const int64_t big2[2] = {256, 1024};
        add_task(TC_INT32, TC_SUM, 2, big2, 1, 0);
    }

    double t0 = tt_now();
    tt_run_batch(&(tt_batch_t){.ntasks = g_ntasks,
                               .nthreads = NTHREADS,
                               .order_seed = tt_key(0x5eed, (uint64_t)tt_rank, 0),
                               .complete_in_reverse = 1,
                               .pause_one_in = 16,
                               .pause_seed = 0xa11,
                               .submit = submit,
                               .complete = complete_and_check});
    double dt = tt_now() - t0;

    for (int i = 0; i < g_ntasks; i++) {
        if (g_tasks[i].send_copy) {
            free(g_tasks[i].recv);
            free(g_tasks[i].send_copy);
        }
        free(g_tasks[i].send);
    }
    tt_say("test_allreduce: %d allreduces OK on %d ranks from %d threads (%.2f s)\n", g_ntasks,
           tt_size, NTHREADS, dt);
}

/*
 * int16 and uint16 at the ends of their ranges, every op but avg, out of
 * place and in place: element i of rank r is ext[(i + 3r) % NEXT], so sums
 * and products wrap and min/max meet both ends on every rank count. The
 * expected values are worked out here with 64-bit arithmetic and cut to 16
 * bits, not with the mpi_common.h helpers.
 */
TC_CASE(int16_uint16_extremes)
{
    enum { NEXT = 9, COUNT = 2 * NEXT + 1 };
    static const int64_t i16[NEXT] = {INT16_MIN, INT16_MIN + 1, -256,          -1,       0,
                                      1,         181,           INT16_MAX - 1, INT16_MAX};
    static const int64_t u16[NEXT] = {0, 1, 2, 255, 256, 32767, 32768, UINT16_MAX - 1, UINT16_MAX};
    static const tc_op_t ops[] = {TC_SUM, TC_MIN, TC_MAX, TC_PROD};
    int runs = 0;

    for (int uns = 0; uns < 2; uns++) {
        tc_dtype_t dt = uns ? TC_UINT16 : TC_INT16;
        const int64_t *ext = uns ? u16 : i16;
        for (int oi = 0; oi < 4; oi++) {
            for (int inplace = 0; inplace < 2; inplace++) {
                tc_op_t op = ops[oi];
                uint16_t send[COUNT], recv[COUNT];
                char name[64];
                tc_request_t *req = NULL;

                for (int i = 0; i < COUNT; i++) {
                    send[i] = (uint16_t)(uint64_t)ext[(i + 3 * tt_rank) % NEXT];
                    recv[i] = 0xa5a5u;
                }
                snprintf(name, sizeof name, "ar/extremes/%s/%s/%s", tt_dtype_str(dt), tt_op_str(op),
                         inplace ? "in" : "out");
                tc_tensor_t t = {send, dt, 1, {COUNT}};
                CHECK_OK(tc_allreduce(name, &t, inplace ? (void *)send : (void *)recv, op, &req));
                CHECK_OK(tc_wait(req));
                tc_request_free(req);

                const uint16_t *got = inplace ? send : recv;
                for (int i = 0; i < COUNT; i++) {
                    /* sum and product modulo 2^64 keep their low 16 bits right */
                    uint64_t acc = (uint64_t)ext[i % NEXT];
                    int64_t best = ext[i % NEXT];
                    for (int r = 1; r < tt_size; r++) {
                        int64_t v = ext[(i + 3 * r) % NEXT];
                        if (op == TC_SUM)
                            acc += (uint64_t)v;
                        if (op == TC_PROD)
                            acc *= (uint64_t)v;
                        if (op == TC_MIN)
                            best = v < best ? v : best;
                        if (op == TC_MAX)
                            best = v > best ? v : best;
                    }
                    uint16_t want =
                        (op == TC_MIN || op == TC_MAX) ? (uint16_t)(uint64_t)best : (uint16_t)acc;
                    CHECK_MSG(got[i] == want, "%s (np %d): element %d is %lld, want %lld", name,
                              tt_size, i, (long long)tt_wrap(dt, got[i]),
                              (long long)tt_wrap(dt, want));
                }
                runs++;
            }
        }
    }
    tt_say("test_allreduce: %d int16/uint16 allreduces at the range ends OK on %d ranks\n", runs,
           tt_size);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
