/*
 * shm.c - the engine's side of the node's shared-memory segment: making it
 * when tcoll starts (after the communicators), deciding where the
 * shared-memory collectives may run, and unmapping it at the end.
 *
 * The segment is made whenever TCOLL_SHM is not off and this node has more
 * than one rank. If it cannot be made, local rank 0 logs why (one warning
 * per node) and every collective runs over MPI: shared memory is never a
 * reason to fail the job. The shared-memory allreduce runs for the global
 * process set when every rank of the job is on this node (TCOLL_SHM and
 * TCOLL_ALLREDUCE_ALGO are the same on every rank, tc_init checks, so every
 * rank makes the same choice). Engine thread only.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "transport/shm_setup.h"
#include "util/log.h"

void tc__shm_setup(engine_t *e, int local_rank, int local_size)
{
    const tc_config_t *cfg = e->cfg;
    char why[512] = "";
    tc_status_t st;

    memset(&e->shm, 0, sizeof(e->shm));
    e->shm.single_node = local_size == e->size;
    if (cfg->shm == TC_SHM_OFF || local_size < 2) {
        TC_INFO("shm", "no shared-memory segment (%s)",
                cfg->shm == TC_SHM_OFF ? "TCOLL_SHM=off" : "one rank on this node");
        return;
    }
    st = tc__shm_seg_open(e->mpi.local, cfg->shm, (size_t)cfg->shm_slot_kb * 1024,
                          cfg->shm_slots, &e->shm.seg, why, sizeof(why));
    if (st != TC_OK) {
        if (local_rank == 0) {
            TC_WARN("shm", "no shared memory on this node (%s): collectives run over MPI", why);
        }
        return;
    }
    e->shm.coll.seg = &e->shm.seg;
    e->shm.coll.wait = &e->mpi.tp_mpi.wait;
    e->shm.coll.ranks = NULL; /* single node: local index = global rank (split keeps order) */
    e->shm.coll.seq = 0;
    e->shm.coll.cma_from = cfg->allreduce_algo == TC_ALGO_CMA   ? 0
                           : cfg->allreduce_algo == TC_ALGO_SHM ? SIZE_MAX
                                                                : (size_t)cfg->shm_direct_kb * 1024;
    if (tc__scratch_reserve(&e->shm.coll.bounce, 64 * 1024) != TC_OK) {
        e->shm.coll.cma_from = SIZE_MAX;
    }
    TC_INFO("shm", "%s segment of %zu bytes: %d local ranks x %d slots x %zu bytes; direct "
            "reads (process_vm_readv) %s; allreduce of the global set: %s", e->shm.seg.method,
            e->shm.seg.bytes, local_size, cfg->shm_slots, e->shm.seg.slot_bytes,
            e->shm.seg.cma ? "work" : "refused here",
            tc__shm_for(e, 0) == NULL ? "ring (ranks on other nodes, or TCOLL_ALLREDUCE_ALGO=ring)"
            : !e->shm.seg.cma || e->shm.coll.cma_from == SIZE_MAX ? "shm"
            : e->shm.coll.cma_from == 0 ? "cma" : "shm, and cma from TCOLL_SHM_DIRECT_KB up");
}

void tc__shm_teardown(engine_t *e)
{
    tc__shm_seg_close(&e->shm.seg); /* local: safe after a failure too */
    tc__scratch_free(&e->shm.coll.bounce);
}

tc_shm_coll_t *tc__shm_for(engine_t *e, uint32_t pset)
{
    if (pset != 0 || e->shm.seg.base == NULL || !e->shm.single_node ||
        e->cfg->allreduce_algo == TC_ALGO_RING) {
        return NULL;
    }
    return &e->shm.coll;
}
