/*
 * test_shm_kinds.c - allgather, broadcast, reducescatter and alltoall
 * inside a node (coll/shm_allgather.c, shm_bcast.c, shm_reducescatter.c,
 * shm_alltoall.c: through the segment's slots, or reading the other ranks'
 * buffers directly; TCOLL_ALLREDUCE_ALGO and TCOLL_SHM_DIRECT_KB pick, by
 * size with auto) against the point-to-point ("MPI") algorithms, bit for
 * bit, on one node.
 *
 * The global process set runs each kind inside the node (every rank of a
 * job under one mpiexec here is on this node), while a process set of
 * every rank in the same order runs the point-to-point algorithm (process
 * sets have no shared-memory collectives; their transfers go through the
 * segment's mailboxes, or MPI). With TCOLL_ALLREDUCE_ALGO=ring both sides
 * run the point-to-point algorithms (CTest's test_p2p_kinds). Every dtype; empty blocks on some ranks, one row,
 * uneven rows, sizes around and past the slots (CTest runs it with 4 KiB
 * slots too), several MiB; broadcast from every root; alltoall with zero
 * splits; reducescatter with every op, non-integer floats (whose sum
 * depends on the order of additions) and scale factors. Each result must
 * have the MPI algorithm's bits and, where the data makes it exact, the
 * exact value; allgather and broadcast results the same bits on every
 * rank. One request at a time with unique names.
 *
 * The case names_its_algorithms records a timeline of one small and one
 * large collective of each kind and checks that the global set's ran
 * inside the node, through the slots or direct as the knobs say.
 */
#define _GNU_SOURCE

#include "mpi_common.h"

#include <unistd.h>

#define LARGE_BYTES ((int64_t)3 << 20) /* several MiB per rank: past any slot ring */

/* A process set of every rank, in order: the MPI algorithms. */
static int all_ranks_set(void)
{
    int *ranks = tt_xmalloc(sizeof(int) * (size_t)tt_size), ps = 0, r;

    for (r = 0; r < tt_size; r++) {
        ranks[r] = r;
    }
    CHECK_OK(tc_process_set_add(ranks, tt_size, &ps));
    free(ranks);
    return ps;
}

static tc_opts_t in_set(int ps)
{
    tc_opts_t o = TC_OPTS_INIT;

    o.process_set = ps;
    return o;
}

static void wait_ok(const char *name, tc_request_t *req)
{
    tc_status_t st = tc_wait(req);

    CHECK_MSG(st == TC_OK, "%s: %s (%s)", name, tc_status_string(st), tc_request_error(req));
}

/* A non-integer value in [-1, 1) for rank r's element i (rounded to the
 * dtype when stored). */
