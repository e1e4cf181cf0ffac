/*
 * algo_control.c - the kinds that move no data: barrier, join, and the
 * process set calls. Each has one record (its name is the timeline's
 * label) and a run that only sets the request's output, or changes the
 * engine's table of process sets at the point of the order every rank
 * agreed on (pset.c).
 */
#define _GNU_SOURCE
#include "exec/algo.h"

#include <stdio.h>

#include "exec/pset.h"

static const tc_algo_t barrier_algo = {"negotiation (every rank reached it)",
                                       NULL,
                                       TC_MEM_HOST,
                                       TC_ALGO_OVER_NONE,
                                       NULL,
                                       {.allreduce = NULL}};
static const tc_algo_t join_algo = {"negotiation (every rank joined)",
                                    NULL,
                                    TC_MEM_HOST,
                                    TC_ALGO_OVER_NONE,
                                    NULL,
                                    {.allreduce = NULL}};
static const tc_algo_t set_add_algo = {"process set creation", NULL, TC_MEM_HOST,
                                       TC_ALGO_OVER_NONE,      NULL, {.allreduce = NULL}};
static const tc_algo_t set_remove_algo = {"process set removal", NULL, TC_MEM_HOST,
                                          TC_ALGO_OVER_NONE,     NULL, {.allreduce = NULL}};

static const tc_algo_t *const barrier_records[] = {&barrier_algo};
static const tc_algo_t *const join_records[] = {&join_algo};
static const tc_algo_t *const set_add_records[] = {&set_add_algo};
static const tc_algo_t *const set_remove_records[] = {&set_remove_algo};

/* Every rank submitted it (that is what running it means): nothing is left
 * to do but wait for this rank's earlier requests (kind.h, after_earlier). */
static tc_status_t barrier_run(const tc_algo_ctx_t *x, tc_request_t *req,
                               const tc_wire_response_t *r, char *msg, size_t len)
{
    (void)x;
    (void)r;
    (void)msg;
    (void)len;
    req->algo = &barrier_algo;
    tc__request_set_output(req, NULL, -1);
    return TC_OK;
}

/* The output of a valued kind: rank 0's value, a 0-dim int32. */
static tc_status_t set_value(tc_request_t *req, const tc_wire_response_t *r, char *msg, size_t len)
{
    if (!r->has_value) {
        snprintf(msg, len, "protocol error: rank 0 completed '%s' without its value", req->name);
        return TC_ERR_TRANSPORT;
    }
    req->value = r->value;
    req->dtype = TC_INT32;
    req->ndim = 0;
    tc__request_set_output(req, &req->value, -1);
    return TC_OK;
}

/* Every rank joined (that is what running it means); rank 0's response says
 * which joined last. */
static tc_status_t join_run(const tc_algo_ctx_t *x, tc_request_t *req, const tc_wire_response_t *r,
                            char *msg, size_t len)
{
    (void)x;
    req->algo = &join_algo;
    return set_value(req, r, msg, len);
}

static tc_status_t set_add_run(const tc_algo_ctx_t *x, tc_request_t *req,
                               const tc_wire_response_t *r, char *msg, size_t len)
{
    tc_status_t st = set_value(req, r, msg, len); /* the new set's id */

    req->algo = &set_add_algo;
    return st != TC_OK ? st : tc__pset_run_add(x->exec, req, r, msg, len);
}

static tc_status_t set_remove_run(const tc_algo_ctx_t *x, tc_request_t *req,
                                  const tc_wire_response_t *r, char *msg, size_t len)
{
    req->algo = &set_remove_algo;
    tc__request_set_output(req, NULL, -1);
    return tc__pset_run_remove(x->exec, req, r, msg, len);
}

const tc_kind_exec_t tc__exec_barrier = {barrier_run, barrier_records, 1};
const tc_kind_exec_t tc__exec_join = {join_run, join_records, 1};
const tc_kind_exec_t tc__exec_process_set_add = {set_add_run, set_add_records, 1};
const tc_kind_exec_t tc__exec_process_set_remove = {set_remove_run, set_remove_records, 1};
