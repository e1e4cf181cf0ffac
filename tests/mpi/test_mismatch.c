/*
 * test_mismatch.c - ranks submit the same name with different parameters
 * (np >= 2). Every kind of disagreement rank 0 must detect: collective kind,
 * dtype, op, shape (allreduce, broadcast, allgather dims 1..), ndim
 * (allgather), root (broadcast). Usually the last rank is the odd one out;
 * in some cases rank 0 is. Every rank's request must fail with
 * TC_ERR_MISMATCH and a message naming the tensor, the field and two ranks
 * with their values, e.g.
 *   tensor 'grad/w1': allreduce shape mismatch: rank 0 has [2,3], rank 2 has [3,2]
 * The mismatched tensors are submitted from two threads, shuffled per rank,
 * mixed with good tensors that must still succeed; afterwards the engine
 * keeps working and the failed names can be reused.
 */
#define _POSIX_C_SOURCE 200809L

#include "mpi_common.h"

#define NTHREADS 2
#define MAX_TASKS 64

typedef tt_params_t params_t;

typedef struct {
    char name[96];
    params_t p;        /* what this rank submits */
    int bad;           /* expect TC_ERR_MISMATCH */
    const char *field; /* e.g. "shape mismatch" */
    int odd;           /* the rank that disagrees */
    char val0[32];     /* "rank 0 has <val0>" ("" = do not check the value) */
    char val_odd[32];  /* "rank <odd> has <val_odd>" */
    void *data;
    void *recv;
    tc_request_t *req;
} task_t;

static task_t g_tasks[MAX_TASKS];
static int g_ntasks;

