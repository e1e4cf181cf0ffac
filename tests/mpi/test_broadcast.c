/*
 * test_broadcast.c - broadcast from every root: every dtype with a scalar
 * (ndim 0), 0, 1, a prime (7919) and a 3-d shape, plus a 1 MiB float64 tensor
 * per root; submitted from two threads in a different random order on each
 * rank. Non-root buffers start as garbage; afterwards every rank's buffer
 * equals the root's, byte for byte, and the root's is unchanged.
 */
#define _POSIX_C_SOURCE 200809L

#include "mpi_common.h"

#define NTHREADS 2
#define MAX_TASKS 512

typedef struct {
    char name[96];
    tc_dtype_t dt;
    int root;
    int ndim;
    int64_t shape[TC_MAX_DIMS];
    int64_t count;
    uint64_t salt;
    void *buf;
    tc_request_t *req;
} task_t;

static task_t g_tasks[MAX_TASKS];
static int g_ntasks;

static void add_task(tc_dtype_t dt, int root, int ndim, const int64_t *shape)
{
    CHECK_LT(g_ntasks, MAX_TASKS);
    task_t *t = &g_tasks[g_ntasks];
    memset(t, 0, sizeof *t);
    t->dt = dt;
    t->root = root;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
    }
    t->count = tt_count(ndim, shape);
    char shp[64];
    tt_shape_str(ndim, shape, shp, sizeof shp);
    snprintf(t->name, sizeof t->name, "bc/root%d/%s/%s", root, tt_dtype_str(dt), shp);
    t->salt = tt_hash_str(t->name);
    size_t bytes = (size_t)t->count * tt_dtype_bytes(dt);
    if (t->count == 0 && (g_ntasks & 1)) {
        t->buf = NULL; /* NULL data is fine with zero elements */
    } else {
        t->buf = tt_xmalloc(bytes);
        if (tt_rank == root) {
            tt_fill(dt, TC_MAX, t->salt, root, t->buf, t->count);
        } else {
            memset(t->buf, 0xa5, bytes);
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
    ten.data = t->buf;
    ten.dtype = t->dt;
    ten.ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) {
        ten.shape[d] = t->shape[d];
    }
    t->req = NULL;
    CHECK_OK(tc_broadcast(t->name, &ten, t->root, &t->req));
    CHECK(t->req != NULL);
}

static void complete_and_check(int task, void *arg)
{
    task_t *t = &g_tasks[task];
    (void)arg;
    tc_status_t st = tc_wait(t->req);
    CHECK_MSG(st == TC_OK, "%s: %s: %s", t->name, tc_status_string(st), tc_request_error(t->req));
    CHECK_MSG(tc_request_error(t->req)[0] == '\0', "%s: error on success: '%s'", t->name,
              tc_request_error(t->req));
    tc_tensor_t out;
    memset(&out, 0, sizeof out);
    CHECK_OK(tc_request_output(t->req, &out));
    CHECK_MSG(out.data == t->buf, "%s: output is not the buffer", t->name);
    CHECK_EQ(out.dtype, t->dt);
    CHECK_EQ(out.ndim, t->ndim);
    for (int d = 0; d < t->ndim; d++) {
        CHECK_EQ(out.shape[d], t->shape[d]);
    }
    size_t es = tt_dtype_bytes(t->dt);
    for (int64_t i = 0; i < t->count; i++) {
        unsigned char want[8];
        tt_store(t->dt, want, 0, tt_value(t->dt, TC_MAX, t->salt, t->root, i));
        if (memcmp((const char *)t->buf + (size_t)i * es, want, es) != 0) {
            TC_CHECK_FAIL("%s: element %lld is %.17g, want %.17g", t->name, (long long)i,
                          tt_load(t->dt, t->buf, i), tt_load(t->dt, want, 0));
        }
    }
    tc_request_free(t->req);
    t->req = NULL;
}

/*
 * From every root: every dtype with a scalar, 0, 1, a prime and a 3-d shape,
 * and a 1 MiB float64 tensor, all in flight at once: NTHREADS threads submit
 * every NTHREADS-th task of this rank's shuffled order, then complete them.
 */
TC_CASE(every_root_dtype_shape_from_threads)
{
    const struct {
        int ndim;
        int64_t shape[3];
    } shapes[] = {
        {0, {0}},                    /* scalar */
        {1, {0}},                    /* empty */
        {1, {1}},       {1, {7919}}, /* prime */
        {3, {3, 4, 5}},
    };
    g_ntasks = 0;
    for (int root = 0; root < tt_size; root++) {
        for (int di = 0; di < TT_NDTYPES; di++) {
            for (int si = 0; si < 5; si++) {
                add_task(tt_dtype(di), root, shapes[si].ndim, shapes[si].shape);
            }
        }
        const int64_t big[2] = {128, 1024}; /* 1 MiB of float64 */
        add_task(TC_FLOAT64, root, 2, big);
    }

    double t0 = tt_now();
    tt_run_batch(&(tt_batch_t){.ntasks = g_ntasks,
                               .nthreads = NTHREADS,
                               .order_seed = tt_key(0xbc, (uint64_t)tt_rank, 0),
                               .submit = submit,
                               .complete = complete_and_check});
    double el = tt_now() - t0;

    for (int i = 0; i < g_ntasks; i++) {
        free(g_tasks[i].buf);
    }
    tt_say("test_broadcast: %d broadcasts OK on %d ranks from %d threads (%.2f s)\n", g_ntasks,
           tt_size, NTHREADS, el);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
