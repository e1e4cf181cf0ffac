/*
 * request.h - the request object behind tc_request_t.
 *
 * Written by the submitting thread before it is queued (the immutable part)
 * and by the engine thread before it publishes completion (the result part);
 * after `done` is set the engine never touches the request again, so the
 * application may free it at once.
 */
#ifndef TC_EXEC_REQUEST_H
#define TC_EXEC_REQUEST_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda/cuda.h"
#include "kind/kind.h"
#include "tcoll.h"
#include "wire/wire.h"

struct tc_request {
    /* Immutable after submission. */
    struct tc_request *next; /* submission queue link, guarded by the engine mutex */
    char *name;              /* NUL-terminated copy */
    uint32_t name_len;
    tc_kind_t kind;
    tc_dtype_t dtype;
    tc_op_t op;
    int root;       /* a global rank (or, process_set_remove, the set removed) */
    int root_index; /* root's place in the process set: what the algorithm takes */
    uint32_t pset;  /* the process set (tc_opts_t.process_set) */
    int *set_ranks; /* process_set_add: the new set's ranks, ascending (owned) */
    int nset_ranks;
    int ndim;
    int64_t shape[TC_MAX_DIMS];
    size_t count;               /* elements */
    double prescale, postscale; /* tc_opts_t's: 1 when the call has none */
    uint64_t submit_ns;         /* when it was queued (tc__now_ns), for the timeline */
    uint64_t seq;               /* its place among this rank's queued requests (after_earlier) */
    const void *send;           /* allreduce/allgather input */
    void *recv;                 /* allreduce output, broadcast buffer */
    struct {                    /* a tensor in CUDA device memory (tc_opts_t.device) */
        int on;                 /* 0: host memory (and the rest unused) */
        int dev;                /* the device: send, recv and output are its memory */
        tc_cuda_mark_t *mark;   /* the stream's work at submission (released once read) */
        void *stream;           /* that stream (tc_opts_t.cuda_stream): the output's free
                                 * waits for its work */
        void *output;           /* the device output tcoll allocated, freed with the request */
        int failed_alone;       /* its run failed, but only this tensor: the collective ended
                                 * alike on every rank of the set (a status exchange said so),
                                 * or had ended before this rank's own last step failed; the
                                 * engine goes on (exec.c) */
    } cuda;

    /* Result: written by the engine thread, then published by `done`. */
    tc_status_t status;
    char *error; /* NULL on success */
    tc_tensor_t output;
    char *group_key; /* tc_grouped_*: the first member's name (owned), or NULL */
    uint32_t group_key_len, group_size, group_index;
    int64_t *splits; /* alltoall: rows to each rank (n), NULL: dim 0 / n each */
    int nsplits;
    int64_t *out_splits; /* allgather, alltoall: rows from each rank (n), once done */
    int nout_splits;
    int32_t value;              /* join: the rank that joined last (the output points here) */
    int synthetic;              /* made by the engine for a rank that joined: no one waits for it */
    void *owned_output;         /* allgather output, returned to the pool with the request */
    size_t owned_cap;           /* its capacity in bytes */
    int fast;                   /* taken by the small-message path (fast.c): never queued */
    int fast_id;                /* its name's id there */
    uint64_t fast_use;          /* and its use of the name (1, 2, ...) */
    uint64_t fast_epoch;        /* this rank's joins submitted (global set) when it was */
    const struct tc_algo *algo; /* the algorithm record its run chose (algo.h): the
                                 * timeline's label; NULL before it ran */
    const char *label;          /* what carried it out, once it ran (the record's name, its
                                 * fused name, or the small-message path's): a static string,
                                 * read by tc_request_algorithm; NULL until then */
    _Atomic int done;           /* 0 -> 1 once, release by the engine (tc__request_complete),
                         * acquire by tc_test/tc_wait before reading the result */
};

/* Engine thread: records the result and wakes waiters. msg may be NULL. After
 * this call the engine must not touch req. */
void tc__request_complete(tc_request_t *req, tc_status_t status, const char *msg);

/* Engine thread, before completing req with TC_OK: its output is data, with
 * req's dtype and shape, except dim 0 when dim0 >= 0 (an allgather's rows). */
void tc__request_set_output(tc_request_t *req, void *data, int64_t dim0);

/* Output buffers: large allgather outputs are kept in a small pool when their
 * request is freed and reused by later allgathers, so a training loop does not
 * map (and page-fault) a fresh buffer on every call. Thread-safe. */
void *tc__output_alloc(size_t bytes, size_t *cap_p);
void tc__output_release(void *buf, size_t cap);
/* Frees every pooled buffer (tc_shutdown). */
void tc__output_pool_drain(void);

/* Whether req has completed (acquire: its result is visible then); and
 * sleeping until it has (the completion's condition variable). */
int tc__request_done(const tc_request_t *req);
void tc__request_sleep(const tc_request_t *req);

/* Frees a request that was never handed to the user. */
void tc__request_destroy(tc_request_t *req);

/* The descriptor of a request's kind (checked at submission). */
static inline const tc_kind_desc_t *tc__kind_of(const tc_request_t *req)
{
    return tc__kind_get((int)req->kind);
}

#endif
