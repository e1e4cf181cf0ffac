/*
 * timeline_job.h - the engine's side of the timeline (see timeline_job.c):
 * the public tc_timeline_start/stop over the util layer's writer
 * (util/timeline.h), and the job-wide timeline that rank 0 gathers over MPI
 * when the engine stops.
 */
#ifndef TC_ENGINE_TIMELINE_JOB_H
#define TC_ENGINE_TIMELINE_JOB_H

#include <mpi.h>
#include <stddef.h>

#include "tcoll.h"
#include "util/config.h"

/* Starts this rank's timeline to path for rank of size ranks, as
 * tc_timeline_start does: a file per rank for a path with "%r" (or when
 * size is 1), else this rank's part of the job-wide file, refused with
 * TC_ERR_STATE once tc__tl_job_finish has run. err (when not NULL) says why
 * on failure. The engine thread calls it for TCOLL_TIMELINE; any thread. */
tc_status_t tc__tl_job_start(const char *path, int rank, int size, char *err, size_t errlen);

/* tc_init, before the engine starts: a new run may record a part of a
 * job-wide timeline again (tc__tl_job_finish closed the last run's). */
void tc__tl_job_reopen(void);

/*
 * The engine thread, once, after the engine's last event and before it
 * frees comm (its control communicator): stops this rank's timeline and,
 * collectively over comm (every rank calls it; usable is 0 where the engine
 * stopped after a failure, and such a rank takes no part), gathers the
 * ranks' parts of a job-wide timeline into one file on rank 0. Bounded by
 * TCOLL_SHUTDOWN_TIMEOUT_S. TC_OK, or TC_ERR_TIMEOUT / TC_ERR_TRANSPORT
 * with why when the exchange failed: MPI requests are then left pending, so
 * the caller must skip MPI's teardown.
 */
tc_status_t tc__tl_job_finish(MPI_Comm comm, int rank, int size, int usable, const tc_config_t *cfg,
                              char *why, size_t len);

#endif
