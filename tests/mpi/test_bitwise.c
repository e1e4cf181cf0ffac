/*
 * test_bitwise.c - every rank must receive bitwise-identical allreduce
 * results, also for non-integer floating data where the order of additions
 * changes the rounding.
 *
 * The application initializes MPI itself (MPI_THREAD_MULTIPLE) so it can
 * cross-check with MPI_COMM_WORLD while tcoll runs on its own communicators:
 * a 64-bit hash of each result is gathered with MPI_Allgather and must agree
 * on all ranks, and for some tensors rank 0's whole result is broadcast and
 * compared with memcmp. Results are also checked to be close to a double
 * precision reference (every rank's input is reproducible everywhere).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <mpi.h>

#include "mpi_common.h"

#define MAX_TASKS 64

typedef struct {
    char name[96];
    tc_dtype_t dt;
    tc_op_t op;
    int64_t count;
    int inplace;
    uint64_t salt;
    void *send;
    void *recv;
    tc_request_t *req;
} task_t;

static task_t g_tasks[MAX_TASKS];
static int g_ntasks;

/* A non-integer value in [-1, 1) for rank r's element i, rounded to dt. */
static double rand_value(tc_dtype_t dt, uint64_t salt, int r, int64_t i)
{
    uint64_t h = tt_key(salt, (uint64_t)r, (uint64_t)i);
    double x = (double)(h >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
    switch (dt) {
    case TC_FLOAT16: return tt_f16_to_f32(tt_f32_to_f16((float)x));
    case TC_BFLOAT16: return tt_bf16_to_f32(tt_f32_to_bf16((float)x));
    case TC_FLOAT32: return (float)x;
    default: return x;
    }
}

static uint64_t fnv(const void *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
    }
    return h;
}

/*
 * float32, float16, bfloat16 and float64 sums and averages of 1, 1000, 7919
 * and 100003 non-integer elements, alternately in place, submitted in a
 * rank-dependent order with MPI barriers on the application's communicator
 * in between: close to the reference, and the same bits on every rank.
 */
TC_CASE(float_sums_bitwise_identical)
{
    g_ntasks = 0;
    const tc_dtype_t dts[4] = {TC_FLOAT32, TC_FLOAT16, TC_BFLOAT16, TC_FLOAT64};
    const tc_op_t ops[2] = {TC_SUM, TC_AVG};
    const int64_t counts[4] = {1, 1000, 7919, 100003};
    for (int di = 0; di < 4; di++) {
        for (int oi = 0; oi < 2; oi++) {
            for (int ci = 0; ci < 4; ci++) {
                task_t *t = &g_tasks[g_ntasks];
                t->dt = dts[di];
                t->op = ops[oi];
                t->count = counts[ci];
                t->inplace = (g_ntasks & 1);
                snprintf(t->name, sizeof t->name, "bw/%s/%s/%lld", tt_dtype_str(t->dt),
                         tt_op_str(t->op), (long long)t->count);
                t->salt = tt_hash_str(t->name);
                size_t bytes = (size_t)t->count * tt_dtype_bytes(t->dt);
                t->send = tt_xmalloc(bytes);
                for (int64_t i = 0; i < t->count; i++) {
                    tt_store_real(t->dt, t->send, i, rand_value(t->dt, t->salt, tt_rank, i));
                }
                t->recv = t->inplace ? t->send : tt_xmalloc(bytes);
                g_ntasks++;
            }
        }
    }

    /* submit in a rank-dependent order */
    int order[MAX_TASKS];
    for (int i = 0; i < g_ntasks; i++) {
        order[i] = i;
    }
    tt_rng_t rng = {tt_key(0xb1, (uint64_t)tt_rank, 0)};
    tt_shuffle(order, g_ntasks, &rng);
    for (int k = 0; k < g_ntasks; k++) {
        task_t *t = &g_tasks[order[k]];
        tc_tensor_t ten = {t->send, t->dt, 1, {t->count}};
        CHECK_OK(tc_allreduce(t->name, &ten, t->recv, t->op, &t->req));
        if (k % 8 == 3) {
            /* MPI on the application's communicator while tcoll works */
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }

    int compared_full = 0;
    uint64_t *hashes = tt_xmalloc(sizeof(uint64_t) * (size_t)tt_size);
    for (int i = 0; i < g_ntasks; i++) {
        task_t *t = &g_tasks[i];
        tc_status_t st = tc_wait(t->req);
        CHECK_MSG(st == TC_OK, "%s: %s: %s", t->name, tc_status_string(st),
                  tc_request_error(t->req));
        tc_request_free(t->req);
        size_t bytes = (size_t)t->count * tt_dtype_bytes(t->dt);

        /* close to the reference */
        double tol = t->dt == TC_FLOAT64   ? 1e-12
                     : t->dt == TC_FLOAT32 ? 1e-5
                     : t->dt == TC_FLOAT16 ? 0.02
                                           : 0.1;
        for (int64_t e = 0; e < t->count; e++) {
            double ref = 0;
            for (int r = 0; r < tt_size; r++) {
                ref += rand_value(t->dt, t->salt, r, e);
            }
            if (t->op == TC_AVG) {
                ref /= tt_size;
            }
            double got = tt_load(t->dt, t->recv, e);
            CHECK_MSG(fabs(got - ref) <= tol, "%s: element %lld is %.17g, reference %.17g", t->name,
                      (long long)e, got, ref);
        }

        /* identical bits everywhere: hashes ... */
        uint64_t h = fnv(t->recv, bytes);
        MPI_Allgather(&h, 1, MPI_UINT64_T, hashes, 1, MPI_UINT64_T, MPI_COMM_WORLD);
        for (int r = 0; r < tt_size; r++) {
            CHECK_MSG(hashes[r] == hashes[0],
                      "%s: rank %d's result differs from rank 0's (hash %016llx vs %016llx)",
                      t->name, r, (unsigned long long)hashes[r], (unsigned long long)hashes[0]);
        }
        /* ... and, for the larger ones, the whole buffer */
        if (t->count >= 7919) {
            void *root = tt_xmalloc(bytes);
            if (tt_rank == 0) {
                memcpy(root, t->recv, bytes);
            }
            MPI_Bcast(root, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
            CHECK_MSG(memcmp(root, t->recv, bytes) == 0, "%s: result differs from rank 0's",
                      t->name);
            free(root);
            compared_full++;
        }
    }
    free(hashes);
    for (int i = 0; i < g_ntasks; i++) {
        if (!g_tasks[i].inplace) {
            free(g_tasks[i].recv);
        }
        free(g_tasks[i].send);
    }

    tt_say("test_bitwise: %d allreduces bitwise identical on %d ranks (%d compared in full)\n",
           g_ntasks, tt_size, compared_full);
}

/* The application owns MPI (MPI_THREAD_MULTIPLE): the skeleton's verdict is
 * an MPI_Allreduce on MPI_COMM_WORLD, a safe end of test, and after
 * tc_shutdown MPI must still be initialized. */
int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv,
                       &(tt_program_t){.app_mpi = 1, .app_mpi_level = MPI_THREAD_MULTIPLE});
}
