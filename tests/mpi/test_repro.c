/*
 * test_repro.c - reproducible results (docs/reproducibility.md): with
 * TCOLL_DETERMINISTIC (the default) every floating-point allreduce and
 * reducescatter sum has the bits of the documented order, whatever was
 * fused with it, the order and threads it was submitted from, the chunk
 * and fusion sizes, the eager and small-message paths, the algorithm and
 * the path (CTest runs this program under each of those knobs).
 *
 * The reference is written here from the documented order alone: the
 * ranks grouped by node (which ranks share one: rank - tc_local_rank(), as
 * mpiexec places ranks on this machine, pretend nodes too), each node's
 * inputs added left to right in rank order, then the node results left to
 * right in the order of their lowest rank; each addition in float and
 * rounded to the dtype (double for float64), as the library's kernels add.
 * Since the reference is the same in every run, every run of every
 * variant has the same bits as every other.
 *
 * Tasks: float32, float16, bfloat16 and float64 allreduces of non-integer
 * data, of sizes from one element to a few MiB, in place and out of place,
 * submitted from three threads in a different order on every rank with
 * pauses (so fusion groups and cycles differ), twice (the second time the
 * names are cached: the small-message and eager paths where they apply);
 * reducescatters of float32 and float16 rows; and at np >= 3 allreduces in
 * a process set of ranks 1..n-1 (its own node table).
 */
#define _GNU_SOURCE

#include "mpi_common.h"

#define MAX_TASKS 64
#define MAX_RANKS 16

typedef struct {
    char name[64];
    tc_dtype_t dt;
    int64_t count; /* allreduce: elements; reducescatter: rows of RS_ROW */
    int rs, inplace, in_set;
    uint64_t salt;
    void *send, *recv;
    tc_request_t *req;
} task_t;

#define RS_ROW 3

static task_t g_tasks[MAX_TASKS];
static int g_ntasks;
static int g_first[MAX_RANKS]; /* the lowest rank on each rank's node */
static int g_set;              /* the process set of ranks 1..n-1, or 0 */

/* Rank r's element i of a task: a non-integer in [-2, 2), rounded to dt. */
static double value(uint64_t salt, int r, int64_t i)
{
    uint64_t h = tt_key(salt, (uint64_t)r, (uint64_t)i);

    return (double)(h >> 11) * (1.0 / 9007199254740992.0) * 4.0 - 2.0;
}

static void fill(tc_dtype_t dt, uint64_t salt, int r, void *buf, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        tt_store_real(dt, buf, i, value(salt, r, i));
    }
}

/* a + b as the library's kernel adds two dt values: in float, rounded to dt
 * (float64: in double). */
static double add(tc_dtype_t dt, double a, double b)
{
    float s = (float)a + (float)b;

    switch (dt) {
    case TC_FLOAT16: return tt_f16_to_f32(tt_f32_to_f16(s));
    case TC_BFLOAT16: return tt_bf16_to_f32(tt_f32_to_bf16(s));
    case TC_FLOAT64: return a + b;
    default: return s;
    }
}

/* Element i of the documented order's sum over the members (n of them,
 * ranks[]) of rank-wise inputs. */
static double reference(tc_dtype_t dt, uint64_t salt, const int *ranks, int n, int64_t i)
{
    double total = 0.0;
    int started = 0;

    for (int lead = 0; lead < n; lead++) {
        double part = 0.0;
        int first_of_node = 1;
        for (int q = 0; q < lead; q++) {
            first_of_node &= g_first[ranks[q]] != g_first[ranks[lead]];
        }
        if (!first_of_node) {
            continue; /* added with its node's first member */
        }
        for (int q = lead; q < n; q++) {
            if (g_first[ranks[q]] != g_first[ranks[lead]]) {
                continue;
            }
            char tmp[8]; /* rank q's input as it sent it: rounded to dt */
            tt_store_real(dt, tmp, 0, value(salt, ranks[q], i));
            part = q == lead ? tt_load(dt, tmp, 0) : add(dt, part, tt_load(dt, tmp, 0));
        }
        total = started ? add(dt, total, part) : part;
        started = 1;
    }
    return total;
}

/* got (element i of dt) has the reference's bits. */
static void check_bits(const task_t *t, const void *got, int64_t i, int64_t at, const int *ranks,
                       int n)
{
    char want[8];
    const size_t es = tt_dtype_bytes(t->dt);

    tt_store_real(t->dt, want, 0, reference(t->dt, t->salt, ranks, n, at));
    CHECK_MSG(memcmp((const char *)got + (size_t)i * es, want, es) == 0,
              "%s (%s, np %d): element %lld is %.17g, the documented order gives %.17g", t->name,
              tt_dtype_str(t->dt), tt_size, (long long)at, tt_load(t->dt, got, i),
              tt_load(t->dt, want, 0));
}

static void add_task(const char *what, tc_dtype_t dt, int64_t count, int rs, int inplace,
                     int in_set)
{
    task_t *t = &g_tasks[g_ntasks];
    const int64_t elems = rs ? count * RS_ROW : count;
    const size_t bytes = (size_t)elems * tt_dtype_bytes(dt);

    CHECK(g_ntasks < MAX_TASKS);
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "repro/%s/%d", what, g_ntasks);
    t->dt = dt;
    t->count = count;
    t->rs = rs;
    t->inplace = inplace;
    t->in_set = in_set;
    t->salt = tt_hash_str(t->name);
    t->send = tt_xmalloc(bytes + 1);
    t->recv = inplace || rs ? NULL : tt_xmalloc(bytes + 1);
    g_ntasks++;
}

