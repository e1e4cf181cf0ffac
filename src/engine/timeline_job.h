/*
 * timeline_job.h - the engine's side of the timeline: the public
 * tc_timeline_start/stop (which need the engine's rank) over the util
 * layer's writer (util/timeline.h).
 */
#ifndef TC_ENGINE_TIMELINE_JOB_H
#define TC_ENGINE_TIMELINE_JOB_H

#include <stddef.h>

#include "tcoll.h"

/* Starts this rank's timeline to path for rank of size ranks, as
 * tc_timeline_start does; err (when not NULL) says why on failure. The
 * engine thread calls it for TCOLL_TIMELINE. */
tc_status_t tc__tl_job_start(const char *path, int rank, int size, char *err, size_t errlen);

#endif
