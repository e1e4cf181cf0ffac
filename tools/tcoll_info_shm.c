/*
 * tcoll_info_shm.c - tcoll-info's shared-memory part (tcoll_info.h): each
 * node's segment made and unmapped once as tc_init would, and the records
 * the engine's selector would pick for the global set's allreduce. The
 * part of tcoll-info that reaches into the engine's transport and
 * executor.
 */
#define _GNU_SOURCE
#include "tcoll_info.h"

#include <stdint.h>
#include <string.h>

#include "exec/algo.h"
#include "transport/shm_setup.h"

void tc_info_shm_try(MPI_Comm local, rank_rec_t *rec)
{
    const tc_config_t *cfg = tc__config();
    tc_shm_params_t p = tc__shm_params(cfg);
    tc_shm_seg_t seg;

    rec->shm_ok = -1;
    if (cfg->shm == TC_SHM_OFF || rec->local_size < 2) {
        snprintf(rec->shm_why, sizeof(rec->shm_why), "%s",
                 cfg->shm == TC_SHM_OFF ? "TCOLL_SHM=off" : "one rank on the node");
        return;
    }
    if (tc__shm_seg_open(local, &p, &seg, rec->shm_why, sizeof(rec->shm_why)) != TC_OK) {
        rec->shm_ok = 0;
        return;
    }
    rec->shm_ok = 1;
    snprintf(rec->shm_method, sizeof(rec->shm_method), "%s", seg.method);
    rec->shm_bytes = seg.bytes;
    rec->shm_cell = seg.cell_bytes > 0 ? seg.cell_bytes - TC_SHM_CELL_HDR : 0;
    rec->shm_cma = seg.cma;
    tc__shm_seg_close(&seg);
}

/* The records the engine's selector (exec/algo.h) picks for the global
 * set's float32 sums, over every size, from what tc_init would set up: the
 * node's segment (every rank on one node, with it), the hierarchical
 * allreduce (several nodes, each with its segment where it has 2+ ranks),
 * the knobs. The segment and the hierarchical allreduce are stand-ins: the
 * selector reads only whether they exist and the direct-read threshold. */
static void print_allreduce(FILE *f, const info_t *in, int nodes, int all_ok, int hier_ok)
{
    const tc_config_t *cfg = tc__config();
    const int algo = cfg->allreduce_algo;
    tc_transport_t tp;
    tc_shm_seg_t seg;
    tc_shm_coll_t shm;
    tc_hier_t hier;
    tc_algo_ctx_t x;
    const char *why;
    char what[256];

    memset(&tp, 0, sizeof(tp));
    memset(&seg, 0, sizeof(seg));
    memset(&shm, 0, sizeof(shm));
    memset(&hier, 0, sizeof(hier));
    memset(&x, 0, sizeof(x));
    tp.size = in->size;
    seg.n = in->size;
    seg.cma = in->recs[0].shm_cma;
    seg.slot_bytes = (size_t)cfg->shm_slot_kb * 1024;
    shm.seg = &seg;
    shm.cma_from = algo == TC_ALGO_CMA   ? 0
                   : algo == TC_ALGO_SHM ? SIZE_MAX
                                         : (size_t)cfg->shm_direct_kb * 1024;
    x.tp = &tp;
    x.ordered = cfg->deterministic;
    if (algo == TC_ALGO_RING) {
        why = "TCOLL_ALLREDUCE_ALGO=ring";
    } else if (nodes == 1 && all_ok) {
        x.shm = &shm;
        why = "every rank on one node";
    } else if (nodes > 1 && hier_ok && (algo == TC_ALGO_AUTO || algo == TC_ALGO_HIER)) {
        x.hier = &hier;
        why = "ranks on several nodes, each node's ranks through its segment";
    } else {
        why = nodes > 1 ? "ranks on several nodes" : "no shared-memory segment";
    }
    tc__algo_describe(&x, TC_KIND_ALLREDUCE, TC_FLOAT32, TC_SUM, what, sizeof(what));
    fprintf(f, "allreduce (global set, float32 sum): %s (%s)\n", what, why);
}

void tc_info_print_shm(FILE *f, const info_t *in)
{
    const tc_config_t *cfg = tc__config();
    tc_shm_params_t p = tc__shm_params(cfg);
    int r, nodes = 0, all_ok = 1, hier_ok = cfg->shm != TC_SHM_OFF;

    fprintf(f, "shared memory (TCOLL_SHM=%s):\n",
            cfg->shm == TC_SHM_OFF     ? "off"
            : cfg->shm == TC_SHM_MEMFD ? "memfd"
            : cfg->shm == TC_SHM_POSIX ? "posix"
                                       : "auto");
    for (r = 0; r < in->size; r++) {
        const rank_rec_t *rec = &in->recs[r];
        if (rec->leader != r) {
            continue;
        }
        nodes++;
        all_ok = all_ok && rec->shm_ok == 1;
        hier_ok = hier_ok && (rec->shm_ok == 1 || rec->local_size < 2);
        if (rec->shm_ok == 1) {
            tc_shm_seg_t lay = {0};
            tc__shm_seg_layout(rec->local_size, &p, &lay);
            fprintf(f,
                    "  node %s: %s segment of %llu bytes (%d ranks x %d slots x %d KiB, "
                    "small-message boxes for %d names of up to %d bytes and %d of up to %d, "
                    "point-to-point mailboxes of %d x %llu bytes per pair of ranks, flags)\n",
                    rec->host, rec->shm_method, (unsigned long long)rec->shm_bytes, rec->local_size,
                    cfg->shm_slots, cfg->shm_slot_kb, lay.fast_names, (int)lay.fast_bytes,
                    lay.large_names, (int)lay.large_bytes, rec->shm_cell > 0 ? TC_SHM_P2P_CELLS : 0,
                    (unsigned long long)rec->shm_cell);
        } else {
            fprintf(f, "  node %s: none (%s)%s\n", rec->host, rec->shm_why,
                    rec->shm_ok == 0 ? ": collectives run over MPI" : "");
        }
    }
    print_allreduce(f, in, nodes, all_ok, hier_ok);
}