static double frac_value(uint64_t salt, int r, int64_t i)
{
    uint64_t h = tt_key(salt, (uint64_t)r, (uint64_t)i);

    return (double)(h >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
}

/* Element i of rank r's input: exact integers for (dt, op), or fractions. */
static void fill(tc_dtype_t dt, tc_op_t op, uint64_t salt, int r, void *buf, int64_t count,
                 int frac)
{
    int64_t i;

    for (i = 0; i < count; i++) {
        if (frac) {
            tt_store_real(dt, buf, i, frac_value(salt, r, i));
        } else {
            tt_store(dt, buf, i, tt_value(dt, op, salt, r, i));
        }
    }
}

/* got and want (count elements of dt) have the same bits. */
static void same_bits(const char *what, const char *whose, tc_dtype_t dt, const void *got,
                      const void *want, int64_t count)
{
    const size_t es = tt_dtype_bytes(dt);
    int64_t i;

    if (count == 0 || memcmp(got, want, (size_t)count * es) == 0) {
        return;
    }
    for (i = 0;
         memcmp((const char *)got + (size_t)i * es, (const char *)want + (size_t)i * es, es) == 0;
         i++) {
    }
    TC_CHECK_FAIL("%s (np %d): element %lld of %lld: shared memory %.17g, %s %.17g", what, tt_size,
                  (long long)i, (long long)count, tt_load(dt, got, i), whose, tt_load(dt, want, i));
}

/* The same bits on every rank: rank 0's, allgathered, equal each rank's. */
static void same_everywhere(const char *what, const void *buf, size_t bytes)
{
    tc_tensor_t t = {(void *)(uintptr_t)buf, TC_UINT8, 1, {(int64_t)bytes}};
    tc_request_t *req = NULL;
    tc_tensor_t out;
    char name[160];
    int r;

    snprintf(name, sizeof(name), "%s/same", what);
    CHECK_OK(tc_allgather(name, &t, &req));
    wait_ok(name, req);
    CHECK_OK(tc_request_output(req, &out));
    for (r = 0; r < tt_size; r++) {
        CHECK_MSG(memcmp((const char *)out.data + (size_t)r * bytes, buf, bytes) == 0,
                  "%s: rank %d's result differs from rank %d's", what, r, tt_rank);
    }
    tc_request_free(req);
}

/* ------------------------------------------------------------------------ */
/* allgather                                                                 */
/* ------------------------------------------------------------------------ */

#define AG_PATTERNS 7

/* Rows of rank r in pattern p (row_elems elements each, es bytes). */
static int64_t ag_rows(int p, int r, int64_t row_bytes)
{
    switch (p) {
    case 0: return 0; /* nothing anywhere */
    case 1: return 1;
    case 2: return r % 2 == 0 ? 0 : r + 1;                 /* empty blocks on some ranks */
    case 3: return 3 * r + 1 + (r == tt_size - 1 ? 5 : 0); /* uneven */
    case 4: return r == tt_size - 1 ? 7 : 0;               /* one rank only */
    case 5: return 4096 / row_bytes + r;                   /* around a 4 KiB slot */
    default: return LARGE_BYTES / row_bytes + 3 * r;       /* several MiB each */
    }
}

static void allgather_one(int ps, int p, tc_dtype_t dt, int64_t row)
{
    const size_t es = tt_dtype_bytes(dt);
    const int64_t rows = ag_rows(p, tt_rank, row * (int64_t)es);
    int64_t total = 0, at = 0;
    tc_tensor_t x, a, b;
    tc_request_t *ra = NULL, *rb = NULL;
    tc_opts_t o = in_set(ps);
    const int64_t *splits;
    unsigned char *in, *want;
    char name[128], mpi_name[144];
    uint64_t salt;
    int q, n;

    snprintf(name, sizeof(name), "shmk/ag/%d/%s/%lld", p, tt_dtype_str(dt), (long long)row);
    snprintf(mpi_name, sizeof(mpi_name), "%s/mpi", name);
    salt = tt_hash_str(name);
    for (q = 0; q < tt_size; q++) {
        total += ag_rows(p, q, row * (int64_t)es);
    }
    in = tt_data_alloc((size_t)(rows * row) * es + 1);
    want = tt_xmalloc((size_t)(total * row) * es + 1);
    fill(dt, TC_MAX, salt, tt_rank, in, rows * row, 0);
    for (q = 0; q < tt_size; q++) { /* rank q's rows, exactly */
        int64_t k = ag_rows(p, q, row * (int64_t)es) * row;
        fill(dt, TC_MAX, salt, q, want + (size_t)at * es, k, 0);
        at += k;
    }
    x = (tc_tensor_t){in, dt, 2, {rows, row}};
    CHECK_OK(tc_allgather(name, &x, &ra));
    wait_ok(name, ra);
    CHECK_OK(tc_allgather_ex(mpi_name, &x, &o, &rb));
    wait_ok(mpi_name, rb);
    CHECK_OK(tc_request_output(ra, &a));
    CHECK_OK(tc_request_output(rb, &b));
    CHECK_EQ(a.shape[0], total);
    CHECK_EQ(a.shape[1], row);
    CHECK_OK(tc_request_splits(ra, &splits, &n));
    CHECK_EQ(n, tt_size);
    for (q = 0; q < tt_size; q++) {
        CHECK_EQ(splits[q], ag_rows(p, q, row * (int64_t)es));
    }
    same_bits(name, "ring allgatherv", dt, a.data, b.data, total * row);
    same_bits(name, "exact", dt, a.data, want, total * row);
    if (p != 6 || dt == TC_UINT8) { /* the large ones: one allgather more is enough */
        same_everywhere(name, a.data, (size_t)(total * row) * es);
    }
    tc_request_free(ra);
    tc_request_free(rb);
    tt_data_free(in);
    free(want);
}

TC_CASE(allgather_matches_ring)
{
    const int ps = all_ranks_set();
    int di, p, checked = 0;

    for (di = 0; di < TT_NDTYPES; di++) {
        for (p = 0; p < AG_PATTERNS; p++) {
            if (p == AG_PATTERNS - 1 && di % 4 != 0) {
                continue; /* several MiB: bytes are bytes, three dtypes will do */
            }
            allgather_one(ps, p, tt_dtype(di), p % 2 == 0 ? 1 : 3);
            checked++;
        }
    }
    CHECK_OK(tc_process_set_remove(ps));
    tt_say("test_shm_kinds: %d allgathers inside the node match the ring (np %d)\n", checked,
           tt_size);
}

/* ------------------------------------------------------------------------ */
/* broadcast                                                                 */
/* ------------------------------------------------------------------------ */

static void broadcast_one(int ps, int root, tc_dtype_t dt, int64_t count)
{
    const size_t es = tt_dtype_bytes(dt);
    tc_opts_t o = in_set(ps);
    tc_request_t *req = NULL;
    unsigned char *a = tt_data_alloc((size_t)count * es + 1),
                  *b = tt_data_alloc((size_t)count * es + 1);
    unsigned char *want = tt_xmalloc((size_t)count * es + 1);
    tc_tensor_t ta = {a, dt, 1, {count}}, tb = {b, dt, 1, {count}};
    char name[128], mpi_name[144];
    uint64_t salt;

    snprintf(name, sizeof(name), "shmk/bc/%d/%s/%lld", root, tt_dtype_str(dt), (long long)count);
    snprintf(mpi_name, sizeof(mpi_name), "%s/mpi", name);
    salt = tt_hash_str(name);
    fill(dt, TC_MAX, salt, tt_rank, a, count, 0); /* the others' data must be overwritten */
    memcpy(b, a, (size_t)count * es);
    fill(dt, TC_MAX, salt, root, want, count, 0);
    CHECK_OK(tc_broadcast(name, &ta, root, &req));
    wait_ok(name, req);
    tc_request_free(req);
    CHECK_OK(tc_broadcast_ex(mpi_name, &tb, root, &o, &req));
    wait_ok(mpi_name, req);
    tc_request_free(req);
    same_bits(name, "binomial tree", dt, a, b, count);
    same_bits(name, "exact", dt, a, want, count);
    if (count * (int64_t)es < LARGE_BYTES) {
        same_everywhere(name, a, (size_t)count * es);
    }
    tt_data_free(a);
    tt_data_free(b);
    free(want);
}

TC_CASE(broadcast_matches_tree)
{
    const int ps = all_ranks_set();
    int root, di, ci, checked = 0;

    for (root = 0; root < tt_size; root++) {
        for (di = 0; di < TT_NDTYPES; di++) {
            const tc_dtype_t dt = tt_dtype(di);
            const int64_t es = (int64_t)tt_dtype_bytes(dt);
            /* nothing, one element, odd sizes, around a 4 KiB slot and two
             * of them, and (two dtypes a root) several MiB */
            const int64_t counts[] = {0,
                                      1,
                                      3,
                                      1001,
                                      4096 / es - 1,
                                      4096 / es + 1,
                                      2 * 4096 / es + 5,
                                      LARGE_BYTES / es + 7};
            const int ncounts = (int)(sizeof(counts) / sizeof(counts[0]));
            for (ci = 0; ci < ncounts; ci++) {
                if (ci == ncounts - 1 && (di + root) % 5 != 0) {
                    continue;
                }
                broadcast_one(ps, root, dt, counts[ci]);
                checked++;
            }
        }
    }
    CHECK_OK(tc_process_set_remove(ps));
    tt_say("test_shm_kinds: %d broadcasts inside the node match the binomial tree (np %d)\n",
           checked, tt_size);
}

/* ------------------------------------------------------------------------ */
/* reducescatter                                                             */
/* ------------------------------------------------------------------------ */

/* Runs a reducescatter of in (rows x row) and returns its request. */
static tc_request_t *reducescatter(const char *name, tc_dtype_t dt, tc_op_t op, void *in,
                                   int64_t rows, int64_t row, double pre, double post, int ps)
{
    tc_tensor_t t = {in, dt, 2, {rows, row}};
    tc_opts_t o = in_set(ps);
    tc_request_t *req = NULL;

    o.prescale = pre;
    o.postscale = post;
    CHECK_OK(tc_reducescatter_ex(name, &t, op, &o, &req));
    wait_ok(name, req);
    return req;
}

static void reducescatter_one(int ps, tc_dtype_t dt, tc_op_t op, int64_t rows, int64_t row,
                              int frac, int scaled)
{
    const size_t es = tt_dtype_bytes(dt);
    const int64_t n = tt_size;
    const int64_t my_rows = rows / n + (tt_rank < rows % n),
                  off = (rows / n * tt_rank + (tt_rank < rows % n ? tt_rank : rows % n)) * row;
    const double pre = scaled ? 0.5 : 1.0, post = scaled ? 3.0 : 1.0;
    unsigned char *in = tt_data_alloc((size_t)(rows * row) * es + 1);
    tc_request_t *ra, *rb;
    tc_tensor_t a, b;
    char name[128], mpi_name[144];
    uint64_t salt;
    int64_t i;

    snprintf(name, sizeof(name), "shmk/rs/%s/%s/%lldx%lld/%d%d", tt_dtype_str(dt), tt_op_str(op),
             (long long)rows, (long long)row, frac, scaled);
    snprintf(mpi_name, sizeof(mpi_name), "%s/mpi", name);
    salt = tt_hash_str(name);
    fill(dt, op, salt, tt_rank, in, rows * row, frac);
    ra = reducescatter(name, dt, op, in, rows, row, pre, post, 0);
    rb = reducescatter(mpi_name, dt, op, in, rows, row, pre, post, ps);
    CHECK_OK(tc_request_output(ra, &a));
    CHECK_OK(tc_request_output(rb, &b));
    CHECK_EQ(a.shape[0], my_rows);
    CHECK_EQ(b.shape[0], my_rows);
    same_bits(name, "ring reduce-scatter", dt, a.data, b.data, my_rows * row);
    if (!frac && !scaled) { /* exact: the allreduce's value of each element */
        for (i = 0; i < my_rows * row; i++) {
            unsigned char want[8];
            tt_expect(dt, op, salt, tt_size, off + i, want);
            same_bits(name, "exact", dt, (const char *)a.data + (size_t)i * es, want, 1);
        }
    }
    tc_request_free(ra);
    tc_request_free(rb);
    tt_data_free(in);
}

TC_CASE(reducescatter_matches_ring)
{
    const int ps = all_ranks_set(), n = tt_size;
    int di, oi, si, checked = 0;

    for (di = 0; di < TT_NDTYPES; di++) {
        const tc_dtype_t dt = tt_dtype(di);
        const int64_t es = (int64_t)tt_dtype_bytes(dt);
        /* rows x row: none, one row (empty blocks but one), fewer rows than
         * ranks, uneven, around 4 KiB slots, and (sum and avg) several MiB */
        const int64_t shapes[][2] = {{0, 3},
                                     {1, 1},
                                     {1, 5},
                                     {n - 1, 2},
                                     {2 * n + 1, 3},
                                     {7 * n + 3, 1},
                                     {3 * n + 1, 4096 / es / 3 + 1},
                                     {5 * n - 1, 2 * 4096 / es + 3},
                                     {LARGE_BYTES / es / 1024 + 1, 1024}};
        const int nshapes = (int)(sizeof(shapes) / sizeof(shapes[0]));
        for (oi = 0; oi < TT_NOPS; oi++) {
            const tc_op_t op = tt_op(oi);
            if (op == TC_AVG && !tt_is_float(dt)) {
                continue;
            }
            for (si = 0; si < nshapes; si++) {
                const int sums = op == TC_SUM || op == TC_AVG;
                const int frac = tt_is_float(dt) && sums && si % 2 == 0;
                const int scaled = tt_is_float(dt) && si % 3 == 1;
                if (si == nshapes - 1 && !sums) {
                    continue;
                }
                reducescatter_one(ps, dt, op, shapes[si][0], shapes[si][1], frac, scaled);
                checked++;
            }
        }
    }
    CHECK_OK(tc_process_set_remove(ps));
    tt_say("test_shm_kinds: %d reducescatters inside the node match the ring bit for bit "
           "(np %d)\n",
           checked, tt_size);
}

/* ------------------------------------------------------------------------ */
/* alltoall                                                                  */
/* ------------------------------------------------------------------------ */

#define A2A_PATTERNS 7

/* Rows rank q sends rank j in pattern p (row_bytes a row); pattern 0 sends
 * dim 0 / n to each with splits NULL. */
static int64_t a2a_rows(int p, int q, int j, int64_t row_bytes)
{
    switch (p) {
    case 0: return 2;                                          /* equal: splits NULL */
    case 1: return 0;                                          /* nothing at all */
    case 2: return q == j ? 3 : 0;                             /* only to itself */
    case 3: return (q + j) % 2 == 0 ? 0 : q + j + 1;           /* zero splits */
    case 4: return (3 * q + 5 * j) % 7;                        /* uneven */
    case 5: return 4096 / row_bytes + (q + 2 * j) % 3;         /* around a 4 KiB slot */
    default: return LARGE_BYTES / tt_size / row_bytes + q + j; /* several MiB each */
    }
}

static void alltoall_one(int ps, int p, tc_dtype_t dt, int64_t row)
{
    const size_t es = tt_dtype_bytes(dt);
    const int64_t rb = row * (int64_t)es;
    int64_t *splits = tt_xmalloc(sizeof(int64_t) * (size_t)tt_size), rows = 0, got_rows = 0;
    int64_t at = 0, before;
    unsigned char *in, *want;
    tc_opts_t o = in_set(ps);
    tc_request_t *ra = NULL, *rq = NULL;
    const int64_t *got;
    tc_tensor_t x, a, b;
    char name[128], mpi_name[144];
    uint64_t salt;
    int q, j, n;

    snprintf(name, sizeof(name), "shmk/a2a/%d/%s/%lld", p, tt_dtype_str(dt), (long long)row);
    snprintf(mpi_name, sizeof(mpi_name), "%s/mpi", name);
    salt = tt_hash_str(name);
    for (j = 0; j < tt_size; j++) {
        splits[j] = a2a_rows(p, tt_rank, j, rb);
        rows += splits[j];
        got_rows += a2a_rows(p, j, tt_rank, rb);
    }
    in = tt_data_alloc((size_t)(rows * row) * es + 1);
    want = tt_xmalloc((size_t)(got_rows * row) * es + 1);
    fill(dt, TC_MAX, salt, tt_rank, in, rows * row, 0);
    for (q = 0; q < tt_size; q++) { /* rank q's rows for this rank, in q's input */
        unsigned char *all;
        int64_t q_rows = 0, k = a2a_rows(p, q, tt_rank, rb) * row;
        for (j = 0, before = 0; j < tt_size; j++) {
            before += j < tt_rank ? a2a_rows(p, q, j, rb) : 0;
            q_rows += a2a_rows(p, q, j, rb);
        }
        all = tt_xmalloc((size_t)(q_rows * row) * es + 1);
        fill(dt, TC_MAX, salt, q, all, q_rows * row, 0);
        memcpy(want + (size_t)at * es, all + (size_t)(before * row) * es, (size_t)k * es);
        at += k;
        free(all);
    }
    x = (tc_tensor_t){in, dt, 2, {rows, row}};
    CHECK_OK(tc_alltoall(name, &x, p == 0 ? NULL : splits, &ra));
    wait_ok(name, ra);
    CHECK_OK(tc_alltoall_ex(mpi_name, &x, p == 0 ? NULL : splits, &o, &rq));
    wait_ok(mpi_name, rq);
    CHECK_OK(tc_request_output(ra, &a));
    CHECK_OK(tc_request_output(rq, &b));
    CHECK_EQ(a.shape[0], got_rows);
    CHECK_EQ(a.shape[1], row);
    CHECK_OK(tc_request_splits(ra, &got, &n));
    CHECK_EQ(n, tt_size);
    for (q = 0; q < tt_size; q++) {
        CHECK_EQ(got[q], a2a_rows(p, q, tt_rank, rb));
    }
    same_bits(name, "pairwise exchange", dt, a.data, b.data, got_rows * row);
    same_bits(name, "exact", dt, a.data, want, got_rows * row);
    tc_request_free(ra);
    tc_request_free(rq);
    tt_data_free(in);
    free(want);
    free(splits);
}

TC_CASE(alltoall_matches_pairwise)
{
    const int ps = all_ranks_set();
    int di, p, checked = 0;

    for (di = 0; di < TT_NDTYPES; di++) {
        for (p = 0; p < A2A_PATTERNS; p++) {
            if (p == A2A_PATTERNS - 1 && di % 4 != 1) {
                continue; /* several MiB: bytes are bytes, three dtypes will do */
            }
            alltoall_one(ps, p, tt_dtype(di), p % 2 == 0 ? 3 : 1);
            checked++;
        }
    }
    CHECK_OK(tc_process_set_remove(ps));
    tt_say("test_shm_kinds: %d alltoalls inside the node match the pairwise exchange (np %d)\n",
           checked, tt_size);
}

/* ------------------------------------------------------------------------ */
/* which algorithm ran                                                       */
/* ------------------------------------------------------------------------ */

#define NAMED 8

typedef struct {
    char name[64];
    int64_t bytes; /* the size the choice goes by (coll.h) */
    char algo[32]; /* found in the timeline */
} named_t;

/* The text of "key":"..." in line (into out), or 0. */
static int json_str(const char *line, const char *key, char *out, size_t cap)
{
    char pat[40];
    const char *p, *e;

    snprintf(pat, sizeof(pat), "\"%s\":\"", key);
    if ((p = strstr(line, pat)) == NULL || (e = strchr(p + strlen(pat), '"')) == NULL) {
        return 0;
    }
    p += strlen(pat);
    snprintf(out, cap, "%.*s", (int)(e - p), p);
    return 1;
}

/* Reads this rank's timeline file: each collective's algo into named[]. */
static void read_algos(const char *path, named_t *named)
{
    char line[1024], text[64], algo[32];
    int tids[NAMED], i, tid;
    FILE *f = fopen(path, "r");

    CHECK_MSG(f != NULL, "cannot open %s", path);
    for (i = 0; i < NAMED; i++) {
        tids[i] = -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        const char *t = strstr(line, "\"tid\":");
        if (t == NULL || sscanf(t, "\"tid\":%d", &tid) != 1) {
            continue;
        }
        if (strstr(line, "\"name\":\"thread_name\"") != NULL &&
            json_str(strstr(line, "\"args\""), "name", text, sizeof(text))) {
            for (i = 0; i < NAMED; i++) {
                if (strcmp(text, named[i].name) == 0) {
                    tids[i] = tid;
                }
            }
        } else if (strstr(line, "\"cat\":\"collective\"") != NULL &&
                   json_str(line, "algo", algo, sizeof(algo))) {
            for (i = 0; i < NAMED; i++) {
                if (tids[i] == tid) {
                    snprintf(named[i].algo, sizeof(named[i].algo), "%s", algo);
                }
            }
        }
    }
    fclose(f);
}

TC_CASE(names_its_algorithms)
{
    const char *algo_env = getenv("TCOLL_ALLREDUCE_ALGO"), *kb = getenv("TCOLL_SHM_DIRECT_KB");
    const char *mode = algo_env != NULL ? algo_env : "auto";
    const int64_t from = (kb != NULL ? atoll(kb) : 256) * 1024, n = tt_size;
    const int64_t small = 64, large = 4 << 20; /* bytes: below and above the default 256 KiB */
    named_t named[NAMED];
    char dir[256] = "", path[300], base[300], cma_seen[32] = "";
    tc_tensor_t t = {dir, TC_UINT8, 1, {(int64_t)sizeof(dir)}}, x;
    tc_request_t *req = NULL;
    unsigned char *buf = tt_xmalloc((size_t)large);
    int i, k;

    if (tt_size == 1 || strcmp(mode, "ring") == 0 ||
        (getenv("TCOLL_SHM") != NULL && strcmp(getenv("TCOLL_SHM"), "off") == 0)) {
        tt_say("test_shm_kinds: names_its_algorithms: nothing runs inside the node here (one "
               "rank, TCOLL_ALLREDUCE_ALGO=ring or TCOLL_SHM=off)\n");
        free(buf);
        return;
    }
    if (tt_rank == 0) {
        const char *tmp = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
        CHECK_MSG(strlen(tmp) < sizeof(dir) - 32, "TMPDIR is too long: %s", tmp);
        snprintf(dir, sizeof(dir), "%s/tcoll-shmk-XXXXXX", tmp);
        CHECK_MSG(mkdtemp(dir) != NULL, "mkdtemp(%s) failed: %s", dir, strerror(errno));
    }
    CHECK_OK(tc_broadcast("shmk/tl/dir", &t, 0, &req)); /* before the timeline starts */
    wait_ok("shmk/tl/dir", req);
    tc_request_free(req);
    snprintf(base, sizeof(base), "%s/tl.%%r.json", dir);
    snprintf(path, sizeof(path), "%s/tl.%d.json", dir, tt_rank);
    memset(buf, 1, (size_t)large);
    CHECK_OK(tc_timeline_start(base));
    for (k = 0; k < 2; k++) {
        const int64_t bytes = k == 0 ? small : large; /* uint8: elements = bytes */
        named_t *nm = &named[4 * k];
        /* allgather: the output (n blocks of bytes / n) */
        snprintf(nm[0].name, sizeof(nm[0].name), "shmk/tl/ag/%lld", (long long)bytes);
        nm[0].bytes = bytes / n * n;
        x = (tc_tensor_t){buf, TC_UINT8, 1, {bytes / n}};
        CHECK_OK(tc_allgather(nm[0].name, &x, &req));
        wait_ok(nm[0].name, req);
        tc_request_free(req);
        /* broadcast: the buffer */
        snprintf(nm[1].name, sizeof(nm[1].name), "shmk/tl/bc/%lld", (long long)bytes);
        nm[1].bytes = bytes;
        x = (tc_tensor_t){buf, TC_UINT8, 1, {bytes}};
        CHECK_OK(tc_broadcast(nm[1].name, &x, (int)(n - 1), &req));
        wait_ok(nm[1].name, req);
        tc_request_free(req);
        /* reducescatter: the input */
        snprintf(nm[2].name, sizeof(nm[2].name), "shmk/tl/rs/%lld", (long long)bytes);
        nm[2].bytes = bytes;
        x = (tc_tensor_t){buf, TC_UINT8, 1, {bytes}};
        CHECK_OK(tc_reducescatter(nm[2].name, &x, TC_MAX, &req));
        wait_ok(nm[2].name, req);
        tc_request_free(req);
        /* alltoall: the largest rank's input (all alike here) */
        snprintf(nm[3].name, sizeof(nm[3].name), "shmk/tl/a2a/%lld", (long long)bytes);
        nm[3].bytes = bytes / n * n;
        x = (tc_tensor_t){buf, TC_UINT8, 1, {bytes / n * n}};
        CHECK_OK(tc_alltoall(nm[3].name, &x, NULL, &req));
        wait_ok(nm[3].name, req);
        tc_request_free(req);
    }
    CHECK_OK(tc_timeline_stop());
    for (i = 0; i < NAMED; i++) {
        named[i].algo[0] = '\0';
    }
    read_algos(path, named);
    for (i = 0; i < NAMED; i++) {
        const named_t *nm = &named[i];
        const int direct_size =
            strcmp(mode, "cma") == 0 || (strcmp(mode, "auto") == 0 && nm->bytes >= from);
        CHECK_MSG(strcmp(nm->algo, "shm") == 0 || strcmp(nm->algo, "cma") == 0,
                  "%s (%lld bytes, TCOLL_ALLREDUCE_ALGO=%s): algo '%s', not inside the node",
                  nm->name, (long long)nm->bytes, mode, nm->algo);
        if (!direct_size) {
            CHECK_MSG(strcmp(nm->algo, "shm") == 0,
                      "%s (%lld bytes, TCOLL_ALLREDUCE_ALGO=%s): "
                      "algo '%s', want shm",
                      nm->name, (long long)nm->bytes, mode, nm->algo);
        } else if (cma_seen[0] == '\0') { /* cma where process_vm_readv works, else shm */
            snprintf(cma_seen, sizeof(cma_seen), "%s", nm->algo);
        } else {
            CHECK_MSG(strcmp(nm->algo, cma_seen) == 0,
                      "%s (%lld bytes, "
                      "TCOLL_ALLREDUCE_ALGO=%s): algo '%s', but another one of its size ran %s",
                      nm->name, (long long)nm->bytes, mode, nm->algo, cma_seen);
        }
    }
    CHECK_MSG(unlink(path) == 0, "unlink(%s): %s", path, strerror(errno));
    CHECK_OK(tc_barrier(&req)); /* every rank's file gone before the directory goes */
    wait_ok("barrier", req);
    tc_request_free(req);
    if (tt_rank == 0) {
        CHECK_MSG(rmdir(dir) == 0, "rmdir(%s): %s", dir, strerror(errno));
    }
    tt_say("test_shm_kinds: each kind ran inside the node (TCOLL_ALLREDUCE_ALGO=%s; "
           "large ones: %s)\n",
           mode, cma_seen[0] != '\0' ? cma_seen : "-");
    free(buf);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
