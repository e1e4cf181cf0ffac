/*
 * engine_tl.c - the negotiation's marks on this rank's timeline
 * (util/timeline.h): as ranks submit a tensor (rank 0) or list it ready.
 * Engine thread only, and only while a timeline runs (tc__tl_active()).
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "engine/engine_internal.h"
#include "util/backoff.h"
#include "util/timeline.h"

/* A mark on a cached tensor's row as partner src reports that every rank of
 * its group has it waiting (docs/negotiation.md, "The exchange"). */
void tc__engine_tl_ready(int src, const char *name, uint32_t len)
{
    char label[32];
    int n = snprintf(label, sizeof(label), "rank %d ready", src);

    tc__tl_instant(tc__tl_track(name, len), label, (size_t)n, "negotiation", tc__now_ns(), NULL);
}

/* Rank 0: a mark on a tensor's row as rank src's submission arrives. */
void tc__engine_tl_submitted(int src, const tc_wire_request_t *w)
{
    char label[32];
    int len = snprintf(label, sizeof(label), "rank %d submitted", src);

    tc__tl_instant(tc__tl_track(w->name, w->name_len), label, (size_t)len, "negotiation",
                   tc__now_ns(), NULL);
}
