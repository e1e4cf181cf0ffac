/*
 * test_alltoall.c - tc_alltoall: equal splits (splits NULL), uneven splits
 * with zeros, ranks that send nothing, rows of several elements, every
 * dtype, one large exchange; the rows each rank receives and the counts
 * tc_request_splits reports are computed here from what every rank sends.
 * Then what must fail: bad splits and shapes at once (TC_ERR_ARG), dtype and
 * trailing dims that differ across ranks (TC_ERR_MISMATCH on every rank).
 */
#define _POSIX_C_SOURCE 200809L

#include "mpi_common.h"

/* Rows rank q sends rank j for pattern p (the same formula everywhere, so
 * every rank knows what it gets). */
static int64_t rows_to(int p, int q, int j)
{
    switch (p) {
    case 0: return 2;                                    /* equal: splits NULL */
    case 1: return (q + 2 * j) % 3;                      /* uneven, with zeros */
    case 2: return q == 0 ? 0 : j + 1;                   /* rank 0 sends nothing */
    case 3: return j == tt_size - 1 ? 0 : 5 * q + j + 1; /* nobody sends the last rank */
    default: return (q == j) ? 40000 : 3;                /* large own block */
    }
}

/* Element c of row i (counted within what rank q sends rank j). */
static int64_t value(int q, int j, int64_t i, int64_t c)
{
    return (int64_t)(tt_key((uint64_t)q, (uint64_t)j, (uint64_t)(i * 7 + c)) % 100);
}

static void run(int p, tc_dtype_t dt, int64_t row)
{
    char name[64];
    int64_t *splits = tt_xmalloc((size_t)tt_size * sizeof(int64_t)), total = 0, i, c;
    const int64_t *got;
    int j, q, n;
    tc_tensor_t x, out;
    tc_request_t *req;
    size_t es = tt_dtype_bytes(dt);
    void *send;
    int64_t at;

    for (j = 0; j < tt_size; j++) {
        splits[j] = rows_to(p, tt_rank, j);
        total += splits[j];
    }
    send = tt_xmalloc((size_t)(total * row) * es + 1);
    at = 0;
    for (j = 0; j < tt_size; j++) {
        for (i = 0; i < splits[j]; i++, at++) {
            for (c = 0; c < row; c++) {
                tt_store(dt, send, at * row + c, value(tt_rank, j, i, c));
            }
        }
    }
    snprintf(name, sizeof(name), "a2a/%d/%s/%lld", p, tt_dtype_str(dt), (long long)row);
    x = (tc_tensor_t){send, dt, 2, {total, row}};
    CHECK_OK(tc_alltoall(name, &x, p == 0 ? NULL : splits, &req));
    CHECK_OK(tc_wait(req));
    CHECK_OK(tc_request_output(req, &out));
    CHECK_OK(tc_request_splits(req, &got, &n));
    CHECK_EQ(n, tt_size);
    CHECK_EQ(out.ndim, 2);
    CHECK_EQ(out.shape[1], row);
    at = 0;
    for (q = 0; q < tt_size; q++) {
        CHECK_EQ(got[q], rows_to(p, q, tt_rank));
        for (i = 0; i < got[q]; i++, at++) {
            for (c = 0; c < row; c++) {
                unsigned char want[8];
                tt_store(dt, want, 0, value(q, tt_rank, i, c));
                if (memcmp((const char *)out.data + (size_t)(at * row + c) * es, want, es) != 0) {
                    TC_CHECK_FAIL("%s (np %d): row %lld from rank %d, element %lld is %.17g, "
                                  "want %.17g",
                                  name, tt_size, (long long)i, q, (long long)c,
                                  tt_load(dt, out.data, at * row + c), tt_load(dt, want, 0));
                }
            }
        }
    }
    CHECK_EQ(out.shape[0], at);
    tc_request_free(req);
    free(send);
    free(splits);
}

TC_CASE(patterns)
{
    int p, d;

    for (p = 0; p < 4; p++) {
        for (d = 0; d < TT_NDTYPES; d++) {
            run(p, tt_dtype(d), p == 1 ? 3 : 1);
        }
    }
    run(4, TC_FLOAT32, 16); /* 2.5 MiB to itself, a little to the others */
    run(1, TC_INT64, 0);    /* rows of no elements: counts still travel */
}

TC_CASE(refusals)
{
    int64_t splits[8], rows = 2 * tt_size + 1;
    int32_t in[64] = {0};
    tc_tensor_t x = {in, TC_INT32, 1, {rows}}, scalar = {in, TC_INT32, 0, {0}};
    tc_request_t *req = NULL;
    int j;

    CHECK_EQ(tc_alltoall("a2a/bad", &scalar, NULL, &req), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "alltoall needs ndim >= 1") != NULL);
    if (tt_size > 1) {
        CHECK_EQ(tc_alltoall("a2a/bad", &x, NULL, &req), TC_ERR_ARG);
        CHECK(strstr(tc_last_error(), "is not divisible by the") != NULL);
    }
    for (j = 0; j < tt_size; j++) {
        splits[j] = 2;
    }
    splits[0] = -1;
    CHECK_EQ(tc_alltoall("a2a/bad", &x, splits, &req), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "splits[0] is negative") != NULL);
    splits[0] = 3;
    x.shape[0] = rows - 1; /* one short of what the splits send */
    CHECK_EQ(tc_alltoall("a2a/bad", &x, splits, &req), TC_ERR_ARG);
    CHECK(strstr(tc_last_error(), "splits do not add up to dimension 0") != NULL);
    CHECK(req == NULL);
    if (tt_size < 2) {
        return;
    }
    /* a different dtype, then different trailing dims, on the last rank */
    x = (tc_tensor_t){in, tt_rank == tt_size - 1 ? TC_FLOAT32 : TC_INT32, 1, {tt_size}};
    CHECK_OK(tc_alltoall("a2a/dtype", &x, NULL, &req));
    CHECK_EQ(tc_wait(req), TC_ERR_MISMATCH);
    CHECK(strstr(tc_request_error(req), "alltoall dtype mismatch: rank 0 has int32") != NULL);
    CHECK_EQ(tc_request_splits(req, &(const int64_t *){NULL}, &j), TC_ERR_MISMATCH);
    tc_request_free(req);
    x = (tc_tensor_t){in, TC_INT32, 2, {tt_size, tt_rank == tt_size - 1 ? 3 : 2}};
    CHECK_OK(tc_alltoall("a2a/dims", &x, NULL, &req));
    CHECK_EQ(tc_wait(req), TC_ERR_MISMATCH);
    CHECK_MSG(strstr(tc_request_error(req), "alltoall shape mismatch (dims after the first)") !=
                  NULL,
              "message: %s", tc_request_error(req));
    tc_request_free(req);
}

int main(int argc, char **argv)
{
    return tt_mpi_main(argc, argv, &(tt_program_t){0});
}
