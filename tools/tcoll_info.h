/*
 * tcoll_info.h - what tcoll-info's files share: each rank's record, the
 * hardware of rank 0's node, and everything rank 0 prints (tcoll_info.c),
 * and the shared-memory part (tcoll_info_shm.c: the node's segment made as
 * tc_init would, and the allreduce record the selector would pick).
 */
#ifndef TCOLL_INFO_H
#define TCOLL_INFO_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "util/config.h"

/* What each rank tells rank 0 about where it runs. */
typedef struct {
    int leader; /* world rank of local rank 0 on this rank's node */
    int local_size;
    char host[MPI_MAX_PROCESSOR_NAME];
    /* the node's shared-memory segment, made and unmapped once here as
     * tc_init would (TCOLL_SHM): ok 1 with its method and size, 0 with why,
     * -1 not tried (off, or one rank on the node) */
    int shm_ok;
    char shm_method[8];
    uint64_t shm_bytes;
    uint64_t shm_cell; /* data bytes of a point-to-point mailbox cell (0: none) */
    int shm_cma;       /* the node's ranks can read each other's memory directly */
    char shm_why[200];
} rank_rec_t;

/* The hardware of rank 0's node. */
typedef struct {
    int ok;
    int packages, cores, pus, numa;
    char allowed[256]; /* CPUs this process may use, hwloc list syntax */
    char bound[256];   /* its current binding, or "" */
} hw_t;

/* Everything rank 0 prints. */
typedef struct {
    int size;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int mpi_version, mpi_subversion;
    rank_rec_t *recs; /* [size] */
    uint64_t *hashes; /* [size][nknobs] */
    size_t nknobs;
    tc_knob_desc_t *knobs; /* [nknobs], rank 0's */
    hw_t hw;
} info_t;

/* Makes and unmaps the node's segment as tc_init would (collective over
 * local); the outcome in rec. */
void tc_info_shm_try(MPI_Comm local, rank_rec_t *rec);

/* The shared-memory lines: one per node, then the global set's allreduce. */
void tc_info_print_shm(FILE *f, const info_t *in);

#endif