static task_t *add(const char *name, params_t mine, int bad)
{
    CHECK_LT(g_ntasks, MAX_TASKS);
    task_t *t = &g_tasks[g_ntasks++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->p = mine;
    t->bad = bad;
    int64_t n = tt_count(mine.ndim, mine.shape);
    size_t bytes = (size_t)n * tt_dtype_bytes(mine.dt);
    t->data = tt_xmalloc(bytes);
    t->recv = tt_xmalloc(bytes);
    tt_fill(mine.dt, mine.op, tt_hash_str(name), tt_rank, t->data, n);
    return t;
}

/* A case where rank `odd` submits `other` and every other rank `base`. */
static void add_bad(const char *name, params_t base, params_t other, int odd, const char *field,
                    const char *val0, const char *val_odd)
{
    task_t *t = add(name, tt_rank == odd ? other : base, 1);
    t->field = field;
    t->odd = odd;
    snprintf(t->val0, sizeof t->val0, "%s", val0);
    snprintf(t->val_odd, sizeof t->val_odd, "%s", val_odd);
}

static void submit(task_t *t)
{
    t->req = tt_submit(t->name, &t->p, t->data, t->recv);
}

static void check_bad(task_t *t)
{
    tc_status_t st = tc_wait(t->req);
    CHECK_MSG(st == TC_ERR_MISMATCH, "%s: got %s, want mismatch (message '%s')", t->name,
              tc_status_string(st), tc_request_error(t->req));
    int done = 0;
    CHECK_STATUS(tc_test(t->req, &done), TC_ERR_MISMATCH);
    CHECK_EQ(done, 1);
    tc_tensor_t out;
    CHECK_STATUS(tc_request_output(t->req, &out), TC_ERR_MISMATCH);

    const char *msg = tc_request_error(t->req);
    char want[160];
    snprintf(want, sizeof want, "tensor '%s'", t->name);
    CHECK_STR_CONTAINS(msg, want);
    CHECK_STR_CONTAINS(msg, t->field);
    snprintf(want, sizeof want, "rank 0 has %s", t->val0);
    CHECK_STR_CONTAINS(msg, want);
    if (t->odd != 0) {
        snprintf(want, sizeof want, "rank %d has %s", t->odd, t->val_odd);
        CHECK_STR_CONTAINS(msg, want);
    } else {
        /* rank 0 is the odd one: any other rank may be named with its value */
        int found = 0;
        for (int r = 1; r < tt_size && !found; r++) {
            snprintf(want, sizeof want, "rank %d has %s", r, t->val_odd);
            found = strstr(msg, want) != NULL;
        }
        CHECK_MSG(found, "%s: message '%s' names no rank with value '%s'", t->name, msg,
                  t->val_odd);
    }
    tc_request_free(t->req);
}

static void check_good(task_t *t)
{
    tc_status_t st = tc_wait(t->req);
    CHECK_MSG(st == TC_OK, "%s: %s: %s", t->name, tc_status_string(st), tc_request_error(t->req));
    CHECK_EQ(t->p.kind, TT_ALLREDUCE);
    tt_check_allreduce(t->name, t->p.dt, t->p.op, tt_hash_str(t->name), tt_size, t->recv,
                       tt_count(t->p.ndim, t->p.shape));
    tc_request_free(t->req);
}

static void submit_task(int task, void *arg)
{
    (void)arg;
    submit(&g_tasks[task]);
}

static void complete_task(int task, void *arg)
{
    task_t *t = &g_tasks[task];
    (void)arg;
    if (t->bad) {
        check_bad(t);
    } else {
        check_good(t);
    }
}

/* One allreduce every rank agrees on, run alone: the engine still works. */
static void good_allreduce(const char *name, tc_dtype_t dt, tc_op_t op, int64_t n)
{
    task_t *t = add(name, tt_params(TT_ALLREDUCE, dt, op, 0, 1, n, 0, 0), 0);
    submit(t);
    check_good(t);
    free(t->data);
    free(t->recv);
    g_ntasks--;
}

/*
 * Every kind of disagreement, by the last rank, by rank 0 and (np >= 3) by a
 * middle rank, mixed with good tensors, all in flight at once from NTHREADS
 * threads in a different order per rank; then the engine keeps working and
 * the failed names can be reused.
 */
TC_CASE(every_mismatch_kind_on_every_rank)
{
    const int L = tt_size - 1;
    char sL[16];
    snprintf(sL, sizeof sL, "%d", L);

    g_ntasks = 0;
    if (tt_size < 2) {
        /* nothing can disagree with one rank: a clean run only */
        good_allreduce("mm/alone", TC_FLOAT32, TC_SUM, 10);
        tt_say("test_mismatch: needs 2 or more ranks; ran a clean allreduce only\n");
        return;
    }

    /* the last rank disagrees */
    add_bad("mm/shape", tt_params(TT_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 2, 2, 3, 0),
            tt_params(TT_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 2, 3, 2, 0), L, "shape mismatch",
            "[2,3]", "[3,2]");
    add_bad("mm/dtype", tt_params(TT_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 4, 0, 0),
            tt_params(TT_ALLREDUCE, TC_INT32, TC_SUM, 0, 1, 4, 0, 0), L, "dtype mismatch",
            "float32", "int32");
    /* same element size, different dtype */
    add_bad("mm/dtype16", tt_params(TT_ALLREDUCE, TC_INT16, TC_MAX, 0, 1, 4, 0, 0),
            tt_params(TT_ALLREDUCE, TC_UINT16, TC_MAX, 0, 1, 4, 0, 0), L, "dtype mismatch", "int16",
            "uint16");
    add_bad("mm/op", tt_params(TT_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 4, 0, 0),
            tt_params(TT_ALLREDUCE, TC_FLOAT32, TC_MAX, 0, 1, 4, 0, 0), L, "op mismatch", "sum",
            "max");
    add_bad("mm/op-avg-prod", tt_params(TT_ALLREDUCE, TC_FLOAT64, TC_AVG, 0, 1, 3, 0, 0),
            tt_params(TT_ALLREDUCE, TC_FLOAT64, TC_PROD, 0, 1, 3, 0, 0), L, "op mismatch", "avg",
            "prod");
    add_bad("mm/root", tt_params(TT_BROADCAST, TC_INT32, TC_SUM, 0, 1, 5, 0, 0),
            tt_params(TT_BROADCAST, TC_INT32, TC_SUM, L, 1, 5, 0, 0), L, "root mismatch", "0", sL);
    add_bad("mm/collective", tt_params(TT_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 4, 0, 0),
            tt_params(TT_ALLGATHER, TC_FLOAT32, TC_SUM, 0, 1, 4, 0, 0), L, "collective mismatch",
            "allreduce", "allgather");
    add_bad("mm/ndim", tt_params(TT_ALLGATHER, TC_FLOAT32, TC_SUM, 0, 2, 2, 3, 0),
            tt_params(TT_ALLGATHER, TC_FLOAT32, TC_SUM, 0, 3, 2, 3, 1), L, "ndim mismatch", "2",
            "3");
    /* allgather dims 1.. differ (dim0 may differ freely): values not checked,
     * the format of a dims-1.. shape is the engine's choice */
    add_bad("mm/allgather-shape", tt_params(TT_ALLGATHER, TC_INT8, TC_SUM, 0, 2, 1 + tt_rank, 3, 0),
            tt_params(TT_ALLGATHER, TC_INT8, TC_SUM, 0, 2, 2, 4, 0), L, "shape mismatch", "", "");
    add_bad("mm/broadcast-shape", tt_params(TT_BROADCAST, TC_FLOAT64, TC_SUM, 0, 1, 5, 0, 0),
            tt_params(TT_BROADCAST, TC_FLOAT64, TC_SUM, 0, 1, 6, 0, 0), L, "shape mismatch", "[5]",
            "[6]");
    /* a scalar is not a [1] */
    add_bad("mm/scalar", tt_params(TT_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 0, 0, 0, 0),
            tt_params(TT_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 1, 0, 0), L, "shape mismatch", "",
            "");

    /* rank 0 disagrees */
    add_bad("mm/rank0-shape", tt_params(TT_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 5, 0, 0),
            tt_params(TT_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 4, 0, 0), 0, "shape mismatch", "[4]",
            "[5]");
    add_bad("mm/rank0-collective", tt_params(TT_ALLREDUCE, TC_FLOAT32, TC_SUM, 0, 1, 4, 0, 0),
            tt_params(TT_BROADCAST, TC_FLOAT32, TC_SUM, 0, 1, 4, 0, 0), 0, "collective mismatch",
            "broadcast", "allreduce");
    add_bad("mm/rank0-dtype", tt_params(TT_ALLREDUCE, TC_INT64, TC_MIN, 0, 1, 4, 0, 0),
            tt_params(TT_ALLREDUCE, TC_UINT8, TC_MIN, 0, 1, 4, 0, 0), 0, "dtype mismatch", "uint8",
            "int64");
    if (tt_size >= 3) {
        /* a middle rank disagrees */
        add_bad("mm/middle-op", tt_params(TT_ALLREDUCE, TC_INT32, TC_MIN, 0, 1, 4, 0, 0),
                tt_params(TT_ALLREDUCE, TC_INT32, TC_PROD, 0, 1, 4, 0, 0), 1, "op mismatch", "min",
                "prod");
    }

    /* good tensors mixed in */
    for (int i = 0; i < 6; i++) {
        char name[32];
        snprintf(name, sizeof name, "mm/good%d", i);
        add(name,
            tt_params(TT_ALLREDUCE, i & 1 ? TC_INT32 : TC_FLOAT32, TC_SUM, 0, 1, 100 + i, 0, 0), 0);
    }

    int nbad = 0;
    for (int i = 0; i < g_ntasks; i++) {
        nbad += g_tasks[i].bad;
    }
    tt_run_batch(&(tt_batch_t){.ntasks = g_ntasks,
                               .nthreads = NTHREADS,
                               .order_seed = tt_key(0x33, (uint64_t)tt_rank, 0),
                               .submit = submit_task,
                               .complete = complete_task});
    for (int i = 0; i < g_ntasks; i++) {
        free(g_tasks[i].data);
        free(g_tasks[i].recv);
    }
    int ncases = g_ntasks;
    g_ntasks = 0;

    /* the engine keeps running, and the failed names are free again */
    good_allreduce("mm/after", TC_FLOAT64, TC_SUM, 1000);
    good_allreduce("mm/shape", TC_FLOAT32, TC_SUM, 6);
    good_allreduce("mm/collective", TC_INT64, TC_PROD, 17);

    tt_say("test_mismatch: %d mismatches detected on every rank (%d good tensors among them) "
           "on %d ranks\n",
           nbad, ncases - nbad, tt_size);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
