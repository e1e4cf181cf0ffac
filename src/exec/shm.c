/*
 * shm.c - the engine's side of the node's shared-memory segment: making it
 * when tcoll starts (after the communicators), deciding where the
 * shared-memory and hierarchical collectives may run, and letting it all go
 * at the end.
 *
 * The segment is made whenever TCOLL_SHM is not off and this node (a real
 * one, or a pretend one: TCOLL_RANKS_PER_NODE) has more than one rank. If it
 * cannot be made, local rank 0 logs why (one warning per node) and the
 * collectives run over MPI: shared memory is never a reason to fail the job.
 * Where they run:
 *   - one node: the global process set's allreduce through the segment
 *     (shm, or cma for large buffers where process_vm_readv works);
 *   - several nodes: the hierarchical allreduce (coll/hier_allreduce.c), if
 *     every node with two or more ranks has its segment (all ranks agree,
 *     so all choose the same); the leaders (local rank 0 of each node) get
 *     an MPI transport of their own (over their own communicator).
 * TCOLL_SHM, TCOLL_RANKS_PER_NODE and TCOLL_ALLREDUCE_ALGO are the same on
 * every rank (tc_init checks), so every rank makes the same choices.
 * Engine thread only.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "transport/shm_setup.h"
#include "util/log.h"

/* The world rank of every local rank, for messages and probes. */
static int map_local_ranks(tc_exec_t *e, int local_size)
{
    e->shm.local_ranks = malloc((size_t)local_size * sizeof(int));
    return e->shm.local_ranks != NULL && MPI_Allgather(&e->rank, 1, MPI_INT, e->shm.local_ranks, 1,
                                                       MPI_INT, e->mpi.local) == MPI_SUCCESS;
}

#define LEADERS_TAG 0x7c3 /* MPI_Comm_create_group's tag for the leaders' communicator */

/* Several nodes: the leaders' transport (over a communicator of their own),
 * if every node can run its part (agreed over every rank). */
static void hier_setup(tc_exec_t *e, int local_rank, int local_size)
{
    const tc_config_t *cfg = e->cfg;
    eng_pset_t *l = &e->shm.leaders;
    int ok = local_size < 2 || e->shm.seg.base != NULL, all = 0, mine, *leader_of = NULL, r;

    l->index = -1;
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, e->mpi.ctrl) != MPI_SUCCESS || !all) {
        if (e->rank == 0) {
            TC_INFO("shm", "no hierarchical allreduce: a node has no shared-memory segment");
        }
        return;
    }
    /* the leaders, ascending: every rank says whether it leads its node */
    mine = local_rank == 0 ? e->rank : -1;
    leader_of = malloc((size_t)e->size * sizeof(int));
    l->ranks = malloc((size_t)e->size * sizeof(int));
    ok = leader_of != NULL && l->ranks != NULL &&
         MPI_Allgather(&mine, 1, MPI_INT, leader_of, 1, MPI_INT, e->mpi.ctrl) == MPI_SUCCESS;
    l->n = 0;
    for (r = 0; ok && r < e->size; r++) {
        if (leader_of[r] >= 0) {
            l->index = leader_of[r] == e->rank ? l->n : l->index;
            l->ranks[l->n++] = leader_of[r];
        }
    }
    free(leader_of);
    l->x = e;
    if (ok && l->index >= 0 &&
        tc__transport_mpi_open(&l->tp, &l->tp_mpi, e->mpi.tp_mpi.comm, l->ranks, l->n, LEADERS_TAG,
                               (uint32_t)cfg->spin, (uint32_t)cfg->backoff_max_us) != TC_OK) {
        TC_WARN("shm", "the leaders' transport: %s", l->tp.err);
        ok = 0;
    }
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, e->mpi.ctrl) != MPI_SUCCESS || !all) {
        TC_WARN("shm", "setting up the nodes' leaders failed: no hierarchical allreduce");
        tc__transport_close(&l->tp); /* nothing if it never opened */
        free(l->ranks);
        l->ranks = NULL;
        l->index = -1;
        return;
    }
    if (l->index >= 0) {
        tc__exec_arm(e, &l->tp, l);
    }
    e->shm.hier.node = e->shm.seg.base != NULL ? &e->shm.coll : NULL;
    e->shm.hier.leaders = l->index >= 0 ? &l->tp : NULL;
    e->shm.hier.world_size = e->size;
    e->shm.hier.chunk_bytes = (size_t)cfg->ring_chunk_kb * 1024;
    e->shm.hier.ordered = cfg->deterministic;
    e->shm.hier.scratch = &e->run.scratch;
    e->shm.hier.err = e->shm.hier_err;
    e->shm.hier.errlen = sizeof(e->shm.hier_err);
    e->shm.hier_ok = 1;
}

