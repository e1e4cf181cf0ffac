/*
 * request_api.c - the public calls on a request (tcoll.h): waiting for it,
 * testing it, reading its result, freeing it. Any application thread. A
 * request of the small-message path is completed by the thread that waits
 * for it (fast.c); every other one by the engine thread.
 */
#define _GNU_SOURCE
#include "exec/exec.h"

#include "util/backoff.h"
#include "util/config.h"
#include "util/status.h"

#include <stdlib.h>

static int is_done(const tc_request_t *req)
{
    return tc__request_done(req);
}

tc_status_t tc_wait(tc_request_t *req)
{
    if (req == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_wait: request is NULL");
    }
    if (req->fast && !is_done(req)) {
        tc__fast_wait(req); /* this thread completes it (fast.c) */
    }
    if (!is_done(req)) {
        /* Spin and yield briefly (small collectives finish within that),
         * then sleep on the condition variable. */
        tc_backoff_t bo;
        tc__backoff_init(&bo, (uint32_t)tc__config()->spin, 1);
        while (!is_done(req) && tc__backoff_next(&bo) == 0) {
        }
    }
    if (!is_done(req)) {
        tc__request_sleep(req);
    }
    if (req->status != TC_OK) {
        tc__set_error(req->status, "%s", req->error != NULL ? req->error : "");
    }
    return req->status;
}

tc_status_t tc_test(tc_request_t *req, int *done_p)
{
    if (req == NULL || done_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_test: %s is NULL", req == NULL ? "request" : "done_p");
    }
    if (!is_done(req) && !(req->fast && tc__fast_progress(req))) {
        *done_p = 0;
        return TC_OK;
    }
    *done_p = 1;
    if (req->status != TC_OK) {
        tc__set_error(req->status, "%s", req->error != NULL ? req->error : "");
    }
    return req->status;
}

const char *tc_request_error(const tc_request_t *req)
{
    if (req == NULL || !is_done(req) || req->error == NULL) {
        return "";
    }
    return req->error;
}

const char *tc_request_algorithm(const tc_request_t *req)
{
    if (req == NULL || !is_done(req) || req->status != TC_OK) {
        return NULL;
    }
    return req->label;
}

tc_status_t tc_request_output(const tc_request_t *req, tc_tensor_t *out_p)
{
    if (req == NULL || out_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_request_output: %s is NULL",
                             req == NULL ? "request" : "out_p");
    }
    if (!is_done(req)) {
        return tc__set_error(TC_ERR_STATE, "tc_request_output: tensor '%s' has not completed",
                             req->name);
    }
    if (req->status != TC_OK) {
        return tc__set_error(req->status, "%s", req->error != NULL ? req->error : "");
    }
    *out_p = req->output;
    return TC_OK;
}

tc_status_t tc_request_splits(const tc_request_t *req, const int64_t **splits_p, int *count_p)
{
    if (req == NULL || splits_p == NULL || count_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_request_splits: %s is NULL",
                             req == NULL        ? "request"
                             : splits_p == NULL ? "splits_p"
                                                : "count_p");
    }
    if (!is_done(req)) {
        return tc__set_error(TC_ERR_STATE, "tc_request_splits: tensor '%s' has not completed",
                             req->name);
    }
    if (req->status != TC_OK) {
        return tc__set_error(req->status, "%s", req->error != NULL ? req->error : "");
    }
    if (req->out_splits == NULL) {
        return tc__set_error(TC_ERR_ARG,
                             "tc_request_splits: tensor '%s' is not an alltoall or "
                             "an allgather",
                             req->name);
    }
    *splits_p = req->out_splits;
    *count_p = req->nout_splits;
    return TC_OK;
}

tc_status_t tc_request_last_joined(const tc_request_t *req, int *rank_p)
{
    if (req == NULL || rank_p == NULL) {
        return tc__set_error(TC_ERR_ARG, "tc_request_last_joined: %s is NULL",
                             req == NULL ? "request" : "rank_p");
    }
    if (req->kind != TC_KIND_JOIN) {
        return tc__set_error(TC_ERR_ARG, "tc_request_last_joined: '%s' is a %s, not a join",
                             req->name, tc__kind_name((int)req->kind));
    }
    if (!is_done(req)) {
        return tc__set_error(TC_ERR_STATE, "tc_request_last_joined: '%s' has not completed",
                             req->name);
    }
    if (req->status != TC_OK) {
        return tc__set_error(req->status, "%s", req->error != NULL ? req->error : "");
    }
    *rank_p = req->value;
    return TC_OK;
}

void tc_request_free(tc_request_t *req)
{
    if (req == NULL) {
        return;
    }
    (void)tc_wait(req);
    tc__request_destroy(req);
}
