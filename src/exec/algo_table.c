/*
 * algo_table.c - every kind's run and records, by kind (tc__kind_exec), the
 * selector by kind (tc__algo_select) and the description of its choice over
 * every size (tc__algo_describe), for the executor, logs and tcoll-info.
 */
#define _GNU_SOURCE
#include "exec/algo.h"

#include <stdio.h>
#include <string.h>

/* One row per entry of TC_KIND_MAP (wire/wire.h): a kind without its
 * tc__exec_<kind> does not link. */
static const tc_kind_exec_t *const table[] = {
#define EXEC_ROW(UP, low) [TC_KIND_##UP] = &tc__exec_##low,
    TC_KIND_MAP(EXEC_ROW)
#undef EXEC_ROW
};
_Static_assert(sizeof(table) / sizeof(table[0]) == TC_KIND_COUNT,
               "a kind of TC_KIND_MAP has no run");

const tc_kind_exec_t *tc__kind_exec(int kind)
{
    return kind < 0 || kind >= TC_KIND_COUNT ? NULL : table[kind];
}

const tc_algo_t *tc__algo_select(const tc_algo_ctx_t *x, const tc_algo_call_t *c)
{
    return tc__algo_pick(tc__kind_exec((int)c->kind), x, c);
}

/* bytes as "1 MiB", "64 KiB" when exact, else "1000 B". */
static void fmt_bytes(size_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;

    while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, len, "%zu %s", bytes, units[u]);
}

void tc__algo_describe(const tc_algo_ctx_t *x, tc_kind_t kind, tc_dtype_t dtype, tc_op_t op,
                       char *buf, size_t len)
{
    tc_algo_call_t c = {kind, dtype, op, 1, TC_MEM_HOST, 0};
    const tc_algo_t *prev = tc__algo_select(x, &c), *a;
    size_t pos, lo = 1, hi;
    int i;

    pos = (size_t)snprintf(buf, len, "%s", prev != NULL ? prev->name : "none");
    for (i = 1; i <= 48 && pos < len; i++) {
        c.bytes = (size_t)1 << i;
        a = tc__algo_select(x, &c);
        if (a != prev) { /* the smallest size in (lo, c.bytes] that picks a */
            char at[32];
            hi = c.bytes;
            while (hi - lo > 1) {
                c.bytes = lo + (hi - lo) / 2;
                if (tc__algo_select(x, &c) == prev) {
                    lo = c.bytes;
                } else {
                    hi = c.bytes;
                }
            }
            c.bytes = hi;
            a = tc__algo_select(x, &c);
            fmt_bytes(hi, at, sizeof(at));
            pos += (size_t)snprintf(buf + pos, len - pos, ", %s from %s",
                                    a != NULL ? a->name : "none", at);
            prev = a;
            c.bytes = (size_t)1 << i;
            i--; /* this power of two again: another record may start below it */
            lo = hi;
            continue;
        }
        lo = c.bytes;
    }
}

const char *tc__algo_label(const tc_algo_t *a, int fused, const tc_shm_coll_t *shm)
{
    if (a == NULL) {
        return "none";
    }
    if (shm != NULL && shm->loads > 0 && shm->readvs == 0 && strcmp(a->name, "cma") == 0) {
        return fused ? "cma, mapped, fused" : "cma, mapped";
    }
    return fused && a->fused != NULL ? a->fused : a->name;
}
