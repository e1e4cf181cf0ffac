/*
 * api_group.c - grouped submissions (tc_grouped_allreduce, _allgather,
 * _reducescatter): several named tensors submitted as one unit.
 *
 * Every member is checked as its single call would check it; one bad
 * member refuses the whole group (TC_ERR_ARG or another immediate error),
 * and nothing is queued. The members then carry the group (its first
 * member's name as the key, their count, their place) to rank 0, which
 * runs them together or fails them together (coordinator.c). Grouped names
 * are never cached: each group is negotiated in full.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "kind/kind.h"
#include "util/status.h"

static tc_status_t submit_group(const char *fn, tc_kind_t kind, int count,
                                const char *const names[], const tc_tensor_t sends[],
                                void *const recvs[], tc_op_t op, const tc_opts_t *opts,
                                tc_request_t *reqs_p[])
{
    tc_request_t **reqs;
    tc_status_t st = TC_OK;
    int i, k;

    tc__clear_error();
    if (count < 1 || (unsigned)count > TC_WIRE_MAX_GROUP) {
        return tc__set_error(TC_ERR_ARG, "%s: count %d is not in 1..%u", fn, count,
                             TC_WIRE_MAX_GROUP);
    }
    if (names == NULL || sends == NULL || reqs_p == NULL ||
        (kind == TC_KIND_ALLREDUCE && recvs == NULL)) {
        return tc__set_error(TC_ERR_ARG, "%s: %s is NULL", fn,
                             names == NULL    ? "names"
                             : sends == NULL  ? "sends"
                             : reqs_p == NULL ? "reqs"
                                              : "recvs");
    }
    reqs = calloc((size_t)count, sizeof(*reqs));
    if (reqs == NULL) {
        return tc__set_error(TC_ERR_NOMEM, "%s: out of memory", fn);
    }
    for (i = 0; i < count && st == TC_OK; i++) {
        tc_request_t *dummy;
        st = tc__request_make(fn, kind, names[i], &sends[i], recvs != NULL ? recvs[i] : NULL, op, 0,
                              NULL, opts, &dummy, &reqs[i]);
        if (st == TC_OK) {
            reqs[i]->group_key = strdup(names[0]);
            if (reqs[i]->group_key == NULL) {
                st = tc__set_error(TC_ERR_NOMEM, "%s: out of memory", fn);
                continue;
            }
            reqs[i]->group_key_len = reqs[0]->name_len;
            reqs[i]->group_size = (uint32_t)count;
            reqs[i]->group_index = (uint32_t)i;
        }
    }
    if (st != TC_OK) {
        for (k = 0; k < count; k++) {
            tc__request_destroy(reqs[k]);
        }
        free(reqs);
        return st;
    }
    st = tc__queue_submit_all(fn, reqs, count);
    if (st == TC_OK) {
        memcpy(reqs_p, reqs, (size_t)count * sizeof(*reqs));
    }
    free(reqs);
    return st;
}

tc_status_t tc_grouped_allreduce(int count, const char *const names[], const tc_tensor_t sends[],
                                 void *const recvs[], tc_op_t op, const tc_opts_t *opts,
                                 tc_request_t *reqs[])
{
    return submit_group("tc_grouped_allreduce", TC_KIND_ALLREDUCE, count, names, sends, recvs, op,
                        opts, reqs);
}

tc_status_t tc_grouped_allgather(int count, const char *const names[], const tc_tensor_t sends[],
                                 const tc_opts_t *opts, tc_request_t *reqs[])
{
    return submit_group("tc_grouped_allgather", TC_KIND_ALLGATHER, count, names, sends, NULL,
                        TC_SUM, opts, reqs);
}

tc_status_t tc_grouped_reducescatter(int count, const char *const names[],
                                     const tc_tensor_t sends[], tc_op_t op, const tc_opts_t *opts,
                                     tc_request_t *reqs[])
{
    return submit_group("tc_grouped_reducescatter", TC_KIND_REDUCESCATTER, count, names, sends,
                        NULL, op, opts, reqs);
}