/* The global set's node table (coll.h): the lowest rank on every rank's
 * node, agreed by every rank; NULL (everyone alike) if that failed, which
 * only changes the order to that of one node. Collective over every rank. */
void tc__node_table(tc_exec_t *e)
{
    int first = e->rank, ok, all = 0;

    e->mpi.node_of = malloc((size_t)e->size * sizeof(int));
    ok = e->mpi.node_of != NULL &&
         MPI_Allreduce(&e->rank, &first, 1, MPI_INT, MPI_MIN, e->mpi.local) == MPI_SUCCESS &&
         MPI_Allgather(&first, 1, MPI_INT, e->mpi.node_of, 1, MPI_INT, e->mpi.ctrl) == MPI_SUCCESS;
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, e->mpi.ctrl) != MPI_SUCCESS || !all) {
        TC_WARN("shm", "learning which ranks share a node failed: reductions combine in "
                       "the order of one node");
        free(e->mpi.node_of);
        e->mpi.node_of = NULL;
    }
}

void tc__node_table_free(tc_exec_t *e)
{
    free(e->mpi.node_of);
    e->mpi.node_of = NULL;
}

/* The small-message path on every rank of the node or on none: a rank that
 * could not start it (out of memory) turns it off everywhere. */
static void fast_start(tc_exec_t *e)
{
    int ok = tc__fast_start(e) == 0, all = 0;

    if (!e->shm.single_node || e->shm.seg.base == NULL) {
        return; /* the same answer on every rank: off (fast.c) */
    }
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, e->mpi.ctrl) != MPI_SUCCESS || !all) {
        tc__fast_stop(e);
        if (e->rank == 0) {
            TC_WARN("shm", "no small-message path: a rank is out of memory for its tables");
        }
    }
}

void tc__shm_setup(tc_exec_t *e, int local_rank, int local_size)
{
    const tc_config_t *cfg = e->cfg;
    char why[512] = "";
    tc_status_t st = TC_ERR_STATE;

    memset(&e->shm, 0, sizeof(e->shm));
    e->shm.leaders.index = -1;
    e->shm.single_node = local_size == e->size;
    if (cfg->shm == TC_SHM_OFF || local_size < 2) {
        TC_INFO("shm", "no shared-memory segment (%s)",
                cfg->shm == TC_SHM_OFF ? "TCOLL_SHM=off" : "one rank on this node");
    } else if (!map_local_ranks(e, local_size)) {
        TC_WARN("shm", "mapping the node's ranks failed: collectives run over MPI");
    } else {
        tc_shm_params_t p = tc__shm_params(cfg);
        st = tc__shm_seg_open(e->mpi.local, &p, &e->shm.seg, why, sizeof(why));
        if (st != TC_OK && local_rank == 0) {
            TC_WARN("shm", "no shared memory on this node (%s): collectives run over MPI", why);
        }
    }
    if (st == TC_OK) {
        e->shm.coll.seg = &e->shm.seg;
        e->shm.coll.wait = &e->mpi.tp.wait;
        e->shm.coll.ranks = e->shm.local_ranks;
        e->shm.coll.seq = 0;
        e->shm.coll.cma_from = cfg->allreduce_algo == TC_ALGO_CMA ? 0
                               : cfg->allreduce_algo == TC_ALGO_SHM
                                   ? SIZE_MAX
                                   : (size_t)cfg->shm_direct_kb * 1024;
        if (tc__scratch_reserve(&e->shm.coll.bounce, 64 * 1024) != TC_OK) {
            e->shm.coll.cma_from = SIZE_MAX;
        }
    }
    if (!e->shm.single_node && cfg->shm != TC_SHM_OFF) {
        hier_setup(e, local_rank, local_size); /* collective over every rank */
    }
    tc__shm_route_open(e, &e->shm.route, &e->mpi.tp, NULL, e->size, e->rank, 0);
    fast_start(e); /* the small-message path, where it applies (fast.c) */
    if (st == TC_OK) {
        TC_INFO("shm",
                "%s segment of %zu bytes: %d local ranks x %d slots x %zu bytes; direct "
                "reads (process_vm_readv) %s",
                e->shm.seg.method, e->shm.seg.bytes, local_size, cfg->shm_slots,
                e->shm.seg.slot_bytes, e->shm.seg.cma ? "work" : "refused here");
    }
}

