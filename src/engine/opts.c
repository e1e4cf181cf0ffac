/*
 * opts.c - the options of the _ex calls (tc_opts_t in tcoll.h): what the
 * caller passed, up to the size it was compiled with, checked against what
 * the call's kind takes.
 *
 * The struct grows at its end: a caller compiled against an older header
 * passes a smaller size, and the fields it does not know keep their
 * TC_OPTS_INIT values. A size larger than this library's struct comes from a
 * newer header, whose fields this library cannot honour: TC_ERR_ARG, never a
 * silent drop. Pure: no shared state, any thread.
 */
#define _GNU_SOURCE
#include <math.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "kind/kind.h"
#include "util/status.h"

tc_status_t tc__opts_read(const char *fn, const char *name, const tc_kind_desc_t *kd,
                          const tc_opts_t *in, tc_opts_t *out)
{
    const tc_opts_t def = TC_OPTS_INIT;
    tc_opts_t o = def;

    if (in != NULL) {
        if (in->size < sizeof(in->size) || in->size > sizeof(o)) {
            return tc__set_error(TC_ERR_ARG,
                                 "%s: tensor '%s': opts->size is %zu, this tcoll takes %zu to %zu "
                                 "(initialize opts with TC_OPTS_INIT)",
                                 fn, name, in->size, sizeof(in->size), sizeof(o));
        }
        memcpy(&o, in, in->size);
        o.size = sizeof(o);
    }
    if (!isfinite(o.prescale) || !isfinite(o.postscale)) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': %s %g is not finite", fn, name,
                             isfinite(o.prescale) ? "postscale" : "prescale",
                             isfinite(o.prescale) ? o.postscale : o.prescale);
    }
    if (!(kd->params & TC_PARAM_SCALE) && (o.prescale != 1.0 || o.postscale != 1.0)) {
        return tc__set_error(TC_ERR_ARG,
                             "%s: tensor '%s': %s takes no scaling factors (prescale %g, "
                             "postscale %g: leave both at 1)",
                             fn, name, kd->name, o.prescale, o.postscale);
    }
    *out = o;
    return TC_OK;
}
