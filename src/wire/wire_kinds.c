/*
 * wire_kinds.c - the names of the collective kinds of wire.h (TC_KIND_MAP),
 * for messages and logs: "allreduce", "allgather", ...
 *
 * The table is made from the same list as tc_kind_t, so the two cannot
 * drift. Must never hold anything but names: what a kind does is the
 * engine's (kind/kind.h).
 */
#include "wire/wire.h"

static const char *const kind_names[] = {
#define KIND_NAME(upper, lower) [TC_KIND_##upper] = #lower,
    TC_KIND_MAP(KIND_NAME)
#undef KIND_NAME
};
_Static_assert(sizeof(kind_names) / sizeof(kind_names[0]) == TC_KIND_COUNT,
               "kind_names out of date with tc_kind_t");

const char *tc__kind_name(int kind)
{
    if (kind < 0 || kind >= TC_KIND_COUNT) {
        return "?";
    }
    return kind_names[kind];
}
