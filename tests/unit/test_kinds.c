/*
 * test_kinds.c - the collective kinds' descriptors without MPI: the table
 * (one row per kind, names from the one list, ranges), each kind's run and
 * algorithm records and the selector's choice among them, each kind's argument
 * checks, the submission path's checks and how it binds a request's op,
 * root and output buffer per kind (tc__request_make, no MPI), the eager
 * combine of allreduce, and the agreement masks as the coordinator applies
 * them: for every kind and every field, a rank that differs in that field
 * alone gives TC_ERR_MISMATCH naming the field exactly when the kind's mask
 * lists it.
 */
#define _GNU_SOURCE
#include <ctype.h>

#include "check.h"
#include "neg/coordinator.h"
#include "exec/algo.h"
#include "engine/engine_internal.h"
#include "kind/kind.h"
#include "tc_test.h"
#include "util/backoff.h"

/* A submission entered now (the table's stall clock reads the caller's). */
static tc_status_t coord_add(tc_coord_t *c, int rank, const tc_wire_request_t *req, char *err,
                             size_t len)
{
    return tc__coord_add_at(c, rank, req, tc__now_ns(), err, len);
}

TC_CASE(table)
{
    int k;

    for (k = 0; k < TC_KIND_COUNT; k++) {
        const tc_kind_desc_t *d = tc__kind_get(k);
        size_t i;
        CHECK(d != NULL);
        CHECK_EQ(d->kind, k);
        CHECK_MSG(strcmp(d->name, tc__kind_name(k)) == 0, "kind %d: '%s' vs the wire's '%s'", k,
                  d->name, tc__kind_name(k));
        CHECK_EQ(strlen(d->upper), strlen(d->name));
        for (i = 0; d->name[i] != '\0'; i++) {
            CHECK_EQ(d->upper[i], toupper((unsigned char)d->name[i]));
        }
        {
            const tc_kind_exec_t *x = tc__kind_exec(k);
            size_t a;
            CHECK(x != NULL && x->run != NULL && x->nalgos >= 1 && x->algos != NULL);
            for (a = 0; a < x->nalgos; a++) {
                CHECK(x->algos[a]->name != NULL && x->algos[a]->name[0] != '\0');
                CHECK(x->algos[a]->memory & (TC_MEM_HOST | TC_MEM_CUDA));
                /* a device record never runs host memory, nor fused groups */
                CHECK(!(x->algos[a]->memory & TC_MEM_CUDA) ||
                      (!(x->algos[a]->memory & TC_MEM_HOST) && x->algos[a]->applies != NULL));
            }
            /* the last record runs any host memory: the selector always finds one */
            CHECK(x->algos[x->nalgos - 1]->applies == NULL);
            CHECK(x->algos[x->nalgos - 1]->memory & TC_MEM_HOST);
        }
        /* fused and eager results are written into the request's recv */
        if (d->fusable || d->eager_combine != NULL) {
            CHECK(d->output != TC_OUT_GATHERED);
        }
        /* an op or root the ranks need not agree on would run differently */
        CHECK_EQ((d->params & TC_PARAM_OP) != 0, (d->agree & TC_AGREE_OP) != 0);
        CHECK_EQ((d->params & TC_PARAM_ROOT) != 0, (d->agree & TC_AGREE_ROOT) != 0);
        /* an op's scaling factors must agree too */
        CHECK_EQ((d->params & TC_PARAM_SCALE) != 0, (d->agree & TC_AGREE_SCALE) != 0);
        if (d->params & TC_PARAM_NONE_TENSOR) { /* no tensor: nothing of one to agree on */
            CHECK_EQ(d->agree & ~(unsigned)(TC_AGREE_RANKS | TC_AGREE_TARGET), 0);
            CHECK_EQ(d->set_op, (d->agree & (TC_AGREE_RANKS | TC_AGREE_TARGET)) != 0);
            CHECK_EQ(d->output, TC_OUT_NONE);
            CHECK(d->uncached); /* its names are used once */
            continue;
        }
        /* exactly one shape rule */
        CHECK_EQ(((d->agree & TC_AGREE_SHAPE) != 0) + ((d->agree & TC_AGREE_SHAPE_TAIL) != 0), 1);
        CHECK(d->agree & TC_AGREE_DTYPE);
        CHECK(d->agree & TC_AGREE_MEMORY); /* host and device tensors never mix */
    }
    CHECK(tc__kind_get(-1) == NULL);
    CHECK(tc__kind_get(TC_KIND_COUNT) == NULL);
    CHECK(tc__kind_get(255) == NULL);
    CHECK(tc__kind_exec(-1) == NULL && tc__kind_exec(TC_KIND_COUNT) == NULL);
    CHECK(strcmp(tc__kind_get(TC_KIND_ALLREDUCE)->upper, "ALLREDUCE") == 0);
    {
        const tc_kind_exec_t *b = tc__kind_exec(TC_KIND_BROADCAST);
        CHECK(strcmp(b->algos[b->nalgos - 1]->name, "binomial tree") == 0);
    }
}