static void submit(int k, void *arg)
{
    task_t *t = &g_tasks[k];
    const int64_t elems = t->rs ? t->count * RS_ROW : t->count;
    tc_tensor_t tensor = {t->send, t->dt, t->rs ? 2 : 1, {t->count, RS_ROW}};
    tc_opts_t o = TC_OPTS_INIT;

    (void)arg;
    if (t->in_set && (g_set == 0 || tt_rank == 0)) {
        t->req = NULL;
        return;
    }
    o.process_set = t->in_set ? g_set : 0;
    fill(t->dt, t->salt, tt_rank, t->send, elems);
    if (t->rs) {
        CHECK_OK(tc_reducescatter_ex(t->name, &tensor, TC_SUM, &o, &t->req));
    } else {
        CHECK_OK(
            tc_allreduce_ex(t->name, &tensor, t->inplace ? t->send : t->recv, TC_SUM, &o, &t->req));
    }
}

static void complete(int k, void *arg)
{
    task_t *t = &g_tasks[k];
    int ranks[MAX_RANKS], n = 0;
    tc_status_t st;

    (void)arg;
    if (t->req == NULL) {
        return;
    }
    st = tc_wait(t->req);
    CHECK_MSG(st == TC_OK, "%s: %s (%s)", t->name, tc_status_string(st), tc_request_error(t->req));
    for (int r = t->in_set ? 1 : 0; r < tt_size; r++) {
        ranks[n++] = r;
    }
    if (t->rs) {
        const int me = t->in_set ? tt_rank - 1 : tt_rank; /* this rank's place in the set */
        tc_tensor_t out;
        int64_t rows = t->count / n + (me < t->count % n ? 1 : 0), row0 = 0;
        for (int r = 0; r < me; r++) {
            row0 += t->count / n + (r < t->count % n ? 1 : 0);
        }
        CHECK_OK(tc_request_output(t->req, &out));
        CHECK_EQ(out.shape[0], rows);
        for (int64_t i = 0; i < rows * RS_ROW; i++) {
            check_bits(t, out.data, i, row0 * RS_ROW + i, ranks, n);
        }
    } else {
        const void *got = t->inplace ? t->send : t->recv;
        for (int64_t i = 0; i < t->count; i++) {
            check_bits(t, got, i, i, ranks, n);
        }
    }
    tc_request_free(t->req);
    t->req = NULL;
}

/* Which ranks share a node, as tcoll sees it (pretend nodes included). */
static void learn_nodes(void)
{
    int32_t mine = tt_rank - tc_local_rank();
    tc_tensor_t t = {&mine, TC_INT32, 1, {1}};
    tc_request_t *req = NULL;
    tc_tensor_t out;

    CHECK(tt_size <= MAX_RANKS);
    CHECK_OK(tc_allgather("repro/nodes", &t, &req));
    CHECK_OK(tc_wait(req));
    CHECK_OK(tc_request_output(req, &out));
    for (int r = 0; r < tt_size; r++) {
        g_first[r] = ((const int32_t *)out.data)[r];
    }
    tc_request_free(req);
}

TC_CASE(documented_order_everywhere)
{
    static const tc_dtype_t dts[] = {TC_FLOAT32, TC_FLOAT16, TC_BFLOAT16, TC_FLOAT64};
    static const int64_t counts[] = {1, 5, 1000, 4099, 70001};

    learn_nodes();
    if (tt_size >= 3) {
        int ranks[MAX_RANKS];
        for (int r = 1; r < tt_size; r++) {
            ranks[r - 1] = r;
        }
        CHECK_OK(tc_process_set_add(ranks, tt_size - 1, &g_set));
    }
    for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            add_task("ar", dts[d], counts[c], 0, (int)(c % 2), 0);
        }
    }
    add_task("ar-large", TC_FLOAT32, (int64_t)3 << 18, 0, 0, 0); /* 3 MiB: direct paths */
    add_task("rs", TC_FLOAT32, 1001, 1, 0, 0);
    add_task("rs", TC_FLOAT16, 40, 1, 0, 0);
    add_task("set", TC_FLOAT32, 4099, 0, 0, 1);
    add_task("set", TC_BFLOAT16, 7, 0, 1, 1);
    add_task("set-rs", TC_FLOAT32, 500, 1, 0, 1);
    for (int round = 0; round < 2; round++) {
        tt_batch_t b = {g_ntasks, 3,        tt_key(0x5eed, (uint64_t)tt_rank, (uint64_t)round),
                        round,    4,        tt_key(0xbad, (uint64_t)tt_rank, (uint64_t)round),
                        submit,   complete, NULL};
        tt_run_batch(&b);
    }
    for (int k = 0; k < g_ntasks; k++) {
        free(g_tasks[k].send);
        free(g_tasks[k].recv);
    }
    tt_say("test_repro: %d collectives x 2 rounds with the documented order's bits on %d ranks\n",
           g_ntasks, tt_size);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
