/*
 * timeline_job.c - the engine's side of the timeline: the public
 * tc_timeline_start/stop. The writer itself (util/timeline.c) knows no
 * engine; this file asks the engine for the rank and hands it down.
 */
#include "engine/timeline_job.h"

#include "util/status.h"
#include "util/timeline.h"

tc_status_t tc__tl_job_start(const char *path, int rank, int size, char *err, size_t errlen)
{
    (void)size;
    return tc__tl_start(path, rank, err, errlen);
}

tc_status_t tc_timeline_start(const char *path)
{
    char err[TC_ERRMSG_MAX];
    tc_status_t st;
    int rank;

    tc__clear_error();
    if (path == NULL || path[0] == '\0') {
        return tc__set_error(TC_ERR_ARG, "tc_timeline_start: path is %s",
                             path == NULL ? "NULL" : "empty");
    }
    rank = tc_rank();
    if (rank < 0) {
        return tc__set_error(TC_ERR_STATE, "tc_timeline_start: tcoll is not initialized "
                                           "(the file is named and marked by the rank)");
    }
    st = tc__tl_job_start(path, rank, tc_size(), err, sizeof(err));
    if (st != TC_OK) {
        return tc__set_error(st, "tc_timeline_start: %s", err);
    }
    return TC_OK;
}

tc_status_t tc_timeline_stop(void)
{
    char err[TC_ERRMSG_MAX];
    tc_status_t st;

    tc__clear_error();
    st = tc__tl_stop_err(err, sizeof(err));
    if (st != TC_OK) {
        return tc__set_error(st, "tc_timeline_stop: %s", err);
    }
    return TC_OK;
}
