/*
 * test_shm.c - the shared-memory allreduces (coll/shm_allreduce.c through
 * the segment's slots, coll/cma_allreduce.c reading the other ranks'
 * buffers directly: TCOLL_ALLREDUCE_ALGO picks, by size with auto) against
 * the ring over MPI, bit for bit, on one node.
 *
 * The global process set runs allreduce through the node's segment (every
 * rank of a job under one mpiexec here is on this node), while a process
 * set of every rank in the same order runs the ring (point to point: the
 * segment's mailboxes, or MPI with TCOLL_SHM_P2P_CELL_KB=0; process sets
 * have no shared-memory collectives). For every dtype and
 * op, counts around the share and chunk boundaries and past the slot ring
 * (run with small slots: TCOLL_SHM_SLOT_KB=4, TCOLL_SHM_SLOTS=2), in place
 * and out of place, with and without scale factors: non-integer floats
 * (whose sum depends on the order of additions) must come out with the
 * ring's bits, integer-valued data exact, and every rank with the same bits.
 * One request at a time with unique names, so nothing is fused or eager.
 *
 * With the argument "hier" (run with TCOLL_RANKS_PER_NODE: pretend nodes)
 * the global set runs the hierarchical allreduce, which adds node sums
 * first: non-integer float sums are then checked close to the ring's, not
 * equal; everything else is still exact and the same on every rank.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>

#include "mpi_common.h"

/* A non-integer value in [-1, 1) for rank r's element i, rounded to dt. */
static double frac_value(tc_dtype_t dt, uint64_t salt, int r, int64_t i)
{
    uint64_t h = tt_key(salt, (uint64_t)r, (uint64_t)i);
    (void)dt; /* rounded to dt when stored */
    return (double)(h >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
}

/* Runs one allreduce of send (count elements) into recv in process set ps
 * and waits for it. */
static void run_one(const char *name, tc_dtype_t dt, tc_op_t op, void *send, void *recv,
                    int64_t count, double pre, double post, int ps)
{
    tc_tensor_t t = {send, dt, 1, {count}};
    tc_opts_t o = TC_OPTS_INIT;
    tc_request_t *req = NULL;
    tc_status_t st;

    o.prescale = pre;
    o.postscale = post;
    o.process_set = ps;
    CHECK_OK(tc_allreduce_ex(name, &t, recv, op, &o, &req));
    st = tc_wait(req);
    CHECK_MSG(st == TC_OK, "%s: %s (%s)", name, tc_status_string(st), tc_request_error(req));
    tc_request_free(req);
}

/* The same bits on every rank: rank 0's result, allgathered through tcoll
 * (as bytes), must equal each rank's. */
static void check_same_everywhere(const char *what, const void *buf, size_t bytes)
{
    tc_tensor_t t = {(void *)(uintptr_t)buf, TC_UINT8, 1, {(int64_t)bytes}};
    tc_request_t *req = NULL;
    tc_tensor_t out;
    const unsigned char *all;
    char name[160];
    int r;

    snprintf(name, sizeof(name), "%s/same", what);
    CHECK_OK(tc_allgather(name, &t, &req));
    CHECK_OK(tc_wait(req));
    CHECK_OK(tc_request_output(req, &out));
    all = out.data;
    for (r = 0; r < tt_size; r++) {
        CHECK_MSG(memcmp(all + (size_t)r * bytes, buf, bytes) == 0,
                  "%s: rank %d's result differs from rank %d's", what, r, tt_rank);
    }
    tc_request_free(req);
}

TC_CASE(agrees_with_ring_bit_for_bit)
{
    const int n = tt_size;
    /* "hier": pretend nodes (TCOLL_RANKS_PER_NODE), the hierarchical path */
    const int hier = tc_test_nargs() > 0 && strcmp(tc_test_arg(0), "hier") == 0;
    int *ranks = tt_xmalloc(sizeof(int) * (size_t)n);
    int ps = 0, r, di, oi, ci, checked = 0;
    /* around the shares (n), a chunk of 4 KiB slots (1024 floats), and past
     * the two-slot ring (several chunks) */
    const int64_t counts[] = {1,    2,    3,    5,        17,           1000,
                              1023, 1024, 1025, 2048 + 7, 5 * 1024 + 3, 70001};
    const int ncounts = (int)(sizeof(counts) / sizeof(counts[0]));

    for (r = 0; r < n; r++) {
        ranks[r] = r;
    }
    CHECK_OK(tc_process_set_add(ranks, n, &ps));
    for (di = 0; di < TT_NDTYPES; di++) {
        tc_dtype_t dt = tt_dtype(di);
        size_t es = tt_dtype_bytes(dt);
        for (oi = 0; oi < TT_NOPS; oi++) {
            tc_op_t op = tt_op(oi);
            if (op == TC_AVG && !tt_is_float(dt)) {
                continue;
            }
            for (ci = 0; ci < ncounts; ci++) {
                int64_t count = counts[ci], i;
                int inplace = (ci + oi) % 2, scaled = tt_is_float(dt) && ci % 3 == 1;
                int frac = tt_is_float(dt) && (op == TC_SUM || op == TC_AVG) && ci % 2 == 0;
                double pre = scaled ? 0.5 : 1.0, post = scaled ? 3.0 : 1.0;
                char name[128];
                uint64_t salt;
                unsigned char *in = tt_data_alloc((size_t)count * es);
                unsigned char *a = tt_data_alloc((size_t)count * es);
                unsigned char *b = tt_data_alloc((size_t)count * es);

                snprintf(name, sizeof(name), "shm/%s/%s/%lld/%d%d%d", tt_dtype_str(dt),
                         tt_op_str(op), (long long)count, inplace, scaled, frac);
                salt = tt_hash_str(name);
                for (i = 0; i < count; i++) {
                    if (frac) {
                        tt_store_real(dt, in, i, frac_value(dt, salt, tt_rank, i));
                    } else {
                        tt_store(dt, in, i, tt_value(dt, op, salt, tt_rank, i));
                    }
                }
                memcpy(a, in, (size_t)count * es);
                memcpy(b, in, (size_t)count * es);
                /* shared memory (the global set), then the ring (set ps) */
                run_one(name, dt, op, inplace ? a : in, a, count, pre, post, 0);
                strcat(name, "/ring");
                run_one(name, dt, op, inplace ? b : in, b, count, pre, post, ps);
                if (hier && frac) {
                    /* node sums first: another order than the ring's, so
                     * close to it (and the same bits everywhere, below) */
                    for (i = 0; i < count; i++) {
                        double x = tt_load(dt, a, i), y = tt_load(dt, b, i);
                        double tol = dt == TC_FLOAT64   ? 1e-12
                                     : dt == TC_FLOAT32 ? 1e-5
                                     : dt == TC_FLOAT16 ? 0.02
                                                        : 0.1;
                        CHECK_MSG(fabs(x - y) <= tol * (1 + fabs(y)),
                                  "%s: element %lld: hier %.17g, ring %.17g", name, (long long)i, x,
                                  y);
                    }
                } else if (memcmp(a, b, (size_t)count * es) != 0) {
                    for (i = 0;
                         i < count && memcmp(a + i * (int64_t)es, b + i * (int64_t)es, es) == 0;
                         i++) {
                    }
                    TC_CHECK_FAIL("%s: element %lld of %lld: shm %.17g, ring %.17g", name,
                                  (long long)i, (long long)count, tt_load(dt, a, i),
                                  tt_load(dt, b, i));
                }
                if (!frac && !scaled) {
                    tt_check_allreduce(name, dt, op, salt, n, a, count);
                }
                check_same_everywhere(name, a, (size_t)count * es);
                tt_data_free(in);
                tt_data_free(a);
                tt_data_free(b);
                checked++;
            }
        }
    }
    CHECK_OK(tc_process_set_remove(ps));
    free(ranks);
    tt_say("test_shm: %d allreduces %s match the ring %s (np %d)\n", checked,
           hier ? "across pretend nodes" : "through shared memory",
           hier ? "(exact data bit for bit)" : "bit for bit", n);
}

/* Buffers in tc_mem_alloc memory, which the direct allreduce maps and
 * reads with loads: rounds that free their regions and allocate new ones
 * (the same file descriptors come back with other contents: a stale
 * mapping would give old bytes), more regions than a peer keeps mapped,
 * regions kept across rounds, in place and not, and rounds where rank 0's
 * buffers are private (read through process_vm_readv). Exact sums, and
 * tc_request_algorithm says "cma, mapped" when every rank's buffers were
 * mapped. */
TC_CASE(mapped_regions)
{
    enum { ROUNDS = 3 * 8 + 5 };
    const int64_t base = 300 * 1024 / 4; /* past the direct path's default threshold */
    float *kept = NULL;
    int round, mapped = 0;

    for (round = 0; round < ROUNDS; round++) {
        const int priv = round % 7 == 6 && tt_rank == 0; /* rank 0's buffers private */
        const int in_place = round % 3 == 0;
        const int64_t count = base + (round % 4) * 1021;
        const size_t bytes = (size_t)count * sizeof(float);
        float *in, *out;
        tc_tensor_t t;
        tc_request_t *req = NULL;
        const char *algo;
        char name[64];
        uint64_t salt;

        snprintf(name, sizeof(name), "shm/mapped/%d", round);
        salt = tt_hash_str(name);
        if (round % 8 == 2 && kept == NULL) { /* a region that stays for later rounds */
            CHECK_OK(tc_mem_alloc((size_t)(base + 3 * 1021) * sizeof(float), (void **)&kept));
        }
        if (kept != NULL && round % 8 >= 3 && !priv) {
            in = kept;
        } else if (priv) {
            in = tt_xmalloc(bytes);
        } else {
            CHECK_OK(tc_mem_alloc(bytes, (void **)&in));
        }
        out = in;
        if (!in_place) {
            if (priv) {
                out = tt_xmalloc(bytes);
            } else {
                CHECK_OK(tc_mem_alloc(bytes, (void **)&out));
            }
        }
        tt_fill(TC_FLOAT32, TC_SUM, salt, tt_rank, in, count);
        t = (tc_tensor_t){in, TC_FLOAT32, 1, {count}};
        CHECK_OK(tc_allreduce(name, &t, out, TC_SUM, &req));
        CHECK_OK(tc_wait(req));
        tt_check_allreduce(name, TC_FLOAT32, TC_SUM, salt, tt_size, out, count);
        algo = tc_request_algorithm(req);
        CHECK(algo != NULL);
        if (strncmp(algo, "cma", 3) == 0 && round % 7 != 6) { /* every rank's buffers shared */
            CHECK_MSG(strcmp(algo, "cma, mapped") == 0, "%s ran as '%s'", name, algo);
            mapped++;
        }
        tc_request_free(req);
        if (out != in) {
            if (priv) {
                free(out);
            } else {
                CHECK_OK(tc_mem_free(out));
            }
        }
        if (priv) {
            free(in);
        } else if (in != kept) {
            CHECK_OK(tc_mem_free(in));
        }
        if (round % 8 == 7 && kept != NULL) {
            CHECK_OK(tc_mem_free(kept));
            kept = NULL;
        }
    }
    if (kept != NULL) {
        CHECK_OK(tc_mem_free(kept));
    }
    tt_say("test_shm: %d allreduces on tc_mem_alloc buffers exact, %d read with loads (np %d)\n",
           ROUNDS, mapped, tt_size);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){.args = "[hier]"});
}
