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
 *
 * A device tensor (tc_opts_t.device) is checked here too: CUDA usable, the
 * device there, every buffer of the call that device's memory.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda/cuda.h"
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
    if (o.device < TC_DEVICE_HOST) {
        return tc__set_error(TC_ERR_ARG,
                             "%s: tensor '%s': device %d is neither TC_DEVICE_HOST (-1) nor a "
                             "CUDA device number",
                             fn, name, o.device);
    }
    if ((kd->params & TC_PARAM_NONE_TENSOR) && o.device != TC_DEVICE_HOST) {
        return tc__set_error(TC_ERR_ARG,
                             "%s: %s takes no tensor: leave device at TC_DEVICE_HOST (it is %d)",
                             fn, kd->name, o.device);
    }
    if (o.device == TC_DEVICE_HOST && o.cuda_stream != NULL) {
        return tc__set_error(TC_ERR_ARG,
                             "%s: tensor '%s': cuda_stream is set, but device is TC_DEVICE_HOST "
                             "(a stream goes with a device tensor)",
                             fn, name);
    }
    *out = o;
    return TC_OK;
}

tc_status_t tc__opts_check_device(const char *fn, const char *name, const tc_kind_desc_t *kd,
                                  const tc_opts_t *o, const void *send, const void *recv,
                                  size_t count, size_t es)
{
    size_t bytes = count * es;
    const char *no = NULL;
    char why[256];

    if (!tc__cuda_available(&no)) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s' is on CUDA device %d, but %s", fn, name,
                             o->device, no);
    }
    if (o->device >= tc__cuda_device_count()) {
        return tc__set_error(TC_ERR_ARG,
                             "%s: tensor '%s': CUDA device %d does not exist (this process sees "
                             "%d)",
                             fn, name, o->device, tc__cuda_device_count());
    }
    if (count > 0 &&
        ((uintptr_t)send % es != 0 || (kd->output == TC_OUT_RECV && (uintptr_t)recv % es != 0))) {
        return tc__set_error(TC_ERR_ARG,
                             "%s: tensor '%s': a device buffer must be aligned to its element "
                             "size (%zu bytes): data %p, recv %p",
                             fn, name, es, send, kd->output == TC_OUT_RECV ? recv : NULL);
    }
    if (tc__cuda_check_ptr(o->device, send, bytes, why, sizeof(why)) != TC_OK) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': its data %s", fn, name, why);
    }
    if (kd->output == TC_OUT_RECV && recv != send &&
        tc__cuda_check_ptr(o->device, recv, bytes, why, sizeof(why)) != TC_OK) {
        return tc__set_error(TC_ERR_ARG, "%s: tensor '%s': recv %s", fn, name, why);
    }
    return TC_OK;
}