void tc__shm_teardown(tc_exec_t *e, int broken)
{
    eng_pset_t *l = &e->shm.leaders;

    tc__fast_stop(e); /* no thread touches the segment after this */
    tc__shm_route_close(&e->shm.route);
    if (!broken) {
        tc__transport_close(&l->tp); /* after a failure MPI is left as it is */
    }
    free(l->ranks);
    l->ranks = NULL;
    tc__shm_seg_close(&e->shm.seg); /* local: safe after a failure too */
    tc__scratch_free(&e->shm.coll.bounce);
    tc__peer_maps_free(&e->shm.coll.maps); /* after the segment: no step reads them */
    free(e->shm.local_ranks);
    e->shm.local_ranks = NULL;
}

void tc__shm_route_open(tc_exec_t *e, eng_route_t *r, tc_transport_t *mpi, const int *ranks, int n,
                        int me, uint32_t id)
{
    const tc_shm_seg_t *seg = &e->shm.seg;
    tc_transport_t *children[2] = {&r->p2p, mpi};
    /* direct reads from two cells' worth up (measured: about where one copy
     * through process_vm_readv beats two through the cells); shm and cma
     * force either way, as for the collectives */
    const int algo = e->cfg->allreduce_algo;
    size_t direct = algo == TC_ALGO_SHM   ? SIZE_MAX
                    : algo == TC_ALGO_CMA ? 0
                                          : 2 * (seg->cell_bytes - TC_SHM_CELL_HDR);
    int *local, p, l, others = 0;

    memset(r, 0, sizeof(*r));
    if (seg->base == NULL || seg->mbox_bytes == 0 ||
        (local = malloc((size_t)n * sizeof(int))) == NULL) {
        return;
    }
    for (p = 0; p < n; p++) { /* the local rank of each member, or -1 */
        int g = ranks != NULL ? ranks[p] : p;
        for (local[p] = -1, l = 0; l < seg->n; l++) {
            local[p] = e->shm.local_ranks[l] == g ? l : local[p];
        }
        others += p != me && local[p] >= 0;
    }
    if (others > 0 &&
        tc__transport_shm_open(&r->p2p, &r->p2p_impl, seg, me, n, local, id, direct,
                               (uint32_t)e->cfg->spin, (uint32_t)e->cfg->backoff_max_us) == TC_OK) {
        r->p2p.wait = mpi->wait; /* its messages name ranks as the set's do */
        if (tc__router_open(&r->rt, &r->rt_impl, children, 2, NULL, (uint32_t)e->cfg->spin,
                            (uint32_t)e->cfg->backoff_max_us) == TC_OK) {
            r->rt.wait = mpi->wait; /* the set's hooks: aborts, probes, names */
            r->open = 1;
            TC_INFO("shm",
                    "process set %u: point to point through shared memory with %d "
                    "rank(s) of this node, MPI with %d other(s)",
                    id, others, n - 1 - others);
        } else {
            TC_WARN("shm", "no shared-memory path for process set %u: %s", id, r->rt.err);
            tc__transport_close(&r->p2p);
        }
    }
    free(local);
}

void tc__shm_route_close(eng_route_t *r)
{
    if (r->open) {
        tc__transport_close(&r->rt);
        tc__transport_close(&r->p2p);
        r->open = 0;
    }
}

tc_shm_coll_t *tc__shm_for(tc_exec_t *e, uint32_t pset)
{
    if (pset != 0 || e->shm.seg.base == NULL || !e->shm.single_node ||
        e->cfg->allreduce_algo == TC_ALGO_RING) {
        return NULL;
    }
    return &e->shm.coll;
}

const tc_hier_t *tc__hier_for(tc_exec_t *e, uint32_t pset)
{
    int algo = e->cfg->allreduce_algo;

    if (pset != 0 || !e->shm.hier_ok || (algo != TC_ALGO_AUTO && algo != TC_ALGO_HIER) ||
        (e->cfg->deterministic && e->mpi.node_of == NULL)) {
        return NULL; /* (no node table: the ordered ring keeps one node's order) */
    }
    return &e->shm.hier;
}