/* The record the selector picks for kind (bytes, dtype, op, memory) with x. */
static const char *pick(const tc_algo_ctx_t *x, int kind, tc_dtype_t dtype, tc_op_t op,
                        size_t bytes, unsigned memory)
{
    tc_algo_call_t c = {(tc_kind_t)kind, dtype, op, bytes, memory, 0};
    const tc_algo_t *a = tc__algo_select(x, &c);

    return a != NULL ? a->name : "(none)";
}

#define CHECK_PICK(want, ...)                                                                      \
    do {                                                                                           \
        const char *got_ = pick(__VA_ARGS__);                                                      \
        CHECK_MSG(strcmp(got_, want) == 0, "picked '%s', want '%s'", got_, want);                  \
    } while (0)

/* One selector, the records in order: what the set has (the node's segment,
 * the hierarchical allreduce), the size against TCOLL_SHM_DIRECT_KB, the
 * dtype and op under TCOLL_DETERMINISTIC, and the memory. */
TC_CASE(selector)
{
    tc_transport_t tp = {0};
    tc_shm_seg_t seg = {0};
    tc_shm_coll_t shm = {0};
    tc_hier_t hier;
    tc_algo_ctx_t x = {0};
    const size_t big = 1u << 20;

    memset(&hier, 0, sizeof(hier));
    tp.size = 2;
    seg.n = 2;
    seg.cma = 1;
    seg.slot_bytes = 4096;
    shm.seg = &seg;
    shm.cma_from = big;
    x.tp = &tp;

    /* nothing but the transport */
    CHECK_PICK("ring", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 64, TC_MEM_HOST);
    CHECK_PICK("ring allgatherv", &x, TC_KIND_ALLGATHER, TC_FLOAT32, TC_SUM, 64, TC_MEM_HOST);
    CHECK_PICK("binomial tree", &x, TC_KIND_BROADCAST, TC_INT8, TC_SUM, 64, TC_MEM_HOST);
    CHECK_PICK("ring reduce-scatter", &x, TC_KIND_REDUCESCATTER, TC_FLOAT32, TC_SUM, 64,
               TC_MEM_HOST);
    CHECK_PICK("pairwise exchange", &x, TC_KIND_ALLTOALL, TC_INT32, TC_SUM, 64, TC_MEM_HOST);
    CHECK_PICK("negotiation (every rank reached it)", &x, TC_KIND_BARRIER, TC_INT32, TC_SUM, 0,
               TC_MEM_HOST);
    /* TCOLL_DETERMINISTIC: order-sensitive ops in the documented order */
    x.ordered = 1;
    CHECK_PICK("ordered", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 64, TC_MEM_HOST);
    CHECK_PICK("ordered", &x, TC_KIND_ALLREDUCE, TC_BFLOAT16, TC_AVG, 64, TC_MEM_HOST);
    CHECK_PICK("ring", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_MAX, 64, TC_MEM_HOST);
    CHECK_PICK("ring", &x, TC_KIND_ALLREDUCE, TC_INT64, TC_SUM, 64, TC_MEM_HOST);
    CHECK_PICK("ordered reduce-scatter", &x, TC_KIND_REDUCESCATTER, TC_FLOAT64, TC_PROD, 64,
               TC_MEM_HOST);
    /* the node's segment: slots below TCOLL_SHM_DIRECT_KB, direct from it */
    x.shm = &shm;
    CHECK_PICK("shm", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 64, TC_MEM_HOST);
    CHECK_PICK("cma", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, big, TC_MEM_HOST);
    CHECK_PICK("cma", &x, TC_KIND_ALLGATHER, TC_FLOAT32, TC_SUM, big, TC_MEM_HOST);
    CHECK_PICK("shm", &x, TC_KIND_BROADCAST, TC_FLOAT32, TC_SUM, big - 1, TC_MEM_HOST);
    CHECK_PICK("shm", &x, TC_KIND_REDUCESCATTER, TC_FLOAT32, TC_SUM, 64, TC_MEM_HOST);
    CHECK_PICK("cma", &x, TC_KIND_ALLTOALL, TC_FLOAT32, TC_SUM, big, TC_MEM_HOST);
    seg.cma = 0; /* process_vm_readv refused: the slots at every size */
    CHECK_PICK("shm", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, big, TC_MEM_HOST);
    /* the other kinds need the whole set in the segment and a count per rank
     * in a slot; allreduce's shm is for the global set alone already */
    tp.size = 3;
    CHECK_PICK("ordered reduce-scatter", &x, TC_KIND_REDUCESCATTER, TC_FLOAT32, TC_SUM, 64,
               TC_MEM_HOST);
    CHECK_PICK("pairwise exchange", &x, TC_KIND_ALLTOALL, TC_INT32, TC_SUM, 64, TC_MEM_HOST);
    tp.size = 2;
    seg.slot_bytes = 8;
    CHECK_PICK("ring allgatherv", &x, TC_KIND_ALLGATHER, TC_FLOAT32, TC_SUM, 64, TC_MEM_HOST);
    /* several nodes: the hierarchical allreduce first */
    x.hier = &hier;
    CHECK_PICK("hier", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, big, TC_MEM_HOST);
    CHECK_PICK("binomial tree", &x, TC_KIND_BROADCAST, TC_FLOAT32, TC_SUM, 64, TC_MEM_HOST);
    /* memory no record handles: none */
    CHECK_PICK("(none)", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 64, 1u << 5);
    CHECK_PICK("(none)", &x, TC_KIND_COUNT, TC_FLOAT32, TC_SUM, 64, TC_MEM_HOST);
    /* device memory: the in-node records of allreduce, broadcast,
     * allgather, reducescatter and alltoall, from TCOLL_CUDA_IPC_MIN_KB up
     * (alltoall: the largest input of any rank), with the set on one node
     * of 2..64 ranks */
    x.hier = NULL;
    x.node = NULL;
    tp.size = 4;
    CHECK_PICK("(none)", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA); /* off */
    x.cuda_ipc_bytes = 1024;
    CHECK_PICK("cuda ipc", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 1024, TC_MEM_CUDA);
    CHECK_PICK("cuda ipc", &x, TC_KIND_ALLREDUCE, TC_BFLOAT16, TC_PROD, big, TC_MEM_CUDA);
    CHECK_PICK("(none)", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 1023, TC_MEM_CUDA);
    CHECK_PICK("cuda ipc", &x, TC_KIND_ALLGATHER, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
    CHECK_PICK("cuda ipc", &x, TC_KIND_BROADCAST, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
    CHECK_PICK("cuda ipc", &x, TC_KIND_REDUCESCATTER, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
    CHECK_PICK("(none)", &x, TC_KIND_REDUCESCATTER, TC_FLOAT32, TC_SUM, 1023, TC_MEM_CUDA);
    CHECK_PICK("cuda ipc", &x, TC_KIND_ALLTOALL, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
    CHECK_PICK("(none)", &x, TC_KIND_ALLTOALL, TC_FLOAT32, TC_SUM, 1023, TC_MEM_CUDA);
    {
        /* the table a job on one node has (every rank's node led by rank 0),
         * as the engine gives it: the same picks as without one */
        static const int one_node4[4] = {0, 0, 0, 0};
        x.node = one_node4;
        CHECK_PICK("cuda ipc", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
        CHECK_PICK("cuda ipc", &x, TC_KIND_BROADCAST, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
        CHECK_PICK("cuda ipc", &x, TC_KIND_ALLTOALL, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
        x.node = NULL;
    }
    CHECK_PICK("pairwise exchange", &x, TC_KIND_ALLTOALL, TC_FLOAT32, TC_SUM, big,
               TC_MEM_HOST); /* host: never the device record */
    CHECK_PICK("shm", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 64,
               TC_MEM_HOST); /* host: as before */
    tp.size = 1;
    CHECK_PICK("(none)", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
    tp.size = 65;
    CHECK_PICK("(none)", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
    tp.size = 2;
    {
        static const int two_nodes[2] = {0, 1};
        x.node = two_nodes;
        CHECK_PICK("(none)", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
        /* the chunked staging: allreduce and broadcast larger than one chunk
         * (whole elements of at least one), on any set, after the IPC record */
        x.stage_chunk = 4096;
        CHECK_PICK("staged, pipelined", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 4097,
                   TC_MEM_CUDA);
        CHECK_PICK("(none)", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 4096, TC_MEM_CUDA);
        CHECK_PICK("staged, pipelined", &x, TC_KIND_BROADCAST, TC_FLOAT32, TC_SUM, big,
                   TC_MEM_CUDA);
        CHECK_PICK("(none)", &x, TC_KIND_ALLGATHER, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
        CHECK_PICK("(none)", &x, TC_KIND_REDUCESCATTER, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
        CHECK_PICK("(none)", &x, TC_KIND_ALLTOALL, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
        x.stage_chunk = 6; /* 8-byte elements: one element a chunk */
        CHECK_PICK("staged, pipelined", &x, TC_KIND_ALLREDUCE, TC_FLOAT64, TC_SUM, 16, TC_MEM_CUDA);
        CHECK_PICK("(none)", &x, TC_KIND_ALLREDUCE, TC_FLOAT64, TC_SUM, 8, TC_MEM_CUDA);
        x.node = NULL;
        CHECK_PICK("cuda ipc", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
        x.stage_chunk = 0;
    }
    /* a CUDA-aware MPI (x.cuda_mpi): after the IPC record, before the
     * chunked staging; the reducing kinds only where rank order is the
     * documented order (one node, a node per rank) or the op is exact */
    {
        static const int one_each[4] = {0, 1, 2, 3}, two_two[4] = {0, 0, 2, 2};
        static const int one_node[4] = {0, 0, 0, 0};
        tc_transport_t mpi_tp = {0};

        x.cuda_mpi = &mpi_tp;
        x.stage_chunk = 4096;
        tp.size = 4;
        CHECK_PICK("cuda ipc", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
        CHECK_PICK("cuda-aware mpi", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, 64, TC_MEM_CUDA);
        x.node = two_two; /* two nodes of two: not rank order */
        CHECK_PICK("staged, pipelined", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, big,
                   TC_MEM_CUDA);
        CHECK_PICK("(none)", &x, TC_KIND_REDUCESCATTER, TC_BFLOAT16, TC_AVG, big, TC_MEM_CUDA);
        CHECK_PICK("cuda-aware mpi", &x, TC_KIND_ALLREDUCE, TC_INT32, TC_SUM, big, TC_MEM_CUDA);
        CHECK_PICK("cuda-aware mpi", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_MAX, big, TC_MEM_CUDA);
        CHECK_PICK("cuda-aware mpi", &x, TC_KIND_ALLGATHER, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
        CHECK_PICK("cuda-aware mpi", &x, TC_KIND_BROADCAST, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
        CHECK_PICK("cuda-aware mpi", &x, TC_KIND_ALLTOALL, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
        x.ordered = 0; /* any order will do */
        CHECK_PICK("cuda-aware mpi", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
        x.ordered = 1;
        x.node = one_each;
        CHECK_PICK("cuda-aware mpi", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
        CHECK_PICK("cuda-aware mpi", &x, TC_KIND_REDUCESCATTER, TC_FLOAT16, TC_PROD, big,
                   TC_MEM_CUDA);
        x.node = one_node; /* below TCOLL_CUDA_IPC_MIN_KB: IPC takes the larger ones */
        CHECK_PICK("cuda-aware mpi", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_AVG, 64, TC_MEM_CUDA);
        CHECK_PICK("cuda ipc", &x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_AVG, big, TC_MEM_CUDA);
        CHECK_PICK("pairwise exchange", &x, TC_KIND_ALLTOALL, TC_FLOAT32, TC_SUM, big,
                   TC_MEM_HOST); /* host: never */
        x.node = NULL;           /* a table of 65 entries would say the same */
        tp.size = 65; /* more inputs than the combine kernel takes; moving data is fine */
        CHECK_PICK("staged, pipelined", &x, TC_KIND_ALLREDUCE, TC_INT32, TC_SUM, big, TC_MEM_CUDA);
        CHECK_PICK("cuda-aware mpi", &x, TC_KIND_ALLGATHER, TC_FLOAT32, TC_SUM, big, TC_MEM_CUDA);
        tp.size = 1;
        CHECK_PICK("(none)", &x, TC_KIND_BROADCAST, TC_FLOAT32, TC_SUM, 64, TC_MEM_CUDA);
        tp.size = 2;
        x.node = NULL;
        x.cuda_mpi = NULL;
        x.stage_chunk = 0;
    }
}

/* The kind's validate function on a tensor; NULL validate accepts. */
static tc_status_t validate(int kind, tc_dtype_t dtype, int ndim, tc_op_t op, char *why, size_t len)
{
    const tc_kind_desc_t *d = tc__kind_get(kind);
    float data[4] = {0};
    tc_tensor_t t = {data, dtype, ndim, {4}};
    tc_kind_args_t a = {&t, ndim == 0 ? 1 : 4, data, op, 0, NULL, 2};

    why[0] = '\0';
    return d->validate != NULL ? d->validate(&a, why, len) : TC_OK;
}

TC_CASE(validate_args)
{
    char why[256];
    int k;

    /* allreduce: the op, and avg only on floating-point dtypes */
    CHECK_OK(validate(TC_KIND_ALLREDUCE, TC_FLOAT32, 1, TC_SUM, why, sizeof(why)));
    CHECK_OK(validate(TC_KIND_ALLREDUCE, TC_BFLOAT16, 0, TC_AVG, why, sizeof(why)));
    CHECK_OK(validate(TC_KIND_ALLREDUCE, TC_INT64, 1, TC_PROD, why, sizeof(why)));
    CHECK_STATUS(validate(TC_KIND_ALLREDUCE, TC_FLOAT32, 1, (tc_op_t)99, why, sizeof(why)),
                 TC_ERR_ARG);
    CHECK(strcmp(why, "unknown op 99") == 0);
    CHECK_STATUS(validate(TC_KIND_ALLREDUCE, TC_FLOAT32, 1, (tc_op_t)-1, why, sizeof(why)),
                 TC_ERR_ARG);
    CHECK_STATUS(validate(TC_KIND_ALLREDUCE, TC_INT32, 1, TC_AVG, why, sizeof(why)), TC_ERR_ARG);
    CHECK(strcmp(why, "avg needs a floating-point dtype, not int32") == 0);
    CHECK_STATUS(validate(TC_KIND_ALLREDUCE, TC_UINT8, 0, TC_AVG, why, sizeof(why)), TC_ERR_ARG);

    /* allgather: concatenates along dim 0, so needs one; the op is not its */
    CHECK_STATUS(validate(TC_KIND_ALLGATHER, TC_FLOAT32, 0, TC_SUM, why, sizeof(why)), TC_ERR_ARG);
    CHECK_STR_CONTAINS(why, "allgather needs ndim >= 1");
    CHECK_OK(validate(TC_KIND_ALLGATHER, TC_INT8, 1, TC_SUM, why, sizeof(why)));
    CHECK_OK(validate(TC_KIND_ALLGATHER, TC_INT8, 1, (tc_op_t)99, why, sizeof(why)));

    /* broadcast: a scalar is fine, the op is ignored (the root's range is
     * checked at submission, against the job's size) */
    CHECK_OK(validate(TC_KIND_BROADCAST, TC_FLOAT64, 0, (tc_op_t)99, why, sizeof(why)));

    /* a message on every failure */
    for (k = 0; k < TC_KIND_COUNT; k++) {
        if (validate(k, TC_INT32, 0, (tc_op_t)77, why, sizeof(why)) != TC_OK) {
            CHECK(why[0] != '\0');
        }
    }
}

/* tc__request_make for kind; on success the request, else NULL and the
 * status in *st_p. */
static tc_request_t *make(int kind, const tc_tensor_t *t, void *recv, tc_op_t op, int root,
                          tc_status_t *st_p)
{
    static char mark;
    tc_request_t *req = NULL, *sentinel = (tc_request_t *)(void *)&mark, *out = sentinel;

    *st_p = tc__request_make("fn", (tc_kind_t)kind, "x", t, recv, op, root, NULL, NULL, &req, &out);
    if (*st_p != TC_OK) {
        CHECK(out == sentinel); /* untouched */
        CHECK(tc_last_error()[0] != '\0');
        return NULL;
    }
    CHECK(out != sentinel && out != NULL);
    CHECK(req == NULL); /* the caller's handle is set only once queued */
    return out;
}

TC_CASE(request_make)
{
    float x[6] = {1, 2, 3, 4, 5, 6}, y[6];
    tc_tensor_t t = {x, TC_FLOAT32, 2, {2, 3}}, s0 = {x, TC_FLOAT32, 0, {0}};
    tc_tensor_t empty = {NULL, TC_INT32, 2, {4, 0}};
    tc_request_t *req;
    tc_status_t st;
    int k;

    /* how each kind binds its parameters and output */
    req = make(TC_KIND_ALLREDUCE, &t, y, TC_MAX, 3, &st);
    CHECK_OK(st);
    CHECK(req->recv == y && req->send == x);
    CHECK_EQ(req->op, TC_MAX);
    CHECK_EQ(req->root, 0);
    CHECK_EQ(req->count, 6);
    CHECK_EQ(req->ndim, 2);
    CHECK_EQ(req->shape[1], 3);
    tc__request_destroy(req);
    req = make(TC_KIND_BROADCAST, &t, NULL, TC_MAX, 3, &st);
    CHECK_OK(st);
    CHECK(req->recv == x); /* in place */
    CHECK_EQ(req->op, TC_SUM);
    CHECK_EQ(req->root, 3); /* its range is checked against the job's size later */
    tc__request_destroy(req);
    req = make(TC_KIND_ALLGATHER, &t, y, TC_MAX, 3, &st);
    CHECK_OK(st);
    CHECK(req->recv == NULL); /* tcoll allocates the output */
    CHECK_EQ(req->op, TC_SUM);
    CHECK_EQ(req->root, 0);
    tc__request_destroy(req);

    /* the kinds' own checks, with the function and tensor named */
    CHECK(make(TC_KIND_ALLREDUCE, &t, y, (tc_op_t)99, 0, &st) == NULL);
    CHECK_STATUS(st, TC_ERR_ARG);
    CHECK(strcmp(tc_last_error(), "fn: tensor 'x': unknown op 99") == 0);
    CHECK(make(TC_KIND_ALLREDUCE, &(tc_tensor_t){x, TC_INT8, 1, {2}}, y, TC_AVG, 0, &st) == NULL);
    CHECK_STR_CONTAINS(tc_last_error(), "avg needs a floating-point dtype, not int8");
    CHECK(make(TC_KIND_ALLREDUCE, &t, NULL, TC_SUM, 0, &st) == NULL);
    CHECK(strcmp(tc_last_error(), "fn: tensor 'x': recv is NULL") == 0);
    CHECK(make(TC_KIND_ALLGATHER, &s0, NULL, TC_SUM, 0, &st) == NULL);
    CHECK_STR_CONTAINS(tc_last_error(), "fn: tensor 'x': allgather needs ndim >= 1");
    req = make(TC_KIND_BROADCAST, &s0, NULL, (tc_op_t)99, 0, &st);
    CHECK_OK(st);
    CHECK_EQ(req->count, 1);
    tc__request_destroy(req);

    /* the common checks hold for every kind; zero elements need no buffers */
    for (k = 0; k < TC_KIND_COUNT; k++) {
        tc_tensor_t bad = t;
        bad.dtype = (tc_dtype_t)99;
        CHECK(make(k, &bad, y, TC_SUM, 0, &st) == NULL);
        CHECK_STR_CONTAINS(tc_last_error(), "unknown dtype 99");
        bad = t;
        bad.ndim = TC_MAX_DIMS + 1;
        CHECK(make(k, &bad, y, TC_SUM, 0, &st) == NULL);
        bad = t;
        bad.shape[1] = -3;
        CHECK(make(k, &bad, y, TC_SUM, 0, &st) == NULL);
        CHECK_STR_CONTAINS(tc_last_error(), "dimension 1 is negative (-3)");
        bad = t;
        bad.data = NULL;
        CHECK(make(k, &bad, y, TC_SUM, 0, &st) == NULL);
        CHECK_STR_CONTAINS(tc_last_error(), "data is NULL");
        CHECK(make(k, NULL, y, TC_SUM, 0, &st) == NULL);
        req = make(k, &empty, NULL, TC_SUM, 0, &st);
        CHECK_OK(st);
        CHECK_EQ(req->count, 0);
        tc__request_destroy(req);
    }
}

TC_CASE(eager)
{
    const tc_kind_desc_t *d = tc__kind_get(TC_KIND_ALLREDUCE);
    tc_wire_request_t wsum = {.kind = TC_KIND_ALLREDUCE, .dtype = TC_INT32, .op = TC_SUM};
    tc_wire_request_t wavg = {.kind = TC_KIND_ALLREDUCE, .dtype = TC_FLOAT32, .op = TC_AVG};
    tc_wire_request_t wscl = wavg;
    int32_t in[3][4], acc[4];
    float fin[2][2] = {{1, 2}, {3, 5}}, facc[2];
    int q, i;

    CHECK(d->eager_prepare != NULL && d->eager_combine != NULL && d->eager_finish != NULL);
    CHECK(tc__kind_get(TC_KIND_ALLGATHER)->eager_combine == NULL);
    CHECK(tc__kind_get(TC_KIND_BROADCAST)->eager_combine == NULL);
    for (q = 0; q < 3; q++) {
        for (i = 0; i < 4; i++) {
            in[q][i] = q * 10 + i;
        }
    }
    /* sum: fold the inputs one by one; finish changes nothing */
    d->eager_prepare(&wsum, acc, in[0], 4);
    CHECK(memcmp(acc, in[0], sizeof(acc)) == 0); /* no prescale: a copy */
    d->eager_combine(TC_INT32, TC_SUM, acc, in[1], 4);
    d->eager_combine(TC_INT32, TC_SUM, acc, in[2], 4);
    d->eager_finish(&wsum, acc, 4, 3);
    for (i = 0; i < 4; i++) {
        CHECK_EQ(acc[i], 30 + 3 * i);
    }
    /* avg: a sum until finish divides by the number of ranks */
    memcpy(facc, fin[0], sizeof(facc));
    d->eager_combine(TC_FLOAT32, TC_AVG, facc, fin[1], 2);
    CHECK(facc[0] == 4.0f && facc[1] == 7.0f);
    d->eager_finish(&wavg, facc, 2, 2);
    CHECK(facc[0] == 2.0f && facc[1] == 3.5f);
    /* scaled: prepare multiplies by prescale, finish divides, then postscale */
    wscl.scaled = 1;
    wscl.prescale = 2.0;
    wscl.postscale = 0.5;
    d->eager_prepare(&wscl, facc, fin[0], 2);
    CHECK(facc[0] == 2.0f && facc[1] == 4.0f);
    d->eager_combine(TC_FLOAT32, TC_AVG, facc, fin[1], 2); /* 2+3, 4+5 */
    d->eager_finish(&wscl, facc, 2, 2);                    /* /2, *0.5 */
    CHECK(facc[0] == 1.25f && facc[1] == 2.25f);
}

static tc_wire_request_t base_request(int kind)
{
    tc_wire_request_t r;

    memset(&r, 0, sizeof(r));
    r.name = "t";
    r.name_len = 1;
    r.kind = (uint8_t)kind;
    r.dtype = TC_FLOAT32;
    r.op = TC_SUM;
    r.root = 0;
    r.ndim = 2;
    r.shape[0] = 3;
    r.shape[1] = 4;
    return r;
}

/* Rank 1 of 2 submits alt, rank 0 base: the response's text, or NULL (RUN). */
static char *decide(tc_wire_request_t base, tc_wire_request_t alt)
{
    tc_coord_t *c;
    tc_coord_batch_t b;
    char err[256], *text = NULL;

    CHECK_OK(tc__coord_create(2, &c));
    CHECK_OK(coord_add(c, 0, &base, err, sizeof(err)));
    CHECK_OK(coord_add(c, 1, &alt, err, sizeof(err)));
    CHECK_OK(tc__coord_take_ready(c, &b));
    CHECK_EQ(b.count, 1);
    if (b.resps[0].rtype == TC_WIRE_ERROR && b.resps[0].status != TC_ERR_MISMATCH) {
        /* only the removal of set 0 fails when the ranks agree */
        CHECK_EQ(base.kind, TC_KIND_PROCESS_SET_REMOVE);
        CHECK_EQ(b.resps[0].status, TC_ERR_ARG);
    } else if (b.resps[0].rtype == TC_WIRE_ERROR) {
        text = strndup(b.resps[0].text, b.resps[0].text_len);
    } else if (tc__kind_get(base.kind)->output == TC_OUT_GATHERED) {
        CHECK_EQ(b.resps[0].ndim0, 2); /* the plan: each rank's rows */
        CHECK_EQ(b.resps[0].dim0[0], base.shape[0]);
        CHECK_EQ(b.resps[0].dim0[1], alt.shape[0]);
    } else {
        CHECK_EQ(b.resps[0].ndim0, 0);
    }
    tc__coord_batch_free(&b);
    tc__coord_destroy(c);
    return text;
}

TC_CASE(agreement)
{
    int k;

    for (k = 0; k < TC_KIND_COUNT; k++) {
        const tc_kind_desc_t *d = tc__kind_get(k);
        tc_wire_request_t base = base_request(k), alt;
        static const int32_t one = 1;
        char want[128], *text;
        int f;

        CHECK(decide(base, base) == NULL); /* (removing set 0 is refused: not a mismatch) */
        /* a different kind is always a mismatch, reported first */
        alt = base;
        alt.kind = (uint8_t)((k + 1) % TC_KIND_COUNT);
        if (tc__kind_get(alt.kind)->joins) { /* a join first runs what it alone lacks */
            alt.kind = (uint8_t)((k + 2) % TC_KIND_COUNT);
        }
        alt.dtype = TC_INT8;
        text = decide(base, alt);
        if (TC_KIND_COUNT > 1) {
            snprintf(want, sizeof(want),
                     "tensor 't': collective mismatch: rank 0 has %s, rank 1 "
                     "has %s",
                     d->name, tc__kind_name(alt.kind));
            CHECK_MSG(text != NULL && strcmp(text, want) == 0, "got '%s', want '%s'",
                      text ? text : "(RUN)", want);
        }
        free(text);
        /* each field alone */
        for (f = 0; f < TC_AGREE_NFIELDS; f++) {
            static const char *const names[TC_AGREE_NFIELDS] = {
#define NAME(name, text, note) [TC_AGREE_INDEX_##name] = text " mismatch" note ":",
                TC_AGREE_MAP(NAME)
#undef NAME
            };
            unsigned bit = 1u << f;
            alt = base;
            switch (f) {
            case TC_AGREE_INDEX_DTYPE: alt.dtype = TC_FLOAT64; break;
            case TC_AGREE_INDEX_MEMORY: alt.memory = TC_WIRE_MEM_CUDA; break;
            case TC_AGREE_INDEX_OP: alt.op = TC_MAX; break;
            case TC_AGREE_INDEX_ROOT: alt.root = 1; break;
            case TC_AGREE_INDEX_NDIM:
                alt.ndim = 3;
                alt.shape[2] = 1;
                break;
            case TC_AGREE_INDEX_SHAPE: alt.shape[0] = 5; break;      /* dim 0 alone */
            case TC_AGREE_INDEX_SHAPE_TAIL: alt.shape[1] = 5; break; /* dim 1 alone */
            case TC_AGREE_INDEX_SCALE:
                alt.scaled = 1;
                alt.prescale = 1.0;
                alt.postscale = 0.5;
                break;
            case TC_AGREE_INDEX_RANKS:
                alt.nranks = 1;
                alt.ranks = &one;
                break;
            case TC_AGREE_INDEX_TARGET: alt.root = 1; break;
            }
            text = decide(base, alt);
            if (d->agree & bit) {
                snprintf(want, sizeof(want), "tensor 't': %s %s", d->name, names[f]);
                CHECK_MSG(text != NULL && strncmp(text, want, strlen(want)) == 0,
                          "kind %s field %d: got '%s', want '%s...'", d->name, f,
                          text ? text : "(RUN)", want);
            } else if (f == TC_AGREE_INDEX_ROOT && (d->agree & TC_AGREE_TARGET)) {
                CHECK_MSG(text != NULL && strstr(text, " process set mismatch") != NULL,
                          "kind %s field %d: got '%s'", d->name, f, text ? text : "(RUN)");
            } else if (f == TC_AGREE_INDEX_TARGET && (d->agree & TC_AGREE_ROOT)) {
                /* the target is carried as the root */
                CHECK_MSG(text != NULL && strstr(text, " root mismatch") != NULL,
                          "kind %s field %d: got '%s'", d->name, f, text ? text : "(RUN)");
            } else if ((f == TC_AGREE_INDEX_NDIM || f == TC_AGREE_INDEX_SHAPE_TAIL) &&
                       !(d->params & TC_PARAM_NONE_TENSOR)) {
                /* outside the mask, a changed ndim or dim 1 is still caught
                 * by the kind's shape rule */
                CHECK_MSG(text != NULL && strstr(text, " shape mismatch") != NULL,
                          "kind %s field %d: got '%s'", d->name, f, text ? text : "(RUN)");
            } else {
                CHECK_MSG(text == NULL, "kind %s field %d is not in its mask: got '%s'", d->name, f,
                          text);
            }
            free(text);
        }
    }
    /* a kind out of range is a protocol violation that changes nothing */
    {
        tc_coord_t *c;
        tc_wire_request_t r = base_request(0);
        char err[256];
        r.kind = TC_KIND_COUNT;
        CHECK_OK(tc__coord_create(2, &c));
        CHECK_STATUS(coord_add(c, 0, &r, err, sizeof(err)), TC_ERR_ARG);
        CHECK_STR_CONTAINS(err, "unknown kind");
        CHECK_EQ(tc__coord_pending(c), 0);
        tc__coord_destroy(c);
    }
}

int main(int argc, char **argv)
{
    return tc_test_main(argc, argv, NULL);
}
