/*
 * agree.h - the check, at tc_init, that the knobs which must have the same
 * value on every rank do.
 */
#ifndef TC_ENGINE_AGREE_H
#define TC_ENGINE_AGREE_H

#include <mpi.h>
#include <stddef.h>

#include "tcoll.h"
#include "util/config.h"

/* Compares cfg's must-agree knobs (util/config.h) with every other rank's
 * over comm, with one MPI_Allgather. Returns TC_OK when they agree;
 * TC_ERR_ARG when one differs, with the same message on every rank naming
 * each such knob, its values and the ranks that have them; TC_ERR_TRANSPORT
 * when the exchange failed. comm must have MPI_ERRORS_RETURN set.
 * Collective over comm; called by the engine thread only. */
tc_status_t tc__knobs_agree(MPI_Comm comm, const tc_config_t *cfg, char *msg, size_t len);

#endif
